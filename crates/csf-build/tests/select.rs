//! `select` against a brute-force reference: the tensor's entries from
//! csf-core, filtered and mapped axis by axis in a plain loop. Random
//! tensors of rank 3 to 5 in random mode orders, of several element types
//! (quantized ones included), under random mixes of every axis kind; the
//! fast path byte-identical to the general one; errors; and hostile views
//! (permissively read, corrupted) that must not panic.

use std::borrow::Cow;

use csf_build::{
    build, select, select_by_copy, select_by_walk, Axis, BuildError, Built, Coo, Duplicates, Indices,
    ModeOrderPolicy, Options, Quantize, SelectError, Selection, StatisticsSection,
};
use csf_core::{CsfView, Value};
use csf_testdata::Rng;
use hurray_format::{Container, ElementType};
use proptest::prelude::*;

// ------------------------------------------------------------ tensors

/// The values a generated tensor holds.
#[derive(Clone, Copy, Debug)]
enum Kind {
    Plain(ElementType),
    Quantized(Quantize),
}

const KINDS: [Kind; 10] = [
    Kind::Plain(ElementType::F32),
    Kind::Plain(ElementType::F16),
    Kind::Plain(ElementType::I4),
    Kind::Plain(ElementType::U4),
    Kind::Plain(ElementType::Bool),
    Kind::Plain(ElementType::I64),
    Kind::Plain(ElementType::F8E4M3),
    Kind::Quantized(Quantize::PerTensor { dtype: ElementType::I8, zero_point: false }),
    Kind::Quantized(Quantize::PerChannel { axis: 1, dtype: ElementType::I8, zero_point: true }),
    Kind::Quantized(Quantize::PerBlock { block_size: 3, dtype: ElementType::I4, zero_point: false }),
];

/// `nnz` random entries (fewer after duplicates) over a random shape of
/// `rank` extents in `0..=max_extent` (0 only when `empty_dims`), stored in
/// a random mode order.
fn tensor(rng: &mut Rng, rank: usize, nnz: usize, kind: Kind, empty_dims: bool) -> Built {
    let low = u64::from(!empty_dims);
    let shape: Vec<u64> = (0..rank).map(|_| low + rng.below(6 - low)).collect();
    let mut order: Vec<u32> = (0..rank as u32).collect();
    for i in (1..rank).rev() {
        order.swap(i, rng.below(i as u64 + 1) as usize);
    }
    let nnz = if shape.contains(&0) { 0 } else { nnz };
    let mut indices = Vec::with_capacity(nnz * rank);
    for _ in 0..nnz {
        indices.extend(shape.iter().map(|&e| rng.below(e)));
    }
    let (element_type, quantize) = match kind {
        Kind::Plain(t) => (t, None),
        Kind::Quantized(q) => (ElementType::F32, Some(q)),
    };
    let values: Vec<u8> = match element_type {
        ElementType::F32 => (0..nnz).flat_map(|_| (rng.below(19) as f32 - 9.0).to_le_bytes()).collect(),
        ElementType::I64 => (0..nnz).flat_map(|_| (rng.next_u64() as i64).to_le_bytes()).collect(),
        ElementType::F16 => (0..nnz).flat_map(|_| (rng.next_u64() as u16).to_le_bytes()).collect(),
        ElementType::Bool => (0..nnz).map(|_| rng.below(2) as u8).collect(),
        ElementType::F8E4M3 => (0..nnz).map(|_| rng.next_u64() as u8).collect(),
        // Two random 4-bit codes per byte; the padding nibble of an odd count zero.
        _ => (0..nnz.div_ceil(2))
            .map(|i| {
                let low = rng.below(16) as u8;
                let high = if 2 * i + 1 < nnz { rng.below(16) as u8 } else { 0 };
                low | high << 4
            })
            .collect(),
    };
    let coo =
        Coo { shape: &shape, indices: Indices::RowMajor(&indices), element_type, values: Cow::Owned(values) };
    let options = Options {
        mode_order: ModeOrderPolicy::Explicit(order),
        duplicates: Duplicates::Last,
        quantize,
        ..Options::default()
    };
    build(&coo, &options).unwrap()
}

// ------------------------------------------------------------ axes

/// An axis that owns its take array.
#[derive(Clone, Debug)]
enum Owned {
    Index(u64),
    All,
    Step { start: u64, len: u64, step: i64 },
    Take(Vec<u64>),
}

impl Owned {
    fn axis(&self) -> Axis<'_> {
        match self {
            Owned::Index(c) => Axis::Index(*c),
            Owned::All => Axis::All,
            Owned::Step { start, len, step } => Axis::Step { start: *start, len: *len, step: *step },
            Owned::Take(take) => Axis::Take(take),
        }
    }
}

/// A random valid axis for a dimension of `extent`: every kind, negative
/// steps, unsorted takes with repeats, empty slices and takes.
fn random_axis(rng: &mut Rng, extent: u64) -> Owned {
    match rng.below(if extent == 0 { 3 } else { 5 }) {
        0 => Owned::All,
        1 => {
            Owned::Take((0..rng.below(6)).map(|_| rng.below(extent.max(1))).filter(|&c| c < extent).collect())
        }
        2 if extent == 0 => Owned::Step { start: 0, len: 0, step: 1 },
        2 => {
            let start = rng.below(extent);
            let step = (1 + rng.below(3) as i64) * if rng.below(2) == 0 { 1 } else { -1 };
            // The most coordinates from `start` in steps of `step` inside the extent.
            let most = if step > 0 {
                (extent - 1 - start) / step as u64 + 1
            } else {
                start / step.unsigned_abs() + 1
            };
            Owned::Step { start, len: rng.below(most + 1), step }
        }
        3 => Owned::Index(rng.below(extent)),
        _ => {
            let mut take: Vec<u64> = (0..1 + rng.below(4)).map(|_| rng.below(extent)).collect();
            take.sort_unstable();
            Owned::Take(take)
        }
    }
}

fn random_axes(rng: &mut Rng, shape: &[u64]) -> Vec<Owned> {
    shape.iter().map(|&e| random_axis(rng, e)).collect()
}

/// Axes the fast path takes: level 0's dimension an index, a slice of step
/// 1 or whole; every other dimension whole.
fn fast_axes(rng: &mut Rng, view: &CsfView<'_>) -> Vec<Owned> {
    let top = view.mode_order()[0] as usize;
    let extent = view.shape()[top];
    let root = match rng.below(3) {
        0 if extent > 0 => Owned::Index(rng.below(extent)),
        1 => Owned::All,
        _ => {
            let start = rng.below(extent + 1);
            Owned::Step { start, len: rng.below(extent - start + 1), step: 1 }
        }
    };
    (0..view.rank()).map(|d| if d == top { root.clone() } else { Owned::All }).collect()
}

// ------------------------------------------------------------ the reference

/// The selection by brute force: every entry, mapped axis by axis, each
/// combination of output coordinates once, sorted by output index.
fn reference(view: &CsfView<'_>, axes: &[Owned]) -> (Vec<u64>, Vec<(Vec<u64>, Value)>) {
    let shape = axes
        .iter()
        .zip(view.shape())
        .filter_map(|(a, &e)| match a {
            Owned::Index(_) => None,
            Owned::All => Some(e),
            Owned::Step { len, .. } => Some(*len),
            Owned::Take(t) => Some(t.len() as u64),
        })
        .collect();
    let mut out = Vec::new();
    view.for_each(|index, leaf| {
        let value = view.value(leaf, index).unwrap();
        let mut combos: Vec<Vec<u64>> = vec![Vec::new()];
        for (axis, &c) in axes.iter().zip(index) {
            let targets: Vec<u64> = match axis {
                Owned::Index(i) if *i == c => continue,
                Owned::Index(_) => Vec::new(),
                Owned::All => vec![c],
                Owned::Step { start, len, step } => {
                    (0..*len).filter(|&j| *start as i128 + j as i128 * *step as i128 == c as i128).collect()
                }
                Owned::Take(t) => (0..t.len() as u64).filter(|&j| t[j as usize] == c).collect(),
            };
            combos = combos
                .iter()
                .flat_map(|prefix| targets.iter().map(move |&t| [prefix.clone(), vec![t]].concat()))
                .collect();
        }
        out.extend(combos.into_iter().map(|index| (index, value)));
    });
    out.sort_by(|a, b| a.0.cmp(&b.0));
    (shape, out)
}

/// The mode order a result stores: the input's, restricted to the kept
/// dimensions, renumbered.
fn restricted(mode_order: &[u32], axes: &[Owned]) -> Vec<u32> {
    let kept = |d: u32| !matches!(axes[d as usize], Owned::Index(_));
    let renumbered = |d: u32| (0..d).filter(|&e| kept(e)).count() as u32;
    mode_order.iter().copied().filter(|&d| kept(d)).map(renumbered).collect()
}

/// A value as an entry's bytes, and their type: numpy's, as the binding
/// gives it (the element type, `i8`/`u8` for 4-bit integers, `f32` for the
/// other narrow floats and for dequantized values).
fn entry_bytes(value: Value, quantized: bool) -> (ElementType, Vec<u8>) {
    if quantized {
        return (ElementType::F32, value.to_f32().to_le_bytes().to_vec());
    }
    match value {
        Value::Bool(b) => (ElementType::Bool, vec![u8::from(b)]),
        Value::I8(v) | Value::I4(v) => (ElementType::I8, v.to_le_bytes().to_vec()),
        Value::U8(v) | Value::U4(v) => (ElementType::U8, vec![v]),
        Value::I16(v) => (ElementType::I16, v.to_le_bytes().to_vec()),
        Value::U16(v) => (ElementType::U16, v.to_le_bytes().to_vec()),
        Value::F16(v) => (ElementType::F16, v.to_le_bytes().to_vec()),
        Value::I32(v) => (ElementType::I32, v.to_le_bytes().to_vec()),
        Value::U32(v) => (ElementType::U32, v.to_le_bytes().to_vec()),
        Value::F32(v) => (ElementType::F32, v.to_le_bytes().to_vec()),
        Value::I64(v) => (ElementType::I64, v.to_le_bytes().to_vec()),
        Value::U64(v) => (ElementType::U64, v.to_le_bytes().to_vec()),
        Value::F64(v) => (ElementType::F64, v.to_le_bytes().to_vec()),
        other => (ElementType::F32, other.to_f32().to_le_bytes().to_vec()),
    }
}

/// A value's bits, comparable even when it is a NaN.
fn bits(value: Value) -> String {
    format!("{value:?}")
}

/// Checks `select` of `axes` against the reference, and against the general
/// path alone (byte for byte, so the fast path's tensors are the walk's).
fn check(view: &CsfView<'_>, axes: &[Owned], parallel: bool) {
    let (shape, want) = reference(view, axes);
    let borrowed: Vec<Axis<'_>> = axes.iter().map(Owned::axis).collect();
    let got = select(view, &borrowed, parallel).unwrap_or_else(|e| panic!("{axes:?}: {e}"));
    let walked = select_by_walk(view, &borrowed, !parallel).unwrap();
    let quantized = view.quantization().is_some();
    match (&got, &walked) {
        (Selection::Entries { shape: s, coords, values, element_type }, walked) => {
            assert!(shape.len() < 3, "{axes:?}: entries of rank {}", shape.len());
            assert_eq!(s, &shape, "{axes:?}");
            let want_coords: Vec<u64> = want.iter().flat_map(|(i, _)| i.clone()).collect();
            assert_eq!(coords, &want_coords, "{axes:?}");
            let (ty, _) = entry_bytes(Value::zero(view.element_type()), quantized);
            let want_values: Vec<u8> = want.iter().flat_map(|(_, v)| entry_bytes(*v, quantized).1).collect();
            assert_eq!((values, *element_type), (&want_values, ty), "{axes:?}");
            let Selection::Entries { coords: c, values: v, element_type: t, shape: s2 } = walked else {
                panic!("{axes:?}: the walk gave a tensor")
            };
            assert_eq!((s2, c, v, t), (s, coords, values, element_type));
        }
        (Selection::Tensor(built), Selection::Tensor(by_walk)) => {
            assert!(shape.len() >= 3, "{axes:?}");
            let out = built.tensor.view();
            assert!(csf_validate::validate_view(out).is_ok(), "{axes:?}: invalid result");
            assert_eq!(out.shape(), &shape[..], "{axes:?}");
            assert_eq!(out.mode_order(), restricted(view.mode_order(), axes), "{axes:?}");
            let want_type = if quantized { ElementType::F32 } else { view.element_type() };
            assert_eq!(out.element_type(), want_type);
            let mut entries = Vec::new();
            out.for_each(|index, leaf| entries.push((index.to_vec(), bits(out.value(leaf, index).unwrap()))));
            entries.sort();
            let want: Vec<(Vec<u64>, String)> = want.iter().map(|(i, v)| (i.clone(), bits(*v))).collect();
            assert_eq!(entries, want, "{axes:?}");
            let bytes = |b: &Built| b.to_bytes(StatisticsSection::Include).unwrap();
            assert_eq!(bytes(built), bytes(by_walk), "{axes:?}: the fast path and the walk differ");
        }
        (_, _) => panic!("{axes:?}: select gave a tensor, the walk entries"),
    }
}

// ------------------------------------------------------------ properties

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    #[test]
    fn every_mix_of_axes_matches_the_reference(
        seed in any::<u64>(),
        rank in 3usize..=5,
        nnz in 0usize..80,
        kind in 0..KINDS.len(),
        parallel in any::<bool>(),
    ) {
        let mut rng = Rng::new(seed);
        let built = tensor(&mut rng, rank, nnz, KINDS[kind], seed % 11 == 0);
        let view = built.tensor.view();
        for _ in 0..8 {
            let axes = random_axes(&mut rng, view.shape());
            check(&view, &axes, parallel);
        }
    }

    #[test]
    fn the_fast_path_copies_what_the_walk_builds(
        seed in any::<u64>(),
        rank in 3usize..=5,
        nnz in 0usize..120,
        kind in 0..KINDS.len(),
    ) {
        let mut rng = Rng::new(seed);
        let built = tensor(&mut rng, rank, nnz, KINDS[kind], seed % 13 == 0);
        let view = built.tensor.view();
        for _ in 0..6 {
            let axes = fast_axes(&mut rng, &view);
            let borrowed: Vec<Axis<'_>> = axes.iter().map(Owned::axis).collect();
            let per_channel = matches!(KINDS[kind], Kind::Quantized(Quantize::PerChannel { .. }));
            let rank_after = borrowed.iter().filter(|a| !matches!(a, Axis::Index(_))).count();
            let copied = select_by_copy(&view, &borrowed).unwrap();
            prop_assert_eq!(copied.is_some(), !per_channel && rank_after >= 3, "{:?}", axes);
            check(&view, &axes, false);
        }
    }
}

// ------------------------------------------------------------ examples

/// The spec's example with shape [2, 3, 4] in a rank-4 form: [2, 3, 4, 2],
/// the last coordinate 0 or 1.
fn rank4() -> Built {
    let indices = [0, 0, 1, 0, 0, 2, 3, 1, 1, 1, 0, 0, 1, 1, 2, 1];
    let coo = Coo::new(&[2, 3, 4, 2], Indices::RowMajor(&indices), &[1.0f32, 2.0, 3.0, 4.0]);
    let options = Options { mode_order: ModeOrderPolicy::Explicit(vec![2, 0, 3, 1]), ..Options::default() };
    build(&coo, &options).unwrap()
}

#[test]
fn the_result_keeps_the_restricted_mode_order() {
    let built = rank4();
    let view = built.tensor.view();
    let Selection::Tensor(t) =
        select(&view, &[Axis::All, Axis::Index(1), Axis::All, Axis::All], true).unwrap()
    else {
        panic!("rank 3 is a tensor")
    };
    // [2, 0, 3, 1] keeping {0, 2, 3}: [1, 0, 2].
    assert_eq!(t.tensor.view().mode_order(), [1, 0, 2]);
    assert_eq!(t.tensor.view().shape(), [2, 4, 2]);
    assert_eq!(t.tensor.view().get_f64(&[1, 0, 0]).unwrap(), 3.0);
    assert_eq!(t.tensor.view().nnz(), 2);
    // A rank-0 result: the value at one index, or nothing.
    let at = |i: [u64; 4]| select(&view, &i.map(Axis::Index), false).unwrap();
    let Selection::Entries { shape, coords, values, element_type } = at([1, 1, 2, 1]) else { panic!() };
    assert_eq!(
        (shape, coords, values, element_type),
        (vec![], vec![], 4f32.to_le_bytes().to_vec(), ElementType::F32)
    );
    let Selection::Entries { values, .. } = at([1, 1, 2, 0]) else { panic!() };
    assert!(values.is_empty());
}

#[test]
fn a_take_replicates_and_reorders_and_the_builder_sorts() {
    let built = rank4();
    let view = built.tensor.view();
    // Dimension 0 taken as [1, 1, 0]; dimension 2 reversed.
    let axes =
        [Owned::Take(vec![1, 1, 0]), Owned::All, Owned::Step { start: 3, len: 4, step: -1 }, Owned::All];
    check(&view, &axes, false);
    let borrowed: Vec<Axis<'_>> = axes.iter().map(Owned::axis).collect();
    let Selection::Tensor(t) = select(&view, &borrowed, false).unwrap() else { panic!() };
    let t = t.tensor.view();
    assert_eq!((t.shape(), t.nnz()), (&[3, 3, 4, 2][..], 6));
    // (1, 1, 2, 1) -> 4.0 lands at (0, 1, 1, 1) and (1, 1, 1, 1).
    assert_eq!((t.get_f64(&[0, 1, 1, 1]).unwrap(), t.get_f64(&[1, 1, 1, 1]).unwrap()), (4.0, 4.0));
    assert_eq!(t.get_f64(&[2, 0, 2, 0]).unwrap(), 1.0);
}

#[test]
fn empty_selections_and_empty_tensors_have_their_shapes() {
    let mut rng = Rng::new(7);
    let built = rank4();
    let view = built.tensor.view();
    for axes in [
        vec![Owned::Take(vec![]), Owned::All, Owned::All, Owned::All],
        vec![Owned::All, Owned::Step { start: 9, len: 0, step: -3 }, Owned::All, Owned::All],
        vec![Owned::Index(0), Owned::Index(1), Owned::All, Owned::All],
        vec![Owned::All, Owned::All, Owned::Step { start: 2, len: 0, step: 1 }, Owned::All],
    ] {
        check(&view, &axes, true);
    }
    let empty = tensor(&mut rng, 4, 0, KINDS[0], false);
    let view = empty.tensor.view();
    for _ in 0..50 {
        check(&view, &random_axes(&mut rng, view.shape()), false);
        check(&view, &fast_axes(&mut rng, &view), false);
    }
}

#[test]
fn bad_axes_name_the_axis() {
    let built = rank4();
    let view = built.tensor.view();
    let err = |axes: &[Axis<'_>]| select(&view, axes, false).unwrap_err();
    assert_eq!(err(&[Axis::All; 3]), SelectError::AxisCount { got: 3, rank: 4 });
    assert_eq!(
        err(&[Axis::All, Axis::Index(3), Axis::All, Axis::All]),
        SelectError::IndexOutOfBounds { axis: 1, coord: 3, extent: 3 }
    );
    assert_eq!(
        err(&[Axis::All, Axis::All, Axis::Step { start: 0, len: 2, step: 0 }, Axis::All]),
        SelectError::ZeroStep { axis: 2 }
    );
    for (start, len, step) in [(0, 5, 1), (3, 3, -2), (4, 1, 1), (1, u64::MAX, i64::MAX), (3, 2, i64::MIN)] {
        assert_eq!(
            err(&[Axis::All, Axis::All, Axis::Step { start, len, step }, Axis::All]),
            SelectError::SliceOutOfBounds { axis: 2, start, len, step, extent: 4 }
        );
    }
    assert_eq!(
        err(&[Axis::All, Axis::All, Axis::All, Axis::Take(&[1, 0, 2])]),
        SelectError::TakeOutOfBounds { axis: 3, position: 2, coord: 2, extent: 2 }
    );
    assert!(err(&[Axis::All; 3]).to_string().contains("3 axes"));
}

// ------------------------------------------------------------ hostile input

/// A valid container of a random tensor, then `flips` of its words in the
/// `pos`/`crd` buffers (and sometimes the values) overwritten with garbage.
fn corrupted(rng: &mut Rng) -> Vec<u8> {
    let rank = 3 + rng.below(3) as usize;
    let built = {
        let (nnz, kind) = (10 + rng.below(60) as usize, KINDS[rng.below(KINDS.len() as u64) as usize]);
        tensor(rng, rank, nnz, kind, false)
    };
    let mut bytes = built.to_bytes(StatisticsSection::Omit).unwrap();
    let ranges: Vec<std::ops::Range<usize>> = {
        let container = Container::decode(&bytes).unwrap();
        (0..=2 * rank).filter_map(|i| container.buffer_range(i)).collect()
    };
    for _ in 0..1 + rng.below(4) {
        let range = &ranges[rng.below(ranges.len() as u64) as usize];
        let words = range.len() / 8;
        if words == 0 {
            continue;
        }
        let at = range.start + 8 * rng.below(words as u64) as usize;
        let garbage = match rng.below(5) {
            0 => 0,
            1 => u64::MAX,
            2 => rng.below(8),
            3 => rng.below(200),
            _ => rng.next_u64(),
        };
        bytes[at..at + 8].copy_from_slice(&garbage.to_le_bytes());
    }
    bytes
}

#[test]
fn hostile_views_do_not_panic() {
    let mut rng = Rng::new(0x5e1ec7);
    let (mut ran, mut refused) = (0, 0);
    for _ in 0..600 {
        let bytes = corrupted(&mut rng);
        let Ok(view) = csf_validate::read_permissive(&bytes) else { continue };
        for _ in 0..12 {
            let axes = if rng.below(3) == 0 {
                fast_axes(&mut rng, &view)
            } else {
                random_axes(&mut rng, view.shape())
            };
            let borrowed: Vec<Axis<'_>> = axes.iter().map(Owned::axis).collect();
            let parallel = rng.below(2) == 0;
            for result in [select(&view, &borrowed, parallel), select_by_walk(&view, &borrowed, parallel)] {
                ran += 1;
                match result {
                    // Whatever the input, a tensor returned is valid.
                    Ok(Selection::Tensor(built)) => {
                        assert!(csf_validate::validate_view(built.tensor.view()).is_ok(), "{axes:?}")
                    }
                    Ok(Selection::Entries { shape, coords, values, element_type }) => {
                        let m = values.len() / element_type.byte_width().map_or(1, usize::from);
                        assert_eq!(coords.len(), m * shape.len());
                        let rows: Vec<&[u64]> = if shape.is_empty() {
                            vec![&[]; m]
                        } else {
                            coords.chunks(shape.len()).collect()
                        };
                        assert!(rows.windows(2).all(|w| w[0] < w[1]), "{axes:?}: entries out of order");
                        assert!(coords
                            .chunks(shape.len().max(1))
                            .all(|r| r.iter().zip(&shape).all(|(c, e)| c < e)));
                    }
                    Err(SelectError::Build(
                        BuildError::MissingValue { .. } | BuildError::Duplicate { .. },
                    ))
                    | Err(SelectError::Build(BuildError::OutOfBounds { .. }))
                    | Err(SelectError::Unvalidated { .. }) => refused += 1,
                    Err(other) => panic!("{axes:?}: {other}"),
                }
            }
        }
    }
    assert!(ran > 1_000 && refused > 0, "{ran} selections, {refused} refused");
}

#[test]
fn overlapping_fibers_are_walked_once_each() {
    // Every pos entry of every level below the root points at the whole
    // level: without the high-water marks, the walk would visit each leaf
    // once per path to it, n^rank times.
    let mut rng = Rng::new(3);
    let built = tensor(&mut rng, 5, 200, KINDS[0], false);
    let mut bytes = built.to_bytes(StatisticsSection::Omit).unwrap();
    let ranges: Vec<std::ops::Range<usize>> = {
        let container = Container::decode(&bytes).unwrap();
        (0..=10).filter_map(|i| container.buffer_range(i)).collect()
    };
    for level in 1..5 {
        let (pos, crd) = (&ranges[1 + 2 * level], &ranges[2 + 2 * level]);
        let n = (crd.len() / 8) as u64;
        for (k, at) in pos.clone().step_by(8).enumerate() {
            let word = if k % 2 == 0 { 0 } else { n };
            bytes[at..at + 8].copy_from_slice(&word.to_le_bytes());
        }
    }
    let view = csf_validate::read_permissive(&bytes).unwrap();
    let take: Vec<u64> = vec![0; 4];
    let axes: Vec<Axis<'_>> = view.shape().iter().map(|_| Axis::All).collect();
    let mut with_take = axes.clone();
    with_take[0] = Axis::Take(&take);
    for axes in [axes, with_take] {
        let started = std::time::Instant::now();
        let _ = select(&view, &axes, false);
        assert!(started.elapsed().as_secs() < 10, "{axes:?}: the walk is not bounded");
    }
}
