//! `hurray inspect FILE [--json]`: what the file holds and what it costs.

use std::io::Write;

use csf_core::CsfView;
use hurray_format::{csf, Container};
use serde_json::json;

use crate::cli::InspectArgs;
use crate::error::{Error, Result, STDOUT};
use crate::files;
use crate::read;

/// One tree level's figures.
struct LevelInfo {
    dim: Option<u32>,
    extent: Option<u64>,
    nodes: u64,
    pos_bytes: u64,
    crd_bytes: u64,
}

/// Runs `inspect`.
pub fn run(args: &InspectArgs) -> Result<()> {
    let path = args.file.as_path();
    let input = files::open(path, false)?;
    let container = read::container(path, &input)?;
    let view = read::view(path, &input, args.permissive)?;
    let text = if args.json { json(args, &container, &view) } else { text(args, &container, &view) };
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes()).map_err(|e| Error::io(std::path::Path::new(STDOUT), e))
}

fn levels(container: &Container<'_>, view: &CsfView<'_>) -> Vec<LevelInfo> {
    let len = |index: usize| container.buffer(index).map_or(0, |b| b.len() as u64);
    (0..view.rank())
        .map(|level| LevelInfo {
            dim: view.mode_order().get(level).copied(),
            extent: view.level_extent(level),
            nodes: view.node_count(level) as u64,
            pos_bytes: len(csf::pos_buffer(level)),
            crd_bytes: len(csf::crd_buffer(level)),
        })
        .collect()
}

/// Sizes shared by both outputs.
struct Sizes {
    file: u64,
    values: u64,
    index: u64,
    other: u64,
    coo: u64,
    total_elements: Option<u128>,
    density: f64,
}

fn sizes(container: &Container<'_>, view: &CsfView<'_>, levels: &[LevelInfo]) -> Sizes {
    let values = container.buffer(csf::VALUES_BUFFER).map_or(0, |b| b.len() as u64);
    let index: u64 = levels.iter().map(|l| l.pos_bytes + l.crd_bytes).sum();
    let layout_buffers = csf::buffer_count(view.rank());
    let other: u64 = (layout_buffers..container.buffer_count())
        .filter_map(|i| container.buffer(i))
        .map(|b| b.len() as u64)
        .sum();
    // The same tensor as COO: a u64 coordinate per dimension per non-zero, plus the values.
    let nnz = view.nnz();
    let coo = nnz.saturating_mul(view.rank() as u64 * 8).saturating_add(values);
    let total_elements = view.shape().iter().try_fold(1u128, |acc, &d| acc.checked_mul(u128::from(d)));
    let total_f64: f64 = view.shape().iter().map(|&d| d as f64).product();
    let density = if total_f64 > 0.0 { nnz as f64 / total_f64 } else { 0.0 };
    Sizes { file: container.as_bytes().len() as u64, values, index, other, coo, total_elements, density }
}

fn text(args: &InspectArgs, container: &Container<'_>, view: &CsfView<'_>) -> String {
    let d = container.descriptor();
    let levels = levels(container, view);
    let s = sizes(container, view, &levels);
    let mut o = String::new();
    let mut line = |k: &str, v: String| o.push_str(&format!("{k:<12}{v}\n"));
    line("file", format!("{} ({} bytes)", args.file.display(), s.file));
    line("layout", d.layout.to_string());
    line("dtype", d.element_type.to_string());
    line("shape", format!("[{}]", join(view.shape())));
    line("mode_order", format!("[{}]", join(view.mode_order())));
    line("nnz", view.nnz().to_string());
    let total = s.total_elements.map_or_else(|| "more than 2^128".to_string(), |t| t.to_string());
    let density = if s.density >= 1e-4 { format!("{:.6}", s.density) } else { format!("{:.3e}", s.density) };
    line("density", format!("{density} ({} of {total} elements; sparsity {})", view.nnz(), 1.0 - s.density));
    line(
        "statistics",
        match d.statistics {
            Some(st) => format!(
                "nnz {}, sparsity_ratio {}, min {}, max {}",
                st.nnz,
                st.sparsity_ratio,
                st.min.map_or("-".into(), |v| v.to_string()),
                st.max.map_or("-".into(), |v| v.to_string())
            ),
            None => "none".into(),
        },
    );
    if let Some(q) = d.quantization {
        line(
            "quantized",
            format!("{:?} (scales {}), {} bytes of parameters", q.scheme, q.scale_type, s.other),
        );
    }
    line(
        "validation",
        if args.permissive { "permissive (not checked strictly)".into() } else { "strict: valid".into() },
    );
    o.push_str("levels\n");
    o.push_str(&format!(
        "  {:>5}  {:>4}  {:>12}  {:>12}  {:>14}  {:>14}\n",
        "level", "dim", "extent", "nodes", "pos bytes", "crd bytes"
    ));
    for (l, info) in levels.iter().enumerate() {
        o.push_str(&format!(
            "  {l:>5}  {:>4}  {:>12}  {:>12}  {:>14}  {:>14}\n",
            info.dim.map_or("?".into(), |d| d.to_string()),
            info.extent.map_or("?".into(), |e| e.to_string()),
            info.nodes,
            info.pos_bytes,
            info.crd_bytes
        ));
    }
    let mut line = |k: &str, v: String| o.push_str(&format!("{k:<12}{v}\n"));
    line("values", format!("{} bytes", s.values));
    line("pos + crd", format!("{} bytes", s.index));
    line(
        "vs COO",
        format!(
            "this file is {} bytes; the same tensor as COO (u64 coordinates + values) is {} bytes: {:.3}x",
            s.file,
            s.coo,
            ratio(s.file, s.coo)
        ),
    );
    o
}

fn json(args: &InspectArgs, container: &Container<'_>, view: &CsfView<'_>) -> String {
    let d = container.descriptor();
    let levels = levels(container, view);
    let s = sizes(container, view, &levels);
    let value = json!({
        "file": args.file.display().to_string(),
        "file_bytes": s.file,
        "layout": "csf",
        "dtype": d.element_type.name(),
        "shape": view.shape(),
        "mode_order": view.mode_order(),
        "nnz": view.nnz(),
        "total_elements": s.total_elements.and_then(|t| u64::try_from(t).ok()),
        "density": s.density,
        "sparsity": 1.0 - s.density,
        "levels": levels.iter().enumerate().map(|(l, info)| json!({
            "level": l,
            "dim": info.dim,
            "extent": info.extent,
            "nodes": info.nodes,
            "pos_bytes": info.pos_bytes,
            "crd_bytes": info.crd_bytes,
        })).collect::<Vec<_>>(),
        "values_bytes": s.values,
        "index_bytes": s.index,
        "quantization_bytes": s.other,
        "statistics": d.statistics.map(|st| json!({
            "nnz": st.nnz,
            "sparsity_ratio": st.sparsity_ratio,
            "min": st.min,
            "max": st.max,
        })),
        "quantization": d.quantization.map(|q| json!({
            "scheme": format!("{:?}", q.scheme),
            "axis": q.axis,
            "block_size": q.block_size,
            "scale_type": q.scale_type.name(),
            "zero_point_type": q.zero_point_type.map(|t| t.name()),
        })),
        "coo_bytes": s.coo,
        "size_vs_coo": ratio(s.file, s.coo),
        "validation": if args.permissive { "permissive" } else { "strict" },
    });
    format!("{value}\n")
}

fn ratio(a: u64, b: u64) -> f64 {
    if b == 0 {
        0.0
    } else {
        a as f64 / b as f64
    }
}

fn join<T: std::fmt::Display>(items: &[T]) -> String {
    items.iter().map(|x| x.to_string()).collect::<Vec<_>>().join(", ")
}
