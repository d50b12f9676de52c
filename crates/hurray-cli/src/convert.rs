//! `hurray convert IN.tns -o OUT.hurray`: read, parse, build, write.

use std::path::Path;
use std::time::{Duration, Instant};

use csf_build::{BuildError, Built, Duplicates, ModeOrderPolicy, Options, OwnedCoo, StatisticsSection};
use hurray_format::limits::RankError;
use hurray_format::ElementType;

use crate::cli::{ConvertArgs, DuplicatesArg, ModeOrderArg};
use crate::error::{Error, Result};
use crate::external;
use crate::files::{self, Output};
use crate::format;
use crate::progress::{self, Progress};
use crate::tns::{self, Bool, TnsValue};

/// Global options that `convert` honours.
pub struct Context {
    /// `--quiet`.
    pub quiet: bool,
}

/// How long each phase took, and what it did.
struct Timings {
    read: Phase,
    read_how: &'static str,
    input_bytes: usize,
    parse: Phase,
    lines: u64,
    chunks: usize,
    nnz_in: usize,
    build: Phase,
    nnz: u64,
    write: Phase,
    file_bytes: u64,
}

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
        None => run_in_memory(args, cx),
    }
}

/// `convert` with the whole input and tensor in memory (also what an empty
/// input takes, from either path).
pub fn run_in_memory(args: &ConvertArgs, cx: &Context) -> Result<()> {
    let path = args.input.as_path();
    let started = Instant::now();
    let clock = Clock::start();
    let (input, gzip) = files::open_text(path)?;
    let read = clock.stop();

    let rank = rank_of_input(args, &input)?;
    check_mode_order_rank(args, rank)?;
    let mut timings = Timings {
        read,
        read_how: input.how(gzip),
        input_bytes: input.len(),
        parse: Phase::default(),
        lines: 0,
        chunks: 0,
        nnz_in: 0,
        build: Phase::default(),
        nnz: 0,
        write: Phase::default(),
        file_bytes: 0,
    };
    let typed = TypedConvert { args, cx, rank, input, timings: &mut timings };
    let built = match args.dtype {
        ElementType::F64 => typed.run::<f64>(),
        ElementType::F32 => typed.run::<f32>(),
        ElementType::I64 => typed.run::<i64>(),
        ElementType::I32 => typed.run::<i32>(),
        ElementType::I16 => typed.run::<i16>(),
        ElementType::I8 => typed.run::<i8>(),
        ElementType::U64 => typed.run::<u64>(),
        ElementType::U32 => typed.run::<u32>(),
        ElementType::U16 => typed.run::<u16>(),
        ElementType::U8 => typed.run::<u8>(),
        ElementType::Bool => typed.run::<Bool>(),
        other => return Err(Error::Usage(format!("unsupported --dtype for convert: {other}"))),
    }?;
    if let (Some(auto), false) = (&built.auto, cx.quiet) {
        print_auto(auto);
    }
    if built.removed > 0 && !cx.quiet {
        eprintln!("hurray: {}: {} entries merged or dropped", path.display(), built.removed);
    }

    let clock = Clock::start();
    timings.file_bytes = write(&built, &args.output, statistics_section(args))?;
    timings.write = clock.stop();
    if args.timings {
        print_timings(args, &timings, started.elapsed());
    }
    Ok(())
}

/// The rank: `--shape`'s (which the first data line must agree with), or
/// the first data line's.
fn rank_of_input(args: &ConvertArgs, input: &[u8]) -> Result<usize> {
    let path = args.input.as_path();
    let shape = args.shape.as_ref().map(|s| s.0.as_slice());
    match (shape, tns::first_data_line(input)) {
        (Some(shape), Some(first)) if first.fields != shape.len() + 1 => Err(Error::line(
            path,
            first.line,
            format!(
                "found {} fields, but --shape has {} dimensions (expected {} coordinates and a value)",
                first.fields,
                shape.len(),
                shape.len()
            ),
        )),
        (Some(shape), _) => Ok(shape.len()),
        (None, Some(first)) => check_rank(path, first),
        (None, None) => {
            Err(Error::data(path, "no non-zeros in the file: give --shape to write an empty tensor"))
        }
    }
}

/// The note on what `--mode-order auto` chose and what it compared.
fn print_auto(auto: &csf_build::AutoChoice) {
    // csf-build lists identity first, then shortest-extent-first (SPLATT's heuristic).
    let labels = ["identity", "shortest-extent-first"];
    let compared: Vec<String> = auto
        .compared
        .iter()
        .enumerate()
        .map(|(i, (order, bytes))| {
            let label = labels.get(i).copied().unwrap_or("candidate");
            format!("{label} {} stores {bytes}", format::commas(order))
        })
        .collect();
    eprintln!(
        "hurray: --mode-order auto chose {}: {} bytes of pos/crd ({})",
        format::commas(&auto.mode_order),
        auto.index_bytes,
        compared.join(", ")
    );
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
        parallel: true,
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

/// The typed part of `convert`: parse into the element type, then build.
struct TypedConvert<'a> {
    args: &'a ConvertArgs,
    cx: &'a Context,
    rank: usize,
    input: files::Input,
    timings: &'a mut Timings,
}

impl TypedConvert<'_> {
    fn run<V: TnsValue>(self) -> Result<Built> {
        let TypedConvert { args, cx, rank, input, timings } = self;
        let path = args.input.as_path();
        let show = progress::wanted(cx.quiet);

        let clock = Clock::start();
        let bar = Progress::bytes(show, input.len() as u64, "parsing");
        let shape = args.shape.as_ref().map(|s| s.0.as_slice());
        let parsed = tns::parse::<V>(&input, rank, shape, &|n| bar.inc(n))
            .map_err(|e| Error::line(path, e.line, e.message))?;
        bar.finish();
        // The input is not needed any more: give its memory back before the build.
        drop(input);
        timings.parse = clock.stop();
        (timings.lines, timings.chunks, timings.nnz_in) = (parsed.lines, parsed.chunks, parsed.len());

        let shape: Vec<u64> = shape.map_or_else(|| parsed.max.clone(), <[u64]>::to_vec);
        let options = options(args);
        let clock = Clock::start();
        let spinner = Progress::spinner(show, "building");
        // The parser's columns and value bytes are the builder's to keep: input
        // in storage order keeps its leaf column and values as the tensor's.
        let tns::Parsed { columns, values, .. } = parsed;
        let coo = OwnedCoo { shape, columns, element_type: V::TYPE, values };
        let built = csf_build::build_owned(coo, &options);
        spinner.finish();
        timings.build = clock.stop();
        let built = built.map_err(|e| build_error(path, e))?;
        timings.nnz = built.tensor.view().nnz();
        Ok(built)
    }
}

/// A build error, with input entries turned back into line numbers (the
/// input is read again for that: errors are rare, memory is not).
pub fn build_error(path: &Path, error: BuildError) -> Error {
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

/// Writes the container atomically and returns its size.
fn write(built: &Built, output: &Path, section: StatisticsSection) -> Result<u64> {
    let mut out = Output::create(Some(output))?;
    let size = built.write_to(&mut out, section).map_err(|e| match e {
        hurray_format::EncodeError::Io(io) => Error::io(output, io),
        other => Error::data(output, other),
    })?;
    out.commit()?;
    Ok(size)
}

fn print_timings(args: &ConvertArgs, t: &Timings, total: Duration) {
    let threads = rayon::current_num_threads();
    eprintln!(
        "hurray: timings: {} -> {} ({threads} thread{}; cpu = on-CPU time of all threads)",
        args.input.display(),
        args.output.display(),
        if threads == 1 { "" } else { "s" }
    );
    eprintln!("  read   {}  {} {}", t.read, format::bytes(t.input_bytes as u64), t.read_how);
    eprintln!(
        "  parse  {}  {} lines, {} entries, {} chunks ({:.0} MB/s)",
        t.parse,
        t.lines,
        t.nnz_in,
        t.chunks,
        t.input_bytes as f64 / 1e6 / t.parse.wall.as_secs_f64().max(1e-9)
    );
    eprintln!("  build  {}  nnz {}", t.build, t.nnz);
    eprintln!("  write  {}  {} (synced, renamed into place)", t.write, format::bytes(t.file_bytes));
    eprintln!("  total  {:8.3} s", total.as_secs_f64());
    if let Some(peak) = peak_rss() {
        eprintln!("  peak RSS {}", format::bytes(peak));
    }
}

/// Wall-clock and CPU time of one phase.
#[derive(Clone, Copy, Debug, Default)]
pub struct Phase {
    wall: Duration,
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
