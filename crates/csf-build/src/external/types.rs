//! The external build's options, report and error.

use std::io;
use std::path::{Path, PathBuf};

use hurray_format::EncodeError;

use crate::concat::ConcatError;
use crate::BuildError;

#[cfg(doc)]
use super::ExternalBuilder;

/// How much memory and disk an [`ExternalBuilder`] may use.
#[derive(Clone, Debug)]
pub struct ExternalOptions {
    /// The memory budget in bytes: entries held before spilling, spill
    /// buffers, and each partition's in-memory build stay within it (about;
    /// the build's own working memory is estimated from the record size).
    pub memory: u64,
    /// The directory under which a private spill directory is made (and
    /// removed at the end, whatever the outcome).
    pub temp_dir: PathBuf,
    /// How many entries to expect in all, when known (a file's size over its
    /// average line, say): it sizes the first partitioning so that no
    /// partition has to be split again. Without it, partitions that outgrow
    /// the budget are split in a third pass over their own bytes.
    pub expected_entries: Option<u64>,
}

/// What an external build did.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ExternalReport {
    /// Entries pushed.
    pub entries: u64,
    /// Entries merged into others or dropped as zeros.
    pub removed: u64,
    /// Non-zeros stored.
    pub nnz: u64,
    /// Partitions built (after any re-splits).
    pub partitions: u64,
    /// Partitions that outgrew the budget and were split again.
    pub resplit: u64,
    /// Bytes written to spill files: entry records and the output's buffers.
    pub bytes_spilled: u64,
    /// The container's length in bytes.
    pub bytes_written: u64,
    /// What `ModeOrderPolicy::Auto` chose, from the entries held before the first
    /// spill (not from all entries: see [`ExternalBuilder`]).
    pub mode_order: Vec<u32>,
}

/// Why an external build failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ExternalError {
    /// The entries or options are wrong, exactly as [`build`](crate::build())
    /// says; entry positions count from the first entry pushed.
    #[error(transparent)]
    Build(#[from] BuildError),
    /// Joining the parts failed: for an [`ExternalBuilder`] a bug, since
    /// its partitions are disjoint key ranges built by
    /// [`build`](crate::build()); for a [`FileJoiner`](super::FileJoiner), a
    /// part that is not what the join needs (its number is named).
    #[error("joining parts: {0}")]
    Join(#[source] Box<ConcatError<ExternalError>>),
    /// A part file given to [`FileJoiner::push_file`](super::FileJoiner::push_file)
    /// is not a CSF container, or not a part the join takes.
    #[error("{}: {reason}", path.display())]
    Part {
        /// The part's file.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// A file operation failed.
    #[error("cannot {op} {}: {source}", path.display())]
    Io {
        /// What was being done.
        op: &'static str,
        /// The file or directory.
        path: PathBuf,
        /// The cause.
        #[source]
        source: io::Error,
    },
    /// Writing the container failed.
    #[error("writing the container: {0}")]
    Encode(#[source] EncodeError),
}

impl From<ConcatError<ExternalError>> for ExternalError {
    fn from(error: ConcatError<ExternalError>) -> Self {
        match error {
            // A spill file's own error, with its path.
            ConcatError::Sink(error) => error,
            other => Self::Join(Box::new(other)),
        }
    }
}

impl ExternalError {
    pub(crate) fn io(op: &'static str, path: &Path, source: io::Error) -> Self {
        Self::Io { op, path: path.to_owned(), source }
    }
}
