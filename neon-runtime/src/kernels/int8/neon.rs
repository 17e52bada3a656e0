//! NEON int8-activation kernels: the [`Neon`] implementation of [`Int8Kernels`], bit for
//! bit the portable kernels' results (every sum wraps modulo 2^32 in both, and the
//! requantisation below is the scalar [`Requant::apply`](super::Requant::apply) per lane).
//!
//! - **Requantisation**, 8 output channels at a time ([`Stage8`]): `shl` by the left shift,
//!   `sqrdmulh` (gemmlowp's doubling high product, exactly), then `srshl` by the negated
//!   right shift (a rounding shift right, half up: [`Rounding::HalfUp`]); for
//!   [`Rounding::AwayFromZero`] gemmlowp's fix-up first (`and` with the negated shift,
//!   `sshr #31`, `sqadd`: negative values move down by one before the half-up shift, so their
//!   ties round away from zero); [`Rounding::Single`] as `smull` to i64, `srshl` by
//!   `shift - 31` and `xtn`. Then the zero point, the clamp, and `sqxtn` twice to i8. Vector
//!   requantisation covers the channels of whole blocks of 8; the last `C mod 8` go through
//!   the portable output stage, which is also where [`Rounding::HalfUpBlocks`] puts its tail
//!   (so the vector blocks always have one rounding).
//! - **Depthwise** (depth multiplier 1; others run the portable kernel): per output
//!   pixel, blocks of 8 channels in registers, each walking every tap: `ssubl` (`x - x_zp`
//!   to i16, exact), `sxtl` of the weights and `smlal` to i32; the last `C mod 8` channels
//!   one more block over the pixel's last 8 ([`depthwise`]; under 8 channels the shared
//!   loop, [`portable::depthwise_dm1_with`]). The input offset is not folded here: the
//!   models' layers compute one output pixel per call (streaming), where the folded
//!   correction `bias - x_zp * sum w` costs as much as the sum it saves.
//! - **Fully connected and conv2d**: one dot product per output channel over the whole
//!   filter row, four rows per load of the input, the offset folded with the filter's row
//!   sums (`sum x * w - x_zp * sum w`), on one of two paths ([`DotPath`]): `sdot` where the
//!   CPU has FEAT_DotProd, otherwise `smull`/`smull2` and `sadalp` ([`rows`]: also conv2d
//!   pixels whose taps are not one contiguous run). Filters of rows over 2048 bytes run
//!   the per-tap loop with one dot product per tap: `sdot` (offset folded, the second sum
//!   an `sdot` by ones) or `ssubl` (`x - x_zp` widened to i16, exact), `sxtl` of the
//!   weights and `smlal`. The requantisation as above.
//!
//! Sources: the instructions' pseudo-code (Arm A64 ISA: `SQRDMULH`, `SRSHL`, `SDOT`), and
//! for the fix-up gemmlowp's `fixedpoint_neon.h` (`RoundingDivideByPOT`), read for the
//! arithmetic only.

use super::portable::{self, finish, DepthwisePieces, PathKernels};
use super::{
    ConvGeometry, DepthwiseGeometry, DotLayer, FcGeometry, Int8Kernels, Int8Weights, LayerOperands,
    LayerQuant, OutputStage, Rounding, ROUNDING_BLOCK,
};
use crate::kernels::{cpu, BackendKind, BackendType, Neon};
use core::arch::aarch64::*;
use core::arch::asm;

mod depthwise;
mod rows;

/// How the NEON fully connected and conv2d kernels form their dot products. Both are exact,
/// so they give the same outputs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DotPath {
    /// `sdot` (FEAT_DotProd): 16 products per instruction, the input offset folded.
    Sdot,
    /// `ssubl`, `sxtl`, `smlal` (every ARMv8-A core): 8 products per instruction.
    Widening,
}

impl DotPath {
    /// The path for this CPU: [`Sdot`](Self::Sdot) where [`cpu::aarch64_dotprod`] says so.
    #[inline]
    pub fn detect() -> Self {
        if cpu::aarch64_dotprod() {
            DotPath::Sdot
        } else {
            DotPath::Widening
        }
    }
}

/// The NEON kernels of a dot path: conv2d and fully connected on whole filter rows
/// ([`rows`]), and the pieces of the per-tap conv2d loop (filters of long rows): [`dot`] on
/// the path, the output stage by [`finish_row`].
impl PathKernels for DotPath {
    fn dot(self, x: &[i8], w: &[i8], x_zp: i32) -> i32 {
        dot(self, x, w, x_zp)
    }

    fn row(q: &LayerQuant<'_>, y: &mut [i8], acc: &dyn Fn(usize) -> i32) {
        finish_row(q, y, acc);
    }

    /// `self`, except `Sdot` on a CPU without FEAT_DotProd (`Widening`); never `None`.
    #[inline]
    fn usable(self) -> Option<Self> {
        if self == DotPath::Sdot && !cpu::aarch64_dotprod() {
            Some(DotPath::Widening)
        } else {
            Some(self)
        }
    }

    fn conv2d(self, g: &ConvGeometry, (x, q, sums): LayerOperands<'_>, y: &mut [i8]) {
        rows::conv2d(self, g, x, &q, sums, y);
    }

    fn fully_connected(self, g: &FcGeometry, (x, q, sums): LayerOperands<'_>, y: &mut [i8]) {
        rows::fully_connected(self, g, x, &q, sums, y);
    }
}

/// `impl Int8Kernels for $backend` with conv2d and fully connected on the [`DotPath`] that
/// `$path` gives (with the prepared row sums where given), depthwise on [`depthwise_hook`].
macro_rules! neon_int8_kernels {
    ($backend:ty, $path:expr) => {
        impl Int8Kernels for $backend {
            fn conv2d_i8_checked(
                g: &ConvGeometry,
                x: &[i8],
                q: LayerQuant<'_>,
                sums: Option<&[i32]>,
                y: &mut [i8],
            ) {
                g.run_on($path, (x, q, sums), y);
            }

            fn depthwise_conv2d_i8_checked(
                g: &DepthwiseGeometry,
                x: &[i8],
                q: LayerQuant<'_>,
                y: &mut [i8],
            ) {
                depthwise_hook(g, x, q, y);
            }

            fn fully_connected_i8_checked(
                g: &FcGeometry,
                x: &[i8],
                q: LayerQuant<'_>,
                sums: Option<&[i32]>,
                y: &mut [i8],
            ) {
                g.run_on($path, (x, q, sums), y);
            }
        }
    };
}

neon_int8_kernels!(Neon, DotPath::detect());

/// The [`Neon`] int8 kernels with conv2d and fully connected forced onto
/// [`DotPath::Widening`] on every CPU: a backend marker for tests and measurements (the
/// instruction counts of `benches/src/bin/insn_micro.rs` give the path of cores without
/// FEAT_DotProd on one that has it, for a whole stream plan run with
/// `StreamPlan::run::<NeonWidening, _, _>`). It implements [`Int8Kernels`] only (not
/// `Backend`); its other hooks are [`Neon`]'s, and its outputs are the same bits. Nothing
/// chooses it by default.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NeonWidening;

impl BackendType for NeonWidening {
    const NAME: &'static str = "neon-widening";
    const IMPL: &'static str = "neon";
    const KIND: BackendKind = BackendKind::Neon;
}

neon_int8_kernels!(NeonWidening, DotPath::Widening);

/// The NEON depthwise hook (checked arguments): the vector kernel for depth multiplier 1,
/// the portable one otherwise.
fn depthwise_hook(g: &DepthwiseGeometry, x: &[i8], q: LayerQuant<'_>, y: &mut [i8]) {
    if g.depth_multiplier == 1 {
        depthwise::depthwise(g, x, q, y);
    } else {
        portable::depthwise(g, x, q, y);
    }
}

/// The output stage of 8 output channels as vectors: multipliers and shifts (lanes 0-3,
/// 4-7), zero point, activation range, and the blocks' one rounding.
#[derive(Clone, Copy)]
struct Stage8 {
    multiplier: [int32x4_t; 2],
    shift: [int32x4_t; 2],
    zero_point: int32x4_t,
    act_min: int32x4_t,
    act_max: int32x4_t,
    rounding: Rounding,
}

impl Stage8 {
    /// The stage of channels `c0..c0 + 8` of `channels` (`c0 + 8 <= channels - channels %
    /// 8`, so [`Rounding::at`] is the same on the 8).
    #[inline]
    fn new(out: &OutputStage, w: &Int8Weights<'_>, c0: usize, channels: usize) -> Self {
        // Checked multipliers: shifts in -31..=30 already.
        let ms: [_; 8] = match w.multipliers.get(c0..c0 + 8) {
            Some(ms) if w.multipliers.len() > 1 => core::array::from_fn(|j| ms[j]),
            _ => [w.multiplier(c0); 8],
        };
        let m = ms.map(|m| m.multiplier);
        let s = ms.map(|m| m.shift);
        // SAFETY: NEON is baseline on aarch64; the loads read 4 values of 8-value arrays.
        unsafe {
            Stage8 {
                multiplier: [vld1q_s32(m.as_ptr()), vld1q_s32(m[4..].as_ptr())],
                shift: [vld1q_s32(s.as_ptr()), vld1q_s32(s[4..].as_ptr())],
                zero_point: vdupq_n_s32(out.zero_point),
                act_min: vdupq_n_s32(out.act_min),
                act_max: vdupq_n_s32(out.act_max),
                rounding: out.rounding.at(c0, channels),
            }
        }
    }

    /// `acc * multiplier * 2^(shift - 31)` in the stage's rounding, 4 lanes (half `h`).
    #[inline(always)]
    fn rescale(&self, acc: int32x4_t, h: usize) -> int32x4_t {
        let (m, shift) = (self.multiplier[h], self.shift[h]);
        // SAFETY: NEON is baseline on aarch64; register-only operations.
        unsafe {
            if self.rounding == Rounding::Single {
                // (acc * m + 2^(30 - shift)) >> (31 - shift), exact in i64, then truncated.
                let neg_total = vsubq_s32(shift, vdupq_n_s32(31));
                let lo = vmull_s32(vget_low_s32(acc), vget_low_s32(m));
                let lo = vrshlq_s64(lo, vmovl_s32(vget_low_s32(neg_total)));
                let hi = vrshlq_s64(vmull_high_s32(acc, m), vmovl_high_s32(neg_total));
                return vcombine_s32(vmovn_s64(lo), vmovn_s64(hi));
            }
            let zero = vdupq_n_s32(0);
            let high = vqrdmulhq_s32(vshlq_s32(acc, vmaxq_s32(shift, zero)), m);
            let neg_right = vminq_s32(shift, zero);
            let high = if self.rounding == Rounding::AwayFromZero {
                // -1 on negative lanes with a right shift (the sign bit of high & -right).
                vqaddq_s32(high, vshrq_n_s32::<31>(vandq_s32(high, neg_right)))
            } else {
                high
            };
            vrshlq_s32(high, neg_right)
        }
    }

    /// The 8 outputs of accumulators `acc` (channels 0-3, 4-7) as i8.
    #[inline(always)]
    fn apply(&self, acc: [int32x4_t; 2]) -> int8x8_t {
        // SAFETY: NEON is baseline on aarch64; register-only operations.
        unsafe {
            let out = |h: usize| {
                let v = vaddq_s32(self.rescale(acc[h], h), self.zero_point);
                vqmovn_s32(vminq_s32(vmaxq_s32(v, self.act_min), self.act_max))
            };
            vqmovn_s16(vcombine_s16(out(0), out(1)))
        }
    }
}

/// Writes `y[j] = stage(acc(j))` for the output channels `j` of a row of `y.len()`, in
/// [`stage_block`]s of up to 64 channels.
#[inline]
fn finish_row(q: &LayerQuant<'_>, y: &mut [i8], acc: &dyn Fn(usize) -> i32) {
    let n = y.len();
    for (b, yb) in y.chunks_mut(64).enumerate() {
        let c0 = 64 * b;
        let a: [i32; 64] = core::array::from_fn(|j| if c0 + j < n { acc(c0 + j) } else { 0 });
        stage_block(q, &a[..yb.len()], (c0, n), yb);
    }
}

/// Writes `y[j] = stage(acc[j])` for output channels `c0 + j` of `channels` (`c0` a
/// multiple of 8, `y` and `acc` of equal length): the channels of whole blocks of 8 through
/// [`Stage8`], the last `channels mod 8` through the portable stage.
fn stage_block(q: &LayerQuant<'_>, acc: &[i32], (c0, channels): (usize, usize), y: &mut [i8]) {
    let (out, w) = (&q.out, &q.weights);
    let body = channels - channels % ROUNDING_BLOCK;
    let vector = body.saturating_sub(c0).min(y.len());
    let (yv, yt) = y.split_at_mut(vector);
    for (b, (yb, ab)) in yv.chunks_exact_mut(8).zip(acc.chunks_exact(8)).enumerate() {
        store8(&Stage8::new(out, w, c0 + 8 * b, channels), ab, yb);
    }
    for (j, (y, &a)) in yt.iter_mut().zip(&acc[vector..]).enumerate() {
        *y = finish(out, w, (c0 + vector + j, channels), a);
    }
}

/// `y[..8] = stage(acc[..8])`.
#[inline(always)]
fn store8(stage: &Stage8, acc: &[i32], y: &mut [i8]) {
    assert!(acc.len() >= 8 && y.len() >= 8, "a block of 8 channels");
    // SAFETY: NEON is baseline; `acc` and `y` hold 8 values each (asserted).
    unsafe {
        let v = [vld1q_s32(acc.as_ptr()), vld1q_s32(acc[4..].as_ptr())];
        vst1_s8(y.as_mut_ptr(), stage.apply(v));
    }
}

/// The NEON pieces of the depthwise loop: the input zero point in 8 lanes.
struct NeonDepthwise {
    zp: int8x8_t,
}

impl DepthwisePieces for NeonDepthwise {
    fn mla_blocks(&self, acc: &mut [i32], x: &[i8], w: &[i8]) {
        mla_blocks(acc, x, w, self.zp);
    }

    fn stage8(
        &self,
        q: &LayerQuant<'_>,
        (c0, channels): (usize, usize),
        acc: &[i32],
        y: &mut [i8],
    ) {
        store8(&Stage8::new(&q.out, &q.weights, c0, channels), acc, y);
    }
}

/// `acc += (x - x_zp) * w` over whole blocks of 8 values of `acc` (`ssubl`: `x - x_zp`
/// fits i16 exactly; `sxtl`; `smlal`); `x` and `w` at least as long as `acc`.
#[inline(always)]
fn mla_blocks(acc: &mut [i32], x: &[i8], w: &[i8], zp: int8x8_t) {
    for ((acc, x), w) in acc.chunks_exact_mut(8).zip(x.chunks_exact(8)).zip(w.chunks_exact(8)) {
        // SAFETY: NEON is baseline; each chunk holds 8 values.
        unsafe {
            let xv = vsubl_s8(vld1_s8(x.as_ptr()), zp);
            let wv = vmovl_s8(vld1_s8(w.as_ptr()));
            let lo = vmlal_s16(vld1q_s32(acc.as_ptr()), vget_low_s16(xv), vget_low_s16(wv));
            let hi = vmlal_high_s16(vld1q_s32(acc[4..].as_ptr()), xv, wv);
            vst1q_s32(acc.as_mut_ptr(), lo);
            vst1q_s32(acc[4..].as_mut_ptr(), hi);
        }
    }
}

/// `sum (x[k] - x_zp) * w[k]` over equal-length `x` and `w`, wrapping, on `path` (`Sdot`
/// only where the CPU has FEAT_DotProd).
#[inline]
fn dot(path: DotPath, x: &[i8], w: &[i8], x_zp: i32) -> i32 {
    let n = x.len().min(w.len());
    let body = n - n % 16;
    let head = match path {
        // SAFETY: `Sdot` only reaches here through `DotPath::usable`/`detect` (dotprod
        // present); both slices hold `body` bytes.
        DotPath::Sdot => unsafe { dot_sdot(x.as_ptr(), w.as_ptr(), body, x_zp) },
        // SAFETY: both slices hold `body` bytes.
        DotPath::Widening => unsafe { dot_widening(x.as_ptr(), w.as_ptr(), body, x_zp) },
    };
    x[body..n]
        .iter()
        .zip(&w[body..n])
        .fold(head, |acc, (&x, &w)| acc.wrapping_add((i32::from(x) - x_zp) * i32::from(w)))
}

/// `sum (x - x_zp) * w` over `n` bytes (`n` a multiple of 16): `ssubl`, `sxtl`, `smlal`.
///
/// # Safety
/// `x` and `w` readable for `n` bytes.
#[inline]
unsafe fn dot_widening(x: *const i8, w: *const i8, n: usize, x_zp: i32) -> i32 {
    // SAFETY: the caller's extents; `x_zp` is in the int8 range (checked).
    unsafe {
        let zp = vdup_n_s8(x_zp as i8);
        let mut acc = [vdupq_n_s32(0); 2];
        for k in (0..n).step_by(16) {
            let (xv, wv) = (vld1q_s8(x.add(k)), vld1q_s8(w.add(k)));
            let (xl, xh) = (vsubl_s8(vget_low_s8(xv), zp), vsubl_s8(vget_high_s8(xv), zp));
            let (wl, wh) = (vmovl_s8(vget_low_s8(wv)), vmovl_high_s8(wv));
            acc[0] = vmlal_s16(acc[0], vget_low_s16(xl), vget_low_s16(wl));
            acc[1] = vmlal_high_s16(acc[1], xl, wl);
            acc[0] = vmlal_s16(acc[0], vget_low_s16(xh), vget_low_s16(wh));
            acc[1] = vmlal_high_s16(acc[1], xh, wh);
        }
        vaddvq_s32(vaddq_s32(acc[0], acc[1]))
    }
}

/// `acc += ` the 4-byte dot products of `a` and `b` per lane (`sdot`; no stable intrinsic in
/// Rust 1.95).
///
/// # Safety
/// The CPU implements FEAT_DotProd.
#[target_feature(enable = "dotprod")]
#[inline]
unsafe fn sdot(mut acc: int32x4_t, a: int8x16_t, b: int8x16_t) -> int32x4_t {
    // SAFETY: register-only instruction of an extension the caller guarantees.
    unsafe {
        asm!(
            "sdot {acc:v}.4s, {a:v}.16b, {b:v}.16b",
            acc = inout(vreg) acc,
            a = in(vreg) a,
            b = in(vreg) b,
            options(pure, nomem, nostack, preserves_flags),
        );
    }
    acc
}

/// `sum x * w - x_zp * sum w` over `n` bytes (`n` a multiple of 16), wrapping: two `sdot`
/// per 16 bytes.
///
/// # Safety
/// The CPU implements FEAT_DotProd; `x` and `w` readable for `n` bytes.
#[target_feature(enable = "dotprod")]
unsafe fn dot_sdot(x: *const i8, w: *const i8, n: usize, x_zp: i32) -> i32 {
    // SAFETY: the caller's extents and CPU.
    unsafe {
        let ones = vdupq_n_s8(1);
        let (mut xw, mut ws) = (vdupq_n_s32(0), vdupq_n_s32(0));
        for k in (0..n).step_by(16) {
            let wv = vld1q_s8(w.add(k));
            xw = sdot(xw, vld1q_s8(x.add(k)), wv);
            ws = sdot(ws, ones, wv);
        }
        vaddvq_s32(xw).wrapping_sub(x_zp.wrapping_mul(vaddvq_s32(ws)))
    }
}
