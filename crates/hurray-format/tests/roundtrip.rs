//! Property tests: arbitrary valid descriptors round-trip byte for byte, the
//! decoder agrees with postcard's own deserializer, and no input, however
//! mangled, makes the decoder panic or hand out a buffer outside the input.

mod common;

use common::{data_section, descriptor_bytes, encode, header, planned, slices, Wire};
use hurray_format::limits::{BUFFER_ALIGNMENT, MAX_RANK};
use hurray_format::{
    align_up, BufferEntry, BufferTable, Container, DecodeError, Descriptor, DeviceTag, ElementType, FixedVec,
    Flags, LayoutTag, ModeOrder, QuantScheme, Quantization, Shape, ShardDescriptor, Statistics, HEADER_LEN,
};
use proptest::prelude::*;
use proptest::sample::Index;

// ------------------------------------------------------------- strategies

// The most buffers, bytes in a buffer and entries in a shape, mode order or
// shard offset of a generated container. Under Miri (`cargo xtask miri`),
// where every generated value costs thousands of times more, fewer and
// shorter: still several buffers, with lengths on both sides of the 64-byte
// alignment, and lists of several entries (the decode_errors tests take the
// rank and buffer-count limits themselves under Miri too).
const BUFFERS: usize = if cfg!(miri) { 4 } else { 20 };
const BUFFER_LEN: usize = if cfg!(miri) { 100 } else { 200 };
const LIST_LEN: usize = if cfg!(miri) { 12 } else { MAX_RANK };

fn element_type() -> impl Strategy<Value = ElementType> {
    prop::sample::select(ElementType::ALL)
}

/// Small values (one- or two-byte varints) as often as arbitrary ones.
fn int64() -> impl Strategy<Value = u64> {
    prop_oneof![0u64..300, any::<u64>(), Just(u64::MAX)]
}

fn int32() -> impl Strategy<Value = u32> {
    prop_oneof![0u32..300, any::<u32>(), Just(u32::MAX)]
}

/// Any bit pattern, so every NaN payload, infinities, zeros of both signs.
fn float() -> impl Strategy<Value = f64> {
    prop_oneof![any::<u64>().prop_map(f64::from_bits), Just(f64::NAN), Just(-0.0), prop::num::f64::ANY]
}

fn statistics() -> impl Strategy<Value = Statistics> {
    (int64(), float(), prop::option::of(float()), prop::option::of(float()))
        .prop_map(|(nnz, sparsity_ratio, min, max)| Statistics { nnz, sparsity_ratio, min, max })
}

fn quantization() -> impl Strategy<Value = Quantization> {
    (0u8..5, int32(), int64(), element_type(), prop::option::of(element_type())).prop_map(
        |(scheme, axis, block_size, scale_type, zero_point_type)| Quantization {
            scheme: QuantScheme::from_code(scheme).unwrap(),
            axis,
            block_size,
            scale_type,
            zero_point_type,
        },
    )
}

fn shard() -> impl Strategy<Value = ShardDescriptor> {
    (int64(), int64(), prop::collection::vec(int64(), 0..=LIST_LEN)).prop_map(
        |(shard_index, shard_count, off)| ShardDescriptor {
            shard_index,
            shard_count,
            shard_offset: FixedVec::from_slice(&off).unwrap(),
        },
    )
}

/// One buffer: its device tag, garbage offset/length for the encoder to
/// overwrite, and its contents.
fn buffer() -> impl Strategy<Value = (u8, u64, u64, Vec<u8>)> {
    (any::<u8>(), any::<u64>(), any::<u64>(), prop::collection::vec(any::<u8>(), 0..BUFFER_LEN))
}

/// A descriptor with every field arbitrary, and its buffers. The buffer table's
/// offsets and lengths are garbage: only the encoder's computed ones count.
fn descriptor_and_buffers() -> impl Strategy<Value = (Descriptor, Vec<Vec<u8>>)> {
    (
        element_type(),
        prop::collection::vec(int64(), 0..=LIST_LEN),
        prop::collection::vec(int32(), 0..=LIST_LEN),
        (int64(), int64()),
        prop::collection::vec(buffer(), 0..=BUFFERS),
        prop::option::of(statistics()),
        prop::option::of(quantization()),
        prop::option::of(shard()),
    )
        .prop_map(
            |(
                element_type,
                shape,
                mode_order,
                (byte_offset, nnz),
                buffers,
                statistics,
                quantization,
                shard,
            )| {
                let mut d = Descriptor::csf_unchecked(element_type, &shape, &mode_order, nnz).unwrap();
                d.byte_offset = byte_offset;
                for &(tag, offset, length, _) in &buffers {
                    d.buffers.push(BufferEntry { offset, length, device_tag: DeviceTag(tag) }).unwrap();
                }
                d.statistics = statistics;
                d.quantization = quantization;
                d.shard = shard;
                (d, buffers.into_iter().map(|(_, _, _, bytes)| bytes).collect())
            },
        )
}

/// A valid container and what it was made from.
fn valid_container() -> impl Strategy<Value = (Descriptor, Vec<Vec<u8>>, Vec<u8>)> {
    descriptor_and_buffers().prop_map(|(d, buffers)| {
        let bytes = encode(&d, &slices(&buffers));
        (d, buffers, bytes)
    })
}

// ---------------------------------------------------------------- checks

/// Decodes `bytes`; when it succeeds, checks that every buffer lies inside the
/// input in canonical placement and that the input is exactly what the
/// encoder would write for it (every accepted file is canonical).
fn decode_checked(bytes: &[u8]) -> Option<Container<'_>> {
    let c = Container::decode(bytes).ok()?;
    assert_eq!(c.as_bytes().len(), bytes.len());
    assert_eq!(c.data_start() % BUFFER_ALIGNMENT, 0);
    let mut previous_end = c.data_start();
    let mut buffers = Vec::new();
    for i in 0..c.buffer_count() {
        let range = c.buffer_range(i).unwrap();
        assert!(range.start <= range.end && range.end <= bytes.len(), "buffer {i}: {range:?}");
        assert_eq!(range.start, common::align(previous_end), "buffer {i} is not canonically placed");
        assert_eq!(c.buffer(i), Some(&bytes[range.clone()]));
        buffers.push(&bytes[range.clone()]);
        previous_end = range.end;
    }
    assert_eq!(c.buffer_range(c.buffer_count()), None);
    assert_eq!(c.buffer(c.buffer_count()), None);
    assert_eq!(encode(&c.descriptor(), &buffers), bytes, "an accepted input re-encodes differently");
    Some(c)
}

// ------------------------------------------------------- postcard mirror

/// The descriptor as postcard's own deserializer sees it, with std types in
/// wire order.
#[derive(Debug, serde::Deserialize, serde::Serialize)]
struct Mirror {
    layout: u8,
    element_type: u8,
    shape: Vec<u64>,
    flags: u32,
    byte_offset: u64,
    nnz: u64,
    mode_order: Vec<u32>,
    buffers: Vec<(u64, u64, u8)>,
    statistics: Option<(u64, f64, Option<f64>, Option<f64>)>,
    quantization: Option<(u8, u32, u64, u8, Option<u8>)>,
    shard: Option<(u64, u64, Vec<u64>)>,
}

impl Mirror {
    /// The descriptor these values make, or `None` when our decoder's rules
    /// (known codes, caps, flags agreeing with sections) reject them.
    fn to_descriptor(&self) -> Option<Descriptor> {
        if LayoutTag(self.layout) != LayoutTag::CSF || self.flags & !Flags::KNOWN != 0 {
            return None;
        }
        let mut buffers = BufferTable::new();
        for &(offset, length, tag) in &self.buffers {
            buffers.push(BufferEntry { offset, length, device_tag: DeviceTag(tag) }).ok()?;
        }
        let flags = Flags(self.flags);
        let agrees = |present: bool, bit| present == flags.contains(bit);
        if !agrees(self.statistics.is_some(), Flags::HAS_STATISTICS)
            || !agrees(self.quantization.is_some(), Flags::HAS_QUANTIZATION)
            || !agrees(self.shard.is_some(), Flags::IS_SHARD)
        {
            return None;
        }
        let quantization = match self.quantization {
            None => None,
            Some((scheme, axis, block_size, scale, zero_point)) => Some(Quantization {
                scheme: QuantScheme::from_code(scheme)?,
                axis,
                block_size,
                scale_type: ElementType::from_code(scale)?,
                zero_point_type: match zero_point {
                    None => None,
                    Some(code) => Some(ElementType::from_code(code)?),
                },
            }),
        };
        let shard = match &self.shard {
            None => None,
            Some((shard_index, shard_count, offsets)) => Some(ShardDescriptor {
                shard_index: *shard_index,
                shard_count: *shard_count,
                shard_offset: FixedVec::from_slice(offsets).ok()?,
            }),
        };
        Some(Descriptor {
            layout: LayoutTag(self.layout),
            element_type: ElementType::from_code(self.element_type)?,
            shape: Shape::from_slice(&self.shape).ok()?,
            byte_offset: self.byte_offset,
            nnz: self.nnz,
            mode_order: ModeOrder::from_slice(&self.mode_order).ok()?,
            buffers,
            statistics: self.statistics.map(|(nnz, sparsity_ratio, min, max)| Statistics {
                nnz,
                sparsity_ratio,
                min,
                max,
            }),
            quantization,
            shard,
        })
    }

    /// The data-section length of the canonical layout of this buffer table,
    /// or `None` when the table is not canonical (or absurdly large).
    fn canonical_data_len(&self) -> Option<usize> {
        let mut end = 0u64;
        for &(offset, length, _) in &self.buffers {
            if offset != align_up(end)? {
                return None;
            }
            end = offset.checked_add(length).filter(|&e| e <= 1 << 20)?;
        }
        usize::try_from(end).ok()
    }
}

/// A container around arbitrary descriptor bytes: header, the bytes, zero padding, `data`.
fn wrap(descriptor: &[u8], data: &[u8]) -> Vec<u8> {
    let mut out = header(descriptor.len() as u32);
    out.extend_from_slice(descriptor);
    out.resize(common::align(out.len()), 0);
    out.extend_from_slice(data);
    out
}

/// One edit of a byte string.
#[derive(Clone, Debug)]
enum Edit {
    Set(Index, u8),
    Insert(Index, u8),
    Remove(Index),
}

fn edit() -> impl Strategy<Value = Edit> {
    prop_oneof![
        4 => (any::<Index>(), any::<u8>()).prop_map(|(i, b)| Edit::Set(i, b)),
        1 => (any::<Index>(), any::<u8>()).prop_map(|(i, b)| Edit::Insert(i, b)),
        1 => any::<Index>().prop_map(Edit::Remove),
    ]
}

fn apply(bytes: &mut Vec<u8>, edit: &Edit) {
    match edit {
        Edit::Set(i, b) if !bytes.is_empty() => {
            let i = i.index(bytes.len());
            bytes[i] = *b;
        }
        Edit::Insert(i, b) => bytes.insert(i.index(bytes.len() + 1), *b),
        Edit::Remove(i) if !bytes.is_empty() => {
            bytes.remove(i.index(bytes.len()));
        }
        _ => {}
    }
}

// ------------------------------------------------------------- properties

proptest! {
    // Fewer cases under Miri (`cargo xtask miri`), where each costs thousands of times more.
    #![proptest_config(ProptestConfig { cases: if cfg!(miri) { 8 } else { 512 }, ..ProptestConfig::default() })]

    /// encode -> decode gives the descriptor with the encoder's offsets and
    /// the same buffers, and decode -> encode gives the same bytes.
    #[test]
    fn encode_decode_encode_is_identity((d, buffers, bytes) in valid_container()) {
        let expected = planned(&d, &slices(&buffers));
        // An independent hand-written encoding gives the same bytes.
        prop_assert_eq!(&Wire::of(&expected).container(&data_section(&slices(&buffers))), &bytes);

        let c = decode_checked(&bytes).unwrap();
        prop_assert_eq!(c.descriptor(), expected);
        prop_assert_eq!(c.descriptor().flags(), d.flags());
        prop_assert_eq!(c.buffer_count(), buffers.len());
        for (i, b) in buffers.iter().enumerate() {
            prop_assert_eq!(c.buffer(i), Some(&b[..]));
        }
        let again: Vec<&[u8]> = (0..c.buffer_count()).map(|i| c.buffer(i).unwrap()).collect();
        prop_assert_eq!(encode(&c.descriptor(), &again), bytes);
    }

    /// Encoding ignores the offsets and lengths in the given table.
    #[test]
    fn encoding_depends_only_on_device_tags((d, buffers) in descriptor_and_buffers()) {
        let bytes = encode(&d, &slices(&buffers));
        prop_assert_eq!(encode(&planned(&d, &slices(&buffers)), &slices(&buffers)), bytes);
    }

    /// postcard's own deserializer reads the same values as our decoder.
    #[test]
    fn postcard_agrees_with_the_decoder((_, _, bytes) in valid_container()) {
        let c = Container::decode(&bytes).unwrap();
        let (mirror, rest) = postcard::take_from_bytes::<Mirror>(descriptor_bytes(&bytes)).unwrap();
        prop_assert!(rest.is_empty());
        prop_assert_eq!(mirror.layout, LayoutTag::CSF.0);
        prop_assert_eq!(mirror.flags, c.descriptor().flags().0);
        prop_assert_eq!(mirror.to_descriptor(), Some(c.descriptor()));
        prop_assert_eq!(postcard::to_allocvec(&mirror).unwrap(), descriptor_bytes(&bytes));
    }

    /// On mangled descriptor bytes, we accept exactly what postcard reads in
    /// full, in canonical form, with values our rules allow.
    #[test]
    fn postcard_differential_on_mangled_descriptors(
        (_, _, bytes) in valid_container(),
        edits in prop::collection::vec(edit(), 1..4),
    ) {
        let mut desc = descriptor_bytes(&bytes).to_vec();
        for e in &edits {
            apply(&mut desc, e);
        }
        let theirs = postcard::take_from_bytes::<Mirror>(&desc).ok().filter(|(_, rest)| rest.is_empty());
        let data_len = theirs.as_ref().and_then(|(m, _)| m.canonical_data_len()).unwrap_or(0);
        let input = wrap(&desc, &vec![0; data_len]);
        let ours = decode_checked(&input);
        let expect_ok = theirs.as_ref().is_some_and(|(m, _)| {
            m.to_descriptor().is_some()
                && m.canonical_data_len().is_some()
                && postcard::to_allocvec(m).unwrap() == desc
        });
        prop_assert_eq!(ours.is_some(), expect_ok, "ours: {:?}", Container::decode(&input).err());
        if let Some(c) = ours {
            let (m, _) = theirs.unwrap();
            prop_assert_eq!(m.to_descriptor(), Some(c.descriptor()));
        }
    }

    /// Any bytes at all: no panic, and buffers inside the input when accepted.
    #[test]
    fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..1024)) {
        decode_checked(&bytes);
    }

    /// A valid header followed by arbitrary bytes reaches the descriptor reader.
    #[test]
    fn valid_header_then_arbitrary_bytes_never_panics(
        len in prop_oneof![0u32..300, any::<u32>()],
        rest in prop::collection::vec(any::<u8>(), 0..1024),
    ) {
        let mut bytes = header(len);
        bytes.extend(rest);
        decode_checked(&bytes);
    }

    /// A single changed byte anywhere in a valid container.
    #[test]
    fn single_byte_mutations_never_panic((_, _, bytes) in valid_container(), at in any::<Index>(), value in any::<u8>()) {
        let mut mutated = bytes.clone();
        let at = at.index(mutated.len());
        mutated[at] = value;
        decode_checked(&mutated);
    }

    /// Every strict prefix of a valid container is rejected, without
    /// panicking, as truncated: `Truncated` inside the header or descriptor,
    /// `TruncatedData` with the full length once the descriptor is complete.
    #[test]
    fn truncations_are_rejected((_, _, bytes) in valid_container(), cut in any::<Index>()) {
        let cut = cut.index(bytes.len());
        prop_assert!(decode_checked(&bytes[..cut]).is_none());
        let descriptor_end = HEADER_LEN + common::descriptor_len(&bytes);
        match Container::decode(&bytes[..cut]).unwrap_err() {
            DecodeError::Truncated { .. } => prop_assert!(cut < descriptor_end, "cut at {}", cut),
            DecodeError::TruncatedData { len, needed } => {
                prop_assert!(cut >= descriptor_end, "cut at {}", cut);
                prop_assert_eq!((len, needed), (cut as u64, bytes.len() as u64));
            }
            other => prop_assert!(false, "cut at {}: {:?}", cut, other),
        }
    }

    /// `encode_to_vec` (feature `alloc`) writes the same bytes as `encode_to_slice`.
    #[cfg(feature = "alloc")]
    #[test]
    fn encode_to_vec_matches_encode_to_slice((d, buffers, bytes) in valid_container()) {
        prop_assert_eq!(hurray_format::encode_to_vec(&d, &slices(&buffers)).unwrap(), bytes);
    }

    /// `encode_to_writer` (feature `std`) streams the same bytes as `encode_to_slice`.
    #[cfg(feature = "std")]
    #[test]
    fn encode_to_writer_matches_encode_to_slice((d, buffers, bytes) in valid_container()) {
        let mut out = Vec::new();
        let written = hurray_format::encode_to_writer(&d, &slices(&buffers), &mut out).unwrap();
        prop_assert_eq!(written, bytes.len() as u64);
        prop_assert_eq!(out, bytes);
    }

    /// `encode_streamed` (feature `std`) writes the same bytes from lengths and
    /// a callback, each buffer written in pieces as a spill file's copy would.
    #[cfg(feature = "std")]
    #[test]
    fn encode_streamed_matches_encode_to_slice((d, buffers, bytes) in valid_container()) {
        use std::io::Write;
        let lengths: Vec<u64> = buffers.iter().map(|b| b.len() as u64).collect();
        let mut out = Vec::new();
        let written = hurray_format::encode_streamed(&d, &lengths, &mut out, |index, w| {
            for piece in buffers[index].chunks(3) {
                w.write_all(piece)?;
            }
            Ok(buffers[index].len() as u64)
        })
        .unwrap();
        prop_assert_eq!(written, bytes.len() as u64);
        prop_assert_eq!(out, bytes);
    }
}

/// A streamed buffer that comes out shorter than announced is an error
/// naming the buffer, never a container with a shifted table.
#[cfg(feature = "std")]
#[test]
fn encode_streamed_rejects_a_buffer_of_another_length() {
    use std::io::Write;
    let d =
        hurray_format::Descriptor::csf(hurray_format::ElementType::F32, &[2, 2, 2], &[0, 1, 2], 1).unwrap();
    let lengths = vec![4u64; d.buffers.len()];
    let mut out = Vec::new();
    let err = hurray_format::encode_streamed(&d, &lengths, &mut out, |index, w| {
        let n = if index == 3 { 3 } else { 4 };
        w.write_all(&[0; 4][..n])?;
        Ok(n as u64)
    })
    .unwrap_err();
    assert!(
        matches!(
            err,
            hurray_format::EncodeError::BufferLengthMismatch { index: 3, announced: 4, written: 3 }
        ),
        "{err:?}"
    );
}
