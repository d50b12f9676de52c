//! What the three firmware programs share: how a container sits in flash,
//! the report over semihosting, the exit status, the stack high-water mark,
//! and the panic and fault handlers.
//!
//! - `check` embeds the containers `build.rs` makes and checks every answer
//!   on the target (decode, strict validation, lookups, iteration, dequantized
//!   values, the damaged copies rejected with the right rule).
//! - `budget` does only what an embedded reader of `f32` tensors needs:
//!   decode, validate strictly, look up, iterate. Its flash minus
//!   `baseline`'s is what the hurray code costs; `cargo xtask embedded`
//!   checks it against the budgets in docs/benchmarks.md.
//! - `budget_any` does the same as a reader of any element type does
//!   (values as `Value`, dequantized when the file is quantized), measured
//!   and budgeted alike.
//! - `baseline` is `budget` without the hurray calls: the same runtime,
//!   output, container and stack readout.
#![no_std]

// Linked for its single-core `critical-section` implementation (interrupts
// off), which the semihosting output handle needs; nothing else of it is used.
use cortex_m as _;
use cortex_m_semihosting::debug;

mod checksum;
pub mod rt;

pub use checksum::Checksum;

/// The rank capacity of the programs' views: the largest rank they read
/// (csf-core's `CsfView<'a, MAX>`). Their tensors are of rank 3 and 4. At
/// capacity 4 a view is about 180 bytes and an iteration's cursor about 160
/// on a 32-bit target (64 + 28 and 32 + 33 bytes per rank), where the
/// default capacity of 64 (every rank the format allows) takes 1.9 KiB and
/// 2.1 KiB. `budget`'s stack on the Cortex-M4 is 1,640 B at capacity 4,
/// 1,928 B at 8 and 6,916 B at 64 (docs/benchmarks.md). A file of a higher
/// rank is an error (`ViewError::RankTooLarge`, or `Rule::ViewRefused` from
/// `csf_validate::validate_capped`), not a panic.
pub const CAPACITY: usize = 4;

/// A view of [`CAPACITY`].
pub type View<'a> = csf_core::CsfView<'a, CAPACITY>;

/// Bytes aligned as a file's buffers are (`docs/format.md`: every buffer starts
/// on a 64-byte boundary from the start of the container), so that the
/// `pos`/`crd` arrays of a container placed here are 8-byte aligned in memory
/// and `csf-core` reads them in place. Any alignment works; this one is fastest.
///
/// `static T: &Aligned<[u8]> = &Aligned(*include_bytes!("t.hurray"));` puts a
/// container in flash (immutable statics go to `.rodata`) without naming its
/// length.
#[repr(C, align(64))]
pub struct Aligned<Bytes: ?Sized>(pub Bytes);

/// The spec's example tensor (csf-layout.txt § Example), as `build.rs` had
/// `csf-build` write it: shape `[2, 3, 4]`, `f32` values 1 to 4.
pub static SPEC_EXAMPLE: &Aligned<[u8]> =
    &Aligned(*include_bytes!(concat!(env!("OUT_DIR"), "/spec-example.hurray")));

/// Ends the program: QEMU exits with status 0 when `ok`, else 1.
pub fn exit(ok: bool) -> ! {
    debug::exit(if ok { debug::EXIT_SUCCESS } else { debug::EXIT_FAILURE });
    // Only reached without a debugger attached (on a real board).
    loop {
        core::hint::spin_loop();
    }
}

/// What the `budget` programs found: the looked-up value's bits and the
/// iteration checksum (each 0 when its phase is left out), or the phase
/// that failed.
pub type Found = Result<(u32, u64), &'static str>;

/// The `budget` programs' query, `(1, 1, 2)` of the spec's example.
pub const QUERY: [u64; 3] = [1, 1, 2];

/// The `budget` programs' first two phases: decodes `bytes`, validates the
/// container strictly into a view of [`CAPACITY`] (without feature
/// `validate`, views it unchecked) and hands the view to `read`, the
/// program's own lookup and iteration.
///
/// Each step is a function of its own, and the view is bound by reference:
/// what the compiler merges into one frame, or moves out of a `Result`, it
/// keeps on the stack side by side (docs/benchmarks.md).
#[inline(never)]
pub fn decode_and_check(bytes: &[u8], read: impl FnOnce(&View<'_>) -> Found) -> Found {
    let decoded = hurray_format::Container::decode(bytes);
    check_and_read(decoded.as_ref().map_err(|_| "decode")?, read)
}

#[inline(never)]
fn check_and_read(container: &hurray_format::Container<'_>, read: impl FnOnce(&View<'_>) -> Found) -> Found {
    #[cfg(feature = "validate")]
    let checked = csf_validate::validate_capped::<CAPACITY>(container);
    #[cfg(not(feature = "validate"))]
    let checked = View::from_container_capped(container);
    read(checked.as_ref().map_err(|_| "validate")?)
}

/// Reports the `budget` programs' stack and result, and exits with success
/// when `found` is the spec example's answer: 4.0 at [`QUERY`] (with
/// feature `lookup`) and the checksum of its four entries in leaf order
/// (with feature `iterate`).
pub fn finish_budget(program: &str, found: Found) -> ! {
    report_stack(program);
    let mut sum = Checksum::new();
    for (index, value) in [([0, 0, 1], 1.0f32), ([0, 2, 3], 2.0), ([1, 1, 0], 3.0), ([1, 1, 2], 4.0)] {
        sum.add(&index, value.to_bits());
    }
    let expected = (
        if cfg!(feature = "lookup") { 4.0f32.to_bits() } else { 0 },
        if cfg!(feature = "iterate") { sum.value() } else { 0 },
    );
    match found {
        Ok(found) => {
            cortex_m_semihosting::hprintln!("{}: found {:x?}, expected {:x?}", program, found, expected);
            exit(found == expected)
        }
        Err(phase) => {
            cortex_m_semihosting::hprintln!("{}: {} failed", program, phase);
            exit(false)
        }
    }
}

/// The line `cargo xtask embedded` reads the stack figure from.
pub fn report_stack(program: &str) {
    cortex_m_semihosting::hprintln!(
        "{}: stack high-water {} bytes of {}",
        program,
        rt::stack_high_water(),
        rt::stack_size()
    );
}
