//! What both x86 kernels (`blocks`, `single`) share: the [`Simd`] primitives a level
//! implements, the pointers, the exponential, the scalar row helpers.

use crate::kernels::activation::consts::*;
use crate::kernels::activation::scalar;

/// Largest `head_dim` of the multi-query kernel (its two tiles hold `HD_MAX` rows).
pub(super) const HD_MAX: usize = 128;

/// Keys per chunk of the single-query kernel (its scores on the stack: 1 KiB); a
/// multiple of both levels' lanes.
pub(super) const KC: usize = 256;

/// The kernel's slices as pointers (lengths checked by the entry point).
#[derive(Clone, Copy)]
pub(super) struct Ptrs {
    pub(super) q: *const f32,
    pub(super) k: *const f32,
    pub(super) v: *const f32,
    pub(super) out: *mut f32,
    /// The heads to compute, `(first, end)`: row `i` of head `h` is written at `out + i *
    /// c + h * head_dim`.
    pub(super) heads: (usize, usize),
}

pub(super) use crate::kernels::x86_simd::Simd;

/// The operation of a [`tree`].
#[derive(Clone, Copy)]
pub(super) enum Tree {
    /// [`Simd::max`].
    Max,
    /// [`Simd::add`].
    Sum,
}

/// `op` over the `KB` vectors as a balanced tree. (A named operation rather than a closure:
/// the generic code calls no closure that uses the vectors, since a closure not inlined
/// would be compiled without the level's target features.)
#[inline(always)]
pub(super) fn tree<const L: usize, const KB: usize, S: Simd<L>>(
    s: S,
    x: [S::V; KB],
    op: Tree,
) -> S::V {
    let mut x = x;
    let mut n = KB;
    while n > 1 {
        // The upper `n / 2` into the lower ones (an odd middle one stays).
        let half = n / 2;
        for i in 0..half {
            x[i] = match op {
                Tree::Max => s.max(x[i], x[i + n - half]),
                Tree::Sum => s.add(x[i], x[i + n - half]),
            };
        }
        n -= half;
    }
    x[0]
}

/// `exp(x)`: [`scalar::exp`]'s reduction, polynomial and special cases, fused.
#[inline(always)]
pub(super) fn exp<const L: usize, S: Simd<L>>(s: S, x: S::V) -> S::V {
    let magic = s.splat(ROUND_MAGIC);
    let v = s.fma(x, s.splat(LOG2E), magic);
    let n = s.sub(v, magic);
    let r = s.fnma(n, s.splat(LN2_HI), x);
    let r = s.fnma(n, s.splat(LN2_LO), r);
    let mut p = s.splat(EXPM1_P[4]);
    p = s.fma(p, r, s.splat(EXPM1_P[3]));
    p = s.fma(p, r, s.splat(EXPM1_P[2]));
    p = s.fma(p, r, s.splat(EXPM1_P[1]));
    p = s.fma(p, r, s.splat(EXPM1_P[0]));
    let e = s.fma(s.mul(r, r), p, r);
    let q = s.add(e, s.splat(1.0));
    // q * 2^n by adding n to the exponent field (n << 23 == bits(v) << 23).
    let y = s.scale_pow2(q, v);
    let y = s.select(s.lt(x, s.splat(EXP_LO)), s.zero(), y);
    // NaN and x > EXP_HI both fail `x <= EXP_HI`: x + inf is +inf or NaN.
    let big = s.add(x, s.splat(f32::INFINITY));
    s.select(s.le(x, s.splat(EXP_HI)), y, big)
}

/// `o[..hd] *= a`.
///
/// # Safety
/// `o` points at `hd` writable f32 values not aliased by anything else in use.
#[inline]
pub(super) unsafe fn scale_row(o: *mut f32, hd: usize, a: f32) {
    for d in 0..hd {
        // SAFETY: `d < hd` (contract).
        unsafe { *o.add(d) *= a };
    }
}

/// The running maximum of a single row grows from `m` to `mb`: rescales the output
/// row (nothing to rescale while `m = -inf`, before the first key) and returns the
/// factor `exp(m - mb)` for the running sum. Rare after the first blocks, hence out of
/// line.
///
/// # Safety
/// As [`scale_row`].
#[cold]
#[inline(never)]
pub(super) unsafe fn raise_max(o: *mut f32, hd: usize, m: f32, mb: f32) -> f32 {
    if m == f32::NEG_INFINITY {
        return 0.0;
    }
    let alpha = scalar::exp(m - mb);
    // SAFETY: forwarded from the caller.
    unsafe { scale_row(o, hd, alpha) };
    alpha
}
