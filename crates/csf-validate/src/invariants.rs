//! csf-layout § Storage Invariants, and the per-level sizes of § Buffer Size.
//!
//! Each level is checked by [`crate::level::check_level`] (in chunks on
//! threads by [`crate::parallel`] with feature `parallel`, when the level's
//! arrays are native); this module runs it over the levels and adds the
//! rules that span levels.

use hurray_format::csf;

use csf_core::CsfView;

use crate::level::{check_level, LevelSpec};
use crate::rule::{Rule, Violation};
use crate::sink::{Sink, Stop};

/// § Buffer Size for the levels and the values: O(rank), reads no array.
pub(crate) fn check_sizes<const MAX: usize>(
    view: &CsfView<'_, MAX>,
    sink: &mut dyn Sink,
) -> Result<(), Stop> {
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
pub(crate) fn check_invariants<const MAX: usize>(
    view: &CsfView<'_, MAX>,
    sink: &mut dyn Sink,
) -> Result<(), Stop> {
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
fn check_empty_form<const MAX: usize>(view: &CsfView<'_, MAX>, sink: &mut dyn Sink) -> Result<(), Stop> {
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
fn view_extent<const MAX: usize>(view: &CsfView<'_, MAX>, level: usize) -> Option<u64> {
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
