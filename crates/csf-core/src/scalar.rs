//! Decoding the narrow floating-point formats of the data model to `f32`.
//!
//! All are exact: every value of these formats is representable in `f32`.

/// A minifloat layout: exponent and mantissa widths, and how the all-ones
/// exponent is used.
#[derive(Clone, Copy)]
struct Minifloat {
    exp_bits: u32,
    man_bits: u32,
    specials: Specials,
}

#[derive(Clone, Copy, PartialEq)]
enum Specials {
    /// IEEE-like: all-ones exponent is infinity (mantissa 0) or NaN.
    Ieee,
    /// OCP E4M3 "FN": no infinities; only all-ones exponent with all-ones mantissa is NaN.
    FiniteNanOnlyAllOnes,
    /// No infinities and no NaN (FP6, FP4).
    None,
}

impl Minifloat {
    fn decode(self, bits: u32) -> f32 {
        let sign = if bits >> (self.exp_bits + self.man_bits) & 1 == 1 { -1.0f32 } else { 1.0 };
        let exp = (bits >> self.man_bits) & ((1 << self.exp_bits) - 1);
        let man = bits & ((1 << self.man_bits) - 1);
        let exp_max = (1 << self.exp_bits) - 1;
        match self.specials {
            Specials::Ieee if exp == exp_max => {
                return if man == 0 { sign * f32::INFINITY } else { f32::NAN };
            }
            Specials::FiniteNanOnlyAllOnes if exp == exp_max && man == (1 << self.man_bits) - 1 => {
                return f32::NAN;
            }
            _ => {}
        }
        let bias = (1i32 << (self.exp_bits - 1)) - 1;
        let scale = (1u32 << self.man_bits) as f32;
        let magnitude = if exp == 0 {
            // Subnormal: 0.man * 2^(1 - bias).
            man as f32 / scale * pow2(1 - bias)
        } else {
            (1.0 + man as f32 / scale) * pow2(exp as i32 - bias)
        };
        sign * magnitude
    }
}

/// `2^e` for the small exponents these formats reach (|e| < 127).
fn pow2(e: i32) -> f32 {
    f32::from_bits(((e + 127).clamp(1, 254) as u32) << 23)
}

/// IEEE 754 binary16 to `f32`.
pub fn f16_to_f32(bits: u16) -> f32 {
    Minifloat { exp_bits: 5, man_bits: 10, specials: Specials::Ieee }.decode(u32::from(bits))
}

/// bfloat16 to `f32` (its bits are the upper half of an `f32`).
pub fn bf16_to_f32(bits: u16) -> f32 {
    f32::from_bits(u32::from(bits) << 16)
}

/// OCP FP8 E4M3 (FN: finite, NaN at S.1111.111) to `f32`.
pub fn f8e4m3_to_f32(bits: u8) -> f32 {
    Minifloat { exp_bits: 4, man_bits: 3, specials: Specials::FiniteNanOnlyAllOnes }.decode(u32::from(bits))
}

/// OCP FP8 E5M2 (IEEE-like) to `f32`.
pub fn f8e5m2_to_f32(bits: u8) -> f32 {
    Minifloat { exp_bits: 5, man_bits: 2, specials: Specials::Ieee }.decode(u32::from(bits))
}

/// OCP FP6 E2M3 (low 6 bits) to `f32`.
pub fn f6e2m3_to_f32(bits: u8) -> f32 {
    Minifloat { exp_bits: 2, man_bits: 3, specials: Specials::None }.decode(u32::from(bits & 0x3f))
}

/// OCP FP6 E3M2 (low 6 bits) to `f32`.
pub fn f6e3m2_to_f32(bits: u8) -> f32 {
    Minifloat { exp_bits: 3, man_bits: 2, specials: Specials::None }.decode(u32::from(bits & 0x3f))
}

/// OCP FP4 E2M1 (low 4 bits) to `f32`.
pub fn f4e2m1_to_f32(bits: u8) -> f32 {
    Minifloat { exp_bits: 2, man_bits: 1, specials: Specials::None }.decode(u32::from(bits & 0x0f))
}

/// OCP E8M0 scale to `f32`: `2^(bits - 127)`; 0xFF is NaN.
pub fn e8m0_to_f32(bits: u8) -> f32 {
    match bits {
        0xff => f32::NAN,
        // 2^-127 is subnormal in f32.
        0 => f32::from_bits(1 << 22),
        e => f32::from_bits(u32::from(e) << 23),
    }
}

/// The 16 NormalFloat-4 levels (QLoRA, Dettmers et al. 2023), indexed by code.
pub const NF4_TABLE: [f32; 16] = [
    -1.0,
    -0.696_192_8,
    -0.525_073_05,
    -0.394_917_5,
    -0.284_441_38,
    -0.184_773_43,
    -0.091_050_036,
    0.0,
    0.079_580_3,
    0.160_930_2,
    0.246_112_3,
    0.337_915_24,
    0.440_709_83,
    0.562_617,
    0.722_956_84,
    1.0,
];

/// An NF4 code (low 4 bits) to its level in `[-1, 1]`.
pub fn nf4_to_f32(code: u8) -> f32 {
    NF4_TABLE.get(usize::from(code & 0x0f)).copied().unwrap_or(0.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn f16_known_values() {
        assert_eq!(f16_to_f32(0x3c00), 1.0);
        assert_eq!(f16_to_f32(0xc000), -2.0);
        assert_eq!(f16_to_f32(0x7bff), 65504.0);
        // Exact powers of two as literals: `powi` is not exact everywhere (Miri
        // perturbs it, as the standard library allows).
        assert_eq!(f16_to_f32(0x0001), 1.0 / 16_777_216.0); // 2^-24
        assert_eq!(f16_to_f32(0x7c00), f32::INFINITY);
        assert!(f16_to_f32(0x7e00).is_nan());
        assert_eq!(bf16_to_f32(0x3f80), 1.0);
    }

    #[test]
    fn fp8_fp6_fp4_known_values() {
        assert_eq!(f8e4m3_to_f32(0x7e), 448.0); // E4M3FN max
        assert!(f8e4m3_to_f32(0x7f).is_nan());
        assert_eq!(f8e4m3_to_f32(0x01), 1.0 / 512.0); // 2^-9
        assert_eq!(f8e5m2_to_f32(0x7b), 57344.0);
        assert_eq!(f8e5m2_to_f32(0x7c), f32::INFINITY);
        assert_eq!(f6e2m3_to_f32(0x1f), 7.5);
        assert_eq!(f6e3m2_to_f32(0x1f), 28.0);
        let fp4: [f32; 8] = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0];
        for (code, want) in fp4.iter().enumerate() {
            assert_eq!(f4e2m1_to_f32(code as u8), *want);
            assert_eq!(f4e2m1_to_f32(code as u8 | 8), -*want);
        }
        assert_eq!(e8m0_to_f32(127), 1.0);
        assert_eq!(e8m0_to_f32(130), 8.0);
        assert_eq!(e8m0_to_f32(0), f32::from_bits(0x0040_0000)); // 2^-127, a subnormal
        assert!(e8m0_to_f32(0xff).is_nan());
        assert_eq!(nf4_to_f32(7), 0.0);
        assert_eq!(nf4_to_f32(15), 1.0);
    }
}
