//! The external builder against the in-memory one: byte-identical files
//! whatever the budget, the batches and the options, and nothing left behind
//! when anything fails.

use std::io::{self, Write};
use std::path::Path;

use csf_build::{
    build, BuildError, Coo, Duplicates, ExternalBuilder, ExternalError, ExternalOptions, Indices,
    ModeOrderPolicy, Options, StatisticsSection,
};
use csf_testdata::{synthetic, Distribution, Rng};
use hurray_format::ElementType;
use proptest::prelude::*;

/// The smallest budget the CLI accepts: hundreds of partitions for a few
/// thousand entries.
const TINY: u64 = 64 << 10;

/// The in-memory file, or its error.
fn in_memory(
    shape: &[u64],
    coords: &[u64],
    values: &[f64],
    options: &Options,
) -> Result<Vec<u8>, BuildError> {
    let built = build(&Coo::new(shape, Indices::RowMajor(coords), values), options)?;
    Ok(built.to_bytes(StatisticsSection::Include).unwrap())
}

/// The external file from batches of `batch` entries (with the shape given
/// or inferred), or its error; checks the spill directory is gone after.
fn external(
    shape: Option<&[u64]>,
    rank: usize,
    coords: &[u64],
    values: &[f64],
    options: &Options,
    memory: u64,
    batch: usize,
) -> Result<(Vec<u8>, csf_build::ExternalReport), ExternalError> {
    let dir = tempfile::tempdir().unwrap();
    let limits = ExternalOptions { memory, temp_dir: dir.path().to_owned(), expected_entries: None };
    let result = (|| {
        let mut builder = ExternalBuilder::new(
            rank,
            shape.map(<[u64]>::to_vec),
            ElementType::F64,
            options.clone(),
            limits,
        )?;
        for (c, v) in coords.chunks(batch.max(1) * rank).zip(values.chunks(batch.max(1))) {
            builder.push(Indices::RowMajor(c), bytemuck::cast_slice(v))?;
        }
        let mut out = Vec::new();
        let report = builder.finish(&mut out, StatisticsSection::Include)?;
        Ok((out, report))
    })();
    assert_empty(dir.path());
    result
}

fn assert_empty(dir: &Path) {
    let left: Vec<_> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).collect();
    assert!(left.is_empty(), "left behind: {left:?}");
}

/// Entries of `coo` as row-major coordinates and `f64` values.
fn arrays(coo: &csf_testdata::TestTensor) -> (Vec<u64>, Vec<f64>) {
    (coo.indices.clone(), coo.values.clone())
}

/// Entries of `coo` without its duplicates (the first of each index kept).
fn unique(coo: &csf_testdata::TestTensor) -> (Vec<u64>, Vec<f64>) {
    let mut seen = std::collections::HashSet::new();
    let (mut coords, mut values) = (Vec::new(), Vec::new());
    for i in 0..coo.len() {
        if seen.insert(coo.index(i).to_vec()) {
            coords.extend_from_slice(coo.index(i));
            values.push(coo.values[i]);
        }
    }
    (coords, values)
}

#[test]
fn tiny_budgets_give_the_in_memory_file_for_ranks_3_to_6() {
    let shapes: [&[u64]; 4] = [&[40, 30, 50], &[9, 20, 7, 30], &[5, 6, 7, 8, 9], &[3, 4, 5, 3, 4, 5]];
    for (seed, shape) in shapes.iter().enumerate() {
        for dist in [Distribution::Uniform, Distribution::PowerLaw { skew: 3.0 }] {
            let coo = synthetic(shape, 3000, dist, seed as u64);
            let (coords, values) = arrays(&coo);
            let rank = shape.len();
            let mut order: Vec<u32> = (0..rank as u32).collect();
            order.rotate_left(seed % rank);
            for mode_order in [ModeOrderPolicy::Identity, ModeOrderPolicy::Explicit(order)] {
                let options = Options { mode_order, duplicates: Duplicates::Last, ..Options::default() };
                let want = in_memory(shape, &coords, &values, &options).unwrap();
                for memory in [4 << 10, TINY, 1 << 30] {
                    let (got, report) =
                        external(Some(shape), rank, &coords, &values, &options, memory, 97).unwrap();
                    assert!(got == want, "shape {shape:?}, {options:?}, budget {memory}: files differ");
                    if memory == TINY {
                        assert!(report.partitions > 1, "a tiny budget must partition: {report:?}");
                    }
                    if memory == 4 << 10 {
                        assert!(report.partitions >= 100, "4 KiB makes hundreds of partitions: {report:?}");
                    }
                }
            }
        }
    }
}

#[test]
fn one_level_0_coordinate_holding_most_entries_is_split_inside_it() {
    let mut rng = Rng::new(7);
    let shape = [100u64, 300, 300];
    let mut coords = Vec::new();
    for i in 0..6000u64 {
        // Nine entries in ten under level-0 coordinate 3.
        let first = if i % 10 == 0 { rng.below(100) } else { 3 };
        coords.extend([first, rng.below(300), rng.below(300)]);
    }
    let values: Vec<f64> = (0..6000).map(|i| i as f64 * 0.5).collect();
    let options = Options { duplicates: Duplicates::First, ..Options::default() };
    let want = in_memory(&shape, &coords, &values, &options).unwrap();
    let (got, report) = external(Some(&shape), 3, &coords, &values, &options, TINY, 1000).unwrap();
    assert!(got == want, "files differ");
    assert!(report.partitions >= 8, "{report:?}");
    assert!(report.resplit > 0, "partitions that outgrow the budget are split again: {report:?}");
}

#[test]
fn every_duplicate_policy_and_drop_zeros_match() {
    // Few distinct indices: most entries are duplicates, spread over batches.
    let mut rng = Rng::new(11);
    let shape = [6u64, 7, 8];
    let n = 4000;
    let coords: Vec<u64> = (0..n).flat_map(|_| [rng.below(6), rng.below(7), rng.below(8)]).collect();
    // Values with fractions and zeros, so that the order of a sum shows.
    let values: Vec<f64> =
        (0..n).map(|_| if rng.below(5) == 0 { 0.0 } else { rng.next_f64() * 1e3 }).collect();
    for duplicates in [Duplicates::Sum, Duplicates::First, Duplicates::Last] {
        for drop_zeros in [false, true] {
            let options = Options { duplicates, drop_zeros, ..Options::default() };
            let want = in_memory(&shape, &coords, &values, &options).unwrap();
            let (got, report) = external(Some(&shape), 3, &coords, &values, &options, TINY, 333).unwrap();
            assert!(got == want, "{duplicates:?}, drop_zeros {drop_zeros}: files differ");
            assert_eq!(report.entries, n as u64);
        }
    }
}

#[test]
fn a_duplicate_is_reported_with_input_positions() {
    let shape = [50u64, 50, 50];
    let coo = synthetic(&shape, 3100, Distribution::Uniform, 5);
    let (mut coords, mut values) = unique(&coo);
    coords.truncate(3000 * 3);
    values.truncate(3000);
    // Entry 3000 repeats entry 1234's index.
    let dup: Vec<u64> = coords[1234 * 3..1235 * 3].to_vec();
    coords.extend(&dup);
    values.push(1.0);
    let err = external(Some(&shape), 3, &coords, &values, &Options::default(), TINY, 500).unwrap_err();
    match err {
        ExternalError::Build(BuildError::Duplicate { index, first, second }) => {
            assert_eq!(index, dup);
            assert_eq!((first, second), (1234, 3000));
        }
        other => panic!("expected a duplicate, got {other:?}"),
    }
}

#[test]
fn a_coordinate_outside_the_shape_names_its_entry() {
    let shape = [4u64, 4, 4];
    let coords = [0, 0, 0, 1, 1, 1, 3, 4, 0];
    let err = external(Some(&shape), 3, &coords, &[1.0, 2.0, 3.0], &Options::default(), TINY, 2).unwrap_err();
    assert!(
        matches!(
            err,
            ExternalError::Build(BuildError::OutOfBounds { entry: 2, dim: 1, coord: 4, extent: 4 })
        ),
        "{err:?}"
    );
}

#[test]
fn an_inferred_shape_is_the_smallest_that_holds_the_entries() {
    let coo = synthetic(&[30, 40, 50], 2000, Distribution::Uniform, 9);
    let (coords, values) = unique(&coo);
    let shape = csf_build::shape_of(Indices::RowMajor(&coords), 3).unwrap();
    let want = in_memory(&shape, &coords, &values, &Options::default()).unwrap();
    let (got, _) = external(None, 3, &coords, &values, &Options::default(), TINY, 250).unwrap();
    assert!(got == want, "files differ");
}

#[test]
fn empty_input_gives_the_empty_tensor() {
    let shape = [3u64, 4, 5];
    let want = in_memory(&shape, &[], &[], &Options::default()).unwrap();
    let (got, report) = external(Some(&shape), 3, &[], &[], &Options::default(), TINY, 10).unwrap();
    assert_eq!(got, want);
    assert_eq!(report.nnz, 0);
}

#[test]
fn every_quantization_scheme_gives_the_in_memory_file() {
    let shape = [30u64, 40, 50];
    let coo = synthetic(&shape, 6000, Distribution::PowerLaw { skew: 2.0 }, 17);
    let (coords, _) = unique(&coo);
    let mut rng = Rng::new(3);
    // Signed values of several magnitudes, so that every group's range differs.
    let values: Vec<f64> =
        (0..coords.len() / 3).map(|_| (rng.next_f64() - 0.3) * 10f64.powi(rng.below(4) as i32)).collect();
    let schemes = [
        "per-tensor",
        "per-tensor:u8:zp",
        "per-tensor:f8e4m3",
        "per-channel:axis=1:i8",
        "per-channel:axis=2:u4:zp",
        "per-block:block=7:i4",
        "per-block:block=64:i16:zp",
        "nf4:block=5",
        "mxfp:f4e2m1",
        "mxfp:f6e3m2",
    ];
    for scheme in schemes {
        let options = Options {
            quantize: Some(scheme.parse().unwrap()),
            mode_order: ModeOrderPolicy::Explicit(vec![2, 0, 1]),
            ..Options::default()
        };
        let want = in_memory(&shape, &coords, &values, &options).unwrap();
        for memory in [TINY, 1 << 30] {
            let (got, _) = external(Some(&shape), 3, &coords, &values, &options, memory, 511).unwrap();
            assert!(got == want, "{scheme}, budget {memory}: files differ");
        }
    }
}

#[test]
fn a_quantization_that_cannot_apply_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let limits = ExternalOptions { memory: TINY, temp_dir: dir.path().to_owned(), expected_entries: None };
    let options = Options { quantize: Some("per-channel:axis=3".parse().unwrap()), ..Options::default() };
    let err = ExternalBuilder::new(3, Some(vec![2, 2, 2]), ElementType::F32, options, limits).unwrap_err();
    assert!(matches!(err, ExternalError::Build(BuildError::Quantize(_))), "{err:?}");
    assert_empty(dir.path());
    // A value that is not finite names its leaf in the whole tensor.
    let shape = [4u64, 4, 4];
    let coords: Vec<u64> = (0..64).flat_map(|i| [i / 16, i / 4 % 4, i % 4]).collect();
    let mut values = vec![1.0; 64];
    values[50] = f64::INFINITY;
    let options = Options { quantize: Some("per-tensor".parse().unwrap()), ..Options::default() };
    let err = external(Some(&shape), 3, &coords, &values, &options, TINY, 5).unwrap_err();
    assert!(
        matches!(
            err,
            ExternalError::Build(BuildError::Quantize(csf_build::QuantizeError::NotFinite { leaf: 50, .. }))
        ),
        "{err:?}"
    );
}

/// A writer that fails once `limit` bytes have been written.
struct FailAfter {
    limit: usize,
    written: usize,
}

impl Write for FailAfter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if self.written + buf.len() > self.limit {
            return Err(io::Error::other("no space left (injected)"));
        }
        self.written += buf.len();
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[test]
fn an_output_that_fails_at_any_byte_leaves_no_spill_files() {
    let shape = [20u64, 20, 20];
    let coo = synthetic(&shape, 1500, Distribution::Uniform, 3);
    let (coords, values) = unique(&coo);
    let full = in_memory(&shape, &coords, &values, &Options::default()).unwrap().len();
    for limit in [0, 1, 63, 64, 100, 1000, full / 2, full - 1] {
        let dir = tempfile::tempdir().unwrap();
        let limits =
            ExternalOptions { memory: TINY, temp_dir: dir.path().to_owned(), expected_entries: None };
        let mut builder =
            ExternalBuilder::new(3, Some(shape.to_vec()), ElementType::F64, Options::default(), limits)
                .unwrap();
        builder.push(Indices::RowMajor(&coords), bytemuck::cast_slice(&values)).unwrap();
        let err = builder.finish(FailAfter { limit, written: 0 }, StatisticsSection::Include).unwrap_err();
        assert!(matches!(&err, ExternalError::Encode(_)), "limit {limit}: {err:?}");
        assert!(err.to_string().contains("injected"), "the cause is kept: {err}");
        assert_empty(dir.path());
    }
}

#[test]
fn a_spill_directory_that_cannot_be_made_names_its_path() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("no/such/dir");
    let limits = ExternalOptions { memory: TINY, temp_dir: missing.clone(), expected_entries: None };
    let err = ExternalBuilder::new(3, None, ElementType::F64, Options::default(), limits).unwrap_err();
    match err {
        ExternalError::Io { path, .. } => assert!(path.starts_with(&missing), "{path:?}"),
        other => panic!("expected an I/O error, got {other:?}"),
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, failure_persistence: None, ..ProptestConfig::default() })]

    /// Any budget, batch size, explicit order and duplicate policy: the same bytes.
    #[test]
    fn any_budget_and_batches_give_the_in_memory_file(
        rank in 3usize..=5,
        seed in any::<u64>(),
        n in 0usize..2500,
        batch in 1usize..700,
        memory_kib in 64u64..512,
        rotate in 0usize..5,
        policy in 0usize..3,
    ) {
        let shape: Vec<u64> = (0..rank as u64).map(|d| 3 + (seed >> (d * 7)) % 40).collect();
        let coo = synthetic(&shape, n, Distribution::PowerLaw { skew: 2.0 }, seed);
        let (coords, values) = arrays(&coo);
        let mut order: Vec<u32> = (0..rank as u32).collect();
        order.rotate_left(rotate % rank);
        let duplicates = [Duplicates::Sum, Duplicates::First, Duplicates::Last][policy];
        let options = Options { mode_order: ModeOrderPolicy::Explicit(order), duplicates, ..Options::default() };
        let want = in_memory(&shape, &coords, &values, &options).unwrap();
        let (got, _) = external(Some(&shape), rank, &coords, &values, &options, memory_kib << 10, batch).unwrap();
        prop_assert!(got == want, "files differ");
    }
}

#[test]
fn build_progress_climbs_to_the_total() {
    let shape = [30u64, 40, 50];
    let (coords, values) = unique(&synthetic(&shape, 3000, Distribution::Uniform, 8));
    let dir = tempfile::tempdir().unwrap();
    let limits = ExternalOptions { memory: TINY, temp_dir: dir.path().to_owned(), expected_entries: None };
    let mut builder =
        ExternalBuilder::new(3, Some(shape.to_vec()), ElementType::F64, Options::default(), limits).unwrap();
    let calls = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = std::sync::Arc::clone(&calls);
    builder.on_build_progress(move |done, total| seen.lock().unwrap().push((done, total)));
    builder.push(Indices::RowMajor(&coords), bytemuck::cast_slice(&values)).unwrap();
    let report = builder.finish(Vec::new(), StatisticsSection::Include).unwrap();
    let calls = calls.lock().unwrap();
    assert_eq!(calls.len() as u64, report.partitions, "one call per partition built");
    assert!(calls.windows(2).all(|w| w[0].0 < w[1].0 && w[0].1 == w[1].1), "{calls:?}");
    let &(done, total) = calls.last().unwrap();
    assert_eq!(done, total);
    assert_eq!(total, report.entries * (8 * 4 + 8), "every spilled record counts once");
}
