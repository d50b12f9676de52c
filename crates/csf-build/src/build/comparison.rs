//! The path for keys wider than 128 bits: a stable comparison sort of entry
//! positions by their storage-order tuples. And the tree writer it shares
//! with the small-input path (`small.rs`): the kept entries in storage
//! order in, each level written in one pass over them.

use super::{check_bounds, BuildJob, Levels, Output};
use crate::values::merge_duplicate;
use crate::values::Slots;
use crate::{BuildError, Duplicates, Source};

impl BuildJob<'_> {
    /// The fallback for keys wider than 128 bits: a stable comparison sort of
    /// entry positions by their storage-order tuples.
    pub(super) fn run_by_comparison(&self) -> Result<Output, BuildError> {
        let tuple = |entry: usize, level: usize| self.source.coord(entry, self.mode_order[level] as usize);
        let rank = self.mode_order.len();
        check_bounds(self.source)?;
        let mut order: Vec<usize> = (0..self.source.len).filter(|&i| self.keep(i)).collect();
        order.sort_by(|&a, &b| {
            (0..rank)
                .map(|l| tuple(a, l).cmp(&tuple(b, l)))
                .find(|o| o.is_ne())
                .unwrap_or(std::cmp::Ordering::Equal)
        });
        let splits: Vec<u8> = (0..order.len())
            .map(|i| match i.checked_sub(1) {
                None => 0,
                Some(before) => (0..rank)
                    .find(|&l| tuple(order[before], l) != tuple(order[i], l))
                    .map_or(DUPLICATE, |split| split as u8),
            })
            .collect();
        let (order, tuple) = (&order, &tuple);
        let tree = Tree { splits: &splits, entry: |i: usize| order[i], exact: true };
        let coords = |level: usize| move |i: usize| tuple(order[i], level);
        tree.write(rank, coords, self.source, self.slots, self.options.duplicates)
    }
}

/// [`Tree::splits`] of an entry whose tuple is the one before's.
pub(super) const DUPLICATE: u8 = u8::MAX;

/// The kept entries of a build in storage order (equal tuples in input
/// order), as the tree writer reads them.
pub(super) struct Tree<'a, E> {
    /// `splits[i]`: the first level where the `i`th entry's tuple differs
    /// from the one before's (0 for the first entry), or [`DUPLICATE`].
    /// (Ranks are at most 64.)
    pub(super) splits: &'a [u8],
    /// `entry(i)`: the `i`th entry's input position.
    pub(super) entry: E,
    /// Arrays at their exact sizes (a pass over the splits per level), or
    /// with room for every entry (a few words more than the tree needs at
    /// most, for a small input).
    pub(super) exact: bool,
}

impl<E: Fn(usize) -> usize> Tree<'_, E> {
    /// The levels and the values in leaf order. `coords(L)` gives level
    /// `L`'s coordinate of the `i`th entry (made once per level). A
    /// duplicate is the error under [`Duplicates::Error`] (the first in
    /// storage order, as the other paths name it), else its value meets the
    /// last leaf's under the policy.
    pub(super) fn write<C: Fn(usize) -> u64>(
        &self,
        rank: usize,
        coords: impl Fn(usize) -> C,
        source: &Source<'_>,
        slots: &Slots<'_>,
        duplicates: Duplicates,
    ) -> Result<Output, BuildError> {
        if duplicates == Duplicates::Error {
            let mut leaf = 0;
            for (i, &split) in self.splits.iter().enumerate() {
                if split != DUPLICATE {
                    leaf = i;
                } else {
                    return Err(source.duplicate((self.entry)(leaf), (self.entry)(i)));
                }
            }
        }
        let levels: Levels = (0..rank).map(|level| self.level(level, coords(level))).collect();
        let values = match slots.width {
            // A constant width makes each copy one move, not a `memcpy` call.
            1 => self.values::<1>(slots, duplicates)?,
            2 => self.values::<2>(slots, duplicates)?,
            4 => self.values::<4>(slots, duplicates)?,
            8 => self.values::<8>(slots, duplicates)?,
            _ => self.values::<0>(slots, duplicates)?,
        };
        Ok((levels, values))
    }

    /// The nodes of level `level`, or the room for them.
    fn nodes(&self, level: usize) -> usize {
        if self.exact {
            self.splits.iter().filter(|&&split| usize::from(split) <= level).count()
        } else {
            self.splits.len()
        }
    }

    /// The leaves, or the room for them.
    fn leaves(&self) -> usize {
        if self.exact {
            self.splits.iter().filter(|&&split| split != DUPLICATE).count()
        } else {
            self.splits.len()
        }
    }

    /// Level `level`: a node for each entry that leaves the previous one's
    /// path at `level` or above, each node of the level above starting its
    /// children where they are written.
    #[inline(always)]
    fn level(&self, level: usize, coord: impl Fn(usize) -> u64) -> (Vec<u64>, Vec<u64>) {
        let parents = level.checked_sub(1).map_or(1, |above| self.nodes(above));
        let (mut pos, mut crd) = (Vec::with_capacity(parents + 1), Vec::with_capacity(self.nodes(level)));
        if level == 0 {
            pos.push(0);
        }
        for (i, &split) in self.splits.iter().enumerate() {
            let split = usize::from(split);
            if split <= level {
                if split < level {
                    // The node just opened at level - 1 starts its children here.
                    pos.push(crd.len() as u64);
                }
                crd.push(coord(i));
            }
        }
        // Close the last node of the level above (the root at level 0).
        pos.push(crd.len() as u64);
        (pos, crd)
    }

    /// The values in leaf order; `W` is the value width (0: `slots.width`).
    fn values<const W: usize>(
        &self,
        slots: &Slots<'_>,
        duplicates: Duplicates,
    ) -> Result<Vec<u8>, BuildError> {
        let width = if W == 0 { slots.width } else { W };
        let mut values = Vec::with_capacity(self.leaves() * width);
        for (i, &split) in self.splits.iter().enumerate() {
            let slot = &slots.data[(self.entry)(i) * width..][..width];
            if split != DUPLICATE {
                values.extend_from_slice(slot);
                continue;
            }
            let at = values.len() - width;
            merge_duplicate::<W>(slots.element_type, duplicates, &mut values[at..], slot)?;
        }
        Ok(values)
    }
}
