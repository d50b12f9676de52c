//! A counting global allocator, so that a test can measure what a call allocates.
//!
//! A test binary installs it with
//! `#[global_allocator] static GLOBAL: CountingAlloc = CountingAlloc;` and
//! wraps the call in [`allocated_by`]. Counts are per thread, because the
//! test harness runs tests on parallel threads. This is the crate's only
//! `unsafe`: implementing `GlobalAlloc` requires it.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

/// Forwards to the system allocator, counting the bytes each thread asks for.
#[derive(Debug)]
pub struct CountingAlloc;

thread_local! {
    static ALLOCATED: Cell<usize> = const { Cell::new(0) };
}

// SAFETY: every call forwards to `System` unchanged; the counter is a
// const-initialised thread-local `Cell` without destructor, whose access
// never allocates, so counting cannot recurse into the allocator.
unsafe impl GlobalAlloc for CountingAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let _ = ALLOCATED.try_with(|a| a.set(a.get() + layout.size()));
        // SAFETY: the caller's contract for `alloc` is passed on as is.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller's contract for `dealloc` is passed on as is.
        unsafe { System.dealloc(ptr, layout) }
    }
}

/// `f()` and the bytes it allocated on this thread (a `realloc` counts its
/// new size). Meaningful only where [`CountingAlloc`] is the global allocator.
pub fn allocated_by<R>(f: impl FnOnce() -> R) -> (R, usize) {
    let before = ALLOCATED.with(Cell::get);
    let r = f();
    (r, ALLOCATED.with(Cell::get) - before)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[global_allocator]
    static GLOBAL: CountingAlloc = CountingAlloc;

    #[test]
    fn counts_this_threads_allocations() {
        let (v, bytes) = allocated_by(|| vec![0u8; 1000]);
        assert_eq!((v.len(), bytes), (1000, 1000));
        let ((), none) = allocated_by(|| ());
        assert_eq!(none, 0);
    }
}
