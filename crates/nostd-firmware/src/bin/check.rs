//! The embedded proof: reads the containers `build.rs` made (and embedded in
//! flash) with `hurray-format`, `csf-core` and `csf-validate` on a Cortex-M
//! core, checks every answer against the ones written beside them, and
//! reports over semihosting, one line per check, then
//! `firmware: N checks, F failures`; the exit status is 0 only when F is 0.
#![no_std]
#![no_main]

use cortex_m_rt::entry;
use cortex_m_semihosting::hprintln;
use csf_core::{LookupError, Value};
use csf_validate::Rule;
use hurray_format::Container;
use nostd_firmware::{exit, report_stack, rt, Aligned, Checksum, View, CAPACITY};

/// A container that is strictly valid, and the answers it must give.
pub struct Fixture {
    name: &'static str,
    bytes: &'static [u8],
    shape: &'static [u64],
    mode_order: &'static [u32],
    nnz: usize,
    /// The element type's code (`docs/format.md` § 2.1).
    element_type: u8,
    quantized: bool,
    /// The stored entries' logical indices, `rank` coordinates each.
    present: &'static [u64],
    /// The bits of the `f32` each present entry means (dequantized when quantized).
    values: &'static [u32],
    /// Indices inside the shape that hold no entry, `rank` coordinates each.
    absent: &'static [u64],
    /// [`Checksum`] of the entries in storage order.
    checksum: u64,
}

/// A damaged copy, and the violation strict validation must report.
pub struct Damaged {
    name: &'static str,
    bytes: &'static [u8],
    rule: Rule,
    level: usize,
    buffer: usize,
    index: usize,
    /// An index to look up in the damaged tensor (the answer is not
    /// checked: only that it comes back).
    probe: &'static [u64],
}

mod fixtures {
    use super::{Aligned, Damaged, Fixture, Rule};
    include!(concat!(env!("OUT_DIR"), "/fixtures.rs"));
}

/// Counts checks and failures, and prints one line per check.
struct Tally {
    checks: u32,
    failures: u32,
}

impl Tally {
    fn check(&mut self, name: &str, what: &str, ok: bool) {
        self.checks += 1;
        if ok {
            hprintln!("check {}: {}: ok", name, what);
        } else {
            self.failures += 1;
            hprintln!("check {}: {}: FAILED", name, what);
        }
    }
}

/// Whether `got` is `Ok(Some(F32))` with exactly these bits.
fn is_f32(got: Result<Option<Value>, LookupError>, bits: u32) -> bool {
    matches!(got, Ok(Some(Value::F32(v))) if v.to_bits() == bits)
}

/// The checksum of `for_each` (leaf order), with the values the tensor means,
/// and whether the leaves came in order `0, 1, 2, ...`.
#[inline(never)]
fn for_each_checksum(view: &View<'_>) -> (Checksum, bool) {
    let mut sum = Checksum::new();
    let mut in_order = true;
    view.for_each(|index, leaf| {
        in_order &= leaf as u64 == sum.entries();
        let bits = view.value_f32(leaf, index).map_or(u32::MAX, f32::to_bits);
        sum.add(index, bits);
    });
    (sum, in_order)
}

#[inline(never)]
fn cursor_checksum(view: &View<'_>) -> Checksum {
    let mut sum = Checksum::new();
    let mut cursor = view.cursor();
    while cursor.advance() {
        let bits = match cursor.value() {
            Some(Value::F32(v)) => v.to_bits(),
            _ => u32::MAX,
        };
        sum.add(cursor.index(), bits);
    }
    sum
}

// Each fixture is checked in a function of its own, and results are bound by
// reference: a view is 1.9 KiB on a 32-bit target at the default capacity (180 bytes at
// `CAPACITY`), and every move out of a
// `Result`, or frame the compiler merges into `main`, is another copy on the
// stack, which the micro:bit's 16 KiB of RAM has little room for.
#[inline(never)]
fn check_valid(t: &mut Tally, f: &Fixture) {
    let decoded = Container::decode(f.bytes);
    t.check(f.name, "decode", decoded.is_ok());
    let Ok(container) = &decoded else { return };
    strict(t, f, container);
    permissive_alike(t, f, container);
}

/// Permissive mode on valid data gives the same answers.
#[inline(never)]
fn permissive_alike(t: &mut Tally, f: &Fixture, container: &Container<'_>) {
    let permissive = csf_validate::validate_permissive_capped::<CAPACITY>(container);
    let same = permissive.as_ref().is_ok_and(|p| {
        f.present.chunks_exact(f.shape.len()).zip(f.values).all(|(index, &bits)| is_f32(p.get(index), bits))
    });
    t.check(f.name, "permissive validation answers alike", same);
}

#[inline(never)]
fn strict(t: &mut Tally, f: &Fixture, container: &Container<'_>) {
    let validated = csf_validate::validate_capped::<CAPACITY>(container);
    t.check(f.name, "strict validation", validated.is_ok());
    if let Ok(tensor) = &validated {
        check_view(t, f, tensor);
    }
}

#[inline(never)]
fn check_view(t: &mut Tally, f: &Fixture, view: &View<'_>) {
    let rank = f.shape.len();
    t.check(
        f.name,
        "shape, mode_order, nnz, element type, quantization",
        view.shape() == f.shape
            && view.mode_order() == f.mode_order
            && view.nnz() == f.nnz as u64
            && view.element_type().code() == f.element_type
            && view.quantization().is_some() == f.quantized,
    );

    let present = f.present.chunks_exact(rank).zip(f.values);
    let found = present.clone().filter(|(index, &bits)| is_f32(view.get(index), bits)).count();
    t.check(f.name, "get finds every stored value", found == f.nnz && f.values.len() == f.nnz);
    let leaves = present.clone().filter(|(index, _)| matches!(view.find(index), Ok(Some(_)))).count();
    t.check(f.name, "find finds every stored entry", leaves == f.nnz);
    let zeros = f.absent.chunks_exact(rank).filter(|index| view.get(index) == Ok(None)).count();
    t.check(f.name, "absent indices are implicit zeros", zeros * rank == f.absent.len() && zeros > 0);

    // One past the extent of every dimension: the first is reported.
    let mut outside = [0u64; 8];
    let outside = &mut outside[..rank];
    outside.copy_from_slice(f.shape);
    let first = LookupError::OutOfBounds { dim: 0, coord: f.shape[0], extent: f.shape[0] };
    t.check(
        f.name,
        "out-of-bounds and wrong-rank queries are errors",
        view.find(outside) == Err(first)
            && view.find(&outside[..rank - 1]) == Err(LookupError::WrongRank { got: rank - 1, rank }),
    );

    let (sum, in_order) = for_each_checksum(view);
    t.check(
        f.name,
        "for_each yields every entry in storage order (checksum)",
        in_order && sum.entries() == f.nnz as u64 && sum.value() == f.checksum,
    );
    let sum = cursor_checksum(view);
    t.check(f.name, "cursor agrees (checksum)", sum.entries() == f.nnz as u64 && sum.value() == f.checksum);

    if view.quantization().is_some() {
        check_quantized(t, f, view);
    }
}

#[inline(never)]
fn check_quantized(t: &mut Tally, f: &Fixture, view: &View<'_>) {
    let present = f.present.chunks_exact(f.shape.len()).zip(f.values);
    if let Some(q) = view.quantization() {
        let mut sum = Checksum::new();
        view.for_each_dequantized(|index, value| sum.add(index, value.to_bits()));
        t.check(f.name, "for_each_dequantized (checksum)", sum.value() == f.checksum);
        // The stored codes are 4-bit integers, and dequantizing each by hand
        // gives the value `get` gives.
        let codes = present
            .filter(|(index, &bits)| {
                let Ok(Some(leaf)) = view.find(index) else { return false };
                let Ok(Some(raw @ Value::I4(_))) = view.get_raw(index) else { return false };
                q.dequantize(raw, leaf, index).map(f32::to_bits) == Some(bits)
            })
            .count();
        t.check(f.name, "i4 codes dequantize to the stored values", codes == f.nnz);
    }
}

#[inline(never)]
fn check_damaged(t: &mut Tally, d: &Damaged) {
    let decoded = Container::decode(d.bytes);
    t.check(d.name, "decode (the framing is intact)", decoded.is_ok());
    let Ok(container) = &decoded else { return };
    rejected(t, d, container);
    permissive(t, d, container);
}

#[inline(never)]
fn rejected(t: &mut Tally, d: &Damaged, container: &Container<'_>) {
    let verdict = csf_validate::validate_capped::<CAPACITY>(container);
    let right = matches!(verdict, Err(ref v) if v.rule == d.rule
        && v.level == Some(d.level)
        && v.buffer == Some(d.buffer)
        && v.index == Some(d.index as u64));
    t.check(d.name, "strict validation rejects it with the right rule, level, buffer, element", right);
    if let Err(v) = &verdict {
        hprintln!("  {}: {}", d.name, v.rule.id());
    }
}

#[inline(never)]
fn permissive(t: &mut Tally, d: &Damaged, container: &Container<'_>) {
    // Permissive mode lets it through; every accessor stays total.
    let permissive = csf_validate::validate_permissive_capped::<CAPACITY>(container);
    let Ok(view) = &permissive else {
        t.check(d.name, "permissive validation lets it through", false);
        return;
    };
    let _ = view.get(d.probe);
    t.check(d.name, "permissive reads finish, within the iteration bound", walk_within_bound(view));
}

/// Walks a (possibly damaged) view with the cursor: whether it took at most
/// `2 * (n_0 + ... + n_{rank-1}) + 1` steps, the bound csf-core promises.
#[inline(never)]
fn walk_within_bound(view: &View<'_>) -> bool {
    let mut cursor = view.cursor();
    while cursor.advance() {}
    let nodes: u64 = (0..view.rank()).map(|l| view.node_count(l) as u64).sum();
    cursor.steps() <= 2 * nodes + 1
}

#[entry]
fn main() -> ! {
    let mut t = Tally { checks: 0, failures: 0 };
    // The stack readout works: a 1 KiB frame moves the mark by at least that.
    let before = rt::stack_high_water();
    core::hint::black_box(rt::use_stack::<1024>());
    let after = rt::stack_high_water();
    t.check(
        "runtime",
        "painted stack measures a 1 KiB frame",
        after >= before + 1024 && after < rt::stack_size(),
    );
    for f in fixtures::VALID {
        check_valid(&mut t, f);
    }
    for d in fixtures::DAMAGED {
        check_damaged(&mut t, d);
    }
    report_stack("check");
    hprintln!("firmware: {} checks, {} failures", t.checks, t.failures);
    exit(t.failures == 0)
}
