//! The models allocate nothing per step on a worker team either, on any of its threads: a
//! process-wide counting allocator (this test binary holds this one test and no test
//! harness: `harness = false` in Cargo.toml, so no other thread allocates meanwhile;
//! `common`'s per-thread counter would not see the workers). Needs the converted Moonshine
//! model (`tools/moonshine/fetch.sh`).

use std::alloc::{GlobalAlloc, Layout, System};
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};

use neon_models::error::WeightsSource;
use neon_models::moonshine::transcriber::{argmax, MoonshineModel, Transcriber};
use neon_models::openwakeword::builtin;
use neon_models::openwakeword::detector::WakeDetectorOn;
use neon_models::weights::TensorFile;
use neon_runtime::{Portable, Team};

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

/// Allocations, on every thread, while `f` runs.
fn allocations<T>(f: impl FnOnce() -> T) -> (T, usize) {
    let before = ALLOCATIONS.load(Ordering::SeqCst);
    let out = f();
    (out, ALLOCATIONS.load(Ordering::SeqCst) - before)
}

fn model_steps_on_a_team_allocate_nothing() {
    let team = Team::new(3).unwrap();

    let words = builtin::HEADS.iter().map(|(n, _)| builtin::wake_word(n).unwrap()).collect();
    let embedding =
        TensorFile::parse(builtin::EMBEDDING, WeightsSource::Embedded("embedding")).unwrap();
    let mut d = WakeDetectorOn::<Portable>::with_embedding(&embedding, words).unwrap();
    let audio: Vec<i16> = (0..20_000).map(|i| ((i * 7919) % 2001) as i16 - 1000).collect();
    d.push_in(&team, &audio[..1280]).unwrap(); // warm-up: the workers have run once
    for (i, chunk) in audio[1280..].chunks(2560).enumerate() {
        let (r, n) = allocations(|| d.push_in(&team, chunk).map(<[f32]>::len));
        assert_eq!(r.unwrap(), 5);
        assert_eq!(n, 0, "wake-word push {i} on a team allocated");
    }

    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../models/moonshine");
    assert!(dir.join("base-en.safetensors").is_file(), "run tools/moonshine/fetch.sh first");
    let mut t = Transcriber::on::<Portable>(MoonshineModel::open(&dir).unwrap()).unwrap();
    let speech: Vec<f32> =
        (0..20_000).map(|i| ((i * 7919) % 2001) as f32 / 4000.0 - 0.25).collect();
    let (r, n) = allocations(|| t.encode_in(&team, &speech));
    assert!(r.unwrap() > 0);
    assert_eq!(n, 0, "encode on a team allocated");
    let mut token = 1;
    for step in 0..3 {
        let (r, n) = allocations(|| t.decode_step_in(&team, token).map(argmax));
        token = r.unwrap();
        assert_eq!(n, 0, "decoder step {step} on a team allocated");
    }
}

/// `harness = false` (Cargo.toml): the test runs on the main thread with no libtest threads
/// beside it (they allocate at moments of their own, which a process-wide counter would see
/// under load). The last line has `cargo test`'s form for `scripts/qemu_tests.py`.
fn main() {
    model_steps_on_a_team_allocate_nothing();
    println!("test result: ok. 1 passed; 0 failed");
}
