//! `from_dense` against a brute-force reference: every cell of a random
//! row-major array read one by one and kept by numpy's `nonzero` rule
//! (decoded by csf-core, not by the scan's bit tests), for every element
//! type it takes, every mode-order policy, NaN, `-0.0` and `drop_nan`; the
//! parallel scan's chunk boundaries (inside rows, across many short rows);
//! and each input it refuses.

use std::collections::BTreeMap;

use csf_build::{
    build, from_dense, BuildError, Coo, Dense, DenseOptions, Indices, ModeOrderPolicy, Options, Quantize,
};
use csf_core::{CsfView, Values};
use hurray_format::ElementType;
use proptest::prelude::*;

mod common;

/// The element types `from_dense` takes.
const TYPES: [ElementType; 12] = common::WHOLE_BYTE_TYPES;

fn width(ty: ElementType) -> usize {
    usize::from(ty.byte_width().expect("a whole-byte type"))
}

/// The bits of an element of `ty` picked by `pick`: zero most of the time,
/// the type's special values (`-0.0`, NaN, infinity, an all-ones integer)
/// often, random bits otherwise.
fn element(ty: ElementType, pick: u8, bits: u64) -> Vec<u8> {
    let w = width(ty);
    let word: u64 = match (ty, pick) {
        (_, 0..=5) => 0,
        (ElementType::F16, 6) => 0x8000,
        (ElementType::F16, 7) => 0x7e00 | (bits & 0x1ff),
        (ElementType::F16, 8) => 0xfc00,
        (ElementType::F32, 6) => 0x8000_0000,
        (ElementType::F32, 7) => 0x7fc0_0000 | (bits & 0xffff),
        (ElementType::F32, 8) => f32::INFINITY.to_bits().into(),
        (ElementType::F64, 6) => (-0.0f64).to_bits(),
        (ElementType::F64, 7) => f64::NAN.to_bits() | (bits & 0xffff),
        (ElementType::F64, 8) => f64::NEG_INFINITY.to_bits(),
        (ElementType::Bool, _) => 1 + bits % 255,
        (_, 6) => u64::MAX,
        _ => bits,
    };
    word.to_le_bytes()[..w].to_vec()
}

/// A value's bits as the tensor stores it (a bool byte as 0 or 1).
fn stored(ty: ElementType, bytes: &[u8]) -> String {
    format!("{:?}", Values::new(ty, bytes).get_raw(0).expect("one element"))
}

/// The kept cells of a row-major array, by logical index, decoded.
fn reference(shape: &[u64], ty: ElementType, values: &[u8], drop_nan: bool) -> BTreeMap<Vec<u64>, String> {
    let w = width(ty);
    let mut kept = BTreeMap::new();
    for (flat, cell) in values.chunks_exact(w).enumerate() {
        let v = Values::new(ty, cell).get_raw_f64(0).expect("one element");
        if v == 0.0 || (drop_nan && v.is_nan()) {
            continue;
        }
        let mut index = vec![0u64; shape.len()];
        let mut rest = flat as u64;
        for (d, &e) in shape.iter().enumerate().rev() {
            index[d] = rest % e;
            rest /= e;
        }
        kept.insert(index, stored(ty, cell));
    }
    kept
}

/// The tensor's entries, by logical index, decoded.
fn entries(view: &CsfView<'_>) -> BTreeMap<Vec<u64>, String> {
    let mut out = BTreeMap::new();
    view.for_each(|index, leaf| {
        let value = view.values().get_raw(leaf).expect("a value per leaf");
        assert!(out.insert(index.to_vec(), format!("{value:?}")).is_none(), "index {index:?} stored twice");
    });
    out
}

fn check(shape: &[u64], ty: ElementType, values: &[u8], options: &DenseOptions) {
    let dense = Dense { shape, element_type: ty, values };
    let built = from_dense(&dense, options).expect("builds");
    let view = built.tensor.view();
    csf_validate::validate_view(view).expect("strictly valid");
    assert_eq!(view.shape(), shape);
    assert_eq!(view.element_type(), ty);
    assert_eq!(built.removed, 0);
    match &options.mode_order {
        ModeOrderPolicy::Identity => {
            assert_eq!(view.mode_order(), (0..shape.len() as u32).collect::<Vec<_>>())
        }
        ModeOrderPolicy::Explicit(order) => assert_eq!(view.mode_order(), order.as_slice()),
        ModeOrderPolicy::Auto => assert!(built.auto.is_some()),
    }
    assert_eq!(entries(&view), reference(shape, ty, values, options.drop_nan));
    // The parallel scan and the sequential one make the same tensor.
    let other = DenseOptions { parallel: !options.parallel, ..options.clone() };
    assert_eq!(from_dense(&dense, &other).expect("builds").tensor, built.tensor);
}

/// A mode-order policy for rank `rank` from a shuffled order and a choice.
fn policy(order: Vec<u32>, choice: u8) -> ModeOrderPolicy {
    match choice {
        0 => ModeOrderPolicy::Identity,
        1 => ModeOrderPolicy::Auto,
        _ => ModeOrderPolicy::Explicit(order),
    }
}

fn array() -> impl Strategy<Value = (Vec<u64>, ElementType, Vec<u8>, Vec<u32>)> {
    (3usize..=5, 0..TYPES.len())
        .prop_flat_map(|(rank, ty)| {
            // A last dimension long enough, sometimes, for the scan's blocks of 16.
            let shape =
                (prop::collection::vec(0u64..=4, rank - 1), 0u64..=40).prop_map(|(mut shape, last)| {
                    shape.push(last);
                    shape
                });
            let order = Just((0..rank as u32).collect::<Vec<_>>()).prop_shuffle();
            (shape, Just(TYPES[ty]), order, prop::collection::vec((0u8..10, any::<u64>()), 0..=256))
        })
        .prop_map(|(shape, ty, order, cells)| {
            let n = shape.iter().product::<u64>() as usize;
            let values = (0..n).flat_map(|i| {
                let (pick, bits) = cells.get(i % cells.len().max(1)).copied().unwrap_or((0, 0));
                // Reused picks are varied by position, so that long arrays are not periodic.
                element(ty, pick, bits.rotate_left(i as u32))
            });
            (shape, ty, values.collect(), order)
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn keeps_exactly_the_non_zeros(
        (shape, ty, values, order) in array(),
        choice in 0u8..3,
        drop_nan in any::<bool>(),
        parallel in any::<bool>(),
    ) {
        let options = DenseOptions { mode_order: policy(order, choice), drop_nan, quantize: None, parallel };
        check(&shape, ty, &values, &options);
    }
}

/// Arrays larger than a chunk of the parallel scan (2^17 elements), cut
/// inside a row, across many rows of a few elements, and into a short last
/// chunk.
#[test]
fn chunk_boundaries_lose_and_repeat_nothing() {
    for shape in [[3u64, 3, 50_001], [70_001, 1, 3], [61, 67, 71]] {
        let n = shape.iter().product::<u64>() as usize;
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let values: Vec<u8> = (0..n)
            .flat_map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                let v = if state % 37 == 0 { (state >> 40) as f32 } else { 0.0 };
                v.to_le_bytes()
            })
            .collect();
        for policy in [ModeOrderPolicy::Identity, ModeOrderPolicy::Explicit(vec![2, 0, 1])] {
            check(
                &shape,
                ElementType::F32,
                &values,
                &DenseOptions { mode_order: policy, ..DenseOptions::default() },
            );
        }
    }
}

#[test]
fn nan_and_negative_zero_follow_numpy() {
    let cells = [0.0f64, -0.0, f64::NAN, 1.0, -f64::NAN, 0.0, -2.5, f64::INFINITY];
    let bytes: Vec<u8> = cells.iter().flat_map(|v| v.to_le_bytes()).collect();
    let dense = Dense { shape: &[2, 2, 2], element_type: ElementType::F64, values: &bytes };
    let kept = from_dense(&dense, &DenseOptions::default()).unwrap();
    assert_eq!(kept.tensor.view().nnz(), 5, "NaN is not zero, -0.0 is");
    let dropped = from_dense(&dense, &DenseOptions { drop_nan: true, ..DenseOptions::default() }).unwrap();
    let view = dropped.tensor.view();
    assert_eq!(view.nnz(), 3);
    assert_eq!(view.get_f64(&[1, 1, 1]).unwrap(), f64::INFINITY);
}

#[test]
fn empty_and_all_zero_arrays_give_empty_tensors() {
    for shape in [[0u64, 3, 4], [2, 0, 0], [2, 3, 4]] {
        let n = shape.iter().product::<u64>() as usize;
        let zeros: Vec<u8> =
            (0..n).flat_map(|i| if i % 2 == 0 { [0u8; 4] } else { [0, 0, 0, 0x80] }).collect();
        let dense = Dense { shape: &shape, element_type: ElementType::F32, values: &zeros };
        let built = from_dense(&dense, &DenseOptions::default()).unwrap();
        assert_eq!((built.tensor.view().nnz(), built.tensor.view().shape()), (0, &shape[..]));
        csf_validate::validate_view(built.tensor.view()).unwrap();
    }
}

/// Quantizing after the scan gives what building the same entries does.
#[test]
fn quantizes_as_the_builder_does() {
    let cells: Vec<f32> = (0..60).map(|i| if i % 3 == 0 { i as f32 * 0.25 - 4.0 } else { 0.0 }).collect();
    let bytes: Vec<u8> = cells.iter().flat_map(|v| v.to_le_bytes()).collect();
    let shape = [3u64, 4, 5];
    let spec = Quantize::PerTensor { dtype: ElementType::I8, zero_point: false };
    let dense = Dense { shape: &shape, element_type: ElementType::F32, values: &bytes };
    let got = from_dense(&dense, &DenseOptions { quantize: Some(spec), ..DenseOptions::default() }).unwrap();
    let mut indices = Vec::new();
    let mut values = Vec::new();
    for (flat, &v) in cells.iter().enumerate() {
        if v != 0.0 {
            indices.extend_from_slice(&[flat as u64 / 20, flat as u64 / 5 % 4, flat as u64 % 5]);
            values.push(v);
        }
    }
    let coo = Coo::new(&shape, Indices::RowMajor(&indices), &values);
    let want = build(&coo, &Options { quantize: Some(spec), ..Options::default() }).unwrap();
    assert_eq!(got.tensor, want.tensor);
}

#[test]
fn refuses_what_it_cannot_build() {
    let dense =
        |shape: &'static [u64], element_type, values: &'static [u8]| Dense { shape, element_type, values };
    let options = DenseOptions::default();
    let err = |d: Dense<'_>| from_dense(&d, &options).unwrap_err();
    static BYTES: [u8; 96] = [0; 96];
    assert_eq!(err(dense(&[4, 24], ElementType::F32, &BYTES)), BuildError::RankTooSmall { rank: 2 });
    assert_eq!(err(dense(&[1; 65], ElementType::F32, &BYTES[..4])), BuildError::RankTooLarge { rank: 65 });
    assert_eq!(
        err(dense(&[2, 3, 4], ElementType::F32, &BYTES[..95])),
        BuildError::LengthMismatch { what: "dense values (bytes)", found: 95, expected: 96 }
    );
    assert_eq!(
        err(dense(&[1 << 32, 1 << 32, 2], ElementType::U8, &BYTES)),
        BuildError::ShapeOverflow { shape: vec![1 << 32, 1 << 32, 2] }
    );
    assert_eq!(
        err(dense(&[1 << 31, 1 << 31, 4], ElementType::F64, &BYTES)),
        BuildError::ShapeOverflow { shape: vec![1 << 31, 1 << 31, 4] },
        "the byte count overflows"
    );
    for ty in [ElementType::BF16, ElementType::F8E4M3, ElementType::I4, ElementType::NF4] {
        assert_eq!(
            err(dense(&[2, 3, 4], ty, &BYTES)),
            BuildError::UnsupportedType { operation: "from_dense", element_type: ty }
        );
    }
    let bad_order =
        DenseOptions { mode_order: ModeOrderPolicy::Explicit(vec![0, 0, 1]), ..DenseOptions::default() };
    assert_eq!(
        from_dense(&dense(&[2, 3, 4], ElementType::F32, &BYTES), &bad_order).unwrap_err(),
        BuildError::BadModeOrder { order: vec![0, 0, 1], rank: 3 }
    );
}
