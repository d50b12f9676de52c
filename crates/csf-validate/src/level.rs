//! csf-layout § Storage Invariants 1-5 for one level: the kernel that the
//! sequential pass ([`crate::invariants`]) and the parallel one
//! ([`crate::parallel`], which falls back to it on a fault) share.
//!
//! One linear pass over the level, written once over csf-core's [`Words`]:
//! a native `&[u64]` (little-endian machine, aligned buffer: the common
//! case, and the fast one) or a [`U64Array`](hurray_format::le::U64Array)
//! read byte-wise. Slices are clamped with csf-core's own
//! [`clamp_index`], so that the checks walk the slices the accessors read.

use hurray_format::csf;

use csf_core::words::{clamp_index, Words};

use crate::rule::{Rule, Violation, Warning};
use crate::sink::{Sink, Stop};

/// What a level is checked against.
#[derive(Clone, Copy)]
pub(crate) struct LevelSpec {
    pub(crate) level: usize,
    /// `n_{L-1}` (1 for level 0: the virtual root). The size rule itself is
    /// `check_sizes`'; here it tells whether `pos_L` has its size.
    pub(crate) parents: usize,
    /// `shape[mode_order[L]]`, or `None` when `mode_order` is broken (already reported).
    pub(crate) extent: Option<u64>,
    /// Whether to warn about parents (nodes of level `L - 1`) without
    /// children: for `L >= 1` of a non-empty tensor. (Level 0's parent is the
    /// virtual root, and with `nnz = 0` every stored node is an
    /// [`Rule::EmptyForm`] error instead.)
    pub(crate) warn_childless: bool,
}

/// Invariants 1-5 for one level.
pub(crate) fn check_level<W: Words>(
    spec: LevelSpec,
    pos: W,
    crd: W,
    sink: &mut dyn Sink,
) -> Result<(), Stop> {
    let sink = &mut Noting { sink, any: false };
    let level = spec.level;
    let pos_buffer = csf::pos_buffer(level);
    let crd_buffer = csf::crd_buffer(level);
    let at = |rule, found, expected, buffer, index: usize| {
        Violation::new(rule, found, expected).at_level(level).in_buffer(buffer).at_index(index as u64)
    };

    // Invariant 1.
    if let Some(first) = pos.first().filter(|&v| v != 0) {
        sink.violation(at(Rule::PosStart, first, 0, pos_buffer, 0))?;
    }
    // Invariant 2. In the same pass, the parents whose slice is empty:
    // format.md § 7.5's childless interior nodes (a warning, once per level).
    let mut childless: Option<(usize, u64)> = None;
    for (k, (a, b)) in pos.iter().zip(pos.iter().skip(1)).enumerate() {
        if b < a {
            sink.violation(at(Rule::PosDecreasing, b, a, pos_buffer, k + 1))?;
        } else if b == a && spec.warn_childless {
            match &mut childless {
                Some((_, count)) => *count = count.saturating_add(1),
                None => childless = Some((k, 1)),
            }
        }
    }
    // Invariant 3: the terminal entry equals n_L.
    let nodes = crd.len();
    if let Some(last) = pos.last().filter(|&v| v != nodes as u64) {
        sink.violation(at(Rule::TerminalCount, last, nodes as u64, pos_buffer, pos.len() - 1))?;
    }
    // Invariant 5.
    if let Some(extent) = spec.extent {
        for (i, c) in crd.iter().enumerate() {
            if c >= extent {
                sink.violation(at(Rule::CoordinateBounds, c, extent, crd_buffer, i))?;
            }
        }
    }
    // Invariant 4, slice by slice. On broken `pos` the slices are clamped so
    // that they never move backwards: still one pass, still in bounds.
    let mut high = 0usize;
    for (a, b) in pos.iter().zip(pos.iter().skip(1)) {
        let start = clamp_index(a, nodes).max(high);
        let end = clamp_index(b, nodes).max(start);
        high = end;
        let slice = crd.clamped(start, end);
        for (j, (x, y)) in slice.iter().zip(slice.iter().skip(1)).enumerate() {
            if y <= x {
                sink.violation(at(Rule::SiblingOrder, y, x, crd_buffer, start + j + 1))?;
            }
        }
    }
    // Only on a level that is otherwise sound: an empty slice in a broken
    // `pos` (an extra entry, a short terminal, a bad start) is an artefact of
    // the violation already reported, not a node a writer stored.
    let sound = !sink.any && pos.len() == spec.parents.saturating_add(1);
    if let (Some((first, count)), Some(parent_level), true) = (childless, level.checked_sub(1), sound) {
        sink.warning(Warning::ChildlessNodes { level: parent_level, first: first as u64, count });
    }
    Ok(())
}

/// Passes everything on to `sink`, noting whether a violation went by.
struct Noting<'s> {
    sink: &'s mut dyn Sink,
    any: bool,
}

impl Sink for Noting<'_> {
    fn violation(&mut self, violation: Violation) -> Result<(), Stop> {
        self.any = true;
        self.sink.violation(violation)
    }

    fn warning(&mut self, warning: Warning) {
        self.sink.warning(warning);
    }
}
