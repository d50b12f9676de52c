//! Oracles on decoded containers and views (targets `decode`,
//! `validate_strict`, `permissive_access`).

use std::collections::HashSet;

use csf_core::{CooOrder, CsfView, OwnedCsf};
use csf_validate::{Mode, ValidCsf, Violation};
use hurray_format::limits::BUFFER_ALIGNMENT;
use hurray_format::{Container, DecodeError, ElementType};

/// The element budget of the dense conversions: big enough for the shapes
/// the fuzzer builds, small enough that a declared shape cannot make it slow.
const DENSE_BUDGET: u64 = 1 << 16;

/// The violations the strict report collects before stopping.
const REPORT_CAP: usize = 16;

/// The buffers of a container, in table order.
fn buffers<'a>(c: &Container<'a>) -> Vec<&'a [u8]> {
    (0..c.buffer_count()).map(|i| c.buffer(i).expect("every buffer in the table is readable")).collect()
}

/// Every buffer range lies inside `data`, aligned, in order, and they end
/// where `data` does; re-encoding reproduces `data`.
pub(crate) fn framing(c: &Container<'_>, data: &[u8]) {
    assert_eq!(c.data_start() % BUFFER_ALIGNMENT, 0, "data section misaligned");
    assert!(c.data_start() <= data.len(), "data section starts past the input");
    let mut previous_end = c.data_start();
    for i in 0..c.buffer_count() {
        let range = c.buffer_range(i).expect("every buffer in the table has a range");
        assert!(
            previous_end <= range.start && range.start <= range.end && range.end <= data.len(),
            "buffer {i}: {range:?} is not inside {}..{}",
            previous_end,
            data.len()
        );
        assert_eq!(range.start % BUFFER_ALIGNMENT, 0, "buffer {i} misaligned at {}", range.start);
        let bytes = c.buffer(i).expect("every buffer in the table is readable");
        assert!(std::ptr::eq(bytes, &data[range.clone()]), "buffer {i} is not the input's bytes");
        previous_end = range.end;
    }
    assert!(c.buffer_range(c.buffer_count()).is_none(), "a range past the table");
    assert_eq!(previous_end, data.len(), "bytes after the last buffer were accepted");
    let again =
        hurray_format::encode_to_vec(&c.descriptor(), &buffers(c)).expect("a decoded container encodes");
    assert!(again == data, "re-encoding a decoded container changed its bytes");
}

/// Rendering an error never panics.
pub(crate) fn renders(error: &dyn std::fmt::Display) {
    let _ = error.to_string();
}

/// A decode error says where, from the start of the input: every variant
/// has a byte (but a buffer whose start overflows `u64`), that byte is in
/// the input or at its end (but a buffer the table places past it), and a
/// message that opens with a byte opens with that one.
pub(crate) fn decode_error(error: &DecodeError, data: &[u8]) {
    let message = error.to_string();
    let offset = error.offset();
    match error {
        DecodeError::BufferEndOverflow { .. } => {}
        // A buffer the table places past the input: its start is checked
        // before the file's length, so the byte may lie beyond the input.
        DecodeError::BufferMisaligned { .. }
        | DecodeError::BufferGap { .. }
        | DecodeError::BufferOverlap { .. } => {
            assert!(offset.is_some(), "{error:?} has no offset");
        }
        _ => assert!(
            offset.is_some_and(|o| o <= data.len() as u64),
            "{error:?} at {offset:?}, outside the {}-byte input",
            data.len()
        ),
    }
    if let Some(n) = message.strip_prefix("byte ").and_then(|m| m.split(':').next()) {
        assert_eq!(n.parse::<u64>().ok(), offset, "{message:?} and offset() disagree");
    }
}

/// A violation that names a byte of the file names one inside the buffer it
/// is about.
fn located_in_its_buffer(c: &Container<'_>, v: &Violation) {
    let Some(offset) = v.offset(c) else { return };
    let range = v.buffer.and_then(|b| c.buffer_range(b)).expect("a violation with a byte has a buffer");
    assert!(
        usize::try_from(offset).is_ok_and(|o| range.contains(&o)),
        "{v} at byte {offset}, outside its buffer {range:?}"
    );
}

/// Fail-fast strict validation, the report and permissive validation agree.
pub(crate) fn modes_agree(c: &Container<'_>) {
    let strict = csf_validate::validate(c).map(|_| ());
    let permissive = csf_validate::validate_permissive(c).map(|_| ());
    let report = csf_validate::report(c, Mode::Strict, REPORT_CAP);
    assert_eq!(report.errors.first().copied(), strict.err(), "the report and fail-fast disagree");
    for v in &report.errors {
        located_in_its_buffer(c, v);
    }
    if let Err(v) = strict {
        renders(&v);
    }
    // Permissive mode enforces exactly the structural rules: it rejects only
    // what strict rejects, and accepts nothing whose first fault is structural.
    if let Err(v) = permissive {
        assert!(strict.is_err(), "permissive rejected ({v}) what strict accepts");
        assert!(v.rule.is_structural(), "permissive rejected with non-structural rule {}", v.rule.id());
    }
    if let (Err(v), Ok(())) = (strict, permissive) {
        assert!(
            !v.rule.is_structural(),
            "permissive accepted a file breaking structural rule {}",
            v.rule.id()
        );
    }
}

/// Strict validation accepts exactly what the plain spec check accepts.
pub(crate) fn spec_agrees(c: &Container<'_>, strict: Result<(), csf_validate::Violation>) {
    match (strict, crate::spec::violation(c)) {
        (Ok(()), Some(rule)) => panic!("strict validation accepted a file that breaks `{rule}`"),
        (Err(v), None) if c.descriptor().quantization.is_none() => {
            panic!("strict validation rejected a file that keeps every rule: {v}")
        }
        _ => {}
    }
}

/// One non-zero as iteration yields it.
struct Entry {
    index: Vec<u64>,
    coords: Vec<u64>,
    leaf: usize,
}

/// The value of entry `e` as comparable bits (NaNs included): what the
/// tensor means, dequantized when it is quantized, never a raw code.
fn bits(view: &CsfView<'_>, e: &Entry) -> Option<u64> {
    view.value_f64(e.leaf, &e.index).map(f64::to_bits)
}

/// The spec's answers on a strictly valid tensor.
pub(crate) fn strict(c: &Container<'_>, valid: &ValidCsf<'_>, data: &[u8]) {
    let view = valid.view();
    let entries = iterate_strict(view);
    assert_eq!(entries.len() as u64, view.nnz(), "iteration did not yield nnz entries");
    same_walks(view, &entries);
    lookups(view, &entries);
    conversions(view, &entries);
    value_rules(view);
    // Re-encoding, through the container and through an owned copy.
    let again =
        hurray_format::encode_to_vec(&c.descriptor(), &buffers(c)).expect("a valid container encodes");
    assert!(again == data, "re-encoding a valid container changed its bytes");
    let d = c.descriptor();
    let plain =
        d.statistics.is_none() && d.quantization.is_none() && d.buffers.iter().all(|b| b.device_tag.0 == 0);
    if plain {
        let owned = OwnedCsf::from_view(view).to_bytes().expect("an owned copy encodes");
        assert!(owned == data, "OwnedCsf::from_view(..).to_bytes() differs from the file");
    }
}

/// The cursor: leaf positions `0, 1, 2, ...`, storage coordinates strictly increasing.
fn iterate_strict(view: &CsfView<'_>) -> Vec<Entry> {
    let mut entries: Vec<Entry> = Vec::new();
    let mut cursor = view.cursor();
    while cursor.advance() {
        assert_eq!(cursor.leaf(), entries.len(), "leaves out of storage order");
        if let Some(previous) = entries.last() {
            assert!(previous.coords.as_slice() < cursor.coords(), "storage order not strictly increasing");
        }
        for (level, &dim) in view.mode_order().iter().enumerate() {
            assert_eq!(cursor.index()[dim as usize], cursor.coords()[level], "index is not coords permuted");
        }
        entries.push(Entry {
            index: cursor.index().to_vec(),
            coords: cursor.coords().to_vec(),
            leaf: cursor.leaf(),
        });
        assert!(entries.len() as u64 <= view.nnz(), "iteration yields more than nnz entries");
    }
    entries
}

/// `for_each` and `for_each_stored` yield what the cursor yields.
fn same_walks(view: &CsfView<'_>, entries: &[Entry]) {
    let mut k = 0;
    view.for_each(|index, leaf| {
        let e = entries.get(k).expect("for_each yields more than the cursor");
        assert_eq!((index, leaf), (e.index.as_slice(), e.leaf), "for_each differs from the cursor at {k}");
        k += 1;
    });
    assert_eq!(k, entries.len(), "for_each yields fewer than the cursor");
    k = 0;
    view.for_each_stored(|coords, leaf| {
        let e = entries.get(k).expect("for_each_stored yields more than the cursor");
        assert_eq!((coords, leaf), (e.coords.as_slice(), e.leaf), "for_each_stored differs at {k}");
        k += 1;
    });
    assert_eq!(k, entries.len(), "for_each_stored yields fewer than the cursor");
}

/// Every yielded index is found at its leaf; its unyielded neighbours are zeros.
fn lookups(view: &CsfView<'_>, entries: &[Entry]) {
    let yielded: HashSet<&[u64]> = entries.iter().map(|e| e.index.as_slice()).collect();
    let shape = view.shape();
    for e in entries {
        assert_eq!(view.find(&e.index), Ok(Some(e.leaf)), "lookup of yielded {:?}", e.index);
        let got = view.get(&e.index).expect("in shape").map(|v| v.to_f64().to_bits());
        assert_eq!(got, bits(view, e), "get({:?}) is not the leaf's value", e.index);
    }
    let mut misses: Vec<Vec<u64>> = vec![vec![0; shape.len()]];
    for e in entries {
        for dim in 0..shape.len() {
            let mut q = e.index.clone();
            q[dim] += 1;
            misses.push(q);
        }
    }
    for q in misses {
        if q.iter().zip(shape).all(|(&i, &extent)| i < extent) && !yielded.contains(q.as_slice()) {
            assert_eq!(view.find(&q), Ok(None), "{q:?} was not yielded but is found");
            assert_eq!(view.get_f64(&q), Ok(0.0), "{q:?} is not an implicit zero");
        }
    }
    let mut outside: Vec<u64> = shape.to_vec();
    if !outside.is_empty() {
        assert!(view.find(&outside).is_err(), "an index on the shape's edge is accepted");
        outside.pop();
        assert!(view.find(&outside).is_err(), "an index of the wrong rank is accepted");
    }
}

/// COO in both orders and the dense array agree with iteration.
fn conversions(view: &CsfView<'_>, entries: &[Entry]) {
    for (order, pick) in [(CooOrder::Logical, true), (CooOrder::Storage, false)] {
        let coo = view.to_coo(order);
        assert_eq!(coo.len(), entries.len(), "to_coo({order:?}) length");
        for (i, e) in entries.iter().enumerate() {
            let want = if pick { &e.index } else { &e.coords };
            assert_eq!(coo.index(i), Some(want.as_slice()), "to_coo({order:?}) entry {i}");
            let got = coo.values.get(i).copied().flatten().map(|v| v.to_f64().to_bits());
            assert_eq!(got, bits(view, e), "to_coo({order:?}) value {i}");
        }
    }
    let Ok(dense) = view.to_dense_f64(DENSE_BUDGET) else { return };
    let shape = view.shape();
    assert_eq!(dense.len() as u64, shape.iter().product::<u64>(), "dense length");
    for e in entries {
        let offset = e.index.iter().zip(shape).fold(0u64, |acc, (&i, &n)| acc * n + i) as usize;
        assert_eq!(Some(dense[offset].to_bits()), bits(view, e), "dense value at {:?}", e.index);
    }
    let stored_zeros = entries.iter().filter(|e| view.value_f64(e.leaf, &e.index) == Some(0.0)).count();
    let nonzero = dense.iter().filter(|v| **v != 0.0).count();
    assert_eq!(nonzero, entries.len() - stored_zeros, "dense holds values that were not iterated");
}

/// The data model's rules on value bytes (docs/format.md § 2.1), which a
/// strictly valid file obeys: bool bytes are 0 or 1, FP6 high bits are 0.
fn value_rules(view: &CsfView<'_>) {
    let bytes = view.values().as_bytes();
    match view.element_type() {
        ElementType::Bool => {
            assert!(bytes.iter().all(|&b| b <= 1), "strict validation accepted a bool byte other than 0 or 1")
        }
        ElementType::F6E2M3 | ElementType::F6E3M2 => assert!(
            bytes.iter().all(|&b| b & 0xc0 == 0),
            "strict validation accepted an FP6 value with its two high bits set"
        ),
        _ => {}
    }
}

/// Every accessor on a permissively validated view: total, and linear.
pub(crate) fn total(view: &CsfView<'_>) {
    let nodes: u64 = view.levels().iter().map(|l| l.node_count() as u64).sum();
    let leaves = view.node_count(view.rank() - 1);
    let mut cursor = view.cursor();
    let mut entries: Vec<Entry> = Vec::new();
    while cursor.advance() {
        assert!(entries.len() < leaves, "iteration yields more entries than n_(rank-1) = {leaves}");
        assert!(cursor.leaf() < leaves, "a leaf position past crd_(rank-1)");
        let _ = cursor.value();
        if let Ok(Some(leaf)) = view.find(cursor.index()) {
            assert!(leaf < leaves, "lookup returned leaf {leaf} past crd_(rank-1)");
        }
        entries.push(Entry {
            index: cursor.index().to_vec(),
            coords: cursor.coords().to_vec(),
            leaf: cursor.leaf(),
        });
    }
    let steps = cursor.steps();
    assert!(steps <= 2 * nodes + 1, "iteration took {steps} steps for {nodes} stored nodes");
    // The walk is the documented one (csf-core `iter.rs`): each level's slices
    // clamped to start past the last node visited there.
    let reference = clamped_walk(view);
    assert!(
        entries.len() == reference.len()
            && entries
                .iter()
                .zip(&reference)
                .all(|(e, (coords, leaf))| e.coords == *coords && e.leaf == *leaf),
        "the cursor's walk is not the clamped depth-first walk"
    );
    same_walks(view, &entries);
    assert_eq!(view.to_coo(CooOrder::Storage).len(), entries.len(), "to_coo and the cursor disagree");
    let origin = vec![0; view.rank()];
    let _ = view.get(&origin);
    if let Ok(dense) = view.to_dense_f64(DENSE_BUDGET) {
        assert!(dense.len() as u64 <= DENSE_BUDGET, "dense conversion over its budget");
    }
}

/// The spec's recursive `visit`, with the clamp that keeps it linear on any
/// `pos`: a slice starts no earlier than one past the last node visited at
/// its level. Returns `(storage coordinates, leaf)` in visiting order.
fn clamped_walk(view: &CsfView<'_>) -> Vec<(Vec<u64>, usize)> {
    struct Walk<'v, 'a> {
        view: &'v CsfView<'a>,
        high: Vec<usize>,
        coords: Vec<u64>,
        out: Vec<(Vec<u64>, usize)>,
    }
    impl Walk<'_, '_> {
        fn visit(&mut self, level: usize, parent: usize) {
            let lvl = self.view.level(level).expect("level < rank");
            let (start, end) = lvl.children(parent);
            for node in start.max(self.high[level])..end {
                self.high[level] = node + 1;
                self.coords[level] = lvl.crd.get(node).expect("children() is clamped into crd");
                if level + 1 == self.view.rank() {
                    self.out.push((self.coords.clone(), node));
                } else {
                    self.visit(level + 1, node);
                }
            }
        }
    }
    let rank = view.rank();
    let mut walk = Walk { view, high: vec![0; rank], coords: vec![0; rank], out: Vec::new() };
    walk.visit(0, 0);
    walk.out
}

/// A joined tensor is valid and holds exactly the accepted parts' entries,
/// part after part, with the same values (compared bit for bit: NaNs too).
pub(crate) fn joined(joined: &csf_build::Joined<csf_build::VecSink>, parts: &[&CsfView<'_>]) {
    let nnz = joined.statistics.nnz;
    let tensor = joined.clone().into_tensor().expect("a joined tensor has a valid header");
    let view = tensor.view();
    if let Err(v) = csf_validate::validate_view(view) {
        panic!("the joined tensor breaks a rule: {v}");
    }
    let entries = |v: &CsfView<'_>| {
        let mut out = Vec::new();
        v.for_each_stored(|coords, leaf| out.push((coords.to_vec(), value_bits(v.values().get_raw(leaf)))));
        out
    };
    let want: Vec<_> = parts.iter().flat_map(|p| entries(p)).collect();
    assert_eq!(entries(&view), want, "the join lost, invented or moved an entry");
    assert_eq!(want.len() as u64, nnz, "the statistics' nnz differs from the entries");
}

/// A value's identity: its variant and bits (`NaN != NaN` as floats).
fn value_bits(value: Option<csf_core::Value>) -> Option<String> {
    value.map(|v| match v {
        csf_core::Value::F32(x) => format!("f32 {:#x}", x.to_bits()),
        csf_core::Value::F64(x) => format!("f64 {:#x}", x.to_bits()),
        other => format!("{other:?}"),
    })
}
