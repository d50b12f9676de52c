//! Selections: numpy-style indexing of a tensor ([`select`]).
//!
//! One [`Axis`] per logical dimension says what that dimension keeps: one
//! coordinate ([`Axis::Index`], the dimension is dropped), all of it, a
//! strided slice, or an integer array ([`Axis::Take`]). Several `Take` axes
//! combine as numpy's *outer* indexing (`np.ix_`), not as its broadcast
//! indexing. A result of rank 3 or more is a built tensor in the input's
//! mode order restricted to the kept dimensions; a smaller one is a list of
//! entries in row-major order (CSF has no tensors below rank 3).
//!
//! # Each path's cost
//!
//! Checking the axes costs `O(rank)` plus, per `Take` axis of `T`
//! coordinates, `O(T)` when they never decrease and a sort (`O(T log T)`)
//! otherwise. Then one of two paths runs.
//!
//! - **Fast path**: every axis `All` but the one of level 0 (the dimension
//!   `mode_order[0]`), which is an `Index`, a `Step` of step 1 or `All`, and
//!   the result of rank 3 or more. Such a selection is one sub-tree range
//!   (`csf-core`'s [`Level::children_of_range`]): one search in the root's
//!   fiber (`O(log n_0)`), then at each level a copy of exactly the range's
//!   `crd` and `pos` (`pos` rebased to start at 0, the root's `crd` shifted
//!   by the slice's start) and of the leaf range of values: no walk, no
//!   sort, nothing read outside the range. 4-bit values whose range starts
//!   inside a byte are re-packed. A quantized tensor's values are
//!   dequantized to `f32` leaf by leaf (a per-channel one, whose groups need
//!   each leaf's index, takes the general path instead). The view may be
//!   unvalidated, and a [`Built`] promises a valid tensor, so the copy is
//!   then validated strictly (one linear pass over what was copied); a copy
//!   that fails (only on unvalidated input) is dropped and the general path
//!   runs instead.
//! - **General path**: a pruned depth-first walk of the tree. At a level
//!   whose axis is `Index`, one binary search per fiber ([`Fiber::find`],
//!   `O(log f)`); `Step`, a binary search of the bounds of the slice's
//!   coordinates in the fiber, then a test of each child inside them; `Take`,
//!   per child a search of a sorted (coordinate, output position) table
//!   built once per axis, or per distinct coordinate of the table a search
//!   of the fiber, whichever is fewer steps; `All`, every child. A sub-tree
//!   is entered only when its coordinate maps, so the walk costs the nodes
//!   on the paths to the kept leaves plus the searches. Each kept leaf is
//!   emitted once per combination of output coordinates it maps to (a
//!   `Take` that repeats a coordinate walks that sub-tree once per repeat),
//!   as output COO: `O(m)` for `m` output entries. A result of rank 3 or
//!   more is then built ([`crate::build_owned`], explicit restricted mode
//!   order, [`Duplicates::Error`]: no duplicate can arise from a valid
//!   tensor). When every axis is monotone (`Index`, `All`, `Step` with a
//!   positive step, `Take` never decreasing) the walk emits the entries in
//!   the result's storage order, so the builder takes its presorted path
//!   (one pass, `O(m * rank)`, adopting the leaf column and values without a
//!   copy); otherwise it sorts them (its radix sort, `O(m * rank)` passes).
//!   A result of rank 0, 1 or 2 is checked to be in row-major order in one
//!   pass (`O(m)`) and sorted only when it is not (`O(m log m)`).
//!
//! The walk runs on one thread; `parallel` is the builder's and the sort's.
//!
//! # Unvalidated input
//!
//! The view may come from a permissively read, possibly hostile file. Every
//! read goes through `csf-core`'s total accessors (clamped fibers, checked
//! value reads), and the walk keeps, as `csf-core`'s cursor does, a
//! high-water mark per level: a fiber is clamped to start where the last
//! one at its level ended, so each node is visited at most once per repeat
//! of the `Take` coordinates above it, whatever `pos` holds. A leaf without
//! a value is [`BuildError::MissingValue`], a result that repeats an entry
//! is refused ([`BuildError::Duplicate`] from the builder, or
//! [`SelectError::Unvalidated`] for entries), and a `mode_order` that is no
//! permutation is refused up front. Nothing is allocated from a length the
//! file claims (`nnz` included): the fast path copies ranges of what is
//! stored, the walk's output grows with what it emits, by fallible
//! reservations, and an output too large to address or allocate is
//! [`SelectError::TooLarge`], not an abort.
//!
//! [`Level::children_of_range`]: csf_core::Level::children_of_range
//! [`Fiber::find`]: csf_core::Fiber::find
//! [`Duplicates::Error`]: crate::Duplicates::Error

use csf_core::CsfView;
use hurray_format::le::U64Array;
use hurray_format::limits::MAX_RANK;
use hurray_format::ElementType;

use crate::{BuildError, Built};

mod copy;
#[cfg(test)]
mod tests;
mod walk;

/// What one logical dimension keeps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Axis<'s> {
    /// Keep only coordinate `c`; the dimension is dropped from the result.
    Index(u64),
    /// Keep the whole dimension unchanged.
    All,
    /// Output coordinate `j` in `0..len` is input coordinate
    /// `start + j * step` (`step != 0`, possibly negative; Python's
    /// `slice.indices` already applied, so every output coordinate lies
    /// inside the extent; `start` is not read when `len` is 0).
    Step {
        /// The input coordinate of output coordinate 0.
        start: u64,
        /// The number of output coordinates.
        len: u64,
        /// The distance between consecutive input coordinates.
        step: i64,
    },
    /// Output coordinate `j` is input coordinate `take[j]` (numpy's integer
    /// array indexing along this one axis: entries may repeat and come in any
    /// order).
    Take(&'s [u64]),
}

/// What [`select`] returns.
#[derive(Clone, Debug)]
pub enum Selection {
    /// A result of rank 3 or more: a built tensor, stored in the input's
    /// mode order restricted to the kept dimensions (renumbered in
    /// increasing logical order: `mode_order` `[2, 0, 3, 1]` keeping
    /// dimensions `{0, 2, 3}` gives `[1, 0, 2]`). Its values are the input's
    /// element type, bit for bit, or `f32` (dequantized) for a quantized
    /// input.
    Tensor(Built),
    /// A result of rank 0, 1 or 2: its entries as COO, sorted by logical
    /// index (row-major order), no index twice.
    Entries {
        /// The result's shape; its length is the rank.
        shape: Vec<u64>,
        /// `shape.len()` coordinates per entry, entry after entry.
        coords: Vec<u64>,
        /// One value per entry, little-endian, of `element_type`.
        values: Vec<u8>,
        /// The values' type: the input's element type where numpy has it
        /// (`bool`, the integers of 8 to 64 bits, `f16`, `f32`, `f64`),
        /// `i8` for `i4`, `u8` for `u4`, and `f32` for the other narrow
        /// floats and for a quantized input (dequantized). Never a packed
        /// type: one value per `element_type.byte_width()` bytes.
        element_type: ElementType,
    },
}

/// Why a selection failed.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum SelectError {
    /// Not one axis per dimension.
    #[error("{got} axes given for a tensor of rank {rank}")]
    AxisCount {
        /// The axes given.
        got: usize,
        /// The tensor's rank.
        rank: usize,
    },
    /// An [`Axis::Index`] outside its dimension.
    #[error("axis {axis}: index {coord} is outside the extent {extent}")]
    IndexOutOfBounds {
        /// The logical dimension.
        axis: usize,
        /// The coordinate given.
        coord: u64,
        /// The dimension's extent.
        extent: u64,
    },
    /// An [`Axis::Step`] of step 0.
    #[error("axis {axis}: a slice step cannot be zero")]
    ZeroStep {
        /// The logical dimension.
        axis: usize,
    },
    /// An [`Axis::Step`] whose first or last coordinate lies outside its
    /// dimension (or does not fit a `u64`).
    #[error("axis {axis}: {len} coordinates from {start} in steps of {step} leave the extent {extent}")]
    SliceOutOfBounds {
        /// The logical dimension.
        axis: usize,
        /// The slice's first coordinate.
        start: u64,
        /// Its number of coordinates.
        len: u64,
        /// Its step.
        step: i64,
        /// The dimension's extent.
        extent: u64,
    },
    /// An [`Axis::Take`] coordinate outside its dimension.
    #[error("axis {axis}: take[{position}] = {coord} is outside the extent {extent}")]
    TakeOutOfBounds {
        /// The logical dimension.
        axis: usize,
        /// The coordinate's position in the take array.
        position: usize,
        /// The coordinate.
        coord: u64,
        /// The dimension's extent.
        extent: u64,
    },
    /// The result holds more entries than this machine can address or
    /// allocate (a `Take` that repeats coordinates multiplies the entries).
    #[error("the selection holds at least {entries} entries, more than memory allows")]
    TooLarge {
        /// The entries emitted when the output could not grow.
        entries: u64,
    },
    /// The tensor breaks a rule that the selection relies on (only on
    /// unvalidated input).
    #[error("the tensor was not validated and breaks a rule: {what}")]
    Unvalidated {
        /// Which rule.
        what: &'static str,
    },
    /// Building the result failed (on unvalidated input: a leaf without a
    /// value, a duplicate, a coordinate outside the shape).
    #[error(transparent)]
    Build(#[from] BuildError),
}

/// The entries of `view` that `axes` keeps (numpy's indexing, outer across
/// several [`Axis::Take`]): a built tensor for a result of rank 3 or more,
/// else its entries. See the module docs for each path's cost.
///
/// # Example
/// ```
/// use csf_build::{build, select, Axis, Coo, Indices, Options, Selection};
///
/// // (0, 0, 1) -> 1, (0, 2, 3) -> 2, (1, 1, 0) -> 3, (1, 1, 2) -> 4: the spec's example.
/// let indices = [0, 0, 1, 0, 2, 3, 1, 1, 0, 1, 1, 2];
/// let coo = Coo::new(&[2, 3, 4], Indices::RowMajor(&indices), &[1.0f32, 2.0, 3.0, 4.0]);
/// let view_of = build(&coo, &Options::default())?;
/// let view = view_of.tensor.view();
/// // t[1, :, ::2]: the entries with i = 1 and k even, as a 3 x 2 matrix.
/// let axes = [Axis::Index(1), Axis::All, Axis::Step { start: 0, len: 2, step: 2 }];
/// let Selection::Entries { shape, coords, values, .. } = select(&view, &axes, false)? else { panic!() };
/// assert_eq!((shape, coords), (vec![3, 2], vec![1, 0, 1, 1]));
/// assert_eq!(values, [3.0f32.to_le_bytes(), 4.0f32.to_le_bytes()].concat());
/// // t[[1, 0, 1]]: a rank-3 tensor, its first dimension taken twice at 1.
/// let Selection::Tensor(taken) = select(&view, &[Axis::Take(&[1, 0, 1]), Axis::All, Axis::All], false)? else { panic!() };
/// assert_eq!((taken.tensor.view().shape(), taken.tensor.view().nnz()), (&[3, 3, 4][..], 6));
/// assert_eq!(taken.tensor.view().get_f64(&[2, 1, 2])?, 4.0);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Errors
/// [`SelectError::AxisCount`] and the `OutOfBounds` variants for axes that do
/// not fit the tensor, [`SelectError::ZeroStep`], [`SelectError::TooLarge`]
/// when the result does not fit in memory; on unvalidated input only,
/// [`SelectError::Unvalidated`] and [`SelectError::Build`].
pub fn select(view: &CsfView<'_>, axes: &[Axis<'_>], parallel: bool) -> Result<Selection, SelectError> {
    let plan = Plan::new(view, axes)?;
    if let Some(built) = copy::copy_if_fast(view, axes, &plan)? {
        return Ok(Selection::Tensor(built));
    }
    walk::general(view, &plan, parallel)
}

/// The general path alone: the walk, then the build or the entries (the
/// tests compare it with [`select`]).
#[doc(hidden)]
pub fn select_by_walk(
    view: &CsfView<'_>,
    axes: &[Axis<'_>],
    parallel: bool,
) -> Result<Selection, SelectError> {
    walk::general(view, &Plan::new(view, axes)?, parallel)
}

/// The fast path alone: the copied tensor, or `None` when the axes do not
/// allow it or the copy is not valid (the tests check that it runs).
#[doc(hidden)]
pub fn select_by_copy(view: &CsfView<'_>, axes: &[Axis<'_>]) -> Result<Option<Built>, SelectError> {
    copy::copy_if_fast(view, axes, &Plan::new(view, axes)?)
}

// ------------------------------------------------------------ the checked axes

/// What one tree level keeps, checked against its extent.
#[derive(Debug)]
enum Pick {
    Index(u64),
    All(u64),
    /// `len >= 1`; the coordinates lie in `lo..=hi`.
    Step {
        start: u64,
        step: i64,
        lo: u64,
        hi: u64,
    },
    Take(Table),
}

impl Pick {
    /// Whether the output coordinate never decreases along a fiber (which
    /// holds increasing input coordinates).
    #[cfg(test)]
    fn monotone(&self) -> bool {
        match self {
            Pick::Index(_) | Pick::All(_) => true,
            Pick::Step { step, .. } => *step > 0,
            Pick::Take(table) => table.positions.windows(2).all(|w| w.first() < w.last()),
        }
    }

    /// The output coordinate of input coordinate `c`, for `All` and `Step`.
    #[inline]
    fn map(&self, c: u64) -> Option<u64> {
        match *self {
            Pick::All(extent) => (c < extent).then_some(c),
            Pick::Step { start, step, lo, hi } => {
                if c < lo || c > hi {
                    return None;
                }
                let size = step.unsigned_abs();
                let distance = if step > 0 { c - start } else { start - c };
                if size == 1 {
                    return Some(distance);
                }
                (distance % size == 0).then_some(distance / size)
            }
            Pick::Index(_) | Pick::Take(_) => None,
        }
    }
}

/// A `Take` axis as a sorted table: each distinct coordinate, and the output
/// positions that take it (ascending).
#[derive(Debug)]
struct Table {
    coords: Vec<u64>,
    /// `positions[ends[i - 1]..ends[i]]` take `coords[i]`.
    ends: Vec<usize>,
    positions: Vec<u64>,
}

impl Table {
    fn new(take: &[u64]) -> Self {
        let mut pairs: Vec<(u64, u64)> = take.iter().zip(0u64..).map(|(&c, j)| (c, j)).collect();
        // A take array that never decreases is its own table.
        if !take.windows(2).all(|w| w.first() <= w.last()) {
            pairs.sort_unstable();
        }
        let mut coords: Vec<u64> = Vec::new();
        let mut ends = Vec::new();
        for (i, &(c, _)) in pairs.iter().enumerate() {
            if coords.last() != Some(&c) {
                if i > 0 {
                    ends.push(i);
                }
                coords.push(c);
            }
        }
        ends.push(pairs.len());
        let positions = pairs.into_iter().map(|(_, j)| j).collect();
        Self { coords, ends, positions }
    }

    /// The output positions of distinct coordinate `i`.
    #[inline]
    fn positions(&self, i: usize) -> &[u64] {
        let start = i.checked_sub(1).and_then(|p| self.ends.get(p)).copied().unwrap_or(0);
        let end = self.ends.get(i).copied().unwrap_or(start);
        self.positions.get(start..end).unwrap_or(&[])
    }
}

/// One tree level of the selection.
#[derive(Debug)]
struct LevelPlan {
    pick: Pick,
    /// The input's logical dimension stored at this level.
    dim: usize,
    /// The result's logical dimension, unless the level is dropped (`Index`).
    out: Option<usize>,
}

/// The checked selection, by tree level.
#[derive(Debug)]
struct Plan {
    levels: Vec<LevelPlan>,
    out_shape: Vec<u64>,
    /// The input's mode order restricted to the kept dimensions, renumbered.
    out_order: Vec<u32>,
    /// Some axis keeps nothing.
    empty: bool,
}

impl Plan {
    fn new(view: &CsfView<'_>, axes: &[Axis<'_>]) -> Result<Self, SelectError> {
        let rank = view.rank();
        if axes.len() != rank {
            return Err(SelectError::AxisCount { got: axes.len(), rank });
        }
        let order = permutation(view.mode_order(), rank)?;
        let mut picks: Vec<Option<Pick>> = Vec::with_capacity(rank);
        let (mut out_of, mut out_shape, mut empty) = (Vec::with_capacity(rank), Vec::new(), false);
        for (axis, (selector, &extent)) in axes.iter().zip(view.shape()).enumerate() {
            let (pick, len) = checked(axis, *selector, extent)?;
            out_of.push(len.map(|_| out_shape.len()));
            if let Some(len) = len {
                empty |= len == 0;
                out_shape.push(len);
            }
            picks.push(pick);
        }
        let mut levels = Vec::with_capacity(rank);
        for &dim in &order {
            let out = out_of.get(dim).copied().flatten();
            // An empty `Step` has no pick: the result is empty.
            let pick = picks.get_mut(dim).and_then(Option::take).unwrap_or(Pick::Index(0));
            levels.push(LevelPlan { pick, dim, out });
        }
        let out_order = levels.iter().filter_map(|l| l.out).map(|o| o as u32).collect();
        Ok(Plan { levels, out_shape, out_order, empty })
    }

    /// Every level's output coordinate grows along its fibers: the walk
    /// emits the result's storage order (the tests check that the builder
    /// then adopts the walk's arrays).
    #[cfg(test)]
    fn monotone(&self) -> bool {
        self.levels.iter().all(|l| l.pick.monotone())
    }
}

/// The mode order as dimensions, checked to be a permutation (an
/// unvalidated view's need not be).
fn permutation(mode_order: &[u32], rank: usize) -> Result<Vec<usize>, SelectError> {
    let mut seen = [false; MAX_RANK];
    let mut dims = Vec::with_capacity(rank);
    for &dim in mode_order {
        let dim = dim as usize;
        match seen.get_mut(dim).filter(|_| dim < rank) {
            Some(slot) if !*slot => *slot = true,
            _ => return Err(SelectError::Unvalidated { what: "mode_order is not a permutation" }),
        }
        dims.push(dim);
    }
    Ok(dims)
}

/// `axis`'s selector checked against `extent`: its pick (`None` for an
/// empty slice) and its output length (`None`: dropped).
fn checked(axis: usize, selector: Axis<'_>, extent: u64) -> Result<(Option<Pick>, Option<u64>), SelectError> {
    Ok(match selector {
        Axis::Index(coord) if coord < extent => (Some(Pick::Index(coord)), None),
        Axis::Index(coord) => return Err(SelectError::IndexOutOfBounds { axis, coord, extent }),
        Axis::All => (Some(Pick::All(extent)), Some(extent)),
        Axis::Step { step: 0, .. } => return Err(SelectError::ZeroStep { axis }),
        Axis::Step { len: 0, .. } => (None, Some(0)),
        Axis::Step { start, len, step } => {
            let bad = SelectError::SliceOutOfBounds { axis, start, len, step, extent };
            // (len - 1) * step fits an i128 (< 2^127); the sum may not.
            let last = i128::from(len - 1)
                .checked_mul(i128::from(step))
                .and_then(|d| d.checked_add(i128::from(start)))
                .and_then(|last| u64::try_from(last).ok())
                .filter(|&last| last < extent && start < extent)
                .ok_or(bad)?;
            let (lo, hi) = if step > 0 { (start, last) } else { (last, start) };
            (Some(Pick::Step { start, step, lo, hi }), Some(len))
        }
        Axis::Take(take) => {
            if let Some((position, &coord)) = take.iter().enumerate().find(|(_, &c)| c >= extent) {
                return Err(SelectError::TakeOutOfBounds { axis, position, coord, extent });
            }
            (Some(Pick::Take(Table::new(take))), Some(take.len() as u64))
        }
    })
}

// ------------------------------------------------------------ shared by both paths

/// Code `leaf` of a sub-byte values buffer.
#[inline]
fn code(bytes: &[u8], leaf: usize, bits: u8, per_byte: u8) -> Option<u8> {
    let per_byte = usize::from(per_byte.max(1));
    let byte = *bytes.get(leaf / per_byte)?;
    let shift = (leaf % per_byte) as u32 * u32::from(bits);
    Some((byte >> shift) & ((1u16 << bits) - 1) as u8)
}

/// The first position of the (sorted) `crd` whose coordinate is not below
/// `x`; total on unsorted data.
fn lower_bound(crd: U64Array<'_>, x: u64) -> usize {
    if let Some(native) = crd.as_native() {
        return native.partition_point(|&c| c < x);
    }
    let (mut lo, mut hi) = (0, crd.len());
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if crd.get(mid).is_some_and(|c| c < x) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    lo
}
