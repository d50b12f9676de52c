//! Decoding and encoding errors. Every decoding error says where: the byte
//! offset from the start of the input ([`DecodeError::offset`]), and for
//! buffers the buffer index too.

use crate::layout::LayoutTag;

/// Why a byte string is not a Hurray CSF container.
///
/// Every field named `offset`, `previous_end` or `expected` is a byte offset
/// from the start of the input, and so is [`DecodeError::offset`], which
/// gives the position of any variant; only [`DecodeError::BufferEndOverflow`]
/// keeps the buffer table's `data_start`-relative number, since the file
/// offset it adds up to need not exist.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DecodeError {
    /// The input ends inside a field of the header or the descriptor. (Once the
    /// descriptor is read, a short file is [`DecodeError::TruncatedData`].)
    #[error("truncated at byte {offset}: {needed} bytes needed, {available} available")]
    Truncated {
        /// Where the field starts.
        offset: usize,
        /// Bytes the field needs.
        needed: usize,
        /// Bytes left in the region being read.
        available: usize,
    },
    /// The first eight bytes are not the Hurray magic.
    #[error("byte 0: bad magic, not a Hurray file")]
    BadMagic,
    /// The header names a format version this reader does not read.
    #[error("byte 8: format version {found} is not supported (this reader reads version {supported})")]
    UnsupportedVersion {
        /// The format version the file's header declares.
        found: u16,
        /// The one format version this reader decodes.
        supported: u16,
    },
    /// The reserved header field is not zero.
    #[error("byte 10: reserved header field is {found:#06x}, must be 0")]
    ReservedHeaderBits {
        /// The reserved field's value in the file (anything but 0).
        found: u16,
    },
    /// The descriptor length exceeds [`crate::limits::MAX_DESCRIPTOR_LEN`].
    #[error("byte 12: descriptor length {len} exceeds the limit of {max} bytes")]
    DescriptorTooLong {
        /// The descriptor length the header declares, in bytes.
        len: u32,
        /// The longest descriptor this reader accepts, in bytes.
        max: usize,
    },
    /// A varint does not fit the integer it encodes.
    #[error("byte {offset}: varint overflows a {bits}-bit integer")]
    VarintOverflow {
        /// Where the varint starts.
        offset: usize,
        /// Width of the integer.
        bits: u8,
    },
    /// A varint is not in its shortest form (it ends in a zero continuation byte).
    #[error("byte {offset}: varint is not in its shortest form")]
    NonCanonicalVarint {
        /// Where the varint starts.
        offset: usize,
    },
    /// An option tag is neither 0 (absent) nor 1 (present).
    #[error("byte {offset}: option tag of {field} is {found}, must be 0 or 1")]
    BadOptionTag {
        /// Where the tag is.
        offset: usize,
        /// The descriptor field whose option tag it is (`statistics`, ...).
        field: &'static str,
        /// The tag byte in the file (anything but 0 or 1).
        found: u8,
    },
    /// The layout tag is not one of the family's.
    #[error("byte {offset}: unknown layout tag 0x{tag:02x}")]
    UnknownLayout {
        /// Where the tag is.
        offset: usize,
        /// The layout tag byte in the file, which no layout of the family has.
        tag: u8,
    },
    /// The layout is one of the family's, but not CSF.
    #[error("byte {offset}: layout {layout} is not supported by this reader (CSF only)")]
    UnsupportedLayout {
        /// Where the tag is.
        offset: usize,
        /// The family's layout the file declares, which this reader does not decode.
        layout: LayoutTag,
    },
    /// The element-type code is not assigned.
    #[error("byte {offset}: unknown element type 0x{code:02x} in {field}")]
    UnknownElementType {
        /// Where the code is.
        offset: usize,
        /// The descriptor field that holds it (`element_type`, `scale_type`, ...).
        field: &'static str,
        /// The element-type code in the file, which the data model does not assign.
        code: u8,
    },
    /// The flag word has bits this version does not assign.
    #[error("byte {offset}: unknown flag bits {bits:#x}")]
    UnknownFlags {
        /// Where the flag word starts.
        offset: usize,
        /// The set bits of the flag word that this version assigns no meaning to.
        bits: u32,
    },
    /// A flag and the presence of its section disagree.
    #[error("byte {offset}: flag {flag} is {flag_set} but the section is {}", if *.flag_set { "absent" } else { "present" })]
    FlagMismatch {
        /// Where the section's option tag is.
        offset: usize,
        /// The flag's name.
        flag: &'static str,
        /// Whether the flag is set.
        flag_set: bool,
    },
    /// The quantization scheme code is not assigned.
    #[error("byte {offset}: unknown quantization scheme {code}")]
    UnknownQuantScheme {
        /// Where the code is.
        offset: usize,
        /// The scheme code in the file, which no quantization scheme has.
        code: u8,
    },
    /// A list is longer than its cap (rank, buffer count, ...).
    #[error("byte {offset}: {field} has {len} entries, more than the limit of {max}")]
    TooLong {
        /// Where the length prefix starts.
        offset: usize,
        /// The list (`shape`, `mode_order`, `buffers`, ...).
        field: &'static str,
        /// The entry count its length prefix declares.
        len: u64,
        /// The most entries the list may have ([`crate::limits`]).
        max: usize,
    },
    /// The descriptor ends before its declared length.
    #[error("byte {offset}: {count} unread bytes at the end of the descriptor")]
    DescriptorTrailingBytes {
        /// Where the unread bytes start.
        offset: usize,
        /// How many.
        count: usize,
    },
    /// A padding byte is not zero.
    #[error("byte {offset}: padding byte is not zero")]
    NonZeroPadding {
        /// Where the first non-zero padding byte is.
        offset: usize,
    },
    /// A buffer does not start on a [`crate::limits::BUFFER_ALIGNMENT`] boundary.
    #[error("byte {offset}: buffer {index} starts at a byte that is not a multiple of {alignment}")]
    BufferMisaligned {
        /// The buffer's row in the buffer table.
        index: usize,
        /// Where the buffer table puts it, from the start of the file
        /// (`data_start` plus the table's `offset`).
        offset: u64,
        /// The alignment every buffer's start must have, in bytes.
        alignment: usize,
    },
    /// A buffer starts before the end of the previous one.
    #[error(
        "byte {offset}: buffer {index} starts inside the previous buffer, which ends at byte {previous_end}"
    )]
    BufferOverlap {
        /// The buffer's row in the buffer table.
        index: usize,
        /// Where the buffer table puts it, from the start of the file.
        offset: u64,
        /// Where the previous buffer ends, from the start of the file.
        previous_end: u64,
    },
    /// A buffer leaves a hole after the previous one (more than the alignment padding).
    #[error(
        "byte {offset}: buffer {index} leaves a gap after the previous buffer; it belongs at byte {expected}"
    )]
    BufferGap {
        /// The buffer's row in the buffer table.
        index: usize,
        /// Where the buffer table puts it, from the start of the file.
        offset: u64,
        /// Where the canonical layout puts it, from the start of the file.
        expected: u64,
    },
    /// A buffer's start, `data_start + table_offset`, or its end, that plus
    /// `length`, does not fit in a `u64`: no file can hold it. Only a hostile
    /// or corrupt table gets here. The table's own numbers are kept, since
    /// the file offset they add up to does not exist.
    #[error(
        "buffer {index}: data_start {data_start} + offset {table_offset} + length {length} overflows a 64-bit file length"
    )]
    BufferEndOverflow {
        /// The buffer's row in the buffer table.
        index: usize,
        /// Where the data section starts, from the start of the file.
        data_start: u64,
        /// Its offset as the buffer table gives it, from `data_start`.
        table_offset: u64,
        /// Its length.
        length: u64,
    },
    /// The file is shorter than its descriptor says: the descriptor and its
    /// buffer table are sound, and with canonical placement they fix the file's
    /// exact length, `needed`; the file ends at byte `len`, inside the padding
    /// after the descriptor or inside (or before) a buffer. Usually a file that
    /// was cut short in a copy or a download.
    #[error("truncated: the file is {len} bytes, but its descriptor needs {needed}")]
    TruncatedData {
        /// The length of the file (the input).
        len: u64,
        /// The length the descriptor and its buffer table call for: the end of
        /// the last buffer, from the start of the file.
        needed: u64,
    },
    /// Bytes follow the last buffer (the file is longer than its descriptor says).
    #[error("byte {offset}: {count} trailing bytes after the last buffer")]
    TrailingBytes {
        /// Where the trailing bytes start.
        offset: usize,
        /// How many.
        count: usize,
    },
}

impl DecodeError {
    /// Where the fault is, as a byte offset from the start of the input: the
    /// field that is wrong, the start of a misplaced buffer, the first
    /// trailing or non-zero padding byte, or for [`DecodeError::TruncatedData`]
    /// the end of the input, where the missing bytes should be.
    ///
    /// `None` only for a [`DecodeError::BufferEndOverflow`] whose start,
    /// `data_start + table_offset`, is past the largest `u64`.
    pub const fn offset(&self) -> Option<u64> {
        // `as u64` is lossless: usize is at most 64 bits wide.
        Some(match *self {
            DecodeError::BadMagic => 0,
            DecodeError::UnsupportedVersion { .. } => 8,
            DecodeError::ReservedHeaderBits { .. } => 10,
            DecodeError::DescriptorTooLong { .. } => 12,
            DecodeError::Truncated { offset, .. }
            | DecodeError::VarintOverflow { offset, .. }
            | DecodeError::NonCanonicalVarint { offset }
            | DecodeError::BadOptionTag { offset, .. }
            | DecodeError::UnknownLayout { offset, .. }
            | DecodeError::UnsupportedLayout { offset, .. }
            | DecodeError::UnknownElementType { offset, .. }
            | DecodeError::UnknownFlags { offset, .. }
            | DecodeError::FlagMismatch { offset, .. }
            | DecodeError::UnknownQuantScheme { offset, .. }
            | DecodeError::TooLong { offset, .. }
            | DecodeError::DescriptorTrailingBytes { offset, .. }
            | DecodeError::NonZeroPadding { offset }
            | DecodeError::TrailingBytes { offset, .. } => offset as u64,
            DecodeError::BufferMisaligned { offset, .. }
            | DecodeError::BufferOverlap { offset, .. }
            | DecodeError::BufferGap { offset, .. } => offset,
            DecodeError::BufferEndOverflow { data_start, table_offset, .. } => {
                return data_start.checked_add(table_offset)
            }
            DecodeError::TruncatedData { len, .. } => len,
        })
    }
}

/// Why a descriptor and buffers could not be encoded.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EncodeError {
    /// The descriptor's buffer table and the buffers given differ in length.
    #[error("the buffer table lists {table} buffers but {given} were given")]
    BufferCountMismatch {
        /// Rows in the table.
        table: usize,
        /// Buffers passed.
        given: usize,
    },
    /// The layout is not CSF, which is all this crate writes.
    #[error("layout {0} cannot be written by this crate (CSF only)")]
    UnsupportedLayout(LayoutTag),
    /// The encoded descriptor would exceed [`crate::limits::MAX_DESCRIPTOR_LEN`].
    #[error("the encoded descriptor exceeds {max} bytes")]
    DescriptorTooLong {
        /// The longest descriptor a container may hold, in bytes.
        max: usize,
    },
    /// postcard could not write the descriptor; its error is the source. A
    /// descriptor within the caps always serializes into the room planned for
    /// it, so this names a fault of the encoder rather than of its input.
    #[error("the descriptor could not be serialized: {0}")]
    Serialize(#[source] postcard::Error),
    /// The output slice is too small for the container.
    #[error("output buffer holds {available} bytes, {needed} needed")]
    OutputTooSmall {
        /// Bytes needed.
        needed: usize,
        /// Bytes available.
        available: usize,
    },
    /// The container would be larger than this platform can address.
    #[error("the container is larger than this platform can address")]
    TooLarge,
    /// A streamed buffer's writer wrote another length than announced.
    #[error("buffer {index}: {announced} bytes announced, {written} written")]
    BufferLengthMismatch {
        /// The buffer's row in the table.
        index: usize,
        /// The length given up front.
        announced: u64,
        /// The bytes the writer wrote.
        written: u64,
    },
    /// Writing failed.
    #[cfg(feature = "std")]
    #[error("write failed: {0}")]
    Io(#[from] std::io::Error),
}
