//! Host criterion benchmarks of the int8-weight kernels on Moonshine base's shapes, next
//! to the f32 kernels on the same shapes, and the memory bandwidth they are bound by.
//!
//! - `decoder_gemv/*`: one GEMV of each decoder shape (`k -> n`: 416 -> 416 attention
//!   projections, 416 -> 3328 MLP up, 1664 -> 416 MLP down, 416 -> 32768 tied LM head),
//!   weights already in cache after the first call (throughput: bytes of weights, int8 or
//!   f32, so criterion prints the GB/s streamed).
//! - `decoder_step/*`: a whole decoder step's GEMVs (48 x 416 -> 416, 8 x 416 -> 3328,
//!   8 x 1664 -> 416, the LM head), every matrix its own buffer (38.5 MB of int8 weights,
//!   154 MB as f32): more than the last-level cache, so each step streams its weights
//!   from memory as a real decoder does.
//! - `memory/*`: one pass summing a 256 MB array (the machine's single-thread read
//!   bandwidth from DRAM) and a 38.5 MB one (the step's weights, partly served by the
//!   last-level cache when read again and again: the floor of `decoder_step`), on x86-64
//!   also with the GEMV's software prefetch.
//! - `encoder_gemm/*`: Moonshine's encoder products, 413 frames (`m x k -> n`).
//!
//! On aarch64 the `Neon` backend is measured, elsewhere `Portable`; on x86-64 each
//! supported level of the portable backend is also measured explicitly (`x86_<level>`).

use criterion::{black_box, criterion_group, criterion_main, Criterion, Throughput};
use neon_benches::data;
use neon_runtime::kernels::gemm::{pack_b, packed_b_len, GemmB};
use neon_runtime::kernels::quant::{pack_i8, packed_i8_len};
use neon_runtime::kernels::{GemmKernels, QuantKernels};

#[cfg(target_arch = "aarch64")]
type Fast = neon_runtime::Neon;
#[cfg(not(target_arch = "aarch64"))]
type Fast = neon_runtime::Portable;

/// Moonshine's per-tensor parameters (a scale and an offset of `-20 * scale`).
const SCALE: f32 = 4e-3;
const OFFSET: f32 = -20.0 * SCALE;

/// The decoder step's GEMVs: `(n, k, count per step)`.
const STEP: [(usize, usize, usize); 4] =
    [(416, 416, 48), (3328, 416, 8), (416, 1664, 8), (32768, 416, 1)];

/// The x86-64 levels of the portable backend that this CPU supports.
#[cfg(target_arch = "x86_64")]
fn x86_levels() -> Vec<neon_runtime::kernels::gemm::x86::Level> {
    use neon_runtime::kernels::gemm::x86::Level;
    Level::ALL.into_iter().filter(|l| l.supported()).collect()
}

/// `q[n, k]` packed, deterministic codes from `seed`.
fn packed_i8(n: usize, k: usize, seed: u32) -> Vec<i8> {
    let q: Vec<i8> = data(n * k, seed).iter().map(|&v| (v * 127.0) as i8).collect();
    let mut b = vec![0; packed_i8_len(n, k)];
    pack_i8(&q, n, k, &mut b);
    b
}

/// `w[n, k]` packed for the f32 GEMM, deterministic values from `seed`.
fn packed_f32(n: usize, k: usize, seed: u32) -> Vec<f32> {
    let mut b = vec![0.0; packed_b_len(n, k)];
    pack_b(&data(n * k, seed), n, k, &mut b);
    b
}

fn bench_gemv(cr: &mut Criterion) {
    let mut g = cr.benchmark_group("decoder_gemv");
    for (n, k, _) in STEP {
        let (x, bias) = (data(k, 1), data(n, 3));
        let (b8, b32) = (packed_i8(n, k, 2), packed_f32(n, k, 2));
        let mut y = vec![0.0; n];
        let shape = format!("{k}x{n}");
        g.throughput(Throughput::Bytes((n * k) as u64));
        g.bench_function(format!("i8/{shape}"), |bch| {
            bch.iter(|| Fast::gemv_i8(n, k, black_box(&x), &b8, SCALE, OFFSET, Some(&bias), &mut y))
        });
        #[cfg(target_arch = "x86_64")]
        for level in x86_levels() {
            use neon_runtime::kernels::quant::x86;
            g.bench_function(format!("x86_{}_i8/{shape}", level.name()), |bch| {
                // SAFETY: `level` is supported (x86_levels).
                bch.iter(|| unsafe {
                    x86::gemv_i8(
                        level,
                        n,
                        k,
                        black_box(&x),
                        &b8,
                        SCALE,
                        OFFSET,
                        Some(&bias),
                        &mut y,
                    )
                })
            });
        }
        g.throughput(Throughput::Bytes((4 * n * k) as u64));
        g.bench_function(format!("f32/{shape}"), |bch| {
            bch.iter(|| Fast::gemv_packed_b(n, k, black_box(&x), &b32, Some(&bias), &mut y))
        });
    }
    g.finish();
}

fn bench_step(cr: &mut Criterion) {
    let mut g = cr.benchmark_group("decoder_step");
    g.sample_size(30);
    let shapes: Vec<(usize, usize)> =
        STEP.iter().flat_map(|&(n, k, count)| (0..count).map(move |_| (n, k))).collect();
    let x = data(1664, 1);
    let mut y = vec![0.0; 32768];
    let b8: Vec<Vec<i8>> =
        shapes.iter().enumerate().map(|(i, &(n, k))| packed_i8(n, k, 10 + i as u32)).collect();
    let bytes: usize = shapes.iter().map(|&(n, k)| n * k).sum();
    g.throughput(Throughput::Bytes(bytes as u64));
    g.bench_function("i8", |bch| {
        bch.iter(|| {
            for (&(n, k), b) in shapes.iter().zip(&b8) {
                Fast::gemv_i8(n, k, black_box(&x[..k]), b, SCALE, OFFSET, None, &mut y[..n]);
            }
        })
    });
    #[cfg(target_arch = "x86_64")]
    for level in x86_levels() {
        use neon_runtime::kernels::quant::x86;
        g.bench_function(format!("x86_{}_i8", level.name()), |bch| {
            bch.iter(|| {
                for (&(n, k), b) in shapes.iter().zip(&b8) {
                    let (x, y) = (black_box(&x[..k]), &mut y[..n]);
                    // SAFETY: `level` is supported (x86_levels).
                    unsafe { x86::gemv_i8(level, n, k, x, b, SCALE, OFFSET, None, y) };
                }
            })
        });
    }
    drop(b8);
    let b32: Vec<Vec<f32>> =
        shapes.iter().enumerate().map(|(i, &(n, k))| packed_f32(n, k, 10 + i as u32)).collect();
    g.throughput(Throughput::Bytes(4 * bytes as u64));
    g.bench_function("f32", |bch| {
        bch.iter(|| {
            for (&(n, k), b) in shapes.iter().zip(&b32) {
                Fast::gemv_packed_b(n, k, black_box(&x[..k]), b, None, &mut y[..n]);
            }
        })
    });
    g.finish();
}

/// Prefetches the cache line at `p` into L1 (x86-64; nothing elsewhere).
#[inline(always)]
fn prefetch_line(p: *const i8) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: prefetching has no architectural effect (and never faults).
    unsafe {
        core::arch::x86_64::_mm_prefetch::<{ core::arch::x86_64::_MM_HINT_T0 }>(p)
    };
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

/// Sum of `v` in 8 independent lanes (vectorised by LLVM; on x86-64 with AVX2 when the
/// CPU has it): one read of every byte, nothing else. On x86-64 with `prefetch > 0`, each
/// 64-byte line also prefetches the line `prefetch` bytes ahead (as the int8 GEMV does).
fn sum_lanes(v: &[u64], prefetch: usize) -> u64 {
    #[inline(always)]
    fn body(v: &[u64], prefetch: usize) -> u64 {
        let mut acc = [0u64; 8];
        for (i, chunk) in v.chunks_exact(8).enumerate() {
            if prefetch > 0 {
                prefetch_line(v.as_ptr().wrapping_add(8 * i).cast::<i8>().wrapping_add(prefetch));
            }
            for (a, &x) in acc.iter_mut().zip(chunk) {
                *a = a.wrapping_add(x);
            }
        }
        acc.iter().fold(0, |s, &a| s.wrapping_add(a))
    }
    #[cfg(target_arch = "x86_64")]
    {
        #[target_feature(enable = "avx2")]
        fn avx2(v: &[u64], prefetch: usize) -> u64 {
            body(v, prefetch)
        }
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU has AVX2 (checked above).
            return unsafe { avx2(v, prefetch) };
        }
    }
    body(v, prefetch)
}

fn bench_memory(cr: &mut Criterion) {
    let mut g = cr.benchmark_group("memory");
    g.sample_size(20);
    let v: Vec<u64> = (0..(256 << 20) / 8).collect();
    // 256 MB: from DRAM only; 38.5 MB: the decoder step's weights, partly in the
    // last-level cache when read again and again.
    for (name, len) in [("read_256mb", 256 << 20), ("read_38.5mb", 38_551_552)] {
        let v = &v[..len / 8];
        g.throughput(Throughput::Bytes(len as u64));
        g.bench_function(name, |bch| bch.iter(|| sum_lanes(black_box(v), 0)));
        #[cfg(target_arch = "x86_64")]
        g.bench_function(format!("{name}_prefetch_16k"), |bch| {
            bch.iter(|| sum_lanes(black_box(v), 16384))
        });
    }
    g.finish();
}

fn bench_gemm(cr: &mut Criterion) {
    let mut g = cr.benchmark_group("encoder_gemm");
    g.sample_size(20);
    let m = 413;
    for (n, k) in [(1664, 416), (416, 1664), (416, 416)] {
        let (a, bias) = (data(m * k, 1), data(n, 3));
        let (b8, b32) = (packed_i8(n, k, 2), packed_f32(n, k, 2));
        let mut c = vec![0.0; m * n];
        let shape = format!("{m}x{k}x{n}");
        g.throughput(Throughput::Elements((2 * m * n * k) as u64));
        g.bench_function(format!("i8/{shape}"), |bch| {
            bch.iter(|| {
                Fast::gemm_i8(m, n, k, black_box(&a), k, &b8, SCALE, OFFSET, Some(&bias), &mut c, n)
            })
        });
        #[cfg(target_arch = "x86_64")]
        for level in x86_levels() {
            use neon_runtime::kernels::quant::x86;
            g.bench_function(format!("x86_{}_i8/{shape}", level.name()), |bch| {
                // SAFETY: `level` is supported (x86_levels).
                bch.iter(|| unsafe {
                    let a = black_box(&a);
                    x86::gemm_i8(level, m, n, k, a, k, &b8, SCALE, OFFSET, Some(&bias), &mut c, n)
                })
            });
        }
        g.bench_function(format!("f32/{shape}"), |bch| {
            bch.iter(|| {
                let g = GemmB::contiguous(m, n, k);
                Fast::gemm_packed_b(g, black_box(&a), &b32, Some(&bias), &mut c)
            })
        });
    }
    g.finish();
}

criterion_group!(benches, bench_gemv, bench_step, bench_memory, bench_gemm);
criterion_main!(benches);
