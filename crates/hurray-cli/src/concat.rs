//! `hurray concat PART... -o OUT`: parts holding consecutive storage-order
//! key ranges of one tensor (what a cluster build writes) joined into one
//! file by `csf_build::join_files`, one part in memory at a time.

use csf_build::{ExternalError, StatisticsSection};

use crate::cli::ConcatArgs;
use crate::error::{Error, Result};
use crate::files::{self, Output};
use crate::format;

/// Runs `concat`.
pub fn run(args: &ConcatArgs, quiet: bool) -> Result<()> {
    let temp_dir = args.temp_dir.clone().unwrap_or_else(|| files::directory_of(&args.output));
    let section = if args.no_statistics { StatisticsSection::Omit } else { StatisticsSection::Include };
    let mut out = Output::create(Some(&args.output))?;
    let report = csf_build::join_files(&args.parts, &mut out, args.quantize, section, &temp_dir).map_err(
        |e| match e {
            // The output failed (a full disk, say): name it.
            ExternalError::Encode(hurray_format::EncodeError::Io(io)) => Error::io(&args.output, io),
            ExternalError::Part { path, reason } => Error::data(&path, reason),
            ExternalError::Io { path, source, .. } => Error::io(&path, source),
            // Quantization that cannot apply to the joined values, and the rest.
            other => Error::data(&args.output, other),
        },
    )?;
    out.commit()?;
    if !quiet {
        eprintln!(
            "hurray: joined {} part{} into {}: nnz {}, {}",
            report.parts,
            if report.parts == 1 { "" } else { "s" },
            args.output.display(),
            report.nnz,
            format::bytes(report.bytes_written)
        );
    }
    Ok(())
}
