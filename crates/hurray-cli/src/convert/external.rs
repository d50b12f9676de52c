//! `hurray convert` within a memory budget: the `.tns` input (gzip too) read
//! as a stream of blocks, never whole, each block parsed and pushed into
//! csf-build's external builder, which spills to key-range partitions and
//! builds them one at a time. The file written is the in-memory build's.

use std::fs::File;
use std::io::{self, BufReader, Read};
use std::path::{Path, PathBuf};
use std::time::Instant;

use csf_build::{ExternalBuilder, ExternalError, ExternalOptions, ExternalReport, Indices};
use hurray_format::ElementType;

use super::common::{self, Clock, Context, Phase, Source};
use super::memory;
use crate::cleanup;
use crate::cli::ConvertArgs;
use crate::error::{Error, Result};
use crate::files::{self, Output};
use crate::format;
use crate::progress::{self, Progress};
use crate::tns::{self, Bool, TnsValue};

/// Bytes of `.tns` text parsed at a time: an eighth of the budget (the
/// parsed entries take about as much again), between 64 KiB and 64 MiB.
fn block_len(budget: u64) -> usize {
    usize::try_from(budget / 8).unwrap_or(usize::MAX).clamp(1 << 16, 64 << 20)
}

/// In-memory convert needs about this many bytes per byte of plain `.tns`
/// text (the text, the parsed entries and the built tensor; docs/benchmarks-history.md,
/// "Figures behind constants"), and gzip text is about four times its
/// compressed size.
const IN_MEMORY_BYTES_PER_TEXT_BYTE: u64 = 3;
const GZIP_RATIO: u64 = 4;

/// The budget to build within: `--memory`, or half the available memory when
/// the in-memory build would not fit in it; `None` for the in-memory build.
pub fn budget(args: &ConvertArgs) -> Result<Option<u64>> {
    if let Some(memory) = args.memory {
        return Ok(Some(memory));
    }
    let path = args.input.as_path();
    let Ok(meta) = std::fs::metadata(path) else { return Ok(None) };
    let Some(available) = files::available_memory() else { return Ok(None) };
    let text = if is_gzip_file(path)? { meta.len().saturating_mul(GZIP_RATIO) } else { meta.len() };
    let needed = text.saturating_mul(IN_MEMORY_BYTES_PER_TEXT_BYTE);
    Ok((needed > available).then_some(available / 2))
}

fn is_gzip_file(path: &Path) -> Result<bool> {
    let mut magic = [0u8; 2];
    let file = File::open(path).map_err(|e| Error::io(path, e))?;
    let n = file.take(2).read(&mut magic).map_err(|e| Error::io(path, e))?;
    Ok(n == 2 && files::is_gzip(&magic))
}

/// Runs the external convert within `budget` bytes.
pub fn run(args: &ConvertArgs, cx: &Context, budget: u64) -> Result<()> {
    match args.dtype.unwrap_or(ElementType::F64) {
        ElementType::F64 => run_typed::<f64>(args, cx, budget),
        ElementType::F32 => run_typed::<f32>(args, cx, budget),
        ElementType::I64 => run_typed::<i64>(args, cx, budget),
        ElementType::I32 => run_typed::<i32>(args, cx, budget),
        ElementType::I16 => run_typed::<i16>(args, cx, budget),
        ElementType::I8 => run_typed::<i8>(args, cx, budget),
        ElementType::U64 => run_typed::<u64>(args, cx, budget),
        ElementType::U32 => run_typed::<u32>(args, cx, budget),
        ElementType::U16 => run_typed::<u16>(args, cx, budget),
        ElementType::U8 => run_typed::<u8>(args, cx, budget),
        ElementType::Bool => run_typed::<Bool>(args, cx, budget),
        other => Err(Error::Usage(format!("unsupported --dtype for convert: {other}"))),
    }
}

/// The input as a stream of whole lines.
struct Blocks {
    path: PathBuf,
    reader: Box<dyn Read>,
    /// Text read but not yet handed out (a partial last line).
    buffer: Vec<u8>,
    block: usize,
    eof: bool,
    bytes_read: u64,
}

impl Blocks {
    fn open(path: &Path, block: usize) -> Result<(Self, bool)> {
        let gzip = is_gzip_file(path)?;
        let file = File::open(path).map_err(|e| Error::io(path, e))?;
        let reader: Box<dyn Read> = if gzip {
            // Multi-member, so that concatenated .gz files read whole, as gunzip does.
            Box::new(flate2::read::MultiGzDecoder::new(BufReader::with_capacity(1 << 16, file)))
        } else {
            Box::new(file)
        };
        let blocks =
            Self { path: path.to_owned(), reader, buffer: Vec::new(), block, eof: false, bytes_read: 0 };
        Ok((blocks, gzip))
    }

    /// Reads until the buffer holds `block` bytes or the input ends.
    fn fill(&mut self) -> Result<()> {
        while !self.eof && self.buffer.len() < self.block {
            let want = (self.block - self.buffer.len()) as u64;
            let before = self.buffer.len();
            (&mut self.reader).take(want).read_to_end(&mut self.buffer).map_err(|e| match e.kind() {
                io::ErrorKind::InvalidInput | io::ErrorKind::InvalidData => {
                    Error::data(&self.path, format!("gzip: {e}"))
                }
                _ => Error::io(&self.path, e),
            })?;
            self.bytes_read += (self.buffer.len() - before) as u64;
            self.eof = self.buffer.len() == before;
        }
        Ok(())
    }

    /// The next run of whole lines (all that is left at the end); `None` at
    /// the end.
    fn next(&mut self) -> Result<Option<Vec<u8>>> {
        self.fill()?;
        if self.buffer.is_empty() {
            return Ok(None);
        }
        let cut = if self.eof {
            self.buffer.len()
        } else {
            // A line longer than a block: read on until it ends.
            loop {
                if let Some(i) = self.buffer.iter().rposition(|&b| b == b'\n') {
                    break i + 1;
                }
                self.block = self.block.saturating_mul(2);
                self.fill()?;
                if self.eof {
                    break self.buffer.len();
                }
            }
        };
        let rest = self.buffer.split_off(cut);
        Ok(Some(std::mem::replace(&mut self.buffer, rest)))
    }
}

fn run_typed<V: TnsValue>(args: &ConvertArgs, cx: &Context, budget: u64) -> Result<()> {
    let path = args.input.as_path();
    let started = Instant::now();
    let show = progress::wanted(cx.quiet);
    let input_len = std::fs::metadata(path).map_err(|e| Error::io(path, e))?.len();
    let (mut blocks, gzip) = Blocks::open(path, block_len(budget))?;
    let clock = Clock::start();
    let Some(first) = blocks.next()? else {
        return memory::run(args, cx);
    };
    let shape = args.shape.as_ref().map(|s| s.0.clone());
    let rank = rank_of_first_block(path, shape.as_deref(), &first)?;
    common::check_mode_order_rank(args, rank)?;
    let expected_entries = if gzip { None } else { expected_entries(&first, input_len) };
    let limits = ExternalOptions { memory: budget, temp_dir: temp_dir(args), expected_entries };
    let mut builder = ExternalBuilder::new(rank, shape.clone(), V::TYPE, common::options(args), limits)
        .map_err(|e| external_error(path, Source::Tns, e))?;
    let _spill_guard = cleanup::register(builder.spill_dir());

    let bar = Progress::bytes(show && !gzip, input_len, "spilling");
    let mut block = Some(first);
    // Lines before the current block: the parser counts each block's (its
    // error lines are 1-based within the block).
    let (mut lines, mut entries) = (0u64, 0usize);
    while let Some(text) = block {
        let parsed = tns::parse::<V>(&text, rank, shape.as_deref(), &|n| bar.inc(n))
            .map_err(|e| Error::line(path, lines + e.line, e.message))?;
        lines += parsed.lines;
        entries += parsed.len();
        builder
            .push(Indices::Columnar(&parsed.column_slices()), &parsed.values)
            .map_err(|e| external_error(path, Source::Tns, e))?;
        block = blocks.next()?;
    }
    bar.finish();
    let spill = clock.stop();

    let clock = Clock::start();
    let report = finish(builder, args, show, Source::Tns)?;
    let build = clock.stop();
    notes(args, cx, &report);
    if args.timings {
        print_timings(args, budget, &blocks, (lines, entries), spill, build, &report, started);
    }
    Ok(())
}

/// The notes on stderr after an external build: how many entries were
/// merged or dropped, and what `--mode-order auto` chose.
pub(super) fn notes(args: &ConvertArgs, cx: &Context, report: &ExternalReport) {
    if report.removed > 0 && !cx.quiet {
        eprintln!("hurray: {}: {} entries merged or dropped", args.input.display(), report.removed);
    }
    if matches!(args.mode_order, crate::cli::ModeOrderArg::Auto) && !cx.quiet {
        eprintln!(
            "hurray: --mode-order auto chose {} from the entries held before the first spill",
            format::commas(&report.mode_order)
        );
    }
}

/// The rank: `--shape`'s, or the first data line's (which must be in the
/// first block: a block holds whole lines).
fn rank_of_first_block(path: &Path, shape: Option<&[u64]>, first: &[u8]) -> Result<usize> {
    match (shape, tns::first_data_line(first)) {
        (Some(shape), _) => Ok(shape.len()),
        (None, Some(line)) => common::check_rank(path, line),
        (None, None) => Err(Error::data(path, "no non-zeros in the first block of the file: give --shape")),
    }
}

/// Where the spill files go: `--temp-dir`, or the output's directory.
pub(super) fn temp_dir(args: &ConvertArgs) -> PathBuf {
    args.temp_dir.clone().unwrap_or_else(|| crate::files::directory_of(&args.output))
}

/// How many entries a plain file of `input_len` bytes holds, judged by the
/// first block's lines per byte (the builder sizes its partitions by it).
fn expected_entries(first: &[u8], input_len: u64) -> Option<u64> {
    (!first.is_empty()).then(|| {
        let lines = first.iter().filter(|&&b| b == b'\n').count().max(1) as u64;
        input_len.saturating_mul(lines) / first.len() as u64
    })
}

/// Builds the partitions and writes the file atomically, with a progress bar.
pub(super) fn finish(
    mut builder: ExternalBuilder,
    args: &ConvertArgs,
    show: bool,
    source: Source,
) -> Result<ExternalReport> {
    let path = args.input.as_path();
    let bar = std::sync::Arc::new(Progress::bytes(show, 0, "building"));
    let shared = std::sync::Arc::clone(&bar);
    builder.on_build_progress(move |done, total| shared.set(done, total));
    let mut out = Output::create(Some(&args.output))?;
    let report = builder.finish(&mut out, common::statistics_section(args));
    if let Ok(bar) = std::sync::Arc::try_unwrap(bar) {
        bar.finish();
    }
    let report = report.map_err(|e| match e {
        // The output failed (a full disk, say): name it, not the input.
        ExternalError::Encode(hurray_format::EncodeError::Io(io)) => Error::io(&args.output, io),
        other => external_error(path, source, other),
    })?;
    out.commit()?;
    Ok(report)
}

/// An external build error as one line: entry positions become line or
/// row numbers, I/O errors name their file.
pub(super) fn external_error(path: &Path, source: Source, error: ExternalError) -> Error {
    match error {
        ExternalError::Build(e) => common::build_error(path, source, e),
        ExternalError::Io { path: file, source, .. } => Error::io(&file, source),
        other => Error::data(path, other),
    }
}

#[allow(clippy::too_many_arguments)]
fn print_timings(
    args: &ConvertArgs,
    budget: u64,
    blocks: &Blocks,
    (lines, entries): (u64, usize),
    spill: Phase,
    build: Phase,
    report: &ExternalReport,
    started: Instant,
) {
    let threads = rayon::current_num_threads();
    eprintln!(
        "hurray: timings: {} -> {} ({threads} thread{}, external build within {})",
        args.input.display(),
        args.output.display(),
        if threads == 1 { "" } else { "s" },
        format::bytes(budget)
    );
    eprintln!(
        "  read+parse+spill {spill}  {} lines, {entries} entries, {} of text",
        lines,
        format::bytes(blocks.bytes_read)
    );
    print_build_report(build, report);
    eprintln!("  total  {:8.3} s", started.elapsed().as_secs_f64());
    if let Some(peak) = common::peak_rss() {
        eprintln!("  peak RSS {}", format::bytes(peak));
    }
}

/// The `--timings` lines of the external build's second pass, for `.tns`
/// and Parquet input alike.
pub(super) fn print_build_report(build: Phase, report: &ExternalReport) {
    eprintln!(
        "  build+join+write {build}  {} partitions ({} split again), nnz {}",
        report.partitions, report.resplit, report.nnz
    );
    eprintln!(
        "  bytes: {} spilled, {} written (synced, renamed into place)",
        format::bytes(report.bytes_spilled),
        format::bytes(report.bytes_written)
    );
}
