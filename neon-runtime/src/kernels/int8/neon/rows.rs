//! NEON whole-row dot products for fully connected and conv2d: each output pixel or row is
//! `y[j] = stage(bias[j] + sum x * w_j - x_zp * sum w_j)` over the whole filter row `w_j`
//! (`K` bytes), the sum wrapping (the exact `sum (x - x_zp) * w_j` modulo 2^32, as the
//! portable kernels).
//!
//! - **Rows four at a time**: one load of 16 input bytes serves four filter rows; each row
//!   keeps its own 4-lane accumulator, and the four are reduced together by two rounds of
//!   `addp` into the four rows' sums. The last `K mod 16` bytes are one more step over the
//!   16 bytes that end the row, with the filter bytes already counted masked to zero (rows
//!   shorter than 16 are copied into zero-padded registers instead): no scalar tail.
//! - **Products**: [`DotPath::Sdot`] one `sdot` per row and step; [`DotPath::Widening`]
//!   `smull` and `smull2` (i8 x i8 to i16, exact: at most 2^14 in magnitude) and two
//!   `sadalp` (pairs of i16 added into the i32 lanes, exact).
//! - **Offset**: the filter's row sums `sum w_j` ([`RowSums`](super::super::RowSums), given
//!   by a prepared layer, or formed by the same kernel with an input of ones), then
//!   `bias + dot - x_zp * sum` per channel.
//! - **conv2d**: a pixel whose taps read one contiguous run of the input
//!   ([`Pixel::contiguous`]: the models' `[K, 1]` and 1x1 kernels) uses it in place; any
//!   other pixel's inside taps are gathered into a stack row of `KH * KW * Cin` bytes whose
//!   outside taps hold `x_zp` (so they add `x_zp * w - x_zp * w = 0`). Filters with rows over
//!   [`GATHER`] bytes run the per-tap loop ([`portable::conv2d_with`]).
//!
//! The output stage is [`stage_block`]: whole blocks of 8 channels through `Stage8`, the
//! last `C mod 8` through the portable stage.

use super::super::portable::{self, pixels, OnPath};
use super::super::{ConvGeometry, FcGeometry, LayerQuant};
use super::{stage_block, DotPath};
use core::arch::aarch64::*;

/// Output channels whose sums are formed together on the stack.
const CHUNK: usize = 64;

/// The largest filter row (bytes) a non-contiguous conv2d pixel is gathered into.
const GATHER: usize = 2048;

/// `lanes[r..r + 16]` keeps the last `r` of 16 bytes (lanes `16 - r..16`), for a row's tail.
static TAIL_MASK: [u8; 32] = {
    let mut m = [0u8; 32];
    let mut i = 16;
    while i < 32 {
        m[i] = 0xff;
        i += 1;
    }
    m
};

/// conv2d on `path` (checked arguments; `Sdot` only where the CPU has FEAT_DotProd), with
/// the filter's row sums if given (module docs).
pub(super) fn conv2d(
    path: DotPath,
    g: &ConvGeometry,
    x: &[i8],
    q: &LayerQuant<'_>,
    sums: Option<&[i32]>,
    y: &mut [i8],
) {
    let (cin, cout) = (g.window.channels, g.out_channels);
    let per_oc = g.window.kernel_h * g.window.kernel_w * cin;
    if per_oc > GATHER {
        portable::conv2d_with(g, x, y, &OnPath { path, q, sums });
        return;
    }
    let mut row = [0i8; GATHER];
    for (px, y) in pixels(&g.window).zip(y.chunks_exact_mut(cout)) {
        let xs = match px.contiguous(&g.window) {
            Some(first) => &x[first * cin..][..per_oc],
            None => {
                let row = &mut row[..per_oc];
                // `x_zp` is in the int8 range (checked).
                row.fill(q.x_zp as i8);
                px.for_each_tap(&g.window, |t, i| {
                    row[t * cin..][..cin].copy_from_slice(&x[i * cin..][..cin]);
                });
                &*row
            }
        };
        whole_rows(path, xs, q, sums, y);
    }
}

/// Fully connected on `path` (checked arguments, as [`conv2d`]): one [`whole_rows`] per
/// input row.
pub(super) fn fully_connected(
    path: DotPath,
    g: &FcGeometry,
    x: &[i8],
    q: &LayerQuant<'_>,
    sums: Option<&[i32]>,
    y: &mut [i8],
) {
    for (x, y) in x.chunks_exact(g.in_features).zip(y.chunks_exact_mut(g.out_features)) {
        whole_rows(path, x, q, sums, y);
    }
}

/// One output pixel or row: `y[j] = stage(bias[j] + sum (x - x_zp) * w_j)` over the first
/// `y.len()` filter rows of `x.len()` bytes, in chunks of [`CHUNK`] channels.
fn whole_rows(path: DotPath, x: &[i8], q: &LayerQuant<'_>, sums: Option<&[i32]>, y: &mut [i8]) {
    let (w, k, cout) = (&q.weights, x.len(), y.len());
    for c0 in (0..cout).step_by(CHUNK) {
        let n = CHUNK.min(cout - c0);
        let rows = &w.filter[c0 * k..][..n * k];
        let mut acc = [0i32; CHUNK];
        let acc = &mut acc[..n];
        dots(path, Some(x), rows, k, acc);
        let mut formed;
        let s = match sums {
            Some(s) => &s[c0..c0 + n],
            None => {
                formed = [0i32; CHUNK];
                dots(path, None, rows, k, &mut formed[..n]);
                &formed[..n]
            }
        };
        for (a, &s) in acc.iter_mut().zip(s) {
            *a = a.wrapping_sub(q.x_zp.wrapping_mul(s));
        }
        if let Some(b) = w.bias {
            for (a, &b) in acc.iter_mut().zip(&b[c0..c0 + n]) {
                *a = a.wrapping_add(b);
            }
        }
        stage_block(q, acc, (c0, cout), &mut y[c0..c0 + n]);
    }
}

/// `out[j] = sum x * row_j` (wrapping) for the `out.len()` consecutive rows of `k` bytes in
/// `rows`, on `path`; `x` `None` stands for `k` ones (the row sums).
fn dots(path: DotPath, x: Option<&[i8]>, rows: &[i8], k: usize, out: &mut [i32]) {
    assert!(rows.len() >= out.len() * k && x.is_none_or(|x| x.len() == k), "row extents");
    match path {
        // SAFETY: `Sdot` only reaches here through `DotPath::usable`/`detect` (dotprod
        // present); the extents are asserted.
        DotPath::Sdot => unsafe { dots_sdot(x, rows, k, out) },
        // SAFETY: the extents are asserted.
        DotPath::Widening => unsafe { dots_on::<Widen>(x, rows, k, out) },
    }
}

/// [`dots_on`] with `sdot`.
///
/// # Safety
/// The CPU implements FEAT_DotProd; extents as [`dots`] asserts.
#[target_feature(enable = "dotprod")]
unsafe fn dots_sdot(x: Option<&[i8]>, rows: &[i8], k: usize, out: &mut [i32]) {
    // SAFETY: the caller's CPU and extents.
    unsafe { dots_on::<Sdot>(x, rows, k, out) }
}

/// 16 products of a step accumulated into 4 i32 lanes.
trait Mac {
    /// `acc` plus the products of `x` and `w`, in some lanes (wrapping).
    ///
    /// # Safety
    /// The CPU has the instructions the implementation uses.
    unsafe fn mac(acc: int32x4_t, x: int8x16_t, w: int8x16_t) -> int32x4_t;
}

/// `sdot` (FEAT_DotProd).
struct Sdot;

impl Mac for Sdot {
    #[inline(always)]
    unsafe fn mac(acc: int32x4_t, x: int8x16_t, w: int8x16_t) -> int32x4_t {
        // SAFETY: the caller's CPU (FEAT_DotProd).
        unsafe { super::sdot(acc, x, w) }
    }
}

/// `smull`, `smull2`, `sadalp` twice (every ARMv8-A core).
struct Widen;

impl Mac for Widen {
    #[inline(always)]
    unsafe fn mac(acc: int32x4_t, x: int8x16_t, w: int8x16_t) -> int32x4_t {
        // SAFETY: NEON is baseline on aarch64; register-only operations.
        unsafe {
            let lo = vmull_s8(vget_low_s8(x), vget_low_s8(w));
            vpadalq_s16(vpadalq_s16(acc, lo), vmull_high_s8(x, w))
        }
    }
}

/// The steps of a row of `k` bytes: `(offset, mask)` of the 16 bytes each reads, the last
/// one (`k mod 16 > 0`, `k >= 16`) overlapping the one before with the overlap masked out.
/// Rows under 16 bytes have no steps here (see [`short`]).
#[inline(always)]
fn steps(k: usize) -> (usize, Option<(usize, uint8x16_t)>) {
    let (body, r) = (k - k % 16, k % 16);
    let tail = (r > 0 && k >= 16).then(|| {
        // SAFETY: NEON is baseline; reads 16 of the 32 mask bytes (r < 16).
        (k - 16, unsafe { vld1q_u8(TAIL_MASK[r..].as_ptr()) })
    });
    (if k >= 16 { body } else { 0 }, tail)
}

/// `bytes` (under 16) in the low lanes of a register, zeros above.
#[inline(always)]
fn short(bytes: &[i8]) -> int8x16_t {
    let mut b = [0i8; 16];
    b[..bytes.len()].copy_from_slice(bytes);
    // SAFETY: NEON is baseline; reads the 16-byte array.
    unsafe { vld1q_s8(b.as_ptr()) }
}

/// The dot products of [`dots`] with the products of `M`, rows four at a time (module
/// docs).
///
/// # Safety
/// The CPU has `M`'s instructions; `rows` holds `out.len() * k` bytes, `x` (if given) `k`.
#[inline(always)]
unsafe fn dots_on<M: Mac>(x: Option<&[i8]>, rows: &[i8], k: usize, out: &mut [i32]) {
    // SAFETY: the caller's CPU and extents: `R` rows from row `j` are inside `rows`; the
    // stores write 4 values of `out`.
    unsafe {
        let quads = out.len() / 4;
        for (j, o) in out.chunks_exact_mut(4).enumerate() {
            let a = rows_acc::<M, 4>(x, rows.as_ptr().add(4 * j * k), k);
            let sums = vpaddq_s32(vpaddq_s32(a[0], a[1]), vpaddq_s32(a[2], a[3]));
            vst1q_s32(o.as_mut_ptr(), sums);
        }
        for (j, o) in out.iter_mut().enumerate().skip(4 * quads) {
            *o = vaddvq_s32(rows_acc::<M, 1>(x, rows.as_ptr().add(j * k), k)[0]);
        }
    }
}

/// The accumulators of `R` consecutive rows of `k` bytes from `w` against `x` (`None`:
/// ones): each step loads 16 bytes of `x` once for the `R` rows.
///
/// # Safety
/// The CPU has `M`'s instructions; `w` readable for `R * k` bytes, `x` (if given) `k` long.
#[inline(always)]
unsafe fn rows_acc<M: Mac, const R: usize>(
    x: Option<&[i8]>,
    w: *const i8,
    k: usize,
) -> [int32x4_t; R] {
    // SAFETY: NEON is baseline; every load reads 16 bytes inside `x` or a row (`steps`:
    // offsets up to `k - 16`), `short` copies `k < 16` bytes of a row.
    unsafe {
        let (body, tail) = steps(k);
        let ones = vdupq_n_s8(1);
        let load_x = |s: usize| x.map_or(ones, |x| vld1q_s8(x.as_ptr().add(s)));
        let mut a = [vdupq_n_s32(0); R];
        for s in (0..body).step_by(16) {
            let xv = load_x(s);
            for (i, a) in a.iter_mut().enumerate() {
                *a = M::mac(*a, xv, vld1q_s8(w.add(i * k + s)));
            }
        }
        if let Some((s, mask)) = tail {
            let xv = load_x(s);
            for (i, a) in a.iter_mut().enumerate() {
                let wv = vandq_u8(vld1q_u8(w.add(i * k + s).cast()), mask);
                *a = M::mac(*a, xv, vreinterpretq_s8_u8(wv));
            }
        }
        if k < 16 {
            // One zero-padded step (the ones then count only `k` bytes).
            let xv = x.map_or_else(|| short(&[1; 16][..k]), short);
            for (i, a) in a.iter_mut().enumerate() {
                let wv = short(core::slice::from_raw_parts(w.add(i * k), k));
                *a = M::mac(*a, xv, wv);
            }
        }
        a
    }
}
