//! Spill files: fixed-size entry records appended in input order, a
//! directory that removes itself, and I/O errors that name their path.

use std::fs::{self, File};
use std::io::{self, BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use super::ExternalError;

/// One entry as it is spilled: its logical coordinates, its position in the
/// input (which duplicate policies and error messages need), and its value
/// slot (one byte per 4-bit code), all little-endian:
/// `[coord_0 .. coord_{rank-1}: u64][entry: u64][slot: width bytes]`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct RecordShape {
    pub(crate) rank: usize,
    pub(crate) width: usize,
}

impl RecordShape {
    pub(crate) fn bytes(self) -> usize {
        8 * (self.rank + 1) + self.width
    }

    pub(crate) fn write(self, out: &mut Vec<u8>, coords: impl Iterator<Item = u64>, entry: u64, slot: &[u8]) {
        for c in coords {
            out.extend_from_slice(&c.to_le_bytes());
        }
        out.extend_from_slice(&entry.to_le_bytes());
        out.extend_from_slice(slot);
    }

    pub(crate) fn coord(self, record: &[u8], dim: usize) -> u64 {
        read_u64(record, 8 * dim)
    }

    pub(crate) fn entry(self, record: &[u8]) -> u64 {
        read_u64(record, 8 * self.rank)
    }

    pub(crate) fn slot(self, record: &[u8]) -> &[u8] {
        record.get(8 * (self.rank + 1)..).unwrap_or(&[])
    }
}

fn read_u64(bytes: &[u8], at: usize) -> u64 {
    let mut word = [0u8; 8];
    if let Some(src) = bytes.get(at..at + 8) {
        word.copy_from_slice(src);
    }
    u64::from_le_bytes(word)
}

/// A directory of spill files under the caller's temporary directory,
/// removed with everything in it when dropped (on success, on error and on
/// unwinding; a process killed by a signal leaves it, which is why the CLI
/// traps SIGINT and SIGTERM).
#[derive(Debug)]
pub(crate) struct SpillDir {
    path: PathBuf,
    next: u64,
}

impl SpillDir {
    pub(crate) fn create(parent: &Path) -> Result<Self, ExternalError> {
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        loop {
            let n = COUNTER.fetch_add(1, Ordering::Relaxed);
            let path = parent.join(format!(".hurray-build-{}-{n}", std::process::id()));
            match fs::create_dir(&path) {
                Ok(()) => return Ok(Self { path, next: 0 }),
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(ExternalError::io("create the spill directory", &path, e)),
            }
        }
    }

    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// A path for a new spill file (named in creation order, for debugging).
    pub(crate) fn new_file(&mut self, what: &str) -> PathBuf {
        self.next += 1;
        self.path.join(format!("{:06}-{what}", self.next))
    }
}

impl Drop for SpillDir {
    fn drop(&mut self) {
        // Nothing to report to: a failure here leaves a directory the user can see.
        let _ = fs::remove_dir_all(&self.path);
    }
}

/// A spill file being appended to.
#[derive(Debug)]
pub(crate) struct SpillWriter {
    path: PathBuf,
    out: BufWriter<File>,
    bytes: u64,
}

impl SpillWriter {
    pub(crate) fn create(path: PathBuf, buffer: usize) -> Result<Self, ExternalError> {
        let file = File::create(&path).map_err(|e| ExternalError::io("create a spill file", &path, e))?;
        Ok(Self { out: BufWriter::with_capacity(buffer, file), path, bytes: 0 })
    }

    pub(crate) fn write(&mut self, bytes: &[u8]) -> Result<(), ExternalError> {
        self.out.write_all(bytes).map_err(|e| ExternalError::io("write a spill file", &self.path, e))?;
        self.bytes += bytes.len() as u64;
        Ok(())
    }

    pub(crate) fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Flushes and closes the file, returning its path and length.
    pub(crate) fn finish(mut self) -> Result<(PathBuf, u64), ExternalError> {
        self.out.flush().map_err(|e| ExternalError::io("write a spill file", &self.path, e))?;
        Ok((self.path, self.bytes))
    }
}

/// Reads a spill file of records in blocks of at most `max_records`.
pub(crate) struct RecordReader {
    path: PathBuf,
    input: BufReader<File>,
    record: usize,
}

impl RecordReader {
    pub(crate) fn open(path: &Path, shape: RecordShape) -> Result<Self, ExternalError> {
        let file = File::open(path).map_err(|e| ExternalError::io("read a spill file", path, e))?;
        Ok(Self {
            path: path.to_owned(),
            input: BufReader::with_capacity(1 << 16, file),
            record: shape.bytes(),
        })
    }

    /// The next block of whole records into `block` (cleared first); an empty
    /// block at the end. A file that ends inside a record was not written by
    /// us (or the disk lost it): an error, never a silently shorter tensor.
    pub(crate) fn next_block(
        &mut self,
        block: &mut Vec<u8>,
        max_records: usize,
    ) -> Result<(), ExternalError> {
        block.clear();
        let want = max_records.max(1).saturating_mul(self.record);
        let read = (&mut self.input)
            .take(want as u64)
            .read_to_end(block)
            .map_err(|e| ExternalError::io("read a spill file", &self.path, e))?;
        if read % self.record != 0 {
            return Err(ExternalError::io(
                "read a spill file",
                &self.path,
                io::Error::new(io::ErrorKind::UnexpectedEof, "the file ends inside a record"),
            ));
        }
        Ok(())
    }
}

/// Reads a spill file of plain bytes (the output's arrays) in pieces.
pub(crate) struct ByteReader {
    path: PathBuf,
    input: BufReader<File>,
}

impl ByteReader {
    pub(crate) fn open(path: &Path) -> Result<Self, ExternalError> {
        let file = File::open(path).map_err(|e| ExternalError::io("read a spill file", path, e))?;
        Ok(Self { path: path.to_owned(), input: BufReader::with_capacity(1 << 16, file) })
    }

    /// Exactly the next `len` bytes into `buffer` (replacing its contents).
    pub(crate) fn read_exact(&mut self, buffer: &mut Vec<u8>, len: usize) -> Result<(), ExternalError> {
        buffer.clear();
        buffer.resize(len, 0);
        self.input.read_exact(buffer).map_err(|e| ExternalError::io("read a spill file", &self.path, e))
    }
}
