//! The builder against the reference builder of csf-testdata, and the spec.

use csf_build::{
    build, reorder, BuildError, Coo, Duplicates, Indices, ModeOrderPolicy, Options, ReorderOptions,
};
use csf_testdata::{reference_csf, synthetic, Distribution};
use hurray_format::ElementType;

fn f64_coo<'a>(shape: &'a [u64], indices: &'a [u64], values: &'a [f64]) -> Coo<'a> {
    Coo::new(shape, Indices::RowMajor(indices), values)
}

fn levels_of(built: &csf_build::Built) -> Vec<(Vec<u64>, Vec<u64>)> {
    built.tensor.view().levels().iter().map(|l| (l.pos.iter().collect(), l.crd.iter().collect())).collect()
}

#[test]
fn builds_the_spec_example_from_shuffled_input() {
    let shape = [2, 3, 4];
    let indices = [1, 1, 2, 0, 2, 3, 1, 1, 0, 0, 0, 1];
    let values = [4.0f32, 2.0, 3.0, 1.0];
    let built = build(&Coo::new(&shape, Indices::RowMajor(&indices), &values), &Options::default()).unwrap();
    assert_eq!(
        levels_of(&built),
        vec![(vec![0, 2], vec![0, 1]), (vec![0, 2, 3], vec![0, 2, 1]), (vec![0, 1, 2, 4], vec![1, 3, 0, 2])]
    );
    let view = built.tensor.view();
    assert_eq!(view.values().typed::<f32>().unwrap().as_native().unwrap(), &[1.0, 2.0, 3.0, 4.0]);
    assert_eq!(view.mode_order(), &[0, 1, 2], "writers with no preference use the identity order");
}

#[test]
fn matches_the_reference_for_every_mode_order_and_both_paths() {
    let orders: [[u32; 3]; 6] = [[0, 1, 2], [0, 2, 1], [1, 0, 2], [1, 2, 0], [2, 0, 1], [2, 1, 0]];
    for (seed, dist) in [(1, Distribution::Uniform), (2, Distribution::PowerLaw { skew: 3.0 })] {
        let coo = synthetic(&[37, 5, 300], 4000, dist, seed);
        for order in orders {
            let want = reference_csf(&coo, &order);
            for parallel in [false, true] {
                let options = Options {
                    mode_order: ModeOrderPolicy::Explicit(order.to_vec()),
                    duplicates: Duplicates::Last,
                    parallel,
                    ..Options::default()
                };
                let built = build(&f64_coo(&coo.shape, &coo.indices, &coo.values), &options).unwrap();
                assert_eq!(levels_of(&built), want.levels, "order {order:?}");
                let got: Vec<f64> =
                    built.tensor.view().values().typed::<f64>().unwrap().as_native().unwrap().to_vec();
                assert_eq!(got, want.values);
                assert!(csf_validate::validate_view(built.tensor.view()).is_ok());
            }
        }
    }
}

#[test]
fn wide_keys_take_the_u128_and_comparison_paths() {
    // 3 x 40 bits = 120 bits: u128 keys. 3 x 63 bits: comparison sort.
    for extent in [1u64 << 40, u64::MAX] {
        let shape = [extent, extent, extent];
        let indices = [5, extent - 1, 7, 5, 0, 7, 0, 0, 0, 5, extent - 1, 2];
        let values = [1.0, 2.0, 3.0, 4.0];
        let built = build(&f64_coo(&shape, &indices, &values), &Options::default()).unwrap();
        assert_eq!(
            levels_of(&built),
            vec![
                (vec![0, 2], vec![0, 5]),
                (vec![0, 1, 3], vec![0, 0, extent - 1]),
                (vec![0, 1, 2, 4], vec![0, 7, 2, 7])
            ]
        );
        assert_eq!(built.tensor.view().values().get_raw_f64(3), Some(1.0));
    }
}

#[test]
fn duplicate_policies() {
    let shape = [2, 2, 2];
    let indices = [1, 1, 1, 0, 0, 0, 1, 1, 1, 1, 1, 1];
    let values = [1.0, 5.0, 2.0, 4.0];
    let run = |duplicates| {
        build(&f64_coo(&shape, &indices, &values), &Options { duplicates, ..Options::default() })
    };
    assert_eq!(
        run(Duplicates::Error).unwrap_err(),
        BuildError::Duplicate { index: vec![1, 1, 1], first: 0, second: 2 }
    );
    let leaf = |b: csf_build::Built| b.tensor.view().get_f64(&[1, 1, 1]).unwrap();
    assert_eq!(leaf(run(Duplicates::First).unwrap()), 1.0);
    assert_eq!(leaf(run(Duplicates::Last).unwrap()), 4.0);
    let summed = run(Duplicates::Sum).unwrap();
    assert_eq!(summed.removed, 2);
    assert_eq!(leaf(summed), 7.0);
    let f16 = Coo {
        element_type: ElementType::F16,
        values: vec![0u8; 8].into(),
        ..f64_coo(&shape, &indices, &values)
    };
    assert_eq!(
        build(&f16, &Options { duplicates: Duplicates::Sum, ..Options::default() }).unwrap_err(),
        BuildError::CannotSum(ElementType::F16)
    );
}

#[test]
fn input_errors_are_named() {
    let values = [1.0, 2.0];
    let shape = [2, 2, 2];
    let bad = [0, 0, 0, 1, 2, 0];
    assert_eq!(
        build(&f64_coo(&shape, &bad, &values), &Options::default()).unwrap_err(),
        BuildError::OutOfBounds { entry: 1, dim: 1, coord: 2, extent: 2 }
    );
    let err = build(&f64_coo(&[4, 4], &[0, 0, 1, 1], &values), &Options::default()).unwrap_err();
    assert_eq!(err, BuildError::RankTooSmall { rank: 2 });
    assert!(err.to_string().contains("COO, CSR or CSC"));
    let order = Options { mode_order: ModeOrderPolicy::Explicit(vec![0, 0, 1]), ..Options::default() };
    assert!(matches!(
        build(&f64_coo(&shape, &[0; 6], &values), &order),
        Err(BuildError::BadModeOrder { .. })
    ));
    assert!(matches!(
        build(&f64_coo(&shape, &[0; 5], &values), &Options::default()),
        Err(BuildError::LengthMismatch { .. })
    ));
}

#[test]
fn zeros_are_kept_unless_dropped_and_sub_byte_values_repack() {
    let shape = [3, 1, 1];
    let indices = [2, 0, 0, 0, 0, 0, 1, 0, 0];
    // i4 values 3, 0, -1 (entry order), packed low nibble first.
    let coo = Coo {
        shape: &shape,
        indices: Indices::RowMajor(&indices),
        element_type: ElementType::I4,
        values: vec![0x03, 0x0f].into(),
    };
    let kept = build(&coo, &Options::default()).unwrap();
    assert_eq!(kept.tensor.view().nnz(), 3);
    // Leaf order is 0, 1, 2 -> values 0, -1, 3 -> bytes 0xf0, 0x03.
    assert_eq!(kept.tensor.view().values().as_bytes(), &[0xf0, 0x03]);
    let dropped = build(&coo, &Options { drop_zeros: true, ..Options::default() }).unwrap();
    assert_eq!(dropped.tensor.view().nnz(), 2);
    assert_eq!(dropped.tensor.view().values().as_bytes(), &[0x3f]);
    assert!(csf_validate::validate_view(dropped.tensor.view()).is_ok());
}

#[test]
fn auto_never_stores_more_than_identity_or_shortest_first() {
    for (seed, shape) in [(3u64, vec![1000u64, 3, 50]), (4, vec![20, 20, 20, 2]), (5, vec![7, 300, 2, 9, 40])]
    {
        let coo = synthetic(&shape, 3000, Distribution::PowerLaw { skew: 2.5 }, seed);
        let options =
            Options { mode_order: ModeOrderPolicy::Auto, duplicates: Duplicates::Sum, ..Options::default() };
        let built = build(&f64_coo(&coo.shape, &coo.indices, &coo.values), &options).unwrap();
        let auto = built.auto.clone().unwrap();
        let view = built.tensor.view();
        let stored: u64 = view.levels().iter().map(|l| (l.pos.len() + l.crd.len()) as u64 * 8).sum();
        assert_eq!(stored, auto.index_bytes, "the reported size is the real size");
        for (order, bytes) in &auto.compared {
            let other = build(
                &f64_coo(&coo.shape, &coo.indices, &coo.values),
                &Options { mode_order: ModeOrderPolicy::Explicit(order.clone()), ..options.clone() },
            )
            .unwrap();
            let real: u64 =
                other.tensor.view().levels().iter().map(|l| (l.pos.len() + l.crd.len()) as u64 * 8).sum();
            assert_eq!(real, *bytes);
            assert!(auto.index_bytes <= real, "{:?} beats auto {:?}", order, auto.mode_order);
        }
    }
}

#[test]
fn reorder_gives_the_same_tensor_in_another_order() {
    let coo = synthetic(&[30, 40, 50], 2000, Distribution::Uniform, 9);
    let options = Options { duplicates: Duplicates::Last, ..Options::default() };
    let built = build(&f64_coo(&coo.shape, &coo.indices, &coo.values), &options).unwrap();
    let moved = reorder(
        &built.tensor.view(),
        &ReorderOptions { mode_order: ModeOrderPolicy::Explicit(vec![2, 0, 1]), parallel: true },
    )
    .unwrap();
    let want = reference_csf(&coo, &[2, 0, 1]);
    assert_eq!(levels_of(&moved), want.levels);
    let a = built.tensor.view().to_coo(csf_core::CooOrder::Logical);
    let b = moved.tensor.view();
    for i in 0..a.len() {
        assert_eq!(b.get(a.index(i).unwrap()).unwrap(), a.values[i]);
    }
}

#[test]
fn empty_input_gives_the_spec_empty_form() {
    let built = build(&f64_coo(&[2, 3, 4], &[], &[]), &Options::default()).unwrap();
    assert_eq!(levels_of(&built), vec![(vec![0, 0], vec![]), (vec![0], vec![]), (vec![0], vec![])]);
    assert!(csf_validate::validate_view(built.tensor.view()).is_ok());
    let zero_extent = build(&f64_coo(&[2, 0, 4], &[], &[]), &Options::default()).unwrap();
    assert_eq!(zero_extent.tensor.view().nnz(), 0);
}

fn index_bytes(built: &csf_build::Built) -> u64 {
    built.tensor.view().levels().iter().map(|l| (l.pos.len() + l.crd.len()) as u64 * 8).sum()
}

#[test]
fn auto_picks_the_lexicographically_first_smallest_order() {
    let dense: Vec<u64> = (0..8u64).flat_map(|i| [i >> 2, i >> 1 & 1, i & 1]).collect();
    let cases: Vec<(Vec<u64>, Vec<u64>)> = vec![
        // Dense and empty: every order stores the same bytes.
        (vec![2, 2, 2], dense),
        (vec![2, 3, 4], vec![]),
        (vec![5, 5, 5, 5], vec![]),
        // Small random tensors, where the optimum is often tied.
        (vec![3, 4, 2], synthetic(&[3, 4, 2], 6, Distribution::Uniform, 1).indices),
        (vec![4, 4, 4, 3], synthetic(&[4, 4, 4, 3], 12, Distribution::Uniform, 2).indices),
        (vec![9, 2, 5, 3], synthetic(&[9, 2, 5, 3], 40, Distribution::PowerLaw { skew: 2.0 }, 3).indices),
    ];
    for (shape, indices) in cases {
        let values = vec![1.0; indices.len() / shape.len()];
        let coo = f64_coo(&shape, &indices, &values);
        let options = Options { duplicates: Duplicates::Last, ..Options::default() };
        let auto = build(&coo, &Options { mode_order: ModeOrderPolicy::Auto, ..options.clone() }).unwrap();
        let sizes: Vec<(u64, Vec<u32>)> = csf_testdata::permutations(shape.len() as u32)
            .into_iter()
            .map(|order| {
                let built = build(
                    &coo,
                    &Options { mode_order: ModeOrderPolicy::Explicit(order.clone()), ..options.clone() },
                );
                (index_bytes(&built.unwrap()), order)
            })
            .collect();
        let best = sizes.iter().min().unwrap();
        let choice = auto.auto.unwrap();
        assert_eq!((choice.index_bytes, &choice.mode_order), (best.0, &best.1), "shape {shape:?}");
        let orders: Vec<&Vec<u32>> = choice.compared.iter().map(|(o, _)| o).collect();
        let mut unique = orders.clone();
        unique.dedup();
        assert_eq!(orders, unique, "each candidate listed once");
    }
}

#[test]
fn auto_above_the_exact_rank_prefers_the_identity_on_ties() {
    // A dense 2^6 tensor: every order stores the same bytes.
    let shape = [2u64; 6];
    let indices: Vec<u64> = (0..64u64).flat_map(|i| (0..6).rev().map(move |b| i >> b & 1)).collect();
    let values = vec![1.0; 64];
    let options = Options { mode_order: ModeOrderPolicy::Auto, ..Options::default() };
    let choice = build(&f64_coo(&shape, &indices, &values), &options).unwrap().auto.unwrap();
    assert_eq!(choice.mode_order, [0, 1, 2, 3, 4, 5]);
    assert_eq!(choice.compared.len(), 1, "identity is also shortest-first: {:?}", choice.compared);
}

#[test]
fn shape_of_is_one_past_the_largest_coordinate() {
    use csf_build::shape_of;
    assert_eq!(shape_of(Indices::RowMajor(&[1, 0, 4, 0, 2, 3]), 3).unwrap(), [2, 3, 5]);
    let cols: [&[u64]; 3] = [&[1, 0], &[0, 2], &[4, 3]];
    assert_eq!(shape_of(Indices::Columnar(&cols), 3).unwrap(), [2, 3, 5]);
    assert_eq!(shape_of(Indices::RowMajor(&[]), 4).unwrap(), [0, 0, 0, 0]);
    assert!(matches!(
        shape_of(Indices::RowMajor(&[0, u64::MAX, 0]), 3),
        Err(BuildError::OutOfBounds { entry: 0, dim: 1, .. })
    ));
    assert!(matches!(shape_of(Indices::RowMajor(&[0, 1]), 3), Err(BuildError::LengthMismatch { .. })));
    assert!(matches!(shape_of(Indices::RowMajor(&[0, 1]), 2), Err(BuildError::RankTooSmall { rank: 2 })));
}
