//! `cargo xtask features`: each library alone, under each feature set it
//! declares.
//!
//! The `test` step builds the workspace once, with the union of what its
//! members ask for: hurray-cli turns on `std` in the three decoder crates and
//! `parallel` in csf-validate, so that build never compiles a decoder crate
//! without `std`, nor csf-validate's sequential level checks. A project that
//! depends on one crate gets only the features it asks for. This step builds
//! each library with `-p` (no other member's features unified in) and
//! `--no-default-features --features SET`, for every set in [`MATRIX`], and
//! for each set runs:
//!
//! - `cargo clippy --lib -- -D warnings`: the library exactly as a dependent
//!   compiles it (no dev-dependency is built, so none can switch a feature
//!   on); a missing `cfg` gate, or an import left unused under the set, fails;
//! - then, where the set's tests can run ([`Run`]), `cargo clippy
//!   --all-targets -- -D warnings` and `cargo test` (or `cargo test --doc`).
//!
//! Whether a test build keeps the set is not taken on trust: before testing,
//! the step asks `cargo tree` which features of the crate are on with and
//! without dev-dependencies, and fails if the two differ for a set that runs
//! its tests, or agree for one that does not.

use std::collections::BTreeSet;
use std::fs;
use std::path::Path;
use std::time::Instant;

use crate::{cargo_cmd, output, run, with_ci_proptest_seed, Result, ROOT};

/// What runs for a feature set beyond `cargo clippy --lib`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Run {
    /// Clippy on every target, then `cargo test`: the test build has the
    /// crate's features of this set and no more.
    Tests,
    /// Clippy on every target, then the doc tests (the crate's README and
    /// API examples, as a user compiles them against this crate alone).
    DocTests,
    /// Nothing more: a dev-dependency turns further features of the crate on
    /// in any test build, so a test run would not test this set.
    LibOnly,
}

/// One row of the matrix: a crate, the features given to
/// `--no-default-features --features` (empty: none), and what runs.
struct Set {
    krate: &'static str,
    features: &'static str,
    run: Run,
}

const fn set(krate: &'static str, features: &'static str, run: Run) -> Set {
    Set { krate, features, run }
}

/// Every feature set of every published library; a test below checks that
/// each feature a crate declares is in some row.
///
/// - hurray-format and csf-core: their dev-dependencies turn `std` on in
///   hurray-format (the tests encode), never in the crate under test, so each
///   set runs its tests (the suites gate what needs `alloc` or `std`).
/// - csf-validate: a dev-dependency on itself with `std` (its integration
///   tests use `report`) puts `std` in every test build, so its
///   `--no-default-features` and `alloc` sets are linted and compiled only;
///   the `nostd` step also links the first into a bare-metal staticlib.
///   `std` alone is the sequential level check, which no workspace build has.
/// - csf-kernels: no dev-dependency turns on a feature of its own, so each
///   set is linted on every target; the set without features (`alloc`
///   alone: no std, no threads, no builder) runs the whole suite (the tests
///   that need TTV gate themselves on `build`), the others their doc tests,
///   and the `test` step runs everything with the defaults.
/// - csf-build declares no features: its one set is linted on every target
///   and its doc tests run. Its test suite (about 2 minutes in a debug build)
///   runs in the `test` step; alone it would differ only in csf-validate's
///   sequential path, which csf-validate's `std` set tests.
const MATRIX: &[Set] = &[
    set("hurray-format", "", Run::Tests),
    set("hurray-format", "alloc", Run::Tests),
    set("hurray-format", "std", Run::Tests),
    set("csf-core", "", Run::Tests),
    set("csf-core", "alloc", Run::Tests),
    set("csf-core", "std", Run::Tests),
    set("csf-validate", "", Run::LibOnly),
    set("csf-validate", "alloc", Run::LibOnly),
    set("csf-validate", "std", Run::Tests),
    set("csf-validate", "parallel", Run::Tests),
    set("csf-build", "", Run::DocTests),
    set("csf-kernels", "", Run::Tests),
    set("csf-kernels", "std", Run::DocTests),
    set("csf-kernels", "parallel", Run::DocTests),
    set("csf-kernels", "build", Run::DocTests),
];

/// The step: every row of [`MATRIX`], in order.
pub(crate) fn features() -> Result {
    let started = Instant::now();
    for row in MATRIX {
        let shown = if row.features.is_empty() { "no features" } else { row.features };
        eprintln!("\nfeatures: {} with {shown}", row.krate);
        let mut args = vec!["-p", row.krate, "--locked", "--no-default-features"];
        if !row.features.is_empty() {
            args.extend(["--features", row.features]);
        }
        run(cargo_cmd().arg("clippy").args(&args).args(["--lib", "--", "-D", "warnings"]))?;
        check_dev_dependencies(row, &args)?;
        if row.run == Run::LibOnly {
            continue;
        }
        run(cargo_cmd().arg("clippy").args(&args).args(["--all-targets", "--", "-D", "warnings"]))?;
        let mut test = cargo_cmd();
        with_ci_proptest_seed(&mut test).arg("test").args(&args);
        if row.run == Run::DocTests {
            test.arg("--doc");
        }
        run(&mut test)?;
    }
    eprintln!("features: {} feature sets passed in {:.0}s", MATRIX.len(), started.elapsed().as_secs_f64());
    Ok(())
}

/// Fails unless the row's [`Run`] matches what the dev-dependencies do to the
/// crate's features: with them (a test build) and without (a dependent's
/// build), `cargo tree` must list the same features of the crate exactly when
/// the row runs tests.
fn check_dev_dependencies(row: &Set, args: &[&str]) -> Result {
    let enabled = |edges: &str| -> Result<BTreeSet<String>> {
        let tree = ["tree", "--quiet", "--prefix", "none", "-e", edges, "-i", row.krate];
        let listed = output(cargo_cmd().args(tree).args(args))?;
        Ok(features_in_tree(&listed, row.krate))
    };
    let (alone, tested) = (enabled("features,normal")?, enabled("features")?);
    let added: Vec<&String> = tested.difference(&alone).collect();
    match (row.run, added.is_empty()) {
        (Run::Tests | Run::DocTests, true) | (Run::LibOnly, false) => Ok(()),
        (Run::Tests | Run::DocTests, false) => Err(format!(
            "a dev-dependency of {} turns on its features {added:?}, so its tests would not test \
             this set; make the row Run::LibOnly in xtask/src/features.rs",
            row.krate
        )),
        (Run::LibOnly, true) => Err(format!(
            "no dev-dependency of {} adds features to this set any more, so its tests can run: \
             make the row Run::Tests in xtask/src/features.rs",
            row.krate
        )),
    }
}

/// The features of `krate` that a `cargo tree -e features -i KRATE` listing
/// shows on: its lines `KRATE feature "NAME"`.
fn features_in_tree(listing: &str, krate: &str) -> BTreeSet<String> {
    let prefix = format!("{krate} feature \"");
    listing
        .lines()
        .filter_map(|line| line.trim().strip_prefix(&prefix)?.split('"').next())
        .filter(|name| *name != "default")
        .map(str::to_owned)
        .collect()
}

/// The features `crates/KRATE/Cargo.toml` declares in `[features]`, less
/// `default`, in the order written.
pub(crate) fn declared_features(krate: &str) -> Result<Vec<String>> {
    let path = Path::new(ROOT).join("crates").join(krate).join("Cargo.toml");
    let manifest = fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(features_in_manifest(&manifest))
}

fn features_in_manifest(manifest: &str) -> Vec<String> {
    let Some(table) = manifest.split("\n[features]\n").nth(1) else { return Vec::new() };
    table
        .lines()
        .take_while(|line| !line.starts_with('['))
        .filter(|line| !line.trim_start().starts_with('#'))
        .filter_map(|line| Some(line.split_once('=')?.0.trim()))
        .filter(|name| !name.is_empty() && *name != "default")
        .map(str::to_owned)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::DOCS_RS_CRATES;

    /// Each published library is in the matrix with no features, and with
    /// each feature it declares; nothing else is.
    #[test]
    fn the_matrix_covers_every_declared_feature() {
        for krate in DOCS_RS_CRATES {
            let rows: Vec<&str> =
                MATRIX.iter().filter(|row| row.krate == *krate).map(|r| r.features).collect();
            assert!(rows.contains(&""), "{krate}: no row without features");
            for feature in declared_features(krate).unwrap() {
                assert!(rows.contains(&feature.as_str()), "{krate}: feature `{feature}` has no row");
            }
        }
        for row in MATRIX {
            assert!(DOCS_RS_CRATES.contains(&row.krate), "{}: not a published library", row.krate);
        }
    }

    #[test]
    fn manifest_features_are_read() {
        let manifest = "[package]\nname = \"x\"\n\n[features]\ndefault = []\n# Comment.\nalloc = []\n\
                        std = [\"alloc\"]\n\n[dependencies]\nfoo = \"1\"\n";
        assert_eq!(features_in_manifest(manifest), ["alloc", "std"]);
        assert!(features_in_manifest("[package]\nname = \"x\"\n").is_empty());
    }

    #[test]
    fn tree_features_are_read() {
        let listing =
            "csf-validate v0.1.0 (/x)\ncsf-validate feature \"alloc\"\ncsf-validate feature \"std\"\n\
                       csf-validate feature \"default\"\ncsf-core feature \"std\"\n";
        let found: Vec<String> = features_in_tree(listing, "csf-validate").into_iter().collect();
        assert_eq!(found, ["alloc", "std"]);
    }
}
