//! A build spread as a cluster spreads it: entries cut into key ranges
//! (`KeyRanges` from a sample), each range's entries delivered in any order
//! with their input positions and built with `build_at`, the parts written
//! to files and joined by `FileJoiner::push_file`. The file must be the one
//! `build` writes for the whole input, for every policy, mode order and
//! quantization scheme; bad parts are refused with their path named.

use std::path::{Path, PathBuf};

use csf_build::{
    build, build_at, join_files, ConcatError, Coo, Duplicates, ExternalError, FileJoiner, Indices, KeyRanges,
    ModeOrderPolicy, Options, Quantize, StatisticsSection,
};
use csf_testdata::{synthetic, Distribution, Rng};
use hurray_format::ElementType;

/// Builds `coords`/`values` through `ranges` key ranges and a file join.
fn through_parts(
    dir: &Path,
    shape: &[u64],
    coords: &[u64],
    values: &[f64],
    options: &Options,
    mode_order: &[u32],
    ranges: usize,
) -> Result<Vec<u8>, ExternalError> {
    let rank = shape.len();
    let sample: Vec<u64> = coords.chunks(rank).step_by(3).flatten().copied().collect();
    let cut = KeyRanges::from_sample(Indices::RowMajor(&sample), rank, mode_order, ranges)?;
    // Shipped to the workers as plain keys.
    let cut = KeyRanges::from_bounds(mode_order, cut.bounds().to_vec())?;
    let of = cut.assign(Indices::RowMajor(coords))?;
    let mut rng = Rng::new(ranges as u64);
    let part_options = Options {
        mode_order: ModeOrderPolicy::Explicit(mode_order.to_vec()),
        quantize: None,
        ..options.clone()
    };
    let mut paths = Vec::new();
    for r in 0..cut.len() {
        // The range's entries in a shuffled order, as a shuffle delivers them.
        let mut mine: Vec<usize> = (0..values.len()).filter(|&e| of[e] as usize == r).collect();
        for i in (1..mine.len()).rev() {
            mine.swap(i, rng.below(i as u64 + 1) as usize);
        }
        let part_coords: Vec<u64> =
            mine.iter().flat_map(|&e| coords[e * rank..(e + 1) * rank].to_vec()).collect();
        let part_values: Vec<f64> = mine.iter().map(|&e| values[e]).collect();
        let positions: Vec<u64> = mine.iter().map(|&e| e as u64).collect();
        let built = build_at(
            &Coo::new(shape, Indices::RowMajor(&part_coords), &part_values),
            &positions,
            &part_options,
        )?;
        let path = dir.join(format!("part-{r:05}.hurray"));
        std::fs::write(&path, built.to_bytes(StatisticsSection::Omit).unwrap()).unwrap();
        paths.push(path);
    }
    let mut joiner = FileJoiner::new(ElementType::F64, shape, mode_order, options.quantize, dir)?;
    for path in &paths {
        joiner.push_file(path)?;
    }
    let mut out = Vec::new();
    let report = joiner.finish(&mut out, StatisticsSection::Include)?;
    assert_eq!(report.parts, cut.len() as u64);
    assert_eq!(report.bytes_written, out.len() as u64);
    Ok(out)
}

fn whole(shape: &[u64], coords: &[u64], values: &[f64], options: &Options) -> Vec<u8> {
    build(&Coo::new(shape, Indices::RowMajor(coords), values), options)
        .unwrap()
        .to_bytes(StatisticsSection::Include)
        .unwrap()
}

/// Only the parts the test wrote are left in `dir` (the joiner's spill directory is gone).
fn spill_dirs(dir: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).filter(|p| p.is_dir()).collect()
}

#[test]
fn parts_built_at_their_positions_join_into_the_whole() {
    let dir = tempfile::tempdir().unwrap();
    let cases: [(&[u64], Distribution, &[u32]); 3] = [
        (&[30, 40, 50], Distribution::Uniform, &[0, 1, 2]),
        (&[20, 30, 40, 10], Distribution::PowerLaw { skew: 3.0 }, &[3, 1, 0, 2]),
        (&[6, 5, 4, 3, 2], Distribution::PowerLaw { skew: 2.0 }, &[4, 0, 3, 1, 2]),
    ];
    for (case, (shape, distribution, mode_order)) in cases.into_iter().enumerate() {
        let t = synthetic(shape, 3000, distribution, case as u64);
        // Values with fractions, so that sums depend on their order.
        let values: Vec<f64> = t.values.iter().enumerate().map(|(i, v)| v / 7.0 + i as f64 * 1e-9).collect();
        for duplicates in [Duplicates::Sum, Duplicates::First, Duplicates::Last] {
            for ranges in [1, 2, 7, 64] {
                let options = Options {
                    mode_order: ModeOrderPolicy::Explicit(mode_order.to_vec()),
                    duplicates,
                    ..Options::default()
                };
                let got = through_parts(dir.path(), shape, &t.indices, &values, &options, mode_order, ranges)
                    .unwrap();
                assert!(got == whole(shape, &t.indices, &values, &options), "{case} {duplicates:?} {ranges}");
            }
        }
    }
    assert!(spill_dirs(dir.path()).is_empty());
}

#[test]
fn quantization_is_applied_at_the_join() {
    let dir = tempfile::tempdir().unwrap();
    let shape = [40u64, 30, 20];
    let t = synthetic(&shape, 2000, Distribution::Uniform, 4);
    for scheme in ["per-block:block=32:i4", "per-channel:axis=1:u8:zp", "per-tensor:i8", "nf4"] {
        let quantize: Quantize = scheme.parse().unwrap();
        let options =
            Options { duplicates: Duplicates::Last, quantize: Some(quantize), ..Options::default() };
        let got = through_parts(dir.path(), &shape, &t.indices, &t.values, &options, &[0, 1, 2], 5).unwrap();
        assert!(got == whole(&shape, &t.indices, &t.values, &options), "{scheme}");
    }
}

#[test]
fn errors_name_input_positions() {
    let dir = tempfile::tempdir().unwrap();
    let shape = [10u64, 10, 10];
    // 500 distinct indices, then entry 400 moved onto entry 100's.
    let mut coords: Vec<u64> = (0..500u64).flat_map(|i| [i % 10, (i / 10) % 10, i / 100]).collect();
    coords.copy_within(100 * 3..101 * 3, 400 * 3);
    let values = vec![1.0; 500];
    let options = Options::default();
    let error =
        through_parts(dir.path(), &shape, &coords, &values, &options, &[0, 1, 2], 4).unwrap_err().to_string();
    let at_once = build(&Coo::new(&shape, Indices::RowMajor(&coords), &values), &options).unwrap_err();
    assert_eq!(error, at_once.to_string());
    assert!(error.starts_with("entries 100 and 400 share the index"), "{error}");
}

#[test]
fn bad_part_files_are_refused_with_their_path() {
    let dir = tempfile::tempdir().unwrap();
    let shape = [4u64, 4, 4];
    let part = |coords: &[u64]| {
        let values = vec![1.0f64; coords.len() / 3];
        build(&Coo::new(&shape, Indices::RowMajor(coords), &values), &Options::default())
            .unwrap()
            .to_bytes(StatisticsSection::Omit)
            .unwrap()
    };
    let write = |name: &str, bytes: &[u8]| {
        let path = dir.path().join(name);
        std::fs::write(&path, bytes).unwrap();
        path
    };
    let late = write("late.hurray", &part(&[3, 0, 0]));
    let early = write("early.hurray", &part(&[0, 0, 0, 1, 1, 1]));
    let garbage = write("garbage.hurray", b"not a container at all");
    let mut cut_short = part(&[2, 2, 2]);
    cut_short.truncate(cut_short.len() - 3);
    let cut_short = write("short.hurray", &cut_short);
    let new = || FileJoiner::new(ElementType::F64, &shape, &[0, 1, 2], None, dir.path()).unwrap();

    for bad in [&garbage, &cut_short] {
        let error = new().push_file(bad).unwrap_err();
        assert!(matches!(&error, ExternalError::Part { path, .. } if path == bad), "{error}");
    }
    let mut joiner = new();
    joiner.push_file(&late).unwrap();
    let error = joiner.push_file(&early).unwrap_err();
    assert!(
        matches!(&error, ExternalError::Part { path, reason } if path == &early && reason.contains("part 1")),
        "{error}"
    );
    let missing = dir.path().join("missing.hurray");
    assert!(matches!(new().push_file(&missing), Err(ExternalError::Io { .. })));
    let other_shape = FileJoiner::new(ElementType::F64, &[5, 4, 4], &[0, 1, 2], None, dir.path())
        .unwrap()
        .push_file(&early)
        .unwrap_err();
    assert!(other_shape.to_string().contains("early.hurray"), "{other_shape}");
    drop(joiner);

    // join_files takes the header from the first file.
    let mut joined = Vec::new();
    let report =
        join_files(&[&early, &late], &mut joined, None, StatisticsSection::Include, dir.path()).unwrap();
    assert_eq!((report.parts, report.nnz), (2, 3));
    assert_eq!(joined, whole(&shape, &[0, 0, 0, 1, 1, 1, 3, 0, 0], &[1.0; 3], &Options::default()));
    let none: [&Path; 0] = [];
    let error = join_files(&none, Vec::new(), None, StatisticsSection::Include, dir.path()).unwrap_err();
    assert!(matches!(&error, ExternalError::Join(e) if matches!(**e, ConcatError::NoParts)), "{error}");
    let error =
        join_files(&[&garbage], Vec::new(), None, StatisticsSection::Include, dir.path()).unwrap_err();
    assert!(matches!(&error, ExternalError::Part { path, .. } if path == &garbage), "{error}");
    assert!(spill_dirs(dir.path()).is_empty());
}
