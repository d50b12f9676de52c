//! The build pipeline: one sort of packed keys (the values travel with them,
//! and each sorted bucket's nodes are counted while it is in cache), then one
//! pass over the sorted keys that writes every level, in parallel chunks.

mod comparison;
mod keyer;
mod reorder;

pub use reorder::reorder;

use csf_core::OwnedCsf;

use std::ops::Range;

use hurray_format::limits::MAX_RANK;
use rayon::prelude::*;

use crate::key::{Key, Layout};
use crate::order::choose;
use crate::presorted;
use crate::sort::{chunks, copy_slot, sort_from, Payload, Sorted};
use crate::values::Slots;
use crate::{check_rank, BuildError, Built, Coo, Duplicates, Indices, ModeOrder, Options, Source};
use keyer::Keyer;

/// The most entries the presorted path takes when the build could use
/// several threads: below this the radix sort's chunks are too few to gain
/// from them (measured on 100k-entry real tensors).
const PRESORTED_PARALLEL_MAX: usize = 1 << 17;

/// Builds a CSF tensor from COO input.
///
/// # Errors
/// A [`BuildError`] for rank outside `3..=64`, arrays of mismatched lengths,
/// an invalid explicit mode order, a coordinate outside the shape, a
/// duplicate under [`Duplicates::Error`], or a sum of an unsummable type.
pub fn build(coo: &Coo<'_>, options: &Options) -> Result<Built, BuildError> {
    build_with(coo, options, true)
}

/// [`build`], with the presorted path allowed or not (the tests compare the two).
pub(crate) fn build_with(coo: &Coo<'_>, options: &Options, presort: bool) -> Result<Built, BuildError> {
    let rank = coo.shape.len();
    check_rank(rank)?;
    let len = entry_count(coo.indices, rank)?;
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
    let presorted = presorted::Input { source: &source, slots: &slots, mode_order: &mode_order, options };
    // The presorted path is one thread's walk: with more threads the radix
    // sort's parallel passes win on large inputs (docs/benchmarks.md).
    let one_thread = !options.parallel || rayon::current_num_threads() == 1;
    let presort = presort && (one_thread || len <= PRESORTED_PARALLEL_MAX);
    let tried = if presort { presorted::try_build(&presorted)? } else { None };
    let (levels, values) = match tried {
        Some(output) => output,
        None => match layout.total_bits() {
            0..=64 => job.run::<u64>()?,
            65..=128 => job.run::<u128>()?,
            _ => job.run_by_comparison()?,
        },
    };
    let nnz = (values.len() / slots.width.max(1)) as u64;
    let removed = len as u64 - nnz;
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
    // Auto estimated the size from all input entries; report what is stored
    // (duplicates merged and zeros dropped make it smaller).
    let auto = auto.map(|choice| {
        choice.settle(tensor.view().levels().iter().map(|l| (l.pos.len() + l.crd.len()) as u64 * 8).sum())
    });
    Ok(Built { tensor, auto, removed })
}

pub(crate) fn entry_count(indices: Indices<'_>, rank: usize) -> Result<usize, BuildError> {
    match indices {
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
/// Levels, and the values in leaf order as slots (see [`Slots`]).
type Output = (Levels, Vec<u8>);

struct Job<'j> {
    source: &'j Source<'j>,
    slots: &'j Slots<'j>,
    mode_order: &'j [u32],
    layout: Layout,
    options: &'j Options,
}

/// What one sorted bucket adds to the tree, counted while it is in cache.
struct Tally {
    /// `at[L]`: keys after the bucket's first whose path leaves the previous
    /// key's at level `L` (they open a node at `L` and every level below).
    at: Vec<usize>,
    /// The bucket's first key that duplicates the key before it.
    first_duplicate: Option<usize>,
}

/// One chunk's share of the output: whole buckets, so that no run of
/// duplicates crosses chunks.
struct Part<'a, K> {
    /// The chunk's sorted keys; the leaf coordinates are written over them.
    keys: &'a mut [K],
    /// The chunk's value slots (see `Layout::slot`); the leaf values are written over them.
    values: &'a mut [u8],
    /// The index of the chunk's first key.
    start: usize,
    /// The chunk's buckets, as ranges of `keys`.
    buckets: Vec<Range<usize>>,
    /// The key before the chunk.
    prev: Option<K>,
    /// `crd[L]` for the upper levels `L < rank - 1`.
    crd: Vec<&'a mut [u64]>,
    /// `pos[L]` for levels `L >= 1` (`pos[0]` is empty).
    pos: Vec<&'a mut [u64]>,
    /// Nodes that earlier chunks opened, per level.
    base: Vec<usize>,
    /// The chunk's leaf `k` goes to `k - gap` of its own slices, and its
    /// first `gap` leaves (which belong before them, see `run`) to a side
    /// buffer; `gap` is zero or the duplicates in earlier chunks.
    gap: usize,
}

/// The leaves a chunk could not write in place (see `Part::gap`): leaf
/// coordinates and value slots.
type Side = (Vec<u64>, Vec<u8>);

impl Job<'_> {
    fn keep(&self, entry: usize) -> bool {
        !self.options.drop_zeros || !self.slots.is_zero(entry)
    }

    /// Sorts the keys (the values come along, see `sort.rs`), counting each
    /// bucket's nodes per level while it is in cache; then prefix sums of
    /// those counts give every chunk of buckets its place in each output
    /// array, and the chunks write their `crd`/`pos` entries there (in
    /// parallel with `parallel`). Every array is allocated once at its final
    /// size; the leaf `crd` and the values are written over the sorted keys
    /// and value slots, so the build touches no memory beyond its output and
    /// small per-thread buffers.
    fn run<K: Key>(&self) -> Result<Output, BuildError> {
        let layout = self.layout;
        let parallel = self.options.parallel;
        let rank = layout.rank;
        let leaf = rank - 1;
        let width = self.slots.width;
        let visit = |start: usize, bucket: &[K]| {
            let mut at = vec![0usize; rank];
            let mut first_duplicate = None;
            for (i, pair) in bucket.windows(2).enumerate() {
                match layout.split_level(pair[0], pair[1]) {
                    Some(split) => at[split] += 1,
                    None => {
                        first_duplicate.get_or_insert(start + i + 1);
                    }
                }
            }
            Tally { at, first_duplicate }
        };
        let payload = Payload { data: &self.slots.data, width };
        let keyer = Keyer::new(self);
        let sorted =
            sort_from(&keyer, Some(payload), layout.position_bits, layout.total_bits(), parallel, visit);
        let Ok(Sorted { mut keys, slots: mut values, starts, mut visits, top_shift }) = sorted else {
            check_bounds(self.source)?;
            // Not reached: the sort gives up only on a coordinate outside the shape.
            return self.run_by_comparison();
        };
        let n = keys.len();

        // A bucket's first key leaves the previous bucket's last key at the
        // level of the highest bit where their top digits differ.
        let mut prev_digit = None;
        for (digit, tally) in visits.iter_mut().enumerate() {
            if starts[digit + 1] > starts[digit] {
                let split = prev_digit.map_or(0, |p: usize| {
                    let high = top_shift + (usize::BITS - 1 - (p ^ digit).leading_zeros());
                    usize::from(layout.level_of_bit[high as usize])
                });
                tally.at[split] += 1;
                prev_digit = Some(digit);
            }
        }
        if self.options.duplicates == Duplicates::Error {
            if let Some(i) = visits.iter().find_map(|t| t.first_duplicate) {
                return Err(self.duplicate_error_of(keys[i]));
            }
        }

        // Chunks of whole buckets, of about equal size.
        let count = chunks(n, parallel).len();
        let mut groups: Vec<Range<usize>> = Vec::with_capacity(count);
        let (mut first, mut next_cut) = (0, 1);
        for digit in 0..visits.len() {
            let end = starts[digit + 1];
            if digit + 1 == visits.len() || (n > 0 && end * count >= next_cut * n) {
                groups.push(first..digit + 1);
                first = digit + 1;
                next_cut = end * count / n.max(1) + 1;
            }
        }
        // Nodes each chunk opens per level: an entry opens one at its split level and below.
        let opened: Vec<Vec<usize>> = groups
            .iter()
            .map(|g| {
                let mut opened = vec![0usize; rank];
                for t in &visits[g.clone()] {
                    opened.iter_mut().zip(&t.at).for_each(|(o, a)| *o += a);
                }
                for level in 1..rank {
                    opened[level] += opened[level - 1];
                }
                opened
            })
            .collect();
        drop(visits);

        // Every array at its final size.
        let mut totals = vec![0usize; rank];
        let mut bases = Vec::with_capacity(groups.len());
        for o in &opened {
            bases.push(totals.clone());
            totals.iter_mut().zip(o).for_each(|(total, o)| *total += o);
        }
        let nnz = totals[leaf];
        let mut crds: Vec<Vec<u64>> = totals[..leaf].iter().map(|&n| vec![0; n]).collect();
        let mut poss: Vec<Vec<u64>> = (0..rank)
            .map(|level| match level {
                0 => vec![0, totals[0] as u64],
                _ => {
                    let mut pos = vec![0; totals[level - 1] + 1];
                    pos[totals[level - 1]] = totals[level] as u64;
                    pos
                }
            })
            .collect();

        // Where each chunk's leaves start, and how they get there. A chunk
        // after duplicates has leaves that belong over the previous chunk's
        // keys, which may still be being read: with few duplicates they go
        // to side buffers, copied into place after all chunks are done;
        // with many (the side buffers could add up to a chunk count times
        // the duplicates) every chunk writes its leaves from its own start
        // and a sequential pass closes the gaps.
        let key_range = |g: &Range<usize>| starts[g.start]..starts[g.end];
        let leaf_starts: Vec<usize> = bases.iter().map(|b| b[leaf]).collect();
        let side_leaves: usize = groups
            .iter()
            .zip(&opened)
            .zip(&leaf_starts)
            .map(|((g, o), &at)| (key_range(g).start - at).min(o[leaf]))
            .sum();
        let use_sides = side_leaves <= n / 64;

        // Hand each chunk its slices.
        let prevs: Vec<Option<K>> =
            groups.iter().map(|g| key_range(g).start.checked_sub(1).map(|i| keys[i])).collect();
        let mut parts: Vec<Part<'_, K>> = Vec::with_capacity(groups.len());
        {
            let mut keys_rest = &mut keys[..];
            let mut values_rest = &mut values[..];
            let mut crd_rest: Vec<&mut [u64]> = crds.iter_mut().map(|c| &mut c[..]).collect();
            let mut pos_rest: Vec<&mut [u64]> = poss.iter_mut().map(|p| &mut p[..]).collect();
            for (((g, o), base), prev) in groups.iter().zip(&opened).zip(bases).zip(prevs) {
                let range = key_range(g);
                let (part_keys, rest) = std::mem::take(&mut keys_rest).split_at_mut(range.len());
                keys_rest = rest;
                let (part_values, rest) = std::mem::take(&mut values_rest).split_at_mut(range.len() * width);
                values_rest = rest;
                let crd = crd_rest
                    .iter_mut()
                    .enumerate()
                    .map(|(level, c)| {
                        let (mine, rest) = std::mem::take(c).split_at_mut(o[level]);
                        *c = rest;
                        mine
                    })
                    .collect();
                let pos = pos_rest
                    .iter_mut()
                    .enumerate()
                    .map(|(level, p)| {
                        let len = if level == 0 { 0 } else { o[level - 1] };
                        let (mine, rest) = std::mem::take(p).split_at_mut(len);
                        *p = rest;
                        mine
                    })
                    .collect();
                let buckets =
                    g.clone().map(|d| starts[d] - range.start..starts[d + 1] - range.start).collect();
                let gap = if use_sides { range.start - base[leaf] } else { 0 };
                parts.push(Part {
                    keys: part_keys,
                    values: part_values,
                    start: range.start,
                    buckets,
                    prev,
                    crd,
                    pos,
                    base,
                    gap,
                });
            }
        }

        // Write. The value copy is specialised by width (a `memcpy` call per
        // value would cost more than the rest of the loop), and the common
        // ranks and widths by rank too.
        let fill = |part: Part<'_, K>| match (width, rank) {
            (4, 3) => self.fill::<K, 4, 3>(part),
            (4, 4) => self.fill::<K, 4, 4>(part),
            (8, 3) => self.fill::<K, 8, 3>(part),
            (8, 4) => self.fill::<K, 8, 4>(part),
            (1, _) => self.fill::<K, 1, 0>(part),
            (2, _) => self.fill::<K, 2, 0>(part),
            (4, _) => self.fill::<K, 4, 0>(part),
            (8, _) => self.fill::<K, 8, 0>(part),
            _ => self.fill::<K, 0, 0>(part),
        };
        let sides: Vec<Side> = if parallel {
            parts.into_par_iter().map(fill).collect::<Result<_, _>>()?
        } else {
            parts.into_iter().map(fill).collect::<Result<_, _>>()?
        };
        // The leaves that went to side buffers, into place; or the gaps closed.
        for ((g, o), (&at, (side_keys, side_values))) in
            groups.iter().zip(&opened).zip(leaf_starts.iter().zip(sides))
        {
            let start = key_range(g).start;
            if use_sides {
                for (k, &crd) in side_keys.iter().enumerate() {
                    keys[at + k] = K::from_u64(crd);
                }
                values[at * width..at * width + side_values.len()].copy_from_slice(&side_values);
            } else if start != at {
                let count = o[leaf];
                keys.copy_within(start..start + count, at);
                values.copy_within(start * width..(start + count) * width, at * width);
            }
        }
        keys.truncate(nnz);
        values.truncate(nnz * width);
        if nnz < n {
            keys.shrink_to_fit();
            values.shrink_to_fit();
        }
        let mut leaf_crd = Some(K::into_u64s(keys));
        let levels = poss
            .into_iter()
            .zip(crds.into_iter().map(Some).chain([leaf_crd.take()]))
            .map(|(pos, crd)| (pos, crd.unwrap_or_default()))
            .collect();
        Ok((levels, values))
    }

    /// Writes one chunk's nodes, leaf coordinates and values, and returns
    /// the leaves it could not write in place; `W` is the value width (0:
    /// `slots.width`).
    fn fill<K: Key, const W: usize, const R: usize>(&self, part: Part<'_, K>) -> Result<Side, BuildError> {
        let Part { keys, values, start, buckets, mut prev, crd: crd_vec, pos: pos_vec, base, gap } = part;
        let layout = self.layout;
        // A constant rank unrolls the level loops and keeps the counters and
        // slices below in registers.
        let rank = if R == 0 { layout.rank } else { R };
        let leaf = rank - 1;
        let width = if W == 0 { self.slots.width } else { W };
        let (mut side_keys, mut side_values) = (Vec::new(), Vec::new());
        let mut crd: [&mut [u64]; MAX_RANK] = std::array::from_fn(|_| Default::default());
        let mut pos: [&mut [u64]; MAX_RANK] = std::array::from_fn(|_| Default::default());
        crd.iter_mut().zip(crd_vec).for_each(|(c, v)| *c = v);
        pos.iter_mut().zip(pos_vec).for_each(|(p, v)| *p = v);
        // `count[L]`: nodes opened at level L so far, globally; `local[L]`: by this chunk.
        let mut count = [0usize; MAX_RANK];
        count[..rank].copy_from_slice(&base);
        let mut local = [0usize; MAX_RANK];
        // A copy of the current bucket's value slots: the leaf values are
        // written over the chunk's slots, possibly over slots the bucket has
        // yet to read.
        let mut bucket_values: Vec<u8> = Vec::new();
        for bucket in buckets {
            bucket_values.clear();
            bucket_values.extend_from_slice(&values[bucket.start * width..bucket.end * width]);
            let first_slot = start + bucket.start;
            for j in bucket {
                let key = keys[j];
                let from = (layout.slot(key, start + j) - first_slot) * width;
                let slot = &bucket_values[from..from + width];
                let split = match prev {
                    None => Some(0),
                    Some(p) => layout.split_level(p, key),
                };
                prev = Some(key);
                let Some(split) = split else {
                    // A duplicate of the last leaf.
                    let last = local[leaf] - 1;
                    let into = match last.checked_sub(gap) {
                        Some(k) => &mut values[k * width..(k + 1) * width],
                        None => &mut side_values[last * width..(last + 1) * width],
                    };
                    match self.options.duplicates {
                        Duplicates::Sum => self.slots.add_slot(into, slot)?,
                        Duplicates::Last => copy_slot::<W>(into, slot),
                        // `Error` was reported after the sort.
                        Duplicates::First | Duplicates::Error => {}
                    }
                    continue;
                };
                // The key opens a node at every level from `split` down. Which
                // levels those are is a coin toss on most data, so rather than
                // branch on it, every upper level's next slot is written
                // whether or not a node opens there: a slot written by a key
                // that opens no node is written again by the key that does.
                // (`get_mut`: past a chunk's last node there is no next slot.)
                for level in 1..=leaf {
                    // Level `level - 1`'s node number `local[level - 1]` (opened
                    // now, or later) starts its children at `count[level]`.
                    if let Some(p) = pos[level].get_mut(local[level - 1]) {
                        *p = count[level] as u64;
                    }
                }
                for level in 0..leaf {
                    if let Some(c) = crd[level].get_mut(local[level]) {
                        *c = layout.coord(key, level);
                    }
                    let opens = usize::from(split <= level);
                    local[level] += opens;
                    count[level] += opens;
                }
                let coord = layout.coord(key, leaf);
                match local[leaf].checked_sub(gap) {
                    // Over key and slot `j`, already read (`k <= local[leaf] <= j`).
                    Some(k) => {
                        keys[k] = K::from_u64(coord);
                        copy_slot::<W>(&mut values[k * width..(k + 1) * width], slot);
                    }
                    None => {
                        side_keys.push(coord);
                        side_values.extend_from_slice(slot);
                    }
                }
                local[leaf] += 1;
                count[leaf] += 1;
            }
        }
        Ok((side_keys, side_values))
    }

    /// The duplicate error for the first two kept entries at `key`'s coordinates.
    fn duplicate_error_of<K: Key>(&self, key: K) -> BuildError {
        let rank = self.layout.rank;
        let mut index = vec![0u64; rank];
        for (level, &dim) in self.mode_order.iter().enumerate() {
            index[dim as usize] = self.layout.coord(key, level);
        }
        let mut same = (0..self.source.len)
            .filter(|&e| self.keep(e) && (0..rank).all(|d| self.source.coord(e, d) == index[d]));
        let first = same.next().unwrap_or(0);
        let second = same.next().unwrap_or(first);
        BuildError::Duplicate { index, first, second }
    }
}

#[cfg(test)]
mod tests;
