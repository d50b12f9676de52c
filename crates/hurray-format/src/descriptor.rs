//! The tensor descriptor: what the buffers hold and how to read them.
//!
//! The field order here *is* the wire order (see `docs/format.md`, "The
//! descriptor"); `Serialize` writes it with postcard, and [`crate::wire`]
//! reads it back without an allocator.

use core::fmt;

use serde::ser::{SerializeStruct, Serializer};

use crate::element::ElementType;
use crate::fixed::FixedVec;
use crate::layout::LayoutTag;
use crate::limits::{RankError, MAX_BUFFERS, MAX_RANK};

/// The extent of each logical dimension, outermost first.
pub type Shape = FixedVec<u64, MAX_RANK>;
/// `mode_order[L]` is the logical dimension stored at tree level `L`.
pub type ModeOrder = FixedVec<u32, MAX_RANK>;
/// The buffer table, in buffer-index order.
pub type BufferTable = FixedVec<BufferEntry, MAX_BUFFERS>;

/// Where a buffer's bytes live (buffer protocol). A file always holds host
/// bytes; the tag records where the writer kept the buffer, so that a loader
/// can place it again, and lets validation check that related buffers agree.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct DeviceTag(pub u8);

impl DeviceTag {
    /// Host (CPU) memory. The default.
    pub const HOST: Self = Self(0);
    /// CUDA device memory.
    pub const CUDA: Self = Self(1);
    /// ROCm/HIP device memory.
    pub const ROCM: Self = Self(2);
    /// Apple Metal buffer.
    pub const METAL: Self = Self(3);
    /// Vulkan buffer.
    pub const VULKAN: Self = Self(4);

    /// The device's short name (`host`, `cuda`, `rocm`, `metal`, `vulkan`),
    /// or `None` for a reserved tag.
    pub const fn name(self) -> Option<&'static str> {
        Some(match self.0 {
            0 => "host",
            1 => "cuda",
            2 => "rocm",
            3 => "metal",
            4 => "vulkan",
            _ => return None,
        })
    }
}

/// The name and the tag (`cuda (1)`), or `reserved device tag 9`.
impl fmt::Display for DeviceTag {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name() {
            Some(name) => write!(f, "{name} ({})", self.0),
            None => write!(f, "reserved device tag {}", self.0),
        }
    }
}

impl serde::Serialize for DeviceTag {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u8(self.0)
    }
}

/// One row of the buffer table.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, serde::Serialize)]
pub struct BufferEntry {
    /// Offset of the buffer's first byte from the start of the data section.
    pub offset: u64,
    /// Length of the buffer in bytes.
    pub length: u64,
    /// Where the writer kept the buffer.
    pub device_tag: DeviceTag,
}

/// The descriptor's flag word. Each flag says that an optional section is present.
#[derive(Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct Flags(pub u32);

impl Flags {
    /// The statistics section is present.
    pub const HAS_STATISTICS: u32 = 1 << 0;
    /// The quantization section is present; its parameter buffers follow the layout's buffers.
    pub const HAS_QUANTIZATION: u32 = 1 << 1;
    /// The tensor is one shard of a larger tensor; the shard section is present.
    pub const IS_SHARD: u32 = 1 << 2;
    /// Every bit this version assigns. Any other bit is an error.
    pub const KNOWN: u32 = Self::HAS_STATISTICS | Self::HAS_QUANTIZATION | Self::IS_SHARD;

    /// Whether every bit of `mask` is set.
    pub const fn contains(self, mask: u32) -> bool {
        self.0 & mask == mask
    }
}

impl fmt::Debug for Flags {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Flags({:#x})", self.0)
    }
}

/// The statistics section: summary figures a writer may record about the
/// stored values (`docs/format.md` § 5.6).
#[derive(Clone, Copy, Debug, serde::Serialize)]
pub struct Statistics {
    /// Number of stored values; for CSF it must equal the descriptor's `nnz`.
    pub nnz: u64,
    /// `1 - nnz / total_elements` (a SHOULD of the CSF spec).
    pub sparsity_ratio: f64,
    /// Smallest stored value, as `f64`, when the writer recorded it.
    pub min: Option<f64>,
    /// Largest stored value, as `f64`, when the writer recorded it.
    pub max: Option<f64>,
}

/// Bitwise equality, so that a NaN statistic still equals itself after a round trip.
impl PartialEq for Statistics {
    fn eq(&self, other: &Self) -> bool {
        let bits = |v: Option<f64>| v.map(f64::to_bits);
        self.nnz == other.nnz
            && self.sparsity_ratio.to_bits() == other.sparsity_ratio.to_bits()
            && bits(self.min) == bits(other.min)
            && bits(self.max) == bits(other.max)
    }
}

/// A quantization scheme decorating the values buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum QuantScheme {
    /// One scale (and zero point) for the whole tensor.
    PerTensor = 0,
    /// One scale (and zero point) per index of a logical axis.
    PerChannel = 1,
    /// One scale per block of consecutive leaves.
    PerBlock = 2,
    /// NF4 codes with one absmax per block.
    Nf4 = 3,
    /// OCP Microscaling: one E8M0 scale per block of 32 leaves.
    Mxfp = 4,
}

impl QuantScheme {
    /// The scheme for a wire code.
    pub const fn from_code(code: u8) -> Option<Self> {
        Some(match code {
            0 => Self::PerTensor,
            1 => Self::PerChannel,
            2 => Self::PerBlock,
            3 => Self::Nf4,
            4 => Self::Mxfp,
            _ => return None,
        })
    }

    /// The scheme's wire code.
    pub const fn code(self) -> u8 {
        self as u8
    }

    /// The scheme's name, as the command-line tool's `--quantize` spells it
    /// (`per-tensor`, `per-channel`, `per-block`, `nf4`, `mxfp`).
    pub const fn name(self) -> &'static str {
        match self {
            Self::PerTensor => "per-tensor",
            Self::PerChannel => "per-channel",
            Self::PerBlock => "per-block",
            Self::Nf4 => "nf4",
            Self::Mxfp => "mxfp",
        }
    }
}

impl fmt::Display for QuantScheme {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl serde::Serialize for QuantScheme {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u8(*self as u8)
    }
}

/// The quantization section: which scheme, and the shape of its parameters.
/// The parameter buffers themselves follow the layout's buffers in the table.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize)]
pub struct Quantization {
    /// How the stored codes map to values, and which leaves share parameters.
    pub scheme: QuantScheme,
    /// The logical axis of a per-channel scheme (0 otherwise).
    pub axis: u32,
    /// Leaves per block for block schemes (0 otherwise).
    pub block_size: u64,
    /// Element type of the scales.
    pub scale_type: ElementType,
    /// Element type of the zero points, when the scheme has them.
    pub zero_point_type: Option<ElementType>,
}

/// The shard section. CSF forbids it; it is decoded only so that it can be rejected.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct ShardDescriptor {
    /// This shard's index.
    pub shard_index: u64,
    /// How many shards make up the tensor.
    pub shard_count: u64,
    /// The shard's offset in the full tensor, per logical dimension.
    pub shard_offset: FixedVec<u64, MAX_RANK>,
}

/// A tensor descriptor, decoded without allocation.
///
/// The flag word is not a field: it is derived from which optional sections are
/// present, so the two cannot disagree in memory (the decoder rejects files
/// where they do).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Descriptor {
    /// The layout; always [`LayoutTag::CSF`] for a decoded descriptor.
    pub layout: LayoutTag,
    /// The element type of the values buffer.
    pub element_type: ElementType,
    /// The logical shape; its length is the rank.
    pub shape: Shape,
    /// The common header's `byte_offset`; CSF requires 0.
    pub byte_offset: u64,
    /// Number of stored values (leaves).
    pub nnz: u64,
    /// The CSF mode order: `mode_order[L]` is the logical dimension stored
    /// at tree level `L`.
    pub mode_order: ModeOrder,
    /// Where each buffer lies in the data section (offset and length per
    /// row), in the layout's order: for CSF the values, then `pos_L`, `crd_L`
    /// per level, then any quantization parameters.
    pub buffers: BufferTable,
    /// The statistics section, present iff [`Flags::HAS_STATISTICS`].
    pub statistics: Option<Statistics>,
    /// The quantization section, present iff [`Flags::HAS_QUANTIZATION`].
    pub quantization: Option<Quantization>,
    /// The shard section, present iff [`Flags::IS_SHARD`].
    pub shard: Option<ShardDescriptor>,
}

impl Descriptor {
    /// A CSF descriptor ready for the encoder: the header, a buffer table of
    /// the layout's `2 * rank + 1` rows (values, then `pos_L`, `crd_L`; offsets
    /// and lengths are the encoder's to fill, devices host), and no optional
    /// section. Add quantization-parameter rows after setting `quantization`.
    ///
    /// ```
    /// use hurray_format::{Descriptor, ElementType};
    /// let d = Descriptor::csf(ElementType::F32, &[2, 3, 4], &[0, 1, 2], 4)?;
    /// assert_eq!(d.buffers.len(), 7);
    /// assert!(Descriptor::csf(ElementType::F32, &[2, 3], &[0, 1], 1).is_err(), "CSF is for rank >= 3");
    /// # Ok::<(), hurray_format::CsfHeaderError>(())
    /// ```
    ///
    /// # Errors
    /// [`CsfHeaderError::Rank`] for a rank outside `3..=64`;
    /// [`CsfHeaderError::ModeOrderLength`] when `mode_order` does not have one
    /// entry per dimension. (Whether it is a permutation is validation's
    /// business, as for any decoded file.)
    pub fn csf(
        element_type: ElementType,
        shape: &[u64],
        mode_order: &[u32],
        nnz: u64,
    ) -> Result<Self, CsfHeaderError> {
        let rank = shape.len();
        RankError::check(rank).map_err(CsfHeaderError::Rank)?;
        if mode_order.len() != rank {
            return Err(CsfHeaderError::ModeOrderLength { len: mode_order.len(), rank });
        }
        let mut d = Self::csf_unchecked(element_type, shape, mode_order, nnz)
            .ok_or(CsfHeaderError::Rank(RankError::TooLarge(rank)))?;
        for _ in 0..csf::buffer_count(rank) {
            // 2 * 64 + 1 rows fit the table's MAX_BUFFERS.
            d.buffers
                .push(BufferEntry::default())
                .map_err(|_| CsfHeaderError::Rank(RankError::TooLarge(rank)))?;
        }
        Ok(d)
    }

    /// A CSF header with no checks, an empty buffer table and no optional
    /// sections: for writers of deliberately malformed files (tests, fuzzers,
    /// corpora) that fill the table themselves. `None` only when `shape` or
    /// `mode_order` has more than [`MAX_RANK`] entries, which no descriptor
    /// holds.
    pub fn csf_unchecked(
        element_type: ElementType,
        shape: &[u64],
        mode_order: &[u32],
        nnz: u64,
    ) -> Option<Self> {
        Some(Self {
            layout: LayoutTag::CSF,
            element_type,
            shape: Shape::from_slice(shape).ok()?,
            byte_offset: 0,
            nnz,
            mode_order: ModeOrder::from_slice(mode_order).ok()?,
            buffers: BufferTable::new(),
            statistics: None,
            quantization: None,
            shard: None,
        })
    }

    /// A descriptor with every list empty and no optional section, for the
    /// decoder to fill in place. Out of line so that it writes straight into
    /// its destination: inlined, its empty lists were built on the stack and
    /// copied (4 KiB more stack for `Container::decode` on a 32-bit target).
    #[inline(never)]
    pub(crate) fn empty() -> Self {
        Self {
            layout: LayoutTag::CSF,
            element_type: ElementType::U8,
            shape: Shape::new(),
            byte_offset: 0,
            nnz: 0,
            mode_order: ModeOrder::new(),
            buffers: BufferTable::new(),
            statistics: None,
            quantization: None,
            shard: None,
        }
    }

    /// The rank: the number of logical dimensions.
    pub fn rank(&self) -> usize {
        self.shape.len()
    }

    /// The flag word implied by the optional sections.
    pub fn flags(&self) -> Flags {
        let mut bits = 0;
        if self.statistics.is_some() {
            bits |= Flags::HAS_STATISTICS;
        }
        if self.quantization.is_some() {
            bits |= Flags::HAS_QUANTIZATION;
        }
        if self.shard.is_some() {
            bits |= Flags::IS_SHARD;
        }
        Flags(bits)
    }

    /// The product of the shape's extents, or `None` when it overflows `u64`.
    pub fn total_elements(&self) -> Option<u64> {
        self.shape.iter().try_fold(1u64, |acc, &d| acc.checked_mul(d))
    }
}

impl serde::Serialize for Descriptor {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut st = s.serialize_struct("Descriptor", 11)?;
        st.serialize_field("layout", &self.layout)?;
        st.serialize_field("element_type", &self.element_type)?;
        st.serialize_field("shape", &self.shape)?;
        st.serialize_field("flags", &self.flags().0)?;
        st.serialize_field("byte_offset", &self.byte_offset)?;
        st.serialize_field("nnz", &self.nnz)?;
        st.serialize_field("mode_order", &self.mode_order)?;
        st.serialize_field("buffers", &self.buffers)?;
        st.serialize_field("statistics", &self.statistics)?;
        st.serialize_field("quantization", &self.quantization)?;
        st.serialize_field("shard", &self.shard)?;
        st.end()
    }
}

/// Why [`Descriptor::csf`] refused a header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum CsfHeaderError {
    /// The rank is outside `3..=64`.
    Rank(RankError),
    /// `mode_order` does not have one entry per dimension.
    ModeOrderLength {
        /// Entries in the `mode_order` given.
        len: usize,
        /// The rank: the shape's length.
        rank: usize,
    },
}

impl core::fmt::Display for CsfHeaderError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            CsfHeaderError::Rank(e) => write!(f, "{e}"),
            CsfHeaderError::ModeOrderLength { len, rank } => {
                write!(f, "mode_order has {len} entries for rank {rank}")
            }
        }
    }
}

impl core::error::Error for CsfHeaderError {
    fn source(&self) -> Option<&(dyn core::error::Error + 'static)> {
        match self {
            CsfHeaderError::Rank(e) => Some(e),
            CsfHeaderError::ModeOrderLength { .. } => None,
        }
    }
}

/// Buffer indices of the CSF layout (spec § Buffer Table): values first, then
/// `pos_L`, `crd_L` for each level, then quantization parameters.
pub mod csf {
    /// Buffer index of `values`.
    pub const VALUES_BUFFER: usize = 0;

    /// Buffer index of `pos_L`.
    pub const fn pos_buffer(level: usize) -> usize {
        1 + 2 * level
    }

    /// Buffer index of `crd_L`.
    pub const fn crd_buffer(level: usize) -> usize {
        2 + 2 * level
    }

    /// The layout's own buffer count, `2 * rank + 1`; quantization-parameter
    /// buffers start at this index.
    pub const fn buffer_count(rank: usize) -> usize {
        2 * rank + 1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schemes_and_devices_have_names() {
        for code in 0..=u8::MAX {
            if let Some(scheme) = QuantScheme::from_code(code) {
                assert_eq!(scheme.code(), code);
                assert_eq!(scheme.to_string(), scheme.name());
            }
        }
        assert_eq!(QuantScheme::PerChannel.to_string(), "per-channel");
        assert_eq!(DeviceTag::CUDA.to_string(), "cuda (1)");
        assert_eq!(DeviceTag::HOST.name(), Some("host"));
        assert_eq!(DeviceTag(9).to_string(), "reserved device tag 9");
    }
}
