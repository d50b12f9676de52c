//! Reading a Hurray file for `inspect`, `get` and `dump`: decode the
//! container, then validate strictly (the default) or permissively. Also the
//! words of decode errors and violation offsets that `validate` shares.

use std::path::Path;

use csf_core::CsfView;
use csf_validate::Violation;
use hurray_format::{Container, DecodeError};

use crate::error::{Error, Result};
use crate::format::grouped;

/// Decodes `bytes` (the contents of `path`).
pub fn container<'a>(path: &Path, bytes: &'a [u8]) -> Result<Container<'a>> {
    Container::decode(bytes).map_err(|e| match e {
        // A Hurray file, only cut short: say that, not that it is unreadable.
        DecodeError::TruncatedData { .. } => Error::data(path, decode_message(&e)),
        _ => Error::data(path, format!("not a readable Hurray file: {e}")),
    })
}

/// A decode error in the tool's words: the library's message, except that a
/// truncated file's lengths get thousands separators and the shortfall, since
/// people compare them with `ls -l` or a download's advertised size.
pub fn decode_message(e: &DecodeError) -> String {
    match *e {
        DecodeError::TruncatedData { len, needed } => {
            let missing = needed.saturating_sub(len);
            format!(
                "truncated: the file is {} bytes, but its descriptor needs {} ({} byte{} missing)",
                grouped(len),
                grouped(needed),
                grouped(missing),
                if missing == 1 { "" } else { "s" }
            )
        }
        _ => e.to_string(),
    }
}

/// `byte N: ` before a message about byte `N`.
pub fn at(offset: Option<u64>) -> String {
    offset.map_or_else(String::new, |offset| format!("byte {offset}: "))
}

/// Decodes and validates `bytes` (the contents of `path`), giving the view.
pub fn view<'a>(path: &Path, bytes: &'a [u8], permissive: bool) -> Result<CsfView<'a>> {
    let container = container(path, bytes)?;
    // A violation about an element of a buffer says which byte of the file.
    let at = |v: &Violation| self::at(v.offset(&container));
    if permissive {
        csf_validate::validate_permissive(&container)
            .map_err(|v| Error::data(path, format!("cannot be read even permissively: {}{v}", at(&v))))
    } else {
        csf_validate::validate(&container).map(|valid| valid.into_view()).map_err(|v| {
            Error::data(path, format!("invalid CSF tensor: {}{v} (`hurray validate` lists every violation; --permissive reads it anyway)", at(&v)))
        })
    }
}
