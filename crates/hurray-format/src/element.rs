//! Element types of the data model: their codes, byte widths and packing.

use core::fmt;

/// How the elements of a type sit in the values buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Packing {
    /// Each element takes this many whole bytes (little-endian when > 1).
    Bytes(u8),
    /// Several elements share one byte. Element `i` lives in byte
    /// `i / per_byte`, at bit `(i % per_byte) * bits` (the first element in
    /// the low bits); the unused high bits of the last byte are zero.
    SubByte {
        /// Bits per element.
        bits: u8,
        /// Elements per byte: the packing factor.
        per_byte: u8,
    },
}

macro_rules! element_types {
    ($( $(#[$doc:meta])* $variant:ident = $code:literal, $name:literal, $packing:expr; )*) => {
        /// An element type of the data model, as stored in the descriptor (one byte).
        #[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
        #[non_exhaustive]
        pub enum ElementType {
            $( $(#[$doc])* $variant, )*
        }

        impl ElementType {
            /// Every element type, in code order.
            pub const ALL: &'static [ElementType] = &[$(ElementType::$variant,)*];

            /// The type for a wire code, or `None` when the code is not assigned.
            pub const fn from_code(code: u8) -> Option<Self> {
                match code {
                    $( $code => Some(ElementType::$variant), )*
                    _ => None,
                }
            }

            /// The type's wire code.
            pub const fn code(self) -> u8 {
                match self { $( ElementType::$variant => $code, )* }
            }

            /// The type's short name, as used by the command-line tool (`f32`, `nf4`, ...).
            pub const fn name(self) -> &'static str {
                match self { $( ElementType::$variant => $name, )* }
            }

            /// How elements of this type are packed into bytes.
            pub const fn packing(self) -> Packing {
                match self { $( ElementType::$variant => $packing, )* }
            }
        }
    };
}

element_types! {
    /// One byte, 0 (false) or 1 (true).
    Bool = 0x00, "bool", Packing::Bytes(1);
    /// Signed 8-bit integer.
    I8 = 0x01, "i8", Packing::Bytes(1);
    /// Signed 16-bit integer.
    I16 = 0x02, "i16", Packing::Bytes(2);
    /// Signed 32-bit integer.
    I32 = 0x03, "i32", Packing::Bytes(4);
    /// Signed 64-bit integer.
    I64 = 0x04, "i64", Packing::Bytes(8);
    /// Unsigned 8-bit integer.
    U8 = 0x05, "u8", Packing::Bytes(1);
    /// Unsigned 16-bit integer.
    U16 = 0x06, "u16", Packing::Bytes(2);
    /// Unsigned 32-bit integer.
    U32 = 0x07, "u32", Packing::Bytes(4);
    /// Unsigned 64-bit integer.
    U64 = 0x08, "u64", Packing::Bytes(8);
    /// IEEE 754 binary16.
    F16 = 0x10, "f16", Packing::Bytes(2);
    /// bfloat16: the upper half of an IEEE 754 binary32.
    BF16 = 0x11, "bf16", Packing::Bytes(2);
    /// IEEE 754 binary32.
    F32 = 0x12, "f32", Packing::Bytes(4);
    /// IEEE 754 binary64.
    F64 = 0x13, "f64", Packing::Bytes(8);
    /// OCP FP8 E4M3 (finite-only "FN" variant: no infinities, one NaN pattern per sign).
    F8E4M3 = 0x20, "f8e4m3", Packing::Bytes(1);
    /// OCP FP8 E5M2 (IEEE-like, with infinities and NaNs).
    F8E5M2 = 0x21, "f8e5m2", Packing::Bytes(1);
    /// OCP E8M0: an unsigned power-of-two exponent (the MX block scale); 0xFF is NaN.
    E8M0 = 0x22, "e8m0", Packing::Bytes(1);
    /// OCP FP6 E2M3, one element per byte in the low 6 bits.
    F6E2M3 = 0x23, "f6e2m3", Packing::Bytes(1);
    /// OCP FP6 E3M2, one element per byte in the low 6 bits.
    F6E3M2 = 0x24, "f6e3m2", Packing::Bytes(1);
    /// Signed 4-bit integer (two's complement), two per byte.
    I4 = 0x30, "i4", Packing::SubByte { bits: 4, per_byte: 2 };
    /// Unsigned 4-bit integer, two per byte.
    U4 = 0x31, "u4", Packing::SubByte { bits: 4, per_byte: 2 };
    /// OCP FP4 E2M1, two per byte.
    F4E2M1 = 0x32, "f4e2m1", Packing::SubByte { bits: 4, per_byte: 2 };
    /// NF4: 4-bit indices into the 16-entry NormalFloat table, two per byte.
    NF4 = 0x33, "nf4", Packing::SubByte { bits: 4, per_byte: 2 };
}

impl ElementType {
    /// Bytes per element for whole-byte types; `None` for sub-byte types.
    pub const fn byte_width(self) -> Option<u8> {
        match self.packing() {
            Packing::Bytes(width) => Some(width),
            Packing::SubByte { .. } => None,
        }
    }

    /// Elements per byte: 1 for whole-byte types, 2 for the 4-bit types.
    pub const fn packing_factor(self) -> u8 {
        match self.packing() {
            Packing::Bytes(_) => 1,
            Packing::SubByte { per_byte, .. } => per_byte,
        }
    }

    /// Bits per element.
    pub const fn bits(self) -> u8 {
        match self.packing() {
            Packing::Bytes(width) => width * 8,
            Packing::SubByte { bits, .. } => bits,
        }
    }

    /// The exact size in bytes of a values buffer holding `count` elements:
    /// `count * byte_width`, or `ceil(count / packing_factor)` for sub-byte
    /// types. `None` when that overflows `u64`.
    pub const fn values_len(self, count: u64) -> Option<u64> {
        match self.packing() {
            Packing::Bytes(width) => count.checked_mul(width as u64),
            Packing::SubByte { per_byte, .. } => Some(count.div_ceil(per_byte as u64)),
        }
    }

    /// The type with this short name (`"f32"`, `"nf4"`, ...).
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.iter().copied().find(|t| t.name() == name)
    }
}

impl fmt::Debug for ElementType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl fmt::Display for ElementType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl serde::Serialize for ElementType {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u8(self.code())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_round_trip_and_are_unique() {
        for (i, t) in ElementType::ALL.iter().enumerate() {
            assert_eq!(ElementType::from_code(t.code()), Some(*t));
            assert_eq!(ElementType::from_name(t.name()), Some(*t));
            for u in &ElementType::ALL[i + 1..] {
                assert_ne!(t.code(), u.code());
            }
        }
        assert_eq!(ElementType::from_code(0xff), None);
    }

    #[test]
    fn widths_and_packing() {
        assert_eq!(ElementType::F32.byte_width(), Some(4));
        assert_eq!(ElementType::BF16.byte_width(), Some(2));
        assert_eq!(ElementType::NF4.byte_width(), None);
        assert_eq!(ElementType::NF4.packing_factor(), 2);
        assert_eq!(ElementType::F4E2M1.bits(), 4);
        assert_eq!(ElementType::F64.values_len(3), Some(24));
        // ceil(nnz / packing_factor)
        assert_eq!(ElementType::I4.values_len(0), Some(0));
        assert_eq!(ElementType::I4.values_len(5), Some(3));
        assert_eq!(ElementType::U4.values_len(6), Some(3));
        assert_eq!(ElementType::U4.values_len(u64::MAX), Some(u64::MAX / 2 + 1));
        assert_eq!(ElementType::U64.values_len(u64::MAX / 4), None);
    }
}
