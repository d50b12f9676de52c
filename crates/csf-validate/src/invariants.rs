//! csf-layout § Storage Invariants, and the per-level sizes of § Buffer Size.
//!
//! One linear pass per level. The kernels are written once over [`Words`],
//! which is either a native `&[u64]` (little-endian machine, aligned buffer:
//! the common case, and the fast one) or a [`U64Array`] read byte-wise.

use hurray_format::csf;
use hurray_format::le::U64Array;

use csf_core::CsfView;

use crate::rule::{Rule, Violation, Warning};
use crate::sink::{Sink, Stop};

/// A read-only array of `u64`s.
pub(crate) trait Words: Copy {
    fn len(self) -> usize;
    fn first(self) -> Option<u64>;
    fn last(self) -> Option<u64>;
    fn iter(self) -> impl Iterator<Item = u64>;
    /// `self[start..end]`, clamped to the array.
    fn clamped(self, start: usize, end: usize) -> Self;
}

impl Words for &[u64] {
    fn len(self) -> usize {
        <[u64]>::len(self)
    }
    fn first(self) -> Option<u64> {
        <[u64]>::first(self).copied()
    }
    fn last(self) -> Option<u64> {
        <[u64]>::last(self).copied()
    }
    fn iter(self) -> impl Iterator<Item = u64> {
        <[u64]>::iter(self).copied()
    }
    fn clamped(self, start: usize, end: usize) -> Self {
        let end = end.min(<[u64]>::len(self));
        self.get(start.min(end)..end).unwrap_or(&[])
    }
}

impl Words for U64Array<'_> {
    fn len(self) -> usize {
        U64Array::len(&self)
    }
    fn first(self) -> Option<u64> {
        self.get(0)
    }
    fn last(self) -> Option<u64> {
        self.get(U64Array::len(&self).checked_sub(1)?)
    }
    fn iter(self) -> impl Iterator<Item = u64> {
        U64Array::iter(&self)
    }
    fn clamped(self, start: usize, end: usize) -> Self {
        self.slice(start, end)
    }
}

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

fn clamp(v: u64, n: usize) -> usize {
    usize::try_from(v).map_or(n, |v| v.min(n))
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
        let start = clamp(a, nodes).max(high);
        let end = clamp(b, nodes).max(start);
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

/// § Buffer Size for the levels and the values: O(rank), reads no array.
pub(crate) fn check_sizes(view: &CsfView<'_>, sink: &mut dyn Sink) -> Result<(), Stop> {
    let mut parents = 1usize;
    for (level, lvl) in view.levels().iter().enumerate() {
        // pos_L holds n_{L-1} + 1 entries (pos_0: 2).
        let want = parents as u64 + 1;
        if lvl.pos.len() as u64 != want {
            let v = Violation::new(Rule::PosSize, lvl.pos.len() as u64, want);
            sink.violation(v.at_level(level).in_buffer(csf::pos_buffer(level)))?;
        }
        parents = lvl.node_count();
    }
    let bytes = view.values().as_bytes().len() as u64;
    let want = view.element_type().values_len(view.nnz()).unwrap_or(u64::MAX);
    if bytes != want {
        sink.violation(Violation::new(Rule::ValuesSize, bytes, want).in_buffer(csf::VALUES_BUFFER))?;
    }
    Ok(())
}

/// Every storage invariant, then the value-content rules of `docs/format.md`
/// § 2.1 on the values and parameter buffers: one pass per level.
pub(crate) fn check_invariants(view: &CsfView<'_>, sink: &mut dyn Sink) -> Result<(), Stop> {
    let mut parents = 1usize;
    for (level, lvl) in view.levels().iter().enumerate() {
        let warn_childless = level > 0 && view.nnz() > 0;
        let spec = LevelSpec { level, parents, extent: view_extent(view, level), warn_childless };
        match (lvl.pos.as_native(), lvl.crd.as_native()) {
            (Some(pos), Some(crd)) => check_level_maybe_parallel(spec, pos, crd, sink)?,
            _ => check_level(spec, lvl.pos, lvl.crd, sink)?,
        }
        parents = lvl.node_count();
    }
    // Invariant 3: n_{rank-1} = nnz.
    let leaves = view.node_count(view.rank().saturating_sub(1)) as u64;
    if leaves != view.nnz() {
        let leaf = view.rank().saturating_sub(1);
        sink.violation(
            Violation::new(Rule::LeafCount, leaves, view.nnz())
                .at_level(leaf)
                .in_buffer(csf::crd_buffer(leaf)),
        )?;
    }
    check_empty_form(view, sink)?;
    crate::contents::check_contents(view, sink)
}

/// csf-layout § Storage Invariants, the empty tensor: with `nnz = 0`, `pos_0`
/// MUST be `[0, 0]`, every `crd_L` empty and `pos_L = [0]` for `L >= 1`.
/// Invariants 1-5 alone admit interior nodes with no children (`pos_0 = [0, 1]`,
/// `crd_0 = [0]`, `pos_1 = [0, 0]`, ...), so this is a rule of its own. Given
/// the sizes and invariants 1-3, "every `crd_L` is empty" is the whole form;
/// the leaf level is invariant 3's (`n_{rank-1} = nnz`, [`Rule::LeafCount`]),
/// so only the interior levels are checked here, one violation per level.
fn check_empty_form(view: &CsfView<'_>, sink: &mut dyn Sink) -> Result<(), Stop> {
    if view.nnz() != 0 {
        return Ok(());
    }
    let interior = view.rank().saturating_sub(1);
    for level in 0..interior {
        let nodes = view.node_count(level);
        if nodes > 0 {
            let v = Violation::new(Rule::EmptyForm, nodes as u64, 0);
            sink.violation(v.at_level(level).in_buffer(csf::crd_buffer(level)))?;
        }
    }
    Ok(())
}

/// The level's bound, only when `mode_order` is a permutation (a broken one is
/// reported on its own and would make every coordinate look wrong).
fn view_extent(view: &CsfView<'_>, level: usize) -> Option<u64> {
    let order = view.mode_order();
    let rank = order.len();
    let mut seen = 0u128; // rank <= 64
    for &d in order {
        if d as usize >= rank || seen & (1 << d) != 0 {
            return None;
        }
        seen |= 1 << d;
    }
    view.level_extent(level)
}

#[cfg(feature = "parallel")]
fn check_level_maybe_parallel(
    spec: LevelSpec,
    pos: &[u64],
    crd: &[u64],
    sink: &mut dyn Sink,
) -> Result<(), Stop> {
    crate::parallel::check_level(spec, pos, crd, sink)
}

#[cfg(not(feature = "parallel"))]
fn check_level_maybe_parallel(
    spec: LevelSpec,
    pos: &[u64],
    crd: &[u64],
    sink: &mut dyn Sink,
) -> Result<(), Stop> {
    check_level(spec, pos, crd, sink)
}
