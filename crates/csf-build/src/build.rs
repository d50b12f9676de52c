//! The build pipeline: keys, one sort, one pass over the sorted keys.

use csf_core::{CsfView, OwnedCsf};

use crate::key::{Key, Layout};
use crate::order::choose;
use crate::sort::sort_keys;
use crate::values::Slots;
use crate::{check_rank, BuildError, Built, Coo, Duplicates, Indices, ModeOrder, Options, Source};

/// Builds a CSF tensor from COO input.
///
/// # Errors
/// A [`BuildError`] for rank outside `3..=64`, arrays of mismatched lengths,
/// an invalid explicit mode order, a coordinate outside the shape, a
/// duplicate under [`Duplicates::Error`], or a sum of an unsummable type.
pub fn build(coo: &Coo<'_>, options: &Options) -> Result<Built, BuildError> {
    let rank = coo.shape.len();
    check_rank(rank)?;
    let len = entry_count(coo, rank)?;
    let want = coo.element_type.values_len(len as u64).unwrap_or(u64::MAX);
    if coo.values.len() as u64 != want {
        return Err(BuildError::LengthMismatch {
            what: "values (bytes)",
            found: coo.values.len() as u64,
            expected: want,
        });
    }
    let source = Source { shape: coo.shape, indices: coo.indices, len };
    let slots = Slots::new(coo.element_type, &coo.values, len);
    if options.duplicates == Duplicates::Sum {
        slots.can_sum()?;
    }
    let (mode_order, auto) = match &options.mode_order {
        ModeOrder::Identity => ((0..rank as u32).collect(), None),
        ModeOrder::Explicit(order) => {
            check_permutation(order, rank)?;
            (order.clone(), None)
        }
        ModeOrder::Auto => {
            check_bounds(&source)?;
            let choice = choose(&source, options.parallel);
            (choice.mode_order.clone(), Some(choice))
        }
    };
    let extents: Vec<u64> = mode_order.iter().map(|&d| coo.shape[d as usize]).collect();
    let layout = Layout::new(&extents, len);
    let job = Job { source: &source, slots: &slots, mode_order: &mode_order, layout, options };
    let (levels, positions, sums) = match layout.total_bits() {
        0..=64 => job.run::<u64>()?,
        65..=128 => job.run::<u128>()?,
        _ => job.run_by_comparison()?,
    };
    let mut values = slots.gather(&positions, options.parallel);
    for &(dst, src) in &sums {
        slots.add_into(&mut values, dst, src)?;
    }
    let nnz = positions.len() as u64;
    let removed = len as u64 - nnz;
    drop(positions);
    let tensor =
        OwnedCsf::new(coo.element_type, coo.shape.to_vec(), mode_order, nnz, levels, slots.pack(values))
            .map_err(|_| BuildError::RankTooLarge { rank })?;
    let tensor = match options.quantize {
        Some(spec) => crate::quantize(tensor, spec)?,
        None => tensor,
    };
    debug_assert!(
        csf_validate::validate_view(tensor.view()).is_ok(),
        "the builder broke a storage invariant: {:?}",
        csf_validate::validate_view(tensor.view()).err()
    );
    Ok(Built { tensor, auto, removed })
}

/// Re-orders an existing tensor to another mode order, without going through a
/// dense array: its entries are read in leaf order and rebuilt.
///
/// # Errors
/// As [`build`] (a duplicate can only come from unvalidated input).
pub fn reorder(view: &CsfView<'_>, mode_order: ModeOrder, parallel: bool) -> Result<Built, BuildError> {
    let mut indices = Vec::with_capacity(view.nnz() as usize * view.rank());
    let mut leaves = Vec::with_capacity(view.nnz() as usize);
    view.for_each(|index, leaf| {
        indices.extend_from_slice(index);
        leaves.push(leaf as u64);
    });
    let values = view.values();
    let slots = Slots::new(values.element_type(), values.as_bytes(), values.capacity());
    // Leaves past the values buffer (unvalidated input) read as zero.
    let in_range: Vec<u64> =
        leaves.iter().map(|&l| l.min(values.capacity().saturating_sub(1) as u64)).collect();
    let packed = slots.pack(slots.gather(if values.capacity() == 0 { &[] } else { &in_range }, parallel));
    let packed = if packed.len() as u64 == values.element_type().values_len(leaves.len() as u64).unwrap_or(0)
    {
        packed
    } else {
        vec![0; values.element_type().values_len(leaves.len() as u64).unwrap_or(0) as usize]
    };
    let coo = Coo {
        shape: view.shape(),
        indices: Indices::RowMajor(&indices),
        element_type: values.element_type(),
        values: packed.into(),
    };
    build(&coo, &Options { mode_order, parallel, ..Options::default() })
}

fn entry_count(coo: &Coo<'_>, rank: usize) -> Result<usize, BuildError> {
    match coo.indices {
        Indices::RowMajor(flat) => {
            if flat.len() % rank != 0 {
                let expected = (flat.len() / rank * rank) as u64;
                return Err(BuildError::LengthMismatch {
                    what: "row-major indices",
                    found: flat.len() as u64,
                    expected,
                });
            }
            Ok(flat.len() / rank)
        }
        Indices::Columnar(cols) => {
            if cols.len() != rank {
                return Err(BuildError::LengthMismatch {
                    what: "index columns",
                    found: cols.len() as u64,
                    expected: rank as u64,
                });
            }
            let len = cols.first().map_or(0, |c| c.len());
            if let Some(bad) = cols.iter().find(|c| c.len() != len) {
                return Err(BuildError::LengthMismatch {
                    what: "index column",
                    found: bad.len() as u64,
                    expected: len as u64,
                });
            }
            Ok(len)
        }
    }
}

fn check_permutation(order: &[u32], rank: usize) -> Result<(), BuildError> {
    let mut seen = vec![false; rank];
    let ok = order.len() == rank
        && order.iter().all(|&d| seen.get_mut(d as usize).is_some_and(|s| !std::mem::replace(s, true)));
    if ok {
        Ok(())
    } else {
        Err(BuildError::BadModeOrder { order: order.to_vec(), rank })
    }
}

/// The first entry outside the shape, in input order.
fn check_bounds(source: &Source<'_>) -> Result<(), BuildError> {
    for entry in 0..source.len {
        for (dim, &extent) in source.shape.iter().enumerate() {
            let coord = source.coord(entry, dim);
            if coord >= extent {
                return Err(BuildError::OutOfBounds { entry, dim, coord, extent });
            }
        }
    }
    Ok(())
}

type Levels = Vec<(Vec<u64>, Vec<u64>)>;
/// Levels, the input position of each leaf, and `(leaf, input position)` pairs to add in.
type Output = (Levels, Vec<u64>, Vec<(usize, usize)>);

struct Job<'j> {
    source: &'j Source<'j>,
    slots: &'j Slots<'j>,
    mode_order: &'j [u32],
    layout: Layout,
    options: &'j Options,
}

impl Job<'_> {
    fn keep(&self, entry: usize) -> bool {
        !self.options.drop_zeros || !self.slots.is_zero(entry)
    }

    /// The packed key of `entry`, or its first out-of-bounds coordinate.
    #[inline]
    fn key<K: Key>(&self, entry: usize) -> Result<K, BuildError> {
        let mut key = K::default();
        for (level, &dim) in self.mode_order.iter().enumerate() {
            let dim = dim as usize;
            let coord = self.source.coord(entry, dim);
            let extent = self.source.shape[dim];
            if coord >= extent {
                return Err(BuildError::OutOfBounds { entry, dim, coord, extent });
            }
            let bits = self.layout.mask[level].count_ones();
            key = key.shl_or(bits, coord);
        }
        Ok(key.shl_or(self.layout.position_bits, entry as u64))
    }

    fn keys<K: Key>(&self) -> Result<Vec<K>, BuildError> {
        let len = self.source.len;
        if self.options.drop_zeros {
            return (0..len).filter(|&i| self.keep(i)).map(|i| self.key(i)).collect();
        }
        if !self.options.parallel {
            return (0..len).map(|i| self.key(i)).collect();
        }
        use rayon::prelude::*;
        let mut keys = vec![K::default(); len];
        let chunk = 1 << 14;
        let failed = keys.par_chunks_mut(chunk).enumerate().any(|(c, out)| {
            out.iter_mut().enumerate().any(|(i, k)| match self.key(c * chunk + i) {
                Ok(key) => {
                    *k = key;
                    false
                }
                Err(_) => true,
            })
        });
        if failed {
            // Name the first bad entry in input order, whatever thread saw one.
            check_bounds(self.source)?;
        }
        Ok(keys)
    }

    fn run<K: Key>(&self) -> Result<Output, BuildError> {
        let mut keys = self.keys::<K>()?;
        sort_keys(&mut keys, self.layout.position_bits, self.layout.total_bits(), self.options.parallel);
        let layout = self.layout;
        let mut levels = LevelBuilder::new(layout.rank, keys.len());
        let mut positions = Vec::with_capacity(keys.len());
        let mut sums = Vec::new();
        let mut prev: Option<K> = None;
        for &key in &keys {
            let position = layout.position(key);
            let split = match prev {
                None => 0,
                Some(p) => match layout.split_level(p, key) {
                    Some(split) => split,
                    None => {
                        self.duplicate(&mut positions, &mut sums, layout.position(p), position)?;
                        continue;
                    }
                },
            };
            levels.push(split, |level| layout.coord(key, level));
            positions.push(position as u64);
            prev = Some(key);
        }
        Ok((levels.finish(), positions, sums))
    }

    /// The fallback for keys wider than 128 bits: a stable comparison sort of
    /// entry positions by their storage-order tuples.
    fn run_by_comparison(&self) -> Result<Output, BuildError> {
        let tuple = |entry: usize, level: usize| self.source.coord(entry, self.mode_order[level] as usize);
        let rank = self.mode_order.len();
        let mut order: Vec<usize> = (0..self.source.len).filter(|&i| self.keep(i)).collect();
        if let Some(first_bad) = order.iter().find_map(|&i| self.key_check(i).err()) {
            return Err(first_bad);
        }
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
        Ok((levels.finish(), positions, sums))
    }

    fn key_check(&self, entry: usize) -> Result<(), BuildError> {
        for &dim in self.mode_order {
            let dim = dim as usize;
            let (coord, extent) = (self.source.coord(entry, dim), self.source.shape[dim]);
            if coord >= extent {
                return Err(BuildError::OutOfBounds { entry, dim, coord, extent });
            }
        }
        Ok(())
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
            Duplicates::Error => Err(BuildError::Duplicate {
                index: (0..self.source.shape.len()).map(|d| self.source.coord(later, d)).collect(),
                first: earlier.min(later),
                second: earlier.max(later),
            }),
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
