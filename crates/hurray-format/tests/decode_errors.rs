//! One hand-made input per `DecodeError` variant, asserting the exact variant
//! and its fields, plus the limits at the limit and one past it.
//!
//! Inputs start from a valid container (`common::sample`) and either mutate
//! its bytes or rebuild the descriptor with `common::Wire`, which knows the
//! offset of every field.

mod common;

use common::{data_section, encode, header, planned, sample, slices, varint, varint_seq, Wire};
use hurray_format::limits::{BUFFER_ALIGNMENT, MAX_BUFFERS, MAX_DESCRIPTOR_LEN, MAX_RANK};
use hurray_format::{
    BufferEntry, Container, DecodeError, Descriptor, DeviceTag, ElementType, FixedVec, LayoutTag,
    QuantScheme, Quantization, ShardDescriptor, Statistics, FORMAT_VERSION, HEADER_LEN, MAGIC,
};

fn err(bytes: &[u8]) -> DecodeError {
    Container::decode(bytes).unwrap_err()
}

/// The sample's descriptor as a `Wire`, and its data section.
fn base() -> (Wire, Vec<u8>) {
    let (d, buffers) = sample();
    (Wire::of(&d), data_section(&slices(&buffers)))
}

/// The sample container, as the encoder writes it.
fn sample_bytes() -> Vec<u8> {
    let (d, buffers) = sample();
    encode(&d, &slices(&buffers))
}

#[test]
fn baseline_sample_decodes_and_wire_matches_the_encoder() {
    let (d, buffers) = sample();
    let bytes = sample_bytes();
    let (wire, data) = base();
    assert_eq!(wire.container(&data), bytes);
    let c = Container::decode(&bytes).unwrap();
    assert_eq!(c.descriptor(), d);
    for (i, b) in buffers.iter().enumerate() {
        assert_eq!(c.buffer(i), Some(&b[..]));
    }
    // The tests below rely on padding both after the descriptor and between buffers.
    assert_ne!(wire.end() % BUFFER_ALIGNMENT, 0);
    assert_ne!(buffers[0].len() % BUFFER_ALIGNMENT, 0);
}

// ---------------------------------------------------------------- header

#[test]
fn empty_input_is_a_truncated_header() {
    // An empty input is a (zero-length) prefix of the magic, so it is reported
    // as truncated rather than as a bad magic.
    assert_eq!(err(&[]), DecodeError::Truncated { offset: 0, needed: HEADER_LEN, available: 0 });
}

#[test]
fn short_correct_prefix_is_a_truncated_header() {
    let bytes = sample_bytes();
    for n in 1..HEADER_LEN {
        assert_eq!(err(&bytes[..n]), DecodeError::Truncated { offset: 0, needed: HEADER_LEN, available: n });
    }
}

#[test]
fn short_wrong_prefix_is_bad_magic() {
    assert_eq!(err(b"G"), DecodeError::BadMagic);
    assert_eq!(err(b"GIF89"), DecodeError::BadMagic);
    assert_eq!(err(&[0x89, b'H', b'R', b'X']), DecodeError::BadMagic);
    assert_eq!(err(&MAGIC[..7].iter().map(|b| b ^ 1).collect::<Vec<_>>()), DecodeError::BadMagic);
}

#[test]
fn any_wrong_magic_byte_is_bad_magic() {
    let bytes = sample_bytes();
    for i in 0..MAGIC.len() {
        for flip in [0x01, 0x20, 0x80] {
            let mut b = bytes.clone();
            b[i] ^= flip;
            assert_eq!(err(&b), DecodeError::BadMagic, "byte {i} ^ {flip:#x}");
            // Also when the input stops right after the bad byte.
            assert_eq!(err(&b[..=i]), DecodeError::BadMagic);
        }
    }
    // Text-mode mangling: CR LF turned into LF.
    let mut b = bytes.clone();
    b.remove(4);
    assert_eq!(err(&b), DecodeError::BadMagic);
}

#[test]
fn unsupported_version() {
    for version in [0u16, 2, 0x0100, u16::MAX] {
        let mut b = sample_bytes();
        b[8..10].copy_from_slice(&version.to_le_bytes());
        assert_eq!(err(&b), DecodeError::UnsupportedVersion { found: version, supported: FORMAT_VERSION });
    }
    // The version is checked before the reserved field.
    let mut b = sample_bytes();
    b[8..12].copy_from_slice(&[2, 0, 1, 0]);
    assert_eq!(err(&b), DecodeError::UnsupportedVersion { found: 2, supported: 1 });
}

#[test]
fn reserved_header_bits() {
    for reserved in [1u16, 0x1234, 0x8000] {
        let mut b = sample_bytes();
        b[10..12].copy_from_slice(&reserved.to_le_bytes());
        assert_eq!(err(&b), DecodeError::ReservedHeaderBits { found: reserved });
    }
}

#[test]
fn descriptor_too_long_one_past_the_limit() {
    for len in [MAX_DESCRIPTOR_LEN as u32 + 1, u32::MAX] {
        let mut b = sample_bytes();
        b[12..16].copy_from_slice(&len.to_le_bytes());
        assert_eq!(err(&b), DecodeError::DescriptorTooLong { len, max: MAX_DESCRIPTOR_LEN });
        // The length is checked before the descriptor is looked for.
        assert_eq!(err(&b[..HEADER_LEN]), DecodeError::DescriptorTooLong { len, max: MAX_DESCRIPTOR_LEN });
    }
}

#[test]
fn descriptor_length_at_the_limit_passes_the_length_check() {
    let max = MAX_DESCRIPTOR_LEN;
    // Header only: the length is accepted, then the descriptor is missing.
    assert_eq!(
        err(&header(max as u32)),
        DecodeError::Truncated { offset: HEADER_LEN, needed: max, available: 0 }
    );
    // A valid descriptor zero-padded to exactly the limit is read to its end.
    let (wire, data) = base();
    let mut desc = wire.bytes();
    desc.resize(max, 0);
    let mut b = header(max as u32);
    b.extend(desc);
    b.resize(common::align(b.len()), 0);
    b.extend(data);
    assert_eq!(err(&b), DecodeError::DescriptorTrailingBytes { offset: wire.end(), count: max - wire.len() });
}

// ------------------------------------------------------------ truncation

#[test]
fn truncated_descriptor_region() {
    let bytes = sample_bytes();
    let len = common::descriptor_len(&bytes);
    for cut in [HEADER_LEN, HEADER_LEN + 1, HEADER_LEN + len - 1] {
        assert_eq!(
            err(&bytes[..cut]),
            DecodeError::Truncated { offset: HEADER_LEN, needed: len, available: cut - HEADER_LEN }
        );
    }
}

/// A container whose header declares only the first `k` descriptor bytes.
fn cut_descriptor(wire: &Wire, k: usize) -> Vec<u8> {
    let mut b = header(k as u32);
    b.extend(&wire.bytes()[..k]);
    b
}

#[test]
fn truncated_inside_descriptor_fields() {
    let (wire, _) = base();
    // Nothing but the layout tag: the element type is missing.
    assert_eq!(
        err(&cut_descriptor(&wire, 1)),
        DecodeError::Truncated { offset: HEADER_LEN + 1, needed: 1, available: 0 }
    );
    // Cut three bytes into the statistics' f64 `sparsity_ratio`: the whole f64 is reported.
    let f64_at = wire.offset("statistics") + 1 + varint(4).len();
    let k = f64_at + 3 - HEADER_LEN;
    assert_eq!(
        err(&cut_descriptor(&wire, k)),
        DecodeError::Truncated { offset: f64_at, needed: 8, available: 3 }
    );
    // Cut inside a 10-byte varint: the missing byte is reported.
    let wire = wire.set("nnz", varint(u64::MAX));
    let k = wire.offset("nnz") + 4 - HEADER_LEN;
    assert_eq!(
        err(&cut_descriptor(&wire, k)),
        DecodeError::Truncated { offset: wire.offset("nnz") + 4, needed: 1, available: 0 }
    );
}

#[test]
fn every_descriptor_truncation_is_reported_where_it_happens() {
    let (wire, _) = base();
    for k in 0..wire.len() {
        match err(&cut_descriptor(&wire, k)) {
            DecodeError::Truncated { offset, needed, available } => {
                assert_eq!(offset + available, HEADER_LEN + k, "cut at {k}");
                assert!(needed > available, "cut at {k}");
            }
            other => panic!("cut at {k}: {other:?}"),
        }
    }
}

#[test]
fn truncated_in_the_padding_after_the_descriptor() {
    // Once the descriptor is read, the file's length is known: a cut in the
    // padding before the data section is truncation of the whole file.
    let (wire, _) = base();
    let bytes = sample_bytes();
    let end = wire.end();
    let data_start = common::align(end);
    for cut in [end, end + 1, data_start - 1] {
        assert_eq!(
            err(&bytes[..cut]),
            DecodeError::TruncatedData { len: cut as u64, needed: bytes.len() as u64 }
        );
    }
}

/// Issue 11: a file cut anywhere after its descriptor was reported as
/// `BufferOutOfBounds` of whichever buffer the cut fell in (or as `Truncated`
/// padding); it is truncation of the file, with the length the descriptor needs.
#[test]
fn every_cut_after_the_descriptor_is_truncated_data() {
    let (wire, _) = base();
    let bytes = sample_bytes();
    let needed = bytes.len() as u64;
    for cut in wire.end()..bytes.len() {
        assert_eq!(
            err(&bytes[..cut]),
            DecodeError::TruncatedData { len: cut as u64, needed },
            "cut at {cut}"
        );
    }
    // The spec example (docs/format.md § 11) without its last byte.
    let spec =
        std::fs::read(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/spec_example.hurray")).unwrap();
    assert_eq!(spec.len(), 480);
    let e = err(&spec[..479]);
    assert_eq!(e, DecodeError::TruncatedData { len: 479, needed: 480 });
    assert_eq!(e.to_string(), "truncated: the file is 479 bytes, but its descriptor needs 480");
}

#[test]
fn an_empty_container_cut_in_its_padding_is_truncated_data() {
    // No buffers: the file ends at `data_start`.
    let d = plain(&[1, 2, 3], &[0, 1, 2]);
    let bytes = encode(&d, &[]);
    let cut = bytes.len() - 1;
    assert_eq!(
        err(&bytes[..cut]),
        DecodeError::TruncatedData { len: cut as u64, needed: bytes.len() as u64 }
    );
}

// ---------------------------------------------------------------- varints

#[test]
fn varint_overflow_u32() {
    let (wire, data) = base();
    let at = wire.offset("flags");
    // Five bytes, the last holding more than the 4 bits left of a u32.
    for last in [0x10, 0x7f] {
        let w = wire.clone().set("flags", [0xff, 0xff, 0xff, 0xff, last]);
        assert_eq!(err(&w.container(&data)), DecodeError::VarintOverflow { offset: at, bits: 32 });
    }
    // Six bytes: the fifth still has its continuation bit.
    let w = wire.clone().set("flags", [0x80, 0x80, 0x80, 0x80, 0x80, 0x01]);
    assert_eq!(err(&w.container(&data)), DecodeError::VarintOverflow { offset: at, bits: 32 });
    // In a mode_order entry and in quantization.axis.
    let w = wire.clone().set("mode_order", [1, 0xff, 0xff, 0xff, 0xff, 0x10]);
    assert_eq!(
        err(&w.container(&data)),
        DecodeError::VarintOverflow { offset: w.offset("mode_order") + 1, bits: 32 }
    );
    let mut quant = wire.get("quantization").to_vec();
    quant.splice(2..3, [0x80, 0x80, 0x80, 0x80, 0x20]);
    let w = wire.clone().set("quantization", quant);
    assert_eq!(
        err(&w.container(&data)),
        DecodeError::VarintOverflow { offset: w.offset("quantization") + 2, bits: 32 }
    );
}

#[test]
fn u32_varint_at_the_limit_decodes() {
    let (wire, data) = base();
    // u32::MAX is five bytes whose last is 0x0f.
    assert_eq!(varint(u32::MAX.into()), [0xff, 0xff, 0xff, 0xff, 0x0f]);
    let w = wire.set("mode_order", varint_seq(&[u32::MAX, 1, 2]));
    let c = Container::decode(&w.container(&data)).unwrap().descriptor().mode_order;
    assert_eq!(&c[..], &[u32::MAX, 1, 2]);
}

#[test]
fn varint_overflow_u64() {
    let (wire, data) = base();
    let at = wire.offset("byte_offset");
    // Eleven bytes: ten continuation bytes.
    let mut eleven = vec![0x80; 10];
    eleven.push(0x01);
    let w = wire.clone().set("byte_offset", eleven);
    assert_eq!(err(&w.container(&data)), DecodeError::VarintOverflow { offset: at, bits: 64 });
    // Ten bytes whose last holds more than the one bit left of a u64.
    let mut ten = vec![0xff; 9];
    ten.push(0x02);
    let w = wire.clone().set("byte_offset", ten);
    assert_eq!(err(&w.container(&data)), DecodeError::VarintOverflow { offset: at, bits: 64 });
    // A sequence length is a u64 varint too.
    let mut len = vec![0x80; 10];
    len.push(0x00);
    let w = wire.clone().set("shape", len);
    assert_eq!(err(&w.container(&data)), DecodeError::VarintOverflow { offset: w.offset("shape"), bits: 64 });
}

#[test]
fn u64_varint_at_the_limit_decodes() {
    let (wire, data) = base();
    let mut ten = vec![0xff; 9];
    ten.push(0x01);
    assert_eq!(varint(u64::MAX), ten);
    let w = wire.set("nnz", ten);
    assert_eq!(Container::decode(&w.container(&data)).unwrap().descriptor().nnz, u64::MAX);
}

#[test]
fn non_canonical_varint() {
    let (wire, data) = base();
    let at = wire.offset("nnz");
    for bytes in
        [&[0x80, 0x00][..], &[0x84, 0x00], &[0x84, 0x80, 0x00], &[0x80, 0x80, 0x80, 0x80, 0x80, 0x00]]
    {
        let w = wire.clone().set("nnz", bytes);
        assert_eq!(err(&w.container(&data)), DecodeError::NonCanonicalVarint { offset: at }, "{bytes:x?}");
    }
    // Ten bytes ending in 0x00: not an overflow, but not shortest either.
    let mut ten = vec![0x80; 9];
    ten.push(0x00);
    let w = wire.clone().set("nnz", ten);
    assert_eq!(err(&w.container(&data)), DecodeError::NonCanonicalVarint { offset: at });
    // A u32 of five bytes ending in 0x00.
    let w = wire.clone().set("flags", [0x87, 0x80, 0x80, 0x80, 0x00]);
    assert_eq!(err(&w.container(&data)), DecodeError::NonCanonicalVarint { offset: w.offset("flags") });
    // A sequence length prefix.
    let mut shape = vec![0x83, 0x00];
    shape.extend(&wire.get("shape")[1..]);
    let w = wire.clone().set("shape", shape);
    assert_eq!(err(&w.container(&data)), DecodeError::NonCanonicalVarint { offset: w.offset("shape") });
}

// ------------------------------------------------------------ option tags

#[test]
fn bad_option_tags() {
    let (wire, data) = base();
    let stats = wire.offset("statistics");
    let quant = wire.offset("quantization");
    for found in [2, 0x80, 0xff] {
        let w = wire.clone().set("statistics", [found]);
        assert_eq!(
            err(&w.container(&data)),
            DecodeError::BadOptionTag { offset: stats, field: "statistics", found }
        );
        let w = wire.clone().set("quantization", [found]);
        assert_eq!(
            err(&w.container(&data)),
            DecodeError::BadOptionTag { offset: quant, field: "quantization", found }
        );
        let w = wire.clone().set("shard", [found]);
        assert_eq!(
            err(&w.container(&data)),
            DecodeError::BadOptionTag { offset: wire.offset("shard"), field: "shard", found }
        );
    }
    // Inside the sections: tag, nnz (1 byte), sparsity_ratio (8), then min's tag.
    let min_at = 1 + 1 + 8;
    let max_at = min_at + 9;
    for (at, field) in [(min_at, "statistics.min"), (max_at, "statistics.max")] {
        let mut body = wire.get("statistics").to_vec();
        body[at] = 3;
        let w = wire.clone().set("statistics", body);
        assert_eq!(
            err(&w.container(&data)),
            DecodeError::BadOptionTag { offset: stats + at, field, found: 3 }
        );
    }
    // Quantization: tag, scheme, axis (1), block_size (1), scale_type, then the zero point's tag.
    let zp_at = 5;
    let mut body = wire.get("quantization").to_vec();
    body[zp_at] = 2;
    let w = wire.clone().set("quantization", body);
    assert_eq!(
        err(&w.container(&data)),
        DecodeError::BadOptionTag { offset: quant + zp_at, field: "quantization.zero_point_type", found: 2 }
    );
}

// ------------------------------------------------------- layouts and codes

#[test]
fn unknown_layout() {
    let (wire, data) = base();
    for tag in [0x00, 0x0a, 0x42, 0xff] {
        let w = wire.clone().set("layout", [tag]);
        assert_eq!(err(&w.container(&data)), DecodeError::UnknownLayout { offset: HEADER_LEN, tag });
    }
}

#[test]
fn unsupported_layout() {
    let (wire, data) = base();
    for tag in 0x01..=0x08 {
        let w = wire.clone().set("layout", [tag]);
        assert_eq!(
            err(&w.container(&data)),
            DecodeError::UnsupportedLayout { offset: HEADER_LEN, layout: LayoutTag(tag) }
        );
    }
    let coo = err(&wire.set("layout", [0x02]).container(&data));
    assert_eq!(coo, DecodeError::UnsupportedLayout { offset: 16, layout: LayoutTag::COO });
    let message = coo.to_string();
    assert!(message.contains("COO (0x02) is not supported"), "{message}");
    assert!(message.contains("byte 16"), "{message}");
}

#[test]
fn unknown_element_type() {
    let (wire, data) = base();
    let quant = wire.offset("quantization");
    for code in 0..=u8::MAX {
        let known = ElementType::from_code(code).is_some();
        let w = wire.clone().set("element_type", [code]);
        let bytes = w.container(&data);
        let result = Container::decode(&bytes);
        if known {
            assert_eq!(result.unwrap().descriptor().element_type.code(), code);
        } else {
            assert_eq!(
                result.unwrap_err(),
                DecodeError::UnknownElementType { offset: HEADER_LEN + 1, field: "element_type", code }
            );
        }
    }
    // quantization: tag, scheme, axis, block_size, then scale_type; the zero point's type after its tag.
    for (at, field) in [(4, "quantization.scale_type"), (6, "quantization.zero_point_type")] {
        for code in [0x09, 0x14, 0x34, 0xff] {
            let mut body = wire.get("quantization").to_vec();
            body[at] = code;
            let w = wire.clone().set("quantization", body);
            assert_eq!(
                err(&w.container(&data)),
                DecodeError::UnknownElementType { offset: quant + at, field, code }
            );
        }
    }
}

#[test]
fn unknown_flags() {
    let (wire, data) = base();
    let at = wire.offset("flags");
    for (flags, bits) in [(1u64 << 3, 1u32 << 3), (0x7 | 1 << 31, 1 << 31), (u32::MAX.into(), !0x7)] {
        let w = wire.clone().set("flags", varint(flags));
        assert_eq!(err(&w.container(&data)), DecodeError::UnknownFlags { offset: at, bits });
    }
}

#[test]
fn flag_mismatch_both_directions() {
    let (wire, data) = base();
    // The sample has all three sections and flags 0b111.
    assert_eq!(wire.get("flags"), [0x07]);
    let cases = [(1u32, "statistics"), (2, "quantization"), (4, "shard")];
    for (bit, name) in cases {
        // Flag clear, section present.
        let w = wire.clone().set("flags", varint((0x7 & !bit).into()));
        assert_eq!(
            err(&w.container(&data)),
            DecodeError::FlagMismatch { offset: w.offset(name), flag: name, flag_set: false }
        );
        // Flag set, section absent.
        let w = wire.clone().set(name, [0]);
        assert_eq!(
            err(&w.container(&data)),
            DecodeError::FlagMismatch { offset: w.offset(name), flag: name, flag_set: true }
        );
    }
}

#[test]
fn unknown_quant_scheme() {
    let (wire, data) = base();
    let at = wire.offset("quantization") + 1;
    for code in [5, 0x80, 0xff] {
        let mut body = wire.get("quantization").to_vec();
        body[1] = code;
        let w = wire.clone().set("quantization", body);
        assert_eq!(err(&w.container(&data)), DecodeError::UnknownQuantScheme { offset: at, code });
    }
}

// ------------------------------------------------------------------ lists

/// A descriptor with no buffers and no sections, for list-length tests.
fn plain(shape: &[u64], mode_order: &[u32]) -> Descriptor {
    Descriptor::csf_unchecked(ElementType::U8, shape, mode_order, 0).unwrap()
}

#[test]
fn rank_at_the_limit_decodes_and_one_past_is_too_long() {
    let shape = vec![u64::MAX; MAX_RANK];
    let mode_order: Vec<u32> = (0..MAX_RANK as u32).rev().collect();
    let mut d = plain(&shape, &mode_order);
    d.shard = Some(ShardDescriptor {
        shard_index: 1,
        shard_count: 2,
        shard_offset: FixedVec::from_slice(&shape).unwrap(),
    });
    let bytes = encode(&d, &[]);
    assert_eq!(Container::decode(&bytes).unwrap().descriptor(), d);

    let wire = Wire::of(&d);
    let long_shape = vec![7u64; MAX_RANK + 1];
    let w = wire.clone().set("shape", varint_seq(&long_shape));
    assert_eq!(
        err(&w.container(&[])),
        DecodeError::TooLong { offset: w.offset("shape"), field: "shape", len: 65, max: MAX_RANK }
    );
    let long_order = vec![0u32; MAX_RANK + 1];
    let w = wire.clone().set("mode_order", varint_seq(&long_order));
    assert_eq!(
        err(&w.container(&[])),
        DecodeError::TooLong { offset: w.offset("mode_order"), field: "mode_order", len: 65, max: MAX_RANK }
    );
    let mut shard = vec![1];
    shard.extend(varint(1));
    shard.extend(varint(2));
    let shard_offset_at = wire.offset("shard") + shard.len();
    shard.extend(varint_seq(&long_shape));
    let w = wire.clone().set("shard", shard);
    assert_eq!(
        err(&w.container(&[])),
        DecodeError::TooLong { offset: shard_offset_at, field: "shard.shard_offset", len: 65, max: MAX_RANK }
    );
}

#[test]
fn list_lengths_are_checked_before_any_item_is_read() {
    let (wire, data) = base();
    // Huge declared lengths with no items behind them.
    for len in [u64::from(u32::MAX), u64::MAX] {
        let w = wire.clone().set("shape", varint(len));
        assert_eq!(
            err(&w.container(&data)),
            DecodeError::TooLong { offset: w.offset("shape"), field: "shape", len, max: MAX_RANK }
        );
        let w = wire.clone().set("buffers", varint(len));
        assert_eq!(
            err(&w.container(&data)),
            DecodeError::TooLong { offset: w.offset("buffers"), field: "buffers", len, max: MAX_BUFFERS }
        );
    }
}

#[test]
fn buffer_count_at_the_limit_decodes_and_one_past_is_too_long() {
    let mut d = plain(&[1, 1, 1], &[0, 1, 2]);
    let buffers: Vec<Vec<u8>> = (0..MAX_BUFFERS).map(|i| vec![i as u8; i % 5]).collect();
    for i in 0..MAX_BUFFERS {
        d.buffers.push(BufferEntry { offset: 0, length: 0, device_tag: DeviceTag(i as u8) }).unwrap();
    }
    assert!(d.buffers.push(BufferEntry::default()).is_err());
    let bytes = encode(&d, &slices(&buffers));
    let c = Container::decode(&bytes).unwrap();
    assert_eq!(c.descriptor(), planned(&d, &slices(&buffers)));
    assert_eq!(c.buffer_count(), MAX_BUFFERS);
    assert_eq!(c.buffer(MAX_BUFFERS - 1), Some(&buffers[MAX_BUFFERS - 1][..]));

    let wire = Wire::of(&d);
    let rows: Vec<(u64, u64, u8)> = (0..=MAX_BUFFERS as u64).map(|i| (i * 64, 0, 0)).collect();
    let w = wire.with_buffers(&rows);
    assert_eq!(
        err(&w.container(&[])),
        DecodeError::TooLong { offset: w.offset("buffers"), field: "buffers", len: 138, max: MAX_BUFFERS }
    );
}

#[test]
fn largest_legal_descriptor_fits_the_length_limit() {
    // Every list at its cap, every integer at its widest varint.
    let mut d = plain(&[u64::MAX; MAX_RANK], &[u32::MAX; MAX_RANK]);
    d.byte_offset = u64::MAX;
    d.nnz = u64::MAX;
    d.statistics = Some(Statistics { nnz: u64::MAX, sparsity_ratio: 0.0, min: Some(0.0), max: Some(0.0) });
    d.quantization = Some(Quantization {
        scheme: QuantScheme::Mxfp,
        axis: u32::MAX,
        block_size: u64::MAX,
        scale_type: ElementType::E8M0,
        zero_point_type: Some(ElementType::U8),
    });
    d.shard = Some(ShardDescriptor {
        shard_index: u64::MAX,
        shard_count: u64::MAX,
        shard_offset: FixedVec::from_slice(&[u64::MAX; MAX_RANK]).unwrap(),
    });
    let rows = vec![(u64::MAX, u64::MAX, 0xff); MAX_BUFFERS];
    let w = Wire::of(&d).with_buffers(&rows);
    assert!(w.len() <= MAX_DESCRIPTOR_LEN, "{} bytes", w.len());
    // It passes every descriptor check and fails only on the first buffer's
    // placement: its start, `data_start + u64::MAX`, is past any file.
    let data_start = common::align(w.end()) as u64;
    assert_eq!(
        err(&w.container(&[])),
        DecodeError::BufferEndOverflow { index: 0, data_start, table_offset: u64::MAX, length: u64::MAX }
    );
}

#[test]
fn descriptor_trailing_bytes() {
    let (wire, data) = base();
    for extra in [&[0u8][..], &[0, 0, 0, 0, 0], &[0xff]] {
        let mut desc = wire.bytes();
        desc.extend_from_slice(extra);
        let mut b = header(desc.len() as u32);
        b.extend(desc);
        b.resize(common::align(b.len()), 0);
        b.extend(&data);
        assert_eq!(err(&b), DecodeError::DescriptorTrailingBytes { offset: wire.end(), count: extra.len() });
    }
}

// ------------------------------------------------------- buffer framing

#[test]
fn non_zero_padding_after_the_descriptor() {
    let (wire, _) = base();
    let end = wire.end();
    let data_start = common::align(end);
    for at in [end, end + 1, data_start - 1] {
        let mut b = sample_bytes();
        b[at] = 0x80;
        assert_eq!(err(&b), DecodeError::NonZeroPadding { offset: at });
    }
}

#[test]
fn non_zero_padding_between_buffers() {
    let (wire, _) = base();
    let (_, buffers) = sample();
    let data_start = common::align(wire.end());
    let first_end = data_start + buffers[0].len();
    for at in [first_end, first_end + 10, data_start + BUFFER_ALIGNMENT - 1] {
        let mut b = sample_bytes();
        b[at] = 1;
        assert_eq!(err(&b), DecodeError::NonZeroPadding { offset: at });
    }
    // The padding before the last buffer, too.
    let mut b = sample_bytes();
    let before_last = Container::decode(&b).unwrap().buffer_range(buffers.len() - 2).unwrap().end;
    b[before_last] = 0xff;
    assert_eq!(err(&b), DecodeError::NonZeroPadding { offset: before_last });
}

/// A container with the sample's descriptor but the given buffer table and data section.
fn framed(rows: &[(u64, u64, u8)], data: &[u8]) -> Vec<u8> {
    base().0.with_buffers(rows).container(data)
}

/// Where the data section of `framed(rows, ..)` starts: the buffer errors
/// give file offsets, the table's offsets plus this.
fn data_start(rows: &[(u64, u64, u8)]) -> u64 {
    common::align(base().0.with_buffers(rows).end()) as u64
}

#[test]
fn buffer_misaligned() {
    let data = vec![0u8; 256];
    for (rows, index, offset) in [
        (&[(1, 16, 0)][..], 0, 1),
        (&[(0, 16, 0), (65, 16, 0)], 1, 65),
        (&[(0, 16, 0), (63, 16, 0)], 1, 63),
        (&[(0, 64, 0), (64, 0, 0), (96, 8, 0)], 2, 96),
    ] {
        let offset = data_start(rows) + offset;
        let e = err(&framed(rows, &data));
        assert_eq!(e, DecodeError::BufferMisaligned { index, offset, alignment: BUFFER_ALIGNMENT });
        assert_eq!(e.offset(), Some(offset));
    }
}

#[test]
fn buffer_overlap() {
    let data = vec![0u8; 256];
    for (rows, index, offset, previous_end) in [
        (&[(0, 16, 0), (0, 16, 0)][..], 1, 0, 16),
        (&[(0, 100, 0), (64, 16, 0)], 1, 64, 100),
        (&[(0, 64, 0), (64, 65, 0), (128, 1, 0)], 2, 128, 129),
    ] {
        let (offset, previous_end) = (data_start(rows) + offset, data_start(rows) + previous_end);
        let e = err(&framed(rows, &data));
        assert_eq!(e, DecodeError::BufferOverlap { index, offset, previous_end });
        assert_eq!(e.offset(), Some(offset));
    }
}

#[test]
fn buffer_gap() {
    let data = vec![0u8; 512];
    for (rows, index, offset, expected) in [
        (&[(64, 16, 0)][..], 0, 64, 0),
        (&[(0, 16, 0), (128, 16, 0)], 1, 128, 64),
        (&[(0, 0, 0), (64, 16, 0)], 1, 64, 0),
        (&[(0, 64, 0), (192, 1, 0)], 1, 192, 64),
    ] {
        let (offset, expected) = (data_start(rows) + offset, data_start(rows) + expected);
        let e = err(&framed(rows, &data));
        assert_eq!(e, DecodeError::BufferGap { index, offset, expected });
        assert_eq!(e.offset(), Some(offset));
    }
}

/// A buffer table that is sound but describes more data than the file holds
/// (a length too large, or the file cut short: the two look the same).
#[test]
fn truncated_data_when_the_table_runs_past_the_end() {
    let data = vec![0u8; 100];
    let data_start = common::align(base().0.with_buffers(&[(0, 0, 0)]).end()) as u64;
    for rows in [
        &[(0, 101, 0)][..],
        &[(0, 16, 0), (64, 37, 0)],
        // A zero-length last buffer still starts at its aligned offset, which
        // the file must reach.
        &[(0, 100, 0), (128, 0, 0)],
    ] {
        let bytes = framed(rows, &data);
        let (offset, length, _) = rows[rows.len() - 1];
        assert_eq!(
            err(&bytes),
            DecodeError::TruncatedData { len: bytes.len() as u64, needed: data_start + offset + length }
        );
    }
    // At the limit: the last buffer ends exactly at the end of the input.
    assert!(Container::decode(&framed(&[(0, 16, 0), (64, 36, 0)], &data)).is_ok());
    // The largest end that fits u64 is still only truncation.
    let length = u64::MAX - data_start;
    assert_eq!(
        err(&framed(&[(0, length, 0)], &data)),
        DecodeError::TruncatedData { len: data_start + 100, needed: u64::MAX }
    );
    assert_eq!(
        err(&framed(&[(0, 16, 0), (64, length - 64, 0)], &data)),
        DecodeError::TruncatedData { len: data_start + 100, needed: u64::MAX }
    );
}

/// A buffer whose end does not fit u64 has its own error, not a panic and not
/// truncation: no file could be long enough.
#[test]
fn buffer_end_overflow() {
    let data = vec![0u8; 100];
    let data_start = common::align(base().0.with_buffers(&[(0, 0, 0)]).end()) as u64;
    for (rows, index, offset, length) in [
        // `data_start + offset + length` is one past u64::MAX.
        (&[(0, u64::MAX - data_start + 1, 0)][..], 0, 0, u64::MAX - data_start + 1),
        (&[(0, u64::MAX, 0)], 0, 0, u64::MAX),
        // `offset + length` alone overflows.
        (&[(0, 16, 0), (64, u64::MAX, 0)], 1, 64, u64::MAX),
        (&[(0, 16, 0), (64, u64::MAX - 63, 0)], 1, 64, u64::MAX - 63),
        (&[(0, 16, 0), (64, u64::MAX - 64 - data_start + 1, 0)], 1, 64, u64::MAX - 64 - data_start + 1),
    ] {
        let e = err(&framed(rows, &data));
        assert_eq!(e, DecodeError::BufferEndOverflow { index, data_start, table_offset: offset, length });
        // The buffer's start fits: it is where the error is.
        assert_eq!(e.offset(), Some(data_start + offset));
    }
    // The table is read to its end before the file's length is compared:
    // an overflow in the last buffer beats a file too short for the first.
    assert_eq!(
        err(&framed(&[(0, 200, 0), (256, u64::MAX, 0)], &data)),
        DecodeError::BufferEndOverflow { index: 1, data_start, table_offset: 256, length: u64::MAX }
    );
}

/// A buffer whose start, `data_start + offset`, does not fit u64 is reported
/// as the overflow it is before its alignment or its gap is looked at: those
/// errors give the start as a file offset, and this one has none.
#[test]
fn a_buffer_starting_past_u64_overflows_before_any_other_check() {
    let data = vec![0u8; 100];
    let data_start = data_start(&[(0, 0, 0)]);
    // Misaligned, and aligned but far past the canonical offset.
    for (rows, index, offset) in [
        (&[(u64::MAX, 0, 0)][..], 0, u64::MAX),
        (&[(0, 16, 0), (u64::MAX - 63, 0, 0)], 1, u64::MAX - 63),
        (&[(0, 16, 0), (u64::MAX - data_start + 1, 0, 0)], 1, u64::MAX - data_start + 1),
    ] {
        let e = err(&framed(rows, &data));
        assert_eq!(e, DecodeError::BufferEndOverflow { index, data_start, table_offset: offset, length: 0 });
        assert_eq!(e.offset(), None, "{e}");
    }
    // The last start that fits is misaligned or a gap as before.
    let offset = u64::MAX - data_start;
    assert_eq!(
        err(&framed(&[(offset, 0, 0)], &data)),
        DecodeError::BufferMisaligned { index: 0, offset: u64::MAX, alignment: BUFFER_ALIGNMENT }
    );
    let offset = (u64::MAX - data_start) / 64 * 64;
    assert_eq!(
        err(&framed(&[(offset, 0, 0)], &data)),
        DecodeError::BufferGap { index: 0, offset: data_start + offset, expected: data_start }
    );
}

/// Each fault has its own error, in the order of docs/format.md § 4.4: the
/// table, then the file's length, then the padding bytes.
#[test]
fn table_faults_then_length_then_padding() {
    let data = vec![0u8; 100];
    // A misplaced buffer is reported even in a truncated file.
    let rows = [(0, 16, 0), (65, 1000, 0)];
    assert_eq!(
        err(&framed(&rows, &data)),
        DecodeError::BufferMisaligned {
            index: 1,
            offset: data_start(&rows) + 65,
            alignment: BUFFER_ALIGNMENT
        }
    );
    let rows = [(0, 16, 0), (128, 1000, 0)];
    let start = data_start(&rows);
    assert_eq!(
        err(&framed(&rows, &data)),
        DecodeError::BufferGap { index: 1, offset: start + 128, expected: start + 64 }
    );
    // Truncation is reported before non-zero padding, and so is a trailing byte.
    let bytes = sample_bytes();
    let (wire, _) = base();
    let (_, buffers) = sample();
    let padding = common::align(wire.end()) + buffers[0].len();
    let mut dirty = bytes.clone();
    dirty[padding] = 1;
    assert_eq!(err(&dirty), DecodeError::NonZeroPadding { offset: padding });
    assert_eq!(
        err(&dirty[..bytes.len() - 1]),
        DecodeError::TruncatedData { len: bytes.len() as u64 - 1, needed: bytes.len() as u64 }
    );
    dirty.push(0);
    assert_eq!(err(&dirty), DecodeError::TrailingBytes { offset: bytes.len(), count: 1 });
    // The same for the padding after the descriptor.
    let mut dirty = bytes.clone();
    dirty[wire.end()] = 1;
    assert_eq!(err(&dirty), DecodeError::NonZeroPadding { offset: wire.end() });
    assert_eq!(
        err(&dirty[..wire.end() + 1]),
        DecodeError::TruncatedData { len: wire.end() as u64 + 1, needed: bytes.len() as u64 }
    );
}

#[test]
fn trailing_bytes() {
    let bytes = sample_bytes();
    for extra in [&[0u8][..], &[0; 63], &[0; 64], &[1, 2, 3]] {
        let mut b = bytes.clone();
        b.extend_from_slice(extra);
        assert_eq!(err(&b), DecodeError::TrailingBytes { offset: bytes.len(), count: extra.len() });
    }
    // With no buffers the file ends at the data section.
    let d = plain(&[1, 2, 3], &[0, 1, 2]);
    let empty = encode(&d, &[]);
    assert_eq!(empty.len() % BUFFER_ALIGNMENT, 0);
    let mut b = empty.clone();
    b.push(0);
    assert_eq!(err(&b), DecodeError::TrailingBytes { offset: empty.len(), count: 1 });
    // A zero-length last buffer still sits at an aligned offset, so the file
    // runs to that offset: the padding before it is part of the file.
    let rows = [(0, 16, 0), (64, 0, 0), (64, 0, 0)];
    let b = framed(&rows, &[0; 64]);
    assert!(Container::decode(&b).is_ok());
    let short = framed(&rows, &[0; 16]);
    assert_eq!(err(&short), DecodeError::TruncatedData { len: short.len() as u64, needed: b.len() as u64 });
    assert_eq!(err(&framed(&rows, &[0; 65])), DecodeError::TrailingBytes { offset: b.len(), count: 1 });
}

// ---------------------------------------------------------------- display

#[test]
fn display_names_the_byte_offset_or_buffer_index() {
    use DecodeError as E;
    let cases = [
        (E::Truncated { offset: 4321, needed: 8, available: 3 }, "byte 4321"),
        (E::BadMagic, "byte 0"),
        (E::UnsupportedVersion { found: 2, supported: 1 }, "byte 8"),
        (E::ReservedHeaderBits { found: 1 }, "byte 10"),
        (E::DescriptorTooLong { len: 9000, max: MAX_DESCRIPTOR_LEN }, "byte 12"),
        (E::VarintOverflow { offset: 4321, bits: 32 }, "byte 4321"),
        (E::NonCanonicalVarint { offset: 4321 }, "byte 4321"),
        (E::BadOptionTag { offset: 4321, field: "statistics", found: 2 }, "byte 4321"),
        (E::UnknownLayout { offset: 4321, tag: 0x42 }, "byte 4321"),
        (E::UnsupportedLayout { offset: 4321, layout: LayoutTag::COO }, "byte 4321"),
        (E::UnknownElementType { offset: 4321, field: "element_type", code: 0x09 }, "byte 4321"),
        (E::UnknownFlags { offset: 4321, bits: 8 }, "byte 4321"),
        (E::FlagMismatch { offset: 4321, flag: "shard", flag_set: true }, "byte 4321"),
        (E::UnknownQuantScheme { offset: 4321, code: 9 }, "byte 4321"),
        (E::TooLong { offset: 4321, field: "shape", len: 65, max: 64 }, "byte 4321"),
        (E::DescriptorTrailingBytes { offset: 4321, count: 1 }, "byte 4321"),
        (E::NonZeroPadding { offset: 4321 }, "byte 4321"),
        (E::BufferMisaligned { index: 77, offset: 4321, alignment: 64 }, "byte 4321: buffer 77"),
        (E::BufferOverlap { index: 77, offset: 4321, previous_end: 4400 }, "byte 4321: buffer 77"),
        (E::BufferGap { index: 77, offset: 4321, expected: 64 }, "byte 4321: buffer 77"),
        (E::BufferEndOverflow { index: 77, data_start: 64, table_offset: 64, length: u64::MAX }, "buffer 77"),
        (E::TruncatedData { len: 4321, needed: 8642 }, "the file is 4321 bytes"),
        (E::TrailingBytes { offset: 4321, count: 1 }, "byte 4321"),
    ];
    for (error, needle) in cases {
        let message = error.to_string();
        assert!(message.contains(needle), "{error:?} displays as {message:?}");
        // `offset()` is the byte the message opens with, from the start of the file.
        if let Some(n) = message.strip_prefix("byte ").and_then(|m| m.split(':').next()) {
            assert_eq!(error.offset(), Some(n.parse().unwrap()), "{error:?}");
        }
    }
    // The two that do not open with a byte: the end of the file, where the
    // missing bytes belong, and the start of a buffer whose end overflows.
    assert_eq!(E::TruncatedData { len: 4321, needed: 8642 }.offset(), Some(4321));
    let overflow =
        |data_start, table_offset| E::BufferEndOverflow { index: 0, data_start, table_offset, length: 1 };
    assert_eq!(overflow(64, 128).offset(), Some(192));
    assert_eq!(overflow(64, u64::MAX - 63).offset(), None);
}

/// The buffer errors used to give the table's offsets, counted from the data
/// section, where every other error counts from the start of the file.
#[test]
fn buffer_errors_count_from_the_start_of_the_file() {
    let rows = [(0, 16, 0), (65, 16, 0)];
    let bytes = framed(&rows, &[0; 128]);
    let e = err(&bytes);
    let at = e.offset().unwrap() as usize;
    // The byte named is where the table puts buffer 1: 65 bytes into the data
    // section, which starts after the header, the descriptor and its padding.
    let start = data_start(&rows) as usize;
    assert!(start > HEADER_LEN);
    assert_eq!(at, start + 65);
    assert_eq!(e, DecodeError::BufferMisaligned { index: 1, offset: at as u64, alignment: BUFFER_ALIGNMENT });
}

#[test]
fn display_of_real_errors_names_their_offset() {
    let (wire, data) = base();
    let w = wire.clone().set("nnz", [0x80, 0x00]);
    let message = err(&w.container(&data)).to_string();
    assert!(message.contains(&format!("byte {}", w.offset("nnz"))), "{message}");
    let w = wire.set("flags", [0x03]);
    let message = err(&w.container(&data)).to_string();
    assert!(message.contains(&format!("byte {}", w.offset("shard"))), "{message}");
    assert!(message.contains("shard is false but the section is present"), "{message}");
    let rows = [(0, 16, 0), (65, 16, 0)];
    let message = err(&framed(&rows, &[0; 128])).to_string();
    assert!(message.starts_with(&format!("byte {}: buffer 1 ", data_start(&rows) + 65)), "{message}");
}
