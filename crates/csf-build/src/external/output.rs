//! The output: one spill file per buffer while the parts are joined, then
//! the container streamed from them.

use std::io::{self, Write};
use std::path::PathBuf;

use hurray_format::limits::{RankError, MAX_BUFFERS};
use hurray_format::{
    BufferEntry, CsfHeaderError, Descriptor, ElementType, EncodeError, Quantization, Statistics,
};

use super::spill::{SpillDir, SpillWriter};
use super::ExternalError;
use crate::concat::ArraySink;
use crate::BuildError;

/// What the container's descriptor says beside its buffers.
pub(super) struct Header<'a> {
    pub(super) element_type: ElementType,
    pub(super) shape: &'a [u64],
    pub(super) order: &'a [u32],
    pub(super) nnz: u64,
    pub(super) statistics: Option<Statistics>,
    pub(super) quantization: Option<Quantization>,
}

/// The container's descriptor for buffers of `lengths`.
pub(super) fn descriptor(header: &Header<'_>, lengths: &[u64]) -> Result<Descriptor, ExternalError> {
    let rank = header.shape.len();
    let mut descriptor = Descriptor::csf(header.element_type, header.shape, header.order, header.nnz)
        .map_err(|e| match e {
            CsfHeaderError::Rank(RankError::TooSmall(rank)) => BuildError::RankTooSmall { rank },
            CsfHeaderError::Rank(_) => BuildError::RankTooLarge { rank },
            // The order was checked a permutation of `0..rank`; kept as what it is all the same.
            _ => BuildError::BadModeOrder { order: header.order.to_vec(), rank },
        })?;
    // The quantization parameters' rows, after the layout's own.
    for _ in descriptor.buffers.len()..lengths.len() {
        // A full table: more buffers than any CSF container has (2 * 64 + 1 and two parameters).
        let full = EncodeError::BufferCountMismatch { table: MAX_BUFFERS, given: lengths.len() };
        descriptor.buffers.push(BufferEntry::default()).map_err(|_| ExternalError::Encode(full))?;
    }
    descriptor.statistics = header.statistics;
    descriptor.quantization = header.quantization;
    Ok(descriptor)
}

/// Writes the container, each buffer copied from its spill file.
pub(super) fn write_container(
    descriptor: &Descriptor,
    lengths: &[u64],
    files: &[PathBuf],
    out: impl Write,
) -> Result<u64, ExternalError> {
    // A spill file that cannot be read is reported with its path; a write
    // that fails is the output's error.
    let mut failed: Option<ExternalError> = None;
    let mut buffer = vec![0u8; 1 << 16];
    let written = hurray_format::encode_streamed(descriptor, lengths, out, |index, out| {
        let path = files.get(index).ok_or_else(|| io::Error::other("no spill file"))?;
        let spill_error = |e: io::Error| ExternalError::io("read a spill file", path, e);
        let mut file = match std::fs::File::open(path) {
            Ok(file) => file,
            Err(e) => {
                failed = Some(spill_error(e));
                return Err(io::Error::other("a spill file failed"));
            }
        };
        let mut copied = 0u64;
        loop {
            let n = match io::Read::read(&mut file, &mut buffer) {
                Ok(0) => return Ok(copied),
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    failed = Some(spill_error(e));
                    return Err(io::Error::other("a spill file failed"));
                }
            };
            out.write_all(&buffer[..n])?;
            copied += n as u64;
        }
    });
    match (written, failed) {
        (Ok(n), _) => Ok(n),
        (Err(_), Some(spill)) => Err(spill),
        (Err(e), None) => Err(ExternalError::Encode(e)),
    }
}

/// The output's buffers, one spill file each: values, then `pos_L`, `crd_L`.
#[derive(Debug)]
pub(super) struct FileSinks {
    writers: Vec<SpillWriter>,
    /// Words on their way to a file as little-endian bytes (reused).
    bytes: Vec<u8>,
}

impl FileSinks {
    pub(super) fn new(dir: &mut SpillDir, rank: usize) -> Result<Self, ExternalError> {
        let mut writers = vec![SpillWriter::create(dir.new_file("values"), 1 << 16)?];
        for level in 0..rank {
            writers.push(SpillWriter::create(dir.new_file(&format!("pos{level}")), 1 << 16)?);
            writers.push(SpillWriter::create(dir.new_file(&format!("crd{level}")), 1 << 16)?);
        }
        Ok(Self { writers, bytes: Vec::new() })
    }

    fn append(&mut self, index: usize, words: &[u64]) -> Result<(), ExternalError> {
        self.bytes.clear();
        self.bytes.extend(words.iter().flat_map(|w| w.to_le_bytes()));
        self.writers.get_mut(index).map_or(Ok(()), |w| w.write(&self.bytes))
    }

    /// Closes every file: their lengths and paths, in table order.
    pub(super) fn close(self) -> Result<(Vec<u64>, Vec<PathBuf>), ExternalError> {
        let mut lengths = Vec::new();
        let mut files = Vec::new();
        for writer in self.writers {
            let (path, bytes) = writer.finish()?;
            lengths.push(bytes);
            files.push(path);
        }
        Ok((lengths, files))
    }
}

impl ArraySink for FileSinks {
    type Error = ExternalError;

    fn pos(&mut self, level: usize, words: &[u64]) -> Result<(), ExternalError> {
        self.append(1 + 2 * level, words)
    }

    fn crd(&mut self, level: usize, words: &[u64]) -> Result<(), ExternalError> {
        self.append(2 + 2 * level, words)
    }

    fn values(&mut self, bytes: &[u8]) -> Result<(), ExternalError> {
        self.writers.first_mut().map_or(Ok(()), |w| w.write(bytes))
    }
}
