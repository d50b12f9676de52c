//! The partition pass: the entries' packed keys scattered into buckets by one
//! dimension's top bits, then each set's distinct masked keys counted per bucket.
//!
//! Every pass scatters from the input, packing each key as it writes it,
//! into the one key array the passes share: its pages are mapped by the
//! first pass only. (Packing the input in input order into a fresh array
//! first and scattering those keys wrote and read a second array, which
//! cost more than reading `a`'s coordinates to count the buckets: on a
//! 10M-entry rank-3 power law, 127 -> 102 ms, and 20,000 fresh pages
//! fewer. Scattering the last pass's keys into a second array reads 8
//! bytes an entry rather than 8 a coordinate, but that array's fresh pages
//! cost more: 58 -> 42 ms for the second pass on the same file, 8 ms less
//! on the rank-4 power law.) Under `build_owned` the keys are packed in
//! identity order over a column the build packs them over anyway, and the
//! passes' array is another column (`build/packed.rs`): a pass reads a key
//! an entry and maps no page.
//! When every dimension packs into 64 bits, keys hold them all (the *full
//! layout*, `Plan::full`), whatever the pass's sets, and stay in `a`'s
//! buckets after the pass, so that another pass by `a` (of sets the search
//! asks for later) counts without a scatter. Otherwise a pass packs
//! the dimensions of its sets only, `a` first, scattering from the input.
//!
//! Per bucket, a set is counted by a bitmap of its bucket-local cells when
//! they are few (`BITMAP_BITS`); else by fibers when the set splits into a
//! group of few cells within a bucket (holding `a`) and an extra of few
//! cells: the bucket's keys grouped by their group cell (a counting sort,
//! shared by every set of the same group), then each group's distinct extra
//! cells by a small bitmap (by stamps, the number of the group that last
//! saw each cell, for at most `2^16` cells, read in one loop a key from a
//! byte a key that marks where groups start: a group of a few keys costs
//! no clearing and no branch); else by a bitmap per part when a little more
//! (the cells split by their top bits into parts of `2^PART_BITS`, each
//! counted in cache), else by a linear-probing hash table whose first probe
//! does not branch on what it finds.

use std::ops::Range;

use rayon::prelude::*;

use super::{dims_of, project, Dims, MIN_CHUNK};
use crate::key::bit_length_below as bits_below;
use crate::{Indices, Source};

mod count;
mod key;

use count::{Local, Scratch};
pub(super) use key::{KeyArrays, PackedKey};

/// The most buckets of a partition pass: 512 write streams stay within the
/// TLB's reach (sort.rs measured the same for its scatter).
const BUCKET_BITS: u32 = 9;
/// The number of entries a bucket aims at when there are too few entries to
/// fill `2^BUCKET_BITS` buckets of it.
const BUCKET_ENTRIES: usize = 1024;
/// A set whose cells within one bucket number at most `2^BITMAP_BITS` (1
/// MiB of bitmap, within L2) is counted per bucket by a bitmap rather than a
/// hash table: a bit set costs a fraction of a probe (a probe's cost is its
/// branch on what it finds).
const BITMAP_BITS: u32 = 23;
/// A set with more cells within a bucket, up to `2^(PART_BITS +
/// SPLIT_BITS)`, has the bucket's cells split by their top bits into parts
/// of `2^PART_BITS` cells (128 KiB of bitmap), each counted by one bitmap
/// that stays in cache with the part: a bit set in a bitmap beyond L2 costs
/// more than the split and a bit set in cache together, and a probe of a
/// hash table more still (docs/benchmarks-history.md, "Figures behind constants").
const PART_BITS: u32 = 20;
/// The most bits a bucket's cells are split by: 256 parts, whose write
/// streams stay within the TLB's reach.
const SPLIT_BITS: u32 = 8;
/// The most fields of a key a bucket bitmap's cell is made of (more, each
/// of another dimension, and the set is hashed).
const MAX_FIELDS: usize = 8;
/// The most bits of a fiber group's cell within a bucket: the counting
/// sort's table of `2^GROUP_BITS` starts stays in L2.
const GROUP_BITS: u32 = 16;
/// The most bits of a fiber's extra cell: a bitmap of 512 KiB, within L2
/// (where a hash table of the bucket's keys would be too, and a probe costs
/// more than a bit set; `docs/benchmarks-history.md`, "Auto, round 3: fibers").
const EXTRA_BITS: u32 = 22;

/// The most dimensions besides `a` of a set counted by fibers: the choice
/// of its group tries every split of them (64 at most).
const SPLIT_DIMS: u32 = 6;

/// How a pass counts a set within each bucket.
#[derive(Clone)]
enum Method {
    /// A bitmap of the bucket's cells, or one per part of them.
    Bitmap(Local),
    /// The bucket's keys grouped by their `group` cell (which holds `a`'s
    /// field), then the distinct `extra` cells of each group by a small
    /// bitmap (`Scratch::fibers`).
    Fibers { group: Local, extra: Local },
    /// A hash table of the masked keys.
    Hash,
}

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
    /// later pass by `a`, of other sets, counts on this pass's keys as they
    /// lie in their buckets.
    full: bool,
}

impl Plan {
    pub(super) fn new(shape: &[u64], a: usize, sets: &[Dims]) -> Self {
        let union = sets.iter().fold(0, |u, &s| u | s);
        let full = packs_all(shape);
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
        let bucket_bits = bucket_bits(self.widths[self.at], source.len);
        let by =
            Buckets { shift: self.a_shift + self.widths[self.at] - bucket_bits, count: 1 << bucket_bits };
        // The keys already in buckets by `a` (a pass of more sets by it,
        // both of the full layout): no scatter.
        let kept = arrays.scattered.take().filter(|&(dim, _)| self.full && dim == self.dims[self.at]);
        let keys = K::arrays(arrays);
        let starts = match kept {
            Some((_, starts)) => starts,
            None => by.scatter(keys, parallel, &Input { plan: self, source }),
        };
        let keys = &keys[..];
        let masks = self.masks::<K>();
        let methods = self.methods(bucket_bits, source.len);
        // The sets counted by fibers, by group: one sort of a bucket serves each group's sets.
        let mut fibered: Vec<(Local, Vec<(usize, Local)>)> = Vec::new();
        for (set, method) in methods.iter().enumerate() {
            if let Method::Fibers { group, extra } = method {
                match fibered.iter_mut().find(|(g, _)| g == group) {
                    Some((_, extras)) => extras.push((set, extra.clone())),
                    None => fibered.push((group.clone(), vec![(set, extra.clone())])),
                }
            }
        }
        let count = |scratch: &mut Scratch<K>, range: Range<usize>| -> Vec<u64> {
            let keys = &keys[range];
            let mut counts: Vec<u64> = masks
                .iter()
                .zip(&methods)
                .map(|(&m, method)| match method {
                    Method::Bitmap(local) => scratch.local_count(keys, local),
                    Method::Hash => scratch.distinct(keys, m),
                    Method::Fibers { .. } => 0,
                })
                .collect();
            for (group, extras) in &fibered {
                scratch.fibers(keys, group, extras, &mut counts);
            }
            counts
        };
        let buckets: Vec<Range<usize>> = starts.windows(2).map(|w| w[0]..w[1]).collect();
        let per_bucket: Vec<Vec<u64>> = if parallel {
            buckets.into_par_iter().map_init(Scratch::default, count).collect()
        } else {
            let mut scratch = Scratch::default();
            buckets.into_iter().map(|b| count(&mut scratch, b)).collect()
        };
        if self.full {
            arrays.scattered = Some((self.dims[self.at], starts));
        }
        (0..masks.len()).map(|s| per_bucket.iter().map(|c| c[s]).sum()).collect()
    }

    /// How the pass counts each of its sets (`method`), but a set that
    /// fibers would count alone in its group by a bitmap per part when its
    /// cells allow: a group's sort costs about what a split into parts does,
    /// so fibers pay when the sort serves more sets than one.
    fn methods(&self, bucket_bits: u32, entries: usize) -> Vec<Method> {
        let mut methods: Vec<Method> =
            self.fields.iter().map(|&f| self.method(f, bucket_bits, entries)).collect();
        for set in 0..methods.len() {
            let Method::Fibers { group, .. } = &methods[set] else { continue };
            let of_group = |m: &Method| matches!(m, Method::Fibers { group: g, .. } if g == group);
            if methods.iter().filter(|m| of_group(m)).count() == 1 {
                if let Some(local) = self.local(self.fields[set], bucket_bits, bitmap_limit(entries)) {
                    methods[set] = Method::Bitmap(local);
                }
            }
        }
        methods
    }

    /// How a pass whose buckets take `bucket_bits` of `a`'s field counts the
    /// set of `fields`: by one bitmap of its bucket-local cells when they fit
    /// one (`local`); else by fibers when the set splits into a group holding
    /// `a` of at most `2^GROUP_BITS` cells within a bucket (and about a
    /// bucket's keys) and an extra of at most `2^EXTRA_BITS` cells, the split
    /// with the fewest group cells (the cheapest sort); else by a bitmap per
    /// part when the cells allow, else by hashing. Fibers before parts: a
    /// part's bitmap is mostly empty for a bucket's few keys, and the split
    /// into parts is a scatter per set where one sort serves every set of a
    /// group.
    fn method(&self, fields: u64, bucket_bits: u32, entries: usize) -> Method {
        let local = self.local(fields, bucket_bits, bitmap_limit(entries));
        // Groups no more than about a bucket's keys: the sort's table costs
        // a step a group.
        let group_limit = ((entries >> bucket_bits).max(1).ilog2() + 1).min(GROUP_BITS);
        if let Some(local) = local.as_ref().filter(|l| l.bits <= l.part_bits) {
            return Method::Bitmap(local.clone());
        }
        let others = fields & !(1 << self.at);
        let mut best: Option<(Local, Local)> = None;
        // Every split of the set's other fields between group and extra:
        // `2^others` of them, so only for sets of few dimensions (a wider
        // set takes parts or a hash table; ranks go up to 64).
        let mut extra = others;
        while others.count_ones() <= SPLIT_DIMS {
            let group = self.cells(fields & !extra, bucket_bits);
            let rest = self.cells(extra, bucket_bits);
            let fits = group.bits <= group_limit
                && rest.bits <= EXTRA_BITS.min(local_limit(entries))
                && group.fields.len() <= MAX_FIELDS
                && rest.fields.len() <= MAX_FIELDS;
            if fits && best.as_ref().map_or(true, |(g, _)| group.bits < g.bits) {
                best = Some((group, rest));
            }
            if extra == 0 {
                break;
            }
            extra = (extra - 1) & others;
        }
        match (best, local) {
            (Some((group, extra)), _) => Method::Fibers { group, extra },
            (None, Some(local)) => Method::Bitmap(local),
            (None, None) => Method::Hash,
        }
    }

    /// The bucket-local cells of the set of `fields` (bit `i` for `dims[i]`,
    /// which holds `dims[at]`), if at most `2^most_bits` (one bitmap), or
    /// split into parts of at most that and `2^PART_BITS` by at most
    /// `SPLIT_BITS`: the set's fields of a key side by side, `a`'s without
    /// the top `bucket_bits`, which are the bucket's.
    fn local(&self, fields: u64, bucket_bits: u32, most_bits: u32) -> Option<Local> {
        let mut local = self.cells(fields, bucket_bits);
        local.part_bits = if local.bits <= most_bits { local.bits } else { PART_BITS.min(most_bits) };
        (local.bits <= local.part_bits + SPLIT_BITS && local.fields.len() <= MAX_FIELDS).then_some(local)
    }

    /// The bucket-local cells of the set of `fields`, whatever their number
    /// (`part_bits` all of them): the fields of a key side by side, `a`'s
    /// (if held) without the top `bucket_bits`, which are the bucket's.
    fn cells(&self, fields: u64, bucket_bits: u32) -> Local {
        let mut shift = self.bits;
        let mut local = Local { fields: Vec::new(), bits: 0, part_bits: 0 };
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
        local.part_bits = local.bits;
        local
    }
}

/// The bits of a pass's bucket number, the top bits of `a`'s field of
/// `width` bits: fewer buckets for fewer entries (a bucket of a few thousand
/// keys fills its table well), and no more than `a`'s bits, so that a bucket
/// holds whole groups of equal `a`.
pub(super) fn bucket_bits(width: u32, entries: usize) -> u32 {
    let want = usize::BITS - (entries / BUCKET_ENTRIES).leading_zeros();
    width.min(BUCKET_BITS).min(want)
}

/// The most bits of one bitmap of a bucket's cells for `entries` entries,
/// before they are split into parts: each thread's bitmap stays within 4
/// bytes per entry (a key takes 8). A split into two parts costs a
/// counting sort of the bucket, more than a bitmap twice the size in L2
/// (on a 100,000-entry rank-4 file, a pass of two sets 1.77 -> 1.52 ms).
fn bitmap_limit(entries: usize) -> u32 {
    BITMAP_BITS.min((32 * entries).max(1 << 12).ilog2())
}

/// The most bits of a part's bitmap, of a fiber's extra bitmap, and of a
/// dense set's cells within a bucket for it to ride in a pass, for
/// `entries` entries: each thread's bitmap stays within 2 bytes per entry.
pub(super) fn local_limit(entries: usize) -> u32 {
    BITMAP_BITS.min((16 * entries).max(1 << 12).ilog2())
}

/// Whether a pass by `a` over `entries` entries counts `set` (which holds
/// `a`) in each bucket by a bitmap, fibers or a bitmap per part, rather
/// than a hash table (`Plan::method`).
pub(super) fn counts_by_bitmap(shape: &[u64], a: usize, set: Dims, entries: usize) -> bool {
    let plan = Plan::new(shape, a, &[set]);
    let bucket_bits = bucket_bits(plan.widths[plan.at], entries);
    let method = plan.fields.first().map(|&f| plan.method(f, bucket_bits, entries));
    !matches!(method, None | Some(Method::Hash))
}

/// Which method a pass by `a` over `entries` entries uses for `sets[i]`
/// (the tests check that each method is exercised).
#[cfg(test)]
pub(super) fn method_name(shape: &[u64], a: usize, sets: &[Dims], i: usize, entries: usize) -> &'static str {
    let plan = Plan::new(shape, a, sets);
    let bucket_bits = bucket_bits(plan.widths[plan.at], entries);
    match plan.methods(bucket_bits, entries).swap_remove(i) {
        Method::Bitmap(local) if local.bits > local.part_bits => "parts",
        Method::Bitmap(_) => "bitmap",
        Method::Fibers { .. } => "fibers",
        Method::Hash => "hash",
    }
}

/// Whether a key of every dimension of `shape` fits 64 bits: then every
/// pass's keys hold them all (the full layout), whatever its sets.
pub(super) fn packs_all(shape: &[u64]) -> bool {
    shape.iter().map(|&e| bits_below(e)).sum::<u32>() <= 64
}

/// Whether every set of `set.count_ones()` dimensions apart in a key gets a
/// bucket bitmap rather than a hash table when its cells are few.
pub(super) fn fits_bucket_bitmap(set: Dims) -> bool {
    set.count_ones() as usize <= MAX_FIELDS
}

/// The input's entries, packed by a plan: what a pass scatters.
struct Input<'p, 's> {
    plan: &'p Plan,
    source: &'p Source<'s>,
}

impl Input<'_, '_> {
    fn len(&self) -> usize {
        self.source.len
    }

    /// Calls `f` with the key of every entry of `range`.
    #[inline(always)]
    fn each<K: PackedKey>(&self, range: Range<usize>, mut f: impl FnMut(K)) {
        // Packed keys are the full layout, shifted.
        if let Some(packed) = self.source.packed.filter(|_| self.plan.full) {
            let shift = packed.layout.position_bits;
            packed.keys[range].iter().for_each(|&k| f(K::from_u64(k >> shift)));
            return;
        }
        // The common numbers of dimensions as constants: the packing loop
        // unrolls with its widths in registers.
        match self.plan.dims.len() {
            3 => self.each_with::<K, 3>(range, f),
            4 => self.each_with::<K, 4>(range, f),
            5 => self.each_with::<K, 5>(range, f),
            _ => self.each_projected(range, f),
        }
    }

    /// `each` for any number of dimensions, through `project`.
    fn each_projected<K: PackedKey>(&self, range: Range<usize>, mut f: impl FnMut(K)) {
        let widths = &self.plan.widths;
        project(self.source, &self.plan.dims, range, |_, c| {
            f(c.iter().zip(widths).fold(K::default(), |k, (&c, &w)| k.shl_or(w, K::from_u64(c))))
        });
    }

    /// Calls `f` with the bucket of every entry of `range`, reading `a`'s
    /// coordinates alone.
    fn each_bucket(&self, range: Range<usize>, by: &Buckets, mut f: impl FnMut(usize)) {
        if let Some(packed) = self.source.packed.filter(|_| self.plan.full) {
            let shift = packed.layout.position_bits + by.shift;
            for &k in &packed.keys[range] {
                f(k.checked_shr(shift).unwrap_or(0) as usize & (by.count - 1));
            }
            return;
        }
        let shift = by.shift - self.plan.a_shift;
        project(self.source, &self.plan.dims[self.plan.at..=self.plan.at], range, |_, c| {
            f(c[0].checked_shr(shift).unwrap_or(0) as usize & (by.count - 1))
        });
    }

    /// `each` for a plan of `N` dimensions.
    #[inline(always)]
    fn each_with<K: PackedKey, const N: usize>(&self, range: Range<usize>, mut f: impl FnMut(K)) {
        let dims: [usize; N] = std::array::from_fn(|i| self.plan.dims[i]);
        let widths: [u32; N] = std::array::from_fn(|i| self.plan.widths[i]);
        if let Some(keys) = self.source.packed {
            for &key in &keys.keys[range] {
                f(packed(&widths, |i| keys.coord_of(key, dims[i])));
            }
            return;
        }
        match self.source.indices {
            Indices::RowMajor(flat) => {
                let rank = self.source.shape.len();
                for row in flat[range.start * rank..range.end * rank].chunks_exact(rank) {
                    f(packed(&widths, |i| row[dims[i]]));
                }
            }
            Indices::Columnar(cols) => {
                let cols: [&[u64]; N] = std::array::from_fn(|i| &cols[dims[i]][range.clone()]);
                // (An index into every column, which an iterator over one cannot give.)
                #[allow(clippy::needless_range_loop)]
                for entry in 0..range.len() {
                    f(packed(&widths, |i| cols[i][entry]));
                }
            }
        }
    }
}

/// The key of `N` coordinates `coord(i)`, each in `widths[i]` bits, the first highest.
#[inline(always)]
fn packed<K: PackedKey, const N: usize>(widths: &[u32; N], coord: impl Fn(usize) -> u64) -> K {
    (0..N).fold(K::default(), |k, i| k.shl_or(widths[i], K::from_u64(coord(i))))
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
    fn scatter<K: PackedKey>(&self, keys: &mut Vec<K>, parallel: bool, from: &Input<'_, '_>) -> Vec<usize> {
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

/// Splits `0..n` into chunks: one when not `parallel`, else a few per thread.
pub(super) fn chunks(n: usize, parallel: bool) -> Vec<Range<usize>> {
    let count = if parallel { (n / MIN_CHUNK).clamp(1, 4 * rayon::current_num_threads()) } else { 1 };
    (0..count).map(|c| c * n / count..(c + 1) * n / count).collect()
}
