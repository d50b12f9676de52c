//! Writing the chunks of sorted keys: each chunk's nodes at every level, and
//! its leaf coordinates and values over its own keys and value slots, with
//! the duplicate policy applied on the way.

use std::ops::Range;

use hurray_format::limits::MAX_RANK;
use rayon::prelude::*;

use crate::bucket::copy_slot;
use crate::key::{Key, Layout};
use crate::values::merge_duplicate;
use crate::{BuildError, Duplicates};

/// What writing the sorted keys needs to know of a build: not its input,
/// which the writer never reads (so that `build_owned` can hand the input's
/// arrays over to the levels first).
#[derive(Clone, Copy, Debug)]
pub(super) struct Writer {
    pub(super) layout: Layout,
    /// The bytes of a value slot.
    pub(super) width: usize,
    pub(super) element_type: hurray_format::ElementType,
    pub(super) duplicates: Duplicates,
    pub(super) parallel: bool,
}

/// One chunk's share of the output: whole buckets, so that no run of
/// duplicates crosses chunks.
pub(super) struct Part<'a, K> {
    /// The chunk's sorted keys; the leaf coordinates are written over them.
    pub(super) keys: &'a mut [K],
    /// The chunk's value slots (see `Layout::slot`), which the leaf values
    /// are written over; or, with slots elsewhere, the leaf values alone.
    pub(super) values: &'a mut [u8],
    /// Where the chunk's value slots are.
    pub(super) slots: SlotSource<'a>,
    /// The index of the chunk's first key.
    pub(super) start: usize,
    /// The chunk's buckets, as ranges of `keys`.
    pub(super) buckets: Vec<Range<usize>>,
    /// The key before the chunk.
    pub(super) prev: Option<K>,
    /// `crd[L]` for the upper levels `L < rank - 1`.
    pub(super) crd: Vec<&'a mut [u64]>,
    /// `pos[L]` for levels `L >= 1` (`pos[0]` is empty).
    pub(super) pos: Vec<&'a mut [u64]>,
    /// Nodes that earlier chunks opened, per level.
    pub(super) base: &'a [usize],
    /// The chunk's leaf `k` goes to `k - gap` of its own slices, and its
    /// first `gap` leaves (which belong before them, see `ChunkPlan::new`)
    /// to a side buffer; `gap` is zero or the duplicates in earlier chunks.
    pub(super) gap: usize,
}

/// Where a chunk's value slots are.
#[derive(Clone, Copy)]
pub(super) enum SlotSource<'a> {
    /// In `Part::values`, which the leaf values are written over.
    Values,
    /// In an array of their own.
    Apart(&'a [u8]),
    /// In the words of `crd[rank - 2]`, one a key, over which the chunk
    /// writes that level's nodes (`ChunkPlan::hand_out`).
    Level,
}

/// The leaves a chunk could not write in place (see `Part::gap`): leaf
/// coordinates and value slots.
pub(super) type Side = (Vec<u64>, Vec<u8>);

/// Per level: a chunk's slice of `crd` or `pos`.
type Slices<'a> = [&'a mut [u64]; MAX_RANK];
/// Per level: a count of nodes.
type Counts = [usize; MAX_RANK];

/// A part's slices as an array indexed by level: of a fixed size, so that
/// with a constant rank `fill` keeps the ones it uses in registers.
#[inline(always)]
fn by_level(slices: Vec<&mut [u64]>) -> Slices<'_> {
    let mut by_level: Slices<'_> = std::array::from_fn(|_| Default::default());
    by_level.iter_mut().zip(slices).for_each(|(s, v)| *s = v);
    by_level
}

/// Opens `key`'s nodes on the upper levels from `split` down (`local[L]`:
/// the nodes the chunk has opened at level `L`, `count[L]`: all chunks up to
/// it), and has each upper level's next node start its children where they
/// will go (the leaf itself is the caller's to write). Which levels open a
/// node is a coin toss on most data, so rather than branch on it, every
/// upper level's next slot is written whether or not a node opens there: a
/// slot written by a key that opens no node is written again by the key
/// that does. (`get_mut`: past a chunk's last node there is no next slot.)
///
/// The four arrays are `fill`'s locals, passed one by one: gathered in one
/// struct they left fewer counters in registers, and the loop ran about 5%
/// more instructions per key.
#[inline(always)]
fn open_above<K: Key>(
    layout: &Layout,
    key: K,
    split: usize,
    leaf: usize,
    (crd, pos): (&mut Slices<'_>, &mut Slices<'_>),
    (count, local): (&mut Counts, &mut Counts),
) {
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
}

impl Writer {
    /// Writes every part (in parallel with `parallel`), and returns the
    /// leaves each could not write in place. The value copy is specialised by
    /// width (a `memcpy` call per value would cost more than the rest of the
    /// loop), and the common ranks and widths by rank too.
    pub(super) fn write_parts<K: Key>(&self, parts: Vec<Part<'_, K>>) -> Result<Vec<Side>, BuildError> {
        let fill = |part: Part<'_, K>| match (self.width, self.layout.rank) {
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
        if self.parallel {
            parts.into_par_iter().map(fill).collect()
        } else {
            parts.into_iter().map(fill).collect()
        }
    }

    /// Writes one chunk's nodes, leaf coordinates and values, and returns
    /// the leaves it could not write in place; `W` is the value width (0:
    /// `self.width`), `R` the rank (0: `layout.rank`).
    fn fill<K: Key, const W: usize, const R: usize>(&self, part: Part<'_, K>) -> Result<Side, BuildError> {
        let Part { keys, values, slots, start, buckets, mut prev, crd: crd_vec, pos: pos_vec, base, gap } =
            part;
        let layout = self.layout;
        // A constant rank unrolls the level loops and keeps the counters and
        // slices below in registers.
        let rank = if R == 0 { layout.rank } else { R };
        let leaf = rank - 1;
        let width = if W == 0 { self.width } else { W };
        let (mut side_keys, mut side_values) = (Vec::new(), Vec::new());
        let (mut crd, mut pos) = (by_level(crd_vec), by_level(pos_vec));
        // `count[L]`: nodes opened at level L so far, globally; `local[L]`: by this chunk.
        let mut count = [0usize; MAX_RANK];
        count[..rank].copy_from_slice(base);
        let mut local = [0usize; MAX_RANK];
        // The leaf values are written over the chunk's slots, or into an
        // array of their own. Keys with position bits index their slots
        // anywhere in their bucket, so each bucket's slots are copied into a
        // buffer first, with one sequential read: out of the slots' own
        // array, a read in key order would miss the cache on most keys
        // (cutting the tree writing by a fifth on a 10M uniform tensor);
        // over them, a leaf (or with `SlotSource::Level` a node) may be written
        // over a slot the bucket has yet to read. Keys without them (wide
        // keys) have their slots in key order, and slot `j` is read at key
        // `j`, before any leaf or node `k <= j` is written over it: no copy,
        // but for slots wider than a word (read through an 8-byte buffer
        // otherwise).
        let shared = leaf - 1;
        let gather = !layout.slots_in_key_order() || (matches!(slots, SlotSource::Values) && width > 8);
        let mut bucket_slots: Vec<u8> = Vec::new();
        let mut read = [0u8; 8];
        for bucket in buckets {
            if gather {
                bucket_slots.clear();
                let bytes = bucket.start * width..bucket.end * width;
                bucket_slots.extend_from_slice(match slots {
                    SlotSource::Values => &values[bytes],
                    SlotSource::Apart(apart) => &apart[bytes],
                    SlotSource::Level => bytemuck::cast_slice(&crd[shared][bucket.clone()]),
                });
            }
            let first_slot = start + bucket.start;
            for j in bucket {
                let key = keys[j];
                let slot: &[u8] = if gather {
                    let from = (layout.slot(key, start + j) - first_slot) * width;
                    &bucket_slots[from..from + width]
                } else {
                    match slots {
                        SlotSource::Values => {
                            copy_slot::<W>(&mut read[..width], &values[j * width..(j + 1) * width]);
                            &read[..width]
                        }
                        SlotSource::Apart(apart) => &apart[j * width..(j + 1) * width],
                        SlotSource::Level => {
                            // The slot's bytes as the sort wrote them (the words' own order).
                            read = crd[shared][j].to_ne_bytes();
                            &read[..width]
                        }
                    }
                };
                let split = prev.map_or(Some(0), |p| layout.split_level(p, key));
                prev = Some(key);
                let Some(split) = split else {
                    // A duplicate of the last leaf.
                    let last = local[leaf] - 1;
                    let into = match last.checked_sub(gap) {
                        Some(k) => &mut values[k * width..(k + 1) * width],
                        None => &mut side_values[last * width..(last + 1) * width],
                    };
                    merge_duplicate::<W>(self.element_type, self.duplicates, into, slot)?;
                    continue;
                };
                open_above(&layout, key, split, leaf, (&mut crd, &mut pos), (&mut count, &mut local));
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
}
