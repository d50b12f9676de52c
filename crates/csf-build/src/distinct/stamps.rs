//! Distinct cells per group by a stamp per cell: the number of the last
//! group that saw it. A cell is new to its group when its stamp is not the
//! group's number. Where a bitmap per group would be cleared after each
//! group (and the branch on whether to clear costs as much as a coin toss
//! on groups of an entry or two), numbers only grow: a stamp left by an
//! earlier group never matches a later one. The table starts again, zeroed,
//! only when the numbers would wrap.
//!
//! Two counters use it: runs of sorted input (`Runs::count_stamped` in
//! `distinct.rs`) and fibers within a partition pass's bucket
//! (`Scratch::stamped_count` in `pass/count.rs`).

/// A stamp per cell and the last group number handed out, kept from one
/// count to the next so that a thread zeroes its table once.
#[derive(Default)]
pub(super) struct Stamps {
    /// Per cell, the number of the last group that saw it.
    pub(super) table: Vec<u32>,
    /// The last group number handed out.
    pub(super) last: u32,
}

impl Stamps {
    /// Stamps for cells below `cells` and up to `groups` new group numbers:
    /// the table is zeroed and numbered from 0 again when it is too small
    /// or the numbers would wrap.
    pub(super) fn tally(&mut self, cells: usize, groups: usize) -> Tally<'_> {
        let groups = u32::try_from(groups).unwrap_or(u32::MAX);
        if self.table.len() < cells || self.last.checked_add(groups).is_none() {
            self.table = vec![0; cells.max(self.table.len())];
            self.last = 0;
        }
        let table = self.table.get_mut(..cells).unwrap_or(&mut []);
        Tally { table, group: self.last, last: &mut self.last }
    }
}

/// One count's use of [`Stamps`]: the current group and the stamps of
/// `cells` cells. Group numbers go back to the table when it is dropped.
pub(super) struct Tally<'a> {
    table: &'a mut [u32],
    group: u32,
    last: &'a mut u32,
}

impl Tally<'_> {
    /// Starts a new group when `starts` (without a branch: callers pass
    /// whether an entry starts a run). The first cell seen needs a group,
    /// so callers start one before it.
    #[inline(always)]
    pub(super) fn next_group_if(&mut self, starts: bool) {
        self.group += u32::from(starts);
    }

    /// Stamps `cell` with the current group: 1 when the group had not seen
    /// it, else 0. A cell outside the table counts 0 (callers' cells are
    /// below `cells`; `get_mut` keeps this total).
    #[inline(always)]
    pub(super) fn see(&mut self, cell: usize) -> u64 {
        match self.table.get_mut(cell) {
            Some(stamp) => {
                let new = u64::from(*stamp != self.group);
                *stamp = self.group;
                new
            }
            None => 0,
        }
    }

    /// The distinct cells within each group, added up, over `(starts, cell)`
    /// pairs in group order: `starts` is whether the pair begins a group (the
    /// first pair must). The loop of both counters.
    #[inline(always)]
    pub(super) fn count(&mut self, pairs: impl Iterator<Item = (bool, usize)>) -> u64 {
        pairs.fold(0, |count, (starts, cell)| {
            self.next_group_if(starts);
            count + self.see(cell)
        })
    }
}

impl Drop for Tally<'_> {
    fn drop(&mut self) {
        *self.last = self.group;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Groups are told apart across counts of one table and across the
    /// numbers' wrap, where the table starts again.
    #[test]
    fn groups_stay_apart() {
        let mut stamps = Stamps::default();
        // Two groups seeing the same cells: each counts them.
        let mut tally = stamps.tally(8, 2);
        tally.next_group_if(true);
        assert_eq!([3, 3, 5, 9].map(|c| tally.see(c)), [1, 0, 1, 0], "cell 9 is outside");
        tally.next_group_if(false);
        assert_eq!(tally.see(5), 0, "the same group");
        tally.next_group_if(true);
        assert_eq!([5, 3].map(|c| tally.see(c)), [1, 1]);
        drop(tally);
        assert_eq!(stamps.last, 2);
        // A later count's first group is new to the cells of the last.
        let mut tally = stamps.tally(8, 1);
        tally.next_group_if(true);
        assert_eq!(tally.see(3), 1);
        drop(tally);
        // One number left before the wrap, two asked: zeroed, from 0.
        stamps.last = u32::MAX - 1;
        stamps.table.fill(1);
        let mut tally = stamps.tally(8, 2);
        tally.next_group_if(true);
        assert_eq!([1, 1, 2].map(|c| tally.see(c)), [1, 0, 1], "a stamp of 1 left would match");
        drop(tally);
        assert_eq!(stamps.last, 1);
        // A bigger table is zeroed too.
        stamps.table.fill(1);
        stamps.last = 6;
        let mut tally = stamps.tally(16, 1);
        tally.next_group_if(true);
        assert_eq!(tally.see(15), 1);
        assert_eq!(tally.see(3), 1, "a stamp of 1 left would match group 1");
        drop(tally);
        // The loop over (starts a group, cell) pairs: 1 in the first group,
        // 1 and 2 in the second.
        let pairs = [(true, 1), (false, 1), (true, 1), (false, 2), (false, 1)];
        assert_eq!(stamps.tally(16, pairs.len()).count(pairs.into_iter()), 3);
    }
}
