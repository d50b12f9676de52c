//! `hurray dump FILE [--format tns|json] [-o OUT]`: the non-zeros in
//! iteration (leaf) order.
//!
//! `tns` prints 1-based coordinates then the value, in the shortest form
//! that reads back to the same bits, after two `#` comment lines that give
//! the `convert` flags which rebuild the identical file. `json` prints one
//! object with the tree itself (levels' `pos` and `crd`, in storage order)
//! and the values (for a quantized tensor, the stored codes and then the
//! dequantized values under `"dequantized"`; `tns` prints dequantized values).
//!
//! `--prefix I0,I1,...` prints (as `tns`) only the entries under a prefix of
//! 0-based storage-order coordinates: `csf_core::CsfView::subtree` finds it
//! by binary search and walks it in place. A prefix no entry has prints the
//! header alone; one of `rank` coordinates or more, or outside the shape, is
//! an error about the data asked for (exit 1), as `get` treats an index.
//!
//! Nothing printed is made up. On a file read with `--permissive`, a
//! coordinate is printed as stored, plus one, even when it lies outside the
//! shape (as a 1-based number it may need 65 bits); a leaf without a value
//! stops `tns` with an error naming it, and is `null` in `json`.

use std::io::Write;
use std::path::Path;

use csf_core::{CsfView, LookupError};
use hurray_format::Container;

use crate::cli::{DumpArgs, DumpFormat};
use crate::error::{Error, Result};
use crate::files::{self, Output};
use crate::format::{self, push_u64};
use crate::read;

/// Bytes gathered before each write.
const FLUSH_AT: usize = 1 << 16;

/// Runs `dump`.
pub fn run(args: &DumpArgs) -> Result<()> {
    if args.prefix.is_some() && args.format == DumpFormat::Json {
        return Err(Error::Usage(
            "--prefix selects entries, which --format tns prints; --format json dumps the whole tree".into(),
        ));
    }
    let path = args.file.as_path();
    let input = files::open(path, true)?;
    let container = read::container(path, &input)?;
    let view = read::view(path, &input, args.permissive)?;
    let mut out = Output::create(args.output.as_deref())?;
    // On an error the output is dropped, not committed: no half file.
    match args.format {
        DumpFormat::Tns => tns(args, &container, &view, &mut out)?,
        DumpFormat::Json => json(&view, &mut out).map_err(|e| Error::io(out.path(), e))?,
    }
    out.commit()
}

fn tns(args: &DumpArgs, container: &Container<'_>, view: &CsfView<'_>, out: &mut Output) -> Result<()> {
    let d = container.descriptor();
    let name = args.file.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let mut flags = format!(
        "--shape {} --dtype {} --mode-order {}",
        format::commas(view.shape()),
        view.element_type(),
        format::commas(view.mode_order())
    );
    if d.statistics.is_none() {
        flags.push_str(" --no-statistics");
    }
    let mut head = format!(
        "# hurray dump of {name}: {}, nnz {}, 1-based coordinates then the value\n",
        d.layout,
        view.nnz()
    );
    let prefix = args.prefix.as_ref().map_or(&[][..], |p| &p.0[..]);
    if view.quantization().is_some() {
        head.push_str("# values are dequantized to f32; convert does not rebuild the quantization\n");
    } else if prefix.is_empty() {
        head.push_str(&format!("# rebuild: hurray convert THIS.tns -o {name} {flags}\n"));
    }
    // The whole tensor is the sub-tree of the empty prefix, walked as `for_each` walks it.
    let under = view.subtree(prefix).map_err(|e| prefix_error(&args.file, view, prefix, e))?;
    if !prefix.is_empty() {
        let levels: Vec<String> =
            view.mode_order().iter().zip(prefix).map(|(dim, c)| format!("dimension {dim} = {c}")).collect();
        head.push_str(&format!(
            "# only the entries under the prefix {} (0-based, in storage order: {})\n",
            format::commas(prefix),
            levels.join(", ")
        ));
    }
    out.write_all(head.as_bytes()).map_err(|e| Error::io(out.path(), e))?;
    let Some(under) = under else { return Ok(()) };

    let mut buf = Vec::with_capacity(FLUSH_AT + 1024);
    let mut failed = None;
    under.for_each(|index, leaf| {
        if failed.is_some() {
            return;
        }
        let Some(value) = view.value(leaf, index) else {
            failed = Some(Error::data(
                &args.file,
                format!(
                    "leaf {leaf} (index {}) has no value in the file ({}); dump --format json shows the tree as stored",
                    format::commas(index),
                    crate::get::missing(view)
                ),
            ));
            return;
        };
        for &c in index {
            // Widened: a stored coordinate of 2^64 - 1 (permissive) is 2^64 1-based.
            push_u128(&mut buf, u128::from(c) + 1);
            buf.push(b' ');
        }
        format::push_value(&mut buf, value);
        buf.push(b'\n');
        if buf.len() >= FLUSH_AT {
            if let Err(e) = out.write_all(&buf) {
                failed = Some(Error::io(out.path(), e));
            }
            buf.clear();
        }
    });
    if let Some(e) = failed {
        return Err(e);
    }
    out.write_all(&buf).map_err(|e| Error::io(out.path(), e))
}

/// A prefix that cannot be looked up, in the tool's words: a data error, as
/// `get` reports an index of the wrong rank or outside the shape.
fn prefix_error(path: &Path, view: &CsfView<'_>, prefix: &[u64], e: LookupError) -> Error {
    let what = match e {
        LookupError::PrefixTooLong { got, rank } => format!(
            "{got} coordinates, but a prefix names at most rank - 1 = {} levels (`get` reads one entry)",
            rank.saturating_sub(1)
        ),
        LookupError::OutOfBounds { .. } => {
            let dims = view.mode_order().get(..prefix.len()).unwrap_or(&[]);
            format!("{e} (a prefix is in storage order: dimensions {})", format::commas(dims))
        }
        other => other.to_string(),
    };
    Error::data(path, format!("prefix {}: {what}", format::commas(prefix)))
}

/// Appends `v` in decimal.
fn push_u128(buf: &mut Vec<u8>, v: u128) {
    match u64::try_from(v) {
        Ok(v) => push_u64(buf, v),
        Err(_) => buf.extend_from_slice(v.to_string().as_bytes()),
    }
}

/// Appends `[a, b, ...]`, writing out whenever the buffer fills.
fn list(buf: &mut Vec<u8>, out: &mut Output, items: impl Iterator<Item = u64>) -> std::io::Result<()> {
    buf.push(b'[');
    for (i, v) in items.enumerate() {
        if i > 0 {
            buf.extend_from_slice(b", ");
        }
        push_u64(buf, v);
        if buf.len() >= FLUSH_AT {
            out.write_all(buf)?;
            buf.clear();
        }
    }
    buf.push(b']');
    Ok(())
}

fn json(view: &CsfView<'_>, out: &mut Output) -> std::io::Result<()> {
    let mut buf = Vec::with_capacity(FLUSH_AT + 1024);
    let head = format!("{{\"layout\": \"csf\", \"dtype\": \"{}\", \"shape\": ", view.element_type());
    buf.extend_from_slice(head.as_bytes());
    list(&mut buf, out, view.shape().iter().copied())?;
    buf.extend_from_slice(b", \"mode_order\": ");
    list(&mut buf, out, view.mode_order().iter().map(|&d| u64::from(d)))?;
    buf.extend_from_slice(b", \"nnz\": ");
    push_u64(&mut buf, view.nnz());
    buf.extend_from_slice(b", \"levels\": [");
    for (l, level) in view.levels().iter().enumerate() {
        buf.extend_from_slice(if l == 0 { b"{\"pos\": " } else { b", {\"pos\": " });
        list(&mut buf, out, level.pos.iter())?;
        buf.extend_from_slice(b", \"crd\": ");
        list(&mut buf, out, level.crd.iter())?;
        buf.push(b'}');
    }
    buf.extend_from_slice(b"], \"values\": [");
    let values = view.values();
    // A valid tensor stores exactly nnz values; for a permissively read one
    // print what the buffer holds.
    let exact = view.element_type().values_len(view.nnz()) == Some(values.as_bytes().len() as u64);
    let count = if exact { view.nnz() as usize } else { values.capacity() };
    for leaf in 0..count {
        if leaf > 0 {
            buf.extend_from_slice(b", ");
        }
        match values.get_raw(leaf) {
            Some(v) => format::push_value_json(&mut buf, v),
            None => buf.extend_from_slice(b"null"),
        }
        if buf.len() >= FLUSH_AT {
            out.write_all(&buf)?;
            buf.clear();
        }
    }
    buf.push(b']');
    if view.quantization().is_some() {
        // The real values, after the stored codes; `null` where a leaf has
        // no value (permissive reading), never a made-up number.
        buf.extend_from_slice(b", \"dequantized\": [");
        let mut first = true;
        let mut failed = None;
        view.for_each(|index, leaf| {
            if failed.is_some() {
                return;
            }
            if !first {
                buf.extend_from_slice(b", ");
            }
            first = false;
            match view.value(leaf, index) {
                Some(v) => format::push_value_json(&mut buf, v),
                None => buf.extend_from_slice(b"null"),
            }
            if buf.len() >= FLUSH_AT {
                if let Err(e) = out.write_all(&buf) {
                    failed = Some(e);
                }
                buf.clear();
            }
        });
        if let Some(e) = failed {
            return Err(e);
        }
        buf.push(b']');
    }
    buf.extend_from_slice(b"}\n");
    out.write_all(&buf)
}
