//! The iteration checksum, shared by the build script (which computes the
//! expected value on the host from the input entries) and the firmware (which
//! computes it on the target from what iteration yields). One source for both,
//! so that the two can only disagree about the data, never about the formula.

/// FNV-1a (64-bit) over each entry's logical index (`u64`s) and value bits
/// (`u32`), little-endian, in the order the entries are added. Order matters:
/// a tensor iterated out of leaf order gives another sum.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Checksum {
    state: u64,
    entries: u64,
}

impl Default for Checksum {
    fn default() -> Self {
        Self::new()
    }
}

impl Checksum {
    const OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
    const PRIME: u64 = 0x0100_0000_01b3;

    /// The sum of no entries.
    pub const fn new() -> Self {
        Self { state: Self::OFFSET, entries: 0 }
    }

    fn bytes(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.state = (self.state ^ u64::from(b)).wrapping_mul(Self::PRIME);
        }
    }

    /// Adds one entry: its logical index and the bits of its `f32` value.
    pub fn add(&mut self, index: &[u64], value_bits: u32) {
        for &coordinate in index {
            self.bytes(&coordinate.to_le_bytes());
        }
        self.bytes(&value_bits.to_le_bytes());
        self.entries = self.entries.wrapping_add(1);
    }

    /// The hash so far.
    pub const fn value(&self) -> u64 {
        self.state
    }

    /// How many entries were added.
    pub const fn entries(&self) -> u64 {
        self.entries
    }
}
