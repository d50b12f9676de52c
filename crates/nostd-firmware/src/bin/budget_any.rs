//! `budget` for a reader of any element type: values as `csf_core::Value`
//! (`get`, `value`), dequantized when the file is quantized, so the decoders
//! of all 23 element types and every quantization scheme are linked; it
//! iterates with `for_each`. `cargo xtask embedded` measures and budgets it
//! as it does `budget` (docs/benchmarks.md).
//!
//! Features `validate`, `lookup` and `iterate` leave phases out, as in
//! `budget`.
#![no_std]
#![no_main]

use core::hint::black_box;

use cortex_m_rt::entry;
use csf_core::Value;
use nostd_firmware::{decode_and_check, finish_budget, Checksum, Found, View, QUERY, SPEC_EXAMPLE};

/// Looks `query` up and iterates, values as `Value`s.
#[inline(never)]
fn read(tensor: &View<'_>, query: &[u64]) -> Found {
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
    let query: &[u64] = black_box(&QUERY);
    finish_budget("budget_any", decode_and_check(bytes, |tensor| read(tensor, query)))
}
