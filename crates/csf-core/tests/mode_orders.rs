//! Spec § Mode Ordering: "mode_order affects storage traversal only". The same
//! tensor stored under each of the six mode orders of rank 3 gives the same
//! lookups and the same (index, value) pairs; iteration follows storage order.

mod common;

use std::collections::BTreeMap;

use common::{all_indices, check_against_oracle, get_f32, iterate_all, oracle};
use csf_core::{LookupError, Value};
use csf_testdata::tree::{f32_bytes, Tree};
use csf_testdata::{reference_csf, synthetic, Distribution, TestTensor};
use hurray_format::ElementType;

const ORDERS: [[u32; 3]; 6] = [[0, 1, 2], [0, 2, 1], [1, 0, 2], [1, 2, 0], [2, 0, 1], [2, 1, 0]];

fn tensors() -> Vec<TestTensor> {
    vec![
        // The spec example's entries, given out of order.
        TestTensor {
            shape: vec![2, 3, 4],
            indices: vec![1, 1, 2, 0, 0, 1, 1, 1, 0, 0, 2, 3],
            values: vec![4.0, 1.0, 3.0, 2.0],
        },
        // Distinct extents, so a mixed-up dimension cannot go unnoticed
        // (smaller under Miri, `cargo xtask miri`: 60 and 60 indices instead
        // of 315 and 264, and a quarter of the draws).
        if cfg!(miri) {
            synthetic(&[3, 4, 5], 30, Distribution::Uniform, 1)
        } else {
            synthetic(&[5, 7, 9], 120, Distribution::Uniform, 1)
        },
        if cfg!(miri) {
            synthetic(&[4, 3, 5], 40, Distribution::PowerLaw { skew: 3.0 }, 2)
        } else {
            synthetic(&[6, 4, 11], 150, Distribution::PowerLaw { skew: 3.0 }, 2)
        },
        // Dense enough to have duplicates (later ones win).
        synthetic(&[3, 2, 4], 40, Distribution::Uniform, 3),
    ]
}

#[test]
fn every_order_gives_the_same_lookups_and_entries() {
    for coo in tensors() {
        let map = oracle(&coo);
        let trees: Vec<Tree> = ORDERS.iter().map(|o| Tree::from_arrays(&reference_csf(&coo, o))).collect();
        let views: Vec<_> = trees.iter().map(Tree::view).collect();
        for (view, order) in views.iter().zip(ORDERS) {
            assert_eq!(view.mode_order(), order);
            assert_eq!(view.shape(), &coo.shape[..], "mode_order must not change the logical shape");
            for (level, &dim) in order.iter().enumerate() {
                assert_eq!(view.level_extent(level), Some(coo.shape[dim as usize]));
            }
            check_against_oracle(view, &map, &[]);
        }
        // Identical lookups over every index, view against view.
        for index in all_indices(&coo.shape) {
            let first = get_f32(&views[0], &index);
            for view in &views[1..] {
                assert_eq!(get_f32(view, &index), first, "{index:?} under {:?}", view.mode_order());
            }
        }
        // The same set of (index, value) pairs.
        let pairs = |view: &csf_core::CsfView<'_>| -> BTreeMap<Vec<u64>, Option<Value>> {
            iterate_all(view).into_iter().map(|s| (s.index, s.value)).collect()
        };
        let first = pairs(&views[0]);
        assert_eq!(first.len(), map.len());
        for view in &views[1..] {
            assert_eq!(pairs(view), first);
        }
    }
}

#[test]
fn iteration_follows_storage_order() {
    // Under Miri (`cargo xtask miri`), 60 draws in 120 cells instead of 120 in 315.
    let (shape, nnz, min_stored) = if cfg!(miri) { ([4, 5, 6], 60, 25) } else { ([5, 7, 9], 120, 50) };
    let coo = synthetic(&shape, nnz, Distribution::Uniform, 7);
    for order in ORDERS {
        let tree = Tree::from_arrays(&reference_csf(&coo, &order));
        let view = tree.view();
        let mut stored = Vec::new();
        view.for_each_stored(|c, leaf| stored.push((c.to_vec(), leaf)));
        assert!(stored.len() > min_stored);
        // Storage-order tuples strictly increase, leaf positions run 0, 1, 2, ...
        assert!(stored.windows(2).all(|w| w[0].0 < w[1].0), "{order:?}");
        assert!(stored.iter().enumerate().all(|(i, (_, leaf))| *leaf == i));
        // The cursor's storage coordinates too, and its logical index is their permutation.
        let mut cursor = view.cursor();
        let mut previous: Option<Vec<u64>> = None;
        while cursor.advance() {
            let c = cursor.coords().to_vec();
            for (level, &dim) in order.iter().enumerate() {
                assert_eq!(cursor.index()[dim as usize], c[level]);
            }
            assert!(previous.as_ref().map_or(true, |p| *p < c));
            previous = Some(c);
        }
        // Logical indices come out sorted by the order's own key, which for a
        // non-identity order is generally *not* row-major.
        let mut logical = Vec::new();
        view.for_each(|index, _| logical.push(index.to_vec()));
        let key = |i: &Vec<u64>| order.iter().map(|&d| i[d as usize]).collect::<Vec<_>>();
        assert!(logical.windows(2).all(|w| key(&w[0]) < key(&w[1])));
        if order != [0, 1, 2] {
            assert!(logical.windows(2).any(|w| w[0] > w[1]), "{order:?} should not iterate row-major");
        }
    }
}

/// The spec example under mode_order [2, 1, 0], built by hand (not by the
/// reference builder): storage tuples (k, j, i) sorted are (0,1,1) -> 3.0,
/// (1,0,0) -> 1.0, (2,1,1) -> 4.0, (3,2,0) -> 2.0.
fn reversed_example() -> Tree {
    Tree::new(
        ElementType::F32,
        &[2, 3, 4],
        &[2, 1, 0],
        4,
        vec![
            (vec![0, 4], vec![0, 1, 2, 3]),
            (vec![0, 1, 2, 3, 4], vec![1, 0, 1, 2]),
            (vec![0, 1, 2, 3, 4], vec![1, 0, 1, 0]),
        ],
        f32_bytes(&[3.0, 1.0, 4.0, 2.0]),
    )
}

#[test]
fn hand_built_reversed_order_matches_the_reference_builder_and_the_spec() {
    let tree = reversed_example();
    let coo = TestTensor {
        shape: vec![2, 3, 4],
        indices: vec![0, 0, 1, 0, 2, 3, 1, 1, 0, 1, 1, 2],
        values: vec![1.0, 2.0, 3.0, 4.0],
    };
    let built = reference_csf(&coo, &[2, 1, 0]);
    assert_eq!(built.levels, tree.levels);
    let view = tree.view();
    check_against_oracle(&view, &oracle(&coo), &[]);
    // (1, 1, 2): q = [idx[2], idx[1], idx[0]] = [2, 1, 1] -> leaf 2.
    assert_eq!(view.find(&[1, 1, 2]), Ok(Some(2)));
    assert_eq!(view.get(&[1, 1, 2]), Ok(Some(Value::F32(4.0))));
    assert_eq!(view.find(&[0, 0, 1]), Ok(Some(1)));
    // Bounds are checked against the logical shape, not the level extents.
    assert_eq!(view.find(&[0, 0, 3]), Ok(None));
    assert_eq!(view.find(&[2, 0, 0]), Err(LookupError::OutOfBounds { dim: 0, coord: 2, extent: 2 }));
    let entries: Vec<_> = view.entries::<3>().unwrap().map(|(i, _)| i).collect();
    assert_eq!(entries, [[1, 1, 0], [0, 0, 1], [1, 1, 2], [0, 2, 3]]);
}

#[test]
fn a_container_keeps_its_mode_order() {
    // Under Miri (`cargo xtask miri`), 30 draws in 60 cells instead of 60 in 120.
    let (shape, nnz) = if cfg!(miri) { ([3, 4, 5], 30) } else { ([4, 5, 6], 60) };
    for order in ORDERS {
        let coo = synthetic(&shape, nnz, Distribution::Uniform, 11);
        let tree = Tree::from_arrays(&reference_csf(&coo, &order));
        let bytes = tree.encode();
        let view = common::view_container(&bytes);
        assert_eq!(view.mode_order(), order);
        check_against_oracle(&view, &oracle(&coo), &[]);
    }
}
