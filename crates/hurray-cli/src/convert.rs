//! `hurray convert IN.tns -o OUT.hurray`: read, parse, build, write; in
//! memory, or within a memory budget.
//!
//! The parts, each using only those listed after it: this file chooses the
//! path; `external` builds within a budget (and hands an empty input to
//! `memory`); `memory` builds with the whole input in memory; `common` holds
//! what both paths use (the global options, the rank and `--mode-order`
//! checks, the build options, build errors, and the clock of `--timings`).

mod common;
mod external;
mod memory;

pub use common::Context;

use crate::cli::ConvertArgs;
use crate::error::Result;

/// Runs `convert`: in memory, or within a budget (`--memory`, or when the
/// input would not fit in available memory).
pub fn run(args: &ConvertArgs, cx: &Context) -> Result<()> {
    if args.temp_dir.is_some() && args.memory.is_none() && !cx.quiet {
        eprintln!(
            "hurray: --temp-dir is used only by the external build (--memory, or inputs larger than memory)"
        );
    }
    match external::budget(args)? {
        Some(budget) => external::run(args, cx, budget),
        None => memory::run(args, cx),
    }
}
