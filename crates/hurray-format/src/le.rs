//! Little-endian `u64` arrays read in place (buffer protocol: every multi-byte
//! element is little-endian).
//!
//! [`U64Array`] keeps the raw bytes and decodes one element at a time with an
//! alignment-1 read, so it gives the same answers on big-endian machines and on
//! buffers that are not 8-byte aligned in memory. When the machine is
//! little-endian and the bytes happen to be aligned, [`U64Array::as_native`]
//! lends them as a plain `&[u64]` for tight loops, with no copy.

/// A borrowed array of little-endian `u64`s.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct U64Array<'a> {
    bytes: &'a [u8],
}

// Every method is `#[inline]`: they are a few instructions each and run per
// element in other crates' loops (csf-core's lookups, cursor and fibers).
// Without the attribute, `slice` and `as_native` were out-of-line calls in
// csf-core's benchmark binary (no LTO), one per binary search.
impl<'a> U64Array<'a> {
    /// The empty array.
    pub const EMPTY: U64Array<'static> = U64Array { bytes: &[] };

    /// The array over `bytes`, or `None` when their length is not a multiple of 8.
    #[inline]
    pub fn new(bytes: &'a [u8]) -> Option<Self> {
        (bytes.len() % 8 == 0).then_some(Self { bytes })
    }

    /// The array over words that already hold little-endian representations
    /// (`x.to_le()`), e.g. an owned array kept in file byte order. Always
    /// zero-copy, on any machine.
    #[inline]
    pub fn from_le_words(words: &'a [u64]) -> Self {
        Self { bytes: bytemuck::cast_slice(words) }
    }

    /// The array over native `u64`s (as little-endian bytes on little-endian
    /// machines). On a big-endian machine the bytes would be read back swapped,
    /// so there this returns `None`: build the array from LE bytes instead.
    #[inline]
    pub fn from_native(values: &'a [u64]) -> Option<Self> {
        cfg!(target_endian = "little").then(|| Self { bytes: bytemuck::cast_slice(values) })
    }

    /// The array over the whole 8-byte words of `bytes`, ignoring a partial tail.
    /// Permissive readers use it so that a mis-sized buffer is still safe to read.
    #[inline]
    pub fn truncating(bytes: &'a [u8]) -> Self {
        let whole = bytes.len() - bytes.len() % 8;
        Self { bytes: bytes.get(..whole).unwrap_or(&[]) }
    }

    /// The number of elements.
    #[inline]
    pub fn len(&self) -> usize {
        self.bytes.len() / 8
    }

    /// Whether the array is empty.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }

    /// The underlying bytes.
    #[inline]
    pub fn as_bytes(&self) -> &'a [u8] {
        self.bytes
    }

    /// Element `index`, or `None` past the end.
    #[inline]
    pub fn get(&self, index: usize) -> Option<u64> {
        let start = index.checked_mul(8)?;
        let chunk = self.bytes.get(start..start.checked_add(8)?)?;
        let mut raw = [0u8; 8];
        raw.copy_from_slice(chunk);
        Some(u64::from_le_bytes(raw))
    }

    /// The sub-array `start..end` (clamped to the array), never panicking.
    #[inline]
    pub fn slice(&self, start: usize, end: usize) -> Self {
        let end = end.min(self.len());
        let start = start.min(end);
        Self { bytes: self.bytes.get(start * 8..end * 8).unwrap_or(&[]) }
    }

    /// The elements as native `u64`s without copying, when the machine is
    /// little-endian and the bytes are 8-byte aligned in memory.
    #[inline]
    pub fn as_native(&self) -> Option<&'a [u64]> {
        if cfg!(target_endian = "little") {
            bytemuck::try_cast_slice(self.bytes).ok()
        } else {
            None
        }
    }

    /// The elements in order.
    #[inline]
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = u64> + ExactSizeIterator + 'a {
        self.bytes.chunks_exact(8).map(|chunk| {
            let mut raw = [0u8; 8];
            raw.copy_from_slice(chunk);
            u64::from_le_bytes(raw)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unaligned_reads_match_aligned_ones() {
        // One spare byte in front so that the array can start on an odd address.
        let mut storage = [0u64; 5];
        let raw: &mut [u8] = bytemuck::cast_slice_mut(&mut storage);
        for (i, b) in raw.iter_mut().enumerate() {
            *b = i as u8;
        }
        let aligned = U64Array::new(&raw[..32]).unwrap();
        let unaligned = U64Array::new(&raw[1..33]).unwrap();
        assert_eq!(aligned.get(0), Some(u64::from_le_bytes([0, 1, 2, 3, 4, 5, 6, 7])));
        assert_eq!(unaligned.get(3), Some(u64::from_le_bytes([25, 26, 27, 28, 29, 30, 31, 32])));
        assert_eq!(unaligned.get(4), None);
        assert_eq!(unaligned.get(usize::MAX), None);
        assert_eq!(unaligned.as_native(), None);
        if cfg!(target_endian = "little") {
            assert_eq!(aligned.as_native().unwrap(), &aligned.iter().collect::<Vec<_>>()[..]);
        }
        assert_eq!(U64Array::new(&raw[..7]), None);
        assert_eq!(U64Array::truncating(&raw[..15]).len(), 1);
        assert_eq!(aligned.slice(3, 99).len(), 1);
        assert_eq!(aligned.slice(9, 2).len(), 0);
    }
}
