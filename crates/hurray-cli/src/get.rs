//! `hurray get FILE I0,I1,... [...]`: the value at each 0-based logical index.

use std::io::Write;
use std::path::Path;

use csf_core::{CsfView, LookupError, Value};

use crate::cli::GetArgs;
use crate::error::{Error, Result, STDOUT};
use crate::files;
use crate::format;
use crate::read;

/// Runs `get`. A quantized tensor's values are printed dequantized (`f32`).
/// An index of the wrong rank or outside the shape is an error
/// about the data asked for (exit 1), like an unreadable file; an index that
/// is not a list of integers is a usage error, caught by clap (exit 2).
pub fn run(args: &GetArgs) -> Result<()> {
    let path = args.file.as_path();
    // A lookup touches a few pages: map lazily.
    let input = files::open(path, false)?;
    let view = read::view(path, &input, args.permissive)?;
    let zero = Value::zero(view.element_type());
    let mut out = Vec::new();
    for index in &args.indices {
        let value = lookup(&view, &index.0).map_err(|e| {
            let what = match e {
                LookupError::WrongRank { got, rank } => {
                    format!("index has {got} coordinates, the tensor has rank {rank}")
                }
                other => other.to_string(),
            };
            Error::data(path, format!("index {}: {what}", format::commas(&index.0)))
        })?;
        format::push_value(&mut out, value.unwrap_or(zero));
        out.push(b'\n');
    }
    std::io::stdout().lock().write_all(&out).map_err(|e| Error::io(Path::new(STDOUT), e))
}

/// The stored value at `index` (`None` for an implicit zero); for a
/// quantized tensor, the dequantized value as `f32`.
fn lookup(view: &CsfView<'_>, index: &[u64]) -> Result<Option<Value>, LookupError> {
    if view.quantization().is_some() {
        return view.get_dequantized(index).map(|v| Some(Value::F32(v)));
    }
    view.get(index)
}
