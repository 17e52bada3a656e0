//! The x86-64 backend's GEMM and GEMV: `impl<I: X86Isa> GemmKernels for X86<I>` over the
//! AVX-512F (16-wide, `avx512.rs`) and AVX2 + FMA (8-wide, `avx2.rs`) kernels, on the same
//! packed layouts as every other backend.
//!
//! The impl exists on every target (generic code names `X86<I>` everywhere); its hook overrides are
//! compiled for x86-64 hard-float targets outside Miri only (`cfg(neon_x86)`, set by the crate's
//! `build.rs`), elsewhere the provided (portable) hooks run. Each override first asserts that the
//! CPU has level `I` ([`X86::require`]), then runs that level's kernel (`I::LEVEL` is a constant:
//! the match folds). The packed-A product (segmented `B` in [`super::BRows`], the
//! [`super::Epilogue`] fused into the tile's registers in the `vmaxps` form of `VecEpilogue`) runs
//! one set of tiles per level for contiguous and segmented operands alike, so both give the same
//! bits on the same level. Tile shapes, register budgets and measured speeds: the module
//! documentation of [`gemm`](super).

use super::GemmKernels;
#[cfg(neon_x86)]
use crate::kernels::StridedMut;
use crate::kernels::{X86Isa, X86};

#[cfg(neon_x86)]
pub(crate) mod avx2;
#[cfg(neon_x86)]
pub(crate) mod avx512;

#[cfg(neon_x86)]
use super::{BRows, Epilogue, GemmA, GemmB};
#[cfg(neon_x86)]
use crate::kernels::cpu::X86Level;

impl<I: X86Isa> GemmKernels for X86<I> {
    #[cfg(neon_x86)]
    const GEMM_B_ROW_TILE: usize = match I::LEVEL {
        X86Level::Avx2 => avx2::MR_B,
        X86Level::Avx512 => avx512::MR_B,
    };

    #[cfg(neon_x86)]
    const GEMM_A_COL_TILE: usize = match I::LEVEL {
        X86Level::Avx2 => avx2::NR_A,
        X86Level::Avx512 => avx512::NR_A,
    };

    #[cfg(neon_x86)]
    unsafe fn gemm_packed_b_unchecked(
        g: GemmB,
        a: &[f32],
        b: &[f32],
        bias: Option<&[f32]>,
        mut c: StridedMut<'_>,
    ) {
        Self::require();
        // SAFETY: the caller checked the contract (sizes >= 1); `require` asserted level I.
        unsafe {
            match I::LEVEL {
                X86Level::Avx2 => avx2::gemm_packed_b(g, a, b, bias, &mut c),
                X86Level::Avx512 => avx512::gemm_packed_b(g, a, b, bias, &mut c),
            }
        }
    }

    #[cfg(neon_x86)]
    unsafe fn gemm_packed_a_unchecked(
        g: GemmA,
        a: &[f32],
        b: &[f32],
        bias: Option<&[f32]>,
        mut c: StridedMut<'_>,
    ) {
        Self::require();
        with_vec_epilogue(g.epilogue, &mut c, |ep, c| {
            // SAFETY: the caller checked the contract (sizes >= 1); `require` asserted
            // level I.
            unsafe {
                match I::LEVEL {
                    X86Level::Avx2 => avx2::gemm_packed_a(g, ep, a, b, bias, c),
                    X86Level::Avx512 => avx512::gemm_packed_a(g, ep, a, b, bias, c),
                }
            }
        })
    }

    #[cfg(neon_x86)]
    unsafe fn gemv_packed_b_unchecked(x: &[f32], b: &[f32], bias: Option<&[f32]>, y: &mut [f32]) {
        Self::require();
        // SAFETY: the caller checked the contract (sizes >= 1); `require` asserted level I.
        unsafe {
            match I::LEVEL {
                X86Level::Avx2 => avx2::gemv_packed_b(x, b, bias, y),
                X86Level::Avx512 => avx512::gemv_packed_b(x, b, bias, y),
            }
        }
    }
}

/// An [`Epilogue`] in the form the vector kernels apply to their accumulators:
/// `max(min, max(x, slope * x))` with `vmaxps`, which returns its second operand when the
/// operands are equal or either is NaN. That is [`Epilogue::apply`] (IEEE `maximum`, NaN
/// propagating, `max(-0, +0) = +0`) bit for bit when `slope` is not NaN and has its sign
/// bit clear and `min` is not NaN: `slope * x` is NaN exactly when `x` is (it carries `x`'s
/// payload) or when it is `0 * inf` (then the maximum is that NaN, as `apply` gives), and
/// `x`, `slope * x` are never zeros of opposite signs. The second maximum
/// returns `v = max(x, slope * x)` on a tie, which differs from `apply` only for `v = -0`,
/// `min = +0`: `zero_fix` then selects `min` where `v == min`. Other epilogues (a negative
/// or NaN slope, a NaN bound) are applied by a scalar pass after the kernel
/// ([`with_vec_epilogue`]).
#[cfg(neon_x86)]
#[derive(Clone, Copy, Debug)]
pub(crate) struct VecEpilogue {
    pub(crate) slope: f32,
    pub(crate) min: f32,
    pub(crate) zero_fix: bool,
}

#[cfg(neon_x86)]
impl VecEpilogue {
    /// The vector form of `e`, `None` when the vector form would differ from
    /// [`Epilogue::apply`].
    pub(crate) fn new(e: Epilogue) -> Option<Self> {
        let ok = !e.slope.is_nan() && e.slope.is_sign_positive() && !e.min.is_nan();
        ok.then_some(Self { slope: e.slope, min: e.min, zero_fix: e.min.to_bits() == 0 })
    }
}

/// Runs a vector kernel writing the block `c` with the output stage `epilogue`: fused
/// into the kernel's registers (`kernel(Some(..), c)`) when [`VecEpilogue::new`] accepts
/// it, else `kernel(None, c)` followed by a scalar pass of [`Epilogue::apply`]. Shared by
/// the packed-A product and conv2d's direct kernel.
#[cfg(neon_x86)]
pub(crate) fn with_vec_epilogue(
    epilogue: Option<Epilogue>,
    c: &mut StridedMut<'_>,
    kernel: impl FnOnce(Option<VecEpilogue>, &mut StridedMut<'_>),
) {
    let fused = epilogue.map(VecEpilogue::new);
    kernel(fused.flatten(), c);
    if let (Some(e), Some(None)) = (epilogue, fused) {
        for i in 0..c.rows() {
            c.row(i).iter_mut().for_each(|v| *v = e.apply(*v));
        }
    }
}

/// What every packed-A tile of one x86 product shares: the rows of `B`, the output stage
/// in vector form (if fused) and the distance between rows of `C`.
#[cfg(neon_x86)]
#[derive(Clone, Copy, Debug)]
pub(crate) struct TileA {
    pub(crate) br: BRows,
    pub(crate) ep: Option<VecEpilogue>,
    pub(crate) ldc: usize,
    /// The tiles start from the values already in `C` (a later block of a blocked
    /// reduction) instead of the bias (AVX2 only; the AVX-512 tiles never block).
    pub(crate) accumulate: bool,
}
