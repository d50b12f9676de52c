//! Target `build_roundtrip`: an arbitrary COO tensor through the builder,
//! checked against a plain reference model (a map from index to value).

use std::borrow::Cow;
use std::collections::BTreeMap;

use arbitrary::{Result, Unstructured};
use csf_build::{
    BuildError, Built, Coo, Duplicates, Indices, ModeOrderPolicy, Options, OwnedCoo, Quantize, ReorderOptions,
};
use csf_core::{CsfView, Values};
use hurray_format::{Container, ElementType, Packing, QuantScheme};

/// Entries per tensor: enough for every level shape, small enough to be fast.
const MAX_ENTRIES: usize = 96;

/// A COO tensor and the options to build it with.
#[derive(Debug)]
pub(crate) struct Case {
    shape: Vec<u64>,
    /// Row-major coordinates.
    indices: Vec<u64>,
    element_type: ElementType,
    /// Packed as the element type prescribes.
    values: Vec<u8>,
    options: Options,
    columnar: bool,
    with_statistics: bool,
}

/// A permutation of `0..n`, by Fisher-Yates.
fn permutation(u: &mut Unstructured<'_>, n: usize) -> Result<Vec<u32>> {
    let mut order: Vec<u32> = (0..n as u32).collect();
    for i in (1..n).rev() {
        order.swap(i, u.int_in_range(0..=i)?);
    }
    Ok(order)
}

/// A quantization scheme (the builder refuses many: any type is drawn).
/// Per-channel needs one scale per index of the axis, so it is only drawn for
/// an axis of at most 2^16 indices (docs/fuzzing.md, finding 4).
fn quantize(u: &mut Unstructured<'_>, shape: &[u64]) -> Result<Quantize> {
    let rank = shape.len();
    let dtype = *u.choose(ElementType::ALL)?;
    let zero_point = u.arbitrary()?;
    let block_size = u.int_in_range(0..=40)?;
    Ok(match u.int_in_range(0..=4u8)? {
        0 => Quantize::PerTensor { dtype, zero_point },
        1 => match u.int_in_range(0..=rank as u32)? {
            axis if shape.get(axis as usize).is_some_and(|&n| n > 1 << 16) => {
                Quantize::PerTensor { dtype, zero_point }
            }
            axis => Quantize::PerChannel { axis, dtype, zero_point },
        },
        2 => Quantize::PerBlock { block_size, dtype, zero_point },
        3 => Quantize::Nf4 { block_size },
        _ => Quantize::Mxfp { dtype },
    })
}

impl Case {
    fn statistics_section(&self) -> csf_build::StatisticsSection {
        if self.with_statistics {
            csf_build::StatisticsSection::Include
        } else {
            csf_build::StatisticsSection::Omit
        }
    }

    pub(crate) fn generate(u: &mut Unstructured<'_>) -> Result<Self> {
        let rank = u.int_in_range(3..=8usize)?;
        let mut shape = Vec::with_capacity(rank);
        for _ in 0..rank {
            shape.push(match u.int_in_range(0..=15u8)? {
                0 => 0,
                1 => u.int_in_range(1..=u64::MAX)?, // wide keys: u128 and comparison paths
                2 => 1,
                _ => u.int_in_range(1..=7)?,
            });
        }
        let len = u.int_in_range(0..=MAX_ENTRIES)?;
        let mut indices = Vec::with_capacity(len * rank);
        for _ in 0..len {
            for &extent in &shape {
                // Now and then one coordinate on the edge of the shape: an error to report.
                let coord =
                    if extent == 0 || u.ratio(1u8, 200)? { extent } else { u.int_in_range(0..=extent - 1)? };
                indices.push(coord);
            }
        }
        if u.ratio(1u8, 3)? {
            // Files are often written in storage order: entries sorted by
            // their coordinates, now and then with one moved out of place,
            // take the presorted paths (the one pass, and the strays merged).
            let mut rows: Vec<&[u64]> = indices.chunks_exact(rank).collect();
            rows.sort();
            let mut sorted: Vec<u64> = rows.concat();
            if len > 1 && u.arbitrary()? {
                let (a, b) = (u.choose_index(len)?, u.choose_index(len)?);
                for d in 0..rank {
                    sorted.swap(a * rank + d, b * rank + d);
                }
            }
            indices = sorted;
        }
        let element_type = *u.choose(ElementType::ALL)?;
        let mut values = vec![0u8; element_type.values_len(len as u64).expect("small") as usize];
        u.fill_buffer(&mut values)?;
        let mode_order = match u.int_in_range(0..=2u8)? {
            0 => ModeOrderPolicy::Identity,
            1 => ModeOrderPolicy::Explicit(permutation(u, rank)?),
            _ => ModeOrderPolicy::Auto,
        };
        let duplicates =
            *u.choose(&[Duplicates::Error, Duplicates::Sum, Duplicates::Last, Duplicates::First])?;
        let options = Options {
            mode_order,
            duplicates,
            drop_zeros: u.arbitrary()?,
            parallel: u.ratio(1u8, 8)?,
            quantize: if u.ratio(1u8, 4)? { Some(quantize(u, &shape)?) } else { None },
        };
        Ok(Self {
            shape,
            indices,
            element_type,
            values,
            options,
            columnar: u.arbitrary()?,
            with_statistics: u.arbitrary()?,
        })
    }

    fn rank(&self) -> usize {
        self.shape.len()
    }

    fn len(&self) -> usize {
        self.indices.len() / self.rank()
    }

    fn index(&self, entry: usize) -> &[u64] {
        &self.indices[entry * self.rank()..(entry + 1) * self.rank()]
    }

    fn in_shape(&self, entry: usize) -> bool {
        self.index(entry).iter().zip(&self.shape).all(|(&i, &n)| i < n)
    }

    /// The raw bits of entry `entry`'s value (a 4-bit type: its code), as a
    /// reader reads them: a bool is 0 or 1, an FP6 value its low six bits.
    fn raw(&self, entry: usize) -> u64 {
        let raw = raw(self.element_type, &self.values, entry);
        match self.element_type {
            ElementType::Bool => u64::from(raw != 0),
            ElementType::F6E2M3 | ElementType::F6E3M2 => raw & 0x3f,
            _ => raw,
        }
    }

    fn kept(&self, entry: usize) -> bool {
        let zero = Values::new(self.element_type, &self.values).get_raw_f64(entry) == Some(0.0);
        !(self.options.drop_zeros && zero)
    }
}

/// The raw bits of element `i` of a packed values buffer.
fn raw(ty: ElementType, values: &[u8], i: usize) -> u64 {
    match ty.packing() {
        Packing::Bytes(w) => {
            let w = usize::from(w);
            let mut le = [0u8; 8];
            le[..w].copy_from_slice(&values[i * w..(i + 1) * w]);
            u64::from_le_bytes(le)
        }
        Packing::SubByte { bits, per_byte } => {
            let per_byte = usize::from(per_byte);
            let shift = (i % per_byte) as u32 * u32::from(bits);
            u64::from(values[i / per_byte] >> shift) & ((1 << bits) - 1)
        }
    }
}

/// `a + b` as `Duplicates::Sum` defines it (integers wrap, bool is OR).
fn add(ty: ElementType, a: u64, b: u64) -> Option<u64> {
    let bits = u32::from(ty.bits());
    let mask = if bits == 64 { u64::MAX } else { (1 << bits) - 1 };
    Some(match ty {
        ElementType::Bool => a | b,
        ElementType::F32 => u64::from((f32::from_bits(a as u32) + f32::from_bits(b as u32)).to_bits()),
        ElementType::F64 => (f64::from_bits(a) + f64::from_bits(b)).to_bits(),
        ElementType::I8
        | ElementType::I16
        | ElementType::I32
        | ElementType::I64
        | ElementType::U8
        | ElementType::U16
        | ElementType::U32
        | ElementType::U64 => a.wrapping_add(b) & mask,
        _ => return None,
    })
}

/// What the builder must do with a case.
#[derive(Debug)]
enum Expect {
    CannotSum,
    /// Entry `first_bad` (input order, among the entries kept) leaves the shape.
    OutOfBounds {
        first_bad: usize,
    },
    Duplicate,
    /// The entries `(logical index, raw value)`, each index once.
    Built(BTreeMap<Vec<u64>, u64>),
}

fn expect(case: &Case) -> Expect {
    let ty = case.element_type;
    if case.options.duplicates == Duplicates::Sum && add(ty, 0, 0).is_none() {
        return Expect::CannotSum;
    }
    // Every entry's coordinates are input, even a zero that `drop_zeros` drops.
    if let Some(first_bad) = (0..case.len()).find(|&i| !case.in_shape(i)) {
        return Expect::OutOfBounds { first_bad };
    }
    let kept: Vec<usize> = (0..case.len()).filter(|&i| case.kept(i)).collect();
    let mut map = BTreeMap::new();
    for &i in &kept {
        let value = case.raw(i);
        match map.entry(case.index(i).to_vec()) {
            std::collections::btree_map::Entry::Vacant(slot) => {
                slot.insert(value);
            }
            std::collections::btree_map::Entry::Occupied(mut slot) => match case.options.duplicates {
                Duplicates::Error => return Expect::Duplicate,
                Duplicates::First => {}
                Duplicates::Last => *slot.get_mut() = value,
                Duplicates::Sum => *slot.get_mut() = add(ty, *slot.get(), value).expect("summable"),
            },
        }
    }
    Expect::Built(map)
}

/// Build, and compare with the reference model.
pub(crate) fn roundtrip(case: &Case, u: &mut Unstructured<'_>) {
    let columns: Vec<Vec<u64>> =
        (0..case.rank()).map(|d| (0..case.len()).map(|i| case.index(i)[d]).collect()).collect();
    let column_slices: Vec<&[u64]> = columns.iter().map(Vec::as_slice).collect();
    let indices =
        if case.columnar { Indices::Columnar(&column_slices) } else { Indices::RowMajor(&case.indices) };
    let coo = Coo {
        shape: &case.shape,
        indices,
        element_type: case.element_type,
        values: Cow::Borrowed(&case.values),
    };
    let result = csf_build::build(&coo, &case.options);
    // The owned build (which builds sorted input over the input's own
    // arrays, and restores them when it gives up) must agree exactly.
    let owned = OwnedCoo {
        shape: case.shape.clone(),
        columns,
        element_type: case.element_type,
        values: case.values.clone(),
    };
    match (csf_build::build_owned(owned, &case.options), &result) {
        (Ok(a), Ok(b)) => assert!(
            a.tensor == b.tensor && a.removed == b.removed && a.auto == b.auto,
            "build_owned built another tensor"
        ),
        // Debug forms: an error may carry a NaN.
        (Err(a), Err(b)) => assert_eq!(format!("{a:?}"), format!("{b:?}"), "build_owned failed otherwise"),
        (a, b) => panic!("build_owned returned {a:?}, build {b:?}"),
    }
    match (expect(case), result) {
        (Expect::CannotSum, Err(BuildError::CannotSum(ty))) => assert_eq!(ty, case.element_type),
        (Expect::OutOfBounds { first_bad }, Err(BuildError::OutOfBounds { entry, dim, coord, extent })) => {
            assert!(entry <= first_bad, "reported entry {entry}, but {first_bad} is the first bad one");
            assert_eq!((case.index(entry)[dim], case.shape[dim]), (coord, extent), "wrong culprit");
            assert!(coord >= extent, "entry {entry} is inside the shape");
        }
        (Expect::Duplicate, Err(BuildError::Duplicate { index, first, second })) => {
            assert!(first < second, "duplicate entries {first}, {second} out of order");
            assert!(case.index(first) == index && case.index(second) == index, "not a duplicate: {index:?}");
            assert!(case.kept(first) && case.kept(second), "a dropped entry reported as a duplicate");
        }
        (Expect::Built(map), Ok(built)) if case.options.quantize.is_some() => {
            check_quantized(case, &map, &built, u)
        }
        (Expect::Built(map), Ok(built)) => check_built(case, &map, &built, u),
        // Whether a scheme takes a type, axis, block size and values is the
        // quantizer's call; a refusal is fine, a built file is checked.
        (Expect::Built(_), Err(BuildError::Quantize(_))) if case.options.quantize.is_some() => {}
        (expected, got) => panic!("expected {expected:?}, the builder returned {got:?}"),
    }
}

/// The built tensor, written and read back, holds exactly `map`.
fn check_built(case: &Case, map: &BTreeMap<Vec<u64>, u64>, built: &Built, u: &mut Unstructured<'_>) {
    let view = built.tensor.view();
    let mode_order = view.mode_order().to_vec();
    match &case.options.mode_order {
        ModeOrderPolicy::Identity => assert!(mode_order.iter().enumerate().all(|(l, &d)| d as usize == l)),
        ModeOrderPolicy::Explicit(order) => assert_eq!(&mode_order, order, "explicit mode order not kept"),
        ModeOrderPolicy::Auto => check_auto(case, built),
    }
    assert_eq!(built.removed, (case.len() - map.len()) as u64, "removed count");

    let bytes = built.to_bytes(case.statistics_section()).expect("a built tensor encodes");
    let container =
        Container::decode(&bytes).unwrap_or_else(|e| panic!("a built tensor does not decode: {e}"));
    let report = csf_validate::report(&container, csf_validate::Mode::Strict, 4);
    assert!(report.errors.is_empty() && report.warnings.is_empty(), "built tensor is not valid: {report:?}");
    let valid = csf_validate::validate(&container).expect("valid");

    // Iteration order is storage order: the reference sorted by permuted index.
    let nan = case.options.duplicates == Duplicates::Sum;
    let map: BTreeMap<Vec<u64>, u64> =
        map.iter().map(|(i, &v)| (i.clone(), canonical(case.element_type, v, nan))).collect();
    let mut want: Vec<(Vec<u64>, u64)> = map.iter().map(|(i, &v)| (i.clone(), v)).collect();
    want.sort_by_key(|(index, _)| mode_order.iter().map(|&d| index[d as usize]).collect::<Vec<_>>());
    assert_eq!(entries(&valid, nan), want, "the built tensor holds other entries");

    // Re-ordering keeps the entries.
    let order = permutation(u, case.rank()).unwrap_or_else(|_| (0..case.rank() as u32).collect());
    let again =
        csf_build::reorder(&view, &sequential(ModeOrderPolicy::Explicit(order.clone()))).expect("reorder");
    let again = again.tensor.view();
    assert_eq!(again.mode_order(), order.as_slice(), "reorder did not use the mode order asked");
    let mut got = entries(&again, nan);
    got.sort();
    assert_eq!(got, map.iter().map(|(i, &v)| (i.clone(), v)).collect::<Vec<_>>(), "reorder changed entries");
}

/// A quantized tensor: it validates strictly and holds the model's indices
/// in storage order (its values are the quantizer's business); re-ordered, it
/// stays quantized with the same scheme, and where the scheme's groups do not
/// follow leaf order (per-tensor, per-channel) every value is bit-identical.
fn check_quantized(case: &Case, map: &BTreeMap<Vec<u64>, u64>, built: &Built, u: &mut Unstructured<'_>) {
    let bytes = built.to_bytes(case.statistics_section()).expect("a quantized tensor encodes");
    let container =
        Container::decode(&bytes).unwrap_or_else(|e| panic!("a quantized tensor does not decode: {e}"));
    let report = csf_validate::report(&container, csf_validate::Mode::Strict, 4);
    assert!(
        report.errors.is_empty(),
        "quantized tensor is not valid: {report:?} {:?}",
        case.options.quantize
    );
    let valid = csf_validate::validate(&container).expect("valid");
    let mode_order = valid.mode_order().to_vec();
    let mut want: Vec<Vec<u64>> = map.keys().cloned().collect();
    want.sort_by_key(|index| mode_order.iter().map(|&d| index[d as usize]).collect::<Vec<_>>());
    let got: Vec<Vec<u64>> = entries(&valid, false).into_iter().map(|(index, _)| index).collect();
    assert_eq!(got, want, "the quantized tensor holds other indices");

    let view = built.tensor.view();
    let order = permutation(u, case.rank()).unwrap_or_else(|_| (0..case.rank() as u32).collect());
    let Ok(again) = csf_build::reorder(&view, &sequential(ModeOrderPolicy::Explicit(order))) else {
        // Only re-quantizing can fail, on a value that is not finite (an
        // MXFP block whose scale is NaN, say).
        let scheme = view.quantization().map(|q| q.scheme);
        assert!(!matches!(scheme, Some(QuantScheme::PerTensor | QuantScheme::PerChannel)), "reorder failed");
        return;
    };
    let bytes = again.to_bytes(case.statistics_section()).expect("a re-ordered tensor encodes");
    let container = Container::decode(&bytes).expect("a re-ordered tensor decodes");
    let report = csf_validate::report(&container, csf_validate::Mode::Strict, 4);
    assert!(report.errors.is_empty(), "re-ordered quantized tensor is not valid: {report:?}");
    let again = again.tensor.view();
    let (before, after) = (view.quantization().expect("quantized"), again.quantization());
    let after =
        after.unwrap_or_else(|| panic!("reorder dropped the quantization {:?}", case.options.quantize));
    assert_eq!((after.scheme, again.element_type()), (before.scheme, view.element_type()), "scheme changed");
    let mut count = 0;
    again.for_each(|index, leaf| {
        count += 1;
        if matches!(before.scheme, QuantScheme::PerTensor | QuantScheme::PerChannel) {
            let was = view.get_dequantized(index).expect("in shape");
            let now = again.value_f32(leaf, index).expect("a value");
            assert_eq!(now.to_bits(), was.to_bits(), "reorder changed the value at {index:?}");
        }
    });
    assert_eq!(count, map.len(), "reorder changed the number of entries");
}

/// `(logical index, raw value)` in iteration order.
/// With `nan`, every NaN reads as one value: a sum's NaN payload is not
/// specified (the compiler may swap the operands of a float addition).
fn entries(view: &CsfView<'_>, nan: bool) -> Vec<(Vec<u64>, u64)> {
    let bytes = view.values().as_bytes();
    let ty = view.element_type();
    let mut out = Vec::new();
    view.for_each(|index, leaf| out.push((index.to_vec(), canonical(ty, raw(ty, bytes, leaf), nan))));
    out
}

/// `raw`, with every f32/f64 NaN as `u64::MAX` when `nan`.
fn canonical(ty: ElementType, raw: u64, nan: bool) -> u64 {
    let is_nan = match ty {
        ElementType::F32 => f32::from_bits(raw as u32).is_nan(),
        ElementType::F64 => f64::from_bits(raw).is_nan(),
        _ => false,
    };
    if nan && is_nan {
        u64::MAX
    } else {
        raw
    }
}

/// `Auto` picked a permutation, and reported its size truthfully.
fn check_auto(case: &Case, built: &Built) {
    let choice = built.auto.as_ref().expect("Auto reports its choice");
    let view = built.tensor.view();
    assert_eq!(choice.mode_order.as_slice(), view.mode_order(), "Auto reports another order than it used");
    let mut seen = vec![false; case.rank()];
    assert!(view.mode_order().iter().all(|&d| !std::mem::replace(&mut seen[d as usize], true)));
    for (order, bytes) in &choice.compared {
        assert!(
            choice.index_bytes <= *bytes,
            "Auto chose {} bytes over {order:?} at {bytes}",
            choice.index_bytes
        );
    }
    let stored: u64 = view.levels().iter().map(|l| 8 * (l.pos.len() + l.crd.len()) as u64).sum();
    // `index_bytes` is what the tensor stores (finding 6 of docs/fuzzing.md, fixed).
    assert_eq!(choice.index_bytes, stored, "Auto's index_bytes is not what it stores: {case:?} {choice:?}");
}

/// Re-ordering to `mode_order` on the calling thread (a fuzz run is one
/// thread; rayon would only add noise).
fn sequential(mode_order: ModeOrderPolicy) -> ReorderOptions {
    ReorderOptions { mode_order, parallel: false }
}
