//! A process-wide counting allocator, for the zero-allocation tests whose work runs on a
//! worker team (a per-thread counter, as `common::allocation_free` has, would not see the
//! team's threads). Shared by the test binaries of several crates through
//! `#[path = ".../tests/support/process_alloc.rs"] mod process_alloc;`; the module installs
//! itself as the binary's global allocator.
//!
//! Such a binary holds one test and runs without the libtest harness (`harness = false` in
//! its crate's Cargo.toml, and a `main` that calls the test): libtest's own threads
//! allocate at moments of their choosing, which a process-wide counter would see under load.
#![allow(dead_code)] // not every binary uses both counters

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

/// Counts every allocation and reallocation of the process, then forwards it to [`System`].
pub struct Counting;

static ALLOCATIONS: AtomicUsize = AtomicUsize::new(0);

// SAFETY: forwards every call to the system allocator unchanged; the counter is an atomic.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: same contract as the caller's.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: same contract as the caller's.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: same contract as the caller's.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Allocations (and reallocations) of the process so far, on every thread.
pub fn allocated() -> usize {
    ALLOCATIONS.load(Ordering::SeqCst)
}

/// `f`'s result and the allocations of the process, on every thread, while it ran.
pub fn allocations<T>(f: impl FnOnce() -> T) -> (T, usize) {
    let before = allocated();
    let out = f();
    (out, allocated() - before)
}

/// The last line of a `harness = false` test binary, in `cargo test`'s form (what
/// `scripts/qemu_tests.py` counts).
pub fn report_passed() {
    println!("test result: ok. 1 passed; 0 failed");
}
