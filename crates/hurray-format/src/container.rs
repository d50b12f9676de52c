//! The container framing: header, descriptor, and the canonical buffer layout.
//!
//! ```text
//! 0       8        10         12              16            16+D      data_start
//! | magic | version | reserved | descriptor_len | descriptor | 0-padding | buffers ... |
//! ```
//!
//! `data_start` is `16 + D` rounded up to [`BUFFER_ALIGNMENT`]. Buffer offsets
//! count from `data_start`. Buffers sit in table order, each at the first
//! aligned offset after the previous one, with zero padding between: there is
//! exactly one valid placement for a given list of buffer lengths, so holes,
//! overlaps and trailing bytes (the raw material of polyglot files) are errors.

use core::ops::Range;

use crate::descriptor::{BufferEntry, Descriptor, Flags, Quantization, ShardDescriptor, Statistics};
use crate::element::ElementType;
use crate::error::{DecodeError, EncodeError};
use crate::layout::LayoutTag;
use crate::limits::{BUFFER_ALIGNMENT, MAX_DESCRIPTOR_LEN};
use crate::lists::{BufferEntries, Buffers, Varints};
use crate::wire::{decode_descriptor, Header};

/// The eight magic bytes that open every Hurray file. Like PNG's, the non-ASCII
/// first byte and the CR LF / SUB / LF tail catch text-mode and 7-bit mangling.
pub const MAGIC: [u8; 8] = [0x89, b'H', b'R', b'Y', 0x0d, 0x0a, 0x1a, 0x0a];

/// The container format version this crate reads and writes.
pub const FORMAT_VERSION: u16 = 1;

/// Length of the fixed header: magic, version, reserved, descriptor length.
pub const HEADER_LEN: usize = 16;

#[cfg(feature = "std")]
const ZEROS: [u8; BUFFER_ALIGNMENT] = [0; BUFFER_ALIGNMENT];

/// Rounds `n` up to the buffer alignment, or `None` on overflow.
pub const fn align_up(n: u64) -> Option<u64> {
    let a = BUFFER_ALIGNMENT as u64;
    match n.checked_add(a - 1) {
        Some(v) => Some(v / a * a),
        None => None,
    }
}

/// A decoded container borrowing its input: the buffers are sub-slices of the
/// bytes passed to [`Container::decode`], never copies.
///
/// A `Container` only promises that the framing is sound (every buffer lies
/// inside the input, aligned, in canonical order). Whether the buffers form a
/// valid CSF tensor is `csf-validate`'s question.
///
/// It keeps the descriptor's fixed fields and reads its lists (the shape, the
/// mode order, the buffer table) from the input when asked ([`Container::shape`],
/// [`Container::buffer_entries`], ...), so that it is small: 160 bytes on a
/// 32-bit target, where a [`Descriptor`] with its lists copied at their
/// caps is 4.7 KiB. [`Container::descriptor`] builds that whole descriptor,
/// for code that wants it as a value (to change it and encode it again, say).
#[derive(Clone, Copy, Debug)]
pub struct Container<'a> {
    header: Header,
    bytes: &'a [u8],
    data_start: usize,
}

impl<'a> Container<'a> {
    /// Decodes and checks the framing of a container. Never panics, never allocates.
    ///
    /// ```
    /// use hurray_format::{encode_to_slice, Container, Descriptor, ElementType};
    ///
    /// // An empty [2, 3, 4] tensor of u8: seven buffers (values, pos/crd per level).
    /// let header = Descriptor::csf(ElementType::U8, &[2, 3, 4], &[0, 1, 2], 0)?;
    /// let (pos0, pos) = ([0u8; 16], [0u8; 8]); // pos_0 = [0, 0], pos_1 = pos_2 = [0]
    /// let buffers: [&[u8]; 7] = [&[], &pos0, &[], &pos, &[], &pos, &[]];
    /// let mut file = [0u8; 512];
    /// let len = encode_to_slice(&header, &buffers, &mut file)?;
    ///
    /// let container = Container::decode(&file[..len])?;
    /// assert!(container.shape().eq([2, 3, 4]));
    /// assert_eq!(container.buffer_count(), 7);
    /// assert_eq!(container.descriptor().mode_order.as_slice(), &[0, 1, 2]); // the whole descriptor
    /// assert_eq!(container.buffer(1), Some(&pos0[..])); // pos_0, in place
    /// assert!(Container::decode(&file[..len - 1]).is_err(), "a truncated file is refused");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// Any [`DecodeError`]: every one names the byte offset (or buffer index) at fault.
    pub fn decode(bytes: &'a [u8]) -> Result<Self, DecodeError> {
        let magic_len = bytes.len().min(MAGIC.len());
        if bytes.get(..magic_len) != MAGIC.get(..magic_len) {
            return Err(DecodeError::BadMagic);
        }
        let header = bytes.get(..HEADER_LEN).ok_or(DecodeError::Truncated {
            offset: 0,
            needed: HEADER_LEN,
            available: bytes.len(),
        })?;
        let field = |at: usize| -> [u8; 4] {
            let mut raw = [0u8; 4];
            if let Some(src) = header.get(at..at + 4) {
                raw.copy_from_slice(src);
            }
            raw
        };
        let [v0, v1, r0, r1] = field(8);
        let version = u16::from_le_bytes([v0, v1]);
        if version != FORMAT_VERSION {
            return Err(DecodeError::UnsupportedVersion { found: version, supported: FORMAT_VERSION });
        }
        let reserved = u16::from_le_bytes([r0, r1]);
        if reserved != 0 {
            return Err(DecodeError::ReservedHeaderBits { found: reserved });
        }
        let descriptor_len = u32::from_le_bytes(field(12));
        // Compare before converting: on a 16-bit target `as usize` would truncate.
        let len = usize::try_from(descriptor_len)
            .ok()
            .filter(|&len| len <= MAX_DESCRIPTOR_LEN)
            .ok_or(DecodeError::DescriptorTooLong { len: descriptor_len, max: MAX_DESCRIPTOR_LEN })?;
        let descriptor_end = HEADER_LEN + len;
        let descriptor_bytes = bytes.get(HEADER_LEN..descriptor_end).ok_or(DecodeError::Truncated {
            offset: HEADER_LEN,
            needed: len,
            available: bytes.len() - HEADER_LEN,
        })?;
        let header = decode_descriptor(descriptor_bytes, HEADER_LEN)?;
        // `descriptor_end` is at most 16 + 8 KiB, so the rounding cannot overflow.
        let data_start = descriptor_end.next_multiple_of(BUFFER_ALIGNMENT);
        let container = Self { header, bytes, data_start };

        // Placement is canonical (docs/format.md §4.3), so a sound table fixes
        // the file's exact length. The table is checked first, without reading
        // the data section; then the length, so that a file cut short is
        // reported as truncated (with both lengths) rather than as whichever
        // buffer or padding the cut happens to fall in; then the padding bytes,
        // which by then are all present.
        let needed = needed_len(container.buffer_entries(), data_start as u64)?;
        let input_len = bytes.len();
        let file_end = match usize::try_from(needed) {
            Ok(file_end) if file_end <= input_len => file_end,
            // `as u64` is lossless: usize is at most 64 bits wide.
            _ => return Err(DecodeError::TruncatedData { len: input_len as u64, needed }),
        };
        if input_len > file_end {
            return Err(DecodeError::TrailingBytes { offset: file_end, count: input_len - file_end });
        }
        check_padding(bytes, container.buffer_entries(), descriptor_end, data_start)?;
        Ok(container)
    }

    /// The decoded descriptor, built whole from the input: its lists copied
    /// into fixed-capacity arrays (4.7 KiB on a 32-bit target, so a
    /// microcontroller reads the fields it needs through the accessors
    /// instead: [`Container::shape`], [`Container::buffer_entries`], ...).
    pub fn descriptor(&self) -> Descriptor {
        let mut d = Descriptor::empty();
        self.fill(&mut d);
        d
    }

    /// Fills `d` ([`Descriptor::empty`]) in place; out of line, so that the
    /// descriptor is built where [`Container::descriptor`] returns it.
    #[inline(never)]
    fn fill(&self, d: &mut Descriptor) {
        d.layout = self.header.layout;
        d.element_type = self.header.element_type;
        d.byte_offset = self.header.byte_offset;
        d.nnz = self.header.nnz;
        d.statistics = self.header.statistics;
        d.quantization = self.header.quantization;
        // Decoding checked every length against its list's capacity, so no
        // push fails.
        for extent in self.shape() {
            let _ = d.shape.push(extent);
        }
        for dim in self.mode_order() {
            let _ = d.mode_order.push(dim);
        }
        for entry in self.buffer_entries() {
            let _ = d.buffers.push(entry);
        }
        if let Some((shard_index, shard_count, offsets)) = self.header.shard {
            let shard = d.shard.insert(ShardDescriptor {
                shard_index,
                shard_count,
                shard_offset: Default::default(),
            });
            for offset in Varints::new(offsets, self.bytes) {
                let _ = shard.shard_offset.push(offset);
            }
        }
    }

    /// The layout; always [`LayoutTag::CSF`] for a decoded container.
    pub fn layout(&self) -> LayoutTag {
        self.header.layout
    }

    /// The element type of the values buffer.
    pub fn element_type(&self) -> ElementType {
        self.header.element_type
    }

    /// The rank: the number of logical dimensions (the shape's length).
    pub fn rank(&self) -> usize {
        self.header.shape.len
    }

    /// The logical shape, outermost dimension first, read from the input.
    pub fn shape(&self) -> Varints<'a> {
        Varints::new(self.header.shape, self.bytes)
    }

    /// The CSF mode order, read from the input: `mode_order[L]` is the
    /// logical dimension stored at tree level `L`. The entries are `u32`s on
    /// the wire (decoding checked that each fits); they are given as `u32`.
    pub fn mode_order(&self) -> core::iter::Map<Varints<'a>, fn(u64) -> u32> {
        // Every entry fits: decoding read each as a 32-bit varint.
        Varints::new(self.header.mode_order, self.bytes).map(|dim| dim as u32)
    }

    /// The common header's `byte_offset`; CSF requires 0.
    pub fn byte_offset(&self) -> u64 {
        self.header.byte_offset
    }

    /// The number of stored values (leaves).
    pub fn nnz(&self) -> u64 {
        self.header.nnz
    }

    /// The flag word, as the optional sections present imply it.
    pub fn flags(&self) -> Flags {
        let mut bits = 0;
        if self.header.statistics.is_some() {
            bits |= Flags::HAS_STATISTICS;
        }
        if self.header.quantization.is_some() {
            bits |= Flags::HAS_QUANTIZATION;
        }
        if self.header.shard.is_some() {
            bits |= Flags::IS_SHARD;
        }
        Flags(bits)
    }

    /// The statistics section, present iff [`Flags::HAS_STATISTICS`].
    pub fn statistics(&self) -> Option<Statistics> {
        self.header.statistics
    }

    /// The quantization section, present iff [`Flags::HAS_QUANTIZATION`].
    pub fn quantization(&self) -> Option<Quantization> {
        self.header.quantization
    }

    /// The bytes the container was decoded from, whole (header, descriptor,
    /// padding and data section).
    pub fn as_bytes(&self) -> &'a [u8] {
        self.bytes
    }

    /// Offset of the data section (the first buffer) in the input.
    pub fn data_start(&self) -> usize {
        self.data_start
    }

    /// The number of buffers in the table.
    pub fn buffer_count(&self) -> usize {
        self.header.buffers.len
    }

    /// The rows of the buffer table, in buffer-index order, read from the input.
    pub fn buffer_entries(&self) -> BufferEntries<'a> {
        BufferEntries::new(self.header.buffers, self.bytes)
    }

    /// Row `index` of the buffer table, or `None` past it. Reads the rows
    /// before it: `O(index)`; [`Container::buffers`] and
    /// [`Container::buffer_entries`] give every row in one pass.
    pub fn buffer_entry(&self, index: usize) -> Option<BufferEntry> {
        self.buffer_entries().nth(index)
    }

    /// The byte range of buffer `index` in the input, or `None` past the
    /// table. `O(index)`, as [`Container::buffer_entry`].
    pub fn buffer_range(&self, index: usize) -> Option<Range<usize>> {
        let entry = self.buffer_entry(index)?;
        // Decoding proved `offset + length <= data.len()`, so these fit in usize.
        let start = self.data_start + entry.offset as usize;
        Some(start..start + entry.length as usize)
    }

    /// The bytes of buffer `index`, borrowed from the input, or `None` past
    /// the table. `O(index)`, as [`Container::buffer_entry`].
    pub fn buffer(&self, index: usize) -> Option<&'a [u8]> {
        self.bytes.get(self.buffer_range(index)?)
    }

    /// Every buffer, in buffer-index order, borrowed from the input.
    pub fn buffers(&self) -> Buffers<'a> {
        Buffers { entries: self.buffer_entries(), data: self.bytes.get(self.data_start..).unwrap_or(&[]) }
    }
}

/// Checks the buffer table against the canonical placement (docs/format.md
/// §4.4, checks 1-4) and returns the file length it implies: the end of the
/// last buffer from the start of the file (`data_start` with no buffers).
/// Reads nothing but the table, and computes every position from the start
/// of the file with checked arithmetic: a hostile table can name starts and
/// ends beyond `u64`.
fn needed_len(entries: BufferEntries<'_>, data_start: u64) -> Result<u64, DecodeError> {
    // The end of the previous buffer, from the start of the file.
    let mut end = data_start;
    for (index, entry) in entries.enumerate() {
        let overflow = DecodeError::BufferEndOverflow {
            index,
            data_start,
            table_offset: entry.offset,
            length: entry.length,
        };
        // A start past `u64` is check 4's fault met early (the end is past it
        // too); caught first so that every other error can name the start.
        let offset = data_start.checked_add(entry.offset).ok_or(overflow)?;
        // `data_start` is a multiple of the alignment, so this is the table
        // offset's alignment too.
        if offset % BUFFER_ALIGNMENT as u64 != 0 {
            return Err(DecodeError::BufferMisaligned { index, offset, alignment: BUFFER_ALIGNMENT });
        }
        if offset < end {
            return Err(DecodeError::BufferOverlap { index, offset, previous_end: end });
        }
        // `None` only when no multiple of the alignment at or after `end`
        // fits a `u64`; `offset` is one, so rounding up cannot fail here.
        if let Some(expected) = align_up(end).filter(|&expected| offset > expected) {
            return Err(DecodeError::BufferGap { index, offset, expected });
        }
        end = offset.checked_add(entry.length).ok_or(overflow)?;
    }
    Ok(end)
}

/// Checks that every padding byte is zero: between the descriptor and
/// `data_start`, and between buffers (docs/format.md §4.2, §4.4 check 5).
/// Called once the file is known to be exactly as long as its table says, so
/// every range here lies inside `bytes`.
fn check_padding(
    bytes: &[u8],
    entries: BufferEntries<'_>,
    descriptor_end: usize,
    data_start: usize,
) -> Result<(), DecodeError> {
    check_zero(bytes.get(descriptor_end..data_start).unwrap_or(&[]), descriptor_end)?;
    let data = bytes.get(data_start..).unwrap_or(&[]);
    let mut end = 0usize;
    for entry in entries {
        // In range, and so in usize: `end <= offset <= offset + length <= data.len()`.
        let offset = usize::try_from(entry.offset).unwrap_or(usize::MAX);
        let length = usize::try_from(entry.length).unwrap_or(usize::MAX);
        check_zero(data.get(end..offset).unwrap_or(&[]), data_start.saturating_add(end))?;
        end = offset.saturating_add(length);
    }
    Ok(())
}

fn check_zero(bytes: &[u8], offset: usize) -> Result<(), DecodeError> {
    match bytes.iter().position(|&b| b != 0) {
        Some(i) => Err(DecodeError::NonZeroPadding { offset: offset + i }),
        None => Ok(()),
    }
}

/// The descriptor with its buffer table laid out for `buffers`, and the sizes
/// that follow from it.
struct Plan {
    descriptor: Descriptor,
    descriptor_len: usize,
    data_start: usize,
    total_len: usize,
}

fn plan(descriptor: &Descriptor, buffers: &[&[u8]]) -> Result<Plan, EncodeError> {
    plan_lengths(descriptor, buffers.len(), buffers.iter().map(|b| b.len() as u64))
}

/// [`plan`] from the buffers' lengths alone (`count` of them).
fn plan_lengths(
    descriptor: &Descriptor,
    count: usize,
    lengths: impl Iterator<Item = u64>,
) -> Result<Plan, EncodeError> {
    if descriptor.layout != LayoutTag::CSF {
        return Err(EncodeError::UnsupportedLayout(descriptor.layout));
    }
    if descriptor.buffers.len() != count {
        return Err(EncodeError::BufferCountMismatch { table: descriptor.buffers.len(), given: count });
    }
    let mut planned = *descriptor;
    let mut end = 0u64;
    for (entry, length) in planned.buffers.as_mut_slice().iter_mut().zip(lengths) {
        entry.offset = align_up(end).ok_or(EncodeError::TooLarge)?;
        entry.length = length;
        end = entry.offset.checked_add(entry.length).ok_or(EncodeError::TooLarge)?;
    }
    let descriptor_len = postcard::serialize_with_flavor(&planned, postcard::ser_flavors::Size::default())
        .map_err(EncodeError::Serialize)?;
    if descriptor_len > MAX_DESCRIPTOR_LEN {
        return Err(EncodeError::DescriptorTooLong { max: MAX_DESCRIPTOR_LEN });
    }
    let data_start = (HEADER_LEN + descriptor_len).next_multiple_of(BUFFER_ALIGNMENT);
    let total_len =
        usize::try_from(end).ok().and_then(|end| end.checked_add(data_start)).ok_or(EncodeError::TooLarge)?;
    Ok(Plan { descriptor: planned, descriptor_len, data_start, total_len })
}

/// The byte length of the container that [`encode_to_slice`] would write.
///
/// # Errors
/// As [`encode_to_slice`], except [`EncodeError::OutputTooSmall`].
pub fn encoded_len(descriptor: &Descriptor, buffers: &[&[u8]]) -> Result<usize, EncodeError> {
    Ok(plan(descriptor, buffers)?.total_len)
}

/// Writes a container into `out` without allocating and returns its length.
///
/// The buffer table's `offset` and `length` fields are computed here from
/// `buffers` (the canonical layout); only its `device_tag`s are taken from
/// `descriptor`. The same descriptor and buffers always give the same bytes.
///
/// # Errors
/// [`EncodeError::BufferCountMismatch`] when the table and `buffers` differ in
/// length, [`EncodeError::UnsupportedLayout`] for a non-CSF descriptor,
/// [`EncodeError::OutputTooSmall`] when `out` is short.
pub fn encode_to_slice(
    descriptor: &Descriptor,
    buffers: &[&[u8]],
    out: &mut [u8],
) -> Result<usize, EncodeError> {
    let plan = plan(descriptor, buffers)?;
    let available = out.len();
    let out = out
        .get_mut(..plan.total_len)
        .ok_or(EncodeError::OutputTooSmall { needed: plan.total_len, available })?;
    out.fill(0);
    let (head, data) = out.split_at_mut(plan.data_start);
    write_head(&plan, head)?;
    for (entry, bytes) in plan.descriptor.buffers.iter().zip(buffers) {
        let start = entry.offset as usize;
        if let Some(dst) = data.get_mut(start..start + bytes.len()) {
            dst.copy_from_slice(bytes);
        }
    }
    Ok(plan.total_len)
}

/// Writes header, descriptor and padding into `head` (exactly `data_start` bytes, zeroed).
fn write_head(plan: &Plan, head: &mut [u8]) -> Result<(), EncodeError> {
    let too_small = EncodeError::OutputTooSmall { needed: plan.data_start, available: head.len() };
    let (header, rest) = head.split_at_mut_checked(HEADER_LEN).ok_or(too_small)?;
    let mut fixed = [0u8; HEADER_LEN];
    for (dst, src) in fixed.iter_mut().zip(
        MAGIC
            .iter()
            .chain(&FORMAT_VERSION.to_le_bytes())
            .chain(&[0, 0]) // reserved
            .chain(&(plan.descriptor_len as u32).to_le_bytes()),
    ) {
        *dst = *src;
    }
    header.copy_from_slice(&fixed);
    let written = postcard::to_slice(&plan.descriptor, rest).map_err(EncodeError::Serialize)?;
    debug_assert_eq!(written.len(), plan.descriptor_len);
    Ok(())
}

/// Encodes a container into a new `Vec`. See [`encode_to_slice`].
///
/// ```
/// use hurray_format::{encode_to_vec, Container, Descriptor, ElementType};
///
/// let le = |v: &[u64]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
/// // One non-zero, 7.0 at (1, 2, 3) of a [2, 3, 4] f32 tensor.
/// let buffers = [7.0f32.to_le_bytes().to_vec(), le(&[0, 1]), le(&[1]), le(&[0, 1]), le(&[2]), le(&[0, 1]), le(&[3])];
/// let slices: Vec<&[u8]> = buffers.iter().map(Vec::as_slice).collect();
/// let header = Descriptor::csf(ElementType::F32, &[2, 3, 4], &[0, 1, 2], 1)?;
/// let bytes = encode_to_vec(&header, &slices)?;
/// assert_eq!(encode_to_vec(&header, &slices)?, bytes, "deterministic");
/// assert_eq!(Container::decode(&bytes)?.buffer(6), Some(&le(&[3])[..]));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Errors
/// As [`encode_to_slice`].
#[cfg(feature = "alloc")]
pub fn encode_to_vec(descriptor: &Descriptor, buffers: &[&[u8]]) -> Result<alloc::vec::Vec<u8>, EncodeError> {
    let mut out = alloc::vec![0u8; encoded_len(descriptor, buffers)?];
    encode_to_slice(descriptor, buffers, &mut out)?;
    Ok(out)
}

/// Streams a container into `writer`, buffer by buffer, without building it in
/// memory, and returns the number of bytes written. See [`encode_to_slice`].
///
/// # Errors
/// As [`encode_to_slice`], and [`EncodeError::Io`] when a write fails.
#[cfg(feature = "std")]
pub fn encode_to_writer<W: std::io::Write>(
    descriptor: &Descriptor,
    buffers: &[&[u8]],
    writer: W,
) -> Result<u64, EncodeError> {
    let lengths: alloc::vec::Vec<u64> = buffers.iter().map(|b| b.len() as u64).collect();
    encode_streamed(descriptor, &lengths, writer, |index, writer| {
        let bytes = buffers.get(index).copied().unwrap_or(&[]);
        writer.write_all(bytes)?;
        Ok(bytes.len() as u64)
    })
}

/// Streams a container whose buffers are not in memory (spill files, say):
/// only their `lengths` are known up front, and `write_buffer(index, writer)`
/// writes buffer `index` when its turn comes, returning how many bytes it
/// wrote. Header, descriptor and padding come from `descriptor` and
/// `lengths` exactly as [`encode_to_writer`] makes them from the buffers, so
/// the bytes are the same. Returns the number of bytes written.
///
/// # Errors
/// As [`encode_to_slice`]; [`EncodeError::BufferLengthMismatch`] when
/// `write_buffer` wrote another number of bytes than `lengths` announced (the
/// output is then not a container); [`EncodeError::Io`] when a write fails.
#[cfg(feature = "std")]
pub fn encode_streamed<W: std::io::Write>(
    descriptor: &Descriptor,
    lengths: &[u64],
    mut writer: W,
    mut write_buffer: impl FnMut(usize, &mut W) -> std::io::Result<u64>,
) -> Result<u64, EncodeError> {
    let plan = plan_lengths(descriptor, lengths.len(), lengths.iter().copied())?;
    let mut head = alloc::vec![0u8; plan.data_start];
    write_head(&plan, &mut head)?;
    writer.write_all(&head)?;
    let mut end = 0u64;
    for (index, entry) in plan.descriptor.buffers.iter().enumerate() {
        // Below BUFFER_ALIGNMENT: `offset` is `end` rounded up.
        let pad = (entry.offset - end) as usize;
        writer.write_all(ZEROS.get(..pad).unwrap_or(&[]))?;
        let written = write_buffer(index, &mut writer)?;
        if written != entry.length {
            return Err(EncodeError::BufferLengthMismatch { index, announced: entry.length, written });
        }
        end = entry.offset + entry.length;
    }
    writer.flush()?;
    Ok(plan.total_len as u64)
}

#[cfg(test)]
mod tests {
    use std::error::Error as _;

    use super::*;
    use crate::element::ElementType;

    /// When postcard fails, its error is kept as the cause, not renamed into
    /// a limit the descriptor does not break. Room too small for the
    /// descriptor is the one failure a test can provoke: the public encoders
    /// always plan enough.
    #[test]
    fn a_postcard_failure_keeps_its_cause() {
        let d = Descriptor::csf(ElementType::F32, &[2, 3, 4], &[0, 1, 2], 0).unwrap();
        let buffers: [&[u8]; 7] = [&[]; 7];
        let plan = plan(&d, &buffers).unwrap();
        assert!(plan.descriptor_len > 1);
        let mut head = [0u8; HEADER_LEN + 1];
        let e = write_head(&plan, &mut head).unwrap_err();
        assert!(matches!(e, EncodeError::Serialize(postcard::Error::SerializeBufferFull)), "{e:?}");
        let source = e.source().expect("the postcard error is the source");
        assert_eq!(source.to_string(), postcard::Error::SerializeBufferFull.to_string());
    }
}
