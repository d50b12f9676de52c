//! A tensor's values as numpy sees them.
//!
//! The value of a leaf is what `csf-core` says it is (`CsfView::value`): the
//! stored element, or for a quantized tensor its dequantized `f32`. This
//! module only picks the numpy dtype that holds such values exactly and
//! writes them in it: the element type itself where numpy has it, `int8` /
//! `uint8` for 4-bit integers, and `float32` for the narrow floats numpy
//! lacks (bfloat16, FP8, FP6, FP4, E8M0, NF4) and for every quantized tensor.

use csf_core::{CsfView, Value};
use hurray_format::ElementType;
use pyo3::prelude::*;
use pyo3::IntoPyObjectExt;

/// How values are written out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Out {
    /// As the element's own little-endian bytes, `width` each.
    Native { dtype: &'static str, width: usize },
    /// Decoded (or dequantized) to `f32`.
    F32,
}

impl Out {
    /// The numpy dtype string (explicitly little-endian).
    pub(crate) fn dtype(self) -> &'static str {
        match self {
            Out::Native { dtype, .. } => dtype,
            Out::F32 => "<f4",
        }
    }

    /// Bytes per value.
    pub(crate) fn width(self) -> usize {
        match self {
            Out::Native { width, .. } => width,
            Out::F32 => 4,
        }
    }

    /// Appends `value` (`None`: an implicit zero, or a leaf without a value on
    /// unvalidated data, which reads as NaN for floats and 0 otherwise).
    pub(crate) fn push(self, out: &mut Vec<u8>, value: Option<Value>) {
        let Some(value) = value else {
            match self {
                Out::F32 => out.extend_from_slice(&0f32.to_le_bytes()),
                Out::Native { width, .. } => out.resize(out.len() + width, 0),
            }
            return;
        };
        match (self, value) {
            (Out::F32, v) => out.extend_from_slice(&(v.to_f64() as f32).to_le_bytes()),
            (_, Value::Bool(b)) => out.push(u8::from(b)),
            (_, Value::I8(v) | Value::I4(v)) => out.extend_from_slice(&v.to_le_bytes()),
            (_, Value::U8(v) | Value::U4(v)) => out.push(v),
            (_, Value::I16(v)) => out.extend_from_slice(&v.to_le_bytes()),
            (_, Value::U16(v) | Value::F16(v)) => out.extend_from_slice(&v.to_le_bytes()),
            (_, Value::I32(v)) => out.extend_from_slice(&v.to_le_bytes()),
            (_, Value::U32(v)) => out.extend_from_slice(&v.to_le_bytes()),
            (_, Value::I64(v)) => out.extend_from_slice(&v.to_le_bytes()),
            (_, Value::U64(v)) => out.extend_from_slice(&v.to_le_bytes()),
            (_, Value::F32(v)) => out.extend_from_slice(&v.to_le_bytes()),
            (_, Value::F64(v)) => out.extend_from_slice(&v.to_le_bytes()),
            // Narrow floats have `Out::F32`; keep the width whatever comes.
            (Out::Native { width, .. }, v) => {
                let bytes = v.to_f64().to_le_bytes();
                out.extend(bytes.iter().copied().chain(core::iter::repeat(0)).take(width));
            }
        }
    }
}

/// The numpy form of `view`'s values.
pub(crate) fn out_of(view: &CsfView<'_>) -> Out {
    if view.quantization().is_some() {
        return Out::F32;
    }
    let (dtype, width) = match view.element_type() {
        ElementType::Bool => ("|b1", 1),
        ElementType::I8 | ElementType::I4 => ("|i1", 1),
        ElementType::U8 | ElementType::U4 => ("|u1", 1),
        ElementType::I16 => ("<i2", 2),
        ElementType::U16 => ("<u2", 2),
        ElementType::I32 => ("<i4", 4),
        ElementType::U32 => ("<u4", 4),
        ElementType::I64 => ("<i8", 8),
        ElementType::U64 => ("<u8", 8),
        ElementType::F16 => ("<f2", 2),
        ElementType::F32 => ("<f4", 4),
        ElementType::F64 => ("<f8", 8),
        _ => return Out::F32,
    };
    Out::Native { dtype, width }
}

/// The numpy dtype of the values buffer as stored (the codes of a quantized
/// tensor): the element type where numpy has it, raw `uint8`/`uint16` bits
/// for the narrow floats, and packed bytes (`uint8`) for 4-bit types.
pub(crate) fn stored_dtype(element_type: ElementType) -> &'static str {
    match element_type {
        ElementType::Bool => "|b1",
        ElementType::I8 => "|i1",
        ElementType::I16 => "<i2",
        ElementType::U16 | ElementType::BF16 => "<u2",
        ElementType::I32 => "<i4",
        ElementType::U32 => "<u4",
        ElementType::I64 => "<i8",
        ElementType::U64 => "<u8",
        ElementType::F16 => "<f2",
        ElementType::F32 => "<f4",
        ElementType::F64 => "<f8",
        _ => "|u1",
    }
}

/// A value as a Python scalar: `bool`, `int` or `float`.
pub(crate) fn scalar(py: Python<'_>, value: Value) -> PyResult<Py<PyAny>> {
    match value {
        Value::Bool(b) => b.into_py_any(py),
        Value::I8(v) | Value::I4(v) => v.into_py_any(py),
        Value::U8(v) | Value::U4(v) => v.into_py_any(py),
        Value::I16(v) => v.into_py_any(py),
        Value::U16(v) => v.into_py_any(py),
        Value::I32(v) => v.into_py_any(py),
        Value::U32(v) => v.into_py_any(py),
        Value::I64(v) => v.into_py_any(py),
        Value::U64(v) => v.into_py_any(py),
        other => other.to_f64().into_py_any(py),
    }
}
