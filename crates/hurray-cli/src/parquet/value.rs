//! A Parquet value converted to the element type `convert` writes, by the
//! rules the `.tns` reader applies to text (`tns/value.rs`): an integer type
//! takes integers in its range and whole-number floats; a float type takes
//! the nearest value of the type, and a finite value that overflows it is an
//! error; `bool` takes 0 and 1. Nothing converts silently out of range.

use crate::tns::{Bool, TnsValue};

/// An element type that Parquet values convert to.
pub trait FromParquet: TnsValue {
    /// From an integer column (INT32 or INT64, either signedness, or BOOLEAN as 0 and 1).
    fn from_int(v: i128) -> Result<Self, String>;
    /// From a floating-point column (FLOAT, DOUBLE and FLOAT16 widen to `f64` exactly).
    fn from_float(v: f64) -> Result<Self, String>;
}

impl FromParquet for f64 {
    fn from_int(v: i128) -> Result<Self, String> {
        // `as` rounds to nearest, as parsing the integer's digits does.
        Ok(v as f64)
    }

    fn from_float(v: f64) -> Result<Self, String> {
        Ok(v)
    }
}

impl FromParquet for f32 {
    fn from_int(v: i128) -> Result<Self, String> {
        // Rounded once, straight from the integer (through f64 would round twice).
        Ok(v as f32)
    }

    fn from_float(v: f64) -> Result<Self, String> {
        let narrow = v as f32;
        if narrow.is_infinite() && v.is_finite() {
            return Err(format!("value {v} overflows f32"));
        }
        Ok(narrow)
    }
}

/// A whole-number float as an integer, or why it is not one.
fn whole(v: f64, name: &str) -> Result<i128, String> {
    if !v.is_finite() || v.fract() != 0.0 {
        return Err(format!("value {v} is not an integer (--dtype {name})"));
    }
    // Every f64 with |v| < 2^127 converts to i128 exactly.
    if v.abs() >= 2f64.powi(127) {
        return Err(format!("value {v} is outside the range of {name}"));
    }
    Ok(v as i128)
}

macro_rules! integer_value {
    ($($t:ty),*) => {$(
        impl FromParquet for $t {
            fn from_int(v: i128) -> Result<Self, String> {
                <$t>::try_from(v).map_err(|_| format!("value {v} is outside the range of {}", stringify!($t)))
            }

            fn from_float(v: f64) -> Result<Self, String> {
                Self::from_int(whole(v, stringify!($t))?)
            }
        }
    )*};
}
integer_value!(i8, i16, i32, i64, u8, u16, u32, u64);

impl FromParquet for Bool {
    fn from_int(v: i128) -> Result<Self, String> {
        match v {
            0 => Ok(Bool(0)),
            1 => Ok(Bool(1)),
            _ => Err(format!("value {v} is not 0 or 1 (--dtype bool)")),
        }
    }

    fn from_float(v: f64) -> Result<Self, String> {
        match whole(v, "bool") {
            Ok(i) => Self::from_int(i),
            Err(_) => Err(format!("value {v} is not 0 or 1 (--dtype bool)")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conversions_follow_the_tns_rules() {
        assert_eq!(i8::from_int(-128), Ok(-128));
        assert!(i8::from_int(128).unwrap_err().contains("outside the range of i8"));
        assert!(u16::from_int(-1).unwrap_err().contains("outside the range of u16"));
        assert_eq!(u64::from_int(i128::from(u64::MAX)), Ok(u64::MAX));
        assert_eq!(i32::from_float(3.0), Ok(3));
        assert!(i32::from_float(3.5).unwrap_err().contains("not an integer (--dtype i32)"));
        assert!(i32::from_float(f64::NAN).unwrap_err().contains("not an integer"));
        assert!(i64::from_float(1e300).unwrap_err().contains("outside the range of i64"));
        assert_eq!(f32::from_float(0.1), Ok(0.1f32));
        assert!(f32::from_float(1e300).unwrap_err().contains("overflows f32"));
        assert!(f32::from_float(f64::INFINITY).unwrap().is_infinite());
        assert!(f32::from_float(f64::NAN).unwrap().is_nan());
        // 2^24 + 1 rounds to even once, not twice.
        assert_eq!(f32::from_int((1 << 24) + 1), Ok(16_777_216.0));
        assert_eq!(f64::from_int(i128::from(i64::MAX)), Ok(9.223372036854776e18));
        assert_eq!(Bool::from_int(1), Ok(Bool(1)));
        assert_eq!(Bool::from_float(0.0), Ok(Bool(0)));
        assert!(Bool::from_int(2).unwrap_err().contains("not 0 or 1"));
        assert!(Bool::from_float(0.5).unwrap_err().contains("not 0 or 1"));
    }
}
