//! `hurray get FILE I0,I1,... [...]`: the value at each 0-based logical index.

use std::io::Write;
use std::path::Path;

use csf_core::{CsfView, LookupError, Value};

use crate::cli::GetArgs;
use crate::error::{Error, Result, STDOUT};
use crate::files;
use crate::format;
use crate::read;

/// Runs `get`. A quantized tensor's values are printed dequantized (`f32`),
/// as the library's `CsfView::value` gives them.
/// An index of the wrong rank or outside the shape is an error
/// about the data asked for (exit 1), like an unreadable file; an index that
/// is not a list of integers is a usage error, caught by clap (exit 2).
pub fn run(args: &GetArgs) -> Result<()> {
    let path = args.file.as_path();
    // A lookup touches a few pages: map lazily.
    let input = files::open(path, false)?;
    let view = read::view(path, &input, args.permissive)?;
    let zero = if view.quantization().is_some() { Value::F32(0.0) } else { Value::zero(view.element_type()) };
    let mut out = Vec::new();
    for index in &args.indices {
        let shown = format::commas(&index.0);
        let leaf = view.find(&index.0).map_err(|e| {
            let what = match e {
                LookupError::WrongRank { got, rank } => {
                    format!("index has {got} coordinates, the tensor has rank {rank}")
                }
                other => other.to_string(),
            };
            Error::data(path, format!("index {shown}: {what}"))
        })?;
        let value = match leaf {
            None => zero,
            // Only a permissively read file can store a leaf without a
            // value: say so rather than print a number that is not in it.
            Some(leaf) => view.value(leaf, &index.0).ok_or_else(|| {
                Error::data(
                    path,
                    format!("index {shown}: leaf {leaf} has no value in the file ({})", missing(&view)),
                )
            })?,
        };
        format::push_value(&mut out, value);
        out.push(b'\n');
    }
    std::io::stdout().lock().write_all(&out).map_err(|e| Error::io(Path::new(STDOUT), e))
}

/// Why a stored leaf has no value: a short values buffer, or missing
/// quantization parameters.
pub(crate) fn missing(view: &CsfView<'_>) -> String {
    let values = view.values();
    if view.quantization().is_some() {
        format!(
            "the values buffer holds {} elements, or its quantization group has no parameters",
            values.capacity()
        )
    } else {
        format!("the values buffer holds {} elements", values.capacity())
    }
}
