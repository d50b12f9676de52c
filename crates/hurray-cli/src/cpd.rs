//! `hurray cpd FILE --rank R`: CP-ALS (csf-kernels) on a Hurray file, the
//! fit per iteration on stdout, the factors as `.npy` files.

use std::io::Write;
use std::path::Path;
use std::time::Instant;

use npyz::WriterBuilder;

use csf_kernels::{cp_als_with, CpInit, CpOptions, CpResult, IterationStats, Matrix, Scalar, Tensor};

use crate::cli::CpdArgs;
use crate::error::{Error, Result, STDOUT};
use crate::files::{self, Output};
use crate::read;

/// Runs `cpd`.
pub fn run(args: &CpdArgs, quiet: bool) -> Result<()> {
    let path = args.file.as_path();
    // The output directory first: a decomposition is not run to be lost.
    if let Some(dir) = &args.output {
        std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
    }
    let input = files::open(path, true)?;
    let view = read::view(path, &input, args.permissive)?;
    if args.precision == "f32" {
        decompose::<f32>(args, path, &view, quiet)
    } else {
        decompose::<f64>(args, path, &view, quiet)
    }
}

fn decompose<T: Scalar + npyz::AutoSerialize>(
    args: &CpdArgs,
    path: &Path,
    view: &csf_core::CsfView<'_>,
    quiet: bool,
) -> Result<()> {
    let kernel_error = |e: csf_kernels::KernelError| Error::data(path, e);
    let clock = Instant::now();
    let mut tensor = Tensor::<T>::new(view).map_err(kernel_error)?;
    if args.trees == 2 {
        // The second tree puts the first one's leaf mode at its root.
        let leaf_mode = view.mode_order().last().map_or(0, |&m| m as usize);
        tensor = tensor.with_root_tree(leaf_mode).map_err(kernel_error)?;
    }
    if args.timings {
        eprintln!(
            "prepare: {:.3} s ({} tree{})",
            clock.elapsed().as_secs_f64(),
            args.trees,
            plural(args.trees.into())
        );
    }
    let options = CpOptions {
        max_iters: args.iters,
        tol: args.tol,
        init: CpInit::Random { seed: args.seed },
        ..CpOptions::new(args.rank as usize)
    };
    let mut stdout = std::io::stdout().lock();
    let mut printed = Ok(());
    let result = cp_als_with(&tensor, &options, |s: &IterationStats| {
        if printed.is_ok() {
            printed = writeln!(
                stdout,
                "iteration {:>3}  fit {:.6}  change {:.3e}",
                s.iteration, s.fit, s.fit_change
            );
        }
        if args.timings {
            let modes: Vec<String> = s.mttkrp_seconds.iter().map(|t| format!("{t:.4}")).collect();
            eprintln!(
                "iteration {:>3}: {:.4} s, mttkrp per mode {} s",
                s.iteration,
                s.seconds,
                modes.join(" ")
            );
        }
    })
    .map_err(kernel_error)?;
    printed.map_err(|e| Error::io(Path::new(STDOUT), e))?;
    if !quiet {
        let how = if result.converged { "converged" } else { "stopped at --iters" };
        eprintln!(
            "{how} after {} iteration{}, fit {:.6}",
            result.iterations.len(),
            plural(result.iterations.len()),
            result.fit()
        );
    }
    if let Some(dir) = &args.output {
        write_npy(dir, &result)?;
        if !quiet {
            eprintln!("wrote weights.npy and {} factor files to {}", result.factors.len(), dir.display());
        }
    }
    Ok(())
}

fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

/// Writes every file to a temporary name, then renames them all: an error
/// leaves no file half written.
fn write_npy<T: Scalar + npyz::AutoSerialize>(dir: &Path, result: &CpResult<T>) -> Result<()> {
    let mut outputs = Vec::new();
    let weights = Matrix::from_rows(1, result.weights.len(), result.weights.clone())
        .map_err(|e| Error::data(dir, e))?;
    let files = std::iter::once((dir.join("weights.npy"), &weights, true)).chain(
        result.factors.iter().enumerate().map(|(n, f)| (dir.join(format!("factor_{n}.npy")), f, false)),
    );
    for (path, matrix, vector) in files {
        let mut out = Output::create(Some(&path))?;
        let shape: Vec<u64> = if vector {
            vec![matrix.cols() as u64]
        } else {
            vec![matrix.rows() as u64, matrix.cols() as u64]
        };
        write_array(&mut out, &path, &shape, matrix.as_slice())?;
        outputs.push(out);
    }
    outputs.into_iter().try_for_each(Output::commit)
}

fn write_array<T: npyz::AutoSerialize + Copy>(
    out: &mut Output,
    path: &Path,
    shape: &[u64],
    data: &[T],
) -> Result<()> {
    let io = |e: std::io::Error| Error::io(path, e);
    let mut writer =
        npyz::WriteOptions::<T>::new().default_dtype().shape(shape).writer(out).begin_nd().map_err(io)?;
    writer.extend(data.iter().copied()).map_err(io)?;
    writer.finish().map_err(io)
}
