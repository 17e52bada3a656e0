//! NEON forms of the three real-FFT steps. Every function works on raw pointers into the
//! spectrum buffer; the bounds each one relies on are established by `rfft` (which checks
//! the slice lengths) and stated at each `unsafe` block.

use super::{map_pairs, rev, FftKernels, RealFft, Twiddles};
use crate::kernels::rotary::neon::rotate;
use crate::kernels::Neon;
use core::arch::aarch64::*;

/// Complex product `(c - i s)(br + i bi)`: `(c br + s bi, c bi - s br)`.
#[inline(always)]
fn cmul(
    c: float32x4_t,
    s: float32x4_t,
    br: float32x4_t,
    bi: float32x4_t,
) -> (float32x4_t, float32x4_t) {
    // The rotation of `bi + i br` by `c + i s`, its parts swapped: `rotate` gives
    // `(c bi - s br, c br + s bi)`, with the same roundings (products commute).
    let (im, re) = rotate(bi, br, c, s);
    (re, im)
}

/// 4x4 transpose: rows `(a, b, c, d)` -> columns.
#[inline(always)]
fn transpose(a: float32x4_t, b: float32x4_t, c: float32x4_t, d: float32x4_t) -> [float32x4_t; 4] {
    // SAFETY: register-only NEON permutes; NEON is statically enabled.
    unsafe {
        let ab0 = vtrn1q_f32(a, b); // a0 b0 a2 b2
        let ab1 = vtrn2q_f32(a, b); // a1 b1 a3 b3
        let cd0 = vtrn1q_f32(c, d); // c0 d0 c2 d2
        let cd1 = vtrn2q_f32(c, d); // c1 d1 c3 d3
        let f = |u: float32x4_t| vreinterpretq_f64_f32(u);
        let g = |u: float64x2_t| vreinterpretq_f32_f64(u);
        [
            g(vzip1q_f64(f(ab0), f(cd0))), // a0 b0 c0 d0
            g(vzip1q_f64(f(ab1), f(cd1))), // a1 b1 c1 d1
            g(vzip2q_f64(f(ab0), f(cd0))), // a2 b2 c2 d2
            g(vzip2q_f64(f(ab1), f(cd1))), // a3 b3 c3 d3
        ]
    }
}

/// Step 1 for `m >= 16`: four `b` per iteration.
///
/// # Safety
/// `x` points to `2m` readable floats; `re` and `im` to `m` writable floats each
/// (disjoint from `x`); `m` is a power of two `>= 16`.
#[inline(always)]
unsafe fn first_pass(x: *const f32, re: *mut f32, im: *mut f32, m: usize) {
    let q = m / 4;
    let bits = q.trailing_zeros();
    // Lane i of the block starting at b (a multiple of 4) goes to 4 rev(b + i) =
    // 4 rev(b) + 4 rev(i), with 4 rev(i) = 0, m/2, m/4, 3m/4 for i = 0..4.
    let off = [0, m / 2, m / 4, 3 * m / 4];
    let mut b = 0;
    while b < q {
        // SAFETY: b + 3q + 3 < 4q = m, so each ld2 reads 8 floats inside x[..2m].
        // b is a multiple of 4, so rev(b) (over log2 q bits) has its top two bits clear:
        // rev(b) <= q/4 - 1, p = 4 rev(b) <= m/4 - 4, and p + off[i] + 3 <= m - 1: every
        // store is inside re[..m] / im[..m].
        unsafe {
            let z0 = vld2q_f32(x.add(2 * b));
            let z1 = vld2q_f32(x.add(2 * (b + q)));
            let z2 = vld2q_f32(x.add(2 * (b + 2 * q)));
            let z3 = vld2q_f32(x.add(2 * (b + 3 * q)));
            let ar = vaddq_f32(z0.0, z2.0);
            let ai = vaddq_f32(z0.1, z2.1);
            let br = vsubq_f32(z0.0, z2.0);
            let bi = vsubq_f32(z0.1, z2.1);
            let cr = vaddq_f32(z1.0, z3.0);
            let ci = vaddq_f32(z1.1, z3.1);
            let dr = vsubq_f32(z1.0, z3.0);
            let di = vsubq_f32(z1.1, z3.1);
            let yr = transpose(
                vaddq_f32(ar, cr),
                vaddq_f32(br, di),
                vsubq_f32(ar, cr),
                vsubq_f32(br, di),
            );
            let yi = transpose(
                vaddq_f32(ai, ci),
                vsubq_f32(bi, dr),
                vsubq_f32(ai, ci),
                vaddq_f32(bi, dr),
            );
            let p = 4 * rev(b, bits);
            for i in 0..4 {
                vst1q_f32(re.add(p + off[i]), yr[i]);
                vst1q_f32(im.add(p + off[i]), yi[i]);
            }
        }
        b += 4;
    }
}

/// Radix-2 stage of half-span `h` (a multiple of 4).
#[inline(always)]
fn radix2(re: &mut [f32], im: &mut [f32], (c, s): Twiddles<'_>) {
    let h = c.len();
    let len = re.len();
    assert!(h.is_multiple_of(4) && len.is_multiple_of(2 * h) && im.len() == len && s.len() == h);
    let (re, im) = (re.as_mut_ptr(), im.as_mut_ptr());
    blocks_of_4(len, 2 * h, h, |g, j| {
        let pa = g + j;
        // SAFETY: g + h + j + 3 < g + 2h <= len, and j + 3 < h (asserted above: h % 4 == 0,
        // len % 2h == 0): all accesses are in bounds.
        unsafe {
            let (c, s) = (vld1q_f32(c.as_ptr().add(j)), vld1q_f32(s.as_ptr().add(j)));
            let pb = pa + h;
            let t = cmul(c, s, vld1q_f32(re.add(pb)), vld1q_f32(im.add(pb)));
            butterfly((re, im), [pa, pb], (vld1q_f32(re.add(pa)), vld1q_f32(im.add(pa))), t);
        }
    });
}

/// Radix-2^2 pass (stages `h` and `2h`, `h` a multiple of 4).
fn radix22(re: &mut [f32], im: &mut [f32], (c1, s1): Twiddles<'_>, (c2, s2): Twiddles<'_>) {
    let h = c1.len();
    let len = re.len();
    assert!(h.is_multiple_of(4) && len.is_multiple_of(4 * h) && im.len() == len);
    assert!(s1.len() == h && c2.len() >= h && s2.len() >= h);
    let (re, im) = (re.as_mut_ptr(), im.as_mut_ptr());
    blocks_of_4(len, 4 * h, h, |g, j| {
        let pa = g + j;
        // SAFETY: g + 3h + j + 3 < g + 4h <= len and j + 3 < h (asserted above),
        // so every load and store is in bounds; the twiddle loads read j..j+4 < h.
        unsafe {
            let w1c = vld1q_f32(c1.as_ptr().add(j));
            let w1s = vld1q_f32(s1.as_ptr().add(j));
            let w2c = vld1q_f32(c2.as_ptr().add(j));
            let w2s = vld1q_f32(s2.as_ptr().add(j));
            let (pb, pc, pd) = (pa + h, pa + 2 * h, pa + 3 * h);
            let (t1r, t1i) = cmul(w1c, w1s, vld1q_f32(re.add(pb)), vld1q_f32(im.add(pb)));
            let (t2r, t2i) = cmul(w1c, w1s, vld1q_f32(re.add(pd)), vld1q_f32(im.add(pd)));
            let (ar, ai) = (vld1q_f32(re.add(pa)), vld1q_f32(im.add(pa)));
            let (cr, ci) = (vld1q_f32(re.add(pc)), vld1q_f32(im.add(pc)));
            let a1 = (vaddq_f32(ar, t1r), vaddq_f32(ai, t1i));
            let b1 = (vsubq_f32(ar, t1r), vsubq_f32(ai, t1i));
            let (c1r, c1i) = (vaddq_f32(cr, t2r), vaddq_f32(ci, t2i));
            let (d1r, d1i) = (vsubq_f32(cr, t2r), vsubq_f32(ci, t2i));
            let u1 = cmul(w2c, w2s, c1r, c1i);
            let (u2r, u2i) = cmul(w2c, w2s, d1r, d1i);
            butterfly((re, im), [pa, pc], a1, u1);
            // b1 -+ i u2: the butterfly of b1 and -i u2 = (u2i, -u2r).
            butterfly((re, im), [pb, pd], b1, (u2i, vnegq_f32(u2r)));
        }
    });
}

/// `body(g, j)` for every group `g` (`span` apart, below `len`) and `j` in `0..h` in
/// steps of 4: a pass's butterfly steps, each on the 4 positions from `g + j`.
#[inline(always)]
fn blocks_of_4(len: usize, span: usize, h: usize, mut body: impl FnMut(usize, usize)) {
    let mut g = 0;
    while g < len {
        let mut j = 0;
        while j < h {
            body(g, j);
            j += 4;
        }
        g += span;
    }
}

/// The radix-2 butterfly of 4 lanes: `a + t` stored at `pa`, `a - t` at `pb` (real parts
/// in `re`, imaginary in `im`).
///
/// # Safety
/// `re` and `im` writable for 4 values at `pa` and at `pb`.
#[inline(always)]
unsafe fn butterfly(
    (re, im): (*mut f32, *mut f32),
    [pa, pb]: [usize; 2],
    (ar, ai): (float32x4_t, float32x4_t),
    (tr, ti): (float32x4_t, float32x4_t),
) {
    // SAFETY: the caller's contract.
    unsafe {
        vst1q_f32(re.add(pa), vaddq_f32(ar, tr));
        vst1q_f32(im.add(pa), vaddq_f32(ai, ti));
        vst1q_f32(re.add(pb), vsubq_f32(ar, tr));
        vst1q_f32(im.add(pb), vsubq_f32(ai, ti));
    }
}

/// Lane reversal `[v3, v2, v1, v0]`.
#[inline(always)]
fn reverse(v: float32x4_t) -> float32x4_t {
    // SAFETY: register-only NEON permutes; NEON is statically enabled.
    unsafe {
        let r = vrev64q_f32(v);
        vextq_f32::<2>(r, r)
    }
}

/// Step 3 for `m >= 16`: four `k` per iteration, the mirrored block lane-reversed.
fn post(fft: &RealFft<'_>, re: &mut [f32], im: &mut [f32]) {
    let m = fft.n / 2;
    assert!(m >= 16 && re.len() == m + 1 && im.len() == m + 1);
    let (c, s) = fft.post();
    assert!(c.len() == m / 2 && s.len() == m / 2);
    re[m] = re[0];
    im[m] = im[0];
    let (re, im) = (re.as_mut_ptr(), im.as_mut_ptr());
    let mut k = 0;
    while k < m / 2 {
        // SAFETY: k + 3 < m/2 (m/2 is a multiple of 4) and the post twiddles have m/2
        // entries; the mirrored block m-k-3 ..= m-k lies in m/2 + 1 ..= m, inside the
        // m + 1 entries of each row and disjoint from k ..= k+3.
        unsafe {
            let (cv, sv) = (vld1q_f32(c.as_ptr().add(k)), vld1q_f32(s.as_ptr().add(k)));
            let pm = m - k - 3;
            let (ar, ai) = (vld1q_f32(re.add(k)), vld1q_f32(im.add(k)));
            let br = reverse(vld1q_f32(re.add(pm)));
            let bi = reverse(vld1q_f32(im.add(pm)));
            let er = vmulq_n_f32(vaddq_f32(ar, br), 0.5);
            let ei = vmulq_n_f32(vsubq_f32(ai, bi), 0.5);
            let or = vmulq_n_f32(vaddq_f32(ai, bi), 0.5);
            let oi = vmulq_n_f32(vsubq_f32(br, ar), 0.5);
            let (tr, ti) = cmul(cv, sv, or, oi);
            vst1q_f32(re.add(k), vaddq_f32(er, tr));
            vst1q_f32(im.add(k), vaddq_f32(ei, ti));
            vst1q_f32(re.add(pm), reverse(vsubq_f32(er, tr)));
            vst1q_f32(im.add(pm), reverse(vsubq_f32(ti, ei)));
        }
        k += 4;
    }
    // SAFETY: m/2 and m are inside the m + 1 entries of each row.
    unsafe {
        *im.add(m / 2) = -*im.add(m / 2);
        *im = 0.0;
        *im.add(m) = 0.0;
    }
}

/// Inverse step 1 for `m >= 16`: four `k` per iteration, the mirrored block lane-reversed
/// (see `portable::inverse_pre` for the scalar form).
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
        unsafe {
            let (cv, sv) = (vld1q_f32(c.as_ptr().add(k)), vld1q_f32(s.as_ptr().add(k)));
            let pm = m - k - 3;
            let (ar, mut ai) = (vld1q_f32(rp.add(k)), vld1q_f32(ip.add(k)));
            let br = reverse(vld1q_f32(rp.add(pm)));
            let mut bi = reverse(vld1q_f32(ip.add(pm)));
            if k == 0 {
                // Im X[0] and Im X[m] are ignored (lane 0 of each).
                ai = vsetq_lane_f32::<0>(0.0, ai);
                bi = vsetq_lane_f32::<0>(0.0, bi);
            }
            let gv = vdupq_n_f32(g);
            let er = vmulq_f32(vaddq_f32(ar, br), gv);
            let ei = vmulq_f32(vsubq_f32(ai, bi), gv);
            let dr = vmulq_f32(vsubq_f32(ar, br), gv);
            let di = vmulq_f32(vaddq_f32(ai, bi), gv);
            // O = D (c + i s).
            let or = vfmsq_f32(vmulq_f32(cv, dr), sv, di);
            let oi = vfmaq_f32(vmulq_f32(sv, dr), cv, di);
            // Swapped: imaginary part first.
            vst2q_f32(xp.add(2 * k), float32x4x2_t(vaddq_f32(ei, or), vsubq_f32(er, oi)));
            let zm = float32x4x2_t(reverse(vsubq_f32(or, ei)), reverse(vaddq_f32(er, oi)));
            if k == 0 {
                let mut buf = [0.0f32; 8];
                vst2q_f32(buf.as_mut_ptr(), zm);
                core::ptr::copy_nonoverlapping(buf.as_ptr(), xp.add(2 * pm), 6);
            } else {
                vst2q_f32(xp.add(2 * pm), zm);
            }
        }
        k += 4;
    }
    // Z[m/2] = 2 conj X[m/2] / n.
    let h = m / 2;
    x[2 * h] = -(2.0 * g) * im[h];
    x[2 * h + 1] = (2.0 * g) * re[h];
}

impl FftKernels for Neon {
    #[inline(always)]
    unsafe fn irfft_pre(fft: &RealFft<'_>, re: &[f32], im: &[f32], x: &mut [f32]) {
        inverse_pre(fft, re, im, x)
    }

    #[inline(always)]
    unsafe fn irfft_interleave(re: &[f32], im: &[f32], x: &mut [f32]) {
        let m = re.len();
        let mut j = 0;
        while j < m {
            // SAFETY: the caller guarantees re and im hold m values and x 2m, m a multiple
            // of 4: j + 4 <= m, and the st2 writes x[2j..2j+8] inside x[..2m].
            unsafe {
                let v = float32x4x2_t(vld1q_f32(im.as_ptr().add(j)), vld1q_f32(re.as_ptr().add(j)));
                vst2q_f32(x.as_mut_ptr().add(2 * j), v);
            }
            j += 4;
        }
    }

    #[inline(always)]
    unsafe fn rfft_first_pass(x: &[f32], re: &mut [f32], im: &mut [f32]) {
        let m = re.len();
        // SAFETY: the caller guarantees x has 2m floats, re and im m each, m a power of two
        // >= 16; the spectrum does not alias x (& vs &mut).
        unsafe { first_pass(x.as_ptr(), re.as_mut_ptr(), im.as_mut_ptr(), m) }
    }

    #[inline(always)]
    fn rfft_radix2(re: &mut [f32], im: &mut [f32], w: Twiddles<'_>) {
        radix2(re, im, w)
    }

    #[inline(always)]
    fn rfft_radix22(re: &mut [f32], im: &mut [f32], w1: Twiddles<'_>, w2: Twiddles<'_>) {
        radix22(re, im, w1, w2)
    }

    #[inline(always)]
    fn rfft_post(fft: &RealFft<'_>, re: &mut [f32], im: &mut [f32]) {
        post(fft, re, im)
    }

    unsafe fn power_spectrum_unchecked(re: &[f32], im: &[f32], power: &mut [f32]) {
        // SAFETY: the caller's contract: equal lengths.
        unsafe { map_pairs(re, im, power, |a, b| vfmaq_f32(vmulq_f32(a, a), b, b)) }
    }

    /// `fsqrt` is IEEE's correctly rounded square root: the portable code's bits, four lanes
    /// per instruction instead of the software square root.
    unsafe fn magnitude_spectrum_unchecked(re: &[f32], im: &[f32], magnitude: &mut [f32]) {
        // Both squares and the sum rounded, no fused multiply-add (see the trait).
        let step = |a, b| vsqrtq_f32(vaddq_f32(vmulq_f32(a, a), vmulq_f32(b, b)));
        // SAFETY: the caller's contract: equal lengths.
        unsafe { map_pairs(re, im, magnitude, step) }
    }
}

impl super::Lanes4 for float32x4_t {
    #[inline(always)]
    unsafe fn load(p: *const f32) -> Self {
        // SAFETY: `p` is readable for 4 floats (the caller's contract); NEON is statically
        // enabled.
        unsafe { vld1q_f32(p) }
    }
    #[inline(always)]
    unsafe fn store(p: *mut f32, v: Self) {
        // SAFETY: `p` is writable for 4 floats (the caller's contract).
        unsafe { vst1q_f32(p, v) }
    }
}
