//! `cargo xtask miri`: the test suites of the decoder-side crates under Miri,
//! on a big-endian 64-bit target (s390x), so that the byte-wise path that
//! big-endian machines take (and every `unsafe`-free claim of no UB) is
//! checked by the whole suite, not only on little-endian hosts; and the
//! tests of csf-build's one `unsafe` module.

use std::time::Instant;

use crate::{ensure_nightly, nightly_cargo, run, Result};

/// Miri emulates this target's byte order; no cross toolchain is needed.
const TARGET: &str = "s390x-unknown-linux-gnu";

/// File access for the committed fixtures and corpus.
const MIRIFLAGS: &str = "-Zmiri-disable-isolation";

/// The CI step, a few minutes: hurray-format's unit tests and the golden
/// test of the committed fixture; csf-core's unit tests (with `alloc`, for
/// the typed slices) of lookup, iteration, values (typed reads at odd
/// addresses), quantization, typed iteration, the parts builder and `words`
/// on the spec's example and small trees, and its spec-example integration
/// test; csf-validate's rule tests on the spec's example and the i4 quantized
/// tensor, and its rank-capacity tests (`capacity`). [`full`] runs the rest,
/// 35 minutes on a 2-core machine (`docs/benchmarks.md`, embedded section):
/// csf-core's tests over synthetic trees (`find_many_spans_groups_and_long_slices`,
/// `flat_path_on_damaged_trees`, a minute or two each under Miri), every
/// proptest, the doctests, the tests of the `std` items, and the integration
/// suites `hostile`, `proptest`, `mode_orders`, `empty` (csf-core), `rules`,
/// `mutations`, `corpus` (csf-validate) and `roundtrip`, `decode_errors`
/// (hurray-format), whole. And csf-build's one `unsafe` module, `disjoint`
/// (the radix scatter's writes from several threads into disjoint ranges
/// of one array): its unit tests, which write from four threads at once
/// and past a full range, a few seconds under Miri.
const CI_TESTS: &[(&str, &[&str])] = &[
    ("hurray-format", &["--lib", "--test", "golden"]),
    (
        "csf-core",
        &[
            "--lib",
            "--features",
            "alloc",
            "--",
            "find_many_on_the_spec_example",
            "find_many_reports_bad_mode_order",
            "flat_path_declines_what_the_clamps_would_change",
            "quant::",
            "scalar::",
            "values::",
            "leaf::",
            "parts::",
            "words::",
        ],
    ),
    ("csf-core", &["--test", "spec_example"]),
    ("csf-build", &["--lib", "--", "disjoint::"]),
    ("csf-validate", &["--test", "capacity"]),
    (
        "csf-validate",
        &[
            "--test",
            "rules",
            "--",
            "the_spec_example_is_valid_both_ways",
            "sibling_order_reports_the_offending_child",
            "coordinate_bounds_use_the_extent_of_the_stored_dimension",
            "values_size_for_whole_byte_and_sub_byte_types",
            "parameter_buffers_keep_the_data_model_rules",
        ],
    ),
];

fn setup() -> Result {
    ensure_nightly()?;
    let mut add = std::process::Command::new("rustup");
    add.env_remove("RUSTUP_TOOLCHAIN").args([
        "component",
        "add",
        "miri",
        "rust-src",
        "--toolchain",
        "nightly",
    ]);
    run(&mut add)
}

fn miri_test(krate: &str, selection: &[&str]) -> Result {
    let mut cmd = nightly_cargo();
    crate::with_ci_proptest_seed(&mut cmd).env("MIRIFLAGS", MIRIFLAGS);
    // proptest's XorShift generator rather than its default ChaCha, whose
    // rounds Miri interprets at great cost: about twice as many proptest
    // cases in the same time (the caller's choice wins).
    if std::env::var_os("PROPTEST_RNG_ALGORITHM").is_none() {
        cmd.env("PROPTEST_RNG_ALGORITHM", "xs");
    }
    cmd.args(["miri", "test", "--locked", "--target", TARGET, "-p", krate]);
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

/// Every test of the three crates (doctests included), under Miri, with
/// feature `std` so that the tests of `alloc` and `std` items run too
/// (`parallel` stays off: its tests need hundreds of thousands of entries
/// and native little-endian arrays). `--no-fail-fast`, and every crate runs
/// whatever the one before did, so one run reports every failure; each
/// test's time is printed (`--report-time`).
pub(crate) fn full() -> Result {
    setup()?;
    let started = Instant::now();
    let mut times = Vec::new();
    let mut failures = Vec::new();
    for krate in ["hurray-format", "csf-core", "csf-validate"] {
        let crate_started = Instant::now();
        let selection = ["--features", "std", "--no-fail-fast", "--", "-Zunstable-options", "--report-time"];
        if let Err(e) = miri_test(krate, &selection) {
            failures.push(e);
        }
        times.push(format!("{krate} {:.0}s", crate_started.elapsed().as_secs_f64()));
    }
    let total = started.elapsed().as_secs_f64();
    let times = times.join(", ");
    if failures.is_empty() {
        eprintln!("miri: every test passed on {TARGET} in {total:.0}s ({times})");
        Ok(())
    } else {
        Err(format!("miri on {TARGET}, {total:.0}s ({times}):\n  {}", failures.join("\n  ")))
    }
}
