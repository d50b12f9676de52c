//! The malformed-file corpus: small Hurray CSF files, each either valid (and
//! exercising an edge) or broken in exactly one way from a valid tensor, with
//! the expected outcome written beside it.
//!
//! Every file is built here, from code, with `hurray-format`'s encoder (or, for
//! the framing errors, by patching the encoder's output at offsets documented
//! in `docs/format.md` § 11), so that the corpus can be reviewed as a diff of
//! this module. `cargo xtask corpus` writes it to
//! `crates/csf-validate/tests/corpus/` with a `MANIFEST.tsv`; the test
//! `crates/csf-validate/tests/corpus.rs` checks that the committed files are
//! exactly what [`corpus`] generates and that every reader agrees with the
//! expectations. The fuzz targets use the files as seeds.
//!
//! Naming: `valid-*` files are valid; `decode-*` files fail
//! `Container::decode`; every other file decodes and names the rule that
//! strict validation reports first (`<rule id>-<where>`).
//!
//! One file per rule family: `valid`, `structural`, `descriptor`,
//! `quantization`, `invariants`, `empty`, `values` and `decode` make the
//! cases (in that order in [`corpus`]); `file` is the descriptor-and-buffers
//! type they edit, `tensors` the tensors they start from, `elements` the
//! encoding of values of each element type.

use std::fmt;
use std::io;
use std::path::Path;

use hurray_format::ElementType;

mod decode;
mod descriptor;
mod elements;
mod empty;
mod file;
mod invariants;
mod quantization;
mod structural;
mod tensors;
mod valid;
mod values;

use decode::decode_cases;
use descriptor::descriptor_cases;
use empty::empty_tensor_cases;
use file::Cases;
use invariants::invariant_cases;
use quantization::quantization_cases;
use structural::structural_cases;
use valid::valid_cases;
use values::values_cases;

/// What a reader must make of a corpus file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Expect {
    /// Strict validation accepts the file (with exactly the warnings listed in
    /// [`Case::warnings`]).
    Valid,
    /// `Container::decode` rejects the file with this `DecodeError` variant
    /// (its name, e.g. `"BufferGap"`).
    Decode(&'static str),
    /// The container decodes, and strict validation reports `rule` (a
    /// `csf_validate::Rule::id()`) as its first violation.
    Strict {
        /// The rule id.
        rule: &'static str,
        /// Whether permissive validation accepts the file: true iff the rule
        /// is not structural (`Rule::is_structural`).
        permissive_ok: bool,
    },
}

impl fmt::Display for Expect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Expect::Valid => f.write_str("valid"),
            Expect::Decode(variant) => write!(f, "decode={variant}"),
            Expect::Strict { rule, permissive_ok } => {
                write!(f, "strict={rule} permissive={}", if *permissive_ok { "ok" } else { "reject" })
            }
        }
    }
}

/// One corpus file.
#[derive(Clone, Debug, PartialEq)]
pub struct Case {
    /// The file stem, kebab-case (the file is `<name>.hurray`).
    pub name: &'static str,
    /// What is special about the file, or how it is broken, in one line.
    pub description: &'static str,
    /// The file's bytes.
    pub bytes: Vec<u8>,
    /// What a reader must make of it.
    pub expect: Expect,
    /// The warning ids (`csf_validate::Warning::id()`) strict validation
    /// reports, in order. Empty for almost every file.
    pub warnings: &'static [&'static str],
}

/// The `valid-type-*` case names, in [`ElementType::ALL`] order.
const TYPE_CASES: [&str; 22] = [
    "valid-type-bool",
    "valid-type-i8",
    "valid-type-i16",
    "valid-type-i32",
    "valid-type-i64",
    "valid-type-u8",
    "valid-type-u16",
    "valid-type-u32",
    "valid-type-u64",
    "valid-type-f16",
    "valid-type-bf16",
    "valid-type-f32",
    "valid-type-f64",
    "valid-type-f8e4m3",
    "valid-type-f8e5m2",
    "valid-type-e8m0",
    "valid-type-f6e2m3",
    "valid-type-f6e3m2",
    "valid-type-i4",
    "valid-type-u4",
    "valid-type-f4e2m1",
    "valid-type-nf4",
];

/// The ids of the structural rules, the ones permissive mode enforces too
/// (`csf_validate::Rule::is_structural`): everything but what csf-layout.txt
/// lets a permissive reader skip (the `mode_order` permutation, the storage
/// invariants and the empty-tensor form) and the value-content rules
/// (`docs/format.md` § 7.4). The corpus test checks this list against the
/// validator.
pub const STRUCTURAL_RULES: &[&str] = &[
    "layout-not-csf",
    "view-refused",
    "rank-below-3",
    "rank-above-64",
    "mode-order-length",
    "missing-buffer",
    "buffer-count",
    "buffer-not-u64",
    "values-size",
    "pos-size",
    "byte-offset",
    "shard-descriptor",
    "quantization-device",
    "quantization-types",
    "quantization-axis",
    "quantization-block-size",
    "quantization-size",
    "statistics-nnz",
];

/// The name of the corpus case that stands for `rank-above-64`: a rank above
/// 64 cannot get past the container decoder (the `shape` list is capped at
/// 64 entries, `DecodeError::TooLong`), so that rule is shown by a decode case.
pub const RANK_ABOVE_64_CASE: &str = "decode-rank-65";

/// The name of the corpus case that stands for `layout-not-csf`: the
/// container decoder rejects every layout but CSF
/// (`DecodeError::UnsupportedLayout`), so no decoded file reaches that rule.
pub const LAYOUT_NOT_CSF_CASE: &str = "decode-unsupported-layout-coo";

/// The values the `valid-type-*` files store at the spec example's four leaf
/// positions, as `f64` (for `nf4`: the 4-bit codes).
pub fn sample_values(ty: ElementType) -> [f64; 4] {
    match ty {
        ElementType::Bool => [1.0, 0.0, 1.0, 1.0],
        ElementType::E8M0 => [1.0, 2.0, 4.0, 8.0],
        ElementType::U8 | ElementType::U16 | ElementType::U32 | ElementType::U64 | ElementType::U4 => {
            [1.0, 2.0, 3.0, 4.0]
        }
        ElementType::NF4 => [0.0, 7.0, 8.0, 15.0],
        // Signed integers and the signed float formats.
        _ => [1.0, -2.0, 3.0, 4.0],
    }
}

/// Every case, in a fixed order. Deterministic: the same bytes on every call
/// and every machine.
pub fn corpus() -> Vec<Case> {
    let mut out = Cases(Vec::new());
    valid_cases(&mut out);
    structural_cases(&mut out);
    descriptor_cases(&mut out);
    quantization_cases(&mut out);
    invariant_cases(&mut out);
    empty_tensor_cases(&mut out);
    values_cases(&mut out);
    decode_cases(&mut out);
    out.0
}

/// The manifest: one line per case, `name<TAB>expectation<TAB>description`,
/// after a header line.
pub fn manifest(cases: &[Case]) -> String {
    let mut out = String::from("# name\texpectation\tdescription\n");
    for case in cases {
        let warnings = if case.warnings.is_empty() {
            String::new()
        } else {
            format!(" warnings={}", case.warnings.join(","))
        };
        out.push_str(&format!("{}\t{}{}\t{}\n", case.name, case.expect, warnings, case.description));
    }
    out
}

/// The manifest's file name.
pub const MANIFEST: &str = "MANIFEST.tsv";
/// The corpus files' extension.
pub const EXTENSION: &str = "hurray";

/// Writes `cases` to `dir` as `<name>.hurray` plus [`MANIFEST`], after
/// deleting every `.hurray` file already there (so no stale file survives a
/// rename). Returns the number of files written.
///
/// # Errors
/// Any I/O error.
pub fn write_dir(dir: &Path, cases: &[Case]) -> io::Result<usize> {
    std::fs::create_dir_all(dir)?;
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if path.extension().is_some_and(|e| e == EXTENSION) {
            std::fs::remove_file(&path)?;
        }
    }
    for case in cases {
        std::fs::write(dir.join(format!("{}.{EXTENSION}", case.name)), &case.bytes)?;
    }
    std::fs::write(dir.join(MANIFEST), manifest(cases))?;
    Ok(cases.len())
}
