//! Sorting one bucket of the top-digit scatter (`sort.rs`), in cache.
//!
//! Keys alone ([`sort_slice`]: keys whose low bits hold the input position,
//! and the distinct-projection counts of `order.rs`) sort by LSD passes, or
//! by another MSD pass first when the bucket is too big for the cache.
//!
//! Keys with value slots ([`sort_with`]: the builder's keys that have no room
//! for a position, see `key.rs`) sort stably on their coordinate bits and
//! leave each key's slot beside it, so that the level writer reads the values
//! in order. A bucket of `n` keys is sorted as `u64` words holding the key's
//! bits below the top digit above a `log2(n)`-bit index into the bucket:
//! LSD passes over the words' top bits, as many as tell most of the bucket's
//! keys apart, then each run of words still equal there sorted on the rest;
//! then the keys and slots are written in that order. The index makes the
//! words unique, so any correct sort of them is stable on the keys; and it is
//! only as wide as the bucket needs (16 bits for a bucket that fits the
//! cache), where an input position took `log2(nnz)` bits of every key. So a
//! key of up to 57 coordinate bits (48 below a 9-bit top digit) sorts in
//! `u64` words even when its coordinates and input position together would
//! have needed `u128` (the "wide keys" of issue 13: 81 bits for 10M entries
//! over 500 x 5000 x 50000 x 500000). Buckets too big for the cache, or whose
//! bits do not fit a word beside the index, take an MSD pass first, into the
//! scratch, and their parts are sorted from there back into place.
//!
//! It also holds what the scatter shares with the bucket sorts: the top
//! digit's width ([`TOP_BITS`]) and the move of one value slot
//! ([`copy_slot`]). `sort.rs` uses this module; this module uses no part of it.

use crate::key::{bit_length_below, Key};

/// Bits of the top (MSD) digit: 512 buckets keep the scatter's write
/// streams (two per bucket with a payload) within the TLB's reach, and a
/// bucket of a 10M-key sort (160 KiB of keys) within L2 (docs/benchmarks-history.md,
/// "Figures behind constants", compares 1024 and 2048).
pub(crate) const TOP_BITS: u32 = 9;
/// The widest digit of a second MSD pass (see [`digit_bits`]).
const DIGIT_BITS: u32 = 11;
/// The keys per part that an MSD pass aims at on average, at the least:
/// skewed as the parts may be, most of them still fit [`CACHE_KEYS`].
const MSD_PART_KEYS: usize = 1 << 14;
/// The widest LSD digit: two passes of up to 12 bits beat three of 8 on
/// buckets of ~10k keys.
const LSD_BITS: u32 = 12;
/// Buckets up to this size take a comparison sort.
pub(crate) const SMALL: usize = 64;
/// Buckets up to this many keys are sorted by LSD passes; bigger ones by
/// another MSD pass first (the LSD passes then run in cache).
pub(crate) const CACHE_KEYS: usize = 1 << 16;

/// Reusable buffers of one thread.
pub(crate) struct Scratch<'s, K> {
    /// Where an MSD pass puts a big bucket (its keys and slots), before its
    /// parts are sorted back into place: in `spare` when it holds them.
    keys: Vec<K>,
    slots: Vec<u8>,
    /// Memory the caller has touched already and no longer needs (the
    /// packed keys, once scattered), of any contents: a big bucket's MSD
    /// pass writes there rather than into fresh pages, each of which costs
    /// a page fault and its zeroing (`Made::Spent`, `sort.rs`).
    spare: &'s mut [u64],
    work: Work<K>,
}

/// The buffers of a bucket that fits the cache.
struct Work<K> {
    /// A copy of the slots of a bucket sorted in place, read by the gather.
    slots: Vec<u8>,
    /// [`order`]'s words (sorted in the first), and its histograms.
    words: [Vec<u64>; 2],
    counts: Vec<u32>,
    /// Small buckets: (key, index) pairs.
    pairs: Vec<(K, u32)>,
}

impl<K> Default for Scratch<'_, K> {
    fn default() -> Self {
        Self::with_spare(&mut [])
    }
}

impl<'s, K> Scratch<'s, K> {
    /// Buffers that take a big bucket's MSD pass into `spare` when it holds it.
    pub(crate) fn with_spare(spare: &'s mut [u64]) -> Self {
        let work = Work {
            slots: Vec::new(),
            words: [Vec::new(), Vec::new()],
            counts: Vec::new(),
            pairs: Vec::new(),
        };
        Self { keys: Vec::new(), slots: Vec::new(), spare, work }
    }
}

/// `n` keys and `bytes` bytes of slots to write an MSD pass into: from
/// `spare` when it holds both (and is aligned for `K`), else `keys` and
/// `slots` grown to their sizes. Their contents are anything.
fn part_buffers<'a, K: Key>(
    spare: &'a mut [u64],
    (keys, slots): (&'a mut Vec<K>, &'a mut Vec<u8>),
    n: usize,
    bytes: usize,
) -> (&'a mut [K], &'a mut [u8]) {
    let key_words = n * (size_of::<K>() / 8);
    if key_words + bytes.div_ceil(8) <= spare.len() {
        let (key_words, slot_words) = spare.split_at_mut(key_words);
        if let Ok(keys) = bytemuck::try_cast_slice_mut::<u64, K>(key_words) {
            return (keys, &mut bytemuck::cast_slice_mut::<u64, u8>(slot_words)[..bytes]);
        }
    }
    keys.resize(n, K::default());
    slots.resize(bytes, 0);
    (&mut keys[..n], &mut slots[..bytes])
}

/// Sorts `keys` stably by bits `lo..hi`, in place. Equal bits `lo..hi` keep
/// their order only where the bits below `lo` do (as input positions there do).
pub(crate) fn sort_slice<K: Key>(keys: &mut [K], lo: u32, hi: u32, scratch: &mut Scratch<'_, K>) {
    let n = keys.len();
    if n < 2 || hi <= lo {
        return;
    }
    if n <= SMALL {
        keys.sort_unstable();
        return;
    }
    // Already sorted (as real data often is): a scan that fails fast otherwise.
    if keys.windows(2).all(|w| w[0] <= w[1]) {
        return;
    }
    if n <= CACHE_KEYS || (hi - lo <= LSD_BITS && u32::try_from(n).is_ok()) {
        lsd(keys, lo, hi, &mut scratch.keys, &mut scratch.work.counts);
        return;
    }
    // Too big for the cache: split by the top digit, then sort each part.
    let (copy, _) = part_buffers(scratch.spare, (&mut scratch.keys, &mut scratch.slots), n, 0);
    copy.copy_from_slice(keys);
    let (shift, starts) = msd_pass::<K, 0>((copy, &[]), (keys, &mut []), 0, (lo, hi));
    for d in 0..starts.len() - 1 {
        sort_slice(&mut keys[starts[d]..starts[d + 1]], lo, shift, scratch);
    }
}

/// Sorts `keys` stably by their bits `lo..hi` (the bits above `hi` must be
/// the same in every key) and moves each key's `width`-byte slot in `slots`
/// along with it. Keys equal in bits `lo..hi` keep their order, so the keys
/// end up sorted by all of bits `0..hi` when they arrive sorted by bits
/// `0..lo` wherever their bits from `lo` up are equal (input already in
/// order by the last levels, `sort_from`'s `ordered`). `W` is the width
/// when constant (0: `width`).
pub(crate) fn sort_with<K: Key, const W: usize>(
    keys: &mut [K],
    slots: &mut [u8],
    width: usize,
    (lo, hi): (u32, u32),
    scratch: &mut Scratch<'_, K>,
) {
    if in_order(keys, lo, hi) {
        return;
    }
    let Scratch { keys: part_keys, slots: part_slots, spare, work } = scratch;
    if let Some(order) = order(keys, lo, hi, work) {
        // The order is in `work` now; the slots (and, when the words left
        // out the bits below `lo`, the keys) need a copy to gather from.
        work.slots.clear();
        work.slots.extend_from_slice(slots);
        part_keys.clear();
        if lo > 0 {
            part_keys.extend_from_slice(keys);
        }
        write::<K, W>(order, work, (part_keys, &work.slots), (keys, slots), width);
        return;
    }
    // Too big for the cache: an MSD pass into the scratch, then each part
    // sorted from there back into place.
    let part = part_buffers(spare, (part_keys, part_slots), keys.len(), slots.len());
    split_and_sort::<K, W>((keys, slots), part, width, (lo, hi), work);
}

/// `sort_with` of keys (and slots) that [`order`] cannot take: an MSD pass
/// into `part` (as long as the keys), then each part sorted from there back
/// into place. A part still too big (a heavy coordinate, or more bits than a
/// word holds beside the index, as `u128` keys have) is copied back and
/// split again, with its own stretch of `part` as its buffer: that stretch
/// is free once its keys are back, so no buffer is allocated however deep
/// the splits go.
fn split_and_sort<K: Key, const W: usize>(
    (keys, slots): Dst<'_, K>,
    (part_keys, part_slots): Dst<'_, K>,
    width: usize,
    (lo, hi): (u32, u32),
    work: &mut Work<K>,
) {
    let (shift, starts) = msd_pass::<K, W>((keys, slots), (part_keys, part_slots), width, (lo, hi));
    for d in 0..starts.len() - 1 {
        let (a, b) = (starts[d], starts[d + 1]);
        let src = (&part_keys[a..b], &part_slots[a * width..b * width]);
        let dst = (&mut keys[a..b], &mut slots[a * width..b * width]);
        if in_order(src.0, lo, shift) {
            dst.0.copy_from_slice(src.0);
            dst.1.copy_from_slice(src.1);
        } else if let Some(order) = order(src.0, lo, shift, work) {
            write::<K, W>(order, work, src, dst, width);
        } else {
            dst.0.copy_from_slice(src.0);
            dst.1.copy_from_slice(src.1);
            let part = (&mut part_keys[a..b], &mut part_slots[a * width..b * width]);
            split_and_sort::<K, W>(dst, part, width, (lo, shift), work);
        }
    }
}

/// Whether `keys` (equal from bit `hi` up) are already in stable order by
/// bits `lo..hi`: nothing to sort, or sorted keys (equal ones included).
fn in_order<K: Key>(keys: &[K], lo: u32, hi: u32) -> bool {
    keys.len() < 2 || hi <= lo || keys.windows(2).all(|w| w[0] <= w[1])
}

/// Keys and their slots to read.
type Src<'a, K> = (&'a [K], &'a [u8]);
/// Keys and their slots to write (as long as the source).
type Dst<'a, K> = (&'a mut [K], &'a mut [u8]);

/// How [`order`] left a bucket's order in [`Work`].
enum Order<K> {
    /// In `pairs`: (key, index).
    Pairs,
    /// In `words[0]`: the key's bits `lo..hi` above an `index_bits`-bit
    /// index; the bits from `hi` up are `high`'s, whose bits below `hi` are
    /// clear. With `lo > 0` the words do not hold the whole key: it is read
    /// from the source by its index.
    Words { high: K, lo: u32, index_bits: u32 },
}

/// Puts the keys of a bucket that fits the cache in stable order by bits
/// `lo..hi`, in `work`, or returns `None` for a bucket too big for that (or
/// whose bits leave no room for an index in a `u64` word).
///
/// A small bucket takes a comparison sort of (key, index) pairs: unique, so
/// that an unstable sort is stable on the keys (and sorts by the bits below
/// `lo` too, which `sort_with`'s callers have in order already). Others are
/// sorted as words of the key's bits over the index: LSD passes over only the
/// top bits, about 8 more than the bucket's size needs to tell most keys
/// apart (a key of 48 bits below the top digit would take four passes), then
/// each run of words equal in those bits sorted on the rest.
fn order<K: Key>(keys: &[K], lo: u32, hi: u32, work: &mut Work<K>) -> Option<Order<K>> {
    let n = keys.len();
    if n <= SMALL {
        work.pairs.clear();
        work.pairs.extend(keys.iter().enumerate().map(|(i, &k)| (k, i as u32)));
        work.pairs.sort_unstable();
        return Some(Order::Pairs);
    }
    let index_bits = bit_length_below(n as u64);
    let bits = hi - lo;
    if n > CACHE_KEYS || bits + index_bits > 64 {
        return None;
    }
    let mask = u64::MAX >> (64 - bits); // 1 <= bits <= 63
    let [sorted, other] = &mut work.words;
    sorted.clear();
    sorted.extend(keys.iter().enumerate().map(|(i, &k)| (k.field(lo) & mask) << index_bits | i as u64));
    let first = bits.min((index_bits + 8).div_ceil(LSD_BITS) * LSD_BITS);
    let low = index_bits + bits - first;
    lsd(sorted, low, index_bits + bits, other, &mut work.counts);
    if low > index_bits {
        sort_runs(sorted, index_bits, low, other, &mut work.counts);
    }
    Some(Order::Words { high: keys[0].with_low(hi, 0), lo, index_bits })
}

/// Writes the keys in `order` to `dst`, each with its slot, from `src`
/// (whose keys [`Order::Words`] reads only when it left bits out).
fn write<K: Key, const W: usize>(
    order: Order<K>,
    work: &Work<K>,
    src: Src<'_, K>,
    dst: Dst<'_, K>,
    width: usize,
) {
    let ((from, slots), dst) = (src, dst);
    let width = if W == 0 { width } else { W };
    match order {
        Order::Pairs => {
            put_all::<K, W>(dst, slots, width, work.pairs.iter().map(|&(key, i)| (key, i as usize)))
        }
        Order::Words { high, lo: 0, index_bits } => {
            let index_mask = (1u64 << index_bits) - 1;
            // `high`'s bits below `hi` are clear: an OR puts the word's key
            // bits there (`with_low` would clear them again, per key).
            let ordered = work.words[0]
                .iter()
                .map(|&word| (high.shl_or(0, word >> index_bits), (word & index_mask) as usize));
            put_all::<K, W>(dst, slots, width, ordered);
        }
        Order::Words { index_bits, .. } => {
            let index_mask = (1u64 << index_bits) - 1;
            let ordered = work.words[0].iter().map(|&word| {
                let i = (word & index_mask) as usize;
                (from[i], i)
            });
            put_all::<K, W>(dst, slots, width, ordered);
        }
    }
}

/// Writes each `(key, i)` of `ordered` in turn to `dst`, with the slot
/// `i` of `slots`: zipped, so that only the read of the slot is
/// bounds-checked. `width` must be `W` when `W > 0`.
#[inline(always)]
fn put_all<K: Key, const W: usize>(
    (keys, out): Dst<'_, K>,
    slots: &[u8],
    width: usize,
    ordered: impl Iterator<Item = (K, usize)>,
) {
    for ((key_out, slot_out), (key, i)) in keys.iter_mut().zip(out.chunks_exact_mut(width)).zip(ordered) {
        *key_out = key;
        copy_slot::<W>(slot_out, &slots[i * width..(i + 1) * width]);
    }
}

/// Sorts each run of `words` that agree from bit `low` up on bits
/// `index_bits..low`, stably (the index bits below keep a run in input order).
fn sort_runs(words: &mut [u64], index_bits: u32, low: u32, other: &mut Vec<u64>, counts: &mut Vec<u32>) {
    let n = words.len();
    let mut start = 0;
    while start + 1 < n {
        // Most runs are a single word: step over them with one comparison.
        if (words[start] ^ words[start + 1]) >> low != 0 {
            start += 1;
            continue;
        }
        let top = words[start] >> low;
        let end = start + 2 + words[start + 2..].iter().take_while(|&&w| w >> low == top).count();
        let run = &mut words[start..end];
        if run.len() > SMALL {
            lsd(run, index_bits, low, other, counts);
        } else {
            // Unique words: an unstable sort is stable on the key bits.
            run.sort_unstable();
        }
        start = end;
    }
}

/// One stable MSD pass by the top bits of `lo..hi` (the digit
/// [`digit_bits`] picks) from `src` into `dst` (the slots too when
/// `width > 0`); returns the digit's shift and where each digit's keys start
/// (and, last, the number of keys).
fn msd_pass<K: Key, const W: usize>(
    src: Src<'_, K>,
    dst: Dst<'_, K>,
    width: usize,
    (lo, hi): (u32, u32),
) -> (u32, Vec<usize>) {
    // Count the widest digit, then merge its counts into the digit chosen.
    let fine_shift = hi - (hi - lo).min(DIGIT_BITS);
    let fine_radix = 1usize << (hi - fine_shift);
    let mut counts = vec![0usize; fine_radix];
    for &k in src.0 {
        counts[(k.field(fine_shift) as usize) & (fine_radix - 1)] += 1;
    }
    let bits = digit_bits(&counts, src.0.len());
    let (shift, radix) = (hi - bits, 1usize << bits);
    let mut starts = Vec::with_capacity(radix + 1);
    starts.push(0);
    for group in counts.chunks(fine_radix / radix) {
        starts.push(starts[starts.len() - 1] + group.iter().sum::<usize>());
    }
    let digit = |k: K| (k.field(shift) as usize) & (radix - 1);
    let mut next = starts.clone();
    for (i, &k) in src.0.iter().enumerate() {
        let at = next[digit(k)];
        next[digit(k)] += 1;
        dst.0[at] = k;
        if width > 0 {
            copy_slot::<W>(&mut dst.1[at * width..(at + 1) * width], &src.1[i * width..(i + 1) * width]);
        }
    }
    (shift, starts)
}

/// The bits of an MSD digit over `n` keys whose widest digit's counts are
/// `counts` (a power of two of them). Each bit doubles the pass's write
/// streams (two per digit with slots), which cost TLB and cache misses once
/// they outnumber the top-digit scatter's ([`TOP_BITS`]); each part bigger
/// than [`CACHE_KEYS`] costs another pass. So: the fewest bits that leave no
/// part too big, but no more than `TOP_BITS` of them; and at least enough
/// for parts of [`MSD_PART_KEYS`] on average (docs/benchmarks-history.md,
/// "Wide keys: the MSD digit, values in place, keys packed by constant level counts").
fn digit_bits(counts: &[usize], n: usize) -> u32 {
    let widest = counts.len().trailing_zeros();
    let fits = (1..widest)
        .find(|&bits| {
            counts.chunks(counts.len() >> bits).all(|part| part.iter().sum::<usize>() <= CACHE_KEYS)
        })
        .unwrap_or(widest);
    let average = usize::BITS - n.div_ceil(MSD_PART_KEYS).saturating_sub(1).leading_zeros();
    // (`widest` is at least 1: the callers sort on at least one bit.)
    fits.min(TOP_BITS).max(average).min(widest)
}

/// The number of LSD passes over `bits` bits of `n` keys, and their digit
/// width, that cost least: a pass costs about a read and a write per key
/// plus its histogram's size.
fn lsd_passes(bits: u32, n: usize) -> (u32, u32) {
    let passes = (bits.div_ceil(LSD_BITS)..=bits)
        .min_by_key(|&p| p as usize * ((1usize << bits.div_ceil(p)) + 2 * n))
        .unwrap_or(1);
    (passes, bits.div_ceil(passes))
}

/// LSD passes over bits `lo..hi` (see [`lsd_passes`]). `other` and `counts`
/// are scratch; `keys.len()` must fit `u32`.
fn lsd<K: Key>(keys: &mut [K], lo: u32, hi: u32, other: &mut Vec<K>, counts: &mut Vec<u32>) {
    let n = keys.len();
    let (passes, width) = lsd_passes(hi - lo, n);
    let radix = 1usize << width;
    let mask = radix - 1;

    // All histograms in one read (two passes, the most common, unrolled).
    counts.clear();
    counts.resize(passes as usize * radix, 0);
    if let (2, (first, second)) = (passes, counts.split_at_mut(radix)) {
        for &k in keys.iter() {
            first[k.field(lo) as usize & mask] += 1;
            second[k.field(lo + width) as usize & mask] += 1;
        }
    } else {
        for &k in keys.iter() {
            for p in 0..passes {
                counts[p as usize * radix + (k.field(lo + p * width) as usize & mask)] += 1;
            }
        }
    }
    if other.len() < n {
        other.resize(n, K::default());
    }
    let other = &mut other[..n];
    // Data moves `keys -> other -> keys ...`; `in_other` says where it is now.
    let mut in_other = false;
    for p in 0..passes {
        let counts = &mut counts[p as usize * radix..(p as usize + 1) * radix];
        // A digit every key shares orders nothing: skip the pass.
        if counts.contains(&(n as u32)) {
            continue;
        }
        let mut sum = 0;
        for c in counts.iter_mut() {
            sum += std::mem::replace(c, sum);
        }
        let shift = lo + p * width;
        let (src, dst): (&[K], &mut [K]) =
            if in_other { (&*other, &mut *keys) } else { (&*keys, &mut *other) };
        for &k in src {
            let d = k.field(shift) as usize & mask;
            dst[counts[d] as usize] = k;
            counts[d] += 1;
        }
        in_other = !in_other;
    }
    if in_other {
        keys.copy_from_slice(other);
    }
}

/// `dst.copy_from_slice(src)`, as a single move for a constant width `W > 0`.
#[inline(always)]
pub(crate) fn copy_slot<const W: usize>(dst: &mut [u8], src: &[u8]) {
    if W == 0 {
        dst.copy_from_slice(src);
    } else if let (Ok(d), Ok(s)) = (<&mut [u8; W]>::try_from(dst), <&[u8; W]>::try_from(src)) {
        *d = *s;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rand(state: &mut u64) -> u64 {
        *state ^= *state << 13;
        *state ^= *state >> 7;
        *state ^= *state << 17;
        *state
    }

    /// `sort_with` against a stable sort of (key, slot) pairs by key, on
    /// every path: small buckets, words (with and without runs to fix), the
    /// MSD pass for big buckets and for bits that leave no room for an index.
    fn check<K: Key>(n: usize, hi: u32, distinct: u64, make: impl Fn(u64) -> K) {
        let mut state = 0x9e37_79b9 ^ n as u64 ^ u64::from(hi);
        let keys: Vec<K> = (0..n).map(|_| make(rand(&mut state) % distinct)).collect();
        let slots: Vec<u8> = (0..n as u32).flat_map(u32::to_le_bytes).collect();
        let mut expected: Vec<(K, u32)> = keys.iter().copied().zip(0..).collect();
        expected.sort_by_key(|&(k, _)| k); // stable
        let (mut got, mut got_slots) = (keys, slots);
        sort_with::<K, 4>(&mut got, &mut got_slots, 4, (0, hi), &mut Scratch::default());
        let got: Vec<(K, u32)> = got
            .into_iter()
            .zip(got_slots.chunks(4).map(|c| u32::from_le_bytes(c.try_into().unwrap())))
            .collect();
        assert!(got == expected, "n={n} hi={hi} distinct={distinct}");
    }

    #[test]
    fn sort_with_is_a_stable_sort_of_keys_and_slots() {
        let bits = |b: u32| move |v: u64| v & (u64::MAX >> (64 - b));
        for (n, hi) in [(50, 40), (5000, 20), (20_000, 48), (20_000, 57), (CACHE_KEYS + 5000, 48), (3000, 62)]
        {
            // Random keys (few runs), and few distinct keys (long runs, many duplicates).
            check::<u64>(n, hi, u64::MAX, bits(hi));
            check::<u64>(n, hi, 300, |v| v.wrapping_mul(0x9e37_79b9_7f4a_7c15) & (u64::MAX >> (64 - hi)));
        }
        // u128 keys with the bits above `hi` shared, as in a top bucket.
        let wide = |v: u64| (7u128 << 120) | u128::from(v) << 50 | u128::from(v.rotate_left(17) & 0xffff);
        check::<u128>(20_000, 120, u64::MAX, wide);
        check::<u128>(20_000, 120, 500, wide);
    }

    /// A bucket so skewed that a part of its MSD pass is still too big for
    /// the cache: that part takes another pass of its own, and the whole is
    /// still a stable sort with every slot beside its key.
    #[test]
    fn sort_with_splits_a_skewed_part_again() {
        let n = 4 * CACHE_KEYS;
        let mut state = 0x5ca1_ab1e_u64;
        let keys: Vec<u64> = (0..n)
            .map(|i| {
                let low = rand(&mut state) & ((1 << 30) - 1);
                // Four keys in five share their top 18 of 48 bits.
                if i % 5 == 0 {
                    rand(&mut state) & ((1 << 48) - 1)
                } else {
                    0x2_aaaa << 30 | low
                }
            })
            .collect();
        let slots: Vec<u8> = (0..n as u32).flat_map(u32::to_le_bytes).collect();
        let mut expected: Vec<(u64, u32)> = keys.iter().copied().zip(0..).collect();
        expected.sort_by_key(|&(k, _)| k);
        let (mut got, mut got_slots) = (keys, slots);
        sort_with::<u64, 4>(&mut got, &mut got_slots, 4, (0, 48), &mut Scratch::default());
        let got: Vec<(u64, u32)> = got
            .into_iter()
            .zip(got_slots.chunks(4).map(|c| u32::from_le_bytes(c.try_into().unwrap())))
            .collect();
        assert!(got == expected);
    }

    /// A big bucket's MSD pass goes into the caller's spare memory when it
    /// holds the keys and slots (the spare is then written, and the sort is
    /// that of fresh buffers), and into buffers of its own when it does not
    /// (the spare is left alone); `u128` keys, which need the spare aligned
    /// for them, sort alike either way.
    #[test]
    fn big_buckets_take_their_scratch_from_a_spare_that_holds_it() {
        let n = 2 * CACHE_KEYS + 77;
        let mut state = 0xfeed_u64;
        let keys: Vec<u64> = (0..n).map(|_| rand(&mut state) & ((1 << 40) - 1)).collect();
        let slots: Vec<u8> = (0..n as u32).flat_map(u32::to_le_bytes).collect();
        let sorted_with = |spare: &mut [u64]| {
            let (mut keys, mut slots) = (keys.clone(), slots.clone());
            sort_with::<u64, 4>(&mut keys, &mut slots, 4, (0, 40), &mut Scratch::with_spare(spare));
            (keys, slots)
        };
        let expected = sorted_with(&mut []);
        let mut sorted_slice = keys.clone();
        sort_slice(&mut sorted_slice, 0, 40, &mut Scratch::default());
        // Keys and slots need `n` words and `4n` bytes; `n` words hold the slice's copy alone.
        let both = n + (4 * n).div_ceil(8);
        for (words, slots_fit, slice_fits) in
            [(2 * n, true, true), (both, true, true), (both - 1, false, true), (n - 1, false, false)]
        {
            let mut spare = vec![u64::MAX; words];
            assert_eq!(sorted_with(&mut spare), expected, "spare of {words}");
            assert_eq!(spare.iter().any(|&w| w != u64::MAX), slots_fit, "spare of {words} written");
            let mut spare = vec![u64::MAX; words];
            let mut got = keys.clone();
            sort_slice(&mut got, 0, 40, &mut Scratch::with_spare(&mut spare));
            assert_eq!(got, sorted_slice, "slice, spare of {words}");
            assert_eq!(spare.iter().any(|&w| w != u64::MAX), slice_fits, "slice, spare of {words} written");
        }
        // u128 keys: the spare's words are aligned for them or not, and the sort is the same.
        let wide: Vec<u128> = keys.iter().map(|&k| u128::from(k) << 60 | u128::from(k & 0xfff)).collect();
        let mut expected: Vec<u128> = wide.clone();
        expected.sort_unstable();
        for skip in [0, 1] {
            let mut spare = vec![0u64; 4 * n + 1];
            let mut got = wide.clone();
            sort_slice(&mut got, 0, 100, &mut Scratch::with_spare(&mut spare[skip..]));
            assert_eq!(got, expected, "u128, spare from word {skip}");
        }
    }

    /// The counts of a widest digit of 11 bits over `n` keys: `heavy` of
    /// them in digit 0, the rest spread evenly.
    fn counts(n: usize, heavy: usize) -> Vec<usize> {
        let mut counts = vec![(n - heavy) / 2048; 2048];
        counts[0] += heavy + (n - heavy) % 2048;
        counts
    }

    #[test]
    fn msd_digits_are_as_narrow_as_the_parts_allow() {
        // Even keys: enough bits that parts fit the cache, at least parts of
        // MSD_PART_KEYS on average.
        assert_eq!(digit_bits(&counts(CACHE_KEYS + 1, 0), CACHE_KEYS + 1), 3);
        assert_eq!(digit_bits(&counts(300_000, 0), 300_000), 5);
        // Skewed: the fewest bits that leave no part too big (6 here: a part
        // of 32 digits of the widest holds the 60k keys of digit 0 and 31 *
        // 117 more; of 64, 7.5k more, too many)...
        assert_eq!(digit_bits(&counts(300_000, 60_000), 300_000), 6);
        // ... but no more than the top-digit scatter's, unless the average needs them.
        assert_eq!(digit_bits(&counts(300_000, 200_000), 300_000), TOP_BITS);
        assert_eq!(digit_bits(&counts(1 << 26, 1 << 20), 1 << 26), DIGIT_BITS);
        // Fewer bits to split on than the widest digit has.
        assert_eq!(digit_bits(&[CACHE_KEYS, 5], CACHE_KEYS + 5), 1);
        assert_eq!(digit_bits(&[1 << 20, 1 << 20, 0, 0], 1 << 21), 2);
    }

    /// `sort_with` on bits `lo..hi` of keys already in order by their bits
    /// below `lo` (input in order by the last levels): the keys and slots
    /// end up as a stable sort by all their bits puts them, on every path.
    #[test]
    fn sort_with_from_a_bit_completes_keys_in_order_below_it() {
        for (n, lo, hi, distinct) in [
            (50, 20, 40, u64::MAX),
            (5000, 8, 20, u64::MAX),
            (20_000, 30, 60, 1 << 40),
            (20_000, 10, 57, 300),
            (CACHE_KEYS + 5000, 20, 48, u64::MAX),
            (3000, 1, 63, u64::MAX),
        ] {
            let mut state = 0x51f1_5eed ^ n as u64 ^ u64::from(lo);
            let mask = u64::MAX >> (64 - hi);
            let mut keys: Vec<u64> =
                (0..n).map(|_| (rand(&mut state) % distinct).wrapping_mul(0x9e37) & mask).collect();
            // In order by the bits below `lo`, as the builder's input is by its last levels.
            keys.sort_by_key(|&k| k & ((1 << lo) - 1));
            let slots: Vec<u8> = (0..n as u32).flat_map(u32::to_le_bytes).collect();
            let mut expected: Vec<(u64, u32)> = keys.iter().copied().zip(0..).collect();
            expected.sort_by_key(|&(k, _)| k); // stable, on every bit
            let (mut got, mut got_slots) = (keys, slots);
            sort_with::<u64, 4>(&mut got, &mut got_slots, 4, (lo, hi), &mut Scratch::default());
            let got: Vec<(u64, u32)> = got
                .into_iter()
                .zip(got_slots.chunks(4).map(|c| u32::from_le_bytes(c.try_into().unwrap())))
                .collect();
            assert!(got == expected, "n={n} lo={lo} hi={hi} distinct={distinct}");
        }
    }
}
