//! Moving values into leaf order: gathering, summing duplicates, packing.

use std::borrow::Cow;

use hurray_format::{ElementType, Packing};

use std::ops::Add;

use crate::bucket::copy_slot;
use crate::{BuildError, Duplicates};

/// The input values with one slot of `width` bytes per entry (4-bit types
/// unpacked to one code per byte).
pub(crate) struct Slots<'a> {
    pub(crate) element_type: ElementType,
    pub(crate) width: usize,
    pub(crate) data: Cow<'a, [u8]>,
}

impl<'a> Slots<'a> {
    pub(crate) fn new(element_type: ElementType, packed: &'a [u8], len: usize) -> Self {
        match element_type.packing() {
            // docs/format.md § 2.1: a bool byte is 0 or 1 and an FP6 byte keeps its
            // two high bits zero. Store what a reader reads (any non-zero bool is
            // true, FP6 is the low six bits), as the 4-bit path below does, so the
            // output always validates.
            Packing::Bytes(_) if element_type == ElementType::Bool => {
                let data = packed.iter().map(|&b| u8::from(b != 0)).collect();
                Self { element_type, width: 1, data: Cow::Owned(data) }
            }
            Packing::Bytes(_) if matches!(element_type, ElementType::F6E2M3 | ElementType::F6E3M2) => {
                let data = packed.iter().map(|&b| b & 0x3f).collect();
                Self { element_type, width: 1, data: Cow::Owned(data) }
            }
            Packing::Bytes(width) => {
                Self { element_type, width: usize::from(width), data: Cow::Borrowed(packed) }
            }
            Packing::SubByte { bits, per_byte } => {
                let per_byte = usize::from(per_byte);
                let mask = ((1u16 << bits) - 1) as u8;
                let data = (0..len)
                    .map(|i| (packed[i / per_byte] >> ((i % per_byte) as u32 * u32::from(bits))) & mask)
                    .collect();
                Self { element_type, width: 1, data: Cow::Owned(data) }
            }
        }
    }

    /// Whether the slots are the input's bytes as they are (the element
    /// type's packing is whole bytes, and nothing was normalised).
    pub(crate) fn is_input(&self) -> bool {
        matches!(self.data, Cow::Borrowed(_))
    }

    pub(crate) fn slot(&self, i: usize) -> &[u8] {
        &self.data[i * self.width..(i + 1) * self.width]
    }

    /// Whether entry `i` holds a zero (`-0.0` included).
    pub(crate) fn is_zero(&self, i: usize) -> bool {
        is_zero(self.element_type, self.slot(i))
    }

    /// The slots of `positions`, in that order.
    pub(crate) fn gather(&self, positions: &[u64], parallel: bool) -> Vec<u8> {
        match self.width {
            1 => self.gather_w::<1>(positions, parallel),
            2 => self.gather_w::<2>(positions, parallel),
            4 => self.gather_w::<4>(positions, parallel),
            8 => self.gather_w::<8>(positions, parallel),
            _ => self.gather_w::<0>(positions, parallel),
        }
    }

    /// `gather` for slots of `W` bytes (`W = 0`: `self.width`): a constant
    /// width makes each copy one move instead of a `memcpy` call.
    fn gather_w<const W: usize>(&self, positions: &[u64], parallel: bool) -> Vec<u8> {
        let w = self.width;
        let mut out = vec![0u8; positions.len() * w];
        let fill = |(dst, &p): (&mut [u8], &u64)| copy_slot::<W>(dst, self.slot(p as usize));
        if parallel {
            use rayon::prelude::*;
            out.par_chunks_mut(w.max(1)).zip(positions.par_iter()).for_each(fill);
        } else {
            out.chunks_mut(w.max(1)).zip(positions.iter()).for_each(fill);
        }
        out
    }

    /// Checks up front that duplicates of this type can be summed.
    pub(crate) fn can_sum(&self) -> Result<(), BuildError> {
        match self.element_type {
            ElementType::Bool
            | ElementType::I8
            | ElementType::I16
            | ElementType::I32
            | ElementType::I64
            | ElementType::U8
            | ElementType::U16
            | ElementType::U32
            | ElementType::U64
            | ElementType::F32
            | ElementType::F64 => Ok(()),
            other => Err(BuildError::CannotSum(other)),
        }
    }
}

/// Value slots of `element_type` as its values buffer stores them (4-bit
/// codes two to a byte; other types as they are).
pub(crate) fn pack(element_type: ElementType, slots: Vec<u8>) -> Vec<u8> {
    match element_type.packing() {
        Packing::Bytes(_) => slots,
        Packing::SubByte { bits, per_byte } => slots
            .chunks(usize::from(per_byte))
            .map(|codes| {
                codes.iter().enumerate().fold(0u8, |b, (i, &c)| b | c << (i as u32 * u32::from(bits)))
            })
            .collect(),
    }
}

/// Whether `slot` (one value of `element_type`, 4-bit codes unpacked to a
/// byte) holds a zero (`-0.0` included).
pub(crate) fn is_zero(element_type: ElementType, slot: &[u8]) -> bool {
    let mut raw = [0u8; 8];
    let width = slot.len().min(8);
    raw[..width].copy_from_slice(&slot[..width]);
    let packed = match element_type.packing() {
        Packing::Bytes(_) => &raw[..width],
        // A single unpacked code sits in the low bits, like element 0 of a packed byte.
        Packing::SubByte { .. } => &raw[..1],
    };
    csf_core::Values::new(element_type, packed).get_raw_f64(0) == Some(0.0)
}

/// A duplicate's value `slot` meets the value of the leaf it merges into,
/// `into`, under the policy `First`, `Last` or `Sum` (`Error` is the
/// caller's to report); both one value of `element_type`, `W` bytes wide
/// (0: any). Every build path merges duplicates here.
#[inline(always)]
pub(crate) fn merge_duplicate<const W: usize>(
    element_type: ElementType,
    duplicates: Duplicates,
    into: &mut [u8],
    slot: &[u8],
) -> Result<(), BuildError> {
    match duplicates {
        // Sums were checked possible (`Slots::can_sum`) before the build.
        Duplicates::Sum => add(element_type, into, slot),
        Duplicates::Last => {
            copy_slot::<W>(into, slot);
            Ok(())
        }
        Duplicates::First | Duplicates::Error => Ok(()),
    }
}

/// Adds the value `b` into `a`, both one value of `element_type`.
fn add(element_type: ElementType, a: &mut [u8], b: &[u8]) -> Result<(), BuildError> {
    macro_rules! add {
        ($t:ty, $op:ident) => {{
            let x = <$t>::from_le_bytes(a.try_into().unwrap_or_default());
            let y = <$t>::from_le_bytes(b.try_into().unwrap_or_default());
            a.copy_from_slice(&x.$op(y).to_le_bytes());
        }};
    }
    match element_type {
        ElementType::Bool => a[0] |= b[0],
        ElementType::I8 => add!(i8, wrapping_add),
        ElementType::I16 => add!(i16, wrapping_add),
        ElementType::I32 => add!(i32, wrapping_add),
        ElementType::I64 => add!(i64, wrapping_add),
        ElementType::U8 => add!(u8, wrapping_add),
        ElementType::U16 => add!(u16, wrapping_add),
        ElementType::U32 => add!(u32, wrapping_add),
        ElementType::U64 => add!(u64, wrapping_add),
        ElementType::F32 => add!(f32, add),
        ElementType::F64 => add!(f64, add),
        other => return Err(BuildError::CannotSum(other)),
    }
    Ok(())
}
