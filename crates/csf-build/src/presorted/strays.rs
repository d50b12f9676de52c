//! Input nearly in storage order: the scan that sets the strays aside, and
//! the walk that merges them back while writing the tree.

use std::cmp::Ordering;

use hurray_format::limits::MAX_RANK;

use super::{Arrays, Output, Tree, Tuples, Walk, MAX_STRAYS};
use crate::bucket::copy_slot;
use crate::values::merge_duplicate;
use crate::{BuildError, Duplicates};

/// Why the scan stopped: too many strays, or a coordinate outside the shape.
struct Decline;

/// Node counts per level of entries taken in storage order, and the first
/// duplicate (under `Duplicates::Error`, the only policy that needs it).
struct Tally {
    counts: Vec<usize>,
    first_duplicate: Option<(usize, usize)>,
}

impl Tally {
    fn new(rank: usize) -> Self {
        Self { counts: vec![0; rank], first_duplicate: None }
    }

    /// Takes back an entry that joined with split level `split`.
    fn remove(&mut self, split: Option<usize>) {
        if let Some(split) = split {
            self.counts[split..].iter_mut().for_each(|c| *c -= 1);
        }
    }

    /// Adds entry `entry`, which follows `prev` in storage order and leaves
    /// its path at level `split` (`None`: the same tuple).
    #[inline(always)]
    fn add(&mut self, prev: Option<usize>, split: Option<usize>, entry: usize) {
        match (split, prev) {
            (Some(split), _) => self.counts[split..].iter_mut().for_each(|c| *c += 1),
            (None, Some(first)) => {
                self.first_duplicate.get_or_insert((first, entry));
            }
            (None, None) => {}
        }
    }
}

impl<T: Tuples, const R: usize> Walk<'_, T, R> {
    /// Input that is not wholly in storage order: the longest run found by
    /// [`Walk::scan`], with the strays merged back as the tree is written;
    /// `Ok(None)` when the strays are too many or a coordinate lies outside
    /// the shape.
    pub(super) fn with_strays(&self) -> Result<Option<Output>, BuildError> {
        let Ok((run, strays)) = self.scan() else { return Ok(None) };
        if strays.sorted.is_empty() {
            // The run is the storage order, and its tally the tree's.
            if let (Some((first, second)), Duplicates::Error) =
                (run.first_duplicate, self.input.options.duplicates)
            {
                return Err(self.input.source.duplicate(first, second));
            }
            return self.write(&run.counts, &strays).map(Some);
        }
        // Each stray adds at most one node to a level: the run's counts plus
        // the strays bound the merged tree's, the arrays are written at those
        // sizes and cut to what was written (a few words over, at most).
        let bounds: Vec<usize> = run.counts.iter().map(|&n| n + strays.sorted.len()).collect();
        self.write(&bounds, &strays).map(Some)
    }

    /// The run's tally and the strays sorted in storage order (a stray's
    /// place in the input is marked by `Strays::bits`).
    ///
    /// An entry below the run's last tuple is a stray, unless it is not below
    /// the tuple before that: then the run's last entry was the one out of
    /// place (one entry moved far ahead of its place), and it becomes the
    /// stray instead, so that it cannot turn every entry after it into one
    /// (a run of one entry always gives way).
    fn scan(&self) -> Result<(Tally, Strays), Decline> {
        let len = self.input.source.len;
        let limit = len / MAX_STRAYS;
        let mut strays = Strays { bits: Vec::new(), sorted: Vec::new() };
        let mut tally = Tally::new(self.rank);
        // The run's last entry, and the one before it; the split level with
        // which the last one joined the run.
        let (mut last, mut before): (Option<usize>, Option<usize>) = (None, None);
        let mut last_split = None;
        for entry in 0..len {
            let (order, split, inside) = self.step(last, entry);
            // Every coordinate is checked, a dropped entry's too.
            if !inside {
                return Err(Decline);
            }
            if !self.kept(entry) {
                continue;
            }
            if order != Ordering::Less {
                tally.add(last, split, entry);
                (before, last, last_split) = (last, Some(entry), split);
                continue;
            }
            let gives_way = before.map_or(true, |b| self.compare(b, entry).0 != Ordering::Less);
            let stray = match (gives_way, last) {
                (true, Some(l)) => {
                    // The run's last entry leaves it; `entry` follows `before` instead.
                    tally.remove(last_split);
                    let split = self.split(before, entry);
                    tally.add(before, split, entry);
                    last_split = split;
                    last.replace(entry).unwrap_or(l)
                }
                _ => entry,
            };
            strays.push(stray, len);
            if strays.sorted.len() > limit {
                return Err(Decline);
            }
        }
        // Equal tuples in input order (a stable sort of input positions).
        let mut sorted = std::mem::take(&mut strays.sorted);
        sorted.sort_unstable_by(|&a, &b| self.compare(b, a).0.then(a.cmp(&b)));
        strays.sorted = sorted;
        Ok((tally, strays))
    }

    /// The kept entries in storage order, equal tuples in input order: the
    /// run, with the strays merged in.
    fn merged<'s>(&'s self, strays: &'s Strays) -> Merged<'s, T, R> {
        Merged { walk: self, strays, next: 0, stray: 0, pending: None }
    }

    /// Writes every level and the values into arrays of `sizes[L]` nodes
    /// (the exact counts, or bounds of them), cut to what was written.
    fn write(&self, sizes: &[usize], strays: &Strays) -> Result<Output, BuildError> {
        let width = self.input.slots.width;
        let mut tree = Tree::zeroed(sizes, width);
        let mut out = tree.arrays();
        // The value copy specialised by width: a `memcpy` call per value
        // would cost more than the rest of the loop.
        let opened = match width {
            1 => self.fill::<1>(&mut out, strays),
            2 => self.fill::<2>(&mut out, strays),
            4 => self.fill::<4>(&mut out, strays),
            8 => self.fill::<8>(&mut out, strays),
            _ => self.fill::<0>(&mut out, strays),
        }?;
        Ok(tree.close(&opened))
    }

    /// The walk that writes: every entry opens a node at each level from its
    /// split level down; a duplicate meets the last leaf's value under its
    /// policy. Returns the nodes written per level. `W` is the value width
    /// (0: the slots' own).
    fn fill<const W: usize>(
        &self,
        out: &mut Arrays<'_>,
        strays: &Strays,
    ) -> Result<[usize; MAX_RANK], BuildError> {
        let leaf = self.rank() - 1;
        let slots = self.input.slots;
        let width = if W == 0 { slots.width } else { W };
        let duplicates = self.input.options.duplicates;
        // `opened[L]`: nodes written at level L so far.
        let mut opened = [0usize; MAX_RANK];
        let mut prev = None;
        for entry in self.merged(strays) {
            let slot = slots.slot(entry);
            let split = self.split(prev, entry);
            let Some(split) = split else {
                let last = opened[leaf] - 1;
                let into = &mut out.values[last * width..(last + 1) * width];
                // The first duplicate in storage order, its two first entries in input order.
                if duplicates == Duplicates::Error {
                    return Err(self.input.source.duplicate(prev.unwrap_or(entry), entry));
                }
                merge_duplicate::<W>(slots.element_type, duplicates, into, slot)?;
                prev = Some(entry);
                continue;
            };
            prev = Some(entry);
            for level in split..self.rank() {
                out.open(&mut opened, level, level > split, self.tuples.get(entry, level));
            }
            let at = opened[leaf] - 1;
            copy_slot::<W>(&mut out.values[at * width..(at + 1) * width], slot);
        }
        Ok(opened)
    }
}

/// The iterator of [`Walk::merged`].
struct Merged<'s, T, const R: usize> {
    walk: &'s Walk<'s, T, R>,
    strays: &'s Strays,
    /// The next input position to look at for the run.
    next: usize,
    /// The next stray (an index into `strays.sorted`).
    stray: usize,
    /// The run's next entry, when found and not yet given out.
    pending: Option<usize>,
}

impl<T: Tuples, const R: usize> Iterator for Merged<'_, T, R> {
    type Item = usize;

    #[inline(always)]
    fn next(&mut self) -> Option<usize> {
        let len = self.walk.input.source.len;
        while self.pending.is_none() && self.next < len {
            let entry = self.next;
            self.next += 1;
            if !self.strays.holds(entry) && self.walk.kept(entry) {
                self.pending = Some(entry);
            }
        }
        let stray = self.strays.sorted.get(self.stray).copied();
        match (self.pending, stray) {
            // A stray goes first if its tuple is smaller, or equal and earlier in the input.
            (Some(entry), Some(s))
                if match self.walk.compare(entry, s).0 {
                    Ordering::Equal => s < entry,
                    order => order == Ordering::Less,
                } =>
            {
                self.stray += 1;
                Some(s)
            }
            (Some(entry), _) => {
                self.pending = None;
                Some(entry)
            }
            (None, Some(s)) => {
                self.stray += 1;
                Some(s)
            }
            (None, None) => None,
        }
    }
}

/// The entries set aside from the run.
struct Strays {
    /// One bit per input entry, set for a stray (empty when there is none).
    bits: Vec<u64>,
    /// The strays (input positions), in storage order once the scan ends.
    sorted: Vec<usize>,
}

impl Strays {
    fn push(&mut self, entry: usize, len: usize) {
        if self.bits.is_empty() {
            self.bits = vec![0; len.div_ceil(64)];
        }
        self.bits[entry / 64] |= 1 << (entry % 64);
        self.sorted.push(entry);
    }

    #[inline(always)]
    fn holds(&self, entry: usize) -> bool {
        !self.bits.is_empty() && self.bits[entry / 64] >> (entry % 64) & 1 == 1
    }
}
