//! `cargo xtask miri`: the test suites of the decoder-side crates under Miri,
//! on a big-endian 64-bit target (s390x), so that the byte-wise path that
//! big-endian machines take (and every `unsafe`-free claim of no UB) is
//! checked by the whole suite, not only on little-endian hosts.

use std::time::Instant;

use crate::{ensure_nightly, nightly_cargo, run, Result};

/// Miri emulates this target's byte order; no cross toolchain is needed.
const TARGET: &str = "s390x-unknown-linux-gnu";

/// File access for the committed fixtures and corpus.
const MIRIFLAGS: &str = "-Zmiri-disable-isolation";

/// The CI step: the unit tests of the three crates and the integration tests
/// that read the committed fixtures byte for byte, a few minutes on a warm
/// machine. It leaves out the integration suites over large synthetic trees
/// and the proptests (csf-core `hostile`, `proptest`, `mode_orders`, `empty`;
/// csf-validate `rules`, `mutations`, `corpus`; hurray-format `roundtrip`,
/// `decode_errors`), which `cargo xtask miri` runs.
const CI_TESTS: &[(&str, &[&str])] = &[
    ("hurray-format", &["--lib", "--test", "golden"]),
    ("csf-core", &["--lib", "--test", "spec_example"]),
    ("csf-validate", &["--lib"]),
];

fn setup() -> Result {
    ensure_nightly()?;
    let mut add = std::process::Command::new("rustup");
    add.env_remove("RUSTUP_TOOLCHAIN").args(["component", "add", "miri", "rust-src", "--toolchain", "nightly"]);
    run(&mut add)
}

fn miri_test(krate: &str, selection: &[&str]) -> Result {
    let mut cmd = nightly_cargo();
    cmd.env("MIRIFLAGS", MIRIFLAGS).args(["miri", "test", "--locked", "--target", TARGET, "-p", krate]);
    run(cmd.args(selection))
}

/// The CI step (see [`CI_TESTS`]).
pub(crate) fn ci() -> Result {
    setup()?;
    let started = Instant::now();
    for (krate, selection) in CI_TESTS {
        miri_test(krate, selection)?;
    }
    eprintln!("miri: the CI selection passed on {TARGET} in {:.0}s", started.elapsed().as_secs_f64());
    Ok(())
}

/// Every test of the three crates (doctests included), under Miri.
pub(crate) fn full() -> Result {
    setup()?;
    let started = Instant::now();
    for krate in ["hurray-format", "csf-core", "csf-validate"] {
        miri_test(krate, &[])?;
    }
    eprintln!("miri: every test passed on {TARGET} in {:.0}s", started.elapsed().as_secs_f64());
    Ok(())
}
