//! Scaled dot-product attention over a KV cache, multi-head, frame-major, in one pass over
//! the keys with a running maximum (online softmax).
//!
//! Tensors, all frame-major with `channels = heads * head_dim` values per frame (head `h`
//! owns values `h * head_dim .. (h + 1) * head_dim` of a row):
//! - `q`: `[q_frames, channels]`;
//! - `k`, `v`: `[kv_frames, channels]` of which only the first `len` rows are read (a KV
//!   cache of capacity `kv_frames` holding `len` valid frames);
//! - `out`: `[q_frames, channels]`.
//!
//! Per head (Vaswani et al. 2017, "Attention Is All You Need", arXiv:1706.03762):
//! `out_i = sum_j w_ij v_j`, `w_ij = softmax_j(scale * q_i . k_j)` over the keys
//! `j < n_i`: `n_i = len`, or with `causal` `n_i = len - q_frames + i + 1` (the queries are
//! the last `q_frames` positions of the sequence and see no later key).
//!
//! # Algorithm
//! One pass over the keys per query with a running maximum `m` and a running sum `l`
//! (online softmax: Milakov & Gimelshein 2018, "Online normalizer calculation for
//! softmax", arXiv:1805.02867): keys are taken in blocks (4 on NEON, 8 portable); for each
//! block the scores are computed, and when the block's maximum exceeds `m`, the output
//! accumulator and `l` are rescaled by `exp(m_old - m_new)` (rare after the first blocks:
//! only when the maximum grows). Then `p_j = exp(s_j - m)`, `l += p_j` and
//! `acc += p_j v_j`; at the end `out = acc / l`. No score matrix is stored and nothing is
//! allocated: the accumulator is the output row itself, everything else is in registers
//! or on the stack. All sums are f32. The exponential is the runtime's vectorised
//! approximation ([`super::activation`], max relative error 8.3e-8).
//!
//! NEON processes 4 query rows at once (and single rows for the remainder, as in a
//! decoder step) against blocks of 4 keys: the 16 dot products of a 4 x 4 block share
//! every `q` and `k` load (an `asm!` loop over 8 values per step: 8 `ldp` with
//! post-increment, 32 `fmla`), and each `v` row is loaded once per block for the 4
//! queries, the probabilities entering as lanes (`asm!` loop over 16 values per step: 4
//! `ld1` of the value rows and, per query, `ld1`, 16 `fmla` by element, `st1`). Written
//! with intrinsics, LLVM spent one address addition per pointer and step (82.9 M
//! instructions for Moonshine's encoder layer instead of 69.2 M). Steps of 4 values and a
//! scalar tail cover any `head_dim` (Moonshine's is 52). Keys past `n_i` in the last
//! blocks are masked to `-inf` (probability exactly 0) and read the last valid row, so
//! rows past `len` are never touched (they may hold anything, NaN included).
//!
//! Cost (qemu instruction counts, `BENCHMARKS.md`): Moonshine's encoder layer (413 x 413,
//! 8 heads x 52) 69.2 M instructions, 4.10 FLOPs per instruction (`4 q k C` FLOPs); a
//! decoder step's single query over 400 frames 206 k, 3.2 (loads bound it: each `k` and
//! `v` value is used once). The portable backend: 309 M on the encoder shape.
//!
//! The portable kernel takes one query row at a time and blocks of 8 keys: 8-lane partial
//! sums for the dot products, the 8 exponentials, and the accumulation 4 output values at
//! a time over the 8 keys (each output value loaded and stored once per block). On
//! x86-64 the two inner loops are SSE2 intrinsics (the baseline; same operations in the
//! same order), because LLVM vectorises the plain loops into 2-lane pieces there.
//!
//! On x86-64 (hard-float, not under Miri) the portable backend runs AVX-512F or AVX2 + FMA
//! kernels instead when the CPU has them, at the f32 GEMM's level (module `x86`, file
//! `attention_x86.rs`: run-time detection with feature `std`): blocks of 16 (AVX2: 8)
//! queries, one per lane, against blocks of 8 keys, the queries transposed once per block
//! so that keys and values are broadcast from their rows; single queries (a decoder step)
//! take 16 (8) keys per lane vector. Host timings (one core of a Zen 5 VM, criterion
//! medians, `BENCHMARKS.md`): Moonshine's encoder layer 1.65 ms at AVX-512 (172 GFLOP/s,
//! 65% of the FMA peak), 3.25 ms at AVX2, 16.6 ms baseline; a decoder step's
//! cross-attention over 400 frames 18-19 µs (baseline 39 µs; bound by reading `k` and
//! `v`, 1.3 MB, from the last-level cache), self-attention over 200 cached frames
//! 7.6-8.6 µs (baseline 17.5 µs).
//!
//! # Accuracy
//! With `u = 2^-24`, `gamma_n = n u / (1 - n u)`, exact scaled scores `s_j` and weights
//! `w_j`: each computed score is within `D_j = gamma_(head_dim + 1) scale sum_d |q_d k_jd|`
//! (any summation order, plus the scaling); each probability `p_j` therefore carries a
//! relative error of at most `r_j = D_j + u |s_j - m| + 2 eps` (the shift by the common
//! maximum `m` cancels in the normalisation except for its rounding; `2 eps` bounds the
//! exponential); the sums of `p_j v_j` and of `p_j` are f32 sums of `n + n/4 + 2` terms
//! and rescalings at most. So per output value
//! `|error| <= (2 max_j r_j + 2 gamma_(n + n/4 + 2) + 3 u) sum_j w_j |v_j|`. The tests
//! (`tests/attention.rs`) assert this bound against an f64 reference, on x86-64 at every
//! level; over their cases the measured errors stay below 10% of it (worst absolute error
//! 1.5e-6 portable baseline and NEON, 1.9e-6 AVX2 and AVX-512, with values in `[-1, 1]`
//! and scores up to about 100; `--ignored measure` prints them): the bound is worst-case,
//! rounding errors are random.
//!
//! # Special values
//! Inputs are expected finite. NaN in a score (from NaN or infinite `q`, `k`) gives NaN
//! in that query's output for that head; rows of `k` and `v` past `len` are never read.

use super::activation::scalar;
use super::{BackendType, Portable, X86Isa, X86};

/// Attention kernels.
pub trait AttentionKernels: BackendType {
    /// Multi-head attention of `q` over the first `len` rows of `k` and `v` into `out`
    /// (layouts, masking and numerics: see the [module docs](self)). `channels = heads *
    /// head_dim`; `scale` multiplies the dot products (usually `1 / sqrt(head_dim)`).
    ///
    /// # Panics
    /// When `heads`, `head_dim` or `len` is 0, `q.len()` or `out.len()` is not
    /// `q_frames * channels`, `k.len()` or `v.len()` is below `len * channels`, or
    /// `causal` with `len < q_frames`.
    fn attention(
        q: &[f32],
        k: &[f32],
        v: &[f32],
        out: &mut [f32],
        q_frames: usize,
        len: usize,
        heads: usize,
        head_dim: usize,
        scale: f32,
        causal: bool,
    ) {
        let lens = (q.len(), k.len(), v.len(), out.len());
        let c = check(lens, q_frames, len, heads, head_dim, causal);
        let (rows, dims) = ((q_frames, len, causal), (c, head_dim));
        #[cfg(all(target_arch = "x86_64", target_feature = "sse2", not(miri)))]
        x86::attention_detected(q, (k, v), out, rows, dims, scale);
        #[cfg(not(all(target_arch = "x86_64", target_feature = "sse2", not(miri))))]
        portable_attention(q, (k, v), out, rows, dims, scale);
    }
}

/// Checks the kernel contract; returns `channels`.
fn check(
    (q_len, k_len, v_len, out_len): (usize, usize, usize, usize),
    q_frames: usize,
    len: usize,
    heads: usize,
    head_dim: usize,
    causal: bool,
) -> usize {
    assert!(heads > 0 && head_dim > 0, "attention: heads and head_dim must be >= 1");
    assert!(len > 0, "attention: len must be >= 1");
    let c = heads.checked_mul(head_dim).expect("attention: channels overflow");
    let qn = q_frames.checked_mul(c);
    assert_eq!(qn, Some(q_len), "attention: q length is not q_frames * channels");
    assert_eq!(qn, Some(out_len), "attention: out length is not q_frames * channels");
    let kn = len.checked_mul(c).expect("attention: len * channels overflows");
    assert!(k_len >= kn && v_len >= kn, "attention: k or v holds fewer than len rows");
    assert!(!causal || len >= q_frames, "attention: causal needs len >= q_frames");
    c
}

/// Keys visible to query row `i`.
#[inline(always)]
fn visible(i: usize, q_frames: usize, len: usize, causal: bool) -> usize {
    if causal {
        len - q_frames + i + 1
    } else {
        len
    }
}

// ---------------------------------------------------------------------------------------
// Portable
// ---------------------------------------------------------------------------------------

/// Keys per block of the portable kernel.
const KB: usize = 8;

/// Lanes of the portable kernel's fixed-width inner loops (one AVX vector, two SSE / NEON
/// vectors): wide enough for LLVM to vectorise and keep several accumulators in flight.
const LANES: usize = 8;

/// `q . k` (equal lengths): 8 partial sums over chunks of 8 values, then the tail.
#[inline(always)]
fn dot(q: &[f32], k: &[f32]) -> f32 {
    let (qc, qt) = q.as_chunks::<LANES>();
    let (kc, kt) = k.as_chunks::<LANES>();
    let a = lane_sums(qc, kc);
    let mut tail = 0.0f32;
    for (x, y) in qt.iter().zip(kt) {
        tail += x * y;
    }
    let s4 = [a[0] + a[4], a[1] + a[5], a[2] + a[6], a[3] + a[7]];
    ((s4[0] + s4[2]) + (s4[1] + s4[3])) + tail
}

/// `a[i] = sum_c q[c][i] k[c][i]`, the 8 partial sums of [`dot`].
#[cfg(not(all(target_arch = "x86_64", target_feature = "sse2")))]
#[inline(always)]
fn lane_sums(qc: &[[f32; LANES]], kc: &[[f32; LANES]]) -> [f32; LANES] {
    let mut a = [0.0f32; LANES];
    for (qv, kv) in qc.iter().zip(kc) {
        for i in 0..LANES {
            a[i] += qv[i] * kv[i];
        }
    }
    a
}

/// `y[i] += sum_t p[t] v[t][i]` over one chunk of 4 values.
#[cfg(not(all(target_arch = "x86_64", target_feature = "sse2")))]
#[inline(always)]
fn axpy_chunk(y: &mut [f32; 4], p: &[f32; KB], v: [&[f32; 4]; KB]) {
    let mut a = *y;
    for (vt, &pt) in v.iter().zip(p) {
        for i in 0..4 {
            a[i] += pt * vt[i];
        }
    }
    *y = a;
}

/// [`lane_sums`] in SSE2 intrinsics (the x86-64 baseline): the same 8 partial sums, bit
/// for bit (lanes `0..4` and `4..8` in two registers). LLVM's vectoriser turns the plain
/// loop into 2-lane pieces and shuffles on x86-64, about 3 times the instructions.
#[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
#[inline(always)]
fn lane_sums(qc: &[[f32; LANES]], kc: &[[f32; LANES]]) -> [f32; LANES] {
    use core::arch::x86_64::*;
    let mut a = [0.0f32; LANES];
    // SAFETY: SSE2 is enabled at compile time; every load reads 4 values inside one
    // 8-value chunk, the stores write 4 values inside `a`.
    unsafe {
        let (mut lo, mut hi) = (_mm_setzero_ps(), _mm_setzero_ps());
        for (qv, kv) in qc.iter().zip(kc) {
            let (q, k) = (qv.as_ptr(), kv.as_ptr());
            lo = _mm_add_ps(lo, _mm_mul_ps(_mm_loadu_ps(q), _mm_loadu_ps(k)));
            hi = _mm_add_ps(hi, _mm_mul_ps(_mm_loadu_ps(q.add(4)), _mm_loadu_ps(k.add(4))));
        }
        _mm_storeu_ps(a.as_mut_ptr(), lo);
        _mm_storeu_ps(a.as_mut_ptr().add(4), hi);
    }
    a
}

/// [`axpy_chunk`] in SSE2 intrinsics, the same operations in the same order.
#[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
#[inline(always)]
fn axpy_chunk(y: &mut [f32; 4], p: &[f32; KB], v: [&[f32; 4]; KB]) {
    use core::arch::x86_64::*;
    // SAFETY: SSE2 is enabled at compile time; every access is the 4 values of one array.
    unsafe {
        let mut a = _mm_loadu_ps(y.as_ptr());
        for (vt, &pt) in v.iter().zip(p) {
            a = _mm_add_ps(a, _mm_mul_ps(_mm_set1_ps(pt), _mm_loadu_ps(vt.as_ptr())));
        }
        _mm_storeu_ps(y.as_mut_ptr(), a);
    }
}

/// `y *= a`.
#[inline(always)]
fn scale_slice(y: &mut [f32], a: f32) {
    for y in y.iter_mut() {
        *y *= a;
    }
}

/// One query row of one head: `acc = softmax(scale q . k_j) v_j` over the rows `k[j]`,
/// `v[j]`, `j < n` (row `j` of head `h` at `j * c + off`).
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn portable_row(
    qh: &[f32],
    (k, v): (&[f32], &[f32]),
    (c, off): (usize, usize),
    n: usize,
    scale: f32,
    acc: &mut [f32],
) {
    let hd = qh.len();
    acc.fill(0.0);
    let (mut m, mut l) = (f32::NEG_INFINITY, 0.0f32);
    let mut j = 0;
    while j < n {
        let nk = KB.min(n - j);
        // Rows past the block's last key repeat it (their probability is 0).
        let krow: [&[f32]; KB] =
            core::array::from_fn(|t| &k[(j + t.min(nk - 1)) * c + off..][..hd]);
        let vrow: [&[f32]; KB] =
            core::array::from_fn(|t| &v[(j + t.min(nk - 1)) * c + off..][..hd]);
        let mut s = [f32::NEG_INFINITY; KB];
        for (t, st) in s[..nk].iter_mut().enumerate() {
            *st = dot(qh, krow[t]) * scale;
        }
        let mb = s.iter().fold(f32::NEG_INFINITY, |a, &b| if b > a { b } else { a });
        if mb > m {
            if m > f32::NEG_INFINITY {
                let alpha = scalar::exp(m - mb);
                scale_slice(acc, alpha);
                l *= alpha;
            }
            m = mb;
        }
        let mut p = [0.0f32; KB];
        for (pt, &st) in p.iter_mut().zip(&s) {
            *pt = scalar::exp(st - m);
        }
        let p4 = [p[0] + p[4], p[1] + p[5], p[2] + p[6], p[3] + p[7]];
        l += (p4[0] + p4[2]) + (p4[1] + p4[3]);
        // acc += sum_t p[t] v_t, 4 values of acc at a time (loaded and stored once per block).
        let (ac, at) = acc.as_chunks_mut::<4>();
        let nc = ac.len();
        let vc: [&[[f32; 4]]; KB] = vrow.map(|vt| &vt.as_chunks::<4>().0[..nc]);
        for (ci, a) in ac.iter_mut().enumerate() {
            axpy_chunk(a, &p, core::array::from_fn(|t| &vc[t][ci]));
        }
        for (dd, y) in at.iter_mut().enumerate() {
            for (vt, &pt) in vrow.iter().zip(&p) {
                *y += pt * vt[nc * 4 + dd];
            }
        }
        j += nk;
    }
    scale_slice(acc, 1.0 / l);
}

/// The portable kernel's body (after `check`), shared by the x86 builds of it.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn portable_attention(
    q: &[f32],
    (k, v): (&[f32], &[f32]),
    out: &mut [f32],
    (q_frames, len, causal): (usize, usize, bool),
    (c, head_dim): (usize, usize),
    scale: f32,
) {
    for (i, (qrow, orow)) in q.chunks_exact(c).zip(out.chunks_exact_mut(c)).enumerate() {
        let n = visible(i, q_frames, len, causal);
        for (h, (qh, acc)) in
            qrow.chunks_exact(head_dim).zip(orow.chunks_exact_mut(head_dim)).enumerate()
        {
            portable_row(qh, (k, v), (c, h * head_dim), n, scale, acc);
        }
    }
}

impl AttentionKernels for Portable {}

impl<I: X86Isa> AttentionKernels for X86<I> {}

// ---------------------------------------------------------------------------------------
// x86-64: AVX-512F and AVX2 + FMA
// ---------------------------------------------------------------------------------------

// Hard-float targets only (as the GEMM's x86 module); Miri cannot run the intrinsics.
#[cfg(all(target_arch = "x86_64", target_feature = "sse2", not(miri)))]
#[path = "attention_x86.rs"]
pub mod x86;

// ---------------------------------------------------------------------------------------
// NEON
// ---------------------------------------------------------------------------------------

#[cfg(all(target_arch = "aarch64", feature = "neon"))]
mod neon_impl {
    use super::super::activation::neon::exp;
    use super::super::activation::scalar;
    use super::super::Neon;
    use super::{check, visible, AttentionKernels};
    use core::arch::aarch64::*;
    use core::arch::asm;
    use core::array::from_fn;

    /// The geometry every row block shares.
    #[derive(Clone, Copy)]
    struct Geo {
        c: usize,
        hd: usize,
        len: usize,
        q_frames: usize,
        scale: f32,
        causal: bool,
    }

    /// `a + p[0] v[0] + p[1] v[1] + p[2] v[2] + p[3] v[3]` (`fmla` by element).
    #[inline(always)]
    fn fma4(a: float32x4_t, v: [float32x4_t; 4], p: float32x4_t) -> float32x4_t {
        // SAFETY: register-only NEON arithmetic; NEON is statically enabled (compile_error!
        // in kernels/mod.rs).
        unsafe {
            let a = vfmaq_laneq_f32::<0>(a, v[0], p);
            let a = vfmaq_laneq_f32::<1>(a, v[1], p);
            let a = vfmaq_laneq_f32::<2>(a, v[2], p);
            vfmaq_laneq_f32::<3>(a, v[3], p)
        }
    }

    /// 4 query rows against 4 keys over `n8 * 8` values (`asm!` loop: per 8 values 8 `ldp`
    /// with post-increment and 32 `fmla`): the partial sums `acc[r][t]` (4 lanes each); the
    /// pointers advance past the values read.
    ///
    /// # Safety
    /// Every `q[r]` and `k[t]` points at `8 * n8` readable f32 values.
    #[inline(always)]
    unsafe fn dots4_loop(
        q: &mut [*const f32; 4],
        k: &mut [*const f32; 4],
        n8: usize,
    ) -> [[float32x4_t; 4]; 4] {
        let (a0, a1, a2, a3, a4, a5, a6, a7);
        let (a8, a9, a10, a11, a12, a13, a14, a15);
        // SAFETY: the loop runs `n8` times and each pointer reads 8 values per step (the
        // caller vouches for `8 n8`); only the named registers are written; no stack, no
        // stores.
        unsafe {
            asm!(
                "movi v16.16b, #0",
                "movi v17.16b, #0",
                "movi v18.16b, #0",
                "movi v19.16b, #0",
                "movi v20.16b, #0",
                "movi v21.16b, #0",
                "movi v22.16b, #0",
                "movi v23.16b, #0",
                "movi v24.16b, #0",
                "movi v25.16b, #0",
                "movi v26.16b, #0",
                "movi v27.16b, #0",
                "movi v28.16b, #0",
                "movi v29.16b, #0",
                "movi v30.16b, #0",
                "movi v31.16b, #0",
                "cbz {n}, 3f",
                "2:",
                "ldp q0, q1, [{qp0}], #32",
                "ldp q2, q3, [{qp1}], #32",
                "ldp q4, q5, [{qp2}], #32",
                "ldp q6, q7, [{qp3}], #32",
                "ldp q8, q9, [{kp0}], #32",
                "fmla v16.4s, v0.4s, v8.4s",
                "fmla v20.4s, v2.4s, v8.4s",
                "fmla v24.4s, v4.4s, v8.4s",
                "fmla v28.4s, v6.4s, v8.4s",
                "fmla v16.4s, v1.4s, v9.4s",
                "fmla v20.4s, v3.4s, v9.4s",
                "fmla v24.4s, v5.4s, v9.4s",
                "fmla v28.4s, v7.4s, v9.4s",
                "ldp q10, q11, [{kp1}], #32",
                "fmla v17.4s, v0.4s, v10.4s",
                "fmla v21.4s, v2.4s, v10.4s",
                "fmla v25.4s, v4.4s, v10.4s",
                "fmla v29.4s, v6.4s, v10.4s",
                "fmla v17.4s, v1.4s, v11.4s",
                "fmla v21.4s, v3.4s, v11.4s",
                "fmla v25.4s, v5.4s, v11.4s",
                "fmla v29.4s, v7.4s, v11.4s",
                "ldp q12, q13, [{kp2}], #32",
                "fmla v18.4s, v0.4s, v12.4s",
                "fmla v22.4s, v2.4s, v12.4s",
                "fmla v26.4s, v4.4s, v12.4s",
                "fmla v30.4s, v6.4s, v12.4s",
                "fmla v18.4s, v1.4s, v13.4s",
                "fmla v22.4s, v3.4s, v13.4s",
                "fmla v26.4s, v5.4s, v13.4s",
                "fmla v30.4s, v7.4s, v13.4s",
                "ldp q14, q15, [{kp3}], #32",
                "fmla v19.4s, v0.4s, v14.4s",
                "fmla v23.4s, v2.4s, v14.4s",
                "fmla v27.4s, v4.4s, v14.4s",
                "fmla v31.4s, v6.4s, v14.4s",
                "fmla v19.4s, v1.4s, v15.4s",
                "fmla v23.4s, v3.4s, v15.4s",
                "fmla v27.4s, v5.4s, v15.4s",
                "fmla v31.4s, v7.4s, v15.4s",
                "subs {n}, {n}, #1",
                "b.ne 2b",
                "3:",
                qp0 = inout(reg) q[0],
                qp1 = inout(reg) q[1],
                qp2 = inout(reg) q[2],
                qp3 = inout(reg) q[3],
                kp0 = inout(reg) k[0],
                kp1 = inout(reg) k[1],
                kp2 = inout(reg) k[2],
                kp3 = inout(reg) k[3],
                n = inout(reg) n8 => _,
                out("v16") a0,
                out("v17") a1,
                out("v18") a2,
                out("v19") a3,
                out("v20") a4,
                out("v21") a5,
                out("v22") a6,
                out("v23") a7,
                out("v24") a8,
                out("v25") a9,
                out("v26") a10,
                out("v27") a11,
                out("v28") a12,
                out("v29") a13,
                out("v30") a14,
                out("v31") a15,
                out("v0") _, out("v1") _, out("v2") _, out("v3") _, out("v4") _, out("v5") _, out("v6") _, out("v7") _,
                out("v8") _, out("v9") _, out("v10") _, out("v11") _, out("v12") _, out("v13") _, out("v14") _, out("v15") _,
                options(nostack, readonly),
            );
        }
        let a = [a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15];
        from_fn(|r| from_fn(|t| a[4 * r + t]))
    }

    /// 1 query row against 4 keys over `n16 * 16` values (`asm!` loop: per 16 values 5
    /// `ld1` of 4 registers with post-increment and 16 `fmla`, two accumulators per key):
    /// the partial sums per key; the pointers advance past the values read.
    ///
    /// # Safety
    /// `q` and every `k[t]` point at `16 * n16` readable f32 values.
    #[inline(always)]
    unsafe fn dots1_loop(
        q: &mut *const f32,
        k: &mut [*const f32; 4],
        n16: usize,
    ) -> [float32x4_t; 4] {
        let (a0, a1, a2, a3);
        // SAFETY: as in `dots4_loop`, 16 values per pointer and step.
        unsafe {
            asm!(
                "movi v16.16b, #0",
                "movi v17.16b, #0",
                "movi v18.16b, #0",
                "movi v19.16b, #0",
                "movi v20.16b, #0",
                "movi v21.16b, #0",
                "movi v22.16b, #0",
                "movi v23.16b, #0",
                "cbz {n}, 3f",
                "2:",
                "ld1 {{v0.4s, v1.4s, v2.4s, v3.4s}}, [{qp0}], #64",
                "ld1 {{v4.4s, v5.4s, v6.4s, v7.4s}}, [{kp0}], #64",
                "fmla v16.4s, v0.4s, v4.4s",
                "fmla v20.4s, v1.4s, v5.4s",
                "fmla v16.4s, v2.4s, v6.4s",
                "fmla v20.4s, v3.4s, v7.4s",
                "ld1 {{v8.4s, v9.4s, v10.4s, v11.4s}}, [{kp1}], #64",
                "fmla v17.4s, v0.4s, v8.4s",
                "fmla v21.4s, v1.4s, v9.4s",
                "fmla v17.4s, v2.4s, v10.4s",
                "fmla v21.4s, v3.4s, v11.4s",
                "ld1 {{v4.4s, v5.4s, v6.4s, v7.4s}}, [{kp2}], #64",
                "fmla v18.4s, v0.4s, v4.4s",
                "fmla v22.4s, v1.4s, v5.4s",
                "fmla v18.4s, v2.4s, v6.4s",
                "fmla v22.4s, v3.4s, v7.4s",
                "ld1 {{v8.4s, v9.4s, v10.4s, v11.4s}}, [{kp3}], #64",
                "fmla v19.4s, v0.4s, v8.4s",
                "fmla v23.4s, v1.4s, v9.4s",
                "fmla v19.4s, v2.4s, v10.4s",
                "fmla v23.4s, v3.4s, v11.4s",
                "subs {n}, {n}, #1",
                "b.ne 2b",
                "3:",
                "fadd v16.4s, v16.4s, v20.4s",
                "fadd v17.4s, v17.4s, v21.4s",
                "fadd v18.4s, v18.4s, v22.4s",
                "fadd v19.4s, v19.4s, v23.4s",
                qp0 = inout(reg) *q,
                kp0 = inout(reg) k[0],
                kp1 = inout(reg) k[1],
                kp2 = inout(reg) k[2],
                kp3 = inout(reg) k[3],
                n = inout(reg) n16 => _,
                out("v16") a0,
                out("v17") a1,
                out("v18") a2,
                out("v19") a3,
                out("v0") _, out("v1") _, out("v2") _, out("v3") _, out("v4") _, out("v5") _, out("v6") _, out("v7") _, out("v8") _, out("v9") _, out("v10") _, out("v11") _,
                out("v20") _, out("v21") _, out("v22") _, out("v23") _,
                options(nostack, readonly),
            );
        }
        [a0, a1, a2, a3]
    }

    /// `o_r += sum_t p[r][t] v_t` for 4 rows over `n16 * 16` values (`asm!` loop: per 16
    /// values 4 `ld1` of the value rows, and per output row `ld1`, 16 `fmla` by element
    /// and `st1` with post-increment); the pointers advance past the values done.
    ///
    /// # Safety
    /// Every `o[r]` points at `16 * n16` writable f32 values not aliased by anything else
    /// in use, every `v[t]` at `16 * n16` readable ones.
    #[inline(always)]
    unsafe fn acc4_loop(
        o: &mut [*mut f32; 4],
        v: &mut [*const f32; 4],
        p: &[float32x4_t; 4],
        n16: usize,
    ) {
        // SAFETY: the loop runs `n16` times and each pointer reads (and for `o` writes)
        // 16 values per step, inside what the caller vouches for; only the named registers
        // are written.
        unsafe {
            asm!(
                "cbz {n}, 3f",
                "2:",
                "ld1 {{v16.4s, v17.4s, v18.4s, v19.4s}}, [{vp0}], #64",
                "ld1 {{v20.4s, v21.4s, v22.4s, v23.4s}}, [{vp1}], #64",
                "ld1 {{v24.4s, v25.4s, v26.4s, v27.4s}}, [{vp2}], #64",
                "ld1 {{v28.4s, v29.4s, v30.4s, v31.4s}}, [{vp3}], #64",
                "ld1 {{v4.4s, v5.4s, v6.4s, v7.4s}}, [{op0}]",
                "fmla v4.4s, v16.4s, v0.s[0]",
                "fmla v4.4s, v20.4s, v0.s[1]",
                "fmla v4.4s, v24.4s, v0.s[2]",
                "fmla v4.4s, v28.4s, v0.s[3]",
                "fmla v5.4s, v17.4s, v0.s[0]",
                "fmla v5.4s, v21.4s, v0.s[1]",
                "fmla v5.4s, v25.4s, v0.s[2]",
                "fmla v5.4s, v29.4s, v0.s[3]",
                "fmla v6.4s, v18.4s, v0.s[0]",
                "fmla v6.4s, v22.4s, v0.s[1]",
                "fmla v6.4s, v26.4s, v0.s[2]",
                "fmla v6.4s, v30.4s, v0.s[3]",
                "fmla v7.4s, v19.4s, v0.s[0]",
                "fmla v7.4s, v23.4s, v0.s[1]",
                "fmla v7.4s, v27.4s, v0.s[2]",
                "fmla v7.4s, v31.4s, v0.s[3]",
                "st1 {{v4.4s, v5.4s, v6.4s, v7.4s}}, [{op0}], #64",
                "ld1 {{v8.4s, v9.4s, v10.4s, v11.4s}}, [{op1}]",
                "fmla v8.4s, v16.4s, v1.s[0]",
                "fmla v8.4s, v20.4s, v1.s[1]",
                "fmla v8.4s, v24.4s, v1.s[2]",
                "fmla v8.4s, v28.4s, v1.s[3]",
                "fmla v9.4s, v17.4s, v1.s[0]",
                "fmla v9.4s, v21.4s, v1.s[1]",
                "fmla v9.4s, v25.4s, v1.s[2]",
                "fmla v9.4s, v29.4s, v1.s[3]",
                "fmla v10.4s, v18.4s, v1.s[0]",
                "fmla v10.4s, v22.4s, v1.s[1]",
                "fmla v10.4s, v26.4s, v1.s[2]",
                "fmla v10.4s, v30.4s, v1.s[3]",
                "fmla v11.4s, v19.4s, v1.s[0]",
                "fmla v11.4s, v23.4s, v1.s[1]",
                "fmla v11.4s, v27.4s, v1.s[2]",
                "fmla v11.4s, v31.4s, v1.s[3]",
                "st1 {{v8.4s, v9.4s, v10.4s, v11.4s}}, [{op1}], #64",
                "ld1 {{v4.4s, v5.4s, v6.4s, v7.4s}}, [{op2}]",
                "fmla v4.4s, v16.4s, v2.s[0]",
                "fmla v4.4s, v20.4s, v2.s[1]",
                "fmla v4.4s, v24.4s, v2.s[2]",
                "fmla v4.4s, v28.4s, v2.s[3]",
                "fmla v5.4s, v17.4s, v2.s[0]",
                "fmla v5.4s, v21.4s, v2.s[1]",
                "fmla v5.4s, v25.4s, v2.s[2]",
                "fmla v5.4s, v29.4s, v2.s[3]",
                "fmla v6.4s, v18.4s, v2.s[0]",
                "fmla v6.4s, v22.4s, v2.s[1]",
                "fmla v6.4s, v26.4s, v2.s[2]",
                "fmla v6.4s, v30.4s, v2.s[3]",
                "fmla v7.4s, v19.4s, v2.s[0]",
                "fmla v7.4s, v23.4s, v2.s[1]",
                "fmla v7.4s, v27.4s, v2.s[2]",
                "fmla v7.4s, v31.4s, v2.s[3]",
                "st1 {{v4.4s, v5.4s, v6.4s, v7.4s}}, [{op2}], #64",
                "ld1 {{v8.4s, v9.4s, v10.4s, v11.4s}}, [{op3}]",
                "fmla v8.4s, v16.4s, v3.s[0]",
                "fmla v8.4s, v20.4s, v3.s[1]",
                "fmla v8.4s, v24.4s, v3.s[2]",
                "fmla v8.4s, v28.4s, v3.s[3]",
                "fmla v9.4s, v17.4s, v3.s[0]",
                "fmla v9.4s, v21.4s, v3.s[1]",
                "fmla v9.4s, v25.4s, v3.s[2]",
                "fmla v9.4s, v29.4s, v3.s[3]",
                "fmla v10.4s, v18.4s, v3.s[0]",
                "fmla v10.4s, v22.4s, v3.s[1]",
                "fmla v10.4s, v26.4s, v3.s[2]",
                "fmla v10.4s, v30.4s, v3.s[3]",
                "fmla v11.4s, v19.4s, v3.s[0]",
                "fmla v11.4s, v23.4s, v3.s[1]",
                "fmla v11.4s, v27.4s, v3.s[2]",
                "fmla v11.4s, v31.4s, v3.s[3]",
                "st1 {{v8.4s, v9.4s, v10.4s, v11.4s}}, [{op3}], #64",
                "subs {n}, {n}, #1",
                "b.ne 2b",
                "3:",
                vp0 = inout(reg) v[0],
                vp1 = inout(reg) v[1],
                vp2 = inout(reg) v[2],
                vp3 = inout(reg) v[3],
                op0 = inout(reg) o[0],
                op1 = inout(reg) o[1],
                op2 = inout(reg) o[2],
                op3 = inout(reg) o[3],
                n = inout(reg) n16 => _,
                in("v0") p[0],
                in("v1") p[1],
                in("v2") p[2],
                in("v3") p[3],
                out("v4") _, out("v5") _, out("v6") _, out("v7") _, out("v8") _, out("v9") _, out("v10") _, out("v11") _,
                out("v16") _, out("v17") _, out("v18") _, out("v19") _, out("v20") _, out("v21") _, out("v22") _, out("v23") _,
                out("v24") _, out("v25") _, out("v26") _, out("v27") _, out("v28") _, out("v29") _, out("v30") _, out("v31") _,
                options(nostack),
            );
        }
    }

    /// `o += sum_t p[t] v_t` for 1 row over `n16 * 16` values (`asm!` loop: per 16 values 5
    /// `ld1`, 16 `fmla` by element and 1 `st1`, with post-increment).
    ///
    /// # Safety
    /// As [`acc4_loop`] for one output row.
    #[inline(always)]
    unsafe fn acc1_loop(o: &mut *mut f32, v: &mut [*const f32; 4], p: float32x4_t, n16: usize) {
        // SAFETY: as in `acc4_loop`.
        unsafe {
            asm!(
                "cbz {n}, 3f",
                "2:",
                "ld1 {{v16.4s, v17.4s, v18.4s, v19.4s}}, [{vp0}], #64",
                "ld1 {{v20.4s, v21.4s, v22.4s, v23.4s}}, [{vp1}], #64",
                "ld1 {{v24.4s, v25.4s, v26.4s, v27.4s}}, [{vp2}], #64",
                "ld1 {{v28.4s, v29.4s, v30.4s, v31.4s}}, [{vp3}], #64",
                "ld1 {{v4.4s, v5.4s, v6.4s, v7.4s}}, [{op0}]",
                "fmla v4.4s, v16.4s, v0.s[0]",
                "fmla v4.4s, v20.4s, v0.s[1]",
                "fmla v4.4s, v24.4s, v0.s[2]",
                "fmla v4.4s, v28.4s, v0.s[3]",
                "fmla v5.4s, v17.4s, v0.s[0]",
                "fmla v5.4s, v21.4s, v0.s[1]",
                "fmla v5.4s, v25.4s, v0.s[2]",
                "fmla v5.4s, v29.4s, v0.s[3]",
                "fmla v6.4s, v18.4s, v0.s[0]",
                "fmla v6.4s, v22.4s, v0.s[1]",
                "fmla v6.4s, v26.4s, v0.s[2]",
                "fmla v6.4s, v30.4s, v0.s[3]",
                "fmla v7.4s, v19.4s, v0.s[0]",
                "fmla v7.4s, v23.4s, v0.s[1]",
                "fmla v7.4s, v27.4s, v0.s[2]",
                "fmla v7.4s, v31.4s, v0.s[3]",
                "st1 {{v4.4s, v5.4s, v6.4s, v7.4s}}, [{op0}], #64",
                "subs {n}, {n}, #1",
                "b.ne 2b",
                "3:",
                vp0 = inout(reg) v[0],
                vp1 = inout(reg) v[1],
                vp2 = inout(reg) v[2],
                vp3 = inout(reg) v[3],
                op0 = inout(reg) *o,
                n = inout(reg) n16 => _,
                in("v0") p,
                out("v4") _, out("v5") _, out("v6") _, out("v7") _,
                out("v16") _, out("v17") _, out("v18") _, out("v19") _, out("v20") _, out("v21") _, out("v22") _, out("v23") _,
                out("v24") _, out("v25") _, out("v26") _, out("v27") _, out("v28") _, out("v29") _, out("v30") _, out("v31") _,
                options(nostack),
            );
        }
    }

    /// Unscaled scores of `NQ` (1 or 4) query rows against 4 key rows: lane `t` of `s[r]`
    /// is `q_r . k_t` over `hd` values. The bulk runs in [`dots4_loop`] / [`dots1_loop`],
    /// then steps of 4 values and a scalar tail.
    ///
    /// # Safety
    /// Every `q[r]` and `k[t]` points at `hd` readable f32 values.
    #[inline(always)]
    unsafe fn dots<const NQ: usize>(
        mut q: [*const f32; NQ],
        mut k: [*const f32; 4],
        hd: usize,
    ) -> [float32x4_t; NQ] {
        // SAFETY (whole body): `rest` counts the values left in every row; the loops read
        // at most `rest` values from the current pointers, which advance by as many.
        unsafe {
            let z = vdupq_n_f32(0.0);
            let mut acc = [[z; 4]; NQ];
            let mut rest = hd;
            if NQ == 4 {
                let mut q4: [*const f32; 4] = from_fn(|r| q[r.min(NQ - 1)]);
                let a = dots4_loop(&mut q4, &mut k, rest / 8);
                for r in 0..NQ {
                    (acc[r], q[r]) = (a[r], q4[r]);
                }
                rest %= 8;
            } else {
                acc[0] = dots1_loop(&mut q[0], &mut k, rest / 16);
                rest %= 16;
            }
            while rest >= 4 {
                let kv: [float32x4_t; 4] = from_fn(|t| vld1q_f32(k[t]));
                for kt in &mut k {
                    *kt = kt.add(4);
                }
                for r in 0..NQ {
                    let qv = vld1q_f32(q[r]);
                    q[r] = q[r].add(4);
                    for t in 0..4 {
                        acc[r][t] = vfmaq_f32(acc[r][t], qv, kv[t]);
                    }
                }
                rest -= 4;
            }
            // Horizontal sums: s[r] = [sum acc[r][0], .., sum acc[r][3]].
            let mut s: [float32x4_t; NQ] = from_fn(|r| {
                let a = &acc[r];
                vpaddq_f32(vpaddq_f32(a[0], a[1]), vpaddq_f32(a[2], a[3]))
            });
            for d in 0..rest {
                let kd: [f32; 4] = from_fn(|t| *k[t].add(d));
                let kv = vld1q_f32(kd.as_ptr());
                for r in 0..NQ {
                    s[r] = vfmaq_n_f32(s[r], kv, *q[r].add(d));
                }
            }
            s
        }
    }

    /// `o_r += sum_t p[r][t] v_t` for `NQ` (1 or 4) output rows and 4 value rows of `hd`
    /// values: [`acc4_loop`] / [`acc1_loop`] for blocks of 16 values, then steps of 4 and
    /// a scalar tail.
    ///
    /// # Safety
    /// Every `o[r]` points at `hd` writable f32 values not aliased by anything else in use,
    /// every `v[t]` at `hd` readable ones.
    #[inline(always)]
    unsafe fn accumulate<const NQ: usize>(
        mut o: [*mut f32; NQ],
        mut v: [*const f32; 4],
        p: &[float32x4_t; NQ],
        hd: usize,
    ) {
        // SAFETY (whole body): as in `dots`, every access stays within the `rest` values
        // left in the current rows.
        unsafe {
            let mut rest = hd;
            if NQ == 4 {
                let mut o4: [*mut f32; 4] = from_fn(|r| o[r.min(NQ - 1)]);
                let p4: [float32x4_t; 4] = from_fn(|r| p[r.min(NQ - 1)]);
                acc4_loop(&mut o4, &mut v, &p4, rest / 16);
                o.copy_from_slice(&o4[..NQ]);
            } else {
                acc1_loop(&mut o[0], &mut v, p[0], rest / 16);
            }
            rest %= 16;
            while rest >= 4 {
                let vv: [float32x4_t; 4] = from_fn(|t| vld1q_f32(v[t]));
                for vt in &mut v {
                    *vt = vt.add(4);
                }
                for r in 0..NQ {
                    vst1q_f32(o[r], fma4(vld1q_f32(o[r]), vv, p[r]));
                    o[r] = o[r].add(4);
                }
                rest -= 4;
            }
            for d in 0..rest {
                let vd: [f32; 4] = from_fn(|t| *v[t].add(d));
                let vv = vld1q_f32(vd.as_ptr());
                for r in 0..NQ {
                    *o[r].add(d) += vaddvq_f32(vmulq_f32(p[r], vv));
                }
            }
        }
    }

    /// `o[..hd] *= a`.
    ///
    /// # Safety
    /// `o` points at `hd` writable f32 values not aliased by anything else in use.
    #[inline(always)]
    unsafe fn scale_row(o: *mut f32, hd: usize, a: f32) {
        // SAFETY: every access is `o + d ..` with `d + width <= hd`.
        unsafe {
            let mut d = 0;
            while d + 4 <= hd {
                vst1q_f32(o.add(d), vmulq_n_f32(vld1q_f32(o.add(d)), a));
                d += 4;
            }
            while d < hd {
                *o.add(d) *= a;
                d += 1;
            }
        }
    }

    /// The running maximum of a row grows from `m` to `mb`: rescales the accumulator row
    /// (nothing to rescale while `m = -inf`, before the first key) and returns the factor
    /// `exp(m - mb)` for the running sum. Rare after the first block, hence out of line.
    ///
    /// # Safety
    /// As [`scale_row`].
    #[cold]
    #[inline(never)]
    unsafe fn raise_max(o: *mut f32, hd: usize, m: f32, mb: f32) -> f32 {
        if m == f32::NEG_INFINITY {
            return 0.0;
        }
        let alpha = scalar::exp(m - mb);
        // SAFETY: forwarded from the caller.
        unsafe { scale_row(o, hd, alpha) };
        alpha
    }

    /// One block of 4 keys for `NQ` query rows: scores, running maximum and sum,
    /// accumulation. With `MASK`, lane `t` of row `r` counts only when `t < valid[r]`.
    ///
    /// # Safety
    /// As [`dots`] and [`accumulate`].
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    unsafe fn block<const NQ: usize, const MASK: bool>(
        (q, o): ([*const f32; NQ], [*mut f32; NQ]),
        (k, v): ([*const f32; 4], [*const f32; 4]),
        m: &mut [f32; NQ],
        l: &mut [float32x4_t; NQ],
        valid: [usize; NQ],
        hd: usize,
        scale: f32,
    ) {
        // SAFETY: forwarded from the caller; the rest is register arithmetic.
        unsafe {
            let s = dots::<NQ>(q, k, hd);
            let mut p = [vdupq_n_f32(0.0); NQ];
            for r in 0..NQ {
                let mut sr = vmulq_n_f32(s[r], scale);
                if MASK {
                    let lanes = vld1q_u32([0u32, 1, 2, 3].as_ptr());
                    let keep = vcltq_u32(lanes, vdupq_n_u32(valid[r] as u32));
                    sr = vbslq_f32(keep, sr, vdupq_n_f32(f32::NEG_INFINITY));
                }
                let mb = vmaxvq_f32(sr);
                if mb > m[r] {
                    l[r] = vmulq_n_f32(l[r], raise_max(o[r], hd, m[r], mb));
                    m[r] = mb;
                }
                p[r] = exp(vsubq_f32(sr, vdupq_n_f32(m[r])));
                l[r] = vaddq_f32(l[r], p[r]);
            }
            accumulate::<NQ>(o, v, &p, hd);
        }
    }

    /// Query rows `i0 .. i0 + NQ` of head `h`: the online softmax over their keys.
    ///
    /// # Safety
    /// The pointers are the kernel's slices after `check` (so `q` and `out` hold
    /// `q_frames * c` values, `k` and `v` at least `len * c`), `i0 + NQ <= q_frames`,
    /// `(h + 1) * hd <= c`, and `out` is not aliased.
    #[inline(always)]
    unsafe fn rows<const NQ: usize>(
        (q, k, v, out): (*const f32, *const f32, *const f32, *mut f32),
        g: Geo,
        i0: usize,
        h: usize,
    ) {
        const { assert!(NQ == 1 || NQ == 4, "row blocks of 1 or 4 queries") };
        let (c, hd, off) = (g.c, g.hd, h * g.hd);
        // SAFETY (whole body): query and output rows are `< q_frames`, key and value rows
        // `< kmax <= len` (full blocks end at `full <= kmin`, the last keys are clamped to
        // `kmax - 1`), and every row is read at `off .. off + hd <= c`; so each pointer
        // handed to `block` and `scale_row` points at `hd` values inside its slice, and the
        // NQ output rows are distinct.
        unsafe {
            let qp: [*const f32; NQ] = from_fn(|r| q.add((i0 + r) * c + off));
            let op: [*mut f32; NQ] = from_fn(|r| out.add((i0 + r) * c + off));
            let limit: [usize; NQ] = from_fn(|r| visible(i0 + r, g.q_frames, g.len, g.causal));
            let (kmin, kmax) = (limit[0], limit[NQ - 1]);
            for &o in &op {
                for d in 0..hd {
                    *o.add(d) = 0.0;
                }
            }
            let mut m = [f32::NEG_INFINITY; NQ];
            let mut l = [vdupq_n_f32(0.0); NQ];
            // Blocks every row sees entirely: no masking, pointers advance by 4 rows.
            let full = kmin / 4 * 4;
            let (mut kb, mut vb) = (k.add(off), v.add(off));
            let mut j = 0;
            while j < full {
                let kp = [kb, kb.add(c), kb.add(2 * c), kb.add(3 * c)];
                let vp = [vb, vb.add(c), vb.add(2 * c), vb.add(3 * c)];
                block::<NQ, false>((qp, op), (kp, vp), &mut m, &mut l, limit, hd, g.scale);
                (kb, vb) = (kb.add(4 * c), vb.add(4 * c));
                j += 4;
            }
            // The rest (at most 2 blocks for NQ = 4): masked, keys clamped to `kmax - 1`.
            while j < kmax {
                let kp = from_fn(|t| k.add((j + t).min(kmax - 1) * c + off));
                let vp = from_fn(|t| v.add((j + t).min(kmax - 1) * c + off));
                let valid = from_fn(|r| limit[r].saturating_sub(j).min(4));
                block::<NQ, true>((qp, op), (kp, vp), &mut m, &mut l, valid, hd, g.scale);
                j += 4;
            }
            for r in 0..NQ {
                scale_row(op[r], hd, 1.0 / vaddvq_f32(l[r]));
            }
        }
    }

    impl AttentionKernels for Neon {
        fn attention(
            q: &[f32],
            k: &[f32],
            v: &[f32],
            out: &mut [f32],
            q_frames: usize,
            len: usize,
            heads: usize,
            head_dim: usize,
            scale: f32,
            causal: bool,
        ) {
            let lens = (q.len(), k.len(), v.len(), out.len());
            let c = check(lens, q_frames, len, heads, head_dim, causal);
            let g = Geo { c, hd: head_dim, len, q_frames, scale, causal };
            let ptrs = (q.as_ptr(), k.as_ptr(), v.as_ptr(), out.as_mut_ptr());
            for h in 0..heads {
                let mut i = 0;
                while i + 4 <= q_frames {
                    // SAFETY: `check` established the slice lengths, `i + 4 <= q_frames`,
                    // `h < heads`, and `out` is a unique borrow.
                    unsafe { rows::<4>(ptrs, g, i, h) };
                    i += 4;
                }
                while i < q_frames {
                    // SAFETY: as above with `i < q_frames`.
                    unsafe { rows::<1>(ptrs, g, i, h) };
                    i += 1;
                }
            }
        }
    }
}
