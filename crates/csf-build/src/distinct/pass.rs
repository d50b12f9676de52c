//! The partition pass: the entries' packed keys scattered into buckets by one
//! dimension's top bits, then each set's distinct masked keys counted per bucket.

use std::ops::{BitAnd, BitOr, Range};

use rayon::prelude::*;

use super::{bits_below, dims_of, project, Dims, MIN_CHUNK};
use crate::Source;

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
/// A set whose cells within one bucket number at most `2^LOCAL_BITS` (512
/// KiB of bitmap, within L2) is counted per bucket by a bitmap rather than a
/// hash table: a bit set costs a fraction of a probe.
const LOCAL_BITS: u32 = 22;

/// An unsigned packed key: `u64`, or `u128` for wider projections.
pub(super) trait PackedKey:
    Copy + Eq + Send + Sync + Default + BitOr<Output = Self> + BitAnd<Output = Self> + 'static
{
    /// The empty slot of a hash table (a key can equal it: see `Scratch::table_count`).
    const EMPTY: Self;
    /// `self << shift | v`.
    fn shl_or(self, shift: u32, v: Self) -> Self;
    fn from_u64(v: u64) -> Self;
    /// The low `bits` bits set.
    fn ones(bits: u32) -> Self;
    /// The 64 bits of `self` from bit `shift` up (`shift` below the width).
    fn low64(self, shift: u32) -> u64;
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
pub(super) struct KeyArrays {
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
    #[inline]
    fn low64(self, shift: u32) -> u64 {
        self >> shift
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
    #[inline]
    fn low64(self, shift: u32) -> u64 {
        (self >> shift) as u64
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
pub(super) struct Plan {
    /// The dimensions packed into a key, `a` first (in the highest bits).
    dims: Vec<usize>,
    /// Each packed dimension's field width.
    widths: Vec<u32>,
    /// Key bits in all.
    pub(super) bits: u32,
    /// Per set, which of `dims` it holds (bit `i` for `dims[i]`).
    fields: Vec<u64>,
}

impl Plan {
    pub(super) fn new(shape: &[u64], a: usize, sets: &[Dims]) -> Self {
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
        let bucket_bits = self.widths[0].min(BUCKET_BITS).min(want);
        let shift = self.widths[0] - bucket_bits;
        let keys = K::array(arrays);
        let starts = self.scatter::<K>(source, keys, shift, 1 << bucket_bits, parallel);
        let keys = &keys[..];
        let masks = self.masks::<K>();
        // Each thread's bitmap stays within 2 bytes per entry (a key takes 8).
        let local_bits = LOCAL_BITS.min((16 * source.len).max(1 << 12).ilog2());
        let locals: Vec<Option<Local>> =
            self.fields.iter().map(|&f| self.local(f, bucket_bits, local_bits)).collect();
        let ranges: Vec<Range<usize>> = starts.windows(2).map(|w| w[0]..w[1]).collect();
        let count = |scratch: &mut Scratch<K>, range: Range<usize>| -> Vec<u64> {
            let keys = &keys[range];
            let count = |(&m, local): (&K, &Option<Local>)| match local {
                Some(local) => scratch.local_count(keys, local),
                None => scratch.distinct(keys, m),
            };
            masks.iter().zip(&locals).map(count).collect()
        };
        let per_bucket: Vec<Vec<u64>> = if parallel {
            ranges.into_par_iter().map_init(Scratch::default, count).collect()
        } else {
            let mut scratch = Scratch::default();
            ranges.into_iter().map(|r| count(&mut scratch, r)).collect()
        };
        (0..masks.len()).map(|s| per_bucket.iter().map(|c| c[s]).sum()).collect()
    }

    /// The bucket-local cells of the set of `fields` (bit `i` for `dims[i]`,
    /// which holds `dims[0]`), if at most `2^most_bits`: the set's fields
    /// of a key side by side, `a`'s without the top `bucket_bits`, which
    /// are the bucket's.
    fn local(&self, fields: u64, bucket_bits: u32, most_bits: u32) -> Option<Local> {
        let mut shift = self.bits;
        let mut local = Local { fields: Vec::new(), bits: 0 };
        for (i, &width) in self.widths.iter().enumerate() {
            shift -= width;
            let width = if i == 0 { width - bucket_bits } else { width };
            if fields >> i & 1 == 1 && width > 0 {
                // Fields side by side in the key take one step.
                match local.fields.last_mut() {
                    Some(last) if last.0 == shift + width => *last = (shift, last.1 + width),
                    _ => local.fields.push((shift, width)),
                }
                local.bits += width;
            }
        }
        (local.bits <= most_bits).then_some(local)
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
            _ => self.local_count_with::<8>(keys, local), // at most 8 fields: `LOCAL_BITS / 3`
        }
    }

    /// `local_count` for at most `N` fields.
    fn local_count_with<const N: usize>(&mut self, keys: &[K], local: &Local) -> u64 {
        let steps = local.steps::<N>();
        let words = (1usize << local.bits).div_ceil(64);
        if self.bitmap.len() < words {
            self.bitmap.resize(words, 0);
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
pub(super) fn chunks(n: usize, parallel: bool) -> Vec<Range<usize>> {
    let count = if parallel { (n / MIN_CHUNK).clamp(1, 4 * rayon::current_num_threads()) } else { 1 };
    (0..count).map(|c| c * n / count..(c + 1) * n / count).collect()
}
