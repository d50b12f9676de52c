//! `build_owned` against `build`: the same result for every input and
//! option, and the input's own arrays adopted when the input is in strict
//! storage order.

use csf_build::{
    build, build_owned, Built, Coo, Duplicates, Indices, ModeOrderPolicy, Options, OwnedCoo, Quantize,
};
use hurray_format::ElementType;
use proptest::prelude::*;

/// The borrowed form of `coo`, for `build`.
fn built_borrowed(coo: &OwnedCoo, options: &Options) -> Result<Built, csf_build::BuildError> {
    let columns: Vec<&[u64]> = coo.columns.iter().map(Vec::as_slice).collect();
    let borrowed = Coo {
        shape: &coo.shape,
        indices: Indices::Columnar(&columns),
        element_type: coo.element_type,
        values: coo.values.as_slice().into(),
    };
    build(&borrowed, options)
}

fn assert_same(
    owned: &Result<Built, csf_build::BuildError>,
    borrowed: &Result<Built, csf_build::BuildError>,
) {
    match (owned, borrowed) {
        (Ok(a), Ok(b)) => {
            assert_eq!(a.tensor, b.tensor);
            assert_eq!((&a.auto, a.removed), (&b.auto, b.removed));
        }
        // Debug forms: an error may carry a NaN.
        (Err(a), Err(b)) => assert_eq!(format!("{a:?}"), format!("{b:?}")),
        (a, b) => panic!("build_owned gave {a:?}, build gave {b:?}"),
    }
}

/// Where the tensor's leaf coordinates and values live.
fn leaf_addresses(built: &Built) -> (*const u8, *const u8) {
    let view = built.tensor.view();
    let leaf = view.levels().last().expect("a leaf level");
    (leaf.crd.as_bytes().as_ptr(), view.values().as_bytes().as_ptr())
}

/// `n` entries of a tensor of `shape` in the order `mode_order` stores them,
/// each index once: the tensor's first `n` cells in storage order, spread
/// out by `step`.
fn strictly_sorted(shape: &[u64], mode_order: &[usize], n: usize, step: u64) -> Vec<Vec<u64>> {
    let cells: u64 = shape.iter().product();
    let mut columns = vec![Vec::with_capacity(n); shape.len()];
    for i in 0..n as u64 {
        let mut cell = (i * step) % cells;
        for &d in mode_order.iter().rev() {
            columns[d].push(cell % shape[d]);
            cell /= shape[d];
        }
    }
    columns
}

fn f64_values(n: usize) -> Vec<u8> {
    (0..n).flat_map(|i| (i as f64 + 0.5).to_le_bytes()).collect()
}

#[test]
fn sorted_input_gives_the_tensor_its_own_leaf_coordinates_and_values() {
    let shape = vec![40, 30, 50];
    for (order, policy) in
        [([0, 1, 2], ModeOrderPolicy::Identity), ([2, 0, 1], ModeOrderPolicy::Explicit(vec![2, 0, 1]))]
    {
        let columns = strictly_sorted(&shape, &order, 5_000, 7);
        let coo = OwnedCoo {
            shape: shape.clone(),
            columns,
            element_type: ElementType::F64,
            values: f64_values(5_000),
        };
        let leaf_column = coo.columns[order[2]].as_ptr().cast::<u8>();
        let values = coo.values.as_ptr();
        let options = Options { mode_order: policy, ..Options::default() };
        let want = built_borrowed(&coo, &options);
        let got = build_owned(coo, &options);
        assert_same(&got, &want);
        let got = got.unwrap();
        assert_eq!(got.tensor.view().nnz(), 5_000);
        assert_eq!(leaf_addresses(&got), (leaf_column, values), "order {order:?}: adopted, not copied");
    }
}

#[test]
fn merges_and_drops_are_made_in_place_and_anything_out_of_order_is_copied() {
    let shape = vec![40, 30, 50];
    let sorted = || strictly_sorted(&shape, &[0, 1, 2], 2_000, 3);
    let mut swapped = sorted();
    swapped[2].swap(1_000, 1_001);
    let mut duplicated = sorted();
    duplicated.iter_mut().for_each(|c| c[150] = c[149]);
    // A duplicate early, then an entry out of order: the walk gives up after
    // compacting, and restores what it read.
    let mut duplicated_then_swapped = duplicated.clone();
    duplicated_then_swapped[2].swap(1_800, 1_801);
    // A zero dropped early, then an entry outside the shape: the error names
    // the entry's place in the caller's input.
    let mut outside = sorted();
    outside[1][1_900] = 30;
    let mut zero = f64_values(2_000);
    zero[8 * 120..8 * 121].fill(0);
    let sum = Options { duplicates: Duplicates::Sum, ..Options::default() };
    let last = Options { duplicates: Duplicates::Last, ..Options::default() };
    let last_no_zeros = Options { drop_zeros: true, ..last.clone() };
    let sum_no_zeros = Options { drop_zeros: true, ..sum.clone() };
    let other_order = Options { mode_order: ModeOrderPolicy::Explicit(vec![1, 0, 2]), ..Options::default() };
    let cases = [
        ("a duplicate summed", duplicated.clone(), f64_values(2_000), sum, true),
        ("a zero dropped", sorted(), zero.clone(), last_no_zeros.clone(), true),
        ("out of order", swapped, f64_values(2_000), Options::default(), false),
        ("a duplicate, then out of order", duplicated_then_swapped, f64_values(2_000), last, false),
        ("a zero dropped, then outside", outside, zero, last_no_zeros, false),
        ("a duplicate summed, zeros dropped", duplicated, f64_values(2_000), sum_no_zeros, false),
        ("another order", sorted(), f64_values(2_000), other_order, false),
    ];
    for (what, columns, values, options, adopted) in cases {
        let coo = OwnedCoo { shape: shape.clone(), columns, element_type: ElementType::F64, values };
        let addresses = (coo.columns[2].as_ptr().cast::<u8>(), coo.values.as_ptr());
        let want = built_borrowed(&coo, &options);
        let got = build_owned(coo, &options);
        assert_same(&got, &want);
        match got {
            Ok(got) => assert_eq!(leaf_addresses(&got) == addresses, adopted, "{what}"),
            Err(_) => assert!(
                matches!(want, Err(csf_build::BuildError::OutOfBounds { entry: 1_900, .. })),
                "{what}"
            ),
        }
    }
    // Bool values are normalised to 0 and 1, so they are never adopted.
    let values: Vec<u8> = (0..2_000).map(|i| (i % 3) as u8 + 1).collect();
    let coo = OwnedCoo { shape: shape.clone(), columns: sorted(), element_type: ElementType::Bool, values };
    let values_at = coo.values.as_ptr();
    let got = build_owned(coo.clone(), &Options::default());
    assert_same(&got, &built_borrowed(&coo, &Options::default()));
    assert_ne!(leaf_addresses(&got.unwrap()).1, values_at);
}

#[test]
fn unsorted_input_writes_the_upper_levels_over_its_columns() {
    // 5,000 random entries over 1000^4: nearly every entry opens a node on
    // levels 1 to 3, so the upper arrays are about as long as a column.
    let mut rng = csf_testdata::Rng::new(7);
    let columns: Vec<Vec<u64>> = (0..4).map(|_| (0..5_000).map(|_| rng.below(1_000)).collect()).collect();
    let coo = OwnedCoo {
        shape: vec![1_000; 4],
        columns,
        element_type: ElementType::F64,
        values: f64_values(5_000),
    };
    let options = Options { duplicates: Duplicates::Sum, ..Options::default() };
    let columns: Vec<*const u8> = coo.columns.iter().map(|c| c.as_ptr().cast::<u8>()).collect();
    let values_at = coo.values.as_ptr();
    let want = built_borrowed(&coo, &options);
    let got = build_owned(coo, &options).unwrap();
    assert_same(&Ok(got.clone()), &want);
    let view = got.tensor.view();
    let levels = view.levels();
    assert_eq!(levels[2].crd.len(), 5_000, "level 2 has a node per entry");
    let over_column = |bytes: &[u8]| columns.contains(&bytes.as_ptr());
    // The keys are packed over level 0's column and sorted into level 1's,
    // which becomes the leaf crd; the value slots are scattered into level
    // 3's, which crd_2 is then written over as the slots are read, and the
    // values are written over the input's. The two other columns take the
    // longest upper arrays that fit, longest first: pos_2 (about 4,990
    // entries) and crd_1; pos_3 (5,001 entries) does not fit a column of
    // 5,000.
    let pos: Vec<bool> = levels.iter().map(|l| over_column(l.pos.as_bytes())).collect();
    let crd: Vec<bool> = levels.iter().map(|l| over_column(l.crd.as_bytes())).collect();
    assert_eq!((pos, crd), (vec![false, false, true, false], vec![false, true, true, true]));
    assert_eq!(leaf_addresses(&got).1, values_at, "the values are written over the input's");
    assert_eq!(levels[2].crd.as_bytes().as_ptr(), columns[3], "crd_2 is written over the value slots");
}

#[test]
fn the_level_written_over_the_value_slots_survives_duplicates_and_chunks() {
    // Random input in one chunk and in parallel chunks (which write that
    // level's nodes from their first key's index and are moved down after):
    // heavy duplicates among keys with room for a position, and each of
    // 50,000 entries three times over among wide keys. `f32` slots are not
    // a word wide and take their own array.
    let mut rng = csf_testdata::Rng::new(23);
    let mut inputs: Vec<(Vec<u64>, Vec<Vec<u64>>)> = Vec::new();
    let shape = vec![40, 50, 60];
    inputs
        .push((shape.clone(), shape.iter().map(|&e| (0..200_000).map(|_| rng.below(e)).collect()).collect()));
    let shape = vec![5_000, 50_000, 500_000];
    let once: Vec<Vec<u64>> = shape.iter().map(|&e| (0..50_000).map(|_| rng.below(e)).collect()).collect();
    let picks: Vec<usize> = (0..150_000).map(|_| rng.below(50_000) as usize).collect();
    inputs.push((shape, once.iter().map(|column| picks.iter().map(|&i| column[i]).collect()).collect()));
    for (shape, columns) in inputs {
        let n = columns[0].len();
        for element_type in [ElementType::F64, ElementType::F32] {
            let width = if element_type == ElementType::F64 { 8 } else { 4 };
            let values: Vec<u8> =
                (0..n).flat_map(|i| ((i % 1000) as u64).to_le_bytes()[..width].to_vec()).collect();
            for (duplicates, parallel) in [Duplicates::Sum, Duplicates::Last, Duplicates::First]
                .into_iter()
                .flat_map(|d| [(d, false), (d, true)])
            {
                let options = Options { duplicates, parallel, ..Options::default() };
                let coo = OwnedCoo {
                    shape: shape.clone(),
                    columns: columns.clone(),
                    element_type,
                    values: values.clone(),
                };
                let slots_column = coo.columns[2].as_ptr().cast::<u8>();
                let want = built_borrowed(&coo, &options);
                let got = build_owned(coo, &options);
                assert_same(&got, &want);
                let got = got.expect("a valid input");
                assert!(got.removed > 0, "{shape:?}: duplicates were merged");
                let over_slots = got.tensor.view().levels()[1].crd.as_bytes().as_ptr() == slots_column;
                assert_eq!(over_slots, width == 8, "{shape:?} {element_type:?} {duplicates:?} {parallel}");
            }
        }
    }
}

/// Buckets too big for the cache (a third of the entries share their first
/// two coordinates) take their scratch in the packed keys once they are
/// scattered: the tensor is the borrowed build's, for keys with room for a
/// position and wide keys, in one chunk and in parallel; and a duplicate
/// error (which reads the packed keys after the sort) names the same entries.
#[test]
fn big_buckets_sorted_over_the_packed_keys_give_the_same_tensor() {
    let mut rng = csf_testdata::Rng::new(5);
    let n = 400_000;
    for shape in [vec![64, 1_000, 1_000], vec![5_000, 50_000, 500_000]] {
        let mut columns: Vec<Vec<u64>> = shape
            .iter()
            .enumerate()
            .map(|(d, &e)| (0..n).map(|i| if d < 2 && i % 3 == 0 { 7 } else { rng.below(e) }).collect())
            .collect();
        // One entry repeated at the end, for the duplicate error.
        for column in &mut columns {
            column.push(column[n / 3]);
        }
        let values = f64_values(n + 1);
        for duplicates in [Duplicates::Sum, Duplicates::Last, Duplicates::Error] {
            for parallel in [false, true] {
                let options = Options { duplicates, parallel, ..Options::default() };
                let coo = OwnedCoo {
                    shape: shape.clone(),
                    columns: columns.clone(),
                    element_type: ElementType::F64,
                    values: values.clone(),
                };
                let want = built_borrowed(&coo, &options);
                assert_eq!(want.is_err(), duplicates == Duplicates::Error, "{shape:?} {duplicates:?}");
                assert_same(&build_owned(coo, &options), &want);
            }
        }
    }
}

#[test]
fn errors_are_the_same() {
    let shape = vec![4, 4, 4];
    let coo = |columns: Vec<Vec<u64>>, values: usize| OwnedCoo {
        shape: shape.clone(),
        columns,
        element_type: ElementType::F64,
        values: f64_values(values),
    };
    let cases = [
        coo(vec![vec![0, 1], vec![0, 1], vec![0, 4]], 2),
        coo(vec![vec![0, 1], vec![0, 1], vec![0, 1]], 3),
        coo(vec![vec![0, 1], vec![0, 1]], 2),
        coo(vec![vec![0, 0], vec![1, 1], vec![2, 2]], 2),
    ];
    for case in cases {
        let want = built_borrowed(&case, &Options::default());
        assert!(want.is_err());
        assert_same(&build_owned(case, &Options::default()), &want);
    }
}

/// Element types of whole bytes (adoptable or normalised) and of half bytes.
const TYPES: [ElementType; 6] = [
    ElementType::F64,
    ElementType::I16,
    ElementType::U8,
    ElementType::Bool,
    ElementType::F6E3M2,
    ElementType::U4,
];

fn options_strategy(rank: usize) -> impl Strategy<Value = Options> {
    let policy = prop_oneof![
        Just(ModeOrderPolicy::Identity),
        Just(ModeOrderPolicy::Auto),
        Just((0..rank as u32).rev().collect::<Vec<_>>()).prop_map(ModeOrderPolicy::Explicit),
    ];
    let duplicates = prop_oneof![
        Just(Duplicates::Error),
        Just(Duplicates::Sum),
        Just(Duplicates::Last),
        Just(Duplicates::First)
    ];
    let quantize = prop_oneof![4 => Just(None), 1 => Just(Some(Quantize::PerTensor { dtype: ElementType::I8, zero_point: false }))];
    (policy, duplicates, any::<bool>(), any::<bool>(), quantize).prop_map(
        |(mode_order, duplicates, drop_zeros, parallel, quantize)| Options {
            mode_order,
            duplicates,
            drop_zeros,
            parallel,
            quantize,
        },
    )
}

/// A random tensor: rank 3 to 6 (6: the walk made for any rank), small extents (so duplicates happen),
/// entries in any order, or sorted in identity order (then sometimes made
/// strictly sorted, or spoilt late by an entry out of order or outside the
/// shape, after the walk has compacted duplicates and zeros).
fn coo_strategy() -> impl Strategy<Value = (OwnedCoo, Options)> {
    (3usize..=6, 0usize..80, 0..TYPES.len(), 0u8..5, any::<prop::sample::Index>())
        .prop_flat_map(|(rank, n, ty, arrangement, late)| {
            let shape = proptest::collection::vec(1u64..6, rank);
            let entries =
                proptest::collection::vec((proptest::collection::vec(0u64..6, rank), any::<u64>()), n);
            (shape, entries, Just(TYPES[ty]), Just((arrangement, late)), options_strategy(rank))
        })
        .prop_map(|(shape, mut entries, element_type, (arrangement, late), options)| {
            for (index, _) in &mut entries {
                index.iter_mut().zip(&shape).for_each(|(c, &e)| *c %= e);
            }
            if arrangement > 0 {
                entries.sort_by(|a, b| a.0.cmp(&b.0));
            }
            if arrangement == 2 {
                entries.dedup_by(|a, b| a.0 == b.0);
            }
            // Spoil one entry in the second half.
            if arrangement >= 3 && entries.len() > 1 {
                let at = entries.len() / 2 + late.index(entries.len() / 2);
                if arrangement == 3 {
                    entries[at].0[0] = 0;
                    entries[at].0[1] = shape[1] - 1;
                } else {
                    entries[at].0[1] = shape[1];
                }
            }
            let rank = shape.len();
            let columns = (0..rank).map(|d| entries.iter().map(|(index, _)| index[d]).collect()).collect();
            // One value in four is zero, so that dropping zeros has work.
            let word = |v: u64| if v % 4 == 0 { 0 } else { v };
            let values = match element_type.packing() {
                hurray_format::Packing::Bytes(w) => entries
                    .iter()
                    .flat_map(|&(_, v)| word(v).to_le_bytes()[..usize::from(w)].to_vec())
                    .collect(),
                hurray_format::Packing::SubByte { .. } => entries
                    .chunks(2)
                    .map(|pair| pair.iter().fold(0u8, |b, &(_, v)| b << 4 | (word(v) & 0xf) as u8))
                    .collect(),
            };
            (OwnedCoo { shape, columns, element_type, values }, options)
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(if cfg!(miri) { 8 } else { 1024 }))]

    #[test]
    fn build_owned_builds_what_build_builds((coo, options) in coo_strategy()) {
        let want = built_borrowed(&coo, &options);
        assert_same(&build_owned(coo, &options), &want);
    }
}

#[test]
fn keys_packed_over_the_columns_report_errors_as_the_borrowed_build() {
    // Random input too large for the small path, in parallel chunks and
    // not: keys with and without room for a position (2000^3, and
    // 5000 x 50000 x 500000 whose 48 bits leave none), an entry outside the
    // shape in the first and in a later chunk, a duplicate under `Error`.
    for (shape, n) in [(vec![2_000u64; 3], 100_000usize), (vec![5_000, 50_000, 500_000], 70_000)] {
        let mut rng = csf_testdata::Rng::new(11);
        let fresh = |rng: &mut csf_testdata::Rng| -> Vec<Vec<u64>> {
            shape.iter().map(|&e| (0..n).map(|_| rng.below(e)).collect()).collect()
        };
        let mut cases: Vec<(&str, Vec<Vec<u64>>, Options)> = Vec::new();
        for parallel in [false, true] {
            let sum = Options { duplicates: Duplicates::Sum, parallel, ..Options::default() };
            let error = Options { parallel, ..Options::default() };
            let other_order = Options { mode_order: ModeOrderPolicy::Explicit(vec![2, 0, 1]), ..sum.clone() };
            cases.push(("valid", fresh(&mut rng), sum.clone()));
            cases.push(("another order", fresh(&mut rng), other_order));
            for at in [3, n / 2 + 17, n - 1] {
                let mut columns = fresh(&mut rng);
                columns[2][at] = shape[2] + 5;
                columns[1][at + 1 - usize::from(at + 1 == n)] = shape[1];
                cases.push(("outside the shape", columns, sum.clone()));
            }
            let mut columns = fresh(&mut rng);
            for column in &mut columns {
                column[n - 10] = column[40];
            }
            cases.push(("a duplicate", columns, error));
        }
        for (what, columns, options) in cases {
            let coo = OwnedCoo {
                shape: shape.clone(),
                columns,
                element_type: ElementType::F64,
                values: f64_values(n),
            };
            let want = built_borrowed(&coo, &options);
            match (what, &want) {
                ("outside the shape", Err(csf_build::BuildError::OutOfBounds { .. }))
                | ("a duplicate", Err(csf_build::BuildError::Duplicate { first: 40, .. }))
                | ("valid" | "another order", Ok(_)) => {}
                _ => panic!("{what}: {:?}", want.as_ref().err()),
            }
            assert_same(&build_owned(coo, &options), &want);
        }
    }
}
