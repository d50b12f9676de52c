//! `Auto` over keys packed in identity order, for `build_owned` of input
//! out of order.
//!
//! `Auto` reads the input before the mode order is known, and its partition
//! passes scatter packed keys (`distinct/pass.rs`): read from the input, a
//! key costs a read of every dimension's column, in each pass. A build that
//! owns its columns packs the identity order's keys over the first column
//! once instead (the in-place radix path's own first step,
//! `in_place::pack`), and the passes scatter from them: one word an entry
//! rather than one a dimension. When `Auto` chooses the identity (as on the
//! power laws of docs/benchmarks.md), the in-place build sorts those keys
//! without packing them again. For another order the keys are repacked in
//! that order (a read of one word an entry, where packing reads one a
//! dimension), unless the input is in or near that order: then the two
//! columns are restored from the keys, and the build goes on as for any
//! chosen order (its presorted paths read the columns).
//!
//! Taken for input of at least `PACKED_MIN` entries whose keys fit a word
//! (position bits and all, so that they are the in-place path's), with no
//! zeros to drop, a pair of dimensions of many cells (else `Auto` counts by
//! bitmap scans alone, and the packing would be spent on them), and out of
//! identity order from its first entries: input in order, or nearly, keeps
//! its presorted paths, which read the columns.
//!
//! The packing is also this path's bounds check, and it counts the singles
//! that `Auto` counts as it checks the bounds (`distinct::singles_counted`)
//! by bitmaps set from each key as it is written: every coordinate is read
//! once before the counting, where a bounds check of its own read every
//! column again (about 50 ms of 10M entries).

use rayon::prelude::*;

use super::in_place::{self, Counted, InPlace};
use super::{
    check_values_len, entry_count, with_borrowed, BuildJob, Built, Chosen, Options, Owned, Stage, Staged,
};
use crate::distinct::{is_dense, singles_counted, Dims};
use crate::key::Layout;
use crate::order::choose_lending;
use crate::values::Slots;
use crate::{check_rank, BuildError, Duplicates, ElementType, Indices, ModeOrderPolicy, Packed, Source};

/// The fewest entries packed before counting: below, the passes' reads
/// are a small part of a build (and the small and presorted paths are
/// likelier to take the input).
const PACKED_MIN: usize = 1 << 16;

/// The leading entries read for how far the input is from identity order.
const PROBE: usize = 1 << 12;

/// The least share of `PROBE`'s entries below their predecessor (in the
/// identity order, or the order chosen) for the input to count as out of
/// that order: the presorted scan gives up at a 64th of strays, a few more
/// than that here.
const PROBE_DESCENTS: usize = PROBE / 16;

/// What [`auto_over_packed`] did.
pub(super) enum Early {
    /// The tensor.
    Built(Built),
    /// Another order chosen, which the input is in or near; the input is
    /// as it was given.
    Chosen(Chosen),
    /// Not taken: the input is as it was given, and nothing is chosen.
    Declined,
}

/// `build_owned` under `Auto` for input that qualifies (see the module
/// docs): the choice counted over keys packed over `columns[0]`, and the
/// tensor, built from those keys.
///
/// # Errors
/// As `build_owned`, as the in-place path reports them: a coordinate
/// outside the shape (found as the keys are packed, the bounds check of
/// this path), and a duplicate under `Duplicates::Error`.
pub(super) fn auto_over_packed(
    shape: &[u64],
    columns: &mut Vec<Vec<u64>>,
    element_type: ElementType,
    values: &mut Vec<u8>,
    options: &Options,
) -> Result<Early, BuildError> {
    if !matches!(options.mode_order, ModeOrderPolicy::Auto) || options.drop_zeros {
        return Ok(Early::Declined);
    }
    let rank = shape.len();
    let ready = with_borrowed(shape, columns, element_type, values, |coo| {
        // The checks of `Plan::new`, whose errors the normal path reports.
        check_rank(rank).ok()?;
        let len = entry_count(coo.indices, rank).ok()?;
        check_values_len(coo, len).ok()?;
        let slots = Slots::new(element_type, &coo.values, len);
        if options.duplicates == Duplicates::Sum {
            slots.can_sum().ok()?;
        }
        let layout = Layout::new(shape, len);
        let fits = len >= PACKED_MIN && slots.is_input() && layout.total_bits() <= 64;
        // Every pair dense: no partition pass would read the keys.
        let sparse_pair = (1..rank).any(|d| (0..d).any(|e| !is_dense(shape, len, 1 << d | 1 << e)));
        let identity: Vec<u32> = (0..rank as u32).collect();
        let column = |e: usize, d: usize| columns[d].get(e).copied().unwrap_or(0);
        if !fits || !sparse_pair || descents(&identity, PROBE.min(len), column) < PROBE_DESCENTS {
            return None;
        }
        Some((len, layout))
    });
    let Some((len, layout)) = ready else { return Ok(Early::Declined) };
    let identity: Vec<u32> = (0..rank as u32).collect();
    // The singles `Auto` counts as it checks the bounds, counted here as
    // the keys are packed (the packing checks the bounds and reads every
    // coordinate too: a scan of their own would read the columns again).
    // The keys are in identity order: level `d` is dimension `d`.
    let counted_dims: Vec<usize> =
        singles_counted(shape, len).iter().enumerate().filter(|&(_, &c)| c).map(|(d, _)| d).collect();
    let mut keys = std::mem::take(&mut columns[0]);
    let packed =
        in_place::pack_over(&mut keys, columns, (&identity, &layout), &counted_dims, options.parallel);
    columns[0] = keys;
    let (counted, distinct) = match packed {
        Ok(packed) => packed,
        // The columns are input no longer (the keys are packed over the
        // first up to `entry`): refused as the in-place build refuses it,
        // the error the borrowed build reports (the first entry outside,
        // its first dimension outside).
        Err(entry) => return Err(in_place::out_of_bounds(entry, &columns[0], columns, 0, shape)),
    };
    let singles: Vec<(Dims, u64)> = counted_dims.iter().zip(distinct).map(|(&d, n)| (1 << d, n)).collect();
    let (choice, in_identity_order) = choose_over_keys(shape, columns, len, &layout, &singles, options);
    let order = choice.mode_order.clone();
    let (ordered, counted) = if order == identity {
        (layout, counted)
    } else {
        // The keys again, in the order chosen, unless the input is in (or
        // near) that order: the presorted paths, which read the columns,
        // build it for less.
        let extents: Vec<u64> = order.iter().map(|&d| shape[d as usize]).collect();
        let ordered = Layout::new(&extents, len);
        if ordered.total_bits() > 64
            || descents(&order, PROBE.min(len), |e, d| columns[0][e] >> layout.shift[d] & layout.mask[d])
                < PROBE_DESCENTS
        {
            unpack(columns, &layout, options.parallel);
            return Ok(Early::Chosen(Chosen { mode_order: order, auto: Some(choice), in_identity_order }));
        }
        let counted = in_place::repack_over(&mut columns[0], &layout, &order, &ordered, options.parallel);
        // The keys go where the in-place sort takes them from: the first
        // level's column.
        columns.swap(0, order[0] as usize);
        (ordered, counted)
    };
    let keyed = (len, ordered, counted);
    let staged = build_in(shape, columns, (element_type, values), keyed, choice, options);
    let owned = Owned { columns: std::mem::take(columns), values: std::mem::take(values) };
    staged.finish(owned, options).map(Early::Built)
}

/// The entries among the first `upto` whose coordinates (`coord(entry,
/// dim)`) are below their predecessor's in `order`.
fn descents(order: &[u32], upto: usize, coord: impl Fn(usize, usize) -> u64) -> usize {
    let below = |e: usize| {
        let differ = order.iter().map(|&d| d as usize).find(|&d| coord(e, d) != coord(e - 1, d));
        differ.is_some_and(|d| coord(e, d) < coord(e - 1, d))
    };
    (1..upto).filter(|&e| below(e)).count()
}

/// `Auto`'s choice, counted over the keys packed over `columns[0]` alone;
/// the passes write their keys over `columns[1]`, whose coordinates the
/// keys hold too.
fn choose_over_keys(
    shape: &[u64],
    columns: &mut [Vec<u64>],
    len: usize,
    layout: &Layout,
    singles: &[(Dims, u64)],
    options: &Options,
) -> (crate::AutoChoice, bool) {
    let scratch = std::mem::take(&mut columns[1]);
    let keys = Packed { keys: &columns[0], layout };
    let source = Source { shape, indices: Indices::Columnar(&[]), len, packed: Some(keys) };
    let (choice, in_identity_order, scratch) = choose_lending(&source, options.parallel, singles, scratch);
    columns[1] = scratch;
    (choice, in_identity_order)
}

/// The first two columns' coordinates again, from the keys packed over
/// the first (the second held the passes' keys).
fn unpack(columns: &mut [Vec<u64>], layout: &Layout, parallel: bool) {
    let field = |d: usize| (layout.shift[d], layout.mask[d]);
    let ((s0, m0), (s1, m1)) = (field(0), field(1));
    let (first, rest) = columns.split_at_mut(1);
    let (keys, second) = (&mut first[0], &mut rest[0]);
    second.resize(keys.len(), 0);
    let unpack = |(k, c): (&mut u64, &mut u64)| {
        *c = *k >> s1 & m1;
        *k = *k >> s0 & m0;
    };
    if parallel {
        keys.par_iter_mut().zip(second.par_iter_mut()).for_each(unpack);
    } else {
        keys.iter_mut().zip(second.iter_mut()).for_each(unpack);
    }
}

/// The in-place radix build in the order chosen, its keys (by `layout`, of
/// that order) packed over the first level's column already.
fn build_in(
    shape: &[u64],
    columns: &[Vec<u64>],
    (element_type, values): (ElementType, &[u8]),
    (len, layout, counted): (usize, Layout, Counted),
    choice: crate::AutoChoice,
    options: &Options,
) -> Staged {
    let mode_order = choice.mode_order.clone();
    with_borrowed(shape, columns, element_type, values, |coo| {
        // (The job's source is not read: the writer is made of the layout,
        // the slots' type and the options.)
        let source = Source { shape, indices: coo.indices, len, packed: None };
        let slots = Slots::new(element_type, &coo.values, len);
        let job =
            BuildJob { source: &source, slots: &slots, mode_order: &mode_order, layout, ordered: 0, options };
        let in_place = InPlace { writer: job.writer(), ordered: 0, packed: Some(counted) };
        Staged {
            stage: Stage::InPlace(Box::new(in_place)),
            len,
            width: slots.width,
            element_type,
            shape: shape.to_vec(),
            mode_order: mode_order.clone(),
            auto: Some(choice),
        }
    })
}

#[cfg(test)]
mod tests;
