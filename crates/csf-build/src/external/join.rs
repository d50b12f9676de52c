//! Joining parts into a container within bounded memory: every output
//! buffer goes to a spill file as the parts are pushed, quantization (when
//! asked) is applied once they are all in, and the container is streamed
//! from the files.

use std::io::{Read, Write};
use std::path::Path;

use csf_core::CsfView;
use hurray_format::{Container, ElementType};

use super::output::{self, FileSinks, Header};
use super::quantized::Observer;
use super::spill::{SpillDir, SpillWriter};
use super::ExternalError;
use crate::concat::{ConcatError, Joiner};
use crate::{BuildError, Quantize, StatisticsSection};

/// Joins parts, given in storage order with disjoint key ranges, into one
/// container written to any [`Write`], holding in memory only the part
/// being pushed: the streaming, file-backed form of [`concat`](crate::concat()).
///
/// The output buffers are spilled to a private directory under the
/// temporary directory given (removed when the joiner is dropped, whatever
/// the outcome). With a quantization scheme, each group's range is gathered
/// as the parts go by and the joined values are encoded once they are all
/// in, with [`quantize`](crate::quantize())'s arithmetic: the output is the
/// file that [`build`](crate::build()) with that scheme writes for all the
/// parts' entries.
///
/// Parts are checked as they are copied ([`Joiner::push`]), so they may come
/// from untrusted files ([`push_file`](Self::push_file) reads one).
///
/// # Example
/// ```
/// use csf_build::{build, Coo, FileJoiner, Indices, Options, StatisticsSection};
/// use hurray_format::ElementType;
///
/// let shape = [2, 3, 4];
/// let part = |indices: &[u64], values: &[f32]| {
///     build(&Coo::new(&shape, Indices::RowMajor(indices), values), &Options::default()).unwrap()
/// };
/// let (first, second) = (part(&[0, 0, 1, 0, 2, 3], &[1.0, 2.0]), part(&[1, 1, 0, 1, 1, 2], &[3.0, 4.0]));
///
/// let mut joiner = FileJoiner::new(ElementType::F32, &shape, &[0, 1, 2], None, &std::env::temp_dir())?;
/// joiner.push(&first.tensor.view())?;
/// joiner.push(&second.tensor.view())?;
/// let mut file = Vec::new();
/// let report = joiner.finish(&mut file, StatisticsSection::Include)?;
/// assert_eq!((report.parts, report.nnz), (2, 4));
/// assert_eq!(report.bytes_written, file.len() as u64);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct FileJoiner {
    dir: SpillDir,
    element_type: ElementType,
    shape: Vec<u64>,
    mode_order: Vec<u32>,
    joiner: Joiner<FileSinks>,
    observer: Option<Observer>,
    report: JoinReport,
    /// A part file being read (reused: 8-byte words, so that the container's
    /// aligned buffers are aligned in memory).
    scratch: Vec<u64>,
}

impl std::fmt::Debug for FileJoiner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FileJoiner")
            .field("spill_dir", &self.dir.path())
            .field("element_type", &self.element_type)
            .field("shape", &self.shape)
            .field("mode_order", &self.mode_order)
            .field("node_counts", &self.joiner.node_counts())
            .field("quantized", &self.observer.is_some())
            .field("report", &self.report)
            .finish()
    }
}

/// What a [`FileJoiner`] did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct JoinReport {
    /// Parts pushed (empty ones included).
    pub parts: u64,
    /// Non-zeros stored.
    pub nnz: u64,
    /// Bytes written to spill files: the output's buffers (twice when quantized).
    pub bytes_spilled: u64,
    /// The container's length in bytes.
    pub bytes_written: u64,
}

impl FileJoiner {
    /// A joiner for parts of this element type, shape and mode order, its
    /// spill directory made under `temp_dir`; `quantize` is applied to the
    /// joined values.
    ///
    /// # Errors
    /// [`ExternalError::Build`] for a rank outside `3..=64`, a mode order
    /// that is not a permutation, or a scheme that cannot apply to the shape
    /// or the element type; [`ExternalError::Io`] when the spill directory
    /// or its files cannot be made.
    pub fn new(
        element_type: ElementType,
        shape: &[u64],
        mode_order: &[u32],
        quantize: Option<Quantize>,
        temp_dir: &Path,
    ) -> Result<Self, ExternalError> {
        crate::check_rank(shape.len())?;
        crate::build::check_permutation(mode_order, shape.len())?;
        let mut dir = SpillDir::create(temp_dir)?;
        let observer = match quantize {
            Some(spec) => Some(Observer::new(spec, shape, &mut dir)?),
            None => None,
        };
        let sinks = FileSinks::new(&mut dir, shape.len())?;
        let joiner = Joiner::new(element_type, shape, mode_order, sinks)?;
        Ok(Self {
            dir,
            element_type,
            shape: shape.to_vec(),
            mode_order: mode_order.to_vec(),
            joiner,
            observer,
            report: JoinReport::default(),
            scratch: Vec::new(),
        })
    }

    /// Appends a part: a tensor of the joiner's shape, mode order and
    /// element type, unquantized, whose entries all come after those pushed
    /// before in storage order (an empty part is skipped).
    ///
    /// # Errors
    /// Every error of [`Joiner::push`] (as [`ExternalError::Join`]), naming
    /// the part by its number; a quantization scheme that meets a value it
    /// cannot encode (as [`build`](crate::build()) reports it);
    /// [`ExternalError::Io`].
    pub fn push(&mut self, part: &CsfView<'_>) -> Result<(), ExternalError> {
        self.report.parts += 1;
        let first_leaf = self.joiner.node_counts().last().copied().unwrap_or(0);
        self.joiner.push(part)?;
        // Observed once the push has checked the part's arrays.
        if let Some(observer) = &mut self.observer {
            observer.observe(part, first_leaf)?;
        }
        Ok(())
    }

    /// Reads the Hurray file at `path` and appends it as [`push`](Self::push)
    /// does. The file is untrusted: it is decoded (not validated in full:
    /// the push checks what the join needs) and refused with its path named.
    ///
    /// # Errors
    /// [`ExternalError::Io`] when it cannot be read; [`ExternalError::Part`]
    /// naming the path for a file that is not a CSF container or a part the
    /// join refuses.
    pub fn push_file(&mut self, path: &Path) -> Result<(), ExternalError> {
        let mut scratch = std::mem::take(&mut self.scratch);
        let result = with_part(path, &mut scratch, |view| self.push(view).map_err(|e| in_part(path, e)));
        self.scratch = scratch;
        result
    }

    /// `n_L` of the output so far, per level.
    pub fn node_counts(&self) -> &[u64] {
        self.joiner.node_counts()
    }

    /// Writes the container to `out` (with the statistics section or
    /// without). `out` receives the container only: write it to a temporary
    /// file and rename it into place to never leave half a file.
    ///
    /// # Errors
    /// [`ExternalError::Join`] after a failed push; [`ExternalError::Build`]
    /// when quantization cannot fit its parameters; [`ExternalError::Io`]
    /// when a spill file fails; [`ExternalError::Encode`] when writing `out`
    /// fails.
    pub fn finish(
        mut self,
        out: impl Write,
        section: StatisticsSection,
    ) -> Result<JoinReport, ExternalError> {
        let joined = self.joiner.finish()?;
        let mut report = self.report;
        report.nnz = joined.statistics.nnz;
        let (mut lengths, mut files) = joined.sink.close()?;
        let mut header = Header {
            element_type: self.element_type,
            shape: &self.shape,
            order: &self.mode_order,
            nnz: report.nnz,
            statistics: Some(joined.statistics),
            quantization: None,
        };
        if let Some(observer) = self.observer {
            let (Some(values), Some(length)) = (files.first_mut(), lengths.first_mut()) else {
                return Err(BuildError::RankTooSmall { rank: 0 }.into());
            };
            let encoded = observer.encode(&mut self.dir, values, self.element_type, report.nnz)?;
            report.bytes_spilled += encoded.length;
            (*values, *length) = (encoded.values.clone(), encoded.length);
            header.statistics = Some(encoded.statistics(joined.statistics));
            header.element_type = encoded.dtype;
            header.quantization = Some(encoded.quantization.section);
            for parameters in [Some(&encoded.quantization.scales), encoded.quantization.zero_points.as_ref()]
                .into_iter()
                .flatten()
            {
                let mut writer = SpillWriter::create(self.dir.new_file("parameters"), 1 << 16)?;
                writer.write(parameters)?;
                let (path, length) = writer.finish()?;
                files.push(path);
                lengths.push(length);
            }
        }
        report.bytes_spilled += lengths.iter().sum::<u64>();
        if section == StatisticsSection::Omit {
            header.statistics = None;
        }
        let descriptor = output::descriptor(&header, &lengths)?;
        report.bytes_written = output::write_container(&descriptor, &lengths, &files, out)?;
        Ok(report)
    }
}

/// Joins the Hurray files at `paths`, in that order, into one container
/// written to `out`: [`FileJoiner`] with the element type, shape and mode
/// order of the first file, every file pushed with
/// [`push_file`](FileJoiner::push_file).
///
/// # Errors
/// [`ConcatError::NoParts`](crate::ConcatError::NoParts) (as
/// [`ExternalError::Join`]) for no paths, and every error of
/// [`FileJoiner::new`], [`push_file`](FileJoiner::push_file) and
/// [`finish`](FileJoiner::finish).
pub fn join_files<P: AsRef<Path>>(
    paths: &[P],
    out: impl Write,
    quantize: Option<Quantize>,
    section: StatisticsSection,
    temp_dir: &Path,
) -> Result<JoinReport, ExternalError> {
    let (first, rest) =
        paths.split_first().ok_or_else(|| ExternalError::Join(Box::new(ConcatError::NoParts)))?;
    let first = first.as_ref();
    let mut scratch = Vec::new();
    let mut joiner = with_part(first, &mut scratch, |view| {
        let mut joiner =
            FileJoiner::new(view.element_type(), view.shape(), view.mode_order(), quantize, temp_dir)?;
        joiner.push(view).map_err(|e| in_part(first, e))?;
        Ok(joiner)
    })?;
    joiner.scratch = scratch;
    for path in rest {
        joiner.push_file(path.as_ref())?;
    }
    joiner.finish(out, section)
}

/// Calls `f` with the view of the Hurray file at `path`, read into `words`
/// (8-byte aligned, so that its aligned buffers are aligned in memory).
fn with_part<R>(
    path: &Path,
    words: &mut Vec<u64>,
    f: impl FnOnce(&CsfView<'_>) -> Result<R, ExternalError>,
) -> Result<R, ExternalError> {
    let io = |e| ExternalError::io("read the part", path, e);
    let mut file = std::fs::File::open(path).map_err(io)?;
    let len = file.metadata().map_err(io)?.len();
    let len =
        usize::try_from(len).map_err(|_| io(std::io::Error::other("the file is larger than memory")))?;
    words.clear();
    words.resize(len.div_ceil(8), 0);
    let bytes = bytemuck::cast_slice_mut::<u64, u8>(words).get_mut(..len).unwrap_or_default();
    file.read_exact(bytes).map_err(io)?;
    let bytes = bytemuck::cast_slice::<u64, u8>(words).get(..len).unwrap_or_default();
    let refused = |reason: String| ExternalError::Part { path: path.to_owned(), reason };
    let container = Container::decode(bytes).map_err(|e| refused(e.to_string()))?;
    let view = CsfView::from_container(&container).map_err(|e| refused(e.to_string()))?;
    f(&view)
}

/// An error of pushing the part at `path`, naming it when it is about the part.
fn in_part(path: &Path, error: ExternalError) -> ExternalError {
    let refused = |reason: String| ExternalError::Part { path: path.to_owned(), reason };
    match error {
        ExternalError::Join(e) => refused(e.to_string()),
        ExternalError::Build(e) => refused(e.to_string()),
        other => other,
    }
}
