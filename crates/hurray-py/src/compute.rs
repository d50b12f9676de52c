//! `from_dense`, `equals` and `sum`: calls into csf-build's `dense`, `compare` and `reduce`.
//!
//! Each converts its arguments, runs the crate's function with the GIL
//! released (on `threads` rayon threads where it takes them), and converts
//! the result or the error; tensors cross as container bytes, read
//! permissively (`read::view`: the crate functions are total on what that
//! lets through).

use csf_build::{BuildError, Dense, DenseOptions, Reduced};
use numpy::{PyArray1, PyReadonlyArray1};
use pyo3::exceptions::{PyMemoryError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::IntoPyObjectExt;

use crate::build::{self, encode, with_threads, Fail};
use crate::read::{bytes, view};
use crate::{errors, values};

/// Adds this module's functions to `_native`.
pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(from_dense, m)?)?;
    m.add_function(wrap_pyfunction!(equals, m)?)?;
    m.add_function(wrap_pyfunction!(sum, m)?)?;
    Ok(())
}

/// A builder error of these functions: a type they do not take is
/// `TypeError`, a bad argument or a dense result above `max_elements`
/// `ValueError`; the rest as `errors::build` maps them.
fn error(py: Python<'_>, e: BuildError) -> PyErr {
    match e {
        BuildError::UnsupportedType { .. } => PyTypeError::new_err(e.to_string()),
        BuildError::TooManyElements { .. }
        | BuildError::BadAxes { .. }
        | BuildError::ShapeOverflow { .. } => PyValueError::new_err(e.to_string()),
        other => errors::build(py, other),
    }
}

fn fail(py: Python<'_>, f: Fail) -> PyErr {
    match f {
        Fail::Build(e) => error(py, e),
        // Only when the file would not fit in memory.
        Fail::Encode(e) => PyMemoryError::new_err(e.to_string()),
    }
}

/// Builds a tensor of the non-zeros of a dense row-major array
/// (`csf_build::from_dense`) and encodes it with its statistics section.
/// Returns what `build` returns: the bytes, `Auto`'s choice, and 0 removed.
#[pyfunction]
#[pyo3(signature = (values, element_type, shape, mode_order, drop_nan, quantize, threads))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn from_dense<'py>(
    py: Python<'py>,
    values: PyReadonlyArray1<'py, u8>,
    element_type: &str,
    shape: Vec<u64>,
    mode_order: &Bound<'py, PyAny>,
    drop_nan: bool,
    quantize: Option<&str>,
    threads: Option<usize>,
) -> PyResult<build::Built<'py>> {
    let element_type = build::element_type(element_type)?;
    let values = bytes(&values)?;
    let quantize = build::quantize_scheme(quantize)?;
    let options = DenseOptions {
        mode_order: build::mode_order(mode_order)?,
        drop_nan,
        quantize,
        parallel: threads != Some(1),
    };
    let work = || {
        let dense = Dense { shape: &shape, element_type, values };
        encode(csf_build::from_dense(&dense, &options).map_err(Fail::Build)?, true)
    };
    let result = py.detach(|| with_threads(threads, work));
    let (bytes, auto, removed) = result?.map_err(|e| fail(py, e))?;
    Ok((PyArray1::from_vec(py, bytes), auto, removed))
}

/// Whether two tensors are the same (`csf_build::equal`: equal shapes and
/// dense values; stored zeros, mode orders and bytes do not matter). The
/// caller compares the dtypes.
#[pyfunction]
pub(crate) fn equals(
    py: Python<'_>,
    a: PyReadonlyArray1<'_, u8>,
    b: PyReadonlyArray1<'_, u8>,
) -> PyResult<bool> {
    let (a, b) = (bytes(&a)?, bytes(&b)?);
    let (a, b) = (view(py, a)?, view(py, b)?);
    py.detach(|| csf_build::equal(&a, &b)).map_err(|e| error(py, e))
}

/// What a sum gives, before it becomes Python objects.
enum Summed {
    /// A tensor's container bytes.
    Tensor(Vec<u8>),
    /// A dense array's shape and little-endian values.
    Dense(Vec<u64>, Vec<u8>),
}

/// The sum over the logical dimensions `axes` (`csf_build::sum_axes`):
/// `("tensor", bytes)` for a result of rank 3 or more, `("dense", shape,
/// value bytes, numpy dtype)` below.
#[pyfunction]
#[pyo3(signature = (raw, axes, max_elements, threads))]
pub(crate) fn sum<'py>(
    py: Python<'py>,
    raw: PyReadonlyArray1<'py, u8>,
    axes: Vec<usize>,
    max_elements: u64,
    threads: Option<usize>,
) -> PyResult<Bound<'py, PyAny>> {
    let raw = bytes(&raw)?;
    let view = view(py, raw)?;
    let parallel = threads != Some(1);
    let work = || -> Result<Summed, Fail> {
        Ok(match csf_build::sum_axes(&view, &axes, max_elements, parallel).map_err(Fail::Build)? {
            Reduced::Tensor(built) => Summed::Tensor(encode(built, true)?.0),
            Reduced::Dense { shape, values } => Summed::Dense(shape, values),
        })
    };
    let summed = py.detach(|| with_threads(threads, work))?.map_err(|e| fail(py, e))?;
    match summed {
        Summed::Tensor(bytes) => ("tensor", PyArray1::from_vec(py, bytes)).into_bound_py_any(py),
        // The sum's type is the values' as numpy reads them: the element
        // type, or `float32` for a quantized tensor.
        Summed::Dense(shape, bytes) => {
            ("dense", shape, PyArray1::from_vec(py, bytes), values::out_of(&view).dtype())
                .into_bound_py_any(py)
        }
    }
}
