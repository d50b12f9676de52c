//! Counting `D(S)`, the number of distinct projections of the entries onto a
//! set `S` of dimensions, for `ModeOrderPolicy::Auto` (see `order.rs`): `n_L` of an
//! order is `D` of the set of its first `L + 1` dimensions.
//!
//! Two exact methods, chosen per set by what it costs:
//! - **bitmap**, when the set's cells (the product of its extents) are few:
//!   one scan of the entries setting a bit per cell, then a popcount. A scan
//!   costs a fraction of a sort, and scans of different sets run in parallel.
//! - **partition pass** for the other sets: the entries' packed coordinates
//!   are scattered into buckets by the coordinate of one dimension `a` (its
//!   top bits), so that every group of entries sharing `a`'s coordinate lies
//!   in one bucket. For every set that contains `a`, projections in different
//!   buckets then differ, and `D(S)` is the sum over buckets of the distinct
//!   masked keys in each, counted with a small hash table in cache. One
//!   scatter serves every set that contains `a`, where a sort per set (as
//!   `Auto` did before) pays the scatter once per set.
//!
//! Memory, all freed before the build proper: bitmaps in flight stay within
//! 16 bytes per entry; a pass holds one key per entry (8 or 16 bytes) plus,
//! per thread, a table of at most 1 MiB and, for a bucket too big for one
//! table, a copy of its keys. That is at most two key arrays, what the sort
//! per set that `Auto` ran before held.

use std::collections::HashMap;
use std::ops::{BitAnd, BitOr, Range};

use rayon::prelude::*;

use crate::{Indices, Source};

/// A set of dimensions: bit `d` stands for dimension `d`.
pub(crate) type Dims = u64;

/// The dimensions of `set`, in increasing order.
pub(crate) fn dims_of(set: Dims) -> impl Iterator<Item = usize> {
    (0..64).filter(move |&d| set >> d & 1 == 1)
}

/// Bits that hold every coordinate below `extent`.
fn bits_below(extent: u64) -> u32 {
    64 - extent.saturating_sub(1).leading_zeros()
}

/// The largest bitmap (in bits) worth a scan: 8 MiB. Above that, each bit set
/// misses the caches, and a partition pass is cheaper per entry.
const DENSE_BITS: u64 = 1 << 26;
/// The bitmaps one scan fills, in bits (1 MiB: within L2). A bigger bitmap
/// takes a scan of its own.
const SCAN_BITS: u64 = 1 << 23;
/// Entries per block of a bitmap scan: 64 KiB of rank-4 coordinates, which
/// stay in L2 while each set of the scan reads them.
const SCAN_BLOCK: usize = 2048;
/// Bitmap bits allowed per entry, over all bitmaps in flight (16 bytes).
const BITS_PER_ENTRY: u64 = 128;
/// Bitmap bits always allowed, however few the entries (512 bytes: zeroing
/// and counting a bigger bitmap would cost more than hashing a few entries).
const MIN_BITS: u64 = 1 << 12;
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
/// The smallest chunk of input worth a parallel task.
const MIN_CHUNK: usize = 1 << 15;

/// Distinct-projection counts, exact, computed on demand and kept.
pub(crate) struct Counter<'a> {
    source: &'a Source<'a>,
    parallel: bool,
    known: HashMap<Dims, u64>,
    /// The partition passes' key arrays, kept from pass to pass: a fresh
    /// array of 10M keys costs 20k page faults, a third of its scatter.
    keys: KeyArrays,
}

impl<'a> Counter<'a> {
    pub(crate) fn new(source: &'a Source<'a>, parallel: bool) -> Self {
        // Handing small inputs to the thread pool costs more than it saves.
        let parallel = parallel && source.len >= MIN_CHUNK;
        Self { source, parallel, known: HashMap::new(), keys: KeyArrays::default() }
    }

    /// `D(set)` if it has been counted.
    pub(crate) fn get(&self, set: Dims) -> Option<u64> {
        if set == 0 {
            return Some(u64::from(self.source.len > 0));
        }
        self.known.get(&set).copied()
    }

    /// The extents of the dimensions.
    pub(crate) fn extents(&self) -> &[u64] {
        self.source.shape
    }

    /// The number of entries (an upper bound of every `D`).
    pub(crate) fn entries(&self) -> u64 {
        self.source.len as u64
    }

    /// The number of cells of `set` (the product of its extents), if it fits `u64`.
    fn cells(&self, set: Dims) -> Option<u64> {
        dims_of(set).try_fold(1u64, |p, d| p.checked_mul(self.source.shape[d]))
    }

    /// Whether `set` is counted by a bitmap scan.
    pub(crate) fn is_dense(&self, set: Dims) -> bool {
        let budget = BITS_PER_ENTRY.saturating_mul(self.entries()).max(MIN_BITS);
        self.cells(set).is_some_and(|c| c <= DENSE_BITS.min(budget))
    }

    /// Counts every set of `sets` (all dense) by bitmaps. One scan of the
    /// entries fills the bitmaps of several sets (reading the input is what
    /// a scan costs), and scans run in parallel, in waves whose bitmaps
    /// together stay within the memory budget.
    pub(crate) fn count_dense(&mut self, sets: &[Dims]) {
        debug_assert!(sets.iter().all(|&s| self.is_dense(s)));
        // The bitmaps' memory budget is the key array's: let it go first.
        self.keys = KeyArrays::default();
        let cells = |set: Dims| self.cells(set).unwrap_or(0);
        let mut todo: Vec<Dims> = sets.iter().copied().filter(|&s| self.get(s).is_none()).collect();
        todo.sort_unstable_by_key(|&s| (std::cmp::Reverse(cells(s)), s));
        todo.dedup();
        // Enough scans to keep each one's bitmaps in cache and every thread busy.
        let total: u64 = todo.iter().map(|&s| cells(s)).sum();
        let threads = if self.parallel { rayon::current_num_threads() } else { 1 };
        let count = (total.div_ceil(SCAN_BITS) as usize).max(threads).min(todo.len());
        let mut scans: Vec<(u64, Vec<Dims>)> = vec![(0, Vec::new()); count];
        for set in todo {
            // The biggest sets first, each to the scan with the fewest bits so far.
            if let Some(scan) = scans.iter_mut().min_by_key(|(bits, _)| *bits) {
                scan.0 += cells(set);
                scan.1.push(set);
            }
        }
        let budget = BITS_PER_ENTRY.saturating_mul(self.entries()).max(MIN_BITS);
        while !scans.is_empty() {
            let (mut wave, mut bits) = (0, 0);
            while wave < scans.len() && (wave == 0 || bits + scans[wave].0 <= budget) {
                bits += scans[wave].0;
                wave += 1;
            }
            let counted: Vec<Vec<(Dims, u64)>> = if self.parallel {
                scans[..wave].par_iter().map(|(_, sets)| self.bitmaps(sets)).collect()
            } else {
                scans[..wave].iter().map(|(_, sets)| self.bitmaps(sets)).collect()
            };
            self.known.extend(counted.into_iter().flatten());
            scans.drain(..wave);
        }
    }

    /// `D` of each of `sets` by one scan that sets a bit per cell in each
    /// set's bitmap. The scan goes block by block: each block of entries is
    /// read from memory once, then stays in cache while every set takes it.
    fn bitmaps(&self, sets: &[Dims]) -> Vec<(Dims, u64)> {
        let mut maps: Vec<Bitmap> = sets.iter().map(|&set| Bitmap::new(self.source.shape, set)).collect();
        for start in (0..self.source.len).step_by(SCAN_BLOCK) {
            let block = start..(start + SCAN_BLOCK).min(self.source.len);
            for map in &mut maps {
                map.fill(self.source, block.clone());
            }
        }
        maps.iter().map(|map| (map.set, map.words.iter().map(|w| u64::from(w.count_ones())).sum())).collect()
    }

    /// Counts every set of `sets` (each contains dimension `a`) in one
    /// partition pass by `a`; in more than one when their coordinates do not
    /// pack into 128 bits together, and by comparison sorts for a set whose
    /// own coordinates do not.
    pub(crate) fn count_pass(&mut self, a: usize, sets: &[Dims]) {
        let bits = |set: Dims| dims_of(set).map(|d| bits_below(self.source.shape[d])).sum::<u32>();
        let mut todo: Vec<Dims> = sets.iter().copied().filter(|&s| self.get(s).is_none()).collect();
        debug_assert!(todo.iter().all(|&s| s >> a & 1 == 1));
        todo.sort_unstable_by_key(|&s| (bits(s), s));
        todo.dedup();
        while let Some(&first) = todo.first() {
            if bits(first) > 128 {
                let counted: Vec<u64> = todo.iter().map(|&set| by_comparison(self.source, set)).collect();
                self.known.extend(todo.into_iter().zip(counted));
                return;
            }
            // The smallest sets first, as many as pack into one key.
            let mut union = 0;
            let (group, rest): (Vec<Dims>, Vec<Dims>) = todo.iter().partition(|&&s| {
                let fits = bits(union | s) <= 128;
                if fits {
                    union |= s;
                }
                fits
            });
            let plan = Plan::new(self.source.shape, a, &group);
            let counts = match plan.bits {
                0..=64 => plan.run::<u64>(self.source, &mut self.keys, self.parallel),
                _ => plan.run::<u128>(self.source, &mut self.keys, self.parallel),
            };
            self.known.extend(group.into_iter().zip(counts));
            todo = rest;
        }
    }
}

/// A dense set's bitmap: a bit per cell, the cell of an entry in mixed
/// radix (exact whatever the extents).
struct Bitmap {
    set: Dims,
    dims: Vec<usize>,
    strides: [u64; 64],
    words: Vec<u64>,
}

impl Bitmap {
    fn new(shape: &[u64], set: Dims) -> Self {
        let dims: Vec<usize> = dims_of(set).collect();
        // A dense set's cells fit `u64`, but with an extent of 0 (and so no
        // entries) a partial product of the others may not: saturate, the
        // strides are then never used.
        let product = |dims: &[usize]| dims.iter().map(|&d| shape[d]).fold(1, u64::saturating_mul);
        let mut strides = [0u64; 64];
        for (i, stride) in strides.iter_mut().enumerate().take(dims.len()) {
            *stride = product(&dims[i + 1..]);
        }
        let cells = product(&dims);
        Self { set, dims, strides, words: vec![0u64; cells.div_ceil(64) as usize] }
    }

    /// Sets the bits of the entries of `range`.
    fn fill(&mut self, source: &Source<'_>, range: Range<usize>) {
        // Fixed widths for the common sizes: the loop over dimensions unrolls.
        match self.dims.len() {
            1 => self.fill_with::<1>(source, range),
            2 => self.fill_with::<2>(source, range),
            3 => self.fill_with::<3>(source, range),
            4 => self.fill_with::<4>(source, range),
            _ => self.fill_with::<0>(source, range),
        }
    }

    /// `fill` for sets of `N` dimensions (`N = 0`: any number).
    fn fill_with<const N: usize>(&mut self, source: &Source<'_>, range: Range<usize>) {
        let k = if N == 0 { self.dims.len() } else { N };
        let (strides, words) = (&self.strides, &mut self.words);
        project(source, &self.dims, range, |_, c| {
            let cell = (0..k).map(|i| c[i] * strides[i]).sum::<u64>() as usize;
            words[cell >> 6] |= 1 << (cell & 63);
        });
    }
}

/// Calls `f(entry, coords)` for every entry of `range`, where `coords[i]` is
/// the entry's coordinate of dimension `dims[i]`.
#[inline(always)]
fn project(source: &Source<'_>, dims: &[usize], range: Range<usize>, mut f: impl FnMut(usize, &[u64])) {
    let mut c = [0u64; 64];
    let k = dims.len();
    match source.indices {
        Indices::RowMajor(flat) => {
            let rank = source.shape.len();
            let rows = flat[range.start * rank..range.end * rank].chunks_exact(rank);
            for (entry, row) in range.zip(rows) {
                for (c, &d) in c.iter_mut().zip(dims) {
                    *c = row[d];
                }
                f(entry, &c[..k]);
            }
        }
        Indices::Columnar(cols) => {
            for entry in range {
                for (c, &d) in c.iter_mut().zip(dims) {
                    *c = cols[d][entry];
                }
                f(entry, &c[..k]);
            }
        }
    }
}

/// `D(set)` by a comparison sort of the entries: for projections wider than
/// 128 bits (extents near `u64::MAX`), which no packed key holds.
fn by_comparison(source: &Source<'_>, set: Dims) -> u64 {
    let dims: Vec<usize> = dims_of(set).collect();
    let tuple = |e: usize| dims.iter().map(move |&d| source.coord(e, d));
    let mut entries: Vec<usize> = (0..source.len).collect();
    entries.sort_unstable_by(|&x, &y| tuple(x).cmp(tuple(y)));
    let distinct = entries.windows(2).filter(|w| tuple(w[0]).ne(tuple(w[1]))).count();
    (distinct + usize::from(!entries.is_empty())) as u64
}

/// An unsigned packed key: `u64`, or `u128` for wider projections.
trait PackedKey:
    Copy + Eq + Send + Sync + Default + BitOr<Output = Self> + BitAnd<Output = Self> + 'static
{
    /// The empty slot of a hash table (a key can equal it: see `Scratch::table_count`).
    const EMPTY: Self;
    /// `self << shift | v`.
    fn shl_or(self, shift: u32, v: Self) -> Self;
    fn from_u64(v: u64) -> Self;
    /// The low `bits` bits set.
    fn ones(bits: u32) -> Self;
    /// A one-to-one map that spreads the bits (so distinct keys stay
    /// distinct): computed once per key, before the key is counted.
    fn premix(self) -> Self;
    /// 64 well-spread bits of a premixed key, to pick a part and a slot.
    fn spread(self) -> u64;
    /// The kept array for keys of this type.
    fn array(arrays: &mut KeyArrays) -> &mut Vec<Self>;
}

/// Key arrays of both widths, reused by the passes of one `Counter`.
#[derive(Default)]
struct KeyArrays {
    narrow: Vec<u64>,
    wide: Vec<u128>,
}

impl PackedKey for u64 {
    const EMPTY: Self = u64::MAX;
    #[inline]
    fn shl_or(self, shift: u32, v: Self) -> Self {
        self.checked_shl(shift).unwrap_or(0) | v
    }
    #[inline]
    fn from_u64(v: u64) -> Self {
        v
    }
    fn ones(bits: u32) -> Self {
        u64::MAX.checked_shr(64 - bits).unwrap_or(0)
    }
    /// MurmurHash3's finaliser, a bijection: packed coordinates are far from
    /// random (masked fields are zero, the rest small).
    #[inline]
    fn premix(self) -> Self {
        let mut h = self ^ (self >> 33);
        h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
        h ^= h >> 33;
        h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
        h ^ (h >> 33)
    }
    #[inline]
    fn spread(self) -> u64 {
        self
    }
    fn array(arrays: &mut KeyArrays) -> &mut Vec<Self> {
        arrays.wide = Vec::new(); // one key array at a time
        &mut arrays.narrow
    }
}

impl PackedKey for u128 {
    const EMPTY: Self = u128::MAX;
    #[inline]
    fn shl_or(self, shift: u32, v: Self) -> Self {
        self.checked_shl(shift).unwrap_or(0) | v
    }
    #[inline]
    fn from_u64(v: u64) -> Self {
        u128::from(v)
    }
    fn ones(bits: u32) -> Self {
        u128::MAX.checked_shr(128 - bits).unwrap_or(0)
    }
    /// No cheap bijection mixes 128 bits as well: `spread` hashes instead.
    #[inline]
    fn premix(self) -> Self {
        self
    }
    #[inline]
    fn spread(self) -> u64 {
        ((self as u64) ^ ((self >> 64) as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15)).premix()
    }
    fn array(arrays: &mut KeyArrays) -> &mut Vec<Self> {
        arrays.narrow = Vec::new(); // one key array at a time
        &mut arrays.wide
    }
}

/// A partition pass: the packed-key layout and the sets it counts.
struct Plan {
    /// The dimensions packed into a key, `a` first (in the highest bits).
    dims: Vec<usize>,
    /// Each packed dimension's field width.
    widths: Vec<u32>,
    /// Key bits in all.
    bits: u32,
    /// Per set, which of `dims` it holds (bit `i` for `dims[i]`).
    fields: Vec<u64>,
}

impl Plan {
    fn new(shape: &[u64], a: usize, sets: &[Dims]) -> Self {
        let union = sets.iter().fold(0, |u, &s| u | s);
        let dims: Vec<usize> = std::iter::once(a).chain(dims_of(union).filter(|&d| d != a)).collect();
        let widths: Vec<u32> = dims.iter().map(|&d| bits_below(shape[d])).collect();
        let fields = sets
            .iter()
            .map(|&set| {
                dims.iter().enumerate().filter(|&(_, &d)| set >> d & 1 == 1).fold(0, |m, (i, _)| m | 1 << i)
            })
            .collect();
        Self { bits: widths.iter().sum(), dims, widths, fields }
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
    fn run<K: PackedKey>(&self, source: &Source<'_>, arrays: &mut KeyArrays, parallel: bool) -> Vec<u64> {
        // Fewer buckets for fewer entries: a bucket of a few thousand keys
        // fills its table well; no more than `a`'s bits, so that a bucket
        // holds whole groups of equal `a`.
        let want = usize::BITS - (source.len / BUCKET_ENTRIES).leading_zeros();
        let bucket_bits = self.widths[0].min(BUCKET_BITS).min(want);
        let shift = self.widths[0] - bucket_bits;
        let keys = K::array(arrays);
        let starts = self.scatter::<K>(source, keys, shift, 1 << bucket_bits, parallel);
        let keys = &keys[..];
        let masks = self.masks::<K>();
        let ranges: Vec<Range<usize>> = starts.windows(2).map(|w| w[0]..w[1]).collect();
        let count = |scratch: &mut Scratch<K>, range: Range<usize>| -> Vec<u64> {
            masks.iter().map(|&m| scratch.distinct(&keys[range.clone()], m)).collect()
        };
        let per_bucket: Vec<Vec<u64>> = if parallel {
            ranges.into_par_iter().map_init(Scratch::default, count).collect()
        } else {
            let mut scratch = Scratch::default();
            ranges.into_iter().map(|r| count(&mut scratch, r)).collect()
        };
        (0..masks.len()).map(|s| per_bucket.iter().map(|c| c[s]).sum()).collect()
    }

    /// Every entry's packed key, grouped into buckets by `coord(a) >> shift`;
    /// bucket `b` is `keys[starts[b]..starts[b + 1]]`. Chunks of entries count
    /// their buckets, then write into disjoint sub-slices, in parallel.
    fn scatter<K: PackedKey>(
        &self,
        source: &Source<'_>,
        keys: &mut Vec<K>,
        shift: u32,
        buckets: usize,
        parallel: bool,
    ) -> Vec<usize> {
        let chunks = chunks(source.len, parallel);
        let count = |range: &Range<usize>| {
            let mut counts = vec![0usize; buckets];
            project(source, &self.dims[..1], range.clone(), |_, c| {
                counts[c[0].checked_shr(shift).unwrap_or(0) as usize] += 1
            });
            counts
        };
        let counts: Vec<Vec<usize>> = if parallel {
            chunks.par_iter().map(count).collect()
        } else {
            chunks.iter().map(count).collect()
        };
        let mut starts = vec![0usize; buckets + 1];
        for b in 0..buckets {
            starts[b + 1] = starts[b] + counts.iter().map(|c| c[b]).sum::<usize>();
        }
        keys.clear();
        keys.resize(source.len, K::default());
        // Each chunk's sub-slice of every bucket, chunk after chunk within a bucket.
        let mut parts: Vec<Vec<&mut [K]>> = chunks.iter().map(|_| Vec::with_capacity(buckets)).collect();
        let mut rest = &mut keys[..];
        for b in 0..buckets {
            for (chunk, part) in counts.iter().zip(&mut parts) {
                let (mine, tail) = std::mem::take(&mut rest).split_at_mut(chunk[b]);
                part.push(mine);
                rest = tail;
            }
        }
        let write = |(range, part): (Range<usize>, Vec<&mut [K]>)| {
            let mut slots: Vec<_> = part.into_iter().map(|p| p.iter_mut()).collect();
            project(source, &self.dims, range, |_, c| {
                let key =
                    c.iter().zip(&self.widths).fold(K::default(), |k, (&c, &w)| k.shl_or(w, K::from_u64(c)));
                if let Some(slot) = slots[c[0].checked_shr(shift).unwrap_or(0) as usize].next() {
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

/// One thread's hash table and split buffer, reused from bucket to bucket.
struct Scratch<K> {
    table: Vec<K>,
    split: Vec<K>,
    starts: Vec<usize>,
}

impl<K> Default for Scratch<K> {
    fn default() -> Self {
        Self { table: Vec::new(), split: Vec::new(), starts: Vec::new() }
    }
}

impl<K: PackedKey> Scratch<K> {
    /// The number of distinct `key & mask` over `keys`. A bucket too big for
    /// one table in cache is split by hash into parts that each fit one.
    fn distinct(&mut self, keys: &[K], mask: K) -> u64 {
        if keys.len() <= TABLE_KEYS {
            return self.table_count(keys.iter().map(|&k| (k & mask).premix()), keys.len(), 0);
        }
        let part_bits = usize::BITS - (keys.len() / TABLE_KEYS).leading_zeros();
        let part = |v: K| (v.spread() >> (64 - part_bits)) as usize;
        let (mut split, mut starts) = (std::mem::take(&mut self.split), std::mem::take(&mut self.starts));
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
        split.clear();
        split.resize(keys.len(), K::default());
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
        (self.split, self.starts) = (split, starts);
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
            loop {
                let slot = self.table[i];
                if slot == k {
                    break;
                }
                if slot == K::EMPTY {
                    self.table[i] = k;
                    count += 1;
                    break;
                }
                i = (i + 1) & (size - 1);
            }
        }
        count + u64::from(saw_empty)
    }
}

/// Splits `0..n` into chunks: one when not `parallel`, else a few per thread.
fn chunks(n: usize, parallel: bool) -> Vec<Range<usize>> {
    let count = if parallel { (n / MIN_CHUNK).clamp(1, 4 * rayon::current_num_threads()) } else { 1 };
    (0..count).map(|c| c * n / count..(c + 1) * n / count).collect()
}

#[cfg(test)]
mod tests;
