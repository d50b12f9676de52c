//! The writer behind every output file: a 1 MiB buffer in front of the
//! temporary file, emptied with `O_DIRECT` on Linux where the file system
//! accepts it, and through the page cache otherwise.
//!
//! Writing an output of a few hundred MiB through the page cache costs more
//! kernel time than it takes the device to store it: every byte is copied
//! into the cache, written back by the `fsync` of the commit, and the cache
//! of the file it replaces is evicted by the rename. `O_DIRECT` hands the
//! buffer to the device as it is, which is several times cheaper, but it
//! wants the buffer's address, the file offset and the length to be
//! multiples of the device's logical block size. The buffer is therefore
//! aligned to [`ALIGN`] and always written whole at multiples of its size;
//! the last, partial block is padded with zeros and the file cut back to its
//! true length at [`FileWriter::finish`].
//!
//! A file system that refuses `O_DIRECT` at open leaves the writer on the
//! buffered path from the start. One that refuses a write (`EINVAL`: a
//! device that needs a larger alignment, say) makes the writer write those
//! same bytes, from where the refused write stopped, through the ordinary
//! descriptor, and stay buffered: the bytes on disk are the same either way.

use std::fs::File;
use std::io::{self, Seek, SeekFrom, Write};

/// The alignment of the buffer's address, of every direct write's file
/// offset and length: 4 KiB, the largest logical block size of common
/// devices (512 bytes is the usual one). A device that needs more makes the
/// first direct write fail with `EINVAL`, and the writer falls back.
const ALIGN: usize = 4096;

/// The buffer's size. Direct writes of 1 MiB keep a virtio disk busy (`dd
/// oflag=direct` of 208 MiB: 0.14 s at 1 MiB blocks, 0.20 s at 4 MiB), and
/// make a large buffer for the buffered path too.
const CAPACITY: usize = 1 << 20;

/// A buffered writer of a temporary file, which it owns (for removal when
/// dropped, and for [`tempfile::NamedTempFile::persist`] once finished).
pub struct FileWriter {
    temp: tempfile::NamedTempFile,
    /// A second, write-only `O_DIRECT` descriptor of the temporary file while
    /// direct writes are accepted; `None` on the buffered path.
    direct: Option<File>,
    buffer: AlignedBuffer,
    /// How many bytes of `buffer` hold data.
    filled: usize,
    /// The file offset of `buffer`'s first byte.
    offset: u64,
    /// The end of the last direct write, padding included: when it is past
    /// the true end, [`FileWriter::finish`] cuts the file back.
    written_end: u64,
    /// Whether the buffered bytes are already in the file (a direct flush
    /// writes the partial tail and keeps it in the buffer, so that the next
    /// write can complete the block): `finish` need not write them again.
    tail_written: bool,
    /// Tests: direct writes fail with `EINVAL` from this file offset on, and
    /// one that crosses it stops there, as a short write would.
    #[cfg(test)]
    refuse_from: Option<u64>,
}

impl FileWriter {
    /// A writer of `temp`, direct when the file system accepts it.
    pub fn new(temp: tempfile::NamedTempFile) -> Self {
        let direct = sys::open_direct(&temp);
        Self::with_direct(temp, direct)
    }

    /// A writer of `temp` that writes through the page cache only.
    #[cfg(test)]
    pub fn buffered(temp: tempfile::NamedTempFile) -> Self {
        Self::with_direct(temp, None)
    }

    fn with_direct(temp: tempfile::NamedTempFile, direct: Option<File>) -> Self {
        // Without an aligned buffer there can be no direct write.
        let buffer = AlignedBuffer::new();
        let direct = direct.filter(|_| buffer.aligned);
        Self {
            temp,
            direct,
            buffer,
            filled: 0,
            offset: 0,
            written_end: 0,
            tail_written: false,
            #[cfg(test)]
            refuse_from: None,
        }
    }

    /// Whether the writer is (still) on the direct path.
    #[cfg(test)]
    pub fn is_direct(&self) -> bool {
        self.direct.is_some()
    }

    /// Writes what is buffered and cuts the file to the length written,
    /// then hands the temporary file back, to be synced and persisted.
    pub fn finish(mut self) -> io::Result<tempfile::NamedTempFile> {
        if !self.tail_written {
            self.drain()?;
        }
        let end = self.offset + self.filled as u64;
        if self.written_end > end {
            self.temp.as_file().set_len(end)?;
        }
        Ok(self.temp)
    }

    /// Writes the buffered bytes to the file. On the direct path a partial
    /// last block is written padded with zeros and kept in the buffer, so
    /// that later bytes complete it; the buffered path empties the buffer.
    fn drain(&mut self) -> io::Result<()> {
        let mut done = 0;
        if let Some(direct) = self.direct.take() {
            // Whole blocks: the padding is overwritten by later writes or cut
            // off by `finish`.
            let padded = self.filled.next_multiple_of(ALIGN);
            self.buffer.as_mut()[self.filled..padded].fill(0);
            while done < padded {
                let at = self.offset + done as u64;
                match self.write_direct(&direct, &self.buffer.as_slice()[done..padded], at) {
                    Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                    Ok(n) => {
                        done += n;
                        self.written_end = self.written_end.max(self.offset + done as u64);
                    }
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(e) if sys::refused(&e) => break,
                    Err(e) => return Err(e),
                }
            }
            if done == padded {
                // Keep the partial block (if any) at the buffer's start.
                let whole = self.filled - self.filled % ALIGN;
                self.buffer.as_mut().copy_within(whole..self.filled, 0);
                self.offset += whole as u64;
                self.filled -= whole;
                self.tail_written = true;
                self.direct = Some(direct);
                return Ok(());
            }
            // Refused: the rest goes through the page cache from where the
            // direct writes stopped (inside the padding, perhaps, which is
            // then past the data) and so does everything after it.
            done = done.min(self.filled);
            self.temp.as_file_mut().seek(SeekFrom::Start(self.offset + done as u64))?;
        }
        self.temp.as_file_mut().write_all(&self.buffer.as_slice()[done..self.filled])?;
        self.offset += self.filled as u64;
        self.filled = 0;
        Ok(())
    }

    fn write_direct(&self, direct: &File, bytes: &[u8], at: u64) -> io::Result<usize> {
        #[cfg(test)]
        if let Some(limit) = self.refuse_from {
            if at >= limit {
                return Err(sys::refusal());
            }
            let allowed = usize::try_from(limit - at).unwrap_or(usize::MAX).min(bytes.len());
            return sys::write_at(direct, &bytes[..allowed], at);
        }
        sys::write_at(direct, bytes, at)
    }
}

impl Write for FileWriter {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        if self.filled == CAPACITY {
            self.drain()?;
        }
        // The buffered path passes a write as large as the buffer straight
        // through, as `BufWriter` does; the direct one copies everything into
        // the aligned buffer (which costs far less than the page cache would).
        if self.direct.is_none() {
            if self.filled + data.len() > CAPACITY {
                self.drain()?;
            }
            if data.len() >= CAPACITY {
                self.temp.as_file_mut().write_all(data)?;
                self.offset += data.len() as u64;
                return Ok(data.len());
            }
        }
        let start = self.filled;
        let n = data.len().min(CAPACITY - start);
        self.buffer.as_mut()[start..start + n].copy_from_slice(&data[..n]);
        self.filled += n;
        self.tail_written &= n == 0;
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        if self.filled > 0 && !self.tail_written {
            self.drain()?;
        }
        Ok(())
    }
}

/// [`CAPACITY`] bytes at an address that is a multiple of [`ALIGN`], taken
/// from a vector one alignment longer (no `unsafe`, no aligned allocator).
struct AlignedBuffer {
    bytes: Vec<u8>,
    start: usize,
    /// Whether the address is aligned: always, unless the allocation has
    /// less than a page to spare, which only a broken allocator would give.
    aligned: bool,
}

impl AlignedBuffer {
    fn new() -> Self {
        let bytes = vec![0u8; CAPACITY + ALIGN];
        let start = bytes.as_ptr().align_offset(ALIGN);
        // `align_offset` may answer `usize::MAX` ("cannot tell"); the
        // buffered path needs no alignment.
        let aligned = start < ALIGN;
        Self { bytes, start: if aligned { start } else { 0 }, aligned }
    }

    fn as_slice(&self) -> &[u8] {
        &self.bytes[self.start..self.start + CAPACITY]
    }

    fn as_mut(&mut self) -> &mut [u8] {
        &mut self.bytes[self.start..self.start + CAPACITY]
    }
}

/// What the direct path needs of the operating system: Linux only.
#[cfg(target_os = "linux")]
mod sys {
    use std::fs::{File, OpenOptions};
    use std::io;
    use std::os::unix::fs::{FileExt, MetadataExt, OpenOptionsExt};

    /// Opens the temporary file again, write-only and `O_DIRECT`; `None` if
    /// the file system refuses (`EINVAL`), or if the name no longer leads to
    /// the same file (someone else's file is never written).
    pub fn open_direct(temp: &tempfile::NamedTempFile) -> Option<File> {
        let direct = OpenOptions::new().write(true).custom_flags(libc::O_DIRECT).open(temp.path()).ok()?;
        let (ours, opened) = (temp.as_file().metadata().ok()?, direct.metadata().ok()?);
        (ours.dev() == opened.dev() && ours.ino() == opened.ino()).then_some(direct)
    }

    pub fn write_at(file: &File, bytes: &[u8], at: u64) -> io::Result<usize> {
        file.write_at(bytes, at)
    }

    /// Whether a direct write failed because it is direct: the rest can go
    /// through the page cache.
    pub fn refused(error: &io::Error) -> bool {
        error.raw_os_error() == Some(libc::EINVAL)
    }

    #[cfg(test)]
    pub fn refusal() -> io::Error {
        io::Error::from_raw_os_error(libc::EINVAL)
    }
}

/// Other systems write through the page cache only: there is never a direct
/// descriptor to write to.
#[cfg(not(target_os = "linux"))]
mod sys {
    use std::fs::File;
    use std::io;

    pub fn open_direct(_: &tempfile::NamedTempFile) -> Option<File> {
        None
    }

    pub fn write_at(_: &File, _: &[u8], _: u64) -> io::Result<usize> {
        Err(refusal())
    }

    pub fn refused(error: &io::Error) -> bool {
        error.kind() == io::ErrorKind::Unsupported
    }

    pub fn refusal() -> io::Error {
        io::ErrorKind::Unsupported.into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use std::path::Path;

    /// Deterministic bytes (splitmix64), so that a failure reproduces.
    fn random_bytes(len: usize, seed: u64) -> Vec<u8> {
        let mut state = seed;
        let mut next = move || {
            state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = state;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^ (z >> 31)
        };
        let mut bytes = Vec::with_capacity(len + 8);
        while bytes.len() < len {
            bytes.extend_from_slice(&next().to_le_bytes());
        }
        bytes.truncate(len);
        bytes
    }

    /// Piece lengths from 0 to a little over two buffers, skewed small.
    fn piece_lengths(total: usize, seed: u64) -> Vec<usize> {
        let mut lengths = Vec::new();
        let mut left = total;
        let mut state = seed | 1;
        while left > 0 {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let len = match state % 4 {
                0 => (state >> 8) as usize % 16,
                1 => (state >> 8) as usize % 8192,
                2 => (state >> 8) as usize % (CAPACITY + 7),
                _ => (state >> 8) as usize % (2 * CAPACITY + 4097),
            };
            let len = len.min(left);
            lengths.push(len);
            left -= len;
        }
        lengths
    }

    fn temp_in(dir: &Path) -> tempfile::NamedTempFile {
        tempfile::Builder::new().prefix(".direct-test.").suffix(".tmp").tempfile_in(dir).unwrap()
    }

    /// Writes `data` in `lengths` pieces, finishes, syncs and returns what
    /// the file holds.
    fn write_pieces(mut writer: FileWriter, data: &[u8], lengths: &[usize]) -> Vec<u8> {
        let mut at = 0;
        for &len in lengths {
            writer.write_all(&data[at..at + len]).unwrap();
            at += len;
        }
        assert_eq!(at, data.len());
        writer.flush().unwrap();
        let temp = writer.finish().unwrap();
        temp.as_file().sync_all().unwrap();
        std::fs::read(temp.path()).unwrap()
    }

    const SIZES: [usize; 9] =
        [0, 1, 4095, 4096, 4097, CAPACITY - 1, CAPACITY, CAPACITY + 1, 5 * CAPACITY + 12345];

    #[test]
    fn direct_writes_every_size_whole() {
        let dir = tempfile::tempdir().unwrap();
        for (i, &size) in SIZES.iter().enumerate() {
            let data = random_bytes(size, i as u64);
            // One write, then byte by byte for the small sizes, then in random pieces.
            let mut ways = vec![vec![size]];
            if size <= 2 * ALIGN + 1 {
                ways.push(vec![1; size]);
            }
            ways.push(piece_lengths(size, 7 + i as u64));
            for lengths in ways {
                let writer = FileWriter::new(temp_in(dir.path()));
                if i == 0 && !writer.is_direct() {
                    eprintln!("note: {} refuses O_DIRECT; testing the buffered path", dir.path().display());
                }
                assert_eq!(write_pieces(writer, &data, &lengths), data, "size {size}");
            }
        }
    }

    #[test]
    fn buffered_writes_every_size_whole() {
        let dir = tempfile::tempdir().unwrap();
        for (i, &size) in SIZES.iter().enumerate() {
            let data = random_bytes(size, 100 + i as u64);
            let writer = FileWriter::buffered(temp_in(dir.path()));
            assert_eq!(write_pieces(writer, &data, &piece_lengths(size, 3 + i as u64)), data, "size {size}");
        }
    }

    #[test]
    fn multi_mib_random_pieces_direct_and_buffered_agree() {
        let dir = tempfile::tempdir().unwrap();
        let data = random_bytes(13 * CAPACITY + 777, 42);
        for seed in 1..4 {
            let lengths = piece_lengths(data.len(), seed);
            let direct = write_pieces(FileWriter::new(temp_in(dir.path())), &data, &lengths);
            let buffered = write_pieces(FileWriter::buffered(temp_in(dir.path())), &data, &lengths);
            assert!(direct == data, "direct, seed {seed}");
            assert!(buffered == data, "buffered, seed {seed}");
        }
    }

    /// A flush in the middle writes the partial block padded, and later
    /// bytes complete it in place.
    #[test]
    fn flush_mid_way_then_more() {
        let dir = tempfile::tempdir().unwrap();
        let data = random_bytes(3 * CAPACITY + 5000, 9);
        let mut writer = FileWriter::new(temp_in(dir.path()));
        for piece in data.chunks(100_003) {
            writer.write_all(piece).unwrap();
            writer.flush().unwrap();
        }
        let temp = writer.finish().unwrap();
        assert!(std::fs::read(temp.path()).unwrap() == data);
    }

    /// Direct writes refused from an offset on (aligned or not, at a write's
    /// start or inside it, as a short write): the rest goes through the
    /// page cache, no byte lost or written twice.
    #[test]
    fn fallback_mid_way() {
        let dir = tempfile::tempdir().unwrap();
        let data = random_bytes(4 * CAPACITY + 3000, 5);
        let limits = [0, 1, 4096, 4097, CAPACITY as u64, CAPACITY as u64 + 100, 4 * CAPACITY as u64 + 2048];
        for limit in limits {
            for seed in [11, 12] {
                let mut writer = FileWriter::new(temp_in(dir.path()));
                if !writer.is_direct() {
                    eprintln!("note: {} refuses O_DIRECT; no fallback to test", dir.path().display());
                    return;
                }
                writer.refuse_from = Some(limit);
                let mut at = 0;
                for len in piece_lengths(data.len(), seed) {
                    writer.write_all(&data[at..at + len]).unwrap();
                    at += len;
                }
                let still_direct = writer.is_direct();
                let temp = writer.finish().unwrap();
                assert!(std::fs::read(temp.path()).unwrap() == data, "refused from {limit}, seed {seed}");
                // Every limit is below the padded end, so every run falls back.
                assert!(!still_direct || limit >= 4 * CAPACITY as u64, "refused from {limit}");
            }
        }
    }

    /// Refused only by the last, padded block: the data itself was all
    /// written directly, and the file is cut back to it.
    #[test]
    fn fallback_in_the_padding() {
        let dir = tempfile::tempdir().unwrap();
        let data = random_bytes(2 * CAPACITY + 10, 6);
        let mut writer = FileWriter::new(temp_in(dir.path()));
        if !writer.is_direct() {
            return;
        }
        writer.refuse_from = Some(data.len() as u64 + 1);
        writer.write_all(&data).unwrap();
        let temp = writer.finish().unwrap();
        assert!(std::fs::read(temp.path()).unwrap() == data);
    }

    /// A tmpfs: older kernels refuse `O_DIRECT` there at open, newer ones
    /// (6.6 on) accept it; either way the file is whole.
    #[test]
    fn tmpfs() {
        let shm = Path::new("/dev/shm");
        let Ok(dir) = tempfile::tempdir_in(shm) else {
            eprintln!("note: no writable /dev/shm; skipped");
            return;
        };
        let data = random_bytes(2 * CAPACITY + 4097, 8);
        let writer = FileWriter::new(temp_in(dir.path()));
        eprintln!("note: /dev/shm {} O_DIRECT", if writer.is_direct() { "accepts" } else { "refuses" });
        assert!(write_pieces(writer, &data, &piece_lengths(data.len(), 21)) == data);
    }

    /// Dropped without `finish`: the temporary file is gone.
    #[test]
    fn dropped_writer_leaves_no_file() {
        let dir = tempfile::tempdir().unwrap();
        let mut writer = FileWriter::new(temp_in(dir.path()));
        writer.write_all(&random_bytes(CAPACITY + 1, 1)).unwrap();
        let path = writer.temp.path().to_path_buf();
        drop(writer);
        assert!(!path.exists());
    }
}
