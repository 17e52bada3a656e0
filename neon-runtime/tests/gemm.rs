//! Packed GEMM / GEMV kernels against an f64 reference: every tail of m, n and k
//! (1..=33, sampled so the suite stays fast under qemu), odd shapes, strides, bias / no
//! bias, `k = 0`, and every backend against portable on the same inputs. One generic body
//! per suite, instantiated for every backend this build has (`backend_tests!`: Portable,
//! Neon under qemu, and on x86-64 `X86<Avx2>` and `X86<Avx512>` where the CPU has them).

mod common;

use common::{assert_close, assert_close_f32, assert_panels, rng, uniform};
use neon_runtime::kernels::gemm::{
    pack_a, pack_b, packed_a_len, packed_b_len, BRows, Epilogue, GemmA, GemmB, GemmKernels,
    PACK_MR, PACK_NR,
};
use neon_runtime::Portable;
use rand::rngs::SmallRng;

/// Value written around and between the output rows: columns past `n` must keep it.
const SENTINEL: f32 = 1234.5;

/// Tolerance for one output: f32 accumulation of `k` products has error at most about
/// `k * eps * sum_k |a * w|` (each of the k roundings of the running sum is bounded by eps
/// times its magnitude, itself bounded by the absolute sum); the bias adds one rounding.
/// `ulps(1)`-scale slack covers the final rounding to f32. The same bound covers every
/// implementation: a fused multiply-add (NEON, the x86 AVX2 / AVX-512 levels) rounds once
/// where a multiply then an add rounds twice, and the kernels that split the sum over `k`
/// into 2-4 partial sums (x86 GEMV, x86 packed-B tiles of few rows) add them at the end:
/// every product then passes through at most `k / sets + 2 <= k + 2` roundings.
fn tolerance(k: usize, abs_sum: f64) -> f64 {
    (k as f64 + 2.0) * f32::EPSILON as f64 * abs_sum + 1e-30
}

/// Elements of a strided `rows x cols` matrix, rows `ld` apart.
fn strided_len(rows: usize, cols: usize, ld: usize) -> usize {
    if rows == 0 {
        0
    } else {
        (rows - 1) * ld + cols
    }
}

/// The `m x n` result in `c` (rows `ldc` apart), after checking that backend `B` left the
/// padding columns between the rows alone.
fn rows_of<B: GemmKernels>(c: &[f32], m: usize, n: usize, ldc: usize) -> Vec<f32> {
    let mut out = Vec::with_capacity(m * n);
    for i in 0..m {
        let row = &c[i * ldc..];
        out.extend_from_slice(&row[..n]);
        if i + 1 < m {
            let untouched = row[n..ldc].iter().all(|&v| v == SENTINEL);
            assert!(untouched, "{}: row {i} padding written", B::NAME);
        }
    }
    out
}

/// Which operand of a test problem is the packed weight.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Packed {
    /// `C = A · W^T + bias`: `x` is `A [m, k]` (rows `ld` apart), `w` is `W [n, k]`, the
    /// bias has `n` values ([`GemmKernels::gemm_packed_b`]).
    B,
    /// `C = W · B + bias`: `w` is `W [m, k]`, `x` is `B [k, n]` (rows `ld` apart), the bias
    /// has `m` values ([`GemmKernels::gemm_packed_a`]).
    A,
}

/// One test problem with strides: the activations `x` (rows `ld` apart), the weight `w`,
/// the output rows `ldc` apart.
struct Problem {
    packed: Packed,
    m: usize,
    n: usize,
    k: usize,
    ld: usize,
    ldc: usize,
    x: Vec<f32>,
    w: Vec<f32>,
    bias: Option<Vec<f32>>,
}

impl Problem {
    /// Random operands (`x`, then `w`, then the bias for packed B; `w`, `x`, bias for
    /// packed A) of an `m x n` problem with reduction `k`.
    fn new(
        r: &mut SmallRng,
        packed: Packed,
        (m, n, k): (usize, usize, usize),
        (ld, ldc): (usize, usize),
        bias: bool,
    ) -> Self {
        let (x, w, bias_len) = match packed {
            Packed::B => {
                let x = uniform(r, strided_len(m, k, ld), -1.0, 1.0);
                (x, uniform(r, n * k, -1.0, 1.0), n)
            }
            Packed::A => {
                let w = uniform(r, m * k, -1.0, 1.0);
                (uniform(r, strided_len(k, n, ld), -1.0, 1.0), w, m)
            }
        };
        let bias = bias.then(|| uniform(r, bias_len, -1.0, 1.0));
        Self { packed, m, n, k, ld, ldc, x, w, bias }
    }

    /// The f64 reference and the per-output tolerance (max over outputs).
    fn reference(&self) -> (Vec<f64>, f64) {
        let mut out = vec![0.0; self.m * self.n];
        let mut tol: f64 = 0.0;
        for i in 0..self.m {
            for j in 0..self.n {
                let bias_at = if self.packed == Packed::B { j } else { i };
                let bias = self.bias.as_ref().map_or(0.0, |b| b[bias_at] as f64);
                let (mut s, mut abs) = (bias, bias.abs());
                for kk in 0..self.k {
                    let (x, w) = match self.packed {
                        Packed::B => (self.x[i * self.ld + kk], self.w[j * self.k + kk]),
                        Packed::A => (self.x[kk * self.ld + j], self.w[i * self.k + kk]),
                    };
                    let p = x as f64 * w as f64;
                    s += p;
                    abs += p.abs();
                }
                out[i * self.n + j] = s;
                tol = tol.max(tolerance(self.k, abs));
            }
        }
        (out, tol)
    }

    /// Runs backend `B`; returns the `m x n` result after checking the padding columns.
    fn run<B: GemmKernels>(&self, packed: &[f32]) -> Vec<f32> {
        let mut c = vec![SENTINEL; strided_len(self.m, self.n, self.ldc)];
        let (m, n, k, ld, ldc) = (self.m, self.n, self.k, self.ld, self.ldc);
        let bias = self.bias.as_deref();
        match self.packed {
            Packed::B => {
                B::gemm_packed_b(GemmB { m, n, k, lda: ld, ldc }, &self.x, packed, bias, &mut c)
            }
            Packed::A => {
                B::gemm_packed_a(GemmA::contiguous(m, n, k, ld, ldc), packed, &self.x, bias, &mut c)
            }
        }
        rows_of::<B>(&c, self.m, self.n, self.ldc)
    }

    /// The weight in the kernel's layout (padding NaN-initialised, so the packing must
    /// write it).
    fn packed(&self) -> Vec<f32> {
        match self.packed {
            Packed::B => {
                let mut p = vec![f32::NAN; packed_b_len(self.n, self.k)];
                pack_b(&self.w, self.n, self.k, &mut p);
                p
            }
            Packed::A => {
                let mut p = vec![f32::NAN; packed_a_len(self.m, self.k)];
                pack_a(&self.w, self.m, self.k, &mut p);
                p
            }
        }
    }
}

/// Checks backend `B` on one problem against the reference; returns the max abs error.
fn check<B: GemmKernels>(p: &Problem) -> f64 {
    let (want, tol) = p.reference();
    let got = p.run::<B>(&p.packed());
    let kernel = if p.packed == Packed::B { "gemm_packed_b" } else { "gemm_packed_a" };
    let what = format!("{} {kernel} m={} n={} k={}", B::NAME, p.m, p.n, p.k);
    assert_close(&what, &got, &want, tol, 0.0);
    max_err(&got, &want)
}

fn max_err(got: &[f32], want: &[f64]) -> f64 {
    got.iter().zip(want).map(|(&g, &w)| (g as f64 - w).abs()).fold(0.0, f64::max)
}

/// [`common::tail_shapes`] plus the cube diagonal.
fn tail_shapes() -> Vec<(usize, usize, usize)> {
    common::tail_shapes(true)
}

/// Odd shapes: prime sizes, sizes one off the tiles, `416 x 1664` (a 4x MLP block).
const ODD_SHAPES: [(usize, usize, usize); 6] =
    [(7, 13, 5), (3, 1664, 416), (17, 416, 1664), (5, 16, 4), (81, 47, 63), (1, 1, 1)];

/// Every tail shape on `packed`, alternating tight and padded strides, with and without
/// bias.
fn gemm_tails<B: GemmKernels>(packed: Packed, seed: u64) -> f64 {
    let mut r = rng(seed);
    let mut worst: f64 = 0.0;
    for (idx, (m, n, k)) in tail_shapes().into_iter().enumerate() {
        let ld = if packed == Packed::B { k } else { n };
        let strides = if idx % 2 == 0 { (ld, n) } else { (ld + 3, n + 5) };
        let p = Problem::new(&mut r, packed, (m, n, k), strides, idx % 3 != 0);
        worst = worst.max(check::<B>(&p));
    }
    worst
}

/// The odd `shapes` on `packed`, with growing stride padding.
fn gemm_odd<B: GemmKernels>(packed: Packed, seed: u64, shapes: &[(usize, usize, usize)]) -> f64 {
    let mut r = rng(seed);
    let mut worst: f64 = 0.0;
    for (idx, &(m, n, k)) in shapes.iter().enumerate() {
        let ld = if packed == Packed::B { k } else { n };
        let p = Problem::new(&mut r, packed, (m, n, k), (ld + idx, n + 2 * idx), idx % 2 == 0);
        worst = worst.max(check::<B>(&p));
    }
    worst
}

/// Odd packed-A shapes, (m, n, k) = (out channels, frames, in channels * kernel).
/// The last five are the openWakeWord CNN's im2col products (first conv 3x3 1->24 over
/// 74x32 pixels, 1x3 24->24, 3x1 48->48 over 36x16, 96 -> 96) and one odd prime shape.
const ODD_SHAPES_A: [(usize, usize, usize); 11] = [
    (7, 13, 5),
    (1664, 7, 416),
    (416, 19, 1664),
    (8, 12, 4),
    (63, 81, 47),
    (1, 1, 1),
    (7, 13, 29),
    (24, 2368, 9),
    (96, 2368, 72),
    (48, 512, 144),
    (96, 111, 288),
];

/// `k = 0`: the product is the bias (or zero); `m = 0` / `n = 0`: nothing is written.
fn degenerate<B: GemmKernels>() {
    let bias = [1.0, 2.0, 3.0];
    let mut c = [SENTINEL; 6];
    let gb = |m, n, k, lda, ldc| GemmB { m, n, k, lda, ldc };
    B::gemm_packed_b(gb(2, 3, 0, 0, 3), &[], &[], Some(&bias), &mut c);
    assert_eq!(c, [1.0, 2.0, 3.0, 1.0, 2.0, 3.0]);
    B::gemm_packed_b(gb(2, 3, 0, 0, 3), &[], &[], None, &mut c);
    assert_eq!(c, [0.0; 6]);
    let mut c = [SENTINEL; 6];
    B::gemm_packed_a(GemmA::contiguous(3, 2, 0, 2, 2), &[], &[], Some(&bias), &mut c);
    assert_eq!(c, [1.0, 1.0, 2.0, 2.0, 3.0, 3.0]);
    let mut y = [SENTINEL; 3];
    B::gemv_packed_b(3, 0, &[], &[], Some(&bias), &mut y);
    assert_eq!(y, bias);
    let mut c = [SENTINEL; 2];
    B::gemm_packed_b(gb(0, 2, 4, 4, 2), &[], &[0.0; PACK_NR * 4], None, &mut c);
    B::gemm_packed_b(gb(2, 0, 4, 4, 0), &[0.0; 8], &[], None, &mut c);
    B::gemm_packed_a(GemmA::contiguous(0, 2, 4, 2, 2), &[], &[0.0; 8], None, &mut c);
    B::gemm_packed_a(GemmA::contiguous(2, 0, 4, 0, 0), &[0.0; PACK_MR * 4], &[], None, &mut c);
    assert_eq!(c, [SENTINEL; 2]);
}

/// GEMV against the reference over every tail of n and k, and the odd shapes.
fn gemv<B: GemmKernels>() -> f64 {
    let mut r = rng(5);
    let mut worst: f64 = 0.0;
    let mut shapes: Vec<(usize, usize)> = (1..=33).map(|t| (t, (t * 13) % 33 + 1)).collect();
    shapes.extend((1..=33).map(|t| ((t * 7) % 33 + 1, t)));
    shapes.extend([(13, 7), (1664, 416), (416, 1664), (1024, 1024), (47, 1), (1, 255)]);
    for (idx, &(n, k)) in shapes.iter().enumerate() {
        let p = Problem::new(&mut r, Packed::B, (1, n, k), (k, n), idx % 2 == 0);
        let (want, tol) = p.reference();
        let mut y = vec![SENTINEL; n];
        B::gemv_packed_b(n, k, &p.x, &p.packed(), p.bias.as_deref(), &mut y);
        assert_close(&format!("{} gemv n={n} k={k}", B::NAME), &y, &want, tol, 0.0);
        worst = worst.max(max_err(&y, &want));
    }
    worst
}

/// GEMV and a one-row GEMM compute the same thing.
fn gemv_matches_gemm<B: GemmKernels>() {
    let mut r = rng(6);
    for &(n, k) in &[(33, 17), (100, 64), (16, 3)] {
        let p = Problem::new(&mut r, Packed::B, (1, n, k), (k, n), true);
        let packed = p.packed();
        let mut y = vec![0.0; n];
        B::gemv_packed_b(n, k, &p.x, &packed, p.bias.as_deref(), &mut y);
        let c = p.run::<B>(&packed);
        // Same products, possibly summed in a different order: k*eps relative slack.
        assert_close_f32("gemv vs gemm", &y, &c, 1e-5 * k as f32, 1e-5);
    }
}

/// Wider tails than [`tail_shapes`], for the x86 tiles: packed A over `n` in 1..=100 (the
/// AVX-512 tile is 48 columns wide, the AVX2 tile 24: every masked width and full tiles
/// followed by each tail), packed B over `m` in 1..=100 (tiles of 14 or 6 rows in blocks
/// of 84: every row remainder and a block boundary), alternating bias and padded strides.
fn wide_tails<B: GemmKernels>() -> f64 {
    let mut r = rng(8);
    let mut worst: f64 = 0.0;
    for t in 1..=100 {
        let (m, k) = ((t * 5) % 19 + 1, (t * 11) % 23 + 1);
        let p = Problem::new(&mut r, Packed::A, (m, t, k), (t + t % 3, t + t % 5), t % 2 == 0);
        worst = worst.max(check::<B>(&p));
        let (n, k) = ((t * 7) % 40 + 1, (t * 3) % 17 + 1);
        let p = Problem::new(&mut r, Packed::B, (t, n, k), (k + t % 3, n + t % 4), t % 2 == 1);
        worst = worst.max(check::<B>(&p));
    }
    worst
}

/// The whole packed-GEMM / GEMV suite on backend `B`.
fn gemm_suite<B: GemmKernels>() {
    let worst = [
        gemm_tails::<B>(Packed::B, 1),
        gemm_odd::<B>(Packed::B, 2, &ODD_SHAPES),
        gemm_tails::<B>(Packed::A, 3),
        gemm_odd::<B>(Packed::A, 4, &ODD_SHAPES_A),
        wide_tails::<B>(),
        gemv::<B>(),
    ];
    // Printed so the report can quote the measured error (`-- --nocapture`).
    let worst: Vec<String> = worst.iter().map(|e| format!("{e:.2e}")).collect();
    println!("{}: max abs error b_tails/b_odd/a_tails/a_odd/wide/gemv = {worst:?}", B::NAME);
    degenerate::<B>();
    gemv_matches_gemm::<B>();
}

/// Backend `B` and portable agree on the same inputs (both also checked against f64 by
/// `gemm_suite`).
fn matches_portable<B: GemmKernels>() {
    // The backends round differently (fused vs separate multiply-add, summation order):
    // both are within the f64 tolerance of `p`, so within twice it of each other. Returns
    // the tolerance.
    let agree = |what: &str, p: &Problem| {
        let (_, tol) = p.reference();
        let packed = p.packed();
        assert_close_f32(
            &format!("{} vs portable, {what}", B::NAME),
            &p.run::<B>(&packed),
            &p.run::<Portable>(&packed),
            2.0 * tol as f32,
            0.0,
        );
        tol
    };
    let mut r = rng(7);
    for (m, n, k) in tail_shapes().into_iter().step_by(3).chain([(37, 100, 300), (5, 1664, 416)]) {
        let pb = Problem::new(&mut r, Packed::B, (m, n, k), (k + 1, n + 1), true);
        agree("packed b", &pb);
        let pa = Problem::new(&mut r, Packed::A, (m, n, k), (n + 2, n), false);
        let tol = agree("packed a", &pa);
        let mut yn = vec![0.0; n];
        let mut yp = vec![0.0; n];
        let x = &pb.x[..k];
        let bias = pb.bias.as_deref();
        let packed = pb.packed();
        B::gemv_packed_b(n, k, x, &packed, bias, &mut yn);
        Portable::gemv_packed_b(n, k, x, &packed, bias, &mut yp);
        let what = format!("{} vs portable, gemv", B::NAME);
        assert_close_f32(&what, &yn, &yp, 2.0 * tol as f32, 0.0);
    }
}

#[test]
fn pack_layouts() {
    let (n, k) = (19, 3);
    let w: Vec<f32> = (0..n * k).map(|v| v as f32).collect();
    let mut p = vec![f32::NAN; packed_b_len(n, k)];
    pack_b(&w, n, k, &mut p);
    assert_panels(&p, &w, n, k, PACK_NR, 2);
    let (m, k) = (11, 2);
    let w: Vec<f32> = (0..m * k).map(|v| v as f32).collect();
    let mut p = vec![f32::NAN; packed_a_len(m, k)];
    pack_a(&w, m, k, &mut p);
    assert_panels(&p, &w, m, k, PACK_MR, 2);
}

/// `B::gemm_packed_b(g, ..)` on zeros: `a_len` values of A, one panel of `g.k` packed B
/// (`g.n <= PACK_NR`), `c_len` values of C, no bias.
fn packed_b_on_zeros<B: GemmKernels>(g: GemmB, a_len: usize, c_len: usize) {
    B::gemm_packed_b(g, &vec![0.0; a_len], &vec![0.0; PACK_NR * g.k], None, &mut vec![0.0; c_len]);
}

/// `B::gemm_packed_a(g, ..)` on zeros: `a_len` values of packed A, `b_len` of B, `c_len` of
/// C, no bias.
fn packed_a_on_zeros<B: GemmKernels>(g: GemmA, (a_len, b_len): (usize, usize), c_len: usize) {
    B::gemm_packed_a(g, &vec![0.0; a_len], &vec![0.0; b_len], None, &mut vec![0.0; c_len]);
}

#[test]
#[should_panic(expected = "lda < k")]
fn contract_lda() {
    packed_b_on_zeros::<Portable>(GemmB { m: 1, n: 4, k: 4, lda: 3, ldc: 4 }, 4, 4);
}

#[test]
#[should_panic(expected = "a too short")]
fn contract_a_len() {
    packed_b_on_zeros::<Portable>(GemmB { m: 2, n: 4, k: 4, lda: 4, ldc: 4 }, 7, 8);
}

#[test]
#[should_panic(expected = "b too short")]
fn contract_b_len() {
    packed_a_on_zeros::<Portable>(GemmA::contiguous(2, 4, 2, 4, 4), (PACK_MR * 2, 7), 8);
}

#[test]
#[should_panic(expected = "y length")]
fn contract_gemv_y() {
    let mut y = [0.0; 3];
    Portable::gemv_packed_b(4, 2, &[0.0; 2], &[0.0; PACK_NR * 2], None, &mut y);
}

#[cfg(all(target_arch = "aarch64", feature = "neon"))]
#[test]
#[should_panic(expected = "c too short")]
fn contract_neon_c_len() {
    packed_b_on_zeros::<neon_runtime::Neon>(GemmB { m: 2, n: 4, k: 4, lda: 4, ldc: 4 }, 8, 7);
}

// ---------------------------------------------------------------------------------------
// gemm_packed_a with B rows placed by a BRows map and a fused epilogue.
// ---------------------------------------------------------------------------------------

mod rows {
    use super::*;

    /// The epilogue in f64: `max(x, slope * x, min)`.
    fn ep64(e: Option<Epilogue>, x: f64) -> f64 {
        e.map_or(x, |e| x.max(e.slope as f64 * x).max(e.min as f64))
    }

    /// Offset of row `r` of `B` under `br`.
    fn offset(br: &BRows, r: usize) -> usize {
        (r / br.rows) * br.segment_stride + (r % br.rows) * br.ldb
    }

    const EPILOGUES: [Option<Epilogue>; 5] = [
        None,
        Some(Epilogue { slope: 0.2, min: -0.4 }),
        Some(Epilogue { slope: 0.0, min: f32::NEG_INFINITY }),
        Some(Epilogue { slope: 1.0, min: 0.1 }),
        Some(Epilogue { slope: 0.5, min: f32::NEG_INFINITY }),
    ];

    /// One random problem on `B`: checks the f64 reference (with the GEMM tolerance: for
    /// slopes in [0, 1] the epilogue is 1-Lipschitz, so it does not grow the error) and
    /// bitwise equality with `gemm_packed_a` on the gathered, contiguous `B` followed by
    /// `Epilogue::apply` (every implementation runs the reduction in the same order for
    /// both, and applies the output stage exactly as `apply` does).
    pub(super) fn case<B: GemmKernels>(
        r: &mut SmallRng,
        m: usize,
        n: usize,
        br: BRows,
        ldc: usize,
        bias_on: bool,
        epilogue: Option<Epilogue>,
    ) -> Vec<f32> {
        let k = br.rows * br.segments;
        let b = uniform(r, br.span(n).unwrap(), -1.0, 1.0);
        let w = uniform(r, m * k, -1.0, 1.0);
        let bias = bias_on.then(|| uniform(r, m, -1.0, 1.0));
        let mut packed = vec![f32::NAN; packed_a_len(m, k)];
        pack_a(&w, m, k, &mut packed);
        let c_len = strided_len(m, n, ldc);
        let mut c = vec![SENTINEL; c_len];
        let g = GemmA { m, n, rows: br, epilogue, ldc };
        B::gemm_packed_a(g, &packed, &b, bias.as_deref(), &mut c);
        let what = format!("{} rows m={m} n={n} {br:?} {epilogue:?}", B::NAME);
        // Gathered B, contiguous `[k, n]`.
        let gathered: Vec<f32> =
            (0..k).flat_map(|row| b[offset(&br, row)..][..n].to_vec()).collect();
        let mut c2 = vec![SENTINEL; c_len];
        let g = GemmA::contiguous(m, n, k, n, ldc);
        B::gemm_packed_a(g, &packed, &gathered, bias.as_deref(), &mut c2);
        let mut got = Vec::new();
        for i in 0..m {
            let row = &c[i * ldc..];
            got.extend_from_slice(&row[..n]);
            if i + 1 < m {
                assert!(row[n..ldc].iter().all(|&v| v == SENTINEL), "{what}: padding written");
            }
            for j in 0..n {
                let want = epilogue.map_or(c2[i * ldc + j], |e| e.apply(c2[i * ldc + j]));
                assert_eq!(row[j].to_bits(), want.to_bits(), "{what}: ({i}, {j}) vs gemm_packed_a");
            }
        }
        let mut want = vec![0.0; m * n];
        let mut tol: f64 = 0.0;
        for i in 0..m {
            for j in 0..n {
                let bv = bias.as_ref().map_or(0.0, |b| b[i] as f64);
                let (mut s, mut abs) = (bv, bv.abs());
                for row in 0..k {
                    let p = w[i * k + row] as f64 * gathered[row * n + j] as f64;
                    s += p;
                    abs += p.abs();
                }
                want[i * n + j] = ep64(epilogue, s);
                tol = tol.max(tolerance(k, abs));
            }
        }
        assert_close(&what, &got, &want, tol, 0.0);
        got
    }

    /// Every tail of m (1..=17) and n (1..=33), 1..=3 segments of odd and even row counts,
    /// overlapping and disjoint segments, each epilogue.
    pub(super) fn sweep<B: GemmKernels>() {
        let mut r = rng(21);
        let mut cases = 0;
        for m in (1..=17).chain([24, 48]) {
            for n in (1..=33).step_by(if m % 2 == 0 { 1 } else { 4 }) {
                let rows = [1, 2, 3, 5, 24][cases % 5];
                let segments = 1 + cases % 3;
                let ldb = if cases % 4 == 0 { n / 2 + 1 } else { n + cases % 3 };
                let segment_stride = [0, 1, n, rows * ldb + 3][cases % 4];
                let br = BRows { rows, ldb, segments, segment_stride };
                let ldc = n + cases % 2;
                case::<B>(&mut r, m, n, br, ldc, cases % 3 != 0, EPILOGUES[cases % 5]);
                cases += 1;
            }
        }
        // A 3x1 conv read directly from a [24, 30, 8] image: 3 segments of 24 channels,
        // rows 240 apart, segments 8 apart, 224 output pixels.
        let br = BRows { rows: 24, ldb: 240, segments: 3, segment_stride: 8 };
        case::<B>(&mut r, 48, 224, br, 224, true, EPILOGUES[1]);
        assert!(cases > 300, "{cases}");
    }

    /// Wider tails for the x86 tiles (48 columns on AVX-512, 24 on AVX2): n in 1..=100
    /// with 1..=4 segments, every epilogue, bias on and off, padded and tight strides; and
    /// the openWakeWord embedding's direct 3x1 convs as conv2d runs them (blocks of output
    /// pixels, the input read as 3 segments).
    pub(super) fn wide<B: GemmKernels>() {
        let mut r = rng(23);
        for n in 1..=100 {
            let m = (n * 5) % 19 + 1;
            let rows = (n * 3) % 7 + 1;
            let segments = n % 4 + 1;
            let ldb = n + n % 3;
            let segment_stride = [1, n, rows * ldb, 7][n % 4];
            let br = BRows { rows, ldb, segments, segment_stride };
            case::<B>(&mut r, m, n, br, n + n % 5, n % 2 == 0, EPILOGUES[n % 5]);
        }
        // (out channels, in channels, height, width, pixels per block): 3x1 convs 24 -> 24 on
        // 74x32, 72 -> 72 on 30x8, 96 -> 96 on 12x4 (a block of every pixel or a part).
        for (m, cin, h, w, block) in
            [(24, 24, 74, 32, 444), (72, 72, 30, 8, 224), (96, 96, 12, 4, 40), (96, 96, 4, 2, 4)]
        {
            let br = BRows { rows: cin, ldb: h * w, segments: 3, segment_stride: w };
            let pixels = (h - 2) * w;
            let n = block.min(pixels);
            case::<B>(&mut r, m, n, br, pixels, true, EPILOGUES[1]);
        }
    }

    /// Long reductions, which the x86 drivers (AVX2 and AVX-512) run in blocks of 256
    /// steps over copies of 192 columns of `B` (other backends in one pass): `k` of 2..=3
    /// blocks and a tail, segments whose boundaries fall inside a block, `n` over two
    /// column blocks with a 17..=23 tail (and a 1..=8 one; AVX-512: 41- and 5-column last
    /// strips), padded `C`, the bias on the first block only and the output stage on the
    /// last only.
    pub(super) fn blocked<B: GemmKernels>() {
        let mut r = rng(29);
        for (m, n, rows, segments, ep) in [
            (19, 233, 183, 3, EPILOGUES[1]),
            (8, 197, 600, 1, EPILOGUES[3]),
            (3, 40, 257, 2, None),
            (13, 385, 130, 4, EPILOGUES[2]),
        ] {
            let ldb = n + 3;
            let br = BRows { rows, ldb, segments, segment_stride: rows * ldb + 5 };
            case::<B>(&mut r, m, n, br, n + 2, m % 2 == 1, ep);
        }
    }

    /// The output stage on special values, bit for bit against `Epilogue::apply` (NaN
    /// propagates, `max(-0, +0) = +0`), for the usual epilogues and unusual ones (a clamp
    /// at +0 or -0, a `-0` or NaN slope, a NaN bound, an infinite slope), through full
    /// and masked tiles. `C = bias + 1 * (-0)` is the bias exactly (`x + (-0) = x`, also for
    /// `x = -0` and NaN), so each output is `apply(bias)`.
    pub(super) fn special_values<B: GemmKernels>() {
        let specials =
            [f32::NAN, -0.0, 0.0, -1e-30, 1e30, -1e30, f32::INFINITY, f32::NEG_INFINITY, -0.4];
        let mut epilogues: Vec<Epilogue> = EPILOGUES.into_iter().flatten().collect();
        epilogues.extend([
            Epilogue::clamp_min(0.0),
            Epilogue::clamp_min(-0.0),
            Epilogue { slope: 0.0, min: 0.0 },
            Epilogue { slope: -0.0, min: f32::NEG_INFINITY },
            Epilogue { slope: f32::NAN, min: -1.0 },
            Epilogue { slope: 0.2, min: f32::NAN },
            Epilogue { slope: f32::INFINITY, min: -0.4 },
        ]);
        for e in epilogues {
            for n in [1, 5, 8, 16, 24, 48, 61] {
                // m = 9: a full panel and a one-row panel; bias cycles through the specials.
                let m = 9;
                let bias: Vec<f32> = (0..m).map(|i| specials[(i + n) % specials.len()]).collect();
                let mut packed = vec![0.0; packed_a_len(m, 1)];
                pack_a(&vec![1.0; m], m, 1, &mut packed);
                let b = vec![-0.0f32; n];
                let mut c = vec![SENTINEL; m * n];
                let br = BRows::contiguous(1, n);
                let g = GemmA { m, n, rows: br, epilogue: Some(e), ldc: n };
                B::gemm_packed_a(g, &packed, &b, Some(&bias), &mut c);
                for i in 0..m {
                    let want = e.apply(bias[i]).to_bits();
                    for j in 0..n {
                        let got = c[i * n + j].to_bits();
                        assert_eq!(
                            got,
                            want,
                            "{} {e:?} x = {} n={n}: ({i}, {j})",
                            B::NAME,
                            bias[i]
                        );
                    }
                }
            }
        }
    }

    /// Backend `B` and portable agree to within twice the GEMM tolerance; the epilogue
    /// itself is bitwise the same on both (`Epilogue::apply` mirrors `fmax`).
    pub(super) fn match_portable<B: GemmKernels>() {
        use rand::Rng;
        let mut r = rng(22);
        for i in 0..60 {
            let (m, n) = (r.gen_range(1..40), r.gen_range(1..70));
            let br = BRows {
                rows: r.gen_range(1..20),
                ldb: n + r.gen_range(0..3),
                segments: r.gen_range(1..4),
                segment_stride: r.gen_range(0..50),
            };
            let e = EPILOGUES[i % 5];
            let k = br.rows * br.segments;
            let seed = r.gen();
            let yn = case::<B>(&mut rng(seed), m, n, br, n, true, e);
            let yp = case::<Portable>(&mut rng(seed), m, n, br, n, true, e);
            let tol = 2.0 * tolerance(k, k as f64 + 1.0) as f32;
            assert_close_f32(&format!("rows {} vs portable", B::NAME), &yn, &yp, tol, 0.0);
        }
        // The epilogue on special values: NaN stays NaN, -0 / +0 as fmax.
        for e in EPILOGUES.into_iter().flatten() {
            for x in [f32::NAN, -0.0, 0.0, -1e-30, 1e30, -1e30, f32::INFINITY, f32::NEG_INFINITY] {
                let mut cp = [0.0f32; 1];
                let mut cn = [0.0f32; 1];
                let bias = [x];
                // k = 0: the result is e(bias), through each backend's own code path.
                let g = GemmA::contiguous(1, 1, 0, 1, 1).with_epilogue(Some(e));
                Portable::gemm_packed_a(g, &[], &[], Some(&bias), &mut cp);
                B::gemm_packed_a(g, &[], &[], Some(&bias), &mut cn);
                assert_eq!(cp[0].to_bits(), cn[0].to_bits(), "{e:?} {x}");
                // k = 1 with weight 1 and B = x: the register path.
                let mut packed = vec![0.0; PACK_MR];
                packed[0] = 1.0;
                let g = GemmA::contiguous(1, 1, 1, 1, 1).with_epilogue(Some(e));
                Portable::gemm_packed_a(g, &packed, &[x], None, &mut cp);
                B::gemm_packed_a(g, &packed, &[x], None, &mut cn);
                assert_eq!(cp[0].to_bits(), cn[0].to_bits(), "{e:?} {x} (register path)");
            }
        }
    }

    /// `k = 0` gives `e(bias)`; `m = 0` or `n = 0` writes nothing.
    #[test]
    fn degenerate_rows() {
        let e = Some(Epilogue { slope: 0.2, min: -0.4 });
        let mut c = [SENTINEL; 6];
        let br = BRows { rows: 0, ldb: 3, segments: 2, segment_stride: 5 };
        let g = GemmA { m: 2, n: 3, rows: br, epilogue: e, ldc: 3 };
        Portable::gemm_packed_a(g, &[], &[], Some(&[-1.0, 2.0]), &mut c);
        assert_eq!(c, [-0.2, -0.2, -0.2, 2.0, 2.0, 2.0]);
        let mut c = [SENTINEL; 3];
        let g = GemmA::contiguous(0, 3, 2, 3, 3).with_epilogue(e);
        Portable::gemm_packed_a(g, &[], &[0.0; 6], None, &mut []);
        let g = GemmA::contiguous(1, 0, 2, 0, 3).with_epilogue(e);
        Portable::gemm_packed_a(g, &[0.0; 16], &[], None, &mut c);
        assert_eq!(c, [SENTINEL; 3]);
        assert_eq!(Epilogue::leaky_relu(0.2).apply(-1.0), -0.2);
        assert_eq!(Epilogue::clamp_min(-0.4).apply(-1.0), -0.4);
        assert_eq!(Epilogue::clamp_min(-0.4).apply(3.0), 3.0);
        assert_eq!(BRows { rows: 3, ldb: 10, segments: 2, segment_stride: 4 }.span(5), Some(29));
        assert_eq!(BRows::contiguous(0, 4).span(5), Some(0));
        assert_eq!(
            BRows { rows: 2, ldb: usize::MAX, segments: 1, segment_stride: 0 }.span(1),
            None
        );
    }

    #[test]
    #[should_panic(expected = "gemm_packed_a: b too short")]
    fn contract_rows_b_len() {
        let br = BRows { rows: 2, ldb: 4, segments: 2, segment_stride: 3 };
        // span(4) = 3 + 4 + 4 = 11.
        let g = GemmA { m: 1, n: 4, rows: br, epilogue: None, ldc: 4 };
        packed_a_on_zeros::<Portable>(g, (32, 10), 4);
    }
}

/// The segmented-`B` / epilogue suite on backend `B`: segmented and contiguous `B`, every
/// epilogue, every tail (`rows::sweep`, `rows::wide`), long blocked reductions
/// (`rows::blocked`), and the output stage on special
/// values.
fn rows_suite<B: GemmKernels>() {
    rows::sweep::<B>();
    rows::wide::<B>();
    rows::blocked::<B>();
    rows::special_values::<B>();
}

/// [`rows::match_portable`].
fn rows_match_portable<B: GemmKernels>() {
    rows::match_portable::<B>();
}

neon_runtime::backend_tests!(gemm_suite, matches_portable, rows_suite, rows_match_portable);

/// The x86 levels' packed-A product keeps one chain of fused multiply-adds per output,
/// `bias`, then `kk = 0..k` in order, also where long reductions run blocked over copies of
/// `B` (both levels: blocks of 256 steps by 192 columns): every output equals that chain
/// computed in scalar f32 (`f32::mul_add`), bit for bit. `k` of one block, one step past,
/// two blocks and a tail; segmented `B` whose boundaries fall inside a block; `n` over
/// two column blocks with a partial last strip; an odd `m` (a partial last panel).
#[cfg(target_arch = "x86_64")]
#[test]
fn x86_packed_a_one_chain() {
    use neon_runtime::kernels::cpu::X86Level;
    use neon_runtime::{Avx2, Avx512, X86};
    fn check<B: GemmKernels>() {
        let mut r = rng(31);
        for (m, n, rows, segments) in [(9, 50, 256, 1), (11, 233, 257, 1), (8, 197, 300, 2)] {
            let k = rows * segments;
            let ldb = n + 3;
            let br = BRows { rows, ldb, segments, segment_stride: rows * ldb + 5 };
            let b = uniform(&mut r, br.span(n).unwrap(), -1.0, 1.0);
            let w = uniform(&mut r, m * k, -1.0, 1.0);
            let bias = uniform(&mut r, m, -1.0, 1.0);
            let mut packed = vec![f32::NAN; packed_a_len(m, k)];
            pack_a(&w, m, k, &mut packed);
            let mut c = vec![0.0; m * n];
            let g = GemmA { m, n, rows: br, epilogue: None, ldc: n };
            B::gemm_packed_a(g, &packed, &b, Some(&bias), &mut c);
            for i in 0..m {
                for j in 0..n {
                    let mut acc = bias[i];
                    for kk in 0..k {
                        let off = kk / rows * br.segment_stride + kk % rows * ldb + j;
                        acc = w[i * k + kk].mul_add(b[off], acc);
                    }
                    let got = c[i * n + j];
                    assert_eq!(got.to_bits(), acc.to_bits(), "{} m={m} n={n} k={k}", B::NAME);
                }
            }
        }
    }
    if X86Level::Avx2.supported() {
        check::<X86<Avx2>>();
    }
    if X86Level::Avx512.supported() {
        check::<X86<Avx512>>();
    }
}

/// The AVX-512 packed-B product of long reductions runs blocked (blocks of at most 256
/// steps, later blocks continuing from the sums stored in `C`): within the f64 tolerance
/// (tails of `m` around the 12-row tile, `n` with a partial last panel, padded strides,
/// with and without bias); every row in a tile of 4 or more rows equals the one chain
/// `bias, then kk = 0..k` computed in scalar f32 (`f32::mul_add`), bit for bit; and the
/// last 1..=3 rows (a tile whose chains take the steps in turn, run unblocked) have the
/// bits of the same product over those rows alone.
#[cfg(target_arch = "x86_64")]
#[test]
fn x86_packed_b_blocked() {
    use neon_runtime::kernels::cpu::X86Level;
    use neon_runtime::{Avx512, X86};
    type B = X86<Avx512>;
    if !X86Level::Avx512.supported() {
        return;
    }
    let mut r = rng(37);
    let shapes = [
        (16, 50, 257, true),
        (12, 16, 300, false),
        (29, 33, 513, true),
        (26, 17, 700, true),
        (13, 1, 260, false),
        (2, 40, 600, true),
        (39, 70, 416, true),
        (47, 31, 1664, false),
    ];
    for (idx, &(m, n, k, bias)) in shapes.iter().enumerate() {
        let p = Problem::new(&mut r, Packed::B, (m, n, k), (k + idx, n + 2 * idx), bias);
        check::<B>(&p);
        let got = p.run::<B>(&p.packed());
        let tail = if m % 12 < 4 { m % 12 } else { 0 };
        for i in 0..m - tail {
            for j in 0..n {
                let mut acc = p.bias.as_ref().map_or(0.0, |b| b[j]);
                for kk in 0..k {
                    acc = p.x[i * p.ld + kk].mul_add(p.w[j * k + kk], acc);
                }
                let g = got[i * n + j];
                assert_eq!(g.to_bits(), acc.to_bits(), "m={m} n={n} k={k}: ({i}, {j})");
            }
        }
        if tail > 0 {
            let x = p.x[(m - tail) * p.ld..].to_vec();
            let rows = Problem { m: tail, x, bias: p.bias.clone(), w: p.w.clone(), ..p };
            let alone = rows.run::<B>(&rows.packed());
            for (idx, (g, w)) in got[(m - tail) * n..].iter().zip(&alone).enumerate() {
                assert_eq!(g.to_bits(), w.to_bits(), "m={m} n={n} k={k}: tail index {idx}");
            }
        }
    }
}
