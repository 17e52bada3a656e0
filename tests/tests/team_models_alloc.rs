//! The models allocate nothing per step on a worker team either, on any of its threads: a
//! process-wide counting allocator (`tests/support/process_alloc.rs`; this test binary holds
//! this one test and no test harness: `harness = false` in Cargo.toml, so no other thread
//! allocates meanwhile; `common`'s per-thread counter would not see the workers). Needs the converted Moonshine
//! model (`tools/moonshine/fetch.sh`).

#[path = "../support/process_alloc.rs"]
mod process_alloc;

use std::path::PathBuf;

use neon_models::error::WeightsSource;
use neon_models::moonshine::transcriber::{argmax, MoonshineModel, Transcriber};
use neon_models::openwakeword::builtin;
use neon_models::openwakeword::detector::WakeDetectorOn;
use neon_models::weights::TensorFile;
use neon_runtime::{Portable, Team};
use process_alloc::allocations;

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
    process_alloc::report_passed();
}
