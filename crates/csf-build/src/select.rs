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

use csf_core::{CsfView, Fiber, Level, OwnedCsf, OwnedLevel};
use hurray_format::le::U64Array;
use hurray_format::limits::MAX_RANK;
use hurray_format::{ElementType, Packing, QuantScheme};

use crate::{build_owned, BuildError, Built, Duplicates, ModeOrderPolicy, Options, OwnedCoo};

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
    if let Some(built) = copy_if_fast(view, axes, &plan)? {
        return Ok(Selection::Tensor(built));
    }
    general(view, &plan, parallel)
}

/// The general path alone: the walk, then the build or the entries (the
/// tests compare it with [`select`]).
#[doc(hidden)]
pub fn select_by_walk(
    view: &CsfView<'_>,
    axes: &[Axis<'_>],
    parallel: bool,
) -> Result<Selection, SelectError> {
    general(view, &Plan::new(view, axes)?, parallel)
}

/// The fast path alone: the copied tensor, or `None` when the axes do not
/// allow it or the copy is not valid (the tests check that it runs).
#[doc(hidden)]
pub fn select_by_copy(view: &CsfView<'_>, axes: &[Axis<'_>]) -> Result<Option<Built>, SelectError> {
    copy_if_fast(view, axes, &Plan::new(view, axes)?)
}

/// The fast path's tensor, when the axes allow it and the copy is valid.
fn copy_if_fast(view: &CsfView<'_>, axes: &[Axis<'_>], plan: &Plan) -> Result<Option<Built>, SelectError> {
    match fast_root(view, axes) {
        Some(root) if plan.out_shape.len() >= 3 => fast::copy(view, plan, root),
        _ => Ok(None),
    }
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

// ------------------------------------------------------------ the fast path

/// What level 0 keeps on the fast path.
#[derive(Clone, Copy, Debug)]
enum Root {
    Index(u64),
    /// Coordinates `start..start + len`.
    Range {
        start: u64,
        len: u64,
    },
}

/// The fast path's level-0 selection, when the axes allow it (see the
/// module docs); the caller has checked them.
fn fast_root(view: &CsfView<'_>, axes: &[Axis<'_>]) -> Option<Root> {
    if view.quantization().is_some_and(|q| q.scheme == QuantScheme::PerChannel) {
        return None;
    }
    let top = *view.mode_order().first()? as usize;
    let others_all = axes.iter().enumerate().all(|(dim, a)| dim == top || matches!(a, Axis::All));
    if !others_all {
        return None;
    }
    match *axes.get(top)? {
        Axis::Index(c) => Some(Root::Index(c)),
        Axis::All => Some(Root::Range { start: 0, len: *view.shape().get(top)? }),
        Axis::Step { start, len, step: 1 } => Some(Root::Range { start, len }),
        Axis::Step { len: 0, .. } => Some(Root::Range { start: 0, len: 0 }),
        _ => None,
    }
}

mod fast {
    //! The fast path: a sub-tree range copied level by level.

    use super::*;

    /// The tensor of the sub-tree range `root` selects, copied; `None` when
    /// the copy is not a valid tensor (unvalidated input), for the general
    /// path to take over.
    pub(super) fn copy(view: &CsfView<'_>, plan: &Plan, root: Root) -> Result<Option<Built>, SelectError> {
        let Some((levels, leaves)) = tree(view, root) else { return Ok(None) };
        let Some((element_type, values)) = values(view, leaves) else { return Ok(None) };
        let tensor = OwnedCsf::builder(element_type, plan.out_shape.clone())
            .mode_order(plan.out_order.clone())
            .levels(levels)
            .values(values)
            .build()
            .map_err(BuildError::from)?;
        if csf_validate::validate_view(tensor.view()).is_err() {
            return Ok(None);
        }
        Ok(Some(Built { tensor, auto: None, removed: 0 }))
    }

    /// The copied levels and the leaf range, or `None` when the input's
    /// arrays do not hold the range (unvalidated input).
    fn tree(view: &CsfView<'_>, root: Root) -> Option<(Vec<OwnedLevel>, (usize, usize))> {
        let top = view.level(0)?;
        let (first, end) = top.children(0);
        let fiber = Fiber { start: first, crd: top.crd.slice(first, end) };
        let mut levels = Vec::with_capacity(view.rank());
        let (mut range, below) = match root {
            Root::Range { start, len } => {
                let a = first + lower_bound(fiber.crd, start);
                // Not below `a`, even on a fiber that is not sorted.
                let b = (first + lower_bound(fiber.crd, start.checked_add(len)?)).max(a);
                let crd = top.crd.slice(a, b);
                let shifted: Option<Vec<u64>> = crd.iter().map(|c| c.checked_sub(start)).collect();
                levels.push(OwnedLevel::new(vec![0, crd.len() as u64], shifted?));
                ((a, b), 1)
            }
            Root::Index(c) => match fiber.find(c) {
                Some(node) => {
                    let next = view.level(1)?;
                    let (a, b) = next.children(node);
                    let crd: Vec<u64> = next.crd.slice(a, b).iter().collect();
                    levels.push(OwnedLevel::new(vec![0, crd.len() as u64], crd));
                    ((a, b), 2)
                }
                // No entry: the empty tensor of the levels below.
                None => {
                    levels.push(OwnedLevel::new(vec![0, 0], Vec::new()));
                    levels.extend((2..view.rank()).map(|_| OwnedLevel::new(vec![0], Vec::new())));
                    return Some((levels, (0, 0)));
                }
            },
        };
        for level in below..view.rank() {
            let lvl = view.level(level)?;
            let (s, e) = lvl.children_of_range(range.0, range.1);
            levels.push(OwnedLevel::new(rebased(lvl, range, s)?, lvl.crd.slice(s, e).iter().collect()));
            range = (s, e);
        }
        Some((levels, range))
    }

    /// `pos_L[a..=b]` less `s`, the first child's node index; `None` when
    /// `pos` is too short or goes below `s` (unvalidated input).
    fn rebased(level: Level<'_>, (a, b): (usize, usize), s: usize) -> Option<Vec<u64>> {
        let pos = level.pos.slice(a, b.checked_add(1)?);
        if pos.len() != b - a + 1 {
            return None;
        }
        pos.iter().map(|p| p.checked_sub(s as u64)).collect()
    }

    /// The values of leaves `a..b` and their type: copied bytes, 4-bit codes
    /// re-packed when the range starts inside a byte, or `f32`s dequantized;
    /// `None` when the buffer or `nnz` does not cover them.
    fn values(view: &CsfView<'_>, (a, b): (usize, usize)) -> Option<(ElementType, Vec<u8>)> {
        if b as u64 > view.nnz() {
            return None;
        }
        if view.quantization().is_some() {
            // Not per-channel (`fast_root`): a group depends on the leaf alone.
            let mut out = Vec::with_capacity((b - a).checked_mul(4)?);
            for leaf in a..b {
                out.extend_from_slice(&view.value(leaf, &[])?.to_f32().to_le_bytes());
            }
            return Some((ElementType::F32, out));
        }
        let stored = view.values();
        let element_type = stored.element_type();
        let bytes = stored.as_bytes();
        let out = match element_type.packing() {
            Packing::Bytes(width) => {
                let width = usize::from(width);
                bytes.get(a.checked_mul(width)?..b.checked_mul(width)?)?.to_vec()
            }
            Packing::SubByte { bits, per_byte: packed } => {
                let per_byte = usize::from(packed.max(1));
                let count = b - a;
                if a % per_byte == 0 {
                    let mut out = bytes.get(a / per_byte..b.div_ceil(per_byte))?.to_vec();
                    // The unused high bits of the last byte are zero.
                    let used = count % per_byte;
                    if let (Some(last), true) = (out.last_mut(), used != 0) {
                        *last &= ((1u16 << (used as u32 * u32::from(bits))) - 1) as u8;
                    }
                    out
                } else {
                    let codes: Option<Vec<u8>> = (a..b).map(|leaf| code(bytes, leaf, bits, packed)).collect();
                    crate::values::pack(element_type, codes?)
                }
            }
        };
        Some((element_type, out))
    }
}

// ------------------------------------------------------------ the general path

/// How the walk writes a leaf's value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ValueOut {
    /// The stored bytes, `width` each.
    Bytes(usize),
    /// The stored code of a sub-byte type, one per byte (packed again for a
    /// tensor; a `u4`'s value for entries).
    Code { bits: u8, per_byte: u8 },
    /// An `i4` code sign-extended to an `i8`.
    I4,
    /// A `bool` as 0 or 1.
    Bool,
    /// The value (dequantized, or a narrow float decoded) as an `f32`.
    F32,
}

impl ValueOut {
    /// How values are written for a tensor (`entries`: false) or for entries,
    /// and the type they then have.
    fn of(view: &CsfView<'_>, entries: bool) -> (Self, ElementType) {
        let element_type = view.element_type();
        if view.quantization().is_some() {
            return (ValueOut::F32, ElementType::F32);
        }
        match element_type.packing() {
            Packing::SubByte { bits, per_byte } => match (entries, element_type) {
                (false, _) => (ValueOut::Code { bits, per_byte }, element_type),
                (true, ElementType::U4) => (ValueOut::Code { bits, per_byte }, ElementType::U8),
                (true, ElementType::I4) => (ValueOut::I4, ElementType::I8),
                (true, _) => (ValueOut::F32, ElementType::F32),
            },
            Packing::Bytes(width) if !entries || numpy_has(element_type) => {
                (ValueOut::Bytes(usize::from(width)), element_type)
            }
            Packing::Bytes(_) if element_type == ElementType::Bool => (ValueOut::Bool, ElementType::Bool),
            Packing::Bytes(_) => (ValueOut::F32, ElementType::F32),
        }
    }

    fn width(self) -> usize {
        match self {
            ValueOut::Bytes(width) => width,
            ValueOut::F32 => 4,
            ValueOut::Code { .. } | ValueOut::I4 | ValueOut::Bool => 1,
        }
    }
}

/// Whether numpy has a dtype for the element type (besides `bool`).
fn numpy_has(element_type: ElementType) -> bool {
    use ElementType as E;
    matches!(
        element_type,
        E::I8 | E::I16 | E::I32 | E::I64 | E::U8 | E::U16 | E::U32 | E::U64 | E::F16 | E::F32 | E::F64
    )
}

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

/// The walk's output: one coordinate column per result dimension, the values.
struct Sink {
    columns: Vec<Vec<u64>>,
    values: Vec<u8>,
    len: usize,
    /// The entries that fit without growing.
    room: usize,
    width: usize,
}

impl Sink {
    /// Room for one more entry, grown by fallible reservations.
    #[inline]
    fn make_room(&mut self) -> Result<(), SelectError> {
        if self.len < self.room {
            return Ok(());
        }
        let too_large = SelectError::TooLarge { entries: self.len as u64 };
        let more = self.len.max(1024);
        let room = self.len.checked_add(more).ok_or(too_large.clone())?;
        // Each array must fit `room` elements of its size in an isize.
        room.checked_mul(self.width.max(8)).filter(|&b| b <= isize::MAX as usize).ok_or(too_large.clone())?;
        for column in &mut self.columns {
            column.try_reserve(more).map_err(|_| too_large.clone())?;
        }
        self.values.try_reserve(more * self.width).map_err(|_| too_large)?;
        self.room = room;
        Ok(())
    }
}

/// The depth-first walk of the general path.
struct Walk<'p, 'v, 'a> {
    view: &'v CsfView<'a>,
    plan: &'p Plan,
    values: &'a [u8],
    value_out: ValueOut,
    last: usize,
    /// Per level, the first node not yet visited (see the module docs).
    high: [usize; MAX_RANK],
    /// The input's logical index of the current path (for dequantization).
    index: [u64; MAX_RANK],
    /// The result's coordinates of the current path.
    out: [u64; MAX_RANK],
    sink: Sink,
}

impl Walk<'_, '_, '_> {
    /// Visits the children of node `parent` of the level above `level`.
    fn visit(&mut self, level: usize, parent: usize) -> Result<(), SelectError> {
        let (Some(lvl), Some(plan)) = (self.view.level(level), self.plan.levels.get(level)) else {
            return Ok(());
        };
        let (start, end) = lvl.children(parent);
        let high = self.high.get(level).copied().unwrap_or(end);
        let start = start.max(high);
        let end = end.max(start);
        if let Some(h) = self.high.get_mut(level) {
            *h = end;
        }
        let fiber = Fiber { start, crd: lvl.crd.slice(start, end) };
        match &plan.pick {
            Pick::Index(c) => match fiber.find(*c) {
                Some(node) => self.enter(level, node, *c, 0),
                None => Ok(()),
            },
            Pick::All(_) => self.each(level, fiber, 0, fiber.len()),
            Pick::Step { lo, hi, .. } => {
                let (a, b) = (lower_bound(fiber.crd, *lo), lower_bound(fiber.crd, hi.saturating_add(1)));
                self.each(level, fiber, a, b)
            }
            Pick::Take(table) => self.take(level, fiber, table),
        }
    }

    /// Enters the children `a..b` of `fiber` whose coordinates map (`All`, `Step`).
    fn each(&mut self, level: usize, fiber: Fiber<'_>, a: usize, b: usize) -> Result<(), SelectError> {
        let Some(plan) = self.plan.levels.get(level) else { return Ok(()) };
        for (i, c) in fiber.crd.slice(a, b).iter().enumerate() {
            if let Some(o) = plan.pick.map(c) {
                self.enter(level, fiber.start + a + i, c, o)?;
            }
        }
        Ok(())
    }

    /// Enters the children of `fiber` that `table` takes, each once per
    /// output position, by the cheaper of the two searches.
    fn take(&mut self, level: usize, fiber: Fiber<'_>, table: &Table) -> Result<(), SelectError> {
        let (Some(&lo), Some(&hi)) = (table.coords.first(), table.coords.last()) else { return Ok(()) };
        let (a, b) = (lower_bound(fiber.crd, lo), lower_bound(fiber.crd, hi.saturating_add(1)));
        let narrowed = Fiber { start: fiber.start + a, crd: fiber.crd.slice(a, b) };
        let log = |n: usize| (usize::BITS - n.leading_zeros()) as usize;
        if table.coords.len().saturating_mul(log(narrowed.len())) < narrowed.len() {
            for (i, &c) in table.coords.iter().enumerate() {
                if let Some(node) = narrowed.find(c) {
                    self.repeat(level, node, c, table.positions(i))?;
                }
            }
        } else {
            for (node, c) in narrowed.iter() {
                if let Ok(i) = table.coords.binary_search(&c) {
                    self.repeat(level, node, c, table.positions(i))?;
                }
            }
        }
        Ok(())
    }

    /// Enters `node` once per output position, the levels below seen afresh each time.
    fn repeat(&mut self, level: usize, node: usize, c: u64, positions: &[u64]) -> Result<(), SelectError> {
        if let [o] = positions {
            return self.enter(level, node, c, *o);
        }
        let saved = self.high;
        for (k, &o) in positions.iter().enumerate() {
            if k > 0 {
                self.high = saved;
            }
            self.enter(level, node, c, o)?;
        }
        Ok(())
    }

    /// Takes coordinate `c` (output coordinate `o`) at `level`, node `node`.
    #[inline]
    fn enter(&mut self, level: usize, node: usize, c: u64, o: u64) -> Result<(), SelectError> {
        if let Some(plan) = self.plan.levels.get(level) {
            if let Some(slot) = self.index.get_mut(plan.dim) {
                *slot = c;
            }
            if let Some(slot) = plan.out.and_then(|d| self.out.get_mut(d)) {
                *slot = o;
            }
        }
        if level >= self.last {
            self.emit(node)
        } else {
            self.visit(level + 1, node)
        }
    }

    /// Writes the current path's entry, whose leaf is `leaf`.
    fn emit(&mut self, leaf: usize) -> Result<(), SelectError> {
        self.sink.make_room()?;
        let missing = || SelectError::Build(BuildError::MissingValue { leaf: leaf as u64 });
        // The descriptor's nnz is authoritative: past it, no leaf has a value.
        if leaf as u64 >= self.view.nnz() {
            return Err(missing());
        }
        let values = &mut self.sink.values;
        match self.value_out {
            ValueOut::Bytes(width) => {
                let start = leaf.checked_mul(width).ok_or_else(missing)?;
                let end = start.checked_add(width).ok_or_else(missing)?;
                values.extend_from_slice(self.values.get(start..end).ok_or_else(missing)?);
            }
            ValueOut::Code { bits, per_byte } => {
                values.push(code(self.values, leaf, bits, per_byte).ok_or_else(missing)?);
            }
            ValueOut::I4 => {
                let c = code(self.values, leaf, 4, 2).ok_or_else(missing)?;
                values.push((((c << 4) as i8) >> 4) as u8);
            }
            ValueOut::Bool => values.push(u8::from(*self.values.get(leaf).ok_or_else(missing)? != 0)),
            ValueOut::F32 => {
                let index = self.index.get(..self.view.rank()).unwrap_or(&[]);
                let value = self.view.value(leaf, index).ok_or_else(missing)?;
                values.extend_from_slice(&value.to_f32().to_le_bytes());
            }
        }
        for (column, &o) in self.sink.columns.iter_mut().zip(&self.out) {
            column.push(o);
        }
        self.sink.len += 1;
        Ok(())
    }
}

/// The general path: walk, then build or order the entries.
fn general(view: &CsfView<'_>, plan: &Plan, parallel: bool) -> Result<Selection, SelectError> {
    let entries = plan.out_shape.len() < 3;
    let (sink, value_out, element_type) = walk(view, plan, entries)?;
    let Sink { columns, values, len, .. } = sink;
    if entries {
        return row_major(plan.out_shape.clone(), columns, values, len, element_type, parallel);
    }
    let values = match value_out {
        ValueOut::Code { .. } => crate::values::pack(element_type, values),
        _ => values,
    };
    let coo = OwnedCoo { shape: plan.out_shape.clone(), columns, element_type, values };
    Ok(Selection::Tensor(build_owned(coo, &build_options(plan, parallel))?))
}

/// How the general path builds: in the restricted mode order, duplicates an
/// error. Input in that storage order (a monotone plan's) takes
/// `build_owned`'s presorted path, which adopts the leaf column and values.
fn build_options(plan: &Plan, parallel: bool) -> Options {
    Options {
        mode_order: ModeOrderPolicy::Explicit(plan.out_order.clone()),
        duplicates: Duplicates::Error,
        drop_zeros: false,
        parallel,
        quantize: None,
    }
}

/// The general path's walk: the output COO (for entries, or for a tensor),
/// how its values were written and their type.
fn walk(
    view: &CsfView<'_>,
    plan: &Plan,
    entries: bool,
) -> Result<(Sink, ValueOut, ElementType), SelectError> {
    let (value_out, element_type) = ValueOut::of(view, entries);
    let sink = Sink {
        columns: vec![Vec::new(); plan.out_shape.len()],
        values: Vec::new(),
        len: 0,
        room: 0,
        width: value_out.width(),
    };
    let mut walk = Walk {
        view,
        plan,
        values: view.values().as_bytes(),
        value_out,
        last: view.rank().saturating_sub(1),
        high: [0; MAX_RANK],
        index: [0; MAX_RANK],
        out: [0; MAX_RANK],
        sink,
    };
    if !plan.empty {
        walk.visit(0, 0)?;
    }
    Ok((walk.sink, value_out, element_type))
}

/// The entries of a result of rank 0 to 2, sorted by logical index (only
/// when the walk did not emit them so) and checked for repeats.
fn row_major(
    shape: Vec<u64>,
    columns: Vec<Vec<u64>>,
    values: Vec<u8>,
    len: usize,
    element_type: ElementType,
    parallel: bool,
) -> Result<Selection, SelectError> {
    let ordered = (1..len).all(|i| key(&columns, i - 1) < key(&columns, i));
    let (columns, values) = if ordered {
        (columns, values)
    } else {
        let width = element_type.byte_width().map_or(1, usize::from);
        sorted(columns, &values, len, width, parallel)?
    };
    let coords = match <[Vec<u64>; 2]>::try_from(columns) {
        Ok([first, second]) => first.iter().zip(&second).flat_map(|(&i, &j)| [i, j]).collect(),
        // Rank 0 or 1: no column, or the one column.
        Err(mut columns) => columns.pop().unwrap_or_default(),
    };
    Ok(Selection::Entries { shape, coords, values, element_type })
}

/// Entry `i`'s coordinates in at most two columns, as a sort key.
#[inline]
fn key(columns: &[Vec<u64>], i: usize) -> (u64, u64) {
    let at = |d: usize| columns.get(d).and_then(|c| c.get(i)).copied().unwrap_or(0);
    (at(0), at(1))
}

/// The columns and values (`width` bytes each) of `len` entries in row-major
/// order; an error when two share an index (unvalidated input).
fn sorted(
    columns: Vec<Vec<u64>>,
    values: &[u8],
    len: usize,
    width: usize,
    parallel: bool,
) -> Result<(Vec<Vec<u64>>, Vec<u8>), SelectError> {
    let mut order: Vec<usize> = (0..len).collect();
    if parallel {
        use rayon::prelude::*;
        order.par_sort_unstable_by_key(|&i| key(&columns, i));
    } else {
        order.sort_unstable_by_key(|&i| key(&columns, i));
    }
    if order.windows(2).any(|w| w.first().map(|&i| key(&columns, i)) == w.last().map(|&i| key(&columns, i))) {
        return Err(SelectError::Unvalidated { what: "two stored entries share an index" });
    }
    let values = order.iter().flat_map(|&i| values.get(i * width..(i + 1) * width).unwrap_or(&[])).copied();
    let columns = columns.iter().map(|c| order.iter().map(|&i| c.get(i).copied().unwrap_or(0)).collect());
    Ok((columns.collect(), values.collect()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{build, Coo, Indices};
    use csf_testdata::{synthetic, Distribution};

    #[test]
    fn a_monotone_walk_is_in_storage_order_and_its_arrays_are_adopted() {
        let coo = synthetic(&[9, 11, 7, 13], 3_000, Distribution::Uniform, 5);
        let options = Options {
            mode_order: ModeOrderPolicy::Explicit(vec![2, 0, 3, 1]),
            duplicates: Duplicates::Last,
            ..Options::default()
        };
        let input = Coo::new(&coo.shape, Indices::RowMajor(&coo.indices), &coo.values);
        let built = build(&input, &options).unwrap();
        let view = built.tensor.view();
        let take: &[u64] = &[0, 2, 2, 6];
        let cases: [[Axis<'_>; 4]; 3] = [
            [Axis::All, Axis::Step { start: 1, len: 5, step: 2 }, Axis::Take(take), Axis::All],
            [Axis::Index(3), Axis::All, Axis::All, Axis::Step { start: 2, len: 9, step: 1 }],
            [Axis::Take(take), Axis::Take(take), Axis::All, Axis::Index(4)],
        ];
        for axes in cases {
            let plan = Plan::new(&view, &axes).unwrap();
            assert!(plan.monotone());
            let (sink, _, element_type) = walk(&view, &plan, false).unwrap();
            let Sink { columns, values, len, .. } = sink;
            assert!(len > 20, "{axes:?}: {len} entries");
            let stored =
                |i: usize| -> Vec<u64> { plan.out_order.iter().map(|&d| columns[d as usize][i]).collect() };
            assert!((1..len).all(|i| stored(i - 1) < stored(i)), "{axes:?}: not in storage order");
            let leaf_column = columns[*plan.out_order.last().unwrap() as usize].as_ptr().cast::<u8>();
            let values_at = values.as_ptr();
            let coo = OwnedCoo { shape: plan.out_shape.clone(), columns, element_type, values };
            let built = build_owned(coo, &build_options(&plan, true)).unwrap();
            let out = built.tensor.view();
            let leaf = out.levels().last().unwrap();
            assert_eq!(leaf.crd.as_bytes().as_ptr(), leaf_column, "{axes:?}: the leaf column was copied");
            assert_eq!(out.values().as_bytes().as_ptr(), values_at, "{axes:?}: the values were copied");
        }
        let reversed = [Axis::All, Axis::Step { start: 10, len: 5, step: -2 }, Axis::All, Axis::All];
        assert!(!Plan::new(&view, &reversed).unwrap().monotone());
        assert!(!Plan::new(&view, &[Axis::All, Axis::All, Axis::Take(&[3, 1]), Axis::All])
            .unwrap()
            .monotone());
    }

    #[test]
    fn an_output_past_the_address_space_is_an_error() {
        let mut sink = Sink { columns: vec![Vec::new(); 2], values: Vec::new(), len: 0, room: 0, width: 8 };
        assert!(sink.make_room().is_ok());
        sink.len = usize::MAX / 4;
        sink.room = sink.len;
        assert_eq!(sink.make_room(), Err(SelectError::TooLarge { entries: (usize::MAX / 4) as u64 }));
    }

    #[test]
    fn a_take_table_lists_each_coordinate_s_positions_in_order() {
        let table = Table::new(&[5, 1, 5, 3, 1, 5]);
        assert_eq!(table.coords, [1, 3, 5]);
        assert_eq!(
            (table.positions(0), table.positions(1), table.positions(2)),
            (&[1, 4][..], &[3][..], &[0, 2, 5][..])
        );
        assert_eq!(table.positions(3), &[] as &[u64]);
        let empty = Table::new(&[]);
        assert!(empty.coords.is_empty() && empty.positions(0).is_empty());
    }
}
