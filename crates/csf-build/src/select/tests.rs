use super::walk::{build_options, walk, Sink};
use super::*;
use crate::{build, build_owned, Coo, Duplicates, Indices, ModeOrderPolicy, Options, OwnedCoo};
use csf_testdata::{synthetic, Distribution};

#[test]
fn a_monotone_walk_is_in_storage_order_and_its_arrays_are_adopted() {
    let coo = synthetic(&[9, 11, 7, 13], 3_000, Distribution::Uniform, 5);
    let options = Options {
        mode_order: ModeOrderPolicy::Explicit(vec![2, 0, 3, 1]),
        duplicates: Duplicates::Last,
        ..Options::default()
    };
    let input = Coo::new(&coo.shape, Indices::RowMajor(&coo.indices), &coo.values);
    let built = build(&input, &options).unwrap();
    let view = built.tensor.view();
    let take: &[u64] = &[0, 2, 2, 6];
    let cases: [[Axis<'_>; 4]; 3] = [
        [Axis::All, Axis::Step { start: 1, len: 5, step: 2 }, Axis::Take(take), Axis::All],
        [Axis::Index(3), Axis::All, Axis::All, Axis::Step { start: 2, len: 9, step: 1 }],
        [Axis::Take(take), Axis::Take(take), Axis::All, Axis::Index(4)],
    ];
    for axes in cases {
        let plan = Plan::new(&view, &axes).unwrap();
        assert!(plan.monotone());
        let (sink, _, element_type) = walk(&view, &plan, false).unwrap();
        let Sink { columns, values, len, .. } = sink;
        assert!(len > 20, "{axes:?}: {len} entries");
        let stored =
            |i: usize| -> Vec<u64> { plan.out_order.iter().map(|&d| columns[d as usize][i]).collect() };
        assert!((1..len).all(|i| stored(i - 1) < stored(i)), "{axes:?}: not in storage order");
        let leaf_column = columns[*plan.out_order.last().unwrap() as usize].as_ptr().cast::<u8>();
        let values_at = values.as_ptr();
        let coo = OwnedCoo { shape: plan.out_shape.clone(), columns, element_type, values };
        let built = build_owned(coo, &build_options(&plan, true)).unwrap();
        let out = built.tensor.view();
        let leaf = out.levels().last().unwrap();
        assert_eq!(leaf.crd.as_bytes().as_ptr(), leaf_column, "{axes:?}: the leaf column was copied");
        assert_eq!(out.values().as_bytes().as_ptr(), values_at, "{axes:?}: the values were copied");
    }
    let reversed = [Axis::All, Axis::Step { start: 10, len: 5, step: -2 }, Axis::All, Axis::All];
    assert!(!Plan::new(&view, &reversed).unwrap().monotone());
    assert!(!Plan::new(&view, &[Axis::All, Axis::All, Axis::Take(&[3, 1]), Axis::All]).unwrap().monotone());
}

#[test]
fn an_output_past_the_address_space_is_an_error() {
    let mut sink = Sink { columns: vec![Vec::new(); 2], values: Vec::new(), len: 0, room: 0, width: 8 };
    assert!(sink.make_room().is_ok());
    sink.len = usize::MAX / 4;
    sink.room = sink.len;
    assert_eq!(sink.make_room(), Err(SelectError::TooLarge { entries: (usize::MAX / 4) as u64 }));
}

#[test]
fn a_take_table_lists_each_coordinate_s_positions_in_order() {
    let table = Table::new(&[5, 1, 5, 3, 1, 5]);
    assert_eq!(table.coords, [1, 3, 5]);
    assert_eq!(
        (table.positions(0), table.positions(1), table.positions(2)),
        (&[1, 4][..], &[3][..], &[0, 2, 5][..])
    );
    assert_eq!(table.positions(3), &[] as &[u64]);
    let empty = Table::new(&[]);
    assert!(empty.coords.is_empty() && empty.positions(0).is_empty());
}
