//! Selections (`t[...]`): csf-build's `select`.
//!
//! The Python side (`_key.parse`) turns a numpy key into one selector per
//! logical dimension; this module converts the selectors, runs the selection
//! with the GIL released, and converts the result: a tensor's container
//! bytes, or the entries of a result of rank below 3.

use csf_build::{Axis, SelectError, Selection};
use numpy::{PyArray1, PyReadonlyArray1};
use pyo3::exceptions::{PyIndexError, PyMemoryError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyList, PyTuple};
use pyo3::IntoPyObjectExt;

use crate::build::{encode, with_threads, Fail};
use crate::read::{bytes, view};
use crate::{errors, values};

/// Adds this module's functions to `_native`.
pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(select, m)?)?;
    Ok(())
}

/// One selector as Python gives it; a take array is borrowed until the
/// selection is done.
enum Selector<'py> {
    Index(u64),
    All,
    Step { start: u64, len: u64, step: i64 },
    Take(PyReadonlyArray1<'py, u64>),
}

impl<'py> Selector<'py> {
    /// `("index", c)`, `("all",)`, `("step", start, len, step)` or
    /// `("take", uint64 array)`, for logical dimension `axis`.
    fn extract(axis: usize, item: &Bound<'py, PyAny>) -> PyResult<Self> {
        let malformed = || {
            PyValueError::new_err(format!(
                "axis {axis}: a selector is ('index', c), ('all',), ('step', start, len, step) or ('take', uint64 array)"
            ))
        };
        let tuple = item.cast::<PyTuple>().map_err(|_| malformed())?;
        let kind: String = tuple.get_item(0).and_then(|k| k.extract()).map_err(|_| malformed())?;
        let field = |i: usize| tuple.get_item(i).map_err(|_| malformed());
        let integer = |i: usize, what: &str| -> PyResult<u64> {
            field(i)?.extract().map_err(|_| {
                PyIndexError::new_err(format!(
                    "axis {axis}: the {what} must be a non-negative integer below 2**64"
                ))
            })
        };
        let selector = match (kind.as_str(), tuple.len()) {
            ("index", 2) => Selector::Index(integer(1, "index")?),
            ("all", 1) => Selector::All,
            ("step", 4) => {
                let len = integer(2, "slice length")?;
                let step: i64 = field(3)?.extract().map_err(|_| {
                    PyValueError::new_err(format!(
                        "axis {axis}: the slice step must be an integer of 64 bits"
                    ))
                })?;
                // An empty slice's start is not read (`slice.indices` may make it -1).
                let start = if len == 0 { 0 } else { integer(1, "slice start")? };
                Selector::Step { start, len, step }
            }
            ("take", 2) => Selector::Take(field(1)?.extract().map_err(|_| {
                PyValueError::new_err(format!(
                    "axis {axis}: the coordinates to take must be a 1-D uint64 array"
                ))
            })?),
            _ => return Err(malformed()),
        };
        Ok(selector)
    }

    /// The selector as csf-build takes it, borrowing a take array's memory.
    fn axis(&self, axis: usize) -> PyResult<Axis<'_>> {
        Ok(match self {
            Selector::Index(c) => Axis::Index(*c),
            Selector::All => Axis::All,
            Selector::Step { start, len, step } => Axis::Step { start: *start, len: *len, step: *step },
            Selector::Take(take) => Axis::Take(take.as_slice().map_err(|_| {
                PyValueError::new_err(format!(
                    "axis {axis}: the coordinates to take must be a contiguous array"
                ))
            })?),
        })
    }
}

/// What a selection made, before it becomes Python objects.
enum Made {
    /// A built tensor's container bytes.
    Tensor(Vec<u8>),
    /// The entries of a result of rank 0 to 2.
    Entries { shape: Vec<u64>, coords: Vec<u64>, values: Vec<u8>, dtype: &'static str },
}

/// Why a selection stopped.
enum Stop {
    Select(SelectError),
    Encode(Fail),
}

impl Stop {
    fn into_err(self, py: Python<'_>) -> PyErr {
        match self {
            Stop::Select(e) => select_error(py, e),
            Stop::Encode(Fail::Build(e)) => errors::build(py, e),
            Stop::Encode(Fail::Encode(e)) => PyMemoryError::new_err(e.to_string()),
        }
    }
}

/// A selection error as Python's: a selector that does not fit the tensor is
/// `IndexError` (a zero step `ValueError`, as numpy has it), a result too
/// large `MemoryError`, and a tensor that breaks a rule (read permissively)
/// a `HurrayError` (`BuildError` from the builder).
fn select_error(py: Python<'_>, e: SelectError) -> PyErr {
    let text = e.to_string();
    match e {
        SelectError::AxisCount { .. }
        | SelectError::IndexOutOfBounds { .. }
        | SelectError::SliceOutOfBounds { .. }
        | SelectError::TakeOutOfBounds { .. } => PyIndexError::new_err(text),
        SelectError::ZeroStep { .. } => PyValueError::new_err(text),
        SelectError::TooLarge { .. } => PyMemoryError::new_err(text),
        SelectError::Build(e) => errors::build(py, e),
        _ => errors::raise(py, "HurrayError", (text,)),
    }
}

/// The entries of the tensor `raw` that `axes` keeps (one selector per
/// logical dimension; numpy's indexing, outer across several take arrays):
/// `("tensor", container bytes)` for a result of rank 3 or more (with its
/// statistics section), else `("entries", shape, coords, value bytes,
/// dtype)` with the coordinates flat, row after row, in row-major order.
#[pyfunction]
#[pyo3(signature = (raw, axes, threads))]
pub(crate) fn select<'py>(
    py: Python<'py>,
    raw: PyReadonlyArray1<'py, u8>,
    axes: &Bound<'py, PyList>,
    threads: Option<usize>,
) -> PyResult<Bound<'py, PyAny>> {
    let raw = bytes(&raw)?;
    let view = view(py, raw)?;
    let selectors: Vec<Selector<'py>> = axes
        .iter()
        .enumerate()
        .map(|(axis, item)| Selector::extract(axis, &item))
        .collect::<PyResult<_>>()?;
    let axes: Vec<Axis<'_>> =
        selectors.iter().enumerate().map(|(axis, s)| s.axis(axis)).collect::<PyResult<_>>()?;
    let parallel = threads != Some(1);
    let work = || -> Result<Made, Stop> {
        match csf_build::select(&view, &axes, parallel).map_err(Stop::Select)? {
            Selection::Tensor(built) => Ok(Made::Tensor(encode(built, true).map_err(Stop::Encode)?.0)),
            Selection::Entries { shape, coords, values, element_type } => {
                // Entries hold numpy's types only, whose dtypes these are.
                Ok(Made::Entries { shape, coords, values, dtype: values::stored_dtype(element_type) })
            }
        }
    };
    let made = py.detach(|| with_threads(threads, work))?.map_err(|e| e.into_err(py))?;
    match made {
        Made::Tensor(bytes) => ("tensor", PyArray1::from_vec(py, bytes)).into_bound_py_any(py),
        Made::Entries { shape, coords, values, dtype } => {
            ("entries", shape, PyArray1::from_vec(py, coords), PyArray1::from_vec(py, values), dtype)
                .into_bound_py_any(py)
        }
    }
}
