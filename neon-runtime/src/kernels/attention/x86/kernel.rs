//! What both x86 levels share: the [`Simd`] primitives a level implements, the kernel's
//! driver over heads and query rows, the exponential, the scalar row helpers.

use super::super::AttentionGeometry;
use super::{blocks, single};
use crate::kernels::activation::consts::*;
use crate::kernels::activation::scalar;

/// Largest `head_dim` of the multi-query kernel (its two tiles hold `HD_MAX` rows).
pub(super) const HD_MAX: usize = 128;

/// Fewest query rows for which a (padded) block of the multi-query kernel is used;
/// fewer go through the single-query kernel. Measured at both levels on 8 heads x 52:
/// a block costs about as much as 5 single rows with the keys in cache (100 keys), 3.6
/// to 3.8 streaming them from the last-level cache (400 keys).
const MIN_ROWS: usize = 5;

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

/// A level's vectors of `L` f32 lanes and the primitives the kernel needs on them.
/// Implemented by a zero-sized token (`avx512::Zmm`, `avx2::Ymm`) that exists only
/// where the CPU implements the level (its constructor is `unsafe`), so the
/// arithmetic is safe to call; every method is `#[inline(always)]`, compiled inside
/// the level's `#[target_feature]` entry point.
pub(super) trait Simd<const L: usize>: Copy {
    /// `L` f32 lanes.
    type V: Copy;
    /// One bit or lane per lane, from a comparison.
    type Mask: Copy;
    /// `L` i32 lanes: the visible-key counts of a block of queries.
    type Lim: Copy;

    /// `x` in every lane.
    fn splat(self, x: f32) -> Self::V;
    /// Zeros.
    fn zero(self) -> Self::V;
    /// `a + b`.
    fn add(self, a: Self::V, b: Self::V) -> Self::V;
    /// `a - b`.
    fn sub(self, a: Self::V, b: Self::V) -> Self::V;
    /// `a * b`.
    fn mul(self, a: Self::V, b: Self::V) -> Self::V;
    /// `a / b`.
    fn div(self, a: Self::V, b: Self::V) -> Self::V;
    /// `a * b + c`, fused.
    fn fma(self, a: Self::V, b: Self::V, c: Self::V) -> Self::V;
    /// `c - a * b`, fused.
    fn fnma(self, a: Self::V, b: Self::V, c: Self::V) -> Self::V;
    /// `vmaxps`: `b` when either is NaN.
    fn max(self, a: Self::V, b: Self::V) -> Self::V;
    /// `a < b` (ordered: false on NaN).
    fn lt(self, a: Self::V, b: Self::V) -> Self::Mask;
    /// `a <= b` (ordered).
    fn le(self, a: Self::V, b: Self::V) -> Self::Mask;
    /// `a > b` (ordered).
    fn gt(self, a: Self::V, b: Self::V) -> Self::Mask;
    /// Whether any lane of `m` is set.
    fn any(self, m: Self::Mask) -> bool;
    /// `t` where `m` is set, `f` elsewhere.
    fn select(self, m: Self::Mask, t: Self::V, f: Self::V) -> Self::V;
    /// The first `n` (`<= L`) lanes.
    fn first(self, n: usize) -> Self::Mask;
    /// `q * 2^n` for `n` in the low bits of `v`'s lanes (the exponent's round-to-
    /// integer magic sum): `bits(q) + (bits(v) << 23)`.
    fn scale_pow2(self, q: Self::V, v: Self::V) -> Self::V;
    /// The lanes of `l`.
    fn limits(self, l: &[i32; L]) -> Self::Lim;
    /// The lanes where `j < lim`.
    fn below(self, lim: Self::Lim, j: i32) -> Self::Mask;
    /// The maximum lane.
    fn hmax(self, x: Self::V) -> f32;
    /// The sum of the lanes.
    fn hsum(self, x: Self::V) -> f32;
    /// Lane `t` of the result: the sum of the lanes of `a[t]` (a transposing add tree).
    fn hsum_rows(self, a: &[Self::V; L]) -> Self::V;
    /// The lanes as an array.
    fn to_array(self, x: Self::V) -> [f32; L];
    /// The `L` values at `p`.
    ///
    /// # Safety
    /// `p` readable for `L` values.
    unsafe fn load(self, p: *const f32) -> Self::V;
    /// The first `n` (`<= L`) values at `p`, zeros after (nothing else is read).
    ///
    /// # Safety
    /// `p` readable for `n` values.
    unsafe fn load_n(self, p: *const f32, n: usize) -> Self::V;
    /// `x` to the `L` values at `p`.
    ///
    /// # Safety
    /// `p` writable for `L` values.
    unsafe fn store(self, p: *mut f32, x: Self::V);
    /// The first `n` (`<= L`) lanes of `x` to `p` (nothing else is written).
    ///
    /// # Safety
    /// `p` writable for `n` values.
    unsafe fn store_n(self, p: *mut f32, x: Self::V, n: usize);
    /// `*p` in every lane.
    ///
    /// # Safety
    /// `p` readable.
    unsafe fn bcast(self, p: *const f32) -> Self::V;
}

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

/// The whole kernel at level `S`: per head of `p.heads`, blocks of up to `QV * L` queries
/// against blocks of `KB` keys (even), then single queries. A last block of at
/// most `L` queries runs with one query vector (the same bits, see [`blocks::rows`]).
///
/// # Safety
/// `p` and `g` describe a geometry the entry point accepted (`q_frames >= 1`); the heads
/// `p.heads` are within `0..g.heads`, and their values of every output row (`out + i * c
/// + h * head_dim .. + head_dim`) are writable and not aliased.
#[inline(always)]
pub(super) unsafe fn attention<const L: usize, const QV: usize, const KB: usize, S: Simd<L>>(
    s: S,
    p: Ptrs,
    g: AttentionGeometry,
) {
    // Key indices are compared as i32 in the multi-query kernel.
    let blocks = g.head_dim <= HD_MAX && g.len < 1 << 30;
    for h in p.heads.0..p.heads.1 {
        let mut i = 0;
        while blocks && g.q_frames - i >= MIN_ROWS {
            let nq = (QV * L).min(g.q_frames - i);
            // SAFETY: `i + nq <= q_frames`, `h < heads`, `hd <= HD_MAX`, `len <
            // 2^30`; the rest is the caller's contract.
            unsafe {
                if nq > L {
                    blocks::rows::<L, QV, KB, S>(s, p, g, (i, nq), h)
                } else {
                    blocks::rows::<L, 1, KB, S>(s, p, g, (i, nq), h)
                }
            };
            i += nq;
        }
        while i < g.q_frames {
            // SAFETY: `i < q_frames`, `h < heads`; the caller's contract.
            unsafe { single::row(s, p, g, i, h) };
            i += 1;
        }
    }
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

/// [`Simd`] methods whose body is one expression of intrinsics, for a level's impl:
/// `fn name(a: T, ..) -> R => expression;`.
macro_rules! intrinsics {
    ($(fn $name:ident($($arg:ident: $ty:ty),*) -> $ret:ty => $body:expr;)+) => {
        $(
            #[inline(always)]
            fn $name(self, $($arg: $ty),*) -> $ret {
                // SAFETY: the token exists only where the CPU implements the level.
                unsafe { $body }
            }
        )+
    };
}
pub(super) use intrinsics;
