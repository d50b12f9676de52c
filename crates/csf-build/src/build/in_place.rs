//! The radix path over owned columns (`build_owned`): the keys are packed
//! over one coordinate column, and scattered into another.
//!
//! The borrowed radix path makes each key in its scatter (`keyer.rs`) and
//! scatters it into a fresh array. A build that owns its columns needs no
//! fresh array for the keys: one pass packs every entry's key over the
//! first level's column (each entry's coordinates are read before its key
//! is written), the scatter reads the keys from there and writes them over
//! the second level's column, which the pass has finished with. The two
//! arrays are memory the input has touched already, where a fresh one
//! costs a page fault and the zeroing of every 4 KiB it fills; and the
//! build's peak is one key array lower. Value slots of at most a word go
//! into the last level's column the same way, and the leaf values are then
//! written over the input's value array, which the scatter has read
//! (`SortedTree::write`); slots of a word each then have the `crd` of the
//! level above the leaves written over them (`ChunkPlan::hand_out`). The
//! first column and the others left over then hold the upper levels
//! (`Spare`), as on the borrowed path.

use rayon::prelude::*;

use hurray_format::limits::MAX_RANK;

use super::fill::Writer;
use super::radix::{tally, tree_of, SortedTree};
use crate::distinct::{bits_set, set_bit, single_bitmap};
use crate::key::{Key, Layout};
use crate::sort::{chunks, sort_keys_into, Made, Payload, TopDigit};
use crate::{BuildError, Duplicates};

/// A radix build of `u64` keys over owned columns: what `build_levels`
/// chose, before any column is written.
pub(super) struct InPlace {
    /// The tree's writer (its layout is the keys').
    pub(super) writer: Writer,
    /// See `BuildJob::ordered`.
    pub(super) ordered: u32,
    /// The keys packed over the first level's column already (by `Auto`,
    /// which counted over them: `packed.rs`), with the counts that `pack`
    /// returned.
    pub(super) packed: Option<Counted>,
}

/// What [`pack`] did: the top digit it counted, each chunk's counts.
pub(super) struct Counted {
    pub(super) top: TopDigit,
    pub(super) counted: Vec<Vec<usize>>,
}

/// What the sort needs to know of the build besides the columns.
pub(super) struct Settings<'a> {
    pub(super) shape: &'a [u64],
    pub(super) mode_order: &'a [u32],
    /// The value slots, one per entry (the input's own bytes).
    pub(super) payload: Payload<'a>,
}

impl InPlace {
    /// Packs the keys over `columns[mode_order[0]]`, sorts them into
    /// `columns[mode_order[1]]` (taken out of `columns`: it becomes the
    /// leaf `crd`), and tallies the tree. The columns left in `columns` are
    /// no longer input: the caller writes upper levels into them. Every
    /// entry is kept (no zeros are dropped on this path).
    ///
    /// # Errors
    /// The first entry (in input order) with a coordinate outside the
    /// shape, or under [`Duplicates::Error`] the first two entries at one
    /// index, as the borrowed path reports them.
    pub(super) fn sort(
        self,
        columns: &mut [Vec<u64>],
        settings: &Settings<'_>,
    ) -> Result<SortedTree<u64>, BuildError> {
        let Settings { shape, mode_order, payload } = settings;
        let writer = self.writer;
        let layout = writer.layout;
        let (key_dim, into_dim) = (mode_order[0] as usize, mode_order[1] as usize);
        let mut keys = std::mem::take(&mut columns[key_dim]);
        let (lo, hi) = (layout.position_bits, layout.total_bits());
        let Counted { top, counted } = match self.packed {
            Some(packed) => packed,
            None => match pack_over(&mut keys, columns, (mode_order, &layout), &[], writer.parallel) {
                Ok((packed, _)) => packed,
                Err(entry) => return Err(out_of_bounds(entry, &keys, columns, key_dim, shape)),
            },
        };
        let into = std::mem::take(&mut columns[into_dim]);
        // The last level's column (neither of the two above: rank >= 3)
        // holds the value slots when they are at most a word each (then the
        // values are written into the input's value array, see
        // `SortedTree::write`).
        let slots_dim = mode_order[mode_order.len() - 1] as usize;
        let slots_into = (payload.width <= 8).then(|| std::mem::take(&mut columns[slots_dim]));
        let bits = (lo, self.ordered, hi);
        let (parallel, visit) = (writer.parallel, tally(layout));
        // The packed keys are free once scattered (the caller writes upper
        // levels over them), so the bucket sorts take their scratch there;
        // but for a duplicate error, which finds its entries among them.
        let packed = match writer.duplicates {
            Duplicates::Error => Made::Kept(&keys),
            _ => Made::Spent(&mut keys),
        };
        let sorted = sort_keys_into(
            (into, slots_into),
            Some((top, counted)),
            packed,
            Some(*payload),
            bits,
            parallel,
            visit,
        );
        let tree = tree_of(sorted, layout, writer, writer.duplicates);
        columns[key_dim] = keys;
        tree.map_err(|key| duplicate_error(key, &columns[key_dim], &layout, mode_order))
    }
}

/// [`pack`] on the top digit of a sort of all of `layout`'s bits, and
/// `D({level})` of each of `singles` (levels, in the order given): the
/// distinct coordinates of the level, by a bitmap of its extent set as the
/// keys are packed (`Auto`'s singles, `build/packed.rs`, where a scan of
/// their own would read every column again).
pub(super) fn pack_over(
    keys: &mut [u64],
    columns: &[Vec<u64>],
    (mode_order, layout): (&[u32], &Layout),
    singles: &[usize],
    parallel: bool,
) -> Result<(Counted, Vec<u64>), usize> {
    let top = TopDigit::new(keys.len(), layout.position_bits, layout.total_bits());
    let chunks = pack(keys, columns, (mode_order, layout, top), singles, parallel)?;
    let mut maps: Vec<Vec<u64>> = Vec::new();
    let mut counted = Vec::with_capacity(chunks.len());
    for (counts, chunk_maps) in chunks {
        counted.push(counts);
        if maps.is_empty() {
            maps = chunk_maps;
        } else {
            for (map, chunk_map) in maps.iter_mut().zip(chunk_maps) {
                map.iter_mut().zip(chunk_map).for_each(|(w, c)| *w |= c);
            }
        }
    }
    let distinct = maps.iter().map(|map| bits_set(map)).collect();
    Ok((Counted { top, counted }, distinct))
}

/// What [`pack`] found in one chunk: its counts of the top digit, and a
/// bitmap of the coordinates of each level of `singles`.
type ChunkCounts = (Vec<usize>, Vec<Vec<u64>>);

/// Writes each entry's key (its coordinates packed by `layout`, the
/// position bits clear) over `keys`, which holds the coordinates of the
/// first level's dimension, `mode_order[0]` (the other dimensions' are in
/// `columns`), and counts the keys' `top` digits, per chunk of
/// [`chunks`]: the sort's first pass, done here while the keys are in
/// registers rather than in another read of them all; the coordinates of
/// each level of `singles` set bits of a bitmap the same way. Stops at the
/// first entry outside the shape, leaving it as it was, and returns it.
fn pack(
    keys: &mut [u64],
    columns: &[Vec<u64>],
    (mode_order, layout, top): (&[u32], &Layout, TopDigit),
    singles: &[usize],
    parallel: bool,
) -> Result<Vec<ChunkCounts>, usize> {
    let chunk = (columns, mode_order, layout, top);
    per_chunk(keys, parallel, |start, keys| {
        if singles.is_empty() {
            return pack_chunk(start, keys, chunk, |_| ()).map(|counts| (counts, Vec::new()));
        }
        let mut maps: Vec<Vec<u64>> =
            singles.iter().map(|&level| single_bitmap(layout.extents[level])).collect();
        let counts = pack_chunk(start, keys, chunk, |key| {
            // (Inside the extent: only keys of coordinates checked come here.)
            for (map, &level) in maps.iter_mut().zip(singles) {
                set_bit(map, layout.coord(key, level));
            }
        })?;
        Ok((counts, maps))
    })
}

/// [`pack`] of the chunk of `keys` from entry `start`, calling `mark(key)`
/// with each key written.
#[inline(always)]
fn pack_chunk(
    start: usize,
    keys: &mut [u64],
    (columns, mode_order, layout, top): (&[Vec<u64>], &[u32], &Layout, TopDigit),
    mut mark: impl FnMut(u64),
) -> Result<Vec<usize>, usize> {
    let rank = mode_order.len();
    let mut counts = vec![0usize; top.radix];
    // Each level's coordinates for this range; the key column's own
    // level reads the entry's slot before it is overwritten.
    let end = start + keys.len();
    let mut by_level: [&[u64]; MAX_RANK] = [&[]; MAX_RANK];
    // Level 0 is the key column's (`key_dim` is `mode_order[0]`).
    for (level, &dim) in mode_order.iter().enumerate().skip(1) {
        by_level[level] = &columns[dim as usize][start..end];
    }
    for (i, slot) in keys.iter_mut().enumerate() {
        let coord = |level: usize| if level == 0 { *slot } else { by_level[level][i] };
        // Ranks 3 and 4 as constants, so that the level loop unrolls.
        let (key, ok) = match rank {
            3 => layout.pack::<u64, 3>(rank, coord),
            4 => layout.pack::<u64, 4>(rank, coord),
            _ => layout.pack::<u64, 0>(rank, coord),
        };
        if !ok {
            return Err(start + i);
        }
        *slot = key;
        counts[top.of(key)] += 1;
        mark(key);
    }
    Ok(counts)
}

/// Rewrites each key of `keys`, packed by `from` (a layout of the identity
/// order, as [`pack_over`] packs it for the identity), as packed by `layout`
/// (of `mode_order`), and counts the keys' top digits per chunk, as
/// [`pack_over`] does from the columns: the keys that `Auto` counted over,
/// for the order it chose (`packed.rs`).
pub(super) fn repack_over(
    keys: &mut [u64],
    from: &Layout,
    mode_order: &[u32],
    layout: &Layout,
    parallel: bool,
) -> Counted {
    let top = TopDigit::new(keys.len(), layout.position_bits, layout.total_bits());
    let rank = mode_order.len();
    let field = |level: usize| {
        let dim = mode_order[level] as usize;
        (from.shift[dim], from.mask[dim])
    };
    let fields: [(u32, u64); MAX_RANK] = std::array::from_fn(|l| if l < rank { field(l) } else { (0, 0) });
    let repack_range = |_: usize, keys: &mut [u64]| -> Result<Vec<usize>, usize> {
        let mut counts = vec![0usize; top.radix];
        for slot in keys.iter_mut() {
            let old = *slot;
            let coord = |level: usize| old >> fields[level].0 & fields[level].1;
            let (key, _) = match rank {
                3 => layout.pack::<u64, 3>(rank, coord),
                4 => layout.pack::<u64, 4>(rank, coord),
                _ => layout.pack::<u64, 0>(rank, coord),
            };
            *slot = key;
            counts[top.of(key)] += 1;
        }
        Ok(counts)
    };
    // (Nothing to refuse: every coordinate of a key is inside its extent.)
    let counted = per_chunk(keys, parallel, repack_range).unwrap_or_default();
    Counted { top, counted }
}

/// `f(start, chunk)` of each chunk of `keys` by [`chunks`], on the thread
/// pool when `parallel`: each chunk's counts, in chunk order, or the first
/// entry (in input order) that a chunk refused.
fn per_chunk<T: Send>(
    keys: &mut [u64],
    parallel: bool,
    f: impl Fn(usize, &mut [u64]) -> Result<T, usize> + Sync,
) -> Result<Vec<T>, usize> {
    let ranges = chunks(keys.len(), parallel);
    let mut parts = Vec::with_capacity(ranges.len());
    let mut rest = keys;
    for range in &ranges {
        let (part, tail) = std::mem::take(&mut rest).split_at_mut(range.len());
        parts.push((range.start, part));
        rest = tail;
    }
    // The first entry outside the shape in input order: each range stops at
    // its own first, and the lowest of them is the input's.
    if parallel {
        let packed: Vec<Result<T, usize>> =
            parts.into_par_iter().map(|(start, part)| f(start, part)).collect();
        match packed.iter().filter_map(|p| p.as_ref().err()).min() {
            Some(&entry) => Err(entry),
            None => Ok(packed.into_iter().flatten().collect()),
        }
    } else {
        parts.into_iter().map(|(start, part)| f(start, part)).collect()
    }
}

/// The error for `entry`, the first outside the shape (its coordinates are
/// as the input gave them: `pack` stopped before it).
pub(super) fn out_of_bounds(
    entry: usize,
    keys: &[u64],
    columns: &[Vec<u64>],
    key_dim: usize,
    shape: &[u64],
) -> BuildError {
    let coord = |dim: usize| if dim == key_dim { keys[entry] } else { columns[dim][entry] };
    let (dim, coord, extent) = (0..shape.len())
        .map(|dim| (dim, coord(dim), shape[dim]))
        .find(|&(_, c, e)| c >= e)
        .unwrap_or((0, 0, 0));
    BuildError::OutOfBounds { entry, dim, coord, extent }
}

/// The duplicate error for `key` (a sorted key, its position bits those of
/// its slot): the first two entries whose packed keys (position bits clear)
/// equal it.
fn duplicate_error(key: u64, packed: &[u64], layout: &Layout, mode_order: &[u32]) -> BuildError {
    let key = key.with_low(layout.position_bits, 0);
    let mut index = vec![0u64; mode_order.len()];
    for (level, &dim) in mode_order.iter().enumerate() {
        index[dim as usize] = layout.coord(key, level);
    }
    let mut same = packed.iter().enumerate().filter(|&(_, &k)| k == key).map(|(e, _)| e);
    let first = same.next().unwrap_or(0);
    let second = same.next().unwrap_or(first);
    BuildError::Duplicate { index, first, second }
}
