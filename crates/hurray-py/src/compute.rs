//! `from_dense`, `equals` and `sum`: calls into csf-build's `dense`, `compare` and `reduce`.

use pyo3::prelude::*;

/// Adds this module's functions to `_native`.
pub(crate) fn register(_m: &Bound<'_, PyModule>) -> PyResult<()> {
    Ok(())
}
