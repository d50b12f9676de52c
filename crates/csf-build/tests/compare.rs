//! `equal` against a brute-force reference: two random tensors' dense
//! contents (their non-zero cells, NaN equal to NaN, `-0.0` to `+0.0`)
//! compared as sorted maps. The pairs differ in mode order, explicit zeros,
//! the sign of zeros, quantization, and sometimes in one cell; hostile
//! (permissively read) tensors give an answer or an error, never a panic.

use std::collections::BTreeMap;

use csf_build::{
    build, equal, quantize, BuildError, Built, Coo, Indices, ModeOrderPolicy, Options, Quantize,
    StatisticsSection,
};
use csf_core::{CsfView, Value};
use csf_testdata::Tree;
use hurray_format::ElementType;
use proptest::prelude::*;

mod common;
use common::{hostile, WHOLE_BYTE_TYPES as TYPES};

/// A cell's value as a comparable key: integers exactly, floats by their
/// bits with every NaN one key and `-0.0` as `+0.0`.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Key {
    Int(i128),
    Float(u64),
}

fn key(value: Value) -> Key {
    match value {
        Value::Bool(v) => Key::Int(v.into()),
        Value::I8(v) => Key::Int(v.into()),
        Value::I16(v) => Key::Int(v.into()),
        Value::I32(v) => Key::Int(v.into()),
        Value::I64(v) => Key::Int(v.into()),
        Value::U8(v) => Key::Int(v.into()),
        Value::U16(v) => Key::Int(v.into()),
        Value::U32(v) => Key::Int(v.into()),
        Value::U64(v) => Key::Int(v.into()),
        other => {
            let f = other.to_f64();
            Key::Float(if f.is_nan() { f64::NAN.to_bits() } else { (f + 0.0).to_bits() })
        }
    }
}

fn is_zero(value: Value) -> bool {
    value.to_f64() == 0.0
}

/// The dense contents: every non-zero cell.
fn contents(view: &CsfView<'_>) -> BTreeMap<Vec<u64>, Key> {
    let mut out = BTreeMap::new();
    view.for_each(|index, leaf| {
        let value = view.value(leaf, index).expect("a value per leaf");
        if !is_zero(value) {
            out.insert(index.to_vec(), key(value));
        }
    });
    out
}

/// The element bits `pick` names for `ty`: zero (both signs), NaN, or random.
fn bits(ty: ElementType, pick: u8, random: u64) -> u64 {
    let float = |zero: u64, neg: u64, nan: u64| match pick {
        0 => zero,
        1 => neg,
        2 => nan,
        _ => random,
    };
    match ty {
        ElementType::F16 => float(0, 0x8000, 0x7e00),
        ElementType::F32 => float(0, 0x8000_0000, 0x7fc0_0001),
        ElementType::F64 => float(0, 1 << 63, f64::NAN.to_bits()),
        ElementType::Bool => u64::from(pick > 1),
        _ if pick < 2 => 0,
        // Few distinct values, so that a changed cell may still be equal.
        _ => random % 4,
    }
}

fn build_of(shape: &[u64], ty: ElementType, cells: &BTreeMap<Vec<u64>, u64>, order: &[u32]) -> Built {
    let w = usize::from(ty.byte_width().unwrap());
    let indices: Vec<u64> = cells.keys().flatten().copied().collect();
    let values: Vec<u8> = cells.values().flat_map(|v| v.to_le_bytes()[..w].to_vec()).collect();
    let coo = Coo { shape, indices: Indices::RowMajor(&indices), element_type: ty, values: values.into() };
    let options = Options { mode_order: ModeOrderPolicy::Explicit(order.to_vec()), ..Options::default() };
    build(&coo, &options).unwrap()
}

#[derive(Clone, Debug)]
struct Pair {
    shape: Vec<u64>,
    ty: ElementType,
    a: BTreeMap<Vec<u64>, u64>,
    b: BTreeMap<Vec<u64>, u64>,
    order_a: Vec<u32>,
    order_b: Vec<u32>,
}

/// Two tensors of one shape and type with the same contents up to stored
/// zeros and the sign of zeros, then (when `change`) one cell of `b` set
/// to other bits.
fn pair() -> impl Strategy<Value = Pair> {
    (3usize..=5, 0..TYPES.len())
        .prop_flat_map(|(rank, ty)| {
            let shape = prop::collection::vec(1u64..=4, rank);
            let order = || Just((0..rank as u32).collect::<Vec<_>>()).prop_shuffle();
            let cells = prop::collection::vec((any::<u64>(), 0u8..6, any::<u64>(), 0u8..4), 0..40);
            (shape, Just(TYPES[ty]), order(), order(), cells, any::<bool>(), any::<bool>(), any::<u64>())
        })
        .prop_map(|(shape, ty, order_a, order_b, cells, same_order, change, changed)| {
            let (mut a, mut b) = (BTreeMap::new(), BTreeMap::new());
            for (at, pick, random, zeros) in cells {
                let mut rest = at;
                let index: Vec<u64> = shape
                    .iter()
                    .map(|&e| {
                        let c = rest % e;
                        rest /= e;
                        c
                    })
                    .collect();
                let v = bits(ty, pick, random);
                if pick < 2 {
                    // A zero: stored in a, in b, in both (with either sign), or in neither.
                    if zeros & 1 == 1 {
                        a.insert(index.clone(), v);
                    }
                    if zeros & 2 == 2 {
                        b.insert(index, bits(ty, pick ^ 1, random));
                    }
                } else {
                    a.insert(index.clone(), v);
                    b.insert(index, v);
                }
            }
            if change && !b.is_empty() {
                let at = (changed % b.len() as u64) as usize;
                if let Some(v) = b.values_mut().nth(at) {
                    *v = bits(ty, (changed >> 8) as u8 % 6, changed >> 16);
                }
            }
            let order_b = if same_order { order_a.clone() } else { order_b };
            Pair { shape, ty, a, b, order_a, order_b }
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1024, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn agrees_with_the_dense_contents(pair in pair()) {
        let a = build_of(&pair.shape, pair.ty, &pair.a, &pair.order_a);
        let b = build_of(&pair.shape, pair.ty, &pair.b, &pair.order_b);
        let (a, b) = (a.tensor.view(), b.tensor.view());
        let want = contents(&a) == contents(&b);
        prop_assert_eq!(equal(&a, &b).unwrap(), want);
        prop_assert_eq!(equal(&b, &a).unwrap(), want);
        prop_assert!(equal(&a, &a).unwrap());
    }

    /// One word of a `pos`/`crd` array, one byte of the values, the mode
    /// order or `nnz` of a valid tensor changed: `equal` gives the answer
    /// or an error, never a panic, whichever side the hostile tensor is on.
    #[test]
    fn hostile_tensors_never_panic(
        pair in pair(),
        level in any::<prop::sample::Index>(),
        word in any::<prop::sample::Index>(),
        flip in any::<u64>(),
        what in 0u8..5,
    ) {
        let a = build_of(&pair.shape, pair.ty, &pair.a, &pair.order_a);
        let b = build_of(&pair.shape, pair.ty, &pair.b, &pair.order_b);
        let bytes = hostile(&a, level, word, flip, what);
        let Ok(h) = csf_validate::read_permissive(&bytes) else { return Ok(()) };
        let (a, b) = (a.tensor.view(), b.tensor.view());
        for (x, y) in [(&h, &a), (&a, &h), (&h, &b), (&b, &h), (&h, &h)] {
            let _ = equal(x, y);
        }
        // Whatever it answers about the tensor and itself when its walk
        // holds no error is `true`.
        if let Ok(same) = equal(&h, &h) {
            prop_assert!(same);
        }
    }
}

/// The spec's example file with leaf coordinates `crd2` and `nnz`.
fn spec_tree(crd2: &[u64], nnz: u64) -> Vec<u8> {
    spec_tree_with(crd2, nnz, |_| {})
}

fn spec_tree_with(crd2: &[u64], nnz: u64, edit: impl FnOnce(&mut Tree)) -> Vec<u8> {
    Tree::spec_example()
        .with(|t| {
            *t.crd(2) = crd2.to_vec();
            t.nnz = nnz;
            edit(t);
        })
        .encode()
}

/// The spec's example (f32 1 to 4 at (0,0,1), (0,2,3), (1,1,0), (1,1,2)).
fn spec() -> Built {
    let coo = Coo::new(
        &[2, 3, 4],
        Indices::RowMajor(&[0, 0, 1, 0, 2, 3, 1, 1, 0, 1, 1, 2]),
        &[1.0f32, 2.0, 3.0, 4.0],
    );
    build(&coo, &Options::default()).unwrap()
}

#[test]
fn hostile_orders_are_sorted_or_refused() {
    let valid = spec();
    let valid = valid.tensor.view();
    // The last leaf fiber's two coordinates swapped: out of order, the same
    // entries: sorted, then equal.
    let swapped = spec_tree(&[1, 3, 2, 0], 4);
    let swapped = csf_validate::read_permissive(&swapped).unwrap();
    // Leaf 2 holds 3.0 at (1,1,2), leaf 3 holds 4.0 at (1,1,0): not the spec's.
    assert!(!equal(&valid, &swapped).unwrap());
    let fixed = spec_tree_with(&[1, 3, 2, 0], 4, |t| {
        t.values = [1.0f32, 2.0, 4.0, 3.0].iter().flat_map(|v| v.to_le_bytes()).collect();
    });
    let fixed = csf_validate::read_permissive(&fixed).unwrap();
    assert!(equal(&valid, &fixed).unwrap(), "the same entries, stored out of order");
    assert!(equal(&fixed, &valid).unwrap());
    // An index stored twice is refused, not compared.
    let twice = spec_tree(&[1, 3, 2, 2], 4);
    let twice = csf_validate::read_permissive(&twice).unwrap();
    assert!(matches!(equal(&valid, &twice), Err(BuildError::Duplicate { .. })));
    // A leaf past nnz has no value.
    let short = spec_tree_with(&[1, 3, 0, 2], 3, |t| t.values.truncate(12));
    let short = csf_validate::read_permissive(&short).unwrap();
    assert_eq!(equal(&valid, &short), Err(BuildError::MissingValue { leaf: 3 }));
    // A coordinate outside the shape.
    let outside = spec_tree(&[1, 3, 0, 9], 4);
    let outside = csf_validate::read_permissive(&outside).unwrap();
    assert_eq!(
        equal(&outside, &valid),
        Err(BuildError::OutOfBounds { entry: 3, dim: 2, coord: 9, extent: 4 })
    );
    // A mode order that is not a permutation.
    let bad = Tree::spec_example().with(|t| t.mode_order = vec![0, 0, 2]).encode();
    assert_eq!(
        equal(&valid, &csf_validate::read_permissive(&bad).unwrap()),
        Err(BuildError::BadModeOrder { order: vec![0, 0, 2], rank: 3 })
    );
}

/// A quantized tensor equals the plain tensor of its dequantized values,
/// in any order, whatever the scheme (block schemes included, which
/// `reorder` would re-quantize), and not once a value differs.
#[test]
fn quantized_tensors_compare_by_their_values() {
    let shape = [5u64, 6, 70];
    let mut indices = Vec::new();
    let mut values = Vec::new();
    for i in 0..400u64 {
        let index = [i * 7 % 5, i * 11 % 6, i * 13 % 70];
        indices.extend_from_slice(&index);
        values.push(((i * 37 % 101) as f32 - 50.0) / 8.0);
    }
    let options = Options { duplicates: csf_build::Duplicates::Last, ..Options::default() };
    let plain = build(&Coo::new(&shape, Indices::RowMajor(&indices), &values), &options).unwrap();
    let schemes = [
        Quantize::PerTensor { dtype: ElementType::I8, zero_point: false },
        Quantize::PerChannel { axis: 1, dtype: ElementType::I8, zero_point: true },
        Quantize::PerBlock { block_size: 16, dtype: ElementType::I4, zero_point: false },
        Quantize::Nf4 { block_size: 32 },
        Quantize::Mxfp { dtype: ElementType::F8E4M3 },
    ];
    let in_order = |view: &CsfView<'_>, order: Vec<u32>| {
        let mut indices = Vec::new();
        let mut values = Vec::new();
        view.for_each(|index, leaf| {
            indices.extend_from_slice(index);
            values.push(view.value_f32(leaf, index).unwrap());
        });
        let coo = Coo::new(&shape, Indices::RowMajor(&indices), &values);
        build(&coo, &Options { mode_order: ModeOrderPolicy::Explicit(order), ..Options::default() }).unwrap()
    };
    let quantized: Vec<Built> = schemes
        .iter()
        .map(|&spec| Built { tensor: quantize(plain.tensor.clone(), spec).unwrap(), auto: None, removed: 0 })
        .collect();
    for (spec, q) in schemes.iter().zip(&quantized) {
        let view = q.tensor.view();
        for order in [vec![0, 1, 2], vec![2, 0, 1], vec![1, 2, 0]] {
            let dequantized = in_order(&view, order.clone());
            assert!(equal(&view, &dequantized.tensor.view()).unwrap(), "{spec:?} against f32 in {order:?}");
            assert!(equal(&dequantized.tensor.view(), &view).unwrap(), "{spec:?}, the other way");
            // Quantized in another order: the values of the reordered file.
            let moved = csf_build::reorder(
                &view,
                &csf_build::ReorderOptions {
                    mode_order: ModeOrderPolicy::Explicit(order.clone()),
                    parallel: false,
                },
            )
            .unwrap();
            let moved_values = in_order(&moved.tensor.view(), vec![0, 1, 2]);
            assert!(equal(&moved.tensor.view(), &moved_values.tensor.view()).unwrap(), "{spec:?} reordered");
        }
        // One value changed.
        let mut changed = in_order(&view, vec![1, 0, 2]).to_bytes(StatisticsSection::Omit).unwrap();
        let offset = {
            let container = hurray_format::Container::decode(&changed).unwrap();
            let values = container.buffers().next().unwrap();
            values.as_ptr() as usize - changed.as_ptr() as usize
        };
        changed[offset + 1] ^= 0x40;
        let changed = csf_validate::read(&changed).unwrap();
        assert!(!equal(&view, &changed).unwrap(), "{spec:?}: a changed value");
    }
    // Two block-quantized tensors in different orders.
    let a = &quantized[2];
    let moved = in_order(&a.tensor.view(), vec![2, 1, 0]);
    let requantized = quantize(moved.tensor, schemes[2]).unwrap();
    // Re-quantizing in another order regroups the blocks: compare with the
    // values of what it stored.
    let again = in_order(&requantized.view(), vec![0, 2, 1]);
    assert!(equal(&requantized.view(), &again.tensor.view()).unwrap());
    assert_eq!(
        equal(&a.tensor.view(), &requantized.view()).unwrap(),
        contents(&a.tensor.view()) == contents(&requantized.view())
    );
}

#[test]
fn shapes_and_empty_tensors() {
    let empty = |shape: &[u64], order: Vec<u32>| {
        let coo = Coo::new(shape, Indices::RowMajor(&[]), &[] as &[f64]);
        build(&coo, &Options { mode_order: ModeOrderPolicy::Explicit(order), ..Options::default() }).unwrap()
    };
    let (a, b) = (empty(&[2, 3, 4], vec![0, 1, 2]), empty(&[2, 3, 4], vec![2, 1, 0]));
    assert!(equal(&a.tensor.view(), &b.tensor.view()).unwrap());
    let c = empty(&[2, 4, 3], vec![0, 1, 2]);
    assert!(!equal(&a.tensor.view(), &c.tensor.view()).unwrap(), "another shape");
    // Explicit zeros only: equal to the empty tensor.
    let zeros = build(
        &Coo::new(&[2, 3, 4], Indices::RowMajor(&[0, 0, 0, 1, 2, 3]), &[0.0f64, -0.0]),
        &Options::default(),
    )
    .unwrap();
    assert!(equal(&zeros.tensor.view(), &b.tensor.view()).unwrap());
    // NaN equals NaN, and integers equal the floats that are them.
    let nan = |v: f64| {
        build(&Coo::new(&[1, 1, 2], Indices::RowMajor(&[0, 0, 1]), &[v]), &Options::default()).unwrap()
    };
    assert!(equal(&nan(f64::NAN).tensor.view(), &nan(-f64::NAN).tensor.view()).unwrap());
    assert!(!equal(&nan(f64::NAN).tensor.view(), &nan(1.0).tensor.view()).unwrap());
    let int =
        build(&Coo::new(&[1, 1, 2], Indices::RowMajor(&[0, 0, 1]), &[1i64]), &Options::default()).unwrap();
    assert!(equal(&int.tensor.view(), &nan(1.0).tensor.view()).unwrap());
    assert!(!equal(&int.tensor.view(), &nan(1.5).tensor.view()).unwrap());
}
