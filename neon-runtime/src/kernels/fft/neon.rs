//! NEON forms of the three real-FFT steps. Every function works on raw pointers into the
//! spectrum buffer; the bounds each one relies on are established by `rfft` (which checks
//! the slice lengths) and stated at each `unsafe` block.

use super::{map_pairs, simd, simd::FftLanes, FftKernels, RealFft, Twiddles};
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

impl FftKernels for Neon {
    #[inline(always)]
    unsafe fn irfft_pre(fft: &RealFft<'_>, re: &[f32], im: &[f32], x: &mut [f32]) {
        simd::inverse_pre::<float32x4_t>(fft, re, im, x)
    }

    #[inline(always)]
    unsafe fn irfft_interleave(re: &[f32], im: &[f32], x: &mut [f32]) {
        // SAFETY: the caller's contract (the hook's).
        unsafe { simd::interleave_swapped::<float32x4_t>(re, im, x) }
    }

    #[inline(always)]
    unsafe fn rfft_first_pass(x: &[f32], re: &mut [f32], im: &mut [f32]) {
        let m = re.len();
        // SAFETY: the caller guarantees x has 2m floats, re and im m each, m a power of two
        // >= 16; the spectrum does not alias x (& vs &mut).
        unsafe { simd::first_pass::<float32x4_t>(x.as_ptr(), re.as_mut_ptr(), im.as_mut_ptr(), m) }
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

// SAFETY (every block below): register-only NEON operations (NEON is statically enabled),
// or loads and stores within the caller's contract.
impl FftLanes for float32x4_t {
    #[inline(always)]
    fn add(a: Self, b: Self) -> Self {
        // SAFETY: see above.
        unsafe { vaddq_f32(a, b) }
    }
    #[inline(always)]
    fn sub(a: Self, b: Self) -> Self {
        // SAFETY: see above.
        unsafe { vsubq_f32(a, b) }
    }
    #[inline(always)]
    fn mul(a: Self, b: Self) -> Self {
        // SAFETY: see above.
        unsafe { vmulq_f32(a, b) }
    }
    #[inline(always)]
    fn splat(v: f32) -> Self {
        // SAFETY: see above.
        unsafe { vdupq_n_f32(v) }
    }
    /// `fmls`: the second product fused.
    #[inline(always)]
    fn mul_sub(a: Self, b: Self, c: Self, d: Self) -> Self {
        // SAFETY: see above.
        unsafe { vfmsq_f32(vmulq_f32(a, b), c, d) }
    }
    /// `fmla`: the second product fused.
    #[inline(always)]
    fn mul_add(a: Self, b: Self, c: Self, d: Self) -> Self {
        // SAFETY: see above.
        unsafe { vfmaq_f32(vmulq_f32(a, b), c, d) }
    }
    #[inline(always)]
    fn zero_lane0(v: Self) -> Self {
        // SAFETY: see above.
        unsafe { vsetq_lane_f32::<0>(0.0, v) }
    }
    #[inline(always)]
    fn reverse(v: Self) -> Self {
        reverse(v)
    }
    #[inline(always)]
    fn transpose(a: Self, b: Self, c: Self, d: Self) -> [Self; 4] {
        // SAFETY: see above.
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
    #[inline(always)]
    unsafe fn load2(p: *const f32) -> (Self, Self) {
        // SAFETY: `p` is readable for 8 floats (the caller's contract).
        let v = unsafe { vld2q_f32(p) };
        (v.0, v.1)
    }
    #[inline(always)]
    unsafe fn store2(p: *mut f32, a: Self, b: Self) {
        // SAFETY: `p` is writable for 8 floats (the caller's contract).
        unsafe { vst2q_f32(p, float32x4x2_t(a, b)) }
    }
}
