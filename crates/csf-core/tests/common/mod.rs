//! Helpers shared by csf-core's integration tests: a tree of owned arrays that
//! lends a `CsfView`, container encoding, and an oracle-driven checker that
//! compares every lookup and iteration API against a `BTreeMap`.

// Each test binary uses a different subset of the helpers.
#![allow(dead_code)]

use std::collections::{BTreeMap, BTreeSet};

use csf_core::{CsfView, Level, LookupError, Value};
use csf_testdata::{Coo, CsfArrays};
use hurray_format::le::U64Array;
use hurray_format::{BufferEntry, Container, Descriptor, ElementType};

/// `words` as little-endian bytes (the file byte order of `pos`/`crd`).
pub fn le_bytes(words: &[u64]) -> Vec<u8> {
    words.iter().flat_map(|w| w.to_le_bytes()).collect()
}

/// `values` as little-endian `f32` bytes.
pub fn f32_bytes(values: &[f32]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}

/// A CSF tree that owns its arrays (valid or not) and lends a [`CsfView`].
#[derive(Clone, Debug)]
pub struct Tree {
    pub element_type: ElementType,
    pub shape: Vec<u64>,
    pub mode_order: Vec<u32>,
    pub nnz: u64,
    /// `(pos_L, crd_L)` as ordinary `u64`s.
    pub levels: Vec<(Vec<u64>, Vec<u64>)>,
    /// The packed values buffer.
    pub values: Vec<u8>,
    /// The same levels as little-endian words, which the view borrows.
    le: Vec<(Vec<u64>, Vec<u64>)>,
}

impl Tree {
    pub fn new(
        element_type: ElementType,
        shape: &[u64],
        mode_order: &[u32],
        nnz: u64,
        levels: Vec<(Vec<u64>, Vec<u64>)>,
        values: Vec<u8>,
    ) -> Self {
        let le = levels
            .iter()
            .map(|(p, c)| (p.iter().map(|x| x.to_le()).collect(), c.iter().map(|x| x.to_le()).collect()))
            .collect();
        Self { element_type, shape: shape.to_vec(), mode_order: mode_order.to_vec(), nnz, levels, values, le }
    }

    /// The tree built by `csf_testdata::reference_csf`, with `f32` values.
    pub fn from_arrays(a: &CsfArrays) -> Self {
        Self::new(
            ElementType::F32,
            &a.shape,
            &a.mode_order,
            a.nnz() as u64,
            a.levels.clone(),
            a.values_f32_le(),
        )
    }

    /// The spec's worked example (§ Example): shape [2, 3, 4], f32, identity order.
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

    pub fn rank(&self) -> usize {
        self.shape.len()
    }

    /// The view over the owned arrays (through `CsfView::builder`).
    pub fn view(&self) -> CsfView<'_> {
        let levels: Vec<Level<'_>> = self
            .le
            .iter()
            .map(|(p, c)| Level { pos: U64Array::from_le_words(p), crd: U64Array::from_le_words(c) })
            .collect();
        CsfView::builder(self.element_type, &self.shape)
            .mode_order(&self.mode_order)
            .nnz(self.nnz)
            .levels(&levels)
            .values(&self.values)
            .build()
            .expect("structurally sound tree")
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

    /// The tree as a Hurray container, written by `hurray_format::encode_to_slice`.
    pub fn container_bytes(&self) -> Vec<u8> {
        let mut d =
            Descriptor::csf_unchecked(self.element_type, &self.shape, &self.mode_order, self.nnz).unwrap();
        for _ in 0..hurray_format::csf::buffer_count(self.rank()) {
            d.buffers.push(BufferEntry::default()).unwrap();
        }
        let buffers = self.buffers();
        let slices: Vec<&[u8]> = buffers.iter().map(Vec::as_slice).collect();
        let len = hurray_format::encoded_len(&d, &slices).unwrap();
        let mut out = vec![0xa5u8; len];
        assert_eq!(hurray_format::encode_to_slice(&d, &slices, &mut out).unwrap(), len);
        out
    }
}

/// A copy of `bytes` that starts at an address that is 1 mod 8, so that no
/// `u64` array inside it is aligned, and the offset of the copy in `storage`.
pub fn misaligned_copy(bytes: &[u8], storage: &mut Vec<u8>) -> std::ops::Range<usize> {
    storage.clear();
    storage.resize(bytes.len() + 16, 0);
    let addr = storage.as_ptr() as usize;
    let start = (9 - addr % 8) % 8;
    assert_eq!((addr + start) % 8, 1);
    storage[start..start + bytes.len()].copy_from_slice(bytes);
    start..start + bytes.len()
}

/// Decodes a container and views it.
pub fn view_container(bytes: &[u8]) -> CsfView<'_> {
    let container = Container::decode(bytes).expect("container decodes");
    CsfView::from_container(&container).expect("container views as CSF")
}

/// The logical tensor a COO list denotes (later duplicates win, like
/// `reference_csf`), with values rounded to `f32` as the tree stores them.
pub fn oracle(coo: &Coo) -> BTreeMap<Vec<u64>, f32> {
    let mut map = BTreeMap::new();
    for i in 0..coo.len() {
        map.insert(coo.index(i).to_vec(), coo.values[i] as f32);
    }
    map
}

/// Every index of `shape` in row-major order.
pub fn all_indices(shape: &[u64]) -> Vec<Vec<u64>> {
    let mut out = vec![vec![]];
    for &extent in shape {
        out = out
            .into_iter()
            .flat_map(|prefix| (0..extent).map(move |c| [&prefix[..], &[c]].concat()))
            .collect();
    }
    out
}

/// One non-zero as seen by an iteration API: logical index, storage-order
/// coordinates (when the API gives them), leaf position, value.
#[derive(Clone, Debug, PartialEq)]
pub struct Seen {
    pub index: Vec<u64>,
    pub leaf: usize,
    pub value: Option<Value>,
}

/// The logical index of storage-order coordinates `c` (`c[L]` at `mode_order[L]`).
pub fn logical(mode_order: &[u32], coords: &[u64]) -> Vec<u64> {
    let mut index = vec![0; coords.len()];
    for (&dim, &c) in mode_order.iter().zip(coords) {
        index[dim as usize] = c;
    }
    index
}

/// What each of the four iteration APIs yields, checked to agree with each
/// other: `for_each`, `for_each_stored` (mapped through `mode_order`),
/// `cursor` and `entries::<R>` (for R in 3..=8). Also checks the cursor's
/// `coords`/`index` agree and its work bound. Only for a valid permutation.
pub fn iterate_all(view: &CsfView<'_>) -> Vec<Seen> {
    let values = view.values();
    let mut by_for_each = Vec::new();
    view.for_each(|index, leaf| {
        by_for_each.push(Seen { index: index.to_vec(), leaf, value: values.get_raw(leaf) })
    });

    let mut by_stored = Vec::new();
    view.for_each_stored(|coords, leaf| {
        by_stored.push(Seen { index: logical(view.mode_order(), coords), leaf, value: values.get_raw(leaf) })
    });
    assert_eq!(by_stored, by_for_each, "for_each_stored disagrees with for_each");

    let mut cursor = view.cursor();
    let mut by_cursor = Vec::new();
    while cursor.advance() {
        assert_eq!(cursor.index(), &logical(view.mode_order(), cursor.coords())[..]);
        by_cursor.push(Seen { index: cursor.index().to_vec(), leaf: cursor.leaf(), value: cursor.value() });
    }
    assert!(!cursor.advance(), "a finished cursor stays finished");
    assert!(cursor.steps() <= 2 * stored_nodes(view) + 1, "cursor took {} steps", cursor.steps());
    assert_eq!(by_cursor, by_for_each, "cursor disagrees with for_each");

    if let Some(by_entries) = entries_dyn(view) {
        let leafless: Vec<_> = by_for_each.iter().map(|s| (s.index.clone(), s.value)).collect();
        assert_eq!(by_entries, leafless, "entries disagrees with for_each");
    }
    by_for_each
}

/// `entries::<R>()` for the view's rank, when it is in 3..=8.
pub fn entries_dyn(view: &CsfView<'_>) -> Option<Vec<(Vec<u64>, Option<Value>)>> {
    fn collect<const R: usize>(view: &CsfView<'_>) -> Vec<(Vec<u64>, Option<Value>)> {
        // The wrong R is an error, not a panic.
        assert_eq!(
            view.entries::<2>().err(),
            Some(LookupError::WrongRank { got: 2, rank: view.rank() }),
            "entries::<2> must be refused"
        );
        view.entries::<R>().expect("R is the rank").map(|(i, v)| (i.to_vec(), v)).collect()
    }
    Some(match view.rank() {
        3 => collect::<3>(view),
        4 => collect::<4>(view),
        5 => collect::<5>(view),
        6 => collect::<6>(view),
        7 => collect::<7>(view),
        8 => collect::<8>(view),
        _ => return None,
    })
}

/// `n_0 + ... + n_{rank-1}`: the stored nodes, the unit of the iteration bound.
pub fn stored_nodes(view: &CsfView<'_>) -> u64 {
    (0..view.rank()).map(|l| view.node_count(l) as u64).sum()
}

/// The value stored at `index` as `f32` (`None` for an implicit zero).
pub fn get_f32(view: &CsfView<'_>, index: &[u64]) -> Option<f32> {
    match view.get(index).expect("in-bounds index of the right rank") {
        None => None,
        Some(Value::F32(v)) => Some(v),
        Some(other) => panic!("expected an f32, got {other:?}"),
    }
}

/// Checks a valid view against the oracle: every present index finds its
/// value, every other in-bounds index is an implicit zero (exhaustively when
/// the shape is small, else `absent` sampled indices), out-of-bounds indices
/// are errors, and the four iteration APIs yield exactly the oracle's entries
/// (each once, in storage order, leaf positions 0..nnz in turn).
pub fn check_against_oracle(view: &CsfView<'_>, map: &BTreeMap<Vec<u64>, f32>, absent: &[Vec<u64>]) {
    let rank = view.rank();
    assert_eq!(view.nnz(), map.len() as u64);
    assert_eq!(view.node_count(rank - 1), map.len());
    for (index, &want) in map {
        assert_eq!(get_f32(view, index), Some(want), "lookup of present {index:?}");
        let leaf = view.find(index).unwrap().unwrap();
        assert_eq!(view.values().get_raw(leaf), Some(Value::F32(want)));
    }
    let total: u64 = view.shape().iter().product();
    let sweep = if total <= 4096 { all_indices(view.shape()) } else { absent.to_vec() };
    for index in &sweep {
        let want = map.get(index).copied();
        assert_eq!(get_f32(view, index), want, "lookup of {index:?}");
        assert_eq!(view.get_f64(index).unwrap(), f64::from(want.unwrap_or(0.0)));
    }
    // One past the extent in a dimension, and the wrong rank, are errors; the
    // first offending dimension is reported (a zero extent is always one).
    for dim in 0..rank {
        let mut index = vec![0; rank];
        index[dim] = view.shape()[dim];
        let first = (0..rank).find(|&d| index[d] >= view.shape()[d]).unwrap();
        assert_eq!(
            view.find(&index),
            Err(LookupError::OutOfBounds { dim: first, coord: index[first], extent: view.shape()[first] })
        );
    }
    assert_eq!(view.find(&vec![0; rank + 1]), Err(LookupError::WrongRank { got: rank + 1, rank }));
    assert_eq!(view.get(&[]), Err(LookupError::WrongRank { got: 0, rank }));

    let seen = iterate_all(view);
    assert_eq!(seen.len(), map.len(), "iteration count != nnz");
    let as_pairs: BTreeMap<Vec<u64>, f32> = seen
        .iter()
        .map(|s| match s.value {
            Some(Value::F32(v)) => (s.index.clone(), v),
            other => panic!("bad value {other:?}"),
        })
        .collect();
    assert_eq!(&as_pairs, map);
    for (i, s) in seen.iter().enumerate() {
        assert_eq!(s.leaf, i, "leaf order is storage order");
    }
    // Storage-order tuples come out strictly increasing.
    let stored: Vec<Vec<u64>> =
        seen.iter().map(|s| view.mode_order().iter().map(|&d| s.index[d as usize]).collect()).collect();
    assert!(stored.windows(2).all(|w| w[0] < w[1]), "storage order is not strictly increasing");

    #[cfg(feature = "alloc")]
    check_conversions(view, map);
}

/// `to_coo` (both orders) and `to_dense_f64` against the oracle.
#[cfg(feature = "alloc")]
pub fn check_conversions(view: &CsfView<'_>, map: &BTreeMap<Vec<u64>, f32>) {
    use csf_core::{CooOrder, DenseError};
    let rank = view.rank();
    let seen = iterate_all(view);
    let coo = view.to_coo(CooOrder::Logical);
    assert_eq!(coo.rank, rank);
    assert_eq!(coo.len(), seen.len());
    let stored = view.to_coo(CooOrder::Storage);
    assert_eq!(stored.len(), seen.len());
    for (i, s) in seen.iter().enumerate() {
        assert_eq!(coo.index(i), Some(&s.index[..]));
        assert_eq!(coo.values[i], s.value);
        assert_eq!(logical(view.mode_order(), stored.index(i).unwrap()), s.index);
        assert_eq!(stored.values[i], s.value);
    }
    assert_eq!(coo.index(seen.len()), None);

    let total: u64 = view.shape().iter().product();
    if total <= 1 << 16 {
        let dense = view.to_dense_f64(total).unwrap();
        assert_eq!(dense.len() as u64, total);
        for (offset, index) in all_indices(view.shape()).iter().enumerate() {
            assert_eq!(
                dense[offset],
                f64::from(map.get(index).copied().unwrap_or(0.0)),
                "dense at {index:?}"
            );
        }
        let typed = view.to_dense::<f32>(total).unwrap();
        assert_eq!(typed.iter().map(|&v| f64::from(v)).collect::<Vec<_>>(), dense);
        assert_eq!(view.to_dense::<f64>(total), Err(DenseError::TypeMismatch(ElementType::F32)));
        if total > 0 {
            assert_eq!(
                view.to_dense_f64(total - 1),
                Err(DenseError::OverBudget { elements: total, budget: total - 1 })
            );
        }
    }
}

/// Checks every sub-tree of a valid view against its entries: for every
/// prefix of every stored entry's storage-order coordinates (the empty one
/// included), `subtree` yields exactly the entries whose storage-order
/// coordinates start with it, in storage order, through each of its walks,
/// and its ranges hold exactly their nodes and leaves. Every other prefix
/// within the shape (each present prefix extended by a coordinate, and the
/// prefixes of the logical indices `probes`) gives `None`, and prefixes that
/// leave the shape or the rank are errors.
pub fn check_subtrees(view: &CsfView<'_>, probes: &[Vec<u64>]) {
    let rank = view.rank();
    let order = view.mode_order().to_vec();
    let storage = |index: &[u64]| order.iter().map(|&d| index[d as usize]).collect::<Vec<_>>();
    let all: Vec<(Vec<u64>, Vec<u64>, usize)> =
        iterate_all(view).into_iter().map(|s| (storage(&s.index), s.index, s.leaf)).collect();
    let mut present = BTreeSet::from([vec![]]);
    for (c, ..) in &all {
        for k in 1..rank {
            present.insert(c[..k].to_vec());
        }
    }
    for prefix in &present {
        let under: Vec<&(Vec<u64>, Vec<u64>, usize)> =
            all.iter().filter(|(c, ..)| c.starts_with(prefix)).collect();
        let want: Vec<(Vec<u64>, usize)> = under.iter().map(|(_, i, l)| (i.clone(), *l)).collect();
        let subtree = view.subtree(prefix).unwrap().unwrap_or_else(|| panic!("{prefix:?} is present"));
        let k = prefix.len();
        assert_eq!((subtree.prefix(), subtree.level()), (&prefix[..], k));

        let mut got = Vec::new();
        subtree.for_each(|index, leaf| got.push((index.to_vec(), leaf)));
        assert_eq!(got, want, "for_each under {prefix:?}");
        let mut stored = Vec::new();
        subtree.for_each_stored(|coords, leaf| stored.push((coords.to_vec(), leaf)));
        assert_eq!(stored, under.iter().map(|(c, _, l)| (c.clone(), *l)).collect::<Vec<_>>());
        let mut by_under = Vec::new();
        view.for_each_under(prefix, |index, leaf| by_under.push((index.to_vec(), leaf))).unwrap();
        assert_eq!(by_under, want);
        let mut cursor = subtree.cursor();
        let mut by_cursor = Vec::new();
        while cursor.advance() {
            assert_eq!(cursor.coords(), &storage(cursor.index())[..]);
            by_cursor.push((cursor.index().to_vec(), cursor.leaf()));
        }
        assert_eq!(by_cursor, want, "cursor under {prefix:?}");

        // Ranges: the leaves are contiguous, and at each level the nodes are
        // the distinct prefixes of that length.
        let leaves = want.first().map_or(0, |w| w.1)..want.last().map_or(0, |w| w.1 + 1);
        if !want.is_empty() {
            assert_eq!(subtree.leaf_range(), leaves, "leaf range under {prefix:?}");
        }
        assert_eq!(subtree.nnz(), want.len());
        assert_eq!(subtree.node_range(k.wrapping_sub(1)), None);
        assert_eq!(subtree.node_range(rank), None);
        let mut nodes = 0;
        for level in k..rank {
            let distinct: BTreeSet<&[u64]> = under.iter().map(|(c, ..)| &c[..=level]).collect();
            let range = subtree.node_range(level).unwrap();
            assert_eq!(range.len(), distinct.len(), "level {level} under {prefix:?}");
            nodes += range.len();
        }
        assert!(cursor.steps() <= 2 * nodes as u64 + 1, "{} steps for {nodes} nodes", cursor.steps());
        let top: Vec<u64> = subtree.fiber().iter().map(|(_, c)| c).collect();
        let distinct: BTreeSet<u64> = under.iter().map(|(c, ..)| c[k]).collect();
        assert_eq!(top, distinct.into_iter().collect::<Vec<_>>());

        // Its children that hold nothing.
        if k + 1 < rank {
            let extent = view.level_extent(k).unwrap();
            for c in 0..extent.min(16) {
                let longer = [&prefix[..], &[c]].concat();
                assert_eq!(view.subtree(&longer).unwrap().is_some(), present.contains(&longer), "{longer:?}");
            }
        }
    }
    for index in probes {
        let c = storage(index);
        for k in 1..rank {
            if !present.contains(&c[..k]) {
                assert!(view.subtree(&c[..k]).unwrap().is_none(), "{:?} is absent", &c[..k]);
                view.for_each_under(&c[..k], |_, _| panic!("nothing lies under {:?}", &c[..k])).unwrap();
            }
        }
    }

    // Too long; out of the shape at each level (the first offending level is reported).
    assert_eq!(view.subtree(&vec![0; rank]).err(), Some(LookupError::PrefixTooLong { got: rank, rank }));
    let extents: Vec<u64> = (0..rank).map(|l| view.level_extent(l).unwrap()).collect();
    for level in 0..rank - 1 {
        let mut prefix = vec![0; level + 1];
        prefix[level] = extents[level];
        let first = (0..=level).find(|&l| prefix[l] >= extents[l]).unwrap();
        let dim = order[first] as usize;
        assert_eq!(
            view.subtree(&prefix).err(),
            Some(LookupError::OutOfBounds { dim, coord: prefix[first], extent: extents[first] })
        );
    }
}
