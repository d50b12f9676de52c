//! Packed keys of a partition pass: `u64`, or `u128` for wider projections.

use std::ops::{BitAnd, BitOr};

/// An unsigned packed key: `u64`, or `u128` for wider projections.
pub(crate) trait PackedKey:
    Copy + Eq + Send + Sync + Default + BitOr<Output = Self> + BitAnd<Output = Self> + 'static
{
    /// The empty slot of a hash table (a key can equal it: see `Scratch::table_count`).
    const EMPTY: Self;
    /// `self << shift | v`.
    fn shl_or(self, shift: u32, v: Self) -> Self;
    fn from_u64(v: u64) -> Self;
    /// The low `bits` bits set.
    fn ones(bits: u32) -> Self;
    /// The 64 bits of `self` from bit `shift` up (`shift` below the width).
    fn low64(self, shift: u32) -> u64;
    /// `self >> shift` cut to 64 bits, zero for a shift of the width or more.
    fn shr64(self, shift: u32) -> u64;
    /// A one-to-one map that spreads the bits (so distinct keys stay
    /// distinct): computed once per key, before the key is counted.
    fn premix(self) -> Self;
    /// 64 well-spread bits of a premixed key, to pick a part and a slot.
    fn spread(self) -> u64;
    /// The kept array for keys of this type (the other width's is let go).
    fn arrays(arrays: &mut KeyArrays) -> &mut Vec<Self>;
}

/// The key array of the passes of one `Counter`, of one width at a time,
/// reused from pass to pass (its pages are mapped once).
#[derive(Default)]
pub(crate) struct KeyArrays {
    narrow: Vec<u64>,
    wide: Vec<u128>,
    /// When `narrow` holds every entry's key in the full layout, in the last
    /// pass's bucket order: that pass's dimension and bucket starts (a pass
    /// by the same dimension counts on those keys as they are).
    pub(in crate::distinct) scattered: Option<(usize, Vec<usize>)>,
    /// Whether `narrow` is memory the caller lent (see [`KeyArrays::lending`]).
    lent: bool,
}

impl KeyArrays {
    /// Arrays whose `u64` one is `scratch`: memory the caller lends, touched
    /// already (a fresh array costs a page fault per 4 KiB it fills), whose
    /// contents the passes overwrite. Given back by [`KeyArrays::into_lent`].
    pub(crate) fn lending(scratch: Vec<u64>) -> Self {
        let lent = scratch.capacity() > 0;
        Self { narrow: scratch, lent, ..Self::default() }
    }

    /// Frees the keys (for the bitmaps' memory), but a lent array.
    pub(crate) fn release(&mut self) {
        (self.wide, self.scattered) = (Vec::new(), None);
        if !self.lent {
            self.narrow = Vec::new();
        }
    }

    /// The lent array (its contents overwritten), else an empty one.
    pub(crate) fn into_lent(self) -> Vec<u64> {
        if self.lent {
            self.narrow
        } else {
            Vec::new()
        }
    }
}

impl PackedKey for u64 {
    const EMPTY: Self = u64::MAX;
    #[inline]
    fn shl_or(self, shift: u32, v: Self) -> Self {
        self.checked_shl(shift).unwrap_or(0) | v
    }
    #[inline]
    fn from_u64(v: u64) -> Self {
        v
    }
    fn ones(bits: u32) -> Self {
        u64::MAX.checked_shr(64 - bits).unwrap_or(0)
    }
    #[inline]
    fn low64(self, shift: u32) -> u64 {
        self >> shift
    }
    #[inline]
    fn shr64(self, shift: u32) -> u64 {
        self.checked_shr(shift).unwrap_or(0)
    }
    /// MurmurHash3's finaliser, a bijection: packed coordinates are far from
    /// random (masked fields are zero, the rest small).
    #[inline]
    fn premix(self) -> Self {
        let mut h = self ^ (self >> 33);
        h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
        h ^= h >> 33;
        h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
        h ^ (h >> 33)
    }
    #[inline]
    fn spread(self) -> u64 {
        self
    }
    fn arrays(arrays: &mut KeyArrays) -> &mut Vec<Self> {
        arrays.wide = Vec::new(); // one width at a time
        &mut arrays.narrow
    }
}

impl PackedKey for u128 {
    const EMPTY: Self = u128::MAX;
    #[inline]
    fn shl_or(self, shift: u32, v: Self) -> Self {
        self.checked_shl(shift).unwrap_or(0) | v
    }
    #[inline]
    fn from_u64(v: u64) -> Self {
        u128::from(v)
    }
    fn ones(bits: u32) -> Self {
        u128::MAX.checked_shr(128 - bits).unwrap_or(0)
    }
    #[inline]
    fn low64(self, shift: u32) -> u64 {
        (self >> shift) as u64
    }
    #[inline]
    fn shr64(self, shift: u32) -> u64 {
        self.checked_shr(shift).unwrap_or(0) as u64
    }
    /// No cheap bijection mixes 128 bits as well: `spread` hashes instead.
    #[inline]
    fn premix(self) -> Self {
        self
    }
    #[inline]
    fn spread(self) -> u64 {
        ((self as u64) ^ ((self >> 64) as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15)).premix()
    }
    fn arrays(arrays: &mut KeyArrays) -> &mut Vec<Self> {
        // One width at a time (but a lent array, which goes back to its
        // owner); `u128` keys are never of the full layout (it packs into
        // 64 bits).
        arrays.scattered = None;
        if !arrays.lent {
            arrays.narrow = Vec::new();
        }
        &mut arrays.wide
    }
}
