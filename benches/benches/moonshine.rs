//! Host criterion benchmark of Moonshine base-en on beckett.wav (9.96 s, 413 encoder frames),
//! the input of the ONNX Runtime peer script `tools/moonshine/bench_peers.py`:
//!
//! - `encoder`: one `Transcriber::encode` of the whole clip (the stem, 8 layers, the final
//!   norm and the cross-attention keys and values of the 8 decoder layers, which ONNX Runtime
//!   computes in its first decoder step instead);
//! - `decoder_step`: one cached `Transcriber::decode_step` at position 7 (fed the 8th token of
//!   beckett's greedy sequence, 8 self-attention keys, 413 cross-attention frames). Every
//!   measured step runs at that position: before each, decoding restarts and the 7 tokens
//!   before it are fed untimed (`iter_custom`).
//!
//! The backend `neon transcribe` runs, `BackendKind::best()` (`Neon` on aarch64, the best
//! `X86` level of the CPU on x86-64), chosen once; one thread; weights prepared beforehand, no allocation in the timed calls. When
//! the model is missing (`tools/moonshine/fetch.sh` creates it), the bench prints why and
//! measures nothing.

use std::time::{Duration, Instant};

use criterion::{black_box, criterion_group, criterion_main, Criterion};
use neon_audio::Audio;
use neon_benches::moonshine::{model_path, open, prefill, BECKETT_TOKENS, STEP_POSITION};
use neon_runtime::Backend;

fn bench_moonshine(cr: &mut Criterion) {
    neon_benches::bench_on_best_backend!(bench, cr);
}

fn bench<B: Backend>(cr: &mut Criterion) {
    let mut t = match open::<B>() {
        Ok(t) => t,
        Err(e) => {
            eprintln!("moonshine bench skipped: {e}");
            return;
        }
    };
    let audio = Audio::open(model_path("beckett.wav")).expect("beckett.wav");
    let samples = audio.samples;
    // The decoder step's position is the greedy sequence's, as ONNX Runtime's.
    t.encode(&samples).unwrap();
    let mut tokens = Vec::new();
    t.greedy(64, &mut tokens).unwrap();
    assert_eq!(tokens, BECKETT_TOKENS, "beckett transcript");

    let mut g = cr.benchmark_group("moonshine");
    g.sample_size(20).measurement_time(Duration::from_secs(8));
    g.bench_function("encoder", |bn| bn.iter(|| t.encode(black_box(&samples)).unwrap()));
    // Each measured step costs 8 (7 untimed, not in criterion's clock): shorter targets keep
    // the wall time near 40 s.
    g.warm_up_time(Duration::from_secs(1)).measurement_time(Duration::from_secs(4));
    t.encode(&samples).unwrap();
    g.bench_function("decoder_step", |bn| {
        bn.iter_custom(|iters| {
            let mut spent = Duration::ZERO;
            for _ in 0..iters {
                prefill(&mut t, STEP_POSITION);
                let start = Instant::now();
                black_box(t.decode_step(black_box(BECKETT_TOKENS[STEP_POSITION])).unwrap());
                spent += start.elapsed();
            }
            spent
        })
    });
    g.finish();
}

criterion_group!(benches, bench_moonshine);
criterion_main!(benches);
