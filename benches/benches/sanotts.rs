//! Host criterion benchmark of the sanoTTS decoder with the built-in synthetic voice on one
//! second of audio (T = 125 frames of the test hidden states), one thread:
//!
//! - `whole_1s`: `Decoder::decode` of the 125 frames (the network, then the iSTFT);
//! - `stream_1s_push25` / `stream_1s_push5`: the same utterance through a `Vocoder` with
//!   block 1, in pushes of 25 frames (200 ms) or 5 frames (40 ms), then `finish`: the
//!   windows' context frames are computed again (about 41 per window), so smaller pushes
//!   cost more.
//!
//! The backend `neon vocode` runs, `BackendKind::best()`, chosen once; weights prepared
//! beforehand, no allocation in the timed calls. Time per iteration = time per second of
//! audio (the real-time factor is that time over 1 s).

use std::time::Duration;

use criterion::{black_box, criterion_group, criterion_main, Criterion};
use neon_benches::sanotts::{chunks, weights, SECOND};
use neon_models::sanotts::synthetic::hidden_states;
use neon_models::sanotts::utterance::Decoder;
use neon_models::sanotts::vocoder::Vocoder;
use neon_runtime::Backend;

fn bench_sanotts(cr: &mut Criterion) {
    neon_benches::bench_on_best_backend!(bench, cr);
}

fn bench<B: Backend>(cr: &mut Criterion) {
    let weights = weights();
    let t = SECOND;
    let hidden = hidden_states(t);
    let mut d = Decoder::on::<B>(weights.clone()).unwrap();
    let mut audio = vec![0.0; 128 * t];
    let mut g = cr.benchmark_group(format!("sanotts_{}", B::NAME));
    g.sample_size(30).measurement_time(Duration::from_secs(6));
    g.bench_function("whole_1s", |bn| {
        bn.iter(|| d.decode(black_box(&hidden), t, &mut audio).unwrap())
    });
    let mut v = Vocoder::on::<B>(weights).unwrap();
    let mut out = vec![0.0; 128 * (t + 64)];
    for push in [25, 5] {
        let pieces = chunks(&hidden, t, push);
        g.bench_function(format!("stream_1s_push{push}"), |bn| {
            bn.iter(|| {
                let mut n = 0;
                for (chunk, frames) in &pieces {
                    n += v.push(black_box(chunk), *frames, &mut out).unwrap();
                }
                n + v.finish(&mut out).unwrap()
            })
        });
    }
    g.finish();
}

criterion_group!(benches, bench_sanotts);
criterion_main!(benches);
