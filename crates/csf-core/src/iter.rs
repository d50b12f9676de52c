//! Spec § Iteration: depth-first, in leaf order, with a fixed stack.
//!
//! The walk keeps, for each level, a high-water mark: the first node index not
//! yet visited. A parent's child slice is clamped to start at that mark and to
//! end inside `crd_L`, so slices never move backwards. Each stored node is
//! therefore visited at most once and each visit opens at most one slice: the
//! work is at most `2 * (n_0 + ... + n_{rank-1}) + 1` steps on *any* input,
//! including `pos` arrays that go backwards, overlap or point past the end.

use hurray_format::limits::MAX_RANK;

use crate::lookup::LookupError;
use crate::values::Value;
use crate::view::CsfView;

/// Where a coordinate goes in the logical index: `mode_order[L]`, or a spare
/// slot past the real ones when `mode_order[L]` names no dimension
/// (unvalidated data), so that writing it is harmless.
fn logical_slots(view: &CsfView<'_>) -> [usize; MAX_RANK] {
    let rank = view.rank();
    let mut slots = [MAX_RANK; MAX_RANK];
    for (slot, &dim) in slots.iter_mut().zip(view.mode_order()) {
        let dim = dim as usize;
        if dim < rank {
            *slot = dim;
        }
    }
    slots
}

/// A depth-first cursor over the non-zeros, in leaf (storage) order.
///
/// It does not allocate; its state is a few fixed arrays sized by the rank
/// cap. Call [`Cursor::advance`] until it returns `false`; in between,
/// [`Cursor::index`], [`Cursor::coords`], [`Cursor::leaf`] and
/// [`Cursor::value`] describe the current non-zero.
#[derive(Clone, Debug)]
pub struct Cursor<'v, 'a> {
    view: &'v CsfView<'a>,
    slots: [usize; MAX_RANK],
    /// Current node at each level.
    node: [usize; MAX_RANK],
    /// End of the current slice at each level.
    end: [usize; MAX_RANK],
    /// First node not yet visited at each level.
    high: [usize; MAX_RANK],
    /// Storage-order coordinates `c[L]`.
    coords: [u64; MAX_RANK],
    /// Logical index, plus one spare slot for stray `mode_order` entries.
    index: [u64; MAX_RANK + 1],
    level: usize,
    started: bool,
    done: bool,
    steps: u64,
}

impl<'v, 'a> Cursor<'v, 'a> {
    /// A cursor before the first non-zero of `view`.
    pub fn new(view: &'v CsfView<'a>) -> Self {
        Self {
            view,
            slots: logical_slots(view),
            node: [0; MAX_RANK],
            end: [0; MAX_RANK],
            high: [0; MAX_RANK],
            coords: [0; MAX_RANK],
            index: [0; MAX_RANK + 1],
            level: 0,
            started: false,
            done: view.rank() == 0,
            steps: 0,
        }
    }

    /// Opens the child slice of `parent` at `level`, clamped (see the module docs).
    fn open(&mut self, level: usize, parent: usize) {
        let (start, end) = self.view.level(level).map_or((0, 0), |l| l.children(parent));
        let high = self.high.get(level).copied().unwrap_or(0);
        let start = start.max(high);
        if let (Some(n), Some(e)) = (self.node.get_mut(level), self.end.get_mut(level)) {
            *n = start;
            *e = end.max(start);
        }
    }

    /// Moves to the next non-zero; `false` when there is none.
    pub fn advance(&mut self) -> bool {
        if self.done {
            return false;
        }
        let last = self.view.rank() - 1;
        if self.started {
            self.level = last;
            if let Some(n) = self.node.get_mut(last) {
                *n += 1;
            }
        } else {
            self.started = true;
            self.level = 0;
            self.open(0, 0);
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
                if let Some(c) = self.coords.get_mut(level) {
                    *c = coord;
                }
                let slot = self.slots.get(level).copied().unwrap_or(MAX_RANK);
                if let Some(i) = self.index.get_mut(slot) {
                    *i = coord;
                }
                if let Some(h) = self.high.get_mut(level) {
                    *h = node + 1;
                }
                if level == last {
                    return true;
                }
                self.level = level + 1;
                self.open(level + 1, node);
            } else if level == 0 {
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
        self.index.get(..self.view.rank()).unwrap_or(&[])
    }

    /// The current non-zero's coordinates in storage order (`c[0..rank]`).
    pub fn coords(&self) -> &[u64] {
        self.coords.get(..self.view.rank()).unwrap_or(&[])
    }

    /// The current non-zero's leaf position (its index into `values`).
    pub fn leaf(&self) -> usize {
        self.node.get(self.view.rank().saturating_sub(1)).copied().unwrap_or(0)
    }

    /// The current non-zero's value; `None` only when the leaf lies past the
    /// values buffer (unvalidated data).
    pub fn value(&self) -> Option<Value> {
        self.view.values().get(self.leaf())
    }

    /// Steps taken so far: a measure of work that the module docs bound.
    pub fn steps(&self) -> u64 {
        self.steps
    }
}

/// An iterator over `(logical index, value)` for a tensor of rank `R`.
#[derive(Clone, Debug)]
pub struct Entries<'v, 'a, const R: usize> {
    cursor: Cursor<'v, 'a>,
}

impl<const R: usize> Iterator for Entries<'_, '_, R> {
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

impl<'a> CsfView<'a> {
    /// A cursor over the non-zeros in leaf order.
    pub fn cursor(&self) -> Cursor<'_, 'a> {
        Cursor::new(self)
    }

    /// The non-zeros as `([u64; R], value)` pairs in leaf order, for a rank
    /// known at compile time. The value is `None` only on unvalidated data
    /// whose values buffer is short.
    ///
    /// # Errors
    /// [`LookupError::WrongRank`] when `R` is not the tensor's rank.
    pub fn entries<const R: usize>(&self) -> Result<Entries<'_, 'a, R>, LookupError> {
        if R != self.rank() {
            return Err(LookupError::WrongRank { got: R, rank: self.rank() });
        }
        Ok(Entries { cursor: self.cursor() })
    }

    /// Calls `f(logical index, leaf position)` for every non-zero in leaf
    /// order. The fastest way to visit the tensor: the two innermost levels
    /// run as flat nested loops over their fibers. Same bounds as [`Cursor`],
    /// and the same entries, even on data that breaks the storage invariants.
    pub fn for_each(&self, f: impl FnMut(&[u64], usize)) {
        self.walk::<true>(f);
    }

    /// Like [`CsfView::for_each`], with the coordinates in storage order
    /// (`c[L]` for level `L`) instead of the logical index.
    pub fn for_each_stored(&self, f: impl FnMut(&[u64], usize)) {
        self.walk::<false>(f);
    }

    fn walk<const LOGICAL: bool>(&self, mut f: impl FnMut(&[u64], usize)) {
        let rank = self.rank();
        let (Some(last), Some(mid)) = (rank.checked_sub(1), rank.checked_sub(2)) else { return };
        let slots = logical_slots(self);
        let slot = |level: usize| if LOGICAL { slots.get(level).copied().unwrap_or(MAX_RANK) } else { level };
        let mut fibers = Fibers {
            mid: Fiberwise::new(self.level(mid).unwrap_or_default(), slot(mid)),
            leaf: Fiberwise::new(self.level(last).unwrap_or_default(), slot(last)),
            out: [0; MAX_RANK + 1],
            rank,
        };
        if mid == 0 {
            fibers.scan(0, &mut f);
            return;
        }
        // Walk the levels above the last two with the cursor: each position
        // it stops at is a node whose children (level rank-2) and their leaf
        // fibers are then scanned as two flat nested loops.
        let mut upper_view = *self;
        upper_view.truncate_rank(mid);
        let mut upper = Cursor::new(&upper_view);
        upper.slots = slots;
        while upper.advance() {
            let coords = if LOGICAL { upper.index.as_slice() } else { upper.coords.as_slice() };
            for (dst, src) in fibers.out.iter_mut().zip(coords).take(rank) {
                *dst = *src;
            }
            fibers.scan(upper.leaf(), &mut f);
        }
    }
}

/// One of the two innermost levels in [`CsfView::walk`].
struct Fiberwise<'a> {
    level: crate::view::Level<'a>,
    /// `crd_L`'s bytes, read in place by the flat loops below (the
    /// `U64Array` accessors that would do it are not inlined across crates).
    crd: &'a [u8],
    /// Where this level's coordinate goes in the output index.
    slot: usize,
    /// First node not yet visited (the same clamp as the cursor's).
    high: usize,
}

impl<'a> Fiberwise<'a> {
    fn new(level: crate::view::Level<'a>, slot: usize) -> Self {
        Self { level, crd: level.crd.as_bytes(), slot, high: 0 }
    }

    /// The children of `parent`, clamped exactly as [`Cursor::open`] clamps
    /// them, with the high-water mark moved past them as visiting them moves
    /// the cursor's (an empty slice leaves it alone): the first child's node
    /// index and the children's coordinates as little-endian bytes.
    #[inline]
    fn open(&mut self, parent: usize) -> (usize, &'a [u8]) {
        let (start, end) = self.level.children(parent);
        let start = start.max(self.high);
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
struct Fibers<'a> {
    mid: Fiberwise<'a>,
    leaf: Fiberwise<'a>,
    out: [u64; MAX_RANK + 1],
    rank: usize,
}

impl Fibers<'_> {
    /// Visits the children of `parent` (a node of level rank-3, or the root
    /// at rank 2) and, for each, its leaf fiber.
    #[inline]
    fn scan(&mut self, parent: usize, f: &mut impl FnMut(&[u64], usize)) {
        let (start, crd) = self.mid.open(parent);
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
}
