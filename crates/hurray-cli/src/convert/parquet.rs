//! `hurray convert IN.parquet`: the file's rows decoded a batch at a time
//! (a batch never crosses a row group), either gathered for the in-memory
//! build or pushed into the external builder, which holds at most its
//! budget. Both write the file `convert` of the same entries as `.tns` writes.

use std::time::{Duration, Instant};

use csf_build::{ExternalBuilder, ExternalOptions, ExternalReport, Indices, OwnedCoo};
use hurray_format::ElementType;

use super::common::{self, Clock, Context, Phase, Source};
use super::{external, memory};
use crate::cleanup;
use crate::cli::ConvertArgs;
use crate::error::{Error, Result};
use crate::files;
use crate::format;
use crate::parquet::{Entries, FromParquet, Request, Table};
use crate::progress::{self, Progress};
use crate::tns::Bool;

/// Rows decoded at a time for the in-memory build.
const BATCH_ROWS: usize = 1 << 16;

/// The in-memory build needs about this many bytes per byte of decoded
/// entries (the entries, then the tensor built from them beside them).
const IN_MEMORY_BYTES_PER_ENTRY_BYTE: u64 = 3;

/// The most entries the external builder is told to expect: the footer's
/// row count is a claim, and only sizes the first partitioning.
const MAX_EXPECTED_ENTRIES: u64 = 1 << 48;

/// Runs `convert` on a Parquet file.
pub fn run(args: &ConvertArgs, cx: &Context) -> Result<()> {
    let started = Instant::now();
    let clock = Clock::start();
    let request = Request {
        coords: args.coords.as_deref(),
        values: args.values.as_deref(),
        one_based: args.one_based,
        shape: args.shape.as_ref().map(|s| s.0.as_slice()),
    };
    let table = Table::open(&args.input, request)?;
    let open = clock.stop();
    common::check_mode_order_rank(args, table.rank())?;
    let dtype = match args.dtype {
        Some(dtype) => dtype,
        None => table.natural_type()?,
    };
    let run = Run { args, cx, table, open, started };
    match dtype {
        ElementType::F64 => run.typed::<f64>(),
        ElementType::F32 => run.typed::<f32>(),
        ElementType::I64 => run.typed::<i64>(),
        ElementType::I32 => run.typed::<i32>(),
        ElementType::I16 => run.typed::<i16>(),
        ElementType::I8 => run.typed::<i8>(),
        ElementType::U64 => run.typed::<u64>(),
        ElementType::U32 => run.typed::<u32>(),
        ElementType::U16 => run.typed::<u16>(),
        ElementType::U8 => run.typed::<u8>(),
        ElementType::Bool => run.typed::<Bool>(),
        other => Err(Error::Usage(format!("unsupported --dtype for convert: {other}"))),
    }
}

/// A conversion under way: the file opened, its columns chosen.
struct Run<'a> {
    args: &'a ConvertArgs,
    cx: &'a Context,
    table: Table,
    open: Phase,
    started: Instant,
}

impl Run<'_> {
    fn typed<V: FromParquet>(self) -> Result<()> {
        match self.budget(V::SIZE) {
            Some(budget) => self.external::<V>(budget),
            None => self.memory::<V>(),
        }
    }

    fn source(&self) -> Source {
        Source::Parquet { one_based: self.args.one_based }
    }

    /// `--memory`, or half the available memory when the in-memory build of
    /// the rows the footer declares would not fit in it; `None` for the
    /// in-memory build.
    fn budget(&self, value_size: usize) -> Option<u64> {
        if let Some(memory) = self.args.memory {
            return Some(memory);
        }
        let available = files::available_memory()?;
        let entry = (self.table.rank() as u64).saturating_mul(8).saturating_add(value_size as u64);
        let needed =
            self.table.declared_rows().saturating_mul(entry).saturating_mul(IN_MEMORY_BYTES_PER_ENTRY_BYTE);
        (needed > available).then_some(available / 2)
    }

    /// Decodes every row, then builds and writes in memory.
    fn memory<V: FromParquet>(mut self) -> Result<()> {
        let (args, path) = (self.args, self.args.input.as_path());
        let show = progress::wanted(self.cx.quiet);
        let clock = Clock::start();
        let bar = Progress::bytes(show, self.table.file_len(), "decoding");
        let mut entries = Entries::new(self.table.rank());
        while self.table.read_into::<V>(BATCH_ROWS, &mut entries)? > 0 {
            bar.set(self.table.bytes_done(), self.table.file_len());
        }
        bar.finish();
        let decode = clock.stop();
        let rows = entries.len();
        let shape = match &args.shape {
            Some(shape) => shape.0.clone(),
            None if rows == 0 => {
                return Err(Error::data(path, "no rows in the file: give --shape to write an empty tensor"))
            }
            None => entries.extent.clone(),
        };

        let clock = Clock::start();
        let spinner = Progress::spinner(show, "building");
        let Entries { columns, values, .. } = entries;
        let coo = OwnedCoo { shape, columns, element_type: V::TYPE, values };
        let built = csf_build::build_owned(coo, &common::options(args));
        spinner.finish();
        let build = clock.stop();
        let built = built.map_err(|e| common::build_error(path, self.source(), e))?;
        memory::notes(path, &built, self.cx);

        let clock = Clock::start();
        let file_bytes = memory::write(&built, &args.output, common::statistics_section(args))?;
        let write = clock.stop();
        if args.timings {
            self.print_timings("in memory");
            eprintln!("  decode {decode}  {rows} rows");
            eprintln!("  build  {build}  nnz {}", built.tensor.view().nnz());
            eprintln!("  write  {write}  {} (synced, renamed into place)", format::bytes(file_bytes));
            self.print_total();
        }
        Ok(())
    }

    /// Decodes the rows a batch at a time into the external builder.
    fn external<V: FromParquet>(mut self, budget: u64) -> Result<()> {
        let (args, path) = (self.args, self.args.input.as_path());
        let rank = self.table.rank();
        let show = progress::wanted(self.cx.quiet);
        // An eighth of the budget a batch, as the `.tns` reader's blocks.
        let entry = rank.saturating_mul(8).saturating_add(V::SIZE) as u64;
        let batch_rows = usize::try_from(budget / 8 / entry).unwrap_or(usize::MAX).clamp(1 << 10, 1 << 20);
        let clock = Clock::start();
        let mut batch = Entries::new(rank);
        if self.table.read_into::<V>(batch_rows, &mut batch)? == 0 {
            // No rows: the in-memory build writes the empty tensor (or says why not).
            return self.memory::<V>();
        }
        let limits = ExternalOptions {
            memory: budget,
            temp_dir: external::temp_dir(args),
            expected_entries: Some(self.table.declared_rows().min(MAX_EXPECTED_ENTRIES)),
        };
        let shape = args.shape.as_ref().map(|s| s.0.clone());
        let source = self.source();
        let mut builder = ExternalBuilder::new(rank, shape, V::TYPE, common::options(args), limits)
            .map_err(|e| external::external_error(path, source, e))?;
        let _spill_guard = cleanup::register(builder.spill_dir());
        let bar = Progress::bytes(show, self.table.file_len(), "spilling");
        loop {
            builder
                .push(Indices::Columnar(&batch.column_slices()), &batch.values)
                .map_err(|e| external::external_error(path, source, e))?;
            batch.clear();
            bar.set(self.table.bytes_done(), self.table.file_len());
            if self.table.read_into::<V>(batch_rows, &mut batch)? == 0 {
                break;
            }
        }
        bar.finish();
        let spill = clock.stop();

        let clock = Clock::start();
        let report = external::finish(builder, args, show, source)?;
        let build = clock.stop();
        external::notes(args, self.cx, &report);
        if args.timings {
            self.print_external_timings(budget, spill, build, &report);
        }
        Ok(())
    }

    /// The first lines of `--timings`: the files, the threads, how the file was opened.
    fn print_timings(&self, how: &str) {
        let threads = rayon::current_num_threads();
        eprintln!(
            "hurray: timings: {} -> {} ({threads} thread{}, {how}; cpu = on-CPU time of all threads)",
            self.args.input.display(),
            self.args.output.display(),
            if threads == 1 { "" } else { "s" }
        );
        eprintln!(
            "  open   {}  {} memory-mapped, Parquet, {} row groups, columns {}",
            self.open,
            format::bytes(self.table.file_len()),
            self.table.row_groups(),
            self.table.describe()
        );
    }

    fn print_external_timings(&self, budget: u64, spill: Phase, build: Phase, report: &ExternalReport) {
        self.print_timings(&format!("external build within {}", format::bytes(budget)));
        eprintln!("  decode+spill     {spill}  {} rows", self.table.rows_read());
        super::external::print_build_report(build, report);
        self.print_total();
    }

    fn print_total(&self) {
        let total: Duration = self.started.elapsed();
        eprintln!("  total  {:8.3} s", total.as_secs_f64());
        if let Some(peak) = common::peak_rss() {
            eprintln!("  peak RSS {}", format::bytes(peak));
        }
    }
}
