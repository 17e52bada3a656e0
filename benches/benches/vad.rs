//! Host criterion benchmark of Silero VAD per 512-sample window (32 ms of audio), one
//! thread, on the windows of `models/moonshine/clips/train_numbers.wav` in order (183, the
//! last zero-padded; the stream restarts at the end of the clip), the input of
//! `tools/silero_vad/bench_peer.py` (ONNX Runtime):
//!
//! - `push`: `Vad::push` of the next window's 512 samples (what `neon vad` runs per window);
//! - `window`: the compiled plan alone, `SileroVad::run` on the next window's 576 inputs
//!   and the carried `[2, 128]` state (what the peer's `session.run` computes);
//!
//! On `BackendKind::best()` (the backend `neon vad` runs) and on `Portable`. Weights
//! prepared beforehand, no allocation in the timed calls. Time per iteration = time per
//! window (the real-time factor is that time over 32 ms). `benches/vad-peer.sh` runs the
//! same workloads next to ONNX Runtime, alternating, and prints the ratios.

use std::time::Duration;

use criterion::{black_box, criterion_group, criterion_main, Criterion};
use neon_benches::vad::{clip, windows, STATE};
use neon_models::vad::detector::{Vad, VadModel};
use neon_models::vad::network::{SileroVad, SileroVadWorkspace};
use neon_models::vad::WINDOW;
use neon_runtime::{Backend, BackendKind, Portable, WithBackend};

fn bench_vad(cr: &mut Criterion) {
    struct Body<'a>(&'a mut Criterion);
    impl WithBackend for Body<'_> {
        type Output = ();
        fn run<B: Backend>(self) {
            bench::<B>(self.0)
        }
    }
    BackendKind::best().with(Body(cr)).unwrap();
    if BackendKind::best() != BackendKind::Portable {
        bench::<Portable>(cr);
    }
}

fn bench<B: Backend>(cr: &mut Criterion) {
    let model = VadModel::builtin().unwrap();
    let samples = clip();
    let inputs = windows(&samples);
    let n = inputs.len();
    let mut g = cr.benchmark_group(format!("vad_{}", B::NAME));
    g.sample_size(50).measurement_time(Duration::from_secs(4));

    let mut vad = Vad::new(model.clone(), B::KIND).unwrap();
    let mut k = 0;
    g.bench_function("push", |bn| {
        bn.iter(|| {
            if k == n {
                vad.reset();
                k = 0;
            }
            let mut p = 0.0;
            vad.push(black_box(&samples[k * WINDOW..(k + 1) * WINDOW]), |v| p = v).unwrap();
            k += 1;
            p
        })
    });

    let mut ws = Box::new(SileroVadWorkspace::new());
    let mut state = [0.0f32; STATE];
    let mut p = [0.0f32];
    let mut k = 0;
    g.bench_function("window", |bn| {
        bn.iter(|| {
            if k == n {
                state = [0.0; STATE];
                k = 0;
            }
            SileroVad::run::<B, _>(
                &model.weights,
                black_box(&inputs[k]),
                &mut p,
                &mut state,
                &mut ws,
            )
            .unwrap();
            k += 1;
            p[0]
        })
    });

    g.finish();
}

criterion_group!(benches, bench_vad);
criterion_main!(benches);
