//! The AVX-512F kernels of [`X86<Avx512>`](crate::kernels::X86) (the contracts of the
//! trait's entry points, already checked, with `n, k >= 1`; a CPU with AVX-512F). The GEMV,
//! its prefetch and the conversion are described in [`super`].

// Accumulator arrays are indexed by constant loop counters on purpose: fully unrolled,
// every element stays in its own register.
#![allow(clippy::needless_range_loop)]

use super::super::{
    k_padded, Dequant, Gemv, QuantFormat, QuantWeights, BLOCK_K, GROUP, PACK_NR, QUANT_KR,
};
use super::x_tail;
use core::arch::x86_64::*;

/// Bytes between a group and the line the GEMV prefetches while reading it (the fastest
/// distance measured: see BENCHMARKS.md, "Kernel design measurements (GEMM and int8)").
const PREFETCH: usize = 16384;

/// `vpermps` indices putting the reduced lanes in output order: after the two
/// pairwise rounds of [`reduce`], lane `4l + i` holds output `4i + l`.
const OUT_ORDER: [i32; 16] = [0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15];

/// `vpermps` indices repeating scale `4i + l` of a panel's 16 over lanes
/// `4l..4l + 4` (the lanes of output `4i + l` in accumulator `i`).
const SCALE_LANES: [[i32; 16]; 4] = {
    let mut t = [[0; 16]; 4];
    let mut i = 0;
    while i < 4 {
        let mut l = 0;
        while l < 16 {
            t[i][l] = (4 * i + l / 4) as i32;
            l += 1;
        }
        i += 1;
    }
    t
};

/// The 16 dot products of one panel from its 4 accumulators (accumulator `i`, lane
/// `4l + kk`: output `4i + l`, `k = kk mod 4`).
#[inline]
#[target_feature(enable = "avx512f")]
fn reduce(acc: [__m512; 4], order: __m512i) -> __m512 {
    // Per 128-bit lane l: [a l0 + l1, a l2 + l3, b l0 + l1, b l2 + l3].
    let pair =
        |a, b| _mm512_add_ps(_mm512_shuffle_ps::<0x88>(a, b), _mm512_shuffle_ps::<0xDD>(a, b));
    let (h01, h23) = (pair(acc[0], acc[1]), pair(acc[2], acc[3]));
    // Per 128-bit lane l: outputs l, 4 + l, 8 + l, 12 + l.
    _mm512_permutexvar_ps(order, pair(h01, h23))
}

/// One group of one panel: `acc[i] += f32(q[4i..4i + 4, 4 k]) * xv`.
///
/// # Safety
/// `w` readable for 64 bytes.
#[inline]
#[target_feature(enable = "avx512f")]
unsafe fn group(acc: &mut [__m512; 4], xv: __m512, w: *const i8, pf: *const i8) {
    _mm_prefetch::<_MM_HINT_T0>(pf);
    for i in 0..4 {
        // SAFETY: within the group's 64 bytes (contract).
        let v = unsafe { _mm_loadu_si128(w.add(16 * i).cast()) };
        let f = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(v));
        acc[i] = _mm512_fmadd_ps(f, xv, acc[i]);
    }
}

/// The 4 activations at `x`, repeated in every 128-bit lane.
///
/// # Safety
/// `x` readable for 4 values.
#[inline]
#[target_feature(enable = "avx512f")]
unsafe fn x4(x: *const f32) -> __m512 {
    // SAFETY: contract.
    _mm512_broadcast_f32x4(unsafe { _mm_loadu_ps(x) })
}

/// Dot products `x · q_j` of one panel's 16 outputs (per tensor: one accumulator set
/// over all `k`; blocks: per block, then scaled into the totals).
///
/// # Safety
/// `x` readable for `k` values, `w` for one panel (`16 * k_padded(k)` bytes); for
/// blocks (`k % 32 == 0`), `ws` for the panel's `16 * k / 32` scales.
#[inline]
#[target_feature(enable = "avx512f")]
unsafe fn dots(
    k: usize,
    x: *const f32,
    tail: &[f32; QUANT_KR],
    w: *const i8,
    room: usize,
    ws: Option<*const f32>,
) -> __m512 {
    let zero = _mm512_setzero_ps();
    let mut acc = [zero; 4];
    let groups = k / QUANT_KR;
    // The line PREFETCH bytes ahead of group g, or the group itself past the weights.
    let pf = |g: usize| {
        let at = if GROUP * g + PREFETCH < room { GROUP * g + PREFETCH } else { GROUP * g };
        // SAFETY: `at < room` or at the group itself: within the packed weights.
        unsafe { w.add(at) }
    };
    // SAFETY: groups g < k / 4 read x[4g..4g + 4] and bytes 64g..64g + 64 of the
    // panel; the partial group reads the copied tail and the last (padded) group;
    // block b reads scales 16b..16b + 16 < 16 * k / 32.
    unsafe {
        match ws {
            None => {
                for g in 0..groups {
                    group(&mut acc, x4(x.add(QUANT_KR * g)), w.add(GROUP * g), pf(g));
                }
                if groups * QUANT_KR < k {
                    let wt = w.add(GROUP * groups);
                    group(&mut acc, x4(tail.as_ptr()), wt, pf(groups));
                }
            }
            Some(ws) => {
                let per_block = BLOCK_K / QUANT_KR;
                let lanes = SCALE_LANES.map(|l| _mm512_loadu_epi32(l.as_ptr()));
                for blk in 0..k / BLOCK_K {
                    let mut part = [zero; 4];
                    for g in blk * per_block..(blk + 1) * per_block {
                        group(&mut part, x4(x.add(QUANT_KR * g)), w.add(GROUP * g), pf(g));
                    }
                    let s = _mm512_loadu_ps(ws.add(blk * PACK_NR));
                    for i in 0..4 {
                        let s = _mm512_permutexvar_ps(lanes[i], s);
                        acc[i] = _mm512_fmadd_ps(part[i], s, acc[i]);
                    }
                }
            }
        }
        reduce(acc, _mm512_loadu_epi32(OUT_ORDER.as_ptr()))
    }
}

/// Lane mask of the first `cols` (0..=16) lanes.
fn lanes(cols: usize) -> __mmask16 {
    ((1u32 << cols) - 1) as __mmask16
}

/// The GEMV of both formats at AVX-512F.
///
/// # Safety
/// The CPU implements AVX-512F; the contract of
/// [`QuantKernels::gemv_i8`](super::super::QuantKernels::gemv_i8) holds (checked by the
/// entry point), `n, k >= 1`.
#[target_feature(enable = "avx512f")]
pub(super) unsafe fn gemv(g: Gemv<'_>, y: &mut [f32]) {
    let Gemv { n, k, x, w: QuantWeights { packed: b, format, bias } } = g;
    let stride = PACK_NR * k_padded(k);
    let nb = k / BLOCK_K;
    let tail = x_tail(x);
    let (scale, shift) = format.scale_shift(x);
    let (vscale, vshift) = (_mm512_set1_ps(scale), _mm512_set1_ps(shift));
    let yp = y.as_mut_ptr();
    for p in 0..n.div_ceil(PACK_NR) {
        let col0 = p * PACK_NR;
        let mask = lanes((n - col0).min(PACK_NR));
        // SAFETY: the contract: x holds k values, b panel p (`stride` bytes from
        // p * stride), (blocks) its scales from p * 16 * nb; y and bias hold
        // n > col0 values, of which only the lanes below n are read and written.
        unsafe {
            let ws = match format.dequant(p, nb, 0) {
                Dequant::Block(s) => Some(s.as_ptr()),
                Dequant::Affine { .. } => None,
            };
            let room = b.len() - p * stride;
            let dot = dots(k, x.as_ptr(), &tail, b.as_ptr().add(p * stride), room, ws);
            let bias = match bias {
                Some(bias) => _mm512_maskz_loadu_ps(mask, bias.as_ptr().add(col0)),
                None => _mm512_setzero_ps(),
            };
            let r = match format {
                QuantFormat::PerTensor { .. } => {
                    _mm512_fmadd_ps(vscale, dot, _mm512_add_ps(vshift, bias))
                }
                QuantFormat::Block(_) => _mm512_add_ps(dot, bias),
            };
            _mm512_mask_storeu_ps(yp.add(col0), mask, r);
        }
    }
}

/// `vpermt2ps` indices taking, from two accumulators of 4 outputs x 4 `k` (lane
/// `4j + kk`, the second one's lanes at 16..32), rows `kk0` and `kk0 + 1` of the 8
/// outputs: lane `8r + j` = output `j`, `k = kk0 + r`.
const fn rows_of_8(kk0: usize) -> [i32; 16] {
    let mut t = [0; 16];
    let mut l = 0;
    while l < 16 {
        let (kk, j) = (kk0 + l / 8, l % 8);
        t[l] = (if j < 4 { 4 * j + kk } else { 16 + 4 * (j - 4) + kk }) as i32;
        l += 1;
    }
    t
}

const ROWS01: [i32; 16] = rows_of_8(0);
const ROWS23: [i32; 16] = rows_of_8(2);

/// The 4 rows (`k` values) of one group as f32: row `kk` holds the 16 outputs.
///
/// # Safety
/// `src` readable for 64 bytes.
#[inline]
#[target_feature(enable = "avx512f")]
unsafe fn group_rows(src: *const i8, idx: [__m512i; 2]) -> [__m512; 4] {
    // SAFETY: contract.
    let z: [__m512; 4] = core::array::from_fn(|i| unsafe {
        _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128(src.add(16 * i).cast())))
    });
    let lo01 = _mm512_permutex2var_ps(z[0], idx[0], z[1]);
    let hi01 = _mm512_permutex2var_ps(z[0], idx[1], z[1]);
    let lo23 = _mm512_permutex2var_ps(z[2], idx[0], z[3]);
    let hi23 = _mm512_permutex2var_ps(z[2], idx[1], z[3]);
    [
        _mm512_shuffle_f32x4::<0x44>(lo01, lo23),
        _mm512_shuffle_f32x4::<0xEE>(lo01, lo23),
        _mm512_shuffle_f32x4::<0x44>(hi01, hi23),
        _mm512_shuffle_f32x4::<0xEE>(hi01, hi23),
    ]
}

/// The conversion of [`gemm_converted`](super::super::gemm_converted) at AVX-512F.
///
/// # Safety
/// The CPU implements AVX-512F.
#[target_feature(enable = "avx512f")]
pub(super) unsafe fn convert(src: &[i8], rows: usize, dequant: Dequant<'_>, dst: &mut [f32]) {
    assert!(src.len() >= k_padded(rows) * PACK_NR && dst.len() >= rows * PACK_NR);
    if let Dequant::Block(s) = dequant {
        assert!(s.len() >= rows.div_ceil(BLOCK_K) * PACK_NR);
    }
    // SAFETY: the two index tables are 16 values each.
    let idx = unsafe { [_mm512_loadu_epi32(ROWS01.as_ptr()), _mm512_loadu_epi32(ROWS23.as_ptr())] };
    let (sp, dp) = (src.as_ptr(), dst.as_mut_ptr());
    for g in 0..rows.div_ceil(QUANT_KR) {
        // SAFETY: group g is within src (asserted); its block's scales within the
        // `Block` scales (asserted); rows 4g..min(4g + 4, rows) of dst are written.
        unsafe {
            let mut r = group_rows(sp.add(g * GROUP), idx);
            match dequant {
                Dequant::Block(s) => {
                    let s = _mm512_loadu_ps(s.as_ptr().add(g * QUANT_KR / BLOCK_K * PACK_NR));
                    r = r.map(|r| _mm512_mul_ps(r, s));
                }
                Dequant::Affine { scale, offset } => {
                    let (s, o) = (_mm512_set1_ps(scale), _mm512_set1_ps(offset));
                    r = r.map(|r| _mm512_fmadd_ps(r, s, o));
                }
            }
            let valid = (rows - g * QUANT_KR).min(QUANT_KR);
            for (kk, r) in r.into_iter().enumerate().take(valid) {
                _mm512_storeu_ps(dp.add((g * QUANT_KR + kk) * PACK_NR), r);
            }
        }
    }
}
