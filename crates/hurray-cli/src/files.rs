//! Reading inputs (memory-mapped when possible, gzip transparently) and
//! writing outputs atomically (a temporary file beside the target, renamed
//! into place only once it is complete and synced; written past the page
//! cache where the file system allows it, see [`crate::direct`]).

use std::fs::File;
use std::io::{self, BufWriter, Read, Write};
use std::ops::Deref;
use std::path::{Path, PathBuf};

use crate::cleanup;
use crate::direct::FileWriter;
use crate::error::{Error, Result, STDOUT};

/// The bytes of an input file: a read-only memory map, or an owned buffer
/// for what cannot be mapped (pipes, empty files, decompressed gzip).
pub enum Input {
    /// The file, mapped.
    Mapped(memmap2::Mmap),
    /// The file's (possibly decompressed) bytes.
    Owned(Vec<u8>),
}

impl Deref for Input {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            Input::Mapped(map) => map,
            Input::Owned(bytes) => bytes,
        }
    }
}

impl Input {
    /// How the bytes were obtained, for `--timings`.
    pub fn how(&self, gzip: bool) -> &'static str {
        match (self, gzip) {
            (_, true) => "gzip, decompressed in memory",
            (Input::Mapped(_), false) => "memory-mapped",
            (Input::Owned(_), false) => "read",
        }
    }
}

/// Maps `path` read-only, or reads it whole when it cannot be mapped.
/// `populate` pre-faults the whole map (for inputs read from end to end; a
/// lookup in a large file wants it off), when the file fits in half the
/// available memory; a larger file is read through the map as the reader
/// goes, with the kernel told to read ahead and drop pages behind.
pub fn open(path: &Path, populate: bool) -> Result<Input> {
    let file = File::open(path).map_err(|e| Error::io(path, e))?;
    let meta = file.metadata().map_err(|e| Error::io(path, e))?;
    if meta.is_dir() {
        return Err(Error::io(path, io::Error::new(io::ErrorKind::InvalidInput, "is a directory")));
    }
    if meta.is_file() && meta.len() > 0 {
        let mut options = memmap2::MmapOptions::new();
        let fits = available_memory().is_none_or(|available| meta.len() <= available / 2);
        if populate && fits {
            options.populate();
        }
        // SAFETY: the map is read-only and private to this process. Like every
        // tool that maps its input, we rely on no other process truncating or
        // rewriting the file while we read it; the readers we hand the bytes
        // to (`Container::decode`, csf-core's views, the .tns scanner) are
        // total, so even then the worst outcome is wrong output or SIGBUS,
        // never a read outside the mapping.
        if let Ok(map) = unsafe { options.map(&file) } {
            if populate && !fits {
                // Only a hint: a kernel that ignores it reads the file all the same.
                let _ = map.advise(memmap2::Advice::Sequential);
            }
            return Ok(Input::Mapped(map));
        }
    }
    let mut bytes = Vec::with_capacity(usize::try_from(meta.len()).unwrap_or(0));
    (&file).read_to_end(&mut bytes).map_err(|e| Error::io(path, e))?;
    Ok(Input::Owned(bytes))
}

/// The directory `path` is written in (`.` for a bare file name): where
/// spill files go by default, beside the output.
pub fn directory_of(path: &Path) -> PathBuf {
    match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// Linux's `MemAvailable`, in bytes; `None` elsewhere.
pub fn available_memory() -> Option<u64> {
    let meminfo = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = meminfo.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// Whether `bytes` start with the gzip magic.
pub fn is_gzip(bytes: &[u8]) -> bool {
    bytes.starts_with(&[0x1f, 0x8b])
}

/// Opens a text input, decompressing it in memory when it is gzip (whatever
/// its name). Returns the bytes and whether they were compressed.
pub fn open_text(path: &Path) -> Result<(Input, bool)> {
    let raw = open(path, true)?;
    if !is_gzip(&raw) {
        return Ok((raw, false));
    }
    // A multi-member decoder, so that concatenated .gz files read whole, as gunzip does.
    let mut out = Vec::with_capacity(raw.len().saturating_mul(4));
    flate2::read::MultiGzDecoder::new(&raw[..])
        .read_to_end(&mut out)
        .map_err(|e| Error::data(path, format!("gzip: {e}")))?;
    Ok((Input::Owned(out), true))
}

/// An output that is either standard output or a file written atomically.
pub struct Output {
    path: PathBuf,
    sink: Sink,
    /// The temporary file, registered for removal on SIGINT and SIGTERM.
    _cleanup: Option<cleanup::Guard>,
}

enum Sink {
    Stdout(BufWriter<io::StdoutLock<'static>>),
    File(FileWriter),
}

impl Output {
    /// Standard output (when `path` is `None`) or a temporary file beside `path`.
    pub fn create(path: Option<&Path>) -> Result<Self> {
        match path {
            None => Ok(Self {
                path: PathBuf::from(STDOUT),
                sink: Sink::Stdout(BufWriter::with_capacity(1 << 16, io::stdout().lock())),
                _cleanup: None,
            }),
            Some(path) => {
                let temp = temp_beside(path)?;
                Ok(Self {
                    path: path.to_path_buf(),
                    _cleanup: Some(cleanup::register(temp.path())),
                    sink: Sink::File(FileWriter::new(temp)),
                })
            }
        }
    }

    /// The target path (or `<stdout>`), for messages.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Flushes, syncs and renames the temporary file onto the target. Until
    /// this returns, the target is untouched; if it is never called (an
    /// error, a panic) the temporary file is deleted when dropped.
    pub fn commit(self) -> Result<()> {
        let path = self.path;
        match self.sink {
            Sink::Stdout(mut out) => out.flush().map_err(|e| Error::io(&path, e)),
            Sink::File(out) => {
                let temp = out.finish().map_err(|e| Error::io(&path, e))?;
                temp.as_file().sync_all().map_err(|e| Error::io(&path, e))?;
                set_permissions(&temp, &path);
                temp.persist(&path).map_err(|e| Error::io(&path, e.error))?;
                Ok(())
            }
        }
    }
}

impl Write for Output {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match &mut self.sink {
            Sink::Stdout(out) => out.write(buf),
            Sink::File(out) => out.write(buf),
        }
    }

    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        match &mut self.sink {
            Sink::Stdout(out) => out.write_all(buf),
            Sink::File(out) => out.write_all(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match &mut self.sink {
            Sink::Stdout(out) => out.flush(),
            Sink::File(out) => out.flush(),
        }
    }
}

/// A temporary file in the target's directory (so that the final rename
/// stays on one file system), named `.NAME.XXXXXX.tmp` so that a leftover
/// from a killed process is recognisable and never mistaken for the target.
fn temp_beside(path: &Path) -> Result<tempfile::NamedTempFile> {
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    tempfile::Builder::new()
        .prefix(&format!(".{name}."))
        .suffix(".tmp")
        .tempfile_in(&dir)
        .map_err(|e| Error::io(path, e))
}

/// Temporary files are created `0600`; give the result the permissions of
/// the file it replaces, or the usual `0644` for a new file.
fn set_permissions(temp: &tempfile::NamedTempFile, target: &Path) {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(target).map(|m| m.permissions().mode() & 0o7777).unwrap_or(0o644);
        let _ = temp.as_file().set_permissions(std::fs::Permissions::from_mode(mode));
    }
    #[cfg(not(unix))]
    let _ = (temp, target);
}
