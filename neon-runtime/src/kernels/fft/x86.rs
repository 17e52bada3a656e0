//! The x86-64 FFT-family kernels (`X86<I>`), SSE only (the x86-64 baseline, so every level
//! runs them):
//! - the magnitudes of a split spectrum with the SSE square root (`sqrtps`, IEEE's
//!   correctly rounded square root): the portable code's bits, four lanes per instruction
//!   instead of the software square root, a noticeable part of a Silero VAD window
//!   (`BENCHMARKS.md`, "Host: ours vs ONNX Runtime (x86-64, one thread)");
//! - step 1 of the transform (load, first two stages, bit-reversed stores) four `b` at a
//!   time, with a 4x4 transpose, and the inverse transform's pre-processing and final
//!   interleave four `k` (`j`) at a time: the scalar loops of the portable code, which the
//!   inverse real FFT of the sanoTTS iSTFT runs per frame. No fused multiply-add (not in the
//!   baseline) and the portable code's operations in its order, so the results are the
//!   portable code's bits (`tests/fft.rs`, `tests/irfft.rs` assert it).
//!
//! The radix-2 stages and the forward post-processing run the portable code (its loops
//! vectorise).

use super::FftKernels;
#[cfg(neon_x86)]
use super::{rev, RealFft};
use crate::kernels::{X86Isa, X86};
#[cfg(neon_x86)]
use core::arch::x86_64::*;

impl<I: X86Isa> FftKernels for X86<I> {
    #[cfg(neon_x86)]
    #[inline(always)]
    unsafe fn rfft_first_pass(x: &[f32], re: &mut [f32], im: &mut [f32]) {
        let m = re.len();
        // SAFETY: the caller guarantees x has 2m floats, re and im m each, m a power of two
        // >= 16; the spectrum does not alias x (& vs &mut).
        unsafe { first_pass(x.as_ptr(), re.as_mut_ptr(), im.as_mut_ptr(), m) }
    }

    #[cfg(neon_x86)]
    #[inline(always)]
    unsafe fn irfft_pre(fft: &RealFft<'_>, re: &[f32], im: &[f32], x: &mut [f32]) {
        inverse_pre(fft, re, im, x)
    }

    #[cfg(neon_x86)]
    #[inline(always)]
    unsafe fn irfft_interleave(re: &[f32], im: &[f32], x: &mut [f32]) {
        let m = re.len();
        let mut j = 0;
        while j < m {
            // SAFETY: the caller guarantees re and im hold m values and x 2m, m a multiple
            // of 4: j + 4 <= m, and the two stores write x[2j..2j+8] inside x[..2m].
            unsafe {
                let (a, b) = (_mm_loadu_ps(im.as_ptr().add(j)), _mm_loadu_ps(re.as_ptr().add(j)));
                store2(x.as_mut_ptr().add(2 * j), a, b);
            }
            j += 4;
        }
    }

    #[cfg(neon_x86)]
    unsafe fn magnitude_spectrum_unchecked(re: &[f32], im: &[f32], magnitude: &mut [f32]) {
        #[inline(always)]
        fn step(a: __m128, b: __m128) -> __m128 {
            // SAFETY: SSE2 is part of every x86-64 target (the cfg above). Both squares and
            // the sum rounded, no fused multiply-add (see the trait).
            unsafe { _mm_sqrt_ps(_mm_add_ps(_mm_mul_ps(a, a), _mm_mul_ps(b, b))) }
        }
        // SAFETY: re, im and magnitude have the same length (the caller's contract).
        unsafe { super::map_pairs(re, im, magnitude, step) }
    }
}

/// Stores `a` and `b` interleaved (`a0 b0 a1 b1 a2 b2 a3 b3`) at `p`.
///
/// # Safety
/// `p` is writable for 8 floats.
#[cfg(neon_x86)]
#[inline(always)]
unsafe fn store2(p: *mut f32, a: __m128, b: __m128) {
    // SAFETY: the caller's contract; SSE is part of every x86-64 target.
    unsafe {
        _mm_storeu_ps(p, _mm_unpacklo_ps(a, b));
        _mm_storeu_ps(p.add(4), _mm_unpackhi_ps(a, b));
    }
}

/// Loads 8 interleaved floats at `p` as (even, odd) lanes: `(p0 p2 p4 p6, p1 p3 p5 p7)`.
///
/// # Safety
/// `p` is readable for 8 floats.
#[cfg(neon_x86)]
#[inline(always)]
unsafe fn load2(p: *const f32) -> (__m128, __m128) {
    // SAFETY: the caller's contract; SSE is part of every x86-64 target.
    unsafe {
        let (u, v) = (_mm_loadu_ps(p), _mm_loadu_ps(p.add(4)));
        (_mm_shuffle_ps::<0b10_00_10_00>(u, v), _mm_shuffle_ps::<0b11_01_11_01>(u, v))
    }
}

/// 4x4 transpose: rows `(a, b, c, d)` -> columns.
#[cfg(neon_x86)]
#[inline(always)]
fn transpose(a: __m128, b: __m128, c: __m128, d: __m128) -> [__m128; 4] {
    // SAFETY: register-only SSE shuffles, part of every x86-64 target.
    unsafe {
        let ab0 = _mm_unpacklo_ps(a, b); // a0 b0 a1 b1
        let ab1 = _mm_unpackhi_ps(a, b); // a2 b2 a3 b3
        let cd0 = _mm_unpacklo_ps(c, d); // c0 d0 c1 d1
        let cd1 = _mm_unpackhi_ps(c, d); // c2 d2 c3 d3
        [
            _mm_movelh_ps(ab0, cd0), // a0 b0 c0 d0
            _mm_movehl_ps(cd0, ab0), // a1 b1 c1 d1
            _mm_movelh_ps(ab1, cd1), // a2 b2 c2 d2
            _mm_movehl_ps(cd1, ab1), // a3 b3 c3 d3
        ]
    }
}

/// Lane reversal `[v3, v2, v1, v0]`.
#[cfg(neon_x86)]
#[inline(always)]
fn reverse(v: __m128) -> __m128 {
    // SAFETY: a register-only SSE shuffle.
    unsafe { _mm_shuffle_ps::<0b00_01_10_11>(v, v) }
}

/// Step 1 for `m >= 16`: four `b` per iteration (the portable `first_pass`, same sums).
///
/// # Safety
/// `x` points to `2m` readable floats; `re` and `im` to `m` writable floats each
/// (disjoint from `x`); `m` is a power of two `>= 16`.
#[cfg(neon_x86)]
#[inline(always)]
unsafe fn first_pass(x: *const f32, re: *mut f32, im: *mut f32, m: usize) {
    let q = m / 4;
    let bits = q.trailing_zeros();
    // Lane i of the block starting at b (a multiple of 4) goes to 4 rev(b + i) =
    // 4 rev(b) + 4 rev(i), with 4 rev(i) = 0, m/2, m/4, 3m/4 for i = 0..4.
    let off = [0, m / 2, m / 4, 3 * m / 4];
    let mut b = 0;
    while b < q {
        // SAFETY: b + 3q + 3 < 4q = m, so each load2 reads 8 floats inside x[..2m].
        // b is a multiple of 4, so rev(b) (over log2 q bits) has its top two bits clear:
        // rev(b) <= q/4 - 1, p = 4 rev(b) <= m/4 - 4, and p + off[i] + 3 <= m - 1: every
        // store is inside re[..m] / im[..m]. SSE is part of every x86-64 target.
        unsafe {
            let z0 = load2(x.add(2 * b));
            let z1 = load2(x.add(2 * (b + q)));
            let z2 = load2(x.add(2 * (b + 2 * q)));
            let z3 = load2(x.add(2 * (b + 3 * q)));
            let ar = _mm_add_ps(z0.0, z2.0);
            let ai = _mm_add_ps(z0.1, z2.1);
            let br = _mm_sub_ps(z0.0, z2.0);
            let bi = _mm_sub_ps(z0.1, z2.1);
            let cr = _mm_add_ps(z1.0, z3.0);
            let ci = _mm_add_ps(z1.1, z3.1);
            let dr = _mm_sub_ps(z1.0, z3.0);
            let di = _mm_sub_ps(z1.1, z3.1);
            let yr = transpose(
                _mm_add_ps(ar, cr),
                _mm_add_ps(br, di),
                _mm_sub_ps(ar, cr),
                _mm_sub_ps(br, di),
            );
            let yi = transpose(
                _mm_add_ps(ai, ci),
                _mm_sub_ps(bi, dr),
                _mm_sub_ps(ai, ci),
                _mm_add_ps(bi, dr),
            );
            let p = 4 * rev(b, bits);
            for i in 0..4 {
                _mm_storeu_ps(re.add(p + off[i]), yr[i]);
                _mm_storeu_ps(im.add(p + off[i]), yi[i]);
            }
        }
        b += 4;
    }
}

/// Inverse step 1 for `m >= 16`: four `k` per iteration, the mirrored block lane-reversed,
/// the operations of `portable::inverse_pair` (same bits); the pair `k = 0` is redone in
/// scalar code as the portable code does it (it ignores `Im X[0]` and `Im X[m]`).
#[cfg(neon_x86)]
fn inverse_pre(fft: &RealFft<'_>, re: &[f32], im: &[f32], x: &mut [f32]) {
    let m = fft.n / 2;
    assert!(m >= 16 && re.len() == m + 1 && im.len() == m + 1 && x.len() == 2 * m);
    let (c, s) = fft.post();
    assert!(c.len() == m / 2 && s.len() == m / 2);
    let g = 1.0 / fft.n as f32;
    let (rp, ip, xp) = (re.as_ptr(), im.as_ptr(), x.as_mut_ptr());
    let mut k = 0;
    while k < m / 2 {
        // SAFETY: k + 3 < m/2 (m/2 is a multiple of 4) and the post twiddles have m/2
        // entries; the mirrored loads read m-k-3 ..= m-k <= m, inside the m + 1 entries of
        // each row. Stores: Z[k..k+4] at x[2k..2k+8] with 2k + 8 <= m; the mirrored block
        // m-k-3 ..= m-k at x[2(m-k-3)..2(m-k+1)], inside x[..2m] for k >= 4 (for k = 0 the
        // lane of index m is dropped through a stack buffer), disjoint from the first.
        // SSE is part of every x86-64 target.
        unsafe {
            let (cv, sv) = (_mm_loadu_ps(c.as_ptr().add(k)), _mm_loadu_ps(s.as_ptr().add(k)));
            let pm = m - k - 3;
            let (ar, ai) = (_mm_loadu_ps(rp.add(k)), _mm_loadu_ps(ip.add(k)));
            let br = reverse(_mm_loadu_ps(rp.add(pm)));
            let bi = reverse(_mm_loadu_ps(ip.add(pm)));
            let gv = _mm_set1_ps(g);
            let er = _mm_mul_ps(gv, _mm_add_ps(ar, br));
            let ei = _mm_mul_ps(gv, _mm_sub_ps(ai, bi));
            let dr = _mm_mul_ps(gv, _mm_sub_ps(ar, br));
            let di = _mm_mul_ps(gv, _mm_add_ps(ai, bi));
            // O = D (c + i s).
            let or = _mm_sub_ps(_mm_mul_ps(cv, dr), _mm_mul_ps(sv, di));
            let oi = _mm_add_ps(_mm_mul_ps(sv, dr), _mm_mul_ps(cv, di));
            // Swapped: imaginary part first.
            store2(xp.add(2 * k), _mm_add_ps(ei, or), _mm_sub_ps(er, oi));
            let (ym, xm) = (reverse(_mm_sub_ps(or, ei)), reverse(_mm_add_ps(er, oi)));
            if k == 0 {
                let mut buf = [0.0f32; 8];
                store2(buf.as_mut_ptr(), ym, xm);
                core::ptr::copy_nonoverlapping(buf.as_ptr(), xp.add(2 * pm), 6);
            } else {
                store2(xp.add(2 * pm), ym, xm);
            }
        }
        k += 4;
    }
    // k = 0 pairs with m, imaginary parts ignored (as `portable::inverse_pre`).
    x[0] = g * (re[0] - re[m]);
    x[1] = g * (re[0] + re[m]);
    // Z[m/2] = 2 conj X[m/2] / n.
    let h = m / 2;
    x[2 * h] = -(2.0 * g) * im[h];
    x[2 * h + 1] = (2.0 * g) * re[h];
}

#[cfg(neon_x86)]
impl super::Lanes4 for __m128 {
    #[inline(always)]
    unsafe fn load(p: *const f32) -> Self {
        // SAFETY: `p` is readable for 4 floats (the caller's contract); unaligned load,
        // SSE is part of every x86-64 target.
        unsafe { _mm_loadu_ps(p) }
    }
    #[inline(always)]
    unsafe fn store(p: *mut f32, v: Self) {
        // SAFETY: `p` is writable for 4 floats (the caller's contract); unaligned store.
        unsafe { _mm_storeu_ps(p, v) }
    }
}
