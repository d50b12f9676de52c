//! Input in storage order, built over its own memory ([`crate::build_owned`]).
//!
//! The leaves of input in storage order are its entries in input order,
//! less the duplicates merged and the zeros dropped. So the leaf level's
//! `crd` is the column of the last stored dimension and the values are
//! the input's values, compacted in place where an entry is merged or
//! dropped: each write lands at or before the entry being read, on memory
//! already read. Only the levels above the leaves are new arrays, and the
//! output's largest arrays cost no fresh pages.
//!
//! The walk gives up at the first entry out of order or outside the shape.
//! It also gives up, before compacting it, at the first duplicate or zero
//! to drop under `Error` (whose error names input positions), and at the
//! first duplicate under `Sum` with zeros dropped (a sum may come to zero,
//! which a second build would then drop). When it gives up after
//! compacting, it restores the entries it read as the entries it kept
//! (each kept leaf's coordinates written back from the tree into the other
//! columns, the unread rest moved down behind them), which every build
//! treats as the input it read: the same merges (in input order), the same
//! drops. The caller then builds that input by the other paths.

use hurray_format::limits::MAX_RANK;
use hurray_format::{ElementType, Packing};

use super::{node_bounds, Arrays, Levels, Tree, ONE_PASS_PROBE};
use crate::bucket::copy_slot;
use crate::values::{is_zero, merge_duplicate};
use crate::{Duplicates, Options};

/// An owned input, already checked (rank, lengths, sums possible), of an
/// element type whose values the tensor stores as given.
pub(crate) struct OwnedInput<'a> {
    pub(crate) shape: &'a [u64],
    /// One per logical dimension, all of one length.
    pub(crate) columns: &'a mut [Vec<u64>],
    pub(crate) values: &'a mut Vec<u8>,
    pub(crate) element_type: ElementType,
    pub(crate) mode_order: &'a [u32],
    pub(crate) options: &'a Options,
}

/// What [`adopt`] made of an input.
pub(crate) enum Adoption {
    /// The input was in storage order. These are the levels above the
    /// leaves (the leaf level's `crd` is empty); the first `leaves` entries
    /// of the column of `mode_order[rank - 1]` and of the values are the
    /// leaves.
    Built { levels: Levels, leaves: usize },
    /// It was not taken: of the first `read` entries, the `kept` entries
    /// they merged into now stand in their place, the unread ones after
    /// them (the input is `read - kept` entries shorter). `in_order`: the
    /// walk stopped for the duplicate policy, not at an entry out of order
    /// or outside the shape.
    Declined { read: usize, kept: usize, in_order: bool },
}

/// Builds the levels above the leaves of `input` when it is in storage
/// order, compacting its leaf column and values in place (see the module).
pub(crate) fn adopt(mut input: OwnedInput<'_>) -> Adoption {
    let rank = input.mode_order.len();
    let mut dims = [0usize; MAX_RANK];
    let mut extents = [0u64; MAX_RANK];
    for (level, &dim) in input.mode_order.iter().enumerate() {
        dims[level] = dim as usize;
        extents[level] = input.shape[dim as usize];
    }
    let len = input.columns.first().map_or(0, Vec::len);
    if !starts_sorted(input.columns, &dims[..rank], &extents[..rank], ONE_PASS_PROBE.min(len)) {
        return Adoption::Declined { read: 0, kept: 0, in_order: false };
    }
    let mut tree = Tree::zeroed_above_leaves(&node_bounds(&extents[..rank], len));
    let walked = match rank {
        3 => walk_rank::<3>(&mut input, &mut tree.arrays(), dims, extents),
        4 => walk_rank::<4>(&mut input, &mut tree.arrays(), dims, extents),
        5 => walk_rank::<5>(&mut input, &mut tree.arrays(), dims, extents),
        _ => walk_rank::<0>(&mut input, &mut tree.arrays(), dims, extents),
    };
    let leaves = walked.opened[rank - 1];
    let levels = tree.close(&walked.opened).0;
    match walked.stopped_at {
        None => Adoption::Built { levels, leaves },
        Some(read) => {
            if leaves < read {
                restore(input, &levels, &dims[..rank], read, leaves);
            }
            Adoption::Declined { read, kept: leaves, in_order: walked.in_order }
        }
    }
}

/// Whether the first `probe` entries lie inside the shape and never
/// decrease in storage order: random input fails within a few entries,
/// before anything is allocated.
fn starts_sorted(columns: &[Vec<u64>], dims: &[usize], extents: &[u64], probe: usize) -> bool {
    let tuple = |entry: usize| dims.iter().map(move |&d| columns[d][entry]);
    (0..probe).all(|entry| tuple(entry).zip(extents).all(|(c, &e)| c < e))
        && (1..probe).all(|entry| tuple(entry - 1).le(tuple(entry)))
}

/// Where a walk ended.
struct Walked {
    /// Nodes written per level.
    opened: [usize; MAX_RANK],
    /// The entry it gave up at, if it did.
    stopped_at: Option<usize>,
    /// Whether the entries up to that one are in storage order.
    in_order: bool,
}

impl Walked {
    /// A walk that gave up at `entry` with `opened` nodes written.
    fn stopped(entry: usize, opened: [usize; MAX_RANK], in_order: bool) -> Self {
        Self { opened, stopped_at: Some(entry), in_order }
    }
}

/// [`walk`] for rank `R` (0: any), with the value width a constant when it
/// is a common one: the moves of values are then single loads and stores.
fn walk_rank<const R: usize>(
    input: &mut OwnedInput<'_>,
    out: &mut Arrays<'_>,
    dims: [usize; MAX_RANK],
    extents: [u64; MAX_RANK],
) -> Walked {
    match input.element_type.packing() {
        Packing::Bytes(1) => walk::<R, 1>(input, out, dims, extents),
        Packing::Bytes(2) => walk::<R, 2>(input, out, dims, extents),
        Packing::Bytes(4) => walk::<R, 4>(input, out, dims, extents),
        Packing::Bytes(8) => walk::<R, 8>(input, out, dims, extents),
        _ => walk::<R, 0>(input, out, dims, extents),
    }
}

/// The walk of [`adopt`] for rank `R` and value width `W` (0: any): each entry's tuple is read
/// once, compared with the last kept one's, its upper levels written from
/// the split down, and its leaf coordinate and value moved down when
/// entries before it were merged or dropped.
#[inline(always)]
fn walk<const R: usize, const W: usize>(
    input: &mut OwnedInput<'_>,
    out: &mut Arrays<'_>,
    dims: [usize; MAX_RANK],
    extents: [u64; MAX_RANK],
) -> Walked {
    let rank = if R == 0 { input.mode_order.len() } else { R };
    let leaf = rank - 1;
    let Packing::Bytes(width) = input.element_type.packing() else {
        return Walked::stopped(0, [0; MAX_RANK], false);
    };
    let width = if W == 0 { usize::from(width) } else { W };
    let rules = Rules::of(input.options);
    let len = input.columns.first().map_or(0, Vec::len);
    let (upper, leaf_column) = by_level(input.columns, &dims, rank);
    let values = &mut *input.values;
    let mut opened = [0usize; MAX_RANK];
    let mut last = [0u64; MAX_RANK];
    // Every entry overwrites the first `rank` words (zeroing it per entry
    // cost a `memset` call each).
    let mut tuple = [0u64; MAX_RANK];
    for entry in 0..len {
        let inside = read_tuple(&upper, leaf_column, entry, &extents[..rank], &mut tuple);
        let kept = opened[leaf];
        // The first level where the tuple leaves the last kept one's path
        // (`rank`: the same tuple); every level for the first kept entry.
        let split = if kept > 0 { (0..rank).find(|&l| tuple[l] != last[l]).unwrap_or(rank) } else { 0 };
        if !inside || (split < rank && tuple[split] < last[split] && kept > 0) {
            return Walked::stopped(entry, opened, false);
        }
        let value = entry * width..(entry + 1) * width;
        if rules.drop_zeros && is_zero(input.element_type, &values[value.clone()]) {
            if !rules.may_drop {
                return Walked::stopped(entry, opened, true);
            }
            continue;
        }
        if split == rank {
            if !rules.may_merge {
                return Walked::stopped(entry, opened, true);
            }
            let (head, tail) = values.split_at_mut(value.start);
            let into = &mut head[(kept - 1) * width..kept * width];
            // Sums were checked possible before the build: no error here.
            let _ = merge_duplicate::<W>(input.element_type, rules.policy, into, &tail[..width]);
            continue;
        }
        for level in split..leaf {
            out.open(&mut opened, level, level > split, tuple[level]);
            last[level] = tuple[level];
        }
        out.open_adopted(&mut opened, leaf, leaf > split);
        last[leaf] = tuple[leaf];
        if kept < entry {
            leaf_column[kept] = tuple[leaf];
            let (head, tail) = values.split_at_mut(value.start);
            copy_slot::<W>(&mut head[kept * width..(kept + 1) * width], &tail[..width]);
        }
    }
    Walked { opened, stopped_at: None, in_order: true }
}

/// What the duplicate policy and zero dropping let the walk do itself.
struct Rules {
    policy: Duplicates,
    drop_zeros: bool,
    /// Drop zeros (every policy but `Error`, whose error names input entries).
    may_drop: bool,
    /// Merge duplicates: those a restored input reproduces (not a sum that
    /// might come to zero and be dropped).
    may_merge: bool,
}

impl Rules {
    fn of(options: &Options) -> Self {
        let (policy, drop_zeros) = (options.duplicates, options.drop_zeros);
        let may_drop = policy != Duplicates::Error;
        let may_merge = may_drop && !(policy == Duplicates::Sum && drop_zeros);
        Self { policy, drop_zeros, may_drop, may_merge }
    }
}

/// The columns by level: the upper levels' (read), and the leaf level's
/// (written: it becomes the leaf `crd`).
fn by_level<'c>(
    columns: &'c mut [Vec<u64>],
    dims: &[usize; MAX_RANK],
    rank: usize,
) -> ([&'c [u64]; MAX_RANK], &'c mut [u64]) {
    let leaf = rank - 1;
    let mut by_dim: [&[u64]; MAX_RANK] = [&[]; MAX_RANK];
    let mut leaf_column: &mut [u64] = &mut [];
    for (dim, column) in columns.iter_mut().enumerate() {
        if dim == dims[leaf] {
            leaf_column = column;
        } else {
            by_dim[dim] = column;
        }
    }
    let mut upper: [&[u64]; MAX_RANK] = [&[]; MAX_RANK];
    for level in 0..leaf {
        upper[level] = by_dim[dims[level]];
    }
    (upper, leaf_column)
}

/// Reads `entry`'s coordinates by level into the first `extents.len()`
/// words of `tuple`; whether they lie inside the shape.
#[inline(always)]
fn read_tuple(
    upper: &[&[u64]; MAX_RANK],
    leaf_column: &[u64],
    entry: usize,
    extents: &[u64],
    tuple: &mut [u64; MAX_RANK],
) -> bool {
    let leaf = extents.len() - 1;
    let mut inside = true;
    for level in 0..leaf {
        tuple[level] = upper[level][entry];
        inside &= tuple[level] < extents[level];
    }
    tuple[leaf] = leaf_column[entry];
    inside & (tuple[leaf] < extents[leaf])
}

/// Puts the `kept` leaves of a walk that gave up at entry `read` in place
/// of the entries it read, and moves the unread entries down behind them.
/// The leaf column and the values already hold the leaves; the other
/// columns get each leaf's coordinates from `levels` (the levels above the
/// leaves, closed).
fn restore(input: OwnedInput<'_>, levels: &Levels, dims: &[usize], read: usize, kept: usize) {
    let rank = dims.len();
    // The first leaf under node `node` of `level` (one past the level's
    // last node: the leaf count).
    let first_leaf = |level: usize, node: usize| (level + 1..rank).fold(node, |n, l| levels[l].0[n] as usize);
    for (level, (_, crd)) in levels.iter().enumerate().take(rank - 1) {
        let column = &mut input.columns[dims[level]];
        for (node, &coord) in crd.iter().enumerate() {
            column[first_leaf(level, node)..first_leaf(level, node + 1)].fill(coord);
        }
    }
    let len = input.columns.first().map_or(0, Vec::len);
    for column in input.columns.iter_mut() {
        column.copy_within(read..len, kept);
        column.truncate(len - (read - kept));
    }
    // The bytes of `n` values (whole bytes each: `adopt` walks no other).
    let bytes = |n: usize| usize::try_from(input.element_type.values_len(n as u64).unwrap_or(0)).unwrap_or(0);
    input.values.copy_within(bytes(read).., bytes(kept));
    input.values.truncate(bytes(len - (read - kept)));
}
