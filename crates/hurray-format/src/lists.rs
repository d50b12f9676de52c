//! The descriptor's lists read in place: a decoded [`Container`] keeps where
//! the shape, the mode order and the buffer table lie in its bytes, not
//! copies of them, and these iterators read them on demand.
//!
//! Copies sized for the caps (a rank of 64, 137 buffer rows) made a
//! container 4.7 KiB on a 32-bit target, most of it the buffer table, and a
//! microcontroller paid that in stack for every container alive
//! (`docs/benchmarks.md`, "Embedded"). [`Container::decode`] has checked
//! every varint of these lists (shortest form, within its width), so reading
//! them again cannot fail; the readers are total all the same, and end early
//! rather than panic should the bytes run out.
//!
//! [`Container`]: crate::Container
//! [`Container::decode`]: crate::Container::decode

use core::iter::FusedIterator;

use crate::descriptor::{BufferEntry, DeviceTag};

/// Where a list's items lie: `len` items from byte `at` of the container.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct ListAt {
    pub(crate) at: usize,
    pub(crate) len: usize,
}

impl ListAt {
    /// The list's bytes, from its first item to the end of `bytes`.
    fn bytes<'a>(&self, bytes: &'a [u8]) -> &'a [u8] {
        bytes.get(self.at..).unwrap_or(&[])
    }
}

/// Reads one unsigned LEB128 varint from the front of `bytes` (already
/// checked by the decoder), advancing past it.
fn varint(bytes: &mut &[u8]) -> u64 {
    let mut value = 0u64;
    let mut shift = 0u32;
    while let Some((&byte, rest)) = bytes.split_first() {
        *bytes = rest;
        if shift < 64 {
            value |= u64::from(byte & 0x7f) << shift;
        }
        shift += 7;
        if byte & 0x80 == 0 {
            break;
        }
    }
    value
}

/// The items of a list of varints: the shape (`u64`) or the mode order
/// (`u32`, read as `u64`: see [`Container::mode_order`](crate::Container::mode_order)).
#[derive(Clone, Debug)]
pub struct Varints<'a> {
    bytes: &'a [u8],
    left: usize,
}

impl<'a> Varints<'a> {
    pub(crate) fn new(list: ListAt, bytes: &'a [u8]) -> Self {
        Self { bytes: list.bytes(bytes), left: list.len }
    }
}

impl Iterator for Varints<'_> {
    type Item = u64;

    fn next(&mut self) -> Option<u64> {
        self.left = self.left.checked_sub(1)?;
        Some(varint(&mut self.bytes))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.left, Some(self.left))
    }
}

impl ExactSizeIterator for Varints<'_> {}
impl FusedIterator for Varints<'_> {}

/// The rows of the buffer table, in buffer-index order.
#[derive(Clone, Debug)]
pub struct BufferEntries<'a> {
    bytes: &'a [u8],
    left: usize,
}

impl<'a> BufferEntries<'a> {
    pub(crate) fn new(list: ListAt, bytes: &'a [u8]) -> Self {
        Self { bytes: list.bytes(bytes), left: list.len }
    }
}

impl Iterator for BufferEntries<'_> {
    type Item = BufferEntry;

    fn next(&mut self) -> Option<BufferEntry> {
        self.left = self.left.checked_sub(1)?;
        let offset = varint(&mut self.bytes);
        let length = varint(&mut self.bytes);
        let (&tag, rest) = self.bytes.split_first().unwrap_or((&0, &[]));
        self.bytes = rest;
        Some(BufferEntry { offset, length, device_tag: DeviceTag(tag) })
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.left, Some(self.left))
    }
}

impl ExactSizeIterator for BufferEntries<'_> {}
impl FusedIterator for BufferEntries<'_> {}

/// The buffers of a decoded container, in buffer-index order, each borrowed
/// from the input: see [`Container::buffers`](crate::Container::buffers).
#[derive(Clone, Debug)]
pub struct Buffers<'a> {
    pub(crate) entries: BufferEntries<'a>,
    /// The container's data section.
    pub(crate) data: &'a [u8],
}

impl<'a> Iterator for Buffers<'a> {
    type Item = &'a [u8];

    fn next(&mut self) -> Option<&'a [u8]> {
        let entry = self.entries.next()?;
        // Decoding proved `offset + length <= data.len()`; `get` keeps it total.
        let start = usize::try_from(entry.offset).unwrap_or(usize::MAX);
        let length = usize::try_from(entry.length).unwrap_or(usize::MAX);
        Some(self.data.get(start..start.saturating_add(length)).unwrap_or(&[]))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.entries.size_hint()
    }
}

impl ExactSizeIterator for Buffers<'_> {}
impl FusedIterator for Buffers<'_> {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_read_what_postcard_wrote_and_stop_at_the_end() {
        // 1, 300, u64::MAX, then nothing more than the list's length.
        let mut bytes = [0u8; 16];
        let written = postcard::to_slice(&(1u64, 300u64, u64::MAX), &mut bytes).unwrap().len();
        let list = ListAt { at: 0, len: 3 };
        assert_eq!(Varints::new(list, &bytes[..written]).collect::<Vec<_>>(), [1, 300, u64::MAX]);
        assert_eq!(Varints::new(ListAt { at: 0, len: 2 }, &bytes).len(), 2);
        // Cut short (never after decoding): total, no panic.
        assert_eq!(Varints::new(ListAt { at: 99, len: 2 }, &bytes).collect::<Vec<_>>(), [0, 0]);
        let entries = BufferEntries::new(ListAt { at: 0, len: 1 }, &[0x80]);
        assert_eq!(entries.collect::<Vec<_>>(), [BufferEntry::default()]);
    }
}
