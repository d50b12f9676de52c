//! Writing a part's levels: one walk over each `pos_L` together with its
//! `crd_L`, which shifts the part's node indices into the output's, drops the
//! nodes merged into the open path, and checks invariants 2, 4 and 5 (and no
//! interior node without children) on every word it reads.

use csf_core::{CsfView, Level};
use csf_validate::Rule;
use hurray_format::csf;

use super::part::{at, Plan};
use super::{ArraySink, ConcatError, Joiner, CHUNK};

impl<S: ArraySink> Joiner<S> {
    /// Writes a planned part: its levels, then its values.
    pub(super) fn write(
        &mut self,
        part: usize,
        view: &CsfView<'_>,
        plan: &Plan,
    ) -> Result<(), ConcatError<S::Error>> {
        for (level, l) in view.levels().iter().enumerate() {
            self.write_level(part, level, *l, plan)?;
        }
        let leaf = view.rank().saturating_sub(1);
        self.values.append(part, leaf, view.values(), view.nnz(), &mut self.sink)
    }

    /// Level `level` of the part. Its node `j` is the output's node
    /// `shift + j`; node 0 is not written when it is merged into the open node
    /// (above the split), and neither is the `pos` entry of a parent that is.
    fn write_level(
        &mut self,
        part: usize,
        level: usize,
        l: Level<'_>,
        plan: &Plan,
    ) -> Result<(), ConcatError<S::Error>> {
        let invalid = |rule, found, expected, buffer, index: usize| ConcatError::Invalid {
            part,
            violation: at(rule, found, expected, level, buffer, Some(index as u64)),
        };
        let (pos_buffer, crd_buffer) = (csf::pos_buffer(level), csf::crd_buffer(level));
        // Level 0's parent is the virtual root, always shared.
        let parent_merged = level <= plan.split;
        let node_merged = level < plan.split;
        let count = self.counts.get(level).copied().unwrap_or(0);
        // A merged node is the open one, so the count is at least 1 then.
        let shift = count.saturating_sub(u64::from(node_merged));
        // A coordinate of a level without an extent (impossible: the part's
        // shape is the joiner's) fails the bounds check.
        let extent = self.extents.get(level).copied().unwrap_or(0);
        let n = l.crd.len();
        let mut crd = l.crd.iter();
        let mut start = 0u64; // pos_L[0], checked to be 0
        let mut j = 0usize;
        for (k, stored_end) in l.pos.iter().enumerate().skip(1) {
            // Invariant 2, strictly: a parent without children is refused (see ChildlessNode).
            if stored_end < start {
                return Err(invalid(Rule::PosDecreasing, stored_end, start, pos_buffer, k));
            }
            if stored_end == start {
                let node = k as u64 - 1;
                return Err(ConcatError::ChildlessNode { part, level: level.saturating_sub(1), node });
            }
            if !(parent_merged && k == 1) {
                let first_child = shift.checked_add(j as u64).ok_or(ConcatError::Overflow { part, level })?;
                self.push_pos(level, first_child)?;
            }
            // An end past n_L will be followed by a decrease (the terminal
            // entry is n_L), reported then; until then the walk stays in crd_L.
            let end = usize::try_from(stored_end).map_or(n, |e| e.min(n));
            let mut sibling = None;
            while j < end {
                let Some(c) = crd.next() else { break };
                // Invariant 5.
                if c >= extent {
                    return Err(invalid(Rule::CoordinateBounds, c, extent, crd_buffer, j));
                }
                // Invariant 4, within the parent's slice.
                if let Some(before) = sibling.filter(|&s| c <= s) {
                    return Err(invalid(Rule::SiblingOrder, c, before, crd_buffer, j));
                }
                sibling = Some(c);
                if !(node_merged && j == 0) {
                    self.push_crd(level, c)?;
                }
                j += 1;
            }
            start = stored_end;
        }
        self.flush(level)
    }

    fn push_pos(&mut self, level: usize, word: u64) -> Result<(), ConcatError<S::Error>> {
        self.pos_buf.push(word);
        if self.pos_buf.len() >= CHUNK {
            self.sink.pos(level, &self.pos_buf).map_err(ConcatError::Sink)?;
            self.pos_buf.clear();
        }
        Ok(())
    }

    fn push_crd(&mut self, level: usize, word: u64) -> Result<(), ConcatError<S::Error>> {
        self.crd_buf.push(word);
        if self.crd_buf.len() >= CHUNK {
            self.sink.crd(level, &self.crd_buf).map_err(ConcatError::Sink)?;
            self.crd_buf.clear();
        }
        Ok(())
    }

    /// Hands the level's buffered words to the sink.
    fn flush(&mut self, level: usize) -> Result<(), ConcatError<S::Error>> {
        if !self.pos_buf.is_empty() {
            self.sink.pos(level, &self.pos_buf).map_err(ConcatError::Sink)?;
            self.pos_buf.clear();
        }
        if !self.crd_buf.is_empty() {
            self.sink.crd(level, &self.crd_buf).map_err(ConcatError::Sink)?;
            self.crd_buf.clear();
        }
        Ok(())
    }
}
