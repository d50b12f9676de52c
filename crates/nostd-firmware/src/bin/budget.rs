//! What an embedded reader of a Hurray CSF file needs, and nothing else:
//! decode the container, validate it strictly, look an index up, iterate.
//! `cargo xtask embedded` measures this program's flash, RAM and stack and
//! subtracts `baseline`'s: the difference is the cost of the hurray code.
//!
//! The container and the query pass through `black_box`, so nothing is
//! computed at compile time: every element type, rule and error path that a
//! file could need stays in the program, as it would for a file that is
//! only known at run time (flashed separately, received over a link).
//!
//! Each phase after decoding can be left out (features `validate`, `lookup`,
//! `iterate`, all on by default) to measure what it adds; without
//! `validate` the view is taken unchecked (`CsfView::from_container_capped`).
//!
//! The views are of capacity `CAPACITY` (8, `nostd_firmware::View`): sized
//! for the ranks this firmware reads, not for the format's cap of 64.
#![no_std]
#![no_main]

use core::hint::black_box;

use cortex_m_rt::entry;
use csf_core::Value;
use nostd_firmware::{exit, report_stack, Checksum, View, CAPACITY, SPEC_EXAMPLE};

/// What the workload found: the looked-up value's bits and the iteration
/// checksum (each 0 when its phase is left out), or the phase that failed.
///
/// Each step is a function of its own, and results are bound by reference:
/// a view of the default capacity is 1.9 KiB on a 32-bit target and an
/// iteration's state about 3 KiB (at capacity 8, about 250 and 400 bytes),
/// and what the compiler merges into one frame, or moves out of a
/// `Result`, it keeps on the stack side by side (docs/benchmarks.md).
#[inline(never)]
fn workload(bytes: &[u8], query: &[u64]) -> Result<(u32, u64), &'static str> {
    let decoded = hurray_format::Container::decode(bytes);
    read(decoded.as_ref().map_err(|_| "decode")?, query)
}

#[inline(never)]
fn read(container: &hurray_format::Container<'_>, query: &[u64]) -> Result<(u32, u64), &'static str> {
    #[cfg(feature = "validate")]
    let checked = csf_validate::validate_capped::<CAPACITY>(container);
    #[cfg(not(feature = "validate"))]
    let checked = View::from_container_capped(container);
    let tensor: &View<'_> = checked.as_ref().map_err(|_| "validate")?;
    let mut found = 0;
    if cfg!(feature = "lookup") {
        // `get` gives the value the tensor means (dequantized if quantized).
        found = bits(tensor.get(query).map_err(|_| "lookup")?);
    }
    let sum = if cfg!(feature = "iterate") { iterate(tensor) } else { 0 };
    Ok((found, sum))
}

#[inline(never)]
fn iterate(tensor: &View<'_>) -> u64 {
    let mut sum = Checksum::new();
    tensor.for_each(|index, leaf| sum.add(index, bits(tensor.value(leaf, index))));
    sum.value()
}

/// The bits of an `f32` value (the spec example's element type).
fn bits(value: Option<Value>) -> u32 {
    match value {
        Some(Value::F32(v)) => v.to_bits(),
        _ => u32::MAX,
    }
}

#[entry]
fn main() -> ! {
    let bytes: &[u8] = black_box(&SPEC_EXAMPLE.0);
    let result = workload(bytes, black_box(&[1, 1, 2]));
    report_stack("budget");
    // 4.0 at (1, 1, 2), and the checksum of the four entries in leaf order.
    let mut sum = Checksum::new();
    for (index, value) in [([0, 0, 1], 1.0f32), ([0, 2, 3], 2.0), ([1, 1, 0], 3.0), ([1, 1, 2], 4.0)] {
        sum.add(&index, value.to_bits());
    }
    let expected = (
        if cfg!(feature = "lookup") { 4.0f32.to_bits() } else { 0 },
        if cfg!(feature = "iterate") { sum.value() } else { 0 },
    );
    match result {
        Ok(found) => {
            cortex_m_semihosting::hprintln!("budget: found {:x?}, expected {:x?}", found, expected);
            exit(found == expected)
        }
        Err(phase) => {
            cortex_m_semihosting::hprintln!("budget: {} failed", phase);
            exit(false)
        }
    }
}
