//! `cargo xtask`: this workspace's automation, as a Rust program.
//!
//! The convention of rust-analyzer and gimli (<https://github.com/matklad/cargo-xtask>):
//! tasks are plain Rust run through a cargo alias, so they work wherever cargo
//! does, on any OS, with nothing to install first. `cargo xtask help` lists them.
//!
//! It is std-only on purpose. It is the first thing compiled on a fresh CI
//! machine, so it should build in a second or two, and a dependency update must
//! never be able to break the tool that checks dependency updates.

mod bench;
mod bench_kernels;
mod demo;
mod embedded;
mod features;
mod miri;
mod msrv;

use std::env;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

/// A failure, already worded for the person reading the terminal.
type Result<T = ()> = std::result::Result<T, String>;

/// The workspace root. Compiled in rather than taken from the current
/// directory, so `cargo xtask` works from any subdirectory.
const ROOT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/..");

/// One `cargo xtask` subcommand.
struct Task {
    name: &'static str,
    usage: &'static str,
    about: &'static str,
    run: fn(&[String]) -> Result,
}

/// Every task. Adding one is a function and a row here: `help` and dispatch
/// both read this table.
const TASKS: &[Task] = &[
    Task {
        name: "ci",
        usage: "[--quick | STEP...]",
        about: "run every CI step in order (this is what .ci/run calls), only the named ones, or with `--quick` \
                the inner loop: fmt, clippy, test, python",
        run: ci,
    },
    Task {
        name: "features",
        usage: "",
        about: "each library alone under each feature set it declares, from --no-default-features up: \
                clippy on the library, and its tests where a test build keeps that feature set (also a ci step)",
        run: |args| no_args("features", args).and_then(|()| features::features()),
    },
    Task {
        name: "nostd",
        usage: "",
        about: "prove that hurray-format, csf-core and csf-validate build with neither std nor an allocator",
        run: |args| no_args("nostd", args).and_then(|()| nostd()),
    },
    Task {
        name: "msrv",
        usage: "",
        about: "cargo check the libraries with the toolchain of their declared rust-version and the CLI with \
                its own (installs those toolchains if missing; also a ci step)",
        run: |args| no_args("msrv", args).and_then(|()| msrv::msrv()),
    },
    Task {
        name: "embedded",
        usage: "",
        about: "build the three decoder crates for Cortex-M4F and M0, run crates/nostd-firmware on both under \
                QEMU, check its answers and the flash/RAM/stack budgets (installs targets and QEMU if missing)",
        run: |args| no_args("embedded", args).and_then(|()| embedded::embedded()),
    },
    Task {
        name: "miri",
        usage: "[--ci]",
        about: "run the test suites of hurray-format, csf-core and csf-validate under Miri on big-endian s390x \
                (`--ci`: the shorter selection the ci step runs)",
        run: |args| match args {
            [] => miri::full(),
            [flag] if flag == "--ci" => miri::ci(),
            [extra, ..] => Err(format!("`cargo xtask miri` takes only `--ci`, got `{extra}`")),
        },
    },
    Task {
        name: "docsrs",
        usage: "",
        about: "build each library's docs as docs.rs does: nightly rustdoc, all features, --cfg docsrs, \
                -D warnings (installs nightly if missing; also a ci step)",
        run: |args| no_args("docsrs", args).and_then(|()| docsrs()),
    },
    Task {
        name: "fuzz",
        usage: "[--seconds N] [TARGET]",
        about:
            "run TARGET, or every cargo-fuzz target in fuzz/, for N seconds each (default 60), on nightly \
                (`--copy-seeds`: refresh fuzz/seeds from the corpus)",
        run: fuzz,
    },
    Task {
        name: "demo",
        usage: "",
        about: "the main job end to end, with the release `hurray`: convert a real tensor (examples/data, SPLATT's \
                med.tns) and a generated 2M-non-zero one with --mode-order auto, inspect, validate, look up, dump a \
                slice, compare sizes with the .tns text and COO",
        run: |args| no_args("demo", args).and_then(|()| demo::demo()),
    },
    Task {
        name: "bench",
        usage: "SECTION... [--nnz N] | criterion [ARGS]",
        about: "measure the reference tables of docs/benchmarks.md on this host and print them as Markdown \
                (parse, build, auto, external, lookup, iterate, validate, python, or all; `cargo xtask bench \
                help` lists the options); `criterion ARGS` runs cargo bench --workspace ARGS",
        run: bench,
    },
    Task {
        name: "python",
        usage: "",
        about: "build the Python package (crates/hurray-py) into a venv under target/ and run its tests",
        run: |args| no_args("python", args).and_then(|()| python()),
    },
    Task {
        name: "corpus",
        usage: "",
        about: "regenerate the malformed-file corpus in crates/csf-validate/tests/corpus from csf-testdata",
        run: |args| no_args("corpus", args).and_then(|()| corpus()),
    },
    Task {
        name: "help",
        usage: "",
        about: "show this list",
        run: |_| {
            print_help();
            Ok(())
        },
    },
];

/// One step of `cargo xtask ci`.
struct Step {
    name: &'static str,
    run: fn() -> Result,
}

/// The CI steps, in order: cheapest first, so a formatting slip fails in
/// seconds instead of after the test build. A new check (fuzz smoke runs, say)
/// is one more row.
const CI_STEPS: &[Step] = &[
    Step { name: "fmt", run: || cargo(&["fmt", "--all", "--check"]) },
    Step {
        name: "clippy",
        run: || cargo(&["clippy", "--workspace", "--all-targets", "--locked", "--", "-D", "warnings"]),
    },
    // Unit, integration and doc tests of every member.
    Step { name: "test", run: test },
    // Each library alone (no feature unified in from another member) under
    // each feature set it declares; the matrix is in features.rs.
    Step { name: "features", run: features::features },
    Step { name: "doc", run: doc },
    // The docs.rs build of each library: nightly rustdoc, every feature,
    // `--cfg docsrs`, warnings denied. Installs nightly (minimal profile) when
    // missing; its own target dir, so reruns only re-document (a few seconds).
    Step { name: "docsrs", run: docsrs },
    Step { name: "nostd", run: nostd },
    // `cargo check` with the toolchain each published crate declares as its
    // `rust-version` (1.81 for the libraries, 1.85 for the CLI), installed
    // (minimal profile) when missing; its own target dir.
    Step { name: "msrv", run: msrv::msrv },
    // The firmware on a Cortex-M4F and a Cortex-M0 under QEMU, with the
    // budgets of docs/benchmarks.md. About 2 minutes on a fresh machine
    // (QEMU's install, the targets, three builds per board), 30 s warm.
    Step { name: "embedded", run: embedded::embedded },
    // Big-endian: the unit tests and the fixture tests under Miri on s390x
    // (`cargo xtask miri` runs everything; the selection is in miri.rs).
    Step { name: "miri", run: miri::ci },
    // The Python package: installed with pip as a user would, then its tests.
    Step { name: "python", run: python },
    // Every fuzz target for HURRAY_CI_FUZZ_SECONDS (default 30; 0 skips), so
    // every submission is fuzzed a little; docs/fuzzing.md has the long runs.
    Step { name: "fuzz", run: ci_fuzz },
    // Advisories are left out on purpose: they need a network fetch and change
    // without any commit of ours, so they would make CI flaky. Run
    // `cargo deny check advisories` by hand. Pinned to the release series whose
    // config schema deny.toml is written for.
    Step {
        name: "deny",
        run: || {
            ensure_installed("deny", "cargo-deny@^0.20")?;
            cargo(&["deny", "check", "licenses", "bans", "sources"])?;
            // The Python package is its own workspace; deny.toml is found above it.
            let manifest = Path::new(ROOT).join("crates/hurray-py/Cargo.toml");
            let manifest = manifest.to_str().ok_or("the checkout's path is not UTF-8")?;
            cargo(&["deny", "--manifest-path", manifest, "check", "licenses", "bans", "sources"])
        },
    },
];

fn main() -> ExitCode {
    let args: Vec<String> = match env::args_os().skip(1).map(|a| a.into_string()).collect() {
        Ok(args) => args,
        Err(bad) => {
            eprintln!("error: argument {bad:?} is not valid UTF-8");
            return ExitCode::from(2);
        }
    };
    let Some((name, rest)) = args.split_first() else {
        print_help();
        return ExitCode::from(2);
    };
    let name = if matches!(name.as_str(), "-h" | "--help") { "help" } else { name.as_str() };
    let Some(task) = TASKS.iter().find(|task| task.name == name) else {
        eprintln!("error: unknown task `{name}`; `cargo xtask help` lists them");
        return ExitCode::from(2);
    };
    match (task.run)(rest) {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("\nerror: {message}");
            ExitCode::FAILURE
        }
    }
}

fn print_help() {
    println!("Usage: cargo xtask <TASK> [ARGS]\n\nTasks:");
    for task in TASKS {
        println!("  {:<32} {}", format!("{} {}", task.name, task.usage), task.about);
    }
    let steps: Vec<&str> = CI_STEPS.iter().map(|step| step.name).collect();
    println!("\nCI steps, in order: {}", steps.join(", "));
}

/// The steps of `cargo xtask ci --quick`, the inner loop: a few minutes warm,
/// against about fifteen for the whole run.
const QUICK_STEPS: &[&str] = &["fmt", "clippy", "test", "python"];

/// Runs the CI steps in order (every one, `--quick`'s, or the named ones),
/// stopping at the first failure, and always ends with the time each step
/// took, the failed one and those not reached included, so slow steps are
/// visible in every CI log.
fn ci(args: &[String]) -> Result {
    let quick = args.iter().any(|arg| arg == "--quick");
    let names: Vec<&str> = args.iter().map(String::as_str).filter(|arg| *arg != "--quick").collect();
    if quick && !names.is_empty() {
        return Err("`cargo xtask ci --quick` runs its own steps; name steps without --quick".into());
    }
    if let Some(unknown) = names.iter().find(|arg| !CI_STEPS.iter().any(|step| step.name == **arg)) {
        let steps: Vec<&str> = CI_STEPS.iter().map(|step| step.name).collect();
        return Err(format!("unknown ci step `{unknown}`; the steps are: {}", steps.join(", ")));
    }
    let wanted = |name: &str| {
        if quick {
            QUICK_STEPS.contains(&name)
        } else {
            names.is_empty() || names.contains(&name)
        }
    };
    let ci_machine = on_ci_machine();
    if ci_machine {
        save_disk_on_ci();
    }
    report_free_space("at the start");
    let started = Instant::now();
    let mut timings: Vec<(&str, Option<Duration>, bool)> = Vec::new();
    let mut failure = None;
    for step in CI_STEPS.iter().filter(|step| wanted(step.name)) {
        if failure.is_some() {
            timings.push((step.name, None, false));
            continue;
        }
        eprintln!("\n==> ci step `{}`", step.name);
        let step_started = Instant::now();
        let result = (step.run)();
        timings.push((step.name, Some(step_started.elapsed()), result.is_ok()));
        match result {
            Err(message) => {
                report_free_space("after the failed step");
                failure = Some(format!("ci step `{}` failed: {message}", step.name));
            }
            Ok(()) if ci_machine => remove_scratch_of(step.name),
            Ok(()) => {}
        }
    }
    eprintln!("\nci step durations:");
    for (name, took, ok) in &timings {
        match took {
            Some(took) => {
                eprintln!("  {name:<8} {:>7.1}s  {}", took.as_secs_f64(), if *ok { "ok" } else { "FAILED" })
            }
            None => eprintln!("  {name:<8} {:>8}  not run", "-"),
        }
    }
    eprintln!("  {:<8} {:>7.1}s", "total", started.elapsed().as_secs_f64());
    match failure {
        Some(message) => Err(message),
        None => {
            eprintln!("ci: all steps passed");
            Ok(())
        }
    }
}

/// Whether this run is on a CI machine (`CI` set to anything but empty,
/// `0` or `false`, as CI services set it; `.ci/run` sets it too).
fn on_ci_machine() -> bool {
    env::var("CI").is_ok_and(|value| !matches!(value.as_str(), "" | "0" | "false"))
}

/// A CI run builds everything once and keeps nothing, so it trades what only
/// helps the next local run for disk: a full run otherwise writes about
/// 10 GiB under `target/` (2.6 GiB of it incremental caches, 3.7 GiB debug
/// info in the test binaries), and a CI machine's free space varies. No
/// incremental caches, line tables only (backtraces keep file and line).
/// Set before any child process starts; a value the caller set is kept.
fn save_disk_on_ci() {
    for (key, value) in [("CARGO_INCREMENTAL", "0"), ("CARGO_PROFILE_DEV_DEBUG", "line-tables-only")] {
        if env::var_os(key).is_none() {
            eprintln!("ci: {key}={value} (a CI machine keeps no build between runs)");
            env::set_var(key, value);
        }
    }
}

/// The target directories that one step alone builds into (another
/// toolchain or target); on a CI machine each goes once its step has passed.
const STEP_SCRATCH: &[(&str, &str)] =
    &[("docsrs", "docsrs"), ("msrv", "msrv"), ("embedded", "firmware"), ("miri", "miri")];

fn remove_scratch_of(step: &str) {
    for (_, dir) in STEP_SCRATCH.iter().filter(|(name, _)| *name == step) {
        let dir = target_subdir(dir);
        if dir.is_dir() {
            match std::fs::remove_dir_all(&dir) {
                Ok(()) => eprintln!("ci: removed {} (only `{step}` builds there)", dir.display()),
                Err(e) => eprintln!("ci: could not remove {}: {e}", dir.display()),
            }
        }
    }
}

/// Prints the free space of the file system that holds the target dir (`df`,
/// where there is one), so a "No space left on device" in a CI log comes
/// with the figure. Never fails the run.
fn report_free_space(when: &str) {
    let target =
        env::var_os("CARGO_TARGET_DIR").map_or_else(|| Path::new(ROOT).join("target"), PathBuf::from);
    let probe = if target.is_dir() { target } else { PathBuf::from(ROOT) };
    let Ok(out) = Command::new("df").args(["-Pk"]).arg(&probe).stderr(Stdio::null()).output() else {
        return;
    };
    let text = String::from_utf8_lossy(&out.stdout);
    let Some(free_kib) = text.lines().nth(1).and_then(|line| line.split_whitespace().nth(3)) else {
        return;
    };
    if let Ok(free_kib) = free_kib.parse::<u64>() {
        eprintln!("ci: {:.1} GiB free under {} {when}", free_kib as f64 / (1024.0 * 1024.0), probe.display());
    }
}

/// Rustdoc with warnings denied: broken intra-doc links and malformed docs
/// fail here rather than on docs.rs after a release.
fn doc() -> Result {
    run(cargo_cmd().env("RUSTDOCFLAGS", "-D warnings").args(["doc", "--workspace", "--no-deps", "--locked"]))
}

/// The crates docs.rs documents: every published library. Each has the
/// `[package.metadata.docs.rs]` that [`docsrs`] mirrors (a test below checks
/// both the list and the metadata).
const DOCS_RS_CRATES: &[&str] = &["hurray-format", "csf-core", "csf-validate", "csf-build", "csf-kernels"];

/// What docs.rs passes to rustdoc for every crate (its `build.rustdocflags`),
/// less the flags that only place the output (`--emit`, `--resource-suffix`,
/// `--static-root-path`) and `--cap-lints warn`, which would turn our
/// `-D warnings` back into warnings.
const DOCS_RS_RUSTDOCFLAGS: &str = "--cfg docsrs -Z unstable-options --extern-html-root-takes-precedence";

/// Builds each library's documentation the way docs.rs does, so that a
/// nightly change (such as the removal of `feature(doc_auto_cfg)`, E0557) or a
/// broken link in feature-gated docs fails here rather than on docs.rs after a
/// release: `cargo +nightly rustdoc --lib --all-features` with the docs.rs
/// flags, `DOCS_RS=1`, the crate's `rustdoc-args` (`--cfg docsrs`) after `--`,
/// and `-D warnings` added. One crate per run, as docs.rs builds each alone
/// (features unify only within that crate's graph).
///
/// docs.rs uses the newest nightly; so does a fresh CI machine. Elsewhere,
/// `rustup update nightly` brings the local one up to date.
fn docsrs() -> Result {
    ensure_nightly()?;
    // Not the stable target dir: nightly artifacts would sit beside stable
    // ones and `target/doc` would mix the two builds.
    let target_dir = target_subdir("docsrs");
    let rustdocflags = format!("{DOCS_RS_RUSTDOCFLAGS} -D warnings");
    for krate in DOCS_RS_CRATES {
        let mut cmd = nightly_cargo();
        cmd.env("RUSTDOCFLAGS", &rustdocflags).env("DOCS_RS", "1");
        cmd.args(["rustdoc", "-p", krate, "--lib", "--all-features", "--locked", "--target-dir"]);
        cmd.arg(&target_dir);
        // Links to dependencies point at docs.rs, and examples are scraped, as there.
        cmd.args(["-Z", "unstable-options", "-Z", "rustdoc-map", "-Z", "rustdoc-scrape-examples"]);
        cmd.args([
            "--config",
            r#"doc.extern-map.registries.crates-io="https://docs.rs/{pkg_name}/{version}""#,
        ]);
        // The crate's `[package.metadata.docs.rs] rustdoc-args`.
        cmd.args(["--", "--cfg", "docsrs"]);
        run(&mut cmd)
            .map_err(|e| format!("{e}\n  (this is the docs.rs build of {krate}; see `cargo xtask help`)"))?;
    }
    eprintln!(
        "docsrs: {} crates documented as on docs.rs, in {}",
        DOCS_RS_CRATES.len(),
        target_dir.join("doc").display()
    );
    Ok(())
}

/// What the Python package's tests need from the package index, and mypy
/// (with pandas' stubs) to type-check them. torch is left out (it is large):
/// its test runs when torch is importable.
const PYTHON_TOOLS: &[&str] = &[
    "maturin>=1.5,<2",
    "numpy",
    "pytest",
    "hypothesis",
    "pyarrow",
    "sparse",
    "scipy",
    "pandas",
    "mypy",
    "pandas-stubs",
    // hurray_csf.dask's tests run a LocalCluster of worker processes.
    "dask[dataframe,distributed]>=2024.1",
    // The peers of `cp_als`'s agreement tests (both need Python 3.11).
    "tensorly>=0.9,<0.11; python_version >= '3.11'",
    "pyttb>=1.8,<1.9; python_version >= '3.11'",
];

/// The Python package, as a user gets it: a virtual environment under
/// `target/python-venv` (made with the machine's `python3`, or
/// `HURRAY_PYTHON`), the test tools from the package index, then
/// `pip install ./crates/hurray-py` (maturin as the PEP 517 backend, with the
/// Rust build cached in `target/python`), rustfmt and clippy on the binding
/// crate (its own workspace, outside the root one), pytest on its tests, and
/// `mypy --strict` on them.
fn python() -> Result {
    let root = Path::new(ROOT);
    let venv = root.join("target/python-venv");
    let bin = venv.join("bin");
    let python = bin.join("python");
    if !python.is_file() {
        let interpreter = env::var_os("HURRAY_PYTHON").unwrap_or_else(|| "python3".into());
        run(Command::new(&interpreter).args(["-m", "venv"]).arg(&venv)).map_err(|e| {
            format!("{e}\n  the Python step needs Python >= 3.9 with venv (set HURRAY_PYTHON to choose one)")
        })?;
    }
    let pip = |args: &[&str]| {
        let mut cmd = Command::new(&python);
        cmd.args(["-m", "pip", "install", "--quiet", "--disable-pip-version-check"]);
        // pip's wheel cache only pays on the next run, which a CI machine
        // does not have.
        if on_ci_machine() {
            cmd.arg("--no-cache-dir");
        }
        cmd.args(args);
        cmd
    };
    run(&mut pip(PYTHON_TOOLS))?;
    let krate = root.join("crates/hurray-py");
    let target = root.join("target/python");
    let with_env = |cmd: &mut Command| {
        cmd.current_dir(&krate).env("CARGO_TARGET_DIR", &target).env("PYO3_PYTHON", &python);
    };
    let mut fmt = cargo_cmd();
    with_env(&mut fmt);
    run(fmt.args(["fmt", "--check"]))?;
    let mut clippy = cargo_cmd();
    with_env(&mut clippy);
    run(clippy.args(["clippy", "--locked", "--", "-D", "warnings"]))?;
    // `pip install ./crates/hurray-py`, the README's command; maturin reads
    // CARGO_TARGET_DIR, so the Rust build is incremental between runs.
    let mut install = pip(&["--force-reinstall", "--no-deps"]);
    with_env(&mut install);
    run(install.arg(&krate))?;
    let mut pytest = Command::new(&python);
    pytest.current_dir(root).args(["-m", "pytest", "-q", "crates/hurray-py/tests"]);
    run(&mut pytest)?;
    // The tests and the package type-check; the settings, and the files
    // checked, are `[tool.mypy]` of the package's pyproject.toml.
    let mut mypy = Command::new(&python);
    mypy.current_dir(root).args([
        "-m",
        "mypy",
        "--strict",
        "--config-file",
        "crates/hurray-py/pyproject.toml",
    ]);
    run(&mut mypy)
        .map_err(|e| format!("{e}\n  the Python package or its tests do not type-check (mypy --strict)"))
}

/// Installs the nightly toolchain when `cargo +nightly` does not run.
fn ensure_nightly() -> Result {
    ensure_toolchain("nightly")
        .map_err(|e| format!("{e}\n  docs.rs builds with nightly, and so does this step"))
}

/// Installs `toolchain` (minimal profile: rustc, which ships rustdoc,
/// rust-std and cargo) when `cargo +TOOLCHAIN` does not run.
fn ensure_toolchain(toolchain: &str) -> Result {
    let mut probe = toolchain_cargo(toolchain);
    probe.arg("--version").stdout(Stdio::null()).stderr(Stdio::null());
    if probe.status().is_ok_and(|status| status.success()) {
        return Ok(());
    }
    eprintln!("the {toolchain} toolchain is not installed; installing it with rustup");
    let mut install = Command::new("rustup");
    install.env_remove("RUSTUP_TOOLCHAIN").args(["toolchain", "install", toolchain, "--profile", "minimal"]);
    run(&mut install)
}

/// A directory of its own under the target dir, for a step that builds with
/// another toolchain, so that its artifacts do not mix with the stable ones.
fn target_subdir(name: &str) -> PathBuf {
    env::var_os("CARGO_TARGET_DIR").map_or_else(|| "target".into(), PathBuf::from).join(name)
}

/// The no_std proof: builds `nostd-check` alone, so that cargo's feature
/// unification cannot switch on `std` in hurray-format, csf-core or
/// csf-validate the way a workspace-wide build (with hurray-cli's `std`
/// features) does. Its exported functions decode, look up and strictly
/// validate, so the staticlib holds all three crates' code, not only names.
///
/// It is built as a `staticlib` with `panic=abort` rather than with
/// `cargo build`: both fail on a std leak (std's `panic_impl` clashes with the
/// crate's own `#[panic_handler]`), but only a final artifact also fails when a
/// dependency needs `alloc`, since nothing provides a `#[global_allocator]`.
/// `panic=abort` is needed because a no_std staticlib has no unwinder.
fn nostd() -> Result {
    let build =
        ["rustc", "-p", "nostd-check", "--features", "bare-metal", "--locked", "--crate-type", "staticlib"];
    let rustc = ["--", "-C", "panic=abort", "-D", "warnings"];
    run(cargo_cmd().args(build).args(rustc)).map_err(|e| {
        format!(
            "{e}\n  `duplicate lang item panic_impl` means std leaked into hurray-format, csf-core or csf-validate;\n  \
             `no global memory allocator found` means alloc did (check their features and dependencies)"
        )
    })
}

/// Runs cargo-fuzz targets on nightly (libFuzzer needs `-Z sanitizer`).
fn fuzz(args: &[String]) -> Result {
    let mut seconds: u64 = 60;
    let mut target = None;
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--seconds" => {
                let value = args.next().ok_or("`--seconds` needs a number of seconds")?;
                seconds =
                    value.parse().map_err(|_| format!("`--seconds` wants a whole number, not `{value}`"))?;
            }
            "--copy-seeds" => return copy_seeds(),
            flag if flag.starts_with('-') => return Err(format!("unknown fuzz option `{flag}`")),
            name if target.is_none() => target = Some(name.to_owned()),
            extra => return Err(format!("one fuzz target at most; `{extra}` is a second one")),
        }
    }
    run_fuzz_targets(target, seconds)
}

/// The CI step: every target for `HURRAY_CI_FUZZ_SECONDS` seconds (default 30, 0 skips).
fn ci_fuzz() -> Result {
    let seconds = match env::var("HURRAY_CI_FUZZ_SECONDS") {
        Ok(value) => {
            value.parse().map_err(|_| format!("HURRAY_CI_FUZZ_SECONDS=`{value}` is not a number"))?
        }
        Err(_) => 30,
    };
    if seconds == 0 {
        eprintln!("fuzz: skipped (HURRAY_CI_FUZZ_SECONDS=0)");
        return Ok(());
    }
    run_fuzz_targets(None, seconds)
}

/// Each target starts from `fuzz/seeds/TARGET` (committed) and writes what it
/// learns to `fuzz/corpus/TARGET` (untracked); a crash lands in
/// `fuzz/artifacts/TARGET/`, to be minimized into the regression corpus
/// (docs/fuzzing.md). `-rss_limit_mb` is low enough to catch an allocation
/// sized by a length field, `-timeout=1` catches super-linear work.
fn run_fuzz_targets(target: Option<String>, seconds: u64) -> Result {
    if !Path::new(ROOT).join("fuzz/Cargo.toml").is_file() {
        return Err("there is no fuzz crate: fuzz/Cargo.toml does not exist".into());
    }
    if !nightly_cargo().arg("--version").stdout(Stdio::null()).status().is_ok_and(|s| s.success()) {
        return Err("fuzzing needs the nightly toolchain (`rustup toolchain install nightly`); \
                    HURRAY_CI_FUZZ_SECONDS=0 skips the ci step"
            .into());
    }
    ensure_installed("fuzz", "cargo-fuzz")?;
    let targets = match target {
        Some(target) => vec![target],
        None => {
            let listed = output(nightly_cargo().args(["fuzz", "list"]))?;
            listed.lines().map(str::trim).filter(|line| !line.is_empty()).map(str::to_owned).collect()
        }
    };
    if targets.is_empty() {
        return Err("`cargo fuzz list` found no fuzz targets in fuzz/".into());
    }
    let fuzz_dir = Path::new(ROOT).join("fuzz");
    let dict = format!("-dict={}", fuzz_dir.join("dict/hurray.dict").display());
    for target in &targets {
        let (corpus, seeds) = (fuzz_dir.join("corpus").join(target), fuzz_dir.join("seeds").join(target));
        std::fs::create_dir_all(&corpus).map_err(|e| format!("{}: {e}", corpus.display()))?;
        let max_time = format!("-max_total_time={seconds}");
        let libfuzzer = [max_time.as_str(), "-timeout=1", "-rss_limit_mb=256", dict.as_str()];
        let dirs = [corpus.as_os_str(), seeds.as_os_str()];
        let mut cmd = nightly_cargo();
        // AddressSanitizer keeps 256 MiB of freed memory in quarantine, which
        // alone would trip the RSS limit; 16 MiB still catches use-after-free.
        if env::var_os("ASAN_OPTIONS").is_none() {
            cmd.env("ASAN_OPTIONS", "quarantine_size_mb=16");
        }
        run(cmd.args(["fuzz", "run", target]).args(dirs).arg("--").args(libfuzzer))
            .map_err(|e| format!("fuzz target `{target}`: {e} (the input is in fuzz/artifacts/{target}/)"))?;
    }
    eprintln!("fuzz: {} target(s) ran {seconds}s each without a finding", targets.len());
    Ok(())
}

/// Copies the corpus files into the seed directories of the byte-driven targets.
fn copy_seeds() -> Result {
    let root = Path::new(ROOT);
    let corpus = root.join("crates/csf-validate/tests/corpus");
    let files = std::fs::read_dir(&corpus).map_err(|e| format!("{}: {e}", corpus.display()))?;
    let files: Vec<_> = files
        .filter_map(|entry| Some(entry.ok()?.path()))
        .filter(|path| path.extension().is_some_and(|ext| ext == "hurray"))
        .collect();
    for target in ["decode", "validate_strict", "permissive_access"] {
        let dir = root.join("fuzz/seeds").join(target);
        std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        for file in &files {
            let to = dir.join(file.file_name().unwrap_or_default());
            std::fs::copy(file, &to).map_err(|e| format!("{} -> {}: {e}", file.display(), to.display()))?;
        }
    }
    eprintln!(
        "fuzz: copied {} corpus files into fuzz/seeds/{{decode,validate_strict,permissive_access}}",
        files.len()
    );
    Ok(())
}

/// The reference tables of docs/benchmarks.md (bench.rs); `criterion ARGS`
/// (or `-- ARGS`) passes every argument through to `cargo bench --workspace`,
/// so criterion's own options work: `cargo xtask bench -- --save-baseline main`.
fn bench(args: &[String]) -> Result {
    bench::bench(args)
}

/// Rewrites `crates/csf-validate/tests/corpus/` (the `.hurray` files and
/// `MANIFEST.tsv`) from `csf_testdata::corpus()`, deleting stale files, then
/// checks the result. The writing is done by the corpus test itself with
/// `HURRAY_BLESS=1` (the project's convention for regenerating fixtures), so
/// xtask stays std-only and the files are exactly the ones the test compares.
fn corpus() -> Result {
    let test = ["test", "-p", "csf-validate", "--test", "corpus", "--", "--exact"];
    run(cargo_cmd().env("HURRAY_BLESS", "1").args(test).arg("committed_corpus_matches_the_generator"))?;
    eprintln!(
        "corpus: written to crates/csf-validate/tests/corpus/; review `git status` and the diff, then commit"
    );
    Ok(())
}

/// The proptests draw from a fixed seed here, as the Python tests do from
/// hypothesis's derandomized profile: a submission fails CI for its own
/// change, never for a coin toss. A plain `cargo test` still searches afresh
/// on every run, and `PROPTEST_RNG_SEED` set by the caller wins.
const CI_PROPTEST_SEED: &str = "20261130";

fn test() -> Result {
    run(with_ci_proptest_seed(&mut cargo_cmd()).args(["test", "--workspace", "--locked"]))
}

fn with_ci_proptest_seed(cmd: &mut Command) -> &mut Command {
    if env::var_os("PROPTEST_RNG_SEED").is_none() {
        cmd.env("PROPTEST_RNG_SEED", CI_PROPTEST_SEED);
    }
    cmd
}

fn no_args(task: &str, args: &[String]) -> Result {
    match args.first() {
        Some(extra) => Err(format!("`cargo xtask {task}` takes no arguments, got `{extra}`")),
        None => Ok(()),
    }
}

/// The cargo that runs us (cargo sets `CARGO`), so every step uses the same
/// toolchain as `cargo xtask` itself, in the workspace root.
fn cargo_cmd() -> Command {
    let mut cmd = Command::new(env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    cmd.current_dir(ROOT);
    cmd
}

fn cargo(args: &[&str]) -> Result {
    run(cargo_cmd().args(args))
}

/// `cargo +nightly` through the rustup proxy.
fn nightly_cargo() -> Command {
    toolchain_cargo("nightly")
}

/// `cargo +TOOLCHAIN` through the rustup proxy. `CARGO` and
/// `RUSTUP_TOOLCHAIN` point at the stable toolchain running us and would
/// otherwise leak into cargo-fuzz's own cargo calls.
fn toolchain_cargo(toolchain: &str) -> Command {
    let mut cmd = Command::new("cargo");
    cmd.arg(format!("+{toolchain}")).env_remove("CARGO").env_remove("RUSTUP_TOOLCHAIN").current_dir(ROOT);
    cmd
}

/// Installs a cargo subcommand from crates.io if `cargo SUBCOMMAND --version`
/// does not work: a fresh CI machine has only rustup's components.
fn ensure_installed(subcommand: &str, krate: &str) -> Result {
    let mut probe = cargo_cmd();
    probe.args([subcommand, "--version"]).stdout(Stdio::null()).stderr(Stdio::null());
    if probe.status().is_ok_and(|status| status.success()) {
        return Ok(());
    }
    eprintln!("`cargo {subcommand}` is not installed; installing {krate} from crates.io");
    cargo(&["install", krate, "--locked"])
}

/// Runs a command with its output streamed to ours.
fn run(cmd: &mut Command) -> Result {
    let shown = show(cmd);
    eprintln!("$ {shown}");
    let status = cmd.status().map_err(|e| format!("could not start `{shown}`: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("`{shown}` failed ({status})"))
    }
}

/// Runs a command and returns its stdout (stderr still streams).
fn output(cmd: &mut Command) -> Result<String> {
    let shown = show(cmd);
    eprintln!("$ {shown}");
    let out = cmd.stderr(Stdio::inherit()).output().map_err(|e| format!("could not start `{shown}`: {e}"))?;
    if !out.status.success() {
        return Err(format!("`{shown}` failed ({})", out.status));
    }
    String::from_utf8(out.stdout).map_err(|_| format!("`{shown}` printed non-UTF-8 output"))
}

/// The command as one would type it: environment overrides, program name
/// without its toolchain path, then the arguments.
fn show(cmd: &Command) -> String {
    let envs = cmd.get_envs().filter_map(|(key, value)| Some((key, value?)));
    let envs =
        envs.map(|(key, value)| format!("{}={}", key.to_string_lossy(), quote(&value.to_string_lossy())));
    let program = Path::new(cmd.get_program()).file_name().unwrap_or(cmd.get_program());
    let args = cmd.get_args().map(|arg| quote(&arg.to_string_lossy()));
    envs.chain([program.to_string_lossy().into_owned()]).chain(args).collect::<Vec<_>>().join(" ")
}

fn quote(s: &str) -> String {
    if s.is_empty() || s.contains(char::is_whitespace) {
        format!("\"{s}\"")
    } else {
        s.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use std::fs;

    use super::*;

    #[test]
    fn task_and_step_names_are_unique() {
        for names in
            [TASKS.iter().map(|t| t.name).collect::<Vec<_>>(), CI_STEPS.iter().map(|s| s.name).collect()]
        {
            for (i, name) in names.iter().enumerate() {
                assert!(!names[..i].contains(name), "`{name}` is listed twice");
            }
        }
    }

    /// Every published library is in `DOCS_RS_CRATES`, and each of those
    /// asks docs.rs for what the `docsrs` step builds.
    #[test]
    fn docs_rs_crates_and_their_metadata_agree_with_the_docsrs_step() {
        let crates = Path::new(ROOT).join("crates");
        let mut libraries = Vec::new();
        for entry in fs::read_dir(&crates).unwrap() {
            let dir = entry.unwrap().path();
            let Ok(manifest) = fs::read_to_string(dir.join("Cargo.toml")) else { continue };
            let published = !manifest.lines().any(|line| line.trim() == "publish = false");
            if published && dir.join("src/lib.rs").is_file() {
                libraries.push(dir.file_name().unwrap().to_string_lossy().into_owned());
            }
        }
        libraries.sort();
        let mut listed: Vec<String> = DOCS_RS_CRATES.iter().map(|name| name.to_string()).collect();
        listed.sort();
        assert_eq!(libraries, listed, "published libraries vs DOCS_RS_CRATES");
        for krate in DOCS_RS_CRATES {
            let manifest = fs::read_to_string(crates.join(krate).join("Cargo.toml")).unwrap();
            let table = manifest
                .split("[package.metadata.docs.rs]")
                .nth(1)
                .unwrap_or_else(|| panic!("{krate}: no [package.metadata.docs.rs]"));
            let table = table.split("\n[").next().unwrap();
            for line in ["all-features = true", r#"rustdoc-args = ["--cfg", "docsrs"]"#] {
                assert!(table.lines().any(|l| l.trim() == line), "{krate}: `{line}` missing");
            }
            let lib = fs::read_to_string(crates.join(krate).join("src/lib.rs")).unwrap();
            // Removed in 1.92 (E0557) and merged into `doc_cfg`, which now
            // marks feature-gated items by itself.
            assert!(!lib.contains("doc_auto_cfg"), "{krate}: lib.rs uses the removed feature(doc_auto_cfg)");
            assert!(
                lib.lines().any(|l| l.trim() == "#![cfg_attr(docsrs, feature(doc_cfg))]"),
                "{krate}: lib.rs lacks #![cfg_attr(docsrs, feature(doc_cfg))]"
            );
        }
    }

    /// A library claims `no_std` on crates.io (keyword `no_std` or category
    /// `no-std`) exactly when a step proves it: when `nostd-check` depends on
    /// it (no allocator), or the `embedded` step builds it for the boards
    /// (`ALLOC_LIBRARIES`: with an allocator).
    #[test]
    fn no_std_claims_are_the_crates_the_nostd_step_builds() {
        let crates = Path::new(ROOT).join("crates");
        let proof = fs::read_to_string(crates.join("nostd-check/Cargo.toml")).unwrap();
        let proof = proof.split("\n[dependencies]\n").nth(1).unwrap().split("\n[").next().unwrap();
        for krate in DOCS_RS_CRATES {
            let manifest = fs::read_to_string(crates.join(krate).join("Cargo.toml")).unwrap();
            let claims = manifest.lines().any(|line| {
                (line.starts_with("keywords") || line.starts_with("categories"))
                    && (line.contains("\"no_std\"") || line.contains("\"no-std\""))
            });
            let proven = proof.lines().any(|line| line.split(['.', ' ']).next() == Some(*krate))
                || embedded::ALLOC_LIBRARIES.contains(krate);
            assert_eq!(
                claims, proven,
                "{krate}: claims no_std: {claims}, built by nostd-check or the embedded step: {proven}"
            );
        }
    }

    #[test]
    fn commands_are_shown_as_typed() {
        let mut cmd = Command::new("/toolchain/bin/cargo");
        cmd.env("RUSTDOCFLAGS", "-D warnings").args(["doc", "--workspace"]);
        assert_eq!(show(&cmd), r#"RUSTDOCFLAGS="-D warnings" cargo doc --workspace"#);
    }
}
