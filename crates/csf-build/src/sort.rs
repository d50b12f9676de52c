//! A stable radix sort of packed keys on their coordinate bits.
//!
//! The sort reads its keys straight from the input ([`KeySource`]) twice: a
//! first pass counts the top digit (up to 9 coordinate bits) of every key
//! (computing only that digit, where the source can), and a second computes
//! each key and scatters it into its bucket of the one output array. Making the keys in the scatter pass, rather than
//! writing them out and scattering into a second array, saves a whole key
//! array: its memory, and the page faults of touching it, which at 10M keys
//! cost about as much as the scatter itself.
//!
//! With a [`Payload`] (the builder's values), the scatter moves each entry's
//! value slot along with its key, into a slot array in the same bucket order.
//! When the keys have room for it below the sorted bits (`lo > 0`), it writes
//! that slot's index into the key's low (position) bits; otherwise the bucket
//! sorts move the slots along with their keys (`bucket.rs`). Either way every
//! value a bucket's keys refer to lies in the bucket's own stretch of the
//! slot array: the builder reads them from cache, where a gather from the
//! input would take a cache and TLB miss per value (which made up a third of
//! the build time).
//!
//! Both passes split the input into chunks. Each chunk counts its own digits;
//! the counts place chunk `c`'s keys of bucket `d` after those of chunks
//! `0..c`, so the chunks scatter into disjoint ranges of the output, in
//! parallel (each through its own cursors, `disjoint.rs`: one table entry a
//! key), and the result is that of one sequential stable scatter whatever
//! the number of chunks or threads.
//!
//! Each bucket is then sorted on its remaining bits, in cache (`bucket.rs`).
//! While a bucket is still in cache, a caller's `visit` runs over it (the
//! builder counts the tree's nodes there).

use std::ops::Range;
use std::sync::{Mutex, PoisonError};

use rayon::prelude::*;

use crate::bucket::{sort_slice, sort_with, Scratch, SMALL, TOP_BITS};
use crate::disjoint::{self, Cursors};
use crate::key::Key;

/// The bucket size the top digit aims at when there are too few keys to fill
/// `2^TOP_BITS` buckets of it.
const BUCKET_KEYS: usize = 2048;
/// The smallest chunk of input worth a parallel task.
const MIN_CHUNK: usize = 1 << 15;

/// Where the keys come from.
pub(crate) trait KeySource<K: Key>: Sync {
    /// The number of entries (keys, before any are skipped).
    fn entries(&self) -> usize;

    /// Calls `f(key, entry)` for every kept entry in `range`, in order, and
    /// returns `false` if an entry there cannot be keyed (a coordinate outside
    /// the shape); the keys are then meaningless, the sort gives up, but
    /// their bits must still agree with `prefixes`. Every call must produce
    /// the same keys.
    fn keys(&self, range: Range<usize>, f: impl FnMut(K, usize)) -> bool;

    /// Calls `f(prefix)` for every kept entry in `range`, in order, where
    /// `prefix` has the bits of the entry's key from `from` up (the rest may
    /// be anything). A source can skip work here: the sort's counting pass
    /// needs only the top digit.
    fn prefixes(&self, range: Range<usize>, from: u32, mut f: impl FnMut(K)) {
        let _ = from;
        self.keys(range, |k, _| f(k));
    }
}

/// Fixed-width slots, one per entry, that follow the keys through the sort.
#[derive(Clone, Copy)]
pub(crate) struct Payload<'a> {
    /// `width` bytes per entry.
    pub(crate) data: &'a [u8],
    /// 1, 2, 4 or 8 (other widths work, slower).
    pub(crate) width: usize,
}

/// Where a sort leaves the value slots: a fresh byte array, or the bytes of
/// a word array the caller no longer needs (a coordinate column the keys
/// were packed from: memory touched already, where a fresh array costs a
/// page fault and the zeroing of every 4 KiB written).
pub(crate) enum SlotArray {
    Bytes(Vec<u8>),
    /// The words, and how many of their bytes are slots.
    Words(Vec<u64>, usize),
}

impl SlotArray {
    /// The slots of `len` bytes: in `words` when it holds them, else fresh.
    fn new(len: usize, words: Option<Vec<u64>>) -> Self {
        match words {
            Some(words) if words.len().checked_mul(8).is_some_and(|bytes| bytes >= len) => {
                Self::Words(words, len)
            }
            _ => Self::Bytes(vec![0; len]),
        }
    }

    pub(crate) fn as_bytes(&self) -> &[u8] {
        match self {
            Self::Bytes(bytes) => bytes,
            Self::Words(words, len) => &bytemuck::cast_slice(words)[..*len],
        }
    }

    /// The slots as a byte array of their own (a copy of the words' bytes).
    pub(crate) fn into_bytes(self) -> Vec<u8> {
        match self {
            Self::Bytes(bytes) => bytes,
            words => words.as_bytes().to_vec(),
        }
    }

    pub(crate) fn as_bytes_mut(&mut self) -> &mut [u8] {
        match self {
            Self::Bytes(bytes) => bytes,
            Self::Words(words, len) => &mut bytemuck::cast_slice_mut(words)[..*len],
        }
    }
}

/// A key source could not key an entry.
#[derive(Debug)]
pub(crate) struct Unkeyable;

/// The sorted keys and what came with them.
pub(crate) struct Sorted<K, T> {
    /// The keys, sorted. With a payload and `lo > 0`, their low `lo` bits index `slots`.
    pub(crate) keys: Vec<K>,
    /// The payload's slots: in scatter order when the keys index them, else
    /// `keys[i]`'s at `i` (empty without a payload).
    pub(crate) slots: SlotArray,
    /// Bucket `b` is `keys[starts[b]..starts[b + 1]]`; its keys' top digit is `b`.
    pub(crate) starts: Vec<usize>,
    /// `visit(start, bucket)` of every bucket, in order.
    pub(crate) visits: Vec<T>,
    /// The shift of the top digit.
    pub(crate) top_shift: u32,
}

/// Keys already in a slice.
struct Slice<'a, K>(&'a [K]);

impl<K: Key> KeySource<K> for Slice<'_, K> {
    fn entries(&self) -> usize {
        self.0.len()
    }

    fn keys(&self, range: Range<usize>, mut f: impl FnMut(K, usize)) -> bool {
        let start = range.start;
        self.0[range].iter().enumerate().for_each(|(i, &k)| f(k, start + i));
        true
    }
}

/// Sorts `keys` stably by bits `lo..hi`.
#[cfg_attr(not(test), allow(dead_code))] // Only the tests use it since `Auto` counts without sorting.
pub(crate) fn sort_keys<K: Key>(keys: &mut [K], lo: u32, hi: u32, parallel: bool) {
    if keys.len() <= SMALL || hi <= lo {
        sort_slice(keys, lo, hi, &mut Scratch::default());
        return;
    }
    if let Ok(sorted) = sort_from(&Slice(keys), None, (lo, lo, hi), parallel, |_, _| ()) {
        keys.copy_from_slice(&sorted.keys);
    }
}

/// Keys made already, for [`sort_keys_into`].
pub(crate) enum Made<'a, K> {
    /// Keys the caller reads again after the sort.
    Kept(&'a [K]),
    /// Keys the sort may overwrite once it has scattered them: the bucket
    /// sorts take their scratch there (see `Scratch::with_spare`).
    Spent(&'a mut [K]),
}

/// [`sort_into`] of keys made already (every one of which is keyable).
pub(crate) fn sort_keys_into<K: Key, T: Send>(
    (into, slots_into): (Vec<K>, Option<Vec<u64>>),
    counted: Option<Counted>,
    keys: Made<'_, K>,
    payload: Option<Payload<'_>>,
    bits: (u32, u32, u32),
    parallel: bool,
    visit: impl Fn(usize, &[K]) -> T + Sync,
) -> Sorted<K, T> {
    let read: &[K] = match &keys {
        Made::Kept(keys) => keys,
        Made::Spent(keys) => keys,
    };
    let scattered = match scatter_into((into, slots_into), counted, &Slice(read), payload, bits, parallel) {
        Ok(scattered) => scattered,
        Err(Unkeyable) => unreachable!("a slice's keys never fail to key"),
    };
    let spare: &mut [u64] = match keys {
        Made::Kept(_) => &mut [],
        Made::Spent(keys) => bytemuck::cast_slice_mut(keys),
    };
    scattered.sort(spare, visit)
}

/// The top digit of a sort of `entries` keys on bits `lo..hi`: the bits
/// `shift..shift + log2(radix)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct TopDigit {
    pub(crate) shift: u32,
    pub(crate) radix: usize,
}

/// The sort's first pass done by its caller: the `TopDigit` counted, and
/// each chunk's counts of it, chunk by chunk of [`chunks`]. The sort counts
/// again when it would have chosen another digit or other chunks.
pub(crate) type Counted = (TopDigit, Vec<Vec<usize>>);

impl TopDigit {
    pub(crate) fn new(entries: usize, lo: u32, hi: u32) -> Self {
        let hi = hi.max(lo);
        // Fewer buckets for fewer keys: the LSD passes pay off on buckets of a few thousand.
        let bits = (hi - lo).min(TOP_BITS).min(usize::BITS - (entries / BUCKET_KEYS).leading_zeros());
        Self { shift: hi - bits, radix: 1 << bits }
    }

    /// `key`'s digit.
    #[inline]
    pub(crate) fn of<K: Key>(self, key: K) -> usize {
        (key.field(self.shift) as usize) & (self.radix - 1)
    }
}

/// Splits `0..n` into chunks: one when not `parallel`, else a few per thread
/// (so that uneven chunks still balance), none below `MIN_CHUNK` entries.
pub(crate) fn chunks(n: usize, parallel: bool) -> Vec<Range<usize>> {
    let count = if parallel { (n / MIN_CHUNK).clamp(1, 4 * rayon::current_num_threads()) } else { 1 };
    (0..count).map(|c| c * n / count..(c + 1) * n / count).collect()
}

/// The keys of `source`, sorted stably by bits `lo..hi`, with the payload's
/// slots, and `visit(start, bucket)` of every sorted bucket. With a payload,
/// the source's keys must have their low `lo` bits clear, and either `lo` is
/// 0 (the slots are sorted with the keys) or `2^lo` is at least the number of
/// keys (the sort writes slot indices there). Without one, keys equal in bits
/// `lo..hi` keep their order only as far as their bits below `lo` say (see
/// `sort_slice`).
///
/// `ordered` (from `lo` to `hi`) says that the source gives keys equal from
/// bit `ordered` up in order by their bits `lo..ordered` already (input in
/// order by the last levels of the key): the buckets are then sorted on bits
/// `ordered..hi` alone, and the result is the same.
pub(crate) fn sort_from<K: Key, S: KeySource<K>, T: Send>(
    source: &S,
    payload: Option<Payload<'_>>,
    bits: (u32, u32, u32),
    parallel: bool,
    visit: impl Fn(usize, &[K]) -> T + Sync,
) -> Result<Sorted<K, T>, Unkeyable> {
    sort_into((Vec::new(), None), None, source, payload, bits, parallel, visit)
}

/// [`sort_from`], scattering the keys into `into` when it has the length
/// the sorted keys need, and the slots into `slots_into` when it holds them
/// (arrays the caller no longer needs, such as input columns already packed
/// into keys: memory touched already, where a fresh array costs a page
/// fault and the zeroing of every 4 KiB written).
pub(crate) fn sort_into<K: Key, S: KeySource<K>, T: Send>(
    (into, slots_into): (Vec<K>, Option<Vec<u64>>),
    counted: Option<Counted>,
    source: &S,
    payload: Option<Payload<'_>>,
    bits: (u32, u32, u32),
    parallel: bool,
    visit: impl Fn(usize, &[K]) -> T + Sync,
) -> Result<Sorted<K, T>, Unkeyable> {
    let scattered = scatter_into((into, slots_into), counted, source, payload, bits, parallel)?;
    Ok(scattered.sort(&mut [], visit))
}

/// Keys and slots scattered into their buckets, each bucket still to sort.
struct Scattered<K> {
    keys: Vec<K>,
    slots: SlotArray,
    starts: Vec<usize>,
    plan: Plan,
}

impl<K: Key> Scattered<K> {
    /// Pass 3: sorts each bucket on the bits below the top digit (from
    /// those in order already up), with its scratch in `spare` where it
    /// fits, and visits it.
    fn sort<T: Send>(self, spare: &mut [u64], visit: impl Fn(usize, &[K]) -> T + Sync) -> Sorted<K, T> {
        let Scattered { mut keys, mut slots, starts, plan } = self;
        let visits = sort_buckets(&mut keys, slots.as_bytes_mut(), &starts, plan, spare, visit);
        Sorted { keys, slots, starts, visits, top_shift: plan.top_shift }
    }
}

/// Passes 1 and 2 of [`sort_into`]: the keys and slots in their buckets.
fn scatter_into<K: Key, S: KeySource<K>>(
    (into, slots_into): (Vec<K>, Option<Vec<u64>>),
    counted: Option<Counted>,
    source: &S,
    payload: Option<Payload<'_>>,
    (lo, ordered, hi): (u32, u32, u32),
    parallel: bool,
) -> Result<Scattered<K>, Unkeyable> {
    let hi = hi.max(lo);
    let ordered = ordered.clamp(lo, hi);
    let top = TopDigit::new(source.entries(), lo, hi);
    let TopDigit { shift: top_shift, radix } = top;
    let digit = move |k: K| top.of(k);
    let ranges = chunks(source.entries(), parallel);

    // Pass 1: per-chunk counts of the top digit, unless the caller has them.
    let count = |range: &Range<usize>| {
        let mut counts = vec![0usize; radix];
        source.prefixes(range.clone(), top_shift, |k| counts[digit(k)] += 1);
        counts
    };
    let counted = counted.filter(|(by, counts)| *by == top && counts.len() == ranges.len());
    let counts: Vec<Vec<usize>> = match counted {
        Some((_, counts)) => counts,
        None if parallel => ranges.par_iter().map(count).collect(),
        None => ranges.iter().map(count).collect(),
    };
    let mut starts = vec![0usize; radix + 1];
    for d in 0..radix {
        starts[d + 1] = starts[d] + counts.iter().map(|c| c[d]).sum::<usize>();
    }

    // Pass 2: each chunk scatters into its own range of every bucket.
    let width = payload.map_or(0, |p| p.width);
    // The scatter writes every key of the output: old contents need no clearing.
    let mut keys = if into.len() == starts[radix] { into } else { vec![K::default(); starts[radix]] };
    let mut slots = SlotArray::new(starts[radix] * width, slots_into);
    let out = (&mut keys[..], &counts[..]);
    let job = Job { source, ranges, digit, positions: payload.is_some() && lo > 0, parallel };
    let keyed = match payload {
        None => scatter(job, (out, &mut vec![(); starts[radix]]), |_| Some(())),
        Some(p) => {
            let out = (out, slots.as_bytes_mut());
            match p.width {
                1 => scatter_slots::<K, S, _, 1>(job, out, p.data),
                2 => scatter_slots::<K, S, _, 2>(job, out, p.data),
                4 => scatter_slots::<K, S, _, 4>(job, out, p.data),
                8 => scatter_slots::<K, S, _, 8>(job, out, p.data),
                _ => scatter_gathered(job, out, p),
            }
        }
    };
    if !keyed {
        return Err(Unkeyable);
    }

    let plan = Plan { from: ordered, top_shift, width, move_slots: payload.is_some() && lo == 0, parallel };
    Ok(Scattered { keys, slots, starts, plan })
}

/// How pass 3 sorts the buckets.
#[derive(Clone, Copy)]
struct Plan {
    /// Sort on bits `from..top_shift` (the bits above are the bucket's
    /// digit, those below in order already).
    from: u32,
    top_shift: u32,
    /// The slots' width, and whether they move with their keys.
    width: usize,
    move_slots: bool,
    parallel: bool,
}

/// Pass 3: sorts each bucket `starts[d]..starts[d + 1]` in cache, and
/// returns `visit(start, bucket)` of each. Each thread has its own share of
/// `spare` for a big bucket's scratch.
fn sort_buckets<K: Key, T: Send>(
    keys: &mut [K],
    slots: &mut [u8],
    starts: &[usize],
    plan: Plan,
    spare: &mut [u64],
    visit: impl Fn(usize, &[K]) -> T + Sync,
) -> Vec<T> {
    let Plan { from: lo, top_shift: hi, width, move_slots, parallel } = plan;
    let mut buckets = Vec::with_capacity(starts.len());
    let (mut key_rest, mut slot_rest) = (keys, slots);
    for w in starts.windows(2) {
        let len = w[1] - w[0];
        let (bucket, tail) = std::mem::take(&mut key_rest).split_at_mut(len);
        key_rest = tail;
        let (bucket_slots, tail) = std::mem::take(&mut slot_rest).split_at_mut(len * width);
        slot_rest = tail;
        buckets.push((w[0], bucket, bucket_slots));
    }
    let sort_and_visit = |scratch: &mut Scratch<'_, K>, (start, bucket, bucket_slots): Bucket<'_, K>| {
        match width {
            _ if !move_slots => sort_slice(bucket, lo, hi, scratch),
            1 => sort_with::<K, 1>(bucket, bucket_slots, 1, (lo, hi), scratch),
            2 => sort_with::<K, 2>(bucket, bucket_slots, 2, (lo, hi), scratch),
            4 => sort_with::<K, 4>(bucket, bucket_slots, 4, (lo, hi), scratch),
            8 => sort_with::<K, 8>(bucket, bucket_slots, 8, (lo, hi), scratch),
            _ => sort_with::<K, 0>(bucket, bucket_slots, width, (lo, hi), scratch),
        }
        visit(start, bucket)
    };
    if parallel {
        // The biggest buckets first, taken one at a time from a queue by a
        // worker per thread: a heavy bucket (a power law's first
        // coordinates) started last would leave the other threads idle
        // while one thread sorts it. Each worker keeps its buffers from
        // bucket to bucket, and its own stretch of `spare`.
        let mut by_size: Vec<(usize, Bucket<'_, K>)> = buckets.into_iter().enumerate().collect();
        by_size.sort_by_key(|(_, (_, keys, _))| std::cmp::Reverse(keys.len()));
        let workers = rayon::current_num_threads().clamp(1, by_size.len().max(1));
        let queue = Mutex::new(by_size.into_iter());
        let next = || queue.lock().unwrap_or_else(PoisonError::into_inner).next();
        let share = spare.len() / workers;
        let mut shares = Vec::with_capacity(workers);
        let mut rest = spare;
        for _ in 0..workers {
            let (mine, tail) = std::mem::take(&mut rest).split_at_mut(share);
            shares.push(mine);
            rest = tail;
        }
        let work = |share: &mut [u64]| {
            let mut scratch = Scratch::with_spare(share);
            std::iter::from_fn(next).map(|(b, bucket)| (b, sort_and_visit(&mut scratch, bucket))).collect()
        };
        let done: Vec<Vec<(usize, T)>> = shares.into_par_iter().with_max_len(1).map(work).collect();
        let mut visits: Vec<(usize, T)> = done.into_iter().flatten().collect();
        visits.sort_unstable_by_key(|&(b, _)| b);
        visits.into_iter().map(|(_, visit)| visit).collect()
    } else {
        let mut scratch = Scratch::with_spare(spare);
        buckets.into_iter().map(|b| sort_and_visit(&mut scratch, b)).collect()
    }
}

/// A bucket to sort: its first key's index, its keys and its slots.
type Bucket<'a, K> = (usize, &'a mut [K], &'a mut [u8]);

/// The output arrays of a scatter: the keys', and each chunk's counts of
/// every bucket (which lay out its ranges of the arrays).
type Out<'a, K> = (&'a mut [K], &'a [Vec<usize>]);

/// What the scatter of one sort reads: the keys' source and its chunks, a
/// key's bucket (`digit`), whether each key gets the index of its place in
/// its low bits (`positions`), and whether the chunks run in parallel.
struct Job<'s, S, D> {
    source: &'s S,
    ranges: Vec<Range<usize>>,
    digit: D,
    positions: bool,
    parallel: bool,
}

/// The scatter of slots of `W` bytes (`data`, one per entry) into `slots`,
/// each slot moved as one `[u8; W]`.
fn scatter_slots<K, S, D, const W: usize>(
    job: Job<'_, S, D>,
    (out, slots): (Out<'_, K>, &mut [u8]),
    data: &[u8],
) -> bool
where
    K: Key,
    S: KeySource<K>,
    D: Fn(K) -> usize + Sync + Copy,
    [u8; W]: bytemuck::Pod,
{
    // One value an entry (the builder checks the values' length first): a
    // value short is refused rather than a slot left unwritten. The slots
    // are whole by construction (`W` bytes a key).
    let values = job.source.entries().checked_mul(W).and_then(|n| data.get(..n));
    let values = values.and_then(|v| bytemuck::try_cast_slice::<u8, [u8; W]>(v).ok());
    let (Some(data), Ok(slots)) = (values, bytemuck::try_cast_slice_mut::<u8, [u8; W]>(slots)) else {
        return false;
    };
    scatter(job, (out, slots), move |entry| data.get(entry).copied())
}

/// The scatter of slots of a width no element type has (the slots of the
/// other widths are moved as arrays of that many bytes): each entry's index
/// is scattered, and the slots gathered from them afterwards.
fn scatter_gathered<K, S, D>(
    job: Job<'_, S, D>,
    (out, slots): (Out<'_, K>, &mut [u8]),
    payload: Payload<'_>,
) -> bool
where
    K: Key,
    S: KeySource<K>,
    D: Fn(K) -> usize + Sync + Copy,
{
    if payload.width > 0 && payload.data.len() / payload.width < job.source.entries() {
        return false; // A value short, as in `scatter_slots`.
    }
    let mut entries = vec![0usize; out.0.len()];
    if !scatter(job, (out, &mut entries), Some) {
        return false;
    }
    let width = payload.width;
    for (slot, &entry) in slots.chunks_exact_mut(width.max(1)).zip(&entries) {
        if let Some(value) = payload.data.get(entry * width..entry * width + width) {
            slot.copy_from_slice(value);
        }
    }
    true
}

/// Pass 2 of the sort: each chunk of `job.ranges` writes each of its keys,
/// and `value(entry)` into `slots` beside it, at the next place of its own
/// range of the key's bucket (`disjoint.rs`), in parallel when asked.
/// `false` if the source could not key an entry.
fn scatter<K, S, D, T>(
    job: Job<'_, S, D>,
    ((keys, counts), slots): (Out<'_, K>, &mut [T]),
    value: impl Fn(usize) -> Option<T> + Sync + Copy,
) -> bool
where
    K: Key,
    S: KeySource<K>,
    D: Fn(K) -> usize + Sync + Copy,
    T: Copy + Send,
{
    let Job { source, ranges, digit, positions, parallel } = job;
    let Some(cursors) = disjoint::split(keys, slots, counts) else {
        unreachable!("the arrays are sized from the counts")
    };
    let chunk = |(range, mut out): (Range<usize>, Cursors<'_, K, T>)| {
        // Copies of the digit's and the values' closures, local to the loop:
        // the writes through the cursors' pointers are not known not to
        // alias the callers' copies, which the loop would then reload a key.
        let (digit, value) = (digit, value);
        let mut write = |k: K, entry: usize, positions: bool| {
            if let (Some((i, key, slot)), Some(v)) = (out.next(digit(k)), value(entry)) {
                *key = if positions { k.shl_or(0, i as u64) } else { k };
                *slot = v;
            }
        };
        // (Two loops, so that the choice is not made per key.)
        let keyed = if positions {
            source.keys(range, |k, entry| write(k, entry, true))
        } else {
            source.keys(range, |k, entry| write(k, entry, false))
        };
        // A source whose keys are not those it counted (against
        // `KeySource`'s contract) overfills a range or leaves one short:
        // refused as a source that cannot key an entry, never scattered short.
        keyed && out.filled_exactly()
    };
    if parallel {
        ranges.into_par_iter().zip(cursors).all(chunk)
    } else {
        ranges.into_iter().zip(cursors).all(chunk)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bucket::CACHE_KEYS;

    fn rand(state: &mut u64) -> u64 {
        *state ^= *state << 13;
        *state ^= *state >> 7;
        *state ^= *state << 17;
        *state
    }

    #[test]
    fn matches_a_stable_sort_on_the_coordinate_bits() {
        let mut state = 0x1234_5678_u64;
        for &(n, coord_bits) in &[
            (0usize, 5u32),
            (1, 5),
            (50, 3),
            (5000, 9),
            (20000, 30),
            (70000, 40),
            (300_000, 12),
            (300_000, 36),
        ] {
            let position_bits = 64 - (n as u64).leading_zeros();
            let keys: Vec<u64> = (0..n as u64)
                .map(|i| ((rand(&mut state) & ((1 << coord_bits) - 1)) << position_bits) | i)
                .collect();
            let mut expected = keys.clone();
            expected.sort_by_key(|k| k >> position_bits); // stable
            for parallel in [false, true] {
                let mut got = keys.clone();
                sort_keys(&mut got, position_bits, position_bits + coord_bits, parallel);
                assert_eq!(got, expected, "n={n} bits={coord_bits} parallel={parallel}");
            }
        }
    }

    #[test]
    fn counts_from_the_caller_are_the_first_pass_and_others_are_recounted() {
        let mut state = 7u64;
        let n = 100_000usize;
        let keys: Vec<u64> = (0..n as u64).map(|i| (rand(&mut state) & ((1 << 30) - 1)) << 17 | i).collect();
        let (lo, hi) = (17, 47);
        for parallel in [false, true] {
            let top = TopDigit::new(n, lo, hi);
            let counts_of = |top: TopDigit| -> Vec<Vec<usize>> {
                let count = |range: &Range<usize>| {
                    let mut counts = vec![0usize; top.radix];
                    keys[range.clone()].iter().for_each(|&k| counts[top.of(k)] += 1);
                    counts
                };
                chunks(n, parallel).iter().map(count).collect()
            };
            let sort = |counted| {
                let into = (Vec::new(), None);
                sort_keys_into(
                    into,
                    counted,
                    Made::Kept(&keys),
                    None,
                    (lo, lo, hi),
                    parallel,
                    |s, b: &[u64]| (s, b.len()),
                )
            };
            let expected = sort(None);
            assert!(expected.keys.windows(2).all(|w| w[0] >> lo <= w[1] >> lo));
            // The caller's counts; and counts of another digit, which the sort
            // must not take for its own (their bucket sizes are not its).
            let other = TopDigit { shift: top.shift - 1, ..top };
            for counted in [(top, counts_of(top)), (other, counts_of(other))] {
                let got = sort(Some(counted));
                assert_eq!(got.keys, expected.keys);
                assert_eq!((&got.starts, &got.visits), (&expected.starts, &expected.visits));
            }
        }
    }

    #[test]
    fn big_skewed_buckets_take_another_msd_pass() {
        // Half the keys share their top digit: that bucket outgrows CACHE_KEYS.
        let n = 4 * CACHE_KEYS as u64;
        let coords = (0..n).map(|i| if i % 2 == 0 { (i * 7919) % (1 << 30) } else { 1 << 35 | i });
        let keys: Vec<u64> = coords.enumerate().map(|(i, c)| c << 20 | i as u64).collect();
        let mut expected = keys.clone();
        expected.sort_by_key(|k| k >> 20);
        for parallel in [false, true] {
            let mut got = keys.clone();
            sort_keys(&mut got, 20, 56, parallel);
            assert_eq!(got, expected, "parallel={parallel}");
        }
    }

    /// Keys that count into one bucket and scatter into another, or that the
    /// scatter yields fewer of than the count did (against `KeySource`'s
    /// contract), and values fewer than the keys: the sort refuses them,
    /// where writing them would leave elements of the output unwritten.
    #[test]
    fn keys_other_than_those_counted_are_refused() {
        struct Unlike {
            keys: Vec<u64>,
            /// XORed into each key the scatter reads, not the count.
            flip: u64,
            /// Entries the scatter skips.
            skip: usize,
        }
        impl KeySource<u64> for Unlike {
            fn entries(&self) -> usize {
                self.keys.len()
            }
            fn keys(&self, range: Range<usize>, mut f: impl FnMut(u64, usize)) -> bool {
                range.filter(|&i| i % self.skip.max(1) != 1).for_each(|i| f(self.keys[i] ^ self.flip, i));
                true
            }
            fn prefixes(&self, range: Range<usize>, _from: u32, mut f: impl FnMut(u64)) {
                range.for_each(|i| f(self.keys[i]));
            }
        }
        let mut state = 5u64;
        let keys: Vec<u64> = (0..100_000).map(|_| rand(&mut state) % (1 << 30)).collect();
        let data = vec![7u8; keys.len() * 4];
        for parallel in [false, true] {
            let sort = |source: &Unlike, payload: Option<Payload<'_>>| {
                sort_from(source, payload, (0, 0, 30), parallel, |_, _| ()).is_err()
            };
            let payload = Some(Payload { data: &data, width: 4 });
            let honest = Unlike { keys: keys.clone(), flip: 0, skip: 0 };
            assert!(!sort(&honest, None) && !sort(&honest, payload), "parallel {parallel}");
            let flipped = Unlike { keys: keys.clone(), flip: 1 << 29, skip: 0 };
            assert!(sort(&flipped, None) && sort(&flipped, payload), "parallel {parallel}");
            let short = Unlike { keys: keys.clone(), flip: 0, skip: 1000 };
            assert!(sort(&short, None) && sort(&short, payload), "parallel {parallel}");
            // A value short, of a width the slots move as arrays and of another.
            for width in [4, 3] {
                let payload = Some(Payload { data: &data[..width * (keys.len() - 1)], width });
                assert!(sort(&honest, payload), "parallel {parallel} width {width}");
            }
        }
    }

    /// Slots of a width of their own (4 bytes) and of widths no element type
    /// has (3 and 16 bytes: their entries scattered, then gathered), with
    /// the slots moving with their keys and indexed by the keys' low bits.
    #[test]
    fn payload_slots_follow_their_keys() {
        let mut state = 99u64;
        let n = 200_000usize;
        // Few distinct coordinates in one part (long runs of equal keys), many in the other.
        let coords: Vec<u64> =
            (0..n).map(|i| rand(&mut state) % if i % 3 == 0 { 1 << 25 } else { 1 << 10 }).collect();
        let shifted: Vec<u64> = coords.iter().map(|&c| c << 20).collect();
        for (width, parallel, lo) in
            [3, 4, 16].into_iter().flat_map(|w| [(w, false, 0), (w, true, 0), (w, false, 20), (w, true, 20)])
        {
            // Each entry's slot: its index, little-endian, in its first bytes.
            let data: Vec<u8> = (0..n as u128).flat_map(|i| i.to_le_bytes()[..width].to_vec()).collect();
            let keys = if lo == 0 { &coords } else { &shifted };
            let sorted = sort_from(
                &Slice(keys),
                Some(Payload { data: &data, width }),
                (lo, lo, lo + 25),
                parallel,
                |start, bucket| (start, bucket.len()),
            )
            .unwrap();
            let case = format!("width {width} parallel {parallel} lo {lo}");
            // Each key's slot holds its entry, and entries of equal coordinates stay in input order.
            let slot_entry = |at: usize| {
                let mut bytes = [0u8; 16];
                bytes[..width].copy_from_slice(&sorted.slots.as_bytes()[width * at..width * (at + 1)]);
                u128::from_le_bytes(bytes) as usize
            };
            let at = |i: usize| if lo == 0 { i } else { (sorted.keys[i] & ((1 << lo) - 1)) as usize };
            let entries: Vec<usize> = (0..n).map(|i| slot_entry(at(i))).collect();
            let mut expected: Vec<usize> = (0..n).collect();
            expected.sort_by_key(|&i| coords[i]);
            assert_eq!(entries, expected, "{case}");
            assert!(sorted.keys.iter().zip(&entries).all(|(&k, &e)| k >> lo == coords[e]), "{case}");
            let visited: Vec<(usize, usize)> =
                sorted.starts.windows(2).map(|w| (w[0], w[1] - w[0])).collect();
            assert_eq!(sorted.visits, visited, "{case}");
        }
    }

    /// Word-wide slots give the same sorted keys and slots on one chunk and
    /// on several (in parallel), from word-aligned data and from a slice one
    /// byte into a buffer, with the positions in the keys' low bits and
    /// without; and each key's slot is its entry's.
    #[test]
    fn word_slots_scatter_alike_on_one_chunk_or_many() {
        let mut state = 7u64;
        let n = 100_000usize;
        let coords: Vec<u64> =
            (0..n).map(|i| rand(&mut state) % if i % 5 == 0 { 1 << 30 } else { 1 << 12 }).collect();
        // Each entry's slot holds its own index.
        let words: Vec<u64> = (0..n as u64).collect();
        let aligned: &[u8] = bytemuck::cast_slice(&words);
        let mut buffer = vec![0u8; 8 * n + 1];
        buffer[1..].copy_from_slice(aligned);
        let misaligned = &buffer[1..];
        assert!(
            bytemuck::try_cast_slice::<u8, u64>(misaligned).is_err(),
            "the test needs an unaligned slice"
        );
        for (lo, keys) in [(0, coords.clone()), (20, coords.iter().map(|&c| c << 20).collect::<Vec<_>>())] {
            let sort = |data: &[u8], parallel: bool| {
                sort_from(
                    &Slice(&keys),
                    Some(Payload { data, width: 8 }),
                    (lo, lo, lo + 30),
                    parallel,
                    |_, _| (),
                )
                .unwrap()
            };
            let fast = sort(aligned, false);
            for (data, parallel) in [(misaligned, false), (aligned, true), (misaligned, true)] {
                let other = sort(data, parallel);
                assert_eq!(fast.keys, other.keys, "lo {lo} parallel {parallel}");
                assert_eq!(fast.slots.as_bytes(), other.slots.as_bytes(), "lo {lo} parallel {parallel}");
                assert_eq!(fast.starts, other.starts, "lo {lo} parallel {parallel}");
            }
            // And they are right: each key's slot is its entry's word.
            let slot =
                |i: usize| u64::from_le_bytes(fast.slots.as_bytes()[8 * i..8 * i + 8].try_into().unwrap());
            // (With `lo > 0` a key's low bits index its slot, else the
            // slots follow the keys.)
            for (i, &k) in fast.keys.iter().enumerate() {
                let at = if lo == 0 { i } else { (k & ((1 << lo) - 1)) as usize };
                assert_eq!(k >> lo, coords[slot(at) as usize], "lo {lo} key {i}");
            }
        }
    }
}
