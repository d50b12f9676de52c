//! Layout tags: which storage layout of the Hurray family a descriptor uses.
//!
//! Only CSF (`0x09`, tier 1) is read by this crate. The family's other layouts
//! are named so that a reader can say what it was handed ("layout COO (0x02) is
//! not supported") instead of reporting an unknown byte.

use core::fmt;

/// A layout tag of the Hurray format family.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct LayoutTag(pub u8);

impl LayoutTag {
    /// Dense, row-major (strided) storage.
    pub const DENSE: Self = Self(0x01);
    /// COO: coordinate lists, any rank.
    pub const COO: Self = Self(0x02);
    /// CSR: compressed sparse rows (rank 2).
    pub const CSR: Self = Self(0x03);
    /// CSC: compressed sparse columns (rank 2).
    pub const CSC: Self = Self(0x04);
    /// BSR: block compressed sparse rows.
    pub const BSR: Self = Self(0x05);
    /// BSC: block compressed sparse columns.
    pub const BSC: Self = Self(0x06);
    /// DIA: diagonal storage.
    pub const DIA: Self = Self(0x07);
    /// ELL: ELLPACK storage.
    pub const ELL: Self = Self(0x08);
    /// CSF: compressed sparse fibers, rank >= 3. The only layout this crate reads.
    pub const CSF: Self = Self(0x09);

    /// The layout's short name, or `None` for a tag this crate does not know.
    pub const fn name(self) -> Option<&'static str> {
        Some(match self.0 {
            0x01 => "dense",
            0x02 => "COO",
            0x03 => "CSR",
            0x04 => "CSC",
            0x05 => "BSR",
            0x06 => "BSC",
            0x07 => "DIA",
            0x08 => "ELL",
            0x09 => "CSF",
            _ => return None,
        })
    }

    /// Whether the tag names a layout of the family (known, if not necessarily supported).
    pub const fn is_known(self) -> bool {
        self.name().is_some()
    }

    /// The specification tier of the layout (CSF is tier 1), when known.
    pub const fn tier(self) -> Option<u8> {
        match self.0 {
            0x01..=0x04 => Some(0),
            0x05..=0x09 => Some(1),
            _ => None,
        }
    }
}

impl fmt::Debug for LayoutTag {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl fmt::Display for LayoutTag {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name() {
            Some(name) => write!(f, "{name} (0x{:02x})", self.0),
            None => write!(f, "unknown layout 0x{:02x}", self.0),
        }
    }
}

impl serde::Serialize for LayoutTag {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u8(self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csf_is_tag_9_tier_1() {
        assert_eq!(LayoutTag::CSF.0, 0x09);
        assert_eq!(LayoutTag::CSF.tier(), Some(1));
        assert_eq!(LayoutTag::CSF.to_string(), "CSF (0x09)");
        assert_eq!(LayoutTag(0x42).to_string(), "unknown layout 0x42");
        assert!(!LayoutTag(0).is_known());
    }
}
