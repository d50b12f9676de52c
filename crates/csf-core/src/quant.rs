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
        let q = container.quantization()?;
        let mut params = container.buffers().skip(csf::buffer_count(container.rank()));
        let scales = Values::new(q.scale_type, params.next()?);
        let zero_points = match q.zero_point_type {
            Some(ty) => Some(Values::new(ty, params.next()?)),
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

    /// The real value of stored value `q` at `leaf` (logical index `index`),
    /// in binary32 arithmetic as `docs/format.md` § 5.7.3 prescribes: `q - z`
    /// exactly, then one rounded multiplication by the scale.
    ///
    /// No operand goes through `f64`: every scale, code and zero point that
    /// § 5.7.2 allows is exact in `f32`, and for such operands an `f32`
    /// subtraction rounds exactly as an `f64` one rounded to `f32` would
    /// (binary64 has more than twice binary32's precision, plus two bits), so
    /// the results are those of the earlier `f64` detour, bit for bit. Only
    /// the types § 5.7.2 forbids (which validation rejects in both modes; an
    /// unchecked view gives wrong-but-harmless answers for them) may round
    /// differently: `i64`/`u64` beyond 2^24 and `f64`.
    #[inline]
    pub fn dequantize(&self, q: Value, leaf: usize, index: &[u64]) -> Option<f32> {
        let group = self.group(leaf, index)?;
        let scale = self.scales.get_raw(group)?.to_f32();
        Some(match self.scheme {
            QuantScheme::Nf4 => match q {
                Value::Nf4(code) => scalar::nf4_to_f32(code) * scale,
                other => other.to_f32() * scale,
            },
            // The scale is already 2^(e - 127) (NaN for 0xff).
            QuantScheme::Mxfp => q.to_f32() * scale,
            QuantScheme::PerTensor | QuantScheme::PerChannel | QuantScheme::PerBlock => {
                let zero = match self.zero_points {
                    Some(zp) => zp.get_raw(group)?,
                    None => Value::zero(ElementType::I8),
                };
                let centred = match (integer(q), integer(zero)) {
                    // Exact in i64, then one rounding to f32.
                    (Some(q), Some(z)) => q.wrapping_sub(z) as f32,
                    _ => q.to_f32() - zero.to_f32(),
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

    /// Reading an operand as `f32` gives exactly what the `f64` detour gave
    /// (`to_f64() as f32`) for every value of every type § 5.7.2 allows as
    /// a code, scale or zero point, and a subtraction of two of them in
    /// `f32` equals the `f64` one rounded to `f32`: so dequantized values
    /// did not change when the value path dropped `f64`.
    #[test]
    fn f32_operands_and_differences_are_the_f64_ones() {
        // Under Miri (an interpreter), a sample of the 16-bit types.
        let (every_16, every_z) = if cfg!(miri) { (251, 997) } else { (1, 7) };
        let mut operands = Vec::new();
        for b in (0..=u16::MAX).step_by(every_16) {
            operands.extend([Value::F16(b), Value::BF16(b)]);
        }
        for b in 0..=u8::MAX {
            operands.extend([
                Value::F8E4M3(b),
                Value::F8E5M2(b),
                Value::E8M0(b),
                Value::U8(b),
                Value::I8(b as i8),
            ]);
        }
        for b in 0..64 {
            operands.extend([Value::F6E2M3(b), Value::F6E3M2(b)]);
        }
        for b in 0..16 {
            operands.extend([
                Value::F4E2M1(b),
                Value::Nf4(b),
                Value::U4(b),
                Value::I4(((b << 4) as i8) >> 4),
            ]);
        }
        for v in [0.0f32, -0.0, 1.5, f32::MAX, f32::MIN_POSITIVE, 1e-45, f32::INFINITY, f32::NAN] {
            operands.push(Value::F32(v));
        }
        for v in [i16::MIN, -1, 0, 1, i16::MAX] {
            operands.extend([Value::I16(v), Value::U16(v as u16), Value::I32(i32::from(v) << 8)]);
        }
        operands.extend([Value::I32(i32::MIN), Value::U32(u32::MAX), Value::U32(1 << 24)]);
        let same = |a: f32, b: f32| a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan());
        for &v in &operands {
            assert!(same(v.to_f32(), v.to_f64() as f32), "{v:?}");
        }
        // The zero point of a float code is 0 (§ 5.7.2); the f8 codes against
        // every float operand cover more than that.
        let f8: Vec<Value> = (0..=u8::MAX).flat_map(|b| [Value::F8E4M3(b), Value::F8E5M2(b)]).collect();
        for &q in &f8 {
            for &z in operands.iter().step_by(every_z) {
                let (by_f64, by_f32) = ((q.to_f64() - z.to_f64()) as f32, q.to_f32() - z.to_f32());
                assert!(same(by_f32, by_f64), "{q:?} - {z:?}");
            }
        }
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
