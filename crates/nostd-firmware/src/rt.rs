//! The firmware's only `unsafe` code: reading back the painted stack, and the
//! hard-fault handler that cortex-m-rt declares `unsafe`.
//!
//! cortex-m-rt (feature `paint-stack`) fills the RAM between the end of the
//! statics (`__sheap`) and the initial stack pointer (`_stack_start`) with
//! `STACK_PAINT_VALUE` before `main`. The stack grows down from the top, so
//! the lowest word that no longer holds the paint marks the deepest the stack
//! has been. A frame that happens to store the paint value itself would be
//! missed; one word of luck per frame at most, far below what is measured.
#![allow(unsafe_code)]

use cortex_m_rt::{exception, ExceptionFrame, STACK_PAINT_VALUE};

extern "C" {
    /// The initial stack pointer, from cortex-m-rt's `link.x`.
    static _stack_start: u32;
}

/// The address the stack starts from (it grows down).
fn stack_top() -> usize {
    // Taking the address of an extern static is safe: it is never read.
    core::ptr::addr_of!(_stack_start) as usize
}

/// Bytes of RAM the stack may grow into: from the end of the statics to the top.
pub fn stack_size() -> usize {
    stack_top().saturating_sub(cortex_m_rt::heap_start() as usize)
}

/// The most stack used since reset, in bytes: from the top down to the
/// lowest word whose paint was overwritten.
pub fn stack_high_water() -> usize {
    let bottom = cortex_m_rt::heap_start() as usize;
    let top = stack_top();
    let mut addr = bottom;
    while addr < top {
        // SAFETY: `bottom..top` is the stack region link.x reserves in RAM,
        // word-aligned (link.x asserts both ends), and readable at any time;
        // no Rust object lives below the stack pointer, and the words at and
        // above it are plain integers to us. The read is volatile because the
        // compiler cannot know what the startup code and the stack wrote there.
        let word = unsafe { core::ptr::read_volatile(addr as *const u32) };
        if word != STACK_PAINT_VALUE {
            break;
        }
        addr += 4;
    }
    top - addr
}

/// Uses `bytes` of stack in a frame the compiler cannot shrink, so that a
/// test can see the high-water mark move by at least that much.
#[inline(never)]
pub fn use_stack<const N: usize>() -> u8 {
    let mut frame = [0x5au8; N];
    core::hint::black_box(&mut frame);
    frame[N / 2]
}

/// A hard fault (a bad memory access, an undefined instruction) ends the run
/// with a failure instead of spinning until the time limit.
#[exception]
unsafe fn HardFault(_frame: &ExceptionFrame) -> ! {
    cortex_m_semihosting::hprintln!("hard fault");
    crate::exit(false)
}

/// A panic ends the run with a failure, naming where. The decoder-side crates
/// deny every panic that input could reach, so in `check` this means a bug.
#[panic_handler]
fn panic(info: &core::panic::PanicInfo<'_>) -> ! {
    if let Some(location) = info.location() {
        cortex_m_semihosting::hprintln!("panicked at {}:{}", location.file(), location.line());
    } else {
        cortex_m_semihosting::hprintln!("panicked");
    }
    crate::exit(false)
}
