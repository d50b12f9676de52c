//! `ModeOrderPolicy::Auto` against brute force: every permutation built and measured.
//!
//! Ranks 3 to 5: Auto's order and size must be those of the smallest built
//! tensor, the lexicographically first among equals. Ranks 6 to 8: never
//! larger than the best of identity, shortest-extent-first and
//! fewest-distinct-first, built the same way; on inputs of at most 64
//! entries, the optimum (costed from every set's distinct projections), the
//! heuristics' pick on ties.

use csf_build::{build, Built, Coo, Duplicates, Indices, ModeOrderPolicy, Options};
use csf_testdata::Rng;

fn index_bytes(built: &Built) -> u64 {
    built.tensor.view().levels().iter().map(|l| (l.pos.len() + l.crd.len()) as u64 * 8).sum()
}

/// A small random tensor: a shape mixing tiny, small and huge extents (huge
/// ones make sets too sparse for bitmaps, so partition passes and, beyond
/// 128 bits, the comparison fallback run), and entries drawn uniformly, from
/// a few distinct values per dimension (many ties), or skewed; with repeats.
fn random_case(rng: &mut Rng, rank: usize) -> (Vec<u64>, Vec<u64>) {
    let shape: Vec<u64> = (0..rank)
        .map(|_| match rng.below(10) {
            0 => 1,
            1..=4 => 1 + rng.below(4),
            5..=7 => 1 + rng.below(40),
            8 => 1 << (20 + rng.below(20)),
            _ => u64::MAX - rng.below(3),
        })
        .collect();
    let len = match rng.below(8) {
        0 => 0,
        1 => 1,
        _ => rng.below(300) as usize,
    };
    let style = rng.below(3);
    // A few values per dimension for the "few distinct" style.
    let palette: Vec<Vec<u64>> = shape.iter().map(|&e| (0..3).map(|_| rng.below(e)).collect()).collect();
    let mut indices = Vec::with_capacity(len * rank);
    for _ in 0..len {
        for (d, &extent) in shape.iter().enumerate() {
            indices.push(match style {
                0 => rng.below(extent),
                1 => palette[d][rng.below(3) as usize],
                _ => ((extent as f64) * rng.next_f64().powi(4)) as u64 % extent,
            });
        }
    }
    (shape, indices)
}

/// A dense tensor: every cell of `shape` once (every order stores the same bytes).
fn dense(shape: &[u64]) -> Vec<u64> {
    let cells: u64 = shape.iter().product();
    (0..cells)
        .flat_map(|mut c| {
            let mut index = vec![0; shape.len()];
            for (i, &e) in shape.iter().enumerate().rev() {
                index[i] = c % e;
                c /= e;
            }
            index
        })
        .collect()
}

fn options(mode_order: ModeOrderPolicy, parallel: bool) -> Options {
    Options { mode_order, duplicates: Duplicates::Sum, parallel, ..Options::default() }
}

fn sizes(coo: &Coo<'_>, orders: &[Vec<u32>]) -> Vec<(u64, Vec<u32>)> {
    orders
        .iter()
        .map(|o| {
            (
                index_bytes(&build(coo, &options(ModeOrderPolicy::Explicit(o.clone()), false)).unwrap()),
                o.clone(),
            )
        })
        .collect()
}

fn check_exact(shape: &[u64], indices: &[u64], what: &str) {
    let values = vec![1.0f64; indices.len() / shape.len()];
    let columns: Vec<Vec<u64>> =
        (0..shape.len()).map(|d| indices.iter().skip(d).step_by(shape.len()).copied().collect()).collect();
    let columns: Vec<&[u64]> = columns.iter().map(Vec::as_slice).collect();
    let best = sizes(
        &Coo::new(shape, Indices::RowMajor(indices), &values),
        &csf_testdata::permutations(shape.len() as u32),
    )
    .into_iter()
    .min()
    .unwrap();
    for (layout, indices) in
        [("row-major", Indices::RowMajor(indices)), ("columnar", Indices::Columnar(&columns))]
    {
        for parallel in [false, true] {
            let built =
                build(&Coo::new(shape, indices, &values), &options(ModeOrderPolicy::Auto, parallel)).unwrap();
            let choice = built.auto.as_ref().unwrap();
            assert_eq!(
                (choice.index_bytes, &choice.mode_order),
                (best.0, &best.1),
                "{what}: shape {shape:?}, {} entries, {layout}, parallel {parallel}",
                values.len()
            );
            assert_eq!(built.tensor.view().mode_order(), best.1.as_slice());
            for (order, bytes) in &choice.compared {
                assert_eq!(
                    *bytes,
                    sizes(&Coo::new(shape, indices, &values), std::slice::from_ref(order))[0].0
                );
            }
        }
    }
}

#[test]
fn auto_is_the_brute_force_optimum_up_to_rank_5() {
    let mut rng = Rng::new(0x0a07_0001);
    for case in 0..300 {
        let rank = 3 + case % 3;
        let (shape, indices) = random_case(&mut rng, rank);
        check_exact(&shape, &indices, &format!("case {case}"));
    }
}

#[test]
fn auto_is_the_brute_force_optimum_on_dense_and_empty_tensors() {
    for shape in [vec![2u64, 2, 2], vec![3, 1, 4], vec![2, 3, 2, 2], vec![2, 2, 1, 2, 3]] {
        check_exact(&shape, &dense(&shape), "dense");
        check_exact(&shape, &[], "empty");
    }
    check_exact(&[4, 0, 5], &[], "a zero extent");
}

/// Larger tensors, where the partition pass has many buckets, splits big
/// buckets by hash, and runs in parallel chunks.
#[test]
fn auto_is_the_brute_force_optimum_on_larger_tensors() {
    let mut rng = Rng::new(7);
    let shapes: [&[u64]; 4] =
        [&[3, 50_000, 1 << 30], &[1 << 33, 70, 9, 1 << 20], &[12, 1 << 40, 5, 300, 2], &[2, 1, 1 << 41]];
    for shape in shapes {
        let len = 150_000;
        let indices: Vec<u64> = (0..len)
            .flat_map(|_| {
                shape.iter().map(|&e| ((e as f64) * rng.next_f64().powi(3)) as u64 % e).collect::<Vec<_>>()
            })
            .collect();
        check_exact(shape, &indices, "larger");
    }
}

/// The heuristics `Auto` is never worse than at ranks 6 to 8: identity,
/// shortest-extent-first and fewest-distinct-first (`distinct(d)`: the
/// distinct coordinates of dimension `d`), each sort stable.
fn heuristic_orders(shape: &[u64], distinct: impl Fn(u32) -> u64) -> [Vec<u32>; 3] {
    let identity: Vec<u32> = (0..shape.len() as u32).collect();
    let mut shortest = identity.clone();
    shortest.sort_by_key(|&d| shape[d as usize]);
    let mut fewest = identity.clone();
    fewest.sort_by_key(|&d| distinct(d));
    [identity, shortest, fewest]
}

#[test]
fn auto_is_never_worse_than_the_heuristics_at_ranks_6_to_8() {
    let mut rng = Rng::new(0x0a07_0006);
    for case in 0..60 {
        let rank = 6 + case % 3;
        let (shape, indices) = random_case(&mut rng, rank);
        let values = vec![1.0f64; indices.len() / rank];
        let coo = Coo::new(&shape, Indices::RowMajor(&indices), &values);
        let distinct = |d: u32| {
            let mut v: Vec<u64> = indices.iter().skip(d as usize).step_by(rank).copied().collect();
            v.sort_unstable();
            v.dedup();
            v.len() as u64
        };
        let heuristics = sizes(&coo, &heuristic_orders(&shape, distinct)).into_iter().min().unwrap();
        let built = build(&coo, &options(ModeOrderPolicy::Auto, case % 2 == 0)).unwrap();
        let choice = built.auto.unwrap();
        assert!(choice.index_bytes <= heuristics.0, "case {case}: {choice:?} vs {heuristics:?}");
        assert_eq!(
            choice.index_bytes,
            index_bytes(
                &build(&coo, &options(ModeOrderPolicy::Explicit(choice.mode_order.clone()), false)).unwrap()
            )
        );
        if choice.index_bytes == heuristics.0 {
            assert_eq!(choice.mode_order, heuristics.1, "case {case}: a tie keeps the heuristics' pick");
        }
    }
}

/// At ranks 6 to 8, an input of at most 64 entries has every set counted,
/// so `Auto` is exact there too: the cheapest order by brute force (every
/// permutation costed from every set's distinct projections), the
/// heuristics' pick if it is among the cheapest, else the
/// lexicographically first of them.
#[test]
fn auto_is_the_brute_force_optimum_at_ranks_6_to_8_on_tiny_inputs() {
    let mut rng = Rng::new(0x0a07_0068);
    for case in 0..45 {
        let rank = 6 + case % 3;
        let (shape, mut indices) = random_case(&mut rng, rank);
        indices.truncate(64 * rank);
        let entries: Vec<&[u64]> = indices.chunks_exact(rank).collect();
        let distinct = |set: u32| {
            let mut projections: Vec<Vec<u64>> = entries
                .iter()
                .map(|e| (0..rank).filter(|&d| set >> d & 1 == 1).map(|d| e[d]).collect())
                .collect();
            projections.sort_unstable();
            projections.dedup();
            projections.len() as u64
        };
        let d_of: Vec<u64> = (0..1u32 << rank).map(distinct).collect();
        let cost = |order: &[u32]| {
            order[..rank - 1]
                .iter()
                .scan(0u32, |set, &d| {
                    *set |= 1 << d;
                    Some(d_of[*set as usize])
                })
                .sum::<u64>()
        };
        let heuristic = heuristic_orders(&shape, |d| d_of[1 << d])
            .into_iter()
            .min_by_key(|o| (cost(o), o.clone()))
            .unwrap();
        let cheapest = csf_testdata::permutations(rank as u32).into_iter().min_by_key(|o| cost(o)).unwrap();
        let want = if cost(&heuristic) == cost(&cheapest) { heuristic } else { cheapest };
        let values = vec![1.0f64; entries.len()];
        let coo = Coo::new(&shape, Indices::RowMajor(&indices), &values);
        let built = build(&coo, &options(ModeOrderPolicy::Auto, case % 2 == 0)).unwrap();
        let choice = built.auto.unwrap();
        assert_eq!(choice.mode_order, want, "case {case}: shape {shape:?}, {} entries", entries.len());
        assert_eq!(
            choice.index_bytes,
            index_bytes(&build(&coo, &options(ModeOrderPolicy::Explicit(want), false)).unwrap())
        );
    }
}

/// A coordinate outside the shape fails an `Auto` build with the error an
/// identity build gives (the first such coordinate in entry order, then
/// dimension order), whether `Auto`'s first read of the input (which checks
/// the bounds as it counts the singles) meets it in a column or in a row,
/// early or late, on one thread or more, borrowed or owned; and an input
/// inside its shape builds.
#[test]
fn auto_names_the_first_coordinate_outside_as_identity_does() {
    let shape = [7u64, 5_000, 300];
    let mut rng = Rng::new(31);
    for n in [10, 50_000] {
        let fresh: Vec<Vec<u64>> = shape.iter().map(|&e| (0..n).map(|_| rng.below(e)).collect()).collect();
        // (dim, entry, coordinate) faults: none; one early, one in the
        // middle and one at the end; a later dimension failing first.
        let faults: [&[(usize, usize, u64)]; 5] = [
            &[],
            &[(0, 0, 7)],
            &[(2, n / 2 + 3, u64::MAX)],
            &[(1, n - 1, 5_000)],
            &[(0, n - 2, 9), (2, n / 3, 300)],
        ];
        for fault in faults {
            let mut columns = fresh.clone();
            for &(dim, entry, coord) in fault {
                columns[dim][entry] = coord;
            }
            let rows: Vec<u64> = (0..n).flat_map(|e| columns.iter().map(move |c| c[e])).collect();
            let refs: Vec<&[u64]> = columns.iter().map(Vec::as_slice).collect();
            let values: Vec<f64> = (0..n).map(|i| i as f64 + 1.0).collect();
            for parallel in [false, true] {
                let options = |mode_order| Options {
                    mode_order,
                    parallel,
                    duplicates: Duplicates::Last,
                    ..Options::default()
                };
                let (auto, identity) = (options(ModeOrderPolicy::Auto), options(ModeOrderPolicy::Identity));
                for indices in [Indices::Columnar(&refs), Indices::RowMajor(&rows)] {
                    let coo = Coo::new(&shape, indices, &values);
                    let want = build(&coo, &identity).err();
                    assert_eq!(want.is_none(), fault.is_empty(), "{fault:?}");
                    assert_eq!(build(&coo, &auto).err(), want, "n {n} {fault:?} parallel {parallel}");
                }
                let owned = csf_build::OwnedCoo {
                    shape: shape.to_vec(),
                    columns: columns.clone(),
                    element_type: hurray_format::ElementType::F64,
                    values: values.iter().flat_map(|v| v.to_le_bytes()).collect(),
                };
                let want = build(&Coo::new(&shape, Indices::Columnar(&refs), &values), &identity).err();
                assert_eq!(csf_build::build_owned(owned, &auto).err(), want, "owned n {n} {fault:?}");
            }
        }
    }
}
