//! The tool's one error type, and how each error maps to an exit code.
//!
//! Every error that reaches `main` becomes one line on stderr,
//! `hurray: FILE: what is wrong` (or `hurray: FILE:LINE: ...` for a `.tns`
//! line), and exit code 1; usage errors found after clap (an argument that is
//! well-formed but cannot apply) exit 2 like clap's own.

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

/// Exit code for success.
pub const EXIT_OK: i32 = 0;
/// Exit code for invalid or unreadable data (and failed writes).
pub const EXIT_DATA: i32 = 1;
/// Exit code for usage errors (clap uses the same).
pub const EXIT_USAGE: i32 = 2;

/// A file name as shown in messages: the path as the user gave it, or `-`.
#[derive(Clone, Debug)]
pub struct Shown(pub PathBuf);

impl fmt::Display for Shown {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0.display())
    }
}

/// Everything that can go wrong in a command.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Reading or writing a file failed.
    #[error("{path}: {source}")]
    Io {
        /// The file being read or written, as the user named it.
        path: Shown,
        /// What the OS said.
        source: io::Error,
    },
    /// A line of a `.tns` file is malformed.
    #[error("{path}:{line}: {message}")]
    Line {
        /// The `.tns` file holding the line, as the user named it.
        path: Shown,
        /// The 1-based line number.
        line: u64,
        /// What is wrong with it.
        message: String,
    },
    /// The file's contents are not what the command needs (not a Hurray
    /// file, an invalid tensor, a tensor that cannot be built, an index
    /// outside the shape).
    #[error("{path}: {message}")]
    Data {
        /// The file whose contents are wrong, as the user named it.
        path: Shown,
        /// What is wrong.
        message: String,
    },
    /// The arguments parse but cannot apply (exit 2).
    #[error("{0}")]
    Usage(String),
    /// Standard output was closed under us (`hurray dump | head`): stop quietly.
    #[error("broken pipe")]
    BrokenPipe,
}

impl Error {
    /// An I/O error on `path`; a broken pipe becomes [`Error::BrokenPipe`].
    pub fn io(path: &Path, source: io::Error) -> Self {
        if source.kind() == io::ErrorKind::BrokenPipe {
            return Error::BrokenPipe;
        }
        Error::Io { path: Shown(path.to_path_buf()), source }
    }

    /// Invalid data in `path`.
    pub fn data(path: &Path, message: impl fmt::Display) -> Self {
        Error::Data { path: Shown(path.to_path_buf()), message: message.to_string() }
    }

    /// A malformed `.tns` line.
    pub fn line(path: &Path, line: u64, message: impl fmt::Display) -> Self {
        Error::Line { path: Shown(path.to_path_buf()), line, message: message.to_string() }
    }

    /// The exit code this error ends the process with.
    pub fn exit_code(&self) -> i32 {
        match self {
            Error::Usage(_) => EXIT_USAGE,
            Error::BrokenPipe => EXIT_OK,
            _ => EXIT_DATA,
        }
    }
}

/// Standard output, for commands that print their result.
pub const STDOUT: &str = "<stdout>";

/// The result of a command.
pub type Result<T, E = Error> = std::result::Result<T, E>;
