//! The [`X86<I>`](crate::kernels::X86) implementation of
//! [`QuantKernels`]: AVX-512F (16-wide, `X86<Avx512>`, `avx512.rs`)
//! and AVX2 + FMA (8-wide, `X86<Avx2>`, `avx2.rs`) kernels over the packed layout every
//! backend shares ([`pack_i8`](super::pack_i8)). The level is the backend type's; every
//! override first asserts that the CPU has it ([`X86::require`](crate::kernels::X86::require)).
//! The kernels exist on x86-64 hard-float targets outside Miri; elsewhere (where the type
//! exists but cannot run) the impl keeps the portable hooks. The int8-activation GEMV
//! ([`gemv_i8_dot`](super::QuantKernels::gemv_i8_dot)) is the portable one on both levels.
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
//!   at half the speed, and a second accumulator set over alternate groups gained nothing
//!   (the loop is bound by its 3 vector instructions per 16 weights, not by FMA latency;
//!   measured: see BENCHMARKS.md, "Kernel design measurements (GEMM and int8)").
//! - **Software prefetch (AVX-512):** each group prefetches (`prefetcht0`) the line 16 KiB
//!   ahead in the weights (panels are contiguous, so across panel ends too; never past the
//!   packed weights). The hardware prefetcher alone keeps too few lines in flight for a
//!   stream from memory; the distance is the best measured, and the prefetch does not
//!   change the in-cache speed (see BENCHMARKS.md, "Kernel design measurements (GEMM and
//!   int8)"). The AVX2 loop is compute-bound below the memory bandwidth and does not
//!   prefetch.
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
//! The scheme of every backend (`gemm_converted` in [`super`]): weights converted to f32
//! (dequantised: per tensor `q * scale + offset`, one FMA; in blocks times the block
//! scale), a block of `k` at a time, then the same backend's packed-B f32 GEMM
//! (`X86<I>::gemm_packed_b`) on the converted block, the bias in its first call. The
//! conversion is vectorised here (AVX-512: 4 `vpmovsxbd` + 4 `vcvtdq2ps`, then 4
//! `vpermt2ps` and 4 `vshuff32x4` transpose a group to 4 rows of 16 outputs; AVX2: per 8
//! outputs 4 `vpmovsxbd`, 4 `vcvtdq2ps`, 4 `vpermps`, 4 `vunpck*pd`, 4 `vperm2f128`). On
//! AVX-512 two panels are converted per step, so the f32 GEMM runs its 8x32 tile instead
//! of 8x16, and the blocks are `2 * KC` = 512 deep (64 KiB of stack), so Moonshine's
//! `k = 416` needs no pass adding partial products; AVX2 converts the same two panels and
//! 512-deep blocks (its tile stays 6x16: the pair halves how often a block of `A` is
//! read). Each of the vectorised conversion, the two panels and the 512-deep blocks was
//! measured faster (see BENCHMARKS.md, "Kernel design measurements (GEMM and int8)").
//!
//! # Measured
//!
//! GEMV timings and bandwidths of both levels against the portable GEMV and the f32 GEMV,
//! the decoder step's memory floor, and the variants tried: see
//! BENCHMARKS.md, "Kernel design measurements (GEMM and int8)". A decoder step's weights
//! (38.5 MB) exceed a 32 MiB L3, so the AVX-512 GEMV runs at the memory bandwidth, the AVX2
//! one below it.
//!
//! # Accuracy
//!
//! As the portable kernels (see [`super`]): exact products, f32 sums (per output and
//! position in the group, in `k` order, then the 4 positions pairwise), fused
//! multiply-adds; no more roundings per output than the portable kernels, so within the
//! same bound of the f64 reference.
//!
//! [`KC`]: super::KC

use super::QuantKernels;
use crate::kernels::{X86Isa, X86};

x86_simd_items! {
    mod avx2;
    mod avx512;

    use super::QUANT_KR;
    use super::{gemm_converted, Gemv, QuantGemm, QuantWeights, KC};
    use crate::kernels::cpu::X86Level;
    use crate::kernels::StridedMut;
}

impl<I: X86Isa> QuantKernels for X86<I> {
    #[cfg(neon_x86)]
    unsafe fn gemv_i8_unchecked(x: &[f32], w: QuantWeights<'_>, y: &mut [f32]) {
        Self::require();
        // SAFETY: the CPU implements the level (required above); the entry point checked
        // the contract, n, k >= 1.
        unsafe {
            match I::LEVEL {
                X86Level::Avx2 => avx2::gemv(Gemv::new(x, w, y), y),
                X86Level::Avx512 => avx512::gemv(Gemv::new(x, w, y), y),
            }
        }
    }

    #[cfg(neon_x86)]
    unsafe fn gemm_i8_unchecked(g: QuantGemm, a: &[f32], w: QuantWeights<'_>, c: StridedMut<'_>) {
        Self::require();
        match I::LEVEL {
            // Two panels per conversion and blocks of 2 * KC `k` at both levels: Moonshine's
            // k = 416 in one block (no pass adding partial products) and each block of `A`
            // read once per pair of panels (on AVX2 too: measured faster than one panel and
            // KC-deep blocks, see BENCHMARKS.md, "Kernel design measurements").
            X86Level::Avx2 => gemm_converted::<Self, 2, { 2 * KC }>(g, a, w, c, |s, r, bs, d| {
                // SAFETY: the CPU implements AVX2 and FMA (required above).
                unsafe { avx2::convert(s, r, bs, d) }
            }),
            X86Level::Avx512 => gemm_converted::<Self, 2, { 2 * KC }>(g, a, w, c, |s, r, bs, d| {
                // SAFETY: the CPU implements AVX-512F (required above).
                unsafe { avx512::convert(s, r, bs, d) }
            }),
        }
    }
}

/// `[x[4g], x[4g + 1], x[4g + 2], x[4g + 3]]` for the last, partial group (`k % 4` values,
/// zeros after them: the packed weights there are zero too, and `0 * 0` keeps the sums).
#[cfg(neon_x86)]
fn x_tail(x: &[f32]) -> [f32; QUANT_KR] {
    let full = x.len() / QUANT_KR * QUANT_KR;
    let mut t = [0.0; QUANT_KR];
    t[..x.len() - full].copy_from_slice(&x[full..]);
    t
}
