//! Helpers shared by the test binaries of the csf-build functions that run on
//! permissively read views (`compare`, `reduce`).

#![allow(dead_code)] // each test binary uses its own part

use csf_build::Built;
use csf_testdata::Tree;
use hurray_format::ElementType;
use proptest::prelude::*;

/// Every element type of whole bytes that numpy also has.
pub const WHOLE_BYTE_TYPES: [ElementType; 12] = [
    ElementType::Bool,
    ElementType::I8,
    ElementType::I16,
    ElementType::I32,
    ElementType::I64,
    ElementType::U8,
    ElementType::U16,
    ElementType::U32,
    ElementType::U64,
    ElementType::F16,
    ElementType::F32,
    ElementType::F64,
];

/// `built`'s container with one change (`what`): a `pos` or `crd` word
/// (level and word picked), a value byte, the mode order, or `nnz`.
pub fn hostile(
    built: &Built,
    level: prop::sample::Index,
    word: prop::sample::Index,
    flip: u64,
    what: u8,
) -> Vec<u8> {
    let view = built.tensor.view();
    let levels: Vec<(Vec<u64>, Vec<u64>)> =
        view.levels().iter().map(|l| (l.pos.iter().collect(), l.crd.iter().collect())).collect();
    let mut tree = Tree::new(
        view.element_type(),
        view.shape(),
        view.mode_order(),
        view.nnz(),
        levels,
        view.values().as_bytes().to_vec(),
    );
    let l = level.index(tree.rank());
    match what {
        0 | 1 => {
            let array = if what == 0 { tree.pos(l) } else { tree.crd(l) };
            if !array.is_empty() {
                let at = word.index(array.len());
                // A bit flipped, or a small change, or any word.
                array[at] = match flip % 3 {
                    0 => array[at] ^ (1 << ((flip >> 8) % 64)),
                    1 => array[at].wrapping_add((flip >> 8) % 5).wrapping_sub(2),
                    _ => flip,
                };
            }
        }
        2 => {
            if !tree.values.is_empty() {
                let at = word.index(tree.values.len());
                tree.values[at] ^= 1 << (flip % 8);
            }
        }
        3 => tree.mode_order[l] = (flip % (tree.rank() as u64 + 1)) as u32,
        _ => tree.nnz = tree.nnz.saturating_sub(1 + flip % 3),
    }
    tree.encode()
}
