//! Integration tests that run the built `hurray` binary.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::Value as Json;

mod common;
use common::{hurray, s, stderr, BIN};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn spec_tns() -> PathBuf {
    repo().join("examples/spec_example.tns")
}

fn code(out: &Output) -> i32 {
    out.status.code().expect("exited normally")
}

fn stdout(out: &Output) -> String {
    String::from_utf8(out.stdout.clone()).expect("utf-8 stdout")
}

/// Runs and requires exit 0.
#[track_caller]
fn ok<I, S>(args: I) -> Output
where
    I: IntoIterator<Item = S>,
    S: AsRef<std::ffi::OsStr>,
{
    let out = hurray(args);
    assert_eq!(code(&out), 0, "stderr: {}", stderr(&out));
    out
}

fn tmp() -> tempfile::TempDir {
    tempfile::tempdir().expect("temp dir")
}

/// The non-zeros of a `.tns` text: 1-based index -> value text.
fn nonzeros(text: &str) -> BTreeMap<Vec<u64>, f64> {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(|l| {
            let fields: Vec<&str> = l.split_whitespace().collect();
            let (value, coords) = fields.split_last().expect("fields");
            (coords.iter().map(|c| c.parse().expect("coordinate")).collect(), value.parse().expect("value"))
        })
        .collect()
}

// ---------------------------------------------------------------------------
// Every command on the spec example.

#[test]
fn convert_writes_the_spec_example_byte_for_byte() {
    let dir = tmp();
    let out = dir.path().join("spec.hurray");
    ok(["convert", s(&spec_tns()), "-o", s(&out), "--dtype", "f32", "--no-statistics"]);
    let golden = repo().join("crates/hurray-format/tests/fixtures/spec_example.hurray");
    assert_eq!(std::fs::read(&out).unwrap(), std::fs::read(golden).unwrap());
    // No temporary file is left beside it.
    let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(names, ["spec.hurray"]);
}

fn spec_file(dir: &Path, extra: &[&str]) -> PathBuf {
    let out = dir.join("spec.hurray");
    let spec = spec_tns();
    let mut args = vec!["convert", s(&spec), "-o", s(&out)];
    args.extend_from_slice(extra);
    ok(args);
    out
}

#[test]
fn inspect_describes_the_spec_example() {
    let dir = tmp();
    let file = spec_file(dir.path(), &["--dtype", "f32"]);
    let text = stdout(&ok(["inspect", s(&file)]));
    for want in ["CSF (0x09)", "f32", "[2, 3, 4]", "[0, 1, 2]", "nnz         4", "vs COO"] {
        assert!(text.contains(want), "{want} missing from\n{text}");
    }
    let json: Json = serde_json::from_str(&stdout(&ok(["inspect", "--json", s(&file)]))).unwrap();
    assert_eq!(json["layout"], "csf");
    assert_eq!(json["dtype"], "f32");
    assert_eq!(json["shape"], serde_json::json!([2, 3, 4]));
    assert_eq!(json["mode_order"], serde_json::json!([0, 1, 2]));
    assert_eq!(json["nnz"], 4);
    let nodes: Vec<u64> =
        json["levels"].as_array().unwrap().iter().map(|l| l["nodes"].as_u64().unwrap()).collect();
    assert_eq!(nodes, [2, 3, 4]);
    assert_eq!(json["levels"][1]["pos_bytes"], 24);
    assert_eq!(json["statistics"]["max"], 4.0);
    assert_eq!(json["coo_bytes"], 4 * (3 * 8 + 4));
    assert_eq!(json["file_bytes"], std::fs::metadata(&file).unwrap().len());
}

#[test]
fn validate_accepts_the_spec_example() {
    let dir = tmp();
    let file = spec_file(dir.path(), &[]);
    assert!(stdout(&ok(["validate", s(&file)])).contains(": valid (strict validation"));
    ok(["validate", "--permissive", s(&file)]);
    let json: Json = serde_json::from_str(&stdout(&ok(["validate", "--json", s(&file)]))).unwrap();
    assert_eq!(json["valid"], true);
    assert_eq!(json["errors"], serde_json::json!([]));
    assert_eq!(json["warnings"], serde_json::json!([]));
    assert_eq!(json["shape"], serde_json::json!([2, 3, 4]));
    assert_eq!(json["mode_order"], serde_json::json!([0, 1, 2]));
    assert_eq!(json["nnz"], 4);
}

#[test]
fn get_prints_one_value_a_line_in_argument_order() {
    let dir = tmp();
    let file = spec_file(dir.path(), &["--dtype", "f32"]);
    let out = ok(["get", s(&file), "1,1,2", "0,1,1", "0,0,1", "0,2,3", "1,1,0"]);
    assert_eq!(stdout(&out), "4\n0\n1\n2\n3\n");
    ok(["get", "--permissive", s(&file), "1,1,2"]);
    // An index outside the shape, or of the wrong rank, is bad data: exit 1.
    let out = hurray(["get", s(&file), "2,0,0"]);
    assert_eq!(code(&out), 1);
    assert!(stderr(&out)
        .contains("spec.hurray: index 2,0,0: coordinate 2 of dimension 0 is outside its extent 2"));
    let out = hurray(["get", s(&file), "1,1"]);
    assert_eq!(code(&out), 1);
    assert!(stderr(&out).contains("index has 2 coordinates, the tensor has rank 3"), "{}", stderr(&out));
    assert_eq!(stderr(&out).lines().count(), 1);
    // A malformed index is a usage error: exit 2.
    assert_eq!(code(&hurray(["get", s(&file), "a,b"])), 2);
}

#[test]
fn get_prints_integers_and_explicit_mode_orders_correctly() {
    let dir = tmp();
    let file = spec_file(dir.path(), &["--dtype", "i32", "--mode-order", "2,0,1"]);
    assert_eq!(stdout(&ok(["get", s(&file), "1,1,2", "0,2,3", "0,0,0"])), "4\n2\n0\n");
    let json: Json = serde_json::from_str(&stdout(&ok(["inspect", "--json", s(&file)]))).unwrap();
    assert_eq!(json["mode_order"], serde_json::json!([2, 0, 1]));
}

#[test]
fn dump_prints_the_spec_example_as_tns_and_json() {
    let dir = tmp();
    let file = spec_file(dir.path(), &["--dtype", "f32"]);
    let text = stdout(&ok(["dump", s(&file)]));
    let body: Vec<&str> = text.lines().filter(|l| !l.starts_with('#')).collect();
    assert_eq!(body, ["1 1 2 1", "1 3 4 2", "2 2 1 3", "2 2 3 4"]);
    assert!(text.contains(
        "# rebuild: hurray convert THIS.tns -o spec.hurray --shape 2,3,4 --dtype f32 --mode-order 0,1,2\n"
    ));
    let json: Json = serde_json::from_str(&stdout(&ok(["dump", "--format", "json", s(&file)]))).unwrap();
    assert_eq!(
        json,
        serde_json::json!({
            "layout": "csf", "dtype": "f32", "shape": [2, 3, 4], "mode_order": [0, 1, 2], "nnz": 4,
            "levels": [
                {"pos": [0, 2], "crd": [0, 1]},
                {"pos": [0, 2, 3], "crd": [0, 2, 1]},
                {"pos": [0, 1, 2, 4], "crd": [1, 3, 0, 2]},
            ],
            "values": [1.0, 2.0, 3.0, 4.0],
        })
    );
    // -o writes the same bytes to a file.
    let out = dir.path().join("spec.json");
    ok(["dump", "--format", "json", s(&file), "-o", s(&out)]);
    let again: Json = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
    assert_eq!(again, json);
}

// ---------------------------------------------------------------------------
// dump --prefix.

/// The entry lines of `hurray dump FILE EXTRA...`, which must exit 0.
fn dump_body(file: &Path, extra: &[&str]) -> Vec<String> {
    let mut args = vec!["dump", s(file)];
    args.extend_from_slice(extra);
    stdout(&ok(args)).lines().filter(|l| !l.starts_with('#')).map(String::from).collect()
}

#[test]
fn dump_prefix_prints_the_entries_under_a_storage_order_prefix() {
    let dir = tmp();
    let file = spec_file(dir.path(), &["--dtype", "f32"]);
    // 0-based prefixes, 1-based lines: "i=0: j=0,2 ; i=1: j=1".
    assert_eq!(dump_body(&file, &["--prefix", "0"]), ["1 1 2 1", "1 3 4 2"]);
    assert_eq!(dump_body(&file, &["--prefix", "1"]), ["2 2 1 3", "2 2 3 4"]);
    assert_eq!(dump_body(&file, &["--prefix", "0,2"]), ["1 3 4 2"]);
    assert_eq!(dump_body(&file, &["--prefix", "1, 1"]), ["2 2 1 3", "2 2 3 4"]);
    let text = stdout(&ok(["dump", s(&file), "--prefix", "0,2"]));
    assert!(text.contains("# only the entries under the prefix 0,2 (0-based, in storage order: dimension 0 = 0, dimension 1 = 2)\n"), "{text}");
    assert!(!text.contains("# rebuild"), "a part does not rebuild the file: {text}");
    // A prefix no entry has: the header alone, exit 0.
    let text = stdout(&ok(["dump", s(&file), "--prefix", "0,1"]));
    assert!(text.lines().all(|l| l.starts_with('#')) && text.lines().count() == 2, "{text}");
    // -o writes the same lines.
    let out = dir.path().join("part.tns");
    ok(["dump", s(&file), "--prefix", "1", "-o", s(&out)]);
    assert_eq!(std::fs::read_to_string(&out).unwrap(), stdout(&ok(["dump", s(&file), "--prefix", "1"])));

    // Too long or outside the shape: bad data asked for, one line, exit 1 (as `get`).
    for (prefix, want) in [
        ("1,1,2", "spec.hurray: prefix 1,1,2: 3 coordinates, but a prefix names at most rank - 1 = 2 levels"),
        ("2", "spec.hurray: prefix 2: coordinate 2 of dimension 0 is outside its extent 2 (a prefix is in storage order: dimensions 0)"),
        ("0,3", "spec.hurray: prefix 0,3: coordinate 3 of dimension 1 is outside its extent 3 (a prefix is in storage order: dimensions 0,1)"),
    ] {
        let out = hurray(["dump", s(&file), "--prefix", prefix]);
        assert_eq!(code(&out), 1, "{prefix}: {}", stderr(&out));
        assert!(stderr(&out).contains(want), "{prefix}: {}", stderr(&out));
        assert_eq!(stderr(&out).lines().count(), 1);
        assert_eq!(stdout(&out), "", "nothing printed before the error");
    }
    // Not a list of integers, or with --format json: usage errors, exit 2.
    for args in [
        &["--prefix", "x"][..],
        &["--prefix", ""],
        &["--prefix", "1,-1"],
        &["--prefix", "1", "--format", "json"],
    ] {
        let mut all = vec!["dump", s(&file)];
        all.extend_from_slice(args);
        let out = hurray(&all);
        assert_eq!(code(&out), 2, "{args:?}: {}", stderr(&out));
    }
    assert!(stderr(&hurray(["dump", s(&file), "--prefix", "1", "--format", "json"])).contains("--format tns"));
    let help = stdout(&ok(["dump", "--help"]));
    assert!(help.contains("STORAGE order") && help.contains("0-based"), "{help}");
}

#[test]
fn dump_prefix_follows_the_mode_order() {
    let dir = tmp();
    let (text, want) = random_tns(11, 3000);
    let tns = dir.path().join("in.tns");
    std::fs::write(&tns, &text).unwrap();
    for order in [[0usize, 1, 2, 3], [3, 1, 0, 2]] {
        let file = dir.path().join("t.hurray");
        let order_arg = order.map(|d| d.to_string()).join(",");
        let shape = ["--shape", "7,50,3,900"];
        ok(["convert", s(&tns), "-o", s(&file), "--mode-order", &order_arg, "-q", shape[0], shape[1]]);
        let full = dump_body(&file, &[]);
        assert_eq!(full.len(), want.len());
        // Prefixes of stored entries (storage order, 0-based) and a few absent ones.
        let mut prefixes: Vec<Vec<u64>> = Vec::new();
        for index in want.keys().step_by(397) {
            let stored: Vec<u64> = order.iter().map(|&d| index[d] - 1).collect();
            prefixes.extend((1..4).map(|k| stored[..k].to_vec()));
        }
        prefixes.extend([vec![6, 49], vec![0, 0, 2], vec![2, 2, 2]]);
        for prefix in prefixes {
            let shown = prefix.iter().map(u64::to_string).collect::<Vec<_>>().join(",");
            let got = dump_body(&file, &["--prefix", &shown]);
            // The full dump's lines whose dimension order[L] is prefix[L] (1-based there), in order.
            let expected: Vec<String> = full
                .iter()
                .filter(|line| {
                    let coords: Vec<u64> = line.split(' ').map(|c| c.parse().unwrap_or(0)).collect();
                    prefix.iter().enumerate().all(|(l, &c)| coords[order[l]] == c + 1)
                })
                .cloned()
                .collect();
            assert_eq!(got, expected, "order {order:?} prefix {shown}");
        }
    }
}

// ---------------------------------------------------------------------------
// convert -> dump -> convert.

/// A random rank-4 tensor as .tns text with comments, blank lines, CRLF,
/// tabs and values of every shape, no duplicate index.
fn random_tns(seed: u64, nnz: usize) -> (String, BTreeMap<Vec<u64>, f64>) {
    let coo = csf_testdata::synthetic(
        &[7, 50, 3, 900],
        nnz,
        csf_testdata::Distribution::PowerLaw { skew: 2.0 },
        seed,
    );
    let mut rng = csf_testdata::Rng::new(seed);
    let mut text = String::from("# a random tensor\n\n");
    let mut want = BTreeMap::new();
    for i in 0..coo.len() {
        let index: Vec<u64> = coo.index(i).iter().map(|c| c + 1).collect();
        if want.contains_key(&index) {
            continue;
        }
        let value = match rng.below(4) {
            0 => coo.values[i],
            1 => -(rng.next_f64() * 1000.0),
            2 => (rng.next_f64() - 0.5) * 1e-9,
            _ => ((rng.below(2000) as f64) - 1000.0) / 8.0,
        };
        let sep = if rng.below(5) == 0 { "\t" } else { " " };
        let coords: Vec<String> = index.iter().map(u64::to_string).collect();
        let end = if rng.below(7) == 0 { "\r\n" } else { "\n" };
        text.push_str(&format!("{}{sep}{value:?}{end}", coords.join(sep)));
        if rng.below(50) == 0 {
            text.push_str("\n# comment\n");
        }
        want.insert(index, value);
    }
    (text, want)
}

#[test]
fn convert_then_dump_reproduces_the_non_zeros_and_the_file() {
    let dir = tmp();
    let (text, want) = random_tns(7, 5000);
    let tns = dir.path().join("in.tns");
    std::fs::write(&tns, &text).unwrap();
    for order in ["identity", "auto", "3,1,0,2"] {
        let file = dir.path().join(format!("t-{order}.hurray"));
        ok(["convert", s(&tns), "-o", s(&file), "--mode-order", order, "-q"]);
        let dumped = stdout(&ok(["dump", s(&file)]));
        let got = nonzeros(&dumped);
        assert_eq!(got.len(), want.len());
        for (index, value) in &want {
            assert_eq!(got[index].to_bits(), value.to_bits(), "{index:?}");
        }
        // The flags in the dump's header comment rebuild the identical file.
        let flags = dumped.lines().find_map(|l| l.split_once(" -o t-")).unwrap().1;
        let flags: Vec<&str> = flags.split_whitespace().skip(1).collect();
        let again = dir.path().join("again.tns");
        std::fs::write(&again, &dumped).unwrap();
        let rebuilt = dir.path().join("rebuilt.hurray");
        let mut args = vec!["convert", s(&again), "-o", s(&rebuilt)];
        args.extend(flags);
        ok(args);
        assert_eq!(std::fs::read(&rebuilt).unwrap(), std::fs::read(&file).unwrap(), "order {order}");
        // And a spot check of get against the input.
        let (index, value) = want.iter().nth(want.len() / 2).unwrap();
        let zero_based: Vec<String> = index.iter().map(|c| (c - 1).to_string()).collect();
        let got: f64 = stdout(&ok(["get", s(&file), &zero_based.join(",")])).trim().parse().unwrap();
        assert_eq!(got.to_bits(), value.to_bits());
    }
}

#[test]
fn every_dtype_round_trips_through_dump() {
    let dir = tmp();
    let tns = dir.path().join("in.tns");
    std::fs::write(&tns, "1 1 1 1\n2 3 4 0\n2 1 1 -1\n1 2 3 100\n").unwrap();
    for dtype in ["f64", "f32", "i64", "i32", "i16", "i8"] {
        let file = dir.path().join(format!("{dtype}.hurray"));
        ok(["convert", s(&tns), "-o", s(&file), "--dtype", dtype]);
        let got = nonzeros(&stdout(&ok(["dump", s(&file)])));
        assert_eq!(got.values().copied().collect::<Vec<_>>(), [1.0, 100.0, -1.0, 0.0], "{dtype}");
    }
    for dtype in ["u8", "u16", "u32", "u64", "bool"] {
        let out = hurray(["convert", s(&tns), "-o", s(&dir.path().join("u.hurray")), "--dtype", dtype]);
        assert_eq!(code(&out), 1, "{dtype}");
        assert!(stderr(&out).contains("in.tns:3: value '-1'"), "{dtype}: {}", stderr(&out));
    }
    std::fs::write(&tns, "1 1 1 1\n2 3 4 0\n").unwrap();
    ok(["convert", s(&tns), "-o", s(&dir.path().join("b.hurray")), "--dtype", "bool"]);
    assert_eq!(stdout(&ok(["get", s(&dir.path().join("b.hurray")), "0,0,0", "1,2,3", "1,1,1"])), "1\n0\n0\n");
    let big = "1 1 1 18446744073709551615\n";
    std::fs::write(&tns, big).unwrap();
    ok(["convert", s(&tns), "-o", s(&dir.path().join("u64.hurray")), "--dtype", "u64"]);
    assert_eq!(stdout(&ok(["get", s(&dir.path().join("u64.hurray")), "0,0,0"])), "18446744073709551615\n");
}

#[test]
fn gzip_input_is_read_transparently() {
    let dir = tmp();
    let gz = dir.path().join("spec.tns.gz");
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    enc.write_all(&std::fs::read(spec_tns()).unwrap()).unwrap();
    std::fs::write(&gz, enc.finish().unwrap()).unwrap();
    let a = dir.path().join("a.hurray");
    let b = dir.path().join("b.hurray");
    ok(["convert", s(&gz), "-o", s(&a)]);
    ok(["convert", s(&spec_tns()), "-o", s(&b)]);
    assert_eq!(std::fs::read(&a).unwrap(), std::fs::read(&b).unwrap());
    // A corrupt gzip stream is bad data, named as such.
    std::fs::write(&gz, [0x1f, 0x8b, 8, 0, 0, 0]).unwrap();
    let out = hurray(["convert", s(&gz), "-o", s(&a)]);
    assert_eq!(code(&out), 1);
    assert!(stderr(&out).contains("spec.tns.gz: gzip:"), "{}", stderr(&out));
}

// ---------------------------------------------------------------------------
// Bad input, duplicates, shapes.

#[test]
fn a_bad_line_is_reported_as_file_colon_line() {
    let dir = tmp();
    let tns = dir.path().join("bad.tns");
    let cases: &[(&str, &str)] = &[
        ("1 1 1 1\n1 1 1\n", "bad.tns:2: found 3 fields, expected 4 (3 coordinates and a value)"),
        ("# c\n1 1 1 1\n\n1 1 1 1 5\n", "bad.tns:4: found 5 fields, expected 4"),
        ("1 1 1 1\n1 0 1 1\n", "bad.tns:2: coordinate 0 in dimension 2: .tns coordinates are 1-based"),
        ("1 1 1 x\n", "bad.tns:1: bad value 'x': not a number"),
        ("1 1 1 1\n1 1 y 1\n", "bad.tns:2: bad coordinate 'y' in dimension 3"),
        ("1 1 1 1e999\n", "bad.tns:1: value '1e999' overflows f64"),
        (
            "1 1 1 99999999999999999999 1\n",
            "bad.tns:1: coordinate 99999999999999999999 of dimension 4 overflows u64",
        ),
        ("1 1 1\n", "bad.tns:1: 2 coordinates and a value: rank 2 is below 3: CSF is for rank >= 3"),
        ("5\n", "bad.tns:1: a line needs 1-based coordinates and then a value"),
        ("# nothing\n\n", "bad.tns: no non-zeros in the file: give --shape"),
        ("1 1 2 1\n1 1 2 2\n", "bad.tns:2: duplicate of line 1: index (0,0,1) is given twice"),
    ];
    for (text, want) in cases {
        std::fs::write(&tns, text).unwrap();
        let out = hurray(["convert", s(&tns), "-o", s(&dir.path().join("o.hurray"))]);
        assert_eq!(code(&out), 1, "{text:?}");
        let err = stderr(&out);
        assert!(err.starts_with("hurray: ") && err.contains(want), "{text:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{err}");
    }
    assert!(!dir.path().join("o.hurray").exists());
}

#[test]
fn shapes_duplicates_and_empty_tensors() {
    let dir = tmp();
    let tns = dir.path().join("t.tns");
    let file = dir.path().join("t.hurray");
    std::fs::write(&tns, "1 1 2 1.5\n2 2 2 1\n1 1 2 2.25\n").unwrap();
    ok(["convert", s(&tns), "-o", s(&file), "--duplicates", "sum"]);
    assert_eq!(stdout(&ok(["get", s(&file), "0,0,1"])), "3.75\n");
    ok(["convert", s(&tns), "-o", s(&file), "--duplicates", "last", "--shape", "5,6,7"]);
    assert_eq!(stdout(&ok(["get", s(&file), "0,0,1", "4,5,6"])), "2.25\n0\n");
    let json: Json = serde_json::from_str(&stdout(&ok(["inspect", "--json", s(&file)]))).unwrap();
    assert_eq!((json["shape"].clone(), json["nnz"].clone()), (serde_json::json!([5, 6, 7]), 2.into()));
    ok(["convert", s(&tns), "-o", s(&file), "--duplicates", "first"]);
    assert_eq!(stdout(&ok(["get", s(&file), "0,0,1"])), "1.5\n");

    let out = hurray(["convert", s(&tns), "-o", s(&file), "--duplicates", "last", "--shape", "2,2,1"]);
    assert!(stderr(&out).contains("t.tns:1: coordinate 2 of dimension 3 is outside --shape's extent 1"));
    let out = hurray(["convert", s(&tns), "-o", s(&file), "--shape", "2,2,2,2"]);
    assert_eq!(code(&out), 1);
    assert!(
        stderr(&out).contains("t.tns:1: found 4 fields, but --shape has 4 dimensions"),
        "{}",
        stderr(&out)
    );
    let out = hurray(["convert", s(&tns), "-o", s(&file), "--mode-order", "1,0,3,2"]);
    assert_eq!(code(&out), 1);
    assert!(stderr(&out).contains("--mode-order has 4 entries, the tensor has rank 3"));

    // An empty file with --shape is an empty tensor.
    std::fs::write(&tns, "# no non-zeros\n").unwrap();
    ok(["convert", s(&tns), "-o", s(&file), "--shape", "3,4,5"]);
    ok(["validate", s(&file)]);
    assert_eq!(stdout(&ok(["get", s(&file), "2,3,4"])), "0\n");
    assert_eq!(nonzeros(&stdout(&ok(["dump", s(&file)]))).len(), 0);
    let json: Json = serde_json::from_str(&stdout(&ok(["dump", "--format", "json", s(&file)]))).unwrap();
    assert_eq!(json["levels"][0]["pos"], serde_json::json!([0, 0]));
    assert_eq!(json["levels"][2]["pos"], serde_json::json!([0]));
}

#[test]
fn auto_mode_order_reports_its_choice_unless_quiet() {
    let dir = tmp();
    let tns = dir.path().join("t.tns");
    // Dimension 2 has one value, dimension 0 many: auto puts dimension 2 first.
    let text: String = (1..=40).map(|i| format!("{i} {} 1 1\n", i % 3 + 1)).collect();
    std::fs::write(&tns, text).unwrap();
    let file = dir.path().join("t.hurray");
    let out = ok(["convert", s(&tns), "-o", s(&file), "--mode-order", "auto"]);
    assert!(stderr(&out).contains("--mode-order auto chose 2,"), "{}", stderr(&out));
    let out = ok(["convert", s(&tns), "-o", s(&file), "--mode-order", "auto", "--quiet"]);
    assert_eq!(stderr(&out), "");
    ok(["validate", s(&file)]);
}

#[test]
fn timings_report_each_phase() {
    let dir = tmp();
    let out = ok(["convert", s(&spec_tns()), "-o", s(&dir.path().join("t.hurray")), "--timings"]);
    let err = stderr(&out);
    for phase in ["  read ", "  parse ", "  build ", "  write ", "  total "] {
        assert!(err.contains(phase), "{phase} missing from {err}");
    }
    assert_eq!(stderr(&ok(["convert", s(&spec_tns()), "-o", s(&dir.path().join("t.hurray"))])), "");
}

// ---------------------------------------------------------------------------
// Atomic writes and I/O errors.

#[test]
fn a_failed_convert_leaves_the_target_untouched() {
    let dir = tmp();
    let target = dir.path().join("keep.hurray");
    std::fs::write(&target, b"precious").unwrap();
    let tns = dir.path().join("bad.tns");
    std::fs::write(&tns, "1 1 1 1\n1 1 1 1\n").unwrap();
    assert_eq!(code(&hurray(["convert", s(&tns), "-o", s(&target)])), 1);
    assert_eq!(std::fs::read(&target).unwrap(), b"precious");
    let mut names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
    names.sort();
    assert_eq!(names, ["bad.tns", "keep.hurray"]);
    // A good convert replaces it.
    ok(["convert", s(&spec_tns()), "-o", s(&target)]);
    ok(["validate", s(&target)]);
}

#[test]
fn unreadable_inputs_and_unwritable_outputs_exit_1_naming_the_file() {
    let dir = tmp();
    let missing = dir.path().join("missing.tns");
    let out = hurray(["convert", s(&missing), "-o", s(&dir.path().join("o.hurray"))]);
    assert_eq!(code(&out), 1);
    assert!(stderr(&out).starts_with(&format!("hurray: {}: ", missing.display())), "{}", stderr(&out));
    let out = hurray(["convert", s(&spec_tns()), "-o", s(&dir.path().join("no/such/dir/o.hurray"))]);
    assert_eq!(code(&out), 1);
    assert!(stderr(&out).contains("no/such/dir/o.hurray"), "{}", stderr(&out));
    for cmd in ["inspect", "validate", "dump"] {
        let out = hurray([cmd, s(&missing)]);
        assert_eq!(code(&out), 1, "{cmd}");
        assert!(stderr(&out).contains("missing.tns"));
    }
    // A directory, an empty file, and a text file are not Hurray files.
    let empty = dir.path().join("empty.hurray");
    std::fs::write(&empty, b"").unwrap();
    for file in [dir.path(), empty.as_path(), spec_tns().as_path()] {
        for args in [vec!["inspect"], vec!["validate"], vec!["dump"], vec!["get"]] {
            let mut args = args;
            args.push(s(file));
            if args[0] == "get" {
                args.push("0,0,0");
            }
            let out = hurray(&args);
            assert_eq!(code(&out), 1, "{args:?}");
        }
    }
    assert!(stderr(&hurray(["get", s(&spec_tns()), "0,0,0"]))
        .contains("not a readable Hurray file: byte 0: bad magic"));
}

/// Issue 11: a truncated file was reported as `BufferOutOfBounds { index: 7, .. }`.
/// Every reading command now says it is truncated, with both lengths, on one line.
#[test]
fn a_truncated_file_is_reported_as_truncated_with_both_lengths() {
    let dir = tmp();
    // The spec example, one byte short: 479 of its 480 bytes.
    let spec = spec_file(dir.path(), &["--dtype", "f32", "--no-statistics"]);
    let bytes = std::fs::read(&spec).unwrap();
    assert_eq!(bytes.len(), 480);
    let cut = dir.path().join("cut.hurray");
    std::fs::write(&cut, &bytes[..479]).unwrap();
    let want = format!(
        "hurray: {}: truncated: the file is 479 bytes, but its descriptor needs 480 (1 byte missing)\n",
        cut.display()
    );
    for args in [&["inspect"][..], &["get", "1,1,2"], &["dump"], &["dump", "--format", "json"]] {
        let mut argv = vec![args[0], s(&cut)];
        argv.extend_from_slice(&args[1..]);
        let out = hurray(&argv);
        assert_eq!(code(&out), 1, "{argv:?}");
        assert_eq!(stderr(&out), want, "{argv:?}");
        assert!(out.stdout.is_empty(), "{argv:?}");
    }
    // `validate` reports it on stdout, as it does every fault.
    let out = hurray(["validate", s(&cut)]);
    assert_eq!(code(&out), 1);
    let report = stdout(&out);
    assert!(
        report.contains(
            ": error: truncated: the file is 479 bytes, but its descriptor needs 480 (1 byte missing)"
        ),
        "{report}"
    );
    let json: Json = serde_json::from_str(&stdout(&hurray(["validate", "--json", s(&cut)]))).unwrap();
    assert_eq!(json["valid"], false);
    assert_eq!(json["errors"][0]["rule"], "decode");
    assert_eq!(
        json["errors"][0]["message"],
        "truncated: the file is 479 bytes, but its descriptor needs 480"
    );

    // A bigger real file cut in half: thousands separators.
    let (text, _) = random_tns(11, 20_000);
    let tns = dir.path().join("big.tns");
    std::fs::write(&tns, &text).unwrap();
    let big = dir.path().join("big.hurray");
    ok(["convert", s(&tns), "-o", s(&big), "-q"]);
    let bytes = std::fs::read(&big).unwrap();
    assert!(bytes.len() > 100_000, "{} bytes", bytes.len());
    let half = bytes.len() / 2;
    std::fs::write(&big, &bytes[..half]).unwrap();
    let group = |n: usize| {
        let digits = n.to_string();
        let mut out = String::new();
        for (i, c) in digits.chars().enumerate() {
            if i > 0 && (digits.len() - i) % 3 == 0 {
                out.push(',');
            }
            out.push(c);
        }
        out
    };
    let out = hurray(["inspect", s(&big)]);
    assert_eq!(code(&out), 1);
    assert_eq!(
        stderr(&out),
        format!(
            "hurray: {}: truncated: the file is {} bytes, but its descriptor needs {} ({} bytes missing)\n",
            big.display(),
            group(half),
            group(bytes.len()),
            group(bytes.len() - half)
        )
    );
}

#[test]
fn a_closed_stdout_ends_dump_quietly() {
    let dir = tmp();
    let tns = dir.path().join("big.tns");
    let text: String = (0..200_000u64)
        .map(|i| format!("{} {} {} 1\n", i % 100 + 1, i / 100 % 100 + 1, i / 10_000 + 1))
        .collect();
    std::fs::write(&tns, text).unwrap();
    let file = dir.path().join("big.hurray");
    ok(["convert", s(&tns), "-o", s(&file)]);
    let mut child = Command::new(BIN)
        .args(["dump", s(&file)])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut first).unwrap();
    assert!(first.starts_with("# hurray dump"));
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(String::from_utf8_lossy(&out.stderr), "");
}

// ---------------------------------------------------------------------------
// Usage errors.

#[test]
fn usage_errors_exit_2() {
    let dir = tmp();
    let file = spec_file(dir.path(), &[]);
    let o = dir.path().join("o.hurray");
    let spec = spec_tns();
    let cases: Vec<Vec<&str>> = vec![
        vec![],
        vec!["frobnicate"],
        vec!["convert"],
        vec!["convert", s(&spec)],
        vec!["convert", s(&spec), "-o", s(&o), "--shape", "2,x,4"],
        vec!["convert", s(&spec), "-o", s(&o), "--shape", "2,3"],
        vec!["convert", s(&spec), "-o", s(&o), "--mode-order", "0,0,1"],
        vec!["convert", s(&spec), "-o", s(&o), "--mode-order", "best"],
        vec!["convert", s(&spec), "-o", s(&o), "--dtype", "f16"],
        vec!["convert", s(&spec), "-o", s(&o), "--dtype", "float"],
        vec!["convert", s(&spec), "-o", s(&o), "--duplicates", "max"],
        vec!["convert", s(&spec), "-o", s(&o), "--bogus"],
        vec!["convert", s(&spec), "-o", s(&o), "--threads", "0"],
        vec!["inspect"],
        vec!["validate", s(&file), "--max-errors", "0"],
        vec!["get", s(&file)],
        vec!["get", s(&file), "1,x,2"],
        vec!["get", s(&file), "1,-1,2"],
        vec!["dump", s(&file), "--format", "xml"],
    ];
    for args in cases {
        let out = hurray(&args);
        assert_eq!(code(&out), 2, "{args:?}: {}", stderr(&out));
        assert!(!stderr(&out).is_empty());
    }
    assert!(stderr(&hurray(["convert", s(&spec_tns()), "-o", s(&o), "--dtype", "f16"]))
        .contains("unsupported --dtype for convert: f16"));
    assert!(!o.exists());
    assert_eq!(code(&hurray(["--help"])), 0);
    assert_eq!(code(&hurray(["--version"])), 0);
    assert_eq!(code(&hurray(["convert", "--help"])), 0);
}

// ---------------------------------------------------------------------------
// The malformed-file corpus of csf-validate.

/// `(file, expectation)` from the corpus manifest, when the corpus exists.
fn corpus() -> Option<Vec<(PathBuf, String)>> {
    let dir = repo().join("crates/csf-validate/tests/corpus");
    let manifest = std::fs::read_to_string(dir.join("MANIFEST.tsv")).ok()?;
    Some(
        manifest
            .lines()
            .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
            .map(|l| {
                let mut fields = l.split('\t');
                let name = fields.next().unwrap();
                let expect = fields.next().unwrap_or("").to_string();
                (dir.join(format!("{name}.hurray")), expect)
            })
            .collect(),
    )
}

#[test]
fn validate_agrees_with_the_corpus_manifest() {
    let Some(cases) = corpus() else {
        eprintln!("no corpus: skipped");
        return;
    };
    assert!(!cases.is_empty());
    for (file, expect) in &cases {
        let valid = expect.starts_with("valid");
        let strict = hurray(["validate", s(file)]);
        assert_eq!(code(&strict), if valid { 0 } else { 1 }, "{}: {expect}", file.display());
        let permissive_ok = valid || expect.contains("permissive=ok");
        let permissive = hurray(["validate", "--permissive", s(file)]);
        assert_eq!(code(&permissive), if permissive_ok { 0 } else { 1 }, "{}: {expect}", file.display());
        // The JSON report agrees, and names the rule the manifest expects first.
        let json: Json = serde_json::from_str(&stdout(&hurray(["validate", "--json", s(file)]))).unwrap();
        assert_eq!(json["valid"], valid, "{}", file.display());
        if let Some(rule) = expect.strip_prefix("strict=").and_then(|r| r.split_whitespace().next()) {
            assert_eq!(json["errors"][0]["rule"], rule, "{}", file.display());
        }
        if expect.starts_with("decode=") {
            assert_eq!(json["errors"][0]["rule"], "decode", "{}", file.display());
        }
        for warning in expect.split("warnings=").nth(1).map(|w| w.split(',')).into_iter().flatten() {
            let warnings = json["warnings"].as_array().unwrap();
            assert!(warnings.iter().any(|w| w["rule"] == warning.trim()), "{}", file.display());
        }
    }
}

/// A violation about one element of a buffer names its byte in the file, from
/// the start: in `validate`'s lines and JSON, and in the one-line errors of
/// `inspect` and `get`, as decode errors always did.
#[test]
fn violations_name_the_byte_of_their_element() {
    let dir = repo().join("crates/csf-validate/tests/corpus");
    // The spec example with crd_2 = [1, 3, 2, 0]: crd_2 is the last buffer,
    // four u64s ending at the end of the file, so element 3 is its last 8 bytes.
    let file = dir.join("sibling-order-leaf.hurray");
    let len = std::fs::metadata(&file).unwrap().len();
    let byte = len - 8;
    let what = "sibling coordinates not strictly increasing: 0 after 2 (level 2, buffer 6, element 3)";
    let out = hurray(["validate", s(&file)]);
    assert_eq!(code(&out), 1);
    let line = format!("{}: error: byte {byte}: {what} [sibling-order;", file.display());
    assert!(stdout(&out).starts_with(&line), "{}", stdout(&out));
    let json: Json = serde_json::from_str(&stdout(&hurray(["validate", "--json", s(&file)]))).unwrap();
    assert_eq!(json["errors"][0]["offset"], byte);
    assert_eq!(json["errors"][0]["index"], 3);
    for args in [vec!["inspect", s(&file)], vec!["get", s(&file), "0,0,0"]] {
        let err = stderr(&hurray(&args));
        let want = format!("hurray: {}: invalid CSF tensor: byte {byte}: {what} [", file.display());
        assert!(err.starts_with(&want), "{args:?}: {err}");
    }
    // A rule about a whole buffer or a descriptor field names no byte.
    let file = dir.join("values-size-f32-short.hurray");
    let json: Json = serde_json::from_str(&stdout(&hurray(["validate", "--json", s(&file)]))).unwrap();
    assert_eq!(json["errors"][0]["rule"], "values-size");
    assert_eq!(json["errors"][0]["offset"], Json::Null);
    // Decode errors give theirs in JSON too, from the start of the file.
    let file = dir.join("decode-buffer-misaligned.hurray");
    let json: Json = serde_json::from_str(&stdout(&hurray(["validate", "--json", s(&file)]))).unwrap();
    let message = json["errors"][0]["message"].as_str().unwrap();
    let offset = json["errors"][0]["offset"].as_u64().unwrap();
    assert!(message.starts_with(&format!("byte {offset}: buffer ")), "{message}");
}

#[test]
fn no_command_panics_on_any_corpus_file() {
    let Some(cases) = corpus() else {
        eprintln!("no corpus: skipped");
        return;
    };
    for (file, _) in &cases {
        for permissive in [false, true] {
            for cmd in [
                &["inspect"][..],
                &["inspect", "--json"],
                &["validate", "--json"],
                &["get", "0,0,0", "1,2,3", "0,0,0,0"],
                &["dump"],
                &["dump", "--format", "json"],
                &["dump", "--prefix", "0"],
                &["dump", "--prefix", "1,0"],
            ] {
                let mut args: Vec<&str> = vec![cmd[0], s(file)];
                args.extend_from_slice(&cmd[1..]);
                if permissive {
                    args.push("--permissive");
                }
                let out = hurray(&args);
                let c = code(&out);
                assert!(c == 0 || c == 1, "{args:?} exited {c}: {}", stderr(&out));
                if c == 1 && cmd[0] != "validate" {
                    let err = stderr(&out);
                    assert!(
                        err.lines().count() == 1 && err.starts_with("hurray: ") && err.contains(".hurray"),
                        "{args:?}: {err}"
                    );
                }
                if c == 0 && cmd[0] == "dump" && cmd.get(1) == Some(&"--format") {
                    serde_json::from_slice::<Json>(&out.stdout).unwrap_or_else(|e| panic!("{args:?}: {e}"));
                }
            }
        }
    }
}

// ---------------------------------------------------------------------------
// The real tensors in ../shared/data, when present.

#[test]
fn real_tensors_convert_validate_and_dump_back() {
    let Some(data) = csf_testdata::shared_data() else {
        eprintln!("no shared data: skipped");
        return;
    };
    let dir = tmp();
    let mut seen = 0;
    let mut files: Vec<_> = std::fs::read_dir(&data).unwrap().map(|e| e.unwrap().path()).collect();
    files.sort();
    for path in files.iter().filter(|p| p.to_string_lossy().ends_with(".tns.gz")) {
        // The reference reader, slow and simple; later duplicates win, as with --duplicates last.
        let coo = csf_testdata::read_tns(path).unwrap();
        if coo.len() > 200_000 {
            continue;
        }
        let mut want: BTreeMap<Vec<u64>, f64> = BTreeMap::new();
        for i in 0..coo.len() {
            want.insert(coo.index(i).iter().map(|c| c + 1).collect(), coo.values[i]);
        }
        let file = dir.path().join("t.hurray");
        ok(["convert", s(path), "-o", s(&file), "--duplicates", "last", "-q"]);
        ok(["validate", s(&file)]);
        let json: Json = serde_json::from_str(&stdout(&ok(["inspect", "--json", s(&file)]))).unwrap();
        assert_eq!(json["shape"], serde_json::json!(coo.shape), "{}", path.display());
        assert_eq!(json["nnz"], want.len(), "{}", path.display());
        let got = nonzeros(&stdout(&ok(["dump", s(&file)])));
        assert_eq!(got.len(), want.len(), "{}", path.display());
        assert!(
            got.iter().zip(&want).all(|(a, b)| a.0 == b.0 && a.1.to_bits() == b.1.to_bits()),
            "{}",
            path.display()
        );
        // Auto picks a valid order too.
        ok(["convert", s(path), "-o", s(&file), "--duplicates", "last", "--mode-order", "auto", "-q"]);
        ok(["validate", s(&file)]);
        seen += 1;
    }
    assert!(seen > 0, "no .tns.gz files in {}", data.display());
}

#[test]
fn quantized_values_are_printed_dequantized() {
    let file = repo().join("crates/csf-validate/tests/corpus/valid-quantization.hurray");
    if !file.exists() {
        eprintln!("no corpus: skipped");
        return;
    }
    // i8 codes 1, -2, 3, 4 with a per-tensor scale of 0.25.
    assert_eq!(stdout(&ok(["get", s(&file), "0,0,1", "0,2,3", "1,1,2", "1,0,0"])), "0.25\n-0.5\n1\n0\n");
    let body: Vec<String> =
        stdout(&ok(["dump", s(&file)])).lines().filter(|l| !l.starts_with('#')).map(str::to_string).collect();
    assert_eq!(body, ["1 1 2 0.25", "1 3 4 -0.5", "2 2 1 0.75", "2 2 3 1"]);
    let json: Json = serde_json::from_str(&stdout(&ok(["dump", "--format", "json", s(&file)]))).unwrap();
    assert_eq!(json["values"], serde_json::json!([1, -2, 3, 4]));
    assert_eq!(json["dequantized"], serde_json::json!([0.25, -0.5, 0.75, 1.0]));
    assert!(stdout(&ok(["inspect", s(&file)])).contains("PerTensor"));
}

#[test]
fn convert_quantizes_and_get_reads_back_within_the_scheme_error() {
    let dir = tmp();
    let spec = spec_tns();
    let exact = [("0,0,1", 1.0f64), ("0,2,3", 2.0), ("1,1,0", 3.0), ("1,1,2", 4.0)];
    // (scheme, largest error allowed on the spec example's values 1..=4)
    let schemes = [
        ("per-tensor", 4.0 / 127.0 / 2.0),
        ("per-tensor:u8:zp", 4.0 / 255.0 / 2.0),
        ("per-channel:axis=0:i8", 4.0 / 127.0 / 2.0),
        ("per-block:block=2:i4", 4.0 / 7.0 / 2.0),
        ("nf4:block=2", 4.0 * 0.15),
        ("mxfp:f8e4m3", 4.0 / 16.0),
        ("mxfp:f4e2m1", 1.0),
    ];
    for (scheme, bound) in schemes {
        let out = dir.path().join("q.hurray");
        ok(["convert", s(&spec), "-o", s(&out), "--quantize", scheme]);
        ok(["validate", s(&out)]);
        let indices: Vec<&str> = exact.iter().map(|(i, _)| *i).collect();
        let mut args = vec!["get", s(&out)];
        args.extend(&indices);
        let got: Vec<f64> = stdout(&ok(args)).lines().map(|l| l.parse().unwrap()).collect();
        for ((index, want), got) in exact.iter().zip(got) {
            assert!((got - want).abs() <= bound + 1e-6, "{scheme}: {index} {want} -> {got}");
        }
        let inspect = stdout(&ok(["inspect", s(&out)]));
        assert!(inspect.contains("quantized"), "{inspect}");
    }
    for bad in ["bogus", "per-channel", "per-block:block=x", "per-tensor:f9"] {
        let out = dir.path().join("bad.hurray");
        let result = hurray(["convert", s(&spec), "-o", s(&out), "--quantize", bad]);
        assert_eq!(code(&result), 2, "{bad}: {}", stderr(&result));
    }
    // A scheme that cannot store the type is a data error naming the file.
    let out = dir.path().join("bad.hurray");
    let result = hurray(["convert", s(&spec), "-o", s(&out), "--quantize", "mxfp:i8"]);
    assert_eq!(code(&result), 1, "{}", stderr(&result));
    assert!(!out.exists());
}

// ---------------------------------------------------------------------------
// Permissive reading prints what is stored, never a made-up value.

/// The spec example's tree with `edit` applied to its arrays, written as a
/// file that breaks the storage invariants (readable only permissively).
fn hostile_file(
    dir: &Path,
    name: &str,
    nnz: u64,
    levels: Vec<(Vec<u64>, Vec<u64>)>,
    values: &[f32],
) -> PathBuf {
    let values: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
    let levels = levels.into_iter().map(|(pos, crd)| csf_core::OwnedLevel { pos, crd }).collect();
    let tensor = csf_core::OwnedCsf::builder(hurray_format::ElementType::F32, vec![2, 3, 4])
        .nnz(nnz)
        .levels(levels)
        .values(values)
        .build()
        .unwrap();
    let path = dir.join(name);
    std::fs::write(&path, tensor.to_bytes().unwrap()).unwrap();
    path
}

#[test]
fn permissive_dump_prints_an_out_of_bounds_coordinate_as_stored() {
    let dir = tmp();
    let levels = vec![
        (vec![0, 2], vec![0, 1]),
        (vec![0, 2, 3], vec![0, 2, 1]),
        (vec![0, 1, 2, 4], vec![u64::MAX, 3, 0, 2]),
    ];
    let file = hostile_file(dir.path(), "oob.hurray", 4, levels, &[1.0, 2.0, 3.0, 4.0]);
    assert_eq!(code(&hurray(["dump", s(&file)])), 1, "strict reading rejects it");
    let text = stdout(&ok(["dump", "--permissive", s(&file)]));
    let body: Vec<&str> = text.lines().filter(|l| !l.starts_with('#')).collect();
    // 2^64 - 1 is 2^64 as a 1-based coordinate, not a wrapped 0.
    assert_eq!(body, ["1 1 18446744073709551616 1", "1 3 4 2", "2 2 1 3", "2 2 3 4"]);
}

#[test]
fn permissive_dump_stops_at_a_leaf_without_a_value() {
    let dir = tmp();
    // nnz 3 and three values, but the leaf level stores four leaves.
    let levels =
        vec![(vec![0, 2], vec![0, 1]), (vec![0, 2, 3], vec![0, 2, 1]), (vec![0, 1, 2, 4], vec![1, 3, 0, 2])];
    let file = hostile_file(dir.path(), "long.hurray", 3, levels, &[1.0, 2.0, 3.0]);
    let out_path = dir.path().join("out.tns");
    let out = hurray(["dump", "--permissive", s(&file), "-o", s(&out_path)]);
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("leaf 3") && err.contains("has no value"), "{err}");
    assert_eq!(err.lines().count(), 1, "one line: {err}");
    assert!(!out_path.exists(), "a failed dump leaves no half file");
    // `get` says the same of that index instead of printing 0, and JSON prints null.
    let got = hurray(["get", "--permissive", s(&file), "1,1,2"]);
    assert_eq!(code(&got), 1);
    assert!(stderr(&got).contains("leaf 3 has no value"), "{}", stderr(&got));
    assert_eq!(stdout(&ok(["get", "--permissive", s(&file), "1,1,0"])), "3\n");
    let json: Json =
        serde_json::from_str(&stdout(&ok(["dump", "--permissive", "--format", "json", s(&file)]))).unwrap();
    assert_eq!(json["values"], serde_json::json!([1.0, 2.0, 3.0]));
}

#[test]
fn validate_says_what_it_cannot_detect_and_it_is_true() {
    let help = stdout(&ok(["validate", "--help"]));
    assert!(help.contains("no checksum") && help.contains("values buffer"), "{help}");
    // A flipped bit inside the values buffer leaves a valid file with another value.
    let dir = tmp();
    let file = spec_file(dir.path(), &[]);
    let mut bytes = std::fs::read(&file).unwrap();
    let before = stdout(&ok(["get", s(&file), "0,0,1"]));
    let values_at = {
        let container = hurray_format::Container::decode(&bytes).unwrap();
        container.buffer(0).unwrap().as_ptr() as usize - bytes.as_ptr() as usize
    };
    bytes[values_at + 6] ^= 0x08; // the top mantissa bit of values[0], an f64 1.0: now 1.5
    std::fs::write(&file, &bytes).unwrap();
    ok(["validate", s(&file)]);
    assert_eq!((before.as_str(), stdout(&ok(["get", s(&file), "0,0,1"])).as_str()), ("1\n", "1.5\n"));
}

#[test]
fn convert_within_a_memory_budget_writes_the_in_memory_file() {
    let dir = tmp();
    let (text, _) = random_tns(21, 60_000);
    let tns = dir.path().join("in.tns");
    std::fs::write(&tns, &text).unwrap();
    let gz = dir.path().join("in.tns.gz");
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    std::io::Write::write_all(&mut encoder, text.as_bytes()).unwrap();
    std::fs::write(&gz, encoder.finish().unwrap()).unwrap();
    let spill = dir.path().join("spill");
    std::fs::create_dir(&spill).unwrap();
    let extras: [&[&str]; 5] = [
        &["--mode-order", "3,1,0,2"],
        &["--dtype", "f32", "--drop-zeros"],
        &["--shape", "7,50,3,900"],
        &["--quantize", "per-block:block=32:i4"],
        &["--quantize", "per-channel:axis=1:u8:zp", "--mode-order", "1,0,2,3"],
    ];
    for extra in extras {
        let want = dir.path().join("mem.hurray");
        ok([&["convert", s(&tns), "-o", s(&want), "-q"][..], extra].concat());
        for input in [&tns, &gz] {
            let got = dir.path().join("ext.hurray");
            let args = [
                "convert",
                s(input),
                "-o",
                s(&got),
                "--memory",
                "64KiB",
                "--temp-dir",
                s(&spill),
                "--timings",
            ];
            let out = ok([&args[..], extra].concat());
            assert!(stderr(&out).contains("external build within 64.0 KiB"), "{}", stderr(&out));
            assert!(
                std::fs::read(&got).unwrap() == std::fs::read(&want).unwrap(),
                "{extra:?} {input:?}: files differ"
            );
            assert_eq!(std::fs::read_dir(&spill).unwrap().count(), 0, "spill files left behind");
        }
    }
}

#[test]
fn convert_within_a_budget_reports_bad_lines_and_duplicates_by_line() {
    let dir = tmp();
    let mut text = String::new();
    for i in 1..=3000 {
        text.push_str(&format!("{} {} {} 1.5\n", i % 7 + 1, i % 11 + 1, i));
    }
    let bad = format!("{text}1 2 x 4.0\n");
    let tns = dir.path().join("bad.tns");
    std::fs::write(&tns, &bad).unwrap();
    let out = hurray(["convert", s(&tns), "-o", s(&dir.path().join("x.hurray")), "--memory", "64KiB"]);
    assert_eq!(code(&out), 1);
    assert!(stderr(&out).contains("bad.tns:3001:"), "{}", stderr(&out));
    let dup = format!("{text}{}", "2 2 1 9.0\n");
    let tns = dir.path().join("dup.tns");
    std::fs::write(&tns, &dup).unwrap();
    let out = hurray(["convert", s(&tns), "-o", s(&dir.path().join("x.hurray")), "--memory", "64KiB"]);
    assert_eq!(code(&out), 1);
    assert!(stderr(&out).contains("dup.tns:3001: duplicate of line 1:"), "{}", stderr(&out));
    let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(names.len(), 2, "only the inputs remain: {names:?}");
}

#[test]
fn convert_rejects_a_memory_budget_without_a_unit_it_knows() {
    let out = hurray(["convert", "x.tns", "-o", "y.hurray", "--memory", "1PB"]);
    assert_eq!(code(&out), 2);
    assert!(stderr(&out).contains("unknown size unit"), "{}", stderr(&out));
}

/// A full disk at any stage of the external build (entry spill files, the
/// output's buffer files, the output itself), simulated with a file-size
/// limit: one line naming the file, exit 1, and nothing left behind.
#[test]
fn convert_within_a_budget_fails_cleanly_when_the_disk_fills_at_any_stage() {
    let dir = tmp();
    let (text, _) = random_tns(22, 40_000);
    let tns = dir.path().join("in.tns");
    std::fs::write(&tns, &text).unwrap();
    let work = dir.path().join("work");
    std::fs::create_dir(&work).unwrap();
    let out = work.join("out.hurray");
    let want = dir.path().join("want.hurray");
    ok(["convert", s(&tns), "-o", s(&want), "-q"]);
    let size = std::fs::metadata(&want).unwrap().len();
    // KiB per file: below one partition's records, below the largest output
    // buffer, and below the whole output.
    for limit_kib in [4, 64, size / 1024 - 1] {
        let script = format!(
            "trap '' XFSZ; ulimit -f {limit_kib}; exec \"$0\" convert \"$1\" -o \"$2\" --memory 64KiB -q",
        );
        let run = Command::new("bash").args(["-c", &script, BIN, s(&tns), s(&out)]).output().unwrap();
        let err = String::from_utf8_lossy(&run.stderr);
        assert_eq!(run.status.code(), Some(1), "limit {limit_kib} KiB: {err}");
        assert!(err.starts_with("hurray: ") && err.lines().count() == 1, "limit {limit_kib} KiB: {err}");
        assert!(err.contains(s(&work)), "the error names the file: {err}");
        let left: Vec<_> = std::fs::read_dir(&work).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert!(left.is_empty(), "limit {limit_kib} KiB left {left:?}");
    }
}

/// A `.npy` file's dtype descriptor, shape and data bytes (format 1.0, as
/// `hurray cpd` writes it).
fn npy(path: &Path) -> (String, Vec<u64>, Vec<u8>) {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    assert_eq!(&bytes[..6], b"\x93NUMPY", "{}: the .npy magic", path.display());
    let header_len = u16::from_le_bytes([bytes[8], bytes[9]]) as usize;
    let header = std::str::from_utf8(&bytes[10..10 + header_len]).unwrap();
    assert!(header.contains("'fortran_order': False"), "C order: {header}");
    let descr = header.split("'descr': '").nth(1).unwrap().split('\'').next().unwrap().to_string();
    let shape = header.split("'shape': (").nth(1).unwrap().split(')').next().unwrap();
    let shape = shape.split(',').filter_map(|d| d.trim().parse().ok()).collect();
    (descr, shape, bytes[10 + header_len..].to_vec())
}

/// The fit of each iteration `hurray cpd` printed.
fn fits(out: &Output) -> Vec<f64> {
    stdout(out)
        .lines()
        .filter_map(|l| l.split("fit ").nth(1)?.split_whitespace().next()?.parse().ok())
        .collect()
}

#[test]
fn cpd_writes_weights_and_factors_as_npy() {
    let dir = tmp();
    let file = spec_file(dir.path(), &[]);
    let out_dir = dir.path().join("cp");
    let out = ok(["cpd", s(&file), "-r", "2", "--iters", "30", "--tol", "0", "-o", s(&out_dir)]);
    let fits = fits(&out);
    assert_eq!(fits.len(), 30, "one fit line per iteration: {}", stdout(&out));
    assert!(fits.windows(2).all(|w| w[1] >= w[0] - 1e-6), "ALS never loses fit: {fits:?}");
    let (descr, shape, data) = npy(&out_dir.join("weights.npy"));
    assert_eq!((descr.as_str(), shape.as_slice(), data.len()), ("<f8", &[2][..], 16));
    let weights: Vec<f64> = data.chunks(8).map(|c| f64::from_le_bytes(c.try_into().unwrap())).collect();
    assert!(weights[0] >= weights[1] && weights[1] >= 0.0, "weights in decreasing order: {weights:?}");
    for (n, rows) in [2u64, 3, 4].into_iter().enumerate() {
        let (descr, shape, data) = npy(&out_dir.join(format!("factor_{n}.npy")));
        assert_eq!((descr.as_str(), shape, data.len() as u64), ("<f8", vec![rows, 2], rows * 2 * 8));
        // Columns of unit 2-norm.
        let x: Vec<f64> = data.chunks(8).map(|c| f64::from_le_bytes(c.try_into().unwrap())).collect();
        for col in 0..2 {
            let norm: f64 = x.iter().skip(col).step_by(2).map(|v| v * v).sum::<f64>().sqrt();
            assert!((norm - 1.0).abs() < 1e-9, "factor {n} column {col} has norm {norm}");
        }
    }
    // No temporary file is left beside them.
    let names: Vec<String> = std::fs::read_dir(&out_dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names.len(), 4, "{names:?}");
}

#[test]
fn cpd_is_deterministic_and_reports_timings() {
    let dir = tmp();
    let file = spec_file(dir.path(), &[]);
    let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    let first = ok(["--threads", "1", "cpd", s(&file), "-r", "3", "--seed", "7", "--timings", "-o", s(&a)]);
    ok(["--threads", "1", "cpd", s(&file), "-r", "3", "--seed", "7", "-o", s(&b)]);
    for name in ["weights.npy", "factor_0.npy", "factor_1.npy", "factor_2.npy"] {
        assert_eq!(std::fs::read(a.join(name)).unwrap(), std::fs::read(b.join(name)).unwrap(), "{name}");
    }
    let timings: Vec<String> =
        stderr(&first).lines().filter(|l| l.contains("mttkrp per mode")).map(String::from).collect();
    assert_eq!(timings.len(), fits(&first).len(), "one timing line per iteration");
    let modes = timings[0].split("mttkrp per mode ").nth(1).unwrap();
    assert_eq!(modes.trim_end_matches(" s").split_whitespace().count(), 3, "{modes}");
    // A second tree and f32 factors: the same decomposition, to rounding.
    let two = ok(["cpd", s(&file), "-r", "3", "--seed", "7", "--trees", "2"]);
    let single = ok([
        "cpd",
        s(&file),
        "-r",
        "3",
        "--seed",
        "7",
        "--precision",
        "f32",
        "-o",
        s(&dir.path().join("f32")),
    ]);
    for (x, y) in fits(&two).iter().zip(fits(&first).iter()) {
        assert!((x - y).abs() < 1e-6, "two trees: {x} vs {y}");
    }
    assert_eq!(fits(&single).len(), fits(&first).len().min(fits(&single).len()));
    assert_eq!(npy(&dir.path().join("f32/factor_1.npy")).0, "<f4");
}

#[test]
fn cpd_refuses_bad_arguments_with_one_line() {
    let dir = tmp();
    let file = spec_file(dir.path(), &[]);
    let zero = hurray(["cpd", s(&file), "-r", "0"]);
    assert_eq!(code(&zero), 2, "{}", stderr(&zero));
    let missing = hurray(["cpd", s(&dir.path().join("missing.hurray")), "-r", "2"]);
    assert_eq!(code(&missing), 1);
    assert_eq!(stderr(&missing).lines().count(), 1, "{}", stderr(&missing));
    // An output "directory" that is a file: an error, and nothing written.
    let blocker = dir.path().join("blocker");
    std::fs::write(&blocker, b"x").unwrap();
    let failed = hurray(["cpd", s(&file), "-r", "2", "-o", s(&blocker)]);
    assert_eq!(code(&failed), 1, "{}", stderr(&failed));
    assert!(stderr(&failed).starts_with("hurray: "), "{}", stderr(&failed));
    assert_eq!(stderr(&failed).lines().count(), 1, "{}", stderr(&failed));
    assert_eq!(std::fs::read(&blocker).unwrap(), b"x");
}

/// `--threads 1` takes the sequential build and more threads the parallel
/// one (chunks merged after): the files are byte for byte the same.
#[test]
fn one_thread_and_two_write_the_same_file() {
    let dir = tmp();
    let input = dir.path().join("skewed.tns");
    let mut text = String::new();
    let mut state = 0x9e37_79b9_u64;
    for _ in 0..200_000 {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        // A skewed first coordinate and repeated entries, as a power law has.
        let (i, j, k) =
            (1 + (state % 97) * (state % 97) / 97, 1 + (state >> 20) % 3000, 1 + (state >> 40) % 50);
        text.push_str(&format!("{i} {j} {k} {}\n", state % 1000));
    }
    std::fs::write(&input, text).expect("write the input");
    let out = |threads: &str| {
        let path = dir.path().join(format!("t{threads}.hurray"));
        ok(["--threads", threads, "convert", s(&input), "-o", s(&path), "--duplicates", "sum", "-q"]);
        std::fs::read(path).expect("read the output")
    };
    assert_eq!(out("1"), out("2"));
}
