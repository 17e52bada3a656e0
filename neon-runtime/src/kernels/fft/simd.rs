//! The four-lane forms of real-FFT step 1 and of the inverse's pre-processing and final
//! interleave, generic over the lane operations of a backend ([`FftLanes`]): NEON
//! (`neon.rs`, `float32x4_t`) and x86-64 SSE (`x86.rs`, `__m128`) run the same code. The bounds each function relies on
//! are established by `rfft` / `irfft` (which check the slice lengths) and stated at each
//! `unsafe` block.

use super::{rev, Lanes4, RealFft};

/// The register operations of four `f32` lanes the FFT steps need, beyond [`Lanes4`]'s
/// load and store. Every operation is IEEE single precision, round to nearest, lane-wise
/// unless said otherwise.
pub(super) trait FftLanes: Lanes4 {
    fn add(a: Self, b: Self) -> Self;
    fn sub(a: Self, b: Self) -> Self;
    fn mul(a: Self, b: Self) -> Self;
    /// `v` in every lane.
    fn splat(v: f32) -> Self;
    /// `a b - c d`; a backend may fuse the second product into the subtraction.
    fn mul_sub(a: Self, b: Self, c: Self, d: Self) -> Self;
    /// `a b + c d`; a backend may fuse the second product into the addition.
    fn mul_add(a: Self, b: Self, c: Self, d: Self) -> Self;
    /// Lane 0 set to 0.
    fn zero_lane0(v: Self) -> Self;
    /// Lane reversal `[v3, v2, v1, v0]`.
    fn reverse(v: Self) -> Self;
    /// 4x4 transpose: rows `(a, b, c, d)` -> columns.
    fn transpose(a: Self, b: Self, c: Self, d: Self) -> [Self; 4];
    /// Loads 8 interleaved floats at `p` as `(p0 p2 p4 p6, p1 p3 p5 p7)`.
    ///
    /// # Safety
    /// `p` is readable for 8 floats.
    unsafe fn load2(p: *const f32) -> (Self, Self);
    /// Stores `a0 b0 a1 b1 a2 b2 a3 b3` at `p`.
    ///
    /// # Safety
    /// `p` is writable for 8 floats.
    unsafe fn store2(p: *mut f32, a: Self, b: Self);
}

/// Step 1 for `m >= 16`: four `b` per iteration (the portable `first_pass`'s sums), the
/// four results of one `b` stored as one vector after a 4x4 transpose.
///
/// # Safety
/// `x` points to `2m` readable floats; `re` and `im` to `m` writable floats each
/// (disjoint from `x`); `m` is a power of two `>= 16`.
#[inline(always)]
pub(super) unsafe fn first_pass<V: FftLanes>(x: *const f32, re: *mut f32, im: *mut f32, m: usize) {
    let q = m / 4;
    let bits = q.trailing_zeros();
    // Lane i of the block starting at b (a multiple of 4) goes to 4 rev(b + i) =
    // 4 rev(b) + 4 rev(i), with 4 rev(i) = 0, m/2, m/4, 3m/4 for i = 0..4.
    let off = [0, m / 2, m / 4, 3 * m / 4];
    let (add, sub) = (V::add, V::sub);
    let mut b = 0;
    while b < q {
        // SAFETY: b + 3q + 3 < 4q = m, so each load2 reads 8 floats inside x[..2m].
        // b is a multiple of 4, so rev(b) (over log2 q bits) has its top two bits clear:
        // rev(b) <= q/4 - 1, p = 4 rev(b) <= m/4 - 4, and p + off[i] + 3 <= m - 1: every
        // store is inside re[..m] / im[..m].
        unsafe {
            let z0 = V::load2(x.add(2 * b));
            let z1 = V::load2(x.add(2 * (b + q)));
            let z2 = V::load2(x.add(2 * (b + 2 * q)));
            let z3 = V::load2(x.add(2 * (b + 3 * q)));
            let (ar, ai) = (add(z0.0, z2.0), add(z0.1, z2.1));
            let (br, bi) = (sub(z0.0, z2.0), sub(z0.1, z2.1));
            let (cr, ci) = (add(z1.0, z3.0), add(z1.1, z3.1));
            let (dr, di) = (sub(z1.0, z3.0), sub(z1.1, z3.1));
            let yr = V::transpose(add(ar, cr), add(br, di), sub(ar, cr), sub(br, di));
            let yi = V::transpose(add(ai, ci), sub(bi, dr), sub(ai, ci), add(bi, dr));
            let p = 4 * rev(b, bits);
            for i in 0..4 {
                V::store(re.add(p + off[i]), yr[i]);
                V::store(im.add(p + off[i]), yi[i]);
            }
        }
        b += 4;
    }
}

/// Inverse step 1 for `m >= 16`: four `k` per iteration, the mirrored block lane-reversed
/// (see `portable::inverse_pre` for the scalar form and its operations, which these are).
pub(super) fn inverse_pre<V: FftLanes>(fft: &RealFft<'_>, re: &[f32], im: &[f32], x: &mut [f32]) {
    let m = fft.n / 2;
    assert!(m >= 16 && re.len() == m + 1 && im.len() == m + 1 && x.len() == 2 * m);
    let (c, s) = fft.post();
    assert!(c.len() == m / 2 && s.len() == m / 2);
    let g = 1.0 / fft.n as f32;
    let (rp, ip, xp) = (re.as_ptr(), im.as_ptr(), x.as_mut_ptr());
    let (add, sub, mul) = (V::add, V::sub, V::mul);
    let mut k = 0;
    while k < m / 2 {
        // SAFETY: k + 3 < m/2 (m/2 is a multiple of 4) and the post twiddles have m/2
        // entries; the mirrored loads read m-k-3 ..= m-k <= m, inside the m + 1 entries of
        // each row. Stores: Z[k..k+4] at x[2k..2k+8] with 2k + 8 <= m; the mirrored block
        // m-k-3 ..= m-k at x[2(m-k-3)..2(m-k+1)], inside x[..2m] for k >= 4 (for k = 0 the
        // lane of index m is dropped through a stack buffer), disjoint from the first.
        unsafe {
            let (cv, sv) = (V::load(c.as_ptr().add(k)), V::load(s.as_ptr().add(k)));
            let pm = m - k - 3;
            let (ar, mut ai) = (V::load(rp.add(k)), V::load(ip.add(k)));
            let br = V::reverse(V::load(rp.add(pm)));
            let mut bi = V::reverse(V::load(ip.add(pm)));
            if k == 0 {
                // Im X[0] and Im X[m] are ignored (lane 0 of each).
                ai = V::zero_lane0(ai);
                bi = V::zero_lane0(bi);
            }
            let gv = V::splat(g);
            let er = mul(add(ar, br), gv);
            let ei = mul(sub(ai, bi), gv);
            let dr = mul(sub(ar, br), gv);
            let di = mul(add(ai, bi), gv);
            // O = D (c + i s).
            let or = V::mul_sub(cv, dr, sv, di);
            let oi = V::mul_add(sv, dr, cv, di);
            // Swapped: imaginary part first.
            V::store2(xp.add(2 * k), add(ei, or), sub(er, oi));
            let (ym, xm) = (V::reverse(sub(or, ei)), V::reverse(add(er, oi)));
            if k == 0 {
                let mut buf = [0.0f32; 8];
                V::store2(buf.as_mut_ptr(), ym, xm);
                core::ptr::copy_nonoverlapping(buf.as_ptr(), xp.add(2 * pm), 6);
            } else {
                V::store2(xp.add(2 * pm), ym, xm);
            }
        }
        k += 4;
    }
    // Z[m/2] = 2 conj X[m/2] / n.
    let h = m / 2;
    x[2 * h] = -(2.0 * g) * im[h];
    x[2 * h + 1] = (2.0 * g) * re[h];
}

/// Inverse step 3: `x[2j] = im[j]`, `x[2j+1] = re[j]`, four `j` per iteration.
///
/// # Safety
/// `re.len() == im.len() == m` and `x.len() == 2 * m`, `m` a multiple of 4.
#[inline(always)]
pub(super) unsafe fn interleave_swapped<V: FftLanes>(re: &[f32], im: &[f32], x: &mut [f32]) {
    let m = re.len();
    let mut j = 0;
    while j < m {
        // SAFETY: the caller's contract: j + 4 <= m, and the store writes x[2j..2j+8]
        // inside x[..2m].
        unsafe {
            let (a, b) = (V::load(im.as_ptr().add(j)), V::load(re.as_ptr().add(j)));
            V::store2(x.as_mut_ptr().add(2 * j), a, b);
        }
        j += 4;
    }
}
