//! `hurray concat`: parts made by `hurray convert` of consecutive key ranges
//! join into the file `convert` makes of all the entries; bad parts are one
//! line and exit 1, with no output and no spill files left.

use std::path::{Path, PathBuf};

mod common;
use common::{hurray, s};

#[track_caller]
fn ok(args: &[&str]) {
    let out = hurray(args);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
}

/// Writes `lines` of a .tns file.
fn tns(dir: &Path, name: &str, lines: &[String]) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    path
}

/// Entries of a [9, 8, 7] tensor in identity storage order (1-based .tns lines).
fn sorted_lines() -> Vec<String> {
    let mut lines = Vec::new();
    for i in 1..=9u64 {
        for j in 1..=8u64 {
            for k in 1..=7u64 {
                if (i * 7 + j * 3 + k) % 4 == 0 || i == 3 {
                    lines.push(format!("{i} {j} {k} {}", (i * 100 + j * 10 + k) as f64 / 8.0));
                }
            }
        }
    }
    lines
}

/// The parts of `lines` cut at `cuts`, converted with the whole's shape.
fn parts(dir: &Path, lines: &[String], cuts: &[usize], extra: &[&str]) -> Vec<PathBuf> {
    let bounds: Vec<usize> = [0].into_iter().chain(cuts.iter().copied()).chain([lines.len()]).collect();
    bounds
        .windows(2)
        .enumerate()
        .map(|(n, w)| {
            let input = tns(dir, &format!("p{n}.tns"), &lines[w[0]..w[1]]);
            let part = dir.join(format!("p{n}.hurray"));
            let mut args = vec!["convert", s(&input), "-o", s(&part), "--shape", "9,8,7", "--quiet"];
            args.extend_from_slice(extra);
            ok(&args);
            part
        })
        .collect()
}

fn entries_of(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn parts_join_into_the_whole_file() {
    let dir = tempfile::tempdir().unwrap();
    let lines = sorted_lines();
    let whole = tns(dir.path(), "whole.tns", &lines);
    // Cuts inside the slice i = 3 (its path continues into the next part) and at a slice edge.
    let three = lines.iter().position(|l| l.starts_with("3 ")).unwrap();
    // Lines in the storage order of 2,0,1: key (k, i, j).
    let mut by_k = lines.clone();
    by_k.sort_by_key(|l| {
        let f: Vec<u64> = l.split(' ').take(3).map(|x| x.parse().unwrap()).collect();
        (f[2], f[0], f[1])
    });
    let cases: [(&[String], &[usize], &[&str]); 3] = [
        (&lines, &[5, three + 3, three + 20], &[]),
        (&lines, &[5, three + 3, three + 20], &["--dtype", "f32"]),
        (&by_k, &[1, 17, 60], &["--mode-order", "2,0,1"]),
    ];
    for (input, cuts, extra) in cases {
        let parts = parts(dir.path(), input, cuts, extra);
        let want = dir.path().join("want.hurray");
        let mut args = vec!["convert", s(&whole), "-o", s(&want), "--shape", "9,8,7", "--quiet"];
        args.extend_from_slice(extra);
        ok(&args);
        let out = dir.path().join("out.hurray");
        let mut args = vec!["concat"];
        args.extend(parts.iter().map(|p| s(p)));
        args.extend(["-o", s(&out)]);
        let run = hurray(&args);
        assert_eq!(run.status.code(), Some(0), "{}", String::from_utf8_lossy(&run.stderr));
        assert!(String::from_utf8_lossy(&run.stderr).starts_with("hurray: joined 4 parts into"));
        assert_eq!(std::fs::read(&out).unwrap(), std::fs::read(&want).unwrap(), "{extra:?}");
    }
    // Quantized at the join as convert quantizes the whole.
    let parts = parts(dir.path(), &lines, &[40], &[]);
    let (want, out) = (dir.path().join("want.hurray"), dir.path().join("out.hurray"));
    ok(&[
        "convert",
        s(&whole),
        "-o",
        s(&want),
        "--shape",
        "9,8,7",
        "--quantize",
        "per-block:block=16:i4",
        "--quiet",
    ]);
    ok(&[
        "concat",
        s(&parts[0]),
        s(&parts[1]),
        "-o",
        s(&out),
        "--quantize",
        "per-block:block=16:i4",
        "--quiet",
    ]);
    assert_eq!(std::fs::read(&out).unwrap(), std::fs::read(&want).unwrap());
    ok(&["convert", s(&whole), "-o", s(&want), "--shape", "9,8,7", "--no-statistics", "--quiet"]);
    ok(&["concat", s(&parts[0]), s(&parts[1]), "-o", s(&out), "--no-statistics", "--quiet"]);
    assert_eq!(std::fs::read(&out).unwrap(), std::fs::read(&want).unwrap());
    assert!(entries_of(dir.path()).iter().all(|n| n.ends_with(".tns") || n.ends_with(".hurray")));
}

#[test]
fn bad_parts_are_one_line_and_leave_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let lines = sorted_lines();
    let parts = parts(dir.path(), &lines, &[30], &[]);
    let garbage = dir.path().join("garbage.hurray");
    std::fs::write(&garbage, b"HURRAY? no").unwrap();
    let before = entries_of(dir.path());
    let out = dir.path().join("out.hurray");
    let cases: [(Vec<&str>, &str); 3] = [
        (
            vec![s(&parts[1]), s(&parts[0])],
            "p0.hurray: part 1 starts at index [0, 0, 1], which does not come after",
        ),
        (vec![s(&parts[0]), s(&garbage)], "garbage.hurray: "),
        (vec![s(&parts[0]), "missing.hurray"], "missing.hurray"),
    ];
    for (inputs, expected) in cases {
        let mut args = vec!["concat"];
        args.extend(inputs);
        args.extend(["-o", s(&out)]);
        let run = hurray(&args);
        let stderr = String::from_utf8_lossy(&run.stderr).into_owned();
        assert_eq!(run.status.code(), Some(1), "{stderr}");
        assert!(stderr.contains(expected), "{stderr}");
        assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
        assert_eq!(entries_of(dir.path()), before, "{stderr}");
    }
    let run = hurray(["concat", "-o", s(&out)]);
    assert_eq!(run.status.code(), Some(2));
    let run =
        hurray(["concat", s(&parts[0]), s(&parts[1]), "-o", s(&out), "--quantize", "per-channel:axis=7"]);
    assert_eq!(run.status.code(), Some(1), "{}", String::from_utf8_lossy(&run.stderr));
    assert_eq!(entries_of(dir.path()), before);
}
