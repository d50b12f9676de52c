#![doc = include_str!("../README.md")]
// `unsafe` lives in one module, `disjoint` (the radix scatter's writes from
// several threads into disjoint ranges of one array), and nowhere else.
#![deny(unsafe_code)]
#![cfg_attr(docsrs, feature(doc_cfg))]

mod bucket;
mod build;
mod compare;
mod concat;
mod dense;
mod disjoint;
mod distinct;
mod external;
mod key;
mod order;
mod positioned;
mod presorted;
mod quantize;
mod ranges;
mod reduce;
mod select;
mod sort;
mod values;

use std::borrow::Cow;

use hurray_format::limits::RankError;
use hurray_format::{ElementType, Statistics};

use csf_core::{CsfView, OwnedCsf};

pub use build::{build, build_owned, reorder, ReorderOptions};
pub use compare::equal;
pub use concat::{concat, ArraySink, ConcatError, Joined, Joiner, VecSink};
pub use dense::{from_dense, Dense, DenseOptions};
pub use external::{
    join_files, ExternalBuilder, ExternalError, ExternalOptions, ExternalReport, FileJoiner, JoinReport,
};
pub use positioned::build_at;
pub use ranges::KeyRanges;
pub use reduce::{sum_axes, Reduced};
pub use select::*;

pub use order::{AutoChoice, EXACT_MAX_RANK};
pub use quantize::{quantize, ParseQuantizeError, Quantize, QuantizeError, MAX_CHANNELS};

/// The coordinates of a COO tensor.
#[derive(Clone, Copy, Debug)]
pub enum Indices<'a> {
    /// `rank` coordinates per entry, entry after entry (`[i0, j0, k0, i1, j1, k1, ...]`).
    RowMajor(&'a [u64]),
    /// One array per dimension (`[[i0, i1, ...], [j0, j1, ...], ...]`).
    Columnar(&'a [&'a [u64]]),
}

/// A COO tensor to build from: borrowed coordinates and values.
///
/// # Example
/// ```
/// use csf_build::{Coo, Indices};
/// use hurray_format::ElementType;
///
/// // The same two entries of a [2, 3, 4] tensor, entry by entry or one array per dimension.
/// let row_major = Coo::new(&[2, 3, 4], Indices::RowMajor(&[0, 0, 1, 1, 2, 3]), &[1.5f32, 2.5]);
/// let (i, j, k): (&[u64], &[u64], &[u64]) = (&[0, 1], &[0, 2], &[1, 3]);
/// let columns = [i, j, k];
/// let columnar = Coo::new(&[2, 3, 4], Indices::Columnar(&columns), &[1.5f32, 2.5]);
/// assert_eq!(row_major.element_type, ElementType::F32);
/// assert_eq!(row_major.values, columnar.values); // little-endian bytes, 4 per value
/// ```
#[derive(Clone, Debug)]
pub struct Coo<'a> {
    /// The logical shape; its length is the rank.
    pub shape: &'a [u64],
    /// Each entry's coordinates, one per dimension, entry by entry or
    /// dimension by dimension.
    pub indices: Indices<'a>,
    /// The values' element type.
    pub element_type: ElementType,
    /// The values, packed as `element_type` prescribes (little-endian; two
    /// per byte, low nibble first, for 4-bit types).
    pub values: Cow<'a, [u8]>,
}

impl<'a> Coo<'a> {
    /// A COO tensor with values of a native type (`f32`, `i64`, ...).
    pub fn new<T: csf_core::Element>(shape: &'a [u64], indices: Indices<'a>, values: &'a [T]) -> Self {
        let values = if cfg!(target_endian = "little") {
            Cow::Borrowed(bytemuck::cast_slice(values))
        } else {
            Cow::Owned(values.iter().flat_map(|v| bytemuck::bytes_of(v).iter().rev().copied()).collect())
        };
        Self { shape, indices, element_type: T::TYPE, values }
    }
}

/// A COO tensor whose arrays [`build_owned`] may take over: one coordinate
/// array per dimension and the values, owned.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OwnedCoo {
    /// The logical shape; its length is the rank.
    pub shape: Vec<u64>,
    /// One array of coordinates per dimension, each as long as there are entries.
    pub columns: Vec<Vec<u64>>,
    /// The values' element type.
    pub element_type: ElementType,
    /// The values, packed as `element_type` prescribes (little-endian; two
    /// per byte, low nibble first, for 4-bit types).
    pub values: Vec<u8>,
}

/// How the builder picks the mode order it stores (the descriptor's field
/// itself is [`hurray_format::ModeOrder`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum ModeOrderPolicy {
    /// `[0, 1, ..., rank-1]`, the spec's default for writers with no preference.
    #[default]
    Identity,
    /// This permutation.
    Explicit(Vec<u32>),
    /// The order that stores the fewest bytes (see [`AutoChoice`]).
    Auto,
}

/// What to do with entries that share a coordinate.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Duplicates {
    /// Fail, naming the first duplicate (the default).
    #[default]
    Error,
    /// Add them up (integers wrap; `bool` is OR). Only for the integer types
    /// of whole bytes (`i4` and `u4` are refused), `bool`, `f32` and `f64`.
    Sum,
    /// Keep the one that comes last in the input.
    Last,
    /// Keep the one that comes first in the input.
    First,
}

/// How to build.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Options {
    /// How the stored mode order is chosen (identity by default).
    pub mode_order: ModeOrderPolicy,
    /// What to do with entries that share an index (fail by default).
    pub duplicates: Duplicates,
    /// Drop input entries whose value is zero (explicit zeros are kept by default:
    /// they are stored values). With [`Duplicates::Sum`], sums that come to zero are kept.
    pub drop_zeros: bool,
    /// Use rayon's thread pool.
    pub parallel: bool,
    /// Quantize the values after building (`docs/format.md` § 5.7).
    pub quantize: Option<Quantize>,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            mode_order: ModeOrderPolicy::Identity,
            duplicates: Duplicates::Error,
            drop_zeros: false,
            parallel: true,
            quantize: None,
        }
    }
}

/// Why a tensor could not be built.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum BuildError {
    /// CSF needs rank >= 3.
    #[error("{}", RankError::TooSmall(*rank))]
    RankTooSmall {
        /// The rank asked for (the shape's length).
        rank: usize,
    },
    /// Rank above the cap.
    #[error("{}", RankError::TooLarge(*rank))]
    RankTooLarge {
        /// The rank asked for (the shape's length).
        rank: usize,
    },
    /// The arrays do not agree in length.
    #[error("{what}: {found} given, {expected} expected")]
    LengthMismatch {
        /// Which array.
        what: &'static str,
        /// Its length.
        found: u64,
        /// The length the other inputs imply.
        expected: u64,
    },
    /// The explicit mode order is not a permutation of `0..rank`.
    #[error("mode order {order:?} is not a permutation of 0..{rank}")]
    BadModeOrder {
        /// The order given.
        order: Vec<u32>,
        /// The tensor's rank, which the order must permute.
        rank: usize,
    },
    /// A coordinate is outside the shape.
    #[error("entry {entry}: coordinate {coord} of dimension {dim} is outside its extent {extent}")]
    OutOfBounds {
        /// The entry's position in the input.
        entry: usize,
        /// The logical dimension the coordinate is for.
        dim: usize,
        /// The coordinate given.
        coord: u64,
        /// The shape's extent in that dimension, which the coordinate must be below.
        extent: u64,
    },
    /// Two entries share a coordinate and the policy is [`Duplicates::Error`].
    #[error("entries {first} and {second} share the index {index:?}")]
    Duplicate {
        /// The logical index both entries hold.
        index: Vec<u64>,
        /// The earlier entry's position in the input.
        first: usize,
        /// The later entry's position.
        second: usize,
    },
    /// Quantization failed.
    #[error(transparent)]
    Quantize(#[from] QuantizeError),
    /// csf-core refused the built arrays as a tensor (a bug of the builder
    /// if it ever happens: every header was checked before the build).
    #[error("the built tensor: {0}")]
    Parts(#[from] csf_core::PartsError),
    /// A stored leaf of the tensor being re-ordered has no value (its
    /// position is not below `nnz`, or its quantization group has no
    /// parameters): possible only on unvalidated input.
    #[error("leaf {leaf} has no value (the tensor was not validated)")]
    MissingValue {
        /// The leaf position (in storage order) whose value is missing.
        leaf: u64,
    },
    /// [`Duplicates::Sum`] on a type without exact addition here.
    #[error("cannot sum duplicate {0} values; choose first, last or error")]
    CannotSum(ElementType),
    /// An operation that does not take values of this element type
    /// ([`from_dense`]: `bool`, whole-byte integers, `f16`, `f32`, `f64`;
    /// [`sum_axes`]: `i64`, `u64`, `f32`, `f64`).
    #[error("{operation} does not take {element_type} values")]
    UnsupportedType {
        /// The operation refused (`"from_dense"`, `"sum"`).
        operation: &'static str,
        /// The element type it was given.
        element_type: ElementType,
    },
    /// A key-range bound is not above the bound before it ([`KeyRanges::from_bounds`]).
    #[error("key-range bound {at} is not above the bound before it")]
    UnorderedBounds {
        /// The bound's position in the list.
        at: usize,
    },
    /// A dense array's element count (or byte count) overflows a `u64`.
    #[error("the shape {shape:?} has more elements (or bytes) than a u64 counts")]
    ShapeOverflow {
        /// The shape given.
        shape: Vec<u64>,
    },
    /// The axes to sum over are not dimensions of the tensor, each once,
    /// in increasing order.
    #[error("axes {axes:?} are not distinct dimensions of a rank-{rank} tensor in increasing order")]
    BadAxes {
        /// The axes given.
        axes: Vec<usize>,
        /// The tensor's rank.
        rank: usize,
    },
    /// A dense result would hold more elements than the caller allows (or
    /// than a `u64` counts).
    #[error("a dense result of shape {shape:?} has more than max_elements = {max_elements} elements")]
    TooManyElements {
        /// The result's shape.
        shape: Vec<u64>,
        /// The most elements allowed.
        max_elements: u64,
    },
}

/// A built tensor.
#[derive(Clone, Debug)]
pub struct Built {
    /// The tensor; it satisfies every rule of the spec.
    pub tensor: OwnedCsf,
    /// What `ModeOrderPolicy::Auto` chose and compared, when it ran.
    pub auto: Option<AutoChoice>,
    /// Input entries merged into others or dropped as zeros.
    pub removed: u64,
}

/// Whether a written container carries the optional statistics section
/// (nnz, sparsity ratio, min and max of the values; csf-layout § Interaction
/// with Statistics Section).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum StatisticsSection {
    /// Write it (what `hurray convert` does by default).
    #[default]
    Include,
    /// Leave it out.
    Omit,
}

impl Built {
    /// The statistics section for this tensor: nnz, sparsity ratio, min and max of the values.
    pub fn statistics(&self) -> Statistics {
        statistics(&self.tensor.view())
    }

    /// The descriptor to write, with the statistics section or without.
    fn descriptor(&self, section: StatisticsSection) -> hurray_format::Descriptor {
        let mut descriptor = self.tensor.descriptor();
        if section == StatisticsSection::Include {
            descriptor.statistics = Some(self.statistics());
        }
        descriptor
    }

    /// The container bytes.
    ///
    /// # Errors
    /// As [`hurray_format::encode_to_vec`].
    pub fn to_bytes(&self, section: StatisticsSection) -> Result<Vec<u8>, hurray_format::EncodeError> {
        self.tensor.encode_with(&self.descriptor(section))
    }

    /// Streams the container to `writer`, buffer by buffer, without making it
    /// in memory first, and returns its length in bytes. The bytes are
    /// [`to_bytes`](Self::to_bytes)'s. (Write to a temporary file and rename it
    /// into place to never leave half a file.)
    ///
    /// # Errors
    /// As [`hurray_format::encode_to_writer`].
    pub fn write_to(
        &self,
        writer: impl std::io::Write,
        section: StatisticsSection,
    ) -> Result<u64, hurray_format::EncodeError> {
        hurray_format::encode_to_writer(&self.descriptor(section), &self.tensor.buffers(), writer)
    }
}

/// The statistics section of a view: nnz, `1 - nnz / total_elements`, and the
/// min and max of the values as the tensor means them (dequantized when the
/// tensor is quantized; NaNs skipped).
pub fn statistics(view: &CsfView<'_>) -> Statistics {
    let total = view.shape().iter().map(|&d| d as f64).product::<f64>();
    let nnz = view.nnz();
    let sparsity_ratio = if total > 0.0 { 1.0 - nnz as f64 / total } else { 0.0 };
    let mut range = Range::default();
    if view.quantization().is_some() {
        view.for_each_dequantized(|_, v| range.see(f64::from(v)));
    } else if !range.of_typed(view) {
        let values = view.values();
        (0..nnz as usize).filter_map(|leaf| values.get_raw_f64(leaf)).for_each(|v| range.see(v));
    }
    Statistics { nnz, sparsity_ratio, min: range.min(), max: range.max() }
}

/// The smallest and largest value seen, NaNs skipped.
struct Range {
    min: f64,
    max: f64,
    seen: bool,
}

impl Default for Range {
    fn default() -> Self {
        Self { min: f64::INFINITY, max: f64::NEG_INFINITY, seen: false }
    }
}

impl Range {
    #[inline(always)]
    fn see(&mut self, v: f64) {
        if !v.is_nan() {
            self.min = self.min.min(v);
            self.max = self.max.max(v);
            self.seen = true;
        }
    }

    fn min(&self) -> Option<f64> {
        self.seen.then_some(self.min)
    }

    fn max(&self) -> Option<f64> {
        self.seen.then_some(self.max)
    }

    /// Sees every value of an unquantized view whose element type has a
    /// Rust equivalent, read as a typed slice (one dispatch on the type,
    /// not one per value); false for the other types.
    fn of_typed(&mut self, view: &CsfView<'_>) -> bool {
        use hurray_format::ElementType as E;
        match view.element_type() {
            E::F64 => self.of::<f64>(view, |v| v),
            E::F32 => self.of::<f32>(view, f64::from),
            E::I8 => self.of::<i8>(view, f64::from),
            E::I16 => self.of::<i16>(view, f64::from),
            E::I32 => self.of::<i32>(view, f64::from),
            E::I64 => self.of::<i64>(view, |v| v as f64),
            E::U8 => self.of::<u8>(view, f64::from),
            E::U16 => self.of::<u16>(view, f64::from),
            E::U32 => self.of::<u32>(view, f64::from),
            E::U64 => self.of::<u64>(view, |v| v as f64),
            _ => false,
        }
    }

    fn of<T: csf_core::Element>(&mut self, view: &CsfView<'_>, to_f64: impl Fn(T) -> f64) -> bool {
        let Ok(typed) = view.typed_values::<T>() else { return false };
        let nnz = usize::try_from(view.nnz()).unwrap_or(usize::MAX);
        match typed.as_native() {
            Some(slice) => slice.iter().take(nnz).for_each(|&v| self.see(to_f64(v))),
            None => typed.iter().take(nnz).for_each(|v| self.see(to_f64(v))),
        }
        true
    }
}

/// The smallest shape that holds every coordinate of `indices` (rank
/// `rank`): one more than the largest coordinate of each dimension, 0 for
/// every dimension of an empty list.
///
/// # Errors
/// [`BuildError::LengthMismatch`] as [`build`] reports it, and
/// [`BuildError::OutOfBounds`] for a coordinate of `u64::MAX`, which no
/// extent can hold.
pub fn shape_of(indices: Indices<'_>, rank: usize) -> Result<Vec<u64>, BuildError> {
    check_rank(rank)?;
    let len = build::entry_count(indices, rank)?;
    let source = Source { shape: &vec![0; rank], indices, len, packed: None };
    let mut shape = vec![0u64; rank];
    for entry in 0..len {
        for (dim, extent) in shape.iter_mut().enumerate() {
            let coord = source.coord(entry, dim);
            let above = coord.checked_add(1).ok_or(BuildError::OutOfBounds {
                entry,
                dim,
                coord,
                extent: u64::MAX,
            })?;
            *extent = (*extent).max(above);
        }
    }
    Ok(shape)
}

/// The input as the builder reads it: coordinates by (entry, dimension).
pub(crate) struct Source<'a> {
    pub(crate) shape: &'a [u64],
    pub(crate) indices: Indices<'a>,
    pub(crate) len: usize,
    /// The entries as keys packed in identity order (`build_owned`'s
    /// `Auto`, which counts over them, see `build/packed.rs`): every
    /// coordinate is read out of the keys, and `indices` is not read. Only
    /// `Auto`'s counting reads a source that has them.
    pub(crate) packed: Option<Packed<'a>>,
}

/// Every entry's key in input order: its coordinates packed by `layout`, a
/// layout of the identity order (level `d` is dimension `d`), so that
/// `key >> layout.position_bits` is the full layout of `Auto`'s partition
/// passes (every dimension, the first in the highest bits, each in the bits
/// its extent needs).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Packed<'a> {
    pub(crate) keys: &'a [u64],
    pub(crate) layout: &'a key::Layout,
}

impl Packed<'_> {
    /// Dimension `dim`'s coordinate in `key`.
    #[inline(always)]
    pub(crate) fn coord_of(&self, key: u64, dim: usize) -> u64 {
        key >> self.layout.shift[dim] & self.layout.mask[dim]
    }
}

impl Source<'_> {
    /// The error for entries `a` and `b`, which share a logical index.
    pub(crate) fn duplicate(&self, a: usize, b: usize) -> BuildError {
        BuildError::Duplicate {
            index: (0..self.shape.len()).map(|d| self.coord(b, d)).collect(),
            first: a.min(b),
            second: a.max(b),
        }
    }

    #[inline]
    pub(crate) fn coord(&self, entry: usize, dim: usize) -> u64 {
        if let Some(packed) = self.packed {
            return packed.coord_of(packed.keys[entry], dim);
        }
        match self.indices {
            Indices::RowMajor(flat) => flat[entry * self.shape.len() + dim],
            Indices::Columnar(cols) => cols[dim][entry],
        }
    }
}

pub(crate) fn check_rank(rank: usize) -> Result<(), BuildError> {
    RankError::check(rank).map_err(|e| match e {
        RankError::TooSmall(rank) => BuildError::RankTooSmall { rank },
        RankError::TooLarge(rank) => BuildError::RankTooLarge { rank },
    })
}

/// The workspace README's example, compiled and run as a doctest.
#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
struct WorkspaceReadme;
