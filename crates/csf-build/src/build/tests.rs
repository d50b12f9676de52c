use super::*;
use csf_testdata::{permutations, reference_csf, synthetic, Distribution};
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

/// Input in identity order built in another mode order sorts only by the
/// levels above the order's last run of increasing dimensions
/// (`identity_suffix`), and builds byte-identical trees to the full sort:
/// every mode order of ranks 3 and 4 and some of rank 5, keys with the input
/// position in `u64` and in `u128` and keys without it (the slots move with
/// their keys), every duplicate policy, dropped zeros, one thread and two,
/// row-major and columnar. `Auto` finds the input in identity order, and
/// not with one entry out of place.
#[test]
fn input_in_identity_order_sorts_only_the_levels_it_is_not_in_order_by() {
    let cases = [
        (41, Distribution::PowerLaw { skew: 3.0 }, vec![30u64, 40, 50], 15_000),
        (42, Distribution::Uniform, vec![1 << 20, 1 << 21, 1 << 22], 12_000),
        (43, Distribution::PowerLaw { skew: 2.0 }, vec![1 << 30, 1 << 31, 1 << 40], 12_000),
        (44, Distribution::PowerLaw { skew: 2.0 }, vec![5, 6, 7, 8], 12_000),
        (45, Distribution::Uniform, vec![1 << 10, 1 << 12, 1 << 11, 1 << 13], 12_000),
        (46, Distribution::PowerLaw { skew: 3.0 }, vec![1 << 12, 300, 1 << 16, 1 << 11, 1 << 9], 12_000),
    ];
    let policies = [Duplicates::Last, Duplicates::First, Duplicates::Sum, Duplicates::Error];
    let mut skipped = 0;
    for (seed, distribution, shape, nnz) in cases {
        let mut coo = synthetic(&shape, nnz, distribution, seed);
        coo.values.iter_mut().step_by(7).for_each(|v| *v = 0.0);
        let rank = shape.len() as u32;
        let identity: Vec<u32> = (0..rank).collect();
        let input = in_storage_order(&coo, &identity, 0, seed);
        let columns: Vec<Vec<u64>> =
            (0..rank as usize).map(|d| (0..input.len()).map(|e| input.index(e)[d]).collect()).collect();
        let column_refs: Vec<&[u64]> = columns.iter().map(Vec::as_slice).collect();
        let orders = permutations(rank).into_iter().enumerate().filter(|(i, _)| rank < 5 || i % 7 == 3);
        for (i, order) in orders.map(|o| o.1).enumerate() {
            let indices =
                if i % 3 == 0 { Indices::Columnar(&column_refs) } else { Indices::RowMajor(&input.indices) };
            let coo_in = Coo::new(&input.shape, indices, &input.values);
            let options =
                Options { drop_zeros: i % 2 == 1, ..options(&order, policies[i % 4], i / 2 % 2 == 1) };
            let chosen = Chosen { mode_order: order.clone(), auto: None, in_identity_order: true };
            let fast =
                Plan::new(&coo_in, &options, Some(chosen)).and_then(|p| p.build(&options, Presort::Any));
            let sorted = build_with(&coo_in, &options, false);
            assert_eq!(fast.map(|b| b.tensor), sorted.map(|b| b.tensor), "seed {seed} {order:?} {options:?}");
            let extents: Vec<u64> = order.iter().map(|&d| shape[d as usize]).collect();
            let layout = Layout::new(&extents, input.len());
            skipped +=
                usize::from(identity_suffix(&order, &layout).is_some_and(|b| b > layout.position_bits));
        }
        // Input not in identity order sorts on every bit.
        let unsorted = Coo::new(&coo.shape, Indices::RowMajor(&coo.indices), &coo.values);
        let reversed = options(&identity.iter().rev().copied().collect::<Vec<_>>(), Duplicates::Last, false);
        let fast = build_with(&unsorted, &reversed, true).map(|b| b.tensor);
        assert_eq!(fast, build_with(&unsorted, &reversed, false).map(|b| b.tensor), "seed {seed} unsorted");
        // Auto: the same bytes as without the shortcuts, in order and with one entry out of place.
        for strays in [0, 1] {
            let input = in_storage_order(&coo, &identity, strays, seed + 1);
            let coo_in = Coo::new(&input.shape, Indices::RowMajor(&input.indices), &input.values);
            let source =
                Source { shape: &input.shape, indices: coo_in.indices, len: input.len(), packed: None };
            assert_eq!(choose(&source, false, &[]).1, strays == 0, "seed {seed} strays {strays}");
            let options =
                Options { mode_order: ModeOrderPolicy::Auto, ..options(&[], Duplicates::Sum, true) };
            let fast = build_with(&coo_in, &options, true).map(|b| (b.tensor, b.auto));
            assert_eq!(fast, build_with(&coo_in, &options, false).map(|b| (b.tensor, b.auto)), "seed {seed}");
        }
    }
    assert!(skipped > 60, "{skipped} builds skipped sort bits");
}

fn takes_fast_path(coo: &Coo<'_>, order: &[u32], options: &Options) -> bool {
    let len = coo.values.len() / 8; // f64 values
    let source = Source { shape: coo.shape, indices: coo.indices, len, packed: None };
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

/// Value bytes of `element_type` for the small codes `codes` (0 to 3): a
/// zero now and then for `drop_zeros`, and sums that stay exact.
fn encode(element_type: ElementType, codes: &[u8]) -> Vec<u8> {
    use hurray_format::Packing;
    match element_type.packing() {
        Packing::SubByte { .. } => codes.chunks(2).map(|c| c[0] | c.get(1).map_or(0, |h| h << 4)).collect(),
        Packing::Bytes(width) => codes
            .iter()
            .flat_map(|&c| {
                let mut bytes = match element_type {
                    ElementType::F64 => f64::from(c).to_le_bytes().to_vec(),
                    ElementType::F32 => f32::from(c).to_le_bytes().to_vec(),
                    ElementType::F16 => [0u16, 0x3c00, 0x4000, 0x4200][usize::from(c)].to_le_bytes().to_vec(),
                    ElementType::BF16 => {
                        [0u16, 0x3f80, 0x4000, 0x4040][usize::from(c)].to_le_bytes().to_vec()
                    }
                    _ => vec![c],
                };
                bytes.resize(usize::from(width), 0);
                bytes
            })
            .collect(),
    }
}

/// One random small input (at most `SMALL_INPUT` entries) and options.
fn small_case(seed: u64) -> (Vec<u64>, Vec<u64>, ElementType, Vec<u8>, Options, bool) {
    let mut rng = csf_testdata::Rng::new(seed);
    let rank = 3 + rng.below(4) as usize;
    // Tiny extents (many duplicates), medium ones, and ones that need `u128`
    // keys (rank 3) or are too wide for the small path's keys (rank 4 up).
    let extent = |rng: &mut csf_testdata::Rng| match rng.below(4) {
        0 | 1 => 1 + rng.below(4),
        2 => 1 + rng.below(1000),
        _ => (1 << 39) + rng.below(1 << 39),
    };
    let shape: Vec<u64> = (0..rank).map(|_| extent(&mut rng)).collect();
    let n = rng.below(small::SMALL_INPUT as u64 + 1) as usize;
    // Now and then one coordinate on the shape's edge, outside it.
    let outside = rng.below(8) == 0;
    let mut indices: Vec<u64> = (0..n * rank).map(|i| rng.below(shape[i % rank])).collect();
    if outside && n > 0 {
        let at = rng.below((n * rank) as u64) as usize;
        indices[at] = shape[at % rank];
    }
    let types = [
        ElementType::F64,
        ElementType::F32,
        ElementType::F16,
        ElementType::BF16,
        ElementType::I8,
        ElementType::I32,
        ElementType::U64,
        ElementType::Bool,
        ElementType::F8E4M3,
        ElementType::F6E2M3,
        ElementType::U4,
        ElementType::F4E2M1,
    ];
    let element_type = types[rng.below(types.len() as u64) as usize];
    let codes: Vec<u8> = (0..n).map(|_| rng.below(4) as u8).collect();
    let values = encode(element_type, &codes);
    let mode_order = match rng.below(3) {
        0 => ModeOrderPolicy::Identity,
        1 => {
            let orders = csf_testdata::permutations(rank as u32);
            ModeOrderPolicy::Explicit(orders[rng.below(orders.len() as u64) as usize].clone())
        }
        _ => ModeOrderPolicy::Auto,
    };
    let duplicates =
        [Duplicates::Error, Duplicates::Sum, Duplicates::Last, Duplicates::First][rng.below(4) as usize];
    let quantize = match rng.below(4) {
        0 => Some(crate::Quantize::PerTensor { dtype: ElementType::I8, zero_point: false }),
        1 => Some(crate::Quantize::PerBlock { block_size: 4, dtype: ElementType::U8, zero_point: true }),
        _ => None,
    };
    let options = Options {
        mode_order,
        duplicates,
        drop_zeros: rng.below(2) == 0,
        parallel: rng.below(2) == 0,
        quantize,
    };
    (shape, indices, element_type, values, options, rng.below(2) == 0)
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig {
        cases: if cfg!(miri) { 8 } else { 2048 },
        failure_persistence: None,
        ..proptest::prelude::ProptestConfig::default()
    })]

    /// Small inputs build the same bytes on the small-input path as on the
    /// sort alone (the radix sort, or the comparison sort for keys wider
    /// than 128 bits), or the same error: every duplicate policy, mode
    /// order, zero dropping, quantization, element width and key width,
    /// row-major and columnar.
    #[test]
    fn small_inputs_build_what_the_sort_builds(seed in proptest::prelude::any::<u64>()) {
        let (shape, indices, element_type, values, options, columnar) = small_case(seed);
        let rank = shape.len();
        let columns: Vec<Vec<u64>> =
            (0..rank).map(|d| indices.iter().skip(d).step_by(rank).copied().collect()).collect();
        let column_refs: Vec<&[u64]> = columns.iter().map(Vec::as_slice).collect();
        let indices = if columnar { Indices::Columnar(&column_refs) } else { Indices::RowMajor(&indices) };
        let coo = Coo { shape: &shape, indices, element_type, values: values.into() };
        let result = |shortcuts| build_with(&coo, &options, shortcuts).map(|b| (b.tensor, b.removed, b.auto));
        proptest::prop_assert_eq!(result(true), result(false));
    }
}

/// `check_bounds` (`distinct::checked_singles`'s block check, then a search from the first failing block)
/// names the first coordinate outside the shape in entry order, then
/// dimension order, for row-major and columnar input alike: in a block of
/// rows other than the first, with a later dimension's column failing at an
/// earlier entry than an earlier dimension's, and at the last entry.
#[test]
fn the_first_coordinate_outside_the_shape_is_named() {
    let shape = [5u64, 6, 7];
    let n = 1000;
    let inside = |e: usize, d: usize| (e * 7 + d * 3) as u64 % shape[d];
    // (entry, dimension, coordinate) written outside, and the one named.
    type Coordinate = (usize, usize, u64);
    let cases: [(&[Coordinate], Option<Coordinate>); 5] = [
        (&[], None),
        (&[(700, 0, 5), (300, 2, 9)], Some((300, 2, 9))),
        (&[(300, 2, 7), (300, 1, 6)], Some((300, 1, 6))),
        (&[(999, 2, u64::MAX)], Some((999, 2, u64::MAX))),
        (&[(0, 0, 5), (0, 1, 6)], Some((0, 0, 5))),
    ];
    for (outside, want) in cases {
        let mut columns: Vec<Vec<u64>> = (0..3).map(|d| (0..n).map(|e| inside(e, d)).collect()).collect();
        for &(e, d, c) in outside {
            columns[d][e] = c;
        }
        let rows: Vec<u64> =
            (0..n).flat_map(|e| (0..3).map(move |d| (e, d))).map(|(e, d)| columns[d][e]).collect();
        let cols: Vec<&[u64]> = columns.iter().map(Vec::as_slice).collect();
        let want =
            want.map(|(entry, dim, coord)| BuildError::OutOfBounds { entry, dim, coord, extent: shape[dim] });
        for indices in [Indices::RowMajor(&rows), Indices::Columnar(&cols)] {
            let source = Source { shape: &shape, indices, len: n, packed: None };
            assert_eq!(check_bounds(&source).err(), want, "{outside:?}");
        }
        let values = vec![1.0f64; n];
        let auto =
            Options { mode_order: ModeOrderPolicy::Auto, duplicates: Duplicates::Sum, ..Options::default() };
        assert_eq!(build(&Coo::new(&shape, Indices::RowMajor(&rows), &values), &auto).err(), want);
    }
}
