//! Reading a Hurray file for `inspect`, `get` and `dump`: decode the
//! container, then validate strictly (the default) or permissively.

use std::path::Path;

use csf_core::CsfView;
use hurray_format::Container;

use crate::error::{Error, Result};

/// Decodes `bytes` (the contents of `path`).
pub fn container<'a>(path: &Path, bytes: &'a [u8]) -> Result<Container<'a>> {
    Container::decode(bytes).map_err(|e| Error::data(path, format!("not a readable Hurray file: {e}")))
}

/// Decodes and validates `bytes` (the contents of `path`), giving the view.
pub fn view<'a>(path: &Path, bytes: &'a [u8], permissive: bool) -> Result<CsfView<'a>> {
    let container = container(path, bytes)?;
    if permissive {
        csf_validate::validate_permissive(&container)
            .map_err(|v| Error::data(path, format!("cannot be read even permissively: {v}")))
    } else {
        csf_validate::validate(&container).map(|valid| valid.into_view()).map_err(|v| {
            Error::data(path, format!("invalid CSF tensor: {v} (`hurray validate` lists every violation; --permissive reads it anyway)"))
        })
    }
}
