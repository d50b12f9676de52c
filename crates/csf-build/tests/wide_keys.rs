//! Keys whose coordinates and input position do not fit one `u64` (or, past
//! 64 coordinate bits, one `u128`): the builder keys them by coordinates
//! alone and moves the values through the sort (issue 13, "Wide keys").
//! Every duplicate policy must still see duplicates in input order.

use std::collections::BTreeMap;

use csf_build::{build, Coo, Duplicates, Indices, ModeOrderPolicy, Options, StatisticsSection};
use csf_testdata::{reference_csf, synthetic, Distribution};
use hurray_format::ElementType;

fn levels_of(built: &csf_build::Built) -> Vec<(Vec<u64>, Vec<u64>)> {
    built.tensor.view().levels().iter().map(|l| (l.pos.iter().collect(), l.crd.iter().collect())).collect()
}

/// The values a policy keeps, in storage order, computed in input order
/// (`f32` sums are order-sensitive, so `Sum` checks the order too).
fn expected(
    coo: &csf_testdata::TestTensor,
    values: &[f32],
    order: &[u32],
    duplicates: Duplicates,
) -> Vec<u32> {
    let mut map: BTreeMap<Vec<u64>, f32> = BTreeMap::new();
    for (i, &v) in values.iter().enumerate() {
        let key: Vec<u64> = order.iter().map(|&d| coo.index(i)[d as usize]).collect();
        match map.get_mut(&key) {
            None => {
                map.insert(key, v);
            }
            Some(old) => match duplicates {
                Duplicates::Sum => *old += v,
                Duplicates::Last => *old = v,
                _ => {}
            },
        }
    }
    map.values().map(|v| v.to_bits()).collect()
}

fn check(shape: &[u64], entries: usize, skew: f64, seed: u64) {
    let coo = synthetic(shape, entries, Distribution::PowerLaw { skew }, seed);
    // Values whose f32 sums depend on the order of addition.
    let values: Vec<f32> = (0..coo.len()).map(|i| 1.0e7 + (i % 13) as f32 * 0.37).collect();
    let rank = shape.len() as u32;
    let identity: Vec<u32> = (0..rank).collect();
    let rotated: Vec<u32> = (0..rank).map(|l| (l + 1) % rank).collect();
    let input = Coo::new(&coo.shape, Indices::RowMajor(&coo.indices), &values);
    for order in [identity, rotated] {
        let want = reference_csf(&coo, &order);
        for duplicates in [Duplicates::First, Duplicates::Last, Duplicates::Sum] {
            let want_values = expected(&coo, &values, &order, duplicates);
            let mut first = None;
            for parallel in [false, true] {
                let options = Options {
                    mode_order: ModeOrderPolicy::Explicit(order.clone()),
                    duplicates,
                    parallel,
                    ..Options::default()
                };
                let built = build(&input, &options).unwrap();
                let bytes = built.to_bytes(StatisticsSection::Omit).unwrap();
                let what = format!("{shape:?} order {order:?} {duplicates:?} parallel={parallel}");
                assert_eq!(levels_of(&built), want.levels, "{what}");
                let got: Vec<u32> = built
                    .tensor
                    .view()
                    .values()
                    .typed::<f32>()
                    .unwrap()
                    .as_native()
                    .unwrap()
                    .iter()
                    .map(|v| v.to_bits())
                    .collect();
                assert_eq!(got, want_values, "{what}");
                // The same bytes whatever the thread count.
                assert_eq!(*first.get_or_insert_with(|| bytes.clone()), bytes, "{what}");
            }
        }
    }
}

#[test]
fn coordinates_too_wide_for_a_position_in_u64() {
    // 13 + 16 + 19 = 48 coordinate bits and 19 position bits: 67 > 64.
    // Skew 4 puts over 2^16 entries in one top bucket (its MSD path).
    check(&[5000, 50_000, 500_000], 300_000, 4.0, 1);
    // 9 + 13 + 16 + 19 = 57 coordinate bits, the most a u64 bucket word takes.
    check(&[500, 5000, 50_000, 500_000], 100_000, 3.0, 2);
}

#[test]
fn coordinates_too_wide_for_a_position_in_u128() {
    // 40 + 40 + 45 = 125 coordinate bits and 16 position bits: u128 keys without positions.
    check(&[1 << 40, 1 << 40, 1 << 45], 40_000, 6.0, 3);
}

#[test]
fn every_value_width_moves_with_its_key() {
    let coo = synthetic(&[5000, 50_000, 500_000], 100_000, Distribution::PowerLaw { skew: 3.0 }, 4);
    let want = reference_csf(&coo, &[0, 1, 2]); // later duplicates win
    let options = |parallel| Options { duplicates: Duplicates::Last, parallel, ..Options::default() };
    for element_type in [ElementType::U8, ElementType::U16, ElementType::F64, ElementType::U4] {
        let values: Vec<u8> = match element_type {
            ElementType::U8 => coo.values.iter().map(|&v| v as u8).collect(),
            ElementType::U16 => coo.values.iter().flat_map(|&v| (v as u16).to_le_bytes()).collect(),
            ElementType::F64 => coo.values.iter().flat_map(|&v| v.to_le_bytes()).collect(),
            // Two 4-bit codes a byte, low nibble first: the values mod 16.
            _ => coo
                .values
                .chunks(2)
                .map(|c| (c[0] as u8 & 15) | (c.get(1).map_or(0, |&h| h as u8 & 15) << 4))
                .collect(),
        };
        let input = Coo {
            shape: &coo.shape,
            indices: Indices::RowMajor(&coo.indices),
            element_type,
            values: values.into(),
        };
        for parallel in [false, true] {
            let built = build(&input, &options(parallel)).unwrap();
            assert_eq!(levels_of(&built), want.levels, "{element_type:?}");
            let view = built.tensor.view();
            let got: Vec<f64> = (0..want.nnz()).map(|i| view.values().get_raw_f64(i).unwrap()).collect();
            let mut want_values = want.values.clone();
            if element_type == ElementType::U4 {
                want_values.iter_mut().for_each(|v| *v = f64::from(*v as u8 & 15));
            }
            assert_eq!(got, want_values, "{element_type:?} parallel={parallel}");
        }
    }
}

#[test]
fn duplicates_are_reported_with_their_index() {
    let shape = [5000, 50_000, 500_000];
    let mut coo = synthetic(&shape, 100_000, Distribution::Uniform, 5);
    // Entry 70000 repeats entry 123's index.
    let repeat = coo.index(123).to_vec();
    coo.indices[70_000 * 3..70_001 * 3].copy_from_slice(&repeat);
    let input = Coo::new(&coo.shape, Indices::RowMajor(&coo.indices), &coo.values);
    let err = build(&input, &Options::default()).unwrap_err();
    assert_eq!(err, csf_build::BuildError::Duplicate { index: repeat, first: 123, second: 70_000 });
}
