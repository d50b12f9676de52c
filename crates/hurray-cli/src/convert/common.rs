//! What the in-memory and the external `convert` share: the global options
//! they honour, the rank and `--mode-order` checks, the build options the
//! arguments ask for, build errors in the tool's words, and the clock that
//! `--timings` reads.

use std::path::Path;
use std::time::{Duration, Instant};

use csf_build::{BuildError, Duplicates, ModeOrderPolicy, Options, StatisticsSection};
use hurray_format::limits::RankError;

use crate::cli::{ConvertArgs, DuplicatesArg, ModeOrderArg};
use crate::error::{Error, Result};
use crate::files;
use crate::format;
use crate::tns;

/// Global options that `convert` honours.
pub struct Context {
    /// `--quiet`.
    pub quiet: bool,
}

/// `--mode-order` must list one entry per dimension.
pub fn check_mode_order_rank(args: &ConvertArgs, rank: usize) -> Result<()> {
    match &args.mode_order {
        ModeOrderArg::Explicit(order) if order.len() != rank => Err(Error::data(
            &args.input,
            format!("--mode-order has {} entries, the tensor has rank {rank}", order.len()),
        )),
        _ => Ok(()),
    }
}

/// `--no-statistics`, as the builders take it.
pub fn statistics_section(args: &ConvertArgs) -> StatisticsSection {
    if args.no_statistics {
        StatisticsSection::Omit
    } else {
        StatisticsSection::Include
    }
}

/// The build options the arguments ask for.
pub fn options(args: &ConvertArgs) -> Options {
    Options {
        mode_order: match &args.mode_order {
            ModeOrderArg::Identity => ModeOrderPolicy::Identity,
            ModeOrderArg::Auto => ModeOrderPolicy::Auto,
            ModeOrderArg::Explicit(order) => ModeOrderPolicy::Explicit(order.clone()),
        },
        duplicates: match args.duplicates {
            DuplicatesArg::Error => Duplicates::Error,
            DuplicatesArg::Sum => Duplicates::Sum,
            DuplicatesArg::Last => Duplicates::Last,
            DuplicatesArg::First => Duplicates::First,
        },
        drop_zeros: args.drop_zeros,
        // One thread (`--threads 1`, or a one-core machine) takes the
        // sequential build: its output is the same, without the chunks'
        // merging (about 5 ms of a 10M-entry build).
        parallel: rayon::current_num_threads() > 1,
        quantize: args.quantize,
    }
}

/// The rank a file's first data line implies, when CSF can store it.
pub fn check_rank(path: &Path, first: tns::FirstLine) -> Result<usize> {
    let rank = first.fields.saturating_sub(1);
    if rank == 0 {
        return Err(Error::line(path, first.line, "a line needs 1-based coordinates and then a value"));
    }
    RankError::check(rank)
        .map_err(|e| Error::line(path, first.line, format!("{rank} coordinates and a value: {e}")))?;
    Ok(rank)
}
/// What the input's entries are, for naming them in build errors.
#[derive(Clone, Copy, Debug)]
pub enum Source {
    /// The data lines of a `.tns` file (found by reading it again).
    Tns,
    /// The rows of a Parquet file: entry `e` is row `e`, 0-based; its
    /// coordinates are shown as the file holds them (`--one-based` or not).
    #[cfg_attr(not(feature = "parquet"), allow(dead_code))]
    Parquet { one_based: bool },
}

/// A build error in the input's terms: entries become `.tns` line numbers
/// (the input is read again for that: errors are rare, memory is not) or
/// Parquet row numbers.
pub fn build_error(path: &Path, source: Source, error: BuildError) -> Error {
    match source {
        Source::Tns => tns_build_error(path, error),
        Source::Parquet { one_based } => parquet_build_error(path, one_based, error),
    }
}

fn tns_build_error(path: &Path, error: BuildError) -> Error {
    let lines = |entries: &[usize]| -> Option<Vec<u64>> {
        let (input, _) = files::open_text(path).ok()?;
        entries.iter().map(|&e| tns::line_of_entry(&input, e)).collect()
    };
    match error {
        BuildError::Duplicate { index, first, second } => {
            let one_based: Vec<u64> = index.iter().map(|&c| c + 1).collect();
            let what = format!(
                "index ({}) is given twice (1-based coordinates {}); \
                 --duplicates sum|last|first merges duplicates",
                format::commas(&index),
                one_based.iter().map(u64::to_string).collect::<Vec<_>>().join(" "),
            );
            match lines(&[first, second]).as_deref() {
                Some(&[a, b]) => Error::line(path, b, format!("duplicate of line {a}: {what}")),
                _ => Error::data(path, format!("entries {first} and {second}: {what}")),
            }
        }
        BuildError::OutOfBounds { entry, dim, coord, extent } => {
            let what =
                format!("coordinate {} of dimension {} is outside the extent {extent}", coord + 1, dim + 1);
            match lines(&[entry]).as_deref() {
                Some(&[line]) => Error::line(path, line, what),
                _ => Error::data(path, what),
            }
        }
        other => Error::data(path, other),
    }
}

fn parquet_build_error(path: &Path, one_based: bool, error: BuildError) -> Error {
    let shown = |c: u64| c.saturating_add(u64::from(one_based));
    match error {
        BuildError::Duplicate { index, first, second } => {
            let index: Vec<u64> = index.iter().map(|&c| shown(c)).collect();
            Error::data(
                path,
                format!(
                    "rows {first} and {second} hold the same coordinates ({}); \
                     --duplicates sum|last|first merges duplicates",
                    format::commas(&index)
                ),
            )
        }
        BuildError::OutOfBounds { entry, dim, coord, extent } => Error::data(
            path,
            format!(
                "row {entry}: coordinate {} of dimension {dim} is outside the extent {extent}",
                shown(coord)
            ),
        ),
        other => Error::data(path, other),
    }
}

/// Wall-clock and CPU time of one phase.
#[derive(Clone, Copy, Debug, Default)]
pub struct Phase {
    pub wall: Duration,
    cpu: Option<Duration>,
}

impl std::fmt::Display for Phase {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:8.3} s", self.wall.as_secs_f64())?;
        match self.cpu {
            Some(cpu) => write!(f, " (cpu {:7.3} s)", cpu.as_secs_f64()),
            None => f.write_str("                "),
        }
    }
}

/// Starts timing a phase.
pub struct Clock {
    wall: Instant,
    cpu: Option<Duration>,
}

impl Clock {
    pub fn start() -> Self {
        Self { wall: Instant::now(), cpu: cpu_time() }
    }

    pub fn stop(&self) -> Phase {
        let cpu = match (self.cpu, cpu_time()) {
            (Some(a), Some(b)) => Some(b.saturating_sub(a)),
            _ => None,
        };
        Phase { wall: self.wall.elapsed(), cpu }
    }
}

/// On-CPU time of all the process's live threads (Linux: the first field of
/// each `/proc/self/task/*/schedstat`, in nanoseconds). Rayon's workers live
/// as long as the process, so differences between two readings are exact.
/// Wall-clock time on a busy machine overstates a phase's cost; this does not.
fn cpu_time() -> Option<Duration> {
    let mut total = 0u64;
    for task in std::fs::read_dir("/proc/self/task").ok()? {
        let stat = std::fs::read_to_string(task.ok()?.path().join("schedstat")).ok()?;
        total += stat.split_whitespace().next()?.parse::<u64>().ok()?;
    }
    Some(Duration::from_nanos(total))
}

/// The process's peak resident set size (Linux's `VmHWM`), when known.
pub fn peak_rss() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}
