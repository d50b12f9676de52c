//! Packing a storage-order coordinate tuple into one integer key.
//!
//! Level `L`'s coordinate takes `bits_L = bit_length(shape[mode_order[L]] - 1)`
//! bits, level 0 in the most significant position, so that integer order is
//! the lexicographic order of storage tuples, the order CSF stores leaves in.
//!
//! Below the coordinate bits sit the entry's input position, when it fits the
//! key type the coordinates need (`u64` or `u128`): the keys are then unique,
//! and sorting only on the coordinate bits with a stable sort keeps
//! duplicates in input order (which `First`/`Last` rely on); the sort writes
//! the index of the entry's value slot there. When it does not fit (10M
//! entries take 24 bits: 5000 x 50000 x 500000 has 48 bits of coordinates),
//! the key holds the coordinates alone, still in `u64`, and the sort keeps
//! duplicates in order by moving each value slot along with its key (see
//! `bucket.rs`) rather than spending a wider key on the position.

use hurray_format::limits::MAX_RANK;

/// An unsigned integer key: `u64` when the tuple fits in 64 bits (most real
/// shapes), `u128` otherwise.
pub(crate) trait Key:
    bytemuck::Pod + Ord + Send + Sync + Default + core::fmt::Debug + 'static
{
    /// `self << shift | v`. A shift of the whole width is for a zero `self`
    /// only (a level of 64 bits in a `u64` key, all others of none): no
    /// check of the shift, as `pack` runs this per level of every key.
    fn shl_or(self, shift: u32, v: u64) -> Self;
    /// `self` with its low `bits` bits (at most 64) replaced by `low`, which
    /// must fit them.
    fn with_low(self, bits: u32, low: u64) -> Self;
    /// The low 64 bits of `self >> shift`, for `shift` below the key's
    /// width; a shift of the whole width (a field of no bits) gives
    /// anything, which the caller's mask of no bits clears. (No check of
    /// the shift: this is read once or more per key in every pass.)
    fn field(self, shift: u32) -> u64;
    /// `self ^ other`'s highest set bit, or `None` when equal.
    fn highest_diff(self, other: Self) -> Option<u32>;
    /// `v` as a key.
    fn from_u64(v: u64) -> Self;
    /// Keys that each hold a `u64` (see `from_u64`) as a `Vec<u64>`: the
    /// same allocation for `u64` keys, a copy for wider ones.
    fn into_u64s(keys: Vec<Self>) -> Vec<u64>;
}

macro_rules! key {
    ($t:ty, $into:expr) => {
        impl Key for $t {
            #[inline]
            fn shl_or(self, shift: u32, v: u64) -> Self {
                debug_assert!(shift < <$t>::BITS || self == 0, "{self:#x} << {shift}");
                self.wrapping_shl(shift) | v as $t
            }
            #[inline]
            fn with_low(self, bits: u32, low: u64) -> Self {
                self.checked_shr(bits).unwrap_or(0).checked_shl(bits).unwrap_or(0) | low as $t
            }
            #[inline]
            fn field(self, shift: u32) -> u64 {
                self.wrapping_shr(shift) as u64
            }
            #[inline]
            fn highest_diff(self, other: Self) -> Option<u32> {
                let x = self ^ other;
                (x != 0).then(|| <$t>::BITS - 1 - x.leading_zeros())
            }
            #[inline]
            fn from_u64(v: u64) -> Self {
                v as $t
            }
            fn into_u64s(keys: Vec<Self>) -> Vec<u64> {
                $into(keys)
            }
        }
    };
}
key!(u64, |keys| keys);
key!(u128, |keys: Vec<u128>| keys.into_iter().map(|k| k as u64).collect());

/// Bits needed to hold every value below `extent`.
pub(crate) fn bit_length_below(extent: u64) -> u32 {
    64 - extent.saturating_sub(1).leading_zeros()
}

/// Where each level's field sits in a key.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Layout {
    pub(crate) rank: usize,
    /// Bits of the input-position field (the lowest bits): 0 when the
    /// position does not fit beside the coordinates (see the module doc).
    pub(crate) position_bits: u32,
    /// Coordinate bits in all.
    pub(crate) coord_bits: u32,
    /// Shift of level `L`'s field (including `position_bits`).
    pub(crate) shift: [u32; MAX_RANK],
    /// Mask of level `L`'s field after shifting.
    pub(crate) mask: [u64; MAX_RANK],
    /// Bits of level `L`'s field.
    pub(crate) bits: [u32; MAX_RANK],
    /// Level `L`'s extent: its coordinates lie below it.
    pub(crate) extents: [u64; MAX_RANK],
    /// For a differing bit position `b` (from `position_bits`), the level it belongs to.
    pub(crate) level_of_bit: [u8; 128],
}

impl Layout {
    /// The layout for extents `extents[L]` (in storage order) and `entries` input entries.
    pub(crate) fn new(extents: &[u64], entries: usize) -> Self {
        let rank = extents.len();
        let coord_bits: u32 = extents.iter().map(|&e| bit_length_below(e)).sum();
        let position_bits = bit_length_below(entries as u64);
        // The position goes in only if the key type stays the one the coordinates need.
        let word = if coord_bits <= 64 { 64 } else { 128 };
        let position_bits = if coord_bits + position_bits <= word { position_bits } else { 0 };
        let mut layout = Self {
            rank,
            position_bits,
            coord_bits,
            shift: [0; MAX_RANK],
            mask: [0; MAX_RANK],
            bits: [0; MAX_RANK],
            extents: [0; MAX_RANK],
            level_of_bit: [0; 128],
        };
        let mut shift = position_bits;
        for level in (0..rank).rev() {
            let bits = bit_length_below(extents[level]);
            layout.shift[level] = shift;
            layout.bits[level] = bits;
            layout.extents[level] = extents[level];
            layout.mask[level] = if bits == 64 { u64::MAX } else { (1u64 << bits) - 1 };
            for b in shift..(shift + bits).min(128) {
                layout.level_of_bit[b as usize] = level as u8;
            }
            shift += bits;
        }
        layout
    }

    /// The key of an entry whose coordinate at level `l` is `coord(l)`,
    /// from its first `levels` levels (the others' bits clear), with the
    /// position bits clear (the sort fills them in), and whether those
    /// coordinates are inside the extents. The bounds are checked with a
    /// branch-free `&=`, and a coordinate outside its extent is masked to its
    /// field, so that it cannot change other fields: the sort's count and
    /// scatter must agree on every key's bucket even then (it gives up after
    /// the scatter). `N` is `levels` when constant (0: `levels`), so that the
    /// level loop unrolls with the shifts in registers.
    #[inline(always)]
    pub(crate) fn pack<K: Key, const N: usize>(
        &self,
        levels: usize,
        coord: impl Fn(usize) -> u64,
    ) -> (K, bool) {
        let levels = if N == 0 { levels } else { N };
        let mut key = K::default();
        let mut ok = true;
        for level in 0..levels {
            let c = coord(level);
            ok &= c < self.extents[level];
            key = key.shl_or(self.bits[level], c & self.mask[level]);
        }
        let below = if levels == 0 { self.total_bits() } else { self.shift[levels - 1] };
        (key.shl_or(below, 0), ok)
    }

    /// Total key bits.
    pub(crate) fn total_bits(&self) -> u32 {
        self.coord_bits + self.position_bits
    }

    /// Level `level`'s coordinate in `key`.
    #[inline]
    pub(crate) fn coord<K: Key>(&self, key: K, level: usize) -> u64 {
        key.field(self.shift[level]) & self.mask[level]
    }

    /// Whether the sorted keys' value slots are in key order, each beside its
    /// key: keys without position bits (wide keys) carry their slots through
    /// the sort.
    #[inline]
    pub(crate) fn slots_in_key_order(&self) -> bool {
        self.position_bits == 0
    }

    /// The index of the value slot of `key`, found at `index` of the sorted
    /// keys: its position bits, or, without them, `index` (the sort then
    /// leaves each slot beside its key).
    #[inline]
    pub(crate) fn slot<K: Key>(&self, key: K, index: usize) -> usize {
        if self.slots_in_key_order() {
            return index;
        }
        (key.field(0) & (u64::MAX >> (64 - self.position_bits))) as usize
    }

    /// The first level where two keys' tuples differ, or `None` when the
    /// tuples are equal (a duplicate: only the position bits differ).
    #[inline]
    pub(crate) fn split_level<K: Key>(&self, a: K, b: K) -> Option<usize> {
        let high = a.highest_diff(b)?;
        if high < self.position_bits {
            return None;
        }
        Some(self.level_of_bit[high as usize] as usize)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_position_goes_in_only_where_it_keeps_the_key_type() {
        let layout = |extents: &[u64], entries| {
            let l = Layout::new(extents, entries);
            (l.coord_bits, l.position_bits)
        };
        // 11 + 11 + 11 coordinate bits and 24 position bits: u64 with positions.
        assert_eq!(layout(&[2000, 2000, 2000], 10_000_000), (33, 24));
        // 13 + 16 + 19 = 48 and 24 do not fit u64: coordinates alone, in u64.
        assert_eq!(layout(&[5000, 50_000, 500_000], 10_000_000), (48, 0));
        assert_eq!(layout(&[500, 5000, 50_000, 500_000], 10_000_000), (57, 0));
        // 3 x 40 = 120 bits: u128, room for 8 position bits but not 24.
        assert_eq!(layout(&[1 << 40; 3], 200), (120, 8));
        assert_eq!(layout(&[1 << 40; 3], 10_000_000), (120, 0));
        // Beyond 128 bits: the comparison sort (total_bits > 128).
        assert_eq!(Layout::new(&[u64::MAX; 3], 4).total_bits(), 192);
    }

    /// Two keys part at the first level where their tuples differ, and not
    /// at all when the tuples are equal (positions aside): with and without
    /// position bits, levels of no bits, a level of all 64 bits of a `u64`
    /// key, and `u128` keys.
    #[test]
    fn keys_split_at_the_first_level_where_their_tuples_differ() {
        fn check<K: Key>(extents: &[u64], entries: usize) {
            let layout = Layout::new(extents, entries);
            let mut rng = csf_testdata::Rng::new(0x2545_f491);
            let mut next = move || rng.next_u64();
            let position_mask = (1u64 << layout.position_bits) - 1;
            for _ in 0..2000 {
                // Tuples that often share a prefix, and positions of their own.
                let a: Vec<u64> = extents.iter().map(|&e| next() % e.min(3)).collect();
                let b: Vec<u64> = a
                    .iter()
                    .zip(extents)
                    .map(|(&c, &e)| if next() % 3 == 0 { next() % e } else { c })
                    .collect();
                let key = |tuple: &[u64], position: u64| {
                    let (key, ok) = layout.pack::<K, 0>(tuple.len(), |l| tuple[l]);
                    assert!(ok);
                    key.with_low(layout.position_bits, position & position_mask)
                };
                let expected = (0..extents.len()).find(|&l| a[l] != b[l]);
                let (ka, kb) = (key(&a, next()), key(&b, next()));
                assert_eq!(layout.split_level(ka, kb), expected, "{extents:?} {a:?} {b:?}");
                assert_eq!(layout.split_level(kb, ka), expected);
            }
        }
        check::<u64>(&[2000, 2000, 2000], 10_000_000);
        check::<u64>(&[5000, 50_000, 500_000], 10_000_000);
        check::<u64>(&[1, 7, 1, 3], 1000);
        check::<u64>(&[1, u64::MAX, 1], 5);
        check::<u128>(&[1 << 40; 3], 200);
        check::<u128>(&[1 << 63, 1 << 63, 5], 1);
    }
}
