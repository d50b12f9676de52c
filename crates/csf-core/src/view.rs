//! The borrowed CSF tensor (spec § Description, § Mode Ordering, § Buffer Table).

use hurray_format::le::U64Array;
use hurray_format::limits::{RankError, MAX_RANK, MIN_CSF_RANK};
use hurray_format::{csf, Container, ElementType, LayoutTag};

use crate::quant::Quantized;
use crate::values::Values;
use crate::words::clamp_index;

/// One tree level: its `pos_L` pointer array and `crd_L` coordinate array.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Level<'a> {
    /// `pos_L`: the children of parent `p` are `crd_L[pos_L[p] .. pos_L[p+1])`.
    pub pos: U64Array<'a>,
    /// `crd_L`: one coordinate per node of the level.
    pub crd: U64Array<'a>,
}

impl<'a> Level<'a> {
    /// The nodes stored at this level, `n_L` (the length of `crd_L`).
    pub fn node_count(&self) -> usize {
        self.crd.len()
    }

    /// The node range `[start, end)` of parent `parent`'s children, clamped so
    /// that it always lies inside `crd_L` (`start <= end <= n_L`). On data that
    /// breaks the storage invariants this is what keeps every accessor in bounds.
    #[inline]
    pub fn children(&self, parent: usize) -> (usize, usize) {
        parent.checked_add(1).map_or((0, 0), |next| self.children_of_range(parent, next))
    }

    /// The node range `[pos_L[first], pos_L[end])` of the children of the
    /// parents `first..end` of the level above, clamped as [`Level::children`]
    /// clamps (`start <= end <= n_L`). On valid data (`pos_L` non-decreasing,
    /// invariant 2) these are exactly the children of those parents, in one
    /// contiguous run: the nodes of a sub-tree at each level (see
    /// [`CsfView::subtree`]). An empty range of parents gives an empty range.
    #[inline]
    pub fn children_of_range(&self, first: usize, end: usize) -> (usize, usize) {
        let n = self.crd.len();
        let stop = self.pos.get(end).map_or(0, |e| clamp_index(e, n));
        let start = self.pos.get(first).map_or(stop, |s| clamp_index(s, n)).min(stop);
        (start, stop)
    }
}

/// Why buffers cannot be viewed as a CSF tensor at all.
///
/// These are the structural checks that memory safety and the accessors'
/// promises need, made in every mode; the storage invariants are
/// `csf-validate`'s business.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ViewError {
    /// The descriptor's layout is not CSF.
    #[error("layout {0} is not CSF")]
    NotCsf(LayoutTag),
    /// CSF is defined for rank >= 3 only (spec § Validity Constraints).
    #[error("{}", RankError::TooSmall(*rank))]
    RankTooSmall {
        /// The rank the descriptor declares (its shape's length).
        rank: usize,
    },
    /// More dimensions than the view holds: the data model's cap of 64, or
    /// the smaller capacity `MAX` of a [`CsfView<'_, MAX>`](CsfView).
    #[error("{}", RankAbove { rank: *rank, capacity: *capacity })]
    RankTooLarge {
        /// The rank the descriptor declares (its shape's length).
        rank: usize,
        /// The most dimensions the view holds: its `MAX` (64, the data
        /// model's cap, unless a smaller capacity was chosen).
        capacity: usize,
    },
    /// `mode_order` does not have one entry per dimension.
    #[error("mode_order has {len} entries for rank {rank}")]
    ModeOrderLength {
        /// Entries in the descriptor's `mode_order`.
        len: usize,
        /// The rank: the shape's length.
        rank: usize,
    },
    /// The buffer table is too short for the rank.
    #[error("buffer {index} is missing: the table has {count} buffers, rank needs {needed}")]
    MissingBuffer {
        /// The first missing buffer index.
        index: usize,
        /// Buffers present.
        count: usize,
        /// Buffers the rank needs (`2 * rank + 1`).
        needed: usize,
    },
    /// A `pos`/`crd` buffer's length is not a whole number of `u64`s.
    #[error("buffer {index}: {len} bytes is not a whole number of u64 elements")]
    NotU64Array {
        /// The buffer's row in the buffer table (`pos_L` or `crd_L`).
        index: usize,
        /// Its length in bytes.
        len: usize,
    },
}

/// The message of [`ViewError::RankTooLarge`]: the data model's wording
/// (hurray-format's `RankError`) at the cap of 64, the view's capacity below it.
struct RankAbove {
    rank: usize,
    capacity: usize,
}

impl core::fmt::Display for RankAbove {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        if self.capacity >= MAX_RANK {
            write!(f, "{}", RankError::TooLarge(self.rank))
        } else {
            write!(
                f,
                "rank {} exceeds this view's capacity of {} (CsfView<'_, {}>)",
                self.rank, self.capacity, self.capacity
            )
        }
    }
}

/// A CSF tensor borrowed from its buffers: nothing is copied.
///
/// Every accessor is total: on data that breaks the storage invariants (which
/// permissive validation lets through) it returns wrong-but-harmless answers,
/// never panics, never reads out of bounds, and does bounded work (see the
/// crate docs).
///
/// # Capacity
/// `MAX` is the largest rank the view holds, and sizes its per-level arrays
/// (shape, mode order, levels): 64 by default, the data model's cap, which
/// reads every file (1.9 KiB on a 32-bit target, 3.1 KiB on a 64-bit one).
/// A firmware that knows its tensors' ranks chooses a smaller one,
/// `CsfView<'a, 8>` say (about 290 bytes on a 32-bit target: 64 bytes
/// and 28 per rank of capacity), through the
/// `_capped` constructors ([`CsfView::from_container_capped`],
/// [`CsfView::empty_capped`]) or [`CsfView::read_container`]; its cursors,
/// walks and sub-trees are sized by the same `MAX`. A container of a higher
/// rank is then [`ViewError::RankTooLarge`] with the rank found and the
/// capacity, never a panic. `MAX` must lie in `3..=64`: another value is a
/// compile-time error where a view of it is made.
///
/// ```compile_fail
/// // Capacity 2: CSF has no rank-2 tensors (and 65 is past the data model's cap).
/// let view = csf_core::CsfView::<'_, 2>::empty_capped();
/// ```
///
/// ```
/// # let le = |v: &[u64]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
/// # let values: Vec<u8> = [1.0f32, 2.0, 3.0, 4.0].iter().flat_map(|v| v.to_le_bytes()).collect();
/// # let buffers = [values, le(&[0, 2]), le(&[0, 1]), le(&[0, 2, 3]), le(&[0, 2, 1]), le(&[0, 1, 2, 4]), le(&[1, 3, 0, 2])];
/// # let slices: Vec<&[u8]> = buffers.iter().map(Vec::as_slice).collect();
/// # let header = hurray_format::Descriptor::csf(hurray_format::ElementType::F32, &[2, 3, 4], &[0, 1, 2], 4)?;
/// # let bytes = hurray_format::encode_to_vec(&header, &slices)?;
/// use csf_core::{CsfView, ViewError};
///
/// let container = hurray_format::Container::decode(&bytes)?; // the spec's example, rank 3
/// let small = CsfView::<'_, 4>::from_container_capped(&container)?;
/// assert_eq!(small.get_f64(&[1, 1, 2])?, 4.0);
/// assert!(core::mem::size_of_val(&small) < core::mem::size_of::<CsfView<'_>>() / 8);
/// // A rank above the capacity is an error, not a panic:
/// let mut view = CsfView::<'_, 4>::empty_capped();
/// # let rank5 = hurray_format::Descriptor::csf(hurray_format::ElementType::F32, &[1; 5], &[0, 1, 2, 3, 4], 0)?;
/// # let empty = [vec![], le(&[0, 0]), vec![], le(&[0]), vec![], le(&[0]), vec![], le(&[0]), vec![], le(&[0]), vec![]];
/// # let slices: Vec<&[u8]> = empty.iter().map(Vec::as_slice).collect();
/// # let bytes5 = hurray_format::encode_to_vec(&rank5, &slices)?;
/// let rank5 = hurray_format::Container::decode(&bytes5)?; // an empty rank-5 tensor
/// assert_eq!(view.read_container(&rank5), Err(ViewError::RankTooLarge { rank: 5, capacity: 4 }));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Copy, Debug)]
pub struct CsfView<'a, const MAX: usize = MAX_RANK> {
    rank: usize,
    nnz: u64,
    shape: [u64; MAX],
    mode_order: [u32; MAX],
    levels: [Level<'a>; MAX],
    values: Values<'a>,
    quantization: Option<Quantized<'a>>,
}

/// The constructors of the default capacity, 64: every file's rank. (The
/// generic ones are `from_container_capped` and `empty_capped`: a default
/// capacity is not used to infer a type, so that `CsfView::empty()` would
/// not compile if it were generic.)
impl<'a> CsfView<'a> {
    /// Views the buffers of a decoded container, borrowing them.
    ///
    /// ```
    /// # let le = |v: &[u64]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
    /// # let values: Vec<u8> = [1.0f32, 2.0, 3.0, 4.0].iter().flat_map(|v| v.to_le_bytes()).collect();
    /// # let buffers = [values, le(&[0, 2]), le(&[0, 1]), le(&[0, 2, 3]), le(&[0, 2, 1]), le(&[0, 1, 2, 4]), le(&[1, 3, 0, 2])];
    /// # let slices: Vec<&[u8]> = buffers.iter().map(Vec::as_slice).collect();
    /// # let header = hurray_format::Descriptor::csf(hurray_format::ElementType::F32, &[2, 3, 4], &[0, 1, 2], 4)?;
    /// # let bytes = hurray_format::encode_to_vec(&header, &slices)?;
    /// // let bytes = std::fs::read("tensor.hurray")?; // a file's bytes (here, the spec's example)
    /// let container = hurray_format::Container::decode(&bytes)?; // the framing, checked
    /// let view = csf_core::CsfView::from_container(&container)?;  // borrows the buffers
    /// assert_eq!((view.rank(), view.shape(), view.nnz()), (3, &[2, 3, 4][..], 4));
    /// assert_eq!(view.get_f64(&[1, 1, 2])?, 4.0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// A [`ViewError`] when the layout is not CSF, the rank is outside
    /// `3..=64`, `mode_order` has the wrong length, a buffer is missing, or a
    /// `pos`/`crd` buffer is not a whole number of `u64`s.
    #[inline]
    pub fn from_container(container: &Container<'a>) -> Result<Self, ViewError> {
        Self::from_container_capped(container)
    }

    /// An empty rank-3 tensor of shape `[0, 0, 0]`: a safe stand-in, and
    /// what [`CsfView::read_container`] fills (1.9 KiB on a 32-bit target:
    /// see [`CsfView::empty_capped`] for a smaller one).
    #[inline]
    pub fn empty() -> CsfView<'static> {
        CsfView::empty_capped()
    }

    pub(crate) fn assemble(
        shape: &[u64],
        mode_order: &[u32],
        nnz: u64,
        levels: [Level<'a>; MAX_RANK],
        values: Values<'a>,
    ) -> Self {
        let mut view = Self {
            rank: shape.len(),
            nnz,
            shape: [0; MAX_RANK],
            mode_order: [0; MAX_RANK],
            levels,
            values,
            quantization: None,
        };
        for (dst, src) in view.shape.iter_mut().zip(shape) {
            *dst = *src;
        }
        for (dst, src) in view.mode_order.iter_mut().zip(mode_order) {
            *dst = *src;
        }
        view
    }
}

impl<'a, const MAX: usize> CsfView<'a, MAX> {
    /// The capacity: the largest rank this view type holds (`MAX`).
    pub const CAPACITY: usize = MAX;

    /// [`CsfView::from_container`] for a view of capacity `MAX`
    /// (`CsfView::<'_, 8>::from_container_capped(&container)`): a container
    /// whose rank exceeds `MAX` is [`ViewError::RankTooLarge`].
    ///
    /// # Errors
    /// As [`CsfView::from_container`], and [`ViewError::RankTooLarge`] above
    /// the capacity.
    // Out of line: it runs once per file, and inlined into a caller (with
    // LTO, into `csf_validate::validate`) its view (1.9 KiB on a 32-bit
    // target at the default capacity) and the `Result` holding it both
    // stayed in the caller's frame for the whole validation. The result is
    // the local returned, so that it is built in the caller's slot, not
    // built here and copied there.
    #[inline(never)]
    pub fn from_container_capped(container: &Container<'a>) -> Result<Self, ViewError> {
        let mut out = Ok(CsfView::empty_capped());
        if let Ok(view) = &mut out {
            if let Err(e) = view.read_container(container) {
                out = Err(e);
            }
        }
        out
    }

    /// [`CsfView::from_container`] in place: views the buffers of
    /// `container` as this view, which is left unchanged on an error.
    ///
    /// For a microcontroller: a view of the default capacity is 1.9 KiB on a
    /// 32-bit target (see [`CsfView`]'s capacity for a smaller one), and a
    /// view returned by value may be built in one frame and copied to
    /// another; this one is filled where it lies (`csf_validate::validate`
    /// reads its view so).
    ///
    /// ```
    /// # let le = |v: &[u64]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
    /// # let values: Vec<u8> = [1.0f32, 2.0, 3.0, 4.0].iter().flat_map(|v| v.to_le_bytes()).collect();
    /// # let buffers = [values, le(&[0, 2]), le(&[0, 1]), le(&[0, 2, 3]), le(&[0, 2, 1]), le(&[0, 1, 2, 4]), le(&[1, 3, 0, 2])];
    /// # let slices: Vec<&[u8]> = buffers.iter().map(Vec::as_slice).collect();
    /// # let header = hurray_format::Descriptor::csf(hurray_format::ElementType::F32, &[2, 3, 4], &[0, 1, 2], 4)?;
    /// # let bytes = hurray_format::encode_to_vec(&header, &slices)?;
    /// let container = hurray_format::Container::decode(&bytes)?;
    /// let mut view = csf_core::CsfView::empty();
    /// view.read_container(&container)?;
    /// assert_eq!(view.get_f64(&[1, 1, 2])?, 4.0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// As [`CsfView::from_container_capped`].
    #[inline(never)]
    pub fn read_container(&mut self, container: &Container<'a>) -> Result<(), ViewError> {
        // A capacity outside 3..=64 fails to compile here.
        const { assert!(MIN_CSF_RANK <= MAX && MAX <= MAX_RANK, "a CsfView's capacity MAX must lie in 3..=64") };
        if container.layout() != LayoutTag::CSF {
            return Err(ViewError::NotCsf(container.layout()));
        }
        let rank = container.rank();
        let needed = csf::buffer_count(rank);
        let count = container.buffer_count();
        check_shape(rank, container.mode_order().len(), MAX)?;
        if count < needed {
            return Err(ViewError::MissingBuffer { index: count, count, needed });
        }
        // Every check before the first write, so that an error leaves the
        // view as it was: the `pos`/`crd` buffers are whole `u64` arrays.
        for (index, bytes) in container.buffers().enumerate().take(needed).skip(1) {
            U64Array::new(bytes).ok_or(ViewError::NotU64Array { index, len: bytes.len() })?;
        }
        // One pass over the buffer table (the container reads its rows in
        // place): values, then `pos_L`, `crd_L` per level.
        let mut buffers = container.buffers();
        let values = buffers.next().unwrap_or(&[]);
        self.values = Values::new(container.element_type(), values);
        let mut array = || U64Array::new(buffers.next().unwrap_or(&[])).unwrap_or_default();
        self.rank = rank;
        self.nnz = container.nnz();
        for (dst, src) in self.shape.iter_mut().zip(container.shape().chain(core::iter::repeat(0))) {
            *dst = src;
        }
        for (dst, src) in self.mode_order.iter_mut().zip(container.mode_order().chain(core::iter::repeat(0)))
        {
            *dst = src;
        }
        for (level, slot) in self.levels.iter_mut().enumerate() {
            *slot = if level < rank { Level { pos: array(), crd: array() } } else { Level::default() };
        }
        self.quantization = Quantized::from_container(container);
        Ok(())
    }

    /// [`CsfView::empty`] of capacity `MAX`: an empty rank-3 tensor of
    /// shape `[0, 0, 0]`, for [`CsfView::read_container`] to fill
    /// (`CsfView::<'_, 8>::empty_capped()`). Out of line, so that it is
    /// built where it is returned.
    #[inline(never)]
    pub fn empty_capped() -> CsfView<'static, MAX> {
        // A capacity outside 3..=64 fails to compile here.
        const { assert!(MIN_CSF_RANK <= MAX && MAX <= MAX_RANK, "a CsfView's capacity MAX must lie in 3..=64") };
        // A literal in tail position: written straight into the return slot.
        let mut mode_order = [0; MAX];
        if let Some(head) = mode_order.get_mut(..3) {
            head.copy_from_slice(&[0, 1, 2]);
        }
        CsfView {
            rank: 3,
            nnz: 0,
            shape: [0; MAX],
            mode_order,
            levels: [Level { pos: U64Array::EMPTY, crd: U64Array::EMPTY }; MAX],
            values: Values::new(ElementType::U8, &[]),
            quantization: None,
        }
    }

    /// The rank (number of logical dimensions, and of tree levels).
    pub fn rank(&self) -> usize {
        self.rank
    }

    /// The logical shape.
    pub fn shape(&self) -> &[u64] {
        self.shape.get(..self.rank).unwrap_or(&[])
    }

    /// `mode_order[L]`: the logical dimension stored at level `L`. Not
    /// necessarily a permutation unless the view was validated strictly.
    pub fn mode_order(&self) -> &[u32] {
        self.mode_order.get(..self.rank).unwrap_or(&[])
    }

    /// The descriptor's `nnz`.
    pub fn nnz(&self) -> u64 {
        self.nnz
    }

    /// The element type of the values.
    pub fn element_type(&self) -> ElementType {
        self.values.element_type()
    }

    /// The values buffer as stored: one element per leaf (for a quantized
    /// tensor, the codes; [`CsfView::value`] gives the values they mean).
    pub fn values(&self) -> Values<'a> {
        self.values
    }

    /// The quantization of the values, when the tensor is quantized.
    pub fn quantization(&self) -> Option<&Quantized<'a>> {
        self.quantization.as_ref()
    }

    /// Attaches a quantization to a view built from parts.
    pub fn with_quantization(mut self, quantization: Quantized<'a>) -> Self {
        self.quantization = Some(quantization);
        self
    }

    /// The levels, outermost (level 0) first.
    pub fn levels(&self) -> &[Level<'a>] {
        self.levels.get(..self.rank).unwrap_or(&[])
    }

    /// Level `level`, or `None` past the leaf level.
    pub fn level(&self, level: usize) -> Option<Level<'a>> {
        self.levels().get(level).copied()
    }

    /// `n_L`, the number of nodes stored at `level` (0 past the leaf level).
    pub fn node_count(&self, level: usize) -> usize {
        self.level(level).map_or(0, |l| l.node_count())
    }

    /// The bounding size of level `level`, `shape[mode_order[level]]`, or
    /// `None` when `mode_order` points outside the shape (permissive data).
    pub fn level_extent(&self, level: usize) -> Option<u64> {
        let dim = *self.mode_order().get(level)?;
        self.shape().get(dim as usize).copied()
    }

    /// A fiber: the children of node `parent` of level `level - 1` (for
    /// level 0, `parent` 0 is the virtual root), as a range of node indices
    /// into `crd_level` together with the coordinates. Always in bounds.
    pub fn fiber(&self, level: usize, parent: usize) -> Fiber<'a> {
        let lvl = self.level(level).unwrap_or_default();
        let (start, end) = lvl.children(parent);
        Fiber { start, crd: lvl.crd.slice(start, end) }
    }
}

/// The children of one node: node indices `start .. start + crd.len()` of their level.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fiber<'a> {
    /// Index of the first child in its level (an index into `crd_L`, and for the
    /// leaf level a leaf position).
    pub start: usize,
    /// The children's coordinates.
    pub crd: U64Array<'a>,
}

impl Fiber<'_> {
    /// The number of children.
    pub fn len(&self) -> usize {
        self.crd.len()
    }

    /// Whether the node has no children.
    pub fn is_empty(&self) -> bool {
        self.crd.is_empty()
    }

    /// `(node index, coordinate)` for each child, in storage order.
    pub fn iter(&self) -> impl Iterator<Item = (usize, u64)> + '_ {
        self.crd.iter().enumerate().map(move |(i, c)| (self.start + i, c))
    }
}

fn check_shape(rank: usize, mode_order_len: usize, capacity: usize) -> Result<(), ViewError> {
    RankError::check(rank).map_err(|e| match e {
        RankError::TooSmall(rank) => ViewError::RankTooSmall { rank },
        RankError::TooLarge(rank) => ViewError::RankTooLarge { rank, capacity },
    })?;
    if rank > capacity {
        return Err(ViewError::RankTooLarge { rank, capacity });
    }
    if mode_order_len != rank {
        return Err(ViewError::ModeOrderLength { len: mode_order_len, rank });
    }
    Ok(())
}
