//! Joining tensors built from consecutive ranges of storage-order keys (issue
//! "Tensors larger than memory").
//!
//! Sort a tensor's entries by their storage-order key (the coordinates
//! permuted by `mode_order`) and cut that sequence anywhere: the pieces build
//! independently, and their trees join exactly. Level `L` of the whole is the
//! parts' `crd_L` one after the other, and their `pos_L` shifted by the nodes
//! of level `L` before them; where a part starts on the path its predecessor
//! ends on (the same level-0 coordinate, say), the shared nodes are one node,
//! stored once. So a part's first entry decides everything: the first level
//! where it leaves the previous part's last entry (the *split* level) is the
//! first level at which the part's nodes are new, and every level above it
//! merges the part's first node into the node already open there.
//!
//! [`Joiner`] does this in one linear pass over each part's arrays, holding
//! between parts only the open path (its coordinate and the node count at
//! each level), and appends the output to an [`ArraySink`], so that a builder
//! for tensors larger than memory can spill each array to a file.
//! [`concat`](concat()) is the in-memory wrapper.
//!
//! Parts may come from files, so they are not trusted: the pass checks every
//! storage invariant it relies on as it copies (`part.rs` before writing,
//! `levels.rs` and `values.rs` while writing), never panics, and uses
//! checked arithmetic. When a push succeeds the output, once finished,
//! passes strict validation.

mod error;
mod levels;
mod part;
mod sink;
mod values;

use csf_core::{CsfView, OwnedCsf};
use hurray_format::{ElementType, Statistics};

use crate::{check_rank, BuildError, Built};

pub use error::ConcatError;
pub use sink::{ArraySink, VecSink};

use values::ValueWriter;

/// Words buffered per array before the sink gets them: big enough that a
/// sink's per-call cost (a write to a file) is amortised, small enough to
/// stay in L1.
const CHUNK: usize = 512;

/// Joins parts, given in storage order with disjoint key ranges, into one
/// tensor, as if its entries had been built at once.
///
/// Every part must have the first part's shape, mode order and element type,
/// and not be quantized (quantize the result instead: per-tensor and
/// per-channel parameters depend on all the values, block parameters on
/// runs of leaves that cross parts). The last entry of each non-empty part
/// must come strictly before the first entry of the next non-empty one in
/// storage order; empty parts (`nnz = 0`) are skipped. The result is
/// byte-identical to [`build`](crate::build()) of all the parts' entries with
/// the same mode order, and so are its [`statistics`](Built::statistics).
/// `Built::auto` is `None` and `Built::removed` is 0: those describe builds.
///
/// Parts are checked as they are copied (see [`Joiner::push`]), so they may
/// come from untrusted files.
///
/// # Errors
/// [`ConcatError::NoParts`] for an empty slice, and every error of
/// [`Joiner::new`] and [`Joiner::push`], naming the part.
///
/// # Example
/// ```
/// use csf_build::{build, concat, Coo, Indices, Options, StatisticsSection};
///
/// // The spec's example, cut after its third entry: both halves hold (1, 1, *),
/// // which the join stores as one path.
/// let shape = [2, 3, 4];
/// let (head, tail) = ([0, 0, 1, 0, 2, 3, 1, 1, 0], [1, 1, 2]);
/// let whole = [head.as_slice(), &tail].concat();
/// let options = Options::default();
/// let part = |indices: &[u64], values: &[f32]| {
///     build(&Coo::new(&shape, Indices::RowMajor(indices), values), &options).unwrap()
/// };
/// let parts = [part(&head, &[1.0, 2.0, 3.0]), part(&tail, &[4.0])];
///
/// let views: Vec<_> = parts.iter().map(|p| p.tensor.view()).collect();
/// let joined = concat(&views).unwrap();
/// let at_once = part(&whole, &[1.0, 2.0, 3.0, 4.0]);
/// assert_eq!(joined.to_bytes(StatisticsSection::Include).unwrap(), at_once.to_bytes(StatisticsSection::Include).unwrap());
/// assert_eq!(joined.tensor.view().get_f64(&[1, 1, 2]), Ok(4.0));
/// ```
pub fn concat(parts: &[CsfView<'_>]) -> Result<Built, ConcatError> {
    let first = parts.first().ok_or(ConcatError::NoParts)?;
    let mut joiner =
        Joiner::new(first.element_type(), first.shape(), first.mode_order(), VecSink::default())?;
    for part in parts {
        joiner.push(part)?;
    }
    let joined = joiner.finish()?;
    // The header passed `Joiner::new`'s checks, which are the view's.
    let tensor = joined.into_tensor().map_err(BuildError::from)?;
    debug_assert!(
        csf_validate::validate_view(tensor.view()).is_ok(),
        "the join broke a storage invariant: {:?}",
        csf_validate::validate_view(tensor.view()).err()
    );
    Ok(Built { tensor, auto: None, removed: 0 })
}

/// Joins parts one at a time into an [`ArraySink`]: the streaming form of
/// [`concat`](concat()).
///
/// Between parts it holds O(rank) words: the path of the last entry written
/// (its coordinate and node count at each level), a half-filled byte of 4-bit
/// values, and the running statistics. What it has written to the sink is
/// final, so the sink may spill it.
///
/// # Example
/// ```
/// use csf_build::{build, Coo, Indices, Joiner, Options, VecSink};
/// use hurray_format::ElementType;
///
/// // Two parts of a [2, 3, 4] tensor: the entries under i = 0, then under i = 1.
/// let shape = [2, 3, 4];
/// let part = |indices: &[u64], values: &[f32]| {
///     build(&Coo::new(&shape, Indices::RowMajor(indices), values), &Options::default()).unwrap()
/// };
/// let (first, second) = (part(&[0, 0, 1, 0, 2, 3], &[1.0, 2.0]), part(&[1, 1, 0, 1, 1, 2], &[3.0, 4.0]));
///
/// let mut joiner = Joiner::new(ElementType::F32, &shape, &[0, 1, 2], VecSink::default())?;
/// joiner.push(&first.tensor.view())?;
/// joiner.push(&second.tensor.view())?;
/// let joined = joiner.finish()?;
/// assert_eq!(joined.statistics.nnz, 4);
/// let tensor = joined.into_tensor()?;
/// assert_eq!(tensor.view().get_f64(&[1, 1, 2]), Ok(4.0));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct Joiner<S: ArraySink> {
    element_type: ElementType,
    shape: Vec<u64>,
    mode_order: Vec<u32>,
    /// `shape[mode_order[L]]` per level: the bound of invariant 5.
    extents: Vec<u64>,
    /// `n_L` of the output so far, per level.
    counts: Vec<u64>,
    /// The storage-order coordinates of the last entry written (meaningful
    /// once `counts[0] > 0`): the open node at each level.
    open: Vec<u64>,
    /// The pushes so far, failed ones included: the next part's number.
    parts: usize,
    /// The last non-empty part written, for errors.
    previous: Option<usize>,
    /// The part that failed while being written, if one did.
    poisoned: Option<usize>,
    values: ValueWriter,
    sink: S,
    /// Reused buffers for `pos` and `crd` words on their way to the sink.
    pos_buf: Vec<u64>,
    crd_buf: Vec<u64>,
}

/// What [`Joiner::finish`] hands back: the sink, now holding the whole
/// tensor, and what its descriptor needs.
#[derive(Clone, Debug, PartialEq)]
pub struct Joined<S> {
    /// The sink the joiner wrote to, holding every level and the values.
    pub sink: S,
    /// The values' element type, shared by every part.
    pub element_type: ElementType,
    /// The logical shape, shared by every part.
    pub shape: Vec<u64>,
    /// The storage order of the dimensions, shared by every part.
    pub mode_order: Vec<u32>,
    /// `n_L` per level (so `pos_L` holds `n_{L-1} + 1` words, `pos_0` two).
    pub node_counts: Vec<u64>,
    /// The statistics section, equal to [`statistics`](crate::statistics())
    /// of the joined tensor: `nnz`, the sparsity ratio, and the min and max
    /// of the values (NaNs skipped), gathered as the values went by.
    pub statistics: Statistics,
}

impl Joined<VecSink> {
    /// The joined tensor, its arrays moved out of the in-memory sink.
    ///
    /// # Errors
    /// None in practice: the header passed [`Joiner::new`]'s checks, which
    /// are those of [`OwnedCsfBuilder::build`](csf_core::OwnedCsfBuilder::build);
    /// its error is kept for the type's sake.
    pub fn into_tensor(self) -> Result<OwnedCsf, csf_core::PartsError> {
        OwnedCsf::builder(self.element_type, self.shape)
            .mode_order(self.mode_order)
            .nnz(self.statistics.nnz)
            .levels(self.sink.levels)
            .values(self.sink.values)
            .build()
    }
}

impl<S: ArraySink> Joiner<S> {
    /// A joiner for parts of this element type, shape and mode order.
    ///
    /// # Errors
    /// [`BuildError::RankTooSmall`], [`BuildError::RankTooLarge`] or
    /// [`BuildError::BadModeOrder`] (as [`ConcatError::Header`]), as
    /// [`build`](crate::build()) reports them.
    pub fn new(
        element_type: ElementType,
        shape: &[u64],
        mode_order: &[u32],
        sink: S,
    ) -> Result<Self, ConcatError<S::Error>> {
        let rank = shape.len();
        check_rank(rank)?;
        let extents = check_permutation(mode_order, shape)?;
        Ok(Self {
            element_type,
            shape: shape.to_vec(),
            mode_order: mode_order.to_vec(),
            extents,
            counts: vec![0; rank],
            open: vec![0; rank],
            parts: 0,
            previous: None,
            poisoned: None,
            values: ValueWriter::new(element_type),
            sink,
            pos_buf: Vec::with_capacity(CHUNK),
            crd_buf: Vec::with_capacity(CHUNK),
        })
    }

    /// Appends a part: a tensor of the joiner's shape, mode order and element
    /// type, unquantized, whose entries all come after those pushed before
    /// in storage order. An empty part (`nnz = 0`) is checked and skipped.
    ///
    /// The part is checked in the same pass that copies it, for everything
    /// the join relies on or the output's validity needs: the buffer sizes,
    /// storage invariants 1-5, the empty-tensor form, no interior node
    /// without children, and the value-content rules of `docs/format.md`
    /// § 2.1 (`bool` bytes, FP6 high bits; the unused nibble after an odd
    /// count of 4-bit values is not copied, so it is not checked). A part
    /// that breaks several rules is refused for the first one the pass meets,
    /// which need not be the first in `csf-validate`'s check order.
    ///
    /// # Errors
    /// Before anything is written, leaving the joiner as it was:
    /// [`ConcatError::ElementType`], [`Shape`](ConcatError::Shape),
    /// [`ModeOrder`](ConcatError::ModeOrder), [`Quantized`](ConcatError::Quantized),
    /// [`Invalid`](ConcatError::Invalid) for sizes and the ends of `pos`,
    /// [`OutOfOrder`](ConcatError::OutOfOrder), [`Duplicate`](ConcatError::Duplicate),
    /// [`Overflow`](ConcatError::Overflow). While writing, after which the
    /// joiner is poisoned: [`Invalid`](ConcatError::Invalid) for the
    /// contents of `pos`, `crd` and the values, [`ChildlessNode`](ConcatError::ChildlessNode),
    /// [`Sink`](ConcatError::Sink). Once poisoned, [`ConcatError::Poisoned`].
    pub fn push(&mut self, part: &CsfView<'_>) -> Result<(), ConcatError<S::Error>> {
        if let Some(failed) = self.poisoned {
            return Err(ConcatError::Poisoned { part: failed });
        }
        let index = self.parts;
        self.parts = self.parts.saturating_add(1);
        let Some(plan) = self.plan(index, part)? else { return Ok(()) };
        if let Err(error) = self.write(index, part, &plan) {
            self.poisoned = Some(index);
            return Err(error);
        }
        self.counts = plan.counts_after;
        self.open = plan.last;
        self.previous = Some(index);
        Ok(())
    }

    /// `n_L` of the output so far, per level.
    pub fn node_counts(&self) -> &[u64] {
        &self.counts
    }

    /// Writes the terminal `pos` entries and the last values byte, and hands
    /// back the sink.
    ///
    /// # Errors
    /// [`ConcatError::Poisoned`] after a failed push, [`ConcatError::Sink`].
    pub fn finish(mut self) -> Result<Joined<S>, ConcatError<S::Error>> {
        if let Some(failed) = self.poisoned {
            return Err(ConcatError::Poisoned { part: failed });
        }
        // Each node of level L - 1 wrote its start into pos_L; close the
        // last one (invariant 3). pos_0 is the virtual root's [0, n_0].
        for (level, &count) in self.counts.iter().enumerate().skip(1) {
            self.sink.pos(level, &[count]).map_err(ConcatError::Sink)?;
        }
        let n0 = self.counts.first().copied().unwrap_or(0);
        self.sink.pos(0, &[0, n0]).map_err(ConcatError::Sink)?;
        self.values.finish(&mut self.sink).map_err(ConcatError::Sink)?;
        let nnz = self.counts.last().copied().unwrap_or(0);
        let statistics = self.values.statistics(&self.shape, nnz);
        Ok(Joined {
            sink: self.sink,
            element_type: self.element_type,
            shape: self.shape,
            mode_order: self.mode_order,
            node_counts: self.counts,
            statistics,
        })
    }

    /// The logical index of a storage-order coordinate tuple, for errors.
    fn logical(&self, storage: &[u64]) -> Vec<u64> {
        let mut index = vec![0; storage.len()];
        for (&dim, &c) in self.mode_order.iter().zip(storage) {
            if let Some(slot) = index.get_mut(dim as usize) {
                *slot = c;
            }
        }
        index
    }
}

/// The per-level extents, when `mode_order` is a permutation of `0..rank`
/// (csf-layout § Mode Ordering; the check is `build`'s).
fn check_permutation(mode_order: &[u32], shape: &[u64]) -> Result<Vec<u64>, BuildError> {
    crate::build::check_permutation(mode_order, shape.len())?;
    Ok(mode_order.iter().map(|&d| shape.get(d as usize).copied().unwrap_or(0)).collect())
}
