//! Hand-made trees that break every storage invariant (spec § Storage
//! Invariants 1-5, the mode_order permutation, buffer sizes), and a proptest
//! of arbitrary garbage arrays. The view's totality promise (crate README):
//! no panic, no out-of-bounds read, iteration within `2 * (n_0 + ... +
//! n_{rank-1}) + 1` steps and at most `n_{rank-1}` entries, lookups and
//! conversions that return, sub-trees whose walks stay in their ranges within
//! `2 * (their nodes) + 1` steps. Unaligned buffers must give the same answers.

mod common;

use common::{stored_nodes, view_container};
use csf_core::{CsfView, LookupError, Value};
use csf_testdata::alloc_count::{allocated_by, CountingAlloc};
use csf_testdata::tree::{f32_bytes, placed, Tree};
use csf_testdata::{reference_csf, synthetic, Distribution, Rng};
use hurray_format::ElementType;
use proptest::prelude::*;

// ------------------------------------------------------------ allocation probe

#[global_allocator]
static GLOBAL: CountingAlloc = CountingAlloc;

// ------------------------------------------------------------ the checker

/// A value as comparable bits: garbage bytes hold NaNs, and `NaN != NaN`
/// would fail a comparison of two reads of the same element.
fn bits(value: Option<Value>) -> Option<(core::mem::Discriminant<Value>, u64)> {
    value.map(|v| {
        let bits = match v {
            Value::F32(x) => u64::from(x.to_bits()),
            Value::F64(x) => x.to_bits(),
            // Every other variant is an integer of at most 32 bits or a narrow format's
            // raw bits: `to_f64` is exact and deterministic for them.
            Value::I64(x) => x as u64,
            Value::U64(x) => x,
            other => other.to_f64().to_bits(),
        };
        (core::mem::discriminant(&v), bits)
    })
}

/// How many yielded entries and random prefixes [`check_total`] takes the
/// sub-trees under: 12, or 4 under Miri (`cargo xtask miri`), where each
/// walk costs thousands of times more and every hand-made tree and garbage
/// case runs it.
const SAMPLES: usize = if cfg!(miri) { 4 } else { 12 };

/// How many yielded and random indices [`check_total`] looks up (fewer under
/// Miri, as [`SAMPLES`]).
const PROBES: (usize, usize) = if cfg!(miri) { (8, 16) } else { (20, 40) };

/// What one iteration API yielded: (logical index or storage coords, leaf).
type Yield = Vec<(Vec<u64>, usize)>;

/// Checks the totality promise on any tree, valid or not, and returns what
/// `for_each` yielded (for comparisons between aligned and unaligned copies).
fn check_total(view: &CsfView<'_>, rng: &mut Rng) -> Yield {
    let rank = view.rank();
    let last = rank - 1;
    let leaf_level = view.level(last).unwrap();
    let n_last = leaf_level.node_count();
    let bound = 2 * stored_nodes(view) + 1;

    // Cursor: bounded steps, at most n_last entries, every leaf in crd_last.
    let mut cursor = view.cursor();
    let mut by_cursor: Yield = Vec::new();
    while cursor.advance() {
        assert!(cursor.steps() <= bound, "cursor took {} steps, bound {bound}", cursor.steps());
        let leaf = cursor.leaf();
        assert!(leaf < n_last, "leaf {leaf} outside crd_last (len {n_last})");
        assert_eq!(cursor.coords().len(), rank);
        assert_eq!(cursor.index().len(), rank);
        assert_eq!(Some(cursor.coords()[last]), leaf_level.crd.get(leaf));
        assert_eq!(bits(cursor.value_raw()), bits(view.values().get_raw(leaf)));
        // A value exists only below the descriptor's nnz, whatever the buffer holds.
        let real = if (leaf as u64) < view.nnz() { view.values().get_raw(leaf) } else { None };
        assert_eq!(bits(cursor.value()), bits(real));
        by_cursor.push((cursor.index().to_vec(), leaf));
        assert!(by_cursor.len() <= n_last);
    }
    assert!(cursor.steps() <= bound, "cursor took {} steps, bound {bound}", cursor.steps());
    assert!(!cursor.advance());
    // Leaves are visited at most once, in increasing order.
    assert!(by_cursor.windows(2).all(|w| w[0].1 < w[1].1));

    // for_each / for_each_stored: the same promises.
    let mut by_for_each: Yield = Vec::new();
    view.for_each(|index, leaf| {
        assert_eq!(index.len(), rank);
        assert!(leaf < n_last);
        by_for_each.push((index.to_vec(), leaf));
    });
    assert!(by_for_each.len() <= n_last);
    assert!(by_for_each.windows(2).all(|w| w[0].1 < w[1].1));
    let mut by_stored: Yield = Vec::new();
    view.for_each_stored(|coords, leaf| {
        assert_eq!(Some(coords[last]), leaf_level.crd.get(leaf));
        by_stored.push((coords.to_vec(), leaf));
    });
    assert_eq!(by_stored.len(), by_for_each.len());
    if let Some(entries) = common::entries_dyn(view) {
        assert!(entries.len() <= n_last);
    }

    // Sub-trees: under the prefixes of what was yielded, random and extreme
    // ones (fewer of the first two under Miri: see `SAMPLES`).
    let mut prefixes: Vec<Vec<u64>> = vec![vec![]];
    for (coords, _) in by_stored.iter().take(SAMPLES) {
        prefixes.extend((1..rank).map(|k| coords[..k].to_vec()));
    }
    for _ in 0..SAMPLES {
        let k = rng.below(rank as u64 + 1) as usize;
        prefixes.push((0..k).map(|l| rng.below(view.level_extent(l).unwrap_or(1).clamp(1, 16))).collect());
    }
    prefixes.extend([vec![u64::MAX], vec![0; rank - 1], vec![0; rank], vec![0; rank + 3]]);
    for prefix in &prefixes {
        check_subtree(view, prefix, &by_for_each);
    }

    // Fibers: always inside their level.
    for level in 0..=rank {
        for parent in [0, 1, 2, 3, n_last, usize::MAX - 1, usize::MAX] {
            let fiber = view.fiber(level, parent);
            assert!(fiber.start + fiber.len() <= view.node_count(level));
            assert!(fiber.iter().all(|(i, c)| view.level(level).unwrap().crd.get(i) == Some(c)));
        }
    }

    // Lookups: random indices, indices iteration produced, and extremes.
    let shape = view.shape().to_vec();
    let mut probes: Vec<Vec<u64>> = by_for_each.iter().take(PROBES.0).map(|(i, _)| i.clone()).collect();
    for _ in 0..PROBES.1 {
        probes.push(shape.iter().map(|&e| if e == 0 { 0 } else { rng.below(e.min(16)) }).collect());
    }
    probes.push(vec![u64::MAX; rank]);
    probes.push(shape.iter().map(|&e| e.saturating_sub(1)).collect());
    probes.push(vec![0; rank + 1]);
    for index in &probes {
        match view.find(index) {
            Ok(Some(leaf)) => {
                // A hit is a real leaf whose coordinate is the query's leaf-level one.
                assert!(leaf < n_last);
                let dim = view.mode_order()[last] as usize;
                assert_eq!(leaf_level.crd.get(leaf), Some(index[dim]));
                assert_eq!(bits(view.get_raw(index).unwrap()), bits(view.values().get_raw(leaf)));
                let real = if (leaf as u64) < view.nnz() { view.values().get_raw(leaf) } else { None };
                assert_eq!(bits(view.get(index).unwrap()), bits(real));
            }
            Ok(None) => assert_eq!(view.get_f64(index), Ok(0.0)),
            Err(
                LookupError::WrongRank { .. }
                | LookupError::OutOfBounds { .. }
                | LookupError::BadModeOrder { .. },
            ) => {}
            Err(e) => panic!("unexpected {e:?}"),
        }
    }

    #[cfg(feature = "alloc")]
    {
        use csf_core::CooOrder;
        let coo = view.to_coo(CooOrder::Logical);
        assert_eq!(coo.len(), by_for_each.len());
        assert_eq!(view.to_coo(CooOrder::Storage).len(), by_for_each.len());
        match view.to_dense_f64(1 << 12) {
            Ok(dense) => {
                assert_eq!(Some(dense.len() as u64), shape.iter().try_fold(1u64, |a, &e| a.checked_mul(e)))
            }
            Err(e) => {
                assert!(matches!(e, csf_core::DenseError::OverBudget { .. } | csf_core::DenseError::Overflow))
            }
        }
        let _ = view.to_dense::<f32>(1 << 12);
        let _ = view.to_dense::<u8>(1 << 12);
    }
    by_for_each
}

/// The totality promise for the sub-tree under `prefix` (any prefix, valid
/// or not): an error or `None` without a panic, or a sub-tree whose ranges
/// lie in their levels and whose walks agree, stay in its leaf range and
/// take at most `2 * (its nodes) + 1` steps. The empty prefix's walk is the
/// whole tensor's (`whole`, what `for_each` yielded).
fn check_subtree(view: &CsfView<'_>, prefix: &[u64], whole: &Yield) {
    let rank = view.rank();
    let subtree = match view.subtree(prefix) {
        Ok(Some(subtree)) => subtree,
        Ok(None) => {
            assert!(prefix.len() < rank);
            view.for_each_under(prefix, |_, _| panic!("an absent prefix has entries")).unwrap();
            return;
        }
        Err(LookupError::PrefixTooLong { got, rank: r }) => {
            assert!(got == prefix.len() && got >= rank && r == rank);
            return;
        }
        Err(LookupError::OutOfBounds { .. } | LookupError::BadModeOrder { .. }) => return,
        Err(e) => panic!("unexpected {e:?}"),
    };
    let k = prefix.len();
    assert_eq!(subtree.prefix(), prefix);
    let leaves = subtree.leaf_range();
    assert!(leaves.start <= leaves.end && leaves.end <= view.node_count(rank - 1));
    assert_eq!(subtree.nnz(), leaves.len());
    let mut nodes = 0u64;
    for level in 0..=rank {
        match subtree.node_range(level) {
            Some(range) => {
                assert!(level >= k && level < rank);
                assert!(range.start <= range.end && range.end <= view.node_count(level), "{range:?}");
                nodes += range.len() as u64;
            }
            None => assert!(level < k || level == rank),
        }
    }
    let fiber = subtree.fiber();
    assert!(fiber.start + fiber.len() <= view.node_count(k));
    assert_eq!(Some(fiber.start..fiber.start + fiber.len()), subtree.node_range(k));

    let mut cursor = subtree.cursor();
    let (mut by_cursor, mut stored_by_cursor): (Yield, Yield) = (Vec::new(), Vec::new());
    while cursor.advance() {
        assert!(cursor.steps() <= 2 * nodes + 1, "{} steps for {nodes} nodes", cursor.steps());
        assert!(leaves.contains(&cursor.leaf()), "leaf {} outside {leaves:?}", cursor.leaf());
        assert_eq!(&cursor.coords()[..k], prefix);
        assert_eq!(bits(cursor.value()), bits(view.value(cursor.leaf(), cursor.index())));
        by_cursor.push((cursor.index().to_vec(), cursor.leaf()));
        stored_by_cursor.push((cursor.coords().to_vec(), cursor.leaf()));
    }
    assert!(cursor.steps() <= 2 * nodes + 1 && cursor.steps() <= 2 * stored_nodes(view) + 1);
    assert!(!cursor.advance());
    assert!(by_cursor.len() <= subtree.nnz());
    assert!(by_cursor.windows(2).all(|w| w[0].1 < w[1].1));
    let mut by_for_each = Vec::new();
    subtree.for_each(|index, leaf| by_for_each.push((index.to_vec(), leaf)));
    assert_eq!(by_for_each, by_cursor, "sub-tree for_each and cursor differ under {prefix:?}");
    let mut by_stored = Vec::new();
    subtree.for_each_stored(|coords, leaf| by_stored.push((coords.to_vec(), leaf)));
    assert_eq!(by_stored, stored_by_cursor);
    let mut by_under = Vec::new();
    view.for_each_under(prefix, |index, leaf| by_under.push((index.to_vec(), leaf))).unwrap();
    assert_eq!(by_under, by_cursor);
    if k == 0 {
        assert_eq!(&by_for_each, whole, "the empty prefix's walk is the tensor's");
    }
}

/// The spec example with one change applied.
fn example_with(change: impl FnOnce(&mut Tree)) -> Tree {
    let mut tree = Tree::spec_example();
    change(&mut tree);
    Tree::new(tree.element_type, &tree.shape, &tree.mode_order, tree.nnz, tree.levels, tree.values)
}

/// Checks `tree` from its arrays and from a container at an odd address.
fn check_tree(tree: &Tree) -> Yield {
    let mut rng = Rng::new(7);
    let seen = check_total(&tree.view(), &mut rng);
    let bytes = tree.encode();
    let mut storage = Vec::new();
    let unaligned_bytes = placed(&bytes, &mut storage, 1);
    let view = view_container(unaligned_bytes);
    let mut rng = Rng::new(7);
    assert_eq!(check_total(&view, &mut rng), seen, "unaligned copy iterates differently");
    seen
}

// ------------------------------------------------------------ hand-made trees

#[test]
fn pos_going_backwards() {
    // Invariant 2: parent 1's slice [3, 1) is reversed; pos_2 decreases.
    let seen = check_tree(&example_with(|t| t.levels[1].0 = vec![0, 3, 1]));
    assert!(seen.len() <= 4);
    check_tree(&example_with(|t| t.levels[2].0 = vec![4, 2, 1, 0]));
    check_tree(&example_with(|t| t.levels[0].0 = vec![2, 0]));
    check_tree(&example_with(|t| t.levels[2].0 = vec![0, 3, 1, 4]));
}

#[test]
fn pos_pointing_past_the_end_of_crd() {
    // Invariant 3: the terminal entries overshoot n_L.
    check_tree(&example_with(|t| t.levels[2].0 = vec![0, 100, 200, 1000]));
    check_tree(&example_with(|t| t.levels[1].0 = vec![0, 2, 3_000_000_000]));
    check_tree(&example_with(|t| t.levels[0].0 = vec![0, 5]));
    // The first entry too (invariant 1).
    check_tree(&example_with(|t| t.levels[1].0 = vec![7, 8, 9]));
}

#[test]
fn huge_pos_entries() {
    for pos0 in [[0, u64::MAX], [u64::MAX, u64::MAX], [u64::MAX, 0], [1 << 63, u64::MAX]] {
        let seen = check_tree(&example_with(|t| t.levels[0].0 = pos0.to_vec()));
        // [0, MAX] clamps to the whole of crd_0: the tensor is still readable.
        if pos0 == [0, u64::MAX] {
            assert_eq!(seen.len(), 4);
        }
    }
    check_tree(&example_with(|t| t.levels[2].0 = vec![u64::MAX; 4]));
    check_tree(&example_with(|t| t.levels[1].0 = vec![0, u64::MAX, 1]));
}

#[test]
fn overlapping_slices() {
    // Every parent claims all of the leaves: a naive walk would emit 3 * 4
    // entries; the clamped one visits each leaf at most once.
    let seen = check_tree(&example_with(|t| t.levels[2].0 = vec![0, 4, 0, 4]));
    assert!(seen.len() <= 4);
    check_tree(&example_with(|t| t.levels[1].0 = vec![0, 3, 0]));
    check_tree(&example_with(|t| t.levels[1].0 = vec![0, 2, 1]));
}

#[test]
fn every_iteration_api_clamps_alike() {
    // Parent 0's leaf slice is [3, 3), empty but past the leaves visited so
    // far; parent 1's is reversed; parent 2 claims [0, 4). The cursor and
    // for_each must clamp parent 2's slice the same way.
    let tree = example_with(|t| t.levels[2].0 = vec![3, 3, 0, 4]);
    let view = tree.view();
    let (by_for_each, by_cursor) = walks(&view);
    assert_eq!(by_cursor, by_for_each);
    let mut by_stored = Vec::new();
    view.for_each_stored(|c, leaf| by_stored.push((c.to_vec(), leaf)));
    assert_eq!(by_stored, by_for_each);
    check_tree(&tree);
}

#[test]
fn subtrees_of_overlapping_slices_stay_in_their_ranges() {
    // Every level-1 node claims all four leaves: under i = 0, the level-1
    // nodes 0..2 own the leaves pos_2[0]..pos_2[2] = 0..0 and the walk
    // yields nothing; under (0, 0) node 0 owns 0..4.
    let tree = example_with(|t| t.levels[2].0 = vec![0, 4, 0, 4]);
    let view = tree.view();
    let under = view.subtree(&[0]).unwrap().unwrap();
    assert_eq!(under.leaf_range(), 0..0);
    let mut seen = 0;
    under.for_each(|_, _| seen += 1);
    assert_eq!(seen, 0);
    assert_eq!(view.subtree(&[0, 0]).unwrap().unwrap().leaf_range(), 0..4);
    // Unsorted coordinates: bisection over crd_0 = [1, 0] finds 0 (node 1)
    // and misses the 1 that is present. Wrong, but safe.
    let tree = example_with(|t| t.levels[0].1 = vec![1, 0]);
    let view = tree.view();
    assert_eq!(view.fiber(0, 0).find(0), Some(1));
    assert_eq!(view.fiber(0, 0).find(1), None);
    assert_eq!(view.subtree(&[0]).unwrap().unwrap().leaf_range(), 2..4);
    assert!(view.subtree(&[1]).unwrap().is_none());
    check_tree(&tree);
}

#[test]
fn overlapping_slices_cannot_blow_up_the_work() {
    // A deep tree whose every pos array gives each parent the whole next
    // level: the naive walk is exponential (n^rank leaves), the bound linear.
    let rank = 12;
    let n = 8u64;
    let levels: Vec<(Vec<u64>, Vec<u64>)> = (0..rank)
        .map(|l| {
            let parents = if l == 0 { 1 } else { n as usize };
            let pos = (0..=parents).map(|p| if p == 0 { 0 } else { n }).collect::<Vec<_>>();
            let pos = pos.iter().enumerate().map(|(i, &v)| if i % 2 == 0 { 0 } else { v }).collect();
            (pos, (0..n).collect())
        })
        .collect();
    let order: Vec<u32> = (0..rank as u32).collect();
    let tree = Tree::new(ElementType::U8, &[n; 12], &order, n, levels, vec![1; n as usize]);
    let seen = check_tree(&tree);
    assert!(seen.len() <= n as usize);
}

#[test]
fn unsorted_and_duplicate_coordinates() {
    // Invariant 4.
    check_tree(&example_with(|t| t.levels[2].1 = vec![3, 1, 2, 0]));
    check_tree(&example_with(|t| t.levels[2].1 = vec![1, 1, 2, 2]));
    check_tree(&example_with(|t| t.levels[0].1 = vec![1, 0]));
    let seen = check_tree(&example_with(|t| t.levels[1].1 = vec![0, 0, 0]));
    assert_eq!(seen.len(), 4);
}

#[test]
fn coordinates_outside_the_shape() {
    // Invariant 5.
    check_tree(&example_with(|t| t.levels[0].1 = vec![0, 7]));
    check_tree(&example_with(|t| t.levels[2].1 = vec![1, 3, 0, u64::MAX]));
    let seen = check_tree(&example_with(|t| t.levels[1].1 = vec![u64::MAX - 1, 2, 1 << 40]));
    // Iteration reports what is stored, even out of the shape.
    assert!(seen.iter().any(|(i, _)| i[1] == u64::MAX - 1));
}

#[test]
fn mode_order_not_a_permutation() {
    for order in [[0, 0, 0], [0, 1, 1], [2, 2, 0], [99, 1, 2], [u32::MAX, 0, 1], [2, 99, u32::MAX], [3, 4, 5]]
    {
        let tree = example_with(|t| t.mode_order = order.to_vec());
        let seen = check_tree(&tree);
        assert_eq!(seen.len(), 4, "{order:?}: the tree itself is fine");
        let view = tree.view();
        for (level, &dim) in order.iter().enumerate() {
            assert_eq!(view.level_extent(level).is_some(), (dim as usize) < 3);
        }
        if order[0] as usize >= 3 {
            assert_eq!(view.find(&[0, 0, 0]), Err(LookupError::BadModeOrder { level: 0, dim: order[0] }));
        }
    }
}

#[test]
fn values_buffer_too_short() {
    for values in [vec![], vec![0x3f], f32_bytes(&[1.0, 2.0, 3.0]), {
        let mut v = f32_bytes(&[1.0, 2.0, 3.0]);
        v.push(1);
        v
    }] {
        let tree = example_with(|t| t.values = values.clone());
        check_tree(&tree);
        let view = tree.view();
        // The leaf exists; its value does not.
        assert_eq!(view.find(&[1, 1, 2]), Ok(Some(3)));
        assert_eq!(view.get(&[1, 1, 2]), Ok(None));
        assert_eq!(view.get_f64(&[1, 1, 2]), Ok(0.0));
        assert_eq!(view.values().typed::<f32>().unwrap().get(3), None);
        let mut cursor = view.cursor();
        let mut values_seen = vec![];
        while cursor.advance() {
            values_seen.push(cursor.value());
        }
        assert_eq!(values_seen.len(), 4);
        assert_eq!(values_seen[3], None);
    }
    // Sub-byte values: 4 leaves need 2 bytes of i4.
    let tree = example_with(|t| {
        t.element_type = ElementType::I4;
        t.values = vec![0x21];
    });
    check_tree(&tree);
    assert_eq!(tree.view().get(&[0, 2, 3]), Ok(Some(Value::I4(2))));
    assert_eq!(tree.view().get(&[1, 1, 0]), Ok(None));
}

#[test]
fn empty_and_truncated_levels() {
    // Empty pos arrays with stored crd.
    check_tree(&example_with(|t| t.levels[0].0 = vec![]));
    check_tree(&example_with(|t| t.levels[1].0 = vec![]));
    check_tree(&example_with(|t| t.levels[2].0 = vec![]));
    check_tree(&example_with(|t| t.levels[2].0 = vec![0]));
    // Truncated crd (pos promises more than is stored) and truncated pos.
    check_tree(&example_with(|t| t.levels[2].1 = vec![1]));
    check_tree(&example_with(|t| t.levels[1].1 = vec![]));
    check_tree(&example_with(|t| t.levels[2].0 = vec![0, 1]));
    check_tree(&example_with(|t| {
        t.levels[1] = (vec![], vec![]);
        t.levels[2] = (vec![], vec![]);
    }));
    // nnz disagreeing with the arrays is just a number.
    check_tree(&example_with(|t| t.nnz = u64::MAX));
    check_tree(&example_with(|t| t.nnz = 0));
}

#[test]
fn everything_wrong_at_once() {
    let tree = Tree::new(
        ElementType::BF16,
        &[0, u64::MAX, 3],
        &[u32::MAX, 1, 1],
        u64::MAX,
        vec![
            (vec![u64::MAX, 0], vec![9, 9, 9]),
            (vec![5, 2, u64::MAX, 0, 1], vec![]),
            (vec![], vec![u64::MAX, 0, 0, 3, 1]),
        ],
        vec![1, 2, 3],
    );
    check_tree(&tree);
}

#[cfg(feature = "alloc")]
#[test]
fn dense_over_budget_does_not_allocate() {
    use csf_core::DenseError;
    let tree = example_with(|t| t.shape = vec![1 << 20; 3]);
    let view = tree.view();
    let (r, bytes) = allocated_by(|| view.to_dense_f64(1 << 20));
    assert_eq!(r, Err(DenseError::OverBudget { elements: 1 << 60, budget: 1 << 20 }));
    assert_eq!(bytes, 0, "an over-budget to_dense_f64 allocated {bytes} bytes");
    let (r, bytes) = allocated_by(|| view.to_dense::<f32>(1 << 20));
    assert_eq!(r, Err(DenseError::OverBudget { elements: 1 << 60, budget: 1 << 20 }));
    assert_eq!(bytes, 0);
    // A product that overflows u64.
    let tree = example_with(|t| t.shape = vec![1 << 22; 3]);
    let view = tree.view();
    let (r, bytes) = allocated_by(|| view.to_dense_f64(u64::MAX));
    assert_eq!(r, Err(DenseError::Overflow));
    assert_eq!(bytes, 0);
    // The probe works: an in-budget call does allocate.
    let (_, bytes) = allocated_by(|| Tree::spec_example().view().to_dense_f64(24).unwrap());
    assert!(bytes >= 24 * 8);
}

#[test]
fn lookup_and_iteration_do_not_allocate() {
    let tree = Tree::spec_example();
    let view = tree.view();
    let (sum, bytes) = allocated_by(|| {
        let mut sum = 0.0;
        view.for_each(|_, leaf| sum += view.values().get_raw_f64(leaf).unwrap());
        let mut cursor = view.cursor();
        while cursor.advance() {
            sum += cursor.value().unwrap().to_f64();
        }
        sum + view.get_f64(&[1, 1, 2]).unwrap()
    });
    assert_eq!(sum, 24.0);
    assert_eq!(bytes, 0);
}

// ------------------------------------------------------------ unaligned buffers

#[test]
fn unaligned_container_gives_the_same_answers() {
    // Under Miri (`cargo xtask miri`), where each lookup costs thousands of
    // times more, a smaller tensor: 180 indices and 60 draws instead of 2970
    // and 400.
    let (shape, nnz) = if cfg!(miri) { ([3u64, 4, 5, 3], 60) } else { ([9u64, 10, 11, 3], 400) };
    for (seed, distribution) in [(1, Distribution::Uniform), (2, Distribution::PowerLaw { skew: 3.0 })] {
        let coo = synthetic(&shape, nnz, distribution, seed);
        let tree = Tree::from_arrays(&reference_csf(&coo, &[3, 1, 0, 2]));
        let bytes = tree.encode();
        let aligned = tree.view();
        let mut storage = Vec::new();
        let unaligned_bytes = placed(&bytes, &mut storage, 1);
        let unaligned = view_container(unaligned_bytes);
        // The two views really take different paths (on a little-endian
        // machine: on a big-endian one both read byte-wise).
        let native = cfg!(target_endian = "little");
        assert!(aligned.levels().iter().all(|l| l.crd.as_native().is_some() == native));
        assert!(unaligned.levels().iter().all(|l| l.crd.as_native().is_none() || l.crd.is_empty()));
        for index in common::all_indices(&coo.shape) {
            assert_eq!(unaligned.find(&index), aligned.find(&index));
            assert_eq!(unaligned.get(&index), aligned.get(&index));
        }
        assert_eq!(common::iterate_all(&unaligned), common::iterate_all(&aligned));
        common::check_against_oracle(&unaligned, &common::oracle(&coo), &[]);
    }
}

// ------------------------------------------------------------ garbage proptest

/// A `u64` that is small most of the time and sometimes extreme.
fn wild() -> impl Strategy<Value = u64> {
    prop_oneof![
        8 => 0..12u64,
        1 => Just(u64::MAX),
        1 => Just(usize::MAX as u64),
        1 => Just(1u64 << 63),
        1 => any::<u64>(),
    ]
}

/// Lookups of `probes` (value bits where found), sub-tree leaf ranges under
/// each probe's prefixes.
type Answers = (
    Yield,
    Yield,
    Vec<Result<Option<(usize, Option<(core::mem::Discriminant<Value>, u64)>)>, LookupError>>,
    Vec<Result<Option<core::ops::Range<usize>>, LookupError>>,
);

/// What a view of capacity `MAX` answers on any tree: `for_each` and the
/// cursor (index and leaf), the lookups of `probes` and the sub-trees under
/// their prefixes, for comparison between capacities.
fn capped_answers<const MAX: usize>(view: &CsfView<'_, MAX>, probes: &[Vec<u64>]) -> Answers {
    let (by_for_each, by_cursor) = walks(view);
    let found = probes
        .iter()
        .map(|index| view.find(index).map(|leaf| leaf.map(|leaf| (leaf, bits(view.value(leaf, index))))))
        .collect();
    let subtrees = probes
        .iter()
        .flat_map(|index| (0..=index.len()).map(move |k| &index[..k]))
        .map(|prefix| view.subtree(prefix).map(|s| s.map(|s| s.leaf_range())))
        .collect();
    (by_for_each, by_cursor, found, subtrees)
}

/// What `for_each` and the cursor yield (logical index, leaf).
fn walks<const MAX: usize>(view: &CsfView<'_, MAX>) -> (Yield, Yield) {
    let mut by_for_each = Vec::new();
    view.for_each(|index, leaf| by_for_each.push((index.to_vec(), leaf)));
    let mut by_cursor = Vec::new();
    let mut cursor = view.cursor();
    while cursor.advance() {
        by_cursor.push((cursor.index().to_vec(), cursor.leaf()));
    }
    (by_for_each, by_cursor)
}

fn garbage() -> impl Strategy<Value = Tree> {
    (3usize..=5)
        .prop_flat_map(|rank| {
            let level = (prop::collection::vec(wild(), 0..8), prop::collection::vec(wild(), 0..10));
            let order_entry = prop_oneof![6 => 0..rank as u32 + 1, 1 => Just(99u32), 1 => Just(u32::MAX)];
            let extent = prop_oneof![6 => 0..8u64, 1 => any::<u64>()];
            let element_type = prop::sample::select(vec![
                ElementType::F32,
                ElementType::U8,
                ElementType::I4,
                ElementType::F64,
                ElementType::BF16,
                ElementType::NF4,
            ]);
            (
                prop::collection::vec(level, rank),
                prop::collection::vec(order_entry, rank),
                prop::collection::vec(extent, rank),
                element_type,
                prop::collection::vec(any::<u8>(), 0..48),
                wild(),
            )
        })
        .prop_map(|(levels, order, shape, element_type, values, nnz)| {
            Tree::new(element_type, &shape, &order, nnz, levels, values)
        })
}

proptest! {
    // Fewer cases under Miri (`cargo xtask miri`), where each costs thousands of times more.
    #![proptest_config(ProptestConfig { cases: if cfg!(miri) { 8 } else { 2048 }, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn garbage_trees_are_handled_totally(tree in garbage(), seed in any::<u64>()) {
        let mut rng = Rng::new(seed);
        check_total(&tree.view(), &mut rng);
    }

    #[test]
    fn garbage_reads_the_same_unaligned(tree in garbage()) {
        // check_tree compares the aligned arrays with a misaligned container.
        check_tree(&tree);
    }

    #[test]
    fn garbage_lookups_agree_aligned_and_unaligned(tree in garbage(), seed in any::<u64>()) {
        let bytes = tree.encode();
        let mut storage = Vec::new();
        let unaligned_bytes = placed(&bytes, &mut storage, 1);
        let unaligned = view_container(unaligned_bytes);
        let aligned = tree.view();
        let mut rng = Rng::new(seed);
        for _ in 0..64 {
            let index: Vec<u64> = tree.shape.iter().map(|&e| if e == 0 { 0 } else { rng.below(e.min(12)) }).collect();
            prop_assert_eq!(aligned.find(&index), unaligned.find(&index), "{:?}", index);
        }
    }

    #[test]
    fn garbage_subtrees_are_handled_totally(tree in garbage(), prefix in prop::collection::vec(wild(), 0..6)) {
        let view = tree.view();
        let mut whole = Vec::new();
        view.for_each(|i, leaf| whole.push((i.to_vec(), leaf)));
        for k in 0..=prefix.len() {
            check_subtree(&view, &prefix[..k], &whole);
        }
    }

    #[test]
    fn garbage_reads_alike_at_a_capacity_of_its_rank(tree in garbage(), seed in any::<u64>()) {
        // A view of capacity 5 holds exactly the largest garbage rank, so
        // its per-level arrays have no spare slot for a mode_order entry of
        // 5 or more: such an entry's coordinate is dropped, as the default
        // capacity drops one of 64 or more, and what is visible (the first
        // `rank` coordinates) must be the same.
        let bytes = tree.encode();
        let container = hurray_format::Container::decode(&bytes).expect("container decodes");
        let full = CsfView::from_container(&container).expect("views at capacity 64");
        let small = CsfView::<'_, 5>::from_container_capped(&container).expect("views at capacity 5");
        let mut rng = Rng::new(seed);
        let probes: Vec<Vec<u64>> = (0..24)
            .map(|_| full.shape().iter().map(|&e| if e == 0 { 0 } else { rng.below(e.min(8)) }).collect())
            .collect();
        prop_assert_eq!(capped_answers(&small, &probes), capped_answers(&full, &probes));
        // At capacity 3 a rank-3 tree is read alike too; a larger rank is
        // a typed error.
        let smallest = CsfView::<'_, 3>::from_container_capped(&container);
        match full.rank() {
            3 => prop_assert_eq!(capped_answers(&smallest.expect("rank 3"), &probes), capped_answers(&full, &probes)),
            rank => prop_assert_eq!(smallest.err(), Some(csf_core::ViewError::RankTooLarge { rank, capacity: 3 })),
        }
    }

    #[test]
    fn garbage_cursor_and_for_each_agree(tree in garbage()) {
        let (by_for_each, by_cursor) = walks(&tree.view());
        prop_assert_eq!(by_cursor, by_for_each);
    }
}
