//! Allocation bounds, measured with a counting global allocator.
//!
//! - `Container::decode`, `csf_validate::validate` and
//!   `csf_validate::validate_permissive` are the `no_std` paths: they
//!   allocate nothing at all, on any file.
//! - Decoding plus strict validation with a collecting report (the `alloc`
//!   path) allocates at most the input's length + 64 KiB: no length field can
//!   drive an allocation.
//!
//! The inputs are the validation corpus, the fuzz seeds and the regression
//! corpus (and any local fuzz corpus in `fuzz/corpus/`, which is not committed).

use csf_testdata::alloc_count::{allocated_by, CountingAlloc};
use std::fs;
use std::path::{Path, PathBuf};

use csf_validate::Mode;
use hurray_format::Container;

#[global_allocator]
static GLOBAL: CountingAlloc = CountingAlloc;

/// What decoding and validation may allocate beyond the input's length.
const SLACK: usize = 64 * 1024;

/// Violations the collecting report keeps: a cap is what bounds it.
const REPORT_CAP: usize = 1000;

const ROOT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");

fn inputs() -> Vec<PathBuf> {
    let root = Path::new(ROOT);
    let mut dirs = vec![root.join("crates/csf-validate/tests/corpus")];
    for (name, _) in csf_fuzz::TARGETS {
        for base in ["fuzz/seeds", "fuzz/corpus", "crates/csf-fuzz/regressions"] {
            dirs.push(root.join(base).join(name));
        }
    }
    let mut files = Vec::new();
    for dir in dirs {
        if let Ok(entries) = fs::read_dir(&dir) {
            files.extend(entries.map(|e| e.expect("readable directory").path()).filter(|p| p.is_file()));
        }
    }
    files.sort();
    files
}

#[test]
fn decoding_and_validation_allocate_within_bounds() {
    let files = inputs();
    assert!(!files.is_empty(), "no corpus to measure");
    let mut decoded = 0;
    for path in &files {
        let data = fs::read(path).expect("readable input");
        let name = path.display();
        let (container, bytes) = allocated_by(|| Container::decode(&data));
        assert_eq!(bytes, 0, "{name}: Container::decode allocated {bytes} bytes");
        let Ok(container) = container else { continue };
        decoded += 1;
        let (_, bytes) = allocated_by(|| csf_validate::validate(&container).map(|_| ()));
        assert_eq!(bytes, 0, "{name}: csf_validate::validate allocated {bytes} bytes");
        let (_, bytes) = allocated_by(|| csf_validate::validate_permissive(&container).map(|_| ()));
        assert_eq!(bytes, 0, "{name}: csf_validate::validate_permissive allocated {bytes} bytes");
        let (_, bytes) = allocated_by(|| {
            let container = Container::decode(&data).expect("decoded above");
            csf_validate::report(&container, Mode::Strict, REPORT_CAP)
        });
        assert!(
            bytes <= data.len() + SLACK,
            "{name}: decoding and a strict report allocated {bytes} bytes for {} input bytes",
            data.len()
        );
    }
    assert!(decoded > 0, "no input decoded: the measurement is vacuous");
}
