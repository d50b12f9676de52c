//! `cargo xtask msrv`: each published crate builds with the oldest toolchain
//! it declares (`rust-version`), with the committed `Cargo.lock`.
//!
//! The versions are read from the manifests, so the step checks what is
//! declared: the libraries inherit the workspace's (`[workspace.package]`),
//! the CLI declares its own. Crates that declare the same version are checked
//! together with `--all-features` (every feature-gated item), and each one
//! that declares features is also checked alone with `--no-default-features`
//! (the no_std, sequential code, which `--all-features` compiles out). Only
//! libraries and the binary are checked, not their tests: the test-only
//! dependencies (proptest, criterion) follow newer Rust.

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;
use std::time::Instant;

use crate::features::declared_features;
use crate::{ensure_toolchain, run, target_subdir, toolchain_cargo, Result, ROOT};

/// The crates whose `rust-version` is a promise to users: the published
/// libraries and the CLI.
const CRATES: &[&str] =
    &["hurray-format", "csf-core", "csf-validate", "csf-build", "csf-kernels", "hurray-cli"];

/// The step: for each declared version, install that toolchain if missing
/// and `cargo +VERSION check --locked` the crates that declare it.
pub(crate) fn msrv() -> Result {
    let started = Instant::now();
    let mut by_version: BTreeMap<String, Vec<&str>> = BTreeMap::new();
    for krate in CRATES {
        by_version.entry(declared_rust_version(krate)?).or_default().push(krate);
    }
    // One target dir for every old toolchain: cargo keeps each compiler's
    // artifacts apart by its version, and the stable dir stays untouched.
    let target_dir = target_subdir("msrv");
    for (version, crates) in &by_version {
        ensure_toolchain(version)?;
        let hint = |e: String| {
            format!(
                "{e}\n  {} declare rust-version {version}. If cargo names a dependency that needs a newer \
                 Rust, pin it back (`cargo update -p NAME --precise VERSION`) or raise rust-version \
                 (docs/architecture.md, \"MSRV\")",
                crates.join(", ")
            )
        };
        let check = || {
            let mut cmd = toolchain_cargo(version);
            cmd.args(["check", "--locked", "--target-dir"]).arg(&target_dir);
            cmd
        };
        for krate in crates {
            if !declared_features(krate)?.is_empty() {
                run(check().args(["-p", krate, "--no-default-features"])).map_err(hint)?;
            }
        }
        let mut all = check();
        for krate in crates {
            all.args(["-p", krate]);
        }
        run(all.arg("--all-features")).map_err(hint)?;
    }
    let checked: Vec<String> =
        by_version.iter().map(|(version, crates)| format!("{} on {version}", crates.join(", "))).collect();
    eprintln!("msrv: {} build, in {:.0}s", checked.join("; "), started.elapsed().as_secs_f64());
    Ok(())
}

/// `crates/KRATE/Cargo.toml`'s `rust-version`, or the workspace's when it
/// inherits it.
fn declared_rust_version(krate: &str) -> Result<String> {
    let read = |path: &Path| fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()));
    let root = Path::new(ROOT);
    let manifest = read(&root.join("crates").join(krate).join("Cargo.toml"))?;
    match rust_version(&manifest) {
        Some(RustVersion::Own(version)) => Ok(version),
        Some(RustVersion::Workspace) => match rust_version(&read(&root.join("Cargo.toml"))?) {
            Some(RustVersion::Own(version)) => Ok(version),
            _ => Err("the workspace's Cargo.toml declares no rust-version".into()),
        },
        None => {
            Err(format!("{krate} declares no rust-version, so it promises none; the msrv step needs one"))
        }
    }
}

#[derive(Debug, PartialEq, Eq)]
enum RustVersion {
    Own(String),
    Workspace,
}

/// The first `rust-version` line of a manifest (a package's, or the
/// `[workspace.package]` one in the root manifest).
fn rust_version(manifest: &str) -> Option<RustVersion> {
    manifest.lines().find_map(|line| {
        let line = line.trim();
        if line.starts_with("rust-version.workspace") {
            return Some(RustVersion::Workspace);
        }
        let value = line.strip_prefix("rust-version")?.trim_start().strip_prefix('=')?.trim();
        Some(RustVersion::Own(value.strip_prefix('"')?.split('"').next()?.to_owned()))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rust_versions_are_read() {
        assert_eq!(
            rust_version("[package]\n# rust-version is below\nrust-version = \"1.85\" # clap\n"),
            Some(RustVersion::Own("1.85".into()))
        );
        assert_eq!(rust_version("rust-version.workspace = true\n"), Some(RustVersion::Workspace));
        assert_eq!(rust_version("[package]\nname = \"x\"\n"), None);
    }

    /// Every crate of the step has a version to check, and the libraries
    /// promise no newer Rust than the CLI built on them.
    #[test]
    fn every_crate_declares_a_version() {
        let minor = |v: &str| v.split('.').nth(1).and_then(|m| m.parse::<u32>().ok()).unwrap();
        let cli = minor(&declared_rust_version("hurray-cli").unwrap());
        for krate in CRATES {
            let version = declared_rust_version(krate).unwrap();
            assert!(version.starts_with("1."), "{krate}: {version}");
            assert!(minor(&version) <= cli, "{krate} declares {version}, newer than the CLI built on it");
        }
    }
}
