//! The spec's worked example (§ Example): shape [2, 3, 4], float32, identity
//! mode order, four non-zeros. Every claim the example makes is checked, both
//! on arrays handed to `CsfView::builder` and on a container written by
//! `hurray_format::encode_to_slice` and viewed with `CsfView::from_container`.

mod common;

use std::collections::BTreeMap;

use common::{iterate_all, view_container, Seen};
use csf_core::{CsfView, Level, LookupError, PartsError, Value, ViewError};
use csf_testdata::tree::{f32_bytes, le_bytes, Tree};
use hurray_format::le::U64Array;
use hurray_format::limits::RankError;
use hurray_format::ElementType;

/// The example's non-zeros, in leaf order.
const NONZEROS: [([u64; 3], f32); 4] =
    [([0, 0, 1], 1.0), ([0, 2, 3], 2.0), ([1, 1, 0], 3.0), ([1, 1, 2], 4.0)];

fn oracle() -> BTreeMap<Vec<u64>, f32> {
    NONZEROS.iter().map(|(i, v)| (i.to_vec(), *v)).collect()
}

/// Runs `check` on the example viewed both ways.
fn both_ways(check: impl Fn(&CsfView<'_>)) {
    let tree = Tree::spec_example();
    check(&tree.view());
    let bytes = tree.encode();
    check(&view_container(&bytes));
}

#[test]
fn view_reports_the_descriptor() {
    both_ways(|view| {
        assert_eq!(view.rank(), 3);
        assert_eq!(view.shape(), &[2, 3, 4]);
        assert_eq!(view.mode_order(), &[0, 1, 2]);
        assert_eq!(view.nnz(), 4);
        assert_eq!(view.element_type(), ElementType::F32);
        assert_eq!(view.values().as_bytes(), &f32_bytes(&[1.0, 2.0, 3.0, 4.0])[..]);
    });
}

#[test]
fn levels_node_counts_and_fibers() {
    both_ways(|view| {
        // n_0 = 2, n_1 = 3, n_2 = nnz = 4; nothing past the leaf level.
        assert_eq!([view.node_count(0), view.node_count(1), view.node_count(2)], [2, 3, 4]);
        assert_eq!(view.node_count(3), 0);
        assert_eq!(view.levels().len(), 3);
        assert!(view.level(3).is_none());
        let arrays: Vec<(Vec<u64>, Vec<u64>)> =
            view.levels().iter().map(|l| (l.pos.iter().collect(), l.crd.iter().collect())).collect();
        assert_eq!(
            arrays,
            vec![
                (vec![0, 2], vec![0, 1]),
                (vec![0, 2, 3], vec![0, 2, 1]),
                (vec![0, 1, 2, 4], vec![1, 3, 0, 2]),
            ]
        );
        // Bounding sizes shape[mode_order[L]].
        assert_eq!(
            (0..4).map(|l| view.level_extent(l)).collect::<Vec<_>>(),
            [Some(2), Some(3), Some(4), None]
        );
        // Level 0 has one parent, the virtual root.
        let fiber = |l, p| {
            let f = view.fiber(l, p);
            (f.start, f.iter().collect::<Vec<_>>())
        };
        assert_eq!(fiber(0, 0), (0, vec![(0, 0), (1, 1)]));
        // "parent 0 has 2 children, parent 1 has 1".
        assert_eq!(fiber(1, 0), (0, vec![(0, 0), (1, 2)]));
        assert_eq!(fiber(1, 1), (2, vec![(2, 1)]));
        // Leaf fibers: the k coordinates under (0,0), (0,2), (1,1).
        assert_eq!(fiber(2, 0), (0, vec![(0, 1)]));
        assert_eq!(fiber(2, 1), (1, vec![(1, 3)]));
        assert_eq!(fiber(2, 2), (2, vec![(2, 0), (3, 2)]));
        // Past the parents or the levels: empty, never a panic.
        assert!(view.fiber(1, 2).is_empty());
        assert!(view.fiber(2, 3).is_empty());
        assert!(view.fiber(3, 0).is_empty());
        assert!(view.fiber(0, usize::MAX).is_empty());
        assert_eq!(view.fiber(2, 2).len(), 2);
    });
}

#[test]
fn the_traced_lookup_finds_leaf_position_3() {
    both_ways(|view| {
        // The trace: level 0 -> p = 1, level 1 -> p = 2, level 2 -> p = 3.
        assert_eq!(view.find(&[1, 1, 2]), Ok(Some(3)));
        assert_eq!(view.get(&[1, 1, 2]), Ok(Some(Value::F32(4.0))));
        assert_eq!(view.get_f64(&[1, 1, 2]), Ok(4.0));
        // The intermediate steps of the trace, as fibers.
        assert_eq!(view.fiber(1, 1).start, 2);
        assert_eq!(view.fiber(2, 2).start, 2);
    });
}

#[test]
fn every_nonzero_is_found_at_its_leaf_position() {
    both_ways(|view| {
        for (leaf, (index, value)) in NONZEROS.iter().enumerate() {
            assert_eq!(view.find(index), Ok(Some(leaf)), "{index:?}");
            assert_eq!(view.get(index), Ok(Some(Value::F32(*value))));
            assert_eq!(view.values().typed::<f32>().unwrap().get(leaf), Some(*value));
        }
    });
}

#[test]
fn all_24_indices_match_a_dense_reference() {
    let mut dense = [0.0f32; 24];
    for (index, value) in NONZEROS {
        dense[(index[0] * 12 + index[1] * 4 + index[2]) as usize] = value;
    }
    both_ways(|view| {
        let mut present = 0;
        for i in 0..2u64 {
            for j in 0..3u64 {
                for k in 0..4u64 {
                    let want = dense[(i * 12 + j * 4 + k) as usize];
                    assert_eq!(view.get_f64(&[i, j, k]), Ok(f64::from(want)), "({i}, {j}, {k})");
                    match view.get(&[i, j, k]).unwrap() {
                        Some(v) => {
                            present += 1;
                            assert_eq!(v, Value::F32(want));
                        }
                        None => assert_eq!(want, 0.0, "({i}, {j}, {k}) is missing"),
                    }
                }
            }
        }
        assert_eq!(present, 4);
        // The spec's implicit zero and near misses at each level.
        assert_eq!(view.find(&[0, 1, 1]), Ok(None)); // level 1 miss
        assert_eq!(view.find(&[1, 1, 1]), Ok(None)); // level 2 miss
        assert_eq!(view.find(&[1, 0, 0]), Ok(None)); // level 1 miss under i = 1
    });
}

#[test]
fn iteration_yields_the_four_nonzeros_in_order() {
    both_ways(|view| {
        let want: Vec<Seen> = NONZEROS
            .iter()
            .enumerate()
            .map(|(leaf, (index, v))| Seen { index: index.to_vec(), leaf, value: Some(Value::F32(*v)) })
            .collect();
        // for_each, for_each_stored, cursor and entries::<3>, checked against each other there.
        assert_eq!(iterate_all(view), want);

        let mut stored = Vec::new();
        view.for_each_stored(|c, leaf| stored.push((c.to_vec(), leaf)));
        assert_eq!(stored, want.iter().map(|s| (s.index.clone(), s.leaf)).collect::<Vec<_>>());

        let entries: Vec<_> = view.entries::<3>().unwrap().collect();
        assert_eq!(entries, NONZEROS.iter().map(|(i, v)| (*i, Some(Value::F32(*v)))).collect::<Vec<_>>());
        assert_eq!(view.entries::<4>().err(), Some(LookupError::WrongRank { got: 4, rank: 3 }));

        let mut cursor = view.cursor();
        let mut sum = 0.0;
        while cursor.advance() {
            assert_eq!(cursor.coords(), cursor.index());
            sum += cursor.value().unwrap().to_f64();
        }
        assert_eq!(sum, 10.0);
        // 4 leaves + 3 level-1 nodes + 2 level-0 nodes, each slice closed once.
        assert!(cursor.steps() <= 2 * 9 + 1);
    });
}

#[test]
fn fiber_find_retraces_the_lookup() {
    both_ways(|view| {
        // The trace of (1, 1, 2): level 0 -> p = 1, level 1 -> p = 2, level 2 -> p = 3.
        assert_eq!(view.fiber(0, 0).find(1), Some(1));
        assert_eq!(view.fiber(1, 1).find(1), Some(2));
        assert_eq!(view.fiber(2, 2).find(2), Some(3));
        // The implicit zero (0, 1, 1) stops at level 1.
        assert_eq!(view.fiber(1, 0).find(1), None);
        assert_eq!(view.fiber(2, 2).find(1), None);
        assert_eq!(view.fiber(2, 2).find(u64::MAX), None);
        assert_eq!(view.fiber(1, 9).find(0), None);
    });
}

#[test]
fn subtrees_of_the_example() {
    both_ways(|view| {
        let under = |prefix: &[u64]| {
            let subtree = view.subtree(prefix).unwrap().expect("present");
            let mut seen = Vec::new();
            subtree.for_each(|index, leaf| seen.push((index.to_vec(), leaf, view.value(leaf, index))));
            assert_eq!(seen.len(), subtree.nnz());
            let leaves: Vec<usize> = seen.iter().map(|s| s.1).collect();
            assert_eq!(leaves, subtree.leaf_range().collect::<Vec<_>>());
            seen
        };
        let f32_at = |leaf: usize| (NONZEROS[leaf].0.to_vec(), leaf, Some(Value::F32(NONZEROS[leaf].1)));
        // "i=0: j=0,2 ; i=1: j=1": under i = 0 the leaves 0 and 1, under i = 1 the leaves 2 and 3.
        assert_eq!(under(&[0]), [f32_at(0), f32_at(1)]);
        assert_eq!(under(&[1]), [f32_at(2), f32_at(3)]);
        assert_eq!(under(&[1, 1]), [f32_at(2), f32_at(3)]);
        assert_eq!(under(&[0, 2]), [f32_at(1)]);
        assert_eq!(under(&[]), (0..4).map(f32_at).collect::<Vec<_>>());
        // (0, 1) and (1, 0) hold nothing; (0, 3) and (2) leave the shape; a
        // prefix of 3 coordinates leaves no level below it.
        assert!(view.subtree(&[0, 1]).unwrap().is_none());
        assert!(view.subtree(&[1, 0]).unwrap().is_none());
        assert_eq!(
            view.subtree(&[0, 3]).err(),
            Some(LookupError::OutOfBounds { dim: 1, coord: 3, extent: 3 })
        );
        assert_eq!(view.subtree(&[2]).err(), Some(LookupError::OutOfBounds { dim: 0, coord: 2, extent: 2 }));
        assert_eq!(view.subtree(&[1, 1, 2]).err(), Some(LookupError::PrefixTooLong { got: 3, rank: 3 }));
        assert!(!LookupError::PrefixTooLong { got: 3, rank: 3 }.to_string().is_empty());
        // for_each_under is the same walk; the cursor and entries too.
        let mut seen = Vec::new();
        view.for_each_under(&[1], |index, leaf| seen.push((index.to_vec(), leaf))).unwrap();
        assert_eq!(seen, [(vec![1, 1, 0], 2), (vec![1, 1, 2], 3)]);
        let subtree = view.subtree(&[0]).unwrap().unwrap();
        let mut cursor = subtree.cursor();
        let mut sum = 0.0;
        while cursor.advance() {
            assert_eq!(cursor.coords()[0], 0);
            sum += cursor.value().unwrap().to_f64();
        }
        assert_eq!(sum, 3.0);
        let entries: Vec<_> = subtree.entries::<3>().unwrap().collect();
        assert_eq!(entries, [([0, 0, 1], Some(Value::F32(1.0))), ([0, 2, 3], Some(Value::F32(2.0)))]);
        // Its values are a slice of the values buffer.
        let values = view.values().typed::<f32>().unwrap();
        let slice: Vec<f32> = subtree.leaf_range().map(|leaf| values.get(leaf).unwrap()).collect();
        assert_eq!(slice, [1.0, 2.0]);
    });
}

#[test]
fn the_oracle_checker_agrees() {
    both_ways(|view| common::check_against_oracle(view, &oracle(), &[]));
}

#[test]
fn lookup_errors_are_errors_not_panics() {
    both_ways(|view| {
        assert_eq!(view.find(&[1, 1]), Err(LookupError::WrongRank { got: 2, rank: 3 }));
        assert_eq!(view.find(&[1, 1, 2, 0]), Err(LookupError::WrongRank { got: 4, rank: 3 }));
        assert_eq!(view.get(&[]), Err(LookupError::WrongRank { got: 0, rank: 3 }));
        assert_eq!(view.find(&[2, 0, 0]), Err(LookupError::OutOfBounds { dim: 0, coord: 2, extent: 2 }));
        assert_eq!(view.find(&[0, 3, 0]), Err(LookupError::OutOfBounds { dim: 1, coord: 3, extent: 3 }));
        assert_eq!(view.get_f64(&[0, 0, 4]), Err(LookupError::OutOfBounds { dim: 2, coord: 4, extent: 4 }));
        assert_eq!(
            view.get(&[0, 0, u64::MAX]),
            Err(LookupError::OutOfBounds { dim: 2, coord: u64::MAX, extent: 4 })
        );
        // The first offending dimension is reported.
        assert_eq!(view.find(&[5, 5, 5]), Err(LookupError::OutOfBounds { dim: 0, coord: 5, extent: 2 }));
        // Errors display without panicking.
        assert!(!view.find(&[5, 5, 5]).unwrap_err().to_string().is_empty());
    });
}

#[test]
fn builder_and_from_container_refuse_structural_errors() {
    let tree = Tree::spec_example();
    let arrays: Vec<Vec<u8>> = tree.levels.iter().flat_map(|(p, c)| [le_bytes(p), le_bytes(c)]).collect();
    let levels: Vec<Level<'_>> = arrays
        .chunks(2)
        .map(|pc| Level { pos: U64Array::new(&pc[0]).unwrap(), crd: U64Array::new(&pc[1]).unwrap() })
        .collect();
    let f32s = ElementType::F32;
    let values = &tree.values[..];
    let parts = |shape: &'static [u64], order: &'static [u32], levels| {
        CsfView::builder(f32s, shape).mode_order(order).nnz(4).levels(levels).values(values).build()
    };
    assert!(parts(&[2, 3, 4], &[0, 1, 2], &levels).is_ok());
    assert_eq!(parts(&[2, 3], &[0, 1], &levels[..2]).err(), Some(PartsError::Rank(RankError::TooSmall(2))));
    assert_eq!(
        parts(&[2, 3, 4], &[0, 1], &levels).err(),
        Some(PartsError::ModeOrderLength { len: 2, rank: 3 })
    );
    assert_eq!(
        parts(&[2, 3, 4], &[0, 1, 2], &levels[..2]).err(),
        Some(PartsError::LevelCount { levels: 2, rank: 3 })
    );
    assert_eq!(parts(&[1; 65], &[0; 65], &levels).err(), Some(PartsError::Rank(RankError::TooLarge(65))));
    // A container whose crd_0 is not a whole number of u64s.
    let mut bad = tree.clone();
    bad.levels[0].1 = vec![0, 1];
    let mut d = hurray_format::Descriptor::csf(f32s, &[2, 3, 4], &[0, 1, 2], 4).unwrap();
    let mut buffers = bad.buffers();
    buffers[2].pop();
    let slices: Vec<&[u8]> = buffers.iter().map(Vec::as_slice).collect();
    let bytes = hurray_format::encode_to_vec(&d, &slices).unwrap();
    let container = hurray_format::Container::decode(&bytes).unwrap();
    assert_eq!(CsfView::from_container(&container).err(), Some(ViewError::NotU64Array { index: 2, len: 15 }));
    // Too few buffers for the rank.
    d.buffers = hurray_format::BufferTable::new();
    for _ in 0..5 {
        d.buffers.push(hurray_format::BufferEntry::default()).unwrap();
    }
    let bytes = hurray_format::encode_to_vec(&d, &slices[..5]).unwrap();
    let container = hurray_format::Container::decode(&bytes).unwrap();
    assert_eq!(
        CsfView::from_container(&container).err(),
        Some(ViewError::MissingBuffer { index: 5, count: 5, needed: 7 })
    );
}

#[cfg(feature = "alloc")]
#[test]
fn dense_and_coo_conversions() {
    use csf_core::{CooOrder, DenseError};
    both_ways(|view| {
        let dense = view.to_dense_f64(24).unwrap();
        let mut want = vec![0.0f64; 24];
        for (index, value) in NONZEROS {
            want[(index[0] * 12 + index[1] * 4 + index[2]) as usize] = f64::from(value);
        }
        assert_eq!(dense, want);
        assert_eq!(view.to_dense::<f32>(24).unwrap(), want.iter().map(|&v| v as f32).collect::<Vec<_>>());
        assert_eq!(view.to_dense_f64(23), Err(DenseError::OverBudget { elements: 24, budget: 23 }));
        assert_eq!(view.to_dense::<u8>(24), Err(DenseError::TypeMismatch(ElementType::F32)));

        let coo = view.to_coo(CooOrder::Logical);
        assert_eq!(coo.rank, 3);
        assert_eq!(coo.indices, vec![0, 0, 1, 0, 2, 3, 1, 1, 0, 1, 1, 2]);
        assert_eq!(coo.values, NONZEROS.iter().map(|(_, v)| Some(Value::F32(*v))).collect::<Vec<_>>());
        assert_eq!(coo.index(3), Some(&[1, 1, 2][..]));
        assert_eq!(coo.index(4), None);
        assert!(!coo.is_empty());
        // Identity order: storage order is the logical order.
        assert_eq!(view.to_coo(CooOrder::Storage), coo);
    });
}

#[cfg(feature = "alloc")]
#[test]
fn owned_round_trip_through_a_container() {
    let tree = Tree::spec_example();
    let owned = csf_core::OwnedCsf::from_view(&tree.view());
    let bytes = owned.to_bytes().unwrap();
    // The encoder is deterministic and agrees with encode_to_slice.
    assert_eq!(bytes, tree.encode());
    let view = view_container(&bytes);
    assert_eq!(view.find(&[1, 1, 2]), Ok(Some(3)));
    assert_eq!(iterate_all(&view), iterate_all(&owned.view()));
}
