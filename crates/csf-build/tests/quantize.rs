//! Quantizing while building (docs/format.md § 5.7): error bounds against the
//! float input, the published tables, and strict validity of the files.

use csf_build::{
    build, reorder, Built, Coo, Duplicates, Indices, ModeOrderPolicy, Options, Quantize, QuantizeError,
    ReorderOptions, StatisticsSection,
};
use csf_core::scalar;
use csf_testdata::{synthetic, Distribution, Rng};
use hurray_format::{Container, ElementType, QuantScheme};

/// Random real values (both signs, a wide range) on a random sparse pattern.
fn input(seed: u64) -> (Vec<u64>, Vec<u64>, Vec<f64>) {
    let coo = synthetic(&[9, 7, 50], 600, Distribution::Uniform, seed);
    let mut rng = Rng::new(seed ^ 0xabc);
    let values =
        (0..coo.len()).map(|_| (rng.next_f64() - 0.4) * 10f64.powi(rng.below(5) as i32 - 2)).collect();
    (coo.shape, coo.indices, values)
}

fn build_quantized(seed: u64, quantize: Quantize) -> (Built, Vec<(Vec<u64>, f64)>) {
    let (shape, indices, values) = input(seed);
    let coo = Coo::new(&shape, Indices::RowMajor(&indices), &values);
    let plain = build(&coo, &Options { duplicates: Duplicates::Last, ..Options::default() }).unwrap();
    let mut exact = Vec::new();
    plain.tensor.view().for_each(|index, leaf| {
        exact.push((index.to_vec(), plain.tensor.view().values().get_raw_f64(leaf).unwrap()))
    });
    let options = Options { duplicates: Duplicates::Last, quantize: Some(quantize), ..Options::default() };
    let built = build(&coo, &options).unwrap();
    // Every quantized file is strictly valid, and reads back the same after a round trip.
    let bytes = built.to_bytes(StatisticsSection::Include).unwrap();
    let view = csf_validate::validate(&Container::decode(&bytes).unwrap()).unwrap();
    for (index, _) in &exact {
        assert_eq!(view.get_dequantized(index).unwrap(), built.tensor.view().get_dequantized(index).unwrap());
    }
    (built, exact)
}

/// The scale of the group holding each leaf, read from the parameter buffer.
fn scale_of(built: &Built, leaf: usize, index: &[u64]) -> f32 {
    let view = built.tensor.view();
    let q = view.quantization().unwrap();
    q.scales.get_raw_f64(q.group(leaf, index).unwrap()).unwrap() as f32
}

#[test]
fn integer_schemes_err_by_at_most_half_a_step() {
    let cases = [
        Quantize::PerTensor { dtype: ElementType::I8, zero_point: false },
        Quantize::PerTensor { dtype: ElementType::U8, zero_point: true },
        Quantize::PerChannel { axis: 1, dtype: ElementType::I8, zero_point: false },
        Quantize::PerChannel { axis: 2, dtype: ElementType::I16, zero_point: true },
        Quantize::PerBlock { block_size: 32, dtype: ElementType::I8, zero_point: false },
        Quantize::PerBlock { block_size: 7, dtype: ElementType::I4, zero_point: false },
        Quantize::PerBlock { block_size: 16, dtype: ElementType::U4, zero_point: true },
    ];
    for (seed, spec) in cases.into_iter().enumerate() {
        let (built, exact) = build_quantized(seed as u64, spec);
        let view = built.tensor.view();
        for (leaf, (index, x)) in exact.iter().enumerate() {
            let s = f64::from(scale_of(&built, leaf, index));
            let got = f64::from(view.get_dequantized(index).unwrap());
            // Half a step, plus the f32 rounding of the product.
            let bound = s / 2.0 * (1.0 + 1e-6) + x.abs() * 1e-6;
            assert!((got - x).abs() <= bound, "{spec:?}: {x} -> {got}, scale {s}");
        }
    }
}

#[test]
fn nf4_picks_the_nearest_level_of_the_published_table() {
    assert_eq!(scalar::NF4_TABLE[0], -1.0);
    assert_eq!(scalar::NF4_TABLE[7], 0.0);
    assert_eq!(scalar::NF4_TABLE[15], 1.0);
    assert!((scalar::NF4_TABLE[8] - 0.079_580_3).abs() < 1e-7);
    let (built, exact) = build_quantized(11, Quantize::Nf4 { block_size: 64 });
    let view = built.tensor.view();
    let q = view.quantization().unwrap();
    assert_eq!(q.scheme, QuantScheme::Nf4);
    for (leaf, (index, x)) in exact.iter().enumerate() {
        let absmax = q.scales.get_raw_f64(leaf / 64).unwrap();
        let csf_core::Value::Nf4(code) = view.values().get_raw(leaf).unwrap() else { panic!("not nf4") };
        let target = x / absmax;
        let dist = |c: usize| (f64::from(scalar::NF4_TABLE[c]) - target).abs();
        assert!((0..16).all(|c| dist(usize::from(code)) <= dist(c) + 1e-12), "{x}: code {code}");
        let got = f64::from(view.get_dequantized(index).unwrap());
        assert!(
            (got - f64::from(scalar::NF4_TABLE[usize::from(code)]) * absmax).abs() <= 1e-6 * absmax.abs()
        );
    }
}

#[test]
fn mxfp_shares_an_ocp_scale_per_32_leaves_and_rounds_elements_to_nearest() {
    let formats = [
        (ElementType::F8E4M3, 8, scalar::f8e4m3_to_f32 as fn(u8) -> f32, 0x80u8),
        (ElementType::F8E5M2, 15, scalar::f8e5m2_to_f32, 0x80),
        (ElementType::F6E2M3, 2, scalar::f6e2m3_to_f32, 0x20),
        (ElementType::F6E3M2, 4, scalar::f6e3m2_to_f32, 0x20),
        (ElementType::F4E2M1, 2, scalar::f4e2m1_to_f32, 0x08),
    ];
    for (seed, (dtype, emax, decode, sign)) in formats.into_iter().enumerate() {
        let (built, exact) = build_quantized(20 + seed as u64, Quantize::Mxfp { dtype });
        let view = built.tensor.view();
        let q = view.quantization().unwrap();
        assert_eq!((q.block_size, q.scales.element_type()), (32, ElementType::E8M0));
        let representable: Vec<f64> =
            (0..sign).map(|c| f64::from(decode(c))).filter(|v| v.is_finite()).collect();
        let max = representable.iter().copied().fold(0.0, f64::max);
        for block in exact.chunks(32).enumerate() {
            let (b, entries) = block;
            let absmax = entries.iter().map(|(_, x)| x.abs()).fold(0.0, f64::max);
            let csf_core::Value::E8M0(code) = q.scales.get_raw(b).unwrap() else { panic!("not e8m0") };
            let e = i32::from(code) - 127;
            if absmax > 0.0 {
                assert_eq!(e, absmax.log2().floor() as i32 - emax, "{dtype}: block {b}");
            }
            for (i, (index, x)) in entries.iter().enumerate() {
                let got = f64::from(view.get_dequantized(index).unwrap()) / 2f64.powi(e);
                let target = (x / 2f64.powi(e)).clamp(-max, max);
                let best = representable.iter().map(|r| (r - target.abs()).abs()).fold(f64::MAX, f64::min);
                assert!(
                    ((got.abs() - target.abs()).abs() - best).abs() <= 1e-12
                        && (got == 0.0 || got.signum() == x.signum()),
                    "{dtype}: leaf {} x {x} -> {got} (target {target})",
                    b * 32 + i
                );
            }
        }
    }
}

#[test]
fn quantizing_rejects_what_the_scheme_cannot_store() {
    let (shape, indices, values) = input(1);
    let coo = Coo::new(&shape, Indices::RowMajor(&indices), &values);
    let with =
        |quantize| Options { duplicates: Duplicates::Last, quantize: Some(quantize), ..Options::default() };
    for spec in [
        Quantize::PerTensor { dtype: ElementType::F32, zero_point: false },
        Quantize::PerTensor { dtype: ElementType::F8E4M3, zero_point: true },
        Quantize::PerChannel { axis: 3, dtype: ElementType::I8, zero_point: false },
        Quantize::PerBlock { block_size: 0, dtype: ElementType::I8, zero_point: false },
        Quantize::Mxfp { dtype: ElementType::I8 },
    ] {
        assert!(matches!(build(&coo, &with(spec)), Err(csf_build::BuildError::Quantize(_))), "{spec:?}");
    }
}

/// Four leaves of a [2, 2, 2] tensor: `values` at (0,0,0), (0,1,1), (1,0,1), (1,1,0).
fn four(values: &[f64; 4], quantize: Quantize) -> Result<Built, csf_build::BuildError> {
    let indices = [0, 0, 0, 0, 1, 1, 1, 0, 1, 1, 1, 0];
    let coo = Coo::new(&[2, 2, 2], Indices::RowMajor(&indices), values);
    build(&coo, &Options { quantize: Some(quantize), ..Options::default() })
}

/// Every value of a quantized tensor reads back finite.
fn dequantized(built: &Built) -> Vec<f64> {
    let view = built.tensor.view();
    let mut out = Vec::new();
    view.for_each(|index, _| out.push(f64::from(view.get_dequantized(index).unwrap())));
    out
}

const EVERY_SCHEME: [Quantize; 8] = [
    Quantize::PerTensor { dtype: ElementType::I8, zero_point: false },
    Quantize::PerTensor { dtype: ElementType::U8, zero_point: true },
    Quantize::PerChannel { axis: 2, dtype: ElementType::I16, zero_point: false },
    Quantize::PerBlock { block_size: 2, dtype: ElementType::I32, zero_point: false },
    Quantize::PerTensor { dtype: ElementType::F8E4M3, zero_point: false },
    Quantize::Nf4 { block_size: 4 },
    Quantize::Mxfp { dtype: ElementType::F8E4M3 },
    Quantize::Mxfp { dtype: ElementType::F4E2M1 },
];

/// A finite value beyond binary32's range has no finite binary32 scale: the
/// build names its group and value rather than storing infinite or NaN
/// values (every other value of the group would dequantize to NaN).
#[test]
fn values_beyond_binary32_are_refused_not_stored_as_infinities() {
    for spec in EVERY_SCHEME {
        let result = four(&[0.5, -1e300, 3.0, 2.0], spec);
        let Err(csf_build::BuildError::Quantize(QuantizeError::TooLarge { group, value })) = result else {
            panic!("{spec:?}: {result:?}")
        };
        // Leaf 1 holds -1e300: group 0 of every scheme but per-channel by
        // axis 2 (its index there is 1) and blocks of 2 (the first block).
        assert_eq!(
            (group, value),
            (usize::from(matches!(spec, Quantize::PerChannel { .. })), -1e300),
            "{spec:?}"
        );
    }
}

/// Values up to `f32::MAX` quantize to finite values near them: a scale
/// whose product with the largest code would round past `f32::MAX` is
/// taken one binary32 step smaller.
#[test]
fn values_up_to_f32_max_dequantize_finite_and_close() {
    let big = f64::from(f32::MAX);
    for spec in EVERY_SCHEME {
        if matches!(spec, Quantize::PerTensor { zero_point: true, .. }) {
            continue; // (asymmetric: below)
        }
        let built = four(&[big, -big, 1.0, big / 2.0], spec).unwrap_or_else(|e| panic!("{spec:?}: {e}"));
        let got = dequantized(&built);
        assert!(got.iter().all(|v| v.is_finite()), "{spec:?}: {got:?}");
        // The two extremes within a relative 2^-2 for MXFP (f4e2m1's block
        // maximum may saturate from 8 to 6 steps of its scale), 2^-3 for NF4,
        // 2^-7 for every integer and FP8 scheme.
        let tolerance = match spec {
            Quantize::Mxfp { .. } => 0.25,
            Quantize::Nf4 { .. } => 0.125,
            _ => 1.0 / 128.0,
        };
        assert!((got[0] - big).abs() <= tolerance * big, "{spec:?}: {got:?}");
        assert!((got[1] + big).abs() <= tolerance * big, "{spec:?}: {got:?}");
    }
    // With a zero point the codes reach one step past the range's ends:
    // `f32::MAX` on one side fits, both sides at once do not.
    let asymmetric = Quantize::PerTensor { dtype: ElementType::U8, zero_point: true };
    let built = four(&[big, 0.0, 1.0, big / 2.0], asymmetric).unwrap();
    assert!(dequantized(&built).iter().all(|v| v.is_finite()));
    let both = four(&[big, -big, 1.0, 2.0], asymmetric);
    assert!(
        matches!(both, Err(csf_build::BuildError::Quantize(QuantizeError::TooLarge { group: 0, .. }))),
        "{both:?}"
    );
}

/// An unsigned type without zero points holds no negative value: such a
/// group is refused (it would store every negative value as 0), while
/// non-negative groups and zero points are fine.
#[test]
fn negative_values_in_unsigned_symmetric_groups_are_refused() {
    let unsigned = |dtype| Quantize::PerBlock { block_size: 2, dtype, zero_point: false };
    for dtype in [ElementType::U4, ElementType::U8, ElementType::U16, ElementType::U32] {
        let result = four(&[1.0, 2.0, 3.0, -0.25], unsigned(dtype));
        assert!(
            matches!(result, Err(csf_build::BuildError::Quantize(QuantizeError::Negative { group: 1, value })) if value == -0.25),
            "{dtype:?}: {result:?}"
        );
        let built = four(&[1.0, 2.0, 3.0, 0.0], unsigned(dtype)).unwrap();
        assert_eq!(dequantized(&built).iter().filter(|v| **v < 0.0).count(), 0);
        let with_zero_point = Quantize::PerBlock { block_size: 2, dtype, zero_point: true };
        let built = four(&[1.0, 2.0, 3.0, -0.25], with_zero_point).unwrap();
        assert!(dequantized(&built)[3] < 0.0, "{dtype:?}");
    }
}

#[test]
fn a_huge_per_channel_axis_is_refused_not_allocated() {
    let shape = [1u64 << 36, 2, 2];
    let indices = [5, 1, 1, 7, 0, 0];
    let values = [1.0f64, 2.0];
    let coo = Coo::new(&shape, Indices::RowMajor(&indices), &values);
    let quantize = Quantize::PerChannel { axis: 0, dtype: ElementType::I8, zero_point: false };
    let options = Options { quantize: Some(quantize), ..Options::default() };
    assert!(matches!(build(&coo, &options), Err(csf_build::BuildError::Quantize(_))));
}

#[test]
fn dropped_zeros_still_have_their_coordinates_checked() {
    let shape = [2u64, 2, 2];
    let indices = [1, 1, 1, 5, 0, 0];
    let values = [1.0f64, 0.0];
    let coo = Coo::new(&shape, Indices::RowMajor(&indices), &values);
    for mode_order in [csf_build::ModeOrderPolicy::Identity, csf_build::ModeOrderPolicy::Auto] {
        let options = Options { drop_zeros: true, mode_order, ..Options::default() };
        assert!(matches!(build(&coo, &options), Err(csf_build::BuildError::OutOfBounds { entry: 1, .. })));
    }
}

/// The largest change re-ordering may make to the value at `index` (leaf
/// `leaf` of the re-ordered tensor): none where the parameters carry over,
/// the scheme's rounding error in the new group where it re-quantizes.
fn reorder_bound(after: &Built, leaf: usize, index: &[u64], was: f64) -> f64 {
    let view = after.tensor.view();
    let q = view.quantization().expect("still quantized");
    let param = q.scales.get_raw_f64(q.group(leaf, index).unwrap()).unwrap();
    match q.scheme {
        QuantScheme::PerTensor | QuantScheme::PerChannel => 0.0,
        QuantScheme::PerBlock => param / 2.0 * (1.0 + 1e-6) + was.abs() * 1e-6,
        // Half the widest gap of the NF4 table (between -1 and -0.696...).
        QuantScheme::Nf4 => param * 0.1520 + param.abs() * 1e-6,
        QuantScheme::Mxfp => {
            // Two steps of the format's top binade, at the block's scale: the
            // rounding, or the saturation above its largest finite value.
            let (emax, mantissa) = match view.element_type() {
                ElementType::F8E4M3 => (8, 3),
                ElementType::F8E5M2 => (15, 2),
                ElementType::F6E2M3 => (2, 3),
                ElementType::F6E3M2 => (4, 2),
                _ => (2, 1),
            };
            param * 2f64.powi(emax - mantissa) * 2.0
        }
    }
}

#[test]
fn reorder_keeps_every_quantized_value_within_the_schemes_bound() {
    let schemes = [
        Quantize::PerTensor { dtype: ElementType::I8, zero_point: false },
        Quantize::PerTensor { dtype: ElementType::U8, zero_point: true },
        Quantize::PerTensor { dtype: ElementType::F8E4M3, zero_point: false },
        Quantize::PerChannel { axis: 1, dtype: ElementType::I8, zero_point: false },
        Quantize::PerChannel { axis: 2, dtype: ElementType::I4, zero_point: true },
        Quantize::PerBlock { block_size: 32, dtype: ElementType::I8, zero_point: false },
        Quantize::PerBlock { block_size: 7, dtype: ElementType::U4, zero_point: true },
        Quantize::Nf4 { block_size: 64 },
        Quantize::Mxfp { dtype: ElementType::F8E4M3 },
        Quantize::Mxfp { dtype: ElementType::F8E5M2 },
        Quantize::Mxfp { dtype: ElementType::F6E2M3 },
        Quantize::Mxfp { dtype: ElementType::F6E3M2 },
        Quantize::Mxfp { dtype: ElementType::F4E2M1 },
    ];
    for (seed, spec) in schemes.into_iter().enumerate() {
        let (built, exact) = build_quantized(40 + seed as u64, spec);
        let before = built.tensor.view();
        for order in [vec![2, 0, 1], vec![1, 2, 0]] {
            let after = reorder(
                &before,
                &ReorderOptions { mode_order: ModeOrderPolicy::Explicit(order.clone()), parallel: false },
            )
            .unwrap();
            let view = after.tensor.view();
            assert_eq!(view.mode_order(), order.as_slice());
            let (q0, q1) = (
                before.quantization().unwrap(),
                view.quantization().unwrap_or_else(|| panic!("{spec:?}: quantization lost")),
            );
            assert_eq!((q1.scheme, view.element_type()), (q0.scheme, before.element_type()), "{spec:?}");
            assert_eq!(q1.zero_points.is_some(), q0.zero_points.is_some(), "{spec:?}");
            // The file is strictly valid, and reads back the same.
            let bytes = after.to_bytes(StatisticsSection::Include).unwrap();
            let read = csf_validate::validate(&Container::decode(&bytes).unwrap()).unwrap();
            let mut seen = 0;
            view.for_each(|index, leaf| {
                let was = f64::from(before.get_dequantized(index).unwrap());
                let now = f64::from(view.get_dequantized(index).unwrap());
                let bound = reorder_bound(&after, leaf, index, was);
                assert!(
                    (now - was).abs() <= bound,
                    "{spec:?} {order:?} at {index:?}: {was} -> {now} (bound {bound})"
                );
                assert_eq!(read.get_f64(index).unwrap(), now, "{spec:?}: get_f64 is the dequantized value");
                seen += 1;
            });
            assert_eq!(seen, exact.len(), "{spec:?}: every entry kept");
        }
    }
}

/// `values` at (0, 0, 1) and (1, 1, 1) of a 2x2x2 tensor, symmetric per-tensor i8.
fn two_per_tensor_i8(values: [f64; 2]) -> Built {
    let shape = [2u64, 2, 2];
    let indices = [0, 0, 1, 1, 1, 1];
    let coo = Coo::new(&shape, Indices::RowMajor(&indices), &values);
    let quantize = Quantize::PerTensor { dtype: ElementType::I8, zero_point: false };
    build(&coo, &Options { quantize: Some(quantize), ..Options::default() }).unwrap()
}

#[test]
fn reorder_of_a_per_tensor_tensor_keeps_the_codes_and_parameters() {
    // The report of issue 11: 100.0 read as 127.0 after a re-order.
    let built = two_per_tensor_i8([1.0, 100.0]);
    let view = built.tensor.view();
    assert_eq!(view.get_dequantized(&[1, 1, 1]).unwrap(), 100.0);
    let moved = reorder(
        &view,
        &ReorderOptions { mode_order: ModeOrderPolicy::Explicit(vec![2, 1, 0]), parallel: false },
    )
    .unwrap();
    let moved_view = moved.tensor.view();
    assert_eq!(moved_view.get_dequantized(&[1, 1, 1]).unwrap(), 100.0);
    assert_eq!(moved_view.get_f64(&[1, 1, 1]).unwrap(), 100.0);
    assert_eq!(moved_view.get_raw(&[1, 1, 1]).unwrap(), Some(csf_core::Value::I8(127)));
    assert_eq!(moved.tensor.quantization(), built.tensor.quantization(), "parameters carried over");
}

#[test]
fn obvious_accessors_give_values_and_raw_ones_give_codes() {
    // 39.0 is the largest magnitude, so its code is 127 with scale 39 / 127.
    let built = two_per_tensor_i8([-3.0, 39.0]);
    let view = built.tensor.view();
    assert_eq!(view.get_f64(&[1, 1, 1]).unwrap(), 39.0);
    assert_eq!(view.get(&[1, 1, 1]).unwrap(), Some(csf_core::Value::F32(39.0)));
    assert_eq!(view.get_raw(&[1, 1, 1]).unwrap(), Some(csf_core::Value::I8(127)));
    assert_eq!(view.values().get_raw_f64(1), Some(127.0));
    let entries: Vec<_> = view.entries::<3>().unwrap().map(|(_, v)| v.unwrap().to_f64()).collect();
    assert!((entries[0] + 3.0).abs() < 39.0 / 127.0 && entries[1] == 39.0, "{entries:?}");
    let mut cursor = view.cursor();
    assert!(cursor.advance() && cursor.advance());
    assert_eq!(
        (cursor.value(), cursor.value_raw()),
        (Some(csf_core::Value::F32(39.0)), Some(csf_core::Value::I8(127)))
    );
    let coo = view.to_coo(csf_core::CooOrder::Storage);
    assert_eq!(coo.values[1], Some(csf_core::Value::F32(39.0)));
    let dense = view.to_dense_f64(8).unwrap();
    assert_eq!(dense[7], 39.0);
    assert_eq!(view.to_dense::<f32>(8).unwrap()[7], 39.0);
    assert!(view.to_dense::<i8>(8).is_err(), "the values of a quantized tensor are f32, not its codes");
    // Statistics describe the values too.
    assert_eq!(built.statistics().max, Some(39.0));
}
