//! The partition pass: the entries' packed keys scattered into buckets by one
//! dimension's top bits, then each set's distinct masked keys counted per bucket.
//!
//! When every dimension packs into 64 bits, keys hold them all (the *full
//! layout*, `Plan::full`), whatever the pass's sets: the next pass then
//! scatters the last pass's keys (8 bytes an entry, read once) rather than
//! the input (8 bytes a coordinate, read once to count the buckets and once
//! to write); the first pass packs the input into keys in input order (one
//! read of the input), then scatters those. The last pass's array is then
//! free while the pass counts, and big buckets are split into it, each into
//! its own range. Otherwise a pass packs the dimensions of its sets only,
//! `a` first, scattering from the input.
//!
//! Per bucket, a set is counted by a bitmap of its bucket-local cells when
//! they are few (`LOCAL_BITS`), else by a linear-probing hash table whose
//! first probe does not branch on what it finds.

use std::ops::Range;

use rayon::prelude::*;

use super::{bits_below, dims_of, project, Dims, MIN_CHUNK};
use crate::Source;

mod key;

pub(super) use key::{KeyArrays, PackedKey};

/// The most buckets of a partition pass: 512 write streams stay within the
/// TLB's reach (sort.rs measured the same for its scatter).
const BUCKET_BITS: u32 = 9;
/// The number of entries a bucket aims at when there are too few entries to
/// fill `2^BUCKET_BITS` buckets of it.
const BUCKET_ENTRIES: usize = 1024;
/// A bucket part up to this many keys is counted in one hash table (of
/// twice as many slots: 512 KiB of `u64` keys, within L2); bigger ones are
/// split by hash first.
const TABLE_KEYS: usize = 1 << 15;
/// A set whose cells within one bucket number at most `2^LOCAL_BITS` (8
/// MiB of bitmap, within L3) is counted per bucket by a bitmap rather than a
/// hash table: a bit set costs a fraction of a probe even when it misses L2
/// (a probe's cost is its branch on what it finds). 10M entries of
/// power-law-r4 500x5000x50000x500000, one thread: a set of 23 bits a cell
/// counted in 70 ms less by bitmaps than by tables, one of 26 bits in 30 ms
/// less.
const LOCAL_BITS: u32 = 26;
/// The most fields of a key a bucket bitmap's cell is made of (more, each
/// of another dimension, and the set is hashed).
const MAX_FIELDS: usize = 8;

/// A partition pass: the packed-key layout and the sets it counts.
pub(super) struct Plan {
    /// The dimensions packed into a key, the first in the highest bits.
    dims: Vec<usize>,
    /// Each packed dimension's field width.
    widths: Vec<u32>,
    /// Where `a` is among `dims`, and the shift of its field in a key.
    at: usize,
    a_shift: u32,
    /// Key bits in all.
    pub(super) bits: u32,
    /// Per set, which of `dims` it holds (bit `i` for `dims[i]`).
    fields: Vec<u64>,
    /// Whether `dims` are every dimension in increasing order (when they pack
    /// into 64 bits): the same layout whatever `a` and the sets, so that a
    /// pass scatters the last pass's keys (8 bytes an entry, in one read)
    /// rather than the input (8 bytes a coordinate, read twice).
    full: bool,
}

impl Plan {
    pub(super) fn new(shape: &[u64], a: usize, sets: &[Dims]) -> Self {
        let union = sets.iter().fold(0, |u, &s| u | s);
        let full = shape.iter().map(|&e| bits_below(e)).sum::<u32>() <= 64;
        let dims: Vec<usize> = if full {
            (0..shape.len()).collect()
        } else {
            std::iter::once(a).chain(dims_of(union).filter(|&d| d != a)).collect()
        };
        let widths: Vec<u32> = dims.iter().map(|&d| bits_below(shape[d])).collect();
        let fields = sets
            .iter()
            .map(|&set| {
                dims.iter().enumerate().filter(|&(_, &d)| set >> d & 1 == 1).fold(0, |m, (i, _)| m | 1 << i)
            })
            .collect();
        let at = dims.iter().position(|&d| d == a).unwrap_or(0);
        let a_shift = widths[at + 1..].iter().sum();
        Self { bits: widths.iter().sum(), dims, widths, at, a_shift, fields, full }
    }

    /// Per set, the mask of its fields in a key: `key & mask` is its projection.
    fn masks<K: PackedKey>(&self) -> Vec<K> {
        let field =
            |fields: u64, i: usize| if fields >> i & 1 == 1 { K::ones(self.widths[i]) } else { K::default() };
        let mask = |&fields: &u64| {
            (0..self.dims.len()).fold(K::default(), |m, i| m.shl_or(self.widths[i], field(fields, i)))
        };
        self.fields.iter().map(mask).collect()
    }

    /// Scatters the keys into buckets by `a`'s top bits, then counts each set's
    /// distinct masked keys per bucket and adds them up.
    pub(super) fn run<K: PackedKey>(
        &self,
        source: &Source<'_>,
        arrays: &mut KeyArrays,
        parallel: bool,
    ) -> Vec<u64> {
        // Fewer buckets for fewer entries: a bucket of a few thousand keys
        // fills its table well; no more than `a`'s bits, so that a bucket
        // holds whole groups of equal `a`.
        let want = usize::BITS - (source.len / BUCKET_ENTRIES).leading_zeros();
        let bucket_bits = self.widths[self.at].min(BUCKET_BITS).min(want);
        let by =
            Buckets { shift: self.a_shift + self.widths[self.at] - bucket_bits, count: 1 << bucket_bits };
        let reuse = self.full && arrays.full;
        arrays.full = self.full;
        let (keys, mut spare) = K::arrays(arrays);
        let input = Input { plan: self, source };
        let starts = match spare.as_mut() {
            Some(spare) if self.full => {
                // The last pass's keys, or the input's packed in input order
                // (the input read once): scattered, then free to split big
                // buckets into.
                if reuse {
                    std::mem::swap(keys, *spare);
                } else {
                    pack(&input, spare, parallel);
                }
                by.scatter(keys, parallel, &spare[..])
            }
            _ => by.scatter(keys, parallel, &input),
        };
        let keys = &keys[..];
        let masks = self.masks::<K>();
        // Each thread's bitmap stays within 2 bytes per entry (a key takes 8).
        let local_bits = LOCAL_BITS.min((16 * source.len).max(1 << 12).ilog2());
        let locals: Vec<Option<Local>> =
            self.fields.iter().map(|&f| self.local(f, bucket_bits, local_bits)).collect();
        let count = |scratch: &mut Scratch<K>, (range, spare): (Range<usize>, &mut [K])| -> Vec<u64> {
            let keys = &keys[range];
            let mut count = |(&m, local): (&K, &Option<Local>)| match local {
                Some(local) => scratch.local_count(keys, local),
                None => scratch.distinct(keys, m, spare),
            };
            masks.iter().zip(&locals).map(&mut count).collect()
        };
        let buckets = bucket_slices(&starts, spare);
        let per_bucket: Vec<Vec<u64>> = if parallel {
            buckets.into_par_iter().map_init(Scratch::default, count).collect()
        } else {
            let mut scratch = Scratch::default();
            buckets.into_iter().map(|b| count(&mut scratch, b)).collect()
        };
        (0..masks.len()).map(|s| per_bucket.iter().map(|c| c[s]).sum()).collect()
    }

    /// The bucket-local cells of the set of `fields` (bit `i` for `dims[i]`,
    /// which holds `dims[at]`), if at most `2^most_bits`: the set's fields
    /// of a key side by side, `a`'s without the top `bucket_bits`, which
    /// are the bucket's.
    fn local(&self, fields: u64, bucket_bits: u32, most_bits: u32) -> Option<Local> {
        let mut shift = self.bits;
        let mut local = Local { fields: Vec::new(), bits: 0 };
        for (i, &width) in self.widths.iter().enumerate() {
            shift -= width;
            let width = if i == self.at { width - bucket_bits } else { width };
            if fields >> i & 1 == 1 && width > 0 {
                // Fields side by side in the key take one step.
                match local.fields.last_mut() {
                    Some(last) if last.0 == shift + width => *last = (shift, last.1 + width),
                    _ => local.fields.push((shift, width)),
                }
                local.bits += width;
            }
        }
        (local.bits <= most_bits && local.fields.len() <= MAX_FIELDS).then_some(local)
    }
}

/// What a pass scatters: keys packed from the input, or the last pass's.
trait Keys<K: PackedKey>: Sync {
    fn len(&self) -> usize;
    /// Calls `f` with the key of every entry of `range`.
    fn each(&self, range: Range<usize>, f: impl FnMut(K));
    /// Calls `f` with the bucket of every entry of `range`.
    fn each_bucket(&self, range: Range<usize>, by: &Buckets, mut f: impl FnMut(usize)) {
        self.each(range, |k| f(by.of(k)));
    }
}

impl<K: PackedKey> Keys<K> for [K] {
    fn len(&self) -> usize {
        <[K]>::len(self)
    }
    #[inline(always)]
    fn each(&self, range: Range<usize>, f: impl FnMut(K)) {
        self[range].iter().copied().for_each(f);
    }
}

/// The input's entries, packed by a plan.
struct Input<'p, 's> {
    plan: &'p Plan,
    source: &'p Source<'s>,
}

impl<K: PackedKey> Keys<K> for Input<'_, '_> {
    fn len(&self) -> usize {
        self.source.len
    }
    #[inline(always)]
    fn each(&self, range: Range<usize>, mut f: impl FnMut(K)) {
        let widths = &self.plan.widths;
        project(self.source, &self.plan.dims, range, |_, c| {
            f(c.iter().zip(widths).fold(K::default(), |k, (&c, &w)| k.shl_or(w, K::from_u64(c))))
        });
    }
    /// Reads `a`'s coordinates alone.
    fn each_bucket(&self, range: Range<usize>, by: &Buckets, mut f: impl FnMut(usize)) {
        let shift = by.shift - self.plan.a_shift;
        project(self.source, &self.plan.dims[self.plan.at..=self.plan.at], range, |_, c| {
            f(c[0].checked_shr(shift).unwrap_or(0) as usize & (by.count - 1))
        });
    }
}

/// The buckets of a pass: `key >> shift`, of `count` (a power of two).
struct Buckets {
    shift: u32,
    count: usize,
}

impl Buckets {
    #[inline(always)]
    fn of<K: PackedKey>(&self, key: K) -> usize {
        key.shr64(self.shift) as usize & (self.count - 1)
    }

    /// Every key of `from` written into `keys`, grouped into buckets; bucket
    /// `b` is `keys[starts[b]..starts[b + 1]]`. Chunks of keys count their
    /// buckets, then write into disjoint sub-slices, in parallel.
    fn scatter<K: PackedKey>(
        &self,
        keys: &mut Vec<K>,
        parallel: bool,
        from: &(impl Keys<K> + ?Sized),
    ) -> Vec<usize> {
        let chunks = chunks(from.len(), parallel);
        let count = |range: &Range<usize>| {
            let mut counts = vec![0usize; self.count];
            from.each_bucket(range.clone(), self, |b| counts[b] += 1);
            counts
        };
        let counts: Vec<Vec<usize>> = if parallel {
            chunks.par_iter().map(count).collect()
        } else {
            chunks.iter().map(count).collect()
        };
        let mut starts = vec![0usize; self.count + 1];
        for b in 0..self.count {
            starts[b + 1] = starts[b] + counts.iter().map(|c| c[b]).sum::<usize>();
        }
        if keys.len() != from.len() {
            // Zeroed by the allocator, not written twice (a kept array of the
            // right length is overwritten as it is).
            *keys = vec![K::default(); from.len()];
        }
        // Each chunk's sub-slice of every bucket, chunk after chunk within a bucket.
        let mut parts: Vec<Vec<&mut [K]>> = chunks.iter().map(|_| Vec::with_capacity(self.count)).collect();
        let mut rest = &mut keys[..];
        for b in 0..self.count {
            for (chunk, part) in counts.iter().zip(&mut parts) {
                let (mine, tail) = std::mem::take(&mut rest).split_at_mut(chunk[b]);
                part.push(mine);
                rest = tail;
            }
        }
        let write = |(range, part): (Range<usize>, Vec<&mut [K]>)| {
            let mut slots: Vec<_> = part.into_iter().map(|p| p.iter_mut()).collect();
            from.each(range, |key| {
                if let Some(slot) = slots[self.of(key)].next() {
                    *slot = key;
                }
            });
        };
        if parallel {
            chunks.into_par_iter().zip(parts).for_each(write);
        } else {
            chunks.into_iter().zip(parts).for_each(write);
        }
        starts
    }
}

/// Every key of `from` into `keys`, in order.
fn pack<K: PackedKey>(from: &impl Keys<K>, keys: &mut Vec<K>, parallel: bool) {
    if keys.len() != from.len() {
        *keys = vec![K::default(); from.len()];
    }
    let chunks = chunks(from.len(), parallel);
    let mut parts = Vec::with_capacity(chunks.len());
    let mut rest = &mut keys[..];
    for range in &chunks {
        let (mine, tail) = std::mem::take(&mut rest).split_at_mut(range.len());
        parts.push(mine);
        rest = tail;
    }
    let write = |(range, part): (Range<usize>, &mut [K])| {
        let mut slots = part.iter_mut();
        from.each(range, |key| {
            if let Some(slot) = slots.next() {
                *slot = key;
            }
        });
    };
    if parallel {
        chunks.into_par_iter().zip(parts).for_each(write);
    } else {
        chunks.into_iter().zip(parts).for_each(write);
    }
}

/// The ranges of the buckets of `starts`, each with its own slice of `spare`
/// (empty without one long enough).
fn bucket_slices<'s, K>(starts: &[usize], spare: Option<&'s mut Vec<K>>) -> Vec<(Range<usize>, &'s mut [K])> {
    let mut rest: &mut [K] = match spare {
        Some(spare) if spare.len() >= starts.last().copied().unwrap_or(0) => spare,
        _ => &mut [],
    };
    let mut buckets = Vec::with_capacity(starts.len());
    for w in starts.windows(2) {
        let (mine, tail) = std::mem::take(&mut rest).split_at_mut((w[1] - w[0]).min(rest.len()));
        buckets.push((w[0]..w[1], mine));
        rest = tail;
    }
    buckets
}

/// Where a set's projection of a key lies among a bucket's cells.
struct Local {
    /// `(shift, width)` of each of the set's fields in a key, highest first.
    fields: Vec<(u32, u32)>,
    /// Bits of a cell.
    bits: u32,
}

impl Local {
    /// `(shift, mask, shift)` of each field: from the key, and into the cell.
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
struct Scratch<K> {
    table: Vec<K>,
    split: Vec<K>,
    starts: Vec<usize>,
    /// All zero between buckets.
    bitmap: Vec<u64>,
}

impl<K> Default for Scratch<K> {
    fn default() -> Self {
        Self { table: Vec::new(), split: Vec::new(), starts: Vec::new(), bitmap: Vec::new() }
    }
}

impl<K: PackedKey> Scratch<K> {
    /// The number of distinct cells of `keys` by a bit per cell, cleared
    /// again after: whole when no bigger than the keys, else word by word.
    fn local_count(&mut self, keys: &[K], local: &Local) -> u64 {
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
        let words = (1usize << local.bits).div_ceil(64);
        if self.bitmap.len() < words {
            // A fresh zeroed allocation, its pages mapped as bits touch them:
            // a thread's scratch can be made several times a pass, and
            // `resize` would write all of an 8 MiB bitmap each time.
            self.bitmap = vec![0; words];
        }
        let map = &mut self.bitmap[..words];
        let mut count = 0u64;
        for &k in keys {
            let cell = cell_of(k, &steps);
            let (word, bit) = (cell >> 6, 1u64 << (cell & 63));
            count += u64::from(map[word] & bit == 0);
            map[word] |= bit;
        }
        if words <= keys.len() {
            map.fill(0);
        } else {
            for &k in keys {
                map[cell_of(k, &steps) >> 6] = 0;
            }
        }
        count
    }

    /// The number of distinct `key & mask` over `keys`. A bucket too big for
    /// one table in cache is split by hash into parts that each fit one.
    /// The split goes into `spare` when it holds the keys (a slice of the
    /// spare key array), else into a buffer of this thread's.
    fn distinct(&mut self, keys: &[K], mask: K, spare: &mut [K]) -> u64 {
        if keys.len() <= TABLE_KEYS {
            return self.table_count(keys.iter().map(|&k| (k & mask).premix()), keys.len(), 0);
        }
        let part_bits = usize::BITS - (keys.len() / TABLE_KEYS).leading_zeros();
        let part = |v: K| (v.spread() >> (64 - part_bits)) as usize;
        let (mut buffer, mut starts) = (std::mem::take(&mut self.split), std::mem::take(&mut self.starts));
        starts.clear();
        starts.resize((1 << part_bits) + 1, 0);
        // `premix` twice rather than a third array of keys: memory stays at
        // the keys and one copy, however big the bucket.
        for &k in keys {
            starts[part((k & mask).premix()) + 1] += 1;
        }
        for p in 0..1 << part_bits {
            starts[p + 1] += starts[p];
        }
        let split = if spare.len() >= keys.len() {
            spare
        } else {
            buffer.clear();
            buffer.resize(keys.len(), K::default());
            &mut buffer[..]
        };
        // `starts[p]` moves through part `p` as it fills, ending at part `p + 1`'s start.
        for &k in keys {
            let v = (k & mask).premix();
            let p = part(v);
            split[starts[p]] = v;
            starts[p] += 1;
        }
        let mut from = 0;
        let mut total = 0;
        for &to in &starts[..1 << part_bits] {
            total += self.table_count(split[from..to].iter().copied(), to - from, part_bits);
            from = to;
        }
        (self.split, self.starts) = (buffer, starts);
        total
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

/// Splits `0..n` into chunks: one when not `parallel`, else a few per thread.
pub(super) fn chunks(n: usize, parallel: bool) -> Vec<Range<usize>> {
    let count = if parallel { (n / MIN_CHUNK).clamp(1, 4 * rayon::current_num_threads()) } else { 1 };
    (0..count).map(|c| c * n / count..(c + 1) * n / count).collect()
}
