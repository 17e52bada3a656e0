//! The AVX2 + FMA kernels of [`X86<Avx2>`](crate::kernels::X86) (the contracts of the
//! trait's entry points, already checked, with `n, k >= 1`; a CPU with AVX2 and FMA). The
//! GEMV and the conversion are described in [`super`].

// Accumulator arrays are indexed by constant loop counters on purpose: fully unrolled,
// every element stays in its own register.
#![allow(clippy::needless_range_loop)]

use super::super::{
    k_padded, Dequant, Gemv, QuantFormat, QuantWeights, BLOCK_K, GROUP, PACK_NR, QUANT_KR,
};
use super::x_tail;
use core::arch::x86_64::*;

/// `vpermps` indices ordering the reduced lanes: after two `vhaddps`, the lanes hold
/// outputs 0, 2, 4, 6, 1, 3, 5, 7.
const OUT_ORDER: [i32; 8] = [0, 4, 1, 5, 2, 6, 3, 7];

/// The 8 dot products from 4 accumulators (accumulator `i`, lanes `4l..4l + 4`:
/// output `2i + l` at the 4 positions in the group).
#[inline]
#[target_feature(enable = "avx2,fma")]
fn reduce(acc: &[__m256], order: __m256i) -> __m256 {
    let h01 = _mm256_hadd_ps(acc[0], acc[1]);
    let h23 = _mm256_hadd_ps(acc[2], acc[3]);
    _mm256_permutevar8x32_ps(_mm256_hadd_ps(h01, h23), order)
}

/// The 4 activations at `x` in both 128-bit lanes.
///
/// # Safety
/// `x` readable for 4 values.
#[inline]
#[target_feature(enable = "avx2,fma")]
unsafe fn x4(x: *const f32) -> __m256 {
    // SAFETY: contract.
    let v = unsafe { _mm_loadu_ps(x) };
    _mm256_set_m128(v, v)
}

/// One group of one panel: `acc[i] += f32(8 weights) * xv`.
///
/// # Safety
/// `w` readable for 64 bytes.
#[inline]
#[target_feature(enable = "avx2,fma")]
unsafe fn group(acc: &mut [__m256; 8], xv: __m256, w: *const i8) {
    for i in 0..8 {
        // SAFETY: within the group's 64 bytes (contract).
        let v = unsafe { _mm_loadl_epi64(w.add(8 * i).cast()) };
        let f = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(v));
        acc[i] = _mm256_fmadd_ps(f, xv, acc[i]);
    }
}

/// `vpermps` indices repeating scale `2i + l` (of 8) over lanes `4l..4l + 4`.
const SCALE_LANES: [[i32; 8]; 4] = [
    [0, 0, 0, 0, 1, 1, 1, 1],
    [2, 2, 2, 2, 3, 3, 3, 3],
    [4, 4, 4, 4, 5, 5, 5, 5],
    [6, 6, 6, 6, 7, 7, 7, 7],
];

/// Dot products `x · q_j` of one panel's 16 outputs.
///
/// # Safety
/// `x` readable for `k` values, `w` for one panel (`16 * k_padded(k)` bytes); for
/// blocks, `ws` for the panel's `16 * k / 32` scales.
#[inline]
#[target_feature(enable = "avx2,fma")]
unsafe fn dots(
    k: usize,
    x: *const f32,
    tail: &[f32; QUANT_KR],
    w: *const i8,
    ws: Option<*const f32>,
) -> [f32; PACK_NR] {
    let zero = _mm256_setzero_ps();
    let mut acc = [zero; 8];
    let groups = k / QUANT_KR;
    // SAFETY: as in the AVX-512 `dots`, for one panel.
    unsafe {
        match ws {
            None => {
                for g in 0..groups {
                    group(&mut acc, x4(x.add(QUANT_KR * g)), w.add(GROUP * g));
                }
                if groups * QUANT_KR < k {
                    group(&mut acc, x4(tail.as_ptr()), w.add(GROUP * groups));
                }
            }
            Some(ws) => {
                let per_block = BLOCK_K / QUANT_KR;
                let lanes = SCALE_LANES.map(|l| _mm256_loadu_si256(l.as_ptr().cast()));
                for blk in 0..k / BLOCK_K {
                    let mut part = [zero; 8];
                    for g in blk * per_block..(blk + 1) * per_block {
                        group(&mut part, x4(x.add(QUANT_KR * g)), w.add(GROUP * g));
                    }
                    for h in 0..2 {
                        let s = _mm256_loadu_ps(ws.add(blk * PACK_NR + 8 * h));
                        for i in 0..4 {
                            let s = _mm256_permutevar8x32_ps(s, lanes[i]);
                            let a = &mut acc[4 * h + i];
                            *a = _mm256_fmadd_ps(part[4 * h + i], s, *a);
                        }
                    }
                }
            }
        }
        let order = _mm256_loadu_si256(OUT_ORDER.as_ptr().cast());
        let mut out = [0.0; PACK_NR];
        _mm256_storeu_ps(out.as_mut_ptr(), reduce(&acc[..4], order));
        _mm256_storeu_ps(out.as_mut_ptr().add(8), reduce(&acc[4..], order));
        out
    }
}

/// The GEMV of both formats at AVX2 + FMA.
///
/// # Safety
/// The CPU implements AVX2 and FMA; the contract of
/// [`QuantKernels::gemv_i8`](super::super::QuantKernels::gemv_i8) holds (checked by the
/// entry point), `n, k >= 1`.
#[target_feature(enable = "avx2,fma")]
pub(super) unsafe fn gemv(g: Gemv<'_>, y: &mut [f32]) {
    let Gemv { n, k, x, w: QuantWeights { packed: b, format, bias } } = g;
    debug_assert_eq!(y.len(), n);
    let stride = PACK_NR * k_padded(k);
    let nb = k / BLOCK_K;
    let tail = x_tail(x);
    let (scale, shift) = format.scale_shift(x);
    for (p, y) in y.chunks_mut(PACK_NR).enumerate() {
        let col0 = p * PACK_NR;
        // SAFETY: the contract: x holds k values, b panel p (`stride` bytes from
        // p * stride), (blocks) its scales from p * 16 * nb.
        let dot = unsafe {
            let ws = match format.dequant(p, nb, 0) {
                Dequant::Block(s) => Some(s.as_ptr()),
                Dequant::Affine { .. } => None,
            };
            dots(k, x.as_ptr(), &tail, b.as_ptr().add(p * stride), ws)
        };
        let mut init = [0.0; PACK_NR];
        if let Some(bias) = bias {
            init[..y.len()].copy_from_slice(&bias[col0..col0 + y.len()]);
        }
        let mut out = [0.0f32; PACK_NR];
        // SAFETY: the three arrays hold 16 values.
        unsafe {
            for h in 0..2 {
                let d = _mm256_loadu_ps(dot.as_ptr().add(8 * h));
                let b = _mm256_loadu_ps(init.as_ptr().add(8 * h));
                let r = match format {
                    QuantFormat::PerTensor { .. } => _mm256_fmadd_ps(
                        _mm256_set1_ps(scale),
                        d,
                        _mm256_add_ps(_mm256_set1_ps(shift), b),
                    ),
                    QuantFormat::Block(_) => _mm256_add_ps(d, b),
                };
                _mm256_storeu_ps(out.as_mut_ptr().add(8 * h), r);
            }
        }
        let len = y.len();
        y.copy_from_slice(&out[..len]);
    }
}

/// The 4 rows of 8 outputs (`k` = 0..4 of the group) from 4 accumulators of 2
/// outputs x 4 `k` (lanes `4j + kk`).
#[inline]
#[target_feature(enable = "avx2,fma")]
fn rows_of_8(a: [__m256; 4], pairs: __m256i) -> [__m256; 4] {
    // Lanes 2kk, 2kk + 1: the two outputs at k = kk (64-bit pair kk).
    let p = a.map(|a| _mm256_castps_pd(_mm256_permutevar8x32_ps(a, pairs)));
    // [p0 pair 0, p1 pair 0 | p0 pair 2, p1 pair 2] and the odd pairs, etc.
    let t0 = _mm256_unpacklo_pd(p[0], p[1]);
    let t1 = _mm256_unpackhi_pd(p[0], p[1]);
    let t2 = _mm256_unpacklo_pd(p[2], p[3]);
    let t3 = _mm256_unpackhi_pd(p[2], p[3]);
    [
        _mm256_castpd_ps(_mm256_permute2f128_pd::<0x20>(t0, t2)),
        _mm256_castpd_ps(_mm256_permute2f128_pd::<0x20>(t1, t3)),
        _mm256_castpd_ps(_mm256_permute2f128_pd::<0x31>(t0, t2)),
        _mm256_castpd_ps(_mm256_permute2f128_pd::<0x31>(t1, t3)),
    ]
}

/// `vpermps` indices gathering the 64-bit pair of each `k`: lanes `[0, 4, 1, 5, ..]`.
const PAIRS: [i32; 8] = [0, 4, 1, 5, 2, 6, 3, 7];

/// The conversion of [`gemm_converted`](super::super::gemm_converted) at AVX2.
///
/// # Safety
/// The CPU implements AVX2 and FMA.
#[target_feature(enable = "avx2,fma")]
pub(super) unsafe fn convert(src: &[i8], rows: usize, dequant: Dequant<'_>, dst: &mut [f32]) {
    assert!(src.len() >= k_padded(rows) * PACK_NR && dst.len() >= rows * PACK_NR);
    if let Dequant::Block(s) = dequant {
        assert!(s.len() >= rows.div_ceil(BLOCK_K) * PACK_NR);
    }
    // SAFETY: PAIRS holds 8 values.
    let pairs = unsafe { _mm256_loadu_si256(PAIRS.as_ptr().cast()) };
    let (sp, dp) = (src.as_ptr(), dst.as_mut_ptr());
    for g in 0..rows.div_ceil(QUANT_KR) {
        let valid = (rows - g * QUANT_KR).min(QUANT_KR);
        for h in 0..2 {
            // SAFETY: group g is within src (asserted); its block's scales within the
            // `Block` scales (asserted); columns 8h..8h + 8 of rows 4g..4g + valid of dst
            // are written.
            unsafe {
                let a: [__m256; 4] = core::array::from_fn(|i| {
                    let v = _mm_loadl_epi64(sp.add(g * GROUP + 32 * h + 8 * i).cast());
                    _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(v))
                });
                let mut r = rows_of_8(a, pairs);
                match dequant {
                    Dequant::Block(s) => {
                        let at = g * QUANT_KR / BLOCK_K * PACK_NR + 8 * h;
                        let s = _mm256_loadu_ps(s.as_ptr().add(at));
                        r = r.map(|r| _mm256_mul_ps(r, s));
                    }
                    Dequant::Affine { scale, offset } => {
                        let (s, o) = (_mm256_set1_ps(scale), _mm256_set1_ps(offset));
                        r = r.map(|r| _mm256_fmadd_ps(r, s, o));
                    }
                }
                for (kk, r) in r.into_iter().enumerate().take(valid) {
                    _mm256_storeu_ps(dp.add((g * QUANT_KR + kk) * PACK_NR + 8 * h), r);
                }
            }
        }
    }
}
