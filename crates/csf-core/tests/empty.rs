//! Empty tensors: the spec's nnz = 0 form (§ Storage Invariants: pos_0 = [0, 0],
//! pos_L = [0] for L >= 1, empty crd and values) and shapes with a zero extent.
//! Lookups are implicit zeros (or out of bounds where an extent is 0) and
//! every iteration API yields nothing.

mod common;

use common::{all_indices, iterate_all, view_container};
use csf_core::{CsfView, LookupError};
use csf_testdata::tree::Tree;
use csf_testdata::{reference_csf, TestTensor};
use hurray_format::ElementType;

/// The spec's canonical empty tree for `shape` and `mode_order`.
fn empty(element_type: ElementType, shape: &[u64], mode_order: &[u32]) -> Tree {
    let mut levels = vec![(vec![0, 0], vec![])];
    levels.extend((1..shape.len()).map(|_| (vec![0], vec![])));
    Tree::new(element_type, shape, mode_order, 0, levels, vec![])
}

fn assert_yields_nothing(view: &CsfView<'_>) {
    assert!(iterate_all(view).is_empty());
    let mut calls = 0;
    view.for_each(|_, _| calls += 1);
    view.for_each_stored(|_, _| calls += 1);
    assert_eq!(calls, 0);
    let mut cursor = view.cursor();
    assert!(!cursor.advance());
    assert!(!cursor.advance());
    // Opening the root slice and closing it.
    assert!(cursor.steps() <= 1);
    assert_eq!(cursor.value(), None);
    if view.rank() == 3 {
        assert_eq!(view.entries::<3>().unwrap().count(), 0);
    }
    for level in 0..view.rank() {
        assert_eq!(view.node_count(level), 0);
        assert!(view.fiber(level, 0).is_empty());
    }
    #[cfg(feature = "alloc")]
    {
        use csf_core::CooOrder;
        assert!(view.to_coo(CooOrder::Logical).is_empty());
        assert!(view.to_coo(CooOrder::Storage).is_empty());
        let total: u64 = view.shape().iter().product();
        let dense = view.to_dense_f64(total).unwrap();
        assert_eq!(dense.len() as u64, total);
        assert!(dense.iter().all(|&v| v == 0.0));
    }
}

#[test]
fn the_spec_empty_form_matches_the_reference_builder() {
    let coo = TestTensor { shape: vec![2, 3, 4], indices: vec![], values: vec![] };
    for order in [[0, 1, 2], [2, 0, 1]] {
        assert_eq!(reference_csf(&coo, &order).levels, empty(ElementType::F32, &[2, 3, 4], &order).levels);
    }
}

#[test]
fn empty_tensor_lookups_are_implicit_zeros() {
    for order in [[0u32, 1, 2], [1, 2, 0], [2, 1, 0]] {
        let tree = empty(ElementType::F32, &[2, 3, 4], &order);
        let bytes = tree.encode();
        for view in [tree.view(), view_container(&bytes)] {
            assert_eq!(view.nnz(), 0);
            for index in all_indices(&[2, 3, 4]) {
                assert_eq!(view.find(&index), Ok(None));
                assert_eq!(view.get(&index), Ok(None));
                assert_eq!(view.get_f64(&index), Ok(0.0));
            }
            assert_eq!(view.find(&[2, 0, 0]), Err(LookupError::OutOfBounds { dim: 0, coord: 2, extent: 2 }));
            assert_eq!(view.find(&[0, 0]), Err(LookupError::WrongRank { got: 2, rank: 3 }));
            assert_yields_nothing(&view);
        }
    }
}

#[test]
fn empty_tensors_of_higher_rank_and_other_types() {
    for (element_type, shape) in [
        (ElementType::F64, vec![3, 1, 2, 5]),
        (ElementType::I4, vec![2, 2, 2, 2, 2]),
        (ElementType::U8, vec![1; 64]),
    ] {
        let order: Vec<u32> = (0..shape.len() as u32).rev().collect();
        let tree = empty(element_type, &shape, &order);
        let bytes = tree.encode();
        for view in [tree.view(), view_container(&bytes)] {
            assert_eq!(view.rank(), shape.len());
            for index in all_indices(&shape) {
                assert_eq!(view.get(&index), Ok(None));
            }
            assert_yields_nothing(&view);
        }
    }
}

#[test]
fn a_zero_extent_makes_every_lookup_out_of_bounds() {
    for (shape, zero_dim) in [(vec![3, 0, 4], 1), (vec![0, 0, 0], 0), (vec![5, 5, 5, 0], 3)] {
        let order: Vec<u32> = (0..shape.len() as u32).collect();
        let tree = empty(ElementType::F32, &shape, &order);
        let bytes = tree.encode();
        for view in [tree.view(), view_container(&bytes)] {
            let mut index = vec![0u64; shape.len()];
            assert_eq!(
                view.find(&index),
                Err(LookupError::OutOfBounds { dim: zero_dim, coord: 0, extent: 0 })
            );
            index[0] = 1;
            assert!(matches!(view.get(&index), Err(LookupError::OutOfBounds { .. })));
            assert!(view.get_f64(&index).is_err());
            assert_yields_nothing(&view);
            #[cfg(feature = "alloc")]
            assert_eq!(view.to_dense_f64(0).unwrap(), Vec::<f64>::new());
        }
    }
}

#[test]
fn empty_arrays_everywhere_are_an_empty_tensor_too() {
    // Not the canonical form (pos arrays are empty), which a strict validator
    // rejects; a view must still treat it as holding nothing.
    let tree = Tree::new(ElementType::F32, &[2, 3, 4], &[0, 1, 2], 0, vec![(vec![], vec![]); 3], vec![]);
    let view = tree.view();
    for index in all_indices(&[2, 3, 4]) {
        assert_eq!(view.get(&index), Ok(None));
    }
    assert_yields_nothing(&view);
}
