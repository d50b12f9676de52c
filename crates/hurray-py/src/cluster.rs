//! A build spread over many processes (`hurray_csf.dask`, `hurray_csf.concat`):
//! csf-build's key ranges, its build of a piece at its input positions, and
//! its join of part files.

use std::borrow::Cow;
use std::path::PathBuf;

use csf_build::{Coo, ExternalError, Indices, KeyRanges, ModeOrderPolicy, Options, StatisticsSection};
use numpy::{PyArray1, PyArray2, PyReadonlyArray1, PyReadonlyArray2, PyUntypedArrayMethods};
use pyo3::exceptions::{PyMemoryError, PyOSError, PyValueError};
use pyo3::prelude::*;

use crate::build::{duplicates, element_type, quantize_scheme, with_threads, Coords};
use crate::errors;
use crate::read::bytes;

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(key_ranges, m)?)?;
    m.add_function(wrap_pyfunction!(assign_ranges, m)?)?;
    m.add_function(wrap_pyfunction!(build_part, m)?)?;
    m.add_function(wrap_pyfunction!(join_files, m)?)?;
    Ok(())
}

/// The bounds of at most `ranges` key ranges cut from a sample of entries
/// (`KeyRanges::from_sample`), as a `(ranges - 1, rank)` uint64 array.
#[pyfunction]
fn key_ranges<'py>(
    py: Python<'py>,
    sample: &Bound<'py, PyAny>,
    mode_order: Vec<u32>,
    ranges: usize,
) -> PyResult<Bound<'py, PyArray2<u64>>> {
    let coords = Coords::extract(sample)?;
    let [_, rank] = coords.shape();
    let flat = coords.flat(false)?;
    let cut = py
        .detach(|| KeyRanges::from_sample(Indices::RowMajor(flat), rank, &mode_order, ranges))
        .map_err(|e| errors::build(py, e))?;
    let rows: Vec<Vec<u64>> = cut.bounds().to_vec();
    if rows.is_empty() {
        return Ok(PyArray2::zeros(py, [0, rank], false));
    }
    PyArray2::from_vec2(py, &rows).map_err(|e| PyValueError::new_err(e.to_string()))
}

/// The key range of every entry of `coords` (`KeyRanges::assign`), for
/// ranges cut at `bounds` (a `(n, rank)` uint64 array).
#[pyfunction]
fn assign_ranges<'py>(
    py: Python<'py>,
    coords: &Bound<'py, PyAny>,
    bounds: PyReadonlyArray2<'py, u64>,
    mode_order: Vec<u32>,
) -> PyResult<Bound<'py, PyArray1<u32>>> {
    let coords = Coords::extract(coords)?;
    let flat = coords.flat(false)?;
    let rank = mode_order.len();
    let contiguous = || PyValueError::new_err("bounds must be a C-contiguous array");
    let bound_words = bounds.as_slice().map_err(|_| contiguous())?;
    if bounds.shape().get(1).is_some_and(|&r| r != rank) && !bound_words.is_empty() {
        return Err(PyValueError::new_err(format!(
            "bounds have {:?} columns, the rank is {rank}",
            bounds.shape()
        )));
    }
    let rows = bound_words.chunks(rank.max(1)).map(<[u64]>::to_vec).collect();
    let ranges = py.detach(|| {
        let cut = KeyRanges::from_bounds(&mode_order, rows)?;
        cut.assign(Indices::RowMajor(flat))
    });
    Ok(PyArray1::from_vec(py, ranges.map_err(|e| errors::build(py, e))?))
}

/// Builds one piece of an input (`csf_build::build_at`): the entries as if
/// taken in the order of `positions`, errors naming positions; the part's
/// container bytes, without a statistics section (the join makes the
/// whole's).
#[pyfunction]
#[pyo3(signature = (coords, values, element_type, positions, shape, mode_order, duplicates, drop_zeros, threads))]
#[allow(clippy::too_many_arguments)]
fn build_part<'py>(
    py: Python<'py>,
    coords: &Bound<'py, PyAny>,
    values: PyReadonlyArray1<'py, u8>,
    element_type: &str,
    positions: PyReadonlyArray1<'py, u64>,
    shape: Vec<u64>,
    mode_order: Vec<u32>,
    duplicates: &str,
    drop_zeros: bool,
    threads: Option<usize>,
) -> PyResult<Bound<'py, PyArray1<u8>>> {
    let coords = Coords::extract(coords)?;
    let flat = coords.flat(false)?;
    let positions =
        positions.as_slice().map_err(|_| PyValueError::new_err("positions must be a C-contiguous array"))?;
    let element_type = self::element_type(element_type)?;
    let values = bytes(&values)?;
    let options = Options {
        mode_order: ModeOrderPolicy::Explicit(mode_order),
        duplicates: self::duplicates(duplicates)?,
        drop_zeros,
        parallel: threads != Some(1),
        quantize: None,
    };
    let work = || {
        let coo = Coo {
            shape: &shape,
            indices: Indices::RowMajor(flat),
            element_type,
            values: Cow::Borrowed(values),
        };
        csf_build::build_at(&coo, positions, &options).map(|built| built.to_bytes(StatisticsSection::Omit))
    };
    match py.detach(|| with_threads(threads, work))? {
        Ok(Ok(bytes)) => Ok(PyArray1::from_vec(py, bytes)),
        Ok(Err(e)) => Err(PyMemoryError::new_err(e.to_string())),
        Err(e) => Err(errors::build(py, e)),
    }
}

/// Joins the part files at `paths` into the file `out` (`csf_build::join_files`),
/// quantized when asked, its spill files under `temp_dir`: `(parts, nnz,
/// bytes written)`. `out` is written in place: the caller gives a
/// temporary path and renames it.
#[pyfunction]
#[pyo3(signature = (paths, out, quantize, statistics, temp_dir))]
fn join_files(
    py: Python<'_>,
    paths: Vec<PathBuf>,
    out: PathBuf,
    quantize: Option<&str>,
    statistics: bool,
    temp_dir: PathBuf,
) -> PyResult<(u64, u64, u64)> {
    let quantize = quantize_scheme(quantize)?;
    let section = if statistics { StatisticsSection::Include } else { StatisticsSection::Omit };
    let result = py.detach(|| {
        let file = std::fs::File::create(&out).map_err(|e| ExternalError::Io {
            op: "create",
            path: out.clone(),
            source: e,
        })?;
        let mut writer = std::io::BufWriter::with_capacity(1 << 20, file);
        let report = csf_build::join_files(&paths, &mut writer, quantize, section, &temp_dir)?;
        let file = writer.into_inner().map_err(|e| ExternalError::Io {
            op: "write",
            path: out.clone(),
            source: e.into_error(),
        })?;
        file.sync_all().map_err(|e| ExternalError::Io { op: "write", path: out.clone(), source: e })?;
        Ok(report)
    });
    match result {
        Ok(report) => Ok((report.parts, report.nnz, report.bytes_written)),
        Err(e) => Err(external(py, e)),
    }
}

/// A join's error: a bad part is a `FormatError` naming its file, a build
/// error (quantization) the builder's, file errors `OSError`.
fn external(py: Python<'_>, e: ExternalError) -> PyErr {
    match e {
        ExternalError::Build(e) => errors::build(py, e),
        ExternalError::Io { op, path, source } => {
            PyOSError::new_err((source.raw_os_error().unwrap_or(0), format!("cannot {op}: {source}"), path))
        }
        other => errors::raise(py, "FormatError", (other.to_string(), None::<u64>)),
    }
}
