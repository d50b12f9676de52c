//! Target `compute_access`: csf-build's computations on a permissively read
//! (possibly hostile) view — `select`, `sum_axes` and `equal` — checked for
//! the shape of what they return on any view, and against small brute-force
//! references computed from the view's own iteration when the view is also
//! strictly valid.

use std::collections::BTreeMap;

use arbitrary::{Result, Unstructured};
use csf_build::{Axis, BuildError, Reduced, SelectError, Selection, StatisticsSection};
use csf_core::{CsfView, Value};
use hurray_format::ElementType;

/// Selections drawn per input (after the whole-tensor one).
const MAX_SELECTIONS: usize = 4;
/// Axis sets summed over per input.
const MAX_SUMS: usize = 3;
/// The longest `Take` array drawn.
const MAX_TAKE: usize = 8;
/// The product of the `Take` lengths of one selection: no stored entry is
/// emitted more often, so the output stays linear in the input.
const MAX_REPEAT: usize = 64;
/// `sum_axes`' `max_elements` (usually): a dense result's cap.
const MAX_ELEMENTS: u64 = 4096;
/// The references run on strictly valid views of at most this many entries...
const REFERENCE_ENTRIES: usize = 256;
/// ...and selections of at most this many output entries.
const REFERENCE_OUTPUT: usize = 4096;
/// Stored coordinates remembered per dimension, to draw selections that hit.
const HINTS: usize = 8;

/// One axis of a selection, owned (a `Take` borrows its array as an [`Axis`]).
#[derive(Clone, Debug)]
enum Sel {
    Index(u64),
    All,
    Step { start: u64, len: u64, step: i64 },
    Take(Vec<u64>),
}

impl Sel {
    fn axis(&self) -> Axis<'_> {
        match self {
            Sel::Index(c) => Axis::Index(*c),
            Sel::All => Axis::All,
            Sel::Step { start, len, step } => Axis::Step { start: *start, len: *len, step: *step },
            Sel::Take(take) => Axis::Take(take),
        }
    }

    /// Whether the axis fits a dimension of `extent`, as the docs of `Axis`
    /// and `SelectError` say: an index inside it, a non-zero step whose
    /// first and last coordinates lie inside it (any start when it is
    /// empty), take coordinates inside it.
    fn fits(&self, extent: u64) -> bool {
        match self {
            Sel::Index(c) => *c < extent,
            Sel::All => true,
            Sel::Step { step: 0, .. } => false,
            Sel::Step { len: 0, .. } => true,
            Sel::Step { start, len, step } => {
                let last = i128::from(*start) + i128::from(*len - 1) * i128::from(*step);
                *start < extent && 0 <= last && last < i128::from(extent)
            }
            Sel::Take(take) => take.iter().all(|&c| c < extent),
        }
    }

    /// The output extent (`None`: the dimension is dropped).
    fn out_extent(&self, extent: u64) -> Option<u64> {
        match self {
            Sel::Index(_) => None,
            Sel::All => Some(extent),
            Sel::Step { len, .. } => Some(*len),
            Sel::Take(take) => Some(take.len() as u64),
        }
    }

    /// The output coordinates input coordinate `c` maps to: none, one, or
    /// (a `Take` that repeats `c`) several; `None` for an `Index`, whose
    /// dimension is dropped (the caller compares `c` with it).
    fn outputs(&self, c: u64) -> Option<Vec<u64>> {
        match self {
            Sel::Index(_) => None,
            Sel::All => Some(vec![c]),
            Sel::Step { len: 0, .. } | Sel::Step { step: 0, .. } => Some(Vec::new()),
            Sel::Step { start, len, step } => {
                let (d, s) = (i128::from(c) - i128::from(*start), i128::from(*step));
                let j = d / s;
                Some(if d % s == 0 && 0 <= j && j < i128::from(*len) { vec![j as u64] } else { Vec::new() })
            }
            Sel::Take(take) => Some((0u64..).zip(take).filter(|(_, &t)| t == c).map(|(j, _)| j).collect()),
        }
    }
}

/// A stored entry of a strictly valid view: its logical index and value.
struct Stored {
    index: Vec<u64>,
    value: Value,
}

/// Everything on one view.
pub(crate) fn run(view: &CsfView<'_>, strict: bool, u: &mut Unstructured<'_>) {
    let rank = view.rank();
    let mut hints: Vec<Vec<u64>> = vec![Vec::new(); rank];
    let mut stored = Vec::new();
    let mut count = 0usize;
    view.for_each(|index, leaf| {
        count += 1;
        for (hint, &c) in hints.iter_mut().zip(index) {
            if hint.len() < HINTS && !hint.contains(&c) {
                hint.push(c);
            }
        }
        if strict && stored.len() < REFERENCE_ENTRIES {
            let value = view.value(leaf, index).expect("a strictly valid tensor has every leaf's value");
            stored.push(Stored { index: index.to_vec(), value });
        }
    });
    // The references run only on small valid tensors.
    let reference = (strict && count <= REFERENCE_ENTRIES).then_some(stored.as_slice());
    compare_with_itself(view, strict);
    let whole = vec![Sel::All; rank];
    if let Some(Selection::Tensor(built)) = select(view, &whole, false, strict, reference) {
        if strict {
            let copy = built.tensor.view();
            assert_eq!(csf_build::equal(view, &copy), Ok(true), "t[:, :, ...] is not equal to t");
        }
    }
    for _ in 0..MAX_SELECTIONS {
        if u.is_empty() {
            break;
        }
        let Ok((sels, parallel)) = selection(u, view, &hints) else { break };
        select(view, &sels, parallel, strict, reference);
    }
    for _ in 0..MAX_SUMS {
        if u.is_empty() {
            break;
        }
        let Ok((axes, max_elements, parallel)) = sum_args(u, rank) else { break };
        sum(view, &axes, max_elements, parallel, strict, reference);
    }
}

/// `equal(t, t)`: never a wrong answer, so never `Ok(false)`; on a strictly
/// valid tensor `Ok(true)` (NaN equals NaN there).
fn compare_with_itself(view: &CsfView<'_>, strict: bool) {
    let verdict = csf_build::equal(view, view);
    if let Err(e) = &verdict {
        crate::check::renders(e);
    }
    if strict {
        assert_eq!(verdict, Ok(true), "equal(t, t) on a strictly valid tensor");
    } else {
        assert_ne!(verdict, Ok(false), "equal(t, t) says a tensor differs from itself");
    }
}

// ------------------------------------------------------------ drawing the inputs

/// A coordinate for a dimension of `extent`: mostly inside it (often one
/// that is stored), now and then on its edge or far outside.
fn coord(u: &mut Unstructured<'_>, extent: u64, hints: &[u64]) -> Result<u64> {
    Ok(match u.int_in_range(0..=15u8)? {
        0 => extent,
        1 => extent.saturating_add(u.int_in_range(1..=3)?),
        2 => u64::MAX,
        _ if extent == 0 => 0,
        3 => extent - 1,
        4..=9 if !hints.is_empty() => *u.choose(hints)?,
        _ => u.int_in_range(0..=extent - 1)?,
    })
}

/// A step: one, small, negative, zero, or the extremes.
fn step(u: &mut Unstructured<'_>) -> Result<i64> {
    Ok(match u.int_in_range(0..=11u8)? {
        0 => 0,
        1 => i64::MIN,
        2 => i64::MAX,
        3 => u.arbitrary()?,
        4 | 5 => -u.int_in_range(1..=4)?,
        6 | 7 => u.int_in_range(2..=4)?,
        _ => 1,
    })
}

/// The longest slice from `start` in steps of `step` inside `0..extent`.
fn fitting_len(start: u64, step: i64, extent: u64) -> u64 {
    if step == 0 || start >= extent {
        return 0;
    }
    let size = step.unsigned_abs();
    if step > 0 {
        (extent - 1 - start) / size + 1
    } else {
        start / size + 1
    }
}

/// One axis for a dimension of `extent`; `repeat` is what the `Take` axes
/// drawn so far multiply each entry by.
fn axis(u: &mut Unstructured<'_>, extent: u64, hints: &[u64], repeat: &mut usize) -> Result<Sel> {
    Ok(match u.int_in_range(0..=19u8)? {
        0..=4 => Sel::Index(coord(u, extent, hints)?),
        5..=10 => Sel::All,
        11..=15 => {
            let step = step(u)?;
            let start = coord(u, extent, hints)?;
            let fit = fitting_len(start, step, extent);
            let len = match u.int_in_range(0..=9u8)? {
                0 => 0,
                1 => fit.saturating_add(1),
                2 => u64::MAX,
                3..=5 => fit,
                _ => u.int_in_range(0..=fit)?,
            };
            Sel::Step { start, len, step }
        }
        _ => {
            let room = MAX_REPEAT / *repeat;
            let len = u.int_in_range(0..=MAX_TAKE.min(room))?;
            *repeat *= len.max(1);
            // A few coordinates, repeated: numpy's t[[2, 0, 2]].
            let mut pool = Vec::new();
            for _ in 0..u.int_in_range(1..=3usize)? {
                pool.push(coord(u, extent, hints)?);
            }
            let mut take = Vec::with_capacity(len);
            for _ in 0..len {
                take.push(if u.ratio(1u8, 4)? { coord(u, extent, hints)? } else { *u.choose(&pool)? });
            }
            if u.ratio(1u8, 3)? {
                take.sort_unstable();
            }
            Sel::Take(take)
        }
    })
}

/// A selection (one axis per dimension, now and then one too many or too
/// few) and whether to build on rayon's pool. One in four keeps every
/// dimension but the top level's whole: the fast path's shape.
fn selection(u: &mut Unstructured<'_>, view: &CsfView<'_>, hints: &[Vec<u64>]) -> Result<(Vec<Sel>, bool)> {
    let shape = view.shape();
    let top = view.mode_order().first().map_or(0, |&d| d as usize);
    let fast = u.ratio(1u8, 4)?;
    let mut repeat = 1;
    let mut sels = Vec::with_capacity(shape.len());
    for (dim, (&extent, hints)) in shape.iter().zip(hints).enumerate() {
        sels.push(if fast && dim != top { Sel::All } else { axis(u, extent, hints, &mut repeat)? });
    }
    match u.int_in_range(0..=63u8)? {
        0 => {
            sels.pop();
        }
        1 => sels.push(Sel::All),
        _ => {}
    }
    Ok((sels, u.ratio(1u8, 8)?))
}

/// Axes to sum over (usually distinct dimensions in increasing order, now
/// and then anything), the dense cap, and whether to build in parallel.
fn sum_args(u: &mut Unstructured<'_>, rank: usize) -> Result<(Vec<usize>, u64, bool)> {
    let mut axes = Vec::new();
    if u.ratio(1u8, 8)? {
        for _ in 0..u.int_in_range(0..=4u8)? {
            axes.push(u.int_in_range(0..=rank + 1)?);
        }
    } else {
        for dim in 0..rank {
            if u.arbitrary()? {
                axes.push(dim);
            }
        }
    }
    let max_elements = match u.int_in_range(0..=7u8)? {
        0 => 0,
        1 => u.int_in_range(1..=64)?,
        _ => MAX_ELEMENTS,
    };
    Ok((axes, max_elements, u.ratio(1u8, 8)?))
}

// ------------------------------------------------------------ select

/// Whether `order` is a permutation of `0..rank`.
fn is_permutation(order: &[u32], rank: usize) -> bool {
    let mut seen = vec![false; rank];
    order.len() == rank
        && order.iter().all(|&d| seen.get_mut(d as usize).is_some_and(|s| !std::mem::replace(s, true)))
}

/// The value's identity as little-endian bytes of its own type (floats by
/// their bits, NaN payloads included; a 4-bit or FP6 element as its code).
fn value_bytes(value: Value) -> Vec<u8> {
    match value {
        Value::Bool(v) => vec![u8::from(v)],
        Value::I8(v) | Value::I4(v) => v.to_le_bytes().to_vec(),
        Value::I16(v) => v.to_le_bytes().to_vec(),
        Value::I32(v) => v.to_le_bytes().to_vec(),
        Value::I64(v) => v.to_le_bytes().to_vec(),
        Value::U16(v) | Value::F16(v) | Value::BF16(v) => v.to_le_bytes().to_vec(),
        Value::U32(v) => v.to_le_bytes().to_vec(),
        Value::U64(v) => v.to_le_bytes().to_vec(),
        Value::F32(v) => v.to_bits().to_le_bytes().to_vec(),
        Value::F64(v) => v.to_bits().to_le_bytes().to_vec(),
        Value::U8(v)
        | Value::U4(v)
        | Value::F8E4M3(v)
        | Value::F8E5M2(v)
        | Value::E8M0(v)
        | Value::F6E2M3(v)
        | Value::F6E3M2(v)
        | Value::F4E2M1(v)
        | Value::Nf4(v) => vec![v],
        // A variant added later: by the number it means.
        other => other.to_f64().to_bits().to_le_bytes().to_vec(),
    }
}

/// The element type of `Selection::Entries`' values, as its docs say: the
/// input's where numpy has it, `i8`/`u8` for `i4`/`u4`, else (and for a
/// quantized input) `f32`.
fn entries_type(view: &CsfView<'_>) -> ElementType {
    use ElementType as E;
    if view.quantization().is_some() {
        return E::F32;
    }
    match view.element_type() {
        t @ (E::Bool
        | E::I8
        | E::I16
        | E::I32
        | E::I64
        | E::U8
        | E::U16
        | E::U32
        | E::U64
        | E::F16
        | E::F32
        | E::F64) => t,
        E::I4 => E::I8,
        E::U4 => E::U8,
        _ => E::F32,
    }
}

/// An entry value as `Selection::Entries` writes it: `f32` from the value
/// the view reads (`CsfView::value`, dequantized), or its own bytes.
fn entry_bytes(value: Value, element_type: ElementType) -> Vec<u8> {
    if element_type == ElementType::F32 {
        return value.to_f32().to_le_bytes().to_vec();
    }
    value_bytes(value)
}

/// Output entries, row-major: coordinates and value bytes.
type Entries = Vec<(Vec<u64>, Vec<u8>)>;

/// `select` on `view`, its result checked; returns it.
fn select(
    view: &CsfView<'_>,
    sels: &[Sel],
    parallel: bool,
    strict: bool,
    reference: Option<&[Stored]>,
) -> Option<Selection> {
    let axes: Vec<Axis<'_>> = sels.iter().map(Sel::axis).collect();
    let result = csf_build::select(view, &axes, parallel);
    let shape = view.shape();
    let rank_ok = sels.len() == shape.len();
    let first_bad = sels.iter().zip(shape).position(|(s, &n)| !s.fits(n));
    let result = match result {
        Err(e) => {
            crate::check::renders(&e);
            refused(view, sels, &e, strict, rank_ok, first_bad);
            return None;
        }
        Ok(result) => result,
    };
    assert!(rank_ok && first_bad.is_none(), "select accepted {sels:?} on shape {shape:?}");
    let out_shape: Vec<u64> = sels.iter().zip(shape).filter_map(|(s, &n)| s.out_extent(n)).collect();
    let got = selected(view, &result, &out_shape, sels);
    if let Some(stored) = reference {
        let entries = out_shape.len() < 3;
        if let Some(want) = select_reference(stored, sels, entries.then(|| entries_type(view))) {
            same_entries(&format!("select({sels:?})"), &got, &want);
        }
        // The general path too, where `select` took the fast one.
        if let Ok(Some(_)) = csf_build::select_by_copy(view, &axes) {
            let walked = csf_build::select_by_walk(view, &axes, parallel)
                .unwrap_or_else(|e| panic!("the walk refused {sels:?}, which the copy took: {e}"));
            let walked = selected(view, &walked, &out_shape, sels);
            same_entries(&format!("select_by_walk({sels:?})"), &walked, &got);
        }
    }
    Some(result)
}

/// A refused selection: bad axes are refused as the first bad axis (once
/// the mode order is a permutation); on a valid tensor nothing else is,
/// but a result too large for memory.
fn refused(
    view: &CsfView<'_>,
    sels: &[Sel],
    e: &SelectError,
    strict: bool,
    rank_ok: bool,
    first_bad: Option<usize>,
) {
    let shape = view.shape();
    let permutation = is_permutation(view.mode_order(), view.rank());
    let named = match *e {
        SelectError::AxisCount { got, rank } => {
            assert_eq!((got, rank), (sels.len(), shape.len()), "AxisCount names other counts");
            None
        }
        SelectError::IndexOutOfBounds { axis, .. }
        | SelectError::ZeroStep { axis }
        | SelectError::SliceOutOfBounds { axis, .. }
        | SelectError::TakeOutOfBounds { axis, .. } => Some(axis),
        _ => None,
    };
    if !rank_ok {
        assert!(
            matches!(e, SelectError::AxisCount { .. }),
            "{} axes for rank {}: {e}",
            sels.len(),
            shape.len()
        );
    } else if let (Some(bad), true) = (first_bad, permutation) {
        assert_eq!(
            named,
            Some(bad),
            "{sels:?} on {shape:?}: the first bad axis is {bad}, the error says {e}"
        );
    } else {
        assert!(named.is_none(), "{sels:?} on {shape:?} fit, but select says {e}");
        assert!(
            !strict || matches!(e, SelectError::TooLarge { .. }),
            "select({sels:?}) on a valid tensor: {e}"
        );
    }
}

/// The checks on any selection's result; its entries in row-major order.
fn selected(view: &CsfView<'_>, result: &Selection, out_shape: &[u64], sels: &[Sel]) -> Entries {
    match result {
        Selection::Tensor(built) => {
            assert!(out_shape.len() >= 3, "select({sels:?}) gave a tensor of rank {}", out_shape.len());
            let bytes = built.to_bytes(StatisticsSection::Include).expect("a selected tensor encodes");
            let valid = csf_validate::read(&bytes)
                .unwrap_or_else(|e| panic!("select({sels:?}) gave a tensor that breaks a rule: {e}"));
            let out = valid.view();
            assert_eq!(out.shape(), out_shape, "select({sels:?}): the tensor's shape");
            let kept: Vec<usize> = (0..sels.len()).filter(|&d| !matches!(sels[d], Sel::Index(_))).collect();
            let order: Vec<u32> = view
                .mode_order()
                .iter()
                .filter_map(|&d| kept.iter().position(|&k| k == d as usize))
                .map(|p| p as u32)
                .collect();
            assert_eq!(out.mode_order(), order.as_slice(), "select({sels:?}): not the restricted mode order");
            let element_type =
                if view.quantization().is_some() { ElementType::F32 } else { view.element_type() };
            assert_eq!(out.element_type(), element_type, "select({sels:?}): the tensor's element type");
            assert!(out.quantization().is_none(), "select({sels:?}) gave a quantized tensor");
            let mut entries = Vec::new();
            out.for_each(|index, leaf| {
                let value = out.value(leaf, index).expect("a valid tensor has every value");
                entries.push((index.to_vec(), value_bytes(value)));
            });
            entries.sort_by(|a, b| a.0.cmp(&b.0));
            entries
        }
        Selection::Entries { shape, coords, values, element_type } => {
            assert!(shape.len() < 3, "select({sels:?}) gave entries of rank {}", shape.len());
            assert_eq!(shape, out_shape, "select({sels:?}): the entries' shape");
            assert_eq!(*element_type, entries_type(view), "select({sels:?}): the entries' element type");
            let width = usize::from(element_type.byte_width().expect("entries are never packed"));
            assert_eq!(values.len() % width, 0, "select({sels:?}): values not whole elements");
            let m = values.len() / width;
            assert_eq!(
                coords.len(),
                shape.len() * m,
                "select({sels:?}): {} coordinates for {m} values",
                coords.len()
            );
            let mut entries: Entries = Vec::with_capacity(m);
            for (k, value) in values.chunks_exact(width).enumerate() {
                let index = coords[k * shape.len()..(k + 1) * shape.len()].to_vec();
                assert!(
                    index.iter().zip(shape).all(|(&c, &n)| c < n),
                    "select({sels:?}): entry {k} at {index:?} outside the shape {shape:?}"
                );
                if let Some((previous, _)) = entries.last() {
                    assert!(*previous < index, "select({sels:?}): entries not strictly row-major at {k}");
                }
                if *element_type == ElementType::Bool {
                    assert!(value[0] <= 1, "select({sels:?}): a bool entry of {}", value[0]);
                }
                entries.push((index, value.to_vec()));
            }
            entries
        }
    }
}

/// What `select` keeps of a small valid tensor, by brute force: each stored
/// entry mapped through every axis (once per combination of output
/// coordinates), sorted row-major; `None` past [`REFERENCE_OUTPUT`].
/// `entries`: the entries' element type, or `None` for a tensor.
fn select_reference(stored: &[Stored], sels: &[Sel], entries: Option<ElementType>) -> Option<Entries> {
    let mut out = Vec::new();
    'entry: for entry in stored {
        let mut choices: Vec<Vec<u64>> = Vec::new();
        for (sel, &c) in sels.iter().zip(&entry.index) {
            match (sel, sel.outputs(c)) {
                (Sel::Index(k), _) if *k == c => {}
                (Sel::Index(_), _) => continue 'entry,
                (_, Some(outs)) => choices.push(outs),
                (_, None) => unreachable!("only Index drops a dimension"),
            }
        }
        let combinations: usize = choices.iter().map(Vec::len).product();
        if out.len() + combinations > REFERENCE_OUTPUT {
            return None;
        }
        let bytes = match entries {
            Some(element_type) => entry_bytes(entry.value, element_type),
            None => value_bytes(entry.value),
        };
        for k in 0..combinations {
            let mut rest = k;
            let mut index = Vec::with_capacity(choices.len());
            for outs in choices.iter().rev() {
                index.push(outs[rest % outs.len()]);
                rest /= outs.len();
            }
            index.reverse();
            out.push((index, bytes.clone()));
        }
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    assert!(out.windows(2).all(|w| w[0].0 < w[1].0), "the reference emitted an index twice");
    Some(out)
}

/// `got` and `want` hold the same entries, values bit for bit.
fn same_entries(what: &str, got: &Entries, want: &Entries) {
    if got != want {
        let at = got.iter().zip(want).position(|(g, w)| g != w).unwrap_or(got.len().min(want.len()));
        panic!(
            "{what}: {} entries, the reference {}; first difference at {at}: {:?} vs {:?}",
            got.len(),
            want.len(),
            got.get(at),
            want.get(at)
        );
    }
}

// ------------------------------------------------------------ sum_axes

/// A sum's element: what `sum_axes` accumulates in.
#[derive(Clone, Copy, Debug)]
enum Num {
    I64(i64),
    U64(u64),
    F32(f32),
    F64(f64),
}

impl Num {
    fn of(value: Value) -> Option<Self> {
        Some(match value {
            Value::I64(v) => Num::I64(v),
            Value::U64(v) => Num::U64(v),
            Value::F32(v) => Num::F32(v),
            Value::F64(v) => Num::F64(v),
            _ => return None,
        })
    }

    fn zero(element_type: ElementType) -> Self {
        match element_type {
            ElementType::I64 => Num::I64(0),
            ElementType::U64 => Num::U64(0),
            ElementType::F32 => Num::F32(0.0),
            _ => Num::F64(0.0),
        }
    }

    fn read(bytes: &[u8], element_type: ElementType) -> Self {
        let mut le = [0u8; 8];
        le[..bytes.len()].copy_from_slice(bytes);
        match element_type {
            ElementType::I64 => Num::I64(i64::from_le_bytes(le)),
            ElementType::U64 => Num::U64(u64::from_le_bytes(le)),
            ElementType::F32 => Num::F32(f32::from_bits(u32::from_le_bytes([le[0], le[1], le[2], le[3]]))),
            _ => Num::F64(f64::from_le_bytes(le)),
        }
    }

    /// Integers wrap, floats add.
    fn plus(self, other: Self) -> Self {
        match (self, other) {
            (Num::I64(a), Num::I64(b)) => Num::I64(a.wrapping_add(b)),
            (Num::U64(a), Num::U64(b)) => Num::U64(a.wrapping_add(b)),
            (Num::F32(a), Num::F32(b)) => Num::F32(a + b),
            (Num::F64(a), Num::F64(b)) => Num::F64(a + b),
            (a, b) => panic!("the reference adds {a:?} and {b:?}"),
        }
    }

    /// The same number (NaN payloads and the sign of zero aside: Rust does
    /// not specify the payload of a sum of NaNs).
    fn same(self, other: Self) -> bool {
        match (self, other) {
            (Num::I64(a), Num::I64(b)) => a == b,
            (Num::U64(a), Num::U64(b)) => a == b,
            (Num::F32(a), Num::F32(b)) => a == b || (a.is_nan() && b.is_nan()),
            (Num::F64(a), Num::F64(b)) => a == b || (a.is_nan() && b.is_nan()),
            _ => false,
        }
    }
}

/// `sum_axes` on `view`, its result checked.
fn sum(
    view: &CsfView<'_>,
    axes: &[usize],
    max_elements: u64,
    parallel: bool,
    strict: bool,
    reference: Option<&[Stored]>,
) {
    let (rank, shape) = (view.rank(), view.shape());
    let good_axes = axes.windows(2).all(|w| w[0] < w[1]) && axes.iter().all(|&a| a < rank);
    let sum_type = if view.quantization().is_some() { ElementType::F32 } else { view.element_type() };
    let supported =
        matches!(sum_type, ElementType::I64 | ElementType::U64 | ElementType::F32 | ElementType::F64);
    let kept: Vec<usize> = (0..rank).filter(|d| !axes.contains(d)).collect();
    let kept_shape: Vec<u64> = kept.iter().map(|&d| shape[d]).collect();
    let dense_count = kept_shape.iter().try_fold(1u64, |n, &e| n.checked_mul(e));
    let what = format!("sum_axes({axes:?}, {max_elements})");
    let result = csf_build::sum_axes(view, axes, max_elements, parallel);
    let reduced = match result {
        Err(e) => {
            crate::check::renders(&e);
            assert_eq!(matches!(e, BuildError::BadAxes { .. }), !good_axes, "{what} on rank {rank}: {e}");
            if strict && good_axes {
                match e {
                    BuildError::UnsupportedType { .. } => assert!(!supported, "{what} refused {sum_type}"),
                    BuildError::TooManyElements { .. } => assert!(
                        kept.len() < 3 && !matches!(dense_count, Some(n) if n <= max_elements),
                        "{what}: {kept_shape:?} is not over the cap"
                    ),
                    e => panic!("{what} on a valid tensor: {e}"),
                }
            }
            return;
        }
        Ok(reduced) => reduced,
    };
    assert!(good_axes && supported, "{what} accepted axes of rank {rank} or type {sum_type}");
    let got: Vec<(Vec<u64>, Num)> = match reduced {
        Reduced::Tensor(built) => {
            assert!(kept.len() >= 3, "{what}: a tensor of rank {}", kept.len());
            let bytes = built.to_bytes(StatisticsSection::Include).expect("a summed tensor encodes");
            let valid = csf_validate::read(&bytes)
                .unwrap_or_else(|e| panic!("{what} gave a tensor that breaks a rule: {e}"));
            let out = valid.view();
            assert_eq!(out.shape(), kept_shape.as_slice(), "{what}: the tensor's shape");
            assert_eq!(out.element_type(), sum_type, "{what}: the tensor's element type");
            let mut entries = Vec::new();
            out.for_each(|index, leaf| {
                let value = out.value(leaf, index).and_then(Num::of).expect("a sum's value");
                entries.push((index.to_vec(), value));
            });
            entries.sort_by(|a, b| a.0.cmp(&b.0));
            entries
        }
        Reduced::Dense { shape: dense_shape, values } => {
            assert!(kept.len() < 3, "{what}: a dense result of rank {}", kept.len());
            assert_eq!(dense_shape, kept_shape, "{what}: the dense shape");
            let count = dense_count.expect("a dense result's count fits a u64");
            assert!(count <= max_elements, "{what}: {count} elements over the cap");
            let width = usize::from(sum_type.byte_width().expect("a whole-byte type"));
            assert_eq!(values.len() as u64, count * width as u64, "{what}: not {count} elements");
            // Row-major: element k's index, by its kept extents.
            values
                .chunks_exact(width)
                .enumerate()
                .map(|(k, bytes)| {
                    let mut rest = k as u64;
                    let mut index: Vec<u64> = kept_shape
                        .iter()
                        .rev()
                        .map(|&n| {
                            let c = rest % n;
                            rest /= n;
                            c
                        })
                        .collect();
                    index.reverse();
                    (index, Num::read(bytes, sum_type))
                })
                .collect()
        }
    };
    let Some(stored) = reference else { return };
    // By brute force: the values of each kept index added in leaf order;
    // a dense result starts every element at zero.
    let mut sums: BTreeMap<Vec<u64>, Num> = BTreeMap::new();
    if kept.len() < 3 {
        for (index, _) in &got {
            sums.insert(index.clone(), Num::zero(sum_type));
        }
    }
    for entry in stored {
        let value = Num::of(entry.value).expect("a summable value");
        let key: Vec<u64> = kept.iter().map(|&d| entry.index[d]).collect();
        sums.entry(key).and_modify(|s| *s = s.plus(value)).or_insert(value);
    }
    assert_eq!(got.len(), sums.len(), "{what}: {} elements, the reference {}", got.len(), sums.len());
    for ((index, g), (key, w)) in got.iter().zip(&sums) {
        assert!(index == key && g.same(*w), "{what}: {index:?} = {g:?}, the reference {key:?} = {w:?}");
    }
}
