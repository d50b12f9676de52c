//! Selections (`t[...]`): csf-build's `select`.

use pyo3::prelude::*;

/// Adds this module's functions to `_native`.
pub(crate) fn register(_m: &Bound<'_, PyModule>) -> PyResult<()> {
    Ok(())
}
