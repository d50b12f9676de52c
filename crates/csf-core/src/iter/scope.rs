//! What a walk covers ([`Scope`]: the whole tensor or a sub-tree's nodes)
//! and where each level's coordinate goes in the logical index
//! ([`logical_slots`]): shared by the cursor and the flat walk.

use hurray_format::limits::MAX_RANK;

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
pub(super) fn slot_of<const MAX: usize>(slots: &[u8; MAX], level: usize) -> usize {
    usize::from(slots.get(level).copied().unwrap_or(SPARE))
}
