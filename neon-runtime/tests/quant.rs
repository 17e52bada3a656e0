//! Int8-weight kernels and operators against an f64 reference on the dequantised weights
//! (`f64(q) * scale + offset`, or `f64(q) * scale[j, k / 32]`): every tail of m, n and k
//! (1..=33, sampled), odd shapes, 416 -> 1664 and 1664 -> 416, `k` across the GEMM's
//! conversion block and `m` across its row block, strides, bias / no bias, Moonshine-like
//! scales and offsets, each backend against portable on the same inputs; the
//! int8-activation (`dot`) GEMV; packing layouts; the operators' results, shape rule and
//! errors. Every suite is a generic body run for each backend (`backend_tests!`): Portable,
//! `X86<Avx2>` and `X86<Avx512>` where the CPU has them, Neon (aarch64, under qemu: with
//! qemu's default CPU `max` the `dot` GEMV runs `sdot`, with `QEMU_CPU=cortex-a72` its
//! portable fallback).

mod common;

use common::{assert_close, assert_close_f32, rng, uniform};
use neon_runtime::kernels::gemm::PACK_NR;
use neon_runtime::kernels::quant::{
    pack_block_scales, pack_block_scales_transposed, pack_i8, pack_i8_transposed,
    packed_block_scales_len, packed_i8_len, QuantFormat, QuantGemm, QuantKernels, BLOCK_K, DOT_KC,
    KC, MC, QUANT_KR,
};
use neon_runtime::{Backend, Portable};
use rand::rngs::SmallRng;
use rand::Rng;

/// Value written around and between the output rows: columns past `n` must keep it.
const SENTINEL: f32 = 1234.5;

/// How the test weights are scaled.
#[derive(Clone, Debug)]
enum Format {
    /// `W = q * scale + offset`.
    Tensor { scale: f32, offset: f32 },
    /// `W = q * scales[j * (k / 32) + k / 32]` (`[n, k / 32]`, unpacked).
    Block(Vec<f32>),
}

/// Moonshine-like per-tensor parameters: scale in [1e-3, 1e-2), `offset = scale * z` with
/// an integer `z` in -65..=25 (as shipped: `offset / scale` is an exact integer).
fn moonshine_format(r: &mut SmallRng) -> Format {
    let scale = r.gen_range(1e-3f32..1e-2);
    let z = r.gen_range(-65i32..=25);
    Format::Tensor { scale, offset: scale * z as f32 }
}

/// Block scales in [1e-3, 2e-2), a few negative (symmetric format: any sign works).
fn block_format(r: &mut SmallRng, n: usize, k: usize) -> Format {
    let s = (0..n * k / BLOCK_K)
        .map(|_| r.gen_range(1e-3f32..2e-2) * if r.gen_bool(0.1) { -1.0 } else { 1.0 })
        .collect();
    Format::Block(s)
}

fn int8(r: &mut SmallRng, len: usize) -> Vec<i8> {
    (0..len).map(|_| r.gen_range(-128i32..=127) as i8).collect()
}

/// One problem: `C = A · W^T + bias` with `W` int8-quantised, `A` rows `lda` apart, `C`
/// rows `ldc` apart.
struct Problem {
    m: usize,
    n: usize,
    k: usize,
    lda: usize,
    ldc: usize,
    a: Vec<f32>,
    /// `[n, k]`.
    q: Vec<i8>,
    format: Format,
    bias: Option<Vec<f32>>,
}

/// The geometry `m x k -> n`, rows of `A` `lda` apart, of `C` `ldc` apart.
fn dims(m: usize, n: usize, k: usize, lda: usize, ldc: usize) -> QuantGemm {
    QuantGemm { m, n, k, lda, ldc }
}

impl Problem {
    fn new(r: &mut SmallRng, g: QuantGemm, bias: bool, block: bool) -> Self {
        let QuantGemm { m, n, k, lda, ldc } = g;
        let a_len = if m == 0 { 0 } else { (m - 1) * lda + k };
        let format = if block { block_format(r, n, k) } else { moonshine_format(r) };
        Self {
            m,
            n,
            k,
            lda,
            ldc,
            a: uniform(r, a_len, -1.0, 1.0),
            q: int8(r, n * k),
            format,
            bias: bias.then(|| uniform(r, n, -1.0, 1.0)),
        }
    }

    fn geometry(&self) -> QuantGemm {
        dims(self.m, self.n, self.k, self.lda, self.ldc)
    }

    /// The kernels' format value, with `scales` the packed block scales ([`Self::packed`]).
    fn quant_format<'a>(&self, scales: &'a [f32]) -> QuantFormat<'a> {
        match self.format {
            Format::Tensor { scale, offset } => QuantFormat::PerTensor { scale, offset },
            Format::Block(_) => QuantFormat::Block(scales),
        }
    }

    /// `W[j, kk]` dequantised in f64.
    fn weight(&self, j: usize, kk: usize) -> f64 {
        let q = self.q[j * self.k + kk] as f64;
        match &self.format {
            Format::Tensor { scale, offset } => q * *scale as f64 + *offset as f64,
            Format::Block(s) => q * s[j * (self.k / BLOCK_K) + kk / BLOCK_K] as f64,
        }
    }

    /// The f64 reference and the tolerance (max over outputs).
    ///
    /// Tolerance per output: `(k + 3) * eps * mag`, with `mag = |scale| sum|a q| +
    /// |offset| sum|a| + |bias|` (per tensor) or `sum |a q scale| + |bias|` (blocks).
    /// Why: `f32(q)` is exact, so `x · q` carries only f32 accumulation error, at most
    /// about `k * eps * sum |a q|` (each of the k roundings of the running sum is bounded
    /// by eps times its magnitude, itself bounded by the absolute sum; this also covers the
    /// GEMM's partial sums over `k` blocks). `sum(a)`, summed in 16 lanes, is within
    /// `(k / 16 + 4) * eps * sum |a|`, and `offset` multiplies that error: the bound is on
    /// `|offset| sum |a|`, not on the (possibly cancelled) `|offset sum a|`, which is the
    /// cancellation the rewrite `scale (x · q) + offset sum(x)` pays for. The final
    /// multiply by `scale` and the two additions add three roundings of at most
    /// `eps * mag`. For blocks, each block's partial dot product has error within
    /// `32 * eps * sum_block |a q|`, scaling and accumulating the `k / 32` blocks adds
    /// `(k / 32 + 1)` roundings; the GEMM instead rounds `q * scale` once per weight
    /// (relative eps / 2) and accumulates in f32: both within `(k + 3) * eps * mag`.
    fn reference(&self) -> (Vec<f64>, f64) {
        let mut out = vec![0.0; self.m * self.n];
        let mut tol: f64 = 0.0;
        for i in 0..self.m {
            let row = &self.a[i * self.lda..i * self.lda + self.k];
            let abs_row: f64 = row.iter().map(|&v| (v as f64).abs()).sum();
            for j in 0..self.n {
                let bias = self.bias.as_ref().map_or(0.0, |b| b[j] as f64);
                let mut s = bias;
                let mut mag = bias.abs();
                for (kk, &x) in row.iter().enumerate() {
                    s += x as f64 * self.weight(j, kk);
                    let q = self.q[j * self.k + kk] as f64;
                    mag += match &self.format {
                        Format::Tensor { scale, .. } => (x as f64 * q * *scale as f64).abs(),
                        Format::Block(_) => (x as f64 * self.weight(j, kk)).abs(),
                    };
                }
                if let Format::Tensor { offset, .. } = self.format {
                    mag += (offset as f64).abs() * abs_row;
                }
                out[i * self.n + j] = s;
                tol = tol.max((self.k as f64 + 3.0) * f32::EPSILON as f64 * mag + 1e-30);
            }
        }
        (out, tol)
    }

    /// The packed weights (NaN-free: every byte is written by the packer).
    fn packed(&self) -> (Vec<i8>, Vec<f32>) {
        let mut b = vec![99; packed_i8_len(self.n, self.k)];
        pack_i8(&self.q, self.n, self.k, &mut b);
        let scales = match &self.format {
            Format::Block(s) => {
                let mut p = vec![f32::NAN; packed_block_scales_len(self.n, self.k)];
                pack_block_scales(s, self.n, self.k, &mut p);
                p
            }
            Format::Tensor { .. } => Vec::new(),
        };
        (b, scales)
    }

    /// Runs backend `B`'s GEMM; returns the `m x n` result after checking the padding
    /// columns between rows.
    fn run_gemm<B: Backend>(&self, b: &[i8], scales: &[f32]) -> Vec<f32> {
        let c_len = if self.m == 0 { 0 } else { (self.m - 1) * self.ldc + self.n };
        let mut c = vec![SENTINEL; c_len];
        let format = self.quant_format(scales);
        B::gemm_i8(self.geometry(), &self.a, b, format, self.bias.as_deref(), &mut c);
        let mut out = Vec::with_capacity(self.m * self.n);
        for i in 0..self.m {
            let row = &c[i * self.ldc..];
            out.extend_from_slice(&row[..self.n]);
            if i + 1 < self.m {
                assert!(
                    row[self.n..self.ldc].iter().all(|&v| v == SENTINEL),
                    "{}: row {i} padding written",
                    B::NAME
                );
            }
        }
        out
    }

    /// Runs backend `B`'s GEMV on row 0.
    fn run_gemv<B: Backend>(&self, b: &[i8], scales: &[f32]) -> Vec<f32> {
        let mut y = vec![SENTINEL; self.n];
        let (n, k, x, bias) = (self.n, self.k, &self.a[..self.k], self.bias.as_deref());
        B::gemv_i8(n, k, x, b, self.quant_format(scales), bias, &mut y);
        y
    }

    /// Runs backend `B`'s int8-activation GEMV on row 0.
    fn run_gemv_dot<B: Backend>(&self, b: &[i8], scales: &[f32]) -> Vec<f32> {
        let mut y = vec![SENTINEL; self.n];
        let (n, k, x, bias) = (self.n, self.k, &self.a[..self.k], self.bias.as_deref());
        B::gemv_i8_dot(n, k, x, b, self.quant_format(scales), bias, &mut y);
        y
    }

    fn label(&self, what: &str) -> String {
        let kind = match self.format {
            Format::Tensor { .. } => "per-tensor",
            Format::Block(_) => "block",
        };
        format!("{what} {kind} m={} n={} k={} bias={}", self.m, self.n, self.k, self.bias.is_some())
    }
}

fn max_err(got: &[f32], want: &[f64]) -> f64 {
    got.iter().zip(want).map(|(&g, &w)| (g as f64 - w).abs()).fold(0.0, f64::max)
}

/// Checks backend `B`'s GEMM on one problem; returns the max abs error and the tolerance.
fn check_gemm<B: Backend>(p: &Problem) -> (f64, f64) {
    let (want, tol) = p.reference();
    let (b, s) = p.packed();
    let got = p.run_gemm::<B>(&b, &s);
    assert_close(&p.label(&format!("{} gemm", B::NAME)), &got, &want, tol, 0.0);
    (max_err(&got, &want), tol)
}

/// Checks backend `B`'s GEMV on row 0 of one problem (the tolerance is the max over
/// all rows: problems used here have `m = 1` or a few rows).
fn check_gemv<B: Backend>(p: &Problem) -> (f64, f64) {
    let (want, tol) = p.reference();
    let want = &want[..p.n];
    let (b, s) = p.packed();
    let got = p.run_gemv::<B>(&b, &s);
    assert_close(&p.label(&format!("{} gemv", B::NAME)), &got, want, tol, 0.0);
    (max_err(&got, want), tol)
}

/// The extra error allowed for quantising the activations (the `sdot` path): per block
/// `b` of 32, `|x - d_b * round(x / d_b)| <= d_b / 2` with `d_b = max_b |x| / 127` (plus
/// the rounding of `x / d_b`, relative 2^-24 of 127, and of `d_b` itself), so output `j`
/// moves by at most `sum_b |w_scale| d_b / 2 sum_{k in b} |q[j, k]|`; 1% slack covers
/// those roundings and the f32 accumulation of the (slightly larger) quantised terms.
fn quantisation_bound(p: &Problem) -> f64 {
    let x = &p.a[..p.k];
    let mut worst: f64 = 0.0;
    for j in 0..p.n {
        let mut e = 0.0;
        for (b, xb) in x.chunks(BLOCK_K).enumerate() {
            let d = xb.iter().map(|&v| (v as f64).abs()).fold(0.0, f64::max) / 127.0;
            let qsum: f64 =
                (0..xb.len()).map(|i| (p.q[j * p.k + b * BLOCK_K + i] as f64).abs()).sum();
            let ws = match &p.format {
                Format::Tensor { scale, .. } => (*scale as f64).abs(),
                Format::Block(s) => (s[j * (p.k / BLOCK_K) + b] as f64).abs(),
            };
            e += ws * d / 2.0 * qsum;
        }
        worst = worst.max(e);
    }
    1.01 * worst
}

/// Sampled (m, n, k) covering every size 1..=33 of each dimension.
fn tail_shapes() -> Vec<(usize, usize, usize)> {
    let mut v = Vec::new();
    for t in 1..=33 {
        let (u, w) = ((t * 7) % 33 + 1, (t * 13) % 33 + 1);
        v.push((t, u, w));
        v.push((u, t, w));
        v.push((w, u, t));
    }
    v
}

/// Odd GEMM shapes: primes, one off the tiles, the Moonshine MLP (few rows), `m` across
/// the row block [`MC`] and `k` across the conversion block ([`KC`], and `2 * KC` on x86-64
/// AVX-512).
fn odd_shapes() -> Vec<(usize, usize, usize)> {
    vec![
        (7, 13, 5),
        (3, 1664, 416),
        (5, 416, 1664),
        (MC + 3, 40, KC + 44),
        (2 * MC + 1, 17, 2 * KC + 1),
        (81, 47, 63),
        (2, 16, 4),
        (1, 1, 1),
    ]
}

/// Worst error and the tolerance it was held to, for the printed summary.
#[derive(Default)]
struct Worst {
    err: f64,
    ratio: f64,
}

impl Worst {
    fn add(&mut self, (err, tol): (f64, f64)) {
        self.err = self.err.max(err);
        self.ratio = self.ratio.max(err / tol);
    }
}

impl std::fmt::Display for Worst {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "max abs err {:.2e} (max err/tol {:.3})", self.err, self.ratio)
    }
}

/// Prints a body's worst error, so the report can quote the measured errors
/// (`-- --nocapture`).
fn report<B: Backend>(what: &str, w: Worst) {
    println!("{}: {what}: {w}", B::NAME);
}

fn gemm_tensor<B: Backend>() {
    let mut r = rng(1);
    let mut w = Worst::default();
    for (idx, (m, n, k)) in tail_shapes().into_iter().chain(odd_shapes()).enumerate() {
        let (lda, ldc) = if idx % 2 == 0 { (k, n) } else { (k + 3, n + 5) };
        let p = Problem::new(&mut r, dims(m, n, k, lda, ldc), idx % 3 != 0, false);
        w.add(check_gemm::<B>(&p));
    }
    report::<B>("gemm per-tensor", w);
}

fn gemv_tensor<B: Backend>() {
    let mut r = rng(2);
    let mut w = Worst::default();
    let mut shapes: Vec<(usize, usize)> = (1..=33).map(|t| (t, (t * 13) % 33 + 1)).collect();
    shapes.extend((1..=33).map(|t| ((t * 7) % 33 + 1, t)));
    shapes.extend([(13, 7), (1664, 416), (416, 1664), (3328, 416), (47, 1), (1, 255), (40, 300)]);
    shapes.extend([(48, 9), (17, 1663), (413, 417)]);
    for (idx, &(n, k)) in shapes.iter().enumerate() {
        w.add(check_gemv::<B>(&Problem::new(&mut r, dims(1, n, k, k, n), idx % 2 == 0, false)));
    }
    report::<B>("gemv per-tensor", w);
}

/// Block sizes: `k` a multiple of 32, including across the GEMM's conversion block
/// ([`KC`], and `2 * KC` on x86-64 AVX-512).
const BLOCK_KS: [usize; 5] = [32, 64, 128, KC + 32, 2 * KC + 32];

fn gemm_block<B: Backend>() {
    let mut r = rng(3);
    let mut w = Worst::default();
    let mut shapes: Vec<(usize, usize, usize)> = (1..=33)
        .map(|t| (t, (t * 7) % 33 + 1, BLOCK_KS[t % 5]))
        .chain((1..=33).map(|t| ((t * 13) % 33 + 1, t, BLOCK_KS[(t + 2) % 5])))
        .collect();
    shapes.extend([(3, 1664, 416), (5, 416, 1664), (MC + 3, 40, KC + 64), (1, 1, 32)]);
    for (idx, (m, n, k)) in shapes.into_iter().enumerate() {
        let (lda, ldc) = if idx % 2 == 0 { (k, n) } else { (k + 1, n + 2) };
        let p = Problem::new(&mut r, dims(m, n, k, lda, ldc), idx % 3 != 0, true);
        w.add(check_gemm::<B>(&p));
    }
    report::<B>("gemm block", w);
}

fn gemv_block<B: Backend>() {
    let mut r = rng(4);
    let mut w = Worst::default();
    let mut shapes: Vec<(usize, usize)> = (1..=33).map(|t| (t, BLOCK_KS[t % 5])).collect();
    shapes.extend([(1664, 416), (416, 1664), (3328, 416), (64, 32), (17, 640)]);
    for (idx, &(n, k)) in shapes.iter().enumerate() {
        w.add(check_gemv::<B>(&Problem::new(&mut r, dims(1, n, k, k, n), idx % 2 == 0, true)));
    }
    report::<B>("gemv block", w);
}

/// General per-tensor parameters (an offset that is not a multiple of the scale, a
/// negative scale, a zero offset) on a few shapes.
fn general_parameters<B: Backend>() {
    let mut r = rng(5);
    for (idx, &(scale, offset)) in
        [(0.37f32, -1.3f32), (-2e-3, 5e-4), (1.0, 0.0)].iter().enumerate()
    {
        for &(m, n, k) in &[(1, 33, 17), (4, 20, 45), (1, 16, 64)] {
            let mut p = Problem::new(&mut r, dims(m, n, k, k, n), idx != 1, false);
            p.format = Format::Tensor { scale, offset };
            check_gemm::<B>(&p);
            check_gemv::<B>(&p);
        }
    }
}

/// The extreme codes -128 and 127 convert exactly: with power-of-two scales the whole
/// computation is exact.
fn extreme_codes<B: Backend>() {
    for &(code, k) in &[(-128i8, 37usize), (127, 64), (-128, 416)] {
        let n = 19;
        let q = vec![code; n * k];
        let mut b = vec![0; packed_i8_len(n, k)];
        pack_i8(&q, n, k, &mut b);
        let x = vec![1.0f32; k];
        let (scale, offset) = (0.0078125f32, 0.25f32);
        let tensor = QuantFormat::PerTensor { scale, offset };
        let want = scale * (code as f32 * k as f32) + offset * k as f32;
        let mut y = vec![0.0; n];
        B::gemv_i8(n, k, &x, &b, tensor, None, &mut y);
        assert!(y.iter().all(|&v| v == want), "{}: gemv code {code}: {y:?} != {want}", B::NAME);
        let mut c = vec![0.0; 2 * n];
        let a = [x.clone(), x.clone()].concat();
        B::gemm_i8(dims(2, n, k, k, n), &a, &b, tensor, None, &mut c);
        assert!(c.iter().all(|&v| v == want), "{}: gemm code {code}", B::NAME);
        // Block scales of 2^-7 everywhere: the same dot product without the offset.
        let scales = vec![0.0078125f32; n * k.div_ceil(BLOCK_K)];
        if k % BLOCK_K == 0 {
            let mut s = vec![0.0; packed_block_scales_len(n, k)];
            pack_block_scales(&scales, n, k, &mut s);
            let want = scale * (code as f32 * k as f32);
            B::gemv_i8(n, k, &x, &b, QuantFormat::Block(&s), None, &mut y);
            assert!(y.iter().all(|&v| v == want), "{}: block gemv code {code}", B::NAME);
            B::gemm_i8(dims(2, n, k, k, n), &a, &b, QuantFormat::Block(&s), None, &mut c);
            assert!(c.iter().all(|&v| v == want), "{}: block gemm code {code}", B::NAME);
        }
    }
}

/// `k = 0`: the product is the bias (or zero); `m = 0` / `n = 0`: nothing is written. The
/// same for the int8-activation GEMV.
fn degenerate<B: Backend>() {
    let bias = [1.0, 2.0, 3.0];
    let tensor = QuantFormat::PerTensor { scale: 0.5, offset: 0.25 };
    let mut c = [SENTINEL; 6];
    B::gemm_i8(dims(2, 3, 0, 0, 3), &[], &[], tensor, Some(&bias), &mut c);
    assert_eq!(c, [1.0, 2.0, 3.0, 1.0, 2.0, 3.0]);
    B::gemm_i8(dims(2, 3, 0, 0, 3), &[], &[], QuantFormat::Block(&[]), None, &mut c);
    assert_eq!(c, [0.0; 6]);
    let mut y = [SENTINEL; 3];
    B::gemv_i8(3, 0, &[], &[], tensor, Some(&bias), &mut y);
    assert_eq!(y, bias);
    let mut y = [SENTINEL; 3];
    B::gemv_i8(3, 0, &[], &[], QuantFormat::Block(&[]), None, &mut y);
    assert_eq!(y, [0.0; 3]);
    let mut y = [SENTINEL; 3];
    B::gemv_i8_dot(3, 0, &[], &[], tensor, Some(&bias), &mut y);
    assert_eq!(y, bias);
    let mut y = [SENTINEL; 3];
    B::gemv_i8_dot(3, 0, &[], &[], QuantFormat::Block(&[]), None, &mut y);
    assert_eq!(y, [0.0; 3]);
    let mut c = [SENTINEL; 2];
    let b = [0i8; PACK_NR * 4];
    let unit = QuantFormat::PerTensor { scale: 1.0, offset: 0.0 };
    B::gemm_i8(dims(0, 2, 4, 4, 2), &[], &b, unit, None, &mut c);
    B::gemm_i8(dims(2, 0, 4, 4, 0), &[0.0; 8], &[], unit, None, &mut c);
    B::gemv_i8(0, 4, &[0.0; 4], &[], unit, None, &mut []);
    B::gemv_i8_dot(0, 4, &[0.0; 4], &[], unit, None, &mut []);
    assert_eq!(c, [SENTINEL; 2]);
}

/// GEMV and a one-row GEMM compute the same thing.
fn gemv_matches_gemm<B: Backend>() {
    let mut r = rng(6);
    for &(n, k, block) in &[(33, 17, false), (100, 64, true), (16, 3, false), (40, 300, false)] {
        let p = Problem::new(&mut r, dims(1, n, k, k, n), true, block);
        let (_, tol) = p.reference();
        let (b, s) = p.packed();
        // Same products summed in a different order: both within tol of the reference.
        assert_close_f32(
            &p.label("gemv vs gemm"),
            &p.run_gemv::<B>(&b, &s),
            &p.run_gemm::<B>(&b, &s),
            2.0 * tol as f32,
            0.0,
        );
    }
}

/// Moonshine's decoder and encoder shapes with activations of the size a LayerNorm
/// output has (most within +-2.5, 1% of them 10x larger: LN gains and outlier channels),
/// per tensor and in blocks, with bias: GEMV `[n, k]` = 416 -> 416, 416 -> 3328,
/// 1664 -> 416; the GEMM on 83 rows (across the GEMM's 80-row block and 8-row tiles).
fn moonshine_magnitudes<B: Backend>() {
    let mut r = rng(8);
    let mut w = Worst::default();
    let ln_like = |r: &mut SmallRng, p: &mut Problem| {
        for v in p.a.iter_mut() {
            *v *= if r.gen_bool(0.01) { 25.0 } else { 2.5 };
        }
    };
    for (n, k) in [(416, 416), (3328, 416), (416, 1664)] {
        for block in [false, true] {
            let mut p = Problem::new(&mut r, dims(1, n, k, k, n), true, block);
            ln_like(&mut r, &mut p);
            w.add(check_gemv::<B>(&p));
        }
    }
    for (n, k) in [(416, 1664), (1664, 416)] {
        let mut p = Problem::new(&mut r, dims(83, n, k, k, n), true, false);
        ln_like(&mut r, &mut p);
        w.add(check_gemm::<B>(&p));
    }
    report::<B>("moonshine magnitudes", w);
}

/// The encoder's full GEMMs (413 rows) and the LM head's GEMV (416 -> 32768) against the
/// f64 reference, per tensor with bias. On x86-64 hosts only: under qemu the reference's
/// 0.6 G f64 multiply-adds take minutes per backend (the other bodies cover every kernel
/// path at smaller sizes).
fn full_size<B: Backend>() {
    if !cfg!(target_arch = "x86_64") {
        println!("{}: full size skipped (x86-64 hosts only)", B::NAME);
        return;
    }
    let mut r = rng(9);
    let mut w = Worst::default();
    for (m, n, k) in [(413, 1664, 416), (413, 416, 1664), (1, 32768, 416)] {
        let p = Problem::new(&mut r, dims(m, n, k, k, n), true, false);
        w.add(if m == 1 { check_gemv::<B>(&p) } else { check_gemm::<B>(&p) });
    }
    report::<B>("full size", w);
}

/// The backend and portable agree on the same inputs (both also checked against f64
/// above).
fn matches_portable<B: Backend>() {
    let mut r = rng(7);
    let shapes = tail_shapes().into_iter().step_by(3).chain([(37, 100, 300), (5, 1664, 416)]);
    for (idx, (m, n, k)) in shapes.enumerate() {
        // Different summation orders, fused or separate multiply-adds: each backend is
        // within tol of the f64 result, so within 2 tol of the other.
        for block in [false, true] {
            let k = if block { k.div_ceil(BLOCK_K) * BLOCK_K } else { k };
            let p = Problem::new(&mut r, dims(m, n, k, k + 1, n + 1), idx % 2 == 0, block);
            let (_, tol) = p.reference();
            let gemv_tol = 2.0 * tol as f32;
            let (b, s) = p.packed();
            let tol = 2.0 * tol as f32;
            let label = p.label(&format!("{} vs portable", B::NAME));
            assert_close_f32(
                &label,
                &p.run_gemm::<B>(&b, &s),
                &p.run_gemm::<Portable>(&b, &s),
                tol,
                0.0,
            );
            assert_close_f32(
                &label,
                &p.run_gemv::<B>(&b, &s),
                &p.run_gemv::<Portable>(&b, &s),
                gemv_tol,
                0.0,
            );
        }
    }
}

neon_runtime::backend_tests!(
    gemm_tensor,
    gemv_tensor,
    gemm_block,
    gemv_block,
    moonshine_magnitudes,
    general_parameters,
    extreme_codes,
    degenerate,
    gemv_matches_gemm,
    full_size,
    matches_portable,
    dot_path,
    dot_gemv,
    dot_block_magnitudes,
    dot_non_finite,
    widening_is_default,
);

// ------------------------------------------------------------------------------------
// The int8-activation (`dot`) GEMV: activations quantised to int8 per block of 32
// ------------------------------------------------------------------------------------

/// Which evaluation backend `B`'s `dot` GEMV runs here (printed with the errors).
fn dot_evaluation<B: Backend>() -> &'static str {
    if B::NAME == "neon" && neon_runtime::kernels::cpu::aarch64_dotprod() {
        "sdot"
    } else {
        "portable evaluation"
    }
}

/// `QuantKernels::gemv_i8_dot` (the int8-activation path a `QuantLinear` selects with
/// `QuantPath::Dot`), per tensor: within the f32 bound plus the activation quantisation
/// bound of the reference, for every tail of n and k, Moonshine's shapes and k past the
/// 2048-value quantisation chunk.
fn dot_path<B: Backend>() {
    let mut r = rng(40);
    let mut worst = Worst::default();
    let mut shapes: Vec<(usize, usize)> = (1..=33).map(|t| (t, (t * 13) % 33 + 1)).collect();
    shapes.extend((1..=33).map(|t| ((t * 7) % 33 + 1, t)));
    shapes.extend([(1664, 416), (416, 1664), (416, 416), (13, 2048 + 52), (33, 2 * 2048 + 37)]);
    for (idx, &(n, k)) in shapes.iter().enumerate() {
        let p = Problem::new(&mut r, dims(1, n, k, k, n), idx % 2 == 0, false);
        let (want, tol) = p.reference();
        let want = &want[..n];
        let tol = tol + quantisation_bound(&p);
        let (b, _) = p.packed();
        let y = p.run_gemv_dot::<B>(&b, &[]);
        assert_close(&p.label(&format!("{} gemv_i8_dot", B::NAME)), &y, want, tol, 0.0);
        worst.add((max_err(&y, want), tol));
    }
    println!("{} gemv_i8_dot ({}): {worst}", B::NAME, dot_evaluation::<B>());
}

/// Runs backend `B`'s `dot` GEMV on row 0 and checks it; returns (max err, tol,
/// rms err / rms output).
fn check_dot<B: Backend>(p: &Problem) -> (f64, f64, f64) {
    let (want, tol) = p.reference();
    let want = &want[..p.n];
    let tol = tol + quantisation_bound(p);
    let (b, s) = p.packed();
    let y = p.run_gemv_dot::<B>(&b, &s);
    let label = p.label(&format!("{} dot gemv", B::NAME));
    assert_close(&label, &y, want, tol, 0.0);
    // Relative RMS error, quoted in the report for the Moonshine shapes.
    let e2: f64 = y.iter().zip(want).map(|(&g, &w)| (g as f64 - w).powi(2)).sum();
    let w2: f64 = want.iter().map(|w| w * w).sum();
    if p.k >= 416 && p.n >= 416 {
        println!("{label}: rms err / rms y = {:.2e}", (e2 / w2).sqrt());
    }
    (max_err(&y, want), tol, (e2 / w2).sqrt())
}

/// Both formats: every tail of n and k, odd shapes, Moonshine's MLP, k past one
/// quantisation chunk ([`DOT_KC`]) with and without a partial last block.
fn dot_gemv<B: Backend>() {
    let mut r = rng(30);
    let mut worst = Worst::default();
    let mut rel: f64 = 0.0;
    let mut shapes: Vec<(usize, usize)> = (1..=33).map(|t| (t, (t * 13) % 33 + 1)).collect();
    shapes.extend((1..=33).map(|t| ((t * 7) % 33 + 1, t)));
    shapes.extend([(1664, 416), (416, 1664), (47, 1), (1, 255), (40, 300), (13, DOT_KC + 52)]);
    shapes.extend([(33, 2 * DOT_KC + 37), (16, DOT_KC), (3, 63)]);
    for (idx, &(n, k)) in shapes.iter().enumerate() {
        let p = Problem::new(&mut r, dims(1, n, k, k, n), idx % 2 == 0, false);
        let (e, t, q) = check_dot::<B>(&p);
        worst.add((e, t));
        rel = rel.max(q);
    }
    let how = dot_evaluation::<B>();
    println!("{} dot gemv per-tensor ({how}): {worst}, worst rms err / rms y {rel:.2e}", B::NAME);
    let (mut worst, mut rel) = (Worst::default(), 0.0f64);
    let mut shapes: Vec<(usize, usize)> = (1..=33).map(|t| (t, BLOCK_KS[t % 5])).collect();
    shapes.extend([(1664, 416), (416, 1664), (17, DOT_KC + 64), (40, 2 * DOT_KC + 32)]);
    for (idx, &(n, k)) in shapes.iter().enumerate() {
        let p = Problem::new(&mut r, dims(1, n, k, k, n), idx % 2 == 0, true);
        let (e, t, q) = check_dot::<B>(&p);
        worst.add((e, t));
        rel = rel.max(q);
    }
    println!("{} dot gemv block ({how}): {worst}, worst rms err / rms y {rel:.2e}", B::NAME);
}

/// Blocks of very different magnitudes, an all-zero block, tiny values: each block has
/// its own scale.
fn dot_block_magnitudes<B: Backend>() {
    let mut r = rng(31);
    let (n, k) = (37, 160);
    for block in [false, true] {
        let mut p = Problem::new(&mut r, dims(1, n, k, k, n), true, block);
        for (b, xb) in p.a.chunks_mut(BLOCK_K).enumerate() {
            let m = [1e-20f32, 1e3, 0.0, 1e-38, 1.0][b];
            xb.iter_mut().for_each(|v| *v *= m);
        }
        check_dot::<B>(&p);
    }
}

/// A NaN or infinite activation makes the outputs NaN (not silently finite).
fn dot_non_finite<B: Backend>() {
    let (n, k) = (20, 64);
    let q = vec![3i8; n * k];
    let mut b = vec![0; packed_i8_len(n, k)];
    pack_i8(&q, n, k, &mut b);
    for bad in [f32::NAN, f32::INFINITY] {
        let mut x = vec![0.5f32; k];
        x[40] = bad;
        let mut y = vec![0.0; n];
        let format = QuantFormat::PerTensor { scale: 0.01, offset: 0.0 };
        B::gemv_i8_dot(n, k, &x, &b, format, None, &mut y);
        assert!(y.iter().all(|v| v.is_nan()), "{}: {bad}: {y:?}", B::NAME);
    }
}

/// `gemv_i8` is the widening path whatever the CPU: within the f32 tolerance of the
/// reference, and different from the `dot` path (which quantises the activations).
fn widening_is_default<B: Backend>() {
    let mut r = rng(32);
    let p = Problem::new(&mut r, dims(1, 40, 96, 96, 40), true, false);
    check_gemv::<B>(&p);
    let (b, _) = p.packed();
    let via_gemv = p.run_gemv::<B>(&b, &[]);
    let via_dot = p.run_gemv_dot::<B>(&b, &[]);
    assert_ne!(via_gemv, via_dot, "{}: the dot path quantises activations", B::NAME);
}

#[test]
fn pack_layouts() {
    let (n, k) = (19, 6);
    let q: Vec<i8> = (0..n * k).map(|v| (v % 251) as i8).collect();
    let mut p = vec![99i8; packed_i8_len(n, k)];
    pack_i8(&q, n, k, &mut p);
    let kp = 8; // k rounded up to a whole group of 4
    assert_eq!(p.len(), 2 * PACK_NR * kp);
    for panel in 0..2 {
        for g in 0..kp / QUANT_KR {
            for j in 0..PACK_NR {
                for kk in 0..QUANT_KR {
                    let (col, kx) = (panel * PACK_NR + j, g * QUANT_KR + kk);
                    let want = if col < n && kx < k { q[col * k + kx] } else { 0 };
                    let at = panel * PACK_NR * kp + g * PACK_NR * QUANT_KR + j * QUANT_KR + kk;
                    assert_eq!(p[at], want, "panel {panel} group {g} output {j} k {kk}");
                }
            }
        }
    }
    // [k, n] input packs to the same bytes as its transpose.
    let qt: Vec<i8> = (0..k * n).map(|i| q[(i % n) * k + i / n]).collect();
    let mut pt = vec![99i8; packed_i8_len(n, k)];
    pack_i8_transposed(&qt, n, k, &mut pt);
    assert_eq!(p, pt);

    let (n, k) = (19, 64);
    let nb = k / BLOCK_K;
    let s: Vec<f32> = (0..n * nb).map(|v| v as f32).collect();
    let mut ps = vec![f32::NAN; packed_block_scales_len(n, k)];
    pack_block_scales(&s, n, k, &mut ps);
    assert_eq!(ps.len(), 2 * PACK_NR * nb);
    for panel in 0..2 {
        for b in 0..nb {
            for j in 0..PACK_NR {
                let col = panel * PACK_NR + j;
                let want = if col < n { s[col * nb + b] } else { 0.0 };
                assert_eq!(ps[(panel * nb + b) * PACK_NR + j], want);
            }
        }
    }
    let st: Vec<f32> = (0..nb * n).map(|i| s[(i % n) * nb + i / n]).collect();
    let mut pst = vec![f32::NAN; packed_block_scales_len(n, k)];
    pack_block_scales_transposed(&st, n, k, &mut pst);
    assert_eq!(ps, pst);
}

#[test]
#[should_panic(expected = "k not a multiple of 32")]
fn contract_block_k() {
    let mut y = [0.0; 4];
    let format = QuantFormat::Block(&[0.0; PACK_NR * 2]);
    Portable::gemv_i8(4, 40, &[0.0; 40], &[0; PACK_NR * 40], format, None, &mut y);
}

#[test]
#[should_panic(expected = "packed scales too short")]
fn contract_block_scales() {
    let mut c = [0.0; 8];
    let format = QuantFormat::Block(&[0.0; 31]);
    Portable::gemm_i8(dims(2, 4, 64, 64, 4), &[0.0; 128], &[0; PACK_NR * 64], format, None, &mut c);
}

#[test]
#[should_panic(expected = "packed b too short")]
fn contract_b_len() {
    let mut y = [0.0; 4];
    let format = QuantFormat::PerTensor { scale: 1.0, offset: 0.0 };
    Portable::gemv_i8(4, 5, &[0.0; 5], &[0; PACK_NR * 5], format, None, &mut y);
}

#[test]
#[should_panic(expected = "lda < k")]
fn contract_lda() {
    let mut c = [0.0; 8];
    let format = QuantFormat::PerTensor { scale: 1.0, offset: 0.0 };
    Portable::gemm_i8(dims(2, 4, 4, 3, 4), &[0.0; 8], &[0; PACK_NR * 4], format, None, &mut c);
}

#[cfg(all(target_arch = "aarch64", feature = "neon"))]
#[test]
#[should_panic(expected = "x length")]
fn contract_neon_x_len() {
    let mut y = [0.0; 4];
    let format = QuantFormat::PerTensor { scale: 1.0, offset: 0.0 };
    neon_runtime::Neon::gemv_i8(4, 4, &[0.0; 3], &[0; PACK_NR * 4], format, None, &mut y);
}

// ------------------------------------------------------------------------------------
// Operators
// ------------------------------------------------------------------------------------

#[cfg(feature = "alloc")]
mod operators {
    use super::*;
    use neon_runtime::ops::linear::LinearGeometry;
    use neon_runtime::ops::quant::{
        BlockQ8Linear, BlockQ8LinearGeometry, QuantLinear, QuantLinearGeometry,
    };
    use neon_runtime::ops::ShapeRule;
    use neon_runtime::{Error, Layout, Shape, ShapeError, TensorView, TensorViewMut};

    /// `[n, k]` -> `[k, n]`.
    fn transpose<T: Copy>(v: &[T], n: usize, k: usize) -> Vec<T> {
        (0..k * n).map(|i| v[(i % n) * k + i / n]).collect()
    }

    /// Runs `run` (backend `B`) on `p.a` as `[rows, k]` (and, for one row, as rank 1) and
    /// checks the result against the f64 reference.
    fn check_run(
        p: &Problem,
        what: &str,
        run: &dyn Fn(&TensorView, &mut TensorViewMut) -> Result<(), Error>,
    ) {
        let (want, tol) = p.reference();
        let (rows, k, n) = (p.m, p.k, p.n);
        let mut y = vec![f32::NAN; rows * n];
        let input = TensorView::new(&p.a, &[rows, k], Layout::FrameMajor).unwrap();
        let mut out = TensorViewMut::new(&mut y, &[rows, n], Layout::FrameMajor).unwrap();
        run(&input, &mut out).unwrap();
        assert_close(&p.label(what), &y, &want, tol, 0.0);
        if rows == 1 {
            // Rank 1: `[in_features] -> [out_features]`, any layout tag.
            y.fill(f32::NAN);
            let input = TensorView::new(&p.a, &[k], Layout::ChannelFirst).unwrap();
            let mut out = TensorViewMut::new(&mut y, &[n], Layout::ChannelFirst).unwrap();
            run(&input, &mut out).unwrap();
            assert_close(&p.label(what), &y, &want, tol, 0.0);
        }
    }

    const SHAPES: [(usize, usize, usize, bool); 7] = [
        (1, 13, 7, true),
        (1, 416, 1664, false),
        (2, 33, 17, false),
        (7, 5, 13, true),
        (37, 64, 48, true),
        (6, 416, 100, false),
        (3, 1664, 416, true),
    ];

    fn quant_linear<B: Backend>() {
        let mut r = rng(20);
        for &(rows, k, n, bias) in &SHAPES {
            let p = Problem::new(&mut r, dims(rows, n, k, k, n), bias, false);
            let Format::Tensor { scale, offset } = p.format else { unreachable!() };
            let b = p.bias.clone();
            let by_value = QuantLinear::new(p.q.clone(), scale, offset, b.clone(), k, n).unwrap();
            let by_slice =
                QuantLinear::from_slice(&p.q, scale, offset, b.as_deref(), k, n).unwrap();
            let qt = transpose(&p.q, n, k);
            let by_in_out =
                QuantLinear::from_in_out(&qt, scale, offset, b.as_deref(), k, n).unwrap();
            let (packed, _) = p.packed();
            let by_packed =
                QuantLinear::from_packed(&packed[..], scale, offset, b.as_deref(), k, n).unwrap();
            // The four constructors give the same operator.
            for op in [&by_slice, &by_in_out] {
                assert_eq!(op.packed_weight(), by_value.packed_weight());
                assert_eq!(op.bias(), by_value.bias());
            }
            assert_eq!(by_packed.packed_weight(), by_value.packed_weight());
            let g = QuantLinearGeometry { in_features: k, out_features: n, bias };
            assert_eq!(by_value.geometry(), g);
            assert_eq!((by_value.scale(), by_value.offset()), (scale, offset));
            assert_eq!(g.packed_weight_len(), packed.len());

            let what = format!("{} quant_linear", B::NAME);
            check_run(&p, &what, &|i, o| by_value.run::<B>(i, o));
            check_run(&p, &what, &|i, o| by_in_out.run::<B>(i, o));
            check_run(&p, &what, &|i, o| by_packed.run::<B>(i, o));
        }
    }

    fn block_q8_linear<B: Backend>() {
        let mut r = rng(21);
        for &(rows, k, n, bias) in &SHAPES {
            let k = k.div_ceil(BLOCK_K) * BLOCK_K;
            let p = Problem::new(&mut r, dims(rows, n, k, k, n), bias, true);
            let Format::Block(s) = &p.format else { unreachable!() };
            let b = p.bias.clone();
            let by_value = BlockQ8Linear::new(p.q.clone(), s.clone(), b.clone(), k, n).unwrap();
            let by_slice = BlockQ8Linear::from_slice(&p.q, s, b.as_deref(), k, n).unwrap();
            let (qt, st) = (transpose(&p.q, n, k), transpose(s, n, k / BLOCK_K));
            let by_in_out = BlockQ8Linear::from_in_out(&qt, &st, b.as_deref(), k, n).unwrap();
            let (packed, packed_scales) = p.packed();
            let by_packed =
                BlockQ8Linear::from_packed(&packed[..], &packed_scales[..], b.as_deref(), k, n)
                    .unwrap();
            for op in [&by_slice, &by_in_out] {
                assert_eq!(op.packed_weight(), by_value.packed_weight());
                assert_eq!(op.packed_scales(), by_value.packed_scales());
                assert_eq!(op.bias(), by_value.bias());
            }
            assert_eq!(by_packed.packed_scales(), by_value.packed_scales());
            let g = BlockQ8LinearGeometry { in_features: k, out_features: n, bias };
            assert_eq!(by_value.geometry(), g);
            assert_eq!(g.packed_scales_len(), packed_scales.len());

            let what = format!("{} block_q8_linear", B::NAME);
            check_run(&p, &what, &|i, o| by_value.run::<B>(i, o));
            check_run(&p, &what, &|i, o| by_in_out.run::<B>(i, o));
            check_run(&p, &what, &|i, o| by_packed.run::<B>(i, o));
        }
    }

    neon_runtime::backend_tests!(quant_linear, block_q8_linear);

    #[test]
    fn shape_rules() {
        let s = |d: &[usize]| Shape::new(d).unwrap();
        let g = QuantLinearGeometry { in_features: 8, out_features: 3, bias: true };
        assert_eq!(g.name(), "quant_linear");
        assert_eq!(g.output_shape(&[s(&[5, 8])]), Ok(s(&[5, 3])));
        assert_eq!(g.output_shape(&[s(&[8])]), Ok(s(&[3])));
        // The same rule as Linear, under its own name.
        let lin = LinearGeometry { in_features: 8, out_features: 3, bias: true };
        assert_eq!(g.linear(), lin);
        for x in [s(&[2, 5, 8]), s(&[5, 7]), s(&[4])] {
            let (a, b) = (g.output_shape(&[x]), lin.output_shape(&[x]));
            match (a, b) {
                (Err(ShapeError::Rank { op, got, .. }), Err(ShapeError::Rank { got: g2, .. })) => {
                    assert_eq!((op, got), ("quant_linear", g2))
                }
                (
                    Err(ShapeError::Dim { op, expected, got, .. }),
                    Err(ShapeError::Dim { expected: e2, got: g2, .. }),
                ) => assert_eq!((op, expected, got), ("quant_linear", e2, g2)),
                other => panic!("unexpected {other:?}"),
            }
        }
        assert!(matches!(g.output_shape::<usize>(&[]), Err(ShapeError::Geometry { .. })));
        let zero = QuantLinearGeometry { in_features: 0, out_features: 3, bias: false };
        assert!(matches!(
            zero.output_shape(&[s(&[5, 8])]),
            Err(ShapeError::Geometry { op: "quant_linear", .. })
        ));

        let b = BlockQ8LinearGeometry { in_features: 64, out_features: 5, bias: false };
        assert_eq!(b.name(), "block_q8_linear");
        assert_eq!(b.output_shape(&[s(&[7, 64])]), Ok(s(&[7, 5])));
        assert_eq!(b.output_shape(&[s(&[64])]), Ok(s(&[5])));
        assert!(matches!(
            b.output_shape(&[s(&[7, 32])]),
            Err(ShapeError::Dim { op: "block_q8_linear", axis: 1, expected: 64, got: 32, .. })
        ));
        let odd = BlockQ8LinearGeometry { in_features: 40, out_features: 5, bias: false };
        assert!(matches!(
            odd.output_shape(&[s(&[7, 40])]),
            Err(ShapeError::Geometry { op: "block_q8_linear", .. })
        ));
        assert_eq!(b.packed_weight_len(), packed_i8_len(5, 64));
        assert_eq!(b.packed_scales_len(), packed_block_scales_len(5, 64));
    }

    #[test]
    fn constructor_errors() {
        let q = vec![1i8; 12];
        let geometry_err = |e: Error| matches!(e, Error::Shape(ShapeError::Geometry { .. }));
        assert_eq!(
            QuantLinear::new(q.clone(), 0.1, 0.0, None, 4, 4).unwrap_err(),
            Error::Length { what: "weight", expected: 16, got: 12 }
        );
        assert_eq!(
            QuantLinear::from_slice(&q, 0.1, 0.0, Some(&[1.0; 2]), 4, 3).unwrap_err(),
            Error::Length { what: "bias", expected: 3, got: 2 }
        );
        assert_eq!(
            QuantLinear::from_in_out(&q, 0.1, 0.0, None, 3, 3).unwrap_err(),
            Error::Length { what: "weight", expected: 9, got: 12 }
        );
        assert!(geometry_err(QuantLinear::new(Vec::new(), 0.1, 0.0, None, 0, 3).unwrap_err()));
        assert!(geometry_err(QuantLinear::from_slice(&[], 0.1, 0.0, None, 3, 0).unwrap_err()));
        for (scale, offset) in
            [(f32::NAN, 0.0), (f32::INFINITY, 0.0), (0.1, f32::NAN), (0.1, -f32::INFINITY)]
        {
            assert!(geometry_err(
                QuantLinear::new(q.clone(), scale, offset, None, 4, 3).unwrap_err()
            ));
            assert!(geometry_err(
                QuantLinear::from_in_out(&q, scale, offset, None, 4, 3).unwrap_err()
            ));
            let packed = vec![0i8; packed_i8_len(3, 4)];
            assert!(geometry_err(
                QuantLinear::<_, &[f32]>::from_packed(&packed[..], scale, offset, None, 4, 3)
                    .unwrap_err()
            ));
        }
        assert_eq!(
            QuantLinear::<_, &[f32]>::from_packed(&q[..], 0.1, 0.0, None, 4, 3).unwrap_err(),
            Error::Length { what: "packed weight", expected: packed_i8_len(3, 4), got: 12 }
        );
        let packed = vec![0i8; packed_i8_len(3, 4)];
        assert!(matches!(
            QuantLinear::from_packed(&packed[..], 0.1, 0.0, Some(&[1.0f32; 4][..]), 4, 3),
            Err(Error::Length { what: "bias", .. })
        ));
        assert!(matches!(
            QuantLinear::<_, &[f32]>::from_packed(&packed[..], 0.1, 0.0, None, usize::MAX, 3),
            Err(Error::BadShape { .. } | Error::Length { .. })
        ));
        assert!(matches!(
            QuantLinear::from_slice(&q, 0.1, 0.0, None, usize::MAX, 3),
            Err(Error::BadShape { .. } | Error::Length { .. })
        ));

        // Block-int8.
        let (k, n) = (64, 3);
        let q = vec![1i8; n * k];
        let s = vec![0.5f32; n * k / BLOCK_K];
        assert!(BlockQ8Linear::from_slice(&q, &s, None, k, n).is_ok());
        assert!(geometry_err(BlockQ8Linear::from_slice(&q, &s, None, 48, 4).unwrap_err()));
        assert!(geometry_err(BlockQ8Linear::new(Vec::new(), Vec::new(), None, 0, 3).unwrap_err()));
        assert_eq!(
            BlockQ8Linear::from_slice(&q, &s[1..], None, k, n).unwrap_err(),
            Error::Length { what: "scales", expected: 6, got: 5 }
        );
        assert_eq!(
            BlockQ8Linear::from_in_out(&q[1..], &s, None, k, n).unwrap_err(),
            Error::Length { what: "weight", expected: n * k, got: n * k - 1 }
        );
        assert_eq!(
            BlockQ8Linear::new(q.clone(), s.clone(), Some(vec![0.0; 2]), k, n).unwrap_err(),
            Error::Length { what: "bias", expected: 3, got: 2 }
        );
        let mut bad = s.clone();
        bad[4] = f32::NAN;
        assert!(geometry_err(BlockQ8Linear::from_slice(&q, &bad, None, k, n).unwrap_err()));
        bad[4] = f32::NEG_INFINITY;
        assert!(geometry_err(BlockQ8Linear::from_in_out(&q, &bad, None, k, n).unwrap_err()));
        let packed = vec![0i8; packed_i8_len(n, k)];
        let mut packed_scales = vec![0.5f32; packed_block_scales_len(n, k)];
        assert!(BlockQ8Linear::from_packed(&packed[..], &packed_scales[..], None, k, n).is_ok());
        assert!(matches!(
            BlockQ8Linear::from_packed(&packed[..], &packed_scales[1..], None, k, n),
            Err(Error::Length { what: "scales", .. })
        ));
        assert!(matches!(
            BlockQ8Linear::from_packed(&packed[1..], &packed_scales[..], None, k, n),
            Err(Error::Length { what: "packed weight", .. })
        ));
        packed_scales[7] = f32::INFINITY;
        assert!(geometry_err(
            BlockQ8Linear::from_packed(&packed[..], &packed_scales[..], None, k, n).unwrap_err()
        ));
        assert!(matches!(
            BlockQ8Linear::from_slice(&q, &s, None, usize::MAX / 32 * 32, n),
            Err(Error::BadShape { .. } | Error::Length { .. })
        ));
    }

    /// Every run error is returned before anything is written, and the operator works
    /// afterwards; the same for both formats.
    fn run_errors<F>(k: usize, n: usize, run: F, want: &[f32])
    where
        F: Fn(&TensorView, &mut TensorViewMut) -> Result<(), Error>,
    {
        let x = vec![1.0f32; 2 * k + 1];
        let mut y = vec![7.0f32; 3 * n + 1];
        let go = |xd: &[usize], xl, yd: &[usize], yl, y: &mut [f32]| {
            let len = yd.iter().product();
            let input = TensorView::new(&x[..xd.iter().product()], xd, xl).unwrap();
            let mut out = TensorViewMut::new(&mut y[..len], yd, yl).unwrap();
            run(&input, &mut out)
        };
        let (fm, cf) = (Layout::FrameMajor, Layout::ChannelFirst);
        let shape_err = |e: Result<(), Error>| matches!(e, Err(Error::Shape(_)));
        // Wrong in_features, rank, layouts, output rows / features / rank.
        assert!(shape_err(go(&[2, k - 1], fm, &[2, n], fm, &mut y)));
        assert!(shape_err(go(&[1, 2, k], fm, &[2, n], fm, &mut y)));
        assert!(matches!(go(&[2, k], cf, &[2, n], fm, &mut y), Err(Error::Layout { .. })));
        assert!(matches!(go(&[2, k], fm, &[2, n], cf, &mut y), Err(Error::Layout { .. })));
        assert!(matches!(
            go(&[2, k], fm, &[3, n], fm, &mut y),
            Err(Error::Shape(ShapeError::Dim { arg: 1, axis: 0, expected: 2, got: 3, .. }))
        ));
        assert!(matches!(
            go(&[2, k], fm, &[2, n + 1], fm, &mut y),
            Err(Error::Shape(ShapeError::Dim { arg: 1, axis: 1, .. }))
        ));
        assert!(matches!(
            go(&[2, k], fm, &[2 * n], fm, &mut y),
            Err(Error::Shape(ShapeError::Rank { arg: 1, got: 1, .. }))
        ));
        assert!(matches!(
            go(&[k], fm, &[1, n], fm, &mut y),
            Err(Error::Shape(ShapeError::Rank { arg: 1, got: 2, .. }))
        ));
        assert!(shape_err(go(&[k], fm, &[n + 1], fm, &mut y)));
        assert!(y.iter().all(|&v| v == 7.0), "output written on error");
        // Still usable.
        go(&[2, k], fm, &[2, n], fm, &mut y).unwrap();
        assert_eq!(&y[..n], want);
        assert_eq!(&y[n..2 * n], want);
        go(&[k], fm, &[n], fm, &mut y).unwrap();
        assert_eq!(&y[..n], want);
    }

    #[test]
    fn run_errors_leave_output_and_operator_intact() {
        // x = ones: y[j] = scale * sum_k q[j, k] + offset * k + b[j], exact in f32 here.
        let (k, n) = (4, 3);
        let q: Vec<i8> = (0..n * k).map(|v| v as i8 - 5).collect();
        let (scale, offset) = (0.25f32, -0.5f32);
        let op =
            QuantLinear::new(q.clone(), scale, offset, Some(vec![1.0, 2.0, 3.0]), k, n).unwrap();
        let want: Vec<f32> = (0..n)
            .map(|j| {
                let s: i32 = q[j * k..j * k + k].iter().map(|&v| v as i32).sum();
                scale * s as f32 + offset * k as f32 + (j + 1) as f32
            })
            .collect();
        run_errors(k, n, |i, o| op.run::<Portable>(i, o), &want);

        let (k, n) = (32, 3);
        let q: Vec<i8> = (0..n * k).map(|v| (v % 7) as i8 - 3).collect();
        let op = BlockQ8Linear::new(q.clone(), vec![0.5; n], None, k, n).unwrap();
        let want: Vec<f32> = (0..n)
            .map(|j| 0.5 * q[j * k..j * k + k].iter().map(|&v| v as i32).sum::<i32>() as f32)
            .collect();
        run_errors(k, n, |i, o| op.run::<Portable>(i, o), &want);
    }

    #[test]
    fn send_sync() {
        fn assert_send_sync<T: Send + Sync>() {}
        assert_send_sync::<QuantLinear<Vec<i8>, Vec<f32>>>();
        assert_send_sync::<QuantLinear<&'static [i8], &'static [f32]>>();
        assert_send_sync::<BlockQ8Linear<Vec<i8>, Vec<f32>>>();
        assert_send_sync::<BlockQ8Linear<&'static [i8], &'static [f32]>>();
    }
}
