//! The cursor and the flat walk against each other, on valid and damaged
//! trees, of the whole tensor and of its sub-trees.

use proptest::prelude::*;

use crate::lookup::testing::Arrays;
use crate::view::CsfView;

type Seen = Vec<(Vec<u64>, usize)>;

fn for_each(view: &CsfView<'_>, logical: bool) -> Seen {
    let mut seen = Vec::new();
    let push = |index: &[u64], leaf| seen.push((index.to_vec(), leaf));
    if logical {
        view.for_each(push);
    } else {
        view.for_each_stored(push);
    }
    seen
}

fn cursor(view: &CsfView<'_>, logical: bool) -> Seen {
    let mut seen = Vec::new();
    let mut cursor = view.cursor();
    while cursor.advance() {
        seen.push(((if logical { cursor.index() } else { cursor.coords() }).to_vec(), cursor.leaf()));
    }
    seen
}

/// `for_each` on native arrays (which may take the flat path) against
/// `for_each` on a misaligned copy (never flat) and the cursor; and the
/// same of the sub-trees under the prefixes of what the walk yields.
fn check(arrays: &Arrays) -> Seen {
    let view = arrays.view();
    let bytes = arrays.misaligned();
    let unaligned = arrays.view_of(&bytes);
    for logical in [false, true] {
        let seen = for_each(&view, logical);
        assert_eq!(seen, for_each(&unaligned, logical), "flat and nested paths differ");
        assert_eq!(seen, cursor(&view, logical), "for_each and cursor differ");
    }
    // A sample of the entries (every prefix of every entry made the
    // damaged-tree proptest twenty times slower).
    for (coords, _) in for_each(&view, false).iter().step_by(if cfg!(miri) { 23 } else { 17 }) {
        for k in 0..coords.len() {
            check_subtree(&view, &unaligned, &coords[..k]);
        }
    }
    for_each(&view, true)
}

/// [`check`] for the sub-tree under `prefix`, when it is present.
fn check_subtree(view: &CsfView<'_>, unaligned: &CsfView<'_>, prefix: &[u64]) {
    let (Ok(Some(native)), Ok(Some(other))) = (view.subtree(prefix), unaligned.subtree(prefix)) else {
        assert_eq!(view.subtree(prefix).map(|s| s.is_some()), unaligned.subtree(prefix).map(|s| s.is_some()));
        return;
    };
    for logical in [false, true] {
        let mut seen = Vec::new();
        let mut other_seen = Vec::new();
        let push = |seen: &mut Seen, index: &[u64], leaf| seen.push((index.to_vec(), leaf));
        if logical {
            native.for_each(|i, l| push(&mut seen, i, l));
            other.for_each(|i, l| push(&mut other_seen, i, l));
        } else {
            native.for_each_stored(|i, l| push(&mut seen, i, l));
            other.for_each_stored(|i, l| push(&mut other_seen, i, l));
        }
        assert_eq!(seen, other_seen, "flat and nested paths differ under {prefix:?}");
        let mut by_cursor = Vec::new();
        let mut cursor = native.cursor();
        while cursor.advance() {
            by_cursor
                .push(((if logical { cursor.index() } else { cursor.coords() }).to_vec(), cursor.leaf()));
        }
        assert_eq!(seen, by_cursor, "for_each and cursor differ under {prefix:?}");
        assert!(seen.iter().all(|(_, leaf)| native.leaf_range().contains(leaf)));
    }
}

#[test]
fn flat_path_on_valid_trees() {
    assert_eq!(check(&Arrays::spec_example()).len(), 4);
    for (shape, order, skew) in [
        (&[6u64, 30, 20][..], &[0u32, 1, 2][..], None),
        (&[6, 30, 20], &[2, 0, 1], Some(3.0)),
        (&[4, 5, 6, 7], &[3, 1, 0, 2], None),
        (&[4, 5, 6, 7], &[0, 1, 2, 3], Some(2.0)),
    ] {
        // Smaller trees under Miri (`cargo xtask miri`), where each walk costs
        // thousands of times more.
        let arrays = Arrays::synthetic(shape, order, if cfg!(miri) { 48 } else { 800 }, skew, 3);
        let seen = check(&arrays);
        assert_eq!(seen.len(), arrays.levels().last().unwrap().1.len());
        assert!(seen.iter().enumerate().all(|(i, (_, leaf))| i == *leaf));
    }
}

#[test]
fn flat_path_declines_what_the_clamps_would_change() {
    let example = |leaf_pos: Vec<u64>| {
        let spec = Arrays::spec_example();
        let mut levels = spec.levels().to_vec();
        levels[2].0 = leaf_pos;
        Arrays::new(&spec.shape, &spec.order, levels)
    };
    // An empty leaf fiber, a decreasing pos, one past the end of crd, a
    // start past 0, and a pos too short for the window.
    for pos in [vec![0, 1, 1, 4], vec![0, 2, 1, 4], vec![0, 1, 2, 9], vec![1, 2, 3, 4], vec![0, 1, 2]] {
        check(&example(pos));
    }
    // The second level-0 node's window, pos_2[2..=3] = [2, 6], is
    // increasing but starts below the leaf high-water mark (5) that the
    // first one's malformed window [0, 5, 2] left: the nested loops clamp
    // it to leaf 5 alone, where a flat loop would replay leaves 2..5.
    let arrays = Arrays::new(
        &[2, 3, 9],
        &[0, 1, 2],
        vec![
            (vec![0, 2], vec![0, 1]),
            (vec![0, 2, 3], vec![0, 1, 2]),
            (vec![0, 5, 2, 6], vec![0, 1, 2, 3, 4, 5]),
        ],
    );
    let seen = check(&arrays);
    assert_eq!(seen.iter().map(|(_, leaf)| *leaf).collect::<Vec<_>>(), [0, 1, 2, 3, 4, 5]);
    assert_eq!(seen.last().unwrap().0, [1, 2, 5]);
}

proptest! {
    // Fewer cases under Miri (`cargo xtask miri`), where each costs about a thousand times more.
    #![proptest_config(ProptestConfig { cases: if cfg!(miri) { 8 } else { 512 }, failure_persistence: None, ..ProptestConfig::default() })]

    /// Valid trees with a few `pos` entries of the last two levels
    /// overwritten: the flat path must take exactly the windows that the
    /// nested loops would walk unclamped.
    #[test]
    fn flat_path_on_damaged_trees(
        seed in any::<u64>(),
        rank4 in any::<bool>(),
        damage in prop::collection::vec((any::<bool>(), any::<prop::sample::Index>(), 0u64..40), 1..4),
    ) {
        let shape: &[u64] = if rank4 { &[3, 4, 5, 6] } else { &[4, 6, 9] };
        let order: Vec<u32> = (0..shape.len() as u32).rev().collect();
        // Smaller trees under Miri (`cargo xtask miri`), as above.
        let mut levels = Arrays::synthetic(shape, &order, if cfg!(miri) { 48 } else { 120 }, None, seed).into_levels();
        let rank = shape.len();
        for (leaf, at, value) in damage {
            let pos = &mut levels[if leaf { rank - 1 } else { rank - 2 }].0;
            let i = at.index(pos.len());
            pos[i] = value;
        }
        // A new `Arrays` of the damaged levels: its little-endian copy,
        // which a big-endian machine views, must be damaged too.
        check(&Arrays::new(shape, &order, levels));
    }
}
