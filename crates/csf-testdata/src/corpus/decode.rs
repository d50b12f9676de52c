//! Framing errors, which `Container::decode` reports: the spec example's
//! bytes patched at the offsets of `docs/format.md` § 11.

use super::file::Cases;
use super::tensors::{quantized, spec};
use super::{LAYOUT_NOT_CSF_CASE, RANK_ABOVE_64_CASE};

/// Overwrites `bytes[at]` after checking it holds `was` (the offsets are
/// those of the spec example, docs/format.md § 11.3).
fn patch(mut bytes: Vec<u8>, at: usize, was: &[u8], now: &[u8]) -> Vec<u8> {
    assert_eq!(&bytes[at..at + was.len()], was, "byte {at:#x} is not what the patch expects");
    bytes.splice(at..at + was.len(), now.iter().copied());
    bytes
}

/// Like [`patch`], and grows `descriptor_len` by the change in length. The
/// spec example's descriptor ends at 59, so up to 5 bytes can be added
/// before the data section (at 64) would move.
fn patch_descriptor(bytes: Vec<u8>, at: usize, was: &[u8], now: &[u8]) -> Vec<u8> {
    let grow = now.len() - was.len();
    assert!(grow <= 5);
    let bytes = patch(bytes, at, was, now);
    let mut bytes = patch(bytes, 12, &[43], &[43 + grow as u8]);
    bytes.drain(59 + grow..59 + 2 * grow); // the padding shrinks by as much
    bytes
}

pub(super) fn decode_cases(out: &mut Cases) {
    let s = spec().encode();
    assert_eq!(s.len(), 480, "the spec example is the 480 bytes of docs/format.md § 11");

    out.decode("decode-empty-file", "Truncated", "zero bytes", Vec::new());
    out.decode("decode-truncated-header", "Truncated", "the spec example's first 12 bytes", s[..12].to_vec());
    out.decode(
        "decode-truncated-descriptor",
        "Truncated",
        "the spec example cut at byte 40, inside the descriptor",
        s[..40].to_vec(),
    );
    out.decode(
        "decode-truncated-data",
        "TruncatedData",
        "the spec example without its last byte: 479 bytes, the descriptor needs 480",
        s[..479].to_vec(),
    );
    out.decode(
        "decode-bad-magic",
        "BadMagic",
        "magic byte 1 is 'h' instead of 'H'",
        patch(s.clone(), 1, b"H", b"h"),
    );
    out.decode(
        "decode-text-mode-magic",
        "BadMagic",
        "magic with CR LF turned into LF (text-mode transfer)",
        patch(s.clone(), 4, &[0x0d, 0x0a], &[0x0a]),
    );
    out.decode(
        "decode-unsupported-version",
        "UnsupportedVersion",
        "header version 2",
        patch(s.clone(), 8, &[1, 0], &[2, 0]),
    );
    out.decode(
        "decode-reserved-header",
        "ReservedHeaderBits",
        "header reserved field 1",
        patch(s.clone(), 10, &[0, 0], &[1, 0]),
    );
    out.decode(
        "decode-descriptor-too-long",
        "DescriptorTooLong",
        "descriptor_len 8193 (the cap is 8192)",
        patch(s.clone(), 12, &[43, 0, 0, 0], &8193u32.to_le_bytes()),
    );
    out.decode(
        LAYOUT_NOT_CSF_CASE,
        "UnsupportedLayout",
        "layout tag 0x02 (COO) instead of 0x09 (CSF) (stands for rule layout-not-csf)",
        patch(s.clone(), 0x10, &[0x09], &[0x02]),
    );
    out.decode(
        "decode-unknown-layout",
        "UnknownLayout",
        "layout tag 0x0a (unassigned)",
        patch(s.clone(), 0x10, &[0x09], &[0x0a]),
    );
    out.decode(
        "decode-unknown-element-type",
        "UnknownElementType",
        "element type 0x09 (unassigned)",
        patch(s.clone(), 0x11, &[0x12], &[0x09]),
    );
    out.decode(
        RANK_ABOVE_64_CASE,
        "TooLong",
        "shape length 65: rank above the cap of 64 (stands for rule rank-above-64)",
        patch(s.clone(), 0x12, &[0x03], &[0x41]),
    );
    out.decode(
        "decode-unknown-flags",
        "UnknownFlags",
        "flag bit 3 set (unassigned)",
        patch(s.clone(), 0x16, &[0x00], &[0x08]),
    );
    out.decode(
        "decode-flag-mismatch",
        "FlagMismatch",
        "HAS_STATISTICS set but the statistics section absent",
        patch(s.clone(), 0x16, &[0x00], &[0x01]),
    );
    out.decode(
        "decode-bad-option-tag",
        "BadOptionTag",
        "statistics option tag 2",
        patch(s.clone(), 0x38, &[0x00], &[0x02]),
    );
    out.decode(
        "decode-non-canonical-varint",
        "NonCanonicalVarint",
        "nnz written as 84 00 (4 in two bytes)",
        patch_descriptor(s.clone(), 0x18, &[0x04], &[0x84, 0x00]),
    );
    out.decode(
        "decode-varint-overflow",
        "VarintOverflow",
        "flags written as 80 80 80 80 10: a u32 varint whose fifth byte has bits above 32",
        patch_descriptor(s.clone(), 0x16, &[0x00], &[0x80, 0x80, 0x80, 0x80, 0x10]),
    );
    out.decode(
        "decode-descriptor-trailing-bytes",
        "DescriptorTrailingBytes",
        "descriptor_len 44: one byte after the descriptor's last field",
        patch(s.clone(), 12, &[43], &[44]),
    );
    let q = quantized().encode();
    let desc_end = 16 + usize::from(q[12]);
    // ... quantization: 01 | scheme 00 | axis 00 | block_size 00 | scale_type 12 | zero point 00 | shard 00
    out.decode(
        "decode-unknown-quant-scheme",
        "UnknownQuantScheme",
        "quantized spec example with quantization scheme 5",
        patch(
            q,
            desc_end - 7,
            &[0x01, 0x00, 0x00, 0x00, 0x12, 0x00, 0x00],
            &[0x01, 0x05, 0x00, 0x00, 0x12, 0x00, 0x00],
        ),
    );
    out.decode(
        "decode-nonzero-padding-after-descriptor",
        "NonZeroPadding",
        "padding byte 0x3b (after the descriptor) is 1",
        patch(s.clone(), 0x3b, &[0], &[1]),
    );
    out.decode(
        "decode-nonzero-padding-between-buffers",
        "NonZeroPadding",
        "padding byte 0x50 (after values) is 1",
        patch(s.clone(), 0x50, &[0], &[1]),
    );
    out.decode(
        "decode-buffer-misaligned",
        "BufferMisaligned",
        "pos_0's offset is 72, not a multiple of 64",
        patch(s.clone(), 0x21, &[0x40], &[0x48]),
    );
    out.decode(
        "decode-buffer-overlap",
        "BufferOverlap",
        "pos_0's offset is 0, inside the values buffer",
        patch(s.clone(), 0x21, &[0x40], &[0x00]),
    );
    let mut gap = patch(s.clone(), 0x34, &[0x80, 0x03], &[0xc0, 0x03]);
    gap.splice(0x1c0..0x1c0, [0u8; 64]);
    out.decode(
        "decode-buffer-gap",
        "BufferGap",
        "crd_2 at offset 448 with 64 zero bytes before it; the canonical offset is 384",
        gap,
    );
    out.decode(
        "decode-buffer-length-past-end",
        "TruncatedData",
        "crd_2's length is 40: the descriptor needs 488 bytes, the file has 480",
        patch(s.clone(), 0x36, &[0x20], &[0x28]),
    );
    out.decode(
        "decode-trailing-bytes",
        "TrailingBytes",
        "one zero byte after the last buffer",
        [&s[..], &[0]].concat(),
    );
    out.decode(
        "decode-trailing-polyglot",
        "TrailingBytes",
        "a ZIP local-file signature appended (polyglot attempt)",
        [&s[..], b"PK\x03\x04"].concat(),
    );
}
