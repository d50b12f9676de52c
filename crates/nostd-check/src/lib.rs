//! Proof that `hurray-format` and `csf-core` need neither std nor an allocator.
#![no_std]

#[cfg(feature = "bare-metal")]
#[panic_handler]
fn panic(_: &core::panic::PanicInfo<'_>) -> ! {
    loop {}
}
