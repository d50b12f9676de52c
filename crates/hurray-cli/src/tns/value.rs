//! Parsing one value token of a `.tns` line straight into the element type
//! asked for with `--dtype`.
//!
//! Floats take a fast path for the common short decimals (Clinger's: a
//! mantissa that is exact in the type times or over an exact power of ten is
//! one correctly rounded operation), and fall back to the standard library's
//! correctly rounded parser for everything else, so the result is always the
//! nearest value of the type. Integers are parsed as integers (never through
//! `f64`, so every `i64` and `u64` is exact); `3.0` or `1e3` is accepted when
//! it is a whole number in range.

use hurray_format::ElementType;

/// An element type that `convert` can parse values into.
pub trait TnsValue: Copy + Default + Send + Sync + 'static {
    /// The element type written to the file.
    const TYPE: ElementType;
    /// Bytes per value in the values buffer (`TYPE`'s size: every type
    /// `convert` writes takes whole bytes, none packs two values in a byte).
    const SIZE: usize;
    /// Parses a token (never empty, no whitespace), or says what is wrong.
    fn parse(token: &[u8]) -> Result<Self, String>;
    /// Writes the value's little-endian bytes into `slot` (`SIZE` bytes), so
    /// that the parser fills the values buffer itself and nothing converts it after.
    fn write_le(self, slot: &mut [u8]);
}

/// Powers of ten exactly representable in `f64`.
const POW10_F64: [f64; 23] = [
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18,
    1e19, 1e20, 1e21, 1e22,
];
/// Powers of ten exactly representable in `f32`.
const POW10_F32: [f32; 11] = [1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10];

/// A plain decimal `[+-]digits[.digits][(e|E)[+-]digits]` split into sign,
/// mantissa (at most 19 digits) and power of ten; `None` for anything else
/// (more digits, `inf`, `nan`, junk), which the slow path then judges.
#[inline]
fn decimal(t: &[u8]) -> Option<(bool, u64, i32)> {
    let (negative, i) = sign(t, 0);
    let (mut mantissa, mut count, mut i) = digits(t, i, 0);
    let mut exp = 0i32;
    if t.get(i) == Some(&b'.') {
        // The fraction's digits continue the mantissa, each a power of ten down.
        let fraction;
        (mantissa, fraction, i) = digits(t, i + 1, mantissa);
        count += fraction;
        exp = -(fraction as i32);
    }
    if count == 0 || count > 19 {
        return None;
    }
    if matches!(t.get(i), Some(b'e' | b'E')) {
        let (e, end) = exponent(t, i + 1)?;
        exp += e;
        i = end;
    }
    (i == t.len()).then_some((negative, mantissa, exp))
}

/// An optional sign at `i`: whether it is `-`, and the index after it.
#[inline]
fn sign(t: &[u8], i: usize) -> (bool, usize) {
    match t.get(i) {
        Some(b'-') => (true, i + 1),
        Some(b'+') => (false, i + 1),
        _ => (false, i),
    }
}

/// The decimal digits from `i` appended to `acc` (wrapping: the caller
/// refuses more than 19 digits, so a wrapped value is never used); returns
/// the new value, the digit count and the index after the digits.
#[inline]
fn digits(t: &[u8], mut i: usize, mut acc: u64) -> (u64, u32, usize) {
    let start = i;
    while let Some(d) = t.get(i).map(|c| c.wrapping_sub(b'0')).filter(|&d| d <= 9) {
        acc = acc.wrapping_mul(10).wrapping_add(u64::from(d));
        i += 1;
    }
    (acc, (i - start) as u32, i)
}

/// The signed exponent from `i` (just after the `e`) and the index after
/// it; `None` without digits. At most 4 digits are read, so it cannot
/// overflow: a fifth is left over, and the token is then refused.
#[inline]
fn exponent(t: &[u8], i: usize) -> Option<(i32, usize)> {
    let (negative, start) = sign(t, i);
    let mut i = start;
    let mut e = 0i32;
    while let Some(d) = t.get(i).map(|c| c.wrapping_sub(b'0')).filter(|&d| d <= 9) {
        if i - start >= 4 {
            break;
        }
        e = e * 10 + i32::from(d);
        i += 1;
    }
    (i > start).then_some((if negative { -e } else { e }, i))
}

fn show(token: &[u8]) -> String {
    let text = String::from_utf8_lossy(token);
    if text.chars().count() > 40 {
        format!("'{}...'", text.chars().take(40).collect::<String>())
    } else {
        format!("'{text}'")
    }
}

/// The standard library's parser on the token; a finite literal that
/// overflows to infinity is an error rather than a silent `inf`.
fn slow<F: std::str::FromStr + Copy>(
    token: &[u8],
    is_infinite: impl Fn(F) -> bool,
    name: &str,
) -> Result<F, String> {
    let text = std::str::from_utf8(token).map_err(|_| format!("bad value {}: not a number", show(token)))?;
    let v: F = text.parse().map_err(|_| format!("bad value {}: not a number", show(token)))?;
    if is_infinite(v) && !text.to_ascii_lowercase().contains("inf") {
        return Err(format!("value {} overflows {name}", show(token)));
    }
    Ok(v)
}

impl TnsValue for f64 {
    const TYPE: ElementType = ElementType::F64;
    const SIZE: usize = 8;

    #[inline]
    fn parse(token: &[u8]) -> Result<Self, String> {
        if let Some((negative, m, e)) = decimal(token) {
            if m <= 1 << 53 && (-22..=22).contains(&e) {
                let m = m as f64;
                let v = if e >= 0 { m * POW10_F64[e as usize] } else { m / POW10_F64[(-e) as usize] };
                return Ok(if negative { -v } else { v });
            }
        }
        slow(token, f64::is_infinite, "f64")
    }

    #[inline]
    fn write_le(self, slot: &mut [u8]) {
        slot.copy_from_slice(&self.to_le_bytes());
    }
}

impl TnsValue for f32 {
    const TYPE: ElementType = ElementType::F32;
    const SIZE: usize = 4;

    #[inline]
    fn parse(token: &[u8]) -> Result<Self, String> {
        if let Some((negative, m, e)) = decimal(token) {
            if m <= 1 << 24 && (-10..=10).contains(&e) {
                let m = m as f32;
                let v = if e >= 0 { m * POW10_F32[e as usize] } else { m / POW10_F32[(-e) as usize] };
                return Ok(if negative { -v } else { v });
            }
        }
        slow(token, f32::is_infinite, "f32")
    }

    #[inline]
    fn write_le(self, slot: &mut [u8]) {
        slot.copy_from_slice(&self.to_le_bytes());
    }
}

/// An integer token as `i128` (so that the range check covers every
/// 64-bit type), or a whole-number float in range.
#[inline]
fn integer(token: &[u8], name: &str, min: i128, max: i128) -> Result<i128, String> {
    let (negative, digits) = match token.first() {
        Some(b'-') => (true, &token[1..]),
        Some(b'+') => (false, &token[1..]),
        _ => (false, token),
    };
    if !digits.is_empty() && digits.len() <= 38 && digits.iter().all(u8::is_ascii_digit) {
        let magnitude = digits.iter().fold(0i128, |acc, &c| acc * 10 + i128::from(c - b'0'));
        let v = if negative { -magnitude } else { magnitude };
        return if (min..=max).contains(&v) {
            Ok(v)
        } else {
            Err(format!("value {} is outside the range of {name}", show(token)))
        };
    }
    let v: f64 = slow(token, f64::is_infinite, "f64")
        .map_err(|_| format!("bad value {}: not a number (--dtype {name} wants integers)", show(token)))?;
    if v.fract() != 0.0 || !v.is_finite() {
        return Err(format!("value {} is not an integer (--dtype {name})", show(token)));
    }
    // Every f64 with |v| < 2^127 converts to i128 exactly.
    if v.abs() >= 2f64.powi(127) || !(min..=max).contains(&(v as i128)) {
        return Err(format!("value {} is outside the range of {name}", show(token)));
    }
    Ok(v as i128)
}

macro_rules! integer_value {
    ($($t:ty => $tag:ident),*) => {$(
        impl TnsValue for $t {
            const TYPE: ElementType = ElementType::$tag;
            const SIZE: usize = std::mem::size_of::<$t>();

            #[inline]
            fn parse(token: &[u8]) -> Result<Self, String> {
                let v = integer(token, stringify!($t), <$t>::MIN as i128, <$t>::MAX as i128)?;
                // In range by the check above.
                Ok(v as $t)
            }

            #[inline]
            fn write_le(self, slot: &mut [u8]) {
                slot.copy_from_slice(&self.to_le_bytes());
            }
        }
    )*};
}
integer_value!(i8 => I8, i16 => I16, i32 => I32, i64 => I64, u8 => U8, u16 => U16, u32 => U32, u64 => U64);

/// `bool` values: `0` or `1` (one byte each in the values buffer).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Bool(pub u8);

impl TnsValue for Bool {
    const TYPE: ElementType = ElementType::Bool;
    const SIZE: usize = 1;

    fn parse(token: &[u8]) -> Result<Self, String> {
        match integer(token, "bool", 0, 1) {
            Ok(v) => Ok(Bool(v as u8)),
            Err(_) => Err(format!("value {} is not 0 or 1 (--dtype bool)", show(token))),
        }
    }

    #[inline]
    fn write_le(self, slot: &mut [u8]) {
        slot[0] = self.0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floats_are_correctly_rounded_on_both_paths() {
        for text in [
            "0",
            "-0",
            "1",
            "1.5",
            "-2.25",
            "0.1",
            "3.14159",
            "1e10",
            "1E-5",
            "+7",
            "123456789012345678",
            "1.7976931348623157e308",
            "5e-324",
            "0.30000000000000004",
            "9007199254740993",
            "1.",
            ".5",
            "12345678901234567890123",
            "2.2250738585072014e-308",
            "4.35",
            "1e22",
            "1e23",
            "1.5e-3",
            "-.5e+2",
            "2.5E+01",
            "1e0022",
            "7e00001",
        ] {
            let want: f64 = text.parse().unwrap();
            assert_eq!(f64::parse(text.as_bytes()).unwrap().to_bits(), want.to_bits(), "{text}");
            let want: f32 = text.parse().unwrap();
            if want.is_finite() {
                assert_eq!(f32::parse(text.as_bytes()).unwrap().to_bits(), want.to_bits(), "{text}");
            }
        }
        assert!(f64::parse(b"inf").unwrap().is_infinite());
        assert!(f64::parse(b"NaN").unwrap().is_nan());
        assert!(f64::parse(b"1e400").unwrap_err().contains("overflows f64"));
        assert!(f32::parse(b"1e39").unwrap_err().contains("overflows f32"));
        for bad in ["", "x", "1.2.3", "1e", "--1", "1,5", "0x10"] {
            assert!(f64::parse(bad.as_bytes()).is_err(), "{bad}");
        }
    }

    #[test]
    fn integers_are_exact_and_range_checked() {
        assert_eq!(i64::parse(b"9007199254740993"), Ok(9007199254740993));
        assert_eq!(u64::parse(b"18446744073709551615"), Ok(u64::MAX));
        assert_eq!(i64::parse(b"-9223372036854775808"), Ok(i64::MIN));
        assert_eq!(i32::parse(b"3.0"), Ok(3));
        assert_eq!(i32::parse(b"1e3"), Ok(1000));
        assert!(i32::parse(b"3.5").unwrap_err().contains("not an integer"));
        assert!(i32::parse(b"2147483648").unwrap_err().contains("outside the range of i32"));
        assert!(u8::parse(b"-1").unwrap_err().contains("outside the range of u8"));
        assert!(u64::parse(b"1e30").unwrap_err().contains("outside the range"));
        assert!(i8::parse(b"abc").unwrap_err().contains("not a number"));
        assert_eq!(Bool::parse(b"1"), Ok(Bool(1)));
        assert!(Bool::parse(b"2").is_err());
    }
}
