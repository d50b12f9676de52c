//! The empty-tensor form: with `nnz = 0` no level stores a node.

use super::file::Cases;
use super::tensors::empty;

pub(super) fn empty_tensor_cases(out: &mut Cases) {
    let e = || empty(&[2, 3, 4], &[0, 1, 2]);
    let (p0, c0, p1, c1, p2, c2) = (1, 2, 3, 4, 5, 6);
    out.strict(
        "empty-pos0-terminal",
        "terminal-count",
        "empty tensor with pos_0 = [0,1]",
        &e().replace(p0, &[0, 0], &[0, 1]),
    );
    out.strict(
        "empty-pos0-start",
        "pos-start",
        "empty tensor with pos_0 = [1,1]",
        &e().replace(p0, &[0, 0], &[1, 1]),
    );
    out.strict(
        "empty-pos0-short",
        "pos-size",
        "empty tensor with pos_0 = [0]",
        &e().replace(p0, &[0, 0], &[0]),
    );
    out.strict(
        "empty-pos1-two-entries",
        "pos-size",
        "empty tensor with pos_1 = [0,0] (must be [0])",
        &e().replace(p1, &[0], &[0, 0]),
    );
    out.strict(
        "empty-pos1-missing",
        "pos-size",
        "empty tensor with pos_1 = [] (must be [0])",
        &e().replace(p1, &[0], &[]),
    );
    out.strict(
        "empty-pos1-start",
        "pos-start",
        "empty tensor with pos_1 = [1]",
        &e().replace(p1, &[0], &[1]),
    );
    out.strict(
        "empty-pos-leaf-two-entries",
        "pos-size",
        "empty tensor with pos_2 = [0,0] (must be [0])",
        &e().replace(p2, &[0], &[0, 0]),
    );
    out.strict(
        "empty-crd0-nonempty",
        "pos-size",
        "empty tensor with crd_0 = [0] (pos_0 still [0,0]): n_0 = 1 makes pos_1 = [0] one entry short",
        &e().replace(c0, &[], &[0]),
    );
    out.strict(
        "empty-crd-leaf-nonempty",
        "terminal-count",
        "empty tensor with crd_2 = [0] (pos_2 still [0])",
        &e().replace(c2, &[], &[0]),
    );
    // Invariants 1-5 hold in these two, but the empty form does not: with
    // nnz = 0 no level stores a node (csf-layout § Storage Invariants).
    out.strict(
        "empty-form-childless-level-0",
        "empty-form",
        "nnz 0 with pos_0 = [0,1], crd_0 = [0], pos_1 = [0,0], pos_2 = [0]: a level-0 node without children",
        &e().replace(p0, &[0, 0], &[0, 1]).replace(c0, &[], &[0]).replace(p1, &[0], &[0, 0]),
    );
    out.strict(
        "empty-form-childless-level-1",
        "empty-form",
        "nnz 0 with pos_0 = [0,1], crd_0 = [0], pos_1 = [0,1], crd_1 = [2], pos_2 = [0,0]: a path ending above the leaves",
        &e().replace(p0, &[0, 0], &[0, 1])
            .replace(c0, &[], &[0])
            .replace(p1, &[0], &[0, 1])
            .replace(c1, &[], &[2])
            .replace(p2, &[0], &[0, 0]),
    );
    out.strict(
        "empty-values-nonempty",
        "values-size",
        "empty tensor with a 4-byte values buffer",
        &e().with(|f| f.buffers[0].0 = 1.0f32.to_le_bytes().to_vec()),
    );
    out.strict(
        "empty-nnz-nonzero",
        "leaf-count",
        "empty tree whose descriptor declares nnz 1 (values buffer sized for 1)",
        &e().with(|f| {
            f.desc.nnz = 1;
            f.buffers[0].0 = 1.0f32.to_le_bytes().to_vec();
        }),
    );
}
