//! What an embedded reader of `f32` tensors needs, and nothing else: decode
//! the container, validate it strictly, look an index up, iterate.
//! `cargo xtask embedded` measures this program's flash, RAM and stack and
//! subtracts `baseline`'s: the difference is the cost of the hurray code,
//! checked against the budgets (16 KiB of flash, 2 KiB of stack on
//! the Cortex-M4).
//!
//! The container and the query pass through `black_box`, so nothing is
//! computed at compile time: every rule and error path that a file could
//! need stays in the program, as it would for a file that is only known at
//! run time (flashed separately, received over a link). The element type is
//! the one thing the firmware fixes: it reads the values as `f32`s
//! (`CsfView::typed_values`, which refuses a file of another type or a
//! quantized one), so the decoders of the other 22 types are not linked.
//! `budget_any` is the reader of any element type.
//!
//! It iterates with a `Cursor`, the smaller of csf-core's two walks
//! (`for_each` adds flat loops over the last two levels, faster on a large
//! tensor and about 1.5 KiB larger: docs/benchmarks.md).
//!
//! Each phase after decoding can be left out (features `validate`, `lookup`,
//! `iterate`, all on by default) to measure what it adds; without
//! `validate` the view is taken unchecked (`CsfView::from_container_capped`).
//!
//! The views are of capacity `CAPACITY` (4, `nostd_firmware::View`): sized
//! for the ranks this firmware reads, not for the format's cap of 64.
#![no_std]
#![no_main]

use core::hint::black_box;

use cortex_m_rt::entry;
use csf_core::Typed;
use nostd_firmware::{decode_and_check, finish_budget, Checksum, Found, View, QUERY, SPEC_EXAMPLE};

/// Looks `query` up and iterates, reading the values as `f32`s.
#[inline(never)]
fn read(tensor: &View<'_>, query: &[u64]) -> Found {
    let values = tensor.typed_values::<f32>().map_err(|_| "typed values")?;
    let mut found = 0;
    if cfg!(feature = "lookup") {
        found = match tensor.find(query).map_err(|_| "lookup")? {
            Some(leaf) => bits(values.get(leaf)),
            None => 0, // an implicit zero
        };
    }
    let sum = if cfg!(feature = "iterate") { iterate(tensor, &values) } else { 0 };
    Ok((found, sum))
}

#[inline(never)]
fn iterate(tensor: &View<'_>, values: &Typed<'_, f32>) -> u64 {
    let mut sum = Checksum::new();
    let mut cursor = tensor.cursor();
    while cursor.advance() {
        sum.add(cursor.index(), bits(values.get(cursor.leaf())));
    }
    sum.value()
}

fn bits(value: Option<f32>) -> u32 {
    value.map_or(u32::MAX, f32::to_bits)
}

#[entry]
fn main() -> ! {
    let bytes: &[u8] = black_box(&SPEC_EXAMPLE.0);
    let query: &[u64] = black_box(&QUERY);
    finish_budget("budget", decode_and_check(bytes, |tensor| read(tensor, query)))
}
