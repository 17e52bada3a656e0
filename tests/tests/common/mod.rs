//! Shared test support: a per-thread counting global allocator, so a test can prove that
//! a plan's `run` allocates nothing while other tests run in parallel threads.
#![allow(dead_code)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

struct Counting;

thread_local! {
    static ALLOCATIONS: Cell<usize> = const { Cell::new(0) };
}

// SAFETY: forwards every call to the system allocator unchanged; the counter is a
// const-initialised thread-local `Cell` without destructor, which never allocates.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.with(|c| c.set(c.get() + 1));
        // SAFETY: same contract as the caller's.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: same contract as the caller's.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCATIONS.with(|c| c.set(c.get() + 1));
        // SAFETY: same contract as the caller's.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Runs `f` and returns its result with the number of heap allocations (and
/// reallocations) this thread made meanwhile.
pub fn count_allocations<T>(f: impl FnOnce() -> T) -> (T, usize) {
    let before = ALLOCATIONS.with(Cell::get);
    let out = f();
    (out, ALLOCATIONS.with(Cell::get) - before)
}

/// Runs `f`, asserts that this thread allocated nothing meanwhile, and returns its result.
#[track_caller]
pub fn allocation_free<T>(f: impl FnOnce() -> T) -> T {
    let (out, n) = count_allocations(f);
    assert_eq!(n, 0, "{n} heap allocation(s)");
    out
}

/// Prints a plan's workspace and the lower bound of its memory map (bytes) to the test log.
pub fn print_memory(plan: &str, workspace_bytes: usize, lower_bound_bytes: usize) {
    println!("{plan}: workspace {workspace_bytes} bytes, lower bound {lower_bound_bytes} bytes");
}
