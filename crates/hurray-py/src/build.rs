//! Making tensors: `csf-build`'s COO -> CSF builder and re-ordering, and a
//! tensor from arrays made elsewhere (pyarrow's), strictly validated.

use std::borrow::Cow;
use std::sync::{Arc, Mutex, PoisonError};

use csf_build::{
    Coo, Duplicates, Indices, ModeOrderPolicy, Options, Quantize, ReorderOptions, StatisticsSection,
};
use csf_core::{CsfView, OwnedCsf, OwnedLevel};
use hurray_format::ElementType;
use numpy::{PyArray1, PyReadonlyArray1, PyReadonlyArray2, PyUntypedArrayMethods};
use pyo3::exceptions::{PyMemoryError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use rayon::ThreadPool;

use crate::errors;
use crate::read::{bytes, view};

/// What `build` returns: the container bytes, `Auto`'s choice `(order,
/// pos/crd bytes)` when it ran, and the number of entries merged or dropped.
pub(crate) type Built<'py> = (Bound<'py, PyArray1<u8>>, Option<(Vec<u32>, u64)>, u64);

pub(crate) fn element_type(name: &str) -> PyResult<ElementType> {
    ElementType::from_name(name).ok_or_else(|| PyTypeError::new_err(format!("unknown element type '{name}'")))
}

/// `"identity"`, `"auto"`, or a permutation.
pub(crate) fn mode_order(spec: &Bound<'_, PyAny>) -> PyResult<ModeOrderPolicy> {
    if let Ok(name) = spec.extract::<String>() {
        return match name.as_str() {
            "identity" => Ok(ModeOrderPolicy::Identity),
            "auto" => Ok(ModeOrderPolicy::Auto),
            other => Err(PyValueError::new_err(format!(
                "mode_order '{other}' is neither 'identity', 'auto' nor a permutation"
            ))),
        };
    }
    let order: Vec<i64> = spec.extract().map_err(|_| {
        PyTypeError::new_err("mode_order must be 'identity', 'auto' or a sequence of dimensions")
    })?;
    // A negative (or huge) entry is a bad value, not a bad type.
    let dims: Result<Vec<u32>, _> = order.iter().map(|&d| u32::try_from(d)).collect();
    let dims =
        dims.map_err(|_| PyValueError::new_err(format!("mode order {order:?} is not a permutation")))?;
    Ok(ModeOrderPolicy::Explicit(dims))
}

/// A quantization scheme in `hurray convert --quantize`'s syntax (`csf_build::Quantize`).
pub(crate) fn quantize_scheme(scheme: Option<&str>) -> PyResult<Option<Quantize>> {
    scheme
        .map(|q| q.parse().map_err(|e: csf_build::ParseQuantizeError| PyValueError::new_err(e.to_string())))
        .transpose()
}

pub(crate) fn duplicates(name: &str) -> PyResult<Duplicates> {
    Ok(match name {
        "error" => Duplicates::Error,
        "sum" => Duplicates::Sum,
        "last" => Duplicates::Last,
        "first" => Duplicates::First,
        other => {
            return Err(PyValueError::new_err(format!(
                "duplicates '{other}' is not one of 'error', 'sum', 'last', 'first'"
            )))
        }
    })
}

/// The most worker threads one call may ask for: far above any core count
/// this package meets, and far below what makes starting a pool the cost of
/// the call (each pool thread is an OS thread).
pub(crate) const MAX_THREADS: usize = 1024;

/// How many pools of different sizes stay alive for reuse. A caller that
/// alternates between a few `threads=` values never starts a thread twice;
/// one that tries every count keeps at most this many pools' threads alive.
const KEPT_POOLS: usize = 4;

/// The pools kept for reuse, the most recently used last.
static POOLS: Mutex<Vec<(usize, Arc<ThreadPool>)>> = Mutex::new(Vec::new());

/// The pool of `n` threads: a kept one, or a new one that is kept in place of
/// the least recently used.
fn pool(n: usize) -> PyResult<Arc<ThreadPool>> {
    // A panic while the lock was held cannot leave the list inconsistent
    // (each change is one push or remove), so a poisoned lock is still usable.
    let mut pools = POOLS.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(at) = pools.iter().position(|(size, _)| *size == n) {
        let kept = pools.remove(at);
        let pool = Arc::clone(&kept.1);
        pools.push(kept);
        return Ok(pool);
    }
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(n)
        .thread_name(|i| format!("hurray-csf-{i}"))
        .build()
        .map_err(|e| PyValueError::new_err(format!("threads={n}: cannot start the threads: {e}")))?;
    let pool = Arc::new(pool);
    if pools.len() >= KEPT_POOLS {
        // Dropping a pool ends its threads once their work is done.
        pools.remove(0);
    }
    pools.push((n, Arc::clone(&pool)));
    Ok(pool)
}

/// Runs `work` on `threads` rayon threads: rayon's global pool (every core)
/// when `None`, the calling thread alone for 1 (the callers then ask the
/// crates for their sequential paths), and a reused pool otherwise.
pub(crate) fn with_threads<T: Send>(threads: Option<usize>, work: impl FnOnce() -> T + Send) -> PyResult<T> {
    match threads {
        None | Some(1) => Ok(work()),
        Some(n) if n == 0 || n > MAX_THREADS => {
            Err(PyValueError::new_err(format!("threads must be between 1 and {MAX_THREADS}, not {n}")))
        }
        Some(n) => Ok(pool(n)?.install(work)),
    }
}

/// The coordinates as `u64`s: a `uint64` array as is, an `int64` one after
/// checking that no coordinate is negative (then the bits are the same).
pub(crate) enum Coords<'py> {
    Unsigned(PyReadonlyArray2<'py, u64>),
    Signed(PyReadonlyArray2<'py, i64>),
}

impl<'py> Coords<'py> {
    pub(crate) fn extract(coords: &Bound<'py, PyAny>) -> PyResult<Self> {
        if let Ok(a) = coords.extract::<PyReadonlyArray2<'py, u64>>() {
            return Ok(Coords::Unsigned(a));
        }
        coords
            .extract::<PyReadonlyArray2<'py, i64>>()
            .map(Coords::Signed)
            .map_err(|_| PyTypeError::new_err("coordinates must be a 2-D uint64 or int64 array"))
    }

    pub(crate) fn shape(&self) -> [usize; 2] {
        let s = match self {
            Coords::Unsigned(a) => a.shape(),
            Coords::Signed(a) => a.shape(),
        };
        [s.first().copied().unwrap_or(0), s.get(1).copied().unwrap_or(0)]
    }

    /// The flat coordinates; `per_entry` is the length of a run that belongs
    /// to one entry (rows: the rank) or one dimension (columns: nnz), to name
    /// a negative coordinate by entry and dimension.
    pub(crate) fn flat(&self, columns: bool) -> PyResult<&[u64]> {
        let contiguous = || PyValueError::new_err("coordinates must be a C-contiguous array");
        match self {
            Coords::Unsigned(a) => a.as_slice().map_err(|_| contiguous()),
            Coords::Signed(a) => {
                let flat = a.as_slice().map_err(|_| contiguous())?;
                if let Some(at) = flat.iter().position(|&c| c < 0) {
                    let [_, cols] = self.shape();
                    let cols = cols.max(1);
                    let (entry, dim) = if columns { (at % cols, at / cols) } else { (at / cols, at % cols) };
                    return Err(PyValueError::new_err(format!(
                        "entry {entry}: coordinate {} of dimension {dim} is negative",
                        flat.get(at).copied().unwrap_or(0)
                    )));
                }
                Ok(bytemuck::cast_slice(flat))
            }
        }
    }
}

/// Builds a tensor from COO arrays (`csf_build::build`) and encodes it with
/// its statistics section.
#[pyfunction]
#[pyo3(signature = (coords, columns, values, element_type, shape, mode_order, duplicates, drop_zeros, quantize, threads))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn build<'py>(
    py: Python<'py>,
    coords: &Bound<'py, PyAny>,
    columns: bool,
    values: PyReadonlyArray1<'py, u8>,
    element_type: &str,
    shape: Option<Vec<u64>>,
    mode_order: &Bound<'py, PyAny>,
    duplicates: &str,
    drop_zeros: bool,
    quantize: Option<&str>,
    threads: Option<usize>,
) -> PyResult<Built<'py>> {
    let coords = Coords::extract(coords)?;
    let [rows, cols] = coords.shape();
    let flat = coords.flat(columns)?;
    let rank = if columns { rows } else { cols };
    // The builder sees the coordinates flat: their rank is the array's, never
    // re-read from the shape (a (3, 4) array is 3 entries of rank 4).
    if let Some(shape) = shape.as_ref().filter(|s| s.len() != rank) {
        let layout = if columns { "(rank, nnz)" } else { "(nnz, rank)" };
        return Err(PyValueError::new_err(format!(
            "coordinates of shape ({rows}, {cols}) as {layout} have rank {rank}, the shape {shape:?} has rank {}",
            shape.len()
        )));
    }
    let element_type = self::element_type(element_type)?;
    let values = bytes(&values)?;
    let quantize = quantize_scheme(quantize)?;
    let options = Options {
        mode_order: self::mode_order(mode_order)?,
        duplicates: self::duplicates(duplicates)?,
        drop_zeros,
        parallel: threads != Some(1),
        quantize,
    };
    // One slice per dimension, empty ones included (`chunks` of an empty
    // array yields none, which would lose the rank of an empty tensor).
    let columns_of: Vec<&[u64]> = if columns {
        (0..rows).map(|d| flat.get(d * cols..(d + 1) * cols).unwrap_or_default()).collect()
    } else {
        Vec::new()
    };
    let indices = if columns { Indices::Columnar(&columns_of) } else { Indices::RowMajor(flat) };
    let work = || {
        let shape = match shape {
            Some(shape) => shape,
            None => csf_build::shape_of(indices, rank).map_err(Fail::Build)?,
        };
        let coo = Coo { shape: &shape, indices, element_type, values: Cow::Borrowed(values) };
        encode(csf_build::build(&coo, &options).map_err(Fail::Build)?, true)
    };
    let result = py.detach(|| with_threads(threads, work));
    let (bytes, auto, removed) = result?.map_err(|e| e.into_err(py))?;
    Ok((PyArray1::from_vec(py, bytes), auto, removed))
}

/// Why building (or re-ordering) and encoding stopped.
pub(crate) enum Fail {
    Build(csf_build::BuildError),
    /// Only when the file would not fit in memory.
    Encode(hurray_format::EncodeError),
}

impl Fail {
    fn into_err(self, py: Python<'_>) -> PyErr {
        match self {
            Fail::Build(e) => errors::build(py, e),
            Fail::Encode(e) => PyMemoryError::new_err(e.to_string()),
        }
    }
}

/// The container bytes of a built tensor (with statistics when asked), and
/// what `Auto` chose.
/// The container bytes, `Auto`'s choice and the removed count.
pub(crate) type Encoded = (Vec<u8>, Option<(Vec<u32>, u64)>, u64);

pub(crate) fn encode(built: csf_build::Built, statistics: bool) -> Result<Encoded, Fail> {
    let section = if statistics { StatisticsSection::Include } else { StatisticsSection::Omit };
    let bytes = built.to_bytes(section).map_err(Fail::Encode)?;
    Ok((bytes, built.auto.map(|a| (a.mode_order, a.index_bytes)), built.removed))
}

/// A tensor from its arrays (`levels[L] = (pos_L, crd_L)`, the values as
/// little-endian bytes), strictly validated: for arrays made by a library
/// that does not check what it wraps.
#[pyfunction]
pub(crate) fn from_parts<'py>(
    py: Python<'py>,
    element_type: &str,
    shape: Vec<u64>,
    mode_order: Vec<u32>,
    nnz: u64,
    levels: Vec<(PyReadonlyArray1<'py, u64>, PyReadonlyArray1<'py, u64>)>,
    values: PyReadonlyArray1<'py, u8>,
) -> PyResult<Bound<'py, PyArray1<u8>>> {
    let element_type = self::element_type(element_type)?;
    let copy = |a: &PyReadonlyArray1<'py, u64>| a.as_array().to_vec();
    let levels: Vec<OwnedLevel> = levels.iter().map(|(p, c)| OwnedLevel::new(copy(p), copy(c))).collect();
    let values = values.as_array().to_vec();
    let parts =
        OwnedCsf::builder(element_type, shape).mode_order(mode_order).nnz(nnz).levels(levels).values(values);
    let tensor = parts.build().map_err(|e| {
        errors::raise(py, "ValidationError", (e.to_string(), Vec::<u8>::new(), Vec::<u8>::new()))
    })?;
    csf_validate::validate_view(tensor.view()).map_err(|v| errors::invalid(py, &v, None))?;
    let bytes = tensor.to_bytes().map_err(|e| PyValueError::new_err(e.to_string()))?;
    Ok(PyArray1::from_vec(py, bytes))
}

/// The tensor in another mode order (`csf_build::reorder`: values keep their
/// meaning, quantized ones included), with statistics if it had them.
#[pyfunction]
#[pyo3(signature = (raw, mode_order, threads))]
pub(crate) fn reorder<'py>(
    py: Python<'py>,
    raw: PyReadonlyArray1<'py, u8>,
    mode_order: &Bound<'py, PyAny>,
    threads: Option<usize>,
) -> PyResult<Built<'py>> {
    let raw = bytes(&raw)?;
    let view: CsfView<'_> = view(py, raw)?;
    let order = self::mode_order(mode_order)?;
    let statistics =
        hurray_format::Container::decode(raw).map(|c| c.descriptor().statistics.is_some()).unwrap_or(false);
    let options = ReorderOptions { mode_order: order, parallel: threads != Some(1) };
    let work = || encode(csf_build::reorder(&view, &options).map_err(Fail::Build)?, statistics);
    let result = py.detach(|| with_threads(threads, work));
    let (bytes, auto, removed) = result?.map_err(|e| e.into_err(py))?;
    Ok((PyArray1::from_vec(py, bytes), auto, removed))
}
