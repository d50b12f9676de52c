//! The `hurray` command-line tool: convert FROSTT `.tns` tensors and Parquet
//! tables to Hurray CSF files, and inspect, validate, query and dump those files.
//!
//! Exit status: 0 success, 1 invalid or unreadable data, 2 usage error.
//! Every error is one line on stderr, `hurray: FILE: what is wrong`.

mod cleanup;
mod cli;
mod concat;
mod convert;
mod cpd;
mod direct;
mod dump;
mod error;
mod files;
mod format;
mod get;
mod inspect;
#[cfg(feature = "parquet")]
mod parquet;
mod progress;
mod read;
mod tns;
mod validate;

use std::io::Write;

use clap::Parser;

use crate::cli::{Cli, Command};
use crate::error::{Error, EXIT_OK};

fn main() {
    // clap exits 2 on usage errors (0 for --help and --version).
    let cli = Cli::parse();
    cleanup::install();
    let code = match run(&cli) {
        Ok(code) => code,
        Err(error) => {
            if !matches!(error, Error::BrokenPipe) {
                let _ = writeln!(std::io::stderr(), "hurray: {error}");
            }
            error.exit_code()
        }
    };
    std::process::exit(code);
}

fn run(cli: &Cli) -> Result<i32, Error> {
    if let Some(threads) = cli.threads {
        rayon::ThreadPoolBuilder::new()
            .num_threads(usize::from(threads))
            .build_global()
            .map_err(|e| Error::Usage(format!("--threads: {e}")))?;
    }
    match &cli.command {
        Command::Convert(args) => convert::run(args, &convert::Context { quiet: cli.quiet })?,
        Command::Inspect(args) => inspect::run(args)?,
        Command::Validate(args) => return validate::run(args),
        Command::Get(args) => get::run(args)?,
        Command::Dump(args) => dump::run(args)?,
        Command::Cpd(args) => cpd::run(args, cli.quiet)?,
        Command::Concat(args) => concat::run(args, cli.quiet)?,
    }
    Ok(EXIT_OK)
}
