//! A CSF tree that owns its arrays, valid or not, for the decoder crates'
//! tests: it lends a `CsfView` (through `CsfView::builder`) and encodes
//! itself as a container; and the byte helpers those tests share.

use csf_core::{CsfView, Level};
use hurray_format::le::U64Array;
use hurray_format::{BufferEntry, Descriptor, DeviceTag, ElementType, QuantScheme, Quantization};

/// `words` as little-endian bytes (the file byte order of `pos`/`crd`).
pub fn le_bytes(words: &[u64]) -> Vec<u8> {
    words.iter().flat_map(|w| w.to_le_bytes()).collect()
}

/// `values` as little-endian `f32` bytes.
pub fn f32_bytes(values: &[f32]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}

/// A copy of `bytes` starting at an address that is `residue` mod 8, held in
/// `storage`: residue 0 lets a reader take `u64` arrays in place, any other
/// residue leaves no `u64` array inside it aligned (the byte-wise paths).
pub fn placed<'s>(bytes: &[u8], storage: &'s mut Vec<u8>, residue: usize) -> &'s [u8] {
    storage.clear();
    storage.resize(bytes.len() + 16, 0);
    let addr = storage.as_ptr() as usize;
    let start = (8 + residue % 8 - addr % 8) % 8;
    storage[start..start + bytes.len()].copy_from_slice(bytes);
    let out = &storage[start..start + bytes.len()];
    assert_eq!(out.as_ptr() as usize % 8, residue % 8);
    out
}

/// A per-tensor quantization section with an `f32` scale and no zero point
/// (`docs/format.md` § 5.7), to be varied with `..per_tensor()`.
pub fn per_tensor() -> Quantization {
    Quantization {
        scheme: QuantScheme::PerTensor,
        axis: 0,
        block_size: 0,
        scale_type: ElementType::F32,
        zero_point_type: None,
    }
}

/// A CSF tree that owns its arrays (valid or not).
///
/// [`Tree::view`] lends a view over the levels as they were made by a
/// constructor; after editing `levels`, take the view of the edited arrays
/// with [`Tree::view_of`]`(&tree.level_bytes())`.
#[derive(Clone, Debug)]
pub struct Tree {
    /// The values' element type.
    pub element_type: ElementType,
    /// The logical shape; its length is the rank.
    pub shape: Vec<u64>,
    /// The storage order of the dimensions.
    pub mode_order: Vec<u32>,
    /// The number of stored values the descriptor claims.
    pub nnz: u64,
    /// `(pos_L, crd_L)` as ordinary `u64`s.
    pub levels: Vec<(Vec<u64>, Vec<u64>)>,
    /// The packed values buffer.
    pub values: Vec<u8>,
    /// `levels` as made, as little-endian words, which [`Tree::view`] borrows.
    made: Vec<(Vec<u64>, Vec<u64>)>,
}

impl Tree {
    /// A tree of these arrays.
    pub fn new(
        element_type: ElementType,
        shape: &[u64],
        mode_order: &[u32],
        nnz: u64,
        levels: Vec<(Vec<u64>, Vec<u64>)>,
        values: Vec<u8>,
    ) -> Self {
        let made = levels
            .iter()
            .map(|(p, c)| (p.iter().map(|x| x.to_le()).collect(), c.iter().map(|x| x.to_le()).collect()))
            .collect();
        Self {
            element_type,
            shape: shape.to_vec(),
            mode_order: mode_order.to_vec(),
            nnz,
            levels,
            values,
            made,
        }
    }

    /// The tree `reference_csf` built, with `f32` values.
    pub fn from_arrays(a: &crate::CsfArrays) -> Self {
        Self::new(
            ElementType::F32,
            &a.shape,
            &a.mode_order,
            a.nnz() as u64,
            a.levels.clone(),
            a.values_f32_le(),
        )
    }

    /// The spec's worked example (csf-layout.txt § Example): shape [2, 3, 4],
    /// `f32` values 1 to 4, identity order.
    pub fn spec_example() -> Self {
        Self::new(
            ElementType::F32,
            &[2, 3, 4],
            &[0, 1, 2],
            4,
            vec![
                (vec![0, 2], vec![0, 1]),
                (vec![0, 2, 3], vec![0, 2, 1]),
                (vec![0, 1, 2, 4], vec![1, 3, 0, 2]),
            ],
            f32_bytes(&[1.0, 2.0, 3.0, 4.0]),
        )
    }

    /// The tree after `edit` (the fields are public; the cache that
    /// [`Tree::view`] borrows is not, so struct-update syntax is unavailable).
    pub fn with(mut self, edit: impl FnOnce(&mut Self)) -> Self {
        edit(&mut self);
        self
    }

    /// The rank.
    pub fn rank(&self) -> usize {
        self.shape.len()
    }

    /// `pos_L`, to edit.
    pub fn pos(&mut self, level: usize) -> &mut Vec<u64> {
        &mut self.levels[level].0
    }

    /// `crd_L`, to edit.
    pub fn crd(&mut self, level: usize) -> &mut Vec<u64> {
        &mut self.levels[level].1
    }

    /// The view of the levels as a constructor made them.
    ///
    /// # Panics
    /// If `levels` was edited since: use [`Tree::view_of`] for that.
    pub fn view(&self) -> CsfView<'_> {
        let made: Vec<(Vec<u64>, Vec<u64>)> = self
            .made
            .iter()
            .map(|(p, c)| {
                (p.iter().map(|&x| u64::from_le(x)).collect(), c.iter().map(|&x| u64::from_le(x)).collect())
            })
            .collect();
        assert_eq!(made, self.levels, "levels edited after the tree was made: use Tree::view_of");
        let levels: Vec<Level<'_>> = self
            .made
            .iter()
            .map(|(p, c)| Level { pos: U64Array::from_le_words(p), crd: U64Array::from_le_words(c) })
            .collect();
        self.parts_view(&levels)
    }

    /// The levels as little-endian byte buffers, in table order after values.
    pub fn level_bytes(&self) -> Vec<(Vec<u8>, Vec<u8>)> {
        self.levels.iter().map(|(p, c)| (le_bytes(p), le_bytes(c))).collect()
    }

    /// A view over `bytes` (from [`Tree::level_bytes`]).
    pub fn view_of<'a>(&'a self, bytes: &'a [(Vec<u8>, Vec<u8>)]) -> CsfView<'a> {
        let levels: Vec<Level<'a>> = bytes
            .iter()
            .map(|(p, c)| Level {
                pos: U64Array::new(p).expect("whole u64s"),
                crd: U64Array::new(c).expect("whole u64s"),
            })
            .collect();
        self.parts_view(&levels)
    }

    fn parts_view<'a>(&'a self, levels: &[Level<'a>]) -> CsfView<'a> {
        CsfView::builder(self.element_type, &self.shape)
            .mode_order(&self.mode_order)
            .nnz(self.nnz)
            .levels(levels)
            .values(&self.values)
            .build()
            .expect("structurally sound tree")
    }

    /// The descriptor with one host buffer-table row per buffer.
    pub fn descriptor(&self) -> Descriptor {
        let mut d = Descriptor::csf_unchecked(self.element_type, &self.shape, &self.mode_order, self.nnz)
            .expect("rank <= 64");
        for _ in 0..self.buffers().len() {
            d.buffers.push(BufferEntry::default()).expect("fits");
        }
        d
    }

    /// The buffers in table order: values, then `pos_L`, `crd_L` per level.
    pub fn buffers(&self) -> Vec<Vec<u8>> {
        let mut out = vec![self.values.clone()];
        for (p, c) in &self.levels {
            out.push(le_bytes(p));
            out.push(le_bytes(c));
        }
        out
    }

    /// The tree as a container.
    pub fn encode(&self) -> Vec<u8> {
        encode(&self.descriptor(), &self.buffers())
    }
}

/// `descriptor` and `buffers` as a container (the table is resized to the
/// buffers, keeping the device tags of the rows that exist).
pub fn encode(descriptor: &Descriptor, buffers: &[Vec<u8>]) -> Vec<u8> {
    let mut d = *descriptor;
    let tags: Vec<DeviceTag> = d.buffers.iter().map(|b| b.device_tag).collect();
    d.buffers = Default::default();
    for i in 0..buffers.len() {
        let device_tag = tags.get(i).copied().unwrap_or_default();
        d.buffers.push(BufferEntry { offset: 0, length: 0, device_tag }).expect("fits");
    }
    let slices: Vec<&[u8]> = buffers.iter().map(Vec::as_slice).collect();
    hurray_format::encode_to_vec(&d, &slices).expect("encodes")
}
