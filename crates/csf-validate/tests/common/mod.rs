//! Helpers shared by csf-validate's integration tests: a CSF tree that owns
//! its arrays (valid or not), lends a `CsfView` through `from_parts`, and
//! encodes itself as a container with any descriptor tweak.

// Each test binary uses a different subset of the helpers.
#![allow(dead_code)]

use csf_core::{CsfView, Level};
use csf_testdata::CsfArrays;
use hurray_format::le::U64Array;
use hurray_format::{BufferEntry, Descriptor, DeviceTag, ElementType};

/// `words` as little-endian bytes (the file byte order of `pos`/`crd`).
pub fn le_bytes(words: &[u64]) -> Vec<u8> {
    words.iter().flat_map(|w| w.to_le_bytes()).collect()
}

/// `values` as little-endian `f32` bytes.
pub fn f32_bytes(values: &[f32]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}

/// A CSF tree that owns its arrays.
#[derive(Clone, Debug)]
pub struct Tree {
    pub element_type: ElementType,
    pub shape: Vec<u64>,
    pub mode_order: Vec<u32>,
    pub nnz: u64,
    /// `(pos_L, crd_L)`.
    pub levels: Vec<(Vec<u64>, Vec<u64>)>,
    /// The packed values buffer.
    pub values: Vec<u8>,
}

impl Tree {
    /// The spec's worked example (csf-layout.txt § Example).
    pub fn spec_example() -> Self {
        Self {
            element_type: ElementType::F32,
            shape: vec![2, 3, 4],
            mode_order: vec![0, 1, 2],
            nnz: 4,
            levels: vec![
                (vec![0, 2], vec![0, 1]),
                (vec![0, 2, 3], vec![0, 2, 1]),
                (vec![0, 1, 2, 4], vec![1, 3, 0, 2]),
            ],
            values: f32_bytes(&[1.0, 2.0, 3.0, 4.0]),
        }
    }

    /// The tree `reference_csf` built, with `f32` values.
    pub fn from_arrays(a: &CsfArrays) -> Self {
        Self {
            element_type: ElementType::F32,
            shape: a.shape.clone(),
            mode_order: a.mode_order.clone(),
            nnz: a.nnz() as u64,
            levels: a.levels.clone(),
            values: a.values_f32_le(),
        }
    }

    /// `pos_L` or `crd_L`, mutably.
    pub fn pos(&mut self, level: usize) -> &mut Vec<u64> {
        &mut self.levels[level].0
    }

    pub fn crd(&mut self, level: usize) -> &mut Vec<u64> {
        &mut self.levels[level].1
    }

    /// The levels as little-endian byte buffers, in table order after values.
    pub fn level_bytes(&self) -> Vec<(Vec<u8>, Vec<u8>)> {
        self.levels.iter().map(|(p, c)| (le_bytes(p), le_bytes(c))).collect()
    }

    /// A view over `bytes` (from [`Tree::level_bytes`]) through `CsfView::builder`.
    pub fn view<'a>(&'a self, bytes: &'a [(Vec<u8>, Vec<u8>)]) -> CsfView<'a> {
        let levels: Vec<Level<'a>> = bytes
            .iter()
            .map(|(p, c)| Level {
                pos: U64Array::new(p).expect("whole u64s"),
                crd: U64Array::new(c).expect("whole u64s"),
            })
            .collect();
        CsfView::builder(self.element_type, &self.shape)
            .mode_order(&self.mode_order)
            .nnz(self.nnz)
            .levels(&levels)
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

/// A copy of `bytes` starting at an address that is `residue` mod 8, held in
/// `storage`: residue 0 lets the validator read `u64` arrays in place (its
/// native, and with feature `parallel` multi-threaded, path), residue 1 forces
/// the byte-wise sequential path.
pub fn placed<'s>(bytes: &[u8], storage: &'s mut Vec<u8>, residue: usize) -> &'s [u8] {
    storage.clear();
    storage.resize(bytes.len() + 16, 0);
    let addr = storage.as_ptr() as usize;
    let start = (8 + residue - addr % 8) % 8;
    storage[start..start + bytes.len()].copy_from_slice(bytes);
    let out = &storage[start..start + bytes.len()];
    assert_eq!(out.as_ptr() as usize % 8, residue);
    out
}
