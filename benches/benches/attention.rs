//! Host criterion benchmarks of the attention and rotary kernels at Moonshine base's shapes
//! (8 heads x head_dim 52): the encoder's self-attention (413 x 413), a decoder step's
//! cross-attention (1 x 400) and self-attention (1 x 200, causal), and the rotary
//! embedding of 413 frames.
//!
//! On aarch64 the `Neon` backend is measured, elsewhere `Portable` (on x86-64 with feature
//! `std`: at the level the CPU has); on x86-64 each supported level of the portable
//! attention is also measured explicitly (`x86_<level>/<shape>`).

use criterion::{black_box, criterion_group, criterion_main, Criterion, Throughput};
use neon_benches::data;
use neon_runtime::kernels::rotary::{inv_freq, RotaryFrames, RotaryPairs};
use neon_runtime::kernels::{AttentionKernels, RotaryKernels};

#[cfg(target_arch = "aarch64")]
type Fast = neon_runtime::Neon;
#[cfg(not(target_arch = "aarch64"))]
type Fast = neon_runtime::Portable;

const HEADS: usize = 8;
const HEAD_DIM: usize = 52;
const C: usize = HEADS * HEAD_DIM;

/// The x86-64 levels of the portable backend that this CPU supports.
#[cfg(target_arch = "x86_64")]
fn x86_levels() -> Vec<neon_runtime::kernels::gemm::x86::Level> {
    use neon_runtime::kernels::gemm::x86::Level;
    Level::ALL.into_iter().filter(|l| l.supported()).collect()
}

fn attention(c: &mut Criterion) {
    let mut g = c.benchmark_group("attention");
    for (name, qf, len, causal) in [
        ("encoder_413x413", 413, 413, false),
        ("cross_1x400", 1, 400, false),
        ("self_1x200", 1, 200, true),
    ] {
        let (q, k, v) = (data(qf * C, 1), data(len * C, 2), data(len * C, 3));
        let mut out = vec![0.0; qf * C];
        let scale = 1.0 / (HEAD_DIM as f32).sqrt();
        g.throughput(Throughput::Elements((4 * qf * len * C) as u64));
        g.bench_function(name, |b| {
            b.iter(|| {
                Fast::attention(
                    black_box(&q),
                    &k,
                    &v,
                    &mut out,
                    qf,
                    len,
                    HEADS,
                    HEAD_DIM,
                    scale,
                    causal,
                )
            })
        });
        #[cfg(target_arch = "x86_64")]
        for level in x86_levels() {
            use neon_runtime::kernels::attention::x86;
            g.bench_function(format!("x86_{}/{name}", level.name()), |b| {
                b.iter(|| {
                    // SAFETY: `level` is supported (x86_levels).
                    unsafe {
                        x86::attention(
                            level,
                            black_box(&q),
                            &k,
                            &v,
                            &mut out,
                            qf,
                            len,
                            HEADS,
                            HEAD_DIM,
                            scale,
                            causal,
                        )
                    }
                })
            });
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
