//! The five storage invariants of csf-layout.txt, at each level.

use hurray_format::ElementType;

use super::file::{Cases, File};
use super::tensors::{rank4, rank64, spec, spec_coo, wide};
use crate::{reference_csf, synthetic, Distribution};

pub(super) fn invariant_cases(out: &mut Cases) {
    let (p0, c0, p1, c1, p2, c2) = (1, 2, 3, 4, 5, 6);

    // Invariant 1.
    out.strict(
        "pos-start-level-0",
        "pos-start",
        "spec example with pos_0 = [1,2]",
        &spec().replace(p0, &[0, 2], &[1, 2]),
    );
    out.strict(
        "pos-start-level-1",
        "pos-start",
        "spec example with pos_1 = [1,2,3]",
        &spec().replace(p1, &[0, 2, 3], &[1, 2, 3]),
    );
    out.strict(
        "pos-start-leaf",
        "pos-start",
        "spec example with pos_2 = [1,1,2,4]",
        &spec().replace(p2, &[0, 1, 2, 4], &[1, 1, 2, 4]),
    );
    out.strict(
        "pos-start-rank-4-level-2",
        "pos-start",
        "rank-4 tensor with pos_2[0] = 1",
        &rank4().pos_start(2),
    );
    out.strict(
        "pos-start-huge",
        "pos-start",
        "spec example with pos_1 = [2^64-1,2,3] (also above its successor)",
        &spec().replace(p1, &[0, 2, 3], &[u64::MAX, 2, 3]),
    );

    // Invariant 2. (pos_0 has two entries [0, n_0], so it cannot decrease
    // without also breaking invariant 1 or 3.)
    out.strict(
        "pos-decreasing-level-1",
        "pos-decreasing",
        "shape [3,5,4] tensor with pos_1 = [0,2,1,5] (was [0,2,3,5]); crd_1 is increasing across parents, so no slice is unsorted",
        &wide().replace(p1, &[0, 2, 3, 5], &[0, 2, 1, 5]),
    );
    out.strict(
        "pos-decreasing-leaf",
        "pos-decreasing",
        "spec example with pos_2 = [0,2,1,4]",
        &spec().replace(p2, &[0, 1, 2, 4], &[0, 2, 1, 4]),
    );

    // Invariant 3.
    out.strict(
        "terminal-count-level-0",
        "terminal-count",
        "spec example with pos_0 = [0,1]: crd_0 has 2 nodes",
        &spec().replace(p0, &[0, 2], &[0, 1]),
    );
    out.strict(
        "terminal-count-level-1",
        "terminal-count",
        "spec example with pos_1 = [0,2,2]: crd_1 has 3 nodes",
        &spec().replace(p1, &[0, 2, 3], &[0, 2, 2]),
    );
    out.strict(
        "terminal-count-leaf",
        "terminal-count",
        "spec example with pos_2 = [0,1,2,3]: crd_2 has 4 nodes",
        &spec().replace(p2, &[0, 1, 2, 4], &[0, 1, 2, 3]),
    );
    out.strict(
        "terminal-count-past-end",
        "terminal-count",
        "spec example with pos_2 = [0,1,2,5]: points past crd_2",
        &spec().replace(p2, &[0, 1, 2, 4], &[0, 1, 2, 5]),
    );
    out.strict(
        "terminal-count-huge",
        "terminal-count",
        "spec example with pos_1 = [0,2,2^64-1]",
        &spec().replace(p1, &[0, 2, 3], &[0, 2, u64::MAX]),
    );
    out.strict(
        "terminal-count-rank-4-level-3",
        "terminal-count",
        "rank-4 tensor with its leaf terminal pos one short",
        &rank4().short_terminal(3),
    );
    out.strict(
        "leaf-count-nnz-too-big",
        "leaf-count",
        "spec example declaring nnz 5 (values buffer sized for 5) over a tree of 4 leaves",
        &spec().with(|f| {
            f.desc.nnz = 5;
            f.buffers[0].0.extend(5.0f32.to_le_bytes());
        }),
    );
    out.strict(
        "leaf-count-nnz-too-small",
        "leaf-count",
        "spec example declaring nnz 3 (values buffer sized for 3) over a tree of 4 leaves",
        &spec().with(|f| {
            f.desc.nnz = 3;
            f.buffers[0].0.truncate(12);
        }),
    );

    // Invariant 4.
    out.strict(
        "sibling-order-level-0",
        "sibling-order",
        "spec example with crd_0 = [1,0]",
        &spec().replace(c0, &[0, 1], &[1, 0]),
    );
    out.strict(
        "sibling-order-level-1",
        "sibling-order",
        "spec example with crd_1 = [2,0,1]",
        &spec().replace(c1, &[0, 2, 1], &[2, 0, 1]),
    );
    out.strict(
        "sibling-order-leaf",
        "sibling-order",
        "spec example with crd_2 = [1,3,2,0]",
        &spec().replace(c2, &[1, 3, 0, 2], &[1, 3, 2, 0]),
    );
    out.strict(
        "sibling-order-duplicate",
        "sibling-order",
        "spec example with crd_2 = [1,3,0,0]: duplicate siblings",
        &spec().replace(c2, &[1, 3, 0, 2], &[1, 3, 0, 0]),
    );
    out.strict(
        "sibling-order-rank-4-level-2",
        "sibling-order",
        "rank-4 tensor with the first two siblings of a level-2 fiber swapped",
        &rank4().swap_siblings(2),
    );
    let coo = synthetic(&[3, 4, 5], 12, Distribution::Uniform, 3);
    out.strict(
        "sibling-order-permuted",
        "sibling-order",
        "mode order [2,0,1] tensor with two leaf siblings swapped",
        &File::from_arrays(&reference_csf(&coo, &[2, 0, 1]), ElementType::F32).swap_siblings(2),
    );
    out.strict(
        "sibling-order-rank-64",
        "sibling-order",
        "rank-64 tensor with two siblings swapped at the first level that has two",
        &{
            let f = rank64();
            let level = (0..64)
                .find(|&l| f.slices(l).iter().any(|(s, e)| e - s >= 2))
                .expect("some fiber has 2 children");
            f.swap_siblings(level)
        },
    );

    // Invariant 5.
    out.strict(
        "coordinate-bounds-level-0",
        "coordinate-bounds",
        "spec example with crd_0 = [0,2]: bound shape[0] = 2",
        &spec().replace(c0, &[0, 1], &[0, 2]),
    );
    out.strict(
        "coordinate-bounds-level-1",
        "coordinate-bounds",
        "spec example with crd_1 = [0,3,1]: bound shape[1] = 3",
        &spec().replace(c1, &[0, 2, 1], &[0, 3, 1]),
    );
    out.strict(
        "coordinate-bounds-leaf",
        "coordinate-bounds",
        "spec example with crd_2 = [1,4,0,2]: bound shape[2] = 4",
        &spec().replace(c2, &[1, 3, 0, 2], &[1, 4, 0, 2]),
    );
    out.strict(
        "coordinate-bounds-u64-max",
        "coordinate-bounds",
        "spec example with crd_2 = [1,3,0,2^64-1]",
        &spec().replace(c2, &[1, 3, 0, 2], &[1, 3, 0, u64::MAX]),
    );
    out.strict(
        "coordinate-bounds-permuted",
        "coordinate-bounds",
        "spec example's non-zeros in mode order [2,1,0]: a leaf coordinate 2, within shape[2] = 4 but not the leaf bound shape[mode_order[2]] = shape[0] = 2",
        &File::from_arrays(&reference_csf(&spec_coo(), &[2, 1, 0]), ElementType::F32).past_bound(2),
    );
    out.strict(
        "coordinate-bounds-rank-4-leaf",
        "coordinate-bounds",
        "rank-4 tensor with a leaf coordinate equal to its bound shape[mode_order[3]]",
        &rank4().past_bound(3),
    );
    out.strict(
        "coordinate-bounds-rank-64-level-40",
        "coordinate-bounds",
        "rank-64 tensor with a level-40 coordinate equal to its bound",
        &rank64().past_bound(40),
    );

    // § Buffer Size for pos.
    out.strict(
        "pos-size-level-0",
        "pos-size",
        "spec example with pos_0 = [0,2,2]: 3 entries, pos_0 has 2",
        &spec().replace(p0, &[0, 2], &[0, 2, 2]),
    );
    out.strict(
        "pos-size-level-1",
        "pos-size",
        "spec example with pos_1 = [0,2,3,3]: n_0 + 1 = 3 entries expected",
        &spec().extra_pos_entry(1),
    );
    out.strict(
        "pos-size-leaf",
        "pos-size",
        "spec example with pos_2 = [0,1,2,4,4]: n_1 + 1 = 4 entries expected",
        &spec().extra_pos_entry(2),
    );
    out.strict(
        "pos-size-rank-4-level-3",
        "pos-size",
        "rank-4 tensor with one extra entry at the end of pos_3",
        &rank4().extra_pos_entry(3),
    );
}
