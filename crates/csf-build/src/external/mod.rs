//! Building tensors larger than memory, within a memory budget, through
//! spill files in a temporary directory.
//!
//! The output is the file an in-memory [`build`](crate::build()) writes for the
//! same entries and options, byte for byte. It rests on one property: sort the
//! entries by their storage-order key, cut the sorted sequence into
//! consecutive key ranges, build each range alone, and the parts join exactly
//! ([`crate::concat`]).
//!
//! Two passes over disk:
//! 1. *Spill.* Entries arrive in batches ([`ExternalBuilder::push`]). The
//!    first quarter of the budget holds them in memory; when it fills, their
//!    sorted keys choose key-range partitions (quantiles, so that each
//!    partition's expected share fits the budget), and every entry from then
//!    on is appended to its partition's spill file, in input order.
//! 2. *Build.* [`ExternalBuilder::finish`] takes the partitions in key order.
//!    One that holds more entries than a build fits in the budget is split
//!    again by quantiles of its own keys; the others are read back whole,
//!    built with `build` and the same options, and joined, their levels and
//!    values streamed to one spill file per buffer; the container is then
//!    written from those files ([`hurray_format::encode_streamed`]).
//!
//! Duplicates share a key, so they always meet in one partition, in input
//! order: every duplicate policy, `drop_zeros`, and sums (added in the same
//! order) come out as in memory. A single key with more duplicates than the
//! budget holds cannot be split and is built over budget.

mod join;
mod output;
mod partition;
mod quantized;
mod spill;
mod types;

use std::borrow::Cow;
use std::io::Write;
use std::path::{Path, PathBuf};

use hurray_format::ElementType;

use crate::build::{check_permutation, entry_count};
use crate::order::choose;
use crate::values::{pack, Slots};
use crate::{
    build, check_rank, BuildError, Coo, Duplicates, Indices, ModeOrderPolicy, Options, Source,
    StatisticsSection,
};
pub use join::{join_files, FileJoiner, JoinReport};
use partition::{partition_of, quantiles};
use spill::{RecordReader, RecordShape, SpillDir, SpillWriter};
pub use types::{ExternalError, ExternalOptions, ExternalReport};

/// Bytes a partition's build takes per spilled record byte: the records
/// read back (coordinates, positions, values), the builder's keys and slots,
/// and the levels it makes.
const BUILD_BYTES_PER_RECORD_BYTE: u64 = 4;
/// Open spill files at once (one per partition); more partitions than this
/// are made by splitting again.
const MAX_PARTITIONS: usize = 256;
/// The smallest spill-file buffer worth a write call.
const MIN_SPILL_BUFFER: usize = 4096;

/// Builds a CSF tensor from entries pushed in batches, holding at most about
/// [`ExternalOptions::memory`] bytes: its entries go to spill files of
/// key-range partitions, each built in memory and joined (the crate docs,
/// "Larger than memory", say how).
///
/// `ModeOrderPolicy::Auto` decides from the entries held before the first spill (a
/// quarter of the budget), with the guarantee of [`AutoChoice`](crate::AutoChoice)
/// for those entries: on the whole input, the order that an in-memory build
/// would choose when the first entries represent the rest. The chosen order is
/// in the report. Quantization takes a second pass over the joined values:
/// each group's range is gathered as the parts are joined (per-channel
/// schemes also spill each leaf's channel), then the values are encoded with
/// [`quantize`](crate::quantize())'s arithmetic, so the file is the one `build`
/// writes.
///
/// ```
/// use csf_build::{ExternalBuilder, ExternalOptions, Indices, Options, StatisticsSection};
/// use hurray_format::ElementType;
///
/// let dir = std::env::temp_dir();
/// let options = ExternalOptions { memory: 64 << 10, temp_dir: dir, expected_entries: None };
/// let mut builder = ExternalBuilder::new(3, Some(vec![4, 4, 4]), ElementType::F32, Options::default(), options)?;
/// builder.push(Indices::RowMajor(&[0, 1, 2, 3, 3, 3]), bytemuck::cast_slice(&[1.0f32, 2.0]))?;
/// let mut file = Vec::new();
/// let report = builder.finish(&mut file, StatisticsSection::Include)?;
/// assert_eq!(report.nnz, 2);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct ExternalBuilder {
    shape: Option<Vec<u64>>,
    /// One past the largest coordinate seen per dimension (the inferred shape).
    seen: Vec<u64>,
    element_type: ElementType,
    options: Options,
    limits: ExternalOptions,
    record: RecordShape,
    dir: SpillDir,
    /// The storage order, once known (at the first spill for `Auto`).
    order: Option<Vec<u32>>,
    /// Records held before the partitions are chosen.
    pending: Vec<u8>,
    partitions: Option<Partitions>,
    entries: u64,
    bytes_spilled: u64,
    /// A record being made (kept to reuse its allocation).
    scratch: Vec<u8>,
    /// Told how far the build pass is (see [`ExternalBuilder::on_build_progress`]).
    progress: BuildProgress,
}

/// `on_build_progress`'s callback: `(bytes of entries built, bytes in all)`.
#[derive(Default)]
struct BuildProgress(Option<Box<dyn FnMut(u64, u64) + Send>>);

impl std::fmt::Debug for BuildProgress {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() { "BuildProgress(set)" } else { "BuildProgress(none)" })
    }
}

/// Key-range partitions: partition `p` holds the keys in
/// `[bounds[p - 1], bounds[p])` (open at the ends).
#[derive(Debug)]
struct Partitions {
    bounds: Vec<Vec<u64>>,
    writers: Vec<SpillWriter>,
}

impl ExternalBuilder {
    /// A builder for a tensor of rank `rank` and `shape` (or, when `None`,
    /// the smallest shape that holds every entry) with values of
    /// `element_type`.
    ///
    /// # Errors
    /// [`ExternalError::Build`] for a rank outside `3..=64`, a shape of
    /// another length, a bad explicit mode order, or a quantization scheme
    /// that cannot apply to the shape or type (found here when the shape is
    /// given, else at [`finish`](Self::finish)); [`ExternalError::Io`] when
    /// the spill directory cannot be made.
    pub fn new(
        rank: usize,
        shape: Option<Vec<u64>>,
        element_type: ElementType,
        options: Options,
        limits: ExternalOptions,
    ) -> Result<Self, ExternalError> {
        if let Some(shape) = &shape {
            if shape.len() != rank {
                let (found, expected) = (shape.len() as u64, rank as u64);
                return Err(BuildError::LengthMismatch { what: "shape", found, expected }.into());
            }
        }
        check_rank(rank)?;
        let order = match &options.mode_order {
            ModeOrderPolicy::Identity => Some((0..rank as u32).collect()),
            ModeOrderPolicy::Explicit(order) => {
                check_permutation(order, rank)?;
                Some(order.clone())
            }
            ModeOrderPolicy::Auto => None,
        };
        if let (Some(spec), Some(shape)) = (options.quantize, &shape) {
            // Refuse a scheme that cannot apply before any entry is spilled.
            crate::quantize::Plan::new(spec, shape).map_err(BuildError::from)?;
        }
        let width = Slots::new(element_type, &[], 0).width;
        if options.duplicates == Duplicates::Sum {
            Slots::new(element_type, &[], 0).can_sum()?;
        }
        let dir = SpillDir::create(&limits.temp_dir)?;
        Ok(Self {
            shape,
            seen: vec![0; rank],
            element_type,
            options,
            limits,
            record: RecordShape { rank, width },
            dir,
            order,
            pending: Vec::new(),
            partitions: None,
            entries: 0,
            bytes_spilled: 0,
            scratch: Vec::new(),
            progress: BuildProgress::default(),
        })
    }

    /// Calls `f(done, total)` as [`finish`](Self::finish) builds partitions:
    /// bytes of spilled entries built so far, of all there are (a progress
    /// bar for the build pass; the spill pass's progress is the caller's own
    /// input).
    pub fn on_build_progress(&mut self, f: impl FnMut(u64, u64) + Send + 'static) {
        self.progress = BuildProgress(Some(Box::new(f)));
    }

    /// The spill directory (removed when the builder is dropped).
    pub fn spill_dir(&self) -> &Path {
        self.dir.path()
    }

    /// Adds a batch of entries: coordinates as [`Coo`]'s, values packed as
    /// the element type prescribes.
    ///
    /// # Errors
    /// [`ExternalError::Build`] for arrays of mismatched lengths or a
    /// coordinate outside the shape (positions count from the first entry
    /// pushed); [`ExternalError::Io`] when spilling fails.
    pub fn push(&mut self, indices: Indices<'_>, values: &[u8]) -> Result<(), ExternalError> {
        let rank = self.record.rank;
        let len = entry_count(indices, rank)?;
        let want = self.element_type.values_len(len as u64).unwrap_or(u64::MAX);
        if values.len() as u64 != want {
            return Err(BuildError::LengthMismatch {
                what: "values (bytes)",
                found: values.len() as u64,
                expected: want,
            }
            .into());
        }
        let slots = Slots::new(self.element_type, values, len);
        // `Source` reads the rank from its shape; the extents are checked here.
        let ranked = vec![0; rank];
        let source = Source { shape: &ranked, indices, len, packed: None };
        for i in 0..len {
            let entry = self.entries + i as u64;
            for dim in 0..rank {
                self.check_coord(entry, dim, source.coord(i, dim))?;
            }
            let mut record = std::mem::take(&mut self.scratch);
            record.clear();
            self.record.write(&mut record, (0..rank).map(|d| source.coord(i, d)), entry, slots.slot(i));
            let kept = self.keep(&record);
            self.scratch = record;
            kept?;
        }
        self.entries += len as u64;
        Ok(())
    }

    fn check_coord(&mut self, entry: u64, dim: usize, coord: u64) -> Result<(), ExternalError> {
        let extent = match &self.shape {
            Some(shape) => shape[dim],
            None => u64::MAX,
        };
        if coord >= extent {
            let entry = usize::try_from(entry).unwrap_or(usize::MAX);
            return Err(BuildError::OutOfBounds { entry, dim, coord, extent }.into());
        }
        self.seen[dim] = self.seen[dim].max(coord + 1);
        Ok(())
    }

    /// Holds or spills one record.
    fn keep(&mut self, record: &[u8]) -> Result<(), ExternalError> {
        if let Some(partitions) = &mut self.partitions {
            let p =
                partition_of(&partitions.bounds, self.record, self.order.as_deref().unwrap_or(&[]), record);
            self.bytes_spilled += record.len() as u64;
            return partitions.writers[p].write(record);
        }
        self.pending.extend_from_slice(record);
        if self.pending.len() as u64 >= self.limits.memory / 4 {
            self.spill_pending()?;
        }
        Ok(())
    }

    /// Chooses the mode order (for `Auto`) and the partitions from the held
    /// entries, then spills them.
    fn spill_pending(&mut self) -> Result<(), ExternalError> {
        let held = std::mem::take(&mut self.pending);
        let order = self.order_for(&held);
        let records = held.len() / self.record.bytes();
        let expected = self.limits.expected_entries.unwrap_or(0).max(records as u64 * 2);
        // A quarter more partitions than the estimate needs: the sample's
        // quantiles are not exact, and a partition over budget costs a re-split.
        let wanted = (expected + expected / 4).div_ceil(self.fit()).clamp(1, MAX_PARTITIONS as u64) as usize;
        let bounds = quantiles(self.record, &order, &held, wanted);
        let writers = self.open_partitions(bounds.len() + 1)?;
        self.order = Some(order);
        self.partitions = Some(Partitions { bounds, writers });
        for record in held.chunks_exact(self.record.bytes()) {
            self.keep(record)?;
        }
        Ok(())
    }

    /// The storage order: fixed by the options, or chosen by `Auto` from `held`.
    fn order_for(&self, held: &[u8]) -> Vec<u32> {
        if let Some(order) = &self.order {
            return order.clone();
        }
        let rank = self.record.rank;
        let coords: Vec<u64> = held
            .chunks_exact(self.record.bytes())
            .flat_map(|r| (0..rank).map(move |d| self.record.coord(r, d)))
            .collect();
        let shape = self.shape.clone().unwrap_or_else(|| self.seen.clone());
        let source = Source {
            shape: &shape,
            indices: Indices::RowMajor(&coords),
            len: coords.len() / rank,
            packed: None,
        };
        choose(&source, self.options.parallel, &[]).0.mode_order
    }

    /// Records a partition may hold to be built in memory within the budget.
    fn fit(&self) -> u64 {
        (self.limits.memory / (BUILD_BYTES_PER_RECORD_BYTE * self.record.bytes() as u64)).max(1)
    }

    /// A spill file for each of `count` partitions, their buffers together
    /// an eighth of the budget.
    fn open_partitions(&mut self, count: usize) -> Result<Vec<SpillWriter>, ExternalError> {
        let share = self.limits.memory / 8 / count.max(1) as u64;
        let buffer = usize::try_from(share).unwrap_or(usize::MAX).clamp(MIN_SPILL_BUFFER, 1 << 20);
        (0..count).map(|_| SpillWriter::create(self.dir.new_file("entries"), buffer)).collect()
    }

    /// Builds every partition in key order, joins them, and writes the
    /// container to `out` (with the statistics section or without). `out` receives the container only: write it to a
    /// temporary file and rename it into place to never leave half a file.
    ///
    /// # Errors
    /// As [`build`](crate::build()) (entry positions count from the first
    /// entry pushed); [`ExternalError::Io`] naming the path when a spill file
    /// fails; [`ExternalError::Encode`] when writing `out` fails.
    pub fn finish(
        mut self,
        out: impl Write,
        section: StatisticsSection,
    ) -> Result<ExternalReport, ExternalError> {
        let shape = self.shape.clone().unwrap_or_else(|| self.seen.clone());
        let held = std::mem::take(&mut self.pending);
        let order = self.order_for(&held);
        let mut parts: Vec<(PathBuf, u64)> = Vec::new();
        if let Some(partitions) = self.partitions.take() {
            for writer in partitions.writers {
                parts.push(writer.finish()?);
            }
        }
        let total = held.len() as u64 + parts.iter().map(|&(_, bytes)| bytes).sum::<u64>();
        let joiner =
            FileJoiner::new(self.element_type, &shape, &order, self.options.quantize, &self.limits.temp_dir)?;
        let mut assembly = Assembly {
            built: 0,
            total,
            order: order.clone(),
            joiner,
            report: ExternalReport { entries: self.entries, mode_order: order, ..ExternalReport::default() },
        };
        if !held.is_empty() || parts.is_empty() {
            self.build_part(held, &shape, &mut assembly)?;
        }
        for (path, bytes) in parts {
            self.build_partition(&path, bytes, &shape, &mut assembly)?;
        }
        self.write(assembly, out, section)
    }

    /// Writes the joined tensor, quantized first when asked.
    fn write(
        self,
        assembly: Assembly,
        out: impl Write,
        section: StatisticsSection,
    ) -> Result<ExternalReport, ExternalError> {
        let Assembly { joiner, mut report, .. } = assembly;
        let joined = joiner.finish(out, section)?;
        report.nnz = joined.nnz;
        report.bytes_spilled = self.bytes_spilled + joined.bytes_spilled;
        report.bytes_written = joined.bytes_written;
        Ok(report)
    }

    /// Builds the partition spilled to `path` (`bytes` long), splitting it
    /// again first when it outgrows the budget.
    fn build_partition(
        &mut self,
        path: &Path,
        bytes: u64,
        shape: &[u64],
        assembly: &mut Assembly,
    ) -> Result<(), ExternalError> {
        let records = bytes / self.record.bytes() as u64;
        if records > self.fit() {
            let order = assembly.order.clone();
            if let Some(pieces) = self.split(path, records, &order)? {
                assembly.report.resplit += 1;
                let _ = std::fs::remove_file(path);
                for (piece, piece_bytes) in pieces {
                    self.build_partition(&piece, piece_bytes, shape, assembly)?;
                }
                return Ok(());
            }
        }
        let mut reader = RecordReader::open(path, self.record)?;
        let mut held = Vec::new();
        reader.next_block(&mut held, usize::try_from(records).unwrap_or(usize::MAX))?;
        let _ = std::fs::remove_file(path);
        self.build_part(held, shape, assembly)
    }

    /// Splits an oversized partition by quantiles of its own keys; `None`
    /// when its keys are all one (duplicates cannot be parted).
    fn split(
        &mut self,
        path: &Path,
        records: u64,
        order: &[u32],
    ) -> Result<Option<Vec<(PathBuf, u64)>>, ExternalError> {
        let block_records = usize::try_from(self.fit() / 2).unwrap_or(usize::MAX).max(1);
        // A sample of every `stride`-th record, a quarter of the budget at most.
        let sample_cap = (self.fit() / 2).max(2);
        let stride = records.div_ceil(sample_cap).max(1);
        let mut sample = Vec::new();
        let mut block = Vec::new();
        let mut reader = RecordReader::open(path, self.record)?;
        let mut seen = 0u64;
        loop {
            reader.next_block(&mut block, block_records)?;
            if block.is_empty() {
                break;
            }
            for record in block.chunks_exact(self.record.bytes()) {
                if seen % stride == 0 {
                    sample.extend_from_slice(record);
                }
                seen += 1;
            }
        }
        let wanted = records.div_ceil(self.fit()).clamp(2, MAX_PARTITIONS as u64) as usize;
        let bounds = quantiles(self.record, order, &sample, wanted);
        drop(sample);
        if bounds.is_empty() {
            return Ok(None);
        }
        let mut writers = self.open_partitions(bounds.len() + 1)?;
        let mut reader = RecordReader::open(path, self.record)?;
        loop {
            reader.next_block(&mut block, block_records)?;
            if block.is_empty() {
                break;
            }
            for record in block.chunks_exact(self.record.bytes()) {
                let p = partition_of(&bounds, self.record, order, record);
                writers[p].write(record)?;
                self.bytes_spilled += record.len() as u64;
            }
        }
        // A split that moved nothing makes no progress: build the whole partition.
        if writers.iter().filter(|w| w.bytes() > 0).count() < 2 {
            return Ok(None);
        }
        Ok(Some(writers.into_iter().map(SpillWriter::finish).collect::<Result<_, _>>()?))
    }

    /// Builds the records `held` in memory and appends them to the join.
    fn build_part(
        &mut self,
        held: Vec<u8>,
        shape: &[u64],
        assembly: &mut Assembly,
    ) -> Result<(), ExternalError> {
        assembly.built += held.len() as u64;
        let rank = self.record.rank;
        let records = held.len() / self.record.bytes();
        let mut coords = Vec::with_capacity(records * rank);
        let mut entries = Vec::with_capacity(records);
        let mut slots = Vec::with_capacity(records * self.record.width);
        for record in held.chunks_exact(self.record.bytes()) {
            coords.extend((0..rank).map(|d| self.record.coord(record, d)));
            entries.push(self.record.entry(record));
            slots.extend_from_slice(self.record.slot(record));
        }
        // The records are copied out: give their memory back before the build.
        drop(held);
        let coo = Coo {
            shape,
            indices: Indices::RowMajor(&coords),
            element_type: self.element_type,
            values: Cow::Owned(pack(self.element_type, slots)),
        };
        // Quantization needs every value: it comes after the join.
        let options = Options {
            mode_order: ModeOrderPolicy::Explicit(assembly.order.clone()),
            quantize: None,
            ..self.options.clone()
        };
        let built = build(&coo, &options).map_err(|e| crate::positioned::in_input(e, &entries))?;
        assembly.report.removed += built.removed;
        assembly.report.partitions += 1;
        assembly.joiner.push(&built.tensor.view())?;
        if let Some(progress) = &mut self.progress.0 {
            progress(assembly.built, assembly.total);
        }
        Ok(())
    }
}

/// The build pass's state: the join (with quantization's first pass) and
/// what it reports.
struct Assembly {
    /// Bytes of spilled entries built so far, and in all (for progress).
    built: u64,
    total: u64,
    order: Vec<u32>,
    joiner: FileJoiner,
    report: ExternalReport,
}
