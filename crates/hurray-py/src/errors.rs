//! Rust errors as the package's Python exceptions (`hurray_csf._errors`):
//! `FormatError` for framing, `ValidationError` with every violation,
//! `BuildError` and `DuplicateError` from the builder; `ValueError`,
//! `TypeError` and `IndexError` for arguments.

use csf_build::{BuildError, QuantizeError};
use csf_core::LookupError;
use csf_validate::{Violation, Warning};
use hurray_format::DecodeError;
use pyo3::exceptions::{PyIndexError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

/// An instance of the exception class `name` of `hurray_csf._errors`.
pub(crate) fn raise<'py, A>(py: Python<'py>, name: &str, args: A) -> PyErr
where
    A: pyo3::call::PyCallArgs<'py>,
{
    let made =
        py.import("hurray_csf._errors").and_then(|m| m.getattr(name)).and_then(|class| class.call1(args));
    match made {
        Ok(instance) => PyErr::from_value(instance),
        Err(e) => e,
    }
}

/// A framing error, with its byte offset from the start of the input.
pub(crate) fn decode(py: Python<'_>, e: DecodeError) -> PyErr {
    raise(py, "FormatError", (e.to_string(), e.offset()))
}

/// One violation as a dict (the Python `Violation` is built from it), with
/// its byte offset in the file (`Violation::offset`), when it has one.
pub(crate) fn violation_dict<'py>(
    py: Python<'py>,
    v: &Violation,
    offset: Option<u64>,
) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("rule", v.rule.id())?;
    d.set_item("clause", v.rule.clause())?;
    d.set_item("message", message(v))?;
    d.set_item("offset", offset)?;
    d.set_item("level", v.level)?;
    d.set_item("buffer", v.buffer)?;
    d.set_item("index", v.index)?;
    d.set_item("found", v.found)?;
    d.set_item("expected", v.expected)?;
    Ok(d)
}

/// One warning as a dict.
pub(crate) fn warning_dict<'py>(py: Python<'py>, w: &Warning) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("rule", w.id())?;
    d.set_item("message", w.to_string())?;
    Ok(d)
}

/// A violation's message without the `[rule; clause]` suffix of `Display`.
fn message(v: &Violation) -> String {
    let full = v.to_string();
    let suffix = format!(" [{}; {}]", v.rule.id(), v.rule.clause());
    full.strip_suffix(&suffix).map_or_else(|| full.clone(), str::to_string)
}

/// A tensor that breaks a rule: `ValidationError` carrying the violation
/// and, for a file, the byte it names (`None` for a tensor built in memory).
pub(crate) fn invalid(py: Python<'_>, v: &Violation, offset: Option<u64>) -> PyErr {
    let violations = violation_dict(py, v, offset).and_then(|d| PyList::new(py, [d]));
    let text = match offset {
        Some(offset) => format!("byte {offset}: {v}"),
        None => v.to_string(),
    };
    match violations {
        Ok(list) => raise(py, "ValidationError", (text, list, PyList::empty(py))),
        Err(e) => e,
    }
}

/// Either way bytes can fail to be a tensor.
pub(crate) fn read(py: Python<'_>, e: csf_validate::Error) -> PyErr {
    match e {
        csf_validate::Error::Decode(e) => decode(py, e),
        csf_validate::Error::Invalid { violation, offset } => invalid(py, &violation, offset),
        // A kind of error this binding does not know yet: its message, and
        // the class every error about a tensor shares.
        other => raise(py, "HurrayError", (other.to_string(),)),
    }
}

/// A builder error: bad arguments are `ValueError`/`TypeError`, the rest
/// `BuildError` (`DuplicateError` for duplicates).
pub(crate) fn build(py: Python<'_>, e: BuildError) -> PyErr {
    let text = e.to_string();
    match e {
        BuildError::Duplicate { index, first, second } => {
            raise(py, "DuplicateError", (text, first, second, index))
        }
        BuildError::CannotSum(_) => PyTypeError::new_err(text),
        BuildError::Quantize(QuantizeError::Unsupported(_))
        | BuildError::RankTooSmall { .. }
        | BuildError::RankTooLarge { .. }
        | BuildError::LengthMismatch { .. }
        | BuildError::BadModeOrder { .. }
        | BuildError::OutOfBounds { .. } => PyValueError::new_err(text),
        _ => raise(py, "BuildError", (text,)),
    }
}

/// A lookup error for query `row` (of a batch), or the single query.
pub(crate) fn lookup(e: LookupError, row: Option<usize>) -> PyErr {
    match row {
        Some(row) => PyIndexError::new_err(format!("index {row}: {e}")),
        None => PyIndexError::new_err(e.to_string()),
    }
}
