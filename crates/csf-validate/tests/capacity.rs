//! Views of a chosen rank capacity (`CsfView<'a, MAX>`, `validate_capped`):
//! at a capacity that holds the tensor they read, look up, iterate and
//! validate exactly as the default capacity (64) does; above it, the read is
//! a typed error, never a panic. Small tensors, so that the file also runs
//! under Miri.

use csf_core::{CsfView, ViewError};
use csf_testdata::tree::Tree;
use csf_testdata::{reference_csf, synthetic, Distribution};
use csf_validate::Rule;
use hurray_format::Container;

/// A few dozen entries of a tensor of `shape`, stored in `order`, as a file.
fn file(shape: &[u64], order: &[u32], seed: u64) -> Vec<u8> {
    let coo = synthetic(shape, if cfg!(miri) { 12 } else { 60 }, Distribution::Uniform, seed);
    Tree::from_arrays(&reference_csf(&coo, order)).encode()
}

type Entries = Vec<(Vec<u64>, usize, Option<f64>)>;

/// Every entry by `for_each` (logical index, leaf, value), checked against
/// the cursor, `entries` and the storage-order walk's leaf order.
fn entries<const MAX: usize>(view: &CsfView<'_, MAX>) -> Entries {
    let mut seen = Vec::new();
    view.for_each(|index, leaf| seen.push((index.to_vec(), leaf, view.value_f64(leaf, index))));
    let mut cursor = view.cursor();
    let mut by_cursor = Vec::new();
    while cursor.advance() {
        by_cursor.push((cursor.index().to_vec(), cursor.leaf(), cursor.value().map(|v| v.to_f64())));
    }
    assert_eq!(seen, by_cursor, "for_each and the cursor differ at capacity {MAX}");
    let mut leaves = Vec::new();
    view.for_each_stored(|_, leaf| leaves.push(leaf));
    assert_eq!(leaves, seen.iter().map(|e| e.1).collect::<Vec<_>>());
    seen
}

/// What a view answers, compared between capacity `MAX` and the default:
/// shape, order, entries, every lookup (present, absent, out of bounds,
/// wrong rank) and the sub-trees under each entry's first coordinate.
fn same_answers<const MAX: usize>(small: &CsfView<'_, MAX>, full: &CsfView<'_>) {
    assert_eq!(
        (small.rank(), small.shape(), small.mode_order()),
        (full.rank(), full.shape(), full.mode_order())
    );
    assert_eq!((small.nnz(), small.element_type()), (full.nnz(), full.element_type()));
    let seen = entries(small);
    assert_eq!(seen, entries(full));
    assert_eq!(seen.len() as u64, full.nnz());
    for (index, leaf, value) in &seen {
        assert_eq!(small.find(index), Ok(Some(*leaf)));
        assert_eq!(small.get_f64(index).unwrap(), value.unwrap());
        let prefix = &index[..1];
        let stored = [index[full.mode_order()[0] as usize]];
        let (a, b) = (small.subtree(&stored).unwrap().unwrap(), full.subtree(&stored).unwrap().unwrap());
        assert_eq!(a.leaf_range(), b.leaf_range(), "{prefix:?}");
    }
    // Every index of a small corner, present or not, and the errors.
    let rank = full.rank();
    for i in 0..(1u64 << rank) {
        let index: Vec<u64> = (0..rank).map(|d| (i >> d) & 1).collect();
        assert_eq!(small.find(&index), full.find(&index));
    }
    let mut outside = vec![0; rank];
    outside[rank - 1] = full.shape()[rank - 1];
    assert_eq!(small.find(&outside), full.find(&outside));
    assert!(small.find(&outside).is_err());
    assert_eq!(small.find(&[0; 2]), full.find(&[0; 2]));
}

#[test]
fn capacity_8_reads_the_spec_example_as_the_default_does() {
    let bytes = Tree::spec_example().encode();
    let container = Container::decode(&bytes).unwrap();
    let full = CsfView::from_container(&container).unwrap();
    let small = CsfView::<'_, 8>::from_container_capped(&container).unwrap();
    same_answers(&small, &full);
    assert_eq!(small.get_f64(&[1, 1, 2]).unwrap(), 4.0);
    assert_eq!(CsfView::<'_, 8>::CAPACITY, 8);
    assert_eq!(<CsfView<'_>>::CAPACITY, 64); // in a type, the default applies

    // The smallest capacity CSF allows, 3, holds it too.
    same_answers(&CsfView::<'_, 3>::from_container_capped(&container).unwrap(), &full);
    // Its per-level arrays are sized by the capacity.
    assert!(core::mem::size_of::<CsfView<'_, 8>>() * 4 < core::mem::size_of::<CsfView<'_>>());
}

#[test]
fn capacity_8_reads_a_rank_4_tensor_in_another_order_as_the_default_does() {
    for (order, seed) in [([2u32, 0, 3, 1], 5), ([0, 1, 2, 3], 6), ([3, 2, 1, 0], 7)] {
        let bytes = file(&[4, 5, 3, 6], &order, seed);
        let container = Container::decode(&bytes).unwrap();
        let full = csf_validate::validate(&container).unwrap();
        let small = csf_validate::validate_capped::<8>(&container).unwrap();
        same_answers(&small, &full);
        // Capacity 4: exactly the rank.
        let exact = csf_validate::validate_capped::<4>(&container).unwrap();
        same_answers(&exact, &full);
        let permissive = csf_validate::validate_permissive_capped::<8>(&container).unwrap();
        same_answers(&permissive, &full);
        // Read in place, as a firmware does.
        let mut view = CsfView::<'_, 8>::empty_capped();
        view.read_container(&container).unwrap();
        same_answers(&view, &full);
        // `validate_view` keeps the capacity.
        let checked: csf_validate::ValidCsf<'_, 8> = csf_validate::validate_view(view).unwrap();
        assert_eq!(checked.view().nnz(), full.nnz());
    }
}

#[test]
fn a_rank_above_the_capacity_is_a_typed_error() {
    let shape = [2u64; 9];
    let order: Vec<u32> = (0..9).rev().collect();
    let bytes = file(&shape, &order, 9);
    let container = Container::decode(&bytes).unwrap();
    // The default capacity reads it.
    assert!(csf_validate::validate(&container).is_ok());
    let too_large = ViewError::RankTooLarge { rank: 9, capacity: 8 };
    assert_eq!(CsfView::<'_, 8>::from_container_capped(&container).unwrap_err(), too_large);
    assert_eq!(too_large.to_string(), "rank 9 exceeds this view's capacity of 8 (CsfView<'_, 8>)");
    // In place, the view is left as it was.
    let rank3 = file(&[3, 4, 5], &[1, 2, 0], 3);
    let rank3 = Container::decode(&rank3).unwrap();
    let mut view = CsfView::<'_, 8>::from_container_capped(&rank3).unwrap();
    let before = entries(&view);
    assert_eq!(view.read_container(&container), Err(too_large));
    assert_eq!(entries(&view), before);
    // csf-validate: a rank the format allows, so no rule of the format; the
    // view is refused, with the rank and the capacity.
    for violation in [
        csf_validate::validate_capped::<8>(&container).unwrap_err(),
        csf_validate::validate_permissive_capped::<8>(&container).unwrap_err(),
    ] {
        assert_eq!((violation.rule, violation.found, violation.expected), (Rule::ViewRefused, 9, 8));
        assert!(violation.rule.is_structural());
        assert_eq!(
            violation.to_string(),
            "csf-core cannot view the buffers as a CSF tensor: rank 9 exceeds the view's capacity of 8 \
             [view-refused; format.md § 7.4]"
        );
    }
    // At the data model's cap, the wording is the cap's.
    let at_cap = ViewError::RankTooLarge { rank: 65, capacity: 64 };
    assert_eq!(at_cap.to_string(), "rank 65 exceeds the cap of 64");
}
