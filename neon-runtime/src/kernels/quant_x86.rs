//! x86-64 fast paths of the portable backend's int8-weight GEMV and GEMM: AVX-512F
//! (16-wide) and AVX2 + FMA (8-wide) kernels over the packed layout every backend shares
//! ([`pack_i8`](super::pack_i8)). The level is the f32 GEMM's
//! ([`detected`](crate::kernels::gemm::x86::detected)): the same run-time (feature `std`)
//! or build-time detection; under Miri and on soft-float targets this module does not
//! exist and the plain-Rust kernels run. The free functions here run one level explicitly
//! (tests and benchmarks compare them).
//!
//! # GEMV (`m = 1`): widening, both formats
//!
//! A packed group is 64 bytes: 16 outputs by 4 consecutive `k`, output `j`'s four weights
//! at bytes `4j..4j + 4`. `vpmovsxbd` sign-extends 16 of those bytes (AVX2: 8) to 32-bit
//! lanes straight from memory, `vcvtdq2ps` converts them exactly, and one FMA multiplies
//! them by the group's 4 activations repeated in every 128-bit lane (`vbroadcastf32x4`).
//! So lane `4j + kk` of accumulator `i` sums `x[k] q[4i + j, k]` over `k = kk mod 4`:
//! the products are exact and summed in f32, in the same order as the portable kernel.
//! Per 16 weights: one `vpmovsxbd`, one `vcvtdq2ps`, one FMA (AVX2: per 8). After the
//! last group, the four lanes of each output are added by two rounds of `vshufps` +
//! `vaddps` and one `vpermps` puts the outputs in order (AVX2: `vhaddps` twice, then
//! `vpermps`). Both levels add the lanes as `(k0 + k1) + (k2 + k3)`, so they give the
//! same bits.
//!
//! - **One panel (16 outputs) at a time**, its bytes read once, in order: AVX-512 keeps 4
//!   accumulators of 4 outputs x 4 `k`, AVX2 8 of 2 outputs x 4 `k`. A single sequential
//!   stream is what the hardware prefetcher serves best: two panels at a time (8 FMA
//!   chains, as the f32 GEMV does) ran as fast in cache but streamed a whole decoder step
//!   at half the speed (16-18 GB/s against 37 GB/s, both before the software prefetch
//!   below, on the machine of the table), and a second
//!   accumulator set over alternate groups gained nothing (the loop is bound by its 3
//!   vector instructions per 16 weights, not by FMA latency).
//! - **Software prefetch (AVX-512):** each group prefetches (`prefetcht0`) the line 16 KiB
//!   ahead in the weights (panels are contiguous, so across panel ends too; never past the
//!   packed weights). The hardware prefetcher alone keeps too few lines in flight: a
//!   decoder step took 1.04 ms without, 0.95 ms at 4 KiB, 0.69-0.77 ms at 16-32 KiB, and
//!   the in-cache speed did not change. The AVX2 loop is compute-bound below the memory
//!   bandwidth (21 GB/s) and does not prefetch.
//! - **Block-int8:** per block of 32 `k` (8 groups) the same loop fills block
//!   accumulators, which are then multiplied by the block's 16 scales, each repeated over
//!   its output's 4 lanes (one `vpermps` per accumulator), and added into the totals.
//! - **Tails:** `k` past a multiple of 4 reads the last (zero-padded) group with the
//!   activations copied into a zeroed group, so no value past `x` is read; outputs past `n`
//!   in the last panel are computed from the zero padding and not stored (lane masks on
//!   AVX-512, a stack copy on AVX2).
//! - **Epilogue:** `y = scale * dot + (offset * sum(x) + bias)` with one FMA (per
//!   tensor; `sum(x)` as the portable kernel computes it), `y = dot + bias` (blocks).
//!
//! # GEMM (`m > 1`)
//!
//! The portable scheme (`gemm_converted` in [`super`]): weights converted to f32, a block
//! of `k` at a time, then the level's packed-B f32 GEMM on the converted block. The
//! conversion is vectorised here (AVX-512: 4 `vpmovsxbd` + 4 `vcvtdq2ps`, then 4
//! `vpermt2ps` and 4 `vshuff32x4` transpose a group to 4 rows of 16 outputs; AVX2: per 8
//! outputs 4 `vpmovsxbd`, 4 `vcvtdq2ps`, 4 `vpermps`, 4 `vunpck*pd`, 4 `vperm2f128`). On
//! AVX-512 two panels are converted per step, so the f32 GEMM runs its 8x32 tile instead
//! of 8x16, and the blocks are `2 * KC` = 512 deep (64 KiB of stack), so Moonshine's
//! `k = 416` needs no pass adding partial products. On 413 x 416 -> 1664: 182 GFLOP/s with
//! the plain-Rust conversion and one panel, 188 vectorised, 244 with two panels, 254 with
//! 512-deep blocks; the f32 GEMM on f32 weights: 265.
//!
//! # Measured
//!
//! One core of a shared AMD EPYC (Zen 5) VM, criterion (`cargo bench -p neon-benches
//! --bench quant`), medians; GB/s of int8 weights (f32: of f32 weights), weights in cache
//! unless stated:
//!
//! | workload (`k -> n`) | AVX-512 | AVX2 | baseline | f32 GEMV (AVX-512) |
//! |---|---:|---:|---:|---:|
//! | GEMV 416 -> 416 | 2.7 µs (65 GB/s) | 7.7-8.7 µs (21) | 55 µs (3.1) | 6.1 µs |
//! | GEMV 416 -> 3328 | 22.4 µs (62) | 63 µs (22) | 480 µs (2.9) | 49 µs |
//! | GEMV 1664 -> 416 | 10.5 µs (66) | 33 µs (21) | 222 µs (3.1) | 26 µs |
//! | GEMV 416 -> 32768 (LM head) | 214 µs (64) | 614-696 µs (21) | 5.0 ms (2.7) | 1.01 ms |
//! | decoder step, 38.5 MB streamed | 0.67 ms (57) | 1.77-1.81 ms (21) | 12.4-12.8 ms (3.1) | 3.7-3.8 ms |
//!
//! The decoder step (48 x 416 -> 416, 8 x 416 -> 3328, 8 x 1664 -> 416, the LM head; each
//! matrix its own buffer) is more than the 32 MiB L3: reading the same 38.5 MB with a
//! plain summing loop takes 0.96 ms (40 GB/s), 0.68 ms with the same prefetch (56 GB/s;
//! part is served by L3 on each pass), 256 MB from DRAM 32-35 GB/s. The int8 step runs at
//! that floor, 5.6x faster than the f32 GEMVs on f32 weights.
//!
//! # Accuracy
//!
//! As the portable kernels (see [`super`]): exact products, f32 sums (per output and
//! position in the group, in `k` order, then the 4 positions pairwise), fused
//! multiply-adds; no more roundings per output than the portable kernels, so within the
//! same bound of the f64 reference.
//!
//! [`KC`]: super::KC

// Accumulator arrays are indexed by constant loop counters on purpose: fully unrolled,
// every element stays in its own register.
#![allow(clippy::needless_range_loop)]

use super::{
    check_gemm, check_gemv, gemm_converted, k_padded, p_convert, p_gemv, sum_f32, Convert,
    PackedGemm, Scales, BLOCK_K, GROUP, KC, PACK_NR, QUANT_KR,
};
use crate::kernels::gemm::x86::Level;
use crate::kernels::{Avx2, Avx512, GemmKernels, Portable, X86};
use core::arch::x86_64::*;

/// [`QuantKernels::gemv_i8`](super::QuantKernels::gemv_i8) at `level`.
///
/// # Safety
/// The CPU must implement `level`'s extensions (check [`Level::supported`] or
/// `is_x86_feature_detected!`).
///
/// # Panics
/// As [`QuantKernels::gemv_i8`](super::QuantKernels::gemv_i8).
#[allow(clippy::too_many_arguments)]
pub unsafe fn gemv_i8(
    level: Level,
    n: usize,
    k: usize,
    x: &[f32],
    b: &[i8],
    scale: f32,
    offset: f32,
    bias: Option<&[f32]>,
    y: &mut [f32],
) {
    let scales = Scales::Tensor { scale, offset };
    check_gemv("gemv_i8", n, k, x, b, scales, bias, y);
    // SAFETY: the geometry was checked above; the caller guarantees the extensions.
    unsafe { gemv_at(level, n, k, x, b, scales, bias, y) }
}

/// [`QuantKernels::gemv_i8_block`](super::QuantKernels::gemv_i8_block) at `level`.
///
/// # Safety
/// As [`gemv_i8`].
///
/// # Panics
/// As [`QuantKernels::gemv_i8_block`](super::QuantKernels::gemv_i8_block).
#[allow(clippy::too_many_arguments)]
pub unsafe fn gemv_i8_block(
    level: Level,
    n: usize,
    k: usize,
    x: &[f32],
    b: &[i8],
    scales: &[f32],
    bias: Option<&[f32]>,
    y: &mut [f32],
) {
    let scales = Scales::Block(scales);
    check_gemv("gemv_i8_block", n, k, x, b, scales, bias, y);
    // SAFETY: the geometry was checked above; the caller guarantees the extensions.
    unsafe { gemv_at(level, n, k, x, b, scales, bias, y) }
}

/// [`QuantKernels::gemm_i8`](super::QuantKernels::gemm_i8) at `level`.
///
/// # Safety
/// As [`gemv_i8`].
///
/// # Panics
/// As [`QuantKernels::gemm_i8`](super::QuantKernels::gemm_i8).
#[allow(clippy::too_many_arguments)]
pub unsafe fn gemm_i8(
    level: Level,
    m: usize,
    n: usize,
    k: usize,
    a: &[f32],
    lda: usize,
    b: &[i8],
    scale: f32,
    offset: f32,
    bias: Option<&[f32]>,
    c: &mut [f32],
    ldc: usize,
) {
    let scales = Scales::Tensor { scale, offset };
    check_gemm("gemm_i8", m, n, k, a, lda, b, scales, bias, c, ldc);
    // SAFETY: the geometry was checked above; the caller guarantees the extensions.
    unsafe { gemm_at(level, m, n, k, a, lda, b, scales, bias, c, ldc) }
}

/// [`QuantKernels::gemm_i8_block`](super::QuantKernels::gemm_i8_block) at `level`.
///
/// # Safety
/// As [`gemv_i8`].
///
/// # Panics
/// As [`QuantKernels::gemm_i8_block`](super::QuantKernels::gemm_i8_block).
#[allow(clippy::too_many_arguments)]
pub unsafe fn gemm_i8_block(
    level: Level,
    m: usize,
    n: usize,
    k: usize,
    a: &[f32],
    lda: usize,
    b: &[i8],
    scales: &[f32],
    bias: Option<&[f32]>,
    c: &mut [f32],
    ldc: usize,
) {
    let scales = Scales::Block(scales);
    check_gemm("gemm_i8_block", m, n, k, a, lda, b, scales, bias, c, ldc);
    // SAFETY: the geometry was checked above; the caller guarantees the extensions.
    unsafe { gemm_at(level, m, n, k, a, lda, b, scales, bias, c, ldc) }
}

/// The GEMV of both formats at `level` (the plain-Rust kernel at [`Level::Baseline`]).
///
/// # Safety
/// The geometry was checked (`check_gemv`) and the CPU implements `level`.
#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn gemv_at(
    level: Level,
    n: usize,
    k: usize,
    x: &[f32],
    b: &[i8],
    scales: Scales<'_>,
    bias: Option<&[f32]>,
    y: &mut [f32],
) {
    if n == 0 || k == 0 {
        return p_gemv(k, x, b, scales, bias, y);
    }
    // SAFETY: forwarded contract (geometry checked, n, k >= 1, extensions present).
    unsafe {
        match level {
            Level::Baseline => p_gemv(k, x, b, scales, bias, y),
            Level::Avx2 => avx2::gemv(n, k, x, b, scales, bias, y),
            Level::Avx512 => avx512::gemv(n, k, x, b, scales, bias, y),
        }
    }
}

/// The GEMM of both formats at `level`: [`gemm_converted`] with the level's conversion
/// and packed-B f32 GEMM.
///
/// # Safety
/// The geometry was checked (`check_gemm`) and the CPU implements `level`.
#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn gemm_at(
    level: Level,
    m: usize,
    n: usize,
    k: usize,
    a: &[f32],
    lda: usize,
    b: &[i8],
    scales: Scales<'_>,
    bias: Option<&[f32]>,
    c: &mut [f32],
    ldc: usize,
) {
    // The f32 GEMM of each level as a plain function pointer for `gemm_converted`; each
    // is only used here for its own level, which the caller guarantees the CPU implements.
    let gemm_baseline: PackedGemm = Portable::gemm_packed_b;
    let gemm_avx2: PackedGemm = X86::<Avx2>::gemm_packed_b;
    let gemm_avx512: PackedGemm = X86::<Avx512>::gemm_packed_b;
    fn convert_avx2(src: &[i8], rows: usize, scales: Option<&[f32]>, dst: &mut [f32]) {
        // SAFETY: only called via `gemm_at(Level::Avx2, ..)` (see above).
        unsafe { avx2::convert(src, rows, scales, dst) }
    }
    fn convert_avx512(src: &[i8], rows: usize, scales: Option<&[f32]>, dst: &mut [f32]) {
        // SAFETY: only called via `gemm_at(Level::Avx512, ..)` (see above).
        unsafe { avx512::convert(src, rows, scales, dst) }
    }
    let (convert, gemm): (Convert, PackedGemm) = match level {
        Level::Baseline => (p_convert, gemm_baseline),
        Level::Avx2 => (convert_avx2, gemm_avx2),
        Level::Avx512 => (convert_avx512, gemm_avx512),
    };
    // AVX-512: two panels per conversion, for the f32 GEMM's two-panel tile, and blocks
    // of 2 * KC `k` (Moonshine's k = 416 in one block: no pass adding partial products).
    if level == Level::Avx512 {
        gemm_converted::<2, { 2 * KC }>(m, n, k, a, lda, b, scales, bias, c, ldc, convert, gemm)
    } else {
        gemm_converted::<1, KC>(m, n, k, a, lda, b, scales, bias, c, ldc, convert, gemm)
    }
}

/// `[x[4g], x[4g + 1], x[4g + 2], x[4g + 3]]` for the last, partial group (`k % 4` values,
/// zeros after them: the packed weights there are zero too, and `0 * 0` keeps the sums).
fn x_tail(x: &[f32]) -> [f32; QUANT_KR] {
    let full = x.len() / QUANT_KR * QUANT_KR;
    let mut t = [0.0; QUANT_KR];
    t[..x.len() - full].copy_from_slice(&x[full..]);
    t
}

// ------------------------------------------------------------------------------------
// AVX-512F
// ------------------------------------------------------------------------------------

/// The AVX-512F kernels (the contracts of the trait methods, already checked, with
/// `n, k >= 1`; a CPU with AVX-512F).
pub(super) mod avx512 {
    use super::*;

    /// Bytes between a group and the line the GEMV prefetches while reading it (see the
    /// module documentation for the measured distances).
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

    #[target_feature(enable = "avx512f")]
    pub(in super::super) unsafe fn gemv(
        n: usize,
        k: usize,
        x: &[f32],
        b: &[i8],
        scales: Scales<'_>,
        bias: Option<&[f32]>,
        y: &mut [f32],
    ) {
        let stride = PACK_NR * k_padded(k);
        let nb = k / BLOCK_K;
        let tail = x_tail(x);
        let (scale, shift) = match scales {
            Scales::Tensor { scale, offset } => (scale, offset * sum_f32(x)),
            Scales::Block(_) => (1.0, 0.0),
        };
        let (vscale, vshift) = (_mm512_set1_ps(scale), _mm512_set1_ps(shift));
        let yp = y.as_mut_ptr();
        for p in 0..n.div_ceil(PACK_NR) {
            let col0 = p * PACK_NR;
            let mask = lanes((n - col0).min(PACK_NR));
            // SAFETY: check_gemv: x holds k values, b panel p (`stride` bytes from
            // p * stride), (blocks) its scales from p * 16 * nb; y and bias hold
            // n > col0 values, of which only the lanes below n are read and written.
            unsafe {
                let ws = match scales {
                    Scales::Block(s) => Some(s.as_ptr().add(p * nb * PACK_NR)),
                    Scales::Tensor { .. } => None,
                };
                let room = b.len() - p * stride;
                let dot = dots(k, x.as_ptr(), &tail, b.as_ptr().add(p * stride), room, ws);
                let bias = match bias {
                    Some(bias) => _mm512_maskz_loadu_ps(mask, bias.as_ptr().add(col0)),
                    None => _mm512_setzero_ps(),
                };
                let r = match scales {
                    Scales::Tensor { .. } => {
                        _mm512_fmadd_ps(vscale, dot, _mm512_add_ps(vshift, bias))
                    }
                    Scales::Block(_) => _mm512_add_ps(dot, bias),
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

    /// [`super::super::Convert`] at AVX-512F.
    ///
    /// # Safety
    /// The CPU implements AVX-512F.
    #[target_feature(enable = "avx512f")]
    pub(in super::super) unsafe fn convert(
        src: &[i8],
        rows: usize,
        scales: Option<&[f32]>,
        dst: &mut [f32],
    ) {
        assert!(src.len() >= k_padded(rows) * PACK_NR && dst.len() >= rows * PACK_NR);
        if let Some(s) = scales {
            assert!(s.len() >= rows.div_ceil(BLOCK_K) * PACK_NR);
        }
        // SAFETY: the two index tables are 16 values each.
        let idx =
            unsafe { [_mm512_loadu_epi32(ROWS01.as_ptr()), _mm512_loadu_epi32(ROWS23.as_ptr())] };
        let (sp, dp) = (src.as_ptr(), dst.as_mut_ptr());
        for g in 0..rows.div_ceil(QUANT_KR) {
            // SAFETY: group g is within src (asserted); its block's scales within
            // `scales`; rows 4g..min(4g + 4, rows) of dst are written.
            unsafe {
                let mut r = group_rows(sp.add(g * GROUP), idx);
                if let Some(s) = scales {
                    let s = _mm512_loadu_ps(s.as_ptr().add(g * QUANT_KR / BLOCK_K * PACK_NR));
                    r = r.map(|r| _mm512_mul_ps(r, s));
                }
                let valid = (rows - g * QUANT_KR).min(QUANT_KR);
                for (kk, r) in r.into_iter().enumerate().take(valid) {
                    _mm512_storeu_ps(dp.add((g * QUANT_KR + kk) * PACK_NR), r);
                }
            }
        }
    }
}

// ------------------------------------------------------------------------------------
// AVX2 + FMA
// ------------------------------------------------------------------------------------

/// The AVX2 + FMA kernels (the contracts of the trait methods, already checked, with
/// `n, k >= 1`; a CPU with AVX2 and FMA).
pub(super) mod avx2 {
    use super::*;

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

    #[target_feature(enable = "avx2,fma")]
    pub(in super::super) unsafe fn gemv(
        n: usize,
        k: usize,
        x: &[f32],
        b: &[i8],
        scales: Scales<'_>,
        bias: Option<&[f32]>,
        y: &mut [f32],
    ) {
        debug_assert_eq!(y.len(), n);
        let stride = PACK_NR * k_padded(k);
        let nb = k / BLOCK_K;
        let tail = x_tail(x);
        let (scale, shift) = match scales {
            Scales::Tensor { scale, offset } => (scale, offset * sum_f32(x)),
            Scales::Block(_) => (1.0, 0.0),
        };
        for (p, y) in y.chunks_mut(PACK_NR).enumerate() {
            let col0 = p * PACK_NR;
            // SAFETY: check_gemv: x holds k values, b panel p (`stride` bytes from
            // p * stride), (blocks) its scales from p * 16 * nb.
            let dot = unsafe {
                let ws = match scales {
                    Scales::Block(s) => Some(s.as_ptr().add(p * nb * PACK_NR)),
                    Scales::Tensor { .. } => None,
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
                    let r = match scales {
                        Scales::Tensor { .. } => _mm256_fmadd_ps(
                            _mm256_set1_ps(scale),
                            d,
                            _mm256_add_ps(_mm256_set1_ps(shift), b),
                        ),
                        Scales::Block(_) => _mm256_add_ps(d, b),
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

    /// [`super::super::Convert`] at AVX2.
    ///
    /// # Safety
    /// The CPU implements AVX2 and FMA.
    #[target_feature(enable = "avx2,fma")]
    pub(in super::super) unsafe fn convert(
        src: &[i8],
        rows: usize,
        scales: Option<&[f32]>,
        dst: &mut [f32],
    ) {
        assert!(src.len() >= k_padded(rows) * PACK_NR && dst.len() >= rows * PACK_NR);
        if let Some(s) = scales {
            assert!(s.len() >= rows.div_ceil(BLOCK_K) * PACK_NR);
        }
        // SAFETY: PAIRS holds 8 values.
        let pairs = unsafe { _mm256_loadu_si256(PAIRS.as_ptr().cast()) };
        let (sp, dp) = (src.as_ptr(), dst.as_mut_ptr());
        for g in 0..rows.div_ceil(QUANT_KR) {
            let valid = (rows - g * QUANT_KR).min(QUANT_KR);
            for h in 0..2 {
                // SAFETY: group g is within src (asserted); its block's scales within
                // `scales`; columns 8h..8h + 8 of rows 4g..4g + valid of dst are written.
                unsafe {
                    let a: [__m256; 4] = core::array::from_fn(|i| {
                        let v = _mm_loadl_epi64(sp.add(g * GROUP + 32 * h + 8 * i).cast());
                        _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(v))
                    });
                    let mut r = rows_of_8(a, pairs);
                    if let Some(s) = scales {
                        let at = g * QUANT_KR / BLOCK_K * PACK_NR + 8 * h;
                        let s = _mm256_loadu_ps(s.as_ptr().add(at));
                        r = r.map(|r| _mm256_mul_ps(r, s));
                    }
                    for (kk, r) in r.into_iter().enumerate().take(valid) {
                        _mm256_storeu_ps(dp.add((g * QUANT_KR + kk) * PACK_NR + 8 * h), r);
                    }
                }
            }
        }
    }
}
