//! The checks a part passes before anything of it is written, O(rank) reads
//! in all: its header against the joiner's, the sizes of its buffers and the
//! ends of each `pos_L` (csf-layout § Buffer Size, § Storage Invariants 1 and
//! 3, the empty-tensor form), and where its first entry falls against the
//! open path. A part refused here leaves the joiner as it was.

use csf_core::CsfView;
use csf_validate::{Rule, Violation};
use hurray_format::csf;

use super::{ArraySink, ConcatError, Joiner};

/// How a non-empty part joins the output.
pub(super) struct Plan {
    /// The first level at which the part's nodes are new. Above it the part
    /// starts on the output's open path, so its first node there is the
    /// output's last node.
    pub(super) split: usize,
    /// `n_L` of the output with the part joined.
    pub(super) counts_after: Vec<u64>,
    /// The storage-order coordinates of the part's last entry: the open path
    /// once it is written.
    pub(super) last: Vec<u64>,
}

impl<S: ArraySink> Joiner<S> {
    /// The plan for a part, or `None` for a (well-formed) empty one.
    pub(super) fn plan(
        &self,
        part: usize,
        view: &CsfView<'_>,
    ) -> Result<Option<Plan>, ConcatError<S::Error>> {
        self.check_header(part, view)?;
        let invalid = |violation| ConcatError::Invalid { part, violation };
        let nodes = check_sizes(view).map_err(invalid)?;
        if view.nnz() == 0 {
            return Ok(None);
        }
        // With the ends of every pos_L checked and no interior node without
        // children (checked while writing), the first entry's path is node 0
        // of every level and the last entry's is the last node of every level.
        let mut first = Vec::with_capacity(nodes.len());
        let mut last = Vec::with_capacity(nodes.len());
        for (level, l) in view.levels().iter().enumerate() {
            let end = l.crd.len().checked_sub(1).and_then(|i| l.crd.get(i));
            match (l.crd.get(0), end) {
                (Some(a), Some(z)) => {
                    first.push(a);
                    last.push(z);
                }
                // Unreachable: with nnz > 0, invariant 3 and the pos sizes
                // give every level at least one node.
                _ => return Err(invalid(at(Rule::TerminalCount, 0, 1, level, csf::crd_buffer(level), None))),
            }
        }
        let split = self.split(part, &first)?;
        let mut counts_after = Vec::with_capacity(nodes.len());
        for (level, (&count, &n)) in self.counts.iter().zip(&nodes).enumerate() {
            // The part's first node of a level above the split is merged into the open one.
            let merged = u64::from(level < split);
            let after = (n as u64).checked_sub(merged).and_then(|new| count.checked_add(new));
            counts_after.push(after.ok_or(ConcatError::Overflow { part, level })?);
        }
        Ok(Some(Plan { split, counts_after, last }))
    }

    fn check_header(&self, part: usize, view: &CsfView<'_>) -> Result<(), ConcatError<S::Error>> {
        // First: a quantized part's element type is its codes' (and the
        // first part's may be too), which would only hide the reason.
        if let Some(q) = view.quantization() {
            return Err(ConcatError::Quantized { part, scheme: q.scheme });
        }
        if view.shape() != self.shape.as_slice() {
            return Err(ConcatError::Shape {
                part,
                found: view.shape().to_vec(),
                expected: self.shape.clone(),
            });
        }
        if view.mode_order() != self.mode_order.as_slice() {
            let found = view.mode_order().to_vec();
            return Err(ConcatError::ModeOrder { part, found, expected: self.mode_order.clone() });
        }
        if view.element_type() != self.element_type {
            let (found, expected) = (view.element_type(), self.element_type);
            return Err(ConcatError::ElementType { part, found, expected });
        }
        Ok(())
    }

    /// The first level where `first` (a part's first entry) leaves the open
    /// path; it must be greater there (keys ascending and disjoint).
    fn split(&self, part: usize, first: &[u64]) -> Result<usize, ConcatError<S::Error>> {
        let Some(previous) = self.previous else { return Ok(0) };
        match first.iter().zip(&self.open).position(|(f, o)| f != o) {
            None => Err(ConcatError::Duplicate { part, previous, index: self.logical(first) }),
            Some(level) if first.get(level) < self.open.get(level) => Err(ConcatError::OutOfOrder {
                part,
                previous,
                last: self.logical(&self.open),
                first: self.logical(first),
            }),
            Some(level) => Ok(level),
        }
    }
}

/// `n_L` per level, once the buffer sizes (csf-layout § Buffer Size), the
/// first and last entry of every `pos_L` (invariants 1 and 3), the leaf
/// count and, for `nnz = 0`, the empty-tensor form hold.
fn check_sizes(view: &CsfView<'_>) -> Result<Vec<usize>, Violation> {
    let nnz = view.nnz();
    let values = view.values().as_bytes().len() as u64;
    let want = view.element_type().values_len(nnz).unwrap_or(u64::MAX);
    if values != want {
        return Err(Violation {
            rule: Rule::ValuesSize,
            level: None,
            buffer: Some(csf::VALUES_BUFFER),
            index: None,
            found: values,
            expected: want,
        });
    }
    let mut nodes = Vec::with_capacity(view.rank());
    let mut parents = 1usize; // n_{-1}: the virtual root
    for (level, l) in view.levels().iter().enumerate() {
        let buffer = csf::pos_buffer(level);
        let n = l.crd.len();
        let len = l.pos.len();
        let size = parents.saturating_add(1);
        if len != size {
            return Err(at(Rule::PosSize, len as u64, size as u64, level, buffer, None));
        }
        if let Some(start) = l.pos.get(0).filter(|&s| s != 0) {
            return Err(at(Rule::PosStart, start, 0, level, buffer, Some(0)));
        }
        let terminal = len.checked_sub(1).and_then(|i| Some((i, l.pos.get(i)?)));
        if let Some((i, end)) = terminal.filter(|&(_, e)| e != n as u64) {
            return Err(at(Rule::TerminalCount, end, n as u64, level, buffer, Some(i as u64)));
        }
        nodes.push(n);
        parents = n;
    }
    let leaves = nodes.last().copied().unwrap_or(0) as u64;
    if leaves != nnz {
        let leaf = view.rank().saturating_sub(1);
        return Err(at(Rule::LeafCount, leaves, nnz, leaf, csf::crd_buffer(leaf), None));
    }
    if nnz == 0 {
        if let Some((level, &n)) = nodes.iter().enumerate().find(|(_, &n)| n != 0) {
            return Err(at(Rule::EmptyForm, n as u64, 0, level, csf::crd_buffer(level), None));
        }
    }
    Ok(nodes)
}

/// A violation of buffer `buffer` (a level's `pos` or `crd`), at element
/// `index` when it is about one element.
pub(super) fn at(
    rule: Rule,
    found: u64,
    expected: u64,
    level: usize,
    buffer: usize,
    index: Option<u64>,
) -> Violation {
    Violation { rule, level: Some(level), buffer: Some(buffer), index, found, expected }
}
