//! Writes into disjoint ranges of one pair of arrays from several threads:
//! the crate's one module with `unsafe`.
//!
//! The radix sort's scatter (`sort.rs`) splits its input into chunks, and
//! chunk `c` writes its keys of bucket `d`, with their value slots (one `T`
//! per key), into a range of the output arrays of its own: after those of
//! chunks `0..c`.
//! Safe Rust can hand that out only as a sub-slice per chunk and bucket,
//! which the scatter then looks up per key (the bucket's key and slot
//! sub-slices, the index of their first element, its cursor: four tables,
//! more live values than registers). A chunk's [`Cursors`] hold instead the
//! whole arrays' addresses and one `(next, end)` pair per bucket: a key
//! costs one table entry and a compare, as a one-thread scatter indexing
//! the whole arrays does.
//!
//! Soundness does not rest on the caller. [`split`] lays the ranges out
//! from the counts (each chunk's range of each bucket after the one before,
//! all within both arrays), and every write is checked against the end of
//! its range, so no two `Cursors` of one split ever reach the same element
//! and none reaches past the arrays, whatever the counts or the digits the
//! caller asks for. A caller that asks for more of a bucket than it
//! counted gets `None`, not another chunk's element.

#![allow(unsafe_code)]

use std::marker::PhantomData;

/// One chunk's write access to its ranges of the arrays of a [`split`].
pub(crate) struct Cursors<'a, K, T> {
    keys: *mut K,
    slots: *mut T,
    /// Per bucket: the next index of this chunk's range, and its end.
    spans: Vec<Span>,
    /// Whether an element was asked for past a range's end (or of a bucket
    /// the split does not have).
    refused: bool,
    /// The arrays, borrowed mutably for as long as any `Cursors` of the split lives.
    arrays: PhantomData<(&'a mut [K], &'a mut [T])>,
}

/// A chunk's range of one bucket, `next..end`, in elements of the whole arrays.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Span {
    next: usize,
    end: usize,
}

// SAFETY: a `Cursors` reaches only the elements of its own spans, which no
// other `Cursors` of its split holds (see `split`), and the split borrows the
// arrays mutably for `'a`: moving it to another thread moves exclusive access
// to those elements, as sending the `&mut [K]` and `&mut [T]` sub-slices
// would (hence `K: Send` and `T: Send`).
unsafe impl<K: Send, T: Send> Send for Cursors<'_, K, T> {}

/// Splits `keys` and `slots` alike into the ranges of `counts[c][d]`
/// elements each, bucket by bucket (`d`) and within a bucket chunk by chunk
/// (`c`), from index 0: one [`Cursors`] per chunk. `None` when the counts
/// are not all of one length or do not fit both arrays.
pub(crate) fn split<'a, K, T>(
    keys: &'a mut [K],
    slots: &'a mut [T],
    counts: &[Vec<usize>],
) -> Option<Vec<Cursors<'a, K, T>>> {
    let radix = counts.first().map_or(0, Vec::len);
    if counts.iter().any(|c| c.len() != radix) {
        return None;
    }
    let mut spans: Vec<Vec<Span>> = counts.iter().map(|_| Vec::with_capacity(radix)).collect();
    let mut at = 0usize;
    for d in 0..radix {
        for (chunk, mine) in counts.iter().zip(&mut spans) {
            let end = at.checked_add(*chunk.get(d)?)?;
            mine.push(Span { next: at, end });
            at = end;
        }
    }
    // Every span ends at or before `at`: within both arrays.
    if at > keys.len() || at > slots.len() {
        return None;
    }
    let (keys, slots) = (keys.as_mut_ptr(), slots.as_mut_ptr());
    Some(
        spans
            .into_iter()
            .map(|spans| Cursors { keys, slots, spans, refused: false, arrays: PhantomData })
            .collect(),
    )
}

impl<K, T> Cursors<'_, K, T> {
    /// The next element of this chunk's range of bucket `d`: its index in
    /// the whole arrays, its key and its slot. `None` once the range is
    /// full, or for a bucket the split does not have.
    #[inline]
    pub(crate) fn next(&mut self, d: usize) -> Option<(usize, &mut K, &mut T)> {
        let Some(span) = self.spans.get_mut(d) else {
            self.refused = true;
            return None;
        };
        let i = span.next;
        if i >= span.end {
            self.refused = true;
            return None;
        }
        span.next = i + 1;
        // SAFETY: `i` lies in this chunk's span of bucket `d` (`next < end`,
        // and `next` only ever grows, by one, up to `end`). `split` laid the
        // spans out within both arrays (`end <= keys.len()`, `end <=
        // slots.len()`), disjoint from every other span of every `Cursors`
        // of the split, and holds both arrays mutably borrowed while any of
        // them lives: nothing else reaches `keys[i]` or `slots[i]`. Each
        // index is handed out once (its span's `next` moves past it), and
        // the references borrow `self`, so they do not outlive this call's
        // exclusive use. Both elements are initialized (they are elements
        // of the `&mut` slices `split` took).
        unsafe { Some((i, &mut *self.keys.add(i), &mut *self.slots.add(i))) }
    }

    /// Whether every element of this chunk's ranges has been handed out,
    /// and none asked for past them: the writes matched the counts exactly.
    pub(crate) fn filled_exactly(&self) -> bool {
        !self.refused && self.spans.iter().all(|span| span.next == span.end)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Fills every range through its chunk's cursors, each key its index and
    /// each slot's bytes its chunk and bucket; returns how many were refused.
    fn fill<const W: usize>(
        cursors: &mut [Cursors<'_, u64, [u8; W]>],
        counts: &[Vec<usize>],
        extra: usize,
    ) -> usize {
        let mut refused = 0;
        for (c, (cursor, chunk)) in cursors.iter_mut().zip(counts).enumerate() {
            for (d, &n) in chunk.iter().enumerate() {
                for _ in 0..n + extra {
                    match cursor.next(d) {
                        Some((i, key, slot)) => {
                            *key = i as u64;
                            slot.iter_mut().for_each(|b| *b = (c * 16 + d) as u8);
                        }
                        None => refused += 1,
                    }
                }
            }
        }
        refused
    }

    #[test]
    fn ranges_are_bucket_major_and_chunk_minor() {
        // Two chunks, three buckets: bucket 0 holds chunk 0's two then
        // chunk 1's one, bucket 1 is empty, bucket 2 holds one then two.
        let counts = vec![vec![2, 0, 1], vec![1, 0, 2]];
        let (mut keys, mut slots) = (vec![u64::MAX; 6], vec![[0u8; 2]; 6]);
        let mut cursors = split(&mut keys, &mut slots, &counts).unwrap();
        assert!(cursors.iter().all(|c| !c.filled_exactly()));
        assert_eq!(fill(&mut cursors, &counts, 0), 0);
        assert!(cursors.iter().all(Cursors::filled_exactly));
        drop(cursors);
        assert_eq!(keys, [0, 1, 2, 3, 4, 5]);
        assert_eq!(slots.concat(), [0, 0, 0, 0, 16, 16, 2, 2, 18, 18, 18, 18]);
    }

    #[test]
    fn a_full_range_refuses_and_leaves_the_next_chunks_alone() {
        // Each chunk asks for one more of every bucket than it counted: the
        // extra is refused, and no element of another range is touched.
        let counts = vec![vec![1, 2], vec![3, 0], vec![0, 1]];
        let (mut keys, mut slots) = (vec![u64::MAX; 8], vec![[0u8; 1]; 7]);
        let mut cursors = split(&mut keys, &mut slots, &counts).unwrap();
        assert_eq!(fill(&mut cursors, &counts, 1), 6);
        assert!(!cursors.iter().any(Cursors::filled_exactly), "each asked past its ranges");
        drop(cursors);
        assert_eq!(keys[..7], [0, 1, 2, 3, 4, 5, 6]);
        assert_eq!(keys[7], u64::MAX, "past the counted ranges");
        assert_eq!(slots.concat(), [0, 16, 16, 16, 1, 1, 33]);
    }

    #[test]
    fn counts_that_do_not_fit_are_refused() {
        let (mut keys, mut slots) = (vec![0u64; 4], vec![0u32; 8]);
        // More keys than the keys' array holds.
        assert!(split(&mut keys, &mut slots, &[vec![2, 3]]).is_none());
        // More than the slots' array holds.
        assert!(split(&mut slots, &mut keys, &[vec![2, 3]]).is_none());
        // Chunks of different radixes.
        assert!(split(&mut keys, &mut slots, &[vec![1, 1], vec![1]]).is_none());
        // A count whose sum overflows.
        assert!(split(&mut keys, &mut slots, &[vec![usize::MAX, 1]]).is_none());
        // A bucket outside the split; slots of no size.
        let mut units = vec![(); 4];
        let mut cursors = split(&mut keys, &mut units, &[vec![4]]).unwrap();
        assert!(cursors[0].next(1).is_none());
        assert!(cursors[0].next(0).is_some_and(|(i, _, _)| i == 0));
        // No chunks, no buckets.
        assert!(split(&mut keys, &mut slots, &[]).unwrap().is_empty());
    }

    #[test]
    fn chunks_write_from_their_own_threads() {
        // Four chunks on four threads over 64 buckets: every element written
        // once, by its own chunk, as one sequential fill would.
        let counts: Vec<Vec<usize>> = (0..4).map(|c| (0..64).map(|d| (c + d) % 5).collect()).collect();
        let total: usize = counts.iter().flatten().sum();
        let (mut keys, mut slots) = (vec![u64::MAX; total], vec![[0u8; 3]; total]);
        let cursors = split(&mut keys, &mut slots, &counts).unwrap();
        std::thread::scope(|s| {
            for (c, mut cursor) in cursors.into_iter().enumerate() {
                let chunk = &counts[c];
                s.spawn(move || fill(std::slice::from_mut(&mut cursor), std::slice::from_ref(chunk), 0));
            }
        });
        assert_eq!(keys, (0..total as u64).collect::<Vec<_>>());
        // Each thread's fill sees its chunk as chunk 0: a slot's bytes are its bucket.
        let mut at = 0;
        for d in 0..64 {
            for chunk in &counts {
                for _ in 0..chunk[d] {
                    assert_eq!(slots[at], [d as u8; 3], "element {at}");
                    at += 1;
                }
            }
        }
        assert_eq!(at, total);
    }
}
