//! The counting methods against a set of tuples.

use super::*;
use std::collections::BTreeSet;

fn rand(state: &mut u64) -> u64 {
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    *state
}

fn brute(indices: &[u64], rank: usize, set: Dims) -> u64 {
    let dims: Vec<usize> = dims_of(set).collect();
    let tuples: BTreeSet<Vec<u64>> =
        indices.chunks_exact(rank).map(|row| dims.iter().map(|&d| row[d]).collect()).collect();
    tuples.len() as u64
}

/// Every method agrees with a set of tuples: bitmaps, passes by every
/// dimension of the set (`u64` and `u128` keys, one and many buckets,
/// buckets split by hash), and the comparison fallback.
#[test]
fn every_method_counts_exactly() {
    let shapes: [&[u64]; 5] = [
        &[5, 300, 7, 1],
        &[1 << 40, 3, 1 << 30, 2],
        &[2, u64::MAX, u64::MAX - 1, 9],
        &[60_000, 4, 1000, 70],
        &[1, 1, 1, 1],
    ];
    let mut state = 0x5eed_u64;
    for (case, shape) in shapes.iter().enumerate() {
        let rank = shape.len();
        // Skewed draws: many repeats, and for the fourth shape a bucket
        // of the pass by dimension 1 bigger than `TABLE_KEYS`.
        let n = if case == 3 { 200_000 } else { 5000 };
        let indices: Vec<u64> = (0..n * rank)
            .map(|i| {
                let extent = shape[i % rank];
                let r = rand(&mut state) % extent.clamp(1, 1 << 20);
                if rand(&mut state) % 4 == 0 {
                    r
                } else {
                    r % 3
                }
            })
            .collect();
        let columns: Vec<Vec<u64>> =
            (0..rank).map(|d| indices.iter().skip(d).step_by(rank).copied().collect()).collect();
        let columns: Vec<&[u64]> = columns.iter().map(Vec::as_slice).collect();
        for (layout, indices_of) in
            [(false, Indices::RowMajor(&indices)), (true, Indices::Columnar(&columns))]
        {
            let source = Source { shape, indices: indices_of, len: n, packed: None };
            for set in 1..(1u64 << rank) {
                let want = brute(&indices, rank, set);
                for parallel in [false, true] {
                    let what = format!("case {case} set {set:b} columnar {layout} parallel {parallel}");
                    for a in dims_of(set) {
                        let mut counter = Counter::new(&source, parallel);
                        counter.count_pass(a, &[set]);
                        assert_eq!(counter.get(set), Some(want), "pass by {a}: {what}");
                    }
                    let cells = Counter::new(&source, parallel).cells(set);
                    if cells.is_some_and(|c| c <= 1 << 24) {
                        assert_eq!(
                            Counter::new(&source, parallel).bitmaps(&[(set, vec![])]),
                            [(set, want)],
                            "bitmap: {what}"
                        );
                        // Projected from the bitmap of every set that holds it.
                        let dense =
                            |s: Dims| Counter::new(&source, parallel).cells(s).is_some_and(|c| c <= 1 << 24);
                        for sup in (set..1 << rank).filter(|&s| s & set == set && dense(s)) {
                            let counted = Counter::new(&source, parallel).bitmaps(&[(sup, vec![(set, sup)])]);
                            assert_eq!(counted[1], (set, want), "projected from {sup:b}: {what}");
                        }
                    }
                    assert_eq!(by_comparison(&source, set), want, "comparison: {what}");
                }
            }
        }
    }
}

/// Sets a pass counts by fibers (the bucket's keys grouped by some of the
/// set's fields, then a bitmap of the others per group) count exactly,
/// next to hashed and bitmap sets of the same pass: with `u64` keys of
/// every dimension and with `u128` keys, groups that share a sort and
/// groups of their own, skewed draws (big groups, big buckets) and uniform
/// ones, in one thread and many.
#[test]
fn fibers_count_exactly() {
    /// A shape, the pass's dimension, its sets and the method it takes for each.
    type Case<'a> = (&'a [u64], usize, &'a [Dims], &'a [&'a str]);
    let cases: [Case<'_>; 5] = [
        (
            &[256, 1000, 100_000, 1 << 20],
            0,
            &[0b0111, 0b1011, 0b1101, 0b1111],
            &["fibers", "fibers", "hash", "hash"],
        ),
        (&[300, 1 << 17, 4096, 1 << 18], 1, &[0b1010, 0b0111, 0b0011], &["fibers", "fibers", "bitmap"]),
        (&[256, 1000, 1 << 20, 1 << 40, 1 << 30], 0, &[0b00111, 0b11001], &["fibers", "hash"]),
        // Alone in its group, a set whose cells allow parts takes them.
        (&[256, 1000, 100_000, 1 << 40, 1 << 30], 0, &[0b00111, 0b11001], &["parts", "hash"]),
        // One group, its extras of few cells (stamps) and of more (a bitmap).
        (&[256, 1000, 40_000, 1 << 20], 0, &[0b0111, 0b1011], &["fibers", "fibers"]),
    ];
    let mut state = 0xf1be_u64;
    for (case, &(shape, a, sets, methods)) in cases.iter().enumerate() {
        let rank = shape.len();
        let n = 200_000;
        for (i, want) in methods.iter().enumerate() {
            assert_eq!(pass::method_name(shape, a, sets, i, n), *want, "case {case} set {:b}", sets[i]);
        }
        for skewed in [false, true] {
            let indices: Vec<u64> = (0..n * rank)
                .map(|i| {
                    let r = rand(&mut state) % shape[i % rank].min(1 << 20);
                    if skewed && rand(&mut state) % 2 == 0 {
                        r % 5
                    } else {
                        r
                    }
                })
                .collect();
            let source = Source { shape, indices: Indices::RowMajor(&indices), len: n, packed: None };
            for parallel in [false, true] {
                let mut counter = Counter::new(&source, parallel);
                counter.count_pass(a, sets);
                for &set in sets {
                    let what = format!("case {case} set {set:b} skewed {skewed} parallel {parallel}");
                    assert_eq!(counter.get(set), Some(brute(&indices, rank, set)), "{what}");
                }
            }
        }
    }
}

/// A set alone in its fibers' group whose bucket cells are one bit more than
/// a part's takes one bitmap of them (up to 4 bytes an entry) rather than a
/// split into two parts; fewer entries, and it takes parts. Both count exactly.
#[test]
fn one_bitmap_before_two_parts() {
    let shape = [60_114u64, 83_826, 23_034, 1132];
    let mut state = 0xb17_u64;
    for (n, want) in [(100_000, "bitmap"), (50_000, "parts")] {
        assert_eq!(pass::method_name(&shape, 3, &[0b1010], 0, n), want, "{n} entries");
        let indices: Vec<u64> = (0..n * 4).map(|i| rand(&mut state) % shape[i % 4]).collect();
        let source = Source { shape: &shape, indices: Indices::RowMajor(&indices), len: n, packed: None };
        let mut counter = Counter::new(&source, false);
        counter.count_pass(3, &[0b1010]);
        assert_eq!(counter.get(0b1010), Some(brute(&indices, 4, 0b1010)), "{n} entries");
    }
}

/// A set of many dimensions is never split into a fibers' group and extra
/// (the splits to try double with each dimension): at rank 40 a pass over
/// sets of 12 to 39 dimensions takes parts or hash tables, at once, and
/// counts exactly.
#[test]
fn wide_sets_skip_fibers() {
    let rank = 40;
    let shape = vec![2u64; rank];
    let n = 3000;
    let mut state = 0x3de_u64;
    let indices: Vec<u64> = (0..n * rank).map(|_| rand(&mut state) % 2).collect();
    let sets: Vec<Dims> = vec![(1 << 12) - 1, (1 << 39) - 1, ((1 << 40) - 1) & !2];
    for i in 0..sets.len() {
        assert_ne!(pass::method_name(&shape, 0, &sets, i, n), "fibers", "set {:b}", sets[i]);
    }
    let source = Source { shape: &shape, indices: Indices::RowMajor(&indices), len: n, packed: None };
    let mut counter = Counter::new(&source, false);
    counter.count_pass(0, &sets);
    for &set in &sets {
        assert_eq!(counter.get(set), Some(brute(&indices, rank, set)), "set {set:b}");
    }
}

/// Inputs of at most `TINY` entries are counted by `count_tiny`'s masks,
/// alone and through both of the counter's entry points: every set of
/// shapes with repeats, with sets wider than 128 bits, at the sizes around
/// the limit, row-major and columnar.
#[test]
fn tiny_inputs_count_exactly() {
    let shapes: [&[u64]; 4] =
        [&[2, 3, 2], &[5, 300, 7, 1], &[1 << 40, 3, u64::MAX, u64::MAX - 1, 9], &[1; 6]];
    let mut state = 0x7e57_u64;
    for shape in shapes {
        let rank = shape.len();
        for n in [0, 1, 2, 7, TINY - 1, TINY] {
            let indices: Vec<u64> = (0..n * rank)
                .map(|i| {
                    rand(&mut state)
                        % shape[i % rank].min(if rand(&mut state) % 2 == 0 { 3 } else { 1 << 50 })
                })
                .collect();
            let columns: Vec<Vec<u64>> =
                (0..rank).map(|d| indices.iter().skip(d).step_by(rank).copied().collect()).collect();
            let columns: Vec<&[u64]> = columns.iter().map(Vec::as_slice).collect();
            for indices_of in [Indices::RowMajor(&indices), Indices::Columnar(&columns)] {
                let source = Source { shape, indices: indices_of, len: n, packed: None };
                let mut dense = Counter::new(&source, false);
                let sets: Vec<Dims> = (1..1u64 << rank).collect();
                let dense_sets: Vec<Dims> = sets.iter().copied().filter(|&s| dense.is_dense(s)).collect();
                dense.count_dense(&dense_sets);
                // One counter asked set by set, so that later sets reuse the
                // masks earlier ones made.
                let mut reused = Counter::new(&source, false);
                for &set in &sets {
                    let want = brute(&indices, rank, set);
                    let what = format!("{shape:?}, {n} entries, set {set:b}");
                    let mut tiny = Counter::new(&source, false);
                    assert!(tiny.count_tiny(&[set]), "{what}");
                    assert_eq!(tiny.get(set), Some(want), "{what}");
                    assert!(reused.count_tiny(&[set]), "{what}");
                    assert_eq!(reused.get(set), Some(want), "reused masks: {what}");
                    if dense_sets.contains(&set) {
                        assert_eq!(dense.get(set), Some(want), "dense: {what}");
                    }
                    let mut pass = Counter::new(&source, true);
                    pass.count_pass(set.trailing_zeros() as usize, &[set]);
                    assert_eq!(pass.get(set), Some(want), "pass: {what}");
                }
            }
        }
    }
    // One entry more, and `count_tiny` counts nothing: the other paths do.
    assert!(!Counter::new(
        &Source {
            shape: &[2, 2, 2],
            indices: Indices::RowMajor(&[0; 3 * (TINY + 1)]),
            len: TINY + 1,
            packed: None
        },
        false
    )
    .count_tiny(&[1]));
}

#[test]
fn a_pass_counts_many_sets_at_once() {
    let shape = [1u64 << 50, 1 << 50, 1 << 50, 3];
    let mut state = 7u64;
    let indices: Vec<u64> =
        (0..4 * 3000).map(|i| rand(&mut state) % if i % 4 == 3 { 3 } else { 40 }).collect();
    let source = Source { shape: &shape, indices: Indices::RowMajor(&indices), len: 3000, packed: None };
    let sets: Vec<Dims> = (1..16).filter(|s| s & 8 != 0).collect();
    let mut counter = Counter::new(&source, true);
    counter.count_pass(3, &sets);
    for set in sets {
        assert_eq!(counter.get(set), Some(brute(&indices, 4, set)), "set {set:b}");
    }
    // `u128` keys (the union packs 123 bits), one set counted by bucket
    // bitmaps ({1, 2}: 21 bits within a bucket), the other by hash tables.
    let shape = [1u64 << 50, 1 << 20, 7, 1 << 50];
    let indices: Vec<u64> =
        (0..4 * 3000).map(|i| rand(&mut state) % [1 << 50, 1 << 20, 7, 40][i % 4]).collect();
    let source = Source { shape: &shape, indices: Indices::RowMajor(&indices), len: 3000, packed: None };
    for parallel in [false, true] {
        let mut counter = Counter::new(&source, parallel);
        counter.count_pass(2, &[0b0110, 0b1101]);
        for set in [0b0110, 0b1101] {
            assert_eq!(counter.get(set), Some(brute(&indices, 4, set)), "set {set:b}");
        }
    }
}

#[test]
fn empty_input_has_no_projections() {
    // An extent of 0 makes a set of huge extents "dense" (no cells at all):
    // its bitmap must not overflow computing strides (fuzzing found it).
    for shape in [[0, u64::MAX, u64::MAX], [u64::MAX, u64::MAX, 0]] {
        let source = Source { shape: &shape, indices: Indices::RowMajor(&[]), len: 0, packed: None };
        let mut counter = Counter::new(&source, false);
        let dense: Vec<Dims> = (1..8).filter(|&s| counter.is_dense(s)).collect();
        counter.count_dense(&dense);
        let sparse: Vec<Dims> = (1..8).filter(|&s| counter.get(s).is_none()).collect();
        for a in 0..3 {
            counter.count_pass(a, &sparse.iter().copied().filter(|s| s >> a & 1 == 1).collect::<Vec<_>>());
        }
        assert!((1..8).all(|s| counter.get(s) == Some(0)), "shape {shape:?}");
    }
    let source = Source { shape: &[3, 0, 5], indices: Indices::RowMajor(&[]), len: 0, packed: None };
    let mut counter = Counter::new(&source, true);
    counter.count_dense(&[1, 4, 5]);
    counter.count_pass(1, &[2, 3, 6, 7]);
    for set in 1..8 {
        assert_eq!(counter.get(set), Some(0), "set {set:b}");
    }
    assert_eq!(counter.get(0), Some(0));
}

/// Sorted input of ranks 3 to 6 (ranks 4 and 5 take the scan without a
/// branch per dimension, the others compare until they differ), in rows
/// and columns: each prefix set's count, each entry's first difference, and
/// a descent in any dimension, anywhere, found.
#[test]
fn sorted_input_gives_the_identity_prefixes() {
    let mut state = 11u64;
    for rank in 3..=6 {
        let shape: Vec<u64> = (0..rank as u64).map(|d| 2 + d % 3).collect();
        let mut rows: Vec<Vec<u64>> =
            (0..300).map(|_| shape.iter().map(|&e| rand(&mut state) % e).collect()).collect();
        rows.sort_unstable(); // with repeats
        let first_diffs: Vec<u8> = std::iter::once(0)
            .chain(
                rows.windows(2)
                    .map(|w| w[0].iter().zip(&w[1]).position(|(p, n)| p != n).unwrap_or(rank) as u8),
            )
            .collect();
        let check = |rows: &[Vec<u64>], sorted: bool, what: &str| {
            let indices: Vec<u64> = rows.concat();
            let columns: Vec<Vec<u64>> = (0..rank).map(|d| rows.iter().map(|r| r[d]).collect()).collect();
            let columns: Vec<&[u64]> = columns.iter().map(Vec::as_slice).collect();
            for indices_of in [Indices::RowMajor(&indices), Indices::Columnar(&columns)] {
                let source = Source { shape: &shape, indices: indices_of, len: rows.len(), packed: None };
                let mut counter = Counter::new(&source, false);
                let what = format!("rank {rank}, {what}, {}", matches!(indices_of, Indices::RowMajor(_)));
                assert_eq!(counter.count_sorted_prefixes(), sorted, "{what}");
                for k in 1..rank {
                    let set: Dims = (1 << k) - 1;
                    let want = sorted.then(|| brute(&indices, rank, set));
                    assert_eq!(counter.get(set), want, "{what}: set {set:b}");
                }
                assert_eq!(counter.get(0b10), None, "{what}");
                let kept = counter.first_diff.as_deref();
                assert_eq!(kept, sorted.then_some(&first_diffs[..]), "{what}");
            }
        };
        check(&rows, true, "sorted");
        // A descent in each dimension (the dimensions before it equal), at
        // the first pair, in the middle and at the last pair.
        for d in 0..rank {
            for at in [1, 150, 299] {
                let mut unsorted = rows.clone();
                unsorted[at] = unsorted[at - 1].clone();
                unsorted[at - 1][d] = 1;
                unsorted[at][d] = 0;
                check(&unsorted, false, &format!("descent in {d} at {at}"));
            }
        }
    }
}

/// Passes of one counter by one dimension after another, each scattering
/// into the key array of the pass before (all dimensions pack into 64
/// bits), and a second pass by the same dimension counting on the keys in
/// its buckets as they are.
#[test]
fn passes_share_one_key_array_and_keep_their_buckets() {
    let shape = [3u64, 1 << 20, 50, 1 << 12];
    let mut state = 13u64;
    let n = 150_000;
    let indices: Vec<u64> = (0..n * 4)
        .map(|i| {
            let r = rand(&mut state) % shape[i % 4];
            if rand(&mut state) % 3 == 0 {
                r
            } else {
                r % 5
            }
        })
        .collect();
    let source = Source { shape: &shape, indices: Indices::RowMajor(&indices), len: n, packed: None };
    for parallel in [false, true] {
        let mut counter = Counter::new(&source, parallel);
        for a in [0, 1, 2, 3, 0, 2] {
            // Every set with `a`, counted again if counted before.
            let sets: Vec<Dims> = (1..16).filter(|&s| s >> a & 1 == 1).collect();
            sets.iter().for_each(|&s| counter.known.forget(s));
            // Half the sets, then the rest by the same dimension: the keys
            // are still in its buckets, and not scattered again.
            let (first, then) = sets.split_at(sets.len().div_ceil(2));
            counter.count_pass(a, first);
            assert_eq!(counter.scattered_by(), Some(a));
            counter.count_pass(a, then);
            for &set in &sets {
                assert_eq!(counter.get(set), Some(brute(&indices, 4, set)), "pass by {a}: set {set:b}");
            }
        }
        // A scan lets the key arrays go, and with them the buckets.
        counter.count_dense(&[0b0101]);
        assert_eq!(counter.scattered_by(), None);
    }
}

/// A set whose dimensions lie apart in the key (other sets' dimensions
/// between them) and whose bucket cells are few: more fields than a bucket
/// bitmap's cell takes, so it is hashed rather than counted on some fields.
#[test]
fn a_set_of_many_fields_apart_counts_exactly() {
    let shape = [2u64; 24];
    let mut state = 17u64;
    let n = 5000;
    let indices: Vec<u64> = (0..n * 24).map(|_| rand(&mut state) % 2).collect();
    let source = Source { shape: &shape, indices: Indices::RowMajor(&indices), len: n, packed: None };
    let apart: Dims = (0..24).step_by(2).fold(0, |s, d| s | 1 << d);
    for parallel in [false, true] {
        let mut counter = Counter::new(&source, parallel);
        counter.count_pass(0, &[apart, (1 << 24) - 1]);
        assert_eq!(counter.get(apart), Some(brute(&indices, 24, apart)), "parallel {parallel}");
    }
}

/// Projections chained from projected bitmaps, and small bitmaps riding in
/// another set's scan, count as a scan per set does.
#[test]
fn chained_projections_count_exactly() {
    let shape = [12u64, 12, 5, 12, 70];
    let n = 4 * MIN_CHUNK;
    let mut state = 3u64;
    let indices: Vec<u64> =
        (0..n * 5).map(|i| rand(&mut state) % (rand(&mut state) % shape[i % 5] + 1)).collect();
    let source = Source { shape: &shape, indices: Indices::RowMajor(&indices), len: n, packed: None };
    let prefixes = [0b1111, 0b111, 0b11, 0b1];
    let scanned = Counter::new(&source, false).derivations(&prefixes);
    let chain = vec![(0b111, 0b1111), (0b11, 0b111), (0b1, 0b11)];
    assert_eq!(scanned, [(0b1111, chain)], "each prefix from the next longer one");
    for parallel in [false, true] {
        // One set alone, and with small ones riding in its scan.
        let mut counter = Counter::new(&source, parallel);
        counter.count_dense(&[0b11111, 0b1000, 0b10000]);
        for set in [0b11111, 0b1000, 0b10000] {
            assert_eq!(counter.get(set), Some(brute(&indices, 5, set)), "set {set:b} parallel {parallel}");
        }
        let mut counter = Counter::new(&source, parallel);
        let every: Vec<Dims> = (1..32).collect();
        counter.count_dense(&every);
        for set in every {
            assert_eq!(counter.get(set), Some(brute(&indices, 5, set)), "set {set:b} parallel {parallel}");
        }
    }
}

/// A random tensor for the counting property: its rank (3 to 24), shape,
/// row-major entries, and the sets to count. Extents mix 1-bit fields (many
/// fields apart in a key), small and huge ones, or are all tiny; draws
/// repeat often.
fn random_counting_case(seed: u64) -> (usize, Vec<u64>, Vec<u64>, Vec<Dims>) {
    let mut state = seed | 1;
    let rank = 3 + (rand(&mut state) % 22) as usize;
    const EXTENTS: [u64; 10] = [1, 2, 2, 3, 4, 12, 1000, 1 << 20, 1 << 40, u64::MAX];
    // Half the shapes have only tiny extents: every set is a few bits wide.
    let kinds = if rand(&mut state) % 2 == 0 { 4 } else { 10 };
    let shape: Vec<u64> = (0..rank).map(|_| EXTENTS[(rand(&mut state) % kinds) as usize]).collect();
    let n = (rand(&mut state) % 2000) as usize;
    let indices: Vec<u64> = (0..n * rank)
        .map(|i| {
            let r = rand(&mut state) % shape[i % rank].clamp(1, 1 << 20);
            if rand(&mut state) % 3 == 0 {
                r
            } else {
                r % 4 % shape[i % rank]
            }
        })
        .collect();
    let mut sets: Vec<Dims> = (0..5).map(|_| rand(&mut state) % ((1 << rank) - 1) + 1).collect();
    // And one of dimensions apart (every second or third from a random
    // first), which the other sets' dimensions interleave in a pass's key.
    let (from, step) = ((rand(&mut state) % 3) as usize, 2 + (rand(&mut state) % 2) as usize);
    sets.push((from..rank).step_by(step).fold(0, |s, d| s | 1 << d));
    (rank, shape, indices, sets)
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig {
        cases: if cfg!(miri) { 4 } else { 128 },
        failure_persistence: None,
        ..proptest::prelude::ProptestConfig::default()
    })]

    /// Every way a counter counts agrees with a set of tuples on random
    /// tensors of ranks 3 to 24: the dense sets by bitmap scans (with
    /// projections, chained ones too, and small bitmaps riding in scans),
    /// then every set by a pass of one counter by each of its dimensions in
    /// turn, with the other sets of that dimension (later passes re-scatter
    /// earlier passes' keys).
    #[test]
    fn every_counting_path_matches_the_tuples(seed in proptest::prelude::any::<u64>()) {
        let (rank, shape, indices, sets) = random_counting_case(seed);
        let source = Source { shape: &shape, indices: Indices::RowMajor(&indices), len: indices.len() / rank, packed: None };
        for parallel in [false, true] {
            let mut counter = Counter::new(&source, parallel);
            let dense: Vec<Dims> = sets.iter().copied().filter(|&s| counter.is_dense(s)).collect();
            counter.count_dense(&dense);
            for &set in &dense {
                proptest::prop_assert_eq!(counter.get(set), Some(brute(&indices, rank, set)), "dense {:b}", set);
            }
            // A pass by each dimension takes every set holding it at once
            // (their dimensions interleave in its keys), on one counter.
            let mut counter = Counter::new(&source, parallel);
            for a in 0..rank {
                let with: Vec<Dims> = sets.iter().copied().filter(|&s| s >> a & 1 == 1).collect();
                with.iter().for_each(|&s| counter.known.forget(s));
                counter.count_pass(a, &with);
                for &set in &with {
                    let want = brute(&indices, rank, set);
                    proptest::prop_assert_eq!(counter.get(set), Some(want), "pass by {} of {:b}", a, set);
                }
            }
        }
        // In identity order: the sets holding its first dimensions by runs.
        let mut rows: Vec<&[u64]> = indices.chunks_exact(rank).collect();
        rows.sort_unstable();
        let sorted = rows.concat();
        let source = Source { shape: &shape, indices: Indices::RowMajor(&sorted), len: rows.len(), packed: None };
        for parallel in [false, true] {
            let mut counter = Counter::new(&source, parallel);
            proptest::prop_assert!(counter.count_sorted_prefixes());
            let dense: Vec<Dims> = sets.iter().copied().filter(|&s| counter.is_dense(s)).collect();
            counter.count_dense(&dense);
            for &set in &dense {
                proptest::prop_assert_eq!(counter.get(set), Some(brute(&sorted, rank, set)), "sorted {:b}", set);
            }
        }
    }
}

/// `checked_singles` counts exactly the singles it takes on (those of an
/// L2 bitmap outside every pair of few cells), and none without `count`;
/// and finds a coordinate outside the shape wherever it lies, in columns
/// (naming its entry) or rows (the start of its block).
#[test]
fn the_bounds_check_counts_the_singles_it_reads() {
    let n = 100_000;
    let mut state = 77u64;
    for (shape, want_counted) in
        [(&[200_000u64, 300_000, 50, 1 << 24][..], 0b0111u64), (&[3, 1000, 50_000][..], 0)]
    {
        let rank = shape.len();
        let indices: Vec<u64> =
            (0..n * rank).map(|i| rand(&mut state) % (shape[i % rank] / 2).max(1)).collect();
        let mut columns: Vec<Vec<u64>> =
            (0..rank).map(|d| indices.iter().skip(d).step_by(rank).copied().collect()).collect();
        for parallel in [false, true] {
            let refs: Vec<&[u64]> = columns.iter().map(Vec::as_slice).collect();
            let source = Source { shape, indices: Indices::Columnar(&refs), len: n, packed: None };
            let singles = checked_singles(&source, parallel, true).expect("inside the shape");
            let counted = singles.iter().fold(0, |m, &(set, _)| m | set);
            assert_eq!(counted, want_counted, "{shape:?}");
            for (set, distinct) in singles {
                assert_eq!(distinct, brute(&indices, rank, set), "{shape:?} set {set:b}");
            }
            // Row-major input counts the same singles.
            let rows = Source { shape, indices: Indices::RowMajor(&indices), len: n, packed: None };
            let mut by_rows = checked_singles(&rows, parallel, true).expect("inside the shape");
            let mut by_columns = checked_singles(&source, parallel, true).expect("inside the shape");
            by_rows.sort_unstable();
            by_columns.sort_unstable();
            assert_eq!(by_rows, by_columns, "{shape:?}");
            // Without `count`, the check alone.
            assert_eq!(checked_singles(&source, parallel, false), Ok(Vec::new()));
            assert_eq!(checked_singles(&rows, parallel, false), Ok(Vec::new()));
        }
        // One coordinate at its extent, in the first entry, inside a block
        // and in the last entry, of each dimension.
        let mut rows = indices.clone();
        for d in 0..rank {
            for entry in [0, SCAN_BLOCK + 5, n - 1] {
                let kept = std::mem::replace(&mut columns[d][entry], shape[d]);
                rows[entry * rank + d] = shape[d];
                let refs: Vec<&[u64]> = columns.iter().map(Vec::as_slice).collect();
                // Columns name the entry, rows the start of its block.
                let block = entry / SCAN_BLOCK * SCAN_BLOCK;
                for (indices, from) in [(Indices::Columnar(&refs), entry), (Indices::RowMajor(&rows), block)]
                {
                    let source = Source { shape, indices, len: n, packed: None };
                    for (parallel, count) in [(false, true), (true, true), (false, false)] {
                        let got = checked_singles(&source, parallel, count);
                        assert_eq!(got, Err(from), "dim {d} entry {entry}");
                    }
                }
                columns[d][entry] = kept;
                rows[entry * rank + d] = kept;
            }
        }
    }
    // The singles' bitmaps together stay within 16 bytes an entry: of five
    // dimensions of 2^20 cells over 40,000 entries (5 * 2^20 bits against
    // 128 * 40,000), the first four are counted.
    let (n, shape) = (40_000usize, [1u64 << 20; 5]);
    let mut state = 5u64;
    let indices: Vec<u64> = (0..n * 5).map(|_| rand(&mut state) % (1 << 20)).collect();
    let source = Source { shape: &shape, indices: Indices::RowMajor(&indices), len: n, packed: None };
    let singles = checked_singles(&source, false, true).expect("inside the shape");
    assert_eq!(singles.iter().map(|&(set, _)| set).collect::<Vec<_>>(), [1, 2, 4, 8]);
    assert!(singles.iter().all(|&(set, distinct)| distinct == brute(&indices, 5, set)));
    // A tiny input is checked, and its singles left to the masks.
    let columns: [&[u64]; 3] = [&[0, 1], &[2, 2], &[0, 4]];
    let source = Source { shape: &[2, 3, 5], indices: Indices::Columnar(&columns), len: 2, packed: None };
    assert_eq!(checked_singles(&source, false, true), Ok(Vec::new()));
    let source = Source { shape: &[2, 3, 4], indices: Indices::Columnar(&columns), len: 2, packed: None };
    assert_eq!(checked_singles(&source, false, true), Err(1));
}

/// Input in identity order counts the sets that hold its first dimensions
/// by runs, exactly: by stamps, by bitmaps cleared run by run and by hash
/// tables per run, rests of one, two and three dimensions, rows and
/// columns, one thread and chunks of runs in parallel (a run as long as
/// half the input crossing chunks), runs of one entry and of thousands,
/// repeated entries.
#[test]
fn sorted_input_counts_by_runs() {
    use Tally::{Bitmap, Hash, Stamps};
    // A shape; sets with their prefix's length and how runs count them.
    type Case<'a> = (&'a [u64], &'a [(Dims, usize, Tally)]);
    let cases: [Case<'_>; 5] = [
        // Dimension 0 of two values: two runs of 100,000 entries.
        (
            &[2, 50, 1000, 3000],
            &[(0b0101, 1, Stamps), (0b1011, 2, Stamps), (0b1101, 1, Bitmap), (0b1001, 1, Stamps)],
        ),
        // Runs of an entry or two, and rests of three dimensions.
        (
            &[150_000, 40, 60, 7, 30_000],
            &[
                (0b00101, 1, Stamps),
                (0b01011, 2, Stamps),
                (0b11101, 1, Hash),
                (0b01101, 1, Stamps),
                // Cells for a bitmap, but runs too short to clear one.
                (0b10101, 1, Hash),
            ],
        ),
        (&[300, 2, 1500, 1000], &[(0b1101, 1, Bitmap), (0b1011, 2, Stamps), (0b1001, 1, Stamps)]),
        // Runs of an entry or two hashed, and of some 700 entries by stamps.
        (&[150_000, 2, 150_000, 1000], &[(0b1101, 1, Hash), (0b1011, 2, Stamps)]),
        (&[300, 2, 150_000, 1000], &[(0b0101, 1, Stamps)]),
    ];
    let mut state = 0x5041_u64;
    for (case, &(shape, sets)) in cases.iter().enumerate() {
        let rank = shape.len();
        let n = 200_000;
        let mut rows: Vec<Vec<u64>> = (0..n)
            .map(|_| {
                shape
                    .iter()
                    .map(|&e| if rand(&mut state) % 4 == 0 { 0 } else { rand(&mut state) % e })
                    .collect()
            })
            .collect();
        rows.sort_unstable();
        let indices: Vec<u64> = rows.concat();
        let columns: Vec<Vec<u64>> = (0..rank).map(|d| rows.iter().map(|r| r[d]).collect()).collect();
        let columns: Vec<&[u64]> = columns.iter().map(Vec::as_slice).collect();
        for indices_of in [Indices::RowMajor(&indices), Indices::Columnar(&columns)] {
            let source = Source { shape, indices: indices_of, len: n, packed: None };
            for parallel in [false, true] {
                let mut counter = Counter::new(&source, parallel);
                assert!(counter.count_sorted_prefixes());
                for &(set, k, tally) in sets {
                    let what = format!("case {case} set {set:b} parallel {parallel}");
                    let rest = set & !((1 << k) - 1);
                    assert_eq!(counter.by_runs(set), Some((k, rest, tally)), "{what}");
                    counter.count_dense(&[set]);
                    assert_eq!(counter.get(set), Some(brute(&indices, rank, set)), "{what}");
                }
            }
        }
    }
    // Not by runs: a set without dimension 0, a prefix set (counted by
    // `count_sorted_prefixes`), a rest of too many cells for a bitmap in
    // runs too long for a table each, input out of order.
    let shape = [10u64, 10, 1 << 30];
    let sorted: Vec<u64> = (0..1000u64).flat_map(|e| [e / 100, e / 10 % 10, e]).collect();
    let source = Source { shape: &shape, indices: Indices::RowMajor(&sorted), len: 1000, packed: None };
    let mut counter = Counter::new(&source, false);
    assert!(counter.count_sorted_prefixes());
    assert_eq!(counter.by_runs(0b110), None);
    assert_eq!(counter.by_runs(0b011), None);
    assert_eq!(counter.by_runs(0b101), None);
    // The same rest in runs of one entry: hashed.
    let short: Vec<u64> = (0..1000u64).flat_map(|e| [e, e % 10, e << 20]).collect();
    let shape = [1000u64, 10, 1 << 30];
    let source = Source { shape: &shape, indices: Indices::RowMajor(&short), len: 1000, packed: None };
    let mut counter = Counter::new(&source, false);
    assert!(counter.count_sorted_prefixes());
    assert_eq!(counter.by_runs(0b101), Some((1, 0b100, Hash)));
    let shape = [10u64, 10, 1000];
    let source = Source { shape: &shape, indices: Indices::RowMajor(&sorted), len: 1000, packed: None };
    let mut counter = Counter::new(&source, false);
    assert!(counter.count_sorted_prefixes());
    assert_eq!(counter.by_runs(0b101), Some((1, 0b100, Stamps)));
    // Entry 0 last in dimension 2: a descent at entry 1.
    let mut unsorted = sorted.clone();
    unsorted.swap(2, 3 * 999 + 2);
    let source = Source { shape: &shape, indices: Indices::RowMajor(&unsorted), len: 1000, packed: None };
    let mut counter = Counter::new(&source, false);
    assert!(!counter.count_sorted_prefixes());
    assert_eq!(counter.by_runs(0b101), None);
}

/// Sorted input: a set that a pass would hash, holding the first dimension,
/// is counted by hashing its runs instead, exactly and without a scatter,
/// on one thread and in parallel, rows and columns; once a pass has left
/// the keys in buckets by its dimension, or when a run is too long for a
/// table in cache, the set is hashed by the pass.
#[test]
fn sets_a_pass_would_hash_count_by_runs_on_sorted_input() {
    let shape = [12u64, 1 << 20, 1 << 20, 1 << 20];
    let n = 60_000;
    let mut state = 0x7a11_u64;
    let mut rows: Vec<Vec<u64>> =
        (0..n).map(|_| shape.iter().map(|&e| rand(&mut state) % e).collect()).collect();
    // Repeated rest cells within a run, so that the count is not the runs' lengths.
    for i in (0..n).step_by(3) {
        rows[i][2] = 5;
        rows[i][3] = rows[i][0];
    }
    rows.sort_unstable();
    let indices: Vec<u64> = rows.concat();
    let columns: Vec<Vec<u64>> = (0..4).map(|d| rows.iter().map(|r| r[d]).collect()).collect();
    let columns: Vec<&[u64]> = columns.iter().map(Vec::as_slice).collect();
    let set: Dims = 0b1101;
    for indices_of in [Indices::RowMajor(&indices), Indices::Columnar(&columns)] {
        let source = Source { shape: &shape, indices: indices_of, len: n, packed: None };
        for parallel in [false, true] {
            let mut counter = Counter::new(&source, parallel);
            assert!(counter.count_sorted_prefixes());
            assert!(!counter.counts_by_bitmap(2, set), "a pass would not hash the set");
            assert_eq!(counter.by_runs(set), None, "runs too long for the search's runs");
            assert_eq!(counter.hashed_by_runs(2, set), Some((1, 0b1100, Tally::Hash)));
            counter.count_pass(2, &[set]);
            assert_eq!(counter.get(set), Some(brute(&indices, 4, set)));
            assert_eq!(counter.scattered_by(), None, "no scatter");
            // Keys in buckets by 2 (from a pass of another set): hashed there.
            counter.count_pass(2, &[0b0110]);
            assert_eq!(counter.get(0b0110), Some(brute(&indices, 4, 0b0110)));
            assert_eq!(counter.scattered_by(), Some(2));
            assert_eq!(counter.hashed_by_runs(2, set), None);
        }
    }
    // One run longer than `RUN_TABLE` entries: a pass.
    let long: Vec<u64> =
        (0..20_000u64).flat_map(|e| [u64::from(e >= 9000), e, e * 7 % 1000, e % 5]).collect();
    let source = Source { shape: &shape, indices: Indices::RowMajor(&long), len: 20_000, packed: None };
    let mut counter = Counter::new(&source, false);
    assert!(counter.count_sorted_prefixes());
    assert!(!counter.counts_by_bitmap(2, set));
    assert_eq!(counter.longest_run(1), 11_000);
    assert_eq!(counter.hashed_by_runs(2, set), None);
    counter.count_pass(2, &[set]);
    assert_eq!(counter.get(set), Some(brute(&long, 4, set)));
    assert_eq!(counter.scattered_by(), Some(2));
    // Input out of order: a pass.
    let mut unsorted = indices.clone();
    unsorted.swap(0, 4 * (n - 1));
    let source = Source { shape: &shape, indices: Indices::RowMajor(&unsorted), len: n, packed: None };
    let mut counter = Counter::new(&source, false);
    assert!(!counter.count_sorted_prefixes());
    assert_eq!(counter.hashed_by_runs(2, set), None);
    counter.count_pass(2, &[set]);
    assert_eq!(counter.get(set), Some(brute(&unsorted, 4, set)));
}
