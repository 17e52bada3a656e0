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
//! decoder step): the 16 dot products of a 4 x 4 block share every `q` and `k` load,
//! each `v` row is loaded once per block for all 4 queries, and the probabilities enter
//! the accumulation as lanes (`fmla` by element). Loops run over `head_dim` in steps of 16
//! / 8, then 4, then a scalar tail (Moonshine's `head_dim` is 52). Keys past `n_i` in the
//! last block are masked to `-inf` (probability exactly 0) and read the last valid row, so
//! rows past `len` are never touched (they may hold anything, NaN included).
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
//! (`tests/attention.rs`) assert this bound against an f64 reference; over their cases the
//! measured errors stay below 7% of it (worst absolute error 1.4e-6 portable, 2.6e-7
//! NEON, with values in `[-1, 1]` and scores up to about 100; `--ignored measure` prints
//! them): the bound is worst-case, rounding errors are random.
//!
//! # Special values
//! Inputs are expected finite. NaN in a score (from NaN or infinite `q`, `k`) gives NaN
//! in that query's output for that head; rows of `k` and `v` past `len` are never read.

use super::activation::scalar;
use super::Portable;

/// Attention kernels.
pub trait AttentionKernels {
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
    );
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

/// `a . b` with 8 partial sums (vectorised by LLVM), then the tail.
#[inline(always)]
fn dot(a: &[f32], b: &[f32]) -> f32 {
    let mut acc = [0.0f32; 8];
    let mut ca = a.chunks_exact(8);
    let mut cb = b.chunks_exact(8);
    for (x, y) in (&mut ca).zip(&mut cb) {
        for i in 0..8 {
            acc[i] += x[i] * y[i];
        }
    }
    let mut tail = 0.0f32;
    for (x, y) in ca.remainder().iter().zip(cb.remainder()) {
        tail += x * y;
    }
    let s4 = [acc[0] + acc[4], acc[1] + acc[5], acc[2] + acc[6], acc[3] + acc[7]];
    ((s4[0] + s4[2]) + (s4[1] + s4[3])) + tail
}

/// `y += a x`.
#[inline(always)]
fn axpy(y: &mut [f32], a: f32, x: &[f32]) {
    for (y, x) in y.iter_mut().zip(x) {
        *y += a * x;
    }
}

/// `y *= a`.
#[inline(always)]
fn scale_slice(y: &mut [f32], a: f32) {
    for y in y.iter_mut() {
        *y *= a;
    }
}

impl AttentionKernels for Portable {
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
        let c =
            check((q.len(), k.len(), v.len(), out.len()), q_frames, len, heads, head_dim, causal);
        for (i, (qrow, orow)) in q.chunks_exact(c).zip(out.chunks_exact_mut(c)).enumerate() {
            let n = visible(i, q_frames, len, causal);
            for (h, (qh, acc)) in
                qrow.chunks_exact(head_dim).zip(orow.chunks_exact_mut(head_dim)).enumerate()
            {
                let off = h * head_dim;
                acc.fill(0.0);
                let (mut m, mut l) = (f32::NEG_INFINITY, 0.0f32);
                let mut j = 0;
                while j < n {
                    let nk = KB.min(n - j);
                    let mut s = [f32::NEG_INFINITY; KB];
                    for (t, st) in s[..nk].iter_mut().enumerate() {
                        *st = dot(qh, &k[(j + t) * c + off..][..head_dim]) * scale;
                    }
                    let mb =
                        s[..nk].iter().fold(f32::NEG_INFINITY, |a, &b| if b > a { b } else { a });
                    if mb > m {
                        if m > f32::NEG_INFINITY {
                            let alpha = scalar::exp(m - mb);
                            scale_slice(acc, alpha);
                            l *= alpha;
                        }
                        m = mb;
                    }
                    for (t, &st) in s[..nk].iter().enumerate() {
                        let p = scalar::exp(st - m);
                        l += p;
                        axpy(acc, p, &v[(j + t) * c + off..][..head_dim]);
                    }
                    j += nk;
                }
                scale_slice(acc, 1.0 / l);
            }
        }
    }
}

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

    /// Unscaled scores of `NQ` query rows against 4 key rows: lane `t` of `s[r]` is
    /// `q_r . k_t` over `hd` values.
    ///
    /// # Safety
    /// Every `qp[r]` and `kp[t]` points at `hd` readable f32 values.
    #[inline(always)]
    unsafe fn dots<const NQ: usize>(
        qp: &[*const f32; NQ],
        kp: &[*const f32; 4],
        hd: usize,
    ) -> [float32x4_t; NQ] {
        // SAFETY (whole body): every load reads `qp[r] + d ..` or `kp[t] + d ..` with
        // `d + width <= hd` (loop conditions), inside the rows the caller vouches for.
        unsafe {
            let z = vdupq_n_f32(0.0);
            let mut acc = [[z; 4]; NQ];
            let mut d = 0;
            if NQ == 1 {
                // One query: 16 values per step, two accumulators per key.
                let mut acc2 = [z; 4];
                while d + 16 <= hd {
                    let qv = vld1q_f32_x4(qp[0].add(d));
                    for t in 0..4 {
                        let kv = vld1q_f32_x4(kp[t].add(d));
                        acc[0][t] = vfmaq_f32(acc[0][t], qv.0, kv.0);
                        acc2[t] = vfmaq_f32(acc2[t], qv.1, kv.1);
                        acc[0][t] = vfmaq_f32(acc[0][t], qv.2, kv.2);
                        acc2[t] = vfmaq_f32(acc2[t], qv.3, kv.3);
                    }
                    d += 16;
                }
                for t in 0..4 {
                    acc[0][t] = vaddq_f32(acc[0][t], acc2[t]);
                }
            } else {
                // Several queries: 8 values per step, every loaded vector used NQ or 4 times.
                while d + 8 <= hd {
                    let kv: [float32x4x2_t; 4] = from_fn(|t| vld1q_f32_x2(kp[t].add(d)));
                    for r in 0..NQ {
                        let qv = vld1q_f32_x2(qp[r].add(d));
                        for t in 0..4 {
                            acc[r][t] = vfmaq_f32(acc[r][t], qv.0, kv[t].0);
                            acc[r][t] = vfmaq_f32(acc[r][t], qv.1, kv[t].1);
                        }
                    }
                    d += 8;
                }
            }
            while d + 4 <= hd {
                let kv: [float32x4_t; 4] = from_fn(|t| vld1q_f32(kp[t].add(d)));
                for r in 0..NQ {
                    let qv = vld1q_f32(qp[r].add(d));
                    for t in 0..4 {
                        acc[r][t] = vfmaq_f32(acc[r][t], qv, kv[t]);
                    }
                }
                d += 4;
            }
            // Horizontal sums: s[r] = [sum acc[r][0], .., sum acc[r][3]].
            let mut s: [float32x4_t; NQ] = from_fn(|r| {
                let a = &acc[r];
                vpaddq_f32(vpaddq_f32(a[0], a[1]), vpaddq_f32(a[2], a[3]))
            });
            while d < hd {
                let kd: [f32; 4] = from_fn(|t| *kp[t].add(d));
                let kv = vld1q_f32(kd.as_ptr());
                for r in 0..NQ {
                    s[r] = vfmaq_n_f32(s[r], kv, *qp[r].add(d));
                }
                d += 1;
            }
            s
        }
    }

    /// `o_r += sum_t p[r][t] v_t` for `NQ` output rows and 4 value rows of `hd` values.
    ///
    /// # Safety
    /// Every `op[r]` points at `hd` writable f32 values not aliased by anything else in use,
    /// every `vp[t]` at `hd` readable ones.
    #[inline(always)]
    unsafe fn accumulate<const NQ: usize>(
        op: &[*mut f32; NQ],
        vp: &[*const f32; 4],
        p: &[float32x4_t; NQ],
        hd: usize,
    ) {
        // SAFETY (whole body): every access is `op[r] + d ..` or `vp[t] + d ..` with
        // `d + width <= hd`, inside the rows the caller vouches for.
        unsafe {
            let mut d = 0;
            while d + 16 <= hd {
                let v: [float32x4x4_t; 4] = from_fn(|t| vld1q_f32_x4(vp[t].add(d)));
                for r in 0..NQ {
                    let a = vld1q_f32_x4(op[r].add(d));
                    let a = float32x4x4_t(
                        fma4(a.0, [v[0].0, v[1].0, v[2].0, v[3].0], p[r]),
                        fma4(a.1, [v[0].1, v[1].1, v[2].1, v[3].1], p[r]),
                        fma4(a.2, [v[0].2, v[1].2, v[2].2, v[3].2], p[r]),
                        fma4(a.3, [v[0].3, v[1].3, v[2].3, v[3].3], p[r]),
                    );
                    vst1q_f32_x4(op[r].add(d), a);
                }
                d += 16;
            }
            while d + 4 <= hd {
                let v: [float32x4_t; 4] = from_fn(|t| vld1q_f32(vp[t].add(d)));
                for r in 0..NQ {
                    vst1q_f32(op[r].add(d), fma4(vld1q_f32(op[r].add(d)), v, p[r]));
                }
                d += 4;
            }
            while d < hd {
                let vd: [f32; 4] = from_fn(|t| *vp[t].add(d));
                let vv = vld1q_f32(vd.as_ptr());
                for r in 0..NQ {
                    *op[r].add(d) += vaddvq_f32(vmulq_f32(p[r], vv));
                }
                d += 1;
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
        let off = h * g.hd;
        let ninf = f32::NEG_INFINITY;
        // SAFETY (whole body): query and output rows are `< q_frames`, key and value rows
        // `< kmax <= len` (the block's keys are clamped to `kmax - 1`), and every row is
        // read at `off .. off + hd <= c`; so each pointer handed to `dots`, `accumulate`
        // and `scale_row` points at `hd` values inside its slice, and the NQ output rows
        // are distinct.
        unsafe {
            let qp: [*const f32; NQ] = from_fn(|r| q.add((i0 + r) * g.c + off));
            let op: [*mut f32; NQ] = from_fn(|r| out.add((i0 + r) * g.c + off));
            let limit: [usize; NQ] = from_fn(|r| visible(i0 + r, g.q_frames, g.len, g.causal));
            let (kmin, kmax) = (limit[0], limit[NQ - 1]);
            for &o in &op {
                for d in 0..g.hd {
                    *o.add(d) = 0.0;
                }
            }
            let lanes = vld1q_u32([0u32, 1, 2, 3].as_ptr());
            let mut m = [ninf; NQ];
            let mut l = [vdupq_n_f32(0.0); NQ];
            let mut j = 0;
            while j < kmax {
                let kp: [*const f32; 4] = from_fn(|t| k.add((j + t).min(kmax - 1) * g.c + off));
                let vp: [*const f32; 4] = from_fn(|t| v.add((j + t).min(kmax - 1) * g.c + off));
                let s = dots::<NQ>(&qp, &kp, g.hd);
                let mut p = [vdupq_n_f32(0.0); NQ];
                for r in 0..NQ {
                    let mut sr = vmulq_n_f32(s[r], g.scale);
                    if j + 4 > kmin {
                        // Keys j + t >= limit[r] are masked (probability exactly 0).
                        let valid = limit[r].saturating_sub(j).min(4) as u32;
                        sr = vbslq_f32(vcltq_u32(lanes, vdupq_n_u32(valid)), sr, vdupq_n_f32(ninf));
                    }
                    let mb = vmaxvq_f32(sr);
                    if mb > m[r] {
                        if m[r] > ninf {
                            let alpha = scalar::exp(m[r] - mb);
                            scale_row(op[r], g.hd, alpha);
                            l[r] = vmulq_n_f32(l[r], alpha);
                        }
                        m[r] = mb;
                    }
                    p[r] = exp(vsubq_f32(sr, vdupq_n_f32(m[r])));
                    l[r] = vaddq_f32(l[r], p[r]);
                }
                accumulate::<NQ>(&op, &vp, &p, g.hd);
                j += 4;
            }
            for r in 0..NQ {
                scale_row(op[r], g.hd, 1.0 / vaddvq_f32(l[r]));
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
