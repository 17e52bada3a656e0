//! A dispatch allocates nothing, on any thread: a process-wide counting allocator
//! (`tests/support/process_alloc.rs`; this test binary holds this one test and no test
//! harness: `harness = false` in Cargo.toml, so no other thread allocates meanwhile).

#[path = "../../tests/support/process_alloc.rs"]
mod process_alloc;

use std::sync::atomic::{AtomicUsize, Ordering};

use neon_runtime::{Team, TeamOptions};

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
        let before = process_alloc::allocated();
        for tasks in (0..500).map(|i| 1 + i % 11) {
            team.run(tasks, &work).unwrap();
        }
        let after = process_alloc::allocated();
        assert_eq!(after - before, 0, "allocations during 500 dispatches (spin: {spin})");
    }
}

/// `harness = false` (Cargo.toml): the test runs on the main thread with no libtest threads
/// beside it (they allocate at moments of their own, which a process-wide counter would see
/// under load). The last line has `cargo test`'s form for `scripts/qemu_tests.py`.
fn main() {
    dispatches_allocate_nothing_on_any_thread();
    process_alloc::report_passed();
}
