//! Dequantized access to quantized leaves (`docs/format.md` § 5.7).
//!
//! The values buffer holds quantized leaves; one or two parameter buffers
//! (scales, zero points) hold one entry per group. The group of a leaf is 0
//! (per-tensor), its coordinate on the scheme's logical axis (per-channel),
//! or its block, `leaf / block_size` (per-block, NF4, MXFP). Every accessor
//! stays total: a group past a parameter buffer gives `None`.

use hurray_format::{csf, Container, ElementType, QuantScheme};

use crate::scalar;
use crate::values::{Value, Values};

/// The quantization of a tensor: its scheme and parameter buffers, borrowed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Quantized<'a> {
    /// How codes map to values and which leaves share parameters (per
    /// tensor, per channel, per block, NF4, MXFP).
    pub scheme: QuantScheme,
    /// The logical axis of a per-channel scheme.
    pub axis: usize,
    /// Leaves per block of a block scheme.
    pub block_size: u64,
    /// One scale (NF4: absmax; MXFP: E8M0 exponent) per group.
    pub scales: Values<'a>,
    /// One zero point per group, when the scheme has them.
    pub zero_points: Option<Values<'a>>,
}

impl<'a> Quantized<'a> {
    /// The quantization described by a container's descriptor, with its
    /// parameter buffers; `None` when the tensor is not quantized or a
    /// parameter buffer is missing (validation reports that).
    pub fn from_container(container: &Container<'a>) -> Option<Self> {
        let d = container.descriptor();
        let q = d.quantization?;
        let first = csf::buffer_count(d.rank());
        let scales = Values::new(q.scale_type, container.buffer(first)?);
        let zero_points = match q.zero_point_type {
            Some(ty) => Some(Values::new(ty, container.buffer(first + 1)?)),
            None => None,
        };
        Some(Self { scheme: q.scheme, axis: q.axis as usize, block_size: q.block_size, scales, zero_points })
    }

    /// The group of the leaf at `leaf` with logical index `index`.
    #[inline]
    pub fn group(&self, leaf: usize, index: &[u64]) -> Option<usize> {
        match self.scheme {
            QuantScheme::PerTensor => Some(0),
            QuantScheme::PerChannel => usize::try_from(*index.get(self.axis)?).ok(),
            QuantScheme::PerBlock | QuantScheme::Nf4 | QuantScheme::Mxfp => {
                let block = usize::try_from(self.block_size).ok().filter(|&b| b > 0)?;
                Some(leaf / block)
            }
        }
    }

    /// The real value of stored value `q` at `leaf` (logical index `index`).
    #[inline]
    pub fn dequantize(&self, q: Value, leaf: usize, index: &[u64]) -> Option<f32> {
        let group = self.group(leaf, index)?;
        let scale = self.scales.get_raw(group)?.to_f64() as f32;
        Some(match self.scheme {
            QuantScheme::Nf4 => match q {
                Value::Nf4(code) => scalar::nf4_to_f32(code) * scale,
                other => other.to_f64() as f32 * scale,
            },
            // The scale is already 2^(e - 127) (NaN for 0xff).
            QuantScheme::Mxfp => q.to_f64() as f32 * scale,
            QuantScheme::PerTensor | QuantScheme::PerChannel | QuantScheme::PerBlock => {
                let zero = match self.zero_points {
                    Some(zp) => zp.get_raw(group)?,
                    None => Value::zero(ElementType::I8),
                };
                let centred = match (integer(q), integer(zero)) {
                    // Exact in i64, then one rounding to f32.
                    (Some(q), Some(z)) => q.wrapping_sub(z) as f32,
                    _ => (q.to_f64() - zero.to_f64()) as f32,
                };
                centred * scale
            }
        })
    }
}

fn integer(v: Value) -> Option<i64> {
    Some(match v {
        Value::I4(x) | Value::I8(x) => i64::from(x),
        Value::U4(x) | Value::U8(x) => i64::from(x),
        Value::I16(x) => i64::from(x),
        Value::U16(x) => i64::from(x),
        Value::I32(x) => i64::from(x),
        Value::U32(x) => i64::from(x),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn quant<'a>(scheme: QuantScheme, scales: Values<'a>, zero_points: Option<Values<'a>>) -> Quantized<'a> {
        Quantized { scheme, axis: 1, block_size: 2, scales, zero_points }
    }

    #[test]
    fn groups_follow_the_scheme() {
        let scales = Values::new(ElementType::F32, &[]);
        let index = [4, 3, 9];
        assert_eq!(quant(QuantScheme::PerTensor, scales, None).group(7, &index), Some(0));
        assert_eq!(quant(QuantScheme::PerChannel, scales, None).group(7, &index), Some(3));
        assert_eq!(quant(QuantScheme::PerBlock, scales, None).group(7, &index), Some(3));
        assert_eq!(quant(QuantScheme::Nf4, scales, None).group(0, &index), Some(0));
        let no_blocks = Quantized { block_size: 0, ..quant(QuantScheme::PerBlock, scales, None) };
        assert_eq!(no_blocks.group(7, &index), None, "block size 0 has no groups");
        let far_axis = Quantized { axis: 9, ..quant(QuantScheme::PerChannel, scales, None) };
        assert_eq!(far_axis.group(7, &index), None);
    }

    #[test]
    fn dequantization_formulas() {
        let scales: Vec<u8> = [0.5f32, 0.25].iter().flat_map(|v| v.to_le_bytes()).collect();
        let zero_points = [3u8, 250];
        let asym = quant(
            QuantScheme::PerBlock,
            Values::new(ElementType::F32, &scales),
            Some(Values::new(ElementType::U8, &zero_points)),
        );
        // (q - z) * s, exact in integers first: (255 - 250) * 0.25.
        assert_eq!(asym.dequantize(Value::U8(255), 3, &[0, 0, 0]), Some(1.25));
        assert_eq!(asym.dequantize(Value::U8(1), 0, &[0, 0, 0]), Some(-1.0));
        assert_eq!(asym.dequantize(Value::U8(1), 4, &[0, 0, 0]), None, "group 2 has no scale");
        let nf4 = quant(QuantScheme::Nf4, Values::new(ElementType::F32, &scales), None);
        assert_eq!(nf4.dequantize(Value::Nf4(0), 1, &[0, 0, 0]), Some(-0.5));
        let e8m0 = [127u8 + 3, 0xff];
        let mx = quant(QuantScheme::Mxfp, Values::new(ElementType::E8M0, &e8m0), None);
        assert_eq!(mx.dequantize(Value::F4E2M1(0x7), 0, &[0, 0, 0]), Some(48.0)); // 6 * 2^3
        assert!(mx.dequantize(Value::F4E2M1(0x7), 2, &[0, 0, 0]).unwrap().is_nan(), "E8M0 0xff is NaN");
    }
}
