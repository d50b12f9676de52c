//! `cargo xtask bench kernels`: MTTKRP per mode and CP-ALS iterations of
//! `hurray cpd --timings` against SPLATT's `bench -a csf` and `cpd` on the
//! same files in the same run.
//!
//! Files: the uniform rank-3 tensor over 2000^3 and the power-law one over
//! 5000 x 50000 x 500000 (`gen_tns`, seed 42), and the real tensors of
//! `../shared/data` where that directory exists. Each is converted once with
//! `hurray convert --duplicates sum` (the `.tns` text is what SPLATT reads).

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::bench::{capture, median, Ctx, Splatt};
use crate::{run, Result, ROOT};

/// The rank of every decomposition, as the SPLATT anchor.
const RANK: &str = "16";
/// CP-ALS iterations timed per run (the first is included: every
/// iteration does the same work).
const ITERS: &str = "5";

/// The measurements of one file on one thread count.
struct Row {
    tensor: String,
    threads: usize,
    /// Our MTTKRP seconds per mode (medians over iterations and rounds), one tree.
    ours: Vec<f64>,
    /// SPLATT's, one CSF.
    theirs: Option<Vec<f64>>,
    /// Seconds per CP-ALS iteration: ours with one tree, ours with two,
    /// SPLATT's with one CSF and with two.
    iteration: [f64; 2],
    splatt_iteration: Option<[f64; 2]>,
}

pub(crate) fn kernels(ctx: &Ctx, nnz: usize) -> Result<String> {
    let hurray = ctx.hurray()?;
    let splatt = Splatt::find();
    let mut files: Vec<(String, PathBuf)> = vec![
        (format!("uniform 2000^3, {}", crate::bench::count(nnz)), ctx.uniform_tns(nnz)?),
        (format!("power law 5000x50000x500000, {}", crate::bench::count(nnz)), ctx.powerlaw_tns(nnz)?),
    ];
    files.extend(real_tensors(ctx)?);
    let mut rows = Vec::new();
    for (name, tns) in &files {
        let hurray_file = tns.with_extension("kernels.hurray");
        if !hurray_file.exists() {
            run(Command::new(&hurray).arg("convert").arg(tns).arg("-o").arg(&hurray_file).args([
                "--duplicates",
                "sum",
                "-q",
            ]))?;
        }
        for &threads in &ctx.threads {
            let mut per_mode: Vec<Vec<f64>> = Vec::new();
            let mut iteration = [Vec::new(), Vec::new()];
            for _ in 0..ctx.rounds {
                for (trees, seconds) in iteration.iter_mut().enumerate() {
                    let stats = ours(&hurray, &hurray_file, threads, trees + 1)?;
                    seconds.extend(stats.iterations);
                    if trees == 0 {
                        per_mode.resize(stats.modes.len(), Vec::new());
                        for (all, mode) in per_mode.iter_mut().zip(stats.modes) {
                            all.extend(mode);
                        }
                    }
                }
            }
            let (theirs, splatt_iteration) = match &splatt {
                Some(s) => {
                    let modes = s.mttkrp_rounds(tns, threads, ctx.rounds)?;
                    let one = s.cpd_rounds(tns, threads, ctx.rounds, "one")?;
                    let two = s.cpd_rounds(tns, threads, ctx.rounds, "two")?;
                    (Some(modes), Some([one, two]))
                }
                None => (None, None),
            };
            rows.push(Row {
                tensor: name.clone(),
                threads,
                ours: per_mode.into_iter().map(median).collect(),
                theirs,
                iteration: [median(iteration[0].clone()), median(iteration[1].clone())],
                splatt_iteration,
            });
        }
    }
    Ok(render(&rows, &splatt, ctx.rounds))
}

fn render(rows: &[Row], splatt: &Option<Splatt>, rounds: usize) -> String {
    let ms = |s: f64| format!("{:.1}", s * 1e3);
    let list = |v: &[f64]| v.iter().map(|&s| ms(s)).collect::<Vec<_>>().join(" / ");
    let mut mttkrp = String::from(
        "| tensor | threads | ours, ms per mode | SPLATT, ms per mode | ours / SPLATT per mode | \
         2 threads / 1 |\n|---|---:|---:|---:|---:|---:|\n",
    );
    let mut cpd = String::from(
        "| tensor | threads | ours, 1 tree | SPLATT, 1 CSF | ours / SPLATT | ours, 2 trees | SPLATT, 2 CSFs | \
         ours / SPLATT |\n|---|---:|---:|---:|---:|---:|---:|---:|\n",
    );
    for row in rows {
        let versus = row.theirs.as_ref().map_or_else(
            || "not measured".to_string(),
            |t| row.ours.iter().zip(t).map(|(o, t)| format!("{:.2}", o / t)).collect::<Vec<_>>().join(" / "),
        );
        let scaling = if row.threads > 1 {
            rows.iter()
                .find(|r| r.tensor == row.tensor && r.threads == 1)
                .map(|one| {
                    one.ours
                        .iter()
                        .zip(&row.ours)
                        .map(|(a, b)| format!("{:.2}x", a / b))
                        .collect::<Vec<_>>()
                        .join(" / ")
                })
                .unwrap_or_default()
        } else {
            String::new()
        };
        mttkrp.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} |\n",
            row.tensor,
            row.threads,
            list(&row.ours),
            row.theirs.as_deref().map_or_else(|| "not measured".into(), list),
            versus,
            scaling
        ));
        let peer = |i: usize| row.splatt_iteration.map(|s| s[i]);
        let fraction = |i: usize| match peer(i) {
            Some(t) if t > 0.0 => format!("{:.2}", row.iteration[i] / t),
            _ => "not measured".into(),
        };
        cpd.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} | {} | {} |\n",
            row.tensor,
            row.threads,
            ms(row.iteration[0]),
            peer(0).map_or_else(|| "not measured".into(), ms),
            fraction(0),
            ms(row.iteration[1]),
            peer(1).map_or_else(|| "not measured".into(), ms),
            fraction(1),
        ));
    }
    let peer = match splatt {
        Some(s) => format!(
            "SPLATT: `{} bench FILE -a csf -r {RANK} -i 3 -t T` (its one-CSF MTTKRP per mode) and \
             `{0} cpd FILE -r {RANK} -i {ITERS} --tol 0 --nowrite -v -t T --csf one|two`",
            s.bin.display()
        ),
        None => "SPLATT not found (`$SPLATT` or `splatt` on PATH): its columns are not measured".into(),
    };
    format!(
        "Ours: `hurray --threads T cpd FILE -r {RANK} --iters {ITERS} --tol 0 --timings [--trees 2]` on the \
         file converted with `--duplicates sum` (f64 values and factors); {peer}. Medians over the iterations \
         of {rounds} rounds; lower ratios are better (below 1: faster than SPLATT).\n\n\
         MTTKRP per mode (modes 1 / 2 / 3 ... in SPLATT's numbering), one tree:\n\n{mttkrp}\n\
         One CP-ALS iteration (all modes' MTTKRP, the normal equations, the fit):\n\n{cpd}"
    )
}

/// What one `hurray cpd --timings` run printed.
struct OurStats {
    iterations: Vec<f64>,
    modes: Vec<Vec<f64>>,
}

fn ours(hurray: &Path, file: &Path, threads: usize, trees: usize) -> Result<OurStats> {
    let mut cmd = Command::new(hurray);
    cmd.args(["--threads", &threads.to_string(), "cpd"]).arg(file);
    cmd.args(["-r", RANK, "--iters", ITERS, "--tol", "0", "--timings", "-q", "--trees", &trees.to_string()]);
    let (_, err) = capture(&mut cmd, false)?;
    let mut stats = OurStats { iterations: Vec::new(), modes: Vec::new() };
    // "iteration   1: 0.3360 s, mttkrp per mode 0.1223 0.0986 0.1122 s"
    for line in err.lines().filter(|l| l.starts_with("iteration")) {
        let Some((head, modes)) = line.split_once(", mttkrp per mode ") else { continue };
        let Some(seconds) =
            head.split(": ").nth(1).and_then(|s| s.trim_end_matches(" s").parse::<f64>().ok())
        else {
            continue;
        };
        stats.iterations.push(seconds);
        let modes: Vec<f64> =
            modes.trim_end_matches(" s").split_whitespace().filter_map(|m| m.parse().ok()).collect();
        stats.modes.resize(modes.len(), Vec::new());
        for (all, m) in stats.modes.iter_mut().zip(modes) {
            all.push(m);
        }
    }
    if stats.iterations.is_empty() {
        return Err(format!("`hurray cpd --timings` on {} printed no iteration", file.display()));
    }
    Ok(stats)
}

/// The rank >= 3 tensors of `../shared/data`, decompressed into the bench
/// data directory (SPLATT reads plain text).
fn real_tensors(ctx: &Ctx) -> Result<Vec<(String, PathBuf)>> {
    let shared = Path::new(ROOT).join("../shared/data");
    let Ok(entries) = fs::read_dir(&shared) else { return Ok(Vec::new()) };
    let mut names: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.to_string_lossy().ends_with(".tns.gz") && !p.to_string_lossy().contains("small"))
        .collect();
    names.sort();
    let mut out = Vec::new();
    for gz in names {
        let stem = gz
            .file_name()
            .map(|n| n.to_string_lossy().trim_end_matches(".tns.gz").to_string())
            .unwrap_or_default();
        let plain = ctx.data_dir()?.join(format!("real-{stem}.tns"));
        if !plain.exists() {
            let text = Command::new("gzip").arg("-dc").arg(&gz).output().map_err(|e| format!("gzip: {e}"))?;
            if !text.status.success() {
                return Err(format!("gzip -dc {} failed", gz.display()));
            }
            fs::write(&plain, text.stdout).map_err(|e| format!("{}: {e}", plain.display()))?;
        }
        out.push((format!("real/{stem}"), plain));
    }
    Ok(out)
}
