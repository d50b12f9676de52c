//! `cargo xtask demo`: the main job end to end on two tensors, as a user
//! would run it. It builds the release `hurray` (and the project's seeded
//! generator), then for a real tensor bundled in `examples/data/` (SPLATT's
//! `med.tns`) and a ~2M non-zero power-law tensor generated on the spot:
//! `convert --mode-order auto --timings`, `inspect`, strict `validate`, `get`
//! at the coordinates of the first lines of the `.tns`, a `dump --prefix` of
//! one slice, a table of sizes (`.tns` text, COO, `.hurray`) and, when the
//! Python package is importable, one line of Python reading the same file.
//!
//! Everything runs from the workspace root, so the commands it prints are the
//! ones a user would type there. Only the part after the build is timed.

use std::env;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use crate::{cargo_cmd, quote, Result, ROOT};

/// Where the demo writes its files, relative to the workspace root.
const DIR: &str = "target/demo";

/// At most this many entries of a `dump --prefix` are shown.
const DUMP_ENTRIES: usize = 6;

/// The generated tensor: `gen_tns` arguments after the output path. 2M draws,
/// power-law skewed (a few huge slices, many tiny ones, as in real data), of
/// a shape whose natural order (largest extent first) is the worst one for
/// CSF: what `--mode-order auto` is for.
const GEN_ARGS: [&str; 6] = ["2000000", "1000000x10000x100", "3", "int", "42", "powerlaw"];

/// One tensor the demo walks through.
struct Tensor {
    /// Heading printed before its commands.
    title: &'static str,
    /// The `.tns` input, relative to the workspace root.
    input: String,
    /// The `.hurray` output, relative to the workspace root.
    output: String,
    /// `convert` options besides `--mode-order auto --timings`, and why.
    options: &'static [&'static str],
    why: &'static str,
    /// The first lines of the `.tns` (1-based coordinates, then the value).
    first_lines: Vec<String>,
    /// A 0-based index holding no entry, to show an implicit zero.
    zero: Option<&'static str>,
    /// How many leading storage-order coordinates of the first line make the
    /// `dump --prefix` slice.
    prefix_len: usize,
}

/// Builds, then runs the tour on both tensors.
pub(crate) fn demo() -> Result {
    let build = ["build", "--release", "-p", "hurray-cli", "--bin", "hurray", "--example", "gen_tns"];
    say(&format!("$ cargo {}", build.join(" ")));
    let status = cargo_cmd().args(build).status().map_err(|e| format!("could not start cargo: {e}"))?;
    if !status.success() {
        return Err(format!("`cargo {}` failed ({status})", build.join(" ")));
    }
    let started = Instant::now();
    let target =
        env::var_os("CARGO_TARGET_DIR").map_or_else(|| Path::new(ROOT).join("target"), PathBuf::from);
    let hurray = target.join("release/hurray");
    let gen_tns = target.join("release/examples/gen_tns");
    fs::create_dir_all(Path::new(ROOT).join(DIR)).map_err(|e| format!("cannot create {DIR}: {e}"))?;
    let python = importable_python();
    say(&format!("\n`hurray` below is {}: `cargo install --path crates/hurray-cli` puts it on the PATH.", {
        let rel = hurray.strip_prefix(Path::new(ROOT)).unwrap_or(&hurray);
        rel.display().to_string()
    }));

    let med = Tensor {
        title: "1. A real tensor: SPLATT's med.tns (examples/data/, MIT), 100,000 non-zeros, 2425 x 10816 x 29567",
        input: "examples/data/splatt_med.tns.gz".into(),
        output: format!("{DIR}/med.hurray"),
        options: &["--dtype", "u8"],
        why: "gzip is read directly; its values are the integers 1 to 5, hence --dtype u8",
        first_lines: ["1 201 11437 4", "1 279 23593 3", "1 2319 21439 5"].map(String::from).to_vec(),
        zero: Some("0,0,0"),
        prefix_len: 1,
    };
    tour(&hurray, &med, python.as_ref())?;

    let tns = format!("{DIR}/powerlaw.tns");
    heading("2. A generated tensor: 2M non-zeros made now by the project's seeded generator");
    say(
        "# 2,000,000 power-law draws (a few huge slices, many tiny ones) over 1000000 x 10000 x 100, seed 42",
    );
    let mut shown = vec!["cargo", "run", "--release", "-p", "hurray-cli", "--example", "gen_tns", "--", &tns];
    shown.extend(GEN_ARGS);
    // The build step built it: run the binary, which is what `cargo run` does.
    command(&shown, Command::new(&gen_tns).current_dir(ROOT).arg(&tns).args(GEN_ARGS))?;
    let first_lines = {
        let text = fs::read_to_string(Path::new(ROOT).join(&tns)).map_err(|e| format!("{tns}: {e}"))?;
        text.lines().take(3).map(String::from).collect()
    };
    let generated = Tensor {
        title: "",
        input: tns.clone(),
        output: format!("{DIR}/powerlaw.hurray"),
        options: &["--shape", "1000000,10000,100", "--duplicates", "sum", "--dtype", "u32"],
        why: "a power law draws the same index more than once: --duplicates sum adds them up",
        first_lines,
        zero: None,
        prefix_len: 2,
    };
    tour(&hurray, &generated, python.as_ref())?;

    say(&format!(
        "\ndemo: {:.1} s after the build, on {} cores; the files are in {DIR}/",
        started.elapsed().as_secs_f64(),
        std::thread::available_parallelism().map_or(1, |n| n.get())
    ));
    Ok(())
}

/// convert, inspect, validate, get, dump --prefix, sizes, Python: one tensor.
fn tour(hurray: &Path, t: &Tensor, python: Option<&PathBuf>) -> Result {
    if !t.title.is_empty() {
        heading(t.title);
    }
    let hurray = |args: &[&str]| {
        let mut cmd = Command::new(hurray);
        cmd.current_dir(ROOT).args(args);
        cmd
    };

    // convert, keeping its notes to report what `auto` saved.
    say(&format!("# {}", t.why));
    let mut args = vec!["convert", &t.input, "-o", &t.output, "--mode-order", "auto"];
    args.extend(t.options);
    args.push("--timings");
    let notes = stderr_of(&shown(&args), &mut hurray(&args))?;
    match auto_note(&notes) {
        Some((order, auto, identity)) => say(&format!(
            "=> mode order {order} saves {} bytes ({:.0}%) of pos/crd against the identity order",
            grouped(identity.saturating_sub(auto)),
            percent(identity.saturating_sub(auto), identity)
        )),
        None => {
            // The note's wording changed: measure the same by converting again.
            let plain = t.output.replace(".hurray", "-identity.hurray");
            let mut args = vec!["convert", &t.input, "-o", &plain, "-q"];
            args.extend(t.options);
            command(&shown(&args), &mut hurray(&args))?;
            let (auto, identity) = (file_len(&t.output)?, file_len(&plain)?);
            say(&format!(
                "=> --mode-order auto saves {} bytes ({:.0}%) of file against the identity order",
                grouped(identity.saturating_sub(auto)),
                percent(identity.saturating_sub(auto), identity)
            ));
        }
    }

    command(&shown(&["inspect", &t.output]), &mut hurray(&["inspect", &t.output]))?;
    let json = String::from_utf8(
        hurray(&["inspect", "--json", &t.output])
            .stderr(Stdio::inherit())
            .output()
            .map_err(|e| format!("hurray inspect --json: {e}"))?
            .stdout,
    )
    .map_err(|_| "hurray inspect --json printed non-UTF-8".to_owned())?;
    let field = |key: &str| json_u64(&json, key).ok_or(format!("`hurray inspect --json` has no {key}"));
    let (nnz, coo, file) = (field("nnz")?, field("coo_bytes")?, field("file_bytes")?);
    let mode_order = json_array(&json, "mode_order").ok_or("`hurray inspect --json` has no mode_order")?;
    let dtype = json_str(&json, "dtype").unwrap_or("?");

    let clock = Instant::now();
    command(&shown(&["validate", &t.output]), &mut hurray(&["validate", &t.output]))?;
    say(&format!("   ({} ms, process start included)", clock.elapsed().as_millis()));

    // Lookups at the first lines of the .tns, whose coordinates are 1-based.
    let lookups: Vec<Vec<u64>> = t.first_lines.iter().map(|line| zero_based(line)).collect::<Result<_>>()?;
    let mut indices: Vec<String> = lookups.iter().map(|i| join(i)).collect();
    say(&format!(
        "# the first lines of {} are `{}` (1-based, then the value); `get` takes 0-based indices{}",
        t.input,
        t.first_lines.join("`, `"),
        if t.zero.is_some() { ", and the last one is an implicit zero" } else { "" }
    ));
    indices.extend(t.zero.map(String::from));
    let mut args = vec!["get", t.output.as_str()];
    args.extend(indices.iter().map(String::as_str));
    let clock = Instant::now();
    command(&shown(&args), &mut hurray(&args))?;
    say(&format!("   ({} ms, process start included)", clock.elapsed().as_millis()));

    // One slice: the first line's leading coordinates in storage order.
    let first = lookups.first().ok_or("no first line to take a prefix from")?;
    let prefix: Vec<u64> = mode_order.iter().take(t.prefix_len).map(|&d| first[d as usize]).collect();
    let prefix = join(&prefix);
    let args = ["dump", &t.output, "--prefix", &prefix];
    let out = stdout_of(&shown(&args), &mut hurray(&args))?;
    let (comments, entries): (Vec<&str>, Vec<&str>) = out.lines().partition(|line| line.starts_with('#'));
    for line in comments.iter().chain(entries.iter().take(DUMP_ENTRIES)) {
        say(line);
    }
    if entries.len() > DUMP_ENTRIES {
        say(&format!("... ({} more entries)", entries.len() - DUMP_ENTRIES));
    }

    // Sizes.
    let rank = mode_order.len();
    say(&format!("\nsizes, {} non-zeros of rank {rank}:", grouped(nnz)));
    let mut rows = Vec::new();
    if t.input.ends_with(".gz") {
        rows.push((format!("{} (gzip)", t.input), file_len(&t.input)?));
        if let Some(plain) = gzip_size(&t.input)? {
            rows.push((".tns text, uncompressed".to_owned(), plain));
        }
    } else {
        rows.push((format!("{} (text)", t.input), file_len(&t.input)?));
    }
    rows.push((format!("COO: nnz x ({rank} u64 + one {dtype})"), coo));
    rows.push((t.output.clone(), file));
    let width = rows.iter().map(|(name, _)| name.len()).max().unwrap_or(0);
    say(&format!("  {:width$}  {:>12}  {:>7}", "", "bytes", "vs COO"));
    for (name, bytes) in rows {
        say(&format!("  {name:width$}  {:>12}  {:>6.2}x", grouped(bytes), bytes as f64 / coo as f64));
    }

    // The same file from Python.
    let first_index = indices.first().map_or("0", String::as_str).replace(',', ", ");
    let code = format!("import hurray_csf as hc; t = hc.load('{}'); print(t, t[{first_index}])", t.output);
    match python {
        Some(python) => {
            let program = python.strip_prefix(Path::new(ROOT)).unwrap_or(python).display().to_string();
            say("");
            command(&[&program, "-c", &code], Command::new(python).current_dir(ROOT).args(["-c", &code]))?;
        }
        None => say(&format!(
            "\nPython: `pip install ./crates/hurray-py` (or `cargo xtask python`, into target/python-venv), \
             then\n  python -c \"{code}\""
        )),
    }
    Ok(())
}

/// The first of `target/python-venv/bin/python` (which `cargo xtask python`
/// makes) and `python3` that can import `hurray_csf`.
fn importable_python() -> Option<PathBuf> {
    let venv = Path::new(ROOT).join("target/python-venv/bin/python");
    [venv, PathBuf::from("python3")].into_iter().find(|python| {
        Command::new(python)
            .args(["-c", "import hurray_csf"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    })
}

/// `hurray ARGS...`, as printed.
fn shown<'a>(args: &[&'a str]) -> Vec<&'a str> {
    [&["hurray"], args].concat()
}

fn heading(title: &str) {
    say(&format!("\n== {title}"));
}

/// Prints a line of the demo's own text on stdout, where the commands'
/// output goes (stdout is line-buffered, so the order is kept).
fn say(line: &str) {
    println!("{line}");
}

/// Prints `$ SHOWN`, then runs the command with its output shown.
fn command(shown: &[&str], cmd: &mut Command) -> Result {
    let shown = shown_line(shown);
    say(&format!("$ {shown}"));
    let status = cmd.status().map_err(|e| format!("could not start `{shown}`: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("`{shown}` failed ({status})"))
    }
}

/// As [`command`], returning stderr (printed as well) instead of streaming it.
fn stderr_of(shown: &[&str], cmd: &mut Command) -> Result<String> {
    let shown = shown_line(shown);
    say(&format!("$ {shown}"));
    let out = cmd
        .stdout(Stdio::inherit())
        .stderr(Stdio::piped())
        .output()
        .map_err(|e| format!("could not start `{shown}`: {e}"))?;
    let text = String::from_utf8_lossy(&out.stderr).into_owned();
    eprint!("{text}");
    if out.status.success() {
        Ok(text)
    } else {
        Err(format!("`{shown}` failed ({})", out.status))
    }
}

/// As [`command`], returning stdout instead of printing it.
fn stdout_of(shown: &[&str], cmd: &mut Command) -> Result<String> {
    let shown = shown_line(shown);
    say(&format!("$ {shown}"));
    let out = cmd.stderr(Stdio::inherit()).output().map_err(|e| format!("could not start `{shown}`: {e}"))?;
    if !out.status.success() {
        return Err(format!("`{shown}` failed ({})", out.status));
    }
    String::from_utf8(out.stdout).map_err(|_| format!("`{shown}` printed non-UTF-8 output"))
}

fn shown_line(words: &[&str]) -> String {
    words.iter().map(|w| quote(w)).collect::<Vec<_>>().join(" ")
}

/// `convert`'s note `--mode-order auto chose 2,1,0: A bytes of pos/crd
/// (identity 0,1,2 stores B ...`: the order, A and B.
fn auto_note(notes: &str) -> Option<(String, u64, u64)> {
    let line = notes.lines().find(|line| line.contains("--mode-order auto chose "))?;
    let (_, rest) = line.split_once("auto chose ")?;
    let (order, rest) = rest.split_once(": ")?;
    let (auto, rest) = rest.split_once(" bytes of pos/crd")?;
    let (_, identity) = rest.split_once("(identity ")?.1.split_once(" stores ")?;
    let identity: String = identity.chars().take_while(char::is_ascii_digit).collect();
    Some((order.to_owned(), auto.trim().parse().ok()?, identity.parse().ok()?))
}

/// A `.tns` line's coordinates, made 0-based.
fn zero_based(line: &str) -> Result<Vec<u64>> {
    let words: Vec<&str> = line.split_whitespace().collect();
    let (_, coordinates) = words.split_last().ok_or_else(|| format!("empty .tns line `{line}`"))?;
    coordinates
        .iter()
        .map(|c| c.parse::<u64>().ok().and_then(|c| c.checked_sub(1)))
        .collect::<Option<_>>()
        .ok_or_else(|| format!("`{line}` does not start with 1-based coordinates"))
}

fn join(index: &[u64]) -> String {
    index.iter().map(u64::to_string).collect::<Vec<_>>().join(",")
}

fn file_len(path: &str) -> Result<u64> {
    fs::metadata(Path::new(ROOT).join(path)).map(|m| m.len()).map_err(|e| format!("{path}: {e}"))
}

/// The uncompressed size a one-member gzip file records in its last four
/// bytes (ISIZE, the size modulo 2^32): exact below 4 GiB.
fn gzip_size(path: &str) -> Result<Option<u64>> {
    let bytes = fs::read(Path::new(ROOT).join(path)).map_err(|e| format!("{path}: {e}"))?;
    Ok(bytes.len().checked_sub(4).map(|at| {
        let isize = [bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]];
        u64::from(u32::from_le_bytes(isize))
    }))
}

/// `"key":123` in flat JSON (the first occurrence).
fn json_u64(json: &str, key: &str) -> Option<u64> {
    let (_, rest) = json.split_once(&format!("\"{key}\":"))?;
    rest.chars().take_while(char::is_ascii_digit).collect::<String>().parse().ok()
}

/// `"key":[1,2,3]` in flat JSON.
fn json_array(json: &str, key: &str) -> Option<Vec<u64>> {
    let (_, rest) = json.split_once(&format!("\"{key}\":["))?;
    let (list, _) = rest.split_once(']')?;
    list.split(',').map(|n| n.trim().parse().ok()).collect()
}

/// `"key":"text"` in flat JSON.
fn json_str<'a>(json: &'a str, key: &str) -> Option<&'a str> {
    let (_, rest) = json.split_once(&format!("\"{key}\":\""))?;
    rest.split_once('"').map(|(text, _)| text)
}

/// 1234567 as `1,234,567`.
fn grouped(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

fn percent(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        100.0 * part as f64 / whole as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_converts_auto_note() {
        let notes =
            "hurray: --mode-order auto chose 2,1,0: 24743096 bytes of pos/crd (identity 0,1,2 stores \
                     58205912, shortest-extent-first 2,1,0 stores 24743096)\nhurray: timings: ...";
        assert_eq!(auto_note(notes), Some(("2,1,0".to_owned(), 24_743_096, 58_205_912)));
        let notes =
            "hurray: --mode-order auto chose 0,2,1: 2104896 bytes of pos/crd (identity 0,1,2 stores 2400032)";
        assert_eq!(auto_note(notes), Some(("0,2,1".to_owned(), 2_104_896, 2_400_032)));
        assert_eq!(auto_note("hurray: timings: ..."), None);
    }

    #[test]
    fn small_helpers() {
        assert_eq!(zero_based("1 201 11437 4.000000"), Ok(vec![0, 200, 11436]));
        assert!(zero_based("0 1 2 3").is_err());
        assert_eq!(grouped(0), "0");
        assert_eq!(grouped(644_104), "644,104");
        assert_eq!(grouped(55_780_676), "55,780,676");
        let json =
            r#"{"coo_bytes":2500000,"dtype":"u8","mode_order":[0,2,1],"nnz":100000,"statistics":{"nnz":7}}"#;
        assert_eq!(json_u64(json, "nnz"), Some(100_000));
        assert_eq!(json_u64(json, "coo_bytes"), Some(2_500_000));
        assert_eq!(json_array(json, "mode_order"), Some(vec![0, 2, 1]));
        assert_eq!(json_str(json, "dtype"), Some("u8"));
    }
}
