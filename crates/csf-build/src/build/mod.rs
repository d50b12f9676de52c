//! The build pipeline: one sort of packed keys (the values travel with them,
//! and each sorted bucket's nodes are counted while it is in cache), then one
//! pass over the sorted keys that writes every level, in parallel chunks.

use csf_core::{CsfView, OwnedCsf, OwnedQuantization};
use hurray_format::QuantScheme;

use std::ops::Range;

use hurray_format::limits::MAX_RANK;
use rayon::prelude::*;

use crate::key::{Key, Layout};
use crate::order::choose;
use crate::presorted;
use crate::sort::{chunks, copy_slot, sort_from, KeySource, Payload, Sorted};
use crate::values::Slots;
use crate::{check_rank, BuildError, Built, Coo, Duplicates, Indices, ModeOrder, Options, Quantize, Source};

/// The most entries the presorted path takes when the build could use
/// several threads: below this the radix sort's chunks are too few to gain
/// from them (measured on 100k-entry real tensors).
const PRESORTED_PARALLEL_MAX: usize = 1 << 17;

/// Builds a CSF tensor from COO input.
///
/// # Errors
/// A [`BuildError`] for rank outside `3..=64`, arrays of mismatched lengths,
/// an invalid explicit mode order, a coordinate outside the shape, a
/// duplicate under [`Duplicates::Error`], or a sum of an unsummable type.
pub fn build(coo: &Coo<'_>, options: &Options) -> Result<Built, BuildError> {
    build_with(coo, options, true)
}

/// [`build`], with the presorted path allowed or not (the tests compare the two).
pub(crate) fn build_with(coo: &Coo<'_>, options: &Options, presort: bool) -> Result<Built, BuildError> {
    let rank = coo.shape.len();
    check_rank(rank)?;
    let len = entry_count(coo.indices, rank)?;
    let want = coo.element_type.values_len(len as u64).unwrap_or(u64::MAX);
    if coo.values.len() as u64 != want {
        return Err(BuildError::LengthMismatch {
            what: "values (bytes)",
            found: coo.values.len() as u64,
            expected: want,
        });
    }
    let source = Source { shape: coo.shape, indices: coo.indices, len };
    let slots = Slots::new(coo.element_type, &coo.values, len);
    if options.duplicates == Duplicates::Sum {
        slots.can_sum()?;
    }
    let (mode_order, auto) = match &options.mode_order {
        ModeOrder::Identity => ((0..rank as u32).collect(), None),
        ModeOrder::Explicit(order) => {
            check_permutation(order, rank)?;
            (order.clone(), None)
        }
        ModeOrder::Auto => {
            check_bounds(&source)?;
            let choice = choose(&source, options.parallel);
            (choice.mode_order.clone(), Some(choice))
        }
    };
    let extents: Vec<u64> = mode_order.iter().map(|&d| coo.shape[d as usize]).collect();
    let layout = Layout::new(&extents, len);
    let job = Job { source: &source, slots: &slots, mode_order: &mode_order, layout, options };
    let presorted = presorted::Input { source: &source, slots: &slots, mode_order: &mode_order, options };
    // The presorted path is one thread's walk: with more threads the radix
    // sort's parallel passes win on large inputs (docs/benchmarks.md).
    let one_thread = !options.parallel || rayon::current_num_threads() == 1;
    let presort = presort && (one_thread || len <= PRESORTED_PARALLEL_MAX);
    let tried = if presort { presorted::try_build(&presorted)? } else { None };
    let (levels, values) = match tried {
        Some(output) => output,
        None => match layout.total_bits() {
            0..=64 => job.run::<u64>()?,
            65..=128 => job.run::<u128>()?,
            _ => job.run_by_comparison()?,
        },
    };
    let nnz = (values.len() / slots.width.max(1)) as u64;
    let removed = len as u64 - nnz;
    let tensor =
        OwnedCsf::new(coo.element_type, coo.shape.to_vec(), mode_order, nnz, levels, slots.pack(values))
            .map_err(|_| BuildError::RankTooLarge { rank })?;
    let tensor = match options.quantize {
        Some(spec) => crate::quantize(tensor, spec)?,
        None => tensor,
    };
    debug_assert!(
        csf_validate::validate_view(tensor.view()).is_ok(),
        "the builder broke a storage invariant: {:?}",
        csf_validate::validate_view(tensor.view()).err()
    );
    // Auto estimated the size from all input entries; report what is stored
    // (duplicates merged and zeros dropped make it smaller).
    let auto = auto.map(|choice| {
        choice.settle(tensor.view().levels().iter().map(|l| (l.pos.len() + l.crd.len()) as u64 * 8).sum())
    });
    Ok(Built { tensor, auto, removed })
}

/// Re-orders an existing tensor to another mode order, without going through a
/// dense array: its entries are read in leaf order and rebuilt.
///
/// Every value keeps its meaning. A quantized tensor stays quantized with the
/// same scheme:
/// - per-tensor and per-channel: a leaf's group does not depend on the leaf
///   order (it is 0, or a coordinate), so the codes move with their entries
///   and the parameter buffers are carried over unchanged: the values are
///   bit-for-bit the same;
/// - per-block, NF4 and MXFP: a block is a run of consecutive leaves, which
///   a new order regroups, so the tensor is re-quantized from its dequantized
///   values with the same scheme, element type, block size and zero-point
///   choice, as [`quantize`](crate::quantize()) writes it (`f32` scales, or
///   E8M0 for MXFP). Each value then differs from the one before by at most
///   the scheme's rounding error in its new block.
///
/// # Errors
/// As [`build`] (a duplicate can only come from unvalidated input);
/// [`BuildError::MissingValue`] when a stored leaf has no value (unvalidated
/// input); [`BuildError::Quantize`] when re-quantizing meets a value that is
/// not finite (an MXFP block whose scale is NaN, say).
pub fn reorder(view: &CsfView<'_>, mode_order: ModeOrder, parallel: bool) -> Result<Built, BuildError> {
    let options = Options { mode_order, parallel, ..Options::default() };
    let quantization = view.quantization();
    let scheme = quantization.map(|q| q.scheme);
    if matches!(scheme, Some(QuantScheme::PerBlock | QuantScheme::Nf4 | QuantScheme::Mxfp)) {
        return requantize(view, &options);
    }
    let mut indices = Vec::with_capacity(view.nnz() as usize * view.rank());
    let mut leaves = Vec::with_capacity(view.nnz() as usize);
    view.for_each(|index, leaf| {
        indices.extend_from_slice(index);
        leaves.push(leaf as u64);
    });
    let values = view.values();
    // Only leaves below nnz hold values (the descriptor's nnz is authoritative);
    // a longer leaf level or a short buffer is unvalidated input, refused
    // rather than filled with made-up values.
    let have = values.capacity().min(usize::try_from(view.nnz()).unwrap_or(usize::MAX));
    if let Some(&leaf) = leaves.iter().find(|&&l| l >= have as u64) {
        return Err(BuildError::MissingValue { leaf });
    }
    let slots = Slots::new(values.element_type(), values.as_bytes(), have);
    let coo = Coo {
        shape: view.shape(),
        indices: Indices::RowMajor(&indices),
        element_type: values.element_type(),
        values: slots.pack(slots.gather(&leaves, parallel)).into(),
    };
    let built = build(&coo, &options)?;
    // Per-tensor and per-channel parameters do not depend on leaf order.
    Ok(match quantization {
        Some(q) => Built { tensor: built.tensor.with_quantization(OwnedQuantization::from_view(q)), ..built },
        None => built,
    })
}

/// [`reorder`] for the block schemes: rebuild the dequantized values in the
/// new order, then quantize them again with the same scheme.
fn requantize(view: &CsfView<'_>, options: &Options) -> Result<Built, BuildError> {
    let Some(q) = view.quantization() else { return Err(BuildError::MissingValue { leaf: 0 }) };
    let spec = match q.scheme {
        QuantScheme::Nf4 => Quantize::Nf4 { block_size: q.block_size },
        QuantScheme::Mxfp => Quantize::Mxfp { dtype: view.element_type() },
        _ => Quantize::PerBlock {
            block_size: q.block_size,
            dtype: view.element_type(),
            zero_point: q.zero_points.is_some(),
        },
    };
    let mut indices = Vec::with_capacity(view.nnz() as usize * view.rank());
    let mut values = Vec::with_capacity(view.nnz() as usize);
    let mut missing = None;
    view.for_each(|index, leaf| {
        match view.value_f32(leaf, index) {
            Some(v) => values.push(v),
            None => {
                missing.get_or_insert(leaf as u64);
            }
        }
        indices.extend_from_slice(index);
    });
    if let Some(leaf) = missing {
        return Err(BuildError::MissingValue { leaf });
    }
    let coo = Coo::new(view.shape(), Indices::RowMajor(&indices), &values);
    build(&coo, &Options { quantize: Some(spec), ..options.clone() })
}

pub(crate) fn entry_count(indices: Indices<'_>, rank: usize) -> Result<usize, BuildError> {
    match indices {
        Indices::RowMajor(flat) => {
            if flat.len() % rank != 0 {
                let expected = (flat.len() / rank * rank) as u64;
                return Err(BuildError::LengthMismatch {
                    what: "row-major indices",
                    found: flat.len() as u64,
                    expected,
                });
            }
            Ok(flat.len() / rank)
        }
        Indices::Columnar(cols) => {
            if cols.len() != rank {
                return Err(BuildError::LengthMismatch {
                    what: "index columns",
                    found: cols.len() as u64,
                    expected: rank as u64,
                });
            }
            let len = cols.first().map_or(0, |c| c.len());
            if let Some(bad) = cols.iter().find(|c| c.len() != len) {
                return Err(BuildError::LengthMismatch {
                    what: "index column",
                    found: bad.len() as u64,
                    expected: len as u64,
                });
            }
            Ok(len)
        }
    }
}

fn check_permutation(order: &[u32], rank: usize) -> Result<(), BuildError> {
    let mut seen = vec![false; rank];
    let ok = order.len() == rank
        && order.iter().all(|&d| seen.get_mut(d as usize).is_some_and(|s| !std::mem::replace(s, true)));
    if ok {
        Ok(())
    } else {
        Err(BuildError::BadModeOrder { order: order.to_vec(), rank })
    }
}

/// The first entry outside the shape, in input order.
fn check_bounds(source: &Source<'_>) -> Result<(), BuildError> {
    for entry in 0..source.len {
        for (dim, &extent) in source.shape.iter().enumerate() {
            let coord = source.coord(entry, dim);
            if coord >= extent {
                return Err(BuildError::OutOfBounds { entry, dim, coord, extent });
            }
        }
    }
    Ok(())
}

type Levels = Vec<(Vec<u64>, Vec<u64>)>;
/// Levels, and the values in leaf order as slots (see [`Slots`]).
type Output = (Levels, Vec<u8>);

struct Job<'j> {
    source: &'j Source<'j>,
    slots: &'j Slots<'j>,
    mode_order: &'j [u32],
    layout: Layout,
    options: &'j Options,
}

/// Makes the keys straight from the input, for the sort (see `sort.rs`).
struct Keyer<'j> {
    job: &'j Job<'j>,
    /// Per level: the logical dimension, its extent, and its field's bits.
    dims: [usize; MAX_RANK],
    extents: [u64; MAX_RANK],
    bits: [u32; MAX_RANK],
}

impl<'j> Keyer<'j> {
    fn new(job: &'j Job<'j>) -> Self {
        let mut keyer = Self { job, dims: [0; MAX_RANK], extents: [0; MAX_RANK], bits: [0; MAX_RANK] };
        for (level, &dim) in job.mode_order.iter().enumerate() {
            keyer.dims[level] = dim as usize;
            keyer.extents[level] = job.source.shape[dim as usize];
            keyer.bits[level] = job.layout.bits[level];
        }
        keyer
    }

    /// The key of an entry whose coordinate of dimension `d` is `coord(d)`,
    /// from its first `levels` levels (the others' bits clear), with the
    /// position bits clear (the sort fills them in), and whether those
    /// coordinates are inside the shape. The per-level widths are
    /// precomputed and the bounds are checked with a branch-free `&=`; a
    /// coordinate outside the shape is masked to its field, so that it
    /// cannot change other fields: the count and the scatter must agree on
    /// every key's bucket even then (the sort gives up after the scatter).
    #[inline(always)]
    fn pack<K: Key>(&self, levels: usize, coord: impl Fn(usize) -> u64) -> (K, bool) {
        let layout = &self.job.layout;
        let mut key = K::default();
        let mut ok = true;
        for level in 0..levels {
            let c = coord(self.dims[level]);
            ok &= c < self.extents[level];
            key = key.shl_or(self.bits[level], c & layout.mask[level]);
        }
        let below = if levels == 0 { layout.total_bits() } else { layout.shift[levels - 1] };
        (key.shl_or(below, 0), ok)
    }

    /// Runs `f(key, entry)` over the kept entries of `range`, with keys from
    /// their first `levels` levels (see `pack`), and says whether every
    /// coordinate read was inside the shape.
    #[inline(always)]
    fn each<K: Key>(&self, range: Range<usize>, levels: usize, mut f: impl FnMut(K, usize)) -> bool {
        let drop_zeros = self.job.options.drop_zeros;
        let mut ok = true;
        // One loop per layout, so that the coordinate lookup inlines.
        match self.job.source.indices {
            Indices::RowMajor(flat) => {
                let rank = self.job.layout.rank;
                let rows = flat[range.start * rank..range.end * rank].chunks_exact(rank);
                for (entry, row) in range.zip(rows) {
                    // Bounds first: a coordinate outside the shape is an
                    // input error even on an entry that is dropped as zero.
                    let (key, in_bounds) = self.pack(levels, |d| row[d]);
                    ok &= in_bounds;
                    if drop_zeros && !self.job.keep(entry) {
                        continue;
                    }
                    f(key, entry);
                }
            }
            Indices::Columnar(cols) => {
                for entry in range {
                    // Bounds first: a coordinate outside the shape is an
                    // input error even on an entry that is dropped as zero.
                    let (key, in_bounds) = self.pack(levels, |d| cols[d][entry]);
                    ok &= in_bounds;
                    if drop_zeros && !self.job.keep(entry) {
                        continue;
                    }
                    f(key, entry);
                }
            }
        }
        ok
    }
}

impl<K: Key> KeySource<K> for Keyer<'_> {
    fn entries(&self) -> usize {
        self.job.source.len
    }

    fn keys(&self, range: Range<usize>, f: impl FnMut(K, usize)) -> bool {
        self.each(range, self.job.layout.rank, f)
    }

    fn prefixes(&self, range: Range<usize>, from: u32, mut f: impl FnMut(K)) {
        // Only the levels whose fields reach bit `from` or above: the top
        // level alone on most shapes, a third of the work of a whole key.
        let layout = &self.job.layout;
        let levels = (0..layout.rank).find(|&l| layout.shift[l] <= from).map_or(layout.rank, |l| l + 1);
        self.each(range, levels, |k, _| f(k));
    }
}

/// What one sorted bucket adds to the tree, counted while it is in cache.
struct Tally {
    /// `at[L]`: keys after the bucket's first whose path leaves the previous
    /// key's at level `L` (they open a node at `L` and every level below).
    at: Vec<usize>,
    /// The bucket's first key that duplicates the key before it.
    first_duplicate: Option<usize>,
}

/// One chunk's share of the output: whole buckets, so that no run of
/// duplicates crosses chunks.
struct Part<'a, K> {
    /// The chunk's sorted keys; the leaf coordinates are written over them.
    keys: &'a mut [K],
    /// The chunk's value slots (see `Layout::slot`); the leaf values are written over them.
    values: &'a mut [u8],
    /// The index of the chunk's first key.
    start: usize,
    /// The chunk's buckets, as ranges of `keys`.
    buckets: Vec<Range<usize>>,
    /// The key before the chunk.
    prev: Option<K>,
    /// `crd[L]` for the upper levels `L < rank - 1`.
    crd: Vec<&'a mut [u64]>,
    /// `pos[L]` for levels `L >= 1` (`pos[0]` is empty).
    pos: Vec<&'a mut [u64]>,
    /// Nodes that earlier chunks opened, per level.
    base: Vec<usize>,
    /// The chunk's leaf `k` goes to `k - gap` of its own slices, and its
    /// first `gap` leaves (which belong before them, see `run`) to a side
    /// buffer; `gap` is zero or the duplicates in earlier chunks.
    gap: usize,
}

/// The leaves a chunk could not write in place (see `Part::gap`): leaf
/// coordinates and value slots.
type Side = (Vec<u64>, Vec<u8>);

impl Job<'_> {
    fn keep(&self, entry: usize) -> bool {
        !self.options.drop_zeros || !self.slots.is_zero(entry)
    }

    /// Sorts the keys (the values come along, see `sort.rs`), counting each
    /// bucket's nodes per level while it is in cache; then prefix sums of
    /// those counts give every chunk of buckets its place in each output
    /// array, and the chunks write their `crd`/`pos` entries there (in
    /// parallel with `parallel`). Every array is allocated once at its final
    /// size; the leaf `crd` and the values are written over the sorted keys
    /// and value slots, so the build touches no memory beyond its output and
    /// small per-thread buffers.
    fn run<K: Key>(&self) -> Result<Output, BuildError> {
        let layout = self.layout;
        let parallel = self.options.parallel;
        let rank = layout.rank;
        let leaf = rank - 1;
        let width = self.slots.width;
        let visit = |start: usize, bucket: &[K]| {
            let mut at = vec![0usize; rank];
            let mut first_duplicate = None;
            for (i, pair) in bucket.windows(2).enumerate() {
                match layout.split_level(pair[0], pair[1]) {
                    Some(split) => at[split] += 1,
                    None => {
                        first_duplicate.get_or_insert(start + i + 1);
                    }
                }
            }
            Tally { at, first_duplicate }
        };
        let payload = Payload { data: &self.slots.data, width };
        let keyer = Keyer::new(self);
        let sorted =
            sort_from(&keyer, Some(payload), layout.position_bits, layout.total_bits(), parallel, visit);
        let Ok(Sorted { mut keys, slots: mut values, starts, mut visits, top_shift }) = sorted else {
            check_bounds(self.source)?;
            // Not reached: the sort gives up only on a coordinate outside the shape.
            return self.run_by_comparison();
        };
        let n = keys.len();

        // A bucket's first key leaves the previous bucket's last key at the
        // level of the highest bit where their top digits differ.
        let mut prev_digit = None;
        for (digit, tally) in visits.iter_mut().enumerate() {
            if starts[digit + 1] > starts[digit] {
                let split = prev_digit.map_or(0, |p: usize| {
                    let high = top_shift + (usize::BITS - 1 - (p ^ digit).leading_zeros());
                    usize::from(layout.level_of_bit[high as usize])
                });
                tally.at[split] += 1;
                prev_digit = Some(digit);
            }
        }
        if self.options.duplicates == Duplicates::Error {
            if let Some(i) = visits.iter().find_map(|t| t.first_duplicate) {
                return Err(self.duplicate_error_of(keys[i]));
            }
        }

        // Chunks of whole buckets, of about equal size.
        let count = chunks(n, parallel).len();
        let mut groups: Vec<Range<usize>> = Vec::with_capacity(count);
        let (mut first, mut next_cut) = (0, 1);
        for digit in 0..visits.len() {
            let end = starts[digit + 1];
            if digit + 1 == visits.len() || (n > 0 && end * count >= next_cut * n) {
                groups.push(first..digit + 1);
                first = digit + 1;
                next_cut = end * count / n.max(1) + 1;
            }
        }
        // Nodes each chunk opens per level: an entry opens one at its split level and below.
        let opened: Vec<Vec<usize>> = groups
            .iter()
            .map(|g| {
                let mut opened = vec![0usize; rank];
                for t in &visits[g.clone()] {
                    opened.iter_mut().zip(&t.at).for_each(|(o, a)| *o += a);
                }
                for level in 1..rank {
                    opened[level] += opened[level - 1];
                }
                opened
            })
            .collect();
        drop(visits);

        // Every array at its final size.
        let mut totals = vec![0usize; rank];
        let mut bases = Vec::with_capacity(groups.len());
        for o in &opened {
            bases.push(totals.clone());
            totals.iter_mut().zip(o).for_each(|(total, o)| *total += o);
        }
        let nnz = totals[leaf];
        let mut crds: Vec<Vec<u64>> = totals[..leaf].iter().map(|&n| vec![0; n]).collect();
        let mut poss: Vec<Vec<u64>> = (0..rank)
            .map(|level| match level {
                0 => vec![0, totals[0] as u64],
                _ => {
                    let mut pos = vec![0; totals[level - 1] + 1];
                    pos[totals[level - 1]] = totals[level] as u64;
                    pos
                }
            })
            .collect();

        // Where each chunk's leaves start, and how they get there. A chunk
        // after duplicates has leaves that belong over the previous chunk's
        // keys, which may still be being read: with few duplicates they go
        // to side buffers, copied into place after all chunks are done;
        // with many (the side buffers could add up to a chunk count times
        // the duplicates) every chunk writes its leaves from its own start
        // and a sequential pass closes the gaps.
        let key_range = |g: &Range<usize>| starts[g.start]..starts[g.end];
        let leaf_starts: Vec<usize> = bases.iter().map(|b| b[leaf]).collect();
        let side_leaves: usize = groups
            .iter()
            .zip(&opened)
            .zip(&leaf_starts)
            .map(|((g, o), &at)| (key_range(g).start - at).min(o[leaf]))
            .sum();
        let use_sides = side_leaves <= n / 64;

        // Hand each chunk its slices.
        let prevs: Vec<Option<K>> =
            groups.iter().map(|g| key_range(g).start.checked_sub(1).map(|i| keys[i])).collect();
        let mut parts: Vec<Part<'_, K>> = Vec::with_capacity(groups.len());
        {
            let mut keys_rest = &mut keys[..];
            let mut values_rest = &mut values[..];
            let mut crd_rest: Vec<&mut [u64]> = crds.iter_mut().map(|c| &mut c[..]).collect();
            let mut pos_rest: Vec<&mut [u64]> = poss.iter_mut().map(|p| &mut p[..]).collect();
            for (((g, o), base), prev) in groups.iter().zip(&opened).zip(bases).zip(prevs) {
                let range = key_range(g);
                let (part_keys, rest) = std::mem::take(&mut keys_rest).split_at_mut(range.len());
                keys_rest = rest;
                let (part_values, rest) = std::mem::take(&mut values_rest).split_at_mut(range.len() * width);
                values_rest = rest;
                let crd = crd_rest
                    .iter_mut()
                    .enumerate()
                    .map(|(level, c)| {
                        let (mine, rest) = std::mem::take(c).split_at_mut(o[level]);
                        *c = rest;
                        mine
                    })
                    .collect();
                let pos = pos_rest
                    .iter_mut()
                    .enumerate()
                    .map(|(level, p)| {
                        let len = if level == 0 { 0 } else { o[level - 1] };
                        let (mine, rest) = std::mem::take(p).split_at_mut(len);
                        *p = rest;
                        mine
                    })
                    .collect();
                let buckets =
                    g.clone().map(|d| starts[d] - range.start..starts[d + 1] - range.start).collect();
                let gap = if use_sides { range.start - base[leaf] } else { 0 };
                parts.push(Part {
                    keys: part_keys,
                    values: part_values,
                    start: range.start,
                    buckets,
                    prev,
                    crd,
                    pos,
                    base,
                    gap,
                });
            }
        }

        // Write. The value copy is specialised by width (a `memcpy` call per
        // value would cost more than the rest of the loop), and the common
        // ranks and widths by rank too.
        let fill = |part: Part<'_, K>| match (width, rank) {
            (4, 3) => self.fill::<K, 4, 3>(part),
            (4, 4) => self.fill::<K, 4, 4>(part),
            (8, 3) => self.fill::<K, 8, 3>(part),
            (8, 4) => self.fill::<K, 8, 4>(part),
            (1, _) => self.fill::<K, 1, 0>(part),
            (2, _) => self.fill::<K, 2, 0>(part),
            (4, _) => self.fill::<K, 4, 0>(part),
            (8, _) => self.fill::<K, 8, 0>(part),
            _ => self.fill::<K, 0, 0>(part),
        };
        let sides: Vec<Side> = if parallel {
            parts.into_par_iter().map(fill).collect::<Result<_, _>>()?
        } else {
            parts.into_iter().map(fill).collect::<Result<_, _>>()?
        };
        // The leaves that went to side buffers, into place; or the gaps closed.
        for ((g, o), (&at, (side_keys, side_values))) in
            groups.iter().zip(&opened).zip(leaf_starts.iter().zip(sides))
        {
            let start = key_range(g).start;
            if use_sides {
                for (k, &crd) in side_keys.iter().enumerate() {
                    keys[at + k] = K::from_u64(crd);
                }
                values[at * width..at * width + side_values.len()].copy_from_slice(&side_values);
            } else if start != at {
                let count = o[leaf];
                keys.copy_within(start..start + count, at);
                values.copy_within(start * width..(start + count) * width, at * width);
            }
        }
        keys.truncate(nnz);
        values.truncate(nnz * width);
        if nnz < n {
            keys.shrink_to_fit();
            values.shrink_to_fit();
        }
        let mut leaf_crd = Some(K::into_u64s(keys));
        let levels = poss
            .into_iter()
            .zip(crds.into_iter().map(Some).chain([leaf_crd.take()]))
            .map(|(pos, crd)| (pos, crd.unwrap_or_default()))
            .collect();
        Ok((levels, values))
    }

    /// Writes one chunk's nodes, leaf coordinates and values, and returns
    /// the leaves it could not write in place; `W` is the value width (0:
    /// `slots.width`).
    fn fill<K: Key, const W: usize, const R: usize>(&self, part: Part<'_, K>) -> Result<Side, BuildError> {
        let Part { keys, values, start, buckets, mut prev, crd: crd_vec, pos: pos_vec, base, gap } = part;
        let layout = self.layout;
        // A constant rank unrolls the level loops and keeps the counters and
        // slices below in registers.
        let rank = if R == 0 { layout.rank } else { R };
        let leaf = rank - 1;
        let width = if W == 0 { self.slots.width } else { W };
        let (mut side_keys, mut side_values) = (Vec::new(), Vec::new());
        let mut crd: [&mut [u64]; MAX_RANK] = std::array::from_fn(|_| Default::default());
        let mut pos: [&mut [u64]; MAX_RANK] = std::array::from_fn(|_| Default::default());
        crd.iter_mut().zip(crd_vec).for_each(|(c, v)| *c = v);
        pos.iter_mut().zip(pos_vec).for_each(|(p, v)| *p = v);
        // `count[L]`: nodes opened at level L so far, globally; `local[L]`: by this chunk.
        let mut count = [0usize; MAX_RANK];
        count[..rank].copy_from_slice(&base);
        let mut local = [0usize; MAX_RANK];
        // A copy of the current bucket's value slots: the leaf values are
        // written over the chunk's slots, possibly over slots the bucket has
        // yet to read.
        let mut bucket_values: Vec<u8> = Vec::new();
        for bucket in buckets {
            bucket_values.clear();
            bucket_values.extend_from_slice(&values[bucket.start * width..bucket.end * width]);
            let first_slot = start + bucket.start;
            for j in bucket {
                let key = keys[j];
                let from = (layout.slot(key, start + j) - first_slot) * width;
                let slot = &bucket_values[from..from + width];
                let split = match prev {
                    None => Some(0),
                    Some(p) => layout.split_level(p, key),
                };
                prev = Some(key);
                let Some(split) = split else {
                    // A duplicate of the last leaf.
                    let last = local[leaf] - 1;
                    let into = match last.checked_sub(gap) {
                        Some(k) => &mut values[k * width..(k + 1) * width],
                        None => &mut side_values[last * width..(last + 1) * width],
                    };
                    match self.options.duplicates {
                        Duplicates::Sum => self.slots.add_slot(into, slot)?,
                        Duplicates::Last => copy_slot::<W>(into, slot),
                        // `Error` was reported after the sort.
                        Duplicates::First | Duplicates::Error => {}
                    }
                    continue;
                };
                // The key opens a node at every level from `split` down. Which
                // levels those are is a coin toss on most data, so rather than
                // branch on it, every upper level's next slot is written
                // whether or not a node opens there: a slot written by a key
                // that opens no node is written again by the key that does.
                // (`get_mut`: past a chunk's last node there is no next slot.)
                for level in 1..=leaf {
                    // Level `level - 1`'s node number `local[level - 1]` (opened
                    // now, or later) starts its children at `count[level]`.
                    if let Some(p) = pos[level].get_mut(local[level - 1]) {
                        *p = count[level] as u64;
                    }
                }
                for level in 0..leaf {
                    if let Some(c) = crd[level].get_mut(local[level]) {
                        *c = layout.coord(key, level);
                    }
                    let opens = usize::from(split <= level);
                    local[level] += opens;
                    count[level] += opens;
                }
                let coord = layout.coord(key, leaf);
                match local[leaf].checked_sub(gap) {
                    // Over key and slot `j`, already read (`k <= local[leaf] <= j`).
                    Some(k) => {
                        keys[k] = K::from_u64(coord);
                        copy_slot::<W>(&mut values[k * width..(k + 1) * width], slot);
                    }
                    None => {
                        side_keys.push(coord);
                        side_values.extend_from_slice(slot);
                    }
                }
                local[leaf] += 1;
                count[leaf] += 1;
            }
        }
        Ok((side_keys, side_values))
    }

    /// The duplicate error for the first two kept entries at `key`'s coordinates.
    fn duplicate_error_of<K: Key>(&self, key: K) -> BuildError {
        let rank = self.layout.rank;
        let mut index = vec![0u64; rank];
        for (level, &dim) in self.mode_order.iter().enumerate() {
            index[dim as usize] = self.layout.coord(key, level);
        }
        let mut same = (0..self.source.len)
            .filter(|&e| self.keep(e) && (0..rank).all(|d| self.source.coord(e, d) == index[d]));
        let first = same.next().unwrap_or(0);
        let second = same.next().unwrap_or(first);
        BuildError::Duplicate { index, first, second }
    }

    /// The fallback for keys wider than 128 bits: a stable comparison sort of
    /// entry positions by their storage-order tuples.
    fn run_by_comparison(&self) -> Result<Output, BuildError> {
        let tuple = |entry: usize, level: usize| self.source.coord(entry, self.mode_order[level] as usize);
        let rank = self.mode_order.len();
        check_bounds(self.source)?;
        let mut order: Vec<usize> = (0..self.source.len).filter(|&i| self.keep(i)).collect();
        order.sort_by(|&a, &b| {
            (0..rank)
                .map(|l| tuple(a, l).cmp(&tuple(b, l)))
                .find(|o| o.is_ne())
                .unwrap_or(std::cmp::Ordering::Equal)
        });
        let mut levels = LevelBuilder::new(rank, order.len());
        let mut positions = Vec::with_capacity(order.len());
        let mut sums = Vec::new();
        let mut prev: Option<usize> = None;
        for &entry in &order {
            let split = match prev {
                None => 0,
                Some(p) => match (0..rank).find(|&l| tuple(p, l) != tuple(entry, l)) {
                    Some(split) => split,
                    None => {
                        self.duplicate(&mut positions, &mut sums, p, entry)?;
                        continue;
                    }
                },
            };
            levels.push(split, |level| tuple(entry, level));
            positions.push(entry as u64);
            prev = Some(entry);
        }
        let mut values = self.slots.gather(&positions, self.options.parallel);
        for &(dst, src) in &sums {
            self.slots.add_into(&mut values, dst, src)?;
        }
        Ok((levels.finish(), values))
    }

    /// Applies the duplicate policy to `later`, a duplicate of `earlier` (input positions).
    fn duplicate(
        &self,
        positions: &mut [u64],
        sums: &mut Vec<(usize, usize)>,
        earlier: usize,
        later: usize,
    ) -> Result<(), BuildError> {
        let last = positions.len() - 1;
        match self.options.duplicates {
            Duplicates::Error => Err(self.source.duplicate(earlier, later)),
            Duplicates::First => Ok(()),
            Duplicates::Last => {
                positions[last] = later as u64;
                Ok(())
            }
            Duplicates::Sum => {
                sums.push((last, later));
                Ok(())
            }
        }
    }
}

/// Emits the levels from entries in storage order: each entry opens a new
/// node at every level from its split level down.
struct LevelBuilder {
    levels: Levels,
    n0: u64,
}

impl LevelBuilder {
    fn new(rank: usize, entries: usize) -> Self {
        let mut levels: Levels = (0..rank).map(|_| (Vec::new(), Vec::new())).collect();
        if let Some((_, leaf_crd)) = levels.last_mut() {
            leaf_crd.reserve(entries);
        }
        Self { levels, n0: 0 }
    }

    #[inline]
    fn push(&mut self, split: usize, coord: impl Fn(usize) -> u64) {
        if split == 0 {
            self.n0 += 1;
        }
        for (level, (pos, crd)) in self.levels.iter_mut().enumerate().skip(split) {
            if level > split {
                // The node just opened at level - 1 starts its children here.
                pos.push(crd.len() as u64);
            }
            crd.push(coord(level));
        }
    }

    fn finish(mut self) -> Levels {
        for (level, (pos, crd)) in self.levels.iter_mut().enumerate() {
            if level == 0 {
                *pos = vec![0, self.n0];
            } else {
                // Each node of level - 1 pushed its start; close the last one.
                pos.push(crd.len() as u64);
            }
        }
        self.levels
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use csf_testdata::{reference_csf, synthetic, Distribution};
    use hurray_format::ElementType;

    fn levels_and_values(built: &Built) -> (Levels, Vec<f64>) {
        let view = built.tensor.view();
        let levels = view.levels().iter().map(|l| (l.pos.iter().collect(), l.crd.iter().collect())).collect();
        (levels, view.values().typed::<f64>().unwrap().as_native().unwrap().to_vec())
    }

    fn options(order: &[u32], duplicates: Duplicates, parallel: bool) -> Options {
        Options {
            mode_order: ModeOrder::Explicit(order.to_vec()),
            duplicates,
            parallel,
            ..Options::default()
        }
    }

    /// Enough entries for several chunks and many buckets, with runs of
    /// duplicates (long ones under power-law skew) that chunk boundaries
    /// meet; the third shape needs `u128` keys.
    #[test]
    fn chunked_builds_match_the_reference_whatever_the_threads() {
        let cases = [
            (1, Distribution::PowerLaw { skew: 4.0 }, vec![50u64, 60, 70]),
            (2, Distribution::Uniform, vec![3000, 2, 3000]),
            (3, Distribution::PowerLaw { skew: 2.0 }, vec![1 << 20, 1 << 21, 1 << 22]),
            (4, Distribution::PowerLaw { skew: 3.0 }, vec![20, 30, 40, 50]),
            (5, Distribution::PowerLaw { skew: 2.0 }, vec![9, 10, 11, 12, 13]),
        ];
        for (seed, distribution, shape) in cases {
            let coo = synthetic(&shape, 100_000, distribution, seed);
            let input = Coo::new(&coo.shape, Indices::RowMajor(&coo.indices), &coo.values);
            let rank = shape.len() as u32;
            let identity: Vec<u32> = (0..rank).collect();
            let rotated: Vec<u32> = (0..rank).map(|l| (l + rank - 1) % rank).collect();
            let orders = if rank == 3 { vec![identity, rotated] } else { vec![rotated] };
            for order in orders {
                let want = reference_csf(&coo, &order); // later duplicates win
                for duplicates in [Duplicates::Last, Duplicates::First, Duplicates::Sum] {
                    let sequential =
                        levels_and_values(&build(&input, &options(&order, duplicates, false)).unwrap());
                    let parallel =
                        levels_and_values(&build(&input, &options(&order, duplicates, true)).unwrap());
                    assert!(sequential == parallel, "seed {seed} order {order:?} {duplicates:?}");
                    assert_eq!(sequential.0, want.levels, "seed {seed} order {order:?} {duplicates:?}");
                    if duplicates == Duplicates::Last {
                        assert_eq!(sequential.1, want.values, "seed {seed} order {order:?}");
                    }
                    if duplicates == Duplicates::Sum {
                        // Small integers: every sum is exact.
                        let total: f64 = coo.values.iter().sum();
                        assert_eq!(sequential.1.iter().sum::<f64>(), total);
                    }
                }
            }
        }
    }

    /// Every value width the fill specialises (1, 2, 4 and 8 bytes, and the
    /// unpacked 4-bit codes), in chunked builds with duplicates.
    #[test]
    fn every_value_width_follows_its_keys() {
        let coo = synthetic(&[40, 50, 60, 70], 100_000, Distribution::PowerLaw { skew: 3.0 }, 21);
        let want = reference_csf(&coo, &[0, 1, 2, 3]);
        let bytes = |t: ElementType, v: f64| -> Vec<u8> {
            match t {
                ElementType::U8 => vec![v as u8],
                ElementType::U16 => (v as u16).to_le_bytes().to_vec(),
                ElementType::F32 => (v as f32).to_le_bytes().to_vec(),
                ElementType::F64 => v.to_le_bytes().to_vec(),
                _ => unreachable!(),
            }
        };
        for element_type in [ElementType::U8, ElementType::U16, ElementType::F32, ElementType::F64] {
            let values: Vec<u8> = coo.values.iter().flat_map(|&v| bytes(element_type, v)).collect();
            let input = Coo {
                shape: &coo.shape,
                indices: Indices::RowMajor(&coo.indices),
                element_type,
                values: values.into(),
            };
            for parallel in [false, true] {
                let built = build(&input, &options(&[0, 1, 2, 3], Duplicates::Last, parallel)).unwrap();
                let view = built.tensor.view();
                let levels: Levels =
                    view.levels().iter().map(|l| (l.pos.iter().collect(), l.crd.iter().collect())).collect();
                assert_eq!(levels, want.levels, "{element_type:?} parallel={parallel}");
                let got: Vec<f64> = (0..want.nnz()).map(|i| view.values().get_raw_f64(i).unwrap()).collect();
                assert_eq!(got, want.values, "{element_type:?} parallel={parallel}");
            }
        }
        // 4-bit codes: values 1..=7 as u4.
        let codes: Vec<u8> = (0..coo.len()).map(|i| (i % 7 + 1) as u8).collect();
        let packed: Vec<u8> = codes.chunks(2).map(|c| c[0] | c.get(1).map_or(0, |h| h << 4)).collect();
        let as_f64 =
            csf_testdata::Coo { values: codes.iter().map(|&c| f64::from(c)).collect(), ..coo.clone() };
        let want = reference_csf(&as_f64, &[0, 1, 2, 3]);
        let input = Coo {
            shape: &coo.shape,
            indices: Indices::RowMajor(&coo.indices),
            element_type: ElementType::U4,
            values: packed.into(),
        };
        for parallel in [false, true] {
            let built = build(&input, &options(&[0, 1, 2, 3], Duplicates::Last, parallel)).unwrap();
            let view = built.tensor.view();
            let got: Vec<f64> = (0..want.nnz()).map(|i| view.values().get_raw_f64(i).unwrap()).collect();
            assert_eq!(got, want.values, "u4 parallel={parallel}");
        }
    }

    /// `coo`'s entries stably sorted by their storage-order tuples (equal
    /// tuples keep their input order), with `strays` of them then moved to
    /// random places.
    fn in_storage_order(
        coo: &csf_testdata::Coo,
        order: &[u32],
        strays: usize,
        seed: u64,
    ) -> csf_testdata::Coo {
        let mut entries: Vec<usize> = (0..coo.len()).collect();
        entries.sort_by_key(|&e| order.iter().map(|&d| coo.index(e)[d as usize]).collect::<Vec<_>>());
        let mut rng = csf_testdata::Rng::new(seed);
        for _ in 0..strays {
            let from = rng.below(entries.len() as u64) as usize;
            let moved = entries.remove(from);
            entries.insert(rng.below(entries.len() as u64 + 1) as usize, moved);
        }
        let indices = entries.iter().flat_map(|&e| coo.index(e).to_vec()).collect();
        let values = entries.iter().map(|&e| coo.values[e]).collect();
        csf_testdata::Coo { shape: coo.shape.clone(), indices, values }
    }

    /// Sorted and nearly sorted input (strays up to the limit and past it)
    /// builds byte-identical trees with and without the presorted path, for
    /// every duplicate policy, mode order, zero dropping and key width.
    #[test]
    fn presorted_input_builds_what_the_sort_builds() {
        let cases = [
            (31, Distribution::PowerLaw { skew: 3.0 }, vec![30u64, 40, 50]),
            (32, Distribution::Uniform, vec![1 << 40, 1 << 41, 1 << 42]),
            (33, Distribution::PowerLaw { skew: 2.0 }, vec![5, 6, 7, 8]),
        ];
        for (seed, distribution, shape) in cases {
            let mut coo = synthetic(&shape, 20_000, distribution, seed);
            coo.values.iter_mut().step_by(7).for_each(|v| *v = 0.0);
            let rank = shape.len() as u32;
            for order in [(0..rank).collect::<Vec<_>>(), (0..rank).rev().collect()] {
                for strays in [0, 5, 200, 2_000] {
                    let input = in_storage_order(&coo, &order, strays, seed + strays as u64);
                    let coo_in = Coo::new(&input.shape, Indices::RowMajor(&input.indices), &input.values);
                    for duplicates in
                        [Duplicates::Last, Duplicates::First, Duplicates::Sum, Duplicates::Error]
                    {
                        for drop_zeros in [false, true] {
                            let options = Options { drop_zeros, ..options(&order, duplicates, false) };
                            let fast = build_with(&coo_in, &options, true).map(|b| b.tensor);
                            let sorted = build_with(&coo_in, &options, false).map(|b| b.tensor);
                            assert_eq!(
                                fast, sorted,
                                "seed {seed} {order:?} strays {strays} {duplicates:?} {drop_zeros}"
                            );
                            // Up to the limit (1/64 of the entries) the fast path builds.
                            let taken = takes_fast_path(&coo_in, &order, &options);
                            assert_eq!(taken, strays <= 200, "seed {seed} {order:?} strays {strays}");
                        }
                    }
                }
            }
        }
    }

    fn takes_fast_path(coo: &Coo<'_>, order: &[u32], options: &Options) -> bool {
        let len = coo.values.len() / 8; // f64 values
        let source = Source { shape: coo.shape, indices: coo.indices, len };
        let slots = Slots::new(coo.element_type, &coo.values, len);
        let input = presorted::Input { source: &source, slots: &slots, mode_order: order, options };
        // A duplicate under `Error` is an answer of the fast path too.
        !matches!(presorted::try_build(&input), Ok(None))
    }

    #[test]
    fn presorted_input_reports_coordinates_outside_the_shape_like_the_sort() {
        let indices = [0, 0, 0, 0, 0, 1, 0, 9, 0, 1, 1, 1];
        let values = [1.0f64, 2.0, 0.0, 3.0];
        let input = Coo::new(&[2, 2, 2], Indices::RowMajor(&indices), &values);
        for drop_zeros in [false, true] {
            let options = Options { drop_zeros, ..Options::default() };
            let fast = build_with(&input, &options, true).map(|b| b.tensor);
            assert_eq!(fast, build_with(&input, &options, false).map(|b| b.tensor));
            assert!(matches!(fast, Err(BuildError::OutOfBounds { entry: 2, dim: 1, coord: 9, extent: 2 })));
        }
    }

    #[test]
    fn the_first_duplicate_is_named_whatever_the_threads() {
        // About 5 repeated indices among 100k uniform draws over 10^9 cells.
        let coo = synthetic(&[1000, 1000, 1000], 100_000, Distribution::Uniform, 7);
        let mut by_tuple: Vec<usize> = (0..coo.len()).collect();
        by_tuple.sort_by_key(|&i| coo.index(i).to_vec()); // stable
        let (first, second) = by_tuple
            .windows(2)
            .map(|w| (w[0], w[1]))
            .find(|&(a, b)| coo.index(a) == coo.index(b))
            .expect("a repeated index");
        let input = Coo::new(&coo.shape, Indices::RowMajor(&coo.indices), &coo.values);
        for parallel in [false, true] {
            let err = build(&input, &options(&[0, 1, 2], Duplicates::Error, parallel)).unwrap_err();
            assert_eq!(err, BuildError::Duplicate { index: coo.index(first).to_vec(), first, second });
        }
    }

    #[test]
    fn dropped_zeros_in_chunked_builds() {
        let mut coo = synthetic(&[300, 300, 300], 120_000, Distribution::Uniform, 11);
        for v in coo.values.iter_mut().step_by(7) {
            *v = 0.0;
        }
        let kept: Vec<usize> = (0..coo.len()).filter(|&i| coo.values[i] != 0.0).collect();
        let filtered = csf_testdata::Coo {
            shape: coo.shape.clone(),
            indices: kept.iter().flat_map(|&i| coo.index(i).to_vec()).collect(),
            values: kept.iter().map(|&i| coo.values[i]).collect(),
        };
        let want = reference_csf(&filtered, &[0, 1, 2]);
        let input = Coo::new(&coo.shape, Indices::RowMajor(&coo.indices), &coo.values);
        for parallel in [false, true] {
            let built = build(
                &input,
                &Options { drop_zeros: true, ..options(&[0, 1, 2], Duplicates::Last, parallel) },
            )
            .unwrap();
            let (levels, values) = levels_and_values(&built);
            assert_eq!(levels, want.levels);
            assert_eq!(values, want.values);
        }
    }
}
