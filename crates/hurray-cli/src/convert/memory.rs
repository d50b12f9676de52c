//! `hurray convert` with the whole input and tensor in memory: read the
//! file, parse it into the element type, build, write.

use std::path::Path;
use std::time::{Duration, Instant};

use csf_build::{Built, OwnedCoo, StatisticsSection};
use hurray_format::ElementType;

use super::common::{
    build_error, check_mode_order_rank, check_rank, options, peak_rss, statistics_section, Clock, Context,
    Phase, Source,
};
use crate::cli::ConvertArgs;
use crate::error::{Error, Result};
use crate::files::{self, Output};
use crate::format;
use crate::progress::{self, Progress};
use crate::tns::{self, Bool, TnsValue};

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

/// `convert` with the whole input and tensor in memory (also what an empty
/// input takes, from either path).
pub fn run(args: &ConvertArgs, cx: &Context) -> Result<()> {
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
    let built = match args.dtype.unwrap_or(ElementType::F64) {
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
    notes(path, &built, cx);

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

/// The notes on stderr after a build: what `--mode-order auto` chose, and
/// how many entries were merged or dropped.
pub(super) fn notes(path: &Path, built: &Built, cx: &Context) {
    if let (Some(auto), false) = (&built.auto, cx.quiet) {
        print_auto(auto);
    }
    if built.removed > 0 && !cx.quiet {
        eprintln!("hurray: {}: {} entries merged or dropped", path.display(), built.removed);
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
        let built = built.map_err(|e| build_error(path, Source::Tns, e))?;
        timings.nnz = built.tensor.view().nnz();
        Ok(built)
    }
}

/// Writes the container atomically and returns its size.
pub(super) fn write(built: &Built, output: &Path, section: StatisticsSection) -> Result<u64> {
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
