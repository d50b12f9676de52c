//! Reading the descriptor's postcard encoding without an allocator.
//!
//! The descriptor is written by postcard's serializer (`Descriptor: Serialize`);
//! this reader follows the same wire format (varints, option tags, length-prefixed
//! sequences; see `docs/format.md`) field by field, so that every error carries
//! the exact byte offset and every length is checked against its cap before
//! anything is read. It is stricter than postcard in one way: varints must be
//! in their shortest form, so that a decoded file re-encodes to the same bytes.
//! A test checks that postcard's own deserializer agrees with this reader.

use crate::descriptor::{Flags, QuantScheme, Quantization, Statistics};
use crate::element::ElementType;
use crate::error::DecodeError;
use crate::layout::LayoutTag;
use crate::limits::{MAX_BUFFERS, MAX_RANK};
use crate::lists::ListAt;

/// A decoded descriptor as a [`crate::Container`] keeps it: its fixed
/// fields, and where each list lies in the input (`crate::lists`). With the
/// input slice that is a 160-byte container on a 32-bit target, instead of
/// the 4.7 KiB of a [`crate::Descriptor`].
#[derive(Clone, Copy, Debug)]
pub(crate) struct Header {
    pub(crate) layout: LayoutTag,
    pub(crate) element_type: ElementType,
    pub(crate) shape: ListAt,
    pub(crate) byte_offset: u64,
    pub(crate) nnz: u64,
    pub(crate) mode_order: ListAt,
    pub(crate) buffers: ListAt,
    pub(crate) statistics: Option<Statistics>,
    pub(crate) quantization: Option<Quantization>,
    /// The shard section: index, count and the offset list.
    pub(crate) shard: Option<(u64, u64, ListAt)>,
}

/// A cursor over the descriptor bytes; `base` is their offset in the input.
struct Reader<'a> {
    bytes: &'a [u8],
    pos: usize,
    base: usize,
}

impl<'a> Reader<'a> {
    fn offset(&self) -> usize {
        self.base + self.pos
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], DecodeError> {
        let available = self.bytes.len() - self.pos.min(self.bytes.len());
        let out = self
            .pos
            .checked_add(n)
            .and_then(|end| self.bytes.get(self.pos..end))
            .ok_or(DecodeError::Truncated { offset: self.offset(), needed: n, available })?;
        self.pos += n;
        Ok(out)
    }

    fn u8(&mut self) -> Result<u8, DecodeError> {
        let bytes = self.take(1)?;
        Ok(bytes.first().copied().unwrap_or(0))
    }

    /// An unsigned LEB128 varint of an integer `bits` wide (32 or 64).
    fn varint(&mut self, bits: u8) -> Result<u64, DecodeError> {
        let start = self.offset();
        let max_bytes = u32::from(bits).div_ceil(7);
        let last_byte_bits = u32::from(bits) - 7 * (max_bytes - 1);
        let mut value = 0u64;
        for i in 0..max_bytes {
            let byte = self.u8()?;
            value |= u64::from(byte & 0x7f) << (7 * i);
            if byte & 0x80 == 0 {
                if i + 1 == max_bytes && u32::from(byte) >> last_byte_bits != 0 {
                    return Err(DecodeError::VarintOverflow { offset: start, bits });
                }
                if i > 0 && byte == 0 {
                    return Err(DecodeError::NonCanonicalVarint { offset: start });
                }
                return Ok(value);
            }
        }
        Err(DecodeError::VarintOverflow { offset: start, bits })
    }

    fn u32(&mut self) -> Result<u32, DecodeError> {
        Ok(self.varint(32)? as u32)
    }

    fn u64(&mut self) -> Result<u64, DecodeError> {
        self.varint(64)
    }

    fn f64(&mut self) -> Result<f64, DecodeError> {
        let bytes = self.take(8)?;
        let mut raw = [0u8; 8];
        raw.copy_from_slice(bytes);
        Ok(f64::from_le_bytes(raw))
    }

    fn option(&mut self, field: &'static str) -> Result<bool, DecodeError> {
        let offset = self.offset();
        match self.u8()? {
            0 => Ok(false),
            1 => Ok(true),
            found => Err(DecodeError::BadOptionTag { offset, field, found }),
        }
    }

    /// A sequence length prefix, checked against `max` before any element is read.
    fn seq_len(&mut self, field: &'static str, max: usize) -> Result<usize, DecodeError> {
        let offset = self.offset();
        let len = self.u64()?;
        match usize::try_from(len) {
            Ok(n) if n <= max => Ok(n),
            _ => Err(DecodeError::TooLong { offset, field, len, max }),
        }
    }

    fn element_type(&mut self, field: &'static str) -> Result<ElementType, DecodeError> {
        let offset = self.offset();
        let code = self.u8()?;
        ElementType::from_code(code).ok_or(DecodeError::UnknownElementType { offset, field, code })
    }

    /// Reads a sequence of at most `max` items, each with `item`, and
    /// gives where its items lie (the length prefix checked against `max`
    /// before any item is read).
    fn list(
        &mut self,
        field: &'static str,
        max: usize,
        mut item: impl FnMut(&mut Self) -> Result<(), DecodeError>,
    ) -> Result<ListAt, DecodeError> {
        let len = self.seq_len(field, max)?;
        let at = self.offset();
        for _ in 0..len {
            item(self)?;
        }
        Ok(ListAt { at, len })
    }

    /// Whether an optional section is present, which must agree with its
    /// flag. Not generic over the section's body (the caller reads that):
    /// one copy of this check instead of one per section, which was 1 KiB
    /// of flash on a Cortex-M4.
    fn section(&mut self, flags: Flags, flag: u32, name: &'static str) -> Result<bool, DecodeError> {
        let offset = self.offset();
        let present = self.option(name)?;
        let flag_set = flags.contains(flag);
        if present != flag_set {
            return Err(DecodeError::FlagMismatch { offset, flag: name, flag_set });
        }
        Ok(present)
    }
}

/// Decodes a descriptor occupying exactly `bytes`, which start at `base` in
/// the input: every field checked, the lists located but not copied (see
/// [`Header`]).
pub(crate) fn decode_descriptor(bytes: &[u8], base: usize) -> Result<Header, DecodeError> {
    let mut r = Reader { bytes, pos: 0, base };

    let layout_offset = r.offset();
    let layout = LayoutTag(r.u8()?);
    if layout != LayoutTag::CSF {
        return Err(if layout.is_known() {
            DecodeError::UnsupportedLayout { offset: layout_offset, layout }
        } else {
            DecodeError::UnknownLayout { offset: layout_offset, tag: layout.0 }
        });
    }
    let element_type = r.element_type("element_type")?;
    let shape = r.list("shape", MAX_RANK, |r| r.u64().map(drop))?;
    let flags_offset = r.offset();
    let flags = Flags(r.u32()?);
    if flags.0 & !Flags::KNOWN != 0 {
        return Err(DecodeError::UnknownFlags { offset: flags_offset, bits: flags.0 & !Flags::KNOWN });
    }
    let byte_offset = r.u64()?;
    let nnz = r.u64()?;
    let mode_order = r.list("mode_order", MAX_RANK, |r| r.u32().map(drop))?;
    let buffers = r.list("buffers", MAX_BUFFERS, |r| {
        r.u64()?;
        r.u64()?;
        r.u8().map(drop)
    })?;
    let statistics = if r.section(flags, Flags::HAS_STATISTICS, "statistics")? {
        Some(Statistics {
            nnz: r.u64()?,
            sparsity_ratio: r.f64()?,
            min: if r.option("statistics.min")? { Some(r.f64()?) } else { None },
            max: if r.option("statistics.max")? { Some(r.f64()?) } else { None },
        })
    } else {
        None
    };
    let quantization = if r.section(flags, Flags::HAS_QUANTIZATION, "quantization")? {
        let offset = r.offset();
        let code = r.u8()?;
        let scheme = QuantScheme::from_code(code).ok_or(DecodeError::UnknownQuantScheme { offset, code })?;
        Some(Quantization {
            scheme,
            axis: r.u32()?,
            block_size: r.u64()?,
            scale_type: r.element_type("quantization.scale_type")?,
            zero_point_type: if r.option("quantization.zero_point_type")? {
                Some(r.element_type("quantization.zero_point_type")?)
            } else {
                None
            },
        })
    } else {
        None
    };
    let shard = if r.section(flags, Flags::IS_SHARD, "shard")? {
        let (index, count) = (r.u64()?, r.u64()?);
        Some((index, count, r.list("shard.shard_offset", MAX_RANK, |r| r.u64().map(drop))?))
    } else {
        None
    };

    if r.pos != bytes.len() {
        return Err(DecodeError::DescriptorTrailingBytes { offset: r.offset(), count: bytes.len() - r.pos });
    }
    Ok(Header {
        layout,
        element_type,
        shape,
        byte_offset,
        nnz,
        mode_order,
        buffers,
        statistics,
        quantization,
        shard,
    })
}
