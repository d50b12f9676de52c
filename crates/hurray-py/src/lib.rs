//! `hurray_csf._native`: the Rust half of the `hurray_csf` Python package.
//!
//! A thin binding: every function converts its arguments, calls the Rust
//! crates (`csf-build` to build and re-order, `csf-validate` to validate,
//! `csf-core` to look up and iterate, `csf-kernels` for MTTKRP, TTV, TTM,
//! unfolding, norms and CP-ALS), and converts the result or the error.
//! It holds no algorithm of its own.
//!
//! A tensor crosses the boundary as its container bytes: a read-only numpy
//! `uint8` array over a memory map, a `bytes` object, or the buffer a build
//! encoded into. Each call decodes the framing and takes the view again
//! (`O(rank)`: the descriptor and the buffer table, never the arrays), so no
//! Rust object borrows Python memory between calls, and the Python side keeps
//! the memory alive simply by holding the array. The heavy work runs with the
//! GIL released.

use pyo3::prelude::*;

mod build;
mod cluster;
mod compute;
mod errors;
mod kernels;
mod read;
mod select;
mod values;

/// The module.
#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_function(wrap_pyfunction!(build::build, m)?)?;
    m.add_function(wrap_pyfunction!(build::from_parts, m)?)?;
    m.add_function(wrap_pyfunction!(build::reorder, m)?)?;
    m.add_function(wrap_pyfunction!(read::open, m)?)?;
    m.add_function(wrap_pyfunction!(read::describe, m)?)?;
    m.add_function(wrap_pyfunction!(read::report, m)?)?;
    m.add_function(wrap_pyfunction!(read::get, m)?)?;
    m.add_function(wrap_pyfunction!(read::find, m)?)?;
    m.add_function(wrap_pyfunction!(read::lookup, m)?)?;
    m.add_function(wrap_pyfunction!(read::to_coo, m)?)?;
    m.add_function(wrap_pyfunction!(read::subtree, m)?)?;
    m.add_function(wrap_pyfunction!(read::to_dense, m)?)?;
    compute::register(m)?;
    select::register(m)?;
    kernels::register(m)?;
    cluster::register(m)?;
    Ok(())
}
