//! The value-content rules of `docs/format.md` § 2.1: `bool` bytes, FP6 high
//! bits, the unused nibble of 4-bit types.

use hurray_format::ElementType;

use super::file::{Cases, File};
use super::sample_values;
use super::tensors::{odd_nf4, spec, spec_with};
use crate::{reference_csf, TestTensor};

pub(super) fn values_cases(out: &mut Cases) {
    out.strict(
        "values-size-f32-short",
        "values-size",
        "f32 values buffer of 15 bytes for nnz 4",
        &spec().with(|f| {
            f.buffers[0].0.pop();
        }),
    );
    out.strict(
        "values-size-f32-long",
        "values-size",
        "f32 values buffer of 20 bytes for nnz 4",
        &spec().with(|f| f.buffers[0].0.extend([0; 4])),
    );
    out.strict(
        "values-size-f64-holding-f32",
        "values-size",
        "element type f64 over a values buffer of four f32s (16 bytes, 32 expected)",
        &spec().with(|f| f.desc.element_type = ElementType::F64),
    );
    out.strict(
        "values-size-nf4-long",
        "values-size",
        "nf4, nnz 4: 3 bytes instead of ceil(4/2) = 2",
        &spec_with(ElementType::NF4, &sample_values(ElementType::NF4)).with(|f| f.buffers[0].0.push(0)),
    );
    let odd = TestTensor {
        shape: vec![2, 3, 4],
        indices: vec![0, 0, 1, 0, 2, 3, 1, 1, 0],
        values: vec![1.0, -2.0, 3.0],
    };
    let odd_i4 = File::from_arrays(&reference_csf(&odd, &[0, 1, 2]), ElementType::I4);
    out.strict(
        "values-size-i4-odd-short",
        "values-size",
        "i4, nnz 3: 1 byte instead of ceil(3/2) = 2 (rounded down)",
        &odd_i4.clone().with(|f| {
            f.buffers[0].0.pop();
        }),
    );
    out.strict(
        "values-padding-i4",
        "values-padding",
        "i4, nnz 3: the unused high nibble of the last byte is 0xf",
        &odd_i4.with(|f| {
            assert_eq!(f.buffers[0].0, [0xe1, 0x03]);
            f.buffers[0].0[1] = 0xf3;
        }),
    );
    out.strict(
        "values-padding-nf4",
        "values-padding",
        "nf4, nnz 5: the unused high nibble of the last byte is 0x1",
        &odd_nf4().with(|f| {
            assert_eq!(f.buffers[0].0.len(), 3);
            f.buffers[0].0[2] |= 0x10;
        }),
    );
    out.strict(
        "values-padding-f6e2m3",
        "values-padding",
        "f6e2m3 values whose third byte has bit 6 set (FP6 sits in the low six bits)",
        &spec_with(ElementType::F6E2M3, &sample_values(ElementType::F6E2M3))
            .with(|f| f.buffers[0].0[2] |= 0x40),
    );
    out.strict(
        "values-padding-f6e3m2",
        "values-padding",
        "f6e3m2 values whose first byte has both top bits set",
        &spec_with(ElementType::F6E3M2, &sample_values(ElementType::F6E3M2))
            .with(|f| f.buffers[0].0[0] |= 0xc0),
    );
    out.strict(
        "bool-value-2",
        "bool-value",
        "bool values [1,2,1,1]: 2 is not a bool",
        &spec_with(ElementType::Bool, &[1.0, 1.0, 1.0, 1.0]).with(|f| f.buffers[0].0[1] = 2),
    );
    out.strict(
        "bool-value-ff",
        "bool-value",
        "bool values [1,0,1,0xff]",
        &spec_with(ElementType::Bool, &sample_values(ElementType::Bool)).with(|f| f.buffers[0].0[3] = 0xff),
    );
}
