//! The test problem: random int8 weights of either format, activations, bias; the f64
//! reference and its tolerance; the shapes the suites share and their error summaries.

use crate::common::{assert_close, uniform};
use neon_runtime::kernels::quant::{
    pack_block_scales, pack_i8, packed_block_scales_len, packed_i8_len, QuantFormat, QuantGemm,
    QuantPath, QuantWeights, BLOCK_K, KC, MC,
};
use neon_runtime::kernels::Serial;
use neon_runtime::Backend;
use rand::rngs::SmallRng;
use rand::Rng;

/// Value written around and between the output rows: columns past `n` must keep it.
pub(crate) const SENTINEL: f32 = 1234.5;

/// How the test weights are scaled.
#[derive(Clone, Debug)]
pub(crate) enum Format {
    /// `W = q * scale + offset`.
    Tensor { scale: f32, offset: f32 },
    /// `W = q * scales[j * (k / 32) + k / 32]` (`[n, k / 32]`, unpacked).
    Block(Vec<f32>),
}

/// Moonshine-like per-tensor parameters: scale in [1e-3, 1e-2), `offset = scale * z` with
/// an integer `z` in -65..=25 (as shipped: `offset / scale` is an exact integer).
pub(crate) fn moonshine_format(r: &mut SmallRng) -> Format {
    let scale = r.gen_range(1e-3f32..1e-2);
    let z = r.gen_range(-65i32..=25);
    Format::Tensor { scale, offset: scale * z as f32 }
}

/// Block scales in [1e-3, 2e-2), a few negative (symmetric format: any sign works).
pub(crate) fn block_format(r: &mut SmallRng, n: usize, k: usize) -> Format {
    let s = (0..n * k / BLOCK_K)
        .map(|_| r.gen_range(1e-3f32..2e-2) * if r.gen_bool(0.1) { -1.0 } else { 1.0 })
        .collect();
    Format::Block(s)
}

pub(crate) fn int8(r: &mut SmallRng, len: usize) -> Vec<i8> {
    (0..len).map(|_| r.gen_range(-128i32..=127) as i8).collect()
}

/// One problem: `C = A · W^T + bias` with `W` int8-quantised, `A` rows `lda` apart, `C`
/// rows `ldc` apart.
pub(crate) struct Problem {
    pub(crate) m: usize,
    pub(crate) n: usize,
    pub(crate) k: usize,
    pub(crate) lda: usize,
    pub(crate) ldc: usize,
    pub(crate) a: Vec<f32>,
    /// `[n, k]`.
    pub(crate) q: Vec<i8>,
    pub(crate) format: Format,
    pub(crate) bias: Option<Vec<f32>>,
}

/// The kernels' weights operand.
pub(crate) fn wts<'a>(
    packed: &'a [i8],
    format: QuantFormat<'a>,
    bias: Option<&'a [f32]>,
) -> QuantWeights<'a> {
    QuantWeights { packed, format, bias }
}

/// The geometry `m x k -> n`, rows of `A` `lda` apart, of `C` `ldc` apart.
pub(crate) fn dims(m: usize, n: usize, k: usize, lda: usize, ldc: usize) -> QuantGemm {
    QuantGemm { m, n, k, lda, ldc }
}

impl Problem {
    pub(crate) fn new(r: &mut SmallRng, g: QuantGemm, bias: bool, block: bool) -> Self {
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

    pub(crate) fn geometry(&self) -> QuantGemm {
        dims(self.m, self.n, self.k, self.lda, self.ldc)
    }

    /// The kernels' weights operand: the packed codes `b`, the format (with `scales` the
    /// packed block scales, [`Self::packed`]) and the bias.
    pub(crate) fn weights<'a>(&'a self, b: &'a [i8], scales: &'a [f32]) -> QuantWeights<'a> {
        let format = match self.format {
            Format::Tensor { scale, offset } => QuantFormat::PerTensor { scale, offset },
            Format::Block(_) => QuantFormat::Block(scales),
        };
        wts(b, format, self.bias.as_deref())
    }

    /// `W[j, kk]` dequantised in f64.
    pub(crate) fn weight(&self, j: usize, kk: usize) -> f64 {
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
    /// (relative eps / 2) and accumulates in f32: both within `(k + 3) * eps * mag`. The
    /// per-tensor GEMM likewise multiplies by dequantised weights `q * scale + offset`
    /// (one rounding fused, two in portable code: within `eps (|scale q| + |offset|)`),
    /// and `sum |a w| <= |scale| sum |a q| + |offset| sum |a|`: within the same bound.
    pub(crate) fn reference(&self) -> (Vec<f64>, f64) {
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
    pub(crate) fn packed(&self) -> (Vec<i8>, Vec<f32>) {
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
    pub(crate) fn run_gemm<B: Backend>(&self, b: &[i8], scales: &[f32]) -> Vec<f32> {
        self.run_gemm_with::<B>(b, scales, B::gemm_i8)
    }

    /// Runs backend `B`'s int8-activation GEMM; returns the `m x n` result after checking
    /// the padding columns between rows.
    pub(crate) fn run_gemm_dot<B: Backend>(&self, b: &[i8], scales: &[f32]) -> Vec<f32> {
        self.run_gemm_with::<B>(b, scales, B::gemm_i8_dot)
    }

    /// Runs backend `B`'s [`QuantPath::Mmla`] GEMM (`gemm_i8_in` on [`Serial`]); as
    /// [`Problem::run_gemm`].
    pub(crate) fn run_gemm_mmla<B: Backend>(&self, b: &[i8], scales: &[f32]) -> Vec<f32> {
        self.run_gemm_with::<B>(b, scales, |g, a, w, c| {
            B::gemm_i8_in(&Serial, QuantPath::Mmla, g, a, w, c).expect("serial GEMM")
        })
    }

    /// Runs `gemm` (a GEMM entry point of backend `B`); as [`Problem::run_gemm`].
    fn run_gemm_with<B: Backend>(
        &self,
        b: &[i8],
        scales: &[f32],
        gemm: fn(QuantGemm, &[f32], QuantWeights<'_>, &mut [f32]),
    ) -> Vec<f32> {
        let c_len = if self.m == 0 { 0 } else { (self.m - 1) * self.ldc + self.n };
        let mut c = vec![SENTINEL; c_len];
        gemm(self.geometry(), &self.a, self.weights(b, scales), &mut c);
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
    pub(crate) fn run_gemv<B: Backend>(&self, b: &[i8], scales: &[f32]) -> Vec<f32> {
        let mut y = vec![SENTINEL; self.n];
        B::gemv_i8(self.n, self.k, &self.a[..self.k], self.weights(b, scales), &mut y);
        y
    }

    /// Runs backend `B`'s int8-activation GEMV on row 0.
    pub(crate) fn run_gemv_dot<B: Backend>(&self, b: &[i8], scales: &[f32]) -> Vec<f32> {
        let mut y = vec![SENTINEL; self.n];
        B::gemv_i8_dot(self.n, self.k, &self.a[..self.k], self.weights(b, scales), &mut y);
        y
    }

    pub(crate) fn label(&self, what: &str) -> String {
        let kind = match self.format {
            Format::Tensor { .. } => "per-tensor",
            Format::Block(_) => "block",
        };
        format!("{what} {kind} m={} n={} k={} bias={}", self.m, self.n, self.k, self.bias.is_some())
    }
}

pub(crate) fn max_err(got: &[f32], want: &[f64]) -> f64 {
    got.iter().zip(want).map(|(&g, &w)| (g as f64 - w).abs()).fold(0.0, f64::max)
}

/// Checks backend `B`'s GEMM on one problem; returns the max abs error and the tolerance.
pub(crate) fn check_gemm<B: Backend>(p: &Problem) -> (f64, f64) {
    let (want, tol) = p.reference();
    let (b, s) = p.packed();
    let got = p.run_gemm::<B>(&b, &s);
    assert_close(&p.label(&format!("{} gemm", B::NAME)), &got, &want, tol, 0.0);
    (max_err(&got, &want), tol)
}

/// Checks backend `B`'s GEMV on row 0 of one problem (the tolerance is the max over
/// all rows: problems used here have `m = 1` or a few rows).
pub(crate) fn check_gemv<B: Backend>(p: &Problem) -> (f64, f64) {
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
/// The worst over every row and output.
pub(crate) fn quantisation_bound(p: &Problem) -> f64 {
    let mut worst: f64 = 0.0;
    for (i, j) in (0..p.m).flat_map(|i| (0..p.n).map(move |j| (i, j))) {
        let x = &p.a[i * p.lda..i * p.lda + p.k];
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

/// [`crate::common::tail_shapes`], without the diagonal.
pub(crate) fn tail_shapes() -> Vec<(usize, usize, usize)> {
    crate::common::tail_shapes(false)
}

/// Odd GEMM shapes: primes, one off the tiles, the Moonshine MLP (few rows), `m` across
/// the row block [`MC`] and `k` across the conversion block ([`KC`], and `2 * KC` on x86-64
/// AVX-512).
pub(crate) fn odd_shapes() -> Vec<(usize, usize, usize)> {
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
pub(crate) struct Worst {
    pub(crate) err: f64,
    pub(crate) ratio: f64,
}

impl Worst {
    pub(crate) fn add(&mut self, (err, tol): (f64, f64)) {
        self.err = self.err.max(err);
        self.ratio = self.ratio.max(err / tol);
    }
}

impl std::fmt::Display for Worst {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "max abs err {:.2e} (max err/tol {:.3})", self.err, self.ratio)
    }
}

/// Block sizes: `k` a multiple of 32, including across the GEMM's conversion block
/// ([`KC`], and `2 * KC` on x86-64 AVX-512).
pub(crate) const BLOCK_KS: [usize; 5] = [32, 64, 128, KC + 32, 2 * KC + 32];
