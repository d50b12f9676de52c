//! Golden test: the worked example of the CSF specification (csf-layout.txt,
//! § Example), encoded as a Hurray container, against the committed fixture
//! `tests/fixtures/spec_example.hurray`.
//!
//! The annotated hex dump of the fixture in `docs/format.md` (§ 11) describes
//! exactly these bytes; [`HEAD`] below repeats its header and descriptor bytes,
//! written out by hand, so that the document, the encoder and the fixture are
//! checked against one another.
//!
//! To regenerate the fixture after a deliberate change to the wire format, run
//!
//! ```text
//! HURRAY_BLESS=1 cargo test -p hurray-format --test golden
//! ```
//!
//! which writes the file instead of comparing against it (and then checks the
//! freshly written bytes), and update the hex dump in `docs/format.md`.

use hurray_format::le::U64Array;
use hurray_format::limits::BUFFER_ALIGNMENT;
use hurray_format::{
    csf, encode_to_slice, encoded_len, Container, Descriptor, DeviceTag, ElementType, LayoutTag,
    FORMAT_VERSION, HEADER_LEN, MAGIC,
};

/// The committed fixture.
const FIXTURE: &[u8] = include_bytes!("fixtures/spec_example.hurray");

/// Path of the fixture, for blessing.
const FIXTURE_PATH: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/spec_example.hurray");

/// The spec's arrays (csf-layout.txt § Example).
const SHAPE: [u64; 3] = [2, 3, 4];
const MODE_ORDER: [u32; 3] = [0, 1, 2];
const NNZ: u64 = 4;
const VALUES: [f32; 4] = [1.0, 2.0, 3.0, 4.0];
const POS_0: [u64; 2] = [0, 2];
const CRD_0: [u64; 2] = [0, 1];
const POS_1: [u64; 3] = [0, 2, 3];
const CRD_1: [u64; 3] = [0, 2, 1];
const POS_2: [u64; 4] = [0, 1, 2, 4];
const CRD_2: [u64; 4] = [1, 3, 0, 2];

/// The index arrays in buffer order: buffer `1 + i` holds `INDEX_ARRAYS[i]`.
const INDEX_ARRAYS: [&[u64]; 6] = [&POS_0, &CRD_0, &POS_1, &CRD_1, &POS_2, &CRD_2];

/// Header, descriptor and padding of the fixture, written out by hand from
/// docs/format.md § 11 (not produced by the encoder).
#[rustfmt::skip]
const HEAD: [u8; 64] = [
    // Header.
    0x89, 0x48, 0x52, 0x59, 0x0d, 0x0a, 0x1a, 0x0a, // magic "\x89HRY\r\n\x1a\n"
    0x01, 0x00,                                     // version 1
    0x00, 0x00,                                     // reserved
    0x2b, 0x00, 0x00, 0x00,                         // descriptor_len 43
    // Descriptor (43 bytes).
    0x09,                                           // layout CSF
    0x12,                                           // element_type f32
    0x03, 0x02, 0x03, 0x04,                         // shape [2, 3, 4]
    0x00,                                           // flags
    0x00,                                           // byte_offset 0
    0x04,                                           // nnz 4
    0x03, 0x00, 0x01, 0x02,                         // mode_order [0, 1, 2]
    0x07,                                           // 7 buffers
    0x00, 0x10, 0x00,                               // 0 values: offset 0, length 16, host
    0x40, 0x10, 0x00,                               // 1 pos_0: offset 64, length 16, host
    0x80, 0x01, 0x10, 0x00,                         // 2 crd_0: offset 128, length 16, host
    0xc0, 0x01, 0x18, 0x00,                         // 3 pos_1: offset 192, length 24, host
    0x80, 0x02, 0x18, 0x00,                         // 4 crd_1: offset 256, length 24, host
    0xc0, 0x02, 0x20, 0x00,                         // 5 pos_2: offset 320, length 32, host
    0x80, 0x03, 0x20, 0x00,                         // 6 crd_2: offset 384, length 32, host
    0x00,                                           // statistics: absent
    0x00,                                           // quantization: absent
    0x00,                                           // shard: absent
    // Padding to data_start = 64.
    0x00, 0x00, 0x00, 0x00, 0x00,
];

/// Where the canonical placement puts each buffer, relative to data_start.
const OFFSETS: [u64; 7] = [0, 64, 128, 192, 256, 320, 384];
/// data_start = align64(16 + 43).
const DATA_START: usize = 64;
/// data_start + end of crd_2 (384 + 32).
const FILE_LEN: usize = 480;

fn blessing() -> bool {
    std::env::var_os("HURRAY_BLESS").is_some_and(|v| v == "1")
}

fn u64_le(values: &[u64]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}

/// The spec's buffers, in buffer-index order, as little-endian bytes.
fn buffers() -> Vec<Vec<u8>> {
    let mut out = vec![VALUES.iter().flat_map(|v| v.to_le_bytes()).collect::<Vec<u8>>()];
    out.extend(INDEX_ARRAYS.iter().map(|a| u64_le(a)));
    out
}

/// The example's descriptor, built by hand; offsets and lengths are left at 0
/// for the encoder to fill in.
fn descriptor() -> Descriptor {
    Descriptor::csf(ElementType::F32, &SHAPE, &MODE_ORDER, NNZ).expect("rank 3 fits")
}

fn encode(descriptor: &Descriptor, buffers: &[&[u8]]) -> Vec<u8> {
    let len = encoded_len(descriptor, buffers).expect("encoded_len");
    let mut out = vec![0xa5; len + 100]; // dirty and too long: the encoder must zero what it uses
    let written = encode_to_slice(descriptor, buffers, &mut out).expect("encode_to_slice");
    assert_eq!(written, len, "encode_to_slice and encoded_len disagree");
    out.truncate(written);
    out
}

fn encode_example() -> Vec<u8> {
    let arrays = buffers();
    let slices: Vec<&[u8]> = arrays.iter().map(Vec::as_slice).collect();
    encode(&descriptor(), &slices)
}

/// The bytes the decode test reads: the committed fixture, or while blessing
/// the bytes just written (the `include_bytes!` copy may be stale).
fn fixture() -> Vec<u8> {
    if blessing() {
        encode_example()
    } else {
        FIXTURE.to_vec()
    }
}

#[test]
fn encoding_the_spec_example_matches_the_fixture() {
    let bytes = encode_example();
    assert_eq!(bytes.len(), FILE_LEN);
    assert_eq!(&bytes[..DATA_START], &HEAD[..], "header/descriptor differ from docs/format.md § 11");

    if blessing() {
        std::fs::write(FIXTURE_PATH, &bytes).expect("write fixture");
        eprintln!("HURRAY_BLESS=1: wrote {} bytes to {FIXTURE_PATH}", bytes.len());
        return;
    }
    assert_eq!(bytes.len(), FIXTURE.len(), "length differs from the fixture");
    if let Some(i) = bytes.iter().zip(FIXTURE).position(|(a, b)| a != b) {
        panic!(
            "byte {i} (0x{i:x}) differs: encoded 0x{:02x}, fixture 0x{:02x} \
             (rerun with HURRAY_BLESS=1 if the change is intended)",
            bytes[i], FIXTURE[i]
        );
    }
}

#[test]
fn decoding_the_fixture_gives_the_spec_arrays() {
    let bytes = fixture();
    let container = Container::decode(&bytes).expect("fixture decodes");

    // Header.
    assert_eq!(bytes[..8], MAGIC);
    assert_eq!(u16::from_le_bytes([bytes[8], bytes[9]]), FORMAT_VERSION);
    assert_eq!(u16::from_le_bytes([bytes[10], bytes[11]]), 0);
    let descriptor_len = u32::from_le_bytes([bytes[12], bytes[13], bytes[14], bytes[15]]) as usize;
    assert_eq!(descriptor_len, 43);
    assert_eq!(container.data_start(), DATA_START);
    assert_eq!(container.data_start(), (HEADER_LEN + descriptor_len).next_multiple_of(BUFFER_ALIGNMENT));

    // Every field of the descriptor.
    let d = container.descriptor();
    assert_eq!(d.layout, LayoutTag::CSF);
    assert_eq!(d.element_type, ElementType::F32);
    assert_eq!(&d.shape[..], &SHAPE);
    assert_eq!(d.rank(), 3);
    assert_eq!(d.flags().0, 0);
    assert_eq!(d.byte_offset, 0);
    assert_eq!(d.nnz, NNZ);
    assert_eq!(&d.mode_order[..], &MODE_ORDER);
    assert_eq!(d.buffers.len(), csf::buffer_count(3));
    assert_eq!(container.buffer_count(), 7);
    assert!(d.statistics.is_none());
    assert!(d.quantization.is_none());
    assert!(d.shard.is_none());
    assert_eq!(d.total_elements(), Some(24));

    let lengths = [16u64, 16, 16, 24, 24, 32, 32];
    for (i, entry) in d.buffers.iter().enumerate() {
        assert_eq!(entry.offset, OFFSETS[i], "buffer {i} offset");
        assert_eq!(entry.length, lengths[i], "buffer {i} length");
        assert_eq!(entry.device_tag, DeviceTag::HOST, "buffer {i} device tag");
        let range = container.buffer_range(i).expect("in table");
        assert_eq!(range.start, DATA_START + OFFSETS[i] as usize);
        assert_eq!(range.start % BUFFER_ALIGNMENT, 0, "buffer {i} is 64-byte aligned in the file");
    }
    assert_eq!(container.buffer(7), None);
    assert_eq!(container.buffer_range(6).map(|r| r.end), Some(FILE_LEN));

    // The buffers, read as little-endian f32 and u64.
    let values = container.buffer(csf::VALUES_BUFFER).expect("values");
    let values: Vec<f32> =
        values.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect();
    assert_eq!(values, VALUES);
    for level in 0..3 {
        let pos = U64Array::new(container.buffer(csf::pos_buffer(level)).expect("pos")).expect("whole u64s");
        let crd = U64Array::new(container.buffer(csf::crd_buffer(level)).expect("crd")).expect("whole u64s");
        assert_eq!(pos.iter().collect::<Vec<_>>(), INDEX_ARRAYS[2 * level], "pos_{level}");
        assert_eq!(crd.iter().collect::<Vec<_>>(), INDEX_ARRAYS[2 * level + 1], "crd_{level}");
    }

    // All padding is zero: after the descriptor, and between buffers.
    assert!(bytes[HEADER_LEN + descriptor_len..DATA_START].iter().all(|&b| b == 0));
    for i in 0..6 {
        let end = container.buffer_range(i).expect("in table").end;
        let next = container.buffer_range(i + 1).expect("in table").start;
        assert!(bytes[end..next].iter().all(|&b| b == 0), "padding after buffer {i}");
    }

    // Lookup of (1, 1, 2) as in the spec: descends to leaf position 3, value 4.0.
    let mut p = 0usize;
    for (level, &q) in [1u64, 1, 2].iter().enumerate() {
        let pos = U64Array::new(container.buffer(csf::pos_buffer(level)).expect("pos")).expect("u64s");
        let crd = U64Array::new(container.buffer(csf::crd_buffer(level)).expect("crd")).expect("u64s");
        let (lo, hi) = (pos.get(p).expect("pos[p]") as usize, pos.get(p + 1).expect("pos[p+1]") as usize);
        let slice: Vec<u64> = crd.slice(lo, hi).iter().collect();
        p = lo + slice.binary_search(&q).expect("(1, 1, 2) is stored");
    }
    assert_eq!(p, 3);
    assert_eq!(values[p], 4.0);

    // Determinism: re-encoding the decoded container gives the same bytes.
    let slices: Vec<&[u8]> =
        (0..container.buffer_count()).map(|i| container.buffer(i).expect("buf")).collect();
    assert_eq!(encode(&d, &slices), bytes);
}
