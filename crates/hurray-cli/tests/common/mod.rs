//! What the CLI's integration tests share: running the built `hurray`
//! binary (never a panic), and paths as arguments.

// Each test crate uses a part of this module.
#![allow(dead_code)]

use std::path::Path;
use std::process::{Command, Output, Stdio};

pub const BIN: &str = env!("CARGO_BIN_EXE_hurray");

/// Runs `hurray` with `args` (no stdin) and asserts it did not panic.
pub fn hurray<I, S>(args: I) -> Output
where
    I: IntoIterator<Item = S>,
    S: AsRef<std::ffi::OsStr>,
{
    let out = Command::new(BIN).args(args).stdin(Stdio::null()).output().expect("run hurray");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "hurray panicked: {stderr}");
    assert_ne!(out.status.code(), Some(101), "hurray panicked: {stderr}");
    out
}

pub fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// A path as a UTF-8 argument.
pub fn s(p: &Path) -> &str {
    p.to_str().expect("utf-8 path")
}
