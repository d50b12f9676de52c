//! The path for keys wider than 128 bits: a comparison sort of entry
//! positions, then one pass that emits the levels.

use super::{check_bounds, BuildJob, Levels, Output};
use crate::{BuildError, Duplicates};

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
        let mut levels = LevelBuilder::new(rank, order.len());
        let mut positions = Vec::with_capacity(order.len());
        let mut sums = Vec::new();
        let mut prev: Option<usize> = None;
        for &entry in &order {
            let split = match prev {
                None => 0,
                Some(p) => match (0..rank).find(|&l| tuple(p, l) != tuple(entry, l)) {
                    Some(split) => split,
                    None => {
                        self.duplicate(&mut positions, &mut sums, p, entry)?;
                        continue;
                    }
                },
            };
            levels.push(split, |level| tuple(entry, level));
            positions.push(entry as u64);
            prev = Some(entry);
        }
        let mut values = self.slots.gather(&positions, self.options.parallel);
        for &(dst, src) in &sums {
            self.slots.add_into(&mut values, dst, src)?;
        }
        Ok((levels.finish(), values))
    }

    /// Applies the duplicate policy to `later`, a duplicate of `earlier` (input positions).
    fn duplicate(
        &self,
        positions: &mut [u64],
        sums: &mut Vec<(usize, usize)>,
        earlier: usize,
        later: usize,
    ) -> Result<(), BuildError> {
        let last = positions.len() - 1;
        match self.options.duplicates {
            Duplicates::Error => Err(self.source.duplicate(earlier, later)),
            Duplicates::First => Ok(()),
            Duplicates::Last => {
                positions[last] = later as u64;
                Ok(())
            }
            Duplicates::Sum => {
                sums.push((last, later));
                Ok(())
            }
        }
    }
}

/// Emits the levels from entries in storage order: each entry opens a new
/// node at every level from its split level down.
struct LevelBuilder {
    levels: Levels,
    n0: u64,
}

impl LevelBuilder {
    fn new(rank: usize, entries: usize) -> Self {
        let mut levels: Levels = (0..rank).map(|_| (Vec::new(), Vec::new())).collect();
        if let Some((_, leaf_crd)) = levels.last_mut() {
            leaf_crd.reserve(entries);
        }
        Self { levels, n0: 0 }
    }

    #[inline]
    fn push(&mut self, split: usize, coord: impl Fn(usize) -> u64) {
        if split == 0 {
            self.n0 += 1;
        }
        for (level, (pos, crd)) in self.levels.iter_mut().enumerate().skip(split) {
            if level > split {
                // The node just opened at level - 1 starts its children here.
                pos.push(crd.len() as u64);
            }
            crd.push(coord(level));
        }
    }

    fn finish(mut self) -> Levels {
        for (level, (pos, crd)) in self.levels.iter_mut().enumerate() {
            if level == 0 {
                *pos = vec![0, self.n0];
            } else {
                // Each node of level - 1 pushed its start; close the last one.
                pos.push(crd.len() as u64);
            }
        }
        self.levels
    }
}
