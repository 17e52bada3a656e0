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
//! The int8 rows run on every backend this machine has: `i8` is the best one
//! (`BackendKind::best`: `Neon` on aarch64, the best `X86` level on x86-64), then on x86-64
//! `x86_<level>_i8` for each supported level (`X86<Avx2>`, `X86<Avx512>`) and
//! `portable_i8` (plain Rust). The f32 rows run on the best backend.

use criterion::measurement::WallTime;
use criterion::{
    black_box, criterion_group, criterion_main, Bencher, BenchmarkGroup, Criterion, Throughput,
};
use neon_benches::data;
use neon_runtime::kernels::cpu::X86Level;
use neon_runtime::kernels::gemm::{pack_b, packed_b_len, GemmB};
use neon_runtime::kernels::quant::{pack_i8, packed_i8_len, QuantFormat, QuantGemm, QuantWeights};
use neon_runtime::{Backend, BackendKind, WithBackend};

/// Moonshine's per-tensor parameters (a scale and an offset of `-20 * scale`).
const FORMAT: QuantFormat<'static> = QuantFormat::PerTensor { scale: SCALE, offset: -20.0 * SCALE };
const SCALE: f32 = 4e-3;

/// The decoder step's GEMVs: `(n, k, count per step)`.
const STEP: [(usize, usize, usize); 4] =
    [(416, 416, 48), (3328, 416, 8), (416, 1664, 8), (32768, 416, 1)];

/// The backends of the int8 rows and their labels: the best as `i8`, each supported x86
/// level as `x86_<level>_i8`, the portable one as `portable_i8`.
fn backends() -> Vec<(String, BackendKind)> {
    let mut v = vec![("i8".to_string(), BackendKind::best())];
    for level in X86Level::available() {
        v.push((format!("x86_{}_i8", level.name()), BackendKind::X86(level)));
    }
    v.push(("portable_i8".to_string(), BackendKind::Portable));
    v
}

/// A benchmark's routine, made by a [`WithBackend`] for its backend.
type Routine<'a> = Box<dyn FnMut(&mut Bencher<'_>) + 'a>;

/// Benchmarks `bench` on each of [`backends`]: rows `<label><suffix>`.
fn each_backend<'a, W>(g: &mut BenchmarkGroup<'_, WallTime>, suffix: &str, bench: W)
where
    W: WithBackend<Output = Routine<'a>> + Copy,
{
    for (label, kind) in backends() {
        let routine = kind.with(bench).expect("an available backend");
        g.bench_function(format!("{label}{suffix}"), routine);
    }
}

/// Benchmarks `bench` on the best backend: row `name`.
fn best_backend<'a, W>(g: &mut BenchmarkGroup<'_, WallTime>, name: &str, bench: W)
where
    W: WithBackend<Output = Routine<'a>>,
{
    g.bench_function(name, BackendKind::best().with(bench).expect("the best backend"));
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

/// One int8 GEMV (`y = W x + bias`); with `b32`, the f32 GEMV on those weights instead.
#[derive(Clone, Copy)]
struct Gemv<'a> {
    x: &'a [f32],
    b8: &'a [i8],
    b32: Option<&'a [f32]>,
    bias: &'a [f32],
}

impl<'a> WithBackend for Gemv<'a> {
    type Output = Routine<'a>;
    fn run<B: Backend>(self) -> Routine<'a> {
        let (n, k, x, bias) = (self.bias.len(), self.x.len(), self.x, Some(self.bias));
        let mut y = vec![0.0; n];
        match self.b32 {
            None => Box::new(move |bch| {
                let w = QuantWeights { packed: self.b8, format: FORMAT, bias };
                bch.iter(|| B::gemv_i8(n, k, black_box(x), w, &mut y))
            }),
            Some(b32) => Box::new(move |bch| {
                bch.iter(|| B::gemv_packed_b(n, k, black_box(x), b32, bias, &mut y))
            }),
        }
    }
}

fn bench_gemv(cr: &mut Criterion) {
    let mut g = cr.benchmark_group("decoder_gemv");
    for (n, k, _) in STEP {
        let (x, bias) = (data(k, 1), data(n, 3));
        let (b8, b32) = (packed_i8(n, k, 2), packed_f32(n, k, 2));
        let shape = format!("{k}x{n}");
        let gemv = Gemv { x: &x, b8: &b8, b32: None, bias: &bias };
        g.throughput(Throughput::Bytes((n * k) as u64));
        each_backend(&mut g, &format!("/{shape}"), gemv);
        g.throughput(Throughput::Bytes((4 * n * k) as u64));
        best_backend(&mut g, &format!("f32/{shape}"), Gemv { b32: Some(&b32), ..gemv });
    }
    g.finish();
}

/// A whole decoder step's GEMVs (`shapes`, one weight buffer each): int8 weights `b8`, or
/// with `b32` the f32 GEMVs.
#[derive(Clone, Copy)]
struct Step<'a> {
    shapes: &'a [(usize, usize)],
    b8: &'a [Vec<i8>],
    b32: Option<&'a [Vec<f32>]>,
}

impl<'a> WithBackend for Step<'a> {
    type Output = Routine<'a>;
    fn run<B: Backend>(self) -> Routine<'a> {
        let x = data(1664, 1);
        let mut y = vec![0.0; 32768];
        let Step { shapes, b8, b32 } = self;
        match b32 {
            None => Box::new(move |bch| {
                bch.iter(|| {
                    for (&(n, k), b) in shapes.iter().zip(b8) {
                        let (x, y) = (black_box(&x[..k]), &mut y[..n]);
                        B::gemv_i8(
                            n,
                            k,
                            x,
                            QuantWeights { packed: b, format: FORMAT, bias: None },
                            y,
                        );
                    }
                })
            }),
            Some(b32) => Box::new(move |bch| {
                bch.iter(|| {
                    for (&(n, k), b) in shapes.iter().zip(b32) {
                        B::gemv_packed_b(n, k, black_box(&x[..k]), b, None, &mut y[..n]);
                    }
                })
            }),
        }
    }
}

fn bench_step(cr: &mut Criterion) {
    let mut g = cr.benchmark_group("decoder_step");
    g.sample_size(30);
    let shapes: Vec<(usize, usize)> =
        STEP.iter().flat_map(|&(n, k, count)| (0..count).map(move |_| (n, k))).collect();
    let b8: Vec<Vec<i8>> =
        shapes.iter().enumerate().map(|(i, &(n, k))| packed_i8(n, k, 10 + i as u32)).collect();
    let bytes: usize = shapes.iter().map(|&(n, k)| n * k).sum();
    g.throughput(Throughput::Bytes(bytes as u64));
    each_backend(&mut g, "", Step { shapes: &shapes, b8: &b8, b32: None });
    drop(b8);
    let b32: Vec<Vec<f32>> =
        shapes.iter().enumerate().map(|(i, &(n, k))| packed_f32(n, k, 10 + i as u32)).collect();
    g.throughput(Throughput::Bytes(4 * bytes as u64));
    best_backend(&mut g, "f32", Step { shapes: &shapes, b8: &[], b32: Some(&b32) });
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

/// One encoder GEMM (`m x k -> n`, `C = A W^T + bias`): int8 weights `b8`, or with `b32`
/// the f32 GEMM.
#[derive(Clone, Copy)]
struct Gemm<'a> {
    m: usize,
    a: &'a [f32],
    b8: &'a [i8],
    b32: Option<&'a [f32]>,
    bias: &'a [f32],
}

impl<'a> WithBackend for Gemm<'a> {
    type Output = Routine<'a>;
    fn run<B: Backend>(self) -> Routine<'a> {
        let (m, n, a, bias) = (self.m, self.bias.len(), self.a, Some(self.bias));
        let k = a.len() / m;
        let mut c = vec![0.0; m * n];
        match self.b32 {
            None => Box::new(move |bch| {
                let geometry = QuantGemm::contiguous(m, n, k);
                let w = QuantWeights { packed: self.b8, format: FORMAT, bias };
                bch.iter(|| B::gemm_i8(geometry, black_box(a), w, &mut c))
            }),
            Some(b32) => Box::new(move |bch| {
                bch.iter(|| {
                    B::gemm_packed_b(GemmB::contiguous(m, n, k), black_box(a), b32, bias, &mut c)
                })
            }),
        }
    }
}

fn bench_gemm(cr: &mut Criterion) {
    let mut g = cr.benchmark_group("encoder_gemm");
    g.sample_size(20);
    let m = 413;
    for (n, k) in [(1664, 416), (416, 1664), (416, 416)] {
        let (a, bias) = (data(m * k, 1), data(n, 3));
        let (b8, b32) = (packed_i8(n, k, 2), packed_f32(n, k, 2));
        let shape = format!("{m}x{k}x{n}");
        let gemm = Gemm { m, a: &a, b8: &b8, b32: None, bias: &bias };
        g.throughput(Throughput::Elements((2 * m * n * k) as u64));
        each_backend(&mut g, &format!("/{shape}"), gemm);
        best_backend(&mut g, &format!("f32/{shape}"), Gemm { b32: Some(&b32), ..gemm });
    }
    g.finish();
}

criterion_group!(benches, bench_gemv, bench_step, bench_memory, bench_gemm);
criterion_main!(benches);
