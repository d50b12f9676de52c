//! Property tests: random valid tensors pass strict validation, and one
//! corrupted `u64` in a `pos`/`crd` buffer is either still valid or rejected,
//! never a panic; permissive validation and every accessor stay total on the
//! corrupted file.

use std::collections::BTreeMap;

use csf_testdata::tree::Tree;
use csf_testdata::{reference_csf, TestTensor};
use csf_validate::{report, validate, validate_permissive, Mode};
use hurray_format::Container;
use proptest::prelude::*;

/// A random COO tensor of rank 3..=5 (extents 1..=6, up to 40 entries,
/// duplicates allowed) and a random mode order.
fn tensor() -> impl Strategy<Value = (TestTensor, Vec<u32>)> {
    (3usize..=5)
        .prop_flat_map(|rank| (prop::collection::vec(1u64..=6, rank), Just(rank)))
        .prop_flat_map(|(shape, rank)| {
            let entry = shape.iter().map(|&e| 0..e).collect::<Vec<_>>();
            let order: Vec<u32> = (0..rank as u32).collect();
            (Just(shape), prop::collection::vec((entry, 1u32..100), 0..40), Just(order).prop_shuffle())
        })
        .prop_map(|(shape, entries, order)| {
            let mut coo = TestTensor { shape, indices: vec![], values: vec![] };
            for (index, value) in entries {
                coo.indices.extend(index);
                coo.values.push(f64::from(value));
            }
            (coo, order)
        })
}

/// How to corrupt one word.
#[derive(Clone, Debug)]
enum Corruption {
    Set(u64),
    Add(u64),
    Sub(u64),
    FlipBit(u32),
}

fn corruption() -> impl Strategy<Value = Corruption> {
    prop_oneof![
        prop_oneof![Just(0u64), Just(1), Just(2), Just(7), Just(u64::MAX), Just(u64::MAX - 1), any::<u64>()]
            .prop_map(Corruption::Set),
        (1u64..4).prop_map(Corruption::Add),
        (1u64..4).prop_map(Corruption::Sub),
        (0u32..64).prop_map(Corruption::FlipBit),
    ]
}

fn apply(word: u64, c: &Corruption) -> u64 {
    match *c {
        Corruption::Set(v) => v,
        Corruption::Add(d) => word.wrapping_add(d),
        Corruption::Sub(d) => word.wrapping_sub(d),
        Corruption::FlipBit(b) => word ^ (1 << b),
    }
}

/// Every accessor on a view that permissive validation accepted; when
/// `valid`, lookups must find exactly what iteration yields.
fn exercise(view: &csf_core::CsfView<'_>, valid: bool) {
    let rank = view.rank();
    let stored: u64 = (0..rank).map(|l| view.node_count(l) as u64).sum();
    let mut cursor = view.cursor();
    let mut seen = BTreeMap::new();
    let mut order = Vec::new();
    while cursor.advance() {
        seen.insert(cursor.index().to_vec(), cursor.leaf());
        order.push((cursor.index().to_vec(), cursor.leaf()));
    }
    assert!(cursor.steps() <= 2 * stored + 1, "cursor took {} steps for {stored} nodes", cursor.steps());
    let mut by_for_each = Vec::new();
    view.for_each(|index, leaf| by_for_each.push((index.to_vec(), leaf)));
    assert_eq!(by_for_each, order, "for_each disagrees with the cursor");
    let mut n = 0;
    view.for_each_stored(|_, _| n += 1);
    assert_eq!(n, order.len());
    for (index, leaf) in &order {
        let found = view.find(index);
        if valid {
            assert_eq!(found, Ok(Some(*leaf)));
        }
        let _ = view.get_f64(index);
    }
    for level in 0..rank {
        let parents = if level == 0 { 1 } else { view.node_count(level - 1) };
        for parent in 0..=parents {
            let f = view.fiber(level, parent);
            assert!(f.start + f.len() <= view.node_count(level));
        }
    }
    let coo = view.to_coo(csf_core::CooOrder::Logical);
    assert_eq!(coo.len(), order.len());
    let _ = view.to_coo(csf_core::CooOrder::Storage);
    let _ = view.to_dense_f64(4096);
    if valid {
        assert_eq!(order.len() as u64, view.nnz());
        assert_eq!(seen.len(), order.len(), "no index twice");
    }
}

proptest! {
    // Fewer cases under Miri (`cargo xtask miri`), where each costs about a thousand times more.
    #![proptest_config(ProptestConfig { cases: if cfg!(miri) { 8 } else { 512 }, ..ProptestConfig::default() })]

    #[test]
    fn random_valid_tensors_pass_strict((coo, order) in tensor()) {
        let tree = Tree::from_arrays(&reference_csf(&coo, &order));
        let file = tree.encode();
        let container = Container::decode(&file).unwrap();
        let view = validate(&container).map_err(|v| TestCaseError::fail(v.to_string()))?;
        let r = report(&container, Mode::Strict, 100);
        prop_assert!(r.errors.is_empty() && r.warnings.is_empty());
        exercise(&view, true);
    }

    #[test]
    fn one_corrupted_word_is_accepted_or_rejected_never_a_panic(
        (coo, order) in tensor(),
        pick in any::<prop::sample::Index>(),
        c in corruption(),
    ) {
        let mut tree = Tree::from_arrays(&reference_csf(&coo, &order));
        // Every word of every pos/crd buffer, as (level, is_crd, element).
        let words: Vec<(usize, bool, usize)> = tree
            .levels
            .iter()
            .enumerate()
            .flat_map(|(l, (p, cr))| {
                (0..p.len()).map(move |i| (l, false, i)).chain((0..cr.len()).map(move |i| (l, true, i)))
            })
            .collect();
        let (level, is_crd, i) = words[pick.index(words.len())];
        let slot = if is_crd { &mut tree.levels[level].1[i] } else { &mut tree.levels[level].0[i] };
        *slot = apply(*slot, &c);
        let file = tree.encode();
        let container = Container::decode(&file).unwrap();

        let strict = validate(&container);
        let r = report(&container, Mode::Strict, 1000);
        prop_assert_eq!(strict.is_ok(), r.errors.is_empty());
        if let Err(v) = &strict {
            prop_assert_eq!(Some(v), r.errors.first());
            // Only the contents changed, never a size: the breakage is an invariant.
            prop_assert!(!v.rule.is_structural(), "{}", v);
        }
        // Permissive mode accepts it (sizes are intact), and every accessor is total.
        let view = validate_permissive(&container).map_err(|v| TestCaseError::fail(v.to_string()))?;
        exercise(&view, strict.is_ok());
    }
}
