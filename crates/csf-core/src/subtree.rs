//! Sub-trees: every entry under a prefix of storage-order coordinates, as a
//! zero-copy view (what ndarray's `index_axis` is for dense arrays).
//!
//! The entries whose first `k` storage-order coordinates are
//! `c_0, ..., c_{k-1}` are the descendants of one node of level `k - 1`,
//! found by the spec's lookup (§ Element Lookup, one search per level). At
//! every level below, they form one contiguous run of nodes: the children of
//! the parents `p..q` are `pos_L[p] .. pos_L[q]` (invariants 2 and 3). So a
//! sub-tree is a node range at each level, its leaves are a contiguous range
//! of leaf positions, and walking it costs its own size, not the tensor's.

use core::ops::Range;

use hurray_format::limits::MAX_RANK;

use crate::iter::{logical_slots, Cursor, Entries, Scope};
use crate::lookup::LookupError;
use crate::view::{CsfView, Fiber};

/// The sub-tree under a prefix of storage-order coordinates: every entry
/// whose coordinates at levels `0..k` are the prefix's, as a view of the
/// tensor's own arrays. Made by [`CsfView::subtree`]; nothing is copied but
/// the prefix.
///
/// It knows its node range at every level from `k` down (`O(rank)` reads of
/// `pos` to find one), its leaves form the contiguous range
/// [`Subtree::leaf_range`] of leaf positions, and it is walked in leaf order
/// as the whole tensor is: [`Subtree::for_each`], [`Subtree::for_each_stored`],
/// [`Subtree::cursor`] and [`Subtree::entries`] give each entry's full logical
/// index (the prefix included, placed by `mode_order`) and its global leaf
/// position, so that [`CsfView::value`] and [`CsfView::values`] read its value.
///
/// Like every accessor of the view it is total: on data that breaks the
/// storage invariants it never panics, never reads out of bounds, and a walk
/// visits only the sub-tree's node ranges, each node at most once, in at most
/// `2 * (its nodes) + 1` steps ([`Cursor::steps`]); every leaf it yields lies
/// in [`Subtree::leaf_range`]. The empty prefix's sub-tree is the whole
/// tensor, walked exactly as [`CsfView::for_each`] walks it (its levels below
/// the first bounded by their length only).
#[derive(Clone, Copy, Debug)]
pub struct Subtree<'v, 'a, const MAX: usize = MAX_RANK> {
    view: &'v CsfView<'a, MAX>,
    prefix: [u64; MAX],
    /// `k`, the prefix's length.
    level: usize,
    /// The nodes of level `k`: the children of the prefix's node.
    nodes: (usize, usize),
}

impl<'a, const MAX: usize> CsfView<'a, MAX> {
    /// The sub-tree under `prefix`, the first `k` coordinates of its entries
    /// **in storage order** (`prefix[L]` is the coordinate of level `L`, that
    /// is of logical dimension `mode_order[L]`), for `k` below the rank; or
    /// `None` when no entry has that prefix. The empty prefix gives the whole
    /// tensor.
    ///
    /// The prefix is found by the spec's lookup, one [`Fiber::find`] per level
    /// (`O(k log n)`), and the sub-tree's node range at each lower level is
    /// read from `pos` when asked for (`O(rank)`). No allocation.
    ///
    /// ```
    /// # let le = |v: &[u64]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
    /// # let arrays = [le(&[0, 2]), le(&[0, 1]), le(&[0, 2, 3]), le(&[0, 2, 1]), le(&[0, 1, 2, 4]), le(&[1, 3, 0, 2])];
    /// # let level = |l: usize| csf_core::Level {
    /// #     pos: hurray_format::le::U64Array::new(&arrays[2 * l]).unwrap(),
    /// #     crd: hurray_format::le::U64Array::new(&arrays[2 * l + 1]).unwrap(),
    /// # };
    /// # let values: Vec<u8> = [1.0f32, 2.0, 3.0, 4.0].iter().flat_map(|v| v.to_le_bytes()).collect();
    /// # let levels = [level(0), level(1), level(2)];
    /// # let view = csf_core::CsfView::builder(hurray_format::ElementType::F32, &[2, 3, 4])
    /// #     .levels(&levels).values(&values).build().unwrap();
    /// // The spec's example: everything under i = 1 is (1, 1, 0) -> 3.0 and (1, 1, 2) -> 4.0.
    /// let under = view.subtree(&[1]).unwrap().expect("i = 1 holds entries");
    /// assert_eq!((under.nnz(), under.leaf_range()), (2, 2..4));
    /// let mut seen = Vec::new();
    /// under.for_each(|index, leaf| seen.push((index.to_vec(), view.value_f64(leaf, index).unwrap())));
    /// assert_eq!(seen, [(vec![1, 1, 0], 3.0), (vec![1, 1, 2], 4.0)]);
    /// assert!(view.subtree(&[0, 1]).unwrap().is_none()); // no entry has i = 0, j = 1
    /// ```
    ///
    /// # Errors
    /// [`LookupError::PrefixTooLong`] when the prefix has `rank` coordinates
    /// or more; [`LookupError::OutOfBounds`] when `prefix[L]` is outside its
    /// level's extent `shape[mode_order[L]]` (the error names the logical
    /// dimension); [`LookupError::BadModeOrder`] when `mode_order[L]` names no
    /// dimension (unvalidated data). Checked for every coordinate before any
    /// search, as [`CsfView::find`] checks an index.
    pub fn subtree(&self, prefix: &[u64]) -> Result<Option<Subtree<'_, 'a, MAX>>, LookupError> {
        let rank = self.rank();
        let k = prefix.len();
        if k >= rank {
            return Err(LookupError::PrefixTooLong { got: k, rank });
        }
        for (level, (&coord, &dim)) in prefix.iter().zip(self.mode_order()).enumerate() {
            let extent = *self.shape().get(dim as usize).ok_or(LookupError::BadModeOrder { level, dim })?;
            if coord >= extent {
                return Err(LookupError::OutOfBounds { dim: dim as usize, coord, extent });
            }
        }
        // The lookup's descent, stopped above level k.
        let mut parent = 0;
        for (level, &coord) in prefix.iter().enumerate() {
            match self.fiber(level, parent).find(coord) {
                Some(node) => parent = node,
                None => return Ok(None),
            }
        }
        let mut stored = [0; MAX];
        for (dst, src) in stored.iter_mut().zip(prefix) {
            *dst = *src;
        }
        let nodes = self.level(k).map_or((0, 0), |l| l.children(parent));
        Ok(Some(Subtree { view: self, prefix: stored, level: k, nodes }))
    }

    /// Calls `f(logical index, leaf position)` for every entry under `prefix`
    /// (storage order, as [`CsfView::subtree`] takes it), in leaf order; an
    /// absent prefix calls it never. `view.subtree(prefix)?.map(|s| s.for_each(f))`.
    ///
    /// # Errors
    /// As [`CsfView::subtree`].
    #[inline]
    pub fn for_each_under(&self, prefix: &[u64], f: impl FnMut(&[u64], usize)) -> Result<(), LookupError> {
        if let Some(subtree) = self.subtree(prefix)? {
            subtree.for_each(f);
        }
        Ok(())
    }
}

impl<'v, 'a, const MAX: usize> Subtree<'v, 'a, MAX> {
    fn scope(&self) -> Scope<'_> {
        Scope { level: self.level, nodes: self.nodes, prefix: self.prefix() }
    }

    /// The tensor it is a sub-tree of.
    pub fn view(&self) -> &'v CsfView<'a, MAX> {
        self.view
    }

    /// The prefix: the coordinates of levels `0..k`, in storage order.
    pub fn prefix(&self) -> &[u64] {
        self.prefix.get(..self.level).unwrap_or(&[])
    }

    /// `k`, the level of its top nodes (the prefix's length).
    pub fn level(&self) -> usize {
        self.level
    }

    /// Its nodes at level `k`, with their coordinates: the children of the
    /// prefix's node (for the empty prefix, the root's), as
    /// [`CsfView::fiber`] gives them.
    pub fn fiber(&self) -> Fiber<'a> {
        let (start, end) = self.nodes;
        let crd = self.view.level(self.level).map(|l| l.crd.slice(start, end)).unwrap_or_default();
        Fiber { start, crd }
    }

    /// Its nodes at `level`, a contiguous range of node indices into
    /// `crd_level`, or `None` above level `k` or past the leaf level.
    /// `O(level - k)` reads of `pos`.
    pub fn node_range(&self, level: usize) -> Option<Range<usize>> {
        if level < self.level || level >= self.view.rank() {
            return None;
        }
        let (start, end) = self.scope().range(self.view, level);
        Some(start..end)
    }

    /// Its leaves: a contiguous range of leaf positions (indices into the
    /// values buffer). On any data, every leaf its walks yield lies in it;
    /// on valid data, it holds exactly those. `O(rank)`.
    pub fn leaf_range(&self) -> Range<usize> {
        self.node_range(self.view.rank().saturating_sub(1)).unwrap_or(0..0)
    }

    /// Its number of entries, the length of [`Subtree::leaf_range`] (on
    /// unvalidated data, an upper bound on the entries its walks yield).
    pub fn nnz(&self) -> usize {
        self.leaf_range().len()
    }

    /// Calls `f(logical index, leaf position)` for every entry, in leaf
    /// order: the full logical index (the prefix included), and the global
    /// leaf position, which [`CsfView::value`] turns into the value
    /// (dequantized when the tensor is quantized). The flat loops of
    /// [`CsfView::for_each`].
    #[inline]
    pub fn for_each(&self, f: impl FnMut(&[u64], usize)) {
        self.view.walk::<true>(&self.scope(), f);
    }

    /// Like [`Subtree::for_each`], with the coordinates in storage order
    /// (`c[L]` for level `L`, the prefix first) instead of the logical index.
    #[inline]
    pub fn for_each_stored(&self, f: impl FnMut(&[u64], usize)) {
        self.view.walk::<false>(&self.scope(), f);
    }

    /// A cursor over its entries in leaf order, which stops when it has left
    /// the sub-tree; [`Cursor::index`] and [`Cursor::coords`] include the prefix.
    pub fn cursor(&self) -> Cursor<'v, 'a, MAX> {
        Cursor::scoped(self.view, &self.scope(), logical_slots(self.view), self.view.rank())
    }

    /// Its entries as `([u64; R], value)` pairs in leaf order, as
    /// [`CsfView::entries`] gives the whole tensor's.
    ///
    /// # Errors
    /// [`LookupError::WrongRank`] when `R` is not the tensor's rank.
    pub fn entries<const R: usize>(&self) -> Result<Entries<'v, 'a, R, MAX>, LookupError> {
        let rank = self.view.rank();
        if R != rank {
            return Err(LookupError::WrongRank { got: R, rank });
        }
        Ok(Entries { cursor: self.cursor() })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lookup::testing::Arrays;

    type Seen = Vec<(Vec<u64>, usize)>;

    /// What each walk of `subtree` yields, checked to agree: `for_each`,
    /// `for_each_stored` (its prefix checked), and the cursor (its steps
    /// checked against the sub-tree's nodes).
    fn walks(subtree: &Subtree<'_, '_>) -> Seen {
        let mut by_for_each = Vec::new();
        subtree.for_each(|index, leaf| by_for_each.push((index.to_vec(), leaf)));
        let mut by_stored = Vec::new();
        subtree.for_each_stored(|coords, leaf| {
            assert_eq!(&coords[..subtree.level()], subtree.prefix());
            by_stored.push((coords.to_vec(), leaf));
        });
        let mut by_cursor = Vec::new();
        let mut stored_by_cursor = Vec::new();
        let mut cursor = subtree.cursor();
        while cursor.advance() {
            by_cursor.push((cursor.index().to_vec(), cursor.leaf()));
            stored_by_cursor.push((cursor.coords().to_vec(), cursor.leaf()));
        }
        assert!(!cursor.advance());
        let rank = subtree.view().rank();
        let nodes: usize = (0..rank).filter_map(|l| subtree.node_range(l)).map(|r| r.len()).sum();
        assert!(cursor.steps() <= 2 * nodes as u64 + 1, "{} steps for {nodes} nodes", cursor.steps());
        assert_eq!(by_cursor, by_for_each, "cursor and for_each differ");
        assert_eq!(stored_by_cursor, by_stored, "cursor and for_each_stored differ");
        assert!(by_for_each.len() <= subtree.nnz());
        assert!(by_for_each.iter().all(|(_, leaf)| subtree.leaf_range().contains(leaf)));
        by_for_each
    }

    #[test]
    fn the_spec_example_under_each_prefix() {
        let arrays = Arrays::spec_example();
        let view = arrays.view();
        let entries = |prefix: &[u64]| walks(&view.subtree(prefix).unwrap().unwrap());
        let all = vec![(vec![0, 0, 1], 0), (vec![0, 2, 3], 1), (vec![1, 1, 0], 2), (vec![1, 1, 2], 3)];
        assert_eq!(entries(&[]), all);
        assert_eq!(entries(&[0]), all[..2]);
        assert_eq!(entries(&[1]), all[2..]);
        assert_eq!(entries(&[0, 0]), all[..1]);
        assert_eq!(entries(&[0, 2]), all[1..2]);
        assert_eq!(entries(&[1, 1]), all[2..]);
        // Absent prefixes, at each level.
        for prefix in [&[0, 1][..], &[1, 0], &[1, 2]] {
            assert!(view.subtree(prefix).unwrap().is_none(), "{prefix:?}");
        }
        // Ranges: under i = 1 the level-1 node 2 (j = 1), leaves 2 and 3.
        let under = view.subtree(&[1]).unwrap().unwrap();
        assert_eq!((under.level(), under.prefix()), (1, &[1][..]));
        assert_eq!(under.node_range(0), None);
        assert_eq!(under.node_range(1), Some(2..3));
        assert_eq!(under.node_range(2), Some(2..4));
        assert_eq!(under.node_range(3), None);
        assert_eq!((under.leaf_range(), under.nnz()), (2..4, 2));
        let fiber = under.fiber();
        assert_eq!(fiber.iter().collect::<Vec<_>>(), [(2, 1)]);
        let whole = view.subtree(&[]).unwrap().unwrap();
        assert_eq!(
            (whole.leaf_range(), whole.node_range(0), whole.node_range(1)),
            (0..4, Some(0..2), Some(0..3))
        );
        let leafy = view.subtree(&[0, 2]).unwrap().unwrap();
        assert_eq!((leafy.leaf_range(), leafy.fiber().iter().collect::<Vec<_>>()), (1..2, vec![(1, 3)]));
    }

    #[test]
    fn prefix_errors_are_checked_before_any_search() {
        let arrays = Arrays::spec_example();
        let view = arrays.view();
        assert_eq!(view.subtree(&[0, 0, 1]).err(), Some(LookupError::PrefixTooLong { got: 3, rank: 3 }));
        assert_eq!(view.subtree(&[0; 9]).err(), Some(LookupError::PrefixTooLong { got: 9, rank: 3 }));
        assert_eq!(view.subtree(&[2]).err(), Some(LookupError::OutOfBounds { dim: 0, coord: 2, extent: 2 }));
        // Out of the shape after an absent coordinate is still an error.
        assert_eq!(
            view.subtree(&[0, 3]).err(),
            Some(LookupError::OutOfBounds { dim: 1, coord: 3, extent: 3 })
        );
        assert_eq!(
            view.subtree(&[0, u64::MAX]).err(),
            Some(LookupError::OutOfBounds { dim: 1, coord: u64::MAX, extent: 3 })
        );
        let mut calls = 0;
        assert!(view.for_each_under(&[2], |_, _| calls += 1).is_err());
        assert_eq!(view.for_each_under(&[0, 1], |_, _| calls += 1), Ok(()));
        assert_eq!(view.for_each_under(&[0, 2], |_, _| calls += 1), Ok(()));
        assert_eq!(calls, 1);
        // mode_order naming no dimension: an error for the level that uses it.
        let mut bad = Arrays::spec_example();
        bad.order = vec![0, 7, 2];
        let view = bad.view();
        assert!(view.subtree(&[1]).unwrap().is_some());
        assert_eq!(view.subtree(&[1, 1]).err(), Some(LookupError::BadModeOrder { level: 1, dim: 7 }));
    }

    #[test]
    fn the_prefix_lands_in_the_logical_index_by_mode_order() {
        // The spec example under mode_order [2, 1, 0]: levels store k, j, i.
        let arrays = Arrays::new(
            &[2, 3, 4],
            &[2, 1, 0],
            vec![
                (vec![0, 4], vec![0, 1, 2, 3]),
                (vec![0, 1, 2, 3, 4], vec![1, 0, 1, 2]),
                (vec![0, 1, 2, 3, 4], vec![1, 0, 1, 0]),
            ],
        );
        let view = arrays.view();
        // k = 2: the entry (1, 1, 2); k = 3, j = 2: (0, 2, 3).
        assert_eq!(walks(&view.subtree(&[2]).unwrap().unwrap()), [(vec![1, 1, 2], 2)]);
        assert_eq!(walks(&view.subtree(&[3, 2]).unwrap().unwrap()), [(vec![0, 2, 3], 3)]);
        let mut stored = Vec::new();
        view.subtree(&[3, 2]).unwrap().unwrap().for_each_stored(|c, _| stored.push(c.to_vec()));
        assert_eq!(stored, [[3, 2, 0]]);
        // The bound of level 0 is shape[mode_order[0]] = 4, not shape[0] = 2.
        assert!(view.subtree(&[3]).unwrap().is_some());
        assert_eq!(view.subtree(&[4]).err(), Some(LookupError::OutOfBounds { dim: 2, coord: 4, extent: 4 }));
        let entries: Vec<_> = view.subtree(&[0]).unwrap().unwrap().entries::<3>().unwrap().collect();
        assert_eq!(entries.len(), 1);
        assert_eq!(entries[0].0, [1, 1, 0]);
        assert!(view.subtree(&[0]).unwrap().unwrap().entries::<4>().is_err());
    }

    #[test]
    fn a_walk_stays_inside_the_ranges_pos_gives() {
        // pos_2 gives every level-1 node all four leaves. The sub-tree under
        // i = 0 holds the level-1 nodes 0..2 and so the leaves
        // pos_2[0]..pos_2[2] = 0..0: none, though node 0 claims leaves 0..4.
        let mut levels = Arrays::spec_example().into_levels();
        levels[2].0 = vec![0, 4, 0, 4];
        let arrays = Arrays::new(&[2, 3, 4], &[0, 1, 2], levels);
        let view = arrays.view();
        let under = view.subtree(&[0]).unwrap().unwrap();
        assert_eq!((under.node_range(1), under.leaf_range()), (Some(0..2), 0..0));
        assert_eq!(walks(&under), []);
        // Under (0, 0) itself: node 0's leaves, 0..4.
        assert_eq!(walks(&view.subtree(&[0, 0]).unwrap().unwrap()).len(), 4);
        // The whole tensor is walked as `for_each` walks it.
        let mut all = Vec::new();
        view.for_each(|index, leaf| all.push((index.to_vec(), leaf)));
        assert_eq!(walks(&view.subtree(&[]).unwrap().unwrap()), all);
    }

    #[test]
    fn rank_4_and_5_subtrees_take_every_walk_path() {
        // Top at level 0 and 1 (a cursor above the last two levels), at
        // rank-2 (the flat loops alone) and at rank-1 (the leaves alone),
        // on native and misaligned arrays.
        for (shape, order) in
            [(&[4u64, 5, 6, 7][..], &[3u32, 1, 0, 2][..]), (&[3, 4, 3, 4, 5], &[0, 1, 2, 3, 4])]
        {
            // Fewer entries and prefixes under Miri (`cargo xtask miri`).
            let arrays = Arrays::synthetic(shape, order, if cfg!(miri) { 80 } else { 300 }, None, 5);
            let view = arrays.view();
            let bytes = arrays.misaligned();
            let unaligned = arrays.view_of(&bytes);
            let mut stored = Vec::new();
            view.for_each_stored(|c, leaf| stored.push((c.to_vec(), leaf)));
            for (c, _) in stored.iter().step_by(if cfg!(miri) { 19 } else { 7 }) {
                for k in 0..shape.len() {
                    let prefix = &c[..k];
                    let got = walks(&view.subtree(prefix).unwrap().unwrap());
                    assert_eq!(got, walks(&unaligned.subtree(prefix).unwrap().unwrap()));
                    let want: Vec<usize> =
                        stored.iter().filter(|(s, _)| s.starts_with(prefix)).map(|(_, l)| *l).collect();
                    assert_eq!(got.iter().map(|(_, l)| *l).collect::<Vec<_>>(), want, "{prefix:?}");
                }
            }
        }
    }
}
