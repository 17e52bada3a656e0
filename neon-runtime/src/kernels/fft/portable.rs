//! Portable real-FFT steps (plain Rust; the radix-2 loops vectorise).

use super::{rev, RealFft, Twiddles};

/// Step 1, portable: load `z[j] = x[2j] + i x[2j+1]`, radix-4 on `z[b + s m/4]`, store at
/// `4 rev(b) + r` (see the module docs). `re`, `im`: the first `m` entries of each row.
#[inline(always)]
pub(super) fn first_pass(x: &[f32], re: &mut [f32], im: &mut [f32]) {
    let m = re.len();
    let q = m / 4;
    let bits = q.trailing_zeros();
    for b in 0..q {
        let (z0r, z0i) = (x[2 * b], x[2 * b + 1]);
        let (z1r, z1i) = (x[2 * (b + q)], x[2 * (b + q) + 1]);
        let (z2r, z2i) = (x[2 * (b + 2 * q)], x[2 * (b + 2 * q) + 1]);
        let (z3r, z3i) = (x[2 * (b + 3 * q)], x[2 * (b + 3 * q) + 1]);
        // Y_r = sum_s z_s (-i)^(r s).
        let (ar, ai) = (z0r + z2r, z0i + z2i);
        let (br, bi) = (z0r - z2r, z0i - z2i);
        let (cr, ci) = (z1r + z3r, z1i + z3i);
        let (dr, di) = (z1r - z3r, z1i - z3i);
        let p = 4 * rev(b, bits);
        re[p] = ar + cr;
        im[p] = ai + ci;
        re[p + 2] = ar - cr;
        im[p + 2] = ai - ci;
        // (-i) d = di - i dr.
        re[p + 1] = br + di;
        im[p + 1] = bi - dr;
        re[p + 3] = br - di;
        im[p + 3] = bi + dr;
    }
}

/// Radix-2 DIT stage of half-span `h`, portable.
#[inline(always)]
pub(super) fn radix2(re: &mut [f32], im: &mut [f32], (c, s): Twiddles<'_>) {
    let h = c.len();
    for (gr, gi) in re.chunks_exact_mut(2 * h).zip(im.chunks_exact_mut(2 * h)) {
        let (ar, br) = gr.split_at_mut(h);
        let (ai, bi) = gi.split_at_mut(h);
        for j in 0..h {
            let tr = c[j] * br[j] + s[j] * bi[j];
            let ti = c[j] * bi[j] - s[j] * br[j];
            let (xr, xi) = (ar[j], ai[j]);
            ar[j] = xr + tr;
            ai[j] = xi + ti;
            br[j] = xr - tr;
            bi[j] = xi - ti;
        }
    }
}

/// Radix-2^2 DIT pass: stages `h` (twiddles `c1, s1`, `h` values) and `2h` (`c2, s2`, `2h`
/// values; only the first `h` are read, the odd one is `-i` times the even one), portable.
#[inline(always)]
pub(super) fn radix22(
    re: &mut [f32],
    im: &mut [f32],
    (c1, s1): Twiddles<'_>,
    (c2, s2): Twiddles<'_>,
) {
    let h = c1.len();
    for (gr, gi) in re.chunks_exact_mut(4 * h).zip(im.chunks_exact_mut(4 * h)) {
        let (ar, rest) = gr.split_at_mut(h);
        let (br, rest) = rest.split_at_mut(h);
        let (cr, dr) = rest.split_at_mut(h);
        let (ai, rest) = gi.split_at_mut(h);
        let (bi, rest) = rest.split_at_mut(h);
        let (ci, di) = rest.split_at_mut(h);
        for j in 0..h {
            // Stage h: (a, b) and (c, d) with w1 = c1 - i s1.
            let t1r = c1[j] * br[j] + s1[j] * bi[j];
            let t1i = c1[j] * bi[j] - s1[j] * br[j];
            let t2r = c1[j] * dr[j] + s1[j] * di[j];
            let t2i = c1[j] * di[j] - s1[j] * dr[j];
            let (a1r, a1i) = (ar[j] + t1r, ai[j] + t1i);
            let (b1r, b1i) = (ar[j] - t1r, ai[j] - t1i);
            let (c1r, c1i) = (cr[j] + t2r, ci[j] + t2i);
            let (d1r, d1i) = (cr[j] - t2r, ci[j] - t2i);
            // Stage 2h: (a1, c1) with w2 = c2 - i s2, (b1, d1) with -i w2.
            let u1r = c2[j] * c1r + s2[j] * c1i;
            let u1i = c2[j] * c1i - s2[j] * c1r;
            let u2r = c2[j] * d1r + s2[j] * d1i;
            let u2i = c2[j] * d1i - s2[j] * d1r;
            // -i (u2r + i u2i) = u2i - i u2r.
            ar[j] = a1r + u1r;
            ai[j] = a1i + u1i;
            cr[j] = a1r - u1r;
            ci[j] = a1i - u1i;
            br[j] = b1r + u2i;
            bi[j] = b1i - u2r;
            dr[j] = b1r - u2i;
            di[j] = b1i + u2r;
        }
    }
}

/// One post-processing pair: `a = Z[k]`, `b = Z[m-k]`, twiddle `c - i s`; returns
/// `(X[k], X[m-k])` as `((re, im), (re, im))`.
#[inline(always)]
fn post_pair(a: (f32, f32), b: (f32, f32), c: f32, s: f32) -> ((f32, f32), (f32, f32)) {
    let er = 0.5 * (a.0 + b.0);
    let ei = 0.5 * (a.1 - b.1);
    let or = 0.5 * (a.1 + b.1);
    let oi = 0.5 * (b.0 - a.0);
    let tr = c * or + s * oi;
    let ti = c * oi - s * or;
    ((er + tr, ei + ti), (er - tr, ti - ei))
}

/// Step 3, portable. `re`, `im`: the full rows (`m + 1` entries).
#[inline(always)]
pub(super) fn post(fft: &RealFft<'_>, re: &mut [f32], im: &mut [f32]) {
    let m = fft.n / 2;
    let (c, s) = fft.post();
    re[m] = re[0];
    im[m] = im[0];
    for k in 0..m / 2 {
        let (xk, xmk) = post_pair((re[k], im[k]), (re[m - k], im[m - k]), c[k], s[k]);
        re[k] = xk.0;
        im[k] = xk.1;
        re[m - k] = xmk.0;
        im[m - k] = xmk.1;
    }
    im[m / 2] = -im[m / 2];
    im[0] = 0.0;
    im[m] = 0.0;
}

/// `power[k] = re[k]^2 + im[k]^2`.
pub(super) fn power_spectrum(re: &[f32], im: &[f32], power: &mut [f32]) {
    for ((p, &a), &b) in power.iter_mut().zip(re).zip(im) {
        *p = a * a + b * b;
    }
}

pub(super) fn magnitude_spectrum(re: &[f32], im: &[f32], magnitude: &mut [f32]) {
    for ((m, &a), &b) in magnitude.iter_mut().zip(re).zip(im) {
        *m = crate::kernels::norm::sqrt_f32(a * a + b * b);
    }
}

/// One inverse pre-processing pair: `a = X[k]`, `b = X[m-k]`, twiddle `c + i s =
/// conj(w^k)`, scale `g = 1/n`; returns `(Z[k], Z[m-k]) / m` as `((re, im), (re, im))`.
#[inline(always)]
fn inverse_pair(a: (f32, f32), b: (f32, f32), c: f32, s: f32, g: f32) -> ((f32, f32), (f32, f32)) {
    let er = g * (a.0 + b.0);
    let ei = g * (a.1 - b.1);
    let dr = g * (a.0 - b.0);
    let di = g * (a.1 + b.1);
    // O = D (c + i s).
    let or = c * dr - s * di;
    let oi = s * dr + c * di;
    ((er - oi, ei + or), (er + oi, or - ei))
}

/// Inverse step 1, portable: `Z / m` from the full rows `re`, `im` (`m + 1` entries each)
/// into `x` (`[2m]`), interleaved with real and imaginary parts swapped.
#[inline(always)]
pub(super) fn inverse_pre(fft: &RealFft<'_>, re: &[f32], im: &[f32], x: &mut [f32]) {
    let m = fft.n / 2;
    let (c, s) = fft.post();
    let g = 1.0 / fft.n as f32;
    // k = 0 pairs with m; Im X[0] and Im X[m] are ignored: Z[0] = E + i O with
    // E = (X[0] + X[m]) / 2, O = (X[0] - X[m]) / 2.
    x[0] = g * (re[0] - re[m]);
    x[1] = g * (re[0] + re[m]);
    for k in 1..m / 2 {
        let (zk, zmk) = inverse_pair((re[k], im[k]), (re[m - k], im[m - k]), c[k], s[k], g);
        x[2 * k] = zk.1;
        x[2 * k + 1] = zk.0;
        x[2 * (m - k)] = zmk.1;
        x[2 * (m - k) + 1] = zmk.0;
    }
    // Z[m/2] = 2 conj X[m/2] / n.
    let h = m / 2;
    x[2 * h] = -(2.0 * g) * im[h];
    x[2 * h + 1] = (2.0 * g) * re[h];
}

/// Inverse step 3, portable: `x[2j] = im[j]`, `x[2j+1] = re[j]`.
#[inline(always)]
pub(super) fn interleave_swapped(re: &[f32], im: &[f32], x: &mut [f32]) {
    for ((p, &r), &i) in x.chunks_exact_mut(2).zip(re).zip(im) {
        p[0] = i;
        p[1] = r;
    }
}
