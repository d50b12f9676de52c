//! The statistics section: nnz, the sparsity ratio and the value range, read
//! through a typed slice for the element types with a Rust equivalent and
//! value by value for the others; both ways must agree.

use csf_build::{build, statistics, Coo, Duplicates, Indices, Options};
use csf_core::{CsfView, Element};

/// The range `statistics` must report: every value as `f64`, NaNs skipped.
fn expected_range(view: &CsfView<'_>) -> (Option<f64>, Option<f64>) {
    let values = view.values();
    let seen: Vec<f64> = (0..view.nnz() as usize)
        .filter_map(|leaf| values.get_raw_f64(leaf))
        .filter(|v| !v.is_nan())
        .collect();
    let min = seen.iter().copied().reduce(f64::min);
    let max = seen.iter().copied().reduce(f64::max);
    (min, max)
}

fn check<T: Element>(values: &[T]) {
    let shape = [4u64, 5, 6];
    let indices: Vec<u64> = (0..values.len() as u64).flat_map(|i| [i % 4, i % 5, i % 6]).collect();
    let coo = Coo::new(&shape, Indices::RowMajor(&indices), values);
    let options = Options { duplicates: Duplicates::Error, parallel: false, ..Options::default() };
    let built = build(&coo, &options).expect("distinct entries build");
    let view = built.tensor.view();
    let stats = statistics(&view);
    let (min, max) = expected_range(&view);
    let bits = |v: Option<f64>| v.map(f64::to_bits);
    assert_eq!((bits(stats.min), bits(stats.max)), (bits(min), bits(max)), "{:?}", T::TYPE);
    assert_eq!(stats.nnz, values.len() as u64);
    assert!((stats.sparsity_ratio - (1.0 - values.len() as f64 / 120.0)).abs() < 1e-12);
}

#[test]
fn the_range_is_the_same_read_typed_or_value_by_value() {
    check::<f64>(&[1.5, -0.0, f64::NAN, 1e300, -7.25, 0.0]);
    check::<f64>(&[f64::NAN, f64::NAN]);
    check::<f64>(&[f64::NEG_INFINITY, 3.0, f64::INFINITY]);
    check::<f32>(&[0.5, f32::NAN, -3.0e38, 2.0]);
    check::<i8>(&[-128, 127, 0, 5]);
    check::<i16>(&[i16::MIN, 3, i16::MAX]);
    check::<i32>(&[i32::MIN, -1, i32::MAX]);
    check::<i64>(&[i64::MIN, 1 << 60, i64::MAX]);
    check::<u8>(&[0, 255, 7]);
    check::<u16>(&[9, u16::MAX]);
    check::<u32>(&[u32::MAX, 1]);
    check::<u64>(&[u64::MAX, 0, 1 << 63]);
}

#[test]
fn an_empty_tensor_has_no_range() {
    check::<f64>(&[]);
    check::<u8>(&[]);
}
