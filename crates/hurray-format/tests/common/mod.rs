//! Helpers shared by the integration tests: encoding without the `alloc`
//! feature, and a hand-written descriptor encoder (`Wire`) that builds the
//! descriptor field by field so that tests can replace any field with
//! arbitrary bytes and know the exact offset of every field.

// Each test binary uses a different subset of these helpers.
#![allow(dead_code)]

use hurray_format::limits::BUFFER_ALIGNMENT;
use hurray_format::{
    align_up, encode_to_slice, encoded_len, BufferEntry, Descriptor, DeviceTag, ElementType, QuantScheme,
    Quantization, ShardDescriptor, Statistics, HEADER_LEN, MAGIC,
};

/// Encodes with `encode_to_slice` into a buffer sized by `encoded_len`
/// (integration tests build the crate without its `alloc` feature).
pub fn encode(descriptor: &Descriptor, buffers: &[&[u8]]) -> Vec<u8> {
    let len = encoded_len(descriptor, buffers).unwrap();
    let mut out = vec![0xAA; len];
    let written = encode_to_slice(descriptor, buffers, &mut out).unwrap();
    assert_eq!(written, len, "encode_to_slice and encoded_len disagree");
    out
}

/// Borrows each owned buffer as a slice.
pub fn slices(buffers: &[Vec<u8>]) -> Vec<&[u8]> {
    buffers.iter().map(Vec::as_slice).collect()
}

/// The descriptor length recorded in a container's header (bytes 12..16).
pub fn descriptor_len(container: &[u8]) -> usize {
    u32::from_le_bytes(container[12..16].try_into().unwrap()) as usize
}

/// The descriptor bytes of a container (bytes `16..16 + descriptor_len`).
pub fn descriptor_bytes(container: &[u8]) -> &[u8] {
    &container[HEADER_LEN..HEADER_LEN + descriptor_len(container)]
}

/// `n` rounded up to the buffer alignment.
pub fn align(n: usize) -> usize {
    n.next_multiple_of(BUFFER_ALIGNMENT)
}

/// The buffer table the encoder must compute for `buffers`, computed here
/// independently: each buffer at the first aligned offset after the previous one.
pub fn canonical_entries(device_tags: &[DeviceTag], buffers: &[&[u8]]) -> Vec<BufferEntry> {
    assert_eq!(device_tags.len(), buffers.len());
    let mut end = 0u64;
    device_tags
        .iter()
        .zip(buffers)
        .map(|(&device_tag, bytes)| {
            let offset = align_up(end).unwrap();
            end = offset + bytes.len() as u64;
            BufferEntry { offset, length: bytes.len() as u64, device_tag }
        })
        .collect()
}

/// `descriptor` with its buffer table replaced by the canonical one for `buffers`.
pub fn planned(descriptor: &Descriptor, buffers: &[&[u8]]) -> Descriptor {
    let tags: Vec<DeviceTag> = descriptor.buffers.iter().map(|e| e.device_tag).collect();
    let mut out = *descriptor;
    out.buffers.as_mut_slice().copy_from_slice(&canonical_entries(&tags, buffers));
    out
}

/// The data section holding `buffers` in canonical placement, zero padded between.
pub fn data_section(buffers: &[&[u8]]) -> Vec<u8> {
    let mut data = Vec::new();
    for bytes in buffers {
        data.resize(align(data.len()), 0);
        data.extend_from_slice(bytes);
    }
    data
}

/// The 16-byte header for a descriptor of `descriptor_len` bytes.
pub fn header(descriptor_len: u32) -> Vec<u8> {
    let mut out = MAGIC.to_vec();
    out.extend_from_slice(&1u16.to_le_bytes());
    out.extend_from_slice(&[0, 0]);
    out.extend_from_slice(&descriptor_len.to_le_bytes());
    out
}

/// The canonical (shortest) unsigned LEB128 varint of `value`.
pub fn varint(mut value: u64) -> Vec<u8> {
    let mut out = Vec::new();
    loop {
        let low = (value & 0x7f) as u8;
        value >>= 7;
        if value == 0 {
            out.push(low);
            return out;
        }
        out.push(low | 0x80);
    }
}

/// A postcard sequence: the length as a varint, then each item's bytes.
pub fn seq<T>(items: &[T], item: impl Fn(&T) -> Vec<u8>) -> Vec<u8> {
    let mut out = varint(items.len() as u64);
    for value in items {
        out.extend(item(value));
    }
    out
}

/// A sequence of varint-encoded integers.
pub fn varint_seq<T: Copy + Into<u64>>(items: &[T]) -> Vec<u8> {
    seq(items, |&v| varint(v.into()))
}

/// A postcard option: tag 0, or tag 1 then the body.
pub fn option<T>(value: Option<&T>, body: impl Fn(&T) -> Vec<u8>) -> Vec<u8> {
    match value {
        None => vec![0],
        Some(v) => {
            let mut out = vec![1];
            out.extend(body(v));
            out
        }
    }
}

/// One buffer-table row.
pub fn entry_bytes(offset: u64, length: u64, device_tag: u8) -> Vec<u8> {
    let mut out = varint(offset);
    out.extend(varint(length));
    out.push(device_tag);
    out
}

/// The body of a statistics section (without its option tag).
pub fn statistics_body(s: &Statistics) -> Vec<u8> {
    let mut out = varint(s.nnz);
    out.extend(s.sparsity_ratio.to_le_bytes());
    out.extend(option(s.min.as_ref(), |v| v.to_le_bytes().to_vec()));
    out.extend(option(s.max.as_ref(), |v| v.to_le_bytes().to_vec()));
    out
}

/// The body of a quantization section (without its option tag).
pub fn quantization_body(q: &Quantization) -> Vec<u8> {
    let mut out = vec![q.scheme as u8];
    out.extend(varint(q.axis.into()));
    out.extend(varint(q.block_size));
    out.push(q.scale_type.code());
    out.extend(option(q.zero_point_type.as_ref(), |t| vec![t.code()]));
    out
}

/// The body of a shard section (without its option tag).
pub fn shard_body(s: &ShardDescriptor) -> Vec<u8> {
    let mut out = varint(s.shard_index);
    out.extend(varint(s.shard_count));
    out.extend(varint_seq(&s.shard_offset));
    out
}

/// The descriptor's fields in wire order.
pub const FIELDS: [&str; 11] = [
    "layout",
    "element_type",
    "shape",
    "flags",
    "byte_offset",
    "nnz",
    "mode_order",
    "buffers",
    "statistics",
    "quantization",
    "shard",
];

/// A descriptor as raw wire bytes, one entry per field in wire order. Any
/// field can be replaced by arbitrary bytes; offsets are then recomputed.
#[derive(Clone, Debug)]
pub struct Wire {
    parts: Vec<(&'static str, Vec<u8>)>,
}

impl Wire {
    /// The canonical encoding of `d` (must equal what postcard writes).
    pub fn of(d: &Descriptor) -> Self {
        let parts = vec![
            ("layout", vec![d.layout.0]),
            ("element_type", vec![d.element_type.code()]),
            ("shape", varint_seq(&d.shape)),
            ("flags", varint(d.flags().0.into())),
            ("byte_offset", varint(d.byte_offset)),
            ("nnz", varint(d.nnz)),
            ("mode_order", varint_seq(&d.mode_order)),
            ("buffers", seq(&d.buffers, |e| entry_bytes(e.offset, e.length, e.device_tag.0))),
            ("statistics", option(d.statistics.as_ref(), statistics_body)),
            ("quantization", option(d.quantization.as_ref(), quantization_body)),
            ("shard", option(d.shard.as_ref(), shard_body)),
        ];
        Self { parts }
    }

    fn index(&self, field: &str) -> usize {
        self.parts.iter().position(|(name, _)| *name == field).unwrap_or_else(|| panic!("no field {field}"))
    }

    /// Replaces a field's bytes.
    pub fn set(mut self, field: &str, bytes: impl Into<Vec<u8>>) -> Self {
        let i = self.index(field);
        self.parts[i].1 = bytes.into();
        self
    }

    /// Replaces the buffer table with `(offset, length, device_tag)` rows.
    pub fn with_buffers(self, rows: &[(u64, u64, u8)]) -> Self {
        self.set("buffers", seq(rows, |&(o, l, t)| entry_bytes(o, l, t)))
    }

    /// A field's current bytes.
    pub fn get(&self, field: &str) -> &[u8] {
        &self.parts[self.index(field)].1
    }

    /// The byte offset of `field` in the container (the descriptor starts at byte 16).
    pub fn offset(&self, field: &str) -> usize {
        HEADER_LEN + self.parts[..self.index(field)].iter().map(|(_, b)| b.len()).sum::<usize>()
    }

    /// The encoded descriptor length.
    pub fn len(&self) -> usize {
        self.parts.iter().map(|(_, b)| b.len()).sum()
    }

    /// The offset just past the descriptor in the container.
    pub fn end(&self) -> usize {
        HEADER_LEN + self.len()
    }

    /// The descriptor bytes.
    pub fn bytes(&self) -> Vec<u8> {
        self.parts.iter().flat_map(|(_, b)| b.iter().copied()).collect()
    }

    /// A container: header, these descriptor bytes, zero padding, `data`.
    pub fn container(&self, data: &[u8]) -> Vec<u8> {
        let mut out = header(self.len() as u32);
        out.extend(self.bytes());
        out.resize(align(out.len()), 0);
        out.extend_from_slice(data);
        out
    }
}

/// A rank-3 descriptor with every optional section present, and its buffers:
/// the CSF spec's example tensor plus one quantization-scale buffer. Buffer
/// lengths are not multiples of the alignment, so there is padding between them.
pub fn sample() -> (Descriptor, Vec<Vec<u8>>) {
    let u64s = |v: &[u64]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
    let buffers = vec![
        [1.0f32, 2.0, 3.0, 4.0].iter().flat_map(|x| x.to_le_bytes()).collect(),
        u64s(&[0, 2]),
        u64s(&[0, 1]),
        u64s(&[0, 2, 3]),
        u64s(&[0, 2, 1]),
        u64s(&[0, 1, 2, 4]),
        u64s(&[1, 3, 0, 2]),
        0.5f32.to_le_bytes().to_vec(),
    ];
    let mut d = Descriptor::csf_unchecked(ElementType::F32, &[2, 3, 4], &[0, 1, 2], 4).unwrap();
    for i in 0..buffers.len() {
        d.buffers.push(BufferEntry { offset: 0, length: 0, device_tag: DeviceTag(i as u8 % 3) }).unwrap();
    }
    d.statistics = Some(Statistics { nnz: 4, sparsity_ratio: 20.0 / 24.0, min: Some(1.0), max: Some(4.0) });
    d.quantization = Some(Quantization {
        scheme: QuantScheme::PerChannel,
        axis: 1,
        block_size: 0,
        scale_type: ElementType::F32,
        zero_point_type: Some(ElementType::I8),
    });
    d.shard = Some(ShardDescriptor {
        shard_index: 0,
        shard_count: 1,
        shard_offset: hurray_format::FixedVec::from_slice(&[0, 0, 0]).unwrap(),
    });
    let planned = planned(&d, &slices(&buffers));
    (planned, buffers)
}
