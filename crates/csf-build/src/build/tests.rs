use super::*;
use csf_testdata::{reference_csf, synthetic, Distribution};
use hurray_format::ElementType;

fn levels_and_values(built: &Built) -> (Levels, Vec<f64>) {
    let view = built.tensor.view();
    let levels = view.levels().iter().map(|l| (l.pos.iter().collect(), l.crd.iter().collect())).collect();
    (levels, view.values().typed::<f64>().unwrap().as_native().unwrap().to_vec())
}

fn options(order: &[u32], duplicates: Duplicates, parallel: bool) -> Options {
    Options {
        mode_order: ModeOrderPolicy::Explicit(order.to_vec()),
        duplicates,
        parallel,
        ..Options::default()
    }
}

/// Enough entries for several chunks and many buckets, with runs of
/// duplicates (long ones under power-law skew) that chunk boundaries
/// meet; the third shape needs `u128` keys.
#[test]
fn chunked_builds_match_the_reference_whatever_the_threads() {
    let cases = [
        (1, Distribution::PowerLaw { skew: 4.0 }, vec![50u64, 60, 70]),
        (2, Distribution::Uniform, vec![3000, 2, 3000]),
        (3, Distribution::PowerLaw { skew: 2.0 }, vec![1 << 20, 1 << 21, 1 << 22]),
        (4, Distribution::PowerLaw { skew: 3.0 }, vec![20, 30, 40, 50]),
        (5, Distribution::PowerLaw { skew: 2.0 }, vec![9, 10, 11, 12, 13]),
    ];
    for (seed, distribution, shape) in cases {
        let coo = synthetic(&shape, 100_000, distribution, seed);
        let input = Coo::new(&coo.shape, Indices::RowMajor(&coo.indices), &coo.values);
        let rank = shape.len() as u32;
        let identity: Vec<u32> = (0..rank).collect();
        let rotated: Vec<u32> = (0..rank).map(|l| (l + rank - 1) % rank).collect();
        let orders = if rank == 3 { vec![identity, rotated] } else { vec![rotated] };
        for order in orders {
            let want = reference_csf(&coo, &order); // later duplicates win
            for duplicates in [Duplicates::Last, Duplicates::First, Duplicates::Sum] {
                let sequential =
                    levels_and_values(&build(&input, &options(&order, duplicates, false)).unwrap());
                let parallel = levels_and_values(&build(&input, &options(&order, duplicates, true)).unwrap());
                assert!(sequential == parallel, "seed {seed} order {order:?} {duplicates:?}");
                assert_eq!(sequential.0, want.levels, "seed {seed} order {order:?} {duplicates:?}");
                if duplicates == Duplicates::Last {
                    assert_eq!(sequential.1, want.values, "seed {seed} order {order:?}");
                }
                if duplicates == Duplicates::Sum {
                    // Small integers: every sum is exact.
                    let total: f64 = coo.values.iter().sum();
                    assert_eq!(sequential.1.iter().sum::<f64>(), total);
                }
            }
        }
    }
}

/// Every value width the fill specialises (1, 2, 4 and 8 bytes, and the
/// unpacked 4-bit codes), in chunked builds with duplicates.
#[test]
fn every_value_width_follows_its_keys() {
    let coo = synthetic(&[40, 50, 60, 70], 100_000, Distribution::PowerLaw { skew: 3.0 }, 21);
    let want = reference_csf(&coo, &[0, 1, 2, 3]);
    let bytes = |t: ElementType, v: f64| -> Vec<u8> {
        match t {
            ElementType::U8 => vec![v as u8],
            ElementType::U16 => (v as u16).to_le_bytes().to_vec(),
            ElementType::F32 => (v as f32).to_le_bytes().to_vec(),
            ElementType::F64 => v.to_le_bytes().to_vec(),
            _ => unreachable!(),
        }
    };
    for element_type in [ElementType::U8, ElementType::U16, ElementType::F32, ElementType::F64] {
        let values: Vec<u8> = coo.values.iter().flat_map(|&v| bytes(element_type, v)).collect();
        let input = Coo {
            shape: &coo.shape,
            indices: Indices::RowMajor(&coo.indices),
            element_type,
            values: values.into(),
        };
        for parallel in [false, true] {
            let built = build(&input, &options(&[0, 1, 2, 3], Duplicates::Last, parallel)).unwrap();
            let view = built.tensor.view();
            let levels: Levels =
                view.levels().iter().map(|l| (l.pos.iter().collect(), l.crd.iter().collect())).collect();
            assert_eq!(levels, want.levels, "{element_type:?} parallel={parallel}");
            let got: Vec<f64> = (0..want.nnz()).map(|i| view.values().get_raw_f64(i).unwrap()).collect();
            assert_eq!(got, want.values, "{element_type:?} parallel={parallel}");
        }
    }
    // 4-bit codes: values 1..=7 as u4.
    let codes: Vec<u8> = (0..coo.len()).map(|i| (i % 7 + 1) as u8).collect();
    let packed: Vec<u8> = codes.chunks(2).map(|c| c[0] | c.get(1).map_or(0, |h| h << 4)).collect();
    let as_f64 =
        csf_testdata::TestTensor { values: codes.iter().map(|&c| f64::from(c)).collect(), ..coo.clone() };
    let want = reference_csf(&as_f64, &[0, 1, 2, 3]);
    let input = Coo {
        shape: &coo.shape,
        indices: Indices::RowMajor(&coo.indices),
        element_type: ElementType::U4,
        values: packed.into(),
    };
    for parallel in [false, true] {
        let built = build(&input, &options(&[0, 1, 2, 3], Duplicates::Last, parallel)).unwrap();
        let view = built.tensor.view();
        let got: Vec<f64> = (0..want.nnz()).map(|i| view.values().get_raw_f64(i).unwrap()).collect();
        assert_eq!(got, want.values, "u4 parallel={parallel}");
    }
}

/// `coo`'s entries stably sorted by their storage-order tuples (equal
/// tuples keep their input order), with `strays` of them then moved to
/// random places.
fn in_storage_order(
    coo: &csf_testdata::TestTensor,
    order: &[u32],
    strays: usize,
    seed: u64,
) -> csf_testdata::TestTensor {
    let mut entries: Vec<usize> = (0..coo.len()).collect();
    entries.sort_by_key(|&e| order.iter().map(|&d| coo.index(e)[d as usize]).collect::<Vec<_>>());
    let mut rng = csf_testdata::Rng::new(seed);
    for _ in 0..strays {
        let from = rng.below(entries.len() as u64) as usize;
        let moved = entries.remove(from);
        entries.insert(rng.below(entries.len() as u64 + 1) as usize, moved);
    }
    let indices = entries.iter().flat_map(|&e| coo.index(e).to_vec()).collect();
    let values = entries.iter().map(|&e| coo.values[e]).collect();
    csf_testdata::TestTensor { shape: coo.shape.clone(), indices, values }
}

/// Sorted and nearly sorted input (strays up to the limit and past it)
/// builds byte-identical trees with and without the presorted path, for
/// every duplicate policy, mode order, zero dropping and key width.
#[test]
fn presorted_input_builds_what_the_sort_builds() {
    let cases = [
        (31, Distribution::PowerLaw { skew: 3.0 }, vec![30u64, 40, 50]),
        (32, Distribution::Uniform, vec![1 << 40, 1 << 41, 1 << 42]),
        (33, Distribution::PowerLaw { skew: 2.0 }, vec![5, 6, 7, 8]),
    ];
    for (seed, distribution, shape) in cases {
        let mut coo = synthetic(&shape, 20_000, distribution, seed);
        coo.values.iter_mut().step_by(7).for_each(|v| *v = 0.0);
        let rank = shape.len() as u32;
        for order in [(0..rank).collect::<Vec<_>>(), (0..rank).rev().collect()] {
            for strays in [0, 5, 200, 2_000] {
                let input = in_storage_order(&coo, &order, strays, seed + strays as u64);
                let coo_in = Coo::new(&input.shape, Indices::RowMajor(&input.indices), &input.values);
                for duplicates in [Duplicates::Last, Duplicates::First, Duplicates::Sum, Duplicates::Error] {
                    for drop_zeros in [false, true] {
                        let options = Options { drop_zeros, ..options(&order, duplicates, false) };
                        let fast = build_with(&coo_in, &options, true).map(|b| b.tensor);
                        let sorted = build_with(&coo_in, &options, false).map(|b| b.tensor);
                        assert_eq!(
                            fast, sorted,
                            "seed {seed} {order:?} strays {strays} {duplicates:?} {drop_zeros}"
                        );
                        // Up to the limit (1/64 of the entries) the fast path builds.
                        let taken = takes_fast_path(&coo_in, &order, &options);
                        assert_eq!(taken, strays <= 200, "seed {seed} {order:?} strays {strays}");
                    }
                }
            }
        }
    }
}

fn takes_fast_path(coo: &Coo<'_>, order: &[u32], options: &Options) -> bool {
    let len = coo.values.len() / 8; // f64 values
    let source = Source { shape: coo.shape, indices: coo.indices, len };
    let slots = Slots::new(coo.element_type, &coo.values, len);
    let input = presorted::Input { source: &source, slots: &slots, mode_order: order, options };
    // A duplicate under `Error` is an answer of the fast path too.
    let paths = presorted::Paths { one_pass: true, strays: true };
    !matches!(presorted::try_build(&input, paths), Ok(None))
}

#[test]
fn presorted_input_reports_coordinates_outside_the_shape_like_the_sort() {
    let indices = [0, 0, 0, 0, 0, 1, 0, 9, 0, 1, 1, 1];
    let values = [1.0f64, 2.0, 0.0, 3.0];
    let input = Coo::new(&[2, 2, 2], Indices::RowMajor(&indices), &values);
    for drop_zeros in [false, true] {
        let options = Options { drop_zeros, ..Options::default() };
        let fast = build_with(&input, &options, true).map(|b| b.tensor);
        assert_eq!(fast, build_with(&input, &options, false).map(|b| b.tensor));
        assert!(matches!(fast, Err(BuildError::OutOfBounds { entry: 2, dim: 1, coord: 9, extent: 2 })));
    }
}

#[test]
fn the_first_duplicate_is_named_whatever_the_threads() {
    // About 5 repeated indices among 100k uniform draws over 10^9 cells.
    let coo = synthetic(&[1000, 1000, 1000], 100_000, Distribution::Uniform, 7);
    let mut by_tuple: Vec<usize> = (0..coo.len()).collect();
    by_tuple.sort_by_key(|&i| coo.index(i).to_vec()); // stable
    let (first, second) = by_tuple
        .windows(2)
        .map(|w| (w[0], w[1]))
        .find(|&(a, b)| coo.index(a) == coo.index(b))
        .expect("a repeated index");
    let input = Coo::new(&coo.shape, Indices::RowMajor(&coo.indices), &coo.values);
    for parallel in [false, true] {
        let err = build(&input, &options(&[0, 1, 2], Duplicates::Error, parallel)).unwrap_err();
        assert_eq!(err, BuildError::Duplicate { index: coo.index(first).to_vec(), first, second });
    }
}

#[test]
fn dropped_zeros_in_chunked_builds() {
    let mut coo = synthetic(&[300, 300, 300], 120_000, Distribution::Uniform, 11);
    for v in coo.values.iter_mut().step_by(7) {
        *v = 0.0;
    }
    let kept: Vec<usize> = (0..coo.len()).filter(|&i| coo.values[i] != 0.0).collect();
    let filtered = csf_testdata::TestTensor {
        shape: coo.shape.clone(),
        indices: kept.iter().flat_map(|&i| coo.index(i).to_vec()).collect(),
        values: kept.iter().map(|&i| coo.values[i]).collect(),
    };
    let want = reference_csf(&filtered, &[0, 1, 2]);
    let input = Coo::new(&coo.shape, Indices::RowMajor(&coo.indices), &coo.values);
    for parallel in [false, true] {
        let built =
            build(&input, &Options { drop_zeros: true, ..options(&[0, 1, 2], Duplicates::Last, parallel) })
                .unwrap();
        let (levels, values) = levels_and_values(&built);
        assert_eq!(levels, want.levels);
        assert_eq!(values, want.values);
    }
}

#[test]
fn a_parts_error_keeps_its_cause() {
    use std::error::Error;
    let cause = csf_core::PartsError::ModeOrderLength { len: 2, rank: 3 };
    let error = BuildError::from(cause);
    assert_eq!(error, BuildError::Parts(cause));
    let source = error.source().expect("the view error is the source");
    assert_eq!(source.to_string(), cause.to_string());
    assert!(error.to_string().contains("mode_order has 2 entries"), "{error}");
}
