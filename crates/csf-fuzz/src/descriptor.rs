//! Target `descriptor_roundtrip`: an arbitrary descriptor and buffers.

use arbitrary::{Result, Unstructured};
use hurray_format::limits::{MAX_BUFFERS, MAX_RANK};
use hurray_format::{
    align_up, BufferEntry, Container, Descriptor, DeviceTag, ElementType, FixedVec, QuantScheme,
    Quantization, ShardDescriptor, Statistics,
};

/// The longest buffer generated: lengths matter to the framing, contents do not.
const MAX_BUFFER_LEN: usize = 200;

/// A `u64` of a random bit length, so that varints of every length occur.
fn varint_u64(u: &mut Unstructured<'_>) -> Result<u64> {
    let bits = u.int_in_range(0..=64u32)?;
    let v: u64 = u.arbitrary()?;
    Ok(v.checked_shr(64 - bits).unwrap_or(0))
}

fn varint_u32(u: &mut Unstructured<'_>) -> Result<u32> {
    Ok(varint_u64(u)? as u32)
}

fn list<T: Copy + Default, const N: usize>(
    u: &mut Unstructured<'_>,
    mut item: impl FnMut(&mut Unstructured<'_>) -> Result<T>,
) -> Result<FixedVec<T, N>> {
    let len = u.int_in_range(0..=N)?;
    let mut out = FixedVec::new();
    for _ in 0..len {
        out.push(item(u)?).expect("len <= N");
    }
    Ok(out)
}

fn element_type(u: &mut Unstructured<'_>) -> Result<ElementType> {
    u.choose(ElementType::ALL).copied()
}

fn f64_bits(u: &mut Unstructured<'_>) -> Result<f64> {
    Ok(f64::from_bits(u.arbitrary()?))
}

fn option<T>(
    u: &mut Unstructured<'_>,
    f: impl FnOnce(&mut Unstructured<'_>) -> Result<T>,
) -> Result<Option<T>> {
    Ok(if u.arbitrary()? { Some(f(u)?) } else { None })
}

/// Any CSF descriptor within the caps, and its buffers. The table's offsets
/// and lengths are left arbitrary: the encoder must replace them.
pub(crate) fn generate(u: &mut Unstructured<'_>) -> Result<(Descriptor, Vec<Vec<u8>>)> {
    let mut d = Descriptor::csf_unchecked(element_type(u)?, &[], &[], varint_u64(u)?).expect("empty shape");
    d.shape = list::<u64, MAX_RANK>(u, varint_u64)?;
    d.byte_offset = varint_u64(u)?;
    d.mode_order = list::<u32, MAX_RANK>(u, varint_u32)?;
    d.buffers = list::<BufferEntry, MAX_BUFFERS>(u, |u| {
        Ok(BufferEntry {
            offset: varint_u64(u)?,
            length: varint_u64(u)?,
            device_tag: DeviceTag(u.arbitrary()?),
        })
    })?;
    d.statistics = option(u, |u| {
        Ok(Statistics {
            nnz: varint_u64(u)?,
            sparsity_ratio: f64_bits(u)?,
            min: option(u, f64_bits)?,
            max: option(u, f64_bits)?,
        })
    })?;
    d.quantization = option(u, |u| {
        Ok(Quantization {
            scheme: QuantScheme::from_code(u.int_in_range(0..=4)?).expect("codes 0..=4 are assigned"),
            axis: varint_u32(u)?,
            block_size: varint_u64(u)?,
            scale_type: element_type(u)?,
            zero_point_type: option(u, element_type)?,
        })
    })?;
    d.shard = option(u, |u| {
        Ok(ShardDescriptor {
            shard_index: varint_u64(u)?,
            shard_count: varint_u64(u)?,
            shard_offset: list::<u64, MAX_RANK>(u, varint_u64)?,
        })
    })?;
    let mut buffers = Vec::with_capacity(d.buffers.len());
    for _ in 0..d.buffers.len() {
        let len = u.int_in_range(0..=MAX_BUFFER_LEN)?;
        buffers.push(u.bytes(len).map(<[u8]>::to_vec).unwrap_or_else(|_| vec![0xa5; len]));
    }
    Ok((d, buffers))
}

/// Encode, decode, compare; re-encode; the other encoders; off-by-one lengths.
pub(crate) fn roundtrip(d: &Descriptor, buffers: &[Vec<u8>]) {
    let slices: Vec<&[u8]> = buffers.iter().map(Vec::as_slice).collect();
    let bytes = hurray_format::encode_to_vec(d, &slices).expect("a descriptor within the caps encodes");
    assert_eq!(hurray_format::encoded_len(d, &slices).ok(), Some(bytes.len()), "encoded_len");
    let mut written = Vec::new();
    let n = hurray_format::encode_to_writer(d, &slices, &mut written).expect("encode_to_writer");
    assert!(n as usize == bytes.len() && written == bytes, "encode_to_writer differs from encode_to_vec");
    if let Some(short) = bytes.len().checked_sub(1) {
        let mut out = vec![0u8; short];
        assert!(hurray_format::encode_to_slice(d, &slices, &mut out).is_err(), "wrote into a short slice");
    }

    let container = Container::decode(&bytes).unwrap_or_else(|e| panic!("an encoded descriptor fails: {e}"));
    let mut expected = *d;
    let mut end = 0u64;
    for (entry, buffer) in expected.buffers.as_mut_slice().iter_mut().zip(buffers) {
        entry.offset = align_up(end).expect("small");
        entry.length = buffer.len() as u64;
        end = entry.offset + entry.length;
    }
    assert_eq!(container.descriptor(), expected, "the descriptor did not survive the round trip");
    for (i, buffer) in buffers.iter().enumerate() {
        assert_eq!(container.buffer(i), Some(buffer.as_slice()), "buffer {i} did not survive the round trip");
    }
    let again = hurray_format::encode_to_vec(&container.descriptor(), &slices).expect("re-encode");
    assert!(again == bytes, "re-encoding the decoded descriptor changed the bytes");

    let shorter = &bytes[..bytes.len() - 1];
    assert!(Container::decode(shorter).is_err(), "a file one byte short decodes");
    let mut longer = bytes.clone();
    longer.push(0);
    assert!(Container::decode(&longer).is_err(), "a file with a trailing byte decodes");
}
