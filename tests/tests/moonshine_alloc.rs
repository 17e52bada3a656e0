//! Moonshine allocates nothing after construction: neither the encoder (including the
//! cross-attention keys and values) nor any decoder step, nor greedy decoding into a vector
//! with room for the budget. Needs the converted model (`tools/moonshine/fetch.sh`).

mod common;

use std::path::PathBuf;

use neon_models::moonshine::transcriber::{argmax, MoonshineModel, Transcriber};
use neon_runtime::Portable;

#[test]
fn encode_and_decode_steps_allocate_nothing() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../models/moonshine");
    assert!(
        dir.join("base-en.safetensors").is_file(),
        "{}: run tools/moonshine/fetch.sh first",
        dir.display()
    );
    let mut t = Transcriber::on::<Portable>(MoonshineModel::open(&dir).unwrap()).unwrap();
    // Half a second under qemu, where the portable encoder is slow; 1.25 s elsewhere.
    let len = if cfg!(target_arch = "aarch64") { 8_000 } else { 20_000 };
    let audio: Vec<f32> = (0..len).map(|i| ((i * 7919) % 2001) as f32 / 4000.0 - 0.25).collect();
    let (r, n) = common::count_allocations(|| t.encode(&audio));
    assert!(r.unwrap() > 0);
    assert_eq!(n, 0, "encode allocated");
    let mut token = 1;
    for step in 0..5 {
        let (r, n) = common::count_allocations(|| t.decode_step(token).map(argmax));
        token = r.unwrap();
        assert_eq!(n, 0, "decoder step {step} allocated");
    }
    let mut tokens = Vec::with_capacity(64);
    let (r, n) = common::count_allocations(|| t.greedy(10, &mut tokens));
    r.unwrap();
    assert_eq!(n, 0, "greedy decoding allocated");
    assert!(tokens.len() >= 2 && tokens[0] == 1);
}
