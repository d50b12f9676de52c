//! `cargo xtask bench`: the reference tables of docs/benchmarks.md measured
//! again on this host and printed as Markdown on stdout (the programs' own
//! output goes to stderr as they run).
//!
//! Our figures come from the project's own bench programs: csf-build's
//! custom-harness bench and its `auto_cost` example, csf-core's and
//! csf-validate's criterion benches, `hurray convert --timings` on files of
//! hurray-cli's `gen_tns` example, and the Python package's scripts in
//! `crates/hurray-py/bench/`. Peers are measured only where the user has them:
//! SPLATT when a `splatt` binary is on `PATH` or named by `$SPLATT` (a binary
//! or the directory holding `splatt` or `bin/splatt`), pyarrow and pydata
//! sparse when they import in the venv `target/python-venv` that
//! `cargo xtask python` makes. Nothing is fetched or installed; a peer that is
//! missing is "not measured" in the table.
//!
//! Generated `.tns` files are kept in `<target>/bench-data/` and reused.

use std::collections::BTreeMap;
use std::env;
use std::fs;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::thread;
use std::time::{SystemTime, UNIX_EPOCH};

use crate::{cargo_cmd, run, show, Result, ROOT};

/// One section of docs/benchmarks.md that this command regenerates.
struct Section {
    name: &'static str,
    /// The section of docs/benchmarks.md the tables belong to.
    title: &'static str,
    about: &'static str,
    /// Non-zeros when `--nnz` is not given.
    default_nnz: usize,
    run: fn(&Ctx, usize) -> Result<String>,
}

const SECTIONS: &[Section] = &[
    Section {
        name: "parse",
        title: "Parse: `.tns` reading",
        about: "`hurray convert --timings` on a uniform rank-3 .tns file: the parse phase, the whole \
                command and its peak RSS, against SPLATT's reader",
        default_nnz: 10_000_000,
        run: parse,
    },
    Section {
        name: "build",
        title: "Build: COO to CSF in memory",
        about: "csf-build's bench (1 and 2 threads, the naive sort_unstable builder, peak memory) and the \
                build phase of `hurray convert`, against SPLATT's CSF allocation",
        default_nnz: 10_000_000,
        run: build,
    },
    Section {
        name: "auto",
        title: "Auto at the cost of a build",
        about: "ModeOrderPolicy::Auto against the identity build (csf-build's auto_cost example, and \
                `hurray convert --mode-order auto`)",
        default_nnz: 10_000_000,
        run: auto,
    },
    Section {
        name: "external",
        title: "External build: within a memory budget",
        about: "`hurray convert --memory` against the in-memory convert of the same file",
        default_nnz: 20_000_000,
        run: external,
    },
    Section {
        name: "lookup",
        title: "Lookup",
        about: "csf-core's criterion bench: find and find_many of present and absent indices",
        default_nnz: 10_000_000,
        run: lookup,
    },
    Section {
        name: "iterate",
        title: "Iteration",
        about: "csf-core's criterion bench: for_each, the cursor and sub-tree walks against a COO loop",
        default_nnz: 10_000_000,
        run: iterate,
    },
    Section {
        name: "validate",
        title: "Validation",
        about: "csf-validate's bench: strict validation throughput, sequential and with `parallel`",
        default_nnz: 10_000_000,
        run: validate,
    },
    Section {
        name: "python",
        title: "Python package",
        about: "crates/hurray-py/bench/*.py in target/python-venv: from_coo, load, lookup, to_pyarrow, \
                from_dense and indexing against pyarrow and pydata sparse",
        default_nnz: 10_000_000,
        run: python,
    },
    Section {
        name: "kernels",
        title: "Kernels: MTTKRP and CP-ALS",
        about: "`hurray cpd --timings` (MTTKRP per mode, CP-ALS iterations with one and two trees) on the \
                uniform and power-law tensors and the real ones, against SPLATT's `bench -a csf` and `cpd`",
        default_nnz: 10_000_000,
        run: crate::bench_kernels::kernels,
    },
];

const USAGE: &str = "usage: cargo xtask bench SECTION... [--nnz N] [--rounds R] [--threads 1,2] \
                     [--filter TEXT] [--memory SIZE]\n       cargo xtask bench criterion [ARGS...]";

/// Options shared by the sections.
pub(crate) struct Ctx {
    /// `--nnz`: the size of the synthetic tensors (each section has a default).
    pub(crate) nnz: Option<usize>,
    /// `--rounds`: alternated runs of each `hurray convert` and script.
    pub(crate) rounds: usize,
    /// `--threads`: thread counts for `hurray convert`.
    pub(crate) threads: Vec<usize>,
    /// `--filter`: passed to csf-build's bench and `auto_cost`.
    filter: Option<String>,
    /// `--memory`: the external build's budget.
    memory: Option<String>,
    target: PathBuf,
    built_cli: std::cell::Cell<bool>,
}

pub(crate) fn bench(args: &[String]) -> Result {
    match args.first().map(String::as_str) {
        None => Err(format!("name a section or `all`\n{USAGE}\n{}", sections_help())),
        Some("help" | "-h" | "--help") => {
            println!("{USAGE}\n{}", sections_help());
            Ok(())
        }
        // The former `cargo xtask bench ARGS...`: every criterion bench.
        Some("criterion" | "--") => run(cargo_cmd().args(["bench", "--workspace"]).args(&args[1..])),
        Some(_) => {
            let (names, ctx) = parse_args(args)?;
            let mut tables = Vec::new();
            for section in SECTIONS.iter().filter(|s| names.contains(&s.name)) {
                let nnz = ctx.nnz.unwrap_or(section.default_nnz);
                eprintln!("\n==> bench {} ({} non-zeros)", section.name, count(nnz));
                let host = Host::now();
                let body = (section.run)(&ctx, nnz)?;
                let table = format!(
                    "## {}\n\n{}\nCommand: `{}`\n\n{}",
                    section.title,
                    host.line(),
                    ctx.command(section.name, nnz),
                    body
                );
                // Each table as soon as it is measured, and all of them again at the end.
                println!("{table}");
                tables.push(table);
            }
            if tables.len() > 1 {
                println!("\n---\n\n{}", tables.join("\n"));
            }
            Ok(())
        }
    }
}

fn sections_help() -> String {
    let mut out = String::from("sections (`all` runs every one, in this order):\n");
    for s in SECTIONS {
        out.push_str(&format!("  {:<9} (default --nnz {:>3}) {}\n", s.name, count(s.default_nnz), s.about));
    }
    out.push_str(
        "options: --nnz N (1000000, 1M, 250k), --rounds R (default 3), --threads 1,2 (convert's thread \
         counts), --filter TEXT (build, auto: the benches' tensor filter), --memory SIZE (external)",
    );
    out
}

fn parse_args(args: &[String]) -> Result<(Vec<&'static str>, Ctx)> {
    let cores = thread::available_parallelism().map_or(1, |n| n.get());
    let mut ctx = Ctx {
        nnz: None,
        rounds: 3,
        threads: if cores > 1 { vec![1, 2.min(cores)] } else { vec![1] },
        filter: None,
        memory: None,
        target: target_dir(),
        built_cli: std::cell::Cell::new(false),
    };
    let mut names = Vec::new();
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        let (flag, inline) = match arg.split_once('=') {
            Some((flag, value)) if flag.starts_with("--") => (flag, Some(value.to_string())),
            _ => (arg.as_str(), None),
        };
        let mut value =
            || inline.clone().or_else(|| args.next().cloned()).ok_or_else(|| format!("{flag} needs a value"));
        match flag {
            "--nnz" => {
                let v = value()?;
                ctx.nnz = Some(parse_count(&v).ok_or_else(|| format!("--nnz {v}: not a count"))?);
            }
            "--rounds" => {
                let v = value()?;
                ctx.rounds = v.parse().ok().filter(|&r| r > 0).ok_or_else(|| format!("--rounds {v}"))?;
            }
            "--threads" => {
                let v = value()?;
                let threads: Option<Vec<usize>> =
                    v.split(',').map(|t| t.trim().parse().ok().filter(|&t| t > 0)).collect();
                ctx.threads = threads.ok_or_else(|| format!("--threads {v}: not thread counts"))?;
            }
            "--filter" => ctx.filter = Some(value()?),
            "--memory" => ctx.memory = Some(value()?),
            "all" => names.extend(SECTIONS.iter().map(|s| s.name)),
            name => match SECTIONS.iter().find(|s| s.name == name) {
                Some(s) => names.push(s.name),
                None => {
                    return Err(format!("unknown section or option `{name}`\n{USAGE}\n{}", sections_help()))
                }
            },
        }
    }
    if names.is_empty() {
        return Err(format!("name a section or `all`\n{USAGE}"));
    }
    Ok((names, ctx))
}

impl Ctx {
    /// The command that regenerates a section's table, as the doc cites it.
    fn command(&self, section: &str, nnz: usize) -> String {
        let mut cmd = format!("cargo xtask bench {section} --nnz {}", count(nnz));
        if self.rounds != 3 {
            cmd.push_str(&format!(" --rounds {}", self.rounds));
        }
        if let Some(filter) = &self.filter {
            cmd.push_str(&format!(" --filter '{filter}'"));
        }
        if let Some(memory) = &self.memory {
            cmd.push_str(&format!(" --memory {memory}"));
        }
        cmd
    }

    pub(crate) fn data_dir(&self) -> Result<PathBuf> {
        let dir = self.target.join("bench-data");
        fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        Ok(dir)
    }

    /// The release `hurray` binary, built once per run along with `gen_tns`.
    pub(crate) fn hurray(&self) -> Result<PathBuf> {
        if !self.built_cli.get() {
            run(cargo_cmd().args([
                "build",
                "--release",
                "--locked",
                "-p",
                "hurray-cli",
                "--bin",
                "hurray",
                "--example",
                "gen_tns",
            ]))?;
            self.built_cli.set(true);
        }
        Ok(self.target.join("release/hurray"))
    }

    /// A uniform rank-3 file of `nnz` lines over 2000^3 with integer values
    /// (`gen_tns`'s defaults, seed 42), made once and kept.
    pub(crate) fn uniform_tns(&self, nnz: usize) -> Result<PathBuf> {
        self.hurray()?;
        let path = self.data_dir()?.join(format!("u{nnz}.tns"));
        if fs::metadata(&path).is_ok_and(|m| m.len() > 0) {
            return Ok(path);
        }
        let partial = path.with_extension("tns.partial");
        let gen = self.target.join("release/examples/gen_tns");
        run(Command::new(gen)
            .arg(&partial)
            .arg(nnz.to_string())
            .args(["2000", "3", "int", "42", "uniform"]))?;
        fs::rename(&partial, &path).map_err(|e| format!("{}: {e}", path.display()))?;
        Ok(path)
    }

    /// A power-law rank-3 file of `nnz` lines over 5000 x 50000 x 500000
    /// with real values (`gen_tns ... real 42 powerlaw`), made once and kept.
    pub(crate) fn powerlaw_tns(&self, nnz: usize) -> Result<PathBuf> {
        self.hurray()?;
        let path = self.data_dir()?.join(format!("p{nnz}.tns"));
        if fs::metadata(&path).is_ok_and(|m| m.len() > 0) {
            return Ok(path);
        }
        let partial = path.with_extension("tns.partial");
        let gen = self.target.join("release/examples/gen_tns");
        run(Command::new(gen).arg(&partial).arg(nnz.to_string()).args([
            "5000x50000x500000",
            "3",
            "real",
            "42",
            "powerlaw",
        ]))?;
        fs::rename(&partial, &path).map_err(|e| format!("{}: {e}", path.display()))?;
        Ok(path)
    }
}

/// `CARGO_TARGET_DIR` (relative to the workspace root), else `target`.
fn target_dir() -> PathBuf {
    let root = Path::new(ROOT);
    env::var_os("CARGO_TARGET_DIR").map_or_else(|| root.join("target"), |dir| root.join(dir))
}

// ---------------------------------------------------------------------------
// Sections.

fn parse(ctx: &Ctx, nnz: usize) -> Result<String> {
    let file = ctx.uniform_tns(nnz)?;
    let mb = file_mb(&file);
    let splatt = Splatt::find();
    let mut rows = Vec::new();
    let mut ends = Vec::new();
    for &threads in &ctx.threads {
        let ours = convert_rounds(ctx, &file, threads, &[])?;
        let peer = splatt.as_ref().map(|s| s.rounds(&file, threads, ctx.rounds)).transpose()?;
        let parse_wall = ours.median("parse", Clock::Wall);
        let read = peer.as_ref().map(|p| p.median("IO"));
        rows.push(format!(
            "| {threads} | {} | {} | {} | {} | {:.0} MB/s |",
            ratio(read, parse_wall),
            wall_cpu(parse_wall, ours.median("parse", Clock::Cpu)),
            read.map_or_else(not_measured, secs),
            range(&ours.all("parse", Clock::Wall)),
            mb / parse_wall,
        ));
        let rss = ours.median("peak RSS", Clock::Wall);
        let peer_rss = peer.as_ref().and_then(|p| p.peak_rss());
        ends.push(format!(
            "| {threads} | {} | {} | {} | {} | {} |",
            ratio(peer_rss, rss),
            secs(ours.median("total", Clock::Wall)),
            mib(rss),
            peer_rss.map_or_else(not_measured, mib),
            peer.as_ref().map_or_else(not_measured, |p| secs(p.median("TOTAL"))),
        ));
    }
    Ok(format!(
        "Input: `gen_tns {nnz} 2000 3 int 42 uniform` ({mb:.1} MB), `hurray convert FILE -o OUT --duplicates last \
         --timings -q`, medians of {} rounds, threads alternated{}.\n\n\
         | threads | SPLATT read / our parse | our parse, wall (CPU) | SPLATT read (`IO` timer) | our parse, \
         min-max | parse rate |\n|---:|---:|---:|---:|---|---:|\n{}\n\n\
         | threads | SPLATT peak RSS / ours | our whole convert, wall | our peak RSS | SPLATT peak RSS | SPLATT \
         `cpd` run, wall |\n|---:|---:|---:|---:|---:|---:|\n{}\n",
        ctx.rounds,
        splatt_note(&splatt),
        rows.join("\n"),
        ends.join("\n")
    ))
}

fn build(ctx: &Ctx, nnz: usize) -> Result<String> {
    let filter = ctx.filter.clone().unwrap_or_else(|| "uniform-r3|500000|real/".into());
    let (out, _) = capture(
        cargo_cmd()
            .args(["bench", "--locked", "-p", "csf-build", "--bench", "build"])
            .env("HURRAY_BENCH_NNZ", nnz.to_string())
            .env("HURRAY_BENCH_FILTER", &filter),
        true,
    )?;
    let tables = markdown_tables(&out);
    let bench = tables.first().ok_or("csf-build's bench printed no table")?;
    let two = bench.header.iter().find(|h| h.ends_with("T ms (CPU ms)") && !h.starts_with("1T")).cloned();
    let two = two.unwrap_or_else(|| "2T ms (CPU ms)".into());
    let library = bench.select(&[
        ("tensor", "tensor"),
        ("nnz", "nnz"),
        ("x naive, wall (CPU)", "x naive, 1T wall (CPU)"),
        ("speedup", "speedup, all threads"),
        ("1T ms (CPU ms)", "1T ms (CPU)"),
        ("1T M nnz/s", "1T M nnz/s"),
        (two.as_str(), two.replace(" ms (CPU ms)", " ms (CPU)").as_str()),
        ("naive ms (CPU ms)", "naive ms (CPU)"),
        ("peak extra MiB", "peak above input, MiB"),
        ("budget MiB", "budget MiB"),
    ]);

    let file = ctx.uniform_tns(nnz)?;
    let splatt = Splatt::find();
    let mut rows = Vec::new();
    for &threads in &ctx.threads {
        let ours = convert_rounds(ctx, &file, threads, &[])?;
        let peer = splatt.as_ref().map(|s| s.rounds(&file, threads, ctx.rounds)).transpose()?;
        let wall = ours.median("build", Clock::Wall);
        let csf = peer.as_ref().map(|p| p.csf());
        rows.push(format!(
            "| {threads} | {} | {} | {:.1} | {} |",
            ratio(csf, wall),
            wall_cpu(wall, ours.median("build", Clock::Cpu)),
            ours.nnz / wall / 1e6,
            csf.map_or_else(not_measured, secs),
        ));
    }
    Ok(format!(
        "In the library (`cargo bench -p csf-build --bench build`, `HURRAY_BENCH_NNZ={nnz}`, \
         `HURRAY_BENCH_FILTER='{filter}'`; f64 values, `Duplicates::Sum`, best of at least 3 runs; \
         `x naive` is the naive `sort_unstable` builder's time over ours, same run):\n\n{}\n\
         Through `hurray convert` (the build phase of `--timings`, `gen_tns {nnz}` uniform over 2000^3, \
         `--duplicates last`, medians of {} rounds){}:\n\n\
         | threads | SPLATT CSF / ours | our build, wall (CPU) | M nnz/s (wall) | SPLATT CSF allocation |\n\
         |---:|---:|---:|---:|---:|\n{}\n",
        library.render(),
        ctx.rounds,
        splatt_note(&splatt),
        rows.join("\n")
    ))
}

fn auto(ctx: &Ctx, nnz: usize) -> Result<String> {
    let filter = ctx.filter.clone().unwrap_or_default();
    let mut cmd = cargo_cmd();
    cmd.args(["run", "--release", "--locked", "-p", "csf-build", "--example", "auto_cost", "--"])
        .arg(&filter)
        .env("AUTO_COST_NNZ", nnz.to_string())
        .env("AUTO_COST_ROUNDS", ctx.rounds.to_string());
    let (out, _) = capture(&mut cmd, true)?;
    let tables = markdown_tables(&out);
    let costs = tables.first().ok_or("auto_cost printed no table")?;
    let library = costs.select(&[
        ("tensor", "tensor"),
        ("nnz", "nnz"),
        ("Auto / identity, wall (CPU)", "Auto / identity, wall (CPU)"),
        ("choosing / identity (CPU)", "choosing alone / identity (CPU)"),
        ("identity ms (CPU)", "identity ms (CPU)"),
        ("Auto ms (CPU)", "Auto ms (CPU)"),
        ("chosen order built alone, ms (CPU)", "chosen order alone, ms (CPU)"),
        ("Auto order", "Auto order"),
        ("index bytes", "index bytes"),
    ]);
    let file = ctx.uniform_tns(nnz)?;
    let mut rows = Vec::new();
    for &threads in &ctx.threads {
        let identity = convert_rounds(ctx, &file, threads, &["--mode-order", "identity"])?;
        let auto = convert_rounds(ctx, &file, threads, &["--mode-order", "auto"])?;
        let (iw, ic) = (identity.median("build", Clock::Wall), identity.median("build", Clock::Cpu));
        let (aw, ac) = (auto.median("build", Clock::Wall), auto.median("build", Clock::Cpu));
        rows.push(format!(
            "| {threads} | {:.2} ({:.2}) | {} | {} |",
            aw / iw,
            ac / ic,
            wall_cpu(iw, ic),
            wall_cpu(aw, ac)
        ));
    }
    Ok(format!(
        "In the library (`auto_cost` example: `AUTO_COST_NNZ={nnz} AUTO_COST_ROUNDS={}`, both threads, \
         `Duplicates::Last`; the builds interleaved, best of each; no peer chooses an order):\n\n{}\n\
         Through `hurray convert` (`gen_tns {nnz}` uniform over 2000^3, the build phase, \
         `--mode-order identity` and `auto`, medians of {} rounds):\n\n\
         | threads | Auto / identity, wall (CPU) | identity build, wall (CPU) | Auto build, wall (CPU) |\n\
         |---:|---:|---:|---:|\n{}\n",
        ctx.rounds,
        library.render(),
        ctx.rounds,
        rows.join("\n")
    ))
}

fn external(ctx: &Ctx, nnz: usize) -> Result<String> {
    let file = ctx.uniform_tns(nnz)?;
    let hurray = ctx.hurray()?;
    let dir = ctx.data_dir()?;
    // About the 256 MiB the doc's 20M-line run used, in proportion.
    let budget =
        ctx.memory.clone().unwrap_or_else(|| format!("{}MiB", (nnz as u64 * 256 / 20_000_000).max(64)));
    let in_memory = dir.join("in-memory.hurray");
    let external = dir.join("external.hurray");
    let mut mem = Vec::new();
    let mut ext = Vec::new();
    for _ in 0..ctx.rounds {
        let (_, err) = capture(
            Command::new(&hurray).args(["convert"]).arg(&file).arg("-o").arg(&in_memory).args([
                "--duplicates",
                "sum",
                "--timings",
                "-q",
            ]),
            false,
        )?;
        mem.push(Timings::parse(&err));
        let (_, err) = capture(
            Command::new(&hurray).args(["convert"]).arg(&file).arg("-o").arg(&external).args([
                "--duplicates",
                "sum",
                "--memory",
                &budget,
                "--timings",
                "-q",
            ]),
            false,
        )?;
        ext.push(Timings::parse(&err));
    }
    let same = same_bytes(&in_memory, &external)?;
    let _ = fs::remove_file(&in_memory);
    let _ = fs::remove_file(&external);
    let mem = Rounds { runs: mem, nnz: nnz as f64 };
    let ext = Rounds { runs: ext, nnz: nnz as f64 };
    let (mw, ew) = (mem.median("total", Clock::Wall), ext.median("total", Clock::Wall));
    let mem_cpu = ["read", "parse", "build", "write"].iter().map(|p| mem.median(p, Clock::Cpu)).sum::<f64>();
    let ext_cpu =
        ["read+parse+spill", "build+join+write"].iter().map(|p| ext.median(p, Clock::Cpu)).sum::<f64>();
    Ok(format!(
        "`gen_tns {nnz}` uniform over 2000^3, `hurray convert FILE -o OUT --duplicates sum --timings` in memory \
         and with `--memory {budget}`, medians of {} rounds, {} threads; the two outputs are {}. No peer \
         builds CSF within a memory budget.\n\n\
         | run | rate / in-memory rate | wall | CPU (phases) | M nnz/s (wall) | peak RSS |\n\
         |---|---:|---:|---:|---:|---:|\n\
         | in memory | 1 | {} | {} | {:.2} | {} |\n\
         | `--memory {budget}` | {:.2} | {} | {} | {:.2} | {} |\n",
        ctx.rounds,
        thread::available_parallelism().map_or(1, |n| n.get()),
        if same { "byte-identical" } else { "**DIFFERENT**" },
        secs(mw),
        secs(mem_cpu),
        nnz as f64 / mw / 1e6,
        mib(mem.median("peak RSS", Clock::Wall)),
        mw / ew,
        secs(ew),
        secs(ext_cpu),
        nnz as f64 / ew / 1e6,
        mib(ext.median("peak RSS", Clock::Wall)),
    ))
}

/// csf-core's bench, one criterion group family (`lookup` or `iterate`).
fn core_bench(nnz: usize, filter: &str) -> Result<BTreeMap<String, f64>> {
    let (out, _) = capture(
        cargo_cmd()
            .args(["bench", "--locked", "-p", "csf-core", "--bench", "core", "--", filter])
            .env("HURRAY_BENCH_NNZ", nnz.to_string()),
        true,
    )?;
    let rates = criterion_rates(&out);
    if rates.is_empty() {
        return Err(format!("csf-core's bench printed no `{filter}` throughput"));
    }
    Ok(rates)
}

fn lookup(_ctx: &Ctx, nnz: usize) -> Result<String> {
    let rates = core_bench(nnz, "lookup")?;
    let mut rows = Vec::new();
    for tensor in ["uniform", "powerlaw3"] {
        for set in ["present", "absent"] {
            let one = rates.get(&format!("lookup/{tensor}/{set}")).copied();
            let many = rates.get(&format!("lookup/{tensor}/{set}_batched")).copied();
            rows.push(format!(
                "| {tensor} | {set} | {} | {} | {} |",
                ratio(many, one.unwrap_or(f64::NAN)),
                rate(many, "M/s", 1e6),
                rate(one, "M/s", 1e6)
            ));
        }
    }
    Ok(format!(
        "`cargo bench -p csf-core --bench core -- lookup`, `HURRAY_BENCH_NNZ={nnz}` draws over 2000^3 \
         (uniform, and power law of skew 3), f32 values, 1M query indices, thread CPU time, criterion's \
         estimate. No peer looks up CSF entries in the same run (the Python section has pydata sparse's \
         indexing).\n\n\
         | tensor | queries | batched / one at a time | `find_many` | `find` |\n|---|---|---:|---:|---:|\n{}\n",
        rows.join("\n")
    ))
}

fn iterate(_ctx: &Ctx, nnz: usize) -> Result<String> {
    let rates = core_bench(nnz, "iterate")?;
    let mut rows = Vec::new();
    for tensor in ["uniform", "powerlaw3"] {
        let get = |name: &str| rates.get(&format!("iterate/{tensor}/{name}")).copied();
        let csf = get("csf_for_each_index_sum");
        let coo = get("coo_loop_index_sum");
        rows.push(format!(
            "| {tensor} | {} | {} | {} | {} | {} | {} | {} | {} |",
            ratio(csf, coo.unwrap_or(f64::NAN)),
            rate(csf, "M/s", 1e6),
            rate(coo, "M/s", 1e6),
            rate(get("csf_for_each_sum"), "M/s", 1e6),
            rate(get("coo_loop_sum"), "M/s", 1e6),
            rate(get("csf_cursor_sum"), "M/s", 1e6),
            rate(get("csf_subtree_i_index_sum"), "M/s", 1e6),
            rate(get("csf_subtree_ij_index_sum"), "M/s", 1e6),
        ));
    }
    Ok(format!(
        "`cargo bench -p csf-core --bench core -- iterate`, `HURRAY_BENCH_NNZ={nnz}` draws over 2000^3, f32 \
         values, non-zeros per second of thread CPU time; the COO loop is the same sum over a `Vec<[u32; 3]>` \
         and a `Vec<f32>` of the same entries in the same order.\n\n\
         | tensor | `for_each` / COO loop, index + sum | `for_each`, index + sum | COO loop, index + sum | \
         `for_each`, sum | COO loop, sum | cursor, sum | sub-trees of each `i` | sub-trees of each `(i, j)` |\n\
         |---|---:|---:|---:|---:|---:|---:|---:|---:|\n{}\n",
        rows.join("\n")
    ))
}

fn validate(_ctx: &Ctx, nnz: usize) -> Result<String> {
    let mut rows = Vec::new();
    let mut tensor = String::new();
    for (label, features) in [("sequential", &[][..]), ("parallel", &["--features", "parallel"][..])] {
        let (_, err) = capture(
            cargo_cmd()
                .args(["bench", "--locked", "-p", "csf-validate", "--bench", "validate"])
                .args(features)
                // The CPU-time runs print before criterion starts; `--list` skips criterion's own.
                .args(["--", "--list"])
                .env("HURRAY_BENCH_NNZ", nnz.to_string()),
            true,
        )?;
        for line in err.lines() {
            if let Some(rest) = line.strip_prefix("validate bench: ") {
                tensor = rest.to_string();
            }
            let Some(rest) = line.strip_prefix(&format!("cpu-time {label} ")) else { continue };
            let Some((name, figures)) = rest.split_once(": ") else { continue };
            // "50 runs, wall 2.16 ms/run = 2.35 GB/s; CPU 1.27 ms/run = 3.98 GB/s per CPU-second"
            let numbers: Vec<f64> = figures
                .split(|c: char| c.is_whitespace() || c == ',' || c == ';')
                .filter_map(|t| t.parse().ok())
                .collect();
            if let [_, wall_ms, wall_gbs, cpu_ms, cpu_gbs] = numbers[..] {
                rows.push(format!(
                    "| {label} | {name} | {cpu_gbs:.1}x | {cpu_gbs:.2} GB/s | {wall_gbs:.2} GB/s | {wall_ms:.2} ms | \
                     {cpu_ms:.2} ms |"
                ));
            }
        }
    }
    if rows.is_empty() {
        return Err("csf-validate's bench printed no cpu-time line".into());
    }
    Ok(format!(
        "`cargo bench -p csf-validate --bench validate [--features parallel]`, `HURRAY_BENCH_NNZ={nnz}`: {tensor}. \
         `strict-unaligned` reads a copy at an odd address (the byte-wise path). Throughput counts every buffer \
         byte. No peer validates CSF.\n\n\
         | configuration | function | per CPU-second / 1 GB/s target | per CPU-second | wall | wall per run | \
         CPU per run |\n|---|---|---:|---:|---:|---:|---:|\n{}\n",
        rows.join("\n")
    ))
}

fn python(ctx: &Ctx, nnz: usize) -> Result<String> {
    let venv = Path::new(ROOT).join("target/python-venv/bin/python");
    let imports = |module: &str| {
        Command::new(&venv)
            .args(["-c", &format!("import {module}")])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    };
    if !venv.exists() || !imports("hurray_csf") {
        return Ok(
            "Not measured: no `target/python-venv` with `hurray_csf` (make it with `cargo xtask python`).\n"
                .into(),
        );
    }
    let (pyarrow, sparse) = (imports("pyarrow"), imports("sparse"));
    let scripts = Path::new(ROOT).join("crates/hurray-py/bench");
    let mut out = format!(
        "The venv's installed package (`cargo xtask python` reinstalls it from this checkout); pyarrow {}, \
         pydata sparse {}; wall clock, best of {} rounds.\n\n",
        if pyarrow { "importable" } else { "not importable: its rows not measured" },
        if sparse { "importable" } else { "not importable: its rows not measured" },
        ctx.rounds.max(3)
    );
    if pyarrow {
        let mut columns: Vec<Vec<(String, f64, String)>> = Vec::new();
        for threads in [None, Some("1")] {
            let mut cmd = Command::new(&venv);
            cmd.arg(scripts.join("bench_build.py")).args([
                "--nnz",
                &nnz.to_string(),
                "--repeat",
                &ctx.rounds.max(3).to_string(),
            ]);
            if let Some(t) = threads {
                cmd.args(["--threads", t]);
            }
            let (stdout, _) = capture(&mut cmd, true)?;
            columns.push(stdout.lines().filter(|l| !l.starts_with('#')).filter_map(ms_row).collect());
        }
        let ours = |col: &[(String, f64, String)]| col.first().map_or(f64::NAN, |r| r.1);
        let mut table = format!(
            "`python crates/hurray-py/bench/bench_build.py --nnz {nnz} [--threads 1]`: {} distinct uniform \
             non-zeros over 2000^3, f64; the builders interleaved.\n\n\
             | operation | all threads / `from_coo` | all threads | one thread / `from_coo` | one thread | note |\n\
             |---|---:|---:|---:|---:|---|\n",
            count(nnz)
        );
        for (i, (name, all, note)) in columns[0].iter().enumerate() {
            let one = columns.get(1).and_then(|c| c.get(i)).map_or(f64::NAN, |r| r.1);
            let builder = i < 3;
            table.push_str(&format!(
                "| {name} | {} | {} | {} | {} | {} |\n",
                if builder && i > 0 { ratio(Some(*all), ours(&columns[0])) } else { "".into() },
                millis(*all),
                if builder && i > 0 { ratio(Some(one), ours(&columns[1])) } else { "".into() },
                if builder { millis(one) } else { "".into() },
                // A builder's note is "8.7x ours (rounds: 7.4x to 10.5x)": the ratio is in its column.
                match note.split_once('(') {
                    Some((_, rounds)) if builder => rounds.trim_end_matches(')'),
                    _ => note,
                },
            ));
        }
        out.push_str(&table);
    } else {
        out.push_str("bench_build.py: not measured (its numpy builder needs pyarrow).\n");
    }
    let surface_nnz = nnz.min(1_000_000);
    let (stdout, _) = capture(
        Command::new(&venv).arg(scripts.join("bench_surface.py")).args([
            "--nnz",
            &surface_nnz.to_string(),
            "--repeat",
            &ctx.rounds.max(3).to_string(),
        ]),
        true,
    )?;
    out.push_str(&surface_tables(&stdout, surface_nnz));
    Ok(out)
}

/// bench_surface.py's two lists as tables.
fn surface_tables(stdout: &str, nnz: usize) -> String {
    let mut dense = Vec::new();
    let mut indexing = Vec::new();
    let mut header = String::new();
    let mut in_indexing = false;
    for line in stdout.lines() {
        if line.starts_with("from_dense:") {
            header = line.trim_start_matches("from_dense: ").to_string();
        } else if line.starts_with("indexing:") {
            in_indexing = true;
        } else if in_indexing {
            // "  t[7] (one slab ...)   505   0.04 ms   0.05 ms"
            let tokens: Vec<&str> = line.split_whitespace().collect();
            if tokens.len() < 6 || tokens[tokens.len() - 1] != "ms" {
                continue;
            }
            let n = tokens.len();
            let (ours, peer) =
                (tokens[n - 4].parse().unwrap_or(f64::NAN), tokens[n - 2].parse().unwrap_or(f64::NAN));
            let name = tokens[..n - 5].join(" ");
            indexing.push(format!(
                "| `{}` | {} | {} | {} | {} |",
                name.split(" (").next().unwrap_or(&name),
                ratio(Some(peer / 1e3), ours / 1e3),
                tokens[n - 5],
                millis(ours / 1e3),
                millis(peer / 1e3)
            ));
        } else if let Some((name, seconds, _)) = ms_row(line) {
            dense.push((name, seconds));
        }
    }
    let ours = dense.first().map_or(f64::NAN, |r| r.1);
    let dense: Vec<String> = dense
        .iter()
        .enumerate()
        .map(|(i, (name, s))| {
            format!(
                "| `{name}` | {} | {} |",
                if i == 0 { "".into() } else { ratio(Some(*s), ours) },
                millis(*s)
            )
        })
        .collect();
    format!(
        "\n`python crates/hurray-py/bench/bench_surface.py --nnz {nnz}`: `from_dense` of {header}\n\n\
         | contender | time / ours | time |\n|---|---:|---:|\n{}\n\n\
         Indexing {} uniform non-zeros over 2000^3, against a sorted pydata `sparse.COO`:\n\n\
         | selection | sparse / ours | result nnz | `hurray_csf` | pydata sparse |\n|---|---:|---:|---:|---:|\n{}\n",
        dense.join("\n"),
        count(nnz),
        indexing.join("\n")
    )
}

/// `NAME   12.34 ms  NOTE` (the Python scripts' rows): the name, seconds, note.
fn ms_row(line: &str) -> Option<(String, f64, String)> {
    let (left, note) = line.split_once(" ms")?;
    let number = left.split_whitespace().last()?;
    let seconds = number.parse::<f64>().ok()? / 1e3;
    let name = left[..left.rfind(number)?].trim().to_string();
    (!name.is_empty()).then(|| (name, seconds, note.trim().to_string()))
}

// ---------------------------------------------------------------------------
// hurray convert --timings.

#[derive(Clone, Copy)]
enum Clock {
    Wall,
    Cpu,
}

/// One `--timings` report: per phase, wall and CPU seconds; `peak RSS` in
/// bytes as its wall figure.
#[derive(Default)]
struct Timings {
    phases: BTreeMap<String, (f64, f64)>,
    nnz: Option<f64>,
}

impl Timings {
    fn parse(stderr: &str) -> Self {
        let mut t = Timings::default();
        for line in stderr.lines().map(str::trim) {
            if let Some(size) = line.strip_prefix("peak RSS ") {
                t.phases.insert("peak RSS".into(), (parse_bytes(size).unwrap_or(f64::NAN), f64::NAN));
                continue;
            }
            let Some((name, rest)) = line.split_once(' ') else { continue };
            let rest = rest.trim_start();
            let Some((wall, after)) = rest.split_once(" s") else { continue };
            let Ok(wall) = wall.trim().parse::<f64>() else { continue };
            let cpu = after
                .trim_start()
                .strip_prefix("(cpu")
                .and_then(|c| c.trim_start().split_once(" s"))
                .and_then(|(c, _)| c.trim().parse().ok())
                .unwrap_or(f64::NAN);
            t.phases.insert(name.to_string(), (wall, cpu));
            if name == "build" {
                t.nnz =
                    after.split_whitespace().skip_while(|w| *w != "nnz").nth(1).and_then(|n| n.parse().ok());
            }
        }
        t
    }
}

/// Several runs of one configuration.
struct Rounds {
    runs: Vec<Timings>,
    /// Stored non-zeros.
    nnz: f64,
}

impl Rounds {
    fn all(&self, phase: &str, clock: Clock) -> Vec<f64> {
        self.runs
            .iter()
            .filter_map(|t| t.phases.get(phase))
            .map(|&(wall, cpu)| match clock {
                Clock::Wall => wall,
                Clock::Cpu => cpu,
            })
            .filter(|v| v.is_finite())
            .collect()
    }

    fn median(&self, phase: &str, clock: Clock) -> f64 {
        median(self.all(phase, clock))
    }
}

/// `hurray convert FILE --duplicates last --timings -q EXTRA` on `threads`
/// threads, `ctx.rounds` times.
fn convert_rounds(ctx: &Ctx, file: &Path, threads: usize, extra: &[&str]) -> Result<Rounds> {
    let hurray = ctx.hurray()?;
    let out = ctx.data_dir()?.join("out.hurray");
    let mut runs = Vec::new();
    for _ in 0..ctx.rounds {
        let (_, err) = capture(
            Command::new(&hurray)
                .env("RAYON_NUM_THREADS", threads.to_string())
                .arg("convert")
                .arg(file)
                .arg("-o")
                .arg(&out)
                .args(["--duplicates", "last", "--timings", "-q"])
                .args(extra),
            false,
        )?;
        runs.push(Timings::parse(&err));
    }
    let _ = fs::remove_file(&out);
    let nnz = runs.iter().find_map(|t| t.nnz).unwrap_or(f64::NAN);
    Ok(Rounds { runs, nnz })
}

// ---------------------------------------------------------------------------
// SPLATT.

pub(crate) struct Splatt {
    pub(crate) bin: PathBuf,
}

/// One SPLATT run's timers (seconds) and peak RSS (bytes, when measured).
struct SplattRun {
    timers: BTreeMap<String, f64>,
    rss: Option<f64>,
}

struct SplattRounds(Vec<SplattRun>);

impl Splatt {
    /// `$SPLATT` (the binary, or a directory holding `splatt` or
    /// `bin/splatt`), else `splatt` on `PATH`.
    pub(crate) fn find() -> Option<Splatt> {
        if let Some(given) = env::var_os("SPLATT").map(PathBuf::from) {
            return [given.clone(), given.join("splatt"), given.join("bin/splatt")]
                .into_iter()
                .find(|p| p.is_file())
                .map(|bin| Splatt { bin });
        }
        env::split_paths(&env::var_os("PATH")?)
            .map(|dir| dir.join("splatt"))
            .find(|p| p.is_file())
            .map(|bin| Splatt { bin })
    }

    /// `splatt cpd FILE --rank 1 --iters 1 --nowrite --csf one -t T -v -v`:
    /// its timers report the read (`IO`) and, with the CPD's own time, the
    /// rest (`TOTAL - IO - CPD`: tensor statistics and one CSF allocation).
    fn rounds(&self, file: &Path, threads: usize, rounds: usize) -> Result<SplattRounds> {
        let time = Path::new("/usr/bin/time");
        let mut runs = Vec::new();
        for _ in 0..rounds {
            let mut cmd = if time.exists() {
                let mut cmd = Command::new(time);
                cmd.args(["-f", "maxrss-kib %M"]).arg(&self.bin);
                cmd
            } else {
                Command::new(&self.bin)
            };
            cmd.arg("cpd").arg(file).args(["--rank", "1", "--iters", "1", "--nowrite", "--csf", "one", "-t"]);
            cmd.arg(threads.to_string()).args(["-v", "-v"]).env("OMP_NUM_THREADS", threads.to_string());
            let (out, err) = capture(&mut cmd, false)?;
            let mut timers = BTreeMap::new();
            let mut in_timers = false;
            for line in out.lines() {
                if line.starts_with("Timing information") {
                    in_timers = true;
                } else if in_timers {
                    let line = line.trim();
                    let Some(split) = line.rfind(' ') else { continue };
                    if let Ok(s) = line[split + 1..].trim_end_matches('s').parse::<f64>() {
                        timers.insert(line[..split].trim().to_string(), s);
                    }
                }
            }
            if !timers.contains_key("IO") {
                return Err(format!("{}: no `IO` timer in its report", self.bin.display()));
            }
            let rss = err
                .lines()
                .filter_map(|l| l.strip_prefix("maxrss-kib "))
                .find_map(|k| k.trim().parse::<f64>().ok())
                .map(|k| k * 1024.0);
            runs.push(SplattRun { timers, rss });
        }
        Ok(SplattRounds(runs))
    }
}

impl Splatt {
    /// `splatt bench FILE -a csf -r 16 -i 3 -t T`, `rounds` times: the
    /// median seconds of each mode's one-CSF MTTKRP.
    pub(crate) fn mttkrp_rounds(&self, file: &Path, threads: usize, rounds: usize) -> Result<Vec<f64>> {
        let mut modes: Vec<Vec<f64>> = Vec::new();
        for _ in 0..rounds {
            let mut cmd = Command::new(&self.bin);
            cmd.arg("bench").arg(file).args(["-a", "csf", "-r", "16", "-i", "3", "-t", &threads.to_string()]);
            cmd.env("OMP_NUM_THREADS", threads.to_string());
            let (out, _) = capture(&mut cmd, false)?;
            // "  mode 1 0.088s"
            for line in out.lines().map(str::trim).filter(|l| l.starts_with("mode ")) {
                let mut words = line.split_whitespace().skip(1);
                let (Some(mode), Some(secs)) = (words.next(), words.next()) else { continue };
                let (Ok(mode), Ok(secs)) = (mode.parse::<usize>(), secs.trim_end_matches('s').parse::<f64>())
                else {
                    continue;
                };
                if mode >= 1 {
                    if modes.len() < mode {
                        modes.resize(mode, Vec::new());
                    }
                    modes[mode - 1].push(secs);
                }
            }
        }
        if modes.is_empty() {
            return Err(format!("{} bench printed no `mode N SECONDS` line", self.bin.display()));
        }
        Ok(modes.into_iter().map(median).collect())
    }

    /// `splatt cpd FILE -r 16 -i 5 --tol 0 --nowrite -v -t T --csf CSF`,
    /// `rounds` times: the median seconds of an iteration.
    pub(crate) fn cpd_rounds(&self, file: &Path, threads: usize, rounds: usize, csf: &str) -> Result<f64> {
        let mut its = Vec::new();
        for _ in 0..rounds {
            let mut cmd = Command::new(&self.bin);
            cmd.arg("cpd").arg(file).args(["-r", "16", "-i", "5", "--tol=0", "--nowrite", "-v"]);
            cmd.args(["-t", &threads.to_string(), &format!("--csf={csf}")]);
            cmd.env("OMP_NUM_THREADS", threads.to_string());
            let (out, _) = capture(&mut cmd, false)?;
            // "  its =   1 (0.326s)  fit = 0.00001  delta = +6.3165e-06"
            for line in out.lines().map(str::trim).filter(|l| l.starts_with("its =")) {
                let secs = line
                    .split('(')
                    .nth(1)
                    .and_then(|r| r.split("s)").next())
                    .and_then(|s| s.parse::<f64>().ok());
                its.extend(secs);
            }
        }
        if its.is_empty() {
            return Err(format!("{} cpd printed no `its = N (SECONDS)` line", self.bin.display()));
        }
        Ok(median(its))
    }
}

impl SplattRounds {
    fn median(&self, timer: &str) -> f64 {
        median(self.0.iter().filter_map(|r| r.timers.get(timer).copied()).collect())
    }

    /// The CSF allocation and statistics: `TOTAL - IO - CPD`.
    fn csf(&self) -> f64 {
        median(
            self.0
                .iter()
                .map(|r| {
                    let t = |name: &str| r.timers.get(name).copied().unwrap_or(0.0);
                    t("TOTAL") - t("IO") - t("CPD")
                })
                .collect(),
        )
    }

    fn peak_rss(&self) -> Option<f64> {
        let all: Vec<f64> = self.0.iter().filter_map(|r| r.rss).collect();
        (!all.is_empty()).then(|| median(all))
    }
}

fn splatt_note(splatt: &Option<Splatt>) -> String {
    match splatt {
        Some(s) => format!(
            "; SPLATT: `{} cpd FILE --rank 1 --iters 1 --nowrite --csf one -t T -v -v`",
            s.bin.display()
        ),
        None => "; SPLATT not measured (no `splatt` on PATH and no `$SPLATT`)".into(),
    }
}

// ---------------------------------------------------------------------------
// Output of the bench programs.

/// A Markdown table.
struct Table {
    header: Vec<String>,
    rows: Vec<Vec<String>>,
}

impl Table {
    /// The columns named (by their header in this table) in this order, each
    /// under a new header; a column the table lacks is left out.
    fn select(&self, columns: &[(&str, &str)]) -> Table {
        let found: Vec<(usize, &str)> = columns
            .iter()
            .filter_map(|(from, to)| self.header.iter().position(|h| h == from).map(|i| (i, *to)))
            .collect();
        Table {
            header: found.iter().map(|(_, to)| to.to_string()).collect(),
            rows: self
                .rows
                .iter()
                .map(|row| found.iter().map(|&(i, _)| row.get(i).cloned().unwrap_or_default()).collect())
                .collect(),
        }
    }

    fn render(&self) -> String {
        let mut out = format!("| {} |\n", self.header.join(" | "));
        let align: Vec<&str> =
            self.header.iter().enumerate().map(|(i, _)| if i == 0 { "---" } else { "---:" }).collect();
        out.push_str(&format!("|{}|\n", align.join("|")));
        for row in &self.rows {
            out.push_str(&format!("| {} |\n", row.join(" | ")));
        }
        out
    }
}

/// Every Markdown table in `text`, in order.
fn markdown_tables(text: &str) -> Vec<Table> {
    let cells = |line: &str| line.trim().trim_matches('|').split('|').map(|c| c.trim().to_string()).collect();
    let mut tables = Vec::new();
    let mut lines = text.lines().peekable();
    while let Some(line) = lines.next() {
        let is_rule = |l: &&str| l.starts_with("|-") || l.starts_with("|:");
        if !line.starts_with('|') || !lines.peek().is_some_and(is_rule) {
            continue;
        }
        lines.next();
        let mut table = Table { header: cells(line), rows: Vec::new() };
        while let Some(row) = lines.next_if(|l| l.starts_with('|')) {
            table.rows.push(cells(row));
        }
        tables.push(table);
    }
    tables
}

/// Criterion's throughput estimates (the middle of `thrpt: [lo mid hi]`), in
/// elements or bytes per second, by benchmark name.
fn criterion_rates(text: &str) -> BTreeMap<String, f64> {
    let mut rates = BTreeMap::new();
    let mut name = String::new();
    for line in text.lines() {
        if !line.starts_with(char::is_whitespace) && !line.is_empty() {
            name = line.split_whitespace().next().unwrap_or_default().to_string();
        }
        let Some(rest) = line.split_once("thrpt:").map(|(_, r)| r) else { continue };
        let tokens: Vec<&str> =
            rest.trim().trim_matches(|c| c == '[' || c == ']').split_whitespace().collect();
        // [lo unit mid unit hi unit]
        if let [_, _, mid, unit, ..] = tokens[..] {
            let scale = match unit.chars().next() {
                Some('K') => 1e3,
                Some('M') => 1e6,
                Some('G') => 1e9,
                _ => 1.0,
            };
            if let Ok(v) = mid.parse::<f64>() {
                rates.insert(name.clone(), v * scale);
            }
        }
    }
    rates
}

/// Runs `cmd` and returns its stdout and stderr; `echo` streams both to our
/// stderr as they come (progress for long benches).
pub(crate) fn capture(cmd: &mut Command, echo: bool) -> Result<(String, String)> {
    let shown = show(cmd);
    eprintln!("$ {shown}");
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("could not start `{shown}`: {e}"))?;
    let collect = |stream: Option<Box<dyn Read + Send>>| {
        thread::spawn(move || {
            let mut all = String::new();
            let Some(stream) = stream else { return all };
            for line in BufReader::new(stream).lines() {
                let Ok(line) = line else { break };
                if echo {
                    eprintln!("  {line}");
                }
                all.push_str(&line);
                all.push('\n');
            }
            all
        })
    };
    let out = collect(child.stdout.take().map(|s| Box::new(s) as Box<dyn Read + Send>));
    let err = collect(child.stderr.take().map(|s| Box::new(s) as Box<dyn Read + Send>));
    let status = child.wait().map_err(|e| format!("`{shown}`: {e}"))?;
    let (out, err) = (out.join().unwrap_or_default(), err.join().unwrap_or_default());
    if !status.success() {
        if !echo {
            eprintln!("{err}");
        }
        return Err(format!("`{shown}` failed ({status})"));
    }
    Ok((out, err))
}

fn same_bytes(a: &Path, b: &Path) -> Result<bool> {
    let open = |p: &Path| fs::File::open(p).map(BufReader::new).map_err(|e| format!("{}: {e}", p.display()));
    let (mut a, mut b) = (open(a)?, open(b)?);
    loop {
        let (x, y) = (a.fill_buf().map_err(|e| e.to_string())?, b.fill_buf().map_err(|e| e.to_string())?);
        let n = x.len().min(y.len());
        if n == 0 {
            return Ok(x.len() == y.len());
        }
        if x[..n] != y[..n] {
            return Ok(false);
        }
        a.consume(n);
        b.consume(n);
    }
}

// ---------------------------------------------------------------------------
// The host, and numbers.

struct Host {
    cpu: String,
    cores: usize,
    memory: String,
    kernel: String,
    rustc: String,
    load: String,
    date: String,
}

impl Host {
    fn now() -> Host {
        let read = |path: &str| fs::read_to_string(path).unwrap_or_default();
        let cpuinfo = read("/proc/cpuinfo");
        let cpu = cpuinfo
            .lines()
            .find_map(|l| l.strip_prefix("model name").and_then(|r| r.split_once(':')).map(|(_, m)| m.trim()))
            .unwrap_or(env::consts::ARCH)
            .to_string();
        let memory = read("/proc/meminfo")
            .lines()
            .find_map(|l| l.strip_prefix("MemTotal:"))
            .and_then(|kib| kib.split_whitespace().next()?.parse::<f64>().ok())
            .map_or_else(|| "?".into(), |kib| format!("{:.1} GiB", kib / 1024.0 / 1024.0));
        let kernel = read("/proc/sys/kernel/osrelease").trim().to_string();
        let rustc = Command::new(env::var_os("RUSTC").unwrap_or_else(|| "rustc".into()))
            .arg("-V")
            .output()
            .ok()
            .and_then(|o| String::from_utf8(o.stdout).ok())
            .and_then(|v| v.split_whitespace().nth(1).map(str::to_string))
            .unwrap_or_else(|| "?".into());
        let load = read("/proc/loadavg").split_whitespace().next().unwrap_or("?").to_string();
        let days = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs() / 86_400);
        Host {
            cpu,
            cores: thread::available_parallelism().map_or(1, |n| n.get()),
            memory,
            kernel: if kernel.is_empty() { env::consts::OS.into() } else { format!("Linux {kernel}") },
            rustc,
            load,
            date: civil_date(days as i64),
        }
    }

    fn line(&self) -> String {
        format!(
            "Host: {}, {} cores, {}, {}, rustc {}; load average {} at the start; {} (UTC).\n",
            self.cpu, self.cores, self.memory, self.kernel, self.rustc, self.load, self.date
        )
    }
}

/// `YYYY-MM-DD` of a day count since 1970-01-01 (Howard Hinnant's
/// `civil_from_days`).
fn civil_date(days: i64) -> String {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02}")
}

/// `10000000`, `10M`, `2.5M`, `250k`, `1_000_000`.
fn parse_count(text: &str) -> Option<usize> {
    let text = text.replace('_', "");
    let (number, scale) = match text.chars().last()? {
        'k' | 'K' => (&text[..text.len() - 1], 1e3),
        'm' | 'M' => (&text[..text.len() - 1], 1e6),
        _ => (text.as_str(), 1.0),
    };
    let n = number.parse::<f64>().ok()? * scale;
    (n >= 1.0 && n.fract() == 0.0).then_some(n as usize)
}

pub(crate) fn count(n: usize) -> String {
    match n {
        n if n % 1_000_000 == 0 => format!("{}M", n / 1_000_000),
        n if n % 1000 == 0 => format!("{}k", n / 1000),
        n => n.to_string(),
    }
}

/// `594.1 MiB` and the like, in bytes.
fn parse_bytes(text: &str) -> Option<f64> {
    let mut parts = text.split_whitespace();
    let value: f64 = parts.next()?.parse().ok()?;
    let scale = match parts.next()? {
        "B" => 1.0,
        "KiB" => 1024.0,
        "MiB" => 1024.0 * 1024.0,
        "GiB" => 1024.0 * 1024.0 * 1024.0,
        "TiB" => 1024.0f64.powi(4),
        _ => return None,
    };
    Some(value * scale)
}

pub(crate) fn median(mut values: Vec<f64>) -> f64 {
    values.retain(|v| v.is_finite());
    if values.is_empty() {
        return f64::NAN;
    }
    values.sort_by(f64::total_cmp);
    let mid = values.len() / 2;
    if values.len() % 2 == 1 {
        values[mid]
    } else {
        (values[mid - 1] + values[mid]) / 2.0
    }
}

fn file_mb(path: &Path) -> f64 {
    fs::metadata(path).map_or(f64::NAN, |m| m.len() as f64 / 1e6)
}

fn not_measured() -> String {
    "not measured".into()
}

/// `theirs / ours` as `5.3x`, or "not measured".
fn ratio(theirs: Option<f64>, ours: f64) -> String {
    match theirs {
        Some(t) if t.is_finite() && ours.is_finite() && ours > 0.0 => format!("{:.2}x", t / ours),
        _ => not_measured(),
    }
}

fn secs(s: f64) -> String {
    if !s.is_finite() {
        return "-".into();
    }
    if s < 1.0 {
        format!("{:.0} ms", s * 1e3)
    } else {
        format!("{s:.2} s")
    }
}

fn millis(s: f64) -> String {
    match s {
        s if !s.is_finite() => "not measured".into(),
        s if s < 0.001 => format!("{:.3} ms", s * 1e3),
        s if s < 0.1 => format!("{:.2} ms", s * 1e3),
        s => format!("{:.0} ms", s * 1e3),
    }
}

fn wall_cpu(wall: f64, cpu: f64) -> String {
    if cpu.is_finite() {
        format!("{} ({})", secs(wall), secs(cpu))
    } else {
        secs(wall)
    }
}

fn range(values: &[f64]) -> String {
    let lo = values.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if lo.is_finite() {
        format!("{} to {}", secs(lo), secs(hi))
    } else {
        "-".into()
    }
}

fn mib(bytes: f64) -> String {
    if bytes.is_finite() {
        format!("{:.1} MiB", bytes / 1024.0 / 1024.0)
    } else {
        "-".into()
    }
}

fn rate(value: Option<f64>, unit: &str, scale: f64) -> String {
    match value {
        Some(v) if v >= 1e3 * scale => format!("{:.2} G{}", v / scale / 1e3, &unit[1..]),
        Some(v) => format!("{:.1} {unit}", v / scale),
        None => not_measured(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_and_dates() {
        assert_eq!(parse_count("10M"), Some(10_000_000));
        assert_eq!(parse_count("250k"), Some(250_000));
        assert_eq!(parse_count("1_000_000"), Some(1_000_000));
        assert_eq!(parse_count("x"), None);
        assert_eq!(count(20_000_000), "20M");
        assert_eq!(civil_date(0), "1970-01-01");
        assert_eq!(civil_date(20_791), "2026-12-04");
    }

    #[test]
    fn reads_the_programs_output() {
        let t = Timings::parse(
            "hurray: timings: a -> b (1 thread)\n  parse     0.505 s (cpu   0.325 s)  10 lines\n  \
             build     0.837 s (cpu   0.558 s)  nnz 9993744\n  total    1.715 s\n  peak RSS 594.1 MiB\n",
        );
        assert_eq!(t.phases["parse"], (0.505, 0.325));
        assert_eq!(t.nnz, Some(9_993_744.0));
        assert_eq!(t.phases["total"].0, 1.715);
        assert!((t.phases["peak RSS"].0 - 594.1 * 1024.0 * 1024.0).abs() < 1.0);
        let rates = criterion_rates(
            "lookup/uniform/present  time:   [362.24 µs 418.27 µs 463.66 µs]\n                        \
             thrpt:  [8.8341 Melem/s 9.7928 Melem/s 11.307 Melem/s]\nlookup/uniform/present_batched\n      \
             time:   [1 µs 2 µs 3 µs]\n      thrpt:  [1.0 Gelem/s 2.0 Gelem/s 3.0 Gelem/s]\n",
        );
        assert_eq!(rates["lookup/uniform/present"], 9.7928e6);
        assert_eq!(rates["lookup/uniform/present_batched"], 2.0e9);
        let tables = markdown_tables("x\n| a | b |\n|---|---:|\n| 1 | 2 |\n\n| c |\n|---|\n");
        assert_eq!(tables.len(), 2);
        assert_eq!(tables[0].select(&[("b", "B"), ("a", "A")]).rows, vec![vec!["2", "1"]]);
        assert_eq!(
            ms_row("load, strict      17.60 ms  note"),
            Some(("load, strict".into(), 0.0176, "note".into()))
        );
    }
}
