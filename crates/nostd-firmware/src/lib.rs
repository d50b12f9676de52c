//! What the three firmware programs share: how a container sits in flash,
//! the report over semihosting, the exit status, the stack high-water mark,
//! and the panic and fault handlers.
//!
//! - `check` embeds the containers `build.rs` makes and checks every answer
//!   on the target (decode, strict validation, lookups, iteration, dequantized
//!   values, the damaged copies rejected with the right rule).
//! - `budget` does only what an embedded reader needs: decode, validate
//!   strictly, look up, iterate. Its flash minus `baseline`'s is what the
//!   hurray code costs; `cargo xtask embedded` checks it against the budgets
//!   in docs/benchmarks.md.
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
/// (csf-core's `CsfView<'a, MAX>`). Their tensors are of rank 3 and 4; 8
/// leaves room, and sizes a view at about 250 bytes and an iteration's
/// cursor at about 300 on a 32-bit target, where the default capacity of
/// 64 (every rank the format allows) takes 1.9 KiB and 2.1 KiB. A file of a
/// higher rank is an error (`ViewError::RankTooLarge`, or
/// `Rule::ViewRefused` from `csf_validate::validate_capped`), not a panic.
pub const CAPACITY: usize = 8;

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

/// The line `cargo xtask embedded` reads the stack figure from.
pub fn report_stack(program: &str) {
    cortex_m_semihosting::hprintln!(
        "{}: stack high-water {} bytes of {}",
        program,
        rt::stack_high_water(),
        rt::stack_size()
    );
}
