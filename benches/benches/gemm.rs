//! Host criterion benchmarks: our packed GEMM (256³) and GEMV (1024²) next to
//! matrixmultiply's sgemm on the same problems, in the same run, so BENCHMARKS.md can report
//! ratios. Our weights are packed once beforehand (as a prepared operator holds them);
//! matrixmultiply packs both operands inside every call, which is part of its cost.
//!
//! `ours_*` is the fastest backend here: `Neon` on aarch64; on x86-64 the best `X86` level
//! this CPU has (`X86<Avx512>`, else `X86<Avx2>`, else `Portable`). On x86-64 every backend
//! the CPU runs is also measured under its own label: `x86_baseline_*` (`Portable`, the
//! plain-Rust kernels), `x86_avx2_*` (`X86<Avx2>`), `x86_avx512_*` (`X86<Avx512>`). The `cnn`
//! group times the packed-A products of the openWakeWord speech-embedding CNN's im2col convs
//! (`m` output channels, `n` pixels, `k` = 3 x input channels) and of Moonshine's stem convs
//! next to matrixmultiply.

use criterion::measurement::WallTime;
use criterion::{
    black_box, criterion_group, criterion_main, BenchmarkGroup, Criterion, Throughput,
};
use neon_benches::{data, Aligned};
use neon_runtime::kernels::gemm::{pack_a, pack_b, packed_a_len, packed_b_len, GemmA, GemmB};
use neon_runtime::kernels::GemmKernels;

/// `$bench::<B>($group, label, $data)` for every backend measured (see the module docs):
/// `ours`, then on x86-64 `x86_baseline`, `x86_avx2`, `x86_avx512` where the CPU has them.
macro_rules! each_backend {
    ($bench:ident, $group:expr, $data:expr) => {{
        #[cfg(target_arch = "aarch64")]
        $bench::<neon_runtime::Neon>($group, "ours", $data);
        #[cfg(not(target_arch = "aarch64"))]
        {
            use neon_runtime::kernels::cpu::X86Level;
            use neon_runtime::{Avx2, Avx512, Portable, X86};
            match X86Level::best() {
                Some(X86Level::Avx512) => $bench::<X86<Avx512>>($group, "ours", $data),
                Some(X86Level::Avx2) => $bench::<X86<Avx2>>($group, "ours", $data),
                None => $bench::<Portable>($group, "ours", $data),
            }
        }
        #[cfg(target_arch = "x86_64")]
        {
            use neon_runtime::kernels::cpu::X86Level;
            use neon_runtime::{Avx2, Avx512, Portable, X86};
            $bench::<Portable>($group, "x86_baseline", $data);
            if X86Level::Avx2.supported() {
                $bench::<X86<Avx2>>($group, "x86_avx2", $data);
            }
            if X86Level::Avx512.supported() {
                $bench::<X86<Avx512>>($group, "x86_avx512", $data);
            }
        }
    }};
}

/// matrixmultiply's `C = A · W^T` with `A` `m x k`, `W` `n x k` (read through strides).
fn mm_sgemm(m: usize, n: usize, k: usize, a: &[f32], w: &[f32], c: &mut [f32]) {
    mm_sgemm_rows(m, n, k, a, w, true, c);
}

/// matrixmultiply's `C = W · B` with `W` `m x k` and `B` `k x n`, both row-major.
fn mm_sgemm_nn(m: usize, n: usize, k: usize, w: &[f32], b: &[f32], c: &mut [f32]) {
    mm_sgemm_rows(m, n, k, w, b, false, c);
}

/// matrixmultiply's `C = A · B` with `A` `m x k` row-major and `B` `k x n`: row-major, or
/// with `b_transposed` stored `n x k` row-major (read through strides).
fn mm_sgemm_rows(
    m: usize,
    n: usize,
    k: usize,
    a: &[f32],
    b: &[f32],
    b_transposed: bool,
    c: &mut [f32],
) {
    assert!(a.len() >= m * k && b.len() >= k * n && c.len() >= m * n);
    let (rsb, csb) = if b_transposed { (1, k as isize) } else { (n as isize, 1) };
    // SAFETY: the extents asserted above cover every element the strides reach.
    unsafe {
        matrixmultiply::sgemm(
            m,
            k,
            n,
            1.0,
            a.as_ptr(),
            k as isize,
            1,
            b.as_ptr(),
            rsb,
            csb,
            0.0,
            c.as_mut_ptr(),
            n as isize,
            1,
        );
    }
}

/// The square problem of `sgemm_256`: `A`, both packed forms of `W`, the bias.
struct Square {
    s: usize,
    a: Vec<f32>,
    pb: Vec<f32>,
    pa: Vec<f32>,
    bias: Vec<f32>,
}

/// `<label>_packed_b` and `<label>_packed_a` on backend `B`.
fn sgemm<B: GemmKernels>(g: &mut BenchmarkGroup<'_, WallTime>, label: &str, d: &Square) {
    let s = d.s;
    let mut c = vec![0.0; s * s];
    g.bench_function(format!("{label}_packed_b"), |bch| {
        let gb = GemmB::contiguous(s, s, s);
        bch.iter(|| B::gemm_packed_b(gb, black_box(&d.a), &d.pb, Some(&d.bias), &mut c))
    });
    g.bench_function(format!("{label}_packed_a"), |bch| {
        let ga = GemmA::contiguous(s, s, s, s, s);
        bch.iter(|| B::gemm_packed_a(ga, &d.pa, black_box(&d.a), Some(&d.bias), &mut c))
    });
}

fn bench_gemm(cr: &mut Criterion) {
    let s = 256;
    let (a, w, bias) = (data(s * s, 1), data(s * s, 2), data(s, 3));
    let mut pb = vec![0.0; packed_b_len(s, s)];
    pack_b(&w, s, s, &mut pb);
    let mut pa = vec![0.0; packed_a_len(s, s)];
    pack_a(&w, s, s, &mut pa);
    let d = Square { s, a, pb, pa, bias };
    let mut c = vec![0.0; s * s];
    let mut g = cr.benchmark_group("sgemm_256");
    g.throughput(Throughput::Elements((2 * s * s * s) as u64));
    each_backend!(sgemm, &mut g, &d);
    g.bench_function("matrixmultiply", |bch| {
        bch.iter(|| mm_sgemm(s, s, s, black_box(&d.a), &w, &mut c))
    });
    g.finish();
}

/// The GEMV problem of `gemv_1024`: `x`, the packed `W`, the bias.
struct Gemv {
    s: usize,
    x: Vec<f32>,
    pb: Vec<f32>,
    bias: Vec<f32>,
}

/// `<label>_gemv_packed_b` on backend `B`.
fn gemv<B: GemmKernels>(g: &mut BenchmarkGroup<'_, WallTime>, label: &str, d: &Gemv) {
    let mut y = vec![0.0; d.s];
    g.bench_function(format!("{label}_gemv_packed_b"), |bch| {
        bch.iter(|| B::gemv_packed_b(d.s, d.s, black_box(&d.x), &d.pb, Some(&d.bias), &mut y))
    });
}

fn bench_gemv(cr: &mut Criterion) {
    let s = 1024;
    let (x, w, bias) = (data(s, 1), data(s * s, 2), data(s, 3));
    let mut pb = vec![0.0; packed_b_len(s, s)];
    pack_b(&w, s, s, &mut pb);
    let d = Gemv { s, x, pb, bias };
    let mut y = vec![0.0; s];
    let mut g = cr.benchmark_group("gemv_1024");
    g.throughput(Throughput::Elements((2 * s * s) as u64));
    each_backend!(gemv, &mut g, &d);
    g.bench_function("matrixmultiply", |bch| {
        bch.iter(|| mm_sgemm(1, s, s, black_box(&d.x), &w, &mut y))
    });
    g.finish();
}

/// Packed-A shapes `(m, n, k)`: the openWakeWord CNN's (`n` = output pixels T x F): 1x3
/// conv 24 -> 24 over 74x32 (`k = 72`), 48 -> 48 over 32x16 (`k = 144`), 72 -> 72 over
/// 28x8 (`k = 216`), 96 -> 96 over 10x4 (`k = 288`), the first conv (3x3, 1 -> 24); then
/// one 256-frame im2col tile of Moonshine's stem: conv2 (416 -> 832, kernel 7: `k =
/// 2912`) and conv1 (1 -> 416, kernel 127).
const CNN_SHAPES: [(usize, usize, usize); 7] = [
    (24, 2368, 72),
    (48, 512, 144),
    (72, 224, 216),
    (96, 40, 288),
    (24, 2368, 9),
    (832, 256, 2912),
    (416, 256, 127),
];

/// One CNN shape: `(m, n, k)`, the packed weights, `B`, the bias.
struct Cnn {
    shape: (usize, usize, usize),
    pa: Vec<f32>,
    b: Aligned,
    bias: Vec<f32>,
}

/// `<label>_packed_a/<shape>` on backend `B`.
fn cnn<B: GemmKernels>(g: &mut BenchmarkGroup<'_, WallTime>, label: &str, d: &Cnn) {
    let (m, n, k) = d.shape;
    let mut c = Aligned::zeros(m * n);
    g.bench_function(format!("{label}_packed_a/{m}x{n}x{k}"), |bch| {
        let ga = GemmA::contiguous(m, n, k, n, n);
        bch.iter(|| B::gemm_packed_a(ga, &d.pa, black_box(&d.b), Some(&d.bias), &mut c))
    });
}

fn bench_cnn(cr: &mut Criterion) {
    let mut g = cr.benchmark_group("cnn");
    for (m, n, k) in CNN_SHAPES {
        let (w, b, bias) = (data(m * k, 1), data(k * n, 2), data(m, 3));
        let mut pa = vec![0.0; packed_a_len(m, k)];
        pack_a(&w, m, k, &mut pa);
        let d = Cnn { shape: (m, n, k), pa, b: Aligned::from_slice(&b), bias };
        let mut c = vec![0.0; m * n];
        g.throughput(Throughput::Elements((2 * m * n * k) as u64));
        each_backend!(cnn, &mut g, &d);
        g.bench_function(format!("matrixmultiply/{m}x{n}x{k}"), |bch| {
            bch.iter(|| mm_sgemm_nn(m, n, k, &w, black_box(&d.b), &mut c))
        });
    }
    g.finish();
}

criterion_group!(benches, bench_gemm, bench_gemv, bench_cnn);
criterion_main!(benches);
