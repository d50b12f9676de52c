//! `sum_axes` against a brute-force reference: the tensor's entries, walked
//! in leaf order, added into a sorted map keyed by the kept coordinates, for
//! every subset of the axes of random tensors (ranks 3 to 5, random mode
//! orders, each summable type, NaN, `-0.0`, explicit zeros, integers that
//! wrap, empty tensors); the results' types, shapes and mode orders; each
//! refusal; and hostile (permissively read) tensors, which never panic.

use std::collections::BTreeMap;

use csf_build::{
    build, quantize, sum_axes, BuildError, Built, Coo, Duplicates, Indices, ModeOrderPolicy, Options,
    Quantize, Reduced,
};
use csf_core::{CsfView, Value};
use csf_testdata::Tree;
use hurray_format::ElementType;
use proptest::prelude::*;

mod common;
use common::hostile;

const TYPES: [ElementType; 4] = [ElementType::I64, ElementType::U64, ElementType::F32, ElementType::F64];

/// A sum in the reference: integers wrap, floats add in `f64` or `f32` as
/// the type does. Kept as bits, compared exactly.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Acc {
    I(i64),
    U(u64),
    F32(u32),
    F64(u64),
}

impl Acc {
    fn zero(ty: ElementType) -> Self {
        match ty {
            ElementType::I64 => Acc::I(0),
            ElementType::U64 => Acc::U(0),
            ElementType::F32 => Acc::F32(0f32.to_bits()),
            _ => Acc::F64(0f64.to_bits()),
        }
    }

    fn of(value: Value) -> Self {
        match value {
            Value::I64(v) => Acc::I(v),
            Value::U64(v) => Acc::U(v),
            Value::F32(v) => Acc::F32(v.to_bits()),
            Value::F64(v) => Acc::F64(v.to_bits()),
            other => panic!("not an accumulator type: {other:?}"),
        }
    }

    fn plus(self, other: Acc) -> Self {
        match (self, other) {
            (Acc::I(a), Acc::I(b)) => Acc::I(a.wrapping_add(b)),
            (Acc::U(a), Acc::U(b)) => Acc::U(a.wrapping_add(b)),
            (Acc::F32(a), Acc::F32(b)) => Acc::F32((f32::from_bits(a) + f32::from_bits(b)).to_bits()),
            (Acc::F64(a), Acc::F64(b)) => Acc::F64((f64::from_bits(a) + f64::from_bits(b)).to_bits()),
            _ => panic!("mixed types"),
        }
    }

    fn from_le(ty: ElementType, bytes: &[u8]) -> Self {
        Acc::of(csf_core::Values::new(ty, bytes).get_raw(0).unwrap())
    }
}

/// The reference: the sums by kept coordinates, in leaf order. A tensor
/// result's sums start from the first value (as the builder's merge does),
/// a dense one's from zero (as its accumulator does).
fn reference(view: &CsfView<'_>, kept: &[usize], from_zero: bool) -> BTreeMap<Vec<u64>, Acc> {
    let ty = if view.quantization().is_some() { ElementType::F32 } else { view.element_type() };
    let mut sums = BTreeMap::new();
    view.for_each(|index, leaf| {
        let v = Acc::of(view.value(leaf, index).unwrap());
        let key: Vec<u64> = kept.iter().map(|&d| index[d]).collect();
        sums.entry(key).and_modify(|s: &mut Acc| *s = s.plus(v)).or_insert(if from_zero {
            Acc::zero(ty).plus(v)
        } else {
            v
        });
    });
    sums
}

fn check(view: &CsfView<'_>, axes: &[usize], parallel: bool) {
    let rank = view.rank();
    let kept: Vec<usize> = (0..rank).filter(|d| !axes.contains(d)).collect();
    let shape: Vec<u64> = kept.iter().map(|&d| view.shape()[d]).collect();
    let ty = if view.quantization().is_some() { ElementType::F32 } else { view.element_type() };
    let width = usize::from(ty.byte_width().unwrap());
    match sum_axes(view, axes, u64::MAX, parallel).unwrap() {
        Reduced::Dense { shape: got_shape, values } => {
            assert!(kept.len() < 3, "rank {} as dense", kept.len());
            assert_eq!(got_shape, shape);
            let want = reference(view, &kept, true);
            let count = shape.iter().product::<u64>() as usize;
            assert_eq!(values.len(), count * width);
            for (flat, cell) in values.chunks_exact(width).enumerate() {
                let mut index = vec![0u64; shape.len()];
                let mut rest = flat as u64;
                for (d, &e) in shape.iter().enumerate().rev() {
                    index[d] = rest % e;
                    rest /= e;
                }
                let expected = want.get(&index).copied().unwrap_or(Acc::zero(ty));
                assert_eq!(Acc::from_le(ty, cell), expected, "axes {axes:?}, cell {index:?}");
            }
        }
        Reduced::Tensor(built) => {
            assert!(kept.len() >= 3, "rank {} as a tensor", kept.len());
            let out = built.tensor.view();
            csf_validate::validate_view(out).expect("strictly valid");
            assert_eq!(out.shape(), shape.as_slice());
            assert_eq!(out.element_type(), ty);
            let order: Vec<u32> = view
                .mode_order()
                .iter()
                .filter(|&&d| kept.contains(&(d as usize)))
                .map(|&d| kept.iter().position(|&k| k == d as usize).unwrap() as u32)
                .collect();
            assert_eq!(out.mode_order(), order.as_slice());
            let mut got = BTreeMap::new();
            out.for_each(|index, leaf| {
                got.insert(index.to_vec(), Acc::of(out.value(leaf, index).unwrap()));
            });
            assert_eq!(got, reference(view, &kept, false), "axes {axes:?}");
            let walked = {
                let mut n = 0u64;
                view.for_each(|_, _| n += 1);
                n
            };
            assert_eq!(built.removed, walked - out.nnz());
        }
    }
}

/// Random values of `ty`: small and huge integers (so that sums wrap),
/// NaN, `-0.0`, zeros (stored explicitly).
fn value_bytes(ty: ElementType, pick: u8, random: u64) -> Vec<u8> {
    let v: u64 = match (ty, pick) {
        (_, 0) => 0,
        (ElementType::F32, 1) => (-0.0f32).to_bits().into(),
        (ElementType::F32, 2) => f32::NAN.to_bits().into(),
        (ElementType::F32, _) => ((random % 2001) as f32 / 8.0 - 125.0).to_bits().into(),
        (ElementType::F64, 1) => (-0.0f64).to_bits(),
        (ElementType::F64, 2) => f64::NAN.to_bits(),
        (ElementType::F64, 3) => random,
        (ElementType::F64, _) => ((random % 2001) as f64 / 3.0 - 333.0).to_bits(),
        (_, 1 | 2) => u64::MAX - random % 3,
        (_, _) => random % 100,
    };
    v.to_le_bytes()[..usize::from(ty.byte_width().unwrap())].to_vec()
}

fn tensor() -> impl Strategy<Value = Built> {
    (3usize..=5, 0..TYPES.len())
        .prop_flat_map(|(rank, ty)| {
            let shape = prop::collection::vec(1u64..=4, rank);
            let order = Just((0..rank as u32).collect::<Vec<_>>()).prop_shuffle();
            (
                shape,
                Just(TYPES[ty]),
                order,
                prop::collection::vec((any::<u64>(), 0u8..6, any::<u64>()), 0..60),
            )
        })
        .prop_map(|(shape, ty, order, raw)| {
            let mut indices = Vec::new();
            let mut values = Vec::new();
            for (at, pick, random) in raw {
                let mut rest = at;
                for &e in &shape {
                    indices.push(rest % e);
                    rest /= e;
                }
                values.extend(value_bytes(ty, pick, random));
            }
            let coo = Coo {
                shape: &shape,
                indices: Indices::RowMajor(&indices),
                element_type: ty,
                values: values.into(),
            };
            let options = Options {
                mode_order: ModeOrderPolicy::Explicit(order),
                duplicates: Duplicates::Last,
                ..Options::default()
            };
            build(&coo, &options).unwrap()
        })
}

/// Every subset of `0..rank`, as sorted axes.
fn subsets(rank: usize) -> impl Iterator<Item = Vec<usize>> {
    (0u32..1 << rank).map(move |bits| (0..rank).filter(|d| bits & (1 << d) != 0).collect())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn sums_over_every_subset_of_axes(built in tensor(), parallel in any::<bool>()) {
        let view = built.tensor.view();
        for axes in subsets(view.rank()) {
            check(&view, &axes, parallel);
        }
    }

    /// One word of a `pos`/`crd` array, the mode order or a value byte of a
    /// valid tensor changed: a result or an error, never a panic.
    #[test]
    fn hostile_tensors_never_panic(
        built in tensor(),
        level in any::<prop::sample::Index>(),
        word in any::<prop::sample::Index>(),
        flip in any::<u64>(),
        what in 0u8..4,
    ) {
        let bytes = hostile(&built, level, word, flip, what);
        let Ok(h) = csf_validate::read_permissive(&bytes) else { return Ok(()) };
        for axes in subsets(h.rank()) {
            let _ = sum_axes(&h, &axes, 1 << 12, true);
        }
    }
}

fn f64_tensor(shape: &[u64], indices: &[u64], values: &[f64], order: Vec<u32>) -> Built {
    let coo = Coo::new(shape, Indices::RowMajor(indices), values);
    build(&coo, &Options { mode_order: ModeOrderPolicy::Explicit(order), ..Options::default() }).unwrap()
}

fn dense_f64(reduced: Reduced) -> (Vec<u64>, Vec<f64>) {
    match reduced {
        Reduced::Dense { shape, values } => {
            (shape, values.chunks_exact(8).map(|b| f64::from_le_bytes(b.try_into().unwrap())).collect())
        }
        Reduced::Tensor(_) => panic!("a tensor"),
    }
}

#[test]
fn results_of_rank_0_to_2_are_dense() {
    let t =
        f64_tensor(&[2, 3, 4], &[0, 0, 1, 0, 2, 3, 1, 1, 0, 1, 1, 2], &[1.0, 2.0, 3.0, 4.0], vec![2, 0, 1]);
    let view = t.tensor.view();
    assert_eq!(dense_f64(sum_axes(&view, &[0, 1, 2], 1, false).unwrap()), (vec![], vec![10.0]));
    assert_eq!(dense_f64(sum_axes(&view, &[1, 2], 2, false).unwrap()), (vec![2], vec![3.0, 7.0]));
    assert_eq!(
        dense_f64(sum_axes(&view, &[0], 12, false).unwrap()),
        (vec![3, 4], vec![0.0, 1.0, 0.0, 0.0, 3.0, 0.0, 4.0, 0.0, 0.0, 0.0, 0.0, 2.0])
    );
    // An empty tensor sums to zeros.
    let empty = f64_tensor(&[2, 3, 4], &[], &[], vec![0, 1, 2]);
    assert_eq!(dense_f64(sum_axes(&empty.tensor.view(), &[0, 2], 3, true).unwrap()), (vec![3], vec![0.0; 3]));
}

#[test]
fn tensors_keep_the_restricted_mode_order() {
    let shape = [2u64, 3, 4, 5];
    let indices = [0, 0, 1, 2, 1, 2, 3, 4, 1, 1, 3, 4, 0, 2, 1, 2];
    let t = f64_tensor(&shape, &indices, &[1.0, 2.0, 4.0, 8.0], vec![2, 0, 3, 1]);
    let Reduced::Tensor(built) = sum_axes(&t.tensor.view(), &[1], 0, true).unwrap() else { panic!("dense") };
    let view = built.tensor.view();
    assert_eq!((view.shape(), view.mode_order()), (&[2u64, 4, 5][..], &[1u32, 0, 2][..]));
    assert_eq!(view.get_f64(&[0, 1, 2]).unwrap(), 9.0);
    assert_eq!(view.get_f64(&[1, 3, 4]).unwrap(), 6.0);
    assert_eq!((view.nnz(), built.removed), (2, 2));
    // Explicit zeros stay stored, as zeros.
    let zeros = f64_tensor(&shape, &indices, &[0.0, -0.0, 0.0, 0.0], vec![0, 1, 2, 3]);
    let Reduced::Tensor(built) = sum_axes(&zeros.tensor.view(), &[1], 0, false).unwrap() else {
        panic!("dense")
    };
    assert_eq!(built.tensor.view().nnz(), 2);
    assert_eq!(built.tensor.view().get_f64(&[1, 3, 4]).unwrap(), 0.0);
}

#[test]
fn integers_wrap() {
    let coo = Coo::new(&[1, 1, 2], Indices::RowMajor(&[0, 0, 0, 0, 0, 1]), &[u64::MAX, 3]);
    let t = build(&coo, &Options::default()).unwrap();
    let Reduced::Dense { values, .. } = sum_axes(&t.tensor.view(), &[2], 1, false).unwrap() else { panic!() };
    assert_eq!(values, 2u64.to_le_bytes());
    let coo = Coo::new(&[1, 1, 2], Indices::RowMajor(&[0, 0, 0, 0, 0, 1]), &[i64::MIN, -1]);
    let t = build(&coo, &Options::default()).unwrap();
    let Reduced::Dense { values, .. } = sum_axes(&t.tensor.view(), &[0, 1, 2], 1, false).unwrap() else {
        panic!()
    };
    assert_eq!(values, i64::MAX.to_le_bytes());
}

/// A quantized tensor sums its dequantized values, as `f32`.
#[test]
fn quantized_tensors_sum_their_values() {
    let shape = [3u64, 4, 50];
    let mut indices = Vec::new();
    let mut values = Vec::new();
    for i in 0..150u64 {
        indices.extend_from_slice(&[i % 3, i * 7 % 4, i * 13 % 50]);
        values.push((i as f32 - 70.0) / 4.0);
    }
    let plain = build(
        &Coo::new(&shape, Indices::RowMajor(&indices), &values),
        &Options { duplicates: Duplicates::Last, ..Options::default() },
    )
    .unwrap();
    for spec in [
        Quantize::PerTensor { dtype: ElementType::I8, zero_point: false },
        Quantize::PerBlock { block_size: 16, dtype: ElementType::I4, zero_point: true },
    ] {
        let q = quantize(plain.tensor.clone(), spec).unwrap();
        let built = Built { tensor: q, auto: None, removed: 0 };
        for axes in subsets(3) {
            check(&built.tensor.view(), &axes, true);
        }
    }
}

#[test]
fn refusals() {
    let t = f64_tensor(&[2, 3, 4], &[0, 0, 1], &[1.0], vec![0, 1, 2]);
    let view = t.tensor.view();
    for axes in [&[1usize, 0][..], &[1, 1], &[3], &[0, 1, 2, 3]] {
        assert_eq!(
            sum_axes(&view, axes, 100, false).unwrap_err(),
            BuildError::BadAxes { axes: axes.to_vec(), rank: 3 }
        );
    }
    assert_eq!(
        sum_axes(&view, &[0], 11, false).unwrap_err(),
        BuildError::TooManyElements { shape: vec![3, 4], max_elements: 11 }
    );
    let huge = f64_tensor(&[1 << 40, 1 << 40, 2], &[0, 0, 1], &[1.0], vec![0, 1, 2]);
    assert_eq!(
        sum_axes(&huge.tensor.view(), &[2], u64::MAX, false).unwrap_err(),
        BuildError::TooManyElements { shape: vec![1 << 40, 1 << 40], max_elements: u64::MAX },
        "2^80 elements overflow the count"
    );
    let ints =
        build(&Coo::new(&[2, 3, 4], Indices::RowMajor(&[0, 0, 1]), &[7i32]), &Options::default()).unwrap();
    assert_eq!(
        sum_axes(&ints.tensor.view(), &[0], 100, false).unwrap_err(),
        BuildError::UnsupportedType { operation: "sum", element_type: ElementType::I32 }
    );
    // Hostile: a mode order that is not a permutation, a coordinate outside
    // the shape, a leaf past nnz.
    let spec = |edit: fn(&mut Tree)| Tree::spec_example().with(edit);
    let bad = spec(|t| t.mode_order = vec![0, 0, 2]).encode();
    assert_eq!(
        sum_axes(&csf_validate::read_permissive(&bad).unwrap(), &[0], 100, false).unwrap_err(),
        BuildError::BadModeOrder { order: vec![0, 0, 2], rank: 3 }
    );
    let outside = spec(|t| *t.crd(2) = vec![1, 3, 0, 9]).encode();
    for axes in [&[0usize][..], &[2]] {
        assert_eq!(
            sum_axes(&csf_validate::read_permissive(&outside).unwrap(), axes, 100, false).unwrap_err(),
            BuildError::OutOfBounds { entry: 3, dim: 2, coord: 9, extent: 4 }
        );
    }
    let short = spec(|t| {
        t.nnz = 3;
        t.values.truncate(12);
    })
    .encode();
    for axes in [&[0usize][..], &[]] {
        assert_eq!(
            sum_axes(&csf_validate::read_permissive(&short).unwrap(), axes, 100, false).unwrap_err(),
            BuildError::MissingValue { leaf: 3 }
        );
    }
}

/// Tensors past the builder's small-input path (its radix sort, the
/// presorted walk and the adopted input), in every mode order of rank 4:
/// `f32` sums whose rounding depends on the order of the additions.
#[test]
fn large_tensors_in_every_order_add_in_leaf_order() {
    let shape = [9u64, 11, 13, 7];
    let coo = csf_testdata::synthetic(&shape, 6_000, csf_testdata::Distribution::Uniform, 17);
    let mut rng = csf_testdata::Rng::new(5);
    let values: Vec<f32> = coo.values.iter().map(|_| (rng.next_f64() * 2e3 - 1e3) as f32 / 7.0).collect();
    for (n, order) in csf_testdata::permutations(4).into_iter().enumerate() {
        let options = Options {
            mode_order: ModeOrderPolicy::Explicit(order),
            duplicates: Duplicates::First,
            ..Options::default()
        };
        let built = build(&Coo::new(&shape, Indices::RowMajor(&coo.indices), &values), &options).unwrap();
        for axes in subsets(4) {
            check(&built.tensor.view(), &axes, n % 2 == 0);
        }
    }
}
