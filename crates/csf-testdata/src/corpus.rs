//! The malformed-file corpus: small Hurray CSF files, each either valid (and
//! exercising an edge) or broken in exactly one way from a valid tensor, with
//! the expected outcome written beside it.
//!
//! Every file is built here, from code, with `hurray-format`'s encoder (or, for
//! the framing errors, by patching the encoder's output at offsets documented
//! in `docs/format.md` § 11), so that the corpus can be reviewed as a diff of
//! this file. `cargo xtask corpus` writes it to
//! `crates/csf-validate/tests/corpus/` with a `MANIFEST.tsv`; the test
//! `crates/csf-validate/tests/corpus.rs` checks that the committed files are
//! exactly what [`corpus`] generates and that every reader agrees with the
//! expectations. The fuzz targets use the files as seeds.
//!
//! Naming: `valid-*` files are valid; `decode-*` files fail
//! `Container::decode`; every other file decodes and names the rule that
//! strict validation reports first (`<rule id>-<where>`).

use std::fmt;
use std::io;
use std::path::Path;

use hurray_format::{
    BufferEntry, BufferTable, Descriptor, DeviceTag, ElementType, FixedVec, QuantScheme, Quantization,
    ShardDescriptor, Statistics,
};

use crate::{reference_csf, synthetic, CsfArrays, Distribution, TestTensor};

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

// ---------------------------------------------------------------------------
// Building files.

struct Cases(Vec<Case>);

impl Cases {
    fn push(&mut self, name: &'static str, expect: Expect, description: &'static str, bytes: Vec<u8>) {
        assert!(
            !description.contains(['\t', '\n'])
                && !name.contains(|c: char| !(c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')),
            "case {name}: bad name or description"
        );
        assert!(self.0.iter().all(|c| c.name != name), "case {name} is defined twice");
        self.0.push(Case { name, description, bytes, expect, warnings: &[] });
    }

    fn valid(&mut self, name: &'static str, description: &'static str, file: &File) {
        self.push(name, Expect::Valid, description, file.encode());
    }

    fn strict(&mut self, name: &'static str, rule: &'static str, description: &'static str, file: &File) {
        let permissive_ok = !STRUCTURAL_RULES.contains(&rule);
        self.push(name, Expect::Strict { rule, permissive_ok }, description, file.encode());
    }

    fn decode(
        &mut self,
        name: &'static str,
        variant: &'static str,
        description: &'static str,
        bytes: Vec<u8>,
    ) {
        self.push(name, Expect::Decode(variant), description, bytes);
    }
}

const HOST: DeviceTag = DeviceTag::HOST;
const CUDA: DeviceTag = DeviceTag::CUDA;

/// A descriptor and its buffers, before encoding. The buffer table's rows are
/// made from `buffers` at encoding time (the encoder computes offsets and
/// lengths; only the device tags are ours).
#[derive(Clone, Debug)]
struct File {
    desc: Descriptor,
    buffers: Vec<(Vec<u8>, DeviceTag)>,
}

fn le(words: &[u64]) -> Vec<u8> {
    words.iter().flat_map(|w| w.to_le_bytes()).collect()
}

fn pos_buffer(level: usize) -> usize {
    hurray_format::csf::pos_buffer(level)
}

fn crd_buffer(level: usize) -> usize {
    hurray_format::csf::crd_buffer(level)
}

impl File {
    fn new(
        ty: ElementType,
        shape: &[u64],
        mode_order: &[u32],
        nnz: u64,
        levels: &[(Vec<u64>, Vec<u64>)],
        values: Vec<u8>,
    ) -> Self {
        let desc = Descriptor::csf_unchecked(ty, shape, mode_order, nnz).expect("rank <= 64");
        let mut buffers = vec![(values, HOST)];
        for (pos, crd) in levels {
            buffers.push((le(pos), HOST));
            buffers.push((le(crd), HOST));
        }
        Self { desc, buffers }
    }

    /// The tree `reference_csf` builds, values encoded as `ty`.
    fn from_arrays(a: &CsfArrays, ty: ElementType) -> Self {
        Self::new(ty, &a.shape, &a.mode_order, a.nnz() as u64, &a.levels, values_bytes(ty, &a.values))
    }

    fn encode(&self) -> Vec<u8> {
        let mut d = self.desc;
        d.buffers = BufferTable::new();
        for (_, tag) in &self.buffers {
            d.buffers
                .push(BufferEntry { offset: 0, length: 0, device_tag: *tag })
                .expect("at most 137 buffers");
        }
        let slices: Vec<&[u8]> = self.buffers.iter().map(|(b, _)| b.as_slice()).collect();
        hurray_format::encode_to_vec(&d, &slices).expect("the corpus encodes")
    }

    fn words(&self, buffer: usize) -> Vec<u64> {
        self.buffers[buffer]
            .0
            .chunks_exact(8)
            .map(|c| u64::from_le_bytes(c.try_into().expect("8 bytes")))
            .collect()
    }

    fn set_words(&mut self, buffer: usize, words: &[u64]) {
        self.buffers[buffer].0 = le(words);
    }

    /// Checks that buffer `buffer` holds `was`, then replaces it with `now`:
    /// each hand-made breakage states the array it starts from.
    fn replace(mut self, buffer: usize, was: &[u64], now: &[u64]) -> Self {
        assert_eq!(self.words(buffer), was, "buffer {buffer} is not what the breakage expects");
        self.set_words(buffer, now);
        self
    }

    fn with(mut self, f: impl FnOnce(&mut Self)) -> Self {
        f(&mut self);
        self
    }

    /// `shape[mode_order[level]]`.
    fn extent(&self, level: usize) -> u64 {
        self.desc.shape[self.desc.mode_order[level] as usize]
    }

    /// The node ranges of the parents of `level`, from `pos_level`.
    fn slices(&self, level: usize) -> Vec<(usize, usize)> {
        let pos = self.words(pos_buffer(level));
        pos.windows(2).map(|w| (w[0] as usize, w[1] as usize)).collect()
    }

    /// Swaps the first two children of the first parent at `level` with two
    /// or more: breaks invariant 4 and nothing else.
    fn swap_siblings(mut self, level: usize) -> Self {
        let (start, _) =
            *self.slices(level).iter().find(|(s, e)| e - s >= 2).expect("a parent with two children");
        let mut crd = self.words(crd_buffer(level));
        crd.swap(start, start + 1);
        self.set_words(crd_buffer(level), &crd);
        self
    }

    /// Sets the last child of the first non-empty parent at `level` to the
    /// level's bound: still sorted, but breaks invariant 5.
    fn past_bound(mut self, level: usize) -> Self {
        let (_, end) = *self.slices(level).iter().find(|(s, e)| e > s).expect("a non-empty parent");
        let mut crd = self.words(crd_buffer(level));
        crd[end - 1] = self.extent(level);
        self.set_words(crd_buffer(level), &crd);
        self
    }

    /// Sets `pos_level[0]` to 1 (the first parent must have a child, so that
    /// `pos` stays non-decreasing): breaks invariant 1 and nothing else.
    fn pos_start(mut self, level: usize) -> Self {
        let mut pos = self.words(pos_buffer(level));
        assert!(pos[0] == 0 && pos[1] >= 1, "the first parent of level {level} has a child");
        pos[0] = 1;
        self.set_words(pos_buffer(level), &pos);
        self
    }

    /// Lowers the terminal `pos_level` entry by one (the last parent must have
    /// a child): breaks invariant 3 and nothing else.
    fn short_terminal(mut self, level: usize) -> Self {
        let mut pos = self.words(pos_buffer(level));
        let n = pos.len();
        assert!(pos[n - 1] > pos[n - 2], "the last parent of level {level} has a child");
        pos[n - 1] -= 1;
        self.set_words(pos_buffer(level), &pos);
        self
    }

    /// Appends a copy of the terminal `pos_level` entry: one entry too many,
    /// every invariant still holds.
    fn extra_pos_entry(mut self, level: usize) -> Self {
        let mut pos = self.words(pos_buffer(level));
        pos.push(*pos.last().expect("pos is not empty"));
        self.set_words(pos_buffer(level), &pos);
        self
    }
}

// ---------------------------------------------------------------------------
// Values.

/// `v`, a normal number exactly representable in the format, as a minifloat
/// with `exp_bits` exponent bits, `man_bits` mantissa bits and `bias`.
fn minifloat(v: f64, exp_bits: u32, man_bits: u32, bias: i32) -> u64 {
    let sign = u64::from(v.is_sign_negative()) << (exp_bits + man_bits);
    let a = v.abs();
    if a == 0.0 {
        return sign;
    }
    let e = a.log2().floor() as i32;
    let scaled = (a / 2f64.powi(e) - 1.0) * f64::from(1u32 << man_bits);
    assert_eq!(scaled, scaled.round(), "{v} is not exact in this format");
    let biased = e + bias;
    assert!(biased > 0 && biased < (1 << exp_bits), "{v} is not a normal number in this format");
    sign | (biased as u64) << man_bits | scaled as u64
}

/// The raw bits of one value of `ty` (small integers and simple floats only).
fn value_bits(ty: ElementType, v: f64) -> u64 {
    match ty {
        ElementType::Bool => u64::from(v != 0.0),
        ElementType::I8 | ElementType::I16 | ElementType::I32 | ElementType::I64 | ElementType::I4 => {
            v as i64 as u64
        }
        ElementType::U8 | ElementType::U16 | ElementType::U32 | ElementType::U64 | ElementType::U4 => {
            v as u64
        }
        ElementType::NF4 => v as u64,
        ElementType::F16 => minifloat(v, 5, 10, 15),
        ElementType::BF16 => u64::from((v as f32).to_bits() >> 16),
        ElementType::F32 => u64::from((v as f32).to_bits()),
        ElementType::F64 => v.to_bits(),
        ElementType::F8E4M3 => minifloat(v, 4, 3, 7),
        ElementType::F8E5M2 => minifloat(v, 5, 2, 15),
        ElementType::E8M0 => {
            assert!(v > 0.0 && v.log2().fract() == 0.0, "{v} is not a power of two");
            (v.log2() as i64 + 127) as u64
        }
        ElementType::F6E2M3 => minifloat(v, 2, 3, 1),
        ElementType::F6E3M2 => minifloat(v, 3, 2, 3),
        ElementType::F4E2M1 => minifloat(v, 2, 1, 1),
        other => panic!("no sample encoding for element type {other}"),
    }
}

/// `values` packed as `ty` prescribes (little-endian; sub-byte types low
/// nibble first, the unused nibble zero).
fn values_bytes(ty: ElementType, values: &[f64]) -> Vec<u8> {
    match ty.byte_width() {
        Some(width) => values
            .iter()
            .flat_map(|&v| value_bits(ty, v).to_le_bytes().into_iter().take(usize::from(width)))
            .collect(),
        None => {
            let nibbles: Vec<u8> = values.iter().map(|&v| (value_bits(ty, v) & 0xf) as u8).collect();
            nibbles.chunks(2).map(|p| p[0] | p.get(1).map_or(0, |h| h << 4)).collect()
        }
    }
}

// ---------------------------------------------------------------------------
// The tensors the cases start from.

/// The spec's worked example (csf-layout.txt § Example): shape [2, 3, 4].
fn spec_levels() -> Vec<(Vec<u64>, Vec<u64>)> {
    vec![(vec![0, 2], vec![0, 1]), (vec![0, 2, 3], vec![0, 2, 1]), (vec![0, 1, 2, 4], vec![1, 3, 0, 2])]
}

/// The spec example with `values` stored as `ty`.
fn spec_with(ty: ElementType, values: &[f64]) -> File {
    File::new(ty, &[2, 3, 4], &[0, 1, 2], 4, &spec_levels(), values_bytes(ty, values))
}

/// The spec example exactly: f32 values 1, 2, 3, 4.
fn spec() -> File {
    spec_with(ElementType::F32, &[1.0, 2.0, 3.0, 4.0])
}

/// The spec example's non-zeros as a coordinate list.
fn spec_coo() -> TestTensor {
    TestTensor {
        shape: vec![2, 3, 4],
        indices: vec![0, 0, 1, 0, 2, 3, 1, 1, 0, 1, 1, 2],
        values: vec![1.0, 2.0, 3.0, 4.0],
    }
}

/// Shape [3, 5, 4], f64, 7 non-zeros, built so that `crd_1` is increasing
/// across parents ([0, 1 | 2 | 3, 4]): merging two of its slices keeps them
/// sorted, so a decreasing `pos_1` breaks invariant 2 and nothing else.
fn wide() -> File {
    let coo = TestTensor {
        shape: vec![3, 5, 4],
        indices: vec![0, 0, 1, 0, 0, 3, 0, 1, 0, 1, 2, 2, 2, 3, 1, 2, 4, 0, 2, 4, 3],
        values: (1..=7).map(f64::from).collect(),
    };
    let a = reference_csf(&coo, &[0, 1, 2]);
    assert_eq!(a.levels[1], (vec![0, 2, 3, 5], vec![0, 1, 2, 3, 4]));
    File::from_arrays(&a, ElementType::F64)
}

/// A rank-4 tensor with a non-identity mode order.
fn rank4() -> File {
    let coo = synthetic(&[3, 4, 5, 6], 40, Distribution::Uniform, 4);
    File::from_arrays(&reference_csf(&coo, &[3, 1, 0, 2]), ElementType::F32)
}

/// A rank-64 tensor (the cap) with three non-zeros and the reversed mode order.
fn rank64() -> File {
    let shape: Vec<u64> = (0..64).map(|d| 2 + d % 3).collect();
    let coo = synthetic(&shape, 3, Distribution::Uniform, 64);
    let order: Vec<u32> = (0..64).rev().collect();
    File::from_arrays(&reference_csf(&coo, &order), ElementType::F32)
}

/// nf4 codes 1, 3, 5, 7, 15 at five distinct indices of shape [4,4,4].
fn odd_nf4() -> File {
    let coo = TestTensor {
        shape: vec![4, 4, 4],
        indices: vec![0, 0, 0, 0, 1, 2, 1, 0, 3, 2, 2, 2, 3, 3, 1],
        values: vec![1.0, 3.0, 5.0, 7.0, 15.0],
    };
    File::from_arrays(&reference_csf(&coo, &[0, 1, 2]), ElementType::NF4)
}

/// An empty tensor of `shape` (nnz = 0): `pos_0 = [0, 0]`, `pos_L = [0]`.
fn empty(shape: &[u64], mode_order: &[u32]) -> File {
    let mut levels = vec![(vec![0, 0], vec![])];
    levels.extend((1..shape.len()).map(|_| (vec![0], vec![])));
    File::new(ElementType::F32, shape, mode_order, 0, &levels, Vec::new())
}

/// The statistics a writer should record for the spec example.
fn spec_statistics() -> Statistics {
    Statistics { nnz: 4, sparsity_ratio: 1.0 - 4.0 / 24.0, min: Some(1.0), max: Some(4.0) }
}

fn per_tensor() -> Quantization {
    Quantization {
        scheme: QuantScheme::PerTensor,
        axis: 0,
        block_size: 0,
        scale_type: ElementType::F32,
        zero_point_type: None,
    }
}

/// The spec example with i8 values and a per-tensor scale (one f32 buffer
/// after the layout's seven).
fn quantized() -> File {
    spec_with(ElementType::I8, &[1.0, -2.0, 3.0, 4.0]).with(|f| {
        f.desc.quantization = Some(per_tensor());
        f.buffers.push((0.25f32.to_le_bytes().to_vec(), HOST));
    })
}

/// The spec example quantized with `scheme` over values of type `ty`, with
/// `scales` (already packed) as the one parameter buffer.
fn quantized_as(ty: ElementType, values: &[f64], section: Quantization, scales: Vec<u8>) -> File {
    spec_with(ty, values).with(|f| {
        f.desc.quantization = Some(section);
        f.buffers.push((scales, HOST));
    })
}

fn f32s(values: &[f32]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}

/// Valid files for each scheme of `docs/format.md` § 5.7, and one file
/// breaking each of its rules.
fn quantization_cases(out: &mut Cases) {
    let block = |size| Quantization { scheme: QuantScheme::PerBlock, block_size: size, ..per_tensor() };
    let nf4 = Quantization { scheme: QuantScheme::Nf4, block_size: 2, ..per_tensor() };
    let mxfp = Quantization {
        scheme: QuantScheme::Mxfp,
        block_size: 32,
        scale_type: ElementType::E8M0,
        ..per_tensor()
    };
    let per_block = quantized_as(ElementType::I8, &[1.0, -2.0, 3.0, 4.0], block(3), f32s(&[0.5, 0.25]));
    out.valid(
        "valid-quantization-per-block",
        "i8 values, per-block scales, block_size 3: 2 f32 scales",
        &per_block,
    );
    let nf4_file = quantized_as(ElementType::NF4, &[0.0, 7.0, 15.0, 3.0], nf4, f32s(&[2.0, 0.5]));
    out.valid("valid-quantization-nf4", "nf4 codes with one f32 absmax per block of 2 leaves", &nf4_file);
    let mxfp_file = quantized_as(ElementType::F8E4M3, &[56.0, 64.0, 72.0, 0.0], mxfp, vec![125]);
    out.valid(
        "valid-quantization-mxfp",
        "f8e4m3 elements sharing one e8m0 scale (2^-2) per 32 leaves",
        &mxfp_file,
    );
    let fp8 = quantized_as(ElementType::F8E5M2, &[48.0, 56.0, 64.0, 80.0], per_tensor(), f32s(&[0.125]));
    out.valid("valid-quantization-fp8-per-tensor", "f8e5m2 values with one f32 per-tensor scale", &fp8);

    // Parameter buffers are packed as § 2.1 prescribes (§ 5.7.1): an odd
    // count of 4-bit zero points leaves an unused high nibble that MUST be 0.
    let i4_channels = |zero_points: Vec<u8>| {
        quantized_as(
            ElementType::I4,
            &[1.0, -2.0, 3.0, 4.0],
            Quantization {
                scheme: QuantScheme::PerChannel,
                axis: 1,
                zero_point_type: Some(ElementType::I4),
                ..per_tensor()
            },
            f32s(&[0.5, 0.25, 1.0]),
        )
        .with(|f| f.buffers.push((zero_points, HOST)))
    };
    out.valid(
        "valid-quantization-i4-zero-points",
        "i4 values, per-channel on axis 1 (3 groups): i4 zero points [0,1,2] in bytes 10 02, the unused nibble zero",
        &i4_channels(vec![0x10, 0x02]),
    );
    out.strict(
        "values-padding-zero-points-i4",
        "values-padding",
        "i4 per-channel zero points (3 groups) in bytes 10 f2: the unused high nibble of the zero-point buffer (index 8) is 0xf",
        &i4_channels(vec![0x10, 0xf2]),
    );
    out.strict(
        "values-padding-zero-points-u4-per-tensor",
        "values-padding",
        "u4 values, per-tensor with one u4 zero point in byte 35: its unused high nibble is 3",
        &quantized_as(
            ElementType::U4,
            &[1.0, 2.0, 3.0, 4.0],
            Quantization { zero_point_type: Some(ElementType::U4), ..per_tensor() },
            f32s(&[0.5]),
        )
        .with(|f| f.buffers.push((vec![0x35], HOST))),
    );
    out.strict(
        "quantization-types-nf4-over-i8",
        "quantization-types",
        "NF4 scheme over i8 values (NF4 needs nf4 codes)",
        &quantized_as(ElementType::I8, &[1.0, -2.0, 3.0, 4.0], nf4, f32s(&[2.0, 0.5])),
    );
    out.strict(
        "quantization-types-mxfp-f32-scale",
        "quantization-types",
        "MXFP scheme with f32 scales (MXFP scales are e8m0)",
        &quantized_as(
            ElementType::F8E4M3,
            &[56.0, 64.0, 72.0, 0.0],
            Quantization { scale_type: ElementType::F32, ..mxfp },
            f32s(&[0.25]),
        ),
    );
    out.strict(
        "quantization-types-zero-point-type",
        "quantization-types",
        "per-tensor i8 values with u8 zero points (zero points must have the values' type)",
        &quantized().with(|f| {
            f.desc.quantization =
                Some(Quantization { zero_point_type: Some(ElementType::U8), ..per_tensor() });
            f.buffers.push((vec![0], HOST));
        }),
    );
    out.strict(
        "quantization-types-float-values",
        "quantization-types",
        "per-tensor quantization over f32 values (integer or FP8 values only)",
        &quantized_as(ElementType::F32, &[1.0, 2.0, 3.0, 4.0], per_tensor(), f32s(&[0.5])),
    );
    out.strict(
        "quantization-axis-out-of-rank",
        "quantization-axis",
        "per-channel quantization on axis 3 of a rank-3 tensor",
        &quantized_as(
            ElementType::I8,
            &[1.0, -2.0, 3.0, 4.0],
            Quantization { scheme: QuantScheme::PerChannel, axis: 3, ..per_tensor() },
            f32s(&[0.5, 0.25]),
        ),
    );
    out.strict(
        "quantization-axis-on-per-tensor",
        "quantization-axis",
        "per-tensor quantization naming axis 1",
        &quantized().with(|f| f.desc.quantization = Some(Quantization { axis: 1, ..per_tensor() })),
    );
    out.strict(
        "quantization-block-size-zero",
        "quantization-block-size",
        "per-block quantization with block_size 0",
        &quantized_as(ElementType::I8, &[1.0, -2.0, 3.0, 4.0], block(0), f32s(&[0.5])),
    );
    out.strict(
        "quantization-block-size-mxfp-16",
        "quantization-block-size",
        "MXFP with blocks of 16 leaves (MX blocks are 32)",
        &quantized_as(
            ElementType::F8E4M3,
            &[56.0, 64.0, 72.0, 0.0],
            Quantization { block_size: 16, ..mxfp },
            vec![125],
        ),
    );
    out.strict(
        "quantization-size-per-tensor-two-scales",
        "quantization-size",
        "per-tensor quantization with an 8-byte scale buffer (one f32 expected)",
        &quantized().with(|f| f.buffers[7].0 = f32s(&[0.25, 0.5])),
    );
    out.strict(
        "quantization-size-per-block-short",
        "quantization-size",
        "per-block quantization, block_size 3 over 4 leaves, with 1 scale instead of 2",
        &quantized_as(ElementType::I8, &[1.0, -2.0, 3.0, 4.0], block(3), f32s(&[0.5])),
    );
    out.strict(
        "quantization-size-zero-points",
        "quantization-size",
        "per-channel quantization on axis 1 (extent 3): 3 scales but 2 zero points",
        &quantized_as(
            ElementType::I8,
            &[1.0, -2.0, 3.0, 4.0],
            Quantization {
                scheme: QuantScheme::PerChannel,
                axis: 1,
                zero_point_type: Some(ElementType::I8),
                ..per_tensor()
            },
            f32s(&[0.5, 0.25, 1.0]),
        )
        .with(|f| f.buffers.push((vec![0, 1], HOST))),
    );
}

// ---------------------------------------------------------------------------
// The cases.

fn valid_cases(out: &mut Cases) {
    out.valid(
        "valid-spec-example",
        "csf-layout.txt § Example: shape [2,3,4], f32, identity order, 4 non-zeros",
        &spec(),
    );

    let coo = synthetic(&[3, 4, 5], 12, Distribution::Uniform, 3);
    let orders: [(&'static str, [u32; 3]); 6] = [
        ("valid-mode-order-012", [0, 1, 2]),
        ("valid-mode-order-021", [0, 2, 1]),
        ("valid-mode-order-102", [1, 0, 2]),
        ("valid-mode-order-120", [1, 2, 0]),
        ("valid-mode-order-201", [2, 0, 1]),
        ("valid-mode-order-210", [2, 1, 0]),
    ];
    for (name, order) in orders {
        out.valid(
            name,
            "the same 12 random non-zeros of shape [3,4,5] stored in this mode order (all six are valid)",
            &File::from_arrays(&reference_csf(&coo, &order), ElementType::F32),
        );
    }

    out.valid(
        "valid-empty",
        "empty tensor: nnz 0, pos_0 = [0,0], pos_1 = pos_2 = [0], no crd, no values",
        &empty(&[2, 3, 4], &[0, 1, 2]),
    );
    out.valid(
        "valid-empty-rank-4",
        "empty rank-4 tensor with mode order [1,0,3,2]",
        &empty(&[5, 6, 7, 8], &[1, 0, 3, 2]),
    );
    out.valid("valid-zero-extent", "shape [2,0,4] (a zero extent), nnz 0", &empty(&[2, 0, 4], &[0, 1, 2]));
    out.valid("valid-rank-64", "rank 64 (the cap), reversed mode order, 3 non-zeros", &rank64());

    let max = u64::MAX;
    let huge = TestTensor {
        shape: vec![max; 3],
        indices: vec![max - 1, 0, max - 1, max - 1, max - 1, 0, 0, max - 1, max - 1],
        values: vec![1.0, 2.0, 3.0],
    };
    let huge_file = File::from_arrays(&reference_csf(&huge, &[0, 1, 2]), ElementType::U64);
    out.valid(
        "valid-max-coordinates",
        "shape [2^64-1; 3] with coordinates 2^64-2 (element count overflows u64), u64 values",
        &huge_file,
    );

    let odd = TestTensor {
        shape: vec![2, 3, 4],
        indices: vec![0, 0, 1, 0, 2, 3, 1, 1, 0],
        values: vec![1.0, -2.0, 3.0],
    };
    out.valid(
        "valid-i4-odd-nnz",
        "i4 values, nnz 3: two bytes, the unused high nibble of the last is zero",
        &File::from_arrays(&reference_csf(&odd, &[0, 1, 2]), ElementType::I4),
    );
    out.valid(
        "valid-nf4-odd-nnz",
        "nf4 codes, nnz 5: three bytes, the unused high nibble of the last is zero",
        &odd_nf4(),
    );

    assert_eq!(TYPE_CASES.len(), ElementType::ALL.len(), "one valid-type case per element type");
    for (&name, &ty) in TYPE_CASES.iter().zip(ElementType::ALL) {
        assert_eq!(name.strip_prefix("valid-type-"), Some(ty.name()));
        out.valid(
            name,
            "the spec example's tree with this element type (values: corpus::sample_values)",
            &spec_with(ty, &sample_values(ty)),
        );
    }

    out.valid(
        "valid-statistics",
        "statistics present and consistent: nnz 4, sparsity_ratio 1 - 4/24, min 1, max 4",
        &spec().with(|f| f.desc.statistics = Some(spec_statistics())),
    );
    out.valid(
        "valid-statistics-zero-extent",
        "statistics on shape [2,0,4]: nnz 0; the element count is 0, the ratio undefined, so sparsity_ratio is not checked",
        &empty(&[2, 0, 4], &[0, 1, 2]).with(|f| {
            f.desc.statistics = Some(Statistics { nnz: 0, sparsity_ratio: 1.0, min: None, max: None });
        }),
    );
    out.valid(
        "valid-statistics-huge-shape",
        "statistics on shape [2^64-1; 3], nnz 3: the element count overflows u64; 1 - 3/total is 1.0 in binary64, as recorded",
        &huge_file.clone().with(|f| {
            f.desc.statistics =
                Some(Statistics { nnz: 3, sparsity_ratio: 1.0, min: Some(1.0), max: Some(3.0) });
        }),
    );
    let warned = spec().with(|f| {
        f.desc.statistics = Some(Statistics { sparsity_ratio: 0.5, ..spec_statistics() });
    });
    out.valid(
        "valid-sparsity-ratio-warning",
        "statistics sparsity_ratio 0.5 instead of 1 - 4/24: a SHOULD, so valid with a warning",
        &warned,
    );
    out.0.last_mut().expect("just pushed").warnings = &["sparsity-ratio"];
    let two32 = 1u64 << 32;
    let single = File::new(
        ElementType::F32,
        &[two32; 3],
        &[0, 1, 2],
        1,
        &[(vec![0, 1], vec![0]), (vec![0, 1], vec![0]), (vec![0, 1], vec![0])],
        1.0f32.to_le_bytes().to_vec(),
    );
    out.valid(
        "valid-sparsity-ratio-warning-huge-shape",
        "shape [2^32; 3] (2^96 elements, past u64), nnz 1, sparsity_ratio 0.5: expected 1.0, a warning",
        &single.with(|f| {
            f.desc.statistics =
                Some(Statistics { nnz: 1, sparsity_ratio: 0.5, min: Some(1.0), max: Some(1.0) });
        }),
    );
    out.0.last_mut().expect("just pushed").warnings = &["sparsity-ratio"];
    out.valid(
        "valid-sparsity-ratio-warning-nan",
        "spec example whose statistics sparsity_ratio is NaN: never within the tolerance, a warning",
        &spec().with(|f| {
            f.desc.statistics = Some(Statistics { sparsity_ratio: f64::NAN, ..spec_statistics() });
        }),
    );
    out.0.last_mut().expect("just pushed").warnings = &["sparsity-ratio"];

    // The spec is silent on interior nodes without children in a non-empty
    // tensor; docs/format.md § 7.5 makes them a SHOULD NOT: valid, warned about.
    out.valid(
        "valid-childless-nodes-warning",
        "shape [3,3,4], the spec example's 4 non-zeros plus childless level-0 node 2 and level-1 node 1: valid, one warning per level",
        &File::new(
            ElementType::F32,
            &[3, 3, 4],
            &[0, 1, 2],
            4,
            &[
                (vec![0, 3], vec![0, 1, 2]),
                (vec![0, 3, 4, 4], vec![0, 1, 2, 1]),
                (vec![0, 1, 1, 2, 4], vec![1, 3, 0, 2]),
            ],
            values_bytes(ElementType::F32, &[1.0, 2.0, 3.0, 4.0]),
        ),
    );
    out.0.last_mut().expect("just pushed").warnings = &["childless-nodes", "childless-nodes"];

    out.valid(
        "valid-quantization",
        "i8 values with a per-tensor quantization section and one f32 scale buffer (index 7), all on host",
        &quantized(),
    );
    let per_channel = spec_with(ElementType::I8, &[1.0, -2.0, 3.0, 4.0]).with(|f| {
        f.desc.quantization = Some(Quantization {
            scheme: QuantScheme::PerChannel,
            axis: 0,
            block_size: 0,
            scale_type: ElementType::F32,
            zero_point_type: Some(ElementType::I8),
        });
        f.buffers[0].1 = CUDA;
        f.buffers.push(([0.5f32.to_le_bytes(), 0.25f32.to_le_bytes()].concat(), CUDA));
        f.buffers.push((vec![0, 0xff], CUDA));
    });
    out.valid(
        "valid-quantization-cuda",
        "per-channel quantization, values and both parameter buffers (scales, zero points) on CUDA, index buffers on host",
        &per_channel,
    );

    out.valid("valid-rank-4", "rank 4, 40 random non-zeros, mode order [3,1,0,2]", &rank4());
    let coo5 = synthetic(&[2, 3, 2, 3, 2], 10, Distribution::Uniform, 5);
    out.valid(
        "valid-rank-5",
        "rank 5, 10 random non-zeros, mode order [4,2,0,3,1], f64 values",
        &File::from_arrays(&reference_csf(&coo5, &[4, 2, 0, 3, 1]), ElementType::F64),
    );
    out.valid(
        "valid-single-nonzero",
        "shape [1,1,1] with its only element stored (i32 7)",
        &File::new(
            ElementType::I32,
            &[1, 1, 1],
            &[0, 1, 2],
            1,
            &[(vec![0, 1], vec![0]), (vec![0, 1], vec![0]), (vec![0, 1], vec![0])],
            7i32.to_le_bytes().to_vec(),
        ),
    );
    out.valid(
        "valid-explicit-zero",
        "a stored value that is 0.0 (explicit zeros are allowed)",
        &spec_with(ElementType::F32, &[1.0, 0.0, 3.0, 4.0]),
    );
}

fn structural_cases(out: &mut Cases) {
    out.strict(
        "rank-below-3-rank-0",
        "rank-below-3",
        "rank 0 (a scalar): shape [], mode_order [], one buffer (values)",
        &File::new(ElementType::F32, &[], &[], 1, &[], 1.0f32.to_le_bytes().to_vec()),
    );
    out.strict(
        "rank-below-3-rank-1",
        "rank-below-3",
        "rank 1: shape [5], a well-formed one-level tree with 2 non-zeros",
        &File::new(
            ElementType::F32,
            &[5],
            &[0],
            2,
            &[(vec![0, 2], vec![1, 3])],
            values_bytes(ElementType::F32, &[1.0, 2.0]),
        ),
    );
    let matrix =
        TestTensor { shape: vec![3, 4], indices: vec![0, 1, 2, 0, 2, 3], values: vec![1.0, 2.0, 3.0] };
    out.strict(
        "rank-below-3-rank-2",
        "rank-below-3",
        "rank 2: shape [3,4], a well-formed two-level tree (CSR's job)",
        &File::from_arrays(&reference_csf(&matrix, &[0, 1]), ElementType::F32),
    );
    out.strict(
        "mode-order-length-short",
        "mode-order-length",
        "spec example with mode_order [0,1]: 2 entries for rank 3",
        &spec().with(|f| f.desc.mode_order = FixedVec::from_slice(&[0, 1]).expect("fits")),
    );
    out.strict(
        "mode-order-length-long",
        "mode-order-length",
        "spec example with mode_order [0,1,2,3]: 4 entries for rank 3",
        &spec().with(|f| f.desc.mode_order = FixedVec::from_slice(&[0, 1, 2, 3]).expect("fits")),
    );
    out.strict(
        "missing-buffer-leaf-crd",
        "missing-buffer",
        "spec example without its last buffer (crd_2): 6 buffers, rank 3 needs 7",
        &spec().with(|f| {
            f.buffers.pop();
        }),
    );
    out.strict(
        "missing-buffer-values-only",
        "missing-buffer",
        "spec example with only the values buffer",
        &spec().with(|f| f.buffers.truncate(1)),
    );
    let not_u64: [(&'static str, usize, isize, &'static str); 4] = [
        ("buffer-not-u64-pos-0", 1, 1, "pos_0 is 17 bytes (one byte appended)"),
        ("buffer-not-u64-crd-1", 4, -1, "crd_1 is 23 bytes (last byte cut)"),
        ("buffer-not-u64-pos-2", 5, 4, "pos_2 is 36 bytes (four bytes appended)"),
        ("buffer-not-u64-leaf-crd", 6, 1, "crd_2 (leaf) is 33 bytes (one byte appended)"),
    ];
    out.strict(
        "buffer-not-u64-scale-as-crd",
        "buffer-not-u64",
        "quantized spec example without crd_2: its 4-byte scale lands at index 6, where crd_2 belongs",
        &quantized().with(|f| {
            f.buffers.remove(6);
        }),
    );
    for (name, buffer, delta, description) in not_u64 {
        out.strict(
            name,
            "buffer-not-u64",
            description,
            &spec().with(|f| {
                let b = &mut f.buffers[buffer].0;
                if delta > 0 {
                    b.extend(vec![0; delta as usize]);
                } else {
                    b.truncate(b.len() - delta.unsigned_abs());
                }
            }),
        );
    }
}

fn descriptor_cases(out: &mut Cases) {
    let order = |f: &mut File, o: &[u32]| f.desc.mode_order = FixedVec::from_slice(o).expect("fits");
    out.strict(
        "mode-order-not-permutation-duplicate",
        "mode-order-not-permutation",
        "spec example with mode_order [0,0,2]: dimension 0 twice",
        &spec().with(|f| order(f, &[0, 0, 2])),
    );
    out.strict(
        "mode-order-not-permutation-out-of-range",
        "mode-order-not-permutation",
        "spec example with mode_order [0,1,3]: 3 is not a dimension of a rank-3 tensor",
        &spec().with(|f| order(f, &[0, 1, 3])),
    );
    out.strict(
        "mode-order-not-permutation-rank-4",
        "mode-order-not-permutation",
        "rank-4 tensor with mode_order [3,1,1,2] instead of [3,1,0,2]",
        &rank4().with(|f| order(f, &[3, 1, 1, 2])),
    );
    out.strict(
        "mode-order-not-permutation-huge",
        "mode-order-not-permutation",
        "spec example with mode_order [0,1,4294967295]",
        &spec().with(|f| order(f, &[0, 1, u32::MAX])),
    );
    out.strict(
        "buffer-count-extra-empty",
        "buffer-count",
        "spec example with an 8th (empty) buffer and no quantization section",
        &spec().with(|f| f.buffers.push((Vec::new(), HOST))),
    );
    out.strict(
        "buffer-count-extra-data",
        "buffer-count",
        "spec example with an 8th buffer of 16 bytes and no quantization section",
        &spec().with(|f| f.buffers.push((vec![1; 16], HOST))),
    );
    out.strict(
        "buffer-count-quantization-without-parameters",
        "buffer-count",
        "quantization section present but no parameter buffer after the layout's 7",
        &quantized().with(|f| {
            f.buffers.pop();
        }),
    );
    out.strict(
        "buffer-count-too-many-parameters",
        "buffer-count",
        "quantized spec example with 9 parameter buffers (the cap is 8)",
        &quantized().with(|f| {
            for _ in 0..8 {
                f.buffers.push((0.5f32.to_le_bytes().to_vec(), HOST));
            }
        }),
    );
    out.strict(
        "byte-offset-nonzero",
        "byte-offset",
        "spec example with byte_offset 64",
        &spec().with(|f| f.desc.byte_offset = 64),
    );
    out.strict(
        "byte-offset-max",
        "byte-offset",
        "spec example with byte_offset 2^64-1",
        &spec().with(|f| f.desc.byte_offset = u64::MAX),
    );
    out.strict(
        "shard-descriptor",
        "shard-descriptor",
        "spec example carrying a shard section (shard 0 of 2)",
        &spec().with(|f| {
            f.desc.shard = Some(ShardDescriptor {
                shard_index: 0,
                shard_count: 2,
                shard_offset: FixedVec::from_slice(&[0, 0, 0]).expect("fits"),
            });
        }),
    );
    out.strict(
        "quantization-device-scale-on-cuda",
        "quantization-device",
        "quantized spec example: values on host, the scale buffer on CUDA",
        &quantized().with(|f| f.buffers[7].1 = CUDA),
    );
    out.strict(
        "quantization-device-values-on-cuda",
        "quantization-device",
        "per-channel quantization: values and scales on CUDA, the zero-point buffer (index 8) on host",
        &quantized().with(|f| {
            f.desc.quantization =
                Some(Quantization { zero_point_type: Some(ElementType::I8), ..per_tensor() });
            f.buffers[0].1 = CUDA;
            f.buffers[7].1 = CUDA;
            f.buffers.push((vec![0], HOST));
        }),
    );
    out.strict(
        "statistics-nnz-mismatch",
        "statistics-nnz",
        "statistics nnz 5, descriptor nnz 4 (sparsity_ratio consistent with the descriptor)",
        &spec().with(|f| f.desc.statistics = Some(Statistics { nnz: 5, ..spec_statistics() })),
    );
    out.strict(
        "statistics-nnz-empty",
        "statistics-nnz",
        "empty tensor whose statistics claim 1 non-zero",
        &empty(&[2, 3, 4], &[0, 1, 2]).with(|f| {
            f.desc.statistics = Some(Statistics { nnz: 1, sparsity_ratio: 1.0, min: None, max: None });
        }),
    );
}

fn invariant_cases(out: &mut Cases) {
    let (p0, c0, p1, c1, p2, c2) = (1, 2, 3, 4, 5, 6);

    // Invariant 1.
    out.strict(
        "pos-start-level-0",
        "pos-start",
        "spec example with pos_0 = [1,2]",
        &spec().replace(p0, &[0, 2], &[1, 2]),
    );
    out.strict(
        "pos-start-level-1",
        "pos-start",
        "spec example with pos_1 = [1,2,3]",
        &spec().replace(p1, &[0, 2, 3], &[1, 2, 3]),
    );
    out.strict(
        "pos-start-leaf",
        "pos-start",
        "spec example with pos_2 = [1,1,2,4]",
        &spec().replace(p2, &[0, 1, 2, 4], &[1, 1, 2, 4]),
    );
    out.strict(
        "pos-start-rank-4-level-2",
        "pos-start",
        "rank-4 tensor with pos_2[0] = 1",
        &rank4().pos_start(2),
    );
    out.strict(
        "pos-start-huge",
        "pos-start",
        "spec example with pos_1 = [2^64-1,2,3] (also above its successor)",
        &spec().replace(p1, &[0, 2, 3], &[u64::MAX, 2, 3]),
    );

    // Invariant 2. (pos_0 has two entries [0, n_0], so it cannot decrease
    // without also breaking invariant 1 or 3.)
    out.strict(
        "pos-decreasing-level-1",
        "pos-decreasing",
        "shape [3,5,4] tensor with pos_1 = [0,2,1,5] (was [0,2,3,5]); crd_1 is increasing across parents, so no slice is unsorted",
        &wide().replace(p1, &[0, 2, 3, 5], &[0, 2, 1, 5]),
    );
    out.strict(
        "pos-decreasing-leaf",
        "pos-decreasing",
        "spec example with pos_2 = [0,2,1,4]",
        &spec().replace(p2, &[0, 1, 2, 4], &[0, 2, 1, 4]),
    );

    // Invariant 3.
    out.strict(
        "terminal-count-level-0",
        "terminal-count",
        "spec example with pos_0 = [0,1]: crd_0 has 2 nodes",
        &spec().replace(p0, &[0, 2], &[0, 1]),
    );
    out.strict(
        "terminal-count-level-1",
        "terminal-count",
        "spec example with pos_1 = [0,2,2]: crd_1 has 3 nodes",
        &spec().replace(p1, &[0, 2, 3], &[0, 2, 2]),
    );
    out.strict(
        "terminal-count-leaf",
        "terminal-count",
        "spec example with pos_2 = [0,1,2,3]: crd_2 has 4 nodes",
        &spec().replace(p2, &[0, 1, 2, 4], &[0, 1, 2, 3]),
    );
    out.strict(
        "terminal-count-past-end",
        "terminal-count",
        "spec example with pos_2 = [0,1,2,5]: points past crd_2",
        &spec().replace(p2, &[0, 1, 2, 4], &[0, 1, 2, 5]),
    );
    out.strict(
        "terminal-count-huge",
        "terminal-count",
        "spec example with pos_1 = [0,2,2^64-1]",
        &spec().replace(p1, &[0, 2, 3], &[0, 2, u64::MAX]),
    );
    out.strict(
        "terminal-count-rank-4-level-3",
        "terminal-count",
        "rank-4 tensor with its leaf terminal pos one short",
        &rank4().short_terminal(3),
    );
    out.strict(
        "leaf-count-nnz-too-big",
        "leaf-count",
        "spec example declaring nnz 5 (values buffer sized for 5) over a tree of 4 leaves",
        &spec().with(|f| {
            f.desc.nnz = 5;
            f.buffers[0].0.extend(5.0f32.to_le_bytes());
        }),
    );
    out.strict(
        "leaf-count-nnz-too-small",
        "leaf-count",
        "spec example declaring nnz 3 (values buffer sized for 3) over a tree of 4 leaves",
        &spec().with(|f| {
            f.desc.nnz = 3;
            f.buffers[0].0.truncate(12);
        }),
    );

    // Invariant 4.
    out.strict(
        "sibling-order-level-0",
        "sibling-order",
        "spec example with crd_0 = [1,0]",
        &spec().replace(c0, &[0, 1], &[1, 0]),
    );
    out.strict(
        "sibling-order-level-1",
        "sibling-order",
        "spec example with crd_1 = [2,0,1]",
        &spec().replace(c1, &[0, 2, 1], &[2, 0, 1]),
    );
    out.strict(
        "sibling-order-leaf",
        "sibling-order",
        "spec example with crd_2 = [1,3,2,0]",
        &spec().replace(c2, &[1, 3, 0, 2], &[1, 3, 2, 0]),
    );
    out.strict(
        "sibling-order-duplicate",
        "sibling-order",
        "spec example with crd_2 = [1,3,0,0]: duplicate siblings",
        &spec().replace(c2, &[1, 3, 0, 2], &[1, 3, 0, 0]),
    );
    out.strict(
        "sibling-order-rank-4-level-2",
        "sibling-order",
        "rank-4 tensor with the first two siblings of a level-2 fiber swapped",
        &rank4().swap_siblings(2),
    );
    let coo = synthetic(&[3, 4, 5], 12, Distribution::Uniform, 3);
    out.strict(
        "sibling-order-permuted",
        "sibling-order",
        "mode order [2,0,1] tensor with two leaf siblings swapped",
        &File::from_arrays(&reference_csf(&coo, &[2, 0, 1]), ElementType::F32).swap_siblings(2),
    );
    out.strict(
        "sibling-order-rank-64",
        "sibling-order",
        "rank-64 tensor with two siblings swapped at the first level that has two",
        &{
            let f = rank64();
            let level = (0..64)
                .find(|&l| f.slices(l).iter().any(|(s, e)| e - s >= 2))
                .expect("some fiber has 2 children");
            f.swap_siblings(level)
        },
    );

    // Invariant 5.
    out.strict(
        "coordinate-bounds-level-0",
        "coordinate-bounds",
        "spec example with crd_0 = [0,2]: bound shape[0] = 2",
        &spec().replace(c0, &[0, 1], &[0, 2]),
    );
    out.strict(
        "coordinate-bounds-level-1",
        "coordinate-bounds",
        "spec example with crd_1 = [0,3,1]: bound shape[1] = 3",
        &spec().replace(c1, &[0, 2, 1], &[0, 3, 1]),
    );
    out.strict(
        "coordinate-bounds-leaf",
        "coordinate-bounds",
        "spec example with crd_2 = [1,4,0,2]: bound shape[2] = 4",
        &spec().replace(c2, &[1, 3, 0, 2], &[1, 4, 0, 2]),
    );
    out.strict(
        "coordinate-bounds-u64-max",
        "coordinate-bounds",
        "spec example with crd_2 = [1,3,0,2^64-1]",
        &spec().replace(c2, &[1, 3, 0, 2], &[1, 3, 0, u64::MAX]),
    );
    out.strict(
        "coordinate-bounds-permuted",
        "coordinate-bounds",
        "spec example's non-zeros in mode order [2,1,0]: a leaf coordinate 2, within shape[2] = 4 but not the leaf bound shape[mode_order[2]] = shape[0] = 2",
        &File::from_arrays(&reference_csf(&spec_coo(), &[2, 1, 0]), ElementType::F32).past_bound(2),
    );
    out.strict(
        "coordinate-bounds-rank-4-leaf",
        "coordinate-bounds",
        "rank-4 tensor with a leaf coordinate equal to its bound shape[mode_order[3]]",
        &rank4().past_bound(3),
    );
    out.strict(
        "coordinate-bounds-rank-64-level-40",
        "coordinate-bounds",
        "rank-64 tensor with a level-40 coordinate equal to its bound",
        &rank64().past_bound(40),
    );

    // § Buffer Size for pos.
    out.strict(
        "pos-size-level-0",
        "pos-size",
        "spec example with pos_0 = [0,2,2]: 3 entries, pos_0 has 2",
        &spec().replace(p0, &[0, 2], &[0, 2, 2]),
    );
    out.strict(
        "pos-size-level-1",
        "pos-size",
        "spec example with pos_1 = [0,2,3,3]: n_0 + 1 = 3 entries expected",
        &spec().extra_pos_entry(1),
    );
    out.strict(
        "pos-size-leaf",
        "pos-size",
        "spec example with pos_2 = [0,1,2,4,4]: n_1 + 1 = 4 entries expected",
        &spec().extra_pos_entry(2),
    );
    out.strict(
        "pos-size-rank-4-level-3",
        "pos-size",
        "rank-4 tensor with one extra entry at the end of pos_3",
        &rank4().extra_pos_entry(3),
    );
}

fn empty_tensor_cases(out: &mut Cases) {
    let e = || empty(&[2, 3, 4], &[0, 1, 2]);
    let (p0, c0, p1, c1, p2, c2) = (1, 2, 3, 4, 5, 6);
    out.strict(
        "empty-pos0-terminal",
        "terminal-count",
        "empty tensor with pos_0 = [0,1]",
        &e().replace(p0, &[0, 0], &[0, 1]),
    );
    out.strict(
        "empty-pos0-start",
        "pos-start",
        "empty tensor with pos_0 = [1,1]",
        &e().replace(p0, &[0, 0], &[1, 1]),
    );
    out.strict(
        "empty-pos0-short",
        "pos-size",
        "empty tensor with pos_0 = [0]",
        &e().replace(p0, &[0, 0], &[0]),
    );
    out.strict(
        "empty-pos1-two-entries",
        "pos-size",
        "empty tensor with pos_1 = [0,0] (must be [0])",
        &e().replace(p1, &[0], &[0, 0]),
    );
    out.strict(
        "empty-pos1-missing",
        "pos-size",
        "empty tensor with pos_1 = [] (must be [0])",
        &e().replace(p1, &[0], &[]),
    );
    out.strict(
        "empty-pos1-start",
        "pos-start",
        "empty tensor with pos_1 = [1]",
        &e().replace(p1, &[0], &[1]),
    );
    out.strict(
        "empty-pos-leaf-two-entries",
        "pos-size",
        "empty tensor with pos_2 = [0,0] (must be [0])",
        &e().replace(p2, &[0], &[0, 0]),
    );
    out.strict(
        "empty-crd0-nonempty",
        "pos-size",
        "empty tensor with crd_0 = [0] (pos_0 still [0,0]): n_0 = 1 makes pos_1 = [0] one entry short",
        &e().replace(c0, &[], &[0]),
    );
    out.strict(
        "empty-crd-leaf-nonempty",
        "terminal-count",
        "empty tensor with crd_2 = [0] (pos_2 still [0])",
        &e().replace(c2, &[], &[0]),
    );
    // Invariants 1-5 hold in these two, but the empty form does not: with
    // nnz = 0 no level stores a node (csf-layout § Storage Invariants).
    out.strict(
        "empty-form-childless-level-0",
        "empty-form",
        "nnz 0 with pos_0 = [0,1], crd_0 = [0], pos_1 = [0,0], pos_2 = [0]: a level-0 node without children",
        &e().replace(p0, &[0, 0], &[0, 1]).replace(c0, &[], &[0]).replace(p1, &[0], &[0, 0]),
    );
    out.strict(
        "empty-form-childless-level-1",
        "empty-form",
        "nnz 0 with pos_0 = [0,1], crd_0 = [0], pos_1 = [0,1], crd_1 = [2], pos_2 = [0,0]: a path ending above the leaves",
        &e().replace(p0, &[0, 0], &[0, 1])
            .replace(c0, &[], &[0])
            .replace(p1, &[0], &[0, 1])
            .replace(c1, &[], &[2])
            .replace(p2, &[0], &[0, 0]),
    );
    out.strict(
        "empty-values-nonempty",
        "values-size",
        "empty tensor with a 4-byte values buffer",
        &e().with(|f| f.buffers[0].0 = 1.0f32.to_le_bytes().to_vec()),
    );
    out.strict(
        "empty-nnz-nonzero",
        "leaf-count",
        "empty tree whose descriptor declares nnz 1 (values buffer sized for 1)",
        &e().with(|f| {
            f.desc.nnz = 1;
            f.buffers[0].0 = 1.0f32.to_le_bytes().to_vec();
        }),
    );
}

fn values_cases(out: &mut Cases) {
    out.strict(
        "values-size-f32-short",
        "values-size",
        "f32 values buffer of 15 bytes for nnz 4",
        &spec().with(|f| {
            f.buffers[0].0.pop();
        }),
    );
    out.strict(
        "values-size-f32-long",
        "values-size",
        "f32 values buffer of 20 bytes for nnz 4",
        &spec().with(|f| f.buffers[0].0.extend([0; 4])),
    );
    out.strict(
        "values-size-f64-holding-f32",
        "values-size",
        "element type f64 over a values buffer of four f32s (16 bytes, 32 expected)",
        &spec().with(|f| f.desc.element_type = ElementType::F64),
    );
    out.strict(
        "values-size-nf4-long",
        "values-size",
        "nf4, nnz 4: 3 bytes instead of ceil(4/2) = 2",
        &spec_with(ElementType::NF4, &sample_values(ElementType::NF4)).with(|f| f.buffers[0].0.push(0)),
    );
    let odd = TestTensor {
        shape: vec![2, 3, 4],
        indices: vec![0, 0, 1, 0, 2, 3, 1, 1, 0],
        values: vec![1.0, -2.0, 3.0],
    };
    let odd_i4 = File::from_arrays(&reference_csf(&odd, &[0, 1, 2]), ElementType::I4);
    out.strict(
        "values-size-i4-odd-short",
        "values-size",
        "i4, nnz 3: 1 byte instead of ceil(3/2) = 2 (rounded down)",
        &odd_i4.clone().with(|f| {
            f.buffers[0].0.pop();
        }),
    );
    out.strict(
        "values-padding-i4",
        "values-padding",
        "i4, nnz 3: the unused high nibble of the last byte is 0xf",
        &odd_i4.with(|f| {
            assert_eq!(f.buffers[0].0, [0xe1, 0x03]);
            f.buffers[0].0[1] = 0xf3;
        }),
    );
    out.strict(
        "values-padding-nf4",
        "values-padding",
        "nf4, nnz 5: the unused high nibble of the last byte is 0x1",
        &odd_nf4().with(|f| {
            assert_eq!(f.buffers[0].0.len(), 3);
            f.buffers[0].0[2] |= 0x10;
        }),
    );
    out.strict(
        "values-padding-f6e2m3",
        "values-padding",
        "f6e2m3 values whose third byte has bit 6 set (FP6 sits in the low six bits)",
        &spec_with(ElementType::F6E2M3, &sample_values(ElementType::F6E2M3))
            .with(|f| f.buffers[0].0[2] |= 0x40),
    );
    out.strict(
        "values-padding-f6e3m2",
        "values-padding",
        "f6e3m2 values whose first byte has both top bits set",
        &spec_with(ElementType::F6E3M2, &sample_values(ElementType::F6E3M2))
            .with(|f| f.buffers[0].0[0] |= 0xc0),
    );
    out.strict(
        "bool-value-2",
        "bool-value",
        "bool values [1,2,1,1]: 2 is not a bool",
        &spec_with(ElementType::Bool, &[1.0, 1.0, 1.0, 1.0]).with(|f| f.buffers[0].0[1] = 2),
    );
    out.strict(
        "bool-value-ff",
        "bool-value",
        "bool values [1,0,1,0xff]",
        &spec_with(ElementType::Bool, &sample_values(ElementType::Bool)).with(|f| f.buffers[0].0[3] = 0xff),
    );
}

/// Overwrites `bytes[at]` after checking it holds `was` (the offsets are
/// those of the spec example, docs/format.md § 11.3).
fn patch(mut bytes: Vec<u8>, at: usize, was: &[u8], now: &[u8]) -> Vec<u8> {
    assert_eq!(&bytes[at..at + was.len()], was, "byte {at:#x} is not what the patch expects");
    bytes.splice(at..at + was.len(), now.iter().copied());
    bytes
}

/// Like [`patch`], and grows `descriptor_len` by the change in length. The
/// spec example's descriptor ends at 59, so up to 5 bytes can be added
/// before the data section (at 64) would move.
fn patch_descriptor(bytes: Vec<u8>, at: usize, was: &[u8], now: &[u8]) -> Vec<u8> {
    let grow = now.len() - was.len();
    assert!(grow <= 5);
    let bytes = patch(bytes, at, was, now);
    let mut bytes = patch(bytes, 12, &[43], &[43 + grow as u8]);
    bytes.drain(59 + grow..59 + 2 * grow); // the padding shrinks by as much
    bytes
}

fn decode_cases(out: &mut Cases) {
    let s = spec().encode();
    assert_eq!(s.len(), 480, "the spec example is the 480 bytes of docs/format.md § 11");

    out.decode("decode-empty-file", "Truncated", "zero bytes", Vec::new());
    out.decode("decode-truncated-header", "Truncated", "the spec example's first 12 bytes", s[..12].to_vec());
    out.decode(
        "decode-truncated-descriptor",
        "Truncated",
        "the spec example cut at byte 40, inside the descriptor",
        s[..40].to_vec(),
    );
    out.decode(
        "decode-truncated-data",
        "TruncatedData",
        "the spec example without its last byte: 479 bytes, the descriptor needs 480",
        s[..479].to_vec(),
    );
    out.decode(
        "decode-bad-magic",
        "BadMagic",
        "magic byte 1 is 'h' instead of 'H'",
        patch(s.clone(), 1, b"H", b"h"),
    );
    out.decode(
        "decode-text-mode-magic",
        "BadMagic",
        "magic with CR LF turned into LF (text-mode transfer)",
        patch(s.clone(), 4, &[0x0d, 0x0a], &[0x0a]),
    );
    out.decode(
        "decode-unsupported-version",
        "UnsupportedVersion",
        "header version 2",
        patch(s.clone(), 8, &[1, 0], &[2, 0]),
    );
    out.decode(
        "decode-reserved-header",
        "ReservedHeaderBits",
        "header reserved field 1",
        patch(s.clone(), 10, &[0, 0], &[1, 0]),
    );
    out.decode(
        "decode-descriptor-too-long",
        "DescriptorTooLong",
        "descriptor_len 8193 (the cap is 8192)",
        patch(s.clone(), 12, &[43, 0, 0, 0], &8193u32.to_le_bytes()),
    );
    out.decode(
        LAYOUT_NOT_CSF_CASE,
        "UnsupportedLayout",
        "layout tag 0x02 (COO) instead of 0x09 (CSF) (stands for rule layout-not-csf)",
        patch(s.clone(), 0x10, &[0x09], &[0x02]),
    );
    out.decode(
        "decode-unknown-layout",
        "UnknownLayout",
        "layout tag 0x0a (unassigned)",
        patch(s.clone(), 0x10, &[0x09], &[0x0a]),
    );
    out.decode(
        "decode-unknown-element-type",
        "UnknownElementType",
        "element type 0x09 (unassigned)",
        patch(s.clone(), 0x11, &[0x12], &[0x09]),
    );
    out.decode(
        RANK_ABOVE_64_CASE,
        "TooLong",
        "shape length 65: rank above the cap of 64 (stands for rule rank-above-64)",
        patch(s.clone(), 0x12, &[0x03], &[0x41]),
    );
    out.decode(
        "decode-unknown-flags",
        "UnknownFlags",
        "flag bit 3 set (unassigned)",
        patch(s.clone(), 0x16, &[0x00], &[0x08]),
    );
    out.decode(
        "decode-flag-mismatch",
        "FlagMismatch",
        "HAS_STATISTICS set but the statistics section absent",
        patch(s.clone(), 0x16, &[0x00], &[0x01]),
    );
    out.decode(
        "decode-bad-option-tag",
        "BadOptionTag",
        "statistics option tag 2",
        patch(s.clone(), 0x38, &[0x00], &[0x02]),
    );
    out.decode(
        "decode-non-canonical-varint",
        "NonCanonicalVarint",
        "nnz written as 84 00 (4 in two bytes)",
        patch_descriptor(s.clone(), 0x18, &[0x04], &[0x84, 0x00]),
    );
    out.decode(
        "decode-varint-overflow",
        "VarintOverflow",
        "flags written as 80 80 80 80 10: a u32 varint whose fifth byte has bits above 32",
        patch_descriptor(s.clone(), 0x16, &[0x00], &[0x80, 0x80, 0x80, 0x80, 0x10]),
    );
    out.decode(
        "decode-descriptor-trailing-bytes",
        "DescriptorTrailingBytes",
        "descriptor_len 44: one byte after the descriptor's last field",
        patch(s.clone(), 12, &[43], &[44]),
    );
    let q = quantized().encode();
    let desc_end = 16 + usize::from(q[12]);
    // ... quantization: 01 | scheme 00 | axis 00 | block_size 00 | scale_type 12 | zero point 00 | shard 00
    out.decode(
        "decode-unknown-quant-scheme",
        "UnknownQuantScheme",
        "quantized spec example with quantization scheme 5",
        patch(
            q,
            desc_end - 7,
            &[0x01, 0x00, 0x00, 0x00, 0x12, 0x00, 0x00],
            &[0x01, 0x05, 0x00, 0x00, 0x12, 0x00, 0x00],
        ),
    );
    out.decode(
        "decode-nonzero-padding-after-descriptor",
        "NonZeroPadding",
        "padding byte 0x3b (after the descriptor) is 1",
        patch(s.clone(), 0x3b, &[0], &[1]),
    );
    out.decode(
        "decode-nonzero-padding-between-buffers",
        "NonZeroPadding",
        "padding byte 0x50 (after values) is 1",
        patch(s.clone(), 0x50, &[0], &[1]),
    );
    out.decode(
        "decode-buffer-misaligned",
        "BufferMisaligned",
        "pos_0's offset is 72, not a multiple of 64",
        patch(s.clone(), 0x21, &[0x40], &[0x48]),
    );
    out.decode(
        "decode-buffer-overlap",
        "BufferOverlap",
        "pos_0's offset is 0, inside the values buffer",
        patch(s.clone(), 0x21, &[0x40], &[0x00]),
    );
    let mut gap = patch(s.clone(), 0x34, &[0x80, 0x03], &[0xc0, 0x03]);
    gap.splice(0x1c0..0x1c0, [0u8; 64]);
    out.decode(
        "decode-buffer-gap",
        "BufferGap",
        "crd_2 at offset 448 with 64 zero bytes before it; the canonical offset is 384",
        gap,
    );
    out.decode(
        "decode-buffer-length-past-end",
        "TruncatedData",
        "crd_2's length is 40: the descriptor needs 488 bytes, the file has 480",
        patch(s.clone(), 0x36, &[0x20], &[0x28]),
    );
    out.decode(
        "decode-trailing-bytes",
        "TrailingBytes",
        "one zero byte after the last buffer",
        [&s[..], &[0]].concat(),
    );
    out.decode(
        "decode-trailing-polyglot",
        "TrailingBytes",
        "a ZIP local-file signature appended (polyglot attempt)",
        [&s[..], b"PK\x03\x04"].concat(),
    );
}
