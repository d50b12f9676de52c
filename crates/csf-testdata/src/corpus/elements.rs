//! Element encodings: the bits of one value of each element type, and a
//! values buffer packed as its type prescribes.

use hurray_format::ElementType;

/// `v`, a normal number exactly representable in the format, as a minifloat
/// with `exp_bits` exponent bits, `man_bits` mantissa bits and `bias`.
fn minifloat(v: f64, exp_bits: u32, man_bits: u32, bias: i32) -> u64 {
    let sign = u64::from(v.is_sign_negative()) << (exp_bits + man_bits);
    let a = v.abs();
    if a == 0.0 {
        return sign;
    }
    // The exponent and mantissa from the bits, not from `log2` and `powi`,
    // which need not be exact (Miri perturbs them, as the standard library
    // allows, and then a power of two's `log2().floor()` can be one short).
    let (e, mantissa) = f64_parts(a);
    let dropped = 52 - man_bits;
    assert_eq!(mantissa & ((1u64 << dropped) - 1), 0, "{v} is not exact in this format");
    let biased = e + bias;
    assert!(biased > 0 && biased < (1 << exp_bits), "{v} is not a normal number in this format");
    sign | (biased as u64) << man_bits | mantissa >> dropped
}

/// The unbiased exponent and the 52 stored mantissa bits of `a`, a normal
/// positive `f64`: `a == (1 + mantissa / 2^52) * 2^exponent` exactly.
fn f64_parts(a: f64) -> (i32, u64) {
    assert!(a.is_normal() && a > 0.0, "{a} is not a normal positive number");
    let bits = a.to_bits();
    (((bits >> 52) & 0x7ff) as i32 - 1023, bits & ((1u64 << 52) - 1))
}

/// The raw bits of one value of `ty` (small integers and simple floats only).
fn value_bits(ty: ElementType, v: f64) -> u64 {
    match ty {
        ElementType::Bool => u64::from(v != 0.0),
        ElementType::I8 | ElementType::I16 | ElementType::I32 | ElementType::I64 | ElementType::I4 => {
            v as i64 as u64
        }
        ElementType::U8 | ElementType::U16 | ElementType::U32 | ElementType::U64 | ElementType::U4 => {
            v as u64
        }
        ElementType::NF4 => v as u64,
        ElementType::F16 => minifloat(v, 5, 10, 15),
        ElementType::BF16 => u64::from((v as f32).to_bits() >> 16),
        ElementType::F32 => u64::from((v as f32).to_bits()),
        ElementType::F64 => v.to_bits(),
        ElementType::F8E4M3 => minifloat(v, 4, 3, 7),
        ElementType::F8E5M2 => minifloat(v, 5, 2, 15),
        ElementType::E8M0 => {
            let (e, mantissa) = f64_parts(v);
            assert_eq!(mantissa, 0, "{v} is not a power of two");
            (i64::from(e) + 127) as u64
        }
        ElementType::F6E2M3 => minifloat(v, 2, 3, 1),
        ElementType::F6E3M2 => minifloat(v, 3, 2, 3),
        ElementType::F4E2M1 => minifloat(v, 2, 1, 1),
        other => panic!("no sample encoding for element type {other}"),
    }
}

/// `values` packed as `ty` prescribes (little-endian; sub-byte types low
/// nibble first, the unused nibble zero).
pub(super) fn values_bytes(ty: ElementType, values: &[f64]) -> Vec<u8> {
    match ty.byte_width() {
        Some(width) => values
            .iter()
            .flat_map(|&v| value_bits(ty, v).to_le_bytes().into_iter().take(usize::from(width)))
            .collect(),
        None => {
            let nibbles: Vec<u8> = values.iter().map(|&v| (value_bits(ty, v) & 0xf) as u8).collect();
            nibbles.chunks(2).map(|p| p[0] | p.get(1).map_or(0, |h| h << 4)).collect()
        }
    }
}
