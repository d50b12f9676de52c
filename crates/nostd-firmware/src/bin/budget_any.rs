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
use nostd_firmware::{finish_budget, Checksum, Found, View, QUERY, SPEC_EXAMPLE};

#[inline(never)]
fn workload(bytes: &[u8], query: &[u64]) -> Found {
    let decoded = hurray_format::Container::decode(bytes);
    read(decoded.as_ref().map_err(|_| "decode")?, query)
}

#[inline(never)]
fn read(container: &hurray_format::Container<'_>, query: &[u64]) -> Found {
    #[cfg(feature = "validate")]
    let checked = csf_validate::validate_capped::<{ nostd_firmware::CAPACITY }>(container);
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
    finish_budget("budget_any", workload(bytes, black_box(&QUERY)))
}
