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
//!
//! The parts: `scope` says what a walk covers and where each level's
//! coordinate goes in the logical index; `cursor` walks one non-zero at a time
//! ([`Cursor`], [`Entries`]); `walk` is
//! [`CsfView::for_each`](crate::CsfView::for_each), a cursor over the levels
//! above the last two and flat loops over the innermost two. Both
//! walks use `scope`; `walk` uses `cursor`; neither is used by `scope`.

mod cursor;
mod scope;
#[cfg(test)]
mod tests;
mod walk;

pub use cursor::{Cursor, Entries};
pub(crate) use scope::{logical_slots, Scope};
