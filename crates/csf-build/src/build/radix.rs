//! The radix path: one sort of packed keys, which tallies each bucket's
//! nodes while the bucket is in cache, then the chunks of sorted keys
//! placed (`plan.rs`) and written (`fill.rs`) in parallel.

use crate::key::{Key, Layout};
use crate::sort::{sort_from, Payload, SlotArray, Sorted};
use crate::{BuildError, Duplicates};

use super::fill::Writer;
use super::keyer::Keyer;
use super::plan::{ChunkPlan, Spare};
use super::{check_bounds, BuildJob, Output};

/// What one sorted bucket adds to the tree, counted while it is in cache.
pub(super) struct Tally {
    /// `at[L]`: keys after the bucket's first whose path leaves the previous
    /// key's at level `L` (they open a node at `L` and every level below).
    pub(super) at: Vec<usize>,
    /// The bucket's first key that duplicates the key before it.
    first_duplicate: Option<usize>,
}

/// A radix build once its keys are sorted and tallied: what is left to
/// write the tree, none of which reads the build's input.
pub(super) struct SortedTree<K> {
    keys: Vec<K>,
    /// The value slots, in the keys' order (see `Layout::slot`).
    slots: SlotArray,
    plan: ChunkPlan,
    writer: Writer,
}

impl BuildJob<'_> {
    /// Sorts the keys (the values come along, see `sort.rs`), counting each
    /// bucket's nodes per level while it is in cache, and checks for
    /// duplicates under `Error`: all of the build that reads the input.
    /// [`SortedTree::write`] then writes the tree. `None` when the sort gave
    /// up although every coordinate is inside the shape (not reached: the
    /// comparison sort is the fallback).
    pub(super) fn sort_tree<K: Key>(&self) -> Result<Option<SortedTree<K>>, BuildError> {
        let Some(sorted) = self.sort_and_tally::<K>() else {
            check_bounds(self.source)?;
            return Ok(None);
        };
        let tree = tree_of(sorted, self.layout, self.writer(), self.options.duplicates);
        tree.map(Some).map_err(|key| self.duplicate_error_of(key))
    }

    pub(super) fn writer(&self) -> Writer {
        Writer {
            layout: self.layout,
            width: self.slots.width,
            element_type: self.slots.element_type,
            duplicates: self.options.duplicates,
            parallel: self.options.parallel,
        }
    }

    /// The sorted keys and value slots, each bucket tallied while it was in
    /// cache; `None` when an entry has a coordinate outside the shape.
    fn sort_and_tally<K: Key>(&self) -> Option<Sorted<K, Tally>> {
        let layout = self.layout;
        let payload = Payload { data: &self.slots.data, width: self.slots.width };
        let keyer = Keyer::new(self);
        let (lo, hi) = (layout.position_bits, layout.total_bits());
        sort_from(&keyer, Some(payload), (lo, self.ordered, hi), self.options.parallel, tally(layout)).ok()
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
}

/// The visit of each sorted bucket: its nodes per level, and its first
/// duplicate key.
pub(super) fn tally<K: Key>(layout: Layout) -> impl Fn(usize, &[K]) -> Tally + Sync {
    move |start: usize, bucket: &[K]| {
        let mut at = vec![0usize; layout.rank];
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
    }
}

/// The tree to write from sorted and tallied keys, or under
/// [`Duplicates::Error`] the first key that repeats the one before it.
pub(super) fn tree_of<K: Key>(
    sorted: Sorted<K, Tally>,
    layout: Layout,
    writer: Writer,
    duplicates: Duplicates,
) -> Result<SortedTree<K>, K> {
    let Sorted { keys, slots, starts, visits: mut tallies, top_shift } = sorted;
    tally_bucket_firsts(&layout, &mut tallies, &starts, top_shift);
    if duplicates == Duplicates::Error {
        if let Some(i) = tallies.iter().find_map(|t| t.first_duplicate) {
            return Err(keys[i]);
        }
    }
    let plan = ChunkPlan::new(starts, tallies, layout.rank, writer.parallel);
    Ok(SortedTree { keys, slots, plan, writer })
}

/// Adds each bucket's first key to its tally, which counted only the keys
/// after it: the first key leaves the previous bucket's last key at the
/// level of the highest bit where their top digits differ.
fn tally_bucket_firsts(layout: &Layout, tallies: &mut [Tally], starts: &[usize], top_shift: u32) {
    let mut prev_digit = None;
    for (digit, tally) in tallies.iter_mut().enumerate() {
        if starts[digit + 1] > starts[digit] {
            let split = prev_digit.map_or(0, |p: usize| {
                let high = top_shift + (usize::BITS - 1 - (p ^ digit).leading_zeros());
                usize::from(layout.level_of_bit[high as usize])
            });
            tally.at[split] += 1;
            prev_digit = Some(digit);
        }
    }
}

impl<K: Key> SortedTree<K> {
    /// Writes the tree: the upper levels into arrays taken from `spare`
    /// where they fit (else fresh ones), the leaf `crd` over the sorted
    /// keys, and the values over the value slots when they are a byte array
    /// of their own, else (slots in a spare word array) into `input_values`,
    /// the input's values, which the sort has finished reading: both arrays
    /// the input touched already. `input_values` is dropped unused otherwise.
    /// A word array of slots of a word each becomes the `crd` of the level
    /// above the leaves, written over the slots as they are read (see
    /// `ChunkPlan::hand_out`): one fresh array fewer.
    pub(super) fn write(self, mut spare: Spare, input_values: Vec<u8>) -> Result<Output, BuildError> {
        let SortedTree { mut keys, slots, plan, writer } = self;
        let width = writer.width;
        let apart = matches!(slots, SlotArray::Words(_, len) if len == input_values.len());
        let (mut values, slots, mut shared) = match slots {
            SlotArray::Words(words, _) if apart && width == 8 && words.len() >= plan.keys() => {
                (input_values, None, Some(words))
            }
            slots if apart => (input_values, Some(slots), None),
            slots => {
                drop(input_values);
                (slots.into_bytes(), None, None)
            }
        };
        let mut levels = plan.allocate(&mut spare, shared.is_some());
        // The spare arrays left over are not needed: freed before the writing.
        drop(spare);
        let parts = plan.hand_out(
            (&mut keys, &mut values),
            (slots.as_ref().map(SlotArray::as_bytes), shared.as_deref_mut()),
            &mut levels,
            width,
        );
        let sides = writer.write_parts(parts)?;
        drop(slots);
        if let Some(words) = shared {
            plan.settle_shared(words, &mut levels);
        }
        plan.place_leaves(&mut keys, &mut values, sides, width);
        // The duplicates merged leave the arrays longer than the leaves.
        let nnz = plan.leaves();
        keys.truncate(nnz);
        values.truncate(nnz * width);
        if nnz < plan.keys() {
            keys.shrink_to_fit();
            values.shrink_to_fit();
        }
        Ok((levels.with_leaf_crd(K::into_u64s(keys)), values))
    }
}
