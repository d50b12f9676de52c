//! The descriptor's rules: the `mode_order` permutation, the buffer count,
//! `byte_offset`, sharding, quantization devices, statistics `nnz`.

use hurray_format::{ElementType, FixedVec, Quantization, ShardDescriptor, Statistics};

use super::file::{Cases, File, CUDA, HOST};
use super::tensors::{empty, quantized, rank4, spec, spec_statistics};
use crate::tree::per_tensor;

pub(super) fn descriptor_cases(out: &mut Cases) {
    let order = |f: &mut File, o: &[u32]| f.desc.mode_order = FixedVec::from_slice(o).expect("fits");
    out.strict(
        "mode-order-not-permutation-duplicate",
        "mode-order-not-permutation",
        "spec example with mode_order [0,0,2]: dimension 0 twice",
        &spec().with(|f| order(f, &[0, 0, 2])),
    );
    out.strict(
        "mode-order-not-permutation-out-of-range",
        "mode-order-not-permutation",
        "spec example with mode_order [0,1,3]: 3 is not a dimension of a rank-3 tensor",
        &spec().with(|f| order(f, &[0, 1, 3])),
    );
    out.strict(
        "mode-order-not-permutation-rank-4",
        "mode-order-not-permutation",
        "rank-4 tensor with mode_order [3,1,1,2] instead of [3,1,0,2]",
        &rank4().with(|f| order(f, &[3, 1, 1, 2])),
    );
    out.strict(
        "mode-order-not-permutation-huge",
        "mode-order-not-permutation",
        "spec example with mode_order [0,1,4294967295]",
        &spec().with(|f| order(f, &[0, 1, u32::MAX])),
    );
    out.strict(
        "buffer-count-extra-empty",
        "buffer-count",
        "spec example with an 8th (empty) buffer and no quantization section",
        &spec().with(|f| f.buffers.push((Vec::new(), HOST))),
    );
    out.strict(
        "buffer-count-extra-data",
        "buffer-count",
        "spec example with an 8th buffer of 16 bytes and no quantization section",
        &spec().with(|f| f.buffers.push((vec![1; 16], HOST))),
    );
    out.strict(
        "buffer-count-quantization-without-parameters",
        "buffer-count",
        "quantization section present but no parameter buffer after the layout's 7",
        &quantized().with(|f| {
            f.buffers.pop();
        }),
    );
    out.strict(
        "buffer-count-too-many-parameters",
        "buffer-count",
        "quantized spec example with 9 parameter buffers (the cap is 8)",
        &quantized().with(|f| {
            for _ in 0..8 {
                f.buffers.push((0.5f32.to_le_bytes().to_vec(), HOST));
            }
        }),
    );
    out.strict(
        "byte-offset-nonzero",
        "byte-offset",
        "spec example with byte_offset 64",
        &spec().with(|f| f.desc.byte_offset = 64),
    );
    out.strict(
        "byte-offset-max",
        "byte-offset",
        "spec example with byte_offset 2^64-1",
        &spec().with(|f| f.desc.byte_offset = u64::MAX),
    );
    out.strict(
        "shard-descriptor",
        "shard-descriptor",
        "spec example carrying a shard section (shard 0 of 2)",
        &spec().with(|f| {
            f.desc.shard = Some(ShardDescriptor {
                shard_index: 0,
                shard_count: 2,
                shard_offset: FixedVec::from_slice(&[0, 0, 0]).expect("fits"),
            });
        }),
    );
    out.strict(
        "quantization-device-scale-on-cuda",
        "quantization-device",
        "quantized spec example: values on host, the scale buffer on CUDA",
        &quantized().with(|f| f.buffers[7].1 = CUDA),
    );
    out.strict(
        "quantization-device-values-on-cuda",
        "quantization-device",
        "per-channel quantization: values and scales on CUDA, the zero-point buffer (index 8) on host",
        &quantized().with(|f| {
            f.desc.quantization =
                Some(Quantization { zero_point_type: Some(ElementType::I8), ..per_tensor() });
            f.buffers[0].1 = CUDA;
            f.buffers[7].1 = CUDA;
            f.buffers.push((vec![0], HOST));
        }),
    );
    out.strict(
        "statistics-nnz-mismatch",
        "statistics-nnz",
        "statistics nnz 5, descriptor nnz 4 (sparsity_ratio consistent with the descriptor)",
        &spec().with(|f| f.desc.statistics = Some(Statistics { nnz: 5, ..spec_statistics() })),
    );
    out.strict(
        "statistics-nnz-empty",
        "statistics-nnz",
        "empty tensor whose statistics claim 1 non-zero",
        &empty(&[2, 3, 4], &[0, 1, 2]).with(|f| {
            f.desc.statistics = Some(Statistics { nnz: 1, sparsity_ratio: 1.0, min: None, max: None });
        }),
    );
}
