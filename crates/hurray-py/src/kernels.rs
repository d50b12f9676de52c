//! Tensor kernels: csf-kernels' MTTKRP, TTV, TTM, unfolding, norm and CP-ALS.
//!
//! Each function converts its arguments (numpy arrays of `float32` or
//! `float64`, borrowed when C-contiguous, copied otherwise), makes the
//! kernels' `Tensor` over the container bytes and runs the kernel with the
//! GIL released, on `threads` rayon threads (`build::with_threads`), then
//! converts the result or the error. The Python side (`_tensor.py`,
//! `_decompose.py`) picks the element type: it passes operands that are all
//! `float32` or all `float64`, and `single` where there is no operand.

use std::borrow::Cow;

use csf_core::CsfView;
use csf_kernels::{
    CpInit, CpOptions, CpResult, Csr, KernelError, MatRef, Matrix, Scalar, SemiSparse, Tensor, Ttv,
};
use numpy::{Element, PyArray1, PyReadonlyArray1, PyReadonlyArray2, PyUntypedArrayMethods};
use pyo3::exceptions::{PyMemoryError, PyOverflowError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::IntoPyObjectExt;

use crate::build::{encode, with_threads, Fail};
use crate::errors;
use crate::read::{bytes, view};

/// Adds this module's functions to `_native`.
pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(mttkrp, m)?)?;
    m.add_function(wrap_pyfunction!(ttv, m)?)?;
    m.add_function(wrap_pyfunction!(ttm, m)?)?;
    m.add_function(wrap_pyfunction!(unfold, m)?)?;
    m.add_function(wrap_pyfunction!(norm, m)?)?;
    m.add_function(wrap_pyfunction!(cp_als, m)?)?;
    Ok(())
}

/// A kernel error as the package's exceptions: arguments that do not fit
/// the tensor are `ValueError`, a result no index type holds
/// `OverflowError`, one too large to allocate `MemoryError`, and what is
/// wrong with the tensor or the numbers a `HurrayError`.
fn kernel_error(py: Python<'_>, e: KernelError) -> PyErr {
    let text = e.to_string();
    match e {
        KernelError::BadMode { .. }
        | KernelError::FactorCount { .. }
        | KernelError::FactorShape { .. }
        | KernelError::MatrixLength { .. }
        | KernelError::OutputLength { .. }
        | KernelError::VectorLength { .. }
        | KernelError::TtmMatrix { .. }
        | KernelError::WeightsLength { .. }
        | KernelError::InitRank { .. }
        | KernelError::DenseTooLarge { .. }
        | KernelError::ZeroRank => PyValueError::new_err(text),
        KernelError::ExtentTooLarge { .. } | KernelError::UnfoldTooWide { .. } => {
            PyOverflowError::new_err(text)
        }
        KernelError::TooLarge { .. } | KernelError::OutOfMemory { .. } => PyMemoryError::new_err(text),
        KernelError::NotFinite { .. } => errors::raise(
            py,
            "HurrayError",
            (format!("{text} (the tensor holds an infinity or NaN, or the problem is too ill-conditioned)"),),
        ),
        KernelError::Build(e) => errors::build(py, e),
        // BadModeOrder (only on data read permissively) and kinds this
        // binding does not know yet: the class every error about a tensor shares.
        _ => errors::raise(py, "HurrayError", (text,)),
    }
}

/// The kernels' tensor over `view`, parallel unless one thread was asked for.
fn tensor<'a, T: Scalar>(view: &CsfView<'a>, threads: Option<usize>) -> Result<Tensor<'a, T>, KernelError> {
    Ok(Tensor::<T>::new(view)?.with_parallel(threads != Some(1)))
}

/// Every array of `items` as a 2-D array of `T`, or `None` when one is not.
fn all_of<'py, T: Element>(items: &[Bound<'py, PyAny>]) -> Option<Vec<PyReadonlyArray2<'py, T>>> {
    items.iter().map(|item| item.extract::<PyReadonlyArray2<'py, T>>().ok()).collect()
}

/// A matrix's rows, columns and elements row by row: borrowed when the
/// array is C-contiguous, copied in C order otherwise.
fn elements<'a, T: Element + Copy>(a: &'a PyReadonlyArray2<'_, T>) -> (usize, usize, Cow<'a, [T]>) {
    let (rows, cols) = (a.shape().first().copied().unwrap_or(0), a.shape().get(1).copied().unwrap_or(0));
    // `as_slice` takes any contiguous array, Fortran order too: only C order is read in place.
    match a.as_slice() {
        Ok(s) if a.is_c_contiguous() => (rows, cols, Cow::Borrowed(s)),
        _ => (rows, cols, Cow::Owned(a.as_array().iter().copied().collect())),
    }
}

/// A vector's elements: borrowed when contiguous, copied otherwise.
fn vector_elements<'a, T: Element + Copy>(a: &'a PyReadonlyArray1<'_, T>) -> Cow<'a, [T]> {
    match a.as_slice() {
        Ok(s) => Cow::Borrowed(s),
        Err(_) => Cow::Owned(a.as_array().iter().copied().collect()),
    }
}

/// The matrices over `elements`.
fn matrices<'a, T: Scalar>(
    parts: &'a [(usize, usize, Cow<'_, [T]>)],
) -> Result<Vec<MatRef<'a, T>>, KernelError> {
    parts.iter().map(|(rows, cols, data)| MatRef::new(*rows, *cols, data)).collect()
}

const OPERANDS: &str = "must all be float32 or all float64 arrays";

/// `X_(mode) (U_N ⊙ ... ⊙ U_1)` for factors of `float32` (computed in
/// `f32`) or `float64`: the `I_mode x R` result, flat in C order.
#[pyfunction]
#[pyo3(signature = (raw, factors, mode, threads))]
pub(crate) fn mttkrp<'py>(
    py: Python<'py>,
    raw: PyReadonlyArray1<'py, u8>,
    factors: Vec<Bound<'py, PyAny>>,
    mode: usize,
    threads: Option<usize>,
) -> PyResult<Bound<'py, PyAny>> {
    let raw = bytes(&raw)?;
    let view = view(py, raw)?;
    if let Some(arrays) = all_of::<f32>(&factors) {
        return mttkrp_as(py, &view, &arrays, mode, threads)?.into_bound_py_any(py);
    }
    let arrays =
        all_of::<f64>(&factors).ok_or_else(|| PyTypeError::new_err(format!("factors {OPERANDS}")))?;
    mttkrp_as(py, &view, &arrays, mode, threads)?.into_bound_py_any(py)
}

fn mttkrp_as<'py, T: Scalar + Element>(
    py: Python<'py>,
    view: &CsfView<'_>,
    arrays: &[PyReadonlyArray2<'py, T>],
    mode: usize,
    threads: Option<usize>,
) -> PyResult<Bound<'py, PyArray1<T>>> {
    let parts: Vec<_> = arrays.iter().map(elements).collect();
    let work = || -> Result<Matrix<T>, KernelError> {
        let factors = matrices(&parts)?;
        tensor::<T>(view, threads)?.mttkrp(&factors, mode)
    };
    let result = py.detach(|| with_threads(threads, work))?.map_err(|e| kernel_error(py, e))?;
    Ok(PyArray1::from_vec(py, result.into_vec()))
}

/// A sparse matrix as Python gets it: `("csr", rows, cols, indptr, indices, data)`.
fn csr<'py, T: Scalar + Element>(py: Python<'py>, m: Csr<T>) -> PyResult<Bound<'py, PyAny>> {
    let (indptr, indices, data) =
        (PyArray1::from_vec(py, m.indptr), PyArray1::from_vec(py, m.indices), PyArray1::from_vec(py, m.data));
    ("csr", m.rows, m.cols, indptr, indices, data).into_bound_py_any(py)
}

/// What a TTV made, before it becomes Python objects.
enum TtvMade<T> {
    /// A tensor's container bytes.
    Tensor(Vec<u8>),
    Matrix(Csr<T>),
}

/// `X ×_mode v` for a vector of `float32` or `float64`: `("tensor", bytes)`
/// for an input of rank 4 or more, `("csr", ...)` for rank 3.
#[pyfunction]
#[pyo3(signature = (raw, vector, mode, threads))]
pub(crate) fn ttv<'py>(
    py: Python<'py>,
    raw: PyReadonlyArray1<'py, u8>,
    vector: Bound<'py, PyAny>,
    mode: usize,
    threads: Option<usize>,
) -> PyResult<Bound<'py, PyAny>> {
    let raw = bytes(&raw)?;
    let view = view(py, raw)?;
    if let Ok(v) = vector.extract::<PyReadonlyArray1<'py, f32>>() {
        return ttv_as(py, &view, &v, mode, threads);
    }
    let v = vector
        .extract::<PyReadonlyArray1<'py, f64>>()
        .map_err(|_| PyTypeError::new_err("vector must be a 1-D float32 or float64 array"))?;
    ttv_as(py, &view, &v, mode, threads)
}

fn ttv_as<'py, T: Scalar + Element>(
    py: Python<'py>,
    view: &CsfView<'_>,
    vector: &PyReadonlyArray1<'py, T>,
    mode: usize,
    threads: Option<usize>,
) -> PyResult<Bound<'py, PyAny>> {
    let elements = vector_elements(vector);
    let work = || -> Result<TtvMade<T>, Stop> {
        match tensor::<T>(view, threads)?.ttv(&elements, mode)? {
            // The statistics section, as every tensor this package builds has.
            Ttv::Tensor(owned) => {
                let built = csf_build::Built { tensor: owned, auto: None, removed: 0 };
                Ok(TtvMade::Tensor(encode(built, true).map_err(Stop::Encode)?.0))
            }
            Ttv::Matrix(m) => Ok(TtvMade::Matrix(m)),
        }
    };
    let made = py.detach(|| with_threads(threads, work))?.map_err(|e| e.into_err(py))?;
    match made {
        TtvMade::Tensor(bytes) => ("tensor", PyArray1::from_vec(py, bytes)).into_bound_py_any(py),
        TtvMade::Matrix(m) => csr(py, m),
    }
}

/// Why a kernel whose result is encoded stopped.
enum Stop {
    Kernel(KernelError),
    Encode(Fail),
}

impl From<KernelError> for Stop {
    fn from(e: KernelError) -> Self {
        Stop::Kernel(e)
    }
}

impl Stop {
    fn into_err(self, py: Python<'_>) -> PyErr {
        match self {
            Stop::Kernel(e) => kernel_error(py, e),
            Stop::Encode(Fail::Build(e)) => errors::build(py, e),
            // Only when the file would not fit in memory.
            Stop::Encode(Fail::Encode(e)) => PyMemoryError::new_err(e.to_string()),
        }
    }
}

/// What a TTM made: the fibres as COO, or the dense array.
enum TtmMade<T> {
    Coo(Vec<u64>, Vec<T>),
    Dense(Vec<T>),
}

/// `X ×_mode U` for `U` (`J x I_mode`) of `float32` or `float64`:
/// `("coo", shape, coords, values)` (every element of every fibre, the
/// coordinates flat, `rank` per element), or with `max_elements` given
/// `("dense", shape, values)` in C order, refused past `max_elements`.
#[pyfunction]
#[pyo3(signature = (raw, matrix, mode, max_elements, threads))]
pub(crate) fn ttm<'py>(
    py: Python<'py>,
    raw: PyReadonlyArray1<'py, u8>,
    matrix: Bound<'py, PyAny>,
    mode: usize,
    max_elements: Option<u64>,
    threads: Option<usize>,
) -> PyResult<Bound<'py, PyAny>> {
    let raw = bytes(&raw)?;
    let view = view(py, raw)?;
    if let Ok(u) = matrix.extract::<PyReadonlyArray2<'py, f32>>() {
        return ttm_as(py, &view, &u, mode, max_elements, threads);
    }
    let u = matrix
        .extract::<PyReadonlyArray2<'py, f64>>()
        .map_err(|_| PyTypeError::new_err("matrix must be a 2-D float32 or float64 array"))?;
    ttm_as(py, &view, &u, mode, max_elements, threads)
}

fn ttm_as<'py, T: Scalar + Element>(
    py: Python<'py>,
    view: &CsfView<'_>,
    matrix: &PyReadonlyArray2<'py, T>,
    mode: usize,
    max_elements: Option<u64>,
    threads: Option<usize>,
) -> PyResult<Bound<'py, PyAny>> {
    let (rows, cols, data) = elements(matrix);
    let work = || -> Result<(Vec<u64>, TtmMade<T>), KernelError> {
        let u = MatRef::new(rows, cols, &data)?;
        let y: SemiSparse<T> = tensor::<T>(view, threads)?.ttm(u, mode)?;
        let made = match max_elements {
            // A budget beyond the address space is no budget.
            Some(budget) => TtmMade::Dense(y.to_dense(usize::try_from(budget).unwrap_or(usize::MAX))?),
            None => {
                let (coords, values) = y.to_coo();
                TtmMade::Coo(coords, values)
            }
        };
        Ok((y.shape, made))
    };
    let result = py.detach(|| with_threads(threads, work))?;
    let (shape, made) = result.map_err(|e| match (e, max_elements) {
        // `to_dense`'s refusal, worded as `to_dense`'s own.
        (KernelError::DenseTooLarge { .. }, Some(budget)) => PyValueError::new_err(format!(
            "the result of shape {:?} has more than max_elements={budget} elements",
            ttm_shape(view, rows, mode)
        )),
        (e, _) => kernel_error(py, e),
    })?;
    match made {
        TtmMade::Coo(coords, values) => {
            ("coo", shape, PyArray1::from_vec(py, coords), PyArray1::from_vec(py, values))
                .into_bound_py_any(py)
        }
        TtmMade::Dense(values) => ("dense", shape, PyArray1::from_vec(py, values)).into_bound_py_any(py),
    }
}

/// The shape of `X ×_mode U` for `U` of `j` rows.
fn ttm_shape(view: &CsfView<'_>, j: usize, mode: usize) -> Vec<u64> {
    let mut shape = view.shape().to_vec();
    if let Some(s) = shape.get_mut(mode) {
        *s = j as u64;
    }
    shape
}

/// The mode-`mode` unfolding as `("csr", ...)`, values in `f32` when
/// `single`, `f64` otherwise.
#[pyfunction]
#[pyo3(signature = (raw, mode, single, threads))]
pub(crate) fn unfold<'py>(
    py: Python<'py>,
    raw: PyReadonlyArray1<'py, u8>,
    mode: usize,
    single: bool,
    threads: Option<usize>,
) -> PyResult<Bound<'py, PyAny>> {
    let raw = bytes(&raw)?;
    let view = view(py, raw)?;
    if single {
        unfold_as::<f32>(py, &view, mode, threads)
    } else {
        unfold_as::<f64>(py, &view, mode, threads)
    }
}

fn unfold_as<'py, T: Scalar + Element>(
    py: Python<'py>,
    view: &CsfView<'_>,
    mode: usize,
    threads: Option<usize>,
) -> PyResult<Bound<'py, PyAny>> {
    let work = || tensor::<T>(view, threads)?.unfold(mode);
    let m = py.detach(|| with_threads(threads, work))?.map_err(|e| kernel_error(py, e))?;
    csr(py, m)
}

/// The Frobenius norm, summed in `f64` (the values read as `f32` when
/// `single`: exact for `float32` values, and without a copy).
#[pyfunction]
pub(crate) fn norm(py: Python<'_>, raw: PyReadonlyArray1<'_, u8>, single: bool) -> PyResult<f64> {
    let raw = bytes(&raw)?;
    let view = view(py, raw)?;
    let norm = py.detach(|| {
        if single {
            tensor::<f32>(&view, Some(1)).map(|t| t.norm())
        } else {
            tensor::<f64>(&view, Some(1)).map(|t| t.norm())
        }
    });
    norm.map_err(|e| kernel_error(py, e))
}

/// A CP decomposition as Python gets it: `(weights, factors (flat, C
/// order), fit per iteration, seconds per iteration, converged)`.
type Cp<'py> = (Bound<'py, PyAny>, Vec<Bound<'py, PyAny>>, Vec<f64>, Vec<f64>, bool);

/// CP-ALS (`csf_kernels::cp_als`) of `rank` components: from `init`'s
/// factors (all `float32` or all `float64`: the computation's type) when
/// given, else from SplitMix64 factors seeded with `seed`, computed in
/// `f32` when `single`. With `trees = 2` a second tree rooted at the first
/// one's leaf mode serves that mode's MTTKRP.
#[pyfunction]
#[pyo3(signature = (raw, rank, max_iters, tol, seed, init, single, trees, threads))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn cp_als<'py>(
    py: Python<'py>,
    raw: PyReadonlyArray1<'py, u8>,
    rank: usize,
    max_iters: usize,
    tol: f64,
    seed: u64,
    init: Option<Vec<Bound<'py, PyAny>>>,
    single: bool,
    trees: usize,
    threads: Option<usize>,
) -> PyResult<Cp<'py>> {
    if !(1..=2).contains(&trees) {
        return Err(PyValueError::new_err(format!("trees must be 1 or 2, not {trees}")));
    }
    let raw = bytes(&raw)?;
    let view = view(py, raw)?;
    let run = Run { rank, max_iters, tol, seed, trees, threads };
    match init {
        None if single => run.go::<f32>(py, &view, None),
        None => run.go::<f64>(py, &view, None),
        Some(given) => {
            if let Some(arrays) = all_of::<f32>(&given) {
                return run.go(py, &view, Some(&arrays));
            }
            let arrays = all_of::<f64>(&given)
                .ok_or_else(|| PyTypeError::new_err(format!("init's factors {OPERANDS}")))?;
            run.go(py, &view, Some(&arrays))
        }
    }
}

/// CP-ALS's arguments but the initial factors.
struct Run {
    rank: usize,
    max_iters: usize,
    tol: f64,
    seed: u64,
    trees: usize,
    threads: Option<usize>,
}

impl Run {
    fn go<'py, T: Scalar + Element>(
        &self,
        py: Python<'py>,
        view: &CsfView<'_>,
        init: Option<&[PyReadonlyArray2<'py, T>]>,
    ) -> PyResult<Cp<'py>> {
        let parts: Vec<_> = init.unwrap_or_default().iter().map(elements).collect();
        let random = init.is_none();
        let work = || -> Result<CpResult<T>, KernelError> {
            let init = if random {
                CpInit::Random { seed: self.seed }
            } else {
                let factors =
                    parts.iter().map(|(rows, cols, data)| Matrix::from_rows(*rows, *cols, data.to_vec()));
                CpInit::Factors(factors.collect::<Result<_, _>>()?)
            };
            let options = CpOptions { rank: self.rank, max_iters: self.max_iters, tol: self.tol, init };
            let mut tensor = tensor::<T>(view, self.threads)?;
            if self.trees == 2 {
                let leaf = tensor.mode_orders().next().and_then(|order| order.last().copied());
                if let Some(leaf) = leaf {
                    tensor = tensor.with_root_tree(leaf)?;
                }
            }
            csf_kernels::cp_als(&tensor, &options)
        };
        let result = py.detach(|| with_threads(self.threads, work))?.map_err(|e| kernel_error(py, e))?;
        let weights = PyArray1::from_vec(py, result.weights).into_any();
        let factors =
            result.factors.into_iter().map(|f| PyArray1::from_vec(py, f.into_vec()).into_any()).collect();
        let fits = result.iterations.iter().map(|s| s.fit).collect();
        let seconds = result.iterations.iter().map(|s| s.seconds).collect();
        Ok((weights, factors, fits, seconds, result.converged))
    }
}
