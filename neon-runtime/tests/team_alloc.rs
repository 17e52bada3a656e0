//! A dispatch allocates nothing, on any thread: a process-wide counting allocator (this
//! test binary holds this one test and no test harness: `harness = false` in Cargo.toml,
//! so no other thread allocates meanwhile).

use neon_runtime::{Team, TeamOptions};
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

struct Counting;

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

fn dispatches_allocate_nothing_on_any_thread() {
    for spin in [true, false] {
        let team = Team::with_options(4, TeamOptions { spin }).unwrap();
        let sum = AtomicUsize::new(0);
        let work = |task: usize, worker: usize| {
            sum.fetch_add(task + worker, Ordering::Relaxed);
        };
        // Warm-up: the worker threads have started and parked at least once.
        for _ in 0..10 {
            team.run(8, &work).unwrap();
        }
        let before = ALLOCATIONS.load(Ordering::SeqCst);
        for tasks in (0..500).map(|i| 1 + i % 11) {
            team.run(tasks, &work).unwrap();
        }
        let after = ALLOCATIONS.load(Ordering::SeqCst);
        assert_eq!(after - before, 0, "allocations during 500 dispatches (spin: {spin})");
    }
}

/// `harness = false` (Cargo.toml): the test runs on the main thread with no libtest threads
/// beside it (they allocate at moments of their own, which a process-wide counter would see
/// under load). The last line has `cargo test`'s form for `scripts/qemu_tests.py`.
fn main() {
    dispatches_allocate_nothing_on_any_thread();
    println!("test result: ok. 1 passed; 0 failed");
}
