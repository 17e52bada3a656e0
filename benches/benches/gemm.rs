//! Host criterion benchmarks: our packed GEMM (256³) and GEMV (1024²) next to
//! matrixmultiply's sgemm on the same problems, in the same run, so BENCHMARKS.md can report
//! ratios. Our weights are packed once beforehand (as a prepared operator holds them);
//! matrixmultiply packs both operands inside every call, which is part of its cost.
//!
//! On aarch64 the `Neon` backend is measured, elsewhere `Portable`.

use criterion::{black_box, criterion_group, criterion_main, Criterion, Throughput};
use neon_benches::data;
use neon_runtime::kernels::gemm::{pack_a, pack_b, packed_a_len, packed_b_len};
use neon_runtime::kernels::GemmKernels;

#[cfg(target_arch = "aarch64")]
type Fast = neon_runtime::Neon;
#[cfg(not(target_arch = "aarch64"))]
type Fast = neon_runtime::Portable;

/// matrixmultiply's `C = A · W^T` with `A` `m x k`, `W` `n x k` (read through strides).
fn mm_sgemm(m: usize, n: usize, k: usize, a: &[f32], w: &[f32], c: &mut [f32]) {
    assert!(a.len() >= m * k && w.len() >= n * k && c.len() >= m * n);
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
            w.as_ptr(),
            1,
            k as isize,
            0.0,
            c.as_mut_ptr(),
            n as isize,
            1,
        );
    }
}

fn bench_gemm(cr: &mut Criterion) {
    let s = 256;
    let (a, w, bias) = (data(s * s, 1), data(s * s, 2), data(s, 3));
    let mut pb = vec![0.0; packed_b_len(s, s)];
    pack_b(&w, s, s, &mut pb);
    let mut pa = vec![0.0; packed_a_len(s, s)];
    pack_a(&w, s, s, &mut pa);
    let mut c = vec![0.0; s * s];
    let mut g = cr.benchmark_group("sgemm_256");
    g.throughput(Throughput::Elements((2 * s * s * s) as u64));
    g.bench_function("ours_packed_b", |bch| {
        bch.iter(|| Fast::gemm_packed_b(s, s, s, black_box(&a), s, &pb, Some(&bias), &mut c, s))
    });
    g.bench_function("ours_packed_a", |bch| {
        bch.iter(|| Fast::gemm_packed_a(s, s, s, &pa, black_box(&a), s, Some(&bias), &mut c, s))
    });
    g.bench_function("matrixmultiply", |bch| {
        bch.iter(|| mm_sgemm(s, s, s, black_box(&a), &w, &mut c))
    });
    g.finish();
}

fn bench_gemv(cr: &mut Criterion) {
    let s = 1024;
    let (x, w, bias) = (data(s, 1), data(s * s, 2), data(s, 3));
    let mut pb = vec![0.0; packed_b_len(s, s)];
    pack_b(&w, s, s, &mut pb);
    let mut y = vec![0.0; s];
    let mut g = cr.benchmark_group("gemv_1024");
    g.throughput(Throughput::Elements((2 * s * s) as u64));
    g.bench_function("ours_gemv_packed_b", |bch| {
        bch.iter(|| Fast::gemv_packed_b(s, s, black_box(&x), &pb, Some(&bias), &mut y))
    });
    g.bench_function("matrixmultiply", |bch| {
        bch.iter(|| mm_sgemm(1, s, s, black_box(&x), &w, &mut y))
    });
    g.finish();
}

criterion_group!(benches, bench_gemm, bench_gemv);
criterion_main!(benches);
