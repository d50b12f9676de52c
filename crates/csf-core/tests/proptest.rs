//! Random sparse tensors of rank 3..=6 (small shapes, zero extents included),
//! stored under random mode orders by the reference builder, against a
//! `BTreeMap` oracle: lookups of present and absent indices, the four
//! iteration APIs (which must agree, each yielding exactly nnz entries), and
//! the sub-tree under every prefix of every entry, and under absent prefixes.

mod common;

use common::{check_against_oracle, check_subtrees, oracle};
use csf_testdata::tree::Tree;
use csf_testdata::{reference_csf, TestTensor};
use proptest::prelude::*;

/// The most entries drawn for a tensor (fewer under Miri, `cargo xtask miri`).
const ENTRIES: usize = if cfg!(miri) { 30 } else { 80 };

/// A random tensor: shape (extents 0..=6, at most 6^4 cells), entries with
/// duplicates possible, random absent-index probes, and a mode order.
fn tensor() -> impl Strategy<Value = (TestTensor, Vec<u32>, Vec<Vec<u64>>)> {
    (3usize..=6)
        .prop_flat_map(|rank| {
            // Under Miri (`cargo xtask miri`), where every lookup costs
            // thousands of times more, smaller extents: at most 4^4 or 3^6
            // cells instead of 6^4 or 4^6, each looked up in the sweep.
            let max_extent = match (cfg!(miri), rank <= 4) {
                (false, true) => 6u64,
                (false, false) | (true, true) => 4,
                (true, false) => 3,
            };
            // A zero extent (so nnz = 0) is drawn about once in 12 dimensions.
            let extent = prop_oneof![1 => Just(0u64), 11 => 1..=max_extent];
            let shape = prop::collection::vec(extent, rank);
            let order = Just((0..rank as u32).collect::<Vec<_>>()).prop_shuffle();
            (shape, order)
        })
        .prop_flat_map(|(shape, order)| {
            let rank = shape.len();
            let raw =
                prop::collection::vec((prop::collection::vec(any::<u64>(), rank), 1u32..=1000), 0..ENTRIES);
            let probes = prop::collection::vec(prop::collection::vec(any::<u64>(), rank), 20);
            (Just(shape), Just(order), raw, probes)
        })
        .prop_map(|(shape, order, raw, probes)| {
            let into_shape = |v: &[u64]| v.iter().zip(&shape).map(|(c, e)| c % e).collect::<Vec<_>>();
            let mut coo = TestTensor { shape: shape.clone(), indices: vec![], values: vec![] };
            if shape.iter().all(|&e| e > 0) {
                for (index, value) in &raw {
                    coo.indices.extend(into_shape(index));
                    // Negative values too; never zero, so presence is unambiguous.
                    coo.values.push(f64::from(*value) - 500.5);
                }
            }
            let probes = if shape.iter().all(|&e| e > 0) {
                probes.iter().map(|p| into_shape(p)).collect()
            } else {
                vec![]
            };
            (coo, order, probes)
        })
}

proptest! {
    // Fewer cases under Miri (`cargo xtask miri`), where each costs about a thousand times more.
    #![proptest_config(ProptestConfig { cases: if cfg!(miri) { 8 } else { 512 }, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn lookup_and_iteration_match_a_btreemap((coo, order, probes) in tensor()) {
        let map = oracle(&coo);
        let arrays = reference_csf(&coo, &order);
        prop_assert_eq!(arrays.nnz(), map.len());
        let tree = Tree::from_arrays(&arrays);
        let view = tree.view();
        // Absent indices: the probes that miss (and, for small shapes, every index).
        let absent: Vec<Vec<u64>> = probes.into_iter().filter(|p| !map.contains_key(p)).collect();
        check_against_oracle(&view, &map, &absent);
        for index in &absent {
            prop_assert_eq!(view.find(index), Ok(None));
        }
        check_subtrees(&view, &absent);
        // The same through a container.
        let bytes = tree.encode();
        let contained = common::view_container(&bytes);
        check_against_oracle(&contained, &map, &absent);
        check_subtrees(&contained, &absent);
    }

    #[test]
    fn a_zero_extent_means_no_entries_and_every_lookup_out_of_bounds(
        (coo, order, probes) in tensor(),
        zero_dim in 0usize..6,
    ) {
        let mut shape = coo.shape.clone();
        let zero_dim = zero_dim % shape.len();
        shape[zero_dim] = 0;
        let empty = TestTensor { shape: shape.clone(), indices: vec![], values: vec![] };
        let tree = Tree::from_arrays(&reference_csf(&empty, &order));
        let view = tree.view();
        prop_assert_eq!(common::iterate_all(&view).len(), 0);
        // The whole tensor is a sub-tree without entries; any other prefix leaves the shape.
        let whole = view.subtree(&[]).unwrap().unwrap();
        prop_assert_eq!((whole.nnz(), whole.leaf_range()), (0, 0..0));
        let level = view.mode_order().iter().position(|&d| d as usize == zero_dim).unwrap();
        if level + 1 < shape.len() {
            let r = view.subtree(&vec![0; level + 1]);
            prop_assert!(matches!(r, Err(csf_core::LookupError::OutOfBounds { .. })), "{:?}", r);
        }
        for probe in probes.iter().chain(std::iter::once(&vec![0; shape.len()])) {
            let r = view.find(probe);
            prop_assert!(
                matches!(r, Err(csf_core::LookupError::OutOfBounds { .. })),
                "{:?} -> {:?}", probe, r
            );
        }
    }
}
