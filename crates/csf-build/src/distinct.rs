//! Counting `D(S)`, the number of distinct projections of the entries onto a
//! set `S` of dimensions, for `ModeOrderPolicy::Auto` (see `order.rs`): `n_L` of an
//! order is `D` of the set of its first `L + 1` dimensions.
//!
//! Exact methods, chosen per set by what it costs:
//! - **the bounds check**: `Auto` checks every coordinate against the shape
//!   before it counts (the crate's one bounds check, `checked_singles`),
//!   and counts the singles `{d}` whose bitmaps stay in L2 as it reads
//!   them, but those within a pair of few cells, which a projection counts
//!   for less.
//! - **bitmap**, when the set's cells (the product of its extents) are few:
//!   one scan of the entries setting a bit per cell, then a popcount. A scan
//!   costs a fraction of a sort, and scans of different sets run in
//!   parallel; a bitmap of at most 8 KiB (in L1) rides in another set's scan
//!   rather than reading the input for a scan of its own. A set within a
//!   scanned one is **projected** from that bitmap, row by row of its
//!   innermost dimension, when the rows' words are at most the entries (a
//!   row of up to 64 cells is a word operation or two, a scanned entry a
//!   random bit set after reading its coordinates), or a quarter of them
//!   for a bitmap of at most 8 KiB (which a scan fills for about a
//!   nanosecond an entry): no second scan of the entries. A projected
//!   bitmap is kept for the smaller sets within it, so that prefix sets
//!   chain (`{0..6}` to `{0..5}` to `{0..4}`...), each from the smallest
//!   bitmap that holds it (`bitmap.rs`); dropping only the innermost
//!   dimension is one "any bit set" test per row.
//! - **partition pass** for the other sets (`pass.rs`): the entries' packed
//!   coordinates are scattered into buckets by the coordinate of one
//!   dimension `a` (its top bits), so that every group of entries sharing
//!   `a`'s coordinate lies in one bucket. For every set that contains `a`,
//!   projections in different buckets then differ, and `D(S)` is the sum
//!   over buckets of the distinct masked keys in each: counted by a bitmap
//!   of the bucket's cells when they are few (`2^23`, in L2); by fibers
//!   when the set splits into a group of at most `2^16` cells within a
//!   bucket and an extra of at most `2^22` (the bucket's keys grouped by
//!   their group cell, then a bitmap of each group's extra cells, cleared
//!   cell by cell, or stamps for at most `2^16` extra cells: a bit set or a
//!   stamp in cache where a hash table takes a probe);
//!   by a bitmap per part when a little
//!   more (the bucket's cells split by their top bits into parts of `2^20`,
//!   up to `2^28` cells), else with a small hash table in cache. One scatter serves every set that contains `a`, where a sort
//!   per set (as `Auto` did before) pays the scatter once per set; a dense
//!   set rides in a pass that runs anyway when its bucket bitmap would stay
//!   in L2 and its own scan's would not stay in L1 (`rides_in_pass`).
//! - **sorted input**: entries already in lexicographic order give `D` of
//!   every prefix set of the identity in one scan (`count_sorted_prefixes`),
//!   which keeps each entry's first difference from the one before it (a
//!   byte). A set that holds the first `k` dimensions and others of few
//!   cells is then counted by **runs** (`Counter::by_runs`): entries that
//!   share those `k` coordinates lie side by side, and each run's distinct
//!   cells of the other dimensions are counted by a stamp per cell (the
//!   number of the run that last saw it: no clearing, and no branch on
//!   where runs start; `stamps.rs`, which the fibers' stamps share), or,
//!   on runs of more than four entries on average, by a bitmap cleared
//!   after each run. On shorter runs, the others are counted by a hash
//!   table whose slots hold a run number beside the cell (another run's
//!   number is an empty slot: no emptying between runs, and no branch on
//!   where they end). A set that a partition pass would hash after a
//!   scatter is hashed by runs instead, on longer runs too, none of more
//!   than `RUN_TABLE` entries (`Counter::hashed_by_runs`): the probes a
//!   bucket's table would take, without the scatter. Files are often
//!   stored sorted, and their sets with the first dimension then cost a
//!   scan with a small table each, not a partition pass.
//! - **tiny input** (at most 64 entries): a mask per dimension and entry of
//!   the entries that share its coordinate; a set's projections are counted
//!   by ANDing its dimensions' masks (`count_tiny`).
//!
//! Memory, all freed before the build proper: bitmaps in flight stay within
//! 16 bytes per entry (a scan counts its bitmaps and every bitmap projected
//! from them; a single scan bigger than that runs alone); sorted input's
//! first differences take a byte per entry, and a count by runs a bitmap or
//! stamps of at most 1 MiB per thread, within the 16 bytes, or a hash table
//! of at most 4 slots (16 bytes each) an entry of its longest run; a pass
//! holds one key per entry (8 or 16 bytes) plus, per thread, a table of at
//! most 1 MiB, a bucket bitmap of at most 1 MiB and 4 bytes per entry (a
//! part's or a fibers' bitmap 2 bytes per entry), and a fibers' table of at
//! most `2^16` group starts and two per key of an average bucket; and, for a
//! bucket counted by fibers, by parts or by hash tables too big for one, a
//! copy of its keys or cells (of the biggest such bucket, per thread). That
//! is at most two key arrays, what the sort per set that `Auto` ran before
//! held, and one on input whose buckets are even. Under `build_owned` of
//! input out of order, the counting reads keys packed over the first column
//! and the passes' key array is the second column (`build/packed.rs`): no
//! fresh key array.

use std::collections::HashMap;
use std::ops::Range;

use rayon::prelude::*;

use crate::key::bit_length_below as bits_below;
use crate::{Indices, Source};

mod bitmap;
mod pass;
mod stamps;

use bitmap::Bitmap;
use pass::{KeyArrays, Plan};
use stamps::Stamps;

/// A set of dimensions: bit `d` stands for dimension `d`.
pub(crate) type Dims = u64;

/// The dimensions of `set`, in increasing order. (One step a dimension, not
/// a test of all 64 bits: the search's planning calls this on every set it
/// weighs, which on inputs of a few entries costs more than the counting.)
pub(crate) fn dims_of(set: Dims) -> impl Iterator<Item = usize> {
    let mut rest = set;
    std::iter::from_fn(move || {
        let d = rest.trailing_zeros();
        rest &= rest.wrapping_sub(1);
        (d < Dims::BITS).then_some(d as usize)
    })
}

/// The largest bitmap (in bits) worth a scan: 8 MiB. Above that, each bit set
/// misses the caches, and a partition pass is cheaper per entry.
const DENSE_BITS: u64 = 1 << 26;
/// The bitmaps one scan fills, in bits (1 MiB: within L2). A bigger bitmap
/// takes a scan of its own.
const SCAN_BITS: u64 = 1 << 23;
/// A bitmap this small (8 KiB) stays in L1: it rides in another set's scan.
const SMALL_BITS: u64 = 1 << 16;
/// A bucket bitmap of at most this many bits (128 KiB) in a partition pass
/// stays in L2: a dense set whose cells within a bucket are that few, and
/// whose bitmap alone would not fit L1, is counted in a pass that runs
/// anyway rather than by a scan (`Counter::rides_in_pass`).
const RIDE_BITS: u32 = 20;
/// The most cells of a set's rest counted by runs with a stamp per cell
/// (`Runs::count_stamped`): 1 MiB of stamps, within L2.
const STAMP_CELLS: u64 = 1 << 18;
/// The longest mean run for which the search counts a set by hashing runs
/// (`Runs::count_hashed`) as a dense set, in its first rounds: on longer
/// runs a partition pass's bitmaps cost less than the probes
/// (docs/benchmarks-history.md, "Auto, round 8", measured with a table
/// emptied run by run).
const RUN_HASHED: u64 = 4;
/// The slots (of a run number and a cell, 16 KiB) a count by runs with a
/// hash table starts with (`Runs::count_hashed`): twice a run of 512 cells.
const RUN_SLOT_BITS: u32 = 10;
/// The longest run counted by hashing runs in place of a partition pass
/// that would hash the set (`Counter::hashed_by_runs`): the table, two to
/// four slots of 16 bytes a cell of the longest run, stays in L2.
const RUN_TABLE: u64 = 1 << 13;
/// Entries per block of a bitmap scan: 64 KiB of rank-4 coordinates, which
/// stay in L2 while each set of the scan reads them.
const SCAN_BLOCK: usize = 2048;
/// Bitmap bits allowed per entry, over all bitmaps in flight (16 bytes).
const BITS_PER_ENTRY: u64 = 128;
/// Bitmap bits always allowed, however few the entries (512 bytes: zeroing
/// and counting a bigger bitmap would cost more than hashing a few entries).
const MIN_BITS: u64 = 1 << 12;
/// The smallest chunk of input worth a parallel task.
pub(super) const MIN_CHUNK: usize = 1 << 15;
/// Inputs of at most this many entries (the builder's small inputs) have
/// each set counted by equality masks (`Counter::count_tiny`): the bitmaps'
/// and passes' planning and buffers cost more than the counting.
const TINY: usize = 64;

/// A set to count by a bitmap scan, and the sets to project after it, in
/// order, each `(set, from)`: from the scanned set's bitmap or from one
/// projected before.
type Scanned = (Dims, Vec<(Dims, Dims)>);

/// The counts found so far: a slot per set up to rank [`SLOTS_MAX_RANK`]
/// (every set the search weighs, looked up without hashing: on a tiny input
/// hashing took a fifth of an `Auto` build), else hashed.
enum Known {
    /// `D(set)` at `set`, `u64::MAX` where not counted (a count is at most `nnz`).
    Slots(Vec<u64>),
    Hashed(HashMap<Dims, u64>),
}

/// The highest rank whose sets [`Known`] keeps a slot each for (256 slots:
/// the search's ranks).
const SLOTS_MAX_RANK: usize = 8;

impl Known {
    fn new(rank: usize) -> Self {
        if rank <= SLOTS_MAX_RANK {
            Known::Slots(vec![u64::MAX; 1 << rank])
        } else {
            Known::Hashed(HashMap::new())
        }
    }

    fn get(&self, set: Dims) -> Option<u64> {
        match self {
            Known::Slots(slots) => slots.get(set as usize).copied().filter(|&d| d != u64::MAX),
            Known::Hashed(map) => map.get(&set).copied(),
        }
    }

    fn insert(&mut self, set: Dims, distinct: u64) {
        match self {
            Known::Slots(slots) => {
                if let Some(slot) = slots.get_mut(set as usize) {
                    *slot = distinct;
                }
            }
            Known::Hashed(map) => {
                map.insert(set, distinct);
            }
        }
    }

    fn extend(&mut self, counts: impl IntoIterator<Item = (Dims, u64)>) {
        counts.into_iter().for_each(|(set, distinct)| self.insert(set, distinct));
    }

    /// Drops `set`'s count (the tests count it again by another path).
    #[cfg(test)]
    fn forget(&mut self, set: Dims) {
        match self {
            Known::Slots(slots) => slots.get_mut(set as usize).into_iter().for_each(|d| *d = u64::MAX),
            Known::Hashed(map) => {
                map.remove(&set);
            }
        }
    }
}

/// Distinct-projection counts, exact, computed on demand and kept.
pub(crate) struct Counter<'a> {
    source: &'a Source<'a>,
    parallel: bool,
    known: Known,
    /// The partition passes' key array, kept from pass to pass: a fresh
    /// array of 10M keys costs 20k page faults, a third of its scatter.
    keys: KeyArrays,
    /// The equality masks of an input of at most [`TINY`] entries, once made.
    tiny: Option<TinyMasks>,
    /// When the entries are in identity order (`count_sorted_prefixes`
    /// found no descent): per entry, the first dimension where it differs
    /// from the entry before it (0 for the first, the rank for an equal
    /// one). A set holding the first dimensions is then counted by runs
    /// (`Counter::by_runs`).
    first_diff: Option<Vec<u8>>,
    /// `(k, n)`: the longest run of the first `k` dimensions has `n`
    /// entries (`Counter::longest_run`), for each `k` asked.
    longest: Vec<(usize, usize)>,
}

impl<'a> Counter<'a> {
    pub(crate) fn new(source: &'a Source<'a>, parallel: bool) -> Self {
        // Handing small inputs to the thread pool costs more than it saves.
        let parallel = parallel && source.len >= MIN_CHUNK;
        let known = Known::new(source.shape.len());
        let keys = KeyArrays::default();
        Self { source, parallel, known, keys, tiny: None, first_diff: None, longest: Vec::new() }
    }

    /// A counter whose partition passes write their keys into `scratch`
    /// (see `KeyArrays::lending`), given back by [`Counter::into_scratch`].
    pub(crate) fn lending(source: &'a Source<'a>, parallel: bool, scratch: Vec<u64>) -> Self {
        Self { keys: KeyArrays::lending(scratch), ..Self::new(source, parallel) }
    }

    /// The array lent to [`Counter::lending`], its contents overwritten.
    pub(crate) fn into_scratch(self) -> Vec<u64> {
        self.keys.into_lent()
    }

    /// `D(set)` if it has been counted.
    pub(crate) fn get(&self, set: Dims) -> Option<u64> {
        if set == 0 {
            return Some(u64::from(self.source.len > 0));
        }
        self.known.get(set)
    }

    /// Records counts found before the search (`checked_singles`).
    pub(crate) fn counted(&mut self, counts: &[(Dims, u64)]) {
        self.known.extend(counts.iter().copied());
    }

    /// Records `D(set)` found without counting (its bounds met).
    pub(crate) fn settle(&mut self, set: Dims, distinct: u64) {
        debug_assert!(self.get(set).map_or(true, |d| d == distinct));
        self.known.insert(set, distinct);
    }

    /// When the entries are in lexicographic order (the identity storage
    /// order, as files often are), counts the identity's prefix sets in one
    /// scan: `D` of the first `L + 1` dimensions is one plus the number of
    /// neighbours that differ within them. Stops at the first descent, and
    /// says whether there was none.
    pub(crate) fn count_sorted_prefixes(&mut self) -> bool {
        let (rank, len) = (self.source.shape.len(), self.source.len);
        // Keys are packed only of input found out of identity order
        // (`build/packed.rs`): the scan would stop at that descent.
        if self.source.packed.is_some() {
            return false;
        }
        let indices = self.source.indices;
        let scanned = match rank {
            4 => scan_sorted::<4>(indices, len),
            5 => scan_sorted::<5>(indices, len),
            _ => scan_sorted_any(indices, rank, len),
        };
        let Some(Sorted { first_diff, first }) = scanned else { return false };
        if len == 0 {
            return true;
        }
        self.first_diff = Some(first_diff);
        let mut differ = 0;
        for (length, f) in first.iter().take(rank).enumerate() {
            differ += f;
            self.known.insert(u64::MAX >> (63 - length), differ + 1);
        }
        true
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
    pub(crate) fn cells(&self, set: Dims) -> Option<u64> {
        dims_of(set).try_fold(1u64, |p, d| p.checked_mul(self.source.shape[d]))
    }

    /// Whether `set` is counted by a scan: by a bitmap of its cells, or by
    /// runs of sorted input (`Counter::by_runs`).
    pub(crate) fn is_dense(&self, set: Dims) -> bool {
        is_dense(self.source.shape, self.source.len, set) || self.by_runs(set).is_some()
    }

    /// Whether `set` is counted by runs: the entries are in identity order,
    /// `set` holds the first `k >= 1` dimensions (a *prefix*) and others
    /// (the *rest*) of few cells. Entries that share their prefix
    /// coordinates then lie side by side (a run), and `D(set)` is the sum
    /// over runs of the distinct rest cells within each: one scan of the
    /// entries, each a bit set in a bitmap of the rest's cells, cleared at
    /// the end of each run, or for fewer cells a stamp (`Runs`). That
    /// bitmap is the rest's alone, where a scan's would be the whole set's,
    /// and a partition pass would scatter the entries first. Returns `k`,
    /// the rest and how its cells are counted.
    fn by_runs(&self, set: Dims) -> Option<(usize, Dims, Tally)> {
        let (k, rest) = self.prefix_and_rest(set)?;
        self.runs_tally(k, rest).map(|tally| (k, rest, tally))
    }

    /// `set` as `k >= 1` first dimensions (a prefix) and the others (its
    /// rest, not empty), when the entries are in identity order: what a
    /// count by runs takes. `None` otherwise.
    fn prefix_and_rest(&self, set: Dims) -> Option<(usize, Dims)> {
        let k = set.trailing_ones() as usize;
        let rest = set & !(u64::MAX >> (64 - k.max(1)));
        (self.first_diff.is_some() && k > 0 && rest != 0).then_some((k, rest))
    }

    /// How runs of the first `k` dimensions count the cells of `rest`: by
    /// stamps (`Runs::count_stamped`: 4 bytes a cell, within the bitmaps'
    /// budget of 16 bytes an entry and in L2, and a run number per entry
    /// below `u32::MAX`); when the runs are short (the identity's prefix
    /// counts tell their mean length) and the rest's cells fit a word, by a
    /// hash table of runs' cells (`Runs::count_hashed`: a bitmap's clearing
    /// after runs of an entry or two costs more than a probe); else by a
    /// bitmap cleared run by run, within that budget. `None`: not by runs.
    fn runs_tally(&self, k: usize, rest: Dims) -> Option<Tally> {
        let cells = self.cells(rest)?;
        let entries = self.entries();
        let budget = BITS_PER_ENTRY.saturating_mul(entries).clamp(MIN_BITS, SCAN_BITS);
        if cells <= STAMP_CELLS.min(entries.saturating_mul(4)) && entries < u64::from(u32::MAX) {
            return Some(Tally::Stamps);
        }
        let short = self
            .get(u64::MAX >> (64 - k.clamp(1, 64)))
            .is_some_and(|runs| entries <= runs.saturating_mul(RUN_HASHED));
        if cells <= budget && !short {
            return Some(Tally::Bitmap);
        }
        short.then_some(Tally::Hash)
    }

    /// How `set`, which a partition pass by `a` would hash after a scatter,
    /// is counted by hashing runs instead (`Runs::count_hashed`): when the
    /// entries are in identity order, `set` holds a prefix and its rest's
    /// cells fit a word, and no run has more than [`RUN_TABLE`] entries
    /// (the table stays in cache, where a pass splits a big bucket into
    /// parts that do). That is the probes a bucket of the pass would take,
    /// without the scatter. (Keys left in buckets by `a` are hashed there:
    /// a bucket's table reads a key, a run's packs the rest's coordinates.)
    fn hashed_by_runs(&mut self, a: usize, set: Dims) -> Option<(usize, Dims, Tally)> {
        let (k, rest) = self.prefix_and_rest(set)?;
        let scattered = self.scattered_by() == Some(a) && self.packs_all();
        if scattered || self.counts_by_bitmap(a, set) {
            return None;
        }
        self.cells(rest)?;
        (self.longest_run(k) as u64 <= RUN_TABLE).then_some((k, rest, Tally::Hash))
    }

    /// The entries of the longest run of the first `k` dimensions (0 unless
    /// the entries are in identity order): one read of the first
    /// differences, kept for the next set of the same `k`.
    fn longest_run(&mut self, k: usize) -> usize {
        if let Some(&(_, n)) = self.longest.iter().find(|(of, _)| *of == k) {
            return n;
        }
        let Some(first_diff) = self.first_diff.as_deref() else { return 0 };
        let k8 = u8::try_from(k).unwrap_or(u8::MAX);
        // Without a branch on where runs start.
        let (mut start, mut longest) = (0, 0);
        for (e, &f) in first_diff.iter().enumerate() {
            start = if f < k8 { e } else { start };
            longest = longest.max(e - start + 1);
        }
        self.longest.push((k, longest));
        longest
    }

    /// Whether a partition pass by `a` counts the dense `set` for less than a
    /// scan would: `set` holds `a`, its bitmap would not stay in L1 (a scan
    /// fills one that does for about a nanosecond an entry), and its cells
    /// within a bucket of the pass fit a bitmap in L2. Only when the pass's
    /// keys hold every dimension anyway (`pass::packs_all`), so that the set
    /// does not widen the pass.
    pub(crate) fn rides_in_pass(&self, a: usize, set: Dims) -> bool {
        let shape = self.source.shape;
        let bits: u32 = dims_of(set).map(|d| bits_below(shape[d])).sum();
        let in_bucket = bits.saturating_sub(pass::bucket_bits(bits_below(shape[a]), self.source.len));
        set >> a & 1 == 1
            && self.by_runs(set).is_none()
            && self.cells(set).is_some_and(|c| c > SMALL_BITS)
            && pass::packs_all(shape)
            && pass::fits_bucket_bitmap(set)
            && in_bucket <= RIDE_BITS.min(pass::local_limit(self.source.len))
    }

    /// Whether a partition pass by `a` counts `set` (which holds `a`) by
    /// bitmaps (fibers' too), a fraction of what hashing it costs, with keys of every
    /// dimension (`pass::packs_all`, so that another pass by `a` counts on
    /// the keys as they lie in its buckets).
    pub(crate) fn counts_by_bitmap(&self, a: usize, set: Dims) -> bool {
        self.packs_all() && pass::counts_by_bitmap(self.source.shape, a, set, self.source.len)
    }

    /// Whether a partition pass's keys hold every dimension (`pass::packs_all`).
    pub(crate) fn packs_all(&self) -> bool {
        pass::packs_all(self.source.shape)
    }

    /// The dimension the last partition pass left the keys in buckets by,
    /// if they are still there: another pass by it needs no scatter.
    pub(crate) fn scattered_by(&self) -> Option<usize> {
        self.keys.scattered.as_ref().map(|&(a, _)| a)
    }

    /// Counts every set of `sets` (all dense) by bitmaps. One scan of the
    /// entries fills the bitmaps of several sets (reading the input is what
    /// a scan costs), and scans run in parallel, in waves whose bitmaps
    /// together stay within the memory budget. A set within another of
    /// `sets` whose bitmap has few rows is projected from that bitmap
    /// instead of scanned (`Bitmap::project`), or from a bitmap itself
    /// projected.
    pub(crate) fn count_dense(&mut self, sets: &[Dims]) {
        debug_assert!(sets.iter().all(|&s| self.is_dense(s)));
        if self.count_tiny(sets) {
            return;
        }
        let (mut runs, mut scanned) = (Vec::new(), Vec::new());
        for &set in sets.iter().filter(|&&s| self.get(s).is_none()) {
            match self.by_runs(set) {
                Some(how) => runs.push((set, how)),
                None => scanned.push(set),
            }
        }
        for (set, how) in runs {
            let distinct = self.count_runs(how);
            self.known.insert(set, distinct);
        }
        let sets = &scanned[..];
        // The bitmaps' memory budget is the key array's: let it go first.
        self.keys.release();
        let cells = |set: Dims| self.cells(set).unwrap_or(0);
        let scanned = self.derivations(sets);
        if scanned.is_empty() {
            return;
        }
        let projected = |(_, subs): &Scanned| subs.iter().map(|&(s, _)| cells(s)).sum::<u64>();
        let threads = if self.parallel { rayon::current_num_threads() } else { 1 };
        // A scan's bits in flight: its bitmaps and those projected from them.
        let bits =
            |(filled, sets): (u64, Vec<Scanned>)| (filled + sets.iter().map(projected).sum::<u64>(), sets);
        let mut scans: Vec<(u64, Vec<Scanned>)> =
            self.group(scanned, threads).into_iter().map(bits).collect();
        let budget = BITS_PER_ENTRY.saturating_mul(self.entries()).max(MIN_BITS);
        while !scans.is_empty() {
            let (mut wave, mut used) = (0, 0);
            while wave < scans.len() && (wave == 0 || used + scans[wave].0 <= budget) {
                used += scans[wave].0;
                wave += 1;
            }
            let count = |(_, sets): &(u64, Vec<Scanned>)| self.finish(self.fill(sets), sets);
            let counted: Vec<Vec<(Dims, u64)>> = if self.parallel {
                scans[..wave].par_iter().map(count).collect()
            } else {
                scans[..wave].iter().map(count).collect()
            };
            self.known.extend(counted.into_iter().flatten());
            scans.drain(..wave);
        }
    }

    /// `D` of the set of the first `k` dimensions and `rest`, counted by
    /// runs with `tally` (see [`Counter::by_runs`]): chunks of whole runs
    /// in parallel, each with its own table.
    fn count_runs(&self, (k, rest, tally): (usize, Dims, Tally)) -> u64 {
        let Some(first_diff) = self.first_diff.as_deref() else { return 0 };
        let len = self.source.len.min(first_diff.len());
        let shape = self.source.shape;
        let rest_dims: Vec<usize> = dims_of(rest).collect();
        let extents: Vec<u64> = rest_dims.iter().map(|&d| shape[d]).collect();
        let words = self.cells(rest).unwrap_or(0).div_ceil(64) as usize;
        // An entry starts a run when it differs from the one before it
        // within the prefix (the first entry's `first_diff` is 0).
        let k = k as u8;
        let mut bounds: Vec<usize> = pass::chunks(len, self.parallel)
            .into_iter()
            .map(|c| first_diff[c.start..len].iter().position(|&f| f < k).map_or(len, |p| c.start + p))
            .collect();
        bounds.push(len);
        bounds.dedup();
        // Cells of the rest's coordinates are mixed radix: below the rest's
        // cells for coordinates inside the shape (wrapping keeps them total).
        let chunk = |range: Range<usize>| -> u64 {
            let runs = Runs { first_diff: &first_diff[range.clone()], k, words, tally };
            match (self.source.indices, &rest_dims[..]) {
                // (Keys are packed only of input out of identity order,
                // which has no runs; read as any packed source is.)
                _ if self.source.packed.is_some() => runs.count(|e| {
                    let coord = |d: usize| self.source.coord(range.start + e, d);
                    rest_dims
                        .iter()
                        .zip(&extents)
                        .fold(0u64, |cell, (&d, &x)| cell.wrapping_mul(x).wrapping_add(coord(d)))
                }),
                (Indices::Columnar(cols), &[d]) => runs.count(|e| cols[d][range.start + e]),
                (Indices::Columnar(cols), &[d, f]) => runs.count(|e| {
                    cols[d][range.start + e].wrapping_mul(shape[f]).wrapping_add(cols[f][range.start + e])
                }),
                (Indices::Columnar(cols), _) => {
                    let columns: Vec<&[u64]> = rest_dims.iter().map(|&d| &cols[d][range.clone()]).collect();
                    runs.count(|e| {
                        columns
                            .iter()
                            .zip(&extents)
                            .fold(0u64, |cell, (c, &x)| cell.wrapping_mul(x).wrapping_add(c[e]))
                    })
                }
                (Indices::RowMajor(flat), _) => {
                    let rank = shape.len();
                    let rows = &flat[range.start * rank..range.end * rank];
                    match rest_dims[..] {
                        [d] => runs.count(|e| rows[e * rank + d]),
                        [d, f] => runs.count(|e| {
                            rows[e * rank + d].wrapping_mul(shape[f]).wrapping_add(rows[e * rank + f])
                        }),
                        _ => runs.count(|e| {
                            let row = &rows[e * rank..(e + 1) * rank];
                            rest_dims
                                .iter()
                                .zip(&extents)
                                .fold(0u64, |cell, (&d, &x)| cell.wrapping_mul(x).wrapping_add(row[d]))
                        }),
                    }
                }
            }
        };
        let ranges: Vec<Range<usize>> = bounds.windows(2).map(|w| w[0]..w[1]).collect();
        if self.parallel {
            ranges.into_par_iter().map(chunk).sum()
        } else {
            ranges.into_iter().map(chunk).sum()
        }
    }

    /// `scanned` grouped into scans, each with its bits: enough scans to
    /// keep each one's bitmaps in cache and every thread busy. Small
    /// bitmaps (in L1) do not make scans of their own: each scan reads all
    /// the input, which costs more than setting a bit in cache.
    fn group(&self, scanned: Vec<Scanned>, threads: usize) -> Vec<(u64, Vec<Scanned>)> {
        let cells = |set: Dims| self.cells(set).unwrap_or(0);
        let big: Vec<u64> = scanned.iter().map(|(set, _)| cells(*set)).filter(|&c| c > SMALL_BITS).collect();
        let total: u64 = big.iter().sum();
        let count = (total.div_ceil(SCAN_BITS) as usize).max(threads).min(big.len()).max(1);
        let mut scans: Vec<(u64, Vec<Scanned>)> = vec![(0, Vec::new()); count];
        for set in scanned {
            // The biggest sets first, each to the scan with the fewest bits so far.
            if let Some(scan) = scans.iter_mut().min_by_key(|(bits, _)| *bits) {
                scan.0 += cells(set.0);
                scan.1.push(set);
            }
        }
        scans
    }

    /// The uncounted sets of `sets` to scan, biggest first, each with the
    /// sets to project, in order, each from the smallest bitmap holding it,
    /// scanned or projected before it, whose projection costs less than a
    /// scan of the entries.
    fn derivations(&self, sets: &[Dims]) -> Vec<Scanned> {
        let cells = |set: Dims| self.cells(set).unwrap_or(0);
        let mut todo: Vec<Dims> = sets.iter().copied().filter(|&s| self.get(s).is_none()).collect();
        // Biggest first, and a superset before its subsets on equal cells.
        todo.sort_unstable_by_key(|&s| (std::cmp::Reverse((cells(s), s.count_ones())), s));
        todo.dedup();
        // A projection takes a word operation or two per row of up to 64
        // cells; a scan reads every entry's coordinates and sets a bit at
        // random, which costs more than a row. But a scan fills a bitmap
        // small enough for L1 for about a nanosecond an entry: projecting
        // one must be cheaper still.
        let cheap = |from: Dims, set: Dims| {
            let rows = Bitmap::row_words(self.source.shape, from);
            rows.saturating_mul(if cells(set) <= SMALL_BITS { 4 } else { 1 }) <= self.entries()
        };
        let mut scanned: Vec<Scanned> = Vec::new();
        for set in todo {
            let mut source: Option<(u64, usize, Dims)> = None;
            for (i, (s, subs)) in scanned.iter().enumerate() {
                for from in std::iter::once(*s).chain(subs.iter().map(|&(sub, _)| sub)) {
                    if set & !from == 0 && source.map_or(true, |b| cells(from) < b.0) && cheap(from, set) {
                        source = Some((cells(from), i, from));
                    }
                }
            }
            match source {
                Some((_, i, from)) => scanned[i].1.push((set, from)),
                None => scanned.push((set, Vec::new())),
            }
        }
        scanned
    }

    /// The bitmaps of the scanned sets of `sets`, filled block by block:
    /// each block of entries is read from memory once, then stays in cache
    /// while every set takes it.
    fn fill(&self, sets: &[Scanned]) -> Vec<Bitmap> {
        let len = self.source.len;
        let mut maps: Vec<Bitmap> =
            sets.iter().map(|&(set, _)| Bitmap::new(self.source.shape, set)).collect();
        for start in (0..len).step_by(SCAN_BLOCK) {
            let block = start..(start + SCAN_BLOCK).min(len);
            for map in &mut maps {
                map.fill(self.source, block.clone());
            }
        }
        maps
    }

    /// `D` of each of `sets` by one scan of the entries, and of the sets
    /// projected from them.
    #[cfg(test)]
    fn bitmaps(&self, sets: &[Scanned]) -> Vec<(Dims, u64)> {
        self.finish(self.fill(sets), sets)
    }

    /// `D` of the scanned sets of `sets` from their filled bitmaps `maps`,
    /// and of the sets projected from those (or from one projected before).
    fn finish(&self, maps: Vec<Bitmap>, sets: &[Scanned]) -> Vec<(Dims, u64)> {
        let mut counts = Vec::new();
        for (map, (_, subs)) in maps.into_iter().zip(sets) {
            counts.push((map.set, map.count()));
            let mut projected = vec![map];
            for &(sub, from) in subs {
                let Some(from) = projected.iter().find(|m| m.set == from) else { continue };
                let into = from.project(self.source.shape, sub);
                counts.push((sub, into.count()));
                projected.push(into);
            }
        }
        counts
    }

    /// Counts every set of `sets` (each contains dimension `a`; dense ones
    /// only where they ride, `rides_in_pass`) in one partition pass by `a`; in more than one when their coordinates do not
    /// pack into 128 bits together, and by comparison sorts for a set whose
    /// own coordinates do not.
    pub(crate) fn count_pass(&mut self, a: usize, sets: &[Dims]) {
        if self.count_tiny(sets) {
            return;
        }
        let bits = |set: Dims| dims_of(set).map(|d| bits_below(self.source.shape[d])).sum::<u32>();
        let mut todo: Vec<Dims> = sets.iter().copied().filter(|&s| self.get(s).is_none()).collect();
        debug_assert!(todo.iter().all(|&s| s >> a & 1 == 1));
        todo.sort_unstable_by_key(|&s| (bits(s), s));
        todo.dedup();
        // Sets the pass would hash, on sorted input: by runs, no scatter.
        todo.retain(|&set| match self.hashed_by_runs(a, set) {
            Some(how) => {
                let distinct = self.count_runs(how);
                self.known.insert(set, distinct);
                false
            }
            None => true,
        });
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

    /// Whether the input is tiny: at most [`TINY`] entries, which
    /// [`Counter::count_tiny`] counts.
    pub(crate) fn is_tiny(&self) -> bool {
        self.source.len <= TINY
    }

    /// Counts `sets` on a tiny input (at most [`TINY`] entries); `false`
    /// (nothing counted) on a bigger one. Each dimension's equalities are
    /// bit masks ([`TinyMasks`]): two entries share a set's projection where
    /// the masks of its dimensions all have the bit, and an entry is a new
    /// projection when no entry before it shares its own. A set then costs
    /// an AND per dimension and entry, whatever its width.
    pub(crate) fn count_tiny(&mut self, sets: &[Dims]) -> bool {
        if !self.is_tiny() {
            return false;
        }
        let len = self.source.len;
        for &set in sets {
            if self.get(set).is_some() {
                continue;
            }
            let masks = self.tiny.get_or_insert_with(TinyMasks::default);
            dims_of(set).for_each(|d| masks.make(self.source, d));
            let shared = |i: usize| dims_of(set).fold(u64::MAX, |m, d| m & masks.of(d)[i]);
            // Bits below `i`: the entries before it (i < 64).
            let first = |i: usize| shared(i) & ((1u64 << i) - 1) == 0;
            let distinct = (0..len).filter(|&i| first(i)).count() as u64;
            self.known.insert(set, distinct);
        }
        true
    }
}

/// A tiny input's equality masks, made once per dimension when a set first
/// needs them (the search may count a few times on one input): for
/// dimension `d`, `of(d)[i]` has bit `j` set when entries `i` and `j` share
/// their coordinate of `d`. Only the dimensions asked for take room.
pub(crate) struct TinyMasks {
    /// `slot[d]`: one plus the index of `d`'s masks in `masks` (0: not made).
    slot: [u8; 64],
    masks: Vec<[u64; TINY]>,
}

impl Default for TinyMasks {
    fn default() -> Self {
        Self { slot: [0; 64], masks: Vec::new() }
    }
}

impl TinyMasks {
    fn of(&self, d: usize) -> &[u64; TINY] {
        &self.masks[usize::from(self.slot[d]) - 1]
    }

    /// Makes `d`'s masks from one sort of its coordinates, so that entries
    /// sharing one are a run. Needs at most [`TINY`] entries.
    fn make(&mut self, source: &Source<'_>, d: usize) {
        if self.slot[d] != 0 {
            return;
        }
        let len = source.len;
        // Each key is a coordinate over its entry's 6 bits.
        let mut keys = [0u128; TINY];
        keys.iter_mut().enumerate().take(len).for_each(|(e, k)| {
            *k = u128::from(source.coord(e, d)) << 6 | e as u128;
        });
        let keys = &mut keys[..len];
        keys.sort_unstable();
        let mut same = [0u64; TINY];
        for run in keys.chunk_by(|a, b| a >> 6 == b >> 6) {
            let mask = run.iter().fold(0u64, |m, &k| m | 1 << (k & 63));
            run.iter().for_each(|&k| same[(k & 63) as usize] = mask);
        }
        self.masks.push(same);
        // At most 64 dimensions (`Dims`), so the count fits a `u8`.
        self.slot[d] = self.masks.len() as u8;
    }
}

/// Whether `set` of `shape` is counted by a bitmap scan over `entries`
/// entries (its cells few enough), not by a partition pass.
pub(crate) fn is_dense(shape: &[u64], entries: usize, set: Dims) -> bool {
    let budget = BITS_PER_ENTRY.saturating_mul(entries as u64).max(MIN_BITS);
    let cells = dims_of(set).try_fold(1u64, |p, d| p.checked_mul(shape[d]));
    cells.is_some_and(|c| c <= DENSE_BITS.min(budget))
}

/// Per dimension of `shape`, whether `Auto` over `len` entries counts its
/// single `D({d})` by a bitmap as it checks the bounds ([`checked_singles`],
/// and the packing of `build/packed.rs`, which reads every coordinate too):
/// a bitmap within one scan's bits (as `Counter::is_dense` allows, and not
/// for a tiny input, counted by masks), all of them together within the
/// bits allowed per entry (the budget of the bitmaps in flight), and not a
/// dimension within a pair of few cells, whose bitmap one scan fills and
/// projects it from for next to nothing (`Counter::derivations`).
pub(crate) fn singles_counted(shape: &[u64], len: usize) -> Vec<bool> {
    let budget = BITS_PER_ENTRY.saturating_mul(len as u64).clamp(MIN_BITS, SCAN_BITS);
    let in_dense_pair = |d: usize| {
        (0..shape.len()).any(|e| e != d && shape[d].checked_mul(shape[e]).is_some_and(|c| c <= budget))
    };
    let mut room = BITS_PER_ENTRY.saturating_mul(len as u64).max(MIN_BITS);
    (0..shape.len())
        .map(|d| {
            let takes = len > TINY && shape[d] <= budget.min(room) && !in_dense_pair(d);
            room -= if takes { shape[d] } else { 0 };
            takes
        })
        .collect()
}

/// A bitmap of the coordinates below `extent`, a bit each, for a single
/// that [`singles_counted`] selects (set by [`set_bit`], counted by
/// [`bits_set`]).
pub(crate) fn single_bitmap(extent: u64) -> Vec<u64> {
    vec![0; extent.div_ceil(64) as usize]
}

/// Sets bit `c` of `words` (none past their end).
#[inline(always)]
pub(crate) fn set_bit(words: &mut [u64], c: u64) {
    if let Some(word) = words.get_mut((c >> 6) as usize) {
        *word |= 1 << (c & 63);
    }
}

/// The bits set in `words`: `D` of the single whose coordinates set them.
pub(crate) fn bits_set(words: &[u64]) -> u64 {
    words.iter().map(|w| u64::from(w.count_ones())).sum()
}

/// The crate's bounds check: whether every coordinate is inside the shape,
/// reading each block of coordinates once. With `count` (`Auto`, which
/// reads every coordinate before it counts), it also counts `D({d})` of
/// each dimension that [`singles_counted`] selects, by bitmaps set from
/// each block just checked: the singles' scans would read the input again
/// (memory bandwidth, not the bits, is what both cost). `Err(entry)` when a
/// coordinate is outside: no entry before `entry` has one, and
/// `check_bounds` searches from there for the first.
pub(crate) fn checked_singles(
    source: &Source<'_>,
    parallel: bool,
    count: bool,
) -> Result<Vec<(Dims, u64)>, usize> {
    let (len, shape) = (source.len, source.shape);
    let counts = if count { singles_counted(shape, len) } else { vec![false; shape.len()] };
    let counted = |d: usize| counts.get(d).copied().unwrap_or(false);
    let bitmap = |d: usize| if counted(d) { single_bitmap(shape[d]) } else { Vec::new() };
    // (Only coordinates checked against the extent reach it: every bit is inside.)
    let (set, distinct) = (set_bit, bits_set);
    match source.indices {
        // (Keys are packed only of checked input; this reads them as any
        // reader of a packed source does, a coordinate at a time.)
        _ if source.packed.is_some() => {
            let outside = |e: usize| (0..shape.len()).any(|d| source.coord(e, d) >= shape[d]);
            (0..len).find(|&e| outside(e)).map_or(Ok(Vec::new()), Err)
        }
        Indices::Columnar(cols) => {
            let column = |(d, col): (usize, &&[u64])| -> Result<Option<(Dims, u64)>, usize> {
                let (col, extent, counting) = (&col[..len.min(col.len())], shape[d], counted(d));
                let mut words = bitmap(d);
                for (b, block) in col.chunks(SCAN_BLOCK).enumerate() {
                    // Checked first, by a predicted branch a coordinate: a
                    // fold into one flag chains the compares and ran 1.8
                    // times as long as reading the column.
                    if let Some(at) = block.iter().position(|&c| c >= extent) {
                        return Err(b * SCAN_BLOCK + at);
                    }
                    if counting {
                        block.iter().for_each(|&c| set(&mut words, c));
                    }
                }
                Ok(counting.then(|| (1 << d, distinct(&words))))
            };
            let checked: Vec<Result<Option<(Dims, u64)>, usize>> = if parallel && len >= MIN_CHUNK {
                cols.par_iter().enumerate().map(column).collect()
            } else {
                cols.iter().enumerate().map(column).collect()
            };
            // The first entry outside in any column.
            if let Some(first) = checked.iter().filter_map(|c| c.err()).min() {
                return Err(first);
            }
            Ok(checked.into_iter().flatten().flatten().collect())
        }
        Indices::RowMajor(flat) => {
            let rank = shape.len().max(1);
            let rows = &flat[..len.saturating_mul(rank).min(flat.len())];
            let dims: Vec<usize> = (0..shape.len()).filter(|&d| counted(d)).collect();
            let mut maps: Vec<Vec<u64>> = dims.iter().map(|&d| bitmap(d)).collect();
            // A block of rows is checked without a branch per coordinate.
            let outside = |row: &[u64]| row.iter().zip(shape).fold(false, |out, (&c, &e)| out | (c >= e));
            for (b, block) in rows.chunks(SCAN_BLOCK * rank).enumerate() {
                if block.chunks_exact(rank).fold(false, |o, row| o | outside(row)) {
                    return Err(b * SCAN_BLOCK);
                }
                for (words, &d) in maps.iter_mut().zip(&dims) {
                    block.chunks_exact(rank).for_each(|row| set(words, row[d]));
                }
            }
            Ok(dims.iter().zip(&maps).map(|(&d, words)| (1 << d, distinct(words))).collect())
        }
    }
}

/// Calls `f(entry, coords)` for every entry of `range`, where `coords[i]` is
/// the entry's coordinate of dimension `dims[i]`.
#[inline(always)]
pub(super) fn project(
    source: &Source<'_>,
    dims: &[usize],
    range: Range<usize>,
    mut f: impl FnMut(usize, &[u64]),
) {
    let mut c = [0u64; 64];
    let k = dims.len();
    if let Some(packed) = source.packed {
        for (entry, &key) in range.clone().zip(&packed.keys[range]) {
            for (c, &d) in c.iter_mut().zip(dims) {
                *c = packed.coord_of(key, d);
            }
            f(entry, &c[..k]);
        }
        return;
    }
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

/// What a scan of input in lexicographic order finds (`count_sorted_prefixes`).
struct Sorted {
    /// Per entry, the first dimension where it differs from the entry before
    /// it (the rank when equal; 0 for the first entry).
    first_diff: Vec<u8>,
    /// `first[f]`: the neighbours whose first difference is in dimension `f`.
    first: [u64; 65],
}

/// Scans `len` entries of `rank` dimensions for a descent, noting where each
/// entry first differs from the one before it: `None` at the first descent.
/// (The untouched pages of an input out of order, whose scan stops early,
/// are never mapped.) By a comparison a dimension until they differ.
fn scan_sorted_any(indices: Indices<'_>, rank: usize, len: usize) -> Option<Sorted> {
    let mut counts = vec![0u64; rank];
    let mut first_diff: Vec<u8> = Vec::with_capacity(len);
    first_diff.push(0);
    // Whether a neighbour pair is in order, noting where it differs.
    let mut ascends = |f: Option<usize>, descends: bool| match f {
        Some(_) if descends => false,
        Some(f) => {
            counts[f] += 1;
            first_diff.push(f as u8);
            true
        }
        None => {
            first_diff.push(rank as u8);
            true
        }
    };
    let in_order = match indices {
        Indices::RowMajor(flat) => {
            let rows = || flat.chunks_exact(rank.max(1));
            rows().zip(rows().skip(1)).all(|(p, n)| {
                let f = p.iter().zip(n).position(|(p, n)| p != n);
                ascends(f, f.is_some_and(|f| n[f] < p[f]))
            })
        }
        Indices::Columnar(cols) => (1..len).all(|e| {
            let f = cols.iter().position(|c| c[e] != c[e - 1]);
            ascends(f, f.is_some_and(|f| cols[f][e] < cols[f][e - 1]))
        }),
    };
    let mut first = [0u64; 65];
    first.iter_mut().zip(&counts).for_each(|(f, &c)| *f = c);
    in_order.then_some(Sorted { first_diff, first })
}

/// [`scan_sorted_any`] for `R` dimensions, without a branch on where
/// neighbours differ: a bit per dimension that differs and per dimension
/// that descends, then the lowest of the first. Where neighbours differ is
/// as unpredictable as the data, and a comparison a dimension costs a
/// mispredicted branch an entry or two: on the real tensors of ranks 4 and
/// 5 this scan takes 20% to 48% less time. (On rank 3 it took 5% to 35%
/// more, so `count_sorted_prefixes` takes it for ranks 4 and 5 only.)
fn scan_sorted<const R: usize>(indices: Indices<'_>, len: usize) -> Option<Sorted> {
    let mut first = [0u64; 65];
    let mut first_diff = vec![0u8; len];
    let slots = first_diff.iter_mut().skip(1);
    let in_order = match indices {
        Indices::RowMajor(flat) => {
            let mut rows = flat.chunks_exact(R).take(len).filter_map(|r| <&[u64; R]>::try_from(r).ok());
            let mut prev = rows.next();
            let mut in_order = true;
            for (next, slot) in rows.zip(slots) {
                let Some(p) = prev else { break };
                let (f, descends) = first_difference(p, next);
                if descends {
                    in_order = false;
                    break;
                }
                *slot = f as u8;
                first[f] += 1;
                prev = Some(next);
            }
            in_order
        }
        Indices::Columnar(cols) => {
            let cols: [&[u64]; R] = std::array::from_fn(|d| cols.get(d).copied().unwrap_or(&[]));
            let at = |e: usize| -> [u64; R] { std::array::from_fn(|d| cols[d].get(e).copied().unwrap_or(0)) };
            let mut prev = at(0);
            let mut in_order = true;
            for (e, slot) in (1..len).zip(slots) {
                let next = at(e);
                let (f, descends) = first_difference(&prev, &next);
                if descends {
                    in_order = false;
                    break;
                }
                *slot = f as u8;
                first[f] += 1;
                prev = next;
            }
            in_order
        }
    };
    in_order.then_some(Sorted { first_diff, first })
}

/// Where `next` first differs from `prev` (`R` when equal), and whether it
/// is below `prev` there: a bit per dimension that differs and per
/// dimension that descends, then the lowest of the first.
#[inline(always)]
fn first_difference<const R: usize>(prev: &[u64; R], next: &[u64; R]) -> (usize, bool) {
    let (mut differs, mut descends) = (0u64, 0u64);
    for d in 0..R {
        differs |= u64::from(prev[d] != next[d]) << d;
        descends |= u64::from(next[d] < prev[d]) << d;
    }
    ((differs.trailing_zeros() as usize).min(R), descends & differs & differs.wrapping_neg() != 0)
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

/// One chunk of whole runs of sorted input (`Counter::by_runs`).
struct Runs<'a> {
    /// Per entry of the chunk, the first dimension where it differs from
    /// the entry before it.
    first_diff: &'a [u8],
    /// The prefix's length: an entry whose `first_diff` is below it starts a run.
    k: u8,
    /// The words of the rest's bitmap.
    words: usize,
    /// How each run's distinct cells are counted.
    tally: Tally,
}

/// How runs count their distinct cells (`Counter::runs_tally`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Tally {
    Stamps,
    Bitmap,
    Hash,
}

impl Runs<'_> {
    /// The distinct rest cells within each run, added up; `cell(e)` is
    /// entry `e`'s (of the chunk). Coordinates were checked against the
    /// shape, so cells are below `64 * words`; `get_mut` keeps this total.
    #[inline(always)]
    fn count(&self, cell: impl Fn(usize) -> u64) -> u64 {
        match self.tally {
            Tally::Stamps => return self.count_stamped(cell),
            Tally::Hash => return self.count_hashed(cell),
            Tally::Bitmap => {}
        }
        let mut map = vec![0u64; self.words];
        // The cells set in this run, to clear at its end; once as many as
        // the bitmap's words, it is cleared whole.
        let mut touched: Vec<u32> = Vec::new();
        let mut count = 0u64;
        for (e, &f) in self.first_diff.iter().enumerate() {
            if f < self.k {
                if touched.len() < self.words {
                    for &c in &touched {
                        if let Some(word) = map.get_mut(c as usize >> 6) {
                            *word = 0;
                        }
                    }
                } else {
                    map.fill(0);
                }
                touched.clear();
            }
            let c = cell(e);
            if let Some(word) = map.get_mut((c >> 6) as usize) {
                let bit = 1u64 << (c & 63);
                count += u64::from(*word & bit == 0);
                *word |= bit;
            }
            if touched.len() < self.words {
                touched.push(c as u32);
            }
        }
        count
    }

    /// [`Runs::count`] by a stamp per cell, the number of the run that last
    /// saw it, where a bitmap takes a bit: an entry is a new cell of its run
    /// when the cell's stamp is not the run's. No branch on where runs
    /// start (as unpredictable as a coin on runs of an entry or two) and no
    /// clearing.
    #[inline(always)]
    fn count_stamped(&self, cell: impl Fn(usize) -> u64) -> u64 {
        let mut stamps = Stamps::default();
        // A run number per entry at most (the first entry starts one).
        let mut tally = stamps.tally(self.words * 64, self.first_diff.len());
        tally.count(self.first_diff.iter().enumerate().map(|(e, &f)| (f < self.k, cell(e) as usize)))
    }

    /// [`Runs::count`] by a hash table, for rests of too many cells for a
    /// bitmap: linear probing over slots of `(run, cell)`, a slot empty for
    /// a run when another run's number is in it. So, as with stamps, no
    /// table is emptied between runs and no run's end is looked for: an
    /// entry costs its probe, whatever the runs' lengths (runs of an entry
    /// or two, a coin toss to branch on, are most runs of many files). The
    /// table holds at least twice the cells of the current run: a run that
    /// fills half of it doubles it and is counted again from its start.
    fn count_hashed(&self, cell: impl Fn(usize) -> u64) -> u64 {
        // Run numbers start above 0: a slot of run 0 is empty for every run.
        let mut bits = RUN_SLOT_BITS;
        let mut table: Vec<(u64, u64)> = vec![(0, 0); 1 << bits];
        let (mut count, mut run, mut run_start, mut in_run) = (0u64, 1u64, 0usize, 0usize);
        let n = self.first_diff.len();
        let mut e = 0;
        while e < n {
            // Without a branch on where runs start.
            let starts = self.first_diff[e] < self.k;
            run += u64::from(starts);
            in_run = if starts { 0 } else { in_run };
            run_start = if starts { e } else { run_start };
            if 2 * in_run >= table.len() {
                // A long run: a table twice the size, and the run again.
                bits += 1;
                table = vec![(0, 0); 1 << bits];
                count -= in_run as u64;
                (e, in_run) = (run_start, 0);
                continue;
            }
            let c = cell(e);
            let mask = table.len() - 1;
            // Fibonacci hashing: the product's top bits.
            let mut i = (c.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> (64 - bits)) as usize & mask;
            // A free slot is found: the run holds under half the slots.
            loop {
                let (r, v) = table[i];
                if r != run {
                    table[i] = (run, c);
                    count += 1;
                    in_run += 1;
                    break;
                }
                if v == c {
                    break;
                }
                i = (i + 1) & mask;
            }
            e += 1;
        }
        count
    }
}

#[cfg(test)]
mod tests;
