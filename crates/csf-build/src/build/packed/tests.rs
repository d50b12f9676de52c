use super::*;
use crate::order::choose;
use crate::{build, build_owned, Coo, OwnedCoo};
use csf_testdata::{synthetic, Distribution, TestTensor};

fn auto(duplicates: Duplicates, parallel: bool) -> Options {
    Options { mode_order: ModeOrderPolicy::Auto, duplicates, parallel, ..Options::default() }
}

fn columns_of(coo: &TestTensor) -> Vec<Vec<u64>> {
    let rank = coo.shape.len();
    (0..rank).map(|d| coo.indices.iter().skip(d).step_by(rank).copied().collect()).collect()
}

/// The values as `element_type` (small integers: exact in each).
fn values_of(coo: &TestTensor, element_type: ElementType) -> Vec<u8> {
    let values = coo.values.iter();
    match element_type {
        ElementType::F64 => values.flat_map(|v| v.to_le_bytes()).collect(),
        ElementType::F32 => values.flat_map(|&v| (v as f32).to_le_bytes()).collect(),
        ElementType::U16 => values.flat_map(|&v| (v as u16).to_le_bytes()).collect(),
        _ => values.map(|&v| v as u8).collect(),
    }
}

fn owned(coo: &TestTensor, element_type: ElementType) -> OwnedCoo {
    OwnedCoo {
        shape: coo.shape.clone(),
        columns: columns_of(coo),
        element_type,
        values: values_of(coo, element_type),
    }
}

/// Which way `auto_over_packed` went, and `build_owned`'s result against
/// the borrowed `build` of the same input (which never packs).
fn check(input: &OwnedCoo, options: &Options, what: &str) -> &'static str {
    let OwnedCoo { shape, mut columns, element_type, mut values } = input.clone();
    let taken = match auto_over_packed(&shape, &mut columns, element_type, &mut values, options) {
        Ok(Early::Built(built)) if built.tensor.view().mode_order().windows(2).all(|w| w[0] < w[1]) => {
            "built"
        }
        Ok(Early::Built(_)) => "built in another order",
        Ok(Early::Chosen(_)) => {
            // The input is as it was given.
            assert!(columns == input.columns && values == input.values, "{what}: columns restored");
            "chosen"
        }
        Ok(Early::Declined) => "declined",
        Err(_) => "error",
    };
    let refs: Vec<&[u64]> = input.columns.iter().map(Vec::as_slice).collect();
    let borrowed = Coo {
        shape: &input.shape,
        indices: Indices::Columnar(&refs),
        element_type,
        values: (&input.values[..]).into(),
    };
    let want = build(&borrowed, options);
    let got = build_owned(input.clone(), options);
    match (want, got) {
        (Ok(want), Ok(got)) => {
            assert!(want.tensor == got.tensor, "{what}: tensor");
            assert_eq!((want.auto, want.removed), (got.auto, got.removed), "{what}");
        }
        (Err(want), Err(got)) => assert_eq!(want.to_string(), got.to_string(), "{what}"),
        (want, got) => panic!("{what}: {:?} against {:?}", want.map(|_| ()), got.map(|_| ())),
    }
    taken
}

/// Input out of order with a pair of many cells: counted over packed keys,
/// built over them in identity order or repacked in another, or handed
/// back restored when it is in the order chosen, and the same tensor,
/// choice and errors as the borrowed build, whatever the duplicates
/// policy, value width and threads.
#[test]
fn auto_over_packed_keys_builds_what_the_borrowed_build_does() {
    let n = PACKED_MIN + 4000;
    let cases = [
        // The identity wins (its first level fewest, then the pair of fewest cells).
        (vec![8u64, 3000, 4000], Distribution::PowerLaw { skew: 2.0 }, 1),
        // Another order wins (the short dimension last in the identity).
        (vec![3000, 4000, 8], Distribution::Uniform, 2),
        (vec![40, 300, 5000, 7000], Distribution::PowerLaw { skew: 3.0 }, 3),
        // Keys without position bits (coordinates of 47 bits and more).
        (vec![1 << 15, 1 << 16, 1 << 17], Distribution::PowerLaw { skew: 2.0 }, 4),
        // Sorted in the order `Auto` chooses (the short dimension first and
        // the others' descending: out of identity order from the start).
        (vec![4000, 3000, 8], Distribution::Uniform, 5),
    ];
    let mut seen = Vec::new();
    for (shape, distribution, seed) in cases {
        let coo = synthetic(&shape, n, distribution, seed);
        let coo = if seed == 5 { in_chosen_order(coo) } else { coo };
        // Every policy and thread count on `f64`; the other widths (whose
        // slots go elsewhere, `in_place.rs`) once each.
        let mut runs: Vec<(ElementType, Duplicates, bool)> = Vec::new();
        for duplicates in [Duplicates::Last, Duplicates::First, Duplicates::Sum, Duplicates::Error] {
            runs.extend([(ElementType::F64, duplicates, false), (ElementType::F64, duplicates, true)]);
        }
        runs.extend(
            [ElementType::F32, ElementType::U16, ElementType::U8].map(|t| (t, Duplicates::Sum, true)),
        );
        for (element_type, duplicates, parallel) in runs {
            let input = owned(&coo, element_type);
            let what = format!("{shape:?} {element_type:?} {duplicates:?} parallel {parallel}");
            seen.push(check(&input, &auto(duplicates, parallel), &what));
        }
    }
    for taken in ["built", "built in another order", "chosen"] {
        assert!(seen.contains(&taken), "{taken}: {seen:?}");
    }
}

/// `coo`'s entries sorted in the order `Auto` chooses for them.
fn in_chosen_order(coo: TestTensor) -> TestTensor {
    let input = owned(&coo, ElementType::F64);
    let built = build_owned(input, &auto(Duplicates::Last, false)).unwrap();
    let order = built.auto.unwrap().mode_order;
    assert!(order.windows(2).any(|w| w[0] > w[1]), "{order:?}");
    let rank = coo.shape.len();
    let mut rows: Vec<(Vec<u64>, f64)> =
        coo.indices.chunks(rank).map(<[u64]>::to_vec).zip(coo.values.clone()).collect();
    rows.sort_by_key(|(row, _)| order.iter().map(|&d| row[d as usize]).collect::<Vec<_>>());
    TestTensor {
        indices: rows.iter().flat_map(|(row, _)| row.clone()).collect(),
        values: rows.iter().map(|&(_, v)| v).collect(),
        ..coo
    }
}

/// Input in identity order, few entries, pairs of few cells and dropped
/// zeros are not packed; coordinates outside the shape are refused as the
/// borrowed build refuses them (the first entry outside, its first
/// dimension outside), found as the keys are packed.
#[test]
fn auto_over_packed_keys_declines_what_it_does_not_serve() {
    let n = PACKED_MIN + 4000;
    let coo = synthetic(&[8, 3000, 4000], n, Distribution::PowerLaw { skew: 2.0 }, 5);
    let input = owned(&coo, ElementType::F64);
    let options = auto(Duplicates::Last, false);
    assert_eq!(check(&input, &options, "random"), "built");
    // Sorted.
    let mut rows: Vec<Vec<u64>> = coo.indices.chunks(3).map(<[u64]>::to_vec).collect();
    rows.sort();
    let sorted = TestTensor { indices: rows.concat(), ..coo.clone() };
    assert_eq!(check(&owned(&sorted, ElementType::F64), &options, "sorted"), "declined");
    // Few entries.
    let few = synthetic(&[8, 3000, 4000], PACKED_MIN - 1, Distribution::PowerLaw { skew: 2.0 }, 6);
    assert_eq!(check(&owned(&few, ElementType::F64), &options, "few"), "declined");
    // Every pair of few cells.
    let dense = synthetic(&[30, 40, 50], n, Distribution::Uniform, 7);
    assert_eq!(check(&owned(&dense, ElementType::F64), &options, "dense"), "declined");
    // Zeros dropped.
    let drop = Options { drop_zeros: true, ..options.clone() };
    assert_eq!(check(&input, &drop, "drop zeros"), "declined");
    // Coordinates outside the shape (late, in one chunk of several), the
    // first of them in the column the keys are packed over, or in another.
    for parallel in [false, true] {
        let options = auto(Duplicates::Last, parallel);
        let mut outside = input.clone();
        outside.columns[1][n - 10] = 3000;
        outside.columns[2][n - 5] = 1 << 40;
        assert_eq!(check(&outside, &options, "outside"), "error");
        outside.columns[0][n - 20] = 8;
        outside.columns[2][n - 20] = 4000;
        assert_eq!(check(&outside, &options, "outside in the first column"), "error");
        let OwnedCoo { shape, mut columns, element_type, mut values } = outside;
        let refused = auto_over_packed(&shape, &mut columns, element_type, &mut values, &options);
        let expected = BuildError::OutOfBounds { entry: n - 20, dim: 0, coord: 8, extent: 8 };
        assert_eq!(refused.err().map(|e| e.to_string()), Some(expected.to_string()));
    }
}

/// `Auto` counting over packed keys chooses what it chooses over the
/// columns, for every rank the exact search covers and the counting
/// methods the sizes select (masks, bitmap scans and projections,
/// partition passes with bitmaps, fibers, parts and hash tables).
#[test]
fn counting_over_packed_keys_counts_what_the_columns_give() {
    let cases: [(&[u64], usize); 7] = [
        (&[5, 7, 9], 50),
        (&[300, 400, 500], 3000),
        (&[1 << 12, 1 << 13, 1 << 14], 20_000),
        (&[20, 1 << 20, 1 << 21, 6], 20_000),
        (&[40, 50, 60, 70, 80], 5000),
        (&[1 << 10, 1 << 10, 1 << 10, 1 << 10, 1 << 10, 1 << 10], 4000),
        (&[1 << 19, 1 << 20, 1 << 21], 70_000),
    ];
    for (seed, (shape, n)) in cases.into_iter().enumerate() {
        let coo = synthetic(shape, n, Distribution::PowerLaw { skew: 2.0 }, seed as u64 + 10);
        let mut columns = columns_of(&coo);
        let (plain, singles) = {
            let refs: Vec<&[u64]> = columns.iter().map(Vec::as_slice).collect();
            let source = Source { shape, indices: Indices::Columnar(&refs), len: n, packed: None };
            (choose(&source, true, &[]), crate::distinct::checked_singles(&source, true, true))
        };
        let layout = Layout::new(shape, n);
        let identity: Vec<u32> = (0..shape.len() as u32).collect();
        let mut keys = std::mem::take(&mut columns[0]);
        // The singles counted as the keys are packed, those the bounds
        // check counts (every dimension asked for, to check each bitmap).
        let all: Vec<usize> = (0..shape.len()).collect();
        let counted = |d: usize| singles_counted(shape, n)[d];
        let (_, distinct) = in_place::pack_over(&mut keys, &columns, (&identity, &layout), &all, true)
            .expect("inside the shape");
        let counted_singles: Vec<(Dims, u64)> =
            all.iter().zip(&distinct).filter(|&(&d, _)| counted(d)).map(|(&d, &n)| (1 << d, n)).collect();
        assert_eq!(Ok(counted_singles), singles, "{shape:?}");
        let truth = |d: usize| {
            let mut coords: Vec<u64> = coo.indices.iter().skip(d).step_by(shape.len()).copied().collect();
            coords.sort_unstable();
            coords.dedup();
            coords.len() as u64
        };
        assert_eq!(distinct, all.iter().map(|&d| truth(d)).collect::<Vec<_>>(), "{shape:?}");
        for parallel in [false, true] {
            let packed = Packed { keys: &keys, layout: &layout };
            let source = Source { shape, indices: Indices::Columnar(&[]), len: n, packed: Some(packed) };
            let scratch = vec![7; n];
            let (choice, in_order, scratch) = choose_lending(&source, parallel, &[], scratch);
            assert_eq!((choice, in_order), plain.clone(), "{shape:?} parallel {parallel}");
            assert_eq!(scratch.len(), n, "the lent array comes back");
        }
    }
}
