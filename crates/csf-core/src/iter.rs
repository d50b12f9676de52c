//! Spec § Iteration: depth-first, in leaf order, with a fixed stack.
//!
//! The walk keeps, for each level, a high-water mark: the first node index not
//! yet visited. A parent's child slice is clamped to start at that mark and to
//! end inside `crd_L`, so slices never move backwards. Each stored node is
//! therefore visited at most once and each visit opens at most one slice: the
//! work is at most `2 * (n_0 + ... + n_{rank-1}) + 1` steps on *any* input,
//! including `pos` arrays that go backwards, overlap or point past the end.
//!
//! A walk covers a [`Scope`]: the whole tensor, or the sub-tree under a prefix
//! (`crate::subtree`, which builds on this module). A sub-tree's walk starts at its node range of level `k`
//! and ends when it climbs back there; at each level below, the high-water
//! mark starts at the first node of the sub-tree's range and slices are also
//! clamped to end within it, so that the walk never leaves the sub-tree's
//! nodes and costs at most twice their number, plus one, in steps.

use hurray_format::limits::MAX_RANK;

use crate::lookup::LookupError;
use crate::values::Value;
use crate::view::CsfView;

/// What a walk covers: the nodes `nodes` of level `level`, under the
/// storage-order coordinates `prefix` of the levels above, and at each level
/// below the node range [`Scope::below`] gives.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Scope<'p> {
    /// The top level, `k`.
    pub(crate) level: usize,
    /// The node range at the top level.
    pub(crate) nodes: (usize, usize),
    /// The coordinates of levels `0..k`.
    pub(crate) prefix: &'p [u64],
}

impl Scope<'_> {
    /// The whole tensor: the root's children at level 0, and every node below.
    pub(crate) fn whole<const MAX: usize>(view: &CsfView<'_, MAX>) -> Scope<'static> {
        Scope { level: 0, nodes: view.level(0).map_or((0, 0), |l| l.children(0)), prefix: &[] }
    }

    /// The scope's node range at `level` (below the top), given its range
    /// `above` at `level - 1`: the children of those nodes, clamped into
    /// `crd_level`. The whole tensor's lower levels are bounded by their
    /// length only, so that its walk is the one [`CsfView::for_each`] always
    /// made, whatever `pos` holds; on valid data the two agree. Out of line:
    /// `Scope::range` and `Cursor::scoped` both step through it, and a copy
    /// in each cost flash on a Cortex-M0 (`docs/benchmarks.md`, "Embedded").
    #[inline(never)]
    pub(crate) fn below<const MAX: usize>(
        &self,
        view: &CsfView<'_, MAX>,
        level: usize,
        above: (usize, usize),
    ) -> (usize, usize) {
        if self.level == 0 {
            return (0, view.node_count(level));
        }
        view.level(level).map_or((0, 0), |l| l.children_of_range(above.0, above.1))
    }

    /// The scope's node range at `level`; empty above the top. `O(level - k)`.
    /// Out of line, to keep `CsfView::walk` small (see there).
    #[inline(never)]
    pub(crate) fn range<const MAX: usize>(&self, view: &CsfView<'_, MAX>, level: usize) -> (usize, usize) {
        if level < self.level {
            return (0, 0);
        }
        (self.level + 1..=level).fold(self.nodes, |range, l| self.below(view, l, range))
    }
}

/// Where a coordinate goes in the logical index: `mode_order[L]`, or a slot
/// past every index ([`SPARE`]) when `mode_order[L]` names no dimension
/// (unvalidated data), so that the coordinate is not written. Bytes, not
/// `usize`s: a cursor holds these, and its size is stack on a
/// microcontroller (192 bytes fewer on a 32-bit target at capacity 64,
/// which pays for the cursor's `limit`).
pub(crate) fn logical_slots<const MAX: usize>(view: &CsfView<'_, MAX>) -> [u8; MAX] {
    let rank = view.rank();
    let mut slots = [SPARE; MAX];
    for (slot, &dim) in slots.iter_mut().zip(view.mode_order()) {
        if let Ok(dim) = u8::try_from(dim) {
            if usize::from(dim) < rank {
                *slot = dim;
            }
        }
    }
    slots
}

/// The slot of [`logical_slots`] for no dimension: past the end of every
/// index (of at most `MAX_RANK` entries), so that writes to it are dropped.
const SPARE: u8 = {
    assert!(MAX_RANK < u8::MAX as usize);
    u8::MAX
};

/// Slot `level` of `slots` as an index.
#[inline]
fn slot_of<const MAX: usize>(slots: &[u8; MAX], level: usize) -> usize {
    usize::from(slots.get(level).copied().unwrap_or(SPARE))
}

/// A depth-first cursor over the non-zeros, in leaf (storage) order: of the
/// whole tensor ([`CsfView::cursor`]) or of a sub-tree
/// ([`Subtree::cursor`](crate::Subtree::cursor)).
///
/// It does not allocate; its state is a few fixed arrays sized by the
/// view's capacity `MAX` (64 by default: 2.1 KiB on a 32-bit target; see
/// [`CsfView`]'s capacity). Call [`Cursor::advance`] until it returns `false`; in between,
/// [`Cursor::index`], [`Cursor::coords`], [`Cursor::leaf`] and
/// [`Cursor::value`] describe the current non-zero.
#[derive(Clone, Debug)]
pub struct Cursor<'v, 'a, const MAX: usize = MAX_RANK> {
    view: &'v CsfView<'a, MAX>,
    slots: [u8; MAX],
    /// Current node at each level.
    node: [usize; MAX],
    /// End of the current slice at each level.
    end: [usize; MAX],
    /// First node not yet visited at each level (to begin with, the first
    /// node of the scope's range there).
    high: [usize; MAX],
    /// End of the scope's node range at each level below its top: no slice
    /// reaches past it.
    limit: [usize; MAX],
    /// Storage-order coordinates `c[L]`.
    coords: [u64; MAX],
    /// Logical index (a stray `mode_order` entry's coordinate is not written).
    index: [u64; MAX],
    /// The levels walked, `0..rank`: the view's rank, or fewer when
    /// [`CsfView::walk`] walks the levels above its two flat loops (so that
    /// it borrows the view instead of copying a shortened one).
    rank: usize,
    /// The level the walk starts at and ends at: 0, or a sub-tree's prefix length.
    top: usize,
    level: usize,
    started: bool,
    done: bool,
    steps: u64,
}

impl<'v, 'a, const MAX: usize> Cursor<'v, 'a, MAX> {
    /// A cursor before the first non-zero of `view`.
    pub fn new(view: &'v CsfView<'a, MAX>) -> Self {
        Self::scoped(view, &Scope::whole(view), logical_slots(view), view.rank())
    }

    /// A cursor before the first non-zero of `scope`, placing level `L`'s
    /// coordinate at `slots[L]` of the logical index, over the levels
    /// `0..rank` (at most the view's rank). Always inlined, over two steps
    /// that are not (to keep `CsfView::walk` small, see there): so that the
    /// cursor, 2.1 KiB on a 32-bit target, is built where the caller keeps
    /// it, not built in a frame of its own and copied out.
    #[inline(always)]
    pub(crate) fn scoped(
        view: &'v CsfView<'a, MAX>,
        scope: &Scope<'_>,
        slots: [u8; MAX],
        rank: usize,
    ) -> Self {
        let mut cursor = Self::blank(view, slots, rank.min(view.rank()), scope.level);
        cursor.start(scope);
        cursor
    }

    /// A cursor at no node, over levels `0..rank`, starting at level `top`.
    /// A literal in tail position: written straight into the return slot.
    #[inline(never)]
    fn blank(view: &'v CsfView<'a, MAX>, slots: [u8; MAX], rank: usize, top: usize) -> Self {
        Self {
            view,
            slots,
            node: [0; MAX],
            end: [0; MAX],
            high: [0; MAX],
            limit: [0; MAX],
            coords: [0; MAX],
            index: [0; MAX],
            rank,
            top,
            level: top,
            started: false,
            done: top >= rank,
            steps: 0,
        }
    }

    /// Places a [`Cursor::blank`] cursor before the first non-zero of `scope`.
    #[inline(never)]
    fn start(&mut self, scope: &Scope<'_>) {
        let (view, rank, top) = (self.view, self.rank, self.top);
        for (level, &coord) in scope.prefix.iter().enumerate().take(top) {
            self.set(level, coord);
        }
        let (start, end) = scope.nodes;
        if let (Some(n), Some(e)) = (self.node.get_mut(top), self.end.get_mut(top)) {
            *n = start;
            *e = end.max(start);
        }
        let mut range = scope.nodes;
        for level in top + 1..rank {
            range = scope.below(view, level, range);
            if let (Some(h), Some(l)) = (self.high.get_mut(level), self.limit.get_mut(level)) {
                *h = range.0;
                *l = range.1;
            }
        }
    }

    /// Opens the child slice of `parent` at `level`, clamped (see the module docs).
    fn open(&mut self, level: usize, parent: usize) {
        let (start, end) = self.view.level(level).map_or((0, 0), |l| l.children(parent));
        let start = start.max(self.high.get(level).copied().unwrap_or(0));
        let end = end.min(self.limit.get(level).copied().unwrap_or(0));
        if let (Some(n), Some(e)) = (self.node.get_mut(level), self.end.get_mut(level)) {
            *n = start;
            *e = end.max(start);
        }
    }

    /// Records `coord` as level `level`'s coordinate, in storage order and in
    /// the logical index.
    #[inline]
    fn set(&mut self, level: usize, coord: u64) {
        if let Some(c) = self.coords.get_mut(level) {
            *c = coord;
        }
        if let Some(i) = self.index.get_mut(slot_of(&self.slots, level)) {
            *i = coord;
        }
    }

    /// Moves to the next non-zero; `false` when there is none.
    pub fn advance(&mut self) -> bool {
        if self.done {
            return false;
        }
        let Some(last) = self.rank.checked_sub(1) else {
            self.done = true;
            return false;
        };
        if self.started {
            self.level = last;
            if let Some(n) = self.node.get_mut(last) {
                *n += 1;
            }
        } else {
            // The top slice was opened by `scoped`.
            self.started = true;
            self.level = self.top;
        }
        loop {
            self.steps += 1;
            let level = self.level;
            let (node, end) = (self.node.get(level).copied(), self.end.get(level).copied());
            let (Some(node), Some(end)) = (node, end) else {
                self.done = true;
                return false;
            };
            if node < end {
                let coord = self.view.level(level).and_then(|l| l.crd.get(node)).unwrap_or(0);
                self.set(level, coord);
                if let Some(h) = self.high.get_mut(level) {
                    *h = node + 1;
                }
                if level == last {
                    return true;
                }
                self.level = level + 1;
                self.open(level + 1, node);
            } else if level <= self.top {
                self.done = true;
                return false;
            } else {
                self.level = level - 1;
                if let Some(n) = self.node.get_mut(level - 1) {
                    *n += 1;
                }
            }
        }
    }

    /// The current non-zero's logical index (`c[L]` placed at `mode_order[L]`).
    pub fn index(&self) -> &[u64] {
        self.index.get(..self.rank).unwrap_or(&[])
    }

    /// The current non-zero's coordinates in storage order (`c[0..rank]`).
    pub fn coords(&self) -> &[u64] {
        self.coords.get(..self.rank).unwrap_or(&[])
    }

    /// The current non-zero's leaf position (its index into `values`).
    pub fn leaf(&self) -> usize {
        self.node.get(self.rank.saturating_sub(1)).copied().unwrap_or(0)
    }

    /// The current non-zero's value, dequantized when the tensor is
    /// quantized (see [`CsfView::value`]); `None` only on unvalidated data
    /// (a leaf past the values buffer, a group without parameters).
    pub fn value(&self) -> Option<Value> {
        self.view.value(self.leaf(), self.index())
    }

    /// The current non-zero's element exactly as stored (for a quantized
    /// tensor, its code); `None` only when the leaf lies past the values
    /// buffer (unvalidated data).
    pub fn value_raw(&self) -> Option<Value> {
        self.view.values().get_raw(self.leaf())
    }

    /// Steps taken so far: a measure of work that the module docs bound.
    pub fn steps(&self) -> u64 {
        self.steps
    }
}

/// An iterator over `(logical index, value)` for a tensor of rank `R`.
#[derive(Clone, Debug)]
pub struct Entries<'v, 'a, const R: usize, const MAX: usize = MAX_RANK> {
    pub(crate) cursor: Cursor<'v, 'a, MAX>,
}

impl<const R: usize, const MAX: usize> Iterator for Entries<'_, '_, R, MAX> {
    type Item = ([u64; R], Option<Value>);

    fn next(&mut self) -> Option<Self::Item> {
        if !self.cursor.advance() {
            return None;
        }
        let mut index = [0u64; R];
        for (dst, src) in index.iter_mut().zip(self.cursor.index()) {
            *dst = *src;
        }
        Some((index, self.cursor.value()))
    }
}

impl<'a, const MAX: usize> CsfView<'a, MAX> {
    /// A cursor over the non-zeros in leaf order.
    ///
    /// ```
    /// # let le = |v: &[u64]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
    /// # let values: Vec<u8> = [1.0f32, 2.0, 3.0, 4.0].iter().flat_map(|v| v.to_le_bytes()).collect();
    /// # let buffers = [values, le(&[0, 2]), le(&[0, 1]), le(&[0, 2, 3]), le(&[0, 2, 1]), le(&[0, 1, 2, 4]), le(&[1, 3, 0, 2])];
    /// # let slices: Vec<&[u8]> = buffers.iter().map(Vec::as_slice).collect();
    /// # let header = hurray_format::Descriptor::csf(hurray_format::ElementType::F32, &[2, 3, 4], &[0, 1, 2], 4)?;
    /// # let bytes = hurray_format::encode_to_vec(&header, &slices)?;
    /// # let container = hurray_format::Container::decode(&bytes)?;
    /// # let view = csf_core::CsfView::from_container(&container)?;
    /// // `view`: the spec's example.
    /// let mut cursor = view.cursor();
    /// let mut leaves = Vec::new();
    /// while cursor.advance() {
    ///     leaves.push((cursor.index().to_vec(), cursor.leaf(), cursor.value()));
    /// }
    /// assert_eq!(leaves[0], (vec![0, 0, 1], 0, Some(csf_core::Value::F32(1.0))));
    /// assert_eq!(leaves.len(), 4);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn cursor(&self) -> Cursor<'_, 'a, MAX> {
        Cursor::new(self)
    }

    /// The non-zeros as `([u64; R], value)` pairs in leaf order, for a rank
    /// known at compile time. The value is the one [`Cursor::value`] gives
    /// (dequantized when the tensor is quantized); it is `None` only on
    /// unvalidated data.
    ///
    /// # Errors
    /// [`LookupError::WrongRank`] when `R` is not the tensor's rank.
    pub fn entries<const R: usize>(&self) -> Result<Entries<'_, 'a, R, MAX>, LookupError> {
        if R != self.rank() {
            return Err(LookupError::WrongRank { got: R, rank: self.rank() });
        }
        Ok(Entries { cursor: self.cursor() })
    }

    /// Calls `f(logical index, leaf position)` for every non-zero in leaf
    /// order. The fastest way to visit the tensor: the two innermost levels
    /// run as flat loops over their fibers (on native arrays whose leaf `pos`
    /// is well formed, as one loop over the leaves). Same bounds as
    /// [`Cursor`], and the same entries, even on data that breaks the storage
    /// invariants.
    ///
    /// ```
    /// # let le = |v: &[u64]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
    /// # let values: Vec<u8> = [1.0f32, 2.0, 3.0, 4.0].iter().flat_map(|v| v.to_le_bytes()).collect();
    /// # let buffers = [values, le(&[0, 2]), le(&[0, 1]), le(&[0, 2, 3]), le(&[0, 2, 1]), le(&[0, 1, 2, 4]), le(&[1, 3, 0, 2])];
    /// # let slices: Vec<&[u8]> = buffers.iter().map(Vec::as_slice).collect();
    /// # let header = hurray_format::Descriptor::csf(hurray_format::ElementType::F32, &[2, 3, 4], &[0, 1, 2], 4)?;
    /// # let bytes = hurray_format::encode_to_vec(&header, &slices)?;
    /// # let container = hurray_format::Container::decode(&bytes)?;
    /// # let view = csf_core::CsfView::from_container(&container)?;
    /// // `view`: the spec's example.
    /// let mut entries = Vec::new();
    /// view.for_each(|index, leaf| entries.push((index.to_vec(), view.value_f64(leaf, index))));
    /// assert_eq!(entries[3], (vec![1, 1, 2], Some(4.0)));
    /// // With the values as `f32`s, no `Option` per entry:
    /// let mut sum = 0.0;
    /// view.for_each_typed(|_, v: f32| sum += v)?;
    /// assert_eq!(sum, 10.0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[inline]
    pub fn for_each(&self, f: impl FnMut(&[u64], usize)) {
        self.walk::<true>(&Scope::whole(self), f);
    }

    /// Like [`CsfView::for_each`], with the coordinates in storage order
    /// (`c[L]` for level `L`) instead of the logical index.
    #[inline]
    pub fn for_each_stored(&self, f: impl FnMut(&[u64], usize)) {
        self.walk::<false>(&Scope::whole(self), f);
    }

    // `walk` is only a hint, but `scan_opened` and `flat` are always inlined
    // into it: with the whole walk in one function, the compiler keeps a
    // closure's captured accumulators in registers. With them out of line it
    // loaded and stored them at every entry (two `&mut` captures that it
    // cannot prove distinct), a large loss on the benchmark's index + sum
    // loop. Inlining `walk` itself too (`inline(always)`) cost the loop that
    // ignores the index more still (`docs/benchmarks.md` has both figures).
    //
    // The same holds one level up: `for_each` must be inlined into its
    // caller (hence its hint: without it, once `walk` had grown to take a
    // scope, the index + sum loop lost a third of its speed), and `f` must
    // never be passed to a function that is not inlined (an out-of-line
    // `Fibers::leaves` spilled the sum of the sum-only loop to the stack at
    // every entry; "Sub-trees" in `docs/benchmarks.md`). To keep `walk` small, the
    // flat and nested loops appear once in it (a scope whose top is level
    // rank-2 scans its node range at the same call site as the nodes the
    // cursor stops at), and the set-up that does not call `f`
    // (`Cursor::scoped` and the step of `Scope::range`) is out of line.
    #[inline]
    pub(crate) fn walk<const LOGICAL: bool>(&self, scope: &Scope<'_>, mut f: impl FnMut(&[u64], usize)) {
        let rank = self.rank();
        let (Some(last), Some(mid)) = (rank.checked_sub(1), rank.checked_sub(2)) else { return };
        let slots = logical_slots(self);
        let slot = |level: usize| if LOGICAL { slot_of(&slots, level) } else { level };
        let mut fibers = Fibers {
            mid: Fiberwise::new(self.level(mid).unwrap_or_default(), slot(mid), scope.range(self, mid)),
            leaf: Fiberwise::new(self.level(last).unwrap_or_default(), slot(last), scope.range(self, last)),
            // Zeroed in place and then filled: an index built apart and
            // moved in was 520 more bytes of stack on a 32-bit target.
            out: [0; MAX],
            rank,
        };
        for (level, &coord) in scope.prefix.iter().enumerate().take(scope.level) {
            if let Some(o) = fibers.out.get_mut(slot(level)) {
                *o = coord;
            }
        }
        if scope.level >= last {
            // A sub-tree of leaves alone: its prefix names every level but the last.
            if scope.level == last {
                fibers.leaves(scope.nodes, &mut f);
            }
            return;
        }
        // Walk the levels above the last two with the cursor: each position
        // it stops at is a node whose children (level rank-2) and their leaf
        // fibers are then scanned as two flat nested loops. A scope whose top
        // is level rank-2 scans its own node range there instead, once (its
        // cursor, over no level, stops nowhere).
        // The cursor walks levels `0..mid` of this view, by reference: a
        // shortened copy of the view cost 1.9 KiB of stack on a 32-bit target
        // (at capacity 64).
        // Built in place (blank, then started), not through `Cursor::scoped`:
        // a cursor moved out of a constructor was built and then copied,
        // 2.1 KiB more stack on a 32-bit target.
        let mut upper = Cursor::blank(self, slots, mid.min(rank), scope.level);
        upper.start(scope);
        let mut top_nodes = (scope.level == mid).then_some(scope.nodes);
        loop {
            let (start, crd) = if let Some((first, end)) = top_nodes.take() {
                fibers.mid.open_range(first, end)
            } else if upper.advance() {
                let coords = if LOGICAL { upper.index.as_slice() } else { upper.coords.as_slice() };
                for (dst, src) in fibers.out.iter_mut().zip(coords).take(rank) {
                    *dst = *src;
                }
                fibers.mid.open(upper.leaf())
            } else {
                break;
            };
            fibers.scan_opened(start, crd, &mut f);
        }
    }
}

/// One of the two innermost levels in [`CsfView::walk`].
struct Fiberwise<'a> {
    level: crate::view::Level<'a>,
    /// `crd_L`'s bytes, read in place by the nested loops of `scan` (which
    /// take any array, aligned or not).
    crd: &'a [u8],
    /// Where this level's coordinate goes in the output index.
    slot: usize,
    /// First node not yet visited (the same clamp as the cursor's).
    high: usize,
    /// End of the scope's node range at this level (the cursor's `limit`).
    limit: usize,
}

impl<'a> Fiberwise<'a> {
    /// The level, with the scope's node range `(high, limit)` there.
    fn new(level: crate::view::Level<'a>, slot: usize, (high, limit): (usize, usize)) -> Self {
        Self { level, crd: level.crd.as_bytes(), slot, high, limit }
    }

    /// The children of `parent`: see [`Fiberwise::open_range`].
    #[inline]
    fn open(&mut self, parent: usize) -> (usize, &'a [u8]) {
        let (start, end) = self.level.children(parent);
        self.open_range(start, end)
    }

    /// The nodes `start..end`, clamped exactly as [`Cursor::open`] clamps a
    /// slice, with the high-water mark moved past them as visiting them moves
    /// the cursor's (an empty slice leaves it alone): the first node's index
    /// and the nodes' coordinates as little-endian bytes.
    #[inline]
    fn open_range(&mut self, start: usize, end: usize) -> (usize, &'a [u8]) {
        let start = start.max(self.high);
        let end = end.min(self.limit);
        if start < end {
            self.high = end;
        }
        // `start` and `end` are at most n_L, so the byte offsets do not
        // overflow; a reversed range (start > end) reads as empty.
        (start, self.crd.get(start.saturating_mul(8)..end.saturating_mul(8)).unwrap_or(&[]))
    }
}

/// The little-endian `u64`s in `bytes`.
#[inline]
fn coords(bytes: &[u8]) -> impl Iterator<Item = u64> + '_ {
    bytes.chunks_exact(8).map(|chunk| <[u8; 8]>::try_from(chunk).map_or(0, u64::from_le_bytes))
}

/// The two innermost levels of [`CsfView::walk`].
struct Fibers<'a, const MAX: usize> {
    mid: Fiberwise<'a>,
    leaf: Fiberwise<'a>,
    out: [u64; MAX],
    rank: usize,
}

impl<const MAX: usize> Fibers<'_, MAX> {
    /// Visits the leaves `first..end` (the walk of a scope whose top is the
    /// leaf level). Always inlined, like every function that calls `f`: out
    /// of line, it took `f`'s captures by address, and the compiler then kept
    /// a closure's accumulators in memory throughout `walk` (see there).
    #[inline(always)]
    fn leaves(&mut self, (first, end): (usize, usize), f: &mut impl FnMut(&[u64], usize)) {
        let (start, crd) = self.leaf.open_range(first, end);
        for (j, c) in coords(crd).enumerate() {
            if let Some(slot) = self.out.get_mut(self.leaf.slot) {
                *slot = c;
            }
            f(self.out.get(..self.rank).unwrap_or(&[]), start + j);
        }
    }

    /// Visits the level rank-2 nodes from `start` (their coordinates `crd`,
    /// opened: the children of a node of level rank-3, or a scope's top
    /// nodes) and, for each, its leaf fiber. (Always inlined: see `walk`.)
    #[inline(always)]
    fn scan_opened(&mut self, start: usize, crd: &[u8], f: &mut impl FnMut(&[u64], usize)) {
        if self.flat(start, crd.len() / 8, f) {
            return;
        }
        for (i, c) in coords(crd).enumerate() {
            if let Some(slot) = self.out.get_mut(self.mid.slot) {
                *slot = c;
            }
            let (leaf_start, leaves) = self.leaf.open(start + i);
            for (j, c) in coords(leaves).enumerate() {
                if let Some(slot) = self.out.get_mut(self.leaf.slot) {
                    *slot = c;
                }
                f(self.out.get(..self.rank).unwrap_or(&[]), leaf_start + j);
            }
        }
    }

    /// The fast path of [`Fibers::scan_opened`] for the mid nodes
    /// `start..start + count` (their slice, already opened): `false`, having
    /// done nothing, unless the arrays are native and the leaf level's
    /// `pos_L[start..=start + count]` is strictly increasing, starts at or
    /// past the leaf high-water mark and ends within `crd_L` and the scope's
    /// leaf range. Then every clamp of the nested loops is a no-op and every
    /// leaf fiber is non-empty, so the leaves `pos_L[start]..pos_L[start +
    /// count]` are visited in one flat loop that moves to the next mid node
    /// at each fiber boundary, without a branch: the same entries in the same
    /// order, without the nested loops' mispredicted exit per fiber (leaf
    /// fibers hold 2.7 entries on average in the uniform benchmark tensor, so
    /// that exit dominated; `docs/benchmarks.md` has the figures).
    #[inline(always)]
    fn flat(&mut self, start: usize, count: usize, f: &mut impl FnMut(&[u64], usize)) -> bool {
        let (Some(pos), Some(leaves), Some(mids)) = (
            self.leaf.level.pos.as_native(),
            self.leaf.level.crd.as_native(),
            self.mid.level.crd.as_native(),
        ) else {
            return false;
        };
        let (Some(pos), Some(mids)) = (pos.get(start..start + count + 1), mids.get(start..start + count))
        else {
            return false;
        };
        let (Some(&first), Some(&last)) = (pos.first(), pos.last()) else { return false };
        if count == 0 {
            return true;
        }
        let (Ok(first), Ok(last)) = (usize::try_from(first), usize::try_from(last)) else { return false };
        if first < self.leaf.high || !strictly_increasing(pos) {
            return false;
        }
        // Fails when `last` is past the end of `crd_L` or of the scope's leaf
        // range. (The first use of `last`, often a cache miss, comes after the
        // scan of `pos` so that the two overlap: compared with the limit
        // before it, the sum-only loop was slower.)
        let within = leaves.get(..self.leaf.limit.min(leaves.len())).unwrap_or(&[]);
        let Some(leaves) = within.get(first..last) else { return false };
        // A slot past the index (a stray `mode_order` entry, on unvalidated
        // data) is left to the nested loops, which drop its coordinate:
        // here both slots are in bounds, and their checks leave the loop.
        let (mid_slot, leaf_slot) = (self.mid.slot, self.leaf.slot);
        if mid_slot >= MAX || leaf_slot >= MAX {
            return false;
        }
        let mut out = self.out;
        let rank = self.rank.min(MAX);
        // Mid node `i` (of the slice) owns leaves `pos[i]..pos[i + 1]`.
        let mut i = 0usize;
        let mut next = pos.get(1).copied().unwrap_or(u64::MAX);
        for (leaf, &c) in (first..).zip(leaves) {
            // Past the end of fiber `i` (they are non-empty: one step at most).
            i += usize::from(leaf as u64 == next);
            next = pos.get(i + 1).copied().unwrap_or(u64::MAX);
            if let Some(slot) = out.get_mut(mid_slot) {
                *slot = mids.get(i).copied().unwrap_or(0);
            }
            if let Some(slot) = out.get_mut(leaf_slot) {
                *slot = c;
            }
            f(out.get(..rank).unwrap_or(&[]), leaf);
        }
        self.leaf.high = last;
        true
    }
}

/// Whether `v` is strictly increasing (a loop without early exit, which the
/// compiler vectorises).
#[inline]
fn strictly_increasing(v: &[u64]) -> bool {
    v.iter().zip(v.get(1..).unwrap_or(&[])).fold(true, |ok, (a, b)| ok & (a < b))
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use crate::lookup::testing::Arrays;
    use crate::view::CsfView;

    type Seen = Vec<(Vec<u64>, usize)>;

    fn for_each(view: &CsfView<'_>, logical: bool) -> Seen {
        let mut seen = Vec::new();
        let push = |index: &[u64], leaf| seen.push((index.to_vec(), leaf));
        if logical {
            view.for_each(push);
        } else {
            view.for_each_stored(push);
        }
        seen
    }

    fn cursor(view: &CsfView<'_>, logical: bool) -> Seen {
        let mut seen = Vec::new();
        let mut cursor = view.cursor();
        while cursor.advance() {
            seen.push(((if logical { cursor.index() } else { cursor.coords() }).to_vec(), cursor.leaf()));
        }
        seen
    }

    /// `for_each` on native arrays (which may take the flat path) against
    /// `for_each` on a misaligned copy (never flat) and the cursor; and the
    /// same of the sub-trees under the prefixes of what the walk yields.
    fn check(arrays: &Arrays) -> Seen {
        let view = arrays.view();
        let bytes = arrays.misaligned();
        let unaligned = arrays.view_of(&bytes);
        for logical in [false, true] {
            let seen = for_each(&view, logical);
            assert_eq!(seen, for_each(&unaligned, logical), "flat and nested paths differ");
            assert_eq!(seen, cursor(&view, logical), "for_each and cursor differ");
        }
        // A sample of the entries (every prefix of every entry made the
        // damaged-tree proptest twenty times slower).
        for (coords, _) in for_each(&view, false).iter().step_by(if cfg!(miri) { 23 } else { 17 }) {
            for k in 0..coords.len() {
                check_subtree(&view, &unaligned, &coords[..k]);
            }
        }
        for_each(&view, true)
    }

    /// [`check`] for the sub-tree under `prefix`, when it is present.
    fn check_subtree(view: &CsfView<'_>, unaligned: &CsfView<'_>, prefix: &[u64]) {
        let (Ok(Some(native)), Ok(Some(other))) = (view.subtree(prefix), unaligned.subtree(prefix)) else {
            assert_eq!(
                view.subtree(prefix).map(|s| s.is_some()),
                unaligned.subtree(prefix).map(|s| s.is_some())
            );
            return;
        };
        for logical in [false, true] {
            let mut seen = Vec::new();
            let mut other_seen = Vec::new();
            let push = |seen: &mut Seen, index: &[u64], leaf| seen.push((index.to_vec(), leaf));
            if logical {
                native.for_each(|i, l| push(&mut seen, i, l));
                other.for_each(|i, l| push(&mut other_seen, i, l));
            } else {
                native.for_each_stored(|i, l| push(&mut seen, i, l));
                other.for_each_stored(|i, l| push(&mut other_seen, i, l));
            }
            assert_eq!(seen, other_seen, "flat and nested paths differ under {prefix:?}");
            let mut by_cursor = Vec::new();
            let mut cursor = native.cursor();
            while cursor.advance() {
                by_cursor
                    .push(((if logical { cursor.index() } else { cursor.coords() }).to_vec(), cursor.leaf()));
            }
            assert_eq!(seen, by_cursor, "for_each and cursor differ under {prefix:?}");
            assert!(seen.iter().all(|(_, leaf)| native.leaf_range().contains(leaf)));
        }
    }

    #[test]
    fn flat_path_on_valid_trees() {
        assert_eq!(check(&Arrays::spec_example()).len(), 4);
        for (shape, order, skew) in [
            (&[6u64, 30, 20][..], &[0u32, 1, 2][..], None),
            (&[6, 30, 20], &[2, 0, 1], Some(3.0)),
            (&[4, 5, 6, 7], &[3, 1, 0, 2], None),
            (&[4, 5, 6, 7], &[0, 1, 2, 3], Some(2.0)),
        ] {
            // Smaller trees under Miri (`cargo xtask miri`), where each walk costs
            // thousands of times more.
            let arrays = Arrays::synthetic(shape, order, if cfg!(miri) { 48 } else { 800 }, skew, 3);
            let seen = check(&arrays);
            assert_eq!(seen.len(), arrays.levels().last().unwrap().1.len());
            assert!(seen.iter().enumerate().all(|(i, (_, leaf))| i == *leaf));
        }
    }

    #[test]
    fn flat_path_declines_what_the_clamps_would_change() {
        let example = |leaf_pos: Vec<u64>| {
            let spec = Arrays::spec_example();
            let mut levels = spec.levels().to_vec();
            levels[2].0 = leaf_pos;
            Arrays::new(&spec.shape, &spec.order, levels)
        };
        // An empty leaf fiber, a decreasing pos, one past the end of crd, a
        // start past 0, and a pos too short for the window.
        for pos in [vec![0, 1, 1, 4], vec![0, 2, 1, 4], vec![0, 1, 2, 9], vec![1, 2, 3, 4], vec![0, 1, 2]] {
            check(&example(pos));
        }
        // The second level-0 node's window, pos_2[2..=3] = [2, 6], is
        // increasing but starts below the leaf high-water mark (5) that the
        // first one's malformed window [0, 5, 2] left: the nested loops clamp
        // it to leaf 5 alone, where a flat loop would replay leaves 2..5.
        let arrays = Arrays::new(
            &[2, 3, 9],
            &[0, 1, 2],
            vec![
                (vec![0, 2], vec![0, 1]),
                (vec![0, 2, 3], vec![0, 1, 2]),
                (vec![0, 5, 2, 6], vec![0, 1, 2, 3, 4, 5]),
            ],
        );
        let seen = check(&arrays);
        assert_eq!(seen.iter().map(|(_, leaf)| *leaf).collect::<Vec<_>>(), [0, 1, 2, 3, 4, 5]);
        assert_eq!(seen.last().unwrap().0, [1, 2, 5]);
    }

    proptest! {
        // Fewer cases under Miri (`cargo xtask miri`), where each costs about a thousand times more.
        #![proptest_config(ProptestConfig { cases: if cfg!(miri) { 8 } else { 512 }, failure_persistence: None, ..ProptestConfig::default() })]

        /// Valid trees with a few `pos` entries of the last two levels
        /// overwritten: the flat path must take exactly the windows that the
        /// nested loops would walk unclamped.
        #[test]
        fn flat_path_on_damaged_trees(
            seed in any::<u64>(),
            rank4 in any::<bool>(),
            damage in prop::collection::vec((any::<bool>(), any::<prop::sample::Index>(), 0u64..40), 1..4),
        ) {
            let shape: &[u64] = if rank4 { &[3, 4, 5, 6] } else { &[4, 6, 9] };
            let order: Vec<u32> = (0..shape.len() as u32).rev().collect();
            // Smaller trees under Miri (`cargo xtask miri`), as above.
            let mut levels = Arrays::synthetic(shape, &order, if cfg!(miri) { 48 } else { 120 }, None, seed).into_levels();
            let rank = shape.len();
            for (leaf, at, value) in damage {
                let pos = &mut levels[if leaf { rank - 1 } else { rank - 2 }].0;
                let i = at.index(pos.len());
                pos[i] = value;
            }
            // A new `Arrays` of the damaged levels: its little-endian copy,
            // which a big-endian machine views, must be damaged too.
            check(&Arrays::new(shape, &order, levels));
        }
    }
}
