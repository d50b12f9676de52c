//! The fast path: a sub-tree range copied level by level.

use csf_core::{CsfView, Fiber, Level, OwnedCsf, OwnedLevel};
use hurray_format::{ElementType, Packing, QuantScheme};

use super::{code, lower_bound, Axis, Plan, SelectError};
use crate::{BuildError, Built};

/// The fast path's tensor, when the axes allow it and the copy is valid.
pub(super) fn copy_if_fast(
    view: &CsfView<'_>,
    axes: &[Axis<'_>],
    plan: &Plan,
) -> Result<Option<Built>, SelectError> {
    match fast_root(view, axes) {
        Some(root) if plan.out_shape.len() >= 3 => copy(view, plan, root),
        _ => Ok(None),
    }
}

/// What level 0 keeps on the fast path.
#[derive(Clone, Copy, Debug)]
enum Root {
    Index(u64),
    /// Coordinates `start..start + len`.
    Range {
        start: u64,
        len: u64,
    },
}

/// The fast path's level-0 selection, when the axes allow it (see the
/// parent module's docs); the caller has checked them.
fn fast_root(view: &CsfView<'_>, axes: &[Axis<'_>]) -> Option<Root> {
    if view.quantization().is_some_and(|q| q.scheme == QuantScheme::PerChannel) {
        return None;
    }
    let top = *view.mode_order().first()? as usize;
    let others_all = axes.iter().enumerate().all(|(dim, a)| dim == top || matches!(a, Axis::All));
    if !others_all {
        return None;
    }
    match *axes.get(top)? {
        Axis::Index(c) => Some(Root::Index(c)),
        Axis::All => Some(Root::Range { start: 0, len: *view.shape().get(top)? }),
        Axis::Step { start, len, step: 1 } => Some(Root::Range { start, len }),
        Axis::Step { len: 0, .. } => Some(Root::Range { start: 0, len: 0 }),
        _ => None,
    }
}

/// The tensor of the sub-tree range `root` selects, copied; `None` when
/// the copy is not a valid tensor (unvalidated input), for the general
/// path to take over.
fn copy(view: &CsfView<'_>, plan: &Plan, root: Root) -> Result<Option<Built>, SelectError> {
    let Some((levels, leaves)) = tree(view, root) else { return Ok(None) };
    let Some((element_type, values)) = values(view, leaves) else { return Ok(None) };
    let tensor = OwnedCsf::builder(element_type, plan.out_shape.clone())
        .mode_order(plan.out_order.clone())
        .levels(levels)
        .values(values)
        .build()
        .map_err(BuildError::from)?;
    if csf_validate::validate_view(tensor.view()).is_err() {
        return Ok(None);
    }
    Ok(Some(Built { tensor, auto: None, removed: 0 }))
}

/// The copied levels and the leaf range, or `None` when the input's
/// arrays do not hold the range (unvalidated input).
fn tree(view: &CsfView<'_>, root: Root) -> Option<(Vec<OwnedLevel>, (usize, usize))> {
    let top = view.level(0)?;
    let (first, end) = top.children(0);
    let fiber = Fiber { start: first, crd: top.crd.slice(first, end) };
    let mut levels = Vec::with_capacity(view.rank());
    let (mut range, below) = match root {
        Root::Range { start, len } => {
            let a = first + lower_bound(fiber.crd, start);
            // Not below `a`, even on a fiber that is not sorted.
            let b = (first + lower_bound(fiber.crd, start.checked_add(len)?)).max(a);
            let crd = top.crd.slice(a, b);
            let shifted: Option<Vec<u64>> = crd.iter().map(|c| c.checked_sub(start)).collect();
            levels.push(OwnedLevel::new(vec![0, crd.len() as u64], shifted?));
            ((a, b), 1)
        }
        Root::Index(c) => match fiber.find(c) {
            Some(node) => {
                let next = view.level(1)?;
                let (a, b) = next.children(node);
                let crd: Vec<u64> = next.crd.slice(a, b).iter().collect();
                levels.push(OwnedLevel::new(vec![0, crd.len() as u64], crd));
                ((a, b), 2)
            }
            // No entry: the empty tensor of the levels below.
            None => {
                levels.push(OwnedLevel::new(vec![0, 0], Vec::new()));
                levels.extend((2..view.rank()).map(|_| OwnedLevel::new(vec![0], Vec::new())));
                return Some((levels, (0, 0)));
            }
        },
    };
    for level in below..view.rank() {
        let lvl = view.level(level)?;
        let (s, e) = lvl.children_of_range(range.0, range.1);
        levels.push(OwnedLevel::new(rebased(lvl, range, s)?, lvl.crd.slice(s, e).iter().collect()));
        range = (s, e);
    }
    Some((levels, range))
}

/// `pos_L[a..=b]` less `s`, the first child's node index; `None` when
/// `pos` is too short or goes below `s` (unvalidated input).
fn rebased(level: Level<'_>, (a, b): (usize, usize), s: usize) -> Option<Vec<u64>> {
    let pos = level.pos.slice(a, b.checked_add(1)?);
    if pos.len() != b - a + 1 {
        return None;
    }
    pos.iter().map(|p| p.checked_sub(s as u64)).collect()
}

/// The values of leaves `a..b` and their type: copied bytes, 4-bit codes
/// re-packed when the range starts inside a byte, or `f32`s dequantized;
/// `None` when the buffer or `nnz` does not cover them.
fn values(view: &CsfView<'_>, (a, b): (usize, usize)) -> Option<(ElementType, Vec<u8>)> {
    if b as u64 > view.nnz() {
        return None;
    }
    if view.quantization().is_some() {
        // Not per-channel (`fast_root`): a group depends on the leaf alone.
        let mut out = Vec::with_capacity((b - a).checked_mul(4)?);
        for leaf in a..b {
            out.extend_from_slice(&view.value(leaf, &[])?.to_f32().to_le_bytes());
        }
        return Some((ElementType::F32, out));
    }
    let stored = view.values();
    let element_type = stored.element_type();
    let bytes = stored.as_bytes();
    let out = match element_type.packing() {
        Packing::Bytes(width) => {
            let width = usize::from(width);
            bytes.get(a.checked_mul(width)?..b.checked_mul(width)?)?.to_vec()
        }
        Packing::SubByte { bits, per_byte: packed } => {
            let per_byte = usize::from(packed.max(1));
            let count = b - a;
            if a % per_byte == 0 {
                let mut out = bytes.get(a / per_byte..b.div_ceil(per_byte))?.to_vec();
                // The unused high bits of the last byte are zero.
                let used = count % per_byte;
                if let (Some(last), true) = (out.last_mut(), used != 0) {
                    *last &= ((1u16 << (used as u32 * u32::from(bits))) - 1) as u8;
                }
                out
            } else {
                let codes: Option<Vec<u8>> = (a..b).map(|leaf| code(bytes, leaf, bits, packed)).collect();
                crate::values::pack(element_type, codes?)
            }
        }
    };
    Some((element_type, out))
}
