//! Quantizing while building (docs/format.md § 5.7): error bounds against the
//! float input, the published tables, and strict validity of the files.

use csf_build::{build, Built, Coo, Duplicates, Indices, Options, Quantize};
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
        exact.push((index.to_vec(), plain.tensor.view().values().get_f64(leaf).unwrap()))
    });
    let options = Options { duplicates: Duplicates::Last, quantize: Some(quantize), ..Options::default() };
    let built = build(&coo, &options).unwrap();
    // Every quantized file is strictly valid, and reads back the same after a round trip.
    let bytes = built.to_bytes(true).unwrap();
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
    q.scales.get_f64(q.group(leaf, index).unwrap()).unwrap() as f32
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
        let absmax = q.scales.get_f64(leaf / 64).unwrap();
        let csf_core::Value::Nf4(code) = view.values().get(leaf).unwrap() else { panic!("not nf4") };
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
            let csf_core::Value::E8M0(code) = q.scales.get(b).unwrap() else { panic!("not e8m0") };
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
    for mode_order in [csf_build::ModeOrder::Identity, csf_build::ModeOrder::Auto] {
        let options = Options { drop_zeros: true, mode_order, ..Options::default() };
        assert!(matches!(build(&coo, &options), Err(csf_build::BuildError::OutOfBounds { entry: 1, .. })));
    }
}
