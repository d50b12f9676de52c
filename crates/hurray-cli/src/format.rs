//! Printing numbers: values in the shortest form that reads back to the same
//! bits, integers fast (dump prints tens of millions of them).

use std::io::Write as _;

use csf_core::Value;

/// Appends `v` in decimal.
#[inline]
pub fn push_u64(out: &mut Vec<u8>, mut v: u64) {
    let mut digits = [0u8; 20];
    let mut i = digits.len();
    loop {
        i -= 1;
        digits[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    out.extend_from_slice(&digits[i..]);
}

/// Appends a float in the shortest form that parses back to the same value
/// (Rust's `Display`), switching to exponent notation outside
/// `[1e-5, 1e16)` so that `1e300` is not printed with 300 zeros. Both forms
/// are valid JSON numbers and valid `.tns` values. Non-finite values print
/// as `NaN`, `inf`, `-inf` (what `str::parse` reads back).
macro_rules! push_float {
    ($name:ident, $t:ty) => {
        #[inline]
        fn $name(out: &mut Vec<u8>, v: $t) {
            let magnitude = v.abs();
            let _ = if v.is_nan() {
                out.write_all(b"NaN")
            } else if v.is_infinite() {
                out.write_all(if v < 0.0 { b"-inf" } else { b"inf" })
            } else if magnitude == 0.0 || (1e-5..1e16).contains(&magnitude) {
                write!(out, "{v}")
            } else {
                write!(out, "{v:e}")
            };
        }
    };
}
push_float!(push_f64, f64);
push_float!(push_f32, f32);

/// Appends a stored value: integers as integers, `bool` as 0 or 1, `f32`
/// and `f64` in their own shortest form, narrow floats (and NF4 levels)
/// through their exact `f64`.
pub fn push_value(out: &mut Vec<u8>, value: Value) {
    let _ = match value {
        Value::Bool(v) => out.write_all(if v { b"1" } else { b"0" }),
        Value::I8(v) | Value::I4(v) => write!(out, "{v}"),
        Value::I16(v) => write!(out, "{v}"),
        Value::I32(v) => write!(out, "{v}"),
        Value::I64(v) => write!(out, "{v}"),
        Value::U8(v) | Value::U4(v) => write!(out, "{v}"),
        Value::U16(v) => write!(out, "{v}"),
        Value::U32(v) => write!(out, "{v}"),
        Value::U64(v) => {
            push_u64(out, v);
            Ok(())
        }
        Value::F32(v) => {
            push_f32(out, v);
            Ok(())
        }
        other => {
            push_f64(out, other.to_f64());
            Ok(())
        }
    };
}

/// Appends a value as JSON: a number, or a string for NaN and infinities,
/// which JSON numbers cannot hold.
pub fn push_value_json(out: &mut Vec<u8>, value: Value) {
    let f = value.to_f64();
    if f.is_finite() {
        let start = out.len();
        push_value(out, value);
        // Keep floats floats for JSON readers: `1` becomes `1.0`.
        let is_float = !matches!(
            value,
            Value::Bool(_)
                | Value::I8(_)
                | Value::I16(_)
                | Value::I32(_)
                | Value::I64(_)
                | Value::U8(_)
                | Value::U16(_)
                | Value::U32(_)
                | Value::U64(_)
                | Value::I4(_)
                | Value::U4(_)
        );
        if is_float && out[start..].iter().all(|&c| c.is_ascii_digit() || c == b'-') {
            out.extend_from_slice(b".0");
        }
    } else {
        out.push(b'"');
        push_value(out, value);
        out.push(b'"');
    }
}

/// A list as `a,b,c` (as the command line takes it).
pub fn commas<T: std::fmt::Display>(items: &[T]) -> String {
    items.iter().map(|x| x.to_string()).collect::<Vec<_>>().join(",")
}

/// An integer with thousands separators, `1,460,796`: exact byte counts that
/// people compare by eye (with `ls -l`, say).
pub fn grouped(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, digit) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(digit);
    }
    out
}

/// A byte count for people: `512 B`, `1.5 KiB`, `300.2 MiB`.
pub fn bytes(n: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = n as f64;
    let mut unit = 0;
    while v >= 1024.0 && unit + 1 < UNITS.len() {
        v /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{n} B")
    } else {
        format!("{v:.1} {}", UNITS[unit])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shown(v: Value) -> String {
        let mut out = Vec::new();
        push_value(&mut out, v);
        String::from_utf8(out).unwrap()
    }

    fn value_json(v: Value) -> serde_json::Value {
        let mut out = Vec::new();
        push_value_json(&mut out, v);
        serde_json::from_slice(&out).unwrap()
    }

    #[test]
    fn values_print_short_and_read_back_exactly() {
        assert_eq!(shown(Value::F32(1.0)), "1");
        assert_eq!(shown(Value::F32(0.1)), "0.1");
        assert_eq!(shown(Value::F64(0.1)), "0.1");
        assert_eq!(shown(Value::F64(-0.0)), "-0");
        assert_eq!(shown(Value::F64(1e300)), "1e300");
        assert_eq!(shown(Value::F64(1.5e-7)), "1.5e-7");
        assert_eq!(shown(Value::F64(f64::NAN)), "NaN");
        assert_eq!(shown(Value::F64(f64::NEG_INFINITY)), "-inf");
        assert_eq!(shown(Value::I64(-5)), "-5");
        assert_eq!(shown(Value::U64(u64::MAX)), "18446744073709551615");
        assert_eq!(shown(Value::Bool(true)), "1");
        for v in [0.1, 1.0 / 3.0, 1e-310, f64::MAX, f64::MIN_POSITIVE, 123456.789, 1e16, 9.999e15] {
            assert_eq!(shown(Value::F64(v)).parse::<f64>().unwrap(), v);
        }
        for v in [0.1f32, 1.0 / 3.0, f32::MAX, 1e-40] {
            assert_eq!(shown(Value::F32(v)).parse::<f32>().unwrap(), v);
        }
        assert_eq!(value_json(Value::F64(f64::INFINITY)), serde_json::json!("inf"));
        assert_eq!(value_json(Value::F32(2.5)), serde_json::json!(2.5));
        let mut out = Vec::new();
        push_value_json(&mut out, Value::F64(-3.0));
        out.push(b' ');
        push_value_json(&mut out, Value::I32(3));
        out.push(b' ');
        push_value_json(&mut out, Value::F64(1e300));
        assert_eq!(out, b"-3.0 3 1e300");
        let mut out = Vec::new();
        push_u64(&mut out, 0);
        push_u64(&mut out, 1234567890);
        assert_eq!(out, b"01234567890");
        assert_eq!(bytes(1536), "1.5 KiB");
    }

    #[test]
    fn grouped_puts_a_comma_every_three_digits() {
        for (n, text) in [
            (0, "0"),
            (999, "999"),
            (1000, "1,000"),
            (480, "480"),
            (1_460_796, "1,460,796"),
            (2_921_592, "2,921,592"),
            (100_000, "100,000"),
            (u64::MAX, "18,446,744,073,709,551,615"),
        ] {
            assert_eq!(grouped(n), text);
        }
    }
}
