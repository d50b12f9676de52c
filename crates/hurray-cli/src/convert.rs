//! `hurray convert IN.tns -o OUT.hurray` (or `IN.parquet`): read, parse,
//! build, write; in memory, or within a memory budget.
//!
//! The parts, each using only those listed after it: this file chooses the
//! path; `parquet` converts a Parquet file, down either path (feature
//! `parquet`); `external` builds a `.tns` within a budget (and hands an empty
//! input to `memory`); `memory` builds a `.tns` with the whole input in
//! memory; `common` holds what every path uses (the global options, the rank
//! and `--mode-order` checks, the build options, build errors, and the clock
//! of `--timings`).

mod common;
mod external;
mod memory;
#[cfg(feature = "parquet")]
mod parquet;

pub use common::Context;

use std::io::Read;
use std::path::Path;

use crate::cli::ConvertArgs;
use crate::error::{Error, Result};

/// Runs `convert`: in memory, or within a budget (`--memory`, or when the
/// input would not fit in available memory).
pub fn run(args: &ConvertArgs, cx: &Context) -> Result<()> {
    let parquet = is_parquet(&args.input);
    if !parquet && (args.coords.is_some() || args.values.is_some() || args.one_based) {
        return Err(Error::Usage(format!(
            "{}: --coords, --values and --one-based apply to Parquet input only (a name ending in \
             .parquet, .parq or .pq, or a file starting with PAR1)",
            args.input.display()
        )));
    }
    if args.temp_dir.is_some() && args.memory.is_none() && !cx.quiet {
        eprintln!(
            "hurray: --temp-dir is used only by the external build (--memory, or inputs larger than memory)"
        );
    }
    if parquet {
        return run_parquet(args, cx);
    }
    match external::budget(args)? {
        Some(budget) => external::run(args, cx, budget),
        None => memory::run(args, cx),
    }
}

#[cfg(feature = "parquet")]
fn run_parquet(args: &ConvertArgs, cx: &Context) -> Result<()> {
    parquet::run(args, cx)
}

#[cfg(not(feature = "parquet"))]
fn run_parquet(args: &ConvertArgs, _: &Context) -> Result<()> {
    Err(Error::Usage(format!(
        "{}: a Parquet file, but this hurray was built without Parquet support \
         (cargo feature `parquet`, on by default)",
        args.input.display()
    )))
}

/// A Parquet input: named `*.parquet`, `*.parq` or `*.pq` (any case), or
/// starting with Parquet's magic `PAR1`. Anything else is read as `.tns`
/// (an unreadable file too: the `.tns` path names the error).
fn is_parquet(path: &Path) -> bool {
    let named = path
        .extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| ["parquet", "parq", "pq"].iter().any(|p| e.eq_ignore_ascii_case(p)));
    let mut magic = [0u8; 4];
    named
        || std::fs::File::open(path)
            .and_then(|f| f.take(4).read_exact(&mut magic))
            .is_ok_and(|()| &magic == b"PAR1")
}
