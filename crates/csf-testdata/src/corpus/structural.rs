//! Rules without which no view can be taken: rank, `mode_order` length,
//! missing buffers, buffers that are not whole `u64` arrays.

use hurray_format::{ElementType, FixedVec};

use super::elements::values_bytes;
use super::file::{Cases, File};
use super::tensors::{quantized, spec};
use crate::{reference_csf, TestTensor};

pub(super) fn structural_cases(out: &mut Cases) {
    out.strict(
        "rank-below-3-rank-0",
        "rank-below-3",
        "rank 0 (a scalar): shape [], mode_order [], one buffer (values)",
        &File::new(ElementType::F32, &[], &[], 1, &[], 1.0f32.to_le_bytes().to_vec()),
    );
    out.strict(
        "rank-below-3-rank-1",
        "rank-below-3",
        "rank 1: shape [5], a well-formed one-level tree with 2 non-zeros",
        &File::new(
            ElementType::F32,
            &[5],
            &[0],
            2,
            &[(vec![0, 2], vec![1, 3])],
            values_bytes(ElementType::F32, &[1.0, 2.0]),
        ),
    );
    let matrix =
        TestTensor { shape: vec![3, 4], indices: vec![0, 1, 2, 0, 2, 3], values: vec![1.0, 2.0, 3.0] };
    out.strict(
        "rank-below-3-rank-2",
        "rank-below-3",
        "rank 2: shape [3,4], a well-formed two-level tree (CSR's job)",
        &File::from_arrays(&reference_csf(&matrix, &[0, 1]), ElementType::F32),
    );
    out.strict(
        "mode-order-length-short",
        "mode-order-length",
        "spec example with mode_order [0,1]: 2 entries for rank 3",
        &spec().with(|f| f.desc.mode_order = FixedVec::from_slice(&[0, 1]).expect("fits")),
    );
    out.strict(
        "mode-order-length-long",
        "mode-order-length",
        "spec example with mode_order [0,1,2,3]: 4 entries for rank 3",
        &spec().with(|f| f.desc.mode_order = FixedVec::from_slice(&[0, 1, 2, 3]).expect("fits")),
    );
    out.strict(
        "missing-buffer-leaf-crd",
        "missing-buffer",
        "spec example without its last buffer (crd_2): 6 buffers, rank 3 needs 7",
        &spec().with(|f| {
            f.buffers.pop();
        }),
    );
    out.strict(
        "missing-buffer-values-only",
        "missing-buffer",
        "spec example with only the values buffer",
        &spec().with(|f| f.buffers.truncate(1)),
    );
    let not_u64: [(&'static str, usize, isize, &'static str); 4] = [
        ("buffer-not-u64-pos-0", 1, 1, "pos_0 is 17 bytes (one byte appended)"),
        ("buffer-not-u64-crd-1", 4, -1, "crd_1 is 23 bytes (last byte cut)"),
        ("buffer-not-u64-pos-2", 5, 4, "pos_2 is 36 bytes (four bytes appended)"),
        ("buffer-not-u64-leaf-crd", 6, 1, "crd_2 (leaf) is 33 bytes (one byte appended)"),
    ];
    out.strict(
        "buffer-not-u64-scale-as-crd",
        "buffer-not-u64",
        "quantized spec example without crd_2: its 4-byte scale lands at index 6, where crd_2 belongs",
        &quantized().with(|f| {
            f.buffers.remove(6);
        }),
    );
    for (name, buffer, delta, description) in not_u64 {
        out.strict(
            name,
            "buffer-not-u64",
            description,
            &spec().with(|f| {
                let b = &mut f.buffers[buffer].0;
                if delta > 0 {
                    b.extend(vec![0; delta as usize]);
                } else {
                    b.truncate(b.len() - delta.unsigned_abs());
                }
            }),
        );
    }
}
