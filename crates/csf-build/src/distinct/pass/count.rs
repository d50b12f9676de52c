//! Counting one set's distinct projections within one bucket of a
//! partition pass: by a bitmap of the bucket's cells, by a bitmap per part
//! of them, by fibers (the bucket's keys grouped by some of the set's
//! fields, then a small bitmap of the other fields per group, or for few
//! cells a stamp per cell), or by a hash table (see `pass.rs` for which).

use super::super::stamps::Stamps;
use super::{PackedKey, MAX_FIELDS};

/// A bucket part up to this many keys is counted in one hash table (of
/// twice as many slots: 512 KiB of `u64` keys, within L2); bigger ones are
/// split by hash first.
const TABLE_KEYS: usize = 1 << 15;
/// Extras of at most `2^STAMP_BITS` cells are counted by stamps
/// (`Scratch::stamped_count`): 256 KiB of them, within L2.
const STAMP_BITS: u32 = 16;
/// Where a set's projection of a key lies among a bucket's cells.
#[derive(Clone, PartialEq, Eq)]
pub(super) struct Local {
    /// `(shift, width)` of each of the set's fields in a key, highest first.
    pub(super) fields: Vec<(u32, u32)>,
    /// Bits of a cell.
    pub(super) bits: u32,
    /// Bits of a part's cells (the bitmap's size): the bucket's cells are
    /// split by their top `bits - part_bits` bits first.
    pub(super) part_bits: u32,
}

impl Local {
    /// `(shift, mask, shift)` of each field: from the key, and into the cell
    /// (steps past the fields take nothing).
    fn steps<const N: usize>(&self) -> [(u32, u64, u32); N] {
        let mut steps = [(0, 0, 0); N];
        let mut into = self.bits;
        for (step, &(shift, width)) in steps.iter_mut().zip(&self.fields) {
            into -= width;
            *step = (shift, (1 << width) - 1, into);
        }
        steps
    }
}

/// The cell of `key` by `steps` (from `Local::steps`).
#[inline(always)]
fn cell_of<K: PackedKey, const N: usize>(key: K, steps: &[(u32, u64, u32); N]) -> usize {
    steps.iter().fold(0, |c, &(shift, mask, into)| c | (key.low64(shift) & mask) << into) as usize
}

/// One thread's hash table, split buffer and bitmap, reused from bucket to bucket.
pub(super) struct Scratch<K> {
    table: Vec<K>,
    split: Vec<K>,
    starts: Vec<usize>,
    /// All zero between buckets.
    bitmap: Vec<u64>,
    /// Per cell of a fiber's extra, the number of the last group that saw
    /// it (`Scratch::stamped_count`), kept across buckets and extras.
    stamps: Stamps,
    /// Per key of a bucket sorted by fiber group, 1 where a group starts.
    group_starts: Vec<u8>,
}

impl<K> Default for Scratch<K> {
    fn default() -> Self {
        Self {
            table: Vec::new(),
            split: Vec::new(),
            starts: Vec::new(),
            bitmap: Vec::new(),
            stamps: Stamps::default(),
            group_starts: Vec::new(),
        }
    }
}

impl<K: PackedKey> Scratch<K> {
    /// The number of distinct cells of `keys` by a bit per cell: one bitmap
    /// of every cell, or, for more cells than it holds, a bitmap per part of
    /// the cells split by their top bits (into this thread's buffer).
    pub(super) fn local_count(&mut self, keys: &[K], local: &Local) -> u64 {
        // Fixed numbers of fields for the common cases: the loop unrolls.
        match local.fields.len() {
            0 | 1 => self.local_count_with::<1>(keys, local),
            2 => self.local_count_with::<2>(keys, local),
            3 => self.local_count_with::<3>(keys, local),
            4 => self.local_count_with::<4>(keys, local),
            _ => self.local_count_with::<MAX_FIELDS>(keys, local),
        }
    }

    /// `local_count` for at most `N` fields.
    fn local_count_with<const N: usize>(&mut self, keys: &[K], local: &Local) -> u64 {
        let steps = local.steps::<N>();
        let cell = |k: K| cell_of(k, &steps);
        if local.bits <= local.part_bits {
            return self.bitmap_count(keys.iter().map(|&k| cell(k)), keys.len(), local.bits);
        }
        let part_bits = local.part_bits;
        let low = (1usize << part_bits) - 1;
        let split = |k: K| {
            let c = cell(k);
            (c >> part_bits, K::from_u64((c & low) as u64))
        };
        self.by_parts(keys, 1 << (local.bits - part_bits), split, |scratch, part| {
            scratch.bitmap_count(part.iter().map(|&c| c.low64(0) as usize), part.len(), part_bits)
        })
    }

    /// Splits `keys` into `parts` parts by `split(key) = (part, value)`
    /// (`split_by`), and adds up `count` of every part.
    fn by_parts(
        &mut self,
        keys: &[K],
        parts: usize,
        split: impl Fn(K) -> (usize, K),
        mut count: impl FnMut(&mut Self, &[K]) -> u64,
    ) -> u64 {
        self.split_by(keys, parts, split, |scratch, values, ends| {
            let mut from = 0;
            let mut total = 0;
            for &to in ends {
                total += count(scratch, &values[from..to]);
                from = to;
            }
            total
        })
    }

    /// Splits `keys` into `parts` parts by `split(key) = (part, value)`, each
    /// part's values side by side in this thread's buffer (grown to the
    /// biggest bucket and kept), and calls `then` with the values and each
    /// part's end (part `p` is `ends[p - 1]..ends[p]`, the first from 0).
    /// `split` runs twice a key (to size the parts, then to fill them)
    /// rather than a third array: memory stays at the keys and one copy.
    fn split_by<R>(
        &mut self,
        keys: &[K],
        parts: usize,
        split: impl Fn(K) -> (usize, K),
        then: impl FnOnce(&mut Self, &[K], &[usize]) -> R,
    ) -> R {
        let (mut buffer, mut starts) = (std::mem::take(&mut self.split), std::mem::take(&mut self.starts));
        starts.clear();
        starts.resize(parts + 1, 0);
        for &k in keys {
            starts[split(k).0 + 1] += 1;
        }
        for p in 0..parts {
            starts[p + 1] += starts[p];
        }
        // Grown only (its old contents are overwritten part by part), not
        // zeroed again for every bucket.
        if buffer.len() < keys.len() {
            buffer.resize(keys.len(), K::default());
        }
        let values = &mut buffer[..keys.len()];
        // `starts[p]` moves through part `p` as it fills, ending at part `p + 1`'s start.
        for &k in keys {
            let (p, v) = split(k);
            values[starts[p]] = v;
            starts[p] += 1;
        }
        let result = then(self, values, &starts[..parts]);
        (self.split, self.starts) = (buffer, starts);
        result
    }

    /// The number of distinct cells among `n` cells below `2^bits`, by this
    /// thread's bitmap, cleared again after: whole when no bigger than the
    /// cells, else word by word.
    fn bitmap_count(&mut self, cells: impl Iterator<Item = usize> + Clone, n: usize, bits: u32) -> u64 {
        let words = (1usize << bits).div_ceil(64);
        if self.bitmap.len() < words {
            // A fresh zeroed allocation, its pages mapped as bits touch them
            // (`resize` would write all of it).
            self.bitmap = vec![0; words];
        }
        let map = &mut self.bitmap[..words];
        let mut count = 0u64;
        for cell in cells.clone() {
            let (word, bit) = (cell >> 6, 1u64 << (cell & 63));
            count += u64::from(map[word] & bit == 0);
            map[word] |= bit;
        }
        if words <= n {
            map.fill(0);
        } else {
            for cell in cells {
                map[cell >> 6] = 0;
            }
        }
        count
    }

    /// Counts sets by fibers: `keys` grouped by their cell of `group` (a
    /// counting sort into this thread's buffer), then, for each `(set,
    /// extra)` of `extras`, the distinct cells of `extra` within each group
    /// added to `out[set]`.
    /// A set of the group's fields and an extra's is counted exactly: two
    /// keys share its projection when they share both cells. A group's
    /// keys are few and an extra's bitmap small (at most 512 KiB, in L2),
    /// so a key costs a bit set in cache per set, where the
    /// set's bitmap over the bucket's cells would miss the caches (or a
    /// hash table take a probe).
    pub(super) fn fibers(&mut self, keys: &[K], group: &Local, extras: &[(usize, Local)], out: &mut [u64]) {
        let fields =
            extras.iter().map(|(_, x)| x.fields.len()).chain([group.fields.len()]).max().unwrap_or(0);
        // Fixed numbers of fields for the common cases: the loops unroll.
        match fields {
            0..=2 => self.fibers_with::<2>(keys, group, extras, out),
            _ => self.fibers_with::<MAX_FIELDS>(keys, group, extras, out),
        }
    }

    /// `fibers` for groups and extras of at most `N` fields.
    fn fibers_with<const N: usize>(
        &mut self,
        keys: &[K],
        group: &Local,
        extras: &[(usize, Local)],
        out: &mut [u64],
    ) {
        if keys.len() <= 1 {
            extras.iter().for_each(|&(set, _)| out[set] += keys.len() as u64);
            return;
        }
        let steps = group.steps::<N>();
        let by_group = |k: K| (cell_of(k, &steps), k);
        self.split_by(keys, 1 << group.bits, by_group, |scratch, sorted, ends| {
            // Stamped extras read where groups start from a byte a key, made
            // once for all of them: no loop a group (see `stamped_count`).
            let mut starts = std::mem::take(&mut scratch.group_starts);
            if extras.iter().any(|(_, extra)| extra.bits <= STAMP_BITS) {
                starts.clear();
                starts.resize(sorted.len(), 0);
                // Each group starts where the one before it ends (an empty
                // group where the next one starts, the last ones maybe past
                // the last key).
                for &from in std::iter::once(&0).chain(ends) {
                    if let Some(start) = starts.get_mut(from) {
                        *start = 1;
                    }
                }
            }
            for (set, extra) in extras {
                let steps = extra.steps::<N>();
                out[*set] += if extra.bits <= STAMP_BITS {
                    scratch.stamped_count(sorted, &starts, steps, extra.bits)
                } else {
                    scratch.fiber_count(sorted, ends, steps, extra.bits)
                };
            }
            scratch.group_starts = starts;
        });
    }

    /// The distinct cells (by `steps`, below `2^bits`) within each group of
    /// `sorted` (group `g` is `ends[g - 1]..ends[g]`), added up: each group
    /// by this thread's bitmap (`bitmap_count`, cleared cell by cell after
    /// a group of fewer keys than its words).
    fn fiber_count<const N: usize>(
        &mut self,
        sorted: &[K],
        ends: &[usize],
        steps: [(u32, u64, u32); N],
        bits: u32,
    ) -> u64 {
        let mut count = 0u64;
        let mut from = 0;
        for &to in ends {
            let fiber = &sorted[from..to];
            from = to;
            count += match fiber.len() {
                0 | 1 => fiber.len() as u64,
                n => self.bitmap_count(fiber.iter().map(|&k| cell_of(k, &steps)), n, bits),
            };
        }
        count
    }

    /// [`Scratch::fiber_count`] for extras of few cells (at most
    /// `2^STAMP_BITS`), by a stamp per cell (4 bytes where the bitmap takes a
    /// bit): a key is a new cell of its group when the cell's stamp is not
    /// the group's number. `starts[i]` is 1 where key `i` starts a group.
    /// Groups hold a few keys each (one or two on the real tensors), and a
    /// loop a group mispredicts its end about once a group, where this loop
    /// a key has no branch on where groups start; a bitmap's clearing after
    /// each group (and the branch on whether to) would cost more still.
    fn stamped_count<const N: usize>(
        &mut self,
        sorted: &[K],
        starts: &[u8],
        steps: [(u32, u64, u32); N],
        bits: u32,
    ) -> u64 {
        // A group number a key at most.
        let mut tally = self.stamps.tally(1 << bits, sorted.len());
        // A cell is below `2^bits`.
        tally.count(sorted.iter().zip(starts).map(|(&k, &start)| (start != 0, cell_of(k, &steps))))
    }

    /// The number of distinct `key & mask` over `keys`. A bucket too big for
    /// one table in cache is split by hash into parts that each fit one
    /// (`by_parts`).
    pub(super) fn distinct(&mut self, keys: &[K], mask: K) -> u64 {
        if keys.len() <= TABLE_KEYS {
            return self.table_count(keys.iter().map(|&k| (k & mask).premix()), keys.len(), 0);
        }
        let part_bits = usize::BITS - (keys.len() / TABLE_KEYS).leading_zeros();
        let split = |k: K| {
            let v = (k & mask).premix();
            ((v.spread() >> (64 - part_bits)) as usize, v)
        };
        self.by_parts(keys, 1 << part_bits, split, |scratch, part| {
            scratch.table_count(part.iter().copied(), part.len(), part_bits)
        })
    }

    /// The number of distinct keys among `n` premixed keys, by linear
    /// probing in a table of at least `2n` slots indexed by the `spread` bits
    /// below its top `skip` (those chose the part the keys came from).
    fn table_count(&mut self, keys: impl Iterator<Item = K>, n: usize, skip: u32) -> u64 {
        let slot_bits = (2 * n).next_power_of_two().trailing_zeros().max(4);
        let size = 1usize << slot_bits;
        self.table.clear();
        self.table.resize(size, K::EMPTY);
        let (mut count, mut saw_empty) = (0u64, false);
        let mut previous = None;
        for k in keys {
            // Sorted input repeats keys back to back: skip them without a
            // probe (and its hard-to-predict branch).
            if previous.replace(k) == Some(k) {
                continue;
            }
            if k == K::EMPTY {
                // Only with all-ones fields (extents of 2^64): counted aside.
                saw_empty = true;
                continue;
            }
            let mut i = ((k.spread() << skip) >> (64 - slot_bits)) as usize;
            // The first probe without a branch on what it finds (a key seen
            // or new is a coin toss): only a collision, the rarer case, goes on.
            let slot = self.table[i];
            let empty = slot == K::EMPTY;
            self.table[i] = if empty { k } else { slot };
            count += u64::from(empty);
            if slot == k || empty {
                continue;
            }
            loop {
                i = (i + 1) & (size - 1);
                let slot = self.table[i];
                if slot == k {
                    break;
                }
                if slot == K::EMPTY {
                    self.table[i] = k;
                    count += 1;
                    break;
                }
            }
        }
        count + u64::from(saw_empty)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Fibers counted by stamps count each group apart: across buckets of
    /// one scratch, across extras of other cells sharing its stamps, and
    /// when the group numbers run out and the stamps start again.
    #[test]
    fn stamps_count_each_group_apart() {
        let local =
            |shift: u32, width: u32| Local { fields: vec![(shift, width)], bits: width, part_bits: width };
        // Keys of an 8-bit group above an 8-bit cell, and a 6-bit cell below that.
        let (group, extra, other) = (local(14, 8), local(6, 8), local(0, 6));
        let mut state = 0x57a3_u64;
        let mut bucket = |n: usize| -> Vec<u64> {
            (0..n)
                .map(|_| {
                    state ^= state << 13;
                    state ^= state >> 7;
                    state ^= state << 17;
                    // A dozen keys a group, a few of them repeats.
                    let key = state % (1 << 22);
                    if state >> 40 & 3 == 0 {
                        key & !0xff
                    } else {
                        key
                    }
                })
                .collect()
        };
        let distinct = |keys: &[u64], low: u32, width: u32| {
            let cells: std::collections::BTreeSet<(u64, u64)> =
                keys.iter().map(|&k| (k >> 14, k >> low & ((1 << width) - 1))).collect();
            cells.len() as u64
        };
        let mut scratch = Scratch::<u64>::default();
        let extras = [(0, extra), (1, other)];
        for round in 0..4 {
            if round == 2 {
                // Two groups' numbers left: the stamps start again (numbers
                // wrapping past them would find these).
                scratch.stamps.last = u32::MAX - 1;
                scratch.stamps.table.fill(1);
            }
            let keys = bucket(3000);
            let mut out = [0u64; 2];
            scratch.fibers(&keys, &group, &extras, &mut out);
            assert_eq!(out, [distinct(&keys, 6, 8), distinct(&keys, 0, 6)], "round {round}");
        }
        // Rounds 2 and 3 from 0: 256 groups and two extras a round.
        assert_eq!(scratch.stamps.last, 2 * 2 * 256, "the numbers started again");
        // Few keys: groups of one key, empty groups between them, before
        // them and after the last; and every key in the last group.
        for keys in [bucket(20), bucket(2), vec![0x3f_c000, 0x3f_c0ff, 0x3f_c000, 0x3f_ff3f]] {
            let mut out = [0u64; 2];
            scratch.fibers(&keys, &group, &extras, &mut out);
            assert_eq!(out, [distinct(&keys, 6, 8), distinct(&keys, 0, 6)], "keys {keys:x?}");
        }
    }
}
