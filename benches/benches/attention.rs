//! Host criterion benchmarks of the attention and rotary kernels at Moonshine base's shapes
//! (8 heads x head_dim 52): the encoder's self-attention (413 x 413), a decoder step's
//! cross-attention (1 x 400) and self-attention (1 x 200, causal), and the rotary
//! embedding of 413 frames.
//!
//! On aarch64 the `Neon` backend is measured, elsewhere `Portable` (`<shape>`); on x86-64
//! also the attention of each x86 level the CPU supports (`X86<Avx2>`, `X86<Avx512>`:
//! `x86_<level>/<shape>`).

use criterion::measurement::WallTime;
use criterion::{
    black_box, criterion_group, criterion_main, BenchmarkGroup, Criterion, Throughput,
};
use neon_benches::data;
use neon_runtime::kernels::attention::AttentionGeometry;
use neon_runtime::kernels::cpu::X86Level;
use neon_runtime::kernels::rotary::{inv_freq, RotaryFrames, RotaryPairs};
use neon_runtime::kernels::{AttentionKernels, Avx2, Avx512, RotaryKernels, X86};

#[cfg(target_arch = "aarch64")]
type Fast = neon_runtime::Neon;
#[cfg(not(target_arch = "aarch64"))]
type Fast = neon_runtime::Portable;

const HEADS: usize = 8;
const HEAD_DIM: usize = 52;
const C: usize = HEADS * HEAD_DIM;

/// One attention shape timed with backend `B` under `label`.
fn bench<B: AttentionKernels>(g: &mut BenchmarkGroup<'_, WallTime>, label: &str, shape: Shape) {
    let (qf, len, causal) = shape;
    let (q, k, v) = (data(qf * C, 1), data(len * C, 2), data(len * C, 3));
    let mut out = vec![0.0; qf * C];
    let scale = 1.0 / (HEAD_DIM as f32).sqrt();
    let geo =
        AttentionGeometry { q_frames: qf, len, heads: HEADS, head_dim: HEAD_DIM, scale, causal };
    g.bench_function(label, |b| b.iter(|| B::attention(black_box(&q), &k, &v, &mut out, geo)));
}

/// `(q_frames, len, causal)`.
type Shape = (usize, usize, bool);

fn attention(c: &mut Criterion) {
    let mut g = c.benchmark_group("attention");
    for (name, qf, len, causal) in [
        ("encoder_413x413", 413, 413, false),
        ("cross_1x400", 1, 400, false),
        ("self_1x200", 1, 200, true),
    ] {
        g.throughput(Throughput::Elements((4 * qf * len * C) as u64));
        bench::<Fast>(&mut g, name, (qf, len, causal));
        if X86Level::Avx2.supported() {
            bench::<X86<Avx2>>(&mut g, &format!("x86_avx2/{name}"), (qf, len, causal));
        }
        if X86Level::Avx512.supported() {
            bench::<X86<Avx512>>(&mut g, &format!("x86_avx512/{name}"), (qf, len, causal));
        }
    }
    g.finish();
}

fn rotary(c: &mut Criterion) {
    let w = inv_freq(10000.0, 32);
    let mut x = data(413 * C, 4);
    c.bench_function("rotary_413", |b| {
        b.iter(|| {
            let f = RotaryFrames { frames: 413, heads: HEADS, head_dim: HEAD_DIM, at: 0 };
            Fast::rotary(black_box(&mut x), f, &w[..16], RotaryPairs::Interleaved)
        })
    });
}

criterion_group!(benches, attention, rotary);
criterion_main!(benches);
