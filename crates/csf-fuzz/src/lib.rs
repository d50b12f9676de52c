//! The bodies of hurray-csf's fuzz targets, each with its oracle.
//!
//! Every public function here takes arbitrary bytes, drives one decoder or
//! encoder path with them, and asserts what must hold (`assert!`/`panic!` is
//! what libFuzzer catches). They are run two ways:
//!
//! - by cargo-fuzz, from `fuzz/fuzz_targets/<name>.rs` (nightly, libFuzzer),
//!   one line per target;
//! - by `cargo test -p csf-fuzz` on stable, over the validation corpus, the
//!   fuzz seeds and the regression corpus (`tests/replay.rs`), so a bug the
//!   fuzzer once found can never come back unnoticed.
//!
//! See `docs/fuzzing.md` for the oracles, the commands and the figures.

#![forbid(unsafe_code)]

mod build;
mod check;
mod compute;
mod descriptor;
mod kernels;
mod spec;

use arbitrary::Unstructured;
use hurray_format::Container;

/// A fuzz target body.
pub type Target = fn(&[u8]);

/// Every target, by the name of its file in `fuzz/fuzz_targets/`.
pub const TARGETS: &[(&str, Target)] = &[
    ("decode", decode),
    ("validate_strict", validate_strict),
    ("permissive_access", permissive_access),
    ("build_roundtrip", build_roundtrip),
    ("descriptor_roundtrip", descriptor_roundtrip),
    ("concat_parts", concat_parts),
    ("compute_access", compute_access),
    ("kernels", kernels),
];

/// Bytes into the container decoder.
///
/// Oracle: it never panics; every buffer range it returns lies inside the
/// input, aligned, in table order, without overlap, and the buffers end where
/// the input ends; a decoded container re-encodes to exactly the input (the
/// layout is canonical, so there is one encoding per container). An error
/// names its byte from the start of the input, and its message opens with it.
pub fn decode(data: &[u8]) {
    match Container::decode(data) {
        Ok(container) => check::framing(&container, data),
        Err(error) => check::decode_error(&error, data),
    }
}

/// Bytes through decoding and strict validation.
///
/// Oracle, always: fail-fast validation, the collecting report and
/// permissive validation agree, every violation that names a byte names one
/// inside its buffer, and strict validation agrees with the spec's
/// rules written out plainly (`spec.rs`; files with a quantization section
/// may be rejected for its own rules). When strict validation accepts: iteration
/// yields exactly `nnz` entries in strictly increasing storage order, the
/// three iteration APIs agree, `find` of every yielded index gives its leaf,
/// indices next to them that were not yielded are implicit zeros, COO and
/// dense conversions agree, the values obey the data model, and re-encoding
/// gives the same bytes.
pub fn validate_strict(data: &[u8]) {
    let Ok(container) = Container::decode(data) else { return };
    check::modes_agree(&container);
    let strict = csf_validate::validate(&container);
    check::spec_agrees(&container, strict.as_ref().map(|_| ()).map_err(|v| *v));
    if let Ok(valid) = strict {
        check::strict(&container, &valid, data);
    }
}

/// Bytes through decoding and permissive validation, then every accessor.
///
/// Oracle: nothing panics, and the work stays linear in the input: the
/// cursor takes at most `2 * (n_0 + ... + n_{rank-1}) + 1` steps and yields
/// at most `n_{rank-1}` entries, `for_each` and COO conversion yield the same
/// entries, every lookup lands inside `crd_{rank-1}`, and the dense
/// conversion keeps to its budget.
pub fn permissive_access(data: &[u8]) {
    let Ok(container) = Container::decode(data) else { return };
    if let Ok(view) = csf_validate::validate_permissive(&container) {
        check::total(&view);
    }
}

/// An arbitrary COO tensor (rank 3..=8, small shapes with the odd huge
/// extent, any element type, any mode order choice and duplicate policy)
/// through the builder, the encoder, the decoder and strict validation.
///
/// Oracle: the builder fails exactly when the input is bad (a coordinate
/// outside the shape, a duplicate under `Duplicates::Error`, a sum of an
/// unsummable type), naming a real culprit; otherwise iteration of the
/// decoded file equals the input sorted into storage order with duplicates
/// resolved by the policy, and `reorder` keeps the same entries.
pub fn build_roundtrip(data: &[u8]) {
    let mut u = Unstructured::new(data);
    if let Ok(case) = build::Case::generate(&mut u) {
        build::roundtrip(&case, &mut u);
    }
}

/// An arbitrary descriptor (any field, within the caps) and buffers through
/// the encoder and the decoder.
///
/// Oracle: encoding succeeds, decoding gives back the same descriptor (with
/// the canonical offsets) and buffers, re-encoding gives the same bytes, the
/// three encoders agree, and the file one byte shorter or longer is rejected.
pub fn descriptor_roundtrip(data: &[u8]) {
    let mut u = Unstructured::new(data);
    if let Ok((descriptor, buffers)) = descriptor::generate(&mut u) {
        descriptor::roundtrip(&descriptor, &buffers);
    }
}

/// Parts for `csf_build::Joiner`: the input is a sequence of frames, each a
/// `u32` little-endian length and that many bytes of a container (at most
/// eight parts); every frame that decodes and passes permissive validation
/// is pushed, in order, into a joiner made from the first one's header.
///
/// Oracle: nothing panics; a refused part leaves no trace unless the joiner
/// says it is poisoned; when `finish` succeeds, the joined tensor passes
/// strict validation and iterates to exactly the accepted parts' entries,
/// one after the other, with the same values. `csf_build::FileJoiner` (the
/// file-backed join, quantizing per tensor when the input's last byte is
/// odd) accepts the same parts, and unquantized writes the same file.
pub fn concat_parts(data: &[u8]) {
    let mut parts = Vec::new();
    let mut rest = data;
    while parts.len() < 8 {
        let Some((len, tail)) = rest.split_first_chunk::<4>() else { break };
        let len = u32::from_le_bytes(*len) as usize;
        let Some(bytes) = tail.get(..len) else { break };
        rest = &tail[len..];
        parts.push(bytes);
    }
    let containers: Vec<Container<'_>> = parts.iter().filter_map(|b| Container::decode(b).ok()).collect();
    let views: Vec<_> = containers.iter().filter_map(|c| csf_validate::validate_permissive(c).ok()).collect();
    let Some(first) = views.first() else { return };
    let joiner = csf_build::Joiner::new(
        first.element_type(),
        first.shape(),
        first.mode_order(),
        csf_build::VecSink::default(),
    );
    let Ok(mut joiner) = joiner else { return };
    // The same parts through the file-backed join (quantized when the
    // input's last byte is odd): it accepts exactly what the joiner accepts.
    let quantize = data.last().filter(|&&b| b % 2 == 1).and_then(|_| "per-tensor:i8".parse().ok());
    let mut files = csf_build::FileJoiner::new(
        first.element_type(),
        first.shape(),
        first.mode_order(),
        quantize,
        &std::env::temp_dir(),
    )
    .expect("the header was accepted by Joiner::new, and the temporary directory is writable");
    let mut accepted = Vec::new();
    for view in &views {
        let pushed = joiner.push(view).is_ok();
        if pushed {
            accepted.push(view);
        }
        let quantizer_refused =
            |e: &csf_build::ExternalError| matches!(e, csf_build::ExternalError::Build(_));
        match files.push(view) {
            Ok(()) => assert!(pushed, "FileJoiner accepted a part Joiner refused"),
            Err(e) => {
                assert!(!pushed || quantizer_refused(&e), "FileJoiner refused a part Joiner accepted: {e}")
            }
        }
    }
    let Ok(joined) = joiner.finish() else { return };
    check::joined(&joined, &accepted);
    let mut written = Vec::new();
    let report = files.finish(&mut written, csf_build::StatisticsSection::Include);
    if quantize.is_none() {
        let report = report.expect("FileJoiner finishes what Joiner finished");
        let built =
            csf_build::Built { tensor: joined.into_tensor().expect("checked above"), auto: None, removed: 0 };
        let at_once = built.to_bytes(csf_build::StatisticsSection::Include).expect("a joined tensor encodes");
        assert_eq!(written, at_once, "FileJoiner's file differs from the in-memory join's");
        assert_eq!(report.bytes_written, written.len() as u64);
    }
}

/// A container and the arguments of csf-build's computations on it: the
/// input is a `u32` little-endian length, that many bytes of a container,
/// then `arbitrary::Unstructured` bytes. The container is read with
/// `csf_validate::read_permissive` (possibly hostile: only the structural
/// rules hold); the rest draws up to four selections (one `Axis` per
/// dimension: indices, slices and take arrays in and out of range, steps of
/// every size and sign) for `csf_build::select`, up to three axis sets for
/// `csf_build::sum_axes` (dense cap 4096, usually), and `csf_build::equal`
/// compares the tensor with itself.
///
/// Oracle: nothing panics; a selection fails exactly when an axis does not
/// fit (naming the first one), and on a strictly valid tensor for nothing
/// else but its size; a selected tensor validates strictly and has the
/// selection's shape, restricted mode order and element type; selected
/// entries lie inside their shape, strictly row-major; `sum_axes` refuses
/// exactly bad axes, and its tensors validate strictly and its dense
/// arrays hold the kept shape's elements, within the cap; `equal(t, t)` is
/// never `Ok(false)`, and `Ok(true)` on a strictly valid tensor. On a
/// strictly valid tensor of at most 256 entries, selections and sums equal
/// brute-force references computed from its iteration, values bit for bit
/// (sums: NaN as one value), and `t[:, :, ...]` equals `t`.
pub fn compute_access(data: &[u8]) {
    let Some((len, tail)) = data.split_first_chunk::<4>() else { return };
    let len = u32::from_le_bytes(*len) as usize;
    let Some(bytes) = tail.get(..len) else { return };
    let Ok(view) = csf_validate::read_permissive(bytes) else { return };
    let strict = csf_validate::read(bytes).is_ok();
    let mut u = Unstructured::new(&tail[len..]);
    compute::run(&view, strict, &mut u);
}

/// A container and the arguments of csf-kernels' kernels on it, framed as
/// for [`compute_access`]: a `u32` little-endian length, that many bytes of
/// a container (read with `csf_validate::read_permissive`), then
/// `arbitrary::Unstructured` bytes that draw the thread setting, a rank of
/// 1 to 5, factor matrices of small integers (when every extent is at most
/// 64), Kruskal weights, a mode with a TTM matrix and a TTV vector.
///
/// Oracle: nothing panics on any view; `Tensor::new` refuses only a mode
/// order that is not a permutation (never on a strictly valid view); the
/// norm is non-negative or NaN; every unfolding is a well-formed CSR matrix
/// (offsets non-decreasing and ending at the entry count, columns inside
/// the width and sorted per row) or `UnfoldTooWide`; MTTKRP of every mode,
/// in `f64` and `f32`, has `I_mode x R` elements; TTM's values are `J` per
/// fibre; TTV gives a tensor that validates strictly, a well-formed CSR
/// matrix for rank 3, or (only on a tensor that is not strictly valid) a
/// build error. On a strictly valid tensor of at most 256 entries with
/// finite values: the norm, every MTTKRP and the inner product equal
/// brute-force sums over the view's iteration, and the unfolding holds
/// every entry.
pub fn kernels(data: &[u8]) {
    let Some((len, tail)) = data.split_first_chunk::<4>() else { return };
    let len = u32::from_le_bytes(*len) as usize;
    let Some(bytes) = tail.get(..len) else { return };
    let Ok(view) = csf_validate::read_permissive(bytes) else { return };
    let strict = csf_validate::read(bytes).is_ok();
    let mut u = Unstructured::new(&tail[len..]);
    kernels::run(&view, strict, &mut u);
}
