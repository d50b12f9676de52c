//! The tensors the cases start from: the spec example and its variants,
//! empty, wide, rank-4, rank-64 and quantized tensors.

use hurray_format::{ElementType, Quantization, Statistics};

use super::elements::values_bytes;
use super::file::{File, HOST};
use crate::tree::per_tensor;
use crate::{reference_csf, synthetic, Distribution, TestTensor};

/// The spec's worked example (csf-layout.txt § Example): shape [2, 3, 4].
fn spec_levels() -> Vec<(Vec<u64>, Vec<u64>)> {
    vec![(vec![0, 2], vec![0, 1]), (vec![0, 2, 3], vec![0, 2, 1]), (vec![0, 1, 2, 4], vec![1, 3, 0, 2])]
}

/// The spec example with `values` stored as `ty`.
pub(super) fn spec_with(ty: ElementType, values: &[f64]) -> File {
    File::new(ty, &[2, 3, 4], &[0, 1, 2], 4, &spec_levels(), values_bytes(ty, values))
}

/// The spec example exactly: f32 values 1, 2, 3, 4.
pub(super) fn spec() -> File {
    spec_with(ElementType::F32, &[1.0, 2.0, 3.0, 4.0])
}

/// The spec example's non-zeros as a coordinate list.
pub(super) fn spec_coo() -> TestTensor {
    TestTensor {
        shape: vec![2, 3, 4],
        indices: vec![0, 0, 1, 0, 2, 3, 1, 1, 0, 1, 1, 2],
        values: vec![1.0, 2.0, 3.0, 4.0],
    }
}

/// Shape [3, 5, 4], f64, 7 non-zeros, built so that `crd_1` is increasing
/// across parents ([0, 1 | 2 | 3, 4]): merging two of its slices keeps them
/// sorted, so a decreasing `pos_1` breaks invariant 2 and nothing else.
pub(super) fn wide() -> File {
    let coo = TestTensor {
        shape: vec![3, 5, 4],
        indices: vec![0, 0, 1, 0, 0, 3, 0, 1, 0, 1, 2, 2, 2, 3, 1, 2, 4, 0, 2, 4, 3],
        values: (1..=7).map(f64::from).collect(),
    };
    let a = reference_csf(&coo, &[0, 1, 2]);
    assert_eq!(a.levels[1], (vec![0, 2, 3, 5], vec![0, 1, 2, 3, 4]));
    File::from_arrays(&a, ElementType::F64)
}

/// A rank-4 tensor with a non-identity mode order.
pub(super) fn rank4() -> File {
    let coo = synthetic(&[3, 4, 5, 6], 40, Distribution::Uniform, 4);
    File::from_arrays(&reference_csf(&coo, &[3, 1, 0, 2]), ElementType::F32)
}

/// A rank-64 tensor (the cap) with three non-zeros and the reversed mode order.
pub(super) fn rank64() -> File {
    let shape: Vec<u64> = (0..64).map(|d| 2 + d % 3).collect();
    let coo = synthetic(&shape, 3, Distribution::Uniform, 64);
    let order: Vec<u32> = (0..64).rev().collect();
    File::from_arrays(&reference_csf(&coo, &order), ElementType::F32)
}

/// nf4 codes 1, 3, 5, 7, 15 at five distinct indices of shape [4,4,4].
pub(super) fn odd_nf4() -> File {
    let coo = TestTensor {
        shape: vec![4, 4, 4],
        indices: vec![0, 0, 0, 0, 1, 2, 1, 0, 3, 2, 2, 2, 3, 3, 1],
        values: vec![1.0, 3.0, 5.0, 7.0, 15.0],
    };
    File::from_arrays(&reference_csf(&coo, &[0, 1, 2]), ElementType::NF4)
}

/// An empty tensor of `shape` (nnz = 0): `pos_0 = [0, 0]`, `pos_L = [0]`.
pub(super) fn empty(shape: &[u64], mode_order: &[u32]) -> File {
    let mut levels = vec![(vec![0, 0], vec![])];
    levels.extend((1..shape.len()).map(|_| (vec![0], vec![])));
    File::new(ElementType::F32, shape, mode_order, 0, &levels, Vec::new())
}

/// The statistics a writer should record for the spec example.
pub(super) fn spec_statistics() -> Statistics {
    Statistics { nnz: 4, sparsity_ratio: 1.0 - 4.0 / 24.0, min: Some(1.0), max: Some(4.0) }
}

/// The spec example with i8 values and a per-tensor scale (one f32 buffer
/// after the layout's seven).
pub(super) fn quantized() -> File {
    spec_with(ElementType::I8, &[1.0, -2.0, 3.0, 4.0]).with(|f| {
        f.desc.quantization = Some(per_tensor());
        f.buffers.push((0.25f32.to_le_bytes().to_vec(), HOST));
    })
}

/// The spec example quantized with `scheme` over values of type `ty`, with
/// `scales` (already packed) as the one parameter buffer.
pub(super) fn quantized_as(ty: ElementType, values: &[f64], section: Quantization, scales: Vec<u8>) -> File {
    spec_with(ty, values).with(|f| {
        f.desc.quantization = Some(section);
        f.buffers.push((scales, HOST));
    })
}

pub(super) fn f32s(values: &[f32]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}
