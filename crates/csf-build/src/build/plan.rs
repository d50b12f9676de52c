//! Where each chunk of sorted keys writes. The chunks are cut at bucket
//! boundaries, and prefix sums of the buckets' tallies give every chunk its
//! place in each level's arrays, so that the chunks write disjoint slices of
//! arrays allocated once, at their final size.

use std::ops::Range;

use rayon::prelude::*;

use crate::key::Key;
use crate::sort::chunks;

use super::fill::{Part, Side, SlotSource};
use super::radix::Tally;
use super::Levels;

/// How the sorted keys are cut into chunks, and where each chunk's nodes go.
pub(super) struct ChunkPlan {
    /// Bucket `b` is `keys[starts[b]..starts[b + 1]]`.
    starts: Vec<usize>,
    /// Each chunk's buckets: whole ones, so that no run of duplicates
    /// crosses chunks.
    chunks: Vec<Range<usize>>,
    /// `opened[c][L]`: the nodes chunk `c` opens at level `L`.
    opened: Vec<Vec<usize>>,
    /// `bases[c][L]`: the nodes the chunks before `c` open at level `L`.
    bases: Vec<Vec<usize>>,
    /// `totals[L]`: the nodes of level `L`.
    totals: Vec<usize>,
    /// How a chunk's leaves that belong over an earlier chunk's keys get
    /// there (see `Part::gap`): through side buffers, or by closing the gaps.
    use_sides: bool,
}

/// The levels' arrays but the leaf `crd`, which is written over the sorted keys.
pub(super) struct UpperLevels {
    /// `crd[L]` for the levels `L < rank - 1`.
    crd: Vec<Vec<u64>>,
    /// `pos[L]` for every level.
    pos: Vec<Vec<u64>>,
}

/// Arrays that a build's input no longer needs once its keys are sorted
/// (`build_owned`'s coordinate columns), to write levels into: memory
/// already mapped and touched, where a fresh array costs a page fault per
/// 4 KiB written and the input's arrays an unmapping when freed.
#[derive(Debug, Default)]
pub(super) struct Spare(Vec<Vec<u64>>);

impl Spare {
    pub(super) fn new(arrays: Vec<Vec<u64>>) -> Self {
        Self(arrays)
    }

    /// An array of `len` elements: the spare one of least capacity that
    /// holds `len` without growing, cut to `len` (its tail is returned to the
    /// allocator, in place: a big array is a memory map of its own), else
    /// `len` zeros. A spare array keeps its old contents, which the chunks
    /// overwrite (in debug builds it is filled with `u64::MAX`, so that an
    /// entry left unwritten fails the output's validation).
    fn take(&mut self, len: usize) -> Vec<u64> {
        let fits = |a: &Vec<u64>| a.capacity() >= len;
        let best = (0..self.0.len()).filter(|&i| fits(&self.0[i])).min_by_key(|&i| self.0[i].capacity());
        let Some(best) = best else { return vec![0; len] };
        let mut array = self.0.swap_remove(best);
        array.resize(len, 0);
        array.shrink_to_fit();
        if cfg!(debug_assertions) {
            array.fill(u64::MAX);
        }
        array
    }
}

impl UpperLevels {
    /// The finished levels, with `leaf_crd` as the last level's `crd`.
    pub(super) fn with_leaf_crd(self, leaf_crd: Vec<u64>) -> Levels {
        self.pos.into_iter().zip(self.crd.into_iter().chain([leaf_crd])).collect()
    }
}

impl ChunkPlan {
    /// Cuts the sorted keys (bucket `b` at `starts[b]..starts[b + 1]`) into
    /// chunks of whole buckets, about one per task, and places each chunk's
    /// nodes after those of the chunks before it. The tallies are freed here,
    /// before the levels are allocated.
    pub(super) fn new(starts: Vec<usize>, tallies: Vec<Tally>, rank: usize, parallel: bool) -> Self {
        let chunks = cut(&starts, parallel);
        let opened: Vec<Vec<usize>> = chunks.iter().map(|c| opened_by(&tallies[c.clone()], rank)).collect();
        drop(tallies);
        let mut totals = vec![0usize; rank];
        let mut bases = Vec::with_capacity(chunks.len());
        for o in &opened {
            bases.push(totals.clone());
            totals.iter_mut().zip(o).for_each(|(total, o)| *total += o);
        }
        let mut plan = Self { starts, chunks, opened, bases, totals, use_sides: false };
        // A chunk after duplicates has leaves that belong over the previous
        // chunk's keys, which may still be being read: with few duplicates
        // they go to side buffers, copied into place after all chunks are
        // done; with many (the side buffers could add up to a chunk count
        // times the duplicates) every chunk writes its leaves from its own
        // start and a sequential pass closes the gaps.
        plan.use_sides = plan.side_leaves() <= plan.keys() / 64;
        plan
    }

    /// The sorted keys, duplicates included.
    pub(super) fn keys(&self) -> usize {
        self.starts[self.starts.len() - 1]
    }

    /// The leaves: the keys less the duplicates merged.
    pub(super) fn leaves(&self) -> usize {
        self.totals[self.totals.len() - 1]
    }

    /// Chunk `c`'s range of the sorted keys.
    fn keys_of(&self, c: usize) -> Range<usize> {
        self.starts[self.chunks[c].start]..self.starts[self.chunks[c].end]
    }

    /// Where chunk `c`'s first leaf goes.
    fn first_leaf(&self, c: usize) -> usize {
        self.bases[c][self.totals.len() - 1]
    }

    /// The leaves that would go to side buffers: those of each chunk that
    /// belong before its first key.
    fn side_leaves(&self) -> usize {
        let leaf = self.totals.len() - 1;
        (0..self.chunks.len())
            .map(|c| (self.keys_of(c).start - self.first_leaf(c)).min(self.opened[c][leaf]))
            .sum()
    }

    /// Every array but the leaf `crd` at its final size, each a `spare`
    /// array where one fits (see [`Spare::take`]), else fresh zeros; with
    /// `shared`, not the `crd` of the level above the leaves either (see
    /// [`hand_out`](Self::hand_out)). The chunks write every entry but the
    /// `pos` entries set here: the first level's, and each level's last (the
    /// end of the last node).
    pub(super) fn allocate(&self, spare: &mut Spare, shared: bool) -> UpperLevels {
        let totals = &self.totals;
        let leaf = totals.len() - 1;
        // The longest arrays first, so that they are the ones that get the spares.
        let mut lengths: Vec<(usize, bool, usize)> =
            (0..leaf).filter(|&l| !(shared && l + 1 == leaf)).map(|l| (totals[l], true, l)).collect();
        lengths.extend((1..totals.len()).map(|l| (totals[l - 1] + 1, false, l)));
        lengths.sort_unstable_by(|a, b| b.cmp(a));
        let mut crd: Vec<Vec<u64>> = vec![Vec::new(); leaf];
        let mut pos: Vec<Vec<u64>> = vec![Vec::new(); totals.len()];
        for (len, is_crd, level) in lengths {
            let array = spare.take(len);
            if is_crd {
                crd[level] = array;
            } else {
                pos[level] = array;
                pos[level][len - 1] = totals[level] as u64;
            }
        }
        pos[0] = vec![0, totals[0] as u64];
        UpperLevels { crd, pos }
    }

    /// Splits the sorted keys, the values (`width` bytes each: the value
    /// slots, written over, or an array of their own with the slots in
    /// `slots`) and the levels into each chunk's share, for the chunks to
    /// write in parallel.
    ///
    /// With `shared` (slots of a word each, in a word array as long as the
    /// keys, which `allocate` was told of), the slots are handed out in
    /// place of the `crd` of the level above the leaves: each chunk gets the
    /// words of its own keys, reads its slots there, and writes that level's
    /// nodes over them from the front. A chunk has read the slot of its key
    /// `j` by the time it writes its node `j` (a chunk's keys open at most as
    /// many nodes as there are keys before them), and a chunk whose keys
    /// index their slots reads each bucket's slots before it writes any of
    /// its nodes. [`settle_shared`](Self::settle_shared) then moves each
    /// chunk's nodes to their place.
    pub(super) fn hand_out<'a, K: Key>(
        &'a self,
        (keys, values): (&'a mut [K], &'a mut [u8]),
        (slots, shared): (Option<&'a [u8]>, Option<&'a mut [u64]>),
        levels: &'a mut UpperLevels,
        width: usize,
    ) -> Vec<Part<'a, K>> {
        let leaf = self.totals.len() - 1;
        let prevs: Vec<Option<K>> =
            (0..self.chunks.len()).map(|c| self.keys_of(c).start.checked_sub(1).map(|i| keys[i])).collect();
        let mut keys_rest = keys;
        let mut values_rest = values;
        let mut slots_rest = slots;
        let slots_in_level = shared.is_some();
        let mut shared_rest = shared.unwrap_or_default();
        let mut crd_rest: Vec<&mut [u64]> = levels.crd.iter_mut().map(|c| &mut c[..]).collect();
        let mut pos_rest: Vec<&mut [u64]> = levels.pos.iter_mut().map(|p| &mut p[..]).collect();
        let mut parts = Vec::with_capacity(self.chunks.len());
        for (c, prev) in prevs.into_iter().enumerate() {
            let (range, opened, base) = (self.keys_of(c), &self.opened[c], &self.bases[c]);
            let crd = crd_rest
                .iter_mut()
                .enumerate()
                .map(|(level, rest)| {
                    if slots_in_level && level + 1 == leaf {
                        take_front(&mut shared_rest, range.len())
                    } else {
                        take_front(rest, opened[level])
                    }
                })
                .collect();
            let pos = pos_rest
                .iter_mut()
                .enumerate()
                .map(|(level, rest)| take_front(rest, if level == 0 { 0 } else { opened[level - 1] }))
                .collect();
            let starts = &self.starts[self.chunks[c].start..=self.chunks[c].end];
            parts.push(Part {
                keys: take_front(&mut keys_rest, range.len()),
                values: take_front(&mut values_rest, range.len() * width),
                slots: match slots_rest.as_mut() {
                    _ if slots_in_level => SlotSource::Level,
                    Some(rest) => {
                        let (front, back) = rest.split_at(range.len() * width);
                        *rest = back;
                        SlotSource::Apart(front)
                    }
                    None => SlotSource::Values,
                },
                start: range.start,
                buckets: starts.windows(2).map(|b| b[0] - range.start..b[1] - range.start).collect(),
                prev,
                crd,
                pos,
                base,
                gap: if self.use_sides { range.start - base[leaf] } else { 0 },
            });
        }
        parts
    }

    /// The `crd` of the level above the leaves, from the chunks' nodes
    /// written over the shared slot words (see [`hand_out`](Self::hand_out)):
    /// each chunk's moved down from its first key's index to its place, in
    /// chunk order (a chunk's place ends where the next chunk's begins, at or
    /// below that chunk's first key), and the words cut to the level's length.
    /// Each move runs on every thread (`move_down`): the chunks are many
    /// only on a parallel build, whose threads would otherwise wait.
    pub(super) fn settle_shared(&self, mut words: Vec<u64>, levels: &mut UpperLevels) {
        let level = self.totals.len() - 2;
        for c in 1..self.chunks.len() {
            let (from, to, count) = (self.keys_of(c).start, self.bases[c][level], self.opened[c][level]);
            move_down(&mut words, from..from + count, to);
        }
        words.truncate(self.totals[level]);
        words.shrink_to_fit();
        levels.crd[level] = words;
    }

    /// Moves every leaf to its place once all chunks are written: those that
    /// went to side buffers (`sides`, per chunk), or, without them, each
    /// chunk's leaves over the gap the duplicates before it left.
    pub(super) fn place_leaves<K: Key>(
        &self,
        keys: &mut [K],
        values: &mut [u8],
        sides: Vec<Side>,
        width: usize,
    ) {
        let leaf = self.totals.len() - 1;
        for (c, (side_keys, side_values)) in sides.into_iter().enumerate() {
            let (start, at) = (self.keys_of(c).start, self.first_leaf(c));
            if self.use_sides {
                for (k, &crd) in side_keys.iter().enumerate() {
                    keys[at + k] = K::from_u64(crd);
                }
                values[at * width..at * width + side_values.len()].copy_from_slice(&side_values);
            } else if start != at {
                let count = self.opened[c][leaf];
                keys.copy_within(start..start + count, at);
                values.copy_within(start * width..(start + count) * width, at * width);
            }
        }
    }
}

/// A move shorter than this many words runs on one thread: splitting it
/// costs more than it saves.
const PARALLEL_MOVE: usize = 1 << 16;

/// `words.copy_within(from, to)`, on the thread pool when it moves many
/// words down by many: in steps no longer than the distance moved, so that
/// a step's source and destination are disjoint (the steps before it have
/// read every word it overwrites), each step's words split among the threads.
fn move_down(words: &mut [u64], from: Range<usize>, to: usize) {
    if to == from.start {
        return;
    }
    // (A move up, which the plan never asks for, is `copy_within`'s.)
    let distance = from.start.saturating_sub(to);
    if distance < PARALLEL_MOVE || from.len() < PARALLEL_MOVE {
        words.copy_within(from, to);
        return;
    }
    let mut at = from.start;
    while at < from.end {
        let len = distance.min(from.end - at);
        let share = len.div_ceil(rayon::current_num_threads()).max(PARALLEL_MOVE / 4);
        let (below, rest) = words.split_at_mut(at);
        let (target, source) = (&mut below[at - distance..at - distance + len], &rest[..len]);
        target.par_chunks_mut(share).zip(source.par_chunks(share)).for_each(|(t, s)| t.copy_from_slice(s));
        at += len;
    }
}

/// Chunks of whole buckets (ranges of bucket numbers) of about equal numbers
/// of keys, as many as `sort::chunks` would make of the keys.
fn cut(starts: &[usize], parallel: bool) -> Vec<Range<usize>> {
    let buckets = starts.len() - 1;
    let n = starts[buckets];
    let count = chunks(n, parallel).len();
    let mut cut = Vec::with_capacity(count);
    let (mut first, mut next_cut) = (0, 1);
    for digit in 0..buckets {
        let end = starts[digit + 1];
        if digit + 1 == buckets || (n > 0 && end * count >= next_cut * n) {
            cut.push(first..digit + 1);
            first = digit + 1;
            next_cut = end * count / n.max(1) + 1;
        }
    }
    cut
}

/// The nodes a run of buckets opens per level: a key opens one at its split
/// level and every level below.
fn opened_by(tallies: &[Tally], rank: usize) -> Vec<usize> {
    let mut opened = vec![0usize; rank];
    for t in tallies {
        opened.iter_mut().zip(&t.at).for_each(|(o, a)| *o += a);
    }
    for level in 1..rank {
        opened[level] += opened[level - 1];
    }
    opened
}

/// The first `len` elements of `rest`, which keeps the others.
fn take_front<'a, T>(rest: &mut &'a mut [T], len: usize) -> &'a mut [T] {
    let (front, back) = std::mem::take(rest).split_at_mut(len);
    *rest = back;
    front
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Moves of every shape against `copy_within`: shorter than a step and
    /// longer, moved by less than their length (several steps, each
    /// overwriting words the one before read) and by more, short ones on one
    /// thread, and none.
    #[test]
    fn moves_down_as_copy_within_does() {
        let n = 6 * PARALLEL_MOVE;
        let words: Vec<u64> = (0..n as u64).map(|i| i.wrapping_mul(0x9e37_79b9_7f4a_7c15)).collect();
        let p = PARALLEL_MOVE;
        let cases = [
            (p..4 * p, 0),             // by a third of its length: three steps
            (2 * p..6 * p, p),         // by a quarter: four steps
            (p + 3..6 * p - 5, 7),     // by little: one thread
            (3 * p..3 * p + 100, 0),   // short: one thread
            (3 * p..4 * p + 10, 0),    // by more than its length: one step
            (2 * p..2 * p + p + 1, p), // a last step of one word
            (4 * p..4 * p, 0),         // empty
            (p..5 * p, p),             // not moved
            (p..3 * p, 2 * p),         // up, on one thread
        ];
        for (from, to) in cases {
            let mut expected = words.clone();
            expected.copy_within(from.clone(), to);
            let mut moved = words.clone();
            move_down(&mut moved, from.clone(), to);
            assert!(moved == expected, "{from:?} to {to}");
        }
    }
}
