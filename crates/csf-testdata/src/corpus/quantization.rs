//! Quantization (`docs/format.md` § 5.7): a valid file for each scheme and a
//! file breaking each of its rules.

use hurray_format::{ElementType, QuantScheme, Quantization};

use super::file::{Cases, HOST};
use super::tensors::{f32s, quantized, quantized_as};
use crate::tree::per_tensor;

/// Valid files for each scheme of `docs/format.md` § 5.7, and one file
/// breaking each of its rules.
pub(super) fn quantization_cases(out: &mut Cases) {
    let block = |size| Quantization { scheme: QuantScheme::PerBlock, block_size: size, ..per_tensor() };
    let nf4 = Quantization { scheme: QuantScheme::Nf4, block_size: 2, ..per_tensor() };
    let mxfp = Quantization {
        scheme: QuantScheme::Mxfp,
        block_size: 32,
        scale_type: ElementType::E8M0,
        ..per_tensor()
    };
    let per_block = quantized_as(ElementType::I8, &[1.0, -2.0, 3.0, 4.0], block(3), f32s(&[0.5, 0.25]));
    out.valid(
        "valid-quantization-per-block",
        "i8 values, per-block scales, block_size 3: 2 f32 scales",
        &per_block,
    );
    let nf4_file = quantized_as(ElementType::NF4, &[0.0, 7.0, 15.0, 3.0], nf4, f32s(&[2.0, 0.5]));
    out.valid("valid-quantization-nf4", "nf4 codes with one f32 absmax per block of 2 leaves", &nf4_file);
    let mxfp_file = quantized_as(ElementType::F8E4M3, &[56.0, 64.0, 72.0, 0.0], mxfp, vec![125]);
    out.valid(
        "valid-quantization-mxfp",
        "f8e4m3 elements sharing one e8m0 scale (2^-2) per 32 leaves",
        &mxfp_file,
    );
    let fp8 = quantized_as(ElementType::F8E5M2, &[48.0, 56.0, 64.0, 80.0], per_tensor(), f32s(&[0.125]));
    out.valid("valid-quantization-fp8-per-tensor", "f8e5m2 values with one f32 per-tensor scale", &fp8);

    // Parameter buffers are packed as § 2.1 prescribes (§ 5.7.1): an odd
    // count of 4-bit zero points leaves an unused high nibble that MUST be 0.
    let i4_channels = |zero_points: Vec<u8>| {
        quantized_as(
            ElementType::I4,
            &[1.0, -2.0, 3.0, 4.0],
            Quantization {
                scheme: QuantScheme::PerChannel,
                axis: 1,
                zero_point_type: Some(ElementType::I4),
                ..per_tensor()
            },
            f32s(&[0.5, 0.25, 1.0]),
        )
        .with(|f| f.buffers.push((zero_points, HOST)))
    };
    out.valid(
        "valid-quantization-i4-zero-points",
        "i4 values, per-channel on axis 1 (3 groups): i4 zero points [0,1,2] in bytes 10 02, the unused nibble zero",
        &i4_channels(vec![0x10, 0x02]),
    );
    out.strict(
        "values-padding-zero-points-i4",
        "values-padding",
        "i4 per-channel zero points (3 groups) in bytes 10 f2: the unused high nibble of the zero-point buffer (index 8) is 0xf",
        &i4_channels(vec![0x10, 0xf2]),
    );
    out.strict(
        "values-padding-zero-points-u4-per-tensor",
        "values-padding",
        "u4 values, per-tensor with one u4 zero point in byte 35: its unused high nibble is 3",
        &quantized_as(
            ElementType::U4,
            &[1.0, 2.0, 3.0, 4.0],
            Quantization { zero_point_type: Some(ElementType::U4), ..per_tensor() },
            f32s(&[0.5]),
        )
        .with(|f| f.buffers.push((vec![0x35], HOST))),
    );
    out.strict(
        "quantization-types-nf4-over-i8",
        "quantization-types",
        "NF4 scheme over i8 values (NF4 needs nf4 codes)",
        &quantized_as(ElementType::I8, &[1.0, -2.0, 3.0, 4.0], nf4, f32s(&[2.0, 0.5])),
    );
    out.strict(
        "quantization-types-mxfp-f32-scale",
        "quantization-types",
        "MXFP scheme with f32 scales (MXFP scales are e8m0)",
        &quantized_as(
            ElementType::F8E4M3,
            &[56.0, 64.0, 72.0, 0.0],
            Quantization { scale_type: ElementType::F32, ..mxfp },
            f32s(&[0.25]),
        ),
    );
    out.strict(
        "quantization-types-zero-point-type",
        "quantization-types",
        "per-tensor i8 values with u8 zero points (zero points must have the values' type)",
        &quantized().with(|f| {
            f.desc.quantization =
                Some(Quantization { zero_point_type: Some(ElementType::U8), ..per_tensor() });
            f.buffers.push((vec![0], HOST));
        }),
    );
    out.strict(
        "quantization-types-float-values",
        "quantization-types",
        "per-tensor quantization over f32 values (integer or FP8 values only)",
        &quantized_as(ElementType::F32, &[1.0, 2.0, 3.0, 4.0], per_tensor(), f32s(&[0.5])),
    );
    out.strict(
        "quantization-axis-out-of-rank",
        "quantization-axis",
        "per-channel quantization on axis 3 of a rank-3 tensor",
        &quantized_as(
            ElementType::I8,
            &[1.0, -2.0, 3.0, 4.0],
            Quantization { scheme: QuantScheme::PerChannel, axis: 3, ..per_tensor() },
            f32s(&[0.5, 0.25]),
        ),
    );
    out.strict(
        "quantization-axis-on-per-tensor",
        "quantization-axis",
        "per-tensor quantization naming axis 1",
        &quantized().with(|f| f.desc.quantization = Some(Quantization { axis: 1, ..per_tensor() })),
    );
    out.strict(
        "quantization-block-size-zero",
        "quantization-block-size",
        "per-block quantization with block_size 0",
        &quantized_as(ElementType::I8, &[1.0, -2.0, 3.0, 4.0], block(0), f32s(&[0.5])),
    );
    out.strict(
        "quantization-block-size-mxfp-16",
        "quantization-block-size",
        "MXFP with blocks of 16 leaves (MX blocks are 32)",
        &quantized_as(
            ElementType::F8E4M3,
            &[56.0, 64.0, 72.0, 0.0],
            Quantization { block_size: 16, ..mxfp },
            vec![125],
        ),
    );
    out.strict(
        "quantization-size-per-tensor-two-scales",
        "quantization-size",
        "per-tensor quantization with an 8-byte scale buffer (one f32 expected)",
        &quantized().with(|f| f.buffers[7].0 = f32s(&[0.25, 0.5])),
    );
    out.strict(
        "quantization-size-per-block-short",
        "quantization-size",
        "per-block quantization, block_size 3 over 4 leaves, with 1 scale instead of 2",
        &quantized_as(ElementType::I8, &[1.0, -2.0, 3.0, 4.0], block(3), f32s(&[0.5])),
    );
    out.strict(
        "quantization-size-zero-points",
        "quantization-size",
        "per-channel quantization on axis 1 (extent 3): 3 scales but 2 zero points",
        &quantized_as(
            ElementType::I8,
            &[1.0, -2.0, 3.0, 4.0],
            Quantization {
                scheme: QuantScheme::PerChannel,
                axis: 1,
                zero_point_type: Some(ElementType::I8),
                ..per_tensor()
            },
            f32s(&[0.5, 0.25, 1.0]),
        )
        .with(|f| f.buffers.push((vec![0, 1], HOST))),
    );
}
