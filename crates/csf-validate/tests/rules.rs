//! One focused test per rule, asserting exactly where the violation is
//! reported (rule, level, buffer, element index, found, expected), on views
//! built from parts (`validate_view`) and on containers (`validate`); then the
//! collect-all and fail-fast modes, warnings, permissive mode, and (feature
//! `parallel`) that the parallel level checks report exactly what the
//! sequential ones do.

use csf_testdata::tree::{encode, f32_bytes, per_tensor, Tree};
use csf_validate::{
    read, read_permissive, report, validate, validate_permissive, validate_view, validate_with, Error, Mode,
    Rule, Sink, Stop, Violation, Warning,
};
use hurray_format::{
    Container, DeviceTag, ElementType, FixedVec, QuantScheme, Quantization, ShardDescriptor, Statistics,
};

/// What a violation must say: rule, level, buffer, element index, found, expected.
type Where = (Rule, Option<usize>, Option<usize>, Option<u64>, u64, u64);

fn at(v: &Violation) -> Where {
    (v.rule, v.level, v.buffer, v.index, v.found, v.expected)
}

/// The first violation strict validation of the tree's view reports.
fn view_error(tree: &Tree) -> Violation {
    let bytes = tree.level_bytes();
    validate_view(tree.view_of(&bytes)).expect_err("the tree is broken")
}

/// The first violation strict validation of the tree as a container reports,
/// checked to be the same as the view's when the view can be built.
fn file_error(bytes: &[u8]) -> Violation {
    let container = Container::decode(bytes).expect("decodes");
    let v = validate(&container).expect_err("the file is broken");
    assert_eq!(report(&container, Mode::Strict, 10).errors.first(), Some(&v), "report and validate agree");
    match read(bytes) {
        Err(Error::Invalid { violation, offset }) => {
            assert_eq!(violation, v);
            assert_eq!(offset, v.offset(&container), "read gives the violation's byte");
        }
        other => panic!("read gave {other:?}"),
    }
    v
}

/// The same first violation from the view and from the container.
fn both(tree: &Tree) -> Where {
    let from_view = view_error(tree);
    let from_file = file_error(&tree.encode());
    assert_eq!(from_view, from_file, "validate_view and validate disagree");
    at(&from_view)
}

#[test]
fn the_spec_example_is_valid_both_ways() {
    let tree = Tree::spec_example();
    let bytes = tree.level_bytes();
    let valid = validate_view(tree.view_of(&bytes)).expect("valid");
    assert_eq!(valid.get_f64(&[1, 1, 2]).unwrap(), 4.0);
    let file = tree.encode();
    let container = Container::decode(&file).unwrap();
    assert!(validate(&container).is_ok());
    let r = report(&container, Mode::Strict, 100);
    assert!(r.is_valid() && r.warnings.is_empty() && !r.truncated);
}

// ----------------------------------------------------------------------------
// Storage invariants, on views and files.

#[test]
fn pos_start_at_each_level() {
    for (level, buffer) in [(0, 1), (1, 3), (2, 5)] {
        let mut t = Tree::spec_example();
        t.pos(level)[0] = 1;
        assert_eq!(both(&t), (Rule::PosStart, Some(level), Some(buffer), Some(0), 1, 0));
    }
}

#[test]
fn pos_decreasing_reports_the_smaller_entry_and_its_predecessor() {
    let mut t = Tree::spec_example();
    *t.pos(2) = vec![0, 2, 1, 4];
    assert_eq!(both(&t), (Rule::PosDecreasing, Some(2), Some(5), Some(2), 1, 2));
    // Two decreases: both reported, in order.
    let mut t = Tree::spec_example();
    *t.pos(2) = vec![0, 2, 1, 0, 4];
    let file = t.encode();
    // pos_2 has 5 entries for 3 parents: the size rule fires first, then the invariants.
    let r = report(&Container::decode(&file).unwrap(), Mode::Strict, 10);
    let rules: Vec<(Rule, Option<u64>)> = r.errors.iter().map(|v| (v.rule, v.index)).collect();
    assert_eq!(
        rules,
        [(Rule::PosSize, None), (Rule::PosDecreasing, Some(2)), (Rule::PosDecreasing, Some(3))]
    );
}

#[test]
fn terminal_count_at_each_level() {
    let mut t = Tree::spec_example();
    *t.pos(0) = vec![0, 1];
    assert_eq!(both(&t), (Rule::TerminalCount, Some(0), Some(1), Some(1), 1, 2));
    let mut t = Tree::spec_example();
    *t.pos(1) = vec![0, 2, u64::MAX];
    assert_eq!(both(&t), (Rule::TerminalCount, Some(1), Some(3), Some(2), u64::MAX, 3));
    let mut t = Tree::spec_example();
    *t.pos(2) = vec![0, 1, 2, 3];
    assert_eq!(both(&t), (Rule::TerminalCount, Some(2), Some(5), Some(3), 3, 4));
}

#[test]
fn leaf_count_compares_the_leaf_level_with_nnz() {
    let mut t = Tree::spec_example();
    t.nnz = 5;
    t.values = f32_bytes(&[1.0, 2.0, 3.0, 4.0, 5.0]);
    assert_eq!(both(&t), (Rule::LeafCount, Some(2), Some(6), None, 4, 5));
}

/// A tree of shape [2, 3, 4] with nnz = 0 and the given levels.
fn empty_tree(levels: Vec<(Vec<u64>, Vec<u64>)>) -> Tree {
    Tree::spec_example().with(|t| {
        t.nnz = 0;
        t.values = vec![];
        t.levels = levels;
    })
}

#[test]
fn empty_form_rejects_interior_nodes_when_nnz_is_0() {
    // The spec's empty form (csf-layout § Storage Invariants) is valid.
    let form = empty_tree(vec![(vec![0, 0], vec![]), (vec![0], vec![]), (vec![0], vec![])]);
    assert!(validate_view(form.view_of(&form.level_bytes())).is_ok());

    // Invariants 1-5 hold, but level 0 stores a node without children:
    // pos_0 = [0, 1] where the empty form has [0, 0].
    let childless_root = empty_tree(vec![(vec![0, 1], vec![0]), (vec![0, 0], vec![]), (vec![0], vec![])]);
    assert_eq!(both(&childless_root), (Rule::EmptyForm, Some(0), Some(2), None, 1, 0));

    // A path that stops one level above the leaves: levels 0 and 1 each
    // report, the leaf level is empty (and leaf-count's anyway).
    let path = empty_tree(vec![(vec![0, 1], vec![0]), (vec![0, 1], vec![2]), (vec![0, 0], vec![])]);
    assert_eq!(both(&path), (Rule::EmptyForm, Some(0), Some(2), None, 1, 0));
    let file = path.encode();
    let container = Container::decode(&file).unwrap();
    let r = report(&container, Mode::Strict, 100);
    assert_eq!(
        r.errors.iter().map(at).collect::<Vec<_>>(),
        [(Rule::EmptyForm, Some(0), Some(2), None, 1, 0), (Rule::EmptyForm, Some(1), Some(4), None, 1, 0)]
    );
    assert!(r.warnings.is_empty(), "no childless-node warning on top of the error: {:?}", r.warnings);
    assert!(!Rule::EmptyForm.is_structural());

    // Permissive mode relaxes it (docs/format.md § 7.4), and the accessors
    // give the empty tensor's answers.
    let view = validate_permissive(&container).expect("permissive relaxes the empty form");
    let mut n = 0;
    view.for_each(|_, _| n += 1);
    assert_eq!(n, 0);
    assert_eq!(view.find(&[0, 2, 0]), Ok(None));

    // nnz = 0 with a non-empty leaf level stays invariant 3's.
    let leafy = empty_tree(vec![(vec![0, 1], vec![0]), (vec![0, 1], vec![2]), (vec![0, 1], vec![3])]);
    assert_eq!(both(&leafy), (Rule::LeafCount, Some(2), Some(6), None, 1, 0));
}

#[test]
fn sibling_order_reports_the_offending_child() {
    let mut t = Tree::spec_example();
    *t.crd(0) = vec![1, 0];
    assert_eq!(both(&t), (Rule::SiblingOrder, Some(0), Some(2), Some(1), 0, 1));
    let mut t = Tree::spec_example();
    *t.crd(2) = vec![1, 3, 2, 0];
    assert_eq!(both(&t), (Rule::SiblingOrder, Some(2), Some(6), Some(3), 0, 2));
    // Duplicates are not strictly increasing.
    let mut t = Tree::spec_example();
    *t.crd(2) = vec![1, 3, 2, 2];
    assert_eq!(both(&t), (Rule::SiblingOrder, Some(2), Some(6), Some(3), 2, 2));
    // Order across two parents' slices is not a rule: [1 | 3 | 0, 2] has 3 > 0 at a slice boundary.
    assert!(validate_view(Tree::spec_example().view_of(&Tree::spec_example().level_bytes())).is_ok());
}

#[test]
fn coordinate_bounds_use_the_extent_of_the_stored_dimension() {
    let mut t = Tree::spec_example();
    *t.crd(1) = vec![0, 3, 1];
    assert_eq!(both(&t), (Rule::CoordinateBounds, Some(1), Some(4), Some(1), 3, 3));
    let mut t = Tree::spec_example();
    *t.crd(2) = vec![1, 3, 0, u64::MAX];
    assert_eq!(both(&t), (Rule::CoordinateBounds, Some(2), Some(6), Some(3), u64::MAX, 4));

    // Mode order [2, 1, 0] on shape [2, 3, 4]: level 0 is bounded by 4, level 2 by 2.
    let coo = csf_testdata::TestTensor {
        shape: vec![2, 3, 4],
        indices: vec![0, 0, 1, 0, 2, 3, 1, 1, 0, 1, 1, 2],
        values: vec![1.0, 2.0, 3.0, 4.0],
    };
    let t = Tree::from_arrays(&csf_testdata::reference_csf(&coo, &[2, 1, 0]));
    assert_eq!(t.levels[0].1, [0, 1, 2, 3], "coordinates of dimension 2 up to 3 are fine at level 0");
    assert!(validate_view(t.view_of(&t.level_bytes())).is_ok());
    let mut bad = t.clone();
    let last = bad.crd(2).len() - 1;
    bad.crd(2)[last] = 2; // the last leaf's fiber ends with 1; 2 < shape[2] = 4 but not < shape[0] = 2
    assert_eq!(both(&bad), (Rule::CoordinateBounds, Some(2), Some(6), Some(last as u64), 2, 2));
}

#[test]
fn a_broken_mode_order_suspends_the_bounds_check() {
    // With mode_order [0, 0, 2] the level bounds are unknown: only the
    // permutation is reported, not a cascade of bound violations.
    let mut t = Tree::spec_example();
    t.mode_order = vec![0, 0, 2];
    *t.crd(1) = vec![0, 2, 1];
    let file = t.encode();
    let r = report(&Container::decode(&file).unwrap(), Mode::Strict, 100);
    assert_eq!(
        r.errors.iter().map(at).collect::<Vec<_>>(),
        [(Rule::ModeOrderNotPermutation, None, None, Some(1), 0, 3)]
    );
}

#[test]
fn mode_order_not_permutation_names_each_bad_position() {
    let mut t = Tree::spec_example();
    t.mode_order = vec![0, 0, 2];
    assert_eq!(both(&t), (Rule::ModeOrderNotPermutation, None, None, Some(1), 0, 3));
    t.mode_order = vec![0, 1, 3];
    assert_eq!(both(&t), (Rule::ModeOrderNotPermutation, None, None, Some(2), 3, 3));
    t.mode_order = vec![2, 2, 2];
    let r = report(&Container::decode(&t.encode()).unwrap(), Mode::Strict, 100);
    let positions: Vec<_> = r.errors.iter().map(|v| (v.rule, v.index)).collect();
    assert_eq!(
        positions,
        [(Rule::ModeOrderNotPermutation, Some(1)), (Rule::ModeOrderNotPermutation, Some(2))]
    );
}

#[test]
fn every_non_identity_mode_order_is_neither_error_nor_warning() {
    let coo = csf_testdata::synthetic(&[3, 4, 5], 30, csf_testdata::Distribution::Uniform, 11);
    for order in [[0, 1, 2], [0, 2, 1], [1, 0, 2], [1, 2, 0], [2, 0, 1], [2, 1, 0]] {
        let t = Tree::from_arrays(&csf_testdata::reference_csf(&coo, &order));
        assert!(validate_view(t.view_of(&t.level_bytes())).is_ok(), "{order:?}");
        let file = t.encode();
        let r = report(&Container::decode(&file).unwrap(), Mode::Strict, 100);
        assert!(r.errors.is_empty() && r.warnings.is_empty(), "{order:?}: {r:?}");
    }
    let coo = csf_testdata::synthetic(&[2, 3, 2, 3, 2], 20, csf_testdata::Distribution::Uniform, 12);
    let t = Tree::from_arrays(&csf_testdata::reference_csf(&coo, &[4, 2, 0, 3, 1]));
    let r = report(&Container::decode(&t.encode()).unwrap(), Mode::Strict, 100);
    assert!(r.errors.is_empty() && r.warnings.is_empty());
}

// ----------------------------------------------------------------------------
// Buffer sizes and values.

#[test]
fn pos_size_names_the_level_and_the_entry_counts() {
    let mut t = Tree::spec_example();
    t.pos(1).push(3);
    assert_eq!(both(&t), (Rule::PosSize, Some(1), Some(3), None, 4, 3));
    let mut t = Tree::spec_example();
    *t.pos(0) = vec![0, 2, 2];
    assert_eq!(both(&t), (Rule::PosSize, Some(0), Some(1), None, 3, 2));
    // The empty tensor: pos_L = [0] for L >= 1.
    let mut e = Tree::spec_example();
    e.nnz = 0;
    e.values.clear();
    e.levels = vec![(vec![0, 0], vec![]), (vec![0], vec![]), (vec![0], vec![])];
    assert!(validate_view(e.view_of(&e.level_bytes())).is_ok());
    let mut bad = e.clone();
    *bad.pos(2) = vec![0, 0];
    assert_eq!(both(&bad), (Rule::PosSize, Some(2), Some(5), None, 2, 1));
    let mut bad = e.clone();
    *bad.pos(1) = vec![];
    assert_eq!(both(&bad), (Rule::PosSize, Some(1), Some(3), None, 0, 1));
}

#[test]
fn values_size_for_whole_byte_and_sub_byte_types() {
    let mut t = Tree::spec_example();
    t.values.pop();
    assert_eq!(both(&t), (Rule::ValuesSize, None, Some(0), None, 15, 16));
    let mut t = Tree::spec_example();
    t.element_type = ElementType::F64;
    assert_eq!(both(&t), (Rule::ValuesSize, None, Some(0), None, 16, 32));
    // ceil(nnz / 2) for the 4-bit types.
    let mut t = Tree::spec_example();
    t.element_type = ElementType::NF4;
    t.values = vec![0x21, 0x43];
    assert!(validate_view(t.view_of(&t.level_bytes())).is_ok());
    t.values.push(0);
    assert_eq!(both(&t), (Rule::ValuesSize, None, Some(0), None, 3, 2));
    t.nnz = 3;
    t.levels[2] = (vec![0, 1, 2, 3], vec![1, 3, 0]);
    t.values = vec![0x21];
    assert_eq!(both(&t), (Rule::ValuesSize, None, Some(0), None, 1, 2));
}

#[test]
fn values_padding_and_bool_values() {
    let mut t = Tree::spec_example();
    t.element_type = ElementType::I4;
    t.nnz = 3;
    t.levels[2] = (vec![0, 1, 2, 3], vec![1, 3, 0]);
    t.values = vec![0x21, 0x03];
    assert!(validate_view(t.view_of(&t.level_bytes())).is_ok());
    t.values = vec![0x21, 0xf3];
    assert_eq!(both(&t), (Rule::ValuesPadding, None, Some(0), Some(1), 0xf, 0));

    // FP6: the top two bits of every byte are padding.
    let mut t = Tree::spec_example();
    t.element_type = ElementType::F6E2M3;
    t.values = vec![0x08, 0x30, 0x14, 0x18];
    assert!(validate_view(t.view_of(&t.level_bytes())).is_ok());
    t.values[2] |= 0x80;
    assert_eq!(both(&t), (Rule::ValuesPadding, None, Some(0), Some(2), 0b10, 0));

    let mut t = Tree::spec_example();
    t.element_type = ElementType::Bool;
    t.values = vec![1, 2, 0, 1];
    assert_eq!(both(&t), (Rule::BoolValue, None, Some(0), Some(1), 2, 1));
    t.values = vec![1, 1, 0, 0xff];
    assert_eq!(both(&t), (Rule::BoolValue, None, Some(0), Some(3), 0xff, 1));
}

/// A violation about one element of a buffer gives that element's byte in
/// the file: the buffer's start (`data_start` plus the table's offset) plus
/// the element's size times its index. `read`'s error opens with it.
#[test]
fn violations_give_the_byte_of_their_element_in_the_file() {
    // (the file, the buffer and the byte inside it that the violation names)
    let mut cases: Vec<(Vec<u8>, usize, u64)> = Vec::new();
    let mut t = Tree::spec_example();
    *t.crd(2) = vec![1, 3, 2, 0];
    cases.push((t.encode(), 6, 3 * 8)); // sibling-order, crd_2 element 3
    let mut t = Tree::spec_example();
    *t.pos(2) = vec![0, 2, 1, 4];
    cases.push((t.encode(), 5, 2 * 8)); // pos-decreasing, pos_2 element 2
    let mut t = Tree::spec_example();
    t.crd(0)[1] = 9;
    cases.push((t.encode(), 2, 8)); // coordinate-bounds, crd_0 element 1
    let mut t = Tree::spec_example();
    t.element_type = ElementType::Bool;
    t.values = vec![1, 1, 0, 0xff];
    cases.push((t.encode(), 0, 3)); // bool-value, byte 3
    cases.push((i4_per_channel(vec![0x10, 0xf2]), 8, 1)); // values-padding, zero points byte 1
    for (bytes, buffer, within) in cases {
        let container = Container::decode(&bytes).unwrap();
        let v = file_error(&bytes);
        assert_eq!(v.buffer, Some(buffer));
        let start = container.data_start() as u64 + container.descriptor().buffers[buffer].offset;
        assert_eq!(start, container.buffer_range(buffer).unwrap().start as u64);
        assert_eq!(v.offset(&container), Some(start + within), "{v}");
        let e = read(&bytes).unwrap_err();
        assert!(e.to_string().starts_with(&format!("byte {}: {v}", start + within)), "{e}");
        assert_eq!(std::error::Error::source(&e).map(|s| s.to_string()), Some(v.to_string()));
    }
    // Rules about a descriptor field or a whole buffer name no byte.
    let mut t = Tree::spec_example();
    t.values.pop();
    let bytes = t.encode();
    let v = file_error(&bytes);
    assert_eq!(v.rule, Rule::ValuesSize);
    assert_eq!(v.offset(&Container::decode(&bytes).unwrap()), None);
    assert!(read(&bytes).unwrap_err().to_string().starts_with("values buffer is"));
    let mut t = Tree::spec_example();
    t.mode_order = vec![0, 0, 2];
    let bytes = t.encode();
    assert_eq!(file_error(&bytes).offset(&Container::decode(&bytes).unwrap()), None);
}

/// The spec example with i4 values (4 leaves: 2 bytes), quantized per channel
/// on axis 1 (extent 3: three groups) with f32 scales and `zero_points` as
/// the i4 zero-point buffer (index 8 = 2 * 3 + 2).
fn i4_per_channel(zero_points: Vec<u8>) -> Vec<u8> {
    let t = Tree::spec_example();
    let mut d = t.descriptor();
    d.element_type = ElementType::I4;
    d.quantization = Some(Quantization {
        scheme: QuantScheme::PerChannel,
        axis: 1,
        zero_point_type: Some(ElementType::I4),
        ..per_tensor()
    });
    let mut buffers = t.buffers();
    buffers[0] = vec![0x21, 0x43];
    buffers.push([0.5f32, 0.25, 1.0].iter().flat_map(|s| s.to_le_bytes()).collect());
    buffers.push(zero_points);
    encode(&d, &buffers)
}

#[test]
fn parameter_buffers_keep_the_data_model_rules() {
    // Three i4 zero points [0, 1, 2] fill one and a half bytes; the high
    // nibble of the second byte is unused and MUST be zero (format.md § 2.1,
    // which § 5.7.1 applies to parameter buffers).
    let good = i4_per_channel(vec![0x10, 0x02]);
    assert!(validate(&Container::decode(&good).unwrap()).is_ok());
    let bad = i4_per_channel(vec![0x10, 0xf2]);
    assert_eq!(at(&file_error(&bad)), (Rule::ValuesPadding, None, Some(8), Some(1), 0xf, 0));
    // A content rule, like the values buffer's: permissive mode skips it.
    assert!(validate_permissive(&Container::decode(&bad).unwrap()).is_ok());

    // The same through validate_view, with the quantization attached to a view.
    let t = Tree::spec_example().with(|t| {
        t.element_type = ElementType::I4;
        t.values = vec![0x21, 0x43];
    });
    let bytes = t.level_bytes();
    let scales: Vec<u8> = [0.5f32, 0.25, 1.0].iter().flat_map(|s| s.to_le_bytes()).collect();
    let zero_points = [0x10u8, 0xf2];
    let quant = csf_core::Quantized {
        scheme: QuantScheme::PerChannel,
        axis: 1,
        block_size: 0,
        scales: csf_core::Values::new(ElementType::F32, &scales),
        zero_points: Some(csf_core::Values::new(ElementType::I4, &zero_points)),
    };
    let v = validate_view(t.view_of(&bytes).with_quantization(quant)).unwrap_err();
    assert_eq!(at(&v), (Rule::ValuesPadding, None, Some(8), Some(1), 0xf, 0));

    // Per-block groups: block_size 3 over 4 leaves is 2 groups, one byte of
    // i4 zero points with both nibbles used, so nothing is padding.
    let mut d = Tree::spec_example().descriptor();
    d.element_type = ElementType::I4;
    d.quantization = Some(Quantization {
        scheme: QuantScheme::PerBlock,
        block_size: 3,
        zero_point_type: Some(ElementType::I4),
        ..per_tensor()
    });
    let mut buffers = Tree::spec_example().buffers();
    buffers[0] = vec![0x21, 0x43];
    buffers.push([0.5f32, 0.25].iter().flat_map(|s| s.to_le_bytes()).collect());
    buffers.push(vec![0xf1]);
    assert!(validate(&Container::decode(&encode(&d, &buffers)).unwrap()).is_ok());
    // Block size 4: one group, so the high nibble is padding.
    d.quantization = Some(Quantization { block_size: 4, ..d.quantization.unwrap() });
    buffers[7] = 0.5f32.to_le_bytes().to_vec();
    buffers[8] = vec![0x11];
    assert_eq!(at(&file_error(&encode(&d, &buffers))), (Rule::ValuesPadding, None, Some(8), Some(0), 0x1, 0));
}

#[test]
fn validate_view_checks_an_attached_quantization() {
    // The spec example with i8 values, quantized per channel on axis 1
    // (extent 3): three f32 scales, built from parts.
    let t = Tree::spec_example().with(|t| {
        t.element_type = ElementType::I8;
        t.values = vec![1, 0xfe, 3, 4];
    });
    let bytes = t.level_bytes();
    let three: Vec<u8> = [0.5f32, 0.25, 1.0].iter().flat_map(|s| s.to_le_bytes()).collect();
    fn quant(scheme: QuantScheme, axis: usize, block_size: u64, scales: &[u8]) -> csf_core::Quantized<'_> {
        csf_core::Quantized {
            scheme,
            axis,
            block_size,
            scales: csf_core::Values::new(ElementType::F32, scales),
            zero_points: None,
        }
    }
    let checked =
        |q| validate_view(t.view_of(&bytes).with_quantization(q)).map(|v| v.get_dequantized(&[1, 1, 2]));
    assert_eq!(checked(quant(QuantScheme::PerChannel, 1, 0, &three)), Ok(Ok(4.0 * 0.25)));
    // Two scales for three channels: the third channel's leaves would have no scale.
    let v = checked(quant(QuantScheme::PerChannel, 1, 0, &three[..8])).unwrap_err();
    assert_eq!(at(&v), (Rule::QuantizationSize, None, Some(7), None, 8, 12));
    // NF4 over i8 values, an axis outside the rank, a block scheme without blocks.
    let v = checked(quant(QuantScheme::Nf4, 0, 2, &three[..8])).unwrap_err();
    assert_eq!(at(&v), (Rule::QuantizationTypes, None, Some(0), None, 0x01, 3));
    // By name, not by code ("element type code 0x01 ... scheme 3").
    let text = v.to_string();
    assert!(text.starts_with("element type i8 does not suit the quantization scheme nf4"), "{text}");
    let v = checked(quant(QuantScheme::PerChannel, 3, 0, &three)).unwrap_err();
    assert_eq!(at(&v), (Rule::QuantizationAxis, None, None, None, 3, 3));
    let v = checked(quant(QuantScheme::PerBlock, 0, 0, &three[..4])).unwrap_err();
    assert_eq!(at(&v), (Rule::QuantizationBlockSize, None, None, None, 0, 1));
}

// ----------------------------------------------------------------------------
// Descriptor rules, on files.

#[test]
fn rank_below_3() {
    for (shape, order) in [(vec![], vec![]), (vec![5], vec![0]), (vec![3, 4], vec![0, 1])] {
        let rank = shape.len();
        let levels: Vec<(Vec<u64>, Vec<u64>)> =
            (0..rank).map(|l| (if l == 0 { vec![0, 0] } else { vec![0] }, vec![])).collect();
        let t = Tree::new(ElementType::F32, &shape, &order, 0, levels, vec![]);
        let v = file_error(&t.encode());
        assert_eq!(at(&v), (Rule::RankBelow3, None, None, None, rank as u64, 3));
        let c = t.encode();
        assert_eq!(validate_permissive(&Container::decode(&c).unwrap()).unwrap_err(), v, "structural");
    }
}

#[test]
fn rank_64_is_the_cap() {
    let shape: Vec<u64> = (0..64).map(|d| 2 + d % 3).collect();
    let coo = csf_testdata::synthetic(&shape, 5, csf_testdata::Distribution::Uniform, 64);
    let order: Vec<u32> = (0..64).rev().collect();
    let t = Tree::from_arrays(&csf_testdata::reference_csf(&coo, &order));
    let file = t.encode();
    let view = validate(&Container::decode(&file).unwrap()).expect("rank 64 is valid");
    assert_eq!(view.rank(), 64);
    // Rank 65 cannot even be described: the descriptor, and the decoder, cap the shape at 64.
    assert!(hurray_format::Descriptor::csf_unchecked(ElementType::F32, &[1; 65], &[0; 65], 0).is_none());
    assert_eq!(
        hurray_format::Descriptor::csf(ElementType::F32, &[1; 65], &[0; 65], 0),
        Err(hurray_format::CsfHeaderError::Rank(hurray_format::limits::RankError::TooLarge(65)))
    );
    let mut bytes = Tree::spec_example().encode();
    bytes[0x12] = 65; // the shape's length prefix (docs/format.md § 11.3)
    assert!(matches!(
        Container::decode(&bytes),
        Err(hurray_format::DecodeError::TooLong { field: "shape", .. })
    ));
}

#[test]
fn mode_order_length() {
    let t = Tree::spec_example();
    let mut d = t.descriptor();
    d.mode_order = FixedVec::from_slice(&[0, 1]).unwrap();
    assert_eq!(at(&file_error(&encode(&d, &t.buffers()))), (Rule::ModeOrderLength, None, None, None, 2, 3));
    d.mode_order = FixedVec::from_slice(&[0, 1, 2, 3]).unwrap();
    assert_eq!(at(&file_error(&encode(&d, &t.buffers()))), (Rule::ModeOrderLength, None, None, None, 4, 3));
}

#[test]
fn missing_buffer_and_buffer_count() {
    let t = Tree::spec_example();
    let mut buffers = t.buffers();
    buffers.pop();
    assert_eq!(
        at(&file_error(&encode(&t.descriptor(), &buffers))),
        (Rule::MissingBuffer, None, None, None, 6, 7)
    );
    let mut buffers = t.buffers();
    buffers.push(vec![]);
    assert_eq!(
        at(&file_error(&encode(&t.descriptor(), &buffers))),
        (Rule::BufferCount, None, None, None, 8, 7)
    );
    // With a quantization section: exactly the scheme's parameter buffers
    // (docs/format.md § 5.7.1): one for scales, two with zero points.
    let mut d = i8_descriptor(&t);
    d.quantization = Some(per_tensor());
    let buffers = i8_buffers(&t);
    assert_eq!(at(&file_error(&encode(&d, &buffers))), (Rule::BufferCount, None, None, None, 7, 8));
    let mut more = buffers.clone();
    more.extend((0..9).map(|_| vec![0; 4]));
    assert_eq!(at(&file_error(&encode(&d, &more))), (Rule::BufferCount, None, None, None, 16, 8));
    let mut one = buffers.clone();
    one.push(0.5f32.to_le_bytes().to_vec());
    assert!(validate(&Container::decode(&encode(&d, &one)).unwrap()).is_ok(), "one scale buffer");
    d.quantization = Some(Quantization { zero_point_type: Some(ElementType::I8), ..per_tensor() });
    assert_eq!(at(&file_error(&encode(&d, &one))), (Rule::BufferCount, None, None, None, 8, 9));
    one.push(vec![0]);
    assert!(validate(&Container::decode(&encode(&d, &one)).unwrap()).is_ok(), "scales and zero points");
}

/// The spec example's descriptor with `i8` values (quantizable).
fn i8_descriptor(t: &Tree) -> hurray_format::Descriptor {
    let mut d = t.descriptor();
    d.element_type = ElementType::I8;
    d
}

/// The spec example's buffers with 4 `i8` values.
fn i8_buffers(t: &Tree) -> Vec<Vec<u8>> {
    let mut buffers = t.buffers();
    buffers[0] = vec![1, 2, 3, 4];
    buffers
}

#[test]
fn buffer_not_u64_names_the_buffer_and_its_level() {
    let t = Tree::spec_example();
    for (buffer, level) in [(1, 0), (2, 0), (3, 1), (4, 1), (5, 2), (6, 2)] {
        let mut buffers = t.buffers();
        buffers[buffer].push(0);
        let len = buffers[buffer].len() as u64;
        let v = file_error(&encode(&t.descriptor(), &buffers));
        assert_eq!(at(&v), (Rule::BufferNotU64, Some(level), Some(buffer), None, len, 8));
    }
}

#[test]
fn byte_offset_must_be_zero() {
    let t = Tree::spec_example();
    let mut d = t.descriptor();
    d.byte_offset = 64;
    assert_eq!(at(&file_error(&encode(&d, &t.buffers()))), (Rule::ByteOffset, None, None, None, 64, 0));
    d.byte_offset = u64::MAX;
    assert_eq!(at(&file_error(&encode(&d, &t.buffers()))), (Rule::ByteOffset, None, None, None, u64::MAX, 0));
}

#[test]
fn a_shard_descriptor_is_rejected_in_both_modes() {
    let t = Tree::spec_example();
    let mut d = t.descriptor();
    d.shard = Some(ShardDescriptor {
        shard_index: 1,
        shard_count: 2,
        shard_offset: FixedVec::from_slice(&[1, 0, 0]).unwrap(),
    });
    let file = encode(&d, &t.buffers());
    assert_eq!(file_error(&file).rule, Rule::ShardDescriptor);
    assert_eq!(
        validate_permissive(&Container::decode(&file).unwrap()).unwrap_err().rule,
        Rule::ShardDescriptor
    );
}

#[test]
fn statistics_nnz_must_match_the_descriptor() {
    let t = Tree::spec_example();
    let mut d = t.descriptor();
    d.statistics = Some(Statistics { nnz: 5, sparsity_ratio: 1.0 - 4.0 / 24.0, min: None, max: None });
    assert_eq!(at(&file_error(&encode(&d, &t.buffers()))), (Rule::StatisticsNnz, None, None, None, 5, 4));
    d.statistics = Some(Statistics { nnz: 4, sparsity_ratio: 1.0 - 4.0 / 24.0, min: None, max: None });
    assert!(validate(&Container::decode(&encode(&d, &t.buffers())).unwrap()).is_ok());
}

#[test]
fn quantization_buffers_share_the_values_device() {
    let t = Tree::spec_example();
    let mut d = i8_descriptor(&t);
    d.quantization = Some(per_tensor());
    let _ = d.buffers.push(Default::default());
    let mut buffers = i8_buffers(&t);
    buffers.push(0.5f32.to_le_bytes().to_vec());
    assert!(validate(&Container::decode(&encode(&d, &buffers)).unwrap()).is_ok());

    let mut off = d;
    off.buffers.as_mut_slice()[7].device_tag = DeviceTag::CUDA;
    let v = file_error(&encode(&off, &buffers));
    assert_eq!(at(&v), (Rule::QuantizationDevice, None, Some(7), None, 1, 0));
    let text = v.to_string();
    assert!(
        text.starts_with("quantization buffer is on device cuda (1), the values buffer on host (0)"),
        "{text}"
    );
    // The values buffer moves with its parameters: fine. The index buffers' tags are free.
    let mut moved = off;
    moved.buffers.as_mut_slice()[0].device_tag = DeviceTag::CUDA;
    moved.buffers.as_mut_slice()[3].device_tag = DeviceTag::METAL;
    assert!(validate(&Container::decode(&encode(&moved, &buffers)).unwrap()).is_ok());
}

#[test]
fn violations_display_their_rule_clause_and_location() {
    let mut t = Tree::spec_example();
    *t.crd(2) = vec![1, 3, 2, 0];
    let text = view_error(&t).to_string();
    for part in ["level 2", "buffer 6", "element 3", "sibling-order", "Storage Invariants 4"] {
        assert!(text.contains(part), "{text:?} lacks {part:?}");
    }
    for rule in Rule::ALL {
        let clause = rule.clause();
        assert!(clause.starts_with("csf-layout") || clause.starts_with("format.md"), "{clause}");
        assert!(
            !rule.id().is_empty()
                && rule.id().chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        );
    }
}

// ----------------------------------------------------------------------------
// Collect-all, fail-fast, sinks, warnings, permissive mode.

/// The spec example with five invariant violations over three levels and
/// four buffers.
fn five_faults() -> Tree {
    let mut t = Tree::spec_example();
    *t.crd(0) = vec![1, 0]; // sibling-order, buffer 2, element 1
    *t.pos(1) = vec![1, 2, 3]; // pos-start, buffer 3, element 0
    *t.crd(1) = vec![0, 3, 1]; // coordinate-bounds, buffer 4, element 1
    *t.crd(2) = vec![1, 4, 2, 0]; // coordinate-bounds at element 1, sibling-order at element 3, buffer 6
    t
}

#[test]
fn collect_all_reports_every_fault_in_buffer_order_up_to_the_cap() {
    let file = five_faults().encode();
    let container = Container::decode(&file).unwrap();
    let all = report(&container, Mode::Strict, 100);
    let found: Vec<_> = all.errors.iter().map(|v| (v.rule, v.buffer, v.index)).collect();
    assert_eq!(
        found,
        [
            (Rule::SiblingOrder, Some(2), Some(1)),
            (Rule::PosStart, Some(3), Some(0)),
            (Rule::CoordinateBounds, Some(4), Some(1)),
            (Rule::CoordinateBounds, Some(6), Some(1)),
            (Rule::SiblingOrder, Some(6), Some(3)),
        ]
    );
    assert!(!all.truncated && !all.is_valid());
    let buffers: Vec<_> = all.errors.iter().map(|v| v.buffer).collect();
    assert!(buffers.windows(2).all(|w| w[0] <= w[1]), "buffer order");

    let capped = report(&container, Mode::Strict, 3);
    assert_eq!(capped.errors, all.errors[..3]);
    assert!(capped.truncated);
    let exact = report(&container, Mode::Strict, 5);
    assert_eq!(exact.errors, all.errors);
    assert!(!exact.truncated, "the cap was reached but nothing was left out");
    let none = report(&container, Mode::Strict, 0);
    assert!(none.errors.is_empty() && none.truncated);
    assert!(!none.is_valid(), "a cap of 0 still finds the file invalid");

    // Fail-fast gives the first one; so does validate_view.
    assert_eq!(validate(&container).unwrap_err(), all.errors[0]);
    assert_eq!(view_error(&five_faults()), all.errors[0]);
    // Permissive mode skips all five: they are storage invariants.
    assert!(validate_permissive(&container).is_ok());
    assert!(report(&container, Mode::Permissive, 100).errors.is_empty());
}

#[test]
fn a_sink_sees_the_same_stream_and_can_stop_it() {
    struct Counting {
        seen: Vec<Rule>,
        stop_after: usize,
    }
    impl Sink for Counting {
        fn violation(&mut self, v: Violation) -> Result<(), Stop> {
            self.seen.push(v.rule);
            if self.seen.len() >= self.stop_after {
                Err(Stop)
            } else {
                Ok(())
            }
        }
    }
    let file = five_faults().encode();
    let container = Container::decode(&file).unwrap();
    let mut all = Counting { seen: vec![], stop_after: usize::MAX };
    assert!(
        validate_with(&container, Mode::Strict, &mut all).is_some(),
        "the view exists: no structural fault"
    );
    let want: Vec<Rule> = report(&container, Mode::Strict, 100).errors.iter().map(|v| v.rule).collect();
    assert_eq!(all.seen, want);
    let mut two = Counting { seen: vec![], stop_after: 2 };
    let _ = validate_with(&container, Mode::Strict, &mut two);
    assert_eq!(two.seen, want[..2]);
    // A structural fault: no view.
    let t = Tree::spec_example();
    let mut buffers = t.buffers();
    buffers.truncate(3);
    let short = encode(&t.descriptor(), &buffers);
    let mut one = Counting { seen: vec![], stop_after: usize::MAX };
    assert!(validate_with(&Container::decode(&short).unwrap(), Mode::Permissive, &mut one).is_none());
    assert_eq!(one.seen, [Rule::MissingBuffer]);
}

#[test]
fn warnings_never_make_a_file_invalid() {
    let t = Tree::spec_example();
    let mut d = t.descriptor();
    d.statistics = Some(Statistics { nnz: 4, sparsity_ratio: 0.5, min: None, max: None });
    let file = encode(&d, &t.buffers());
    let container = Container::decode(&file).unwrap();
    assert!(validate(&container).is_ok());
    let r = report(&container, Mode::Strict, 100);
    assert!(r.is_valid());
    match r.warnings.as_slice() {
        [w @ Warning::SparsityRatio { found, expected }] => {
            assert_eq!((*found, *expected), (0.5, 1.0 - 4.0 / 24.0));
            assert_eq!(w.id(), "sparsity-ratio");
            assert!(w.to_string().contains("SHOULD"));
        }
        other => panic!("{other:?}"),
    }
    // A sink that refuses every violation still gets the warning and does not stop on it.
    struct StopAll(usize);
    impl Sink for StopAll {
        fn violation(&mut self, _: Violation) -> Result<(), Stop> {
            Err(Stop)
        }
        fn warning(&mut self, _: Warning) {
            self.0 += 1;
        }
    }
    let mut sink = StopAll(0);
    assert!(validate_with(&container, Mode::Strict, &mut sink).is_some());
    assert_eq!(sink.0, 1);
    // Consistent statistics: no warning.
    d.statistics =
        Some(Statistics { nnz: 4, sparsity_ratio: 1.0 - 4.0 / 24.0, min: Some(1.0), max: Some(4.0) });
    let r = report(&Container::decode(&encode(&d, &t.buffers())).unwrap(), Mode::Strict, 100);
    assert!(r.is_valid() && r.warnings.is_empty());
}

/// The sparsity-ratio warnings (found, expected) strict validation gives for
/// a file of `shape` with a single non-zero at the origin, or no non-zero
/// when an extent is 0, whose statistics record `ratio`.
fn sparsity_warnings(shape: &[u64], ratio: f64) -> Vec<(u64, u64)> {
    let nnz = u64::from(!shape.contains(&0));
    let levels = (0..shape.len())
        .map(|l| match (nnz, l) {
            (1, _) => (vec![0, 1], vec![0]),
            (_, 0) => (vec![0, 0], vec![]),
            _ => (vec![0], vec![]),
        })
        .collect();
    let order: Vec<u32> = (0..shape.len() as u32).collect();
    let t = Tree::new(ElementType::U8, shape, &order, nnz, levels, vec![7; nnz as usize]);
    let mut d = t.descriptor();
    d.statistics = Some(Statistics { nnz, sparsity_ratio: ratio, min: None, max: None });
    let file = encode(&d, &t.buffers());
    let r = report(&Container::decode(&file).unwrap(), Mode::Strict, 10);
    assert!(r.is_valid(), "a SHOULD never makes a file invalid: {r:?}");
    r.warnings
        .iter()
        .map(|w| match w {
            Warning::SparsityRatio { found, expected } => (found.to_bits(), expected.to_bits()),
            other => panic!("unexpected warning {other:?}"),
        })
        .collect()
}

#[test]
fn sparsity_ratio_is_checked_on_every_shape() {
    let two32 = 1u64 << 32;
    let bits = |x: f64| x.to_bits();
    // Total 2^96 overflows u64 (and 1 - 2^-96 rounds to 1.0 in binary64).
    let huge = [two32; 3];
    assert_eq!(sparsity_warnings(&huge, 0.5), [(bits(0.5), bits(1.0))]);
    assert_eq!(sparsity_warnings(&huge, 1.0), []);
    assert_eq!(sparsity_warnings(&huge, 1.0 - f64::EPSILON / 2.0), [], "within the tolerance");
    assert_eq!(sparsity_warnings(&huge, 1.0 - 2e-9), [(bits(1.0 - 2e-9), bits(1.0))]);
    // Rank 64, extents 2^64 - 1: the total overflows u128 and binary64 (the
    // product is +inf), and 1 - nnz / inf = 1.0.
    let widest = [u64::MAX; 64];
    assert_eq!(sparsity_warnings(&widest, 1.0), []);
    assert_eq!(sparsity_warnings(&widest, 0.0), [(bits(0.0), bits(1.0))]);
    // A total between 2^53 and 2^64: not exact in binary64, still no false warning.
    let big = [(1 << 30) + 1, (1 << 30) + 3, 3];
    let total = ((1u128 << 30) + 1) * ((1u128 << 30) + 3) * 3;
    assert!(total > 1 << 53);
    assert_eq!(sparsity_warnings(&big, 1.0 - 1.0 / total as f64), []);
    assert_eq!(sparsity_warnings(&big, 1.0), [], "1 - 2^-62 is 1.0 within the tolerance");

    // A zero extent: 0 elements, the ratio is undefined, nothing is compared.
    for ratio in [0.0, 1.0, 0.5, f64::NAN, f64::INFINITY] {
        assert_eq!(sparsity_warnings(&[2, 0, 4], ratio), [], "ratio {ratio}");
    }
    // A zero extent after the product has overflowed: still no comparison (inf * 0 would be NaN).
    let mut zero_late = vec![u64::MAX; 63];
    zero_late.push(0);
    assert_eq!(sparsity_warnings(&zero_late, 0.25), []);

    // NaN and infinities never equal a ratio.
    let one = [1, 1, 1]; // 1 element, 1 non-zero: ratio 0
    assert_eq!(sparsity_warnings(&one, 0.0), []);
    assert_eq!(sparsity_warnings(&one, -0.0), []);
    for ratio in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
        let w = sparsity_warnings(&one, ratio);
        assert_eq!(w, [(bits(ratio), bits(0.0))], "ratio {ratio}");
    }

    // The tolerance: an absolute 1e-9 (docs/format.md § 5.6), inclusive.
    let spec = [2, 3, 4];
    let expected = 1.0 - 1.0 / 24.0;
    assert_eq!(sparsity_warnings(&spec, expected + 0.9e-9), []);
    assert_eq!(sparsity_warnings(&spec, expected - 0.9e-9), []);
    assert_eq!(sparsity_warnings(&spec, expected + 1.1e-9), [(bits(expected + 1.1e-9), bits(expected))]);
    assert_eq!(sparsity_warnings(&spec, expected - 1.1e-9), [(bits(expected - 1.1e-9), bits(expected))]);
}

/// The childless-node warnings of a file: (level, first node, count).
fn childless_warnings(file: &[u8], mode: Mode) -> Vec<(usize, u64, u64)> {
    let r = report(&Container::decode(file).unwrap(), mode, 10);
    assert!(r.is_valid(), "a SHOULD NOT never makes a file invalid: {r:?}");
    r.warnings
        .iter()
        .map(|w| match *w {
            Warning::ChildlessNodes { level, first, count } => (level, first, count),
            other => panic!("unexpected warning {other:?}"),
        })
        .collect()
}

#[test]
fn childless_interior_nodes_are_a_warning() {
    // Shape [3, 3, 4]: the spec example's non-zeros, plus level-0 node 2
    // (i = 2) with no children, and level-1 node 1 (i = 0, j = 1) with none.
    let t = Tree::spec_example().with(|t| {
        t.shape = vec![3, 3, 4];
        t.levels = vec![
            (vec![0, 3], vec![0, 1, 2]),
            (vec![0, 3, 4, 4], vec![0, 1, 2, 1]),
            (vec![0, 1, 1, 2, 4], vec![1, 3, 0, 2]),
        ];
    });
    let bytes = t.level_bytes();
    let view = validate_view(t.view_of(&bytes)).expect("valid: the spec is silent on childless nodes");
    assert_eq!(view.get_f64(&[1, 1, 2]).unwrap(), 4.0);
    let file = t.encode();
    assert_eq!(childless_warnings(&file, Mode::Strict), [(0, 2, 1), (1, 1, 1)]);
    // Permissive mode reads no index array, so it does not look for them.
    assert_eq!(childless_warnings(&file, Mode::Permissive), []);
    let w = &report(&Container::decode(&file).unwrap(), Mode::Strict, 10).warnings[0];
    assert_eq!(w.id(), "childless-nodes");
    for part in ["level 0", "node 2", "SHOULD NOT", "7.5"] {
        assert!(w.to_string().contains(part), "{w} lacks {part:?}");
    }

    // Several at one level: one warning, the first node and the count.
    let mut many = t.clone();
    many.shape = vec![3, 4, 4];
    many.levels[1] = (vec![0, 4, 5, 5], vec![0, 1, 2, 3, 1]);
    many.levels[2] = (vec![0, 1, 1, 2, 2, 4], vec![1, 3, 0, 2]);
    assert_eq!(childless_warnings(&many.encode(), Mode::Strict), [(0, 2, 1), (1, 1, 2)]);

    // The spec example has none, and an empty tensor's nodes are the
    // empty-form error's, not this warning's (see empty_form_rejects_...).
    assert_eq!(childless_warnings(&Tree::spec_example().encode(), Mode::Strict), []);

    // An empty slice in a broken pos is the violation's artefact, not a
    // stored node: no warning on a level that breaks a rule.
    for (level, pos) in [(1, vec![0, 2, 3, 3]), (1, vec![0, 2, 2]), (2, vec![1, 1, 2, 4])] {
        let mut broken = Tree::spec_example();
        *broken.pos(level) = pos;
        let r = report(&Container::decode(&broken.encode()).unwrap(), Mode::Strict, 10);
        assert!(!r.errors.is_empty() && r.warnings.is_empty(), "{r:?}");
    }
}

/// `bytes` with `bytes[at]` changed from `was` to `now` (offsets of
/// docs/format.md § 11.3 and § 11.4 for the spec example).
fn patched(bytes: &[u8], at: usize, was: u8, now: u8) -> Vec<u8> {
    assert_eq!(bytes[at], was, "byte {at:#x}");
    let mut out = bytes.to_vec();
    out[at] = now;
    out
}

/// The README's "What validation does not detect": corruptions that turn the
/// spec example into another well-formed tensor pass strict validation with
/// no error and no warning (docs/format.md has no checksum). If one of these
/// starts failing, the README is out of date.
#[test]
fn undetectable_corruptions_pass_strict_validation() {
    let file = Tree::spec_example().encode();
    let clean = |bytes: &[u8]| {
        let c = Container::decode(bytes).expect("decodes");
        let r = report(&c, Mode::Strict, 10);
        assert!(r.is_valid() && r.warnings.is_empty(), "{r:?}");
        let view = validate(&c).expect("valid").into_view();
        (view.shape().to_vec(), view.get_f64(&[0, 0, 1]).unwrap(), view.get_f64(&[0, 2, 2]).unwrap())
    };
    assert_eq!(clean(&file), (vec![2, 3, 4], 1.0, 0.0));
    // Values: 1.0f32 is 00 00 80 3f at 0x40; bit 0 of its top byte is exponent bit 1.
    assert_eq!(clean(&patched(&file, 0x43, 0x3f, 0x3e)).1, 0.25);
    // Shape: shape[2] at 0x15, 4 -> 5 and 4 -> 6.
    assert_eq!(clean(&patched(&file, 0x15, 0x04, 0x05)).0, [2, 3, 5]);
    assert_eq!(clean(&patched(&file, 0x15, 0x04, 0x06)).0, [2, 3, 6]);
    // Device tags: the values buffer's (0x20), pos_1's (0x2b), and a reserved tag on pos_0 (0x23).
    clean(&patched(&file, 0x20, 0x00, 0x01));
    clean(&patched(&file, 0x2b, 0x00, 0x01));
    clean(&patched(&file, 0x23, 0x00, 0x80));
    // crd_2[1] (at 0x1c8) is alone in its fiber: 3 -> 2 moves the value 2.0 from (0, 2, 3) to (0, 2, 2).
    assert_eq!(clean(&patched(&file, 0x1c8, 0x03, 0x02)).2, 2.0);
    // Another permutation as mode_order, on a shape where every coordinate still fits.
    let mut cube = Tree::spec_example().with(|t| t.shape = vec![4, 4, 4]);
    assert!(validate_view(cube.view_of(&cube.level_bytes())).is_ok());
    cube.mode_order = vec![0, 2, 1];
    clean(&cube.encode());
    // Statistics min and max are not compared with the values.
    let t = Tree::spec_example();
    let mut d = t.descriptor();
    d.statistics =
        Some(Statistics { nnz: 4, sparsity_ratio: 1.0 - 4.0 / 24.0, min: Some(-7.0), max: Some(1e9) });
    clean(&encode(&d, &t.buffers()));
}

#[test]
fn permissive_mode_enforces_exactly_the_structural_rules() {
    // Non-structural breakages pass permissive validation, and the accessors work on them.
    let mut t = Tree::spec_example();
    t.mode_order = vec![2, 2, 0];
    *t.crd(2) = vec![3, 1, 9, 0];
    *t.pos(1) = vec![3, 0, 7];
    let file = t.encode();
    let view = read_permissive(&file).expect("permissive accepts invariant breakage");
    let mut n = 0;
    view.for_each(|_, _| n += 1);
    assert!(n <= 4);
    assert!(read(&file).is_err());
    let r = report(&Container::decode(&file).unwrap(), Mode::Strict, 100);
    assert!(r.errors.iter().all(|v| !v.rule.is_structural()), "{r:?}");
    // Structural ones fail both modes with the same violation.
    let mut d = t.descriptor();
    d.byte_offset = 8;
    let file = encode(&d, &Tree::spec_example().buffers());
    let c = Container::decode(&file).unwrap();
    assert_eq!(validate_permissive(&c).unwrap_err().rule, Rule::ByteOffset);
    assert!(Rule::ByteOffset.is_structural());
}

// ----------------------------------------------------------------------------
// The parallel level checks (feature `parallel`) against the sequential ones.

#[cfg(feature = "parallel")]
mod parallel {
    use super::*;
    use csf_testdata::tree::placed;
    use csf_testdata::{reference_csf, synthetic, Distribution};

    /// ~300k non-zeros, whose leaf level (~190k parents, ~300k nodes) is over
    /// the parallel threshold of 2^18 entries and spans several chunks.
    fn large() -> Tree {
        let coo = synthetic(&[100, 3000, 1000], 300_000, Distribution::Uniform, 2024);
        let t = Tree::from_arrays(&reference_csf(&coo, &[0, 1, 2]));
        assert!(t.levels[2].0.len() + t.levels[2].1.len() > 1 << 18);
        assert!(t.levels[2].0.len() > 2 << 16, "several chunks of parents");
        t
    }

    /// Validates `file` at an 8-aligned address (native arrays: the parallel
    /// path) and at an odd one (byte-wise arrays: always sequential), and
    /// checks that every output is identical.
    fn same_both_ways(file: &[u8]) -> csf_validate::Report {
        let (mut a, mut b) = (Vec::new(), Vec::new());
        let aligned = Container::decode(placed(file, &mut a, 0)).unwrap();
        let odd = Container::decode(placed(file, &mut b, 1)).unwrap();
        let view = validate_permissive(&aligned).unwrap();
        assert!(view.levels().iter().all(|l| l.pos.as_native().is_some() && l.crd.as_native().is_some()));
        let view = validate_permissive(&odd).unwrap();
        assert!(view.levels().iter().all(|l| l.crd.as_native().is_none()));
        for cap in [1, 3, 1000] {
            assert_eq!(report(&aligned, Mode::Strict, cap), report(&odd, Mode::Strict, cap), "cap {cap}");
        }
        assert_eq!(validate(&aligned).err(), validate(&odd).err());
        report(&aligned, Mode::Strict, 1000)
    }

    #[test]
    fn parallel_and_sequential_reports_are_identical() {
        let t = large();
        assert!(same_both_ways(&t.encode()).errors.is_empty());
        let leaf_parents = t.levels[2].0.len() - 1;
        let nodes = t.levels[2].1.len();

        // One corrupted element at a time, in different chunks.
        let mut cases: Vec<(&str, Tree)> = Vec::new();
        let mut s = t.clone();
        let first = s.levels[2].0[150_000] as usize;
        s.crd(2)[first] = u64::MAX; // out of bounds, and above its next sibling if it has one
        cases.push(("bound", s));
        let mut s = t.clone();
        let k =
            (1..leaf_parents).find(|&k| s.levels[2].0[k + 1] - s.levels[2].0[k] >= 2 && k > 70_000).unwrap();
        let start = s.levels[2].0[k] as usize;
        s.crd(2).swap(start, start + 1);
        cases.push(("siblings", s));
        let mut s = t.clone();
        s.pos(2)[1 << 16] += 1_000; // decreasing after, at a chunk boundary
        cases.push(("pos at a chunk boundary", s));
        let mut s = t.clone();
        s.pos(2)[leaf_parents] = nodes as u64 - 1;
        cases.push(("terminal", s));
        let mut s = t.clone();
        s.pos(2)[0] = 1;
        cases.push(("start", s));
        let mut s = t.clone();
        let last = s.crd(2).len() - 1;
        s.crd(2)[last] = 1000;
        cases.push(("last leaf", s));
        for (name, tree) in cases {
            let r = same_both_ways(&tree.encode());
            assert!(!r.errors.is_empty(), "{name}: the corruption is reported");
        }
    }

    #[test]
    fn childless_nodes_are_warned_about_on_the_parallel_path() {
        // Drop the children of two level-1 nodes in different chunks: still
        // valid, and the clean-level fast path must not swallow the warning.
        let mut t = large();
        let mut dropped = Vec::new();
        for k in [70_000, 150_000] {
            let (start, end) = (t.levels[2].0[k] as usize, t.levels[2].0[k + 1] as usize);
            assert!(end > start);
            t.crd(2).drain(start..end);
            t.values.drain(start * 4..end * 4);
            for p in &mut t.pos(2)[k + 1..] {
                *p -= (end - start) as u64;
            }
            t.nnz -= (end - start) as u64;
            dropped.push(k);
        }
        let r = same_both_ways(&t.encode());
        assert!(r.errors.is_empty(), "{:?}", r.errors);
        assert_eq!(r.warnings, [Warning::ChildlessNodes { level: 1, first: dropped[0] as u64, count: 2 }]);
    }
}
