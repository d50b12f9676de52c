//! Valid files, each exercising an edge: every element type, mode orders,
//! shapes, ranks, statistics and optional sections.

use hurray_format::{ElementType, QuantScheme, Quantization, Statistics};

use super::elements::values_bytes;
use super::file::{Cases, File, CUDA};
use super::tensors::{empty, odd_nf4, quantized, rank4, rank64, spec, spec_statistics, spec_with};
use super::{sample_values, TYPE_CASES};
use crate::{reference_csf, synthetic, Distribution, TestTensor};

pub(super) fn valid_cases(out: &mut Cases) {
    out.valid(
        "valid-spec-example",
        "csf-layout.txt § Example: shape [2,3,4], f32, identity order, 4 non-zeros",
        &spec(),
    );

    let coo = synthetic(&[3, 4, 5], 12, Distribution::Uniform, 3);
    let orders: [(&'static str, [u32; 3]); 6] = [
        ("valid-mode-order-012", [0, 1, 2]),
        ("valid-mode-order-021", [0, 2, 1]),
        ("valid-mode-order-102", [1, 0, 2]),
        ("valid-mode-order-120", [1, 2, 0]),
        ("valid-mode-order-201", [2, 0, 1]),
        ("valid-mode-order-210", [2, 1, 0]),
    ];
    for (name, order) in orders {
        out.valid(
            name,
            "the same 12 random non-zeros of shape [3,4,5] stored in this mode order (all six are valid)",
            &File::from_arrays(&reference_csf(&coo, &order), ElementType::F32),
        );
    }

    out.valid(
        "valid-empty",
        "empty tensor: nnz 0, pos_0 = [0,0], pos_1 = pos_2 = [0], no crd, no values",
        &empty(&[2, 3, 4], &[0, 1, 2]),
    );
    out.valid(
        "valid-empty-rank-4",
        "empty rank-4 tensor with mode order [1,0,3,2]",
        &empty(&[5, 6, 7, 8], &[1, 0, 3, 2]),
    );
    out.valid("valid-zero-extent", "shape [2,0,4] (a zero extent), nnz 0", &empty(&[2, 0, 4], &[0, 1, 2]));
    out.valid("valid-rank-64", "rank 64 (the cap), reversed mode order, 3 non-zeros", &rank64());

    let max = u64::MAX;
    let huge = TestTensor {
        shape: vec![max; 3],
        indices: vec![max - 1, 0, max - 1, max - 1, max - 1, 0, 0, max - 1, max - 1],
        values: vec![1.0, 2.0, 3.0],
    };
    let huge_file = File::from_arrays(&reference_csf(&huge, &[0, 1, 2]), ElementType::U64);
    out.valid(
        "valid-max-coordinates",
        "shape [2^64-1; 3] with coordinates 2^64-2 (element count overflows u64), u64 values",
        &huge_file,
    );

    let odd = TestTensor {
        shape: vec![2, 3, 4],
        indices: vec![0, 0, 1, 0, 2, 3, 1, 1, 0],
        values: vec![1.0, -2.0, 3.0],
    };
    out.valid(
        "valid-i4-odd-nnz",
        "i4 values, nnz 3: two bytes, the unused high nibble of the last is zero",
        &File::from_arrays(&reference_csf(&odd, &[0, 1, 2]), ElementType::I4),
    );
    out.valid(
        "valid-nf4-odd-nnz",
        "nf4 codes, nnz 5: three bytes, the unused high nibble of the last is zero",
        &odd_nf4(),
    );

    assert_eq!(TYPE_CASES.len(), ElementType::ALL.len(), "one valid-type case per element type");
    for (&name, &ty) in TYPE_CASES.iter().zip(ElementType::ALL) {
        assert_eq!(name.strip_prefix("valid-type-"), Some(ty.name()));
        out.valid(
            name,
            "the spec example's tree with this element type (values: corpus::sample_values)",
            &spec_with(ty, &sample_values(ty)),
        );
    }

    out.valid(
        "valid-statistics",
        "statistics present and consistent: nnz 4, sparsity_ratio 1 - 4/24, min 1, max 4",
        &spec().with(|f| f.desc.statistics = Some(spec_statistics())),
    );
    out.valid(
        "valid-statistics-zero-extent",
        "statistics on shape [2,0,4]: nnz 0; the element count is 0, the ratio undefined, so sparsity_ratio is not checked",
        &empty(&[2, 0, 4], &[0, 1, 2]).with(|f| {
            f.desc.statistics = Some(Statistics { nnz: 0, sparsity_ratio: 1.0, min: None, max: None });
        }),
    );
    out.valid(
        "valid-statistics-huge-shape",
        "statistics on shape [2^64-1; 3], nnz 3: the element count overflows u64; 1 - 3/total is 1.0 in binary64, as recorded",
        &huge_file.clone().with(|f| {
            f.desc.statistics =
                Some(Statistics { nnz: 3, sparsity_ratio: 1.0, min: Some(1.0), max: Some(3.0) });
        }),
    );
    let warned = spec().with(|f| {
        f.desc.statistics = Some(Statistics { sparsity_ratio: 0.5, ..spec_statistics() });
    });
    out.valid(
        "valid-sparsity-ratio-warning",
        "statistics sparsity_ratio 0.5 instead of 1 - 4/24: a SHOULD, so valid with a warning",
        &warned,
    );
    out.0.last_mut().expect("just pushed").warnings = &["sparsity-ratio"];
    let two32 = 1u64 << 32;
    let single = File::new(
        ElementType::F32,
        &[two32; 3],
        &[0, 1, 2],
        1,
        &[(vec![0, 1], vec![0]), (vec![0, 1], vec![0]), (vec![0, 1], vec![0])],
        1.0f32.to_le_bytes().to_vec(),
    );
    out.valid(
        "valid-sparsity-ratio-warning-huge-shape",
        "shape [2^32; 3] (2^96 elements, past u64), nnz 1, sparsity_ratio 0.5: expected 1.0, a warning",
        &single.with(|f| {
            f.desc.statistics =
                Some(Statistics { nnz: 1, sparsity_ratio: 0.5, min: Some(1.0), max: Some(1.0) });
        }),
    );
    out.0.last_mut().expect("just pushed").warnings = &["sparsity-ratio"];
    out.valid(
        "valid-sparsity-ratio-warning-nan",
        "spec example whose statistics sparsity_ratio is NaN: never within the tolerance, a warning",
        &spec().with(|f| {
            f.desc.statistics = Some(Statistics { sparsity_ratio: f64::NAN, ..spec_statistics() });
        }),
    );
    out.0.last_mut().expect("just pushed").warnings = &["sparsity-ratio"];

    // The spec is silent on interior nodes without children in a non-empty
    // tensor; docs/format.md § 7.5 makes them a SHOULD NOT: valid, warned about.
    out.valid(
        "valid-childless-nodes-warning",
        "shape [3,3,4], the spec example's 4 non-zeros plus childless level-0 node 2 and level-1 node 1: valid, one warning per level",
        &File::new(
            ElementType::F32,
            &[3, 3, 4],
            &[0, 1, 2],
            4,
            &[
                (vec![0, 3], vec![0, 1, 2]),
                (vec![0, 3, 4, 4], vec![0, 1, 2, 1]),
                (vec![0, 1, 1, 2, 4], vec![1, 3, 0, 2]),
            ],
            values_bytes(ElementType::F32, &[1.0, 2.0, 3.0, 4.0]),
        ),
    );
    out.0.last_mut().expect("just pushed").warnings = &["childless-nodes", "childless-nodes"];

    out.valid(
        "valid-quantization",
        "i8 values with a per-tensor quantization section and one f32 scale buffer (index 7), all on host",
        &quantized(),
    );
    let per_channel = spec_with(ElementType::I8, &[1.0, -2.0, 3.0, 4.0]).with(|f| {
        f.desc.quantization = Some(Quantization {
            scheme: QuantScheme::PerChannel,
            axis: 0,
            block_size: 0,
            scale_type: ElementType::F32,
            zero_point_type: Some(ElementType::I8),
        });
        f.buffers[0].1 = CUDA;
        f.buffers.push(([0.5f32.to_le_bytes(), 0.25f32.to_le_bytes()].concat(), CUDA));
        f.buffers.push((vec![0, 0xff], CUDA));
    });
    out.valid(
        "valid-quantization-cuda",
        "per-channel quantization, values and both parameter buffers (scales, zero points) on CUDA, index buffers on host",
        &per_channel,
    );

    out.valid("valid-rank-4", "rank 4, 40 random non-zeros, mode order [3,1,0,2]", &rank4());
    let coo5 = synthetic(&[2, 3, 2, 3, 2], 10, Distribution::Uniform, 5);
    out.valid(
        "valid-rank-5",
        "rank 5, 10 random non-zeros, mode order [4,2,0,3,1], f64 values",
        &File::from_arrays(&reference_csf(&coo5, &[4, 2, 0, 3, 1]), ElementType::F64),
    );
    out.valid(
        "valid-single-nonzero",
        "shape [1,1,1] with its only element stored (i32 7)",
        &File::new(
            ElementType::I32,
            &[1, 1, 1],
            &[0, 1, 2],
            1,
            &[(vec![0, 1], vec![0]), (vec![0, 1], vec![0]), (vec![0, 1], vec![0])],
            7i32.to_le_bytes().to_vec(),
        ),
    );
    out.valid(
        "valid-explicit-zero",
        "a stored value that is 0.0 (explicit zeros are allowed)",
        &spec_with(ElementType::F32, &[1.0, 0.0, 3.0, 4.0]),
    );
}
