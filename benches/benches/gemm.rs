//! Host criterion benchmarks: our packed GEMM (256³) and GEMV (1024²) next to
//! matrixmultiply's sgemm on the same problems, in the same run, so BENCHMARKS.md can report
//! ratios. Our weights are packed once beforehand (as a prepared operator holds them);
//! matrixmultiply packs both operands inside every call, which is part of its cost.
//!
//! On aarch64 the `Neon` backend is measured, elsewhere `Portable` (on x86-64 with run-time
//! detection: AVX-512F or AVX2 + FMA kernels). On x86-64 each supported level of the
//! portable backend is also measured explicitly (`x86_<level>_*`), and the `cnn` group
//! times the packed-A products of the openWakeWord speech-embedding CNN's im2col convs
//! (`m` output channels, `n` pixels, `k` = 3 x input channels) next to matrixmultiply.

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

/// matrixmultiply's `C = W · B` with `W` `m x k` and `B` `k x n`, both row-major.
fn mm_sgemm_nn(m: usize, n: usize, k: usize, w: &[f32], b: &[f32], c: &mut [f32]) {
    assert!(w.len() >= m * k && b.len() >= k * n && c.len() >= m * n);
    // SAFETY: the extents asserted above cover every element the strides reach.
    unsafe {
        matrixmultiply::sgemm(
            m,
            k,
            n,
            1.0,
            w.as_ptr(),
            k as isize,
            1,
            b.as_ptr(),
            n as isize,
            1,
            0.0,
            c.as_mut_ptr(),
            n as isize,
            1,
        );
    }
}

/// The x86-64 levels of the portable backend that this CPU supports.
#[cfg(target_arch = "x86_64")]
fn x86_levels() -> Vec<neon_runtime::kernels::gemm::x86::Level> {
    use neon_runtime::kernels::gemm::x86::Level;
    Level::ALL.into_iter().filter(|l| l.supported()).collect()
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
    #[cfg(target_arch = "x86_64")]
    for level in x86_levels() {
        use neon_runtime::kernels::gemm::x86;
        g.bench_function(format!("x86_{}_packed_b", level.name()), |bch| {
            // SAFETY: `level` is supported (x86_levels).
            bch.iter(|| unsafe {
                x86::gemm_packed_b(level, s, s, s, black_box(&a), s, &pb, Some(&bias), &mut c, s)
            })
        });
        g.bench_function(format!("x86_{}_packed_a", level.name()), |bch| {
            // SAFETY: `level` is supported (x86_levels).
            bch.iter(|| unsafe {
                x86::gemm_packed_a(level, s, s, s, &pa, black_box(&a), s, Some(&bias), &mut c, s)
            })
        });
    }
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
    #[cfg(target_arch = "x86_64")]
    for level in x86_levels() {
        use neon_runtime::kernels::gemm::x86;
        g.bench_function(format!("x86_{}_gemv_packed_b", level.name()), |bch| {
            // SAFETY: `level` is supported (x86_levels).
            bch.iter(|| unsafe {
                x86::gemv_packed_b(level, s, s, black_box(&x), &pb, Some(&bias), &mut y)
            })
        });
    }
    g.finish();
}

/// The openWakeWord CNN's packed-A shapes `(m, n, k)` (`n` = output pixels T x F):
/// 1x3 conv 24 -> 24 over 74x32 (`k = 72`), 48 -> 48 over 32x16 (`k = 144`), 72 -> 72 over
/// 28x8 (`k = 216`), 96 -> 96 over 10x4 (`k = 288`), and the first conv (3x3, 1 -> 24).
const CNN_SHAPES: [(usize, usize, usize); 5] =
    [(24, 2368, 72), (48, 512, 144), (72, 224, 216), (96, 40, 288), (24, 2368, 9)];

fn bench_cnn(cr: &mut Criterion) {
    let mut g = cr.benchmark_group("cnn");
    for (m, n, k) in CNN_SHAPES {
        let (w, b, bias) = (data(m * k, 1), data(k * n, 2), data(m, 3));
        let mut pa = vec![0.0; packed_a_len(m, k)];
        pack_a(&w, m, k, &mut pa);
        let mut c = vec![0.0; m * n];
        g.throughput(Throughput::Elements((2 * m * n * k) as u64));
        let shape = format!("{m}x{n}x{k}");
        g.bench_function(format!("ours_packed_a/{shape}"), |bch| {
            bch.iter(|| Fast::gemm_packed_a(m, n, k, &pa, black_box(&b), n, Some(&bias), &mut c, n))
        });
        g.bench_function(format!("matrixmultiply/{shape}"), |bch| {
            bch.iter(|| mm_sgemm_nn(m, n, k, &w, black_box(&b), &mut c))
        });
        #[cfg(target_arch = "x86_64")]
        for level in x86_levels() {
            use neon_runtime::kernels::gemm::x86;
            g.bench_function(format!("x86_{}_packed_a/{shape}", level.name()), |bch| {
                // SAFETY: `level` is supported (x86_levels).
                bch.iter(|| unsafe {
                    x86::gemm_packed_a(
                        level,
                        m,
                        n,
                        k,
                        &pa,
                        black_box(&b),
                        n,
                        Some(&bias),
                        &mut c,
                        n,
                    )
                })
            });
        }
    }
    g.finish();
}

criterion_group!(benches, bench_gemm, bench_gemv, bench_cnn);
criterion_main!(benches);
