//! Host criterion benchmark of one microWakeWord model step: `StreamPlan::run` of the
//! official `okay_nabu` and `hey_jarvis` models (models/microwakeword/) on one step's int8
//! input (N frames of 40 features), one thread, state carried from step to step, on every
//! backend this machine has: `Portable`, and on x86-64 `X86<Avx2>` and `X86<Avx512>` (their
//! int8 dot products on the fastest path the CPU has: AVX-VNNI / AVX-512 VNNI where present,
//! `DotPath::detect`). Time per iteration = time per model step (a step covers N x 10 ms of
//! audio, N = 3 for both models).
//!
//! The input cycles through 64 steps of fixed pseudo-random codes (the kernels' time does
//! not depend on the values). `cargo bench -p neon-benches --bench micro`; BENCHMARKS.md
//! section "microWakeWord int8 kernels on x86-64".

use std::time::Duration;

use criterion::{black_box, criterion_group, criterion_main, Criterion};
use neon_models::microwakeword::word::resolve;
use neon_runtime::exec::stream::StreamPlan;
use neon_runtime::kernels::Int8Kernels;
use neon_runtime::{BackendKind, BackendType, WithBackend};

/// The models timed (official, models/microwakeword/).
const MODELS: [&str; 2] = ["okay_nabu", "hey_jarvis"];

/// Steps of input cycled through.
const STEPS: usize = 64;

fn bench_micro(cr: &mut Criterion) {
    struct Body<'a>(&'a mut Criterion, &'a StreamPlan, &'a str);
    impl WithBackend for Body<'_> {
        type Output = ();
        fn run<B: neon_runtime::Backend>(self) {
            bench::<B>(self.0, self.1, self.2)
        }
    }
    for name in MODELS {
        let word = resolve(name).unwrap_or_else(|e| panic!("{name}: {e}"));
        for kind in BackendKind::available() {
            kind.with(Body(cr, word.plan(), name)).unwrap();
        }
    }
}

/// Times one step of `plan` (model `name`) on backend `B`.
fn bench<B: Int8Kernels + BackendType>(cr: &mut Criterion, plan: &StreamPlan, name: &str) {
    let n: usize = plan.input().1.iter().product();
    let mut seed = 0x2545_f491_u32;
    let inputs: Vec<i8> = (0..STEPS * n)
        .map(|_| {
            seed = seed.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            (seed >> 24) as u8 as i8
        })
        .collect();
    let (mut state, mut scratch) = (plan.state(), plan.scratch());
    let mut g = cr.benchmark_group(format!("micro_{name}"));
    g.sample_size(50).measurement_time(Duration::from_secs(3));
    let mut k = 0;
    g.bench_function(B::NAME, |bn| {
        bn.iter(|| {
            k = (k + 1) % STEPS;
            let x = black_box(&inputs[k * n..][..n]);
            let y: &[u8] = plan.run::<B, i8, u8>(&mut state, &mut scratch, x).unwrap();
            y[0]
        })
    });
    g.finish();
}

criterion_group!(benches, bench_micro);
criterion_main!(benches);
