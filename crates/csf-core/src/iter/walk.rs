//! [`CsfView::for_each`]: the whole walk in one function, the fastest way to
//! visit a tensor. A [`Cursor`] walks the levels above the last two; the two
//! innermost levels run as flat loops over their fibers ([`Fibers`]).

use super::cursor::Cursor;
use super::scope::{logical_slots, slot_of, Scope};
use crate::view::CsfView;

impl<const MAX: usize> CsfView<'_, MAX> {
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
    /// that exit dominated; `docs/benchmarks-history.md`, "Iteration", has the figures).
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
