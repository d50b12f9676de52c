//! Reading a tensor's container bytes: validation, description, lookup,
//! iteration and dense conversion, each a call into `csf-validate` or
//! `csf-core`.

use csf_core::{CsfView, LookupError, Value};
use csf_validate::Mode;
use hurray_format::{Container, ElementType};
use numpy::{PyArray1, PyReadonlyArray1, PyReadonlyArray2, PyUntypedArrayMethods};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

use crate::errors;
use crate::values::{self, Out};

/// The bytes of a contiguous `uint8` array.
pub(crate) fn bytes<'a>(raw: &'a PyReadonlyArray1<'_, u8>) -> PyResult<&'a [u8]> {
    raw.as_slice().map_err(|_| PyValueError::new_err("the tensor's bytes must be a contiguous uint8 array"))
}

/// The view of bytes validated when they were loaded. Permissive reading is
/// all the structure that safe access needs (`O(rank)`); the accessors of
/// `csf-core` are total on whatever it lets through.
pub(crate) fn view<'a>(py: Python<'_>, raw: &'a [u8]) -> PyResult<CsfView<'a>> {
    csf_validate::read_permissive(raw).map_err(|e| errors::read(py, e))
}

fn mode(strict: bool) -> Mode {
    if strict {
        Mode::Strict
    } else {
        Mode::Permissive
    }
}

/// Validates `raw` (strictly, or only as safe reading needs), raising
/// `FormatError` or `ValidationError`.
#[pyfunction]
pub(crate) fn open(py: Python<'_>, raw: PyReadonlyArray1<'_, u8>, strict: bool) -> PyResult<()> {
    let raw = bytes(&raw)?;
    let checked = if strict {
        py.detach(|| csf_validate::read(raw).map(|_| ()))
    } else {
        py.detach(|| csf_validate::read_permissive(raw).map(|_| ()))
    };
    checked.map_err(|e| errors::read(py, e))
}

/// Every violation (up to `max_errors`) and warning of `raw`.
#[pyfunction]
pub(crate) fn report<'py>(
    py: Python<'py>,
    raw: PyReadonlyArray1<'_, u8>,
    strict: bool,
    max_errors: usize,
) -> PyResult<Bound<'py, PyDict>> {
    let raw = bytes(&raw)?;
    let out = PyDict::new(py);
    let errors = PyList::empty(py);
    let warnings = PyList::empty(py);
    match Container::decode(raw) {
        Err(e) => {
            let d = PyDict::new(py);
            d.set_item("rule", "decode")?;
            d.set_item("clause", "docs/format.md § 4-6")?;
            d.set_item("message", e.to_string())?;
            d.set_item("offset", e.offset())?;
            errors.append(d)?;
            out.set_item("truncated", false)?;
        }
        Ok(container) => {
            let report = py.detach(|| csf_validate::report(&container, mode(strict), max_errors));
            for v in &report.errors {
                errors.append(errors::violation_dict(py, v, v.offset(&container))?)?;
            }
            for w in &report.warnings {
                warnings.append(errors::warning_dict(py, w)?)?;
            }
            out.set_item("truncated", report.truncated)?;
        }
    }
    out.set_item("valid", errors.is_empty())?;
    out.set_item("errors", errors)?;
    out.set_item("warnings", warnings)?;
    Ok(out)
}

/// What a tensor is: shape, order, types, the byte range of every buffer,
/// the optional sections.
#[pyfunction]
pub(crate) fn describe<'py>(py: Python<'py>, raw: PyReadonlyArray1<'_, u8>) -> PyResult<Bound<'py, PyDict>> {
    let raw = bytes(&raw)?;
    let view = view(py, raw)?;
    let container = Container::decode(raw).map_err(|e| errors::decode(py, e))?;
    let d = container.descriptor();
    let out = PyDict::new(py);
    out.set_item("shape", view.shape().to_vec())?;
    out.set_item("mode_order", view.mode_order().to_vec())?;
    out.set_item("nnz", view.nnz())?;
    out.set_item("element_type", view.element_type().name())?;
    out.set_item("stored_dtype", values::stored_dtype(view.element_type()))?;
    out.set_item("value_dtype", values::out_of(&view).dtype())?;
    let ranges: Vec<(usize, usize)> = (0..d.buffers.len())
        .filter_map(|i| container.buffer_range(i))
        .map(|r| (r.start, r.end - r.start))
        .collect();
    out.set_item("buffers", ranges)?;
    match d.statistics {
        Some(s) => {
            let stats = PyDict::new(py);
            stats.set_item("nnz", s.nnz)?;
            stats.set_item("sparsity_ratio", s.sparsity_ratio)?;
            stats.set_item("min", s.min)?;
            stats.set_item("max", s.max)?;
            out.set_item("statistics", stats)?;
        }
        None => out.set_item("statistics", py.None())?,
    }
    match d.quantization {
        Some(q) => {
            let quant = PyDict::new(py);
            quant.set_item("scheme", format!("{:?}", q.scheme))?;
            quant.set_item("axis", q.axis)?;
            quant.set_item("block_size", q.block_size)?;
            quant.set_item("scale_type", q.scale_type.name())?;
            quant.set_item("zero_point_type", q.zero_point_type.map(ElementType::name))?;
            out.set_item("quantization", quant)?;
        }
        None => out.set_item("quantization", py.None())?,
    }
    Ok(out)
}

/// Why a batch stopped.
enum Stop {
    Lookup(usize, LookupError),
    /// A stored leaf without a value (only on permissively read data).
    NoValue(u64),
}

impl Stop {
    fn into_err(self, py: Python<'_>, view: &CsfView<'_>) -> PyErr {
        match self {
            Stop::Lookup(row, e) => errors::lookup(e, Some(row)),
            Stop::NoValue(leaf) => no_value(py, view, leaf),
        }
    }
}

fn no_value(py: Python<'_>, view: &CsfView<'_>, leaf: u64) -> PyErr {
    let message = format!(
        "leaf {leaf} has no value in the tensor (nnz {}, values buffer of {} elements; it was read permissively)",
        view.nnz(),
        view.values().capacity()
    );
    errors::raise(py, "HurrayError", (message,))
}

/// The value at one logical index, as a Python scalar (0 of the value type
/// for an implicit zero).
#[pyfunction]
pub(crate) fn get(py: Python<'_>, raw: PyReadonlyArray1<'_, u8>, index: Vec<u64>) -> PyResult<Py<PyAny>> {
    let raw = bytes(&raw)?;
    let view = view(py, raw)?;
    let value = match view.find(&index).map_err(|e| errors::lookup(e, None))? {
        Some(leaf) => view.value(leaf, &index).ok_or_else(|| no_value(py, &view, leaf as u64))?,
        None if view.quantization().is_some() => Value::F32(0.0),
        None => Value::zero(view.element_type()),
    };
    values::scalar(py, value)
}

/// The rows of a C-contiguous `(m, rank)` index array, checked against the rank.
fn queries<'a>(view: &CsfView<'_>, indices: &'a PyReadonlyArray2<'_, u64>) -> PyResult<&'a [u64]> {
    let cols = indices.shape().get(1).copied().unwrap_or(0);
    if cols != view.rank() {
        return Err(PyValueError::new_err(format!(
            "indices have {cols} coordinates a row, the tensor has rank {}",
            view.rank()
        )));
    }
    indices.as_slice().map_err(|_| PyValueError::new_err("indices must be a C-contiguous array"))
}

/// Leaf positions of `(m, rank)` indices: `csf-core`'s batched `find_many`.
fn find_all(view: &CsfView<'_>, flat: &[u64]) -> Result<Vec<Option<usize>>, Stop> {
    let rows = flat.len() / view.rank().max(1);
    let mut found = vec![Ok(None); rows];
    view.find_many(flat, &mut found);
    found.into_iter().enumerate().map(|(row, r)| r.map_err(|e| Stop::Lookup(row, e))).collect()
}

/// Leaf positions of an `(m, rank)` `uint64` array: -1 where absent.
#[pyfunction]
pub(crate) fn find<'py>(
    py: Python<'py>,
    raw: PyReadonlyArray1<'_, u8>,
    indices: PyReadonlyArray2<'_, u64>,
) -> PyResult<Bound<'py, PyArray1<i64>>> {
    let raw = bytes(&raw)?;
    let view = view(py, raw)?;
    let flat = queries(&view, &indices)?;
    let found = py.detach(|| find_all(&view, flat)).map_err(|e| e.into_err(py, &view))?;
    let leaves = found.into_iter().map(|l| l.map_or(-1, |l| l as i64)).collect();
    Ok(PyArray1::from_vec(py, leaves))
}

/// The values at an `(m, rank)` `uint64` array of indices, as little-endian
/// bytes of the value dtype (returned beside them).
#[pyfunction]
pub(crate) fn lookup<'py>(
    py: Python<'py>,
    raw: PyReadonlyArray1<'_, u8>,
    indices: PyReadonlyArray2<'_, u64>,
) -> PyResult<(Bound<'py, PyArray1<u8>>, &'static str)> {
    let raw = bytes(&raw)?;
    let view = view(py, raw)?;
    let flat = queries(&view, &indices)?;
    let out = values::out_of(&view);
    let rank = view.rank().max(1);
    let gathered = py.detach(|| {
        let found = find_all(&view, flat)?;
        let mut bytes = Vec::with_capacity(found.len() * out.width());
        for (leaf, index) in found.into_iter().zip(flat.chunks(rank)) {
            let value = match leaf {
                Some(leaf) => Some(view.value(leaf, index).ok_or(Stop::NoValue(leaf as u64))?),
                None => None,
            };
            out.push(&mut bytes, value);
        }
        Ok(bytes)
    });
    let bytes = gathered.map_err(|e: Stop| e.into_err(py, &view))?;
    Ok((PyArray1::from_vec(py, bytes), out.dtype()))
}

/// Flat coordinates, value bytes, and the values' numpy dtype.
type Coo<'py> = (Bound<'py, PyArray1<u64>>, Bound<'py, PyArray1<u8>>, &'static str);

/// Every non-zero in iteration (leaf) order: the logical coordinates, row
/// after row, and the values as bytes of the value dtype.
#[pyfunction]
pub(crate) fn to_coo<'py>(py: Python<'py>, raw: PyReadonlyArray1<'_, u8>) -> PyResult<Coo<'py>> {
    // The whole tensor is the sub-tree of the empty prefix (walked as `for_each` walks it).
    entries_under(py, bytes(&raw)?, &[])
}

/// The non-zeros under `prefix`, a prefix of storage-order coordinates (of
/// fewer than `rank` levels), as `to_coo` gives them: `CsfView::subtree` and
/// its walk. A prefix no entry has gives none; a prefix too long or outside
/// the shape raises `IndexError`.
#[pyfunction]
pub(crate) fn subtree<'py>(
    py: Python<'py>,
    raw: PyReadonlyArray1<'_, u8>,
    prefix: Vec<u64>,
) -> PyResult<Coo<'py>> {
    entries_under(py, bytes(&raw)?, &prefix)
}

/// The entries of the sub-tree under `prefix`, in leaf order.
fn entries_under<'py>(py: Python<'py>, raw: &[u8], prefix: &[u64]) -> PyResult<Coo<'py>> {
    let view = view(py, raw)?;
    let out = values::out_of(&view);
    let under = view.subtree(prefix).map_err(|e| errors::lookup(e, None))?;
    let result = py.detach(|| {
        let Some(under) = under else { return Ok((Vec::new(), Vec::new())) };
        let nnz = usize::try_from(view.nnz()).unwrap_or(0);
        // Capacity from what is stored, never from a length field alone.
        let stored = under.nnz().min(nnz);
        let mut coords = Vec::with_capacity(stored * view.rank());
        let mut bytes = Vec::with_capacity(stored * out.width());
        let mut missing = None;
        under.for_each(|index, leaf| {
            if missing.is_some() {
                return;
            }
            match view.value(leaf, index) {
                Some(v) => {
                    coords.extend_from_slice(index);
                    out.push(&mut bytes, Some(v));
                }
                None => missing = Some(leaf as u64),
            }
        });
        match missing {
            Some(leaf) => Err(Stop::NoValue(leaf)),
            None => Ok((coords, bytes)),
        }
    });
    let (coords, bytes) = result.map_err(|e| e.into_err(py, &view))?;
    Ok((PyArray1::from_vec(py, coords), PyArray1::from_vec(py, bytes), out.dtype()))
}

/// The dense row-major array, as bytes of the value dtype, if the shape
/// holds at most `max_elements` elements.
#[pyfunction]
pub(crate) fn to_dense<'py>(
    py: Python<'py>,
    raw: PyReadonlyArray1<'_, u8>,
    max_elements: u64,
) -> PyResult<(Bound<'py, PyArray1<u8>>, &'static str)> {
    let raw = bytes(&raw)?;
    let view = view(py, raw)?;
    let out = values::out_of(&view);
    let dense = py.detach(|| match out.width() {
        1 => dense::<1>(&view, out, max_elements),
        2 => dense::<2>(&view, out, max_elements),
        4 => dense::<4>(&view, out, max_elements),
        _ => dense::<8>(&view, out, max_elements),
    });
    let bytes = dense.map_err(|e| PyValueError::new_err(e.to_string()))?;
    Ok((PyArray1::from_vec(py, bytes), out.dtype()))
}

/// `to_dense_with` over `W`-byte little-endian values.
fn dense<const W: usize>(view: &CsfView<'_>, out: Out, budget: u64) -> Result<Vec<u8>, csf_core::DenseError> {
    let dense = view.to_dense_with(budget, [0u8; W], |leaf, index| {
        let mut bytes = Vec::with_capacity(W);
        out.push(&mut bytes, Some(view.value(leaf, index)?));
        bytes.try_into().ok()
    })?;
    Ok(dense.into_iter().flatten().collect())
}
