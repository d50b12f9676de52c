//! Small inputs: at most [`SMALL_INPUT`] entries, whose build the radix
//! sort's fixed costs (the key layout, the histograms, the chunk plan, about
//! 40 allocations) would dominate.
//!
//! Each kept entry's storage-order coordinates are packed, with its input
//! position in the low bits, into a `u128` key on the stack: the keys are
//! unique, so sorting them with `sort_unstable` is the stable sort of the
//! tuples (equal tuples meet in input order, as on the other paths, so every
//! duplicate policy gives the same bytes). The sorted keys are written by the
//! comparison path's tree writer, into arrays with room for every entry (a
//! few words more than the tree needs at most, and no counting pass): the
//! output's arrays are the only allocations. Coordinates too wide for a key
//! (more than 122 bits in all) leave the input to the other paths.

use hurray_format::limits::MAX_RANK;

use super::comparison::{Tree, DUPLICATE};
use super::{check_bounds, Output};
use crate::key::bit_length_below;
use crate::values::Slots;
use crate::{BuildError, Indices, Options, Source};

/// The most entries of a small input: up to this the sort of packed keys
/// costs less than the radix sort's fixed costs (docs/benchmarks-history.md,
/// "Small inputs against the naive builder").
pub(super) const SMALL_INPUT: usize = 64;

/// The bits of an entry's input position in its key.
const POSITION_BITS: u32 = SMALL_INPUT.trailing_zeros();

/// The levels and values of a small input in `mode_order`; `None` when the
/// input is not small or its coordinates do not fit a key.
pub(super) fn try_build(
    source: &Source<'_>,
    slots: &Slots<'_>,
    mode_order: &[u32],
    options: &Options,
) -> Option<Result<Output, BuildError>> {
    if source.len > SMALL_INPUT {
        return None;
    }
    let fields = Fields::new(source.shape, mode_order)?;
    let mut keys = [0u128; SMALL_INPUT];
    let mut kept = 0;
    for entry in 0..source.len {
        let (key, inside) = match source.indices {
            Indices::RowMajor(flat) => {
                fields.key(source.shape, mode_order, |dim| flat[entry * mode_order.len() + dim])
            }
            Indices::Columnar(cols) => fields.key(source.shape, mode_order, |dim| cols[dim][entry]),
        };
        if !inside {
            // The first entry outside the shape in input order (this one),
            // a dropped zero included, as the other paths report it.
            return check_bounds(source).err().map(Err);
        }
        if !options.drop_zeros || !slots.is_zero(entry) {
            keys[kept] = key | entry as u128;
            kept += 1;
        }
    }
    let keys = &mut keys[..kept];
    keys.sort_unstable();
    let mut splits = [0u8; SMALL_INPUT];
    for (i, split) in splits.iter_mut().enumerate().take(kept).skip(1) {
        *split = fields.split(keys[i - 1], keys[i]);
    }
    let keys = &*keys;
    let tree =
        Tree { splits: &splits[..kept], entry: |i: usize| (keys[i] & POSITION_MASK) as usize, exact: false };
    let coords = |level: usize| {
        let (shift, mask) = fields.field(level);
        // (A field of no bits may start at bit 128.)
        move |i: usize| keys[i].checked_shr(shift).unwrap_or(0) as u64 & mask
    };
    Some(tree.write(mode_order.len(), coords, source, slots, options.duplicates))
}

/// The position bits of a key.
const POSITION_MASK: u128 = (1 << POSITION_BITS) - 1;

/// Where each level's coordinate sits in a key: above the input position,
/// level 0 highest, each in the bits its extent needs.
struct Fields {
    /// `shift[L]`: the lowest bit of level L's field.
    shift: [u8; MAX_RANK],
    /// The bits of a key in all.
    top: u32,
    rank: usize,
}

impl Fields {
    /// The fields for `shape` in `mode_order`; `None` when the coordinates
    /// and the position do not fit a `u128`.
    fn new(shape: &[u64], mode_order: &[u32]) -> Option<Self> {
        let mut fields = Self { shift: [0; MAX_RANK], top: 0, rank: mode_order.len() };
        let mut low = POSITION_BITS;
        for (level, &dim) in mode_order.iter().enumerate().rev() {
            fields.shift[level] = low as u8;
            low += bit_length_below(shape[dim as usize]);
            if low > u128::BITS {
                return None;
            }
        }
        fields.top = low;
        Some(fields)
    }

    /// The key of an entry whose coordinate of dimension `d` is `coord(d)`
    /// (its position bits clear), and whether those lie inside the shape
    /// (when not, the key is meaningless: a coordinate too large for its
    /// field spills into the fields above).
    #[inline(always)]
    fn key(&self, shape: &[u64], mode_order: &[u32], coord: impl Fn(usize) -> u64) -> (u128, bool) {
        let mut key = 0u128;
        let mut inside = true;
        for (&dim, &shift) in mode_order.iter().zip(&self.shift) {
            let c = coord(dim as usize);
            inside &= c < shape[dim as usize];
            key |= u128::from(c).checked_shl(u32::from(shift)).unwrap_or(0);
        }
        (key, inside)
    }

    /// Level `level`'s field: its shift, and its mask once shifted.
    fn field(&self, level: usize) -> (u32, u64) {
        let low = u32::from(self.shift[level]);
        let high = level.checked_sub(1).map_or(self.top, |above| u32::from(self.shift[above]));
        (low, u64::MAX.checked_shr(64 - (high - low)).unwrap_or(0))
    }

    /// The first level where key `b`'s tuple leaves key `a`'s, or
    /// [`DUPLICATE`] when they are the same.
    #[inline(always)]
    fn split(&self, a: u128, b: u128) -> u8 {
        let differ = a ^ b;
        if differ >> POSITION_BITS == 0 {
            return DUPLICATE;
        }
        // The highest bit that differs is in the first level whose field
        // starts at or below it: the levels above are those whose fields
        // start above it.
        let high = (u128::BITS - 1 - differ.leading_zeros()) as u8;
        self.shift[..self.rank].iter().map(|&shift| u8::from(shift > high)).sum()
    }
}
