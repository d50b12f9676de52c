//! `budget` without the hurray code: the same runtime, semihosting output,
//! embedded container, checksum and stack readout, so that the difference
//! between the two programs' sizes is what decoding, validation, lookup and
//! iteration cost.
#![no_std]
#![no_main]

use core::hint::black_box;

use cortex_m_rt::entry;
use nostd_firmware::{exit, report_stack, Checksum, SPEC_EXAMPLE};

/// Touches the container and the query without reading them as a tensor.
fn workload(bytes: &[u8], query: &[u64]) -> Result<(u32, u64), &'static str> {
    let first = bytes.first().ok_or("empty")?;
    let mut sum = Checksum::new();
    sum.add(query, u32::from(*first));
    Ok((bytes.len() as u32, sum.value()))
}

#[entry]
fn main() -> ! {
    let bytes: &[u8] = black_box(&SPEC_EXAMPLE.0);
    let result = workload(bytes, black_box(&[1, 1, 2]));
    report_stack("baseline");
    let mut sum = Checksum::new();
    sum.add(&[1, 1, 2], 0x89); // the first byte of the magic number
    let expected = (bytes.len() as u32, sum.value());
    match result {
        Ok(found) => {
            cortex_m_semihosting::hprintln!("baseline: found {:x?}, expected {:x?}", found, expected);
            exit(found == expected)
        }
        Err(phase) => {
            cortex_m_semihosting::hprintln!("baseline: {} failed", phase);
            exit(false)
        }
    }
}
