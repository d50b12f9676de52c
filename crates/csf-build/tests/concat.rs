//! `concat` and `Joiner` against building at once: the entries of a tensor,
//! sorted into storage order and cut anywhere (inside shared level-0 and
//! deeper paths, into empty parts, into one part per entry), build parts
//! that join into the bytes `build` writes for all of them. Then each way
//! parts can be refused, and hostile parts, which must never panic.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::convert::Infallible;

use csf_build::{
    build, concat, quantize, ArraySink, BuildError, Built, ConcatError, Coo, Indices, Joiner,
    ModeOrderPolicy, Options, Quantize, StatisticsSection, VecSink,
};
use csf_core::{CsfView, OwnedCsf, OwnedLevel};
use csf_testdata::{synthetic, Distribution, Rng};
use csf_validate::Rule;
use hurray_format::{ElementType, Packing, QuantScheme};
use proptest::prelude::*;

/// A tensor's distinct entries in storage order, with their values as codes
/// of `element_type` (the element's bits, low first).
#[derive(Clone, Debug)]
struct Case {
    shape: Vec<u64>,
    order: Vec<u32>,
    element_type: ElementType,
    /// Logical indices, ascending by storage-order key.
    entries: Vec<Vec<u64>>,
    codes: Vec<u64>,
}

impl Case {
    /// Distinct entries of `indices` (the first of equal indices wins),
    /// sorted by storage-order key.
    fn new(
        shape: &[u64],
        order: &[u32],
        element_type: ElementType,
        indices: &[Vec<u64>],
        codes: &[u64],
    ) -> Self {
        let mut sorted = BTreeMap::new();
        for (index, &code) in indices.iter().zip(codes) {
            let key: Vec<u64> = order.iter().map(|&d| index[d as usize]).collect();
            sorted.entry(key).or_insert((index.clone(), code));
        }
        let (entries, codes) = sorted.into_values().unzip();
        Self { shape: shape.to_vec(), order: order.to_vec(), element_type, entries, codes }
    }

    fn key(&self, entry: usize) -> Vec<u64> {
        self.order.iter().map(|&d| self.entries[entry][d as usize]).collect()
    }

    fn options(&self) -> Options {
        Options {
            mode_order: ModeOrderPolicy::Explicit(self.order.clone()),
            parallel: false,
            ..Options::default()
        }
    }

    /// `build` of the entries `range`.
    fn build(&self, range: std::ops::Range<usize>) -> Built {
        let indices = self.entries[range.clone()].concat();
        let coo = Coo {
            shape: &self.shape,
            indices: Indices::RowMajor(&indices),
            element_type: self.element_type,
            values: Cow::Owned(pack(self.element_type, &self.codes[range])),
        };
        build(&coo, &self.options()).unwrap()
    }

    /// The parts between `cuts` (ascending positions in `0..=len`).
    fn parts(&self, cuts: &[usize]) -> Vec<Built> {
        let mut bounds = vec![0];
        bounds.extend_from_slice(cuts);
        bounds.push(self.entries.len());
        bounds.windows(2).map(|w| self.build(w[0]..w[1])).collect()
    }
}

/// Codes packed as `element_type` prescribes.
fn pack(element_type: ElementType, codes: &[u64]) -> Vec<u8> {
    match element_type.packing() {
        Packing::Bytes(width) => {
            codes.iter().flat_map(|c| c.to_le_bytes()[..width as usize].to_vec()).collect()
        }
        Packing::SubByte { .. } => codes
            .chunks(2)
            .map(|c| (c[0] & 0xf) as u8 | c.get(1).map_or(0, |h| ((h & 0xf) as u8) << 4))
            .collect(),
    }
}

/// A code that is a valid element of `element_type` (`docs/format.md` § 2.1).
fn code(element_type: ElementType, raw: u64) -> u64 {
    match element_type {
        ElementType::Bool => raw & 1,
        ElementType::F6E2M3 | ElementType::F6E3M2 => raw & 0x3f,
        t if t.packing_factor() == 2 => raw & 0xf,
        _ => raw,
    }
}

fn views(parts: &[Built]) -> Vec<CsfView<'_>> {
    parts.iter().map(|p| p.tensor.view()).collect()
}

/// The join of the parts between `cuts` equals the build of all entries, to
/// the byte, and so do the statistics the joiner gathers as it goes.
fn check(case: &Case, cuts: &[usize]) {
    let whole = case.build(0..case.entries.len());
    let parts = case.parts(cuts);
    let views = views(&parts);
    let joined = concat(&views).unwrap();
    assert_eq!(joined.tensor, whole.tensor, "cuts {cuts:?}");
    assert_eq!(
        joined.to_bytes(StatisticsSection::Include).unwrap(),
        whole.to_bytes(StatisticsSection::Include).unwrap(),
        "cuts {cuts:?}"
    );
    assert!(csf_validate::validate_view(joined.tensor.view()).is_ok());

    let view = whole.tensor.view();
    let mut joiner =
        Joiner::new(view.element_type(), view.shape(), view.mode_order(), VecSink::default()).unwrap();
    for part in &views {
        joiner.push(part).unwrap();
    }
    let streamed = joiner.finish().unwrap();
    assert_eq!(streamed.statistics, whole.statistics(), "cuts {cuts:?}");
    let counts: Vec<u64> = view.levels().iter().map(|l| l.crd.len() as u64).collect();
    assert_eq!(streamed.node_counts, counts);

    // Parts as they come from files: decoded, checked only structurally.
    let files: Vec<Vec<u8>> = parts.iter().map(|p| p.to_bytes(StatisticsSection::Omit).unwrap()).collect();
    let read: Vec<CsfView<'_>> = files.iter().map(|f| csf_validate::read_permissive(f).unwrap()).collect();
    assert_eq!(concat(&read).unwrap().tensor, whole.tensor, "cuts {cuts:?}");
}

/// Positions `1..len` where consecutive entries share the longest path of
/// leading storage coordinates: cuts there split shared nodes.
fn deepest_boundaries(case: &Case, count: usize) -> Vec<usize> {
    let mut shared: Vec<(usize, usize)> = (1..case.entries.len())
        .map(|i| {
            let (a, b) = (case.key(i - 1), case.key(i));
            (a.iter().zip(&b).take_while(|(x, y)| x == y).count(), i)
        })
        .collect();
    shared.sort_by(|x, y| y.0.cmp(&x.0).then(x.1.cmp(&y.1)));
    let mut cuts: Vec<usize> = shared.into_iter().take(count).map(|(_, i)| i).collect();
    cuts.sort_unstable();
    cuts
}

const TYPES: &[ElementType] = &[
    ElementType::F64,
    ElementType::F32,
    ElementType::I64,
    ElementType::U16,
    ElementType::BF16,
    ElementType::I8,
    ElementType::Bool,
    ElementType::F6E3M2,
    ElementType::U4,
    ElementType::I4,
    ElementType::NF4,
];

/// A random case: rank 3..=6, small extents (one of them sometimes huge),
/// a random mode order, any of `TYPES`; when `skewed`, the level-0
/// dimension is 0 in nine entries of ten.
fn case() -> impl Strategy<Value = Case> {
    (3usize..=6, any::<bool>(), 0..TYPES.len(), any::<bool>())
        .prop_flat_map(|(rank, skewed, ty, huge)| {
            let max = match rank {
                3 => 8u64,
                4 => 5,
                _ => 3,
            };
            let shape = prop::collection::vec(1..=max, rank);
            let order = Just((0..rank as u32).collect::<Vec<_>>()).prop_shuffle();
            let entries = prop::collection::vec(
                (prop::collection::vec(any::<u64>(), rank), any::<u64>(), 0u8..10),
                0..120,
            );
            (shape, order, entries, Just((skewed, TYPES[ty], huge)))
        })
        .prop_map(|(mut shape, order, raw, (skewed, element_type, huge))| {
            if huge {
                // A coordinate field wider than 32 bits, at the leaf level.
                shape[*order.last().unwrap() as usize] = 1 << 40;
            }
            let top = order[0] as usize;
            let indices: Vec<Vec<u64>> = raw
                .iter()
                .map(|(index, _, coin)| {
                    let mut index: Vec<u64> = index.iter().zip(&shape).map(|(c, e)| c % e).collect();
                    if skewed && *coin < 9 {
                        index[top] = 0;
                    }
                    index
                })
                .collect();
            let codes: Vec<u64> = raw.iter().map(|(_, v, _)| code(element_type, *v)).collect();
            Case::new(&shape, &order, element_type, &indices, &codes)
        })
}

/// How to cut: at random positions (repeats make empty parts), after every
/// entry, at the boundaries inside the deepest shared paths, or not at all.
fn cuts(case: &Case, how: u8, picks: &[prop::sample::Index]) -> Vec<usize> {
    let len = case.entries.len();
    let mut cuts: Vec<usize> = match how {
        0 => picks.iter().map(|p| p.index(len + 1)).collect(),
        1 => (0..=len).collect(),
        2 => deepest_boundaries(case, picks.len()),
        _ => vec![],
    };
    cuts.sort_unstable();
    cuts
}

proptest! {
    #![proptest_config(ProptestConfig { cases: if cfg!(miri) { 4 } else { 256 }, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn parts_join_into_the_whole_build(
        case in case(),
        how in 0u8..4,
        picks in prop::collection::vec(any::<prop::sample::Index>(), 0..10),
    ) {
        check(&case, &cuts(&case, how, &picks));
    }

    /// One word of one part changed to anything, and the parts sometimes in
    /// reverse: the join never panics, and whatever it accepts is a valid
    /// tensor (`concat` also asserts that in debug builds).
    #[test]
    fn hostile_parts_never_panic_and_what_joins_is_valid(
        case in case(),
        picks in prop::collection::vec(any::<prop::sample::Index>(), 0..4),
        target in any::<prop::sample::Index>(),
        array in any::<prop::sample::Index>(),
        at in any::<prop::sample::Index>(),
        word in prop_oneof![0u64..8, any::<u64>()],
        reverse in any::<bool>(),
    ) {
        let parts = case.parts(&cuts(&case, 0, &picks));
        let mut owned: Vec<OwnedCsf> = parts.iter().map(|p| p.tensor.clone()).collect();
        let victim = target.index(owned.len());
        owned[victim] = mutate(&owned[victim], array, at, word);
        if reverse {
            owned.reverse();
        }
        let views: Vec<CsfView<'_>> = owned.iter().map(|t| t.view()).collect();
        if let Ok(joined) = concat(&views) {
            prop_assert!(csf_validate::validate_view(joined.tensor.view()).is_ok());
        }
    }
}

/// `tensor` with one word changed: of `nnz`, of a `pos`/`crd` array, or of
/// the values (a byte).
fn mutate(tensor: &OwnedCsf, array: prop::sample::Index, at: prop::sample::Index, word: u64) -> OwnedCsf {
    let view = tensor.view();
    let mut levels: Vec<(Vec<u64>, Vec<u64>)> =
        view.levels().iter().map(|l| (l.pos.iter().collect(), l.crd.iter().collect())).collect();
    let mut values = view.values().as_bytes().to_vec();
    let mut nnz = view.nnz();
    let which = array.index(2 * levels.len() + 2);
    let set = |v: &mut Vec<u64>| {
        if !v.is_empty() {
            let i = at.index(v.len());
            v[i] = word;
        } else {
            v.push(word);
        }
    };
    match which {
        0 => nnz = word,
        1 if values.is_empty() => values.push(word as u8),
        1 => {
            let i = at.index(values.len());
            values[i] = word as u8;
        }
        w => {
            let (pos, crd) = &mut levels[(w - 2) / 2];
            set(if w % 2 == 0 { pos } else { crd });
        }
    }
    OwnedCsf::builder(view.element_type(), view.shape().to_vec())
        .mode_order(view.mode_order().to_vec())
        .nnz(nnz)
        .levels(owned_levels(levels))
        .values(values)
        .build()
        .unwrap()
}

/// Larger tensors (several chunks of words per level), identity and other
/// mode orders, power-law skew, random cuts, for the value widths that
/// pack differently.
#[test]
fn large_power_law_tensors_join_at_random_cuts() {
    let mut rng = Rng::new(7);
    for (seed, shape) in [(1, vec![40u64, 50, 60]), (2, vec![9, 10, 11, 12]), (3, vec![5, 6, 7, 8, 9])] {
        let coo = synthetic(&shape, 20_000, Distribution::PowerLaw { skew: 3.0 }, seed);
        let rank = shape.len() as u32;
        let indices: Vec<Vec<u64>> = (0..coo.len()).map(|i| coo.index(i).to_vec()).collect();
        for order in [(0..rank).collect::<Vec<_>>(), (0..rank).rev().collect()] {
            for element_type in [ElementType::F64, ElementType::F32, ElementType::U4, ElementType::Bool] {
                let codes: Vec<u64> = (0..coo.len()).map(|_| code(element_type, rng.next_u64())).collect();
                let case = Case::new(&shape, &order, element_type, &indices, &codes);
                let len = case.entries.len();
                let mut cuts: Vec<usize> = (0..20).map(|_| rng.below(len as u64 + 1) as usize).collect();
                cuts.sort_unstable();
                check(&case, &cuts);
                check(&case, &deepest_boundaries(&case, 20));
            }
        }
    }
}

/// The cases the property test must reach, by construction: a cut inside a
/// shared level-0 node, one inside a shared deeper path, an odd count of
/// 4-bit values before a cut.
#[test]
fn cuts_inside_shared_paths() {
    let shape = [3, 4, 5, 6];
    let indices: Vec<Vec<u64>> = vec![
        vec![0, 1, 2, 3],
        vec![0, 1, 2, 5],
        vec![0, 1, 4, 0],
        vec![0, 3, 0, 0],
        vec![1, 0, 0, 0],
        vec![2, 2, 2, 2],
    ];
    let codes: Vec<u64> = (1..=6).collect();
    for order in [vec![0, 1, 2, 3], vec![2, 0, 3, 1]] {
        for element_type in [ElementType::U4, ElementType::F32] {
            let case = Case::new(&shape, &order, element_type, &indices, &codes);
            for cuts in [vec![1], vec![2], vec![3], vec![1, 2, 3, 4, 5], vec![0, 0, 6, 6], vec![3, 3]] {
                check(&case, &cuts);
            }
        }
    }
}

// ------------------------------------------------------------ errors

/// The spec's example: four entries in storage order, f32 values.
fn example() -> Case {
    let indices = vec![vec![0, 0, 1], vec![0, 2, 3], vec![1, 1, 0], vec![1, 1, 2]];
    let codes: Vec<u64> = [1.0f32, 2.0, 3.0, 4.0].iter().map(|v| u64::from(v.to_bits())).collect();
    Case::new(&[2, 3, 4], &[0, 1, 2], ElementType::F32, &indices, &codes)
}

#[test]
fn no_parts_is_an_error_and_a_joiner_of_none_is_empty() {
    assert_eq!(concat(&[]).unwrap_err(), ConcatError::NoParts);
    let case = example();
    let empty = case.build(0..0);
    let joiner = Joiner::new(ElementType::F32, &case.shape, &case.order, VecSink::default()).unwrap();
    let joined = joiner.finish().unwrap();
    let statistics = joined.statistics;
    let tensor = joined.into_tensor().unwrap();
    assert_eq!(tensor, empty.tensor);
    assert_eq!(statistics, empty.statistics());
    // Empty parts only: the empty tensor too.
    let parts = [case.build(0..0), case.build(0..0)];
    assert_eq!(concat(&views(&parts)).unwrap().tensor, empty.tensor);
}

#[test]
fn parts_out_of_order_are_refused() {
    let case = example();
    let parts = [case.build(2..4), case.build(0..2)];
    let err = concat(&views(&parts)).unwrap_err();
    assert_eq!(
        err,
        ConcatError::OutOfOrder { part: 1, previous: 0, last: vec![1, 1, 2], first: vec![0, 0, 1] }
    );
}

#[test]
fn overlapping_parts_are_refused() {
    // Part 0 holds entries 0 and 2, part 1 entry 1, which falls between them.
    let case = example();
    let odd = Case::new(
        &case.shape,
        &case.order,
        case.element_type,
        &[case.entries[0].clone(), case.entries[2].clone()],
        &[1, 3],
    );
    let parts = [odd.build(0..2), case.build(1..2)];
    let err = concat(&views(&parts)).unwrap_err();
    assert_eq!(
        err,
        ConcatError::OutOfOrder { part: 1, previous: 0, last: vec![1, 1, 0], first: vec![0, 2, 3] }
    );
}

#[test]
fn a_shared_boundary_entry_is_a_duplicate() {
    let case = example();
    let parts = [case.build(0..3), case.build(2..4)];
    let err = concat(&views(&parts)).unwrap_err();
    assert_eq!(err, ConcatError::Duplicate { part: 1, previous: 0, index: vec![1, 1, 0] });
}

#[test]
fn the_previous_part_named_is_the_last_non_empty_one() {
    let case = example();
    let parts = [case.build(1..3), case.build(0..0), case.build(0..1)];
    let err = concat(&views(&parts)).unwrap_err();
    assert_eq!(
        err,
        ConcatError::OutOfOrder { part: 2, previous: 0, last: vec![1, 1, 0], first: vec![0, 0, 1] }
    );
}

#[test]
fn a_part_of_another_shape_is_refused() {
    let case = example();
    let other = Case { shape: vec![2, 3, 5], ..case.clone() };
    let parts = [case.build(0..2), other.build(2..4)];
    let err = concat(&views(&parts)).unwrap_err();
    assert_eq!(err, ConcatError::Shape { part: 1, found: vec![2, 3, 5], expected: vec![2, 3, 4] });
}

#[test]
fn a_part_of_another_mode_order_is_refused() {
    let case = example();
    let other = Case { order: vec![0, 2, 1], ..case.clone() };
    let parts = [case.build(0..2), other.build(2..4)];
    let err = concat(&views(&parts)).unwrap_err();
    assert_eq!(err, ConcatError::ModeOrder { part: 1, found: vec![0, 2, 1], expected: vec![0, 1, 2] });
}

#[test]
fn a_part_of_another_element_type_is_refused() {
    let case = example();
    let other = Case { element_type: ElementType::U32, ..case.clone() };
    let parts = [case.build(0..2), other.build(2..4)];
    let err = concat(&views(&parts)).unwrap_err();
    assert_eq!(
        err,
        ConcatError::ElementType { part: 1, found: ElementType::U32, expected: ElementType::F32 }
    );
}

#[test]
fn a_quantized_part_is_refused() {
    let case = example();
    let quantized = quantize(
        case.build(2..4).tensor,
        Quantize::PerChannel { axis: 0, dtype: ElementType::I8, zero_point: false },
    )
    .unwrap();
    let first = case.build(0..2);
    let err = concat(&[first.tensor.view(), quantized.view()]).unwrap_err();
    assert_eq!(err, ConcatError::Quantized { part: 1, scheme: QuantScheme::PerChannel });
}

#[test]
fn a_bad_header_is_refused() {
    let new = |shape: &[u64], order: &[u32]| {
        Joiner::new(ElementType::F32, shape, order, VecSink::default()).map(|_| ()).unwrap_err()
    };
    assert_eq!(new(&[2, 3], &[0, 1]), ConcatError::Header(BuildError::RankTooSmall { rank: 2 }));
    assert_eq!(
        new(&[2, 3, 4], &[0, 1, 1]),
        ConcatError::Header(BuildError::BadModeOrder { order: vec![0, 1, 1], rank: 3 })
    );
    assert_eq!(
        new(&[2, 3, 4], &[0, 1]),
        ConcatError::Header(BuildError::BadModeOrder { order: vec![0, 1], rank: 3 })
    );
}

/// The example's arrays, `f` applied, as a tensor.
fn edited(f: impl FnOnce(&mut Vec<(Vec<u64>, Vec<u64>)>, &mut Vec<u8>, &mut u64)) -> OwnedCsf {
    let whole = example().build(0..4).tensor;
    let view = whole.view();
    let mut levels: Vec<(Vec<u64>, Vec<u64>)> =
        view.levels().iter().map(|l| (l.pos.iter().collect(), l.crd.iter().collect())).collect();
    let mut values = view.values().as_bytes().to_vec();
    let mut nnz = view.nnz();
    f(&mut levels, &mut values, &mut nnz);
    OwnedCsf::builder(ElementType::F32, vec![2, 3, 4])
        .nnz(nnz)
        .levels(owned_levels(levels))
        .values(values)
        .build()
        .unwrap()
}

/// `(pos_L, crd_L)` pairs, as the tests edit them, as a tensor's levels.
fn owned_levels(levels: Vec<(Vec<u64>, Vec<u64>)>) -> Vec<OwnedLevel> {
    levels.into_iter().map(|(pos, crd)| OwnedLevel { pos, crd }).collect()
}

/// A view's levels as owned words.
fn levels_of(view: &csf_core::CsfView<'_>) -> Vec<OwnedLevel> {
    view.levels()
        .iter()
        .map(|l| OwnedLevel { pos: l.pos.iter().collect(), crd: l.crd.iter().collect() })
        .collect()
}

/// The violation a lone edited part is refused for.
fn refusal(tensor: &OwnedCsf) -> ConcatError {
    concat(&[tensor.view()]).unwrap_err()
}

fn invalid(
    rule: Rule,
    level: Option<usize>,
    buffer: usize,
    index: Option<u64>,
    found: u64,
    expected: u64,
) -> ConcatError {
    ConcatError::Invalid {
        part: 0,
        violation: csf_validate::Violation { rule, level, buffer: Some(buffer), index, found, expected },
    }
}

#[test]
fn invalid_parts_are_refused_naming_the_rule_and_the_place() {
    // The example: pos_1 = [0, 2, 3], crd_1 = [0, 2, 1], pos_2 = [0, 1, 2, 4], crd_2 = [1, 3, 0, 2].
    let cases = [
        (edited(|l, _, _| l[2].1[1] = 4), invalid(Rule::CoordinateBounds, Some(2), 6, Some(1), 4, 4)),
        (edited(|l, _, _| l[2].1[3] = 0), invalid(Rule::SiblingOrder, Some(2), 6, Some(3), 0, 0)),
        (edited(|l, _, _| l[1].0 = vec![0, 3, 2, 3]), invalid(Rule::PosSize, Some(1), 3, None, 4, 3)),
        (edited(|l, _, _| l[2].0[2] = 0), invalid(Rule::PosDecreasing, Some(2), 5, Some(2), 0, 1)),
        (edited(|l, _, _| l[2].0[0] = 1), invalid(Rule::PosStart, Some(2), 5, Some(0), 1, 0)),
        (edited(|l, _, _| l[2].0[3] = 3), invalid(Rule::TerminalCount, Some(2), 5, Some(3), 3, 4)),
        (edited(|_, v, _| v.pop().map(drop).unwrap()), invalid(Rule::ValuesSize, None, 0, None, 15, 16)),
        (
            edited(|l, v, n| {
                *n = 3;
                v.truncate(12);
                l[2].0[3] = 4;
            }),
            invalid(Rule::LeafCount, Some(2), 6, None, 4, 3),
        ),
        (
            edited(|l, v, n| {
                *n = 0;
                v.clear();
                *l = vec![(vec![0, 1], vec![0]), (vec![0, 0], vec![]), (vec![0], vec![])];
            }),
            invalid(Rule::EmptyForm, Some(0), 2, None, 1, 0),
        ),
    ];
    for (tensor, want) in cases {
        assert_eq!(refusal(&tensor), want);
    }
}

#[test]
fn invalid_value_contents_are_refused() {
    let case = Case { element_type: ElementType::Bool, ..example() };
    let case = Case { codes: vec![1, 0, 1, 1], ..case };
    let whole = case.build(0..4).tensor;
    let view = whole.view();
    let parts = |element_type, values| {
        OwnedCsf::builder(element_type, case.shape.clone())
            .mode_order(case.order.clone())
            .levels(levels_of(&view))
            .values(values)
            .build()
            .unwrap()
    };
    let bad = parts(ElementType::Bool, vec![1, 0, 2, 1]);
    assert_eq!(refusal(&bad), invalid(Rule::BoolValue, None, 0, Some(2), 2, 1));
    let bad = parts(ElementType::F6E2M3, vec![1, 0x3f, 0x41, 1]);
    assert_eq!(refusal(&bad), invalid(Rule::ValuesPadding, None, 0, Some(2), 1, 0));
}

#[test]
fn an_interior_node_without_children_is_refused() {
    // A fourth level-1 node, (1, 3), with no children: pos_2 gains an entry.
    let tensor = edited(|l, _, _| {
        l[1] = (vec![0, 2, 4], vec![0, 2, 1, 2]);
        l[2].0 = vec![0, 1, 2, 4, 4];
    });
    assert_eq!(refusal(&tensor), ConcatError::ChildlessNode { part: 0, level: 1, node: 3 });
}

#[test]
fn refusals_before_writing_leave_the_joiner_usable() {
    let case = example();
    let parts = [case.build(0..2), case.build(0..1), case.build(2..4)];
    let mut joiner = Joiner::new(ElementType::F32, &case.shape, &case.order, VecSink::default()).unwrap();
    joiner.push(&parts[0].tensor.view()).unwrap();
    assert!(matches!(joiner.push(&parts[1].tensor.view()), Err(ConcatError::OutOfOrder { part: 1, .. })));
    joiner.push(&parts[2].tensor.view()).unwrap();
    let joined = joiner.finish().unwrap();
    assert_eq!(joined.sink.levels, levels_of(&case.build(0..4).tensor.view()));
}

#[test]
fn refusals_while_writing_poison_the_joiner() {
    let case = example();
    let bad = edited(|l, _, _| l[2].1[3] = 0);
    let good = case.build(0..4);
    let mut joiner = Joiner::new(ElementType::F32, &case.shape, &case.order, VecSink::default()).unwrap();
    assert!(matches!(joiner.push(&bad.view()), Err(ConcatError::Invalid { part: 0, .. })));
    assert_eq!(joiner.push(&good.tensor.view()), Err(ConcatError::Poisoned { part: 0 }));
    assert_eq!(joiner.finish().map(|_| ()), Err(ConcatError::Poisoned { part: 0 }));
}

/// A sink that takes `budget` words, then fails.
struct Full {
    budget: usize,
}

impl ArraySink for Full {
    type Error = &'static str;
    fn pos(&mut self, _: usize, words: &[u64]) -> Result<(), &'static str> {
        self.budget = self.budget.checked_sub(words.len()).ok_or("full")?;
        Ok(())
    }
    fn crd(&mut self, level: usize, words: &[u64]) -> Result<(), &'static str> {
        self.pos(level, words)
    }
    fn values(&mut self, _: &[u8]) -> Result<(), &'static str> {
        Ok(())
    }
}

#[test]
fn a_failing_sink_stops_the_join() {
    let case = example();
    let part = case.build(0..4);
    let mut joiner = Joiner::new(ElementType::F32, &case.shape, &case.order, Full { budget: 5 }).unwrap();
    assert_eq!(joiner.push(&part.tensor.view()), Err(ConcatError::Sink("full")));
    assert_eq!(joiner.push(&part.tensor.view()), Err(ConcatError::Poisoned { part: 0 }));
    // The infallible sink's error type is `Infallible`, the default.
    let _: fn(&[CsfView<'_>]) -> Result<Built, ConcatError<Infallible>> = concat;
}
