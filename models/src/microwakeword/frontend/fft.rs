//! 512-point real FFT in Q15 fixed point, with kissfft's int16 arithmetic (kissfft 1.3 as
//! vendored by TFLite Micro's frontend and built with `FIXED_POINT=16`: `kiss_fft.c`,
//! `tools/kiss_fftr.c`, `_kiss_fft_guts.h`).
//!
//! The real input of `N = 512` samples is read as 256 complex values `(x[2k], x[2k+1])`; a
//! 256-point complex FFT in four radix-4 stages (kissfft's factorisation `4 * 4 * 4 * 4`) is
//! followed by the split into the 257 bins of the real spectrum. Every butterfly input is
//! first divided by the radix (`C_FIXDIV`: multiplication by `32767 / radix` in Q15), so the
//! output is the DFT divided by 512 (with `FftCompute`'s input shift, see
//! [`super::Frontend`]). Products are rounded half up (`sround`: `(x + 2^14) >> 15`); sums
//! wrap in `i16`, as the C code stores them.

use super::tables::{floor_f64, nudge_f64, sin_cos};

/// Real FFT length (the window length 480 rounded up to a power of two).
pub const FFT_SIZE: usize = 512;
/// Length of the complex FFT inside the real one.
pub const HALF_FFT: usize = FFT_SIZE / 2;
/// Bins of the real spectrum, `0..=256`.
pub const FFT_BINS: usize = HALF_FFT + 1;

/// A Q15 complex value (kissfft's `kiss_fft_cpx` with `int16_t` scalars).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Cpx {
    /// Real part.
    pub r: i16,
    /// Imaginary part.
    pub i: i16,
}

/// `Q15 * 32767`-scaled `(cos, sin)` of `phase` as kissfft's `kf_cexp` computes them in
/// fixed point: `floor(0.5 + 32767 * cos(phase))` in `f64`.
const fn cexp(phase: f64, ulps: i32) -> Cpx {
    let (s, c) = sin_cos(phase);
    let (s, c) = (nudge_f64(s, ulps), nudge_f64(c, ulps));
    Cpx { r: floor_f64(0.5 + 32767.0 * c) as i16, i: floor_f64(0.5 + 32767.0 * s) as i16 }
}

/// kissfft's twiddles for the forward 256-point FFT: `phase = -2 pi k / 256` (`f64`).
pub(super) const fn build_twiddles(ulps: i32) -> [Cpx; HALF_FFT] {
    let mut t = [Cpx { r: 0, i: 0 }; HALF_FFT];
    let mut k = 0;
    while k < HALF_FFT {
        t[k] = cexp(-2.0 * core::f64::consts::PI * k as f64 / HALF_FFT as f64, ulps);
        k += 1;
    }
    t
}

/// kiss_fftr's split twiddles: `phase = -pi ((k + 1) / 256 + 0.5)`, `k < 128` (`f64`).
pub(super) const fn build_super_twiddles(ulps: i32) -> [Cpx; HALF_FFT / 2] {
    let mut t = [Cpx { r: 0, i: 0 }; HALF_FFT / 2];
    let mut k = 0;
    while k < HALF_FFT / 2 {
        let phase = -core::f64::consts::PI * ((k + 1) as f64 / HALF_FFT as f64 + 0.5);
        t[k] = cexp(phase, ulps);
        k += 1;
    }
    t
}

/// `sround`: Q30 product to Q15, rounding half up, truncated to `i16`.
#[inline(always)]
fn sround(x: i32) -> i16 {
    (x.wrapping_add(1 << 14) >> 15) as i16
}

/// `C_MUL`: complex product, each part rounded once.
#[inline(always)]
fn mul(a: Cpx, b: Cpx) -> Cpx {
    let (ar, ai, br, bi) = (a.r as i32, a.i as i32, b.r as i32, b.i as i32);
    Cpx { r: sround((ar * br).wrapping_sub(ai * bi)), i: sround((ar * bi).wrapping_add(ai * br)) }
}

/// `C_FIXDIV`: both parts times `32767 / radix` (integer division) in Q15.
#[inline(always)]
fn fixdiv(c: Cpx, radix: i32) -> Cpx {
    let d = 32767 / radix;
    Cpx { r: sround(c.r as i32 * d), i: sround(c.i as i32 * d) }
}

#[inline(always)]
fn add(a: Cpx, b: Cpx) -> Cpx {
    Cpx { r: a.r.wrapping_add(b.r), i: a.i.wrapping_add(b.i) }
}

#[inline(always)]
fn sub(a: Cpx, b: Cpx) -> Cpx {
    Cpx { r: a.r.wrapping_sub(b.r), i: a.i.wrapping_sub(b.i) }
}

/// Radix of every stage and the sub-transform lengths (`kf_factor(256)`).
const RADIX: usize = 4;

/// `kf_work`: `out[..m * 4]` = the DFT of `input[0], input[stride], ...` (decimation in time,
/// recursive as in kissfft so the order of the roundings is the same).
fn work(out: &mut [Cpx], input: &[Cpx], stride: usize, twiddles: &[Cpx; HALF_FFT]) {
    let m = out.len() / RADIX;
    if m == 1 {
        for (q, o) in out.iter_mut().enumerate() {
            *o = input[q * stride];
        }
    } else {
        for (q, part) in out.chunks_exact_mut(m).enumerate() {
            work(part, &input[q * stride..], stride * RADIX, twiddles);
        }
    }
    butterfly4(out, stride, twiddles);
}

/// `kf_bfly4` (forward): combines four length-`m` DFTs in `out` into one of length `4m`.
fn butterfly4(out: &mut [Cpx], stride: usize, twiddles: &[Cpx; HALF_FFT]) {
    let m = out.len() / RADIX;
    for k in 0..m {
        let f0 = fixdiv(out[k], 4);
        let f1 = fixdiv(out[k + m], 4);
        let f2 = fixdiv(out[k + 2 * m], 4);
        let f3 = fixdiv(out[k + 3 * m], 4);
        let s0 = mul(f1, twiddles[k * stride]);
        let s1 = mul(f2, twiddles[2 * k * stride]);
        let s2 = mul(f3, twiddles[3 * k * stride]);
        let s5 = sub(f0, s1);
        let f0 = add(f0, s1);
        let s3 = add(s0, s2);
        let s4 = sub(s0, s2);
        out[k + 2 * m] = sub(f0, s3);
        out[k] = add(f0, s3);
        out[k + m] = Cpx { r: s5.r.wrapping_add(s4.i), i: s5.i.wrapping_sub(s4.r) };
        out[k + 3 * m] = Cpx { r: s5.r.wrapping_sub(s4.i), i: s5.i.wrapping_add(s4.r) };
    }
}

/// `kiss_fftr` (forward): the spectrum `out[0..=256]` of the real frame `input` (Q15 scaled
/// by 1/512, see the module docs). `out[0].i` and `out[256].i` are 0.
pub(super) fn real_fft(
    input: &[i16; FFT_SIZE],
    twiddles: &[Cpx; HALF_FFT],
    super_twiddles: &[Cpx; HALF_FFT / 2],
    out: &mut [Cpx; FFT_BINS],
) {
    let mut packed = [Cpx::default(); HALF_FFT];
    for (c, pair) in packed.iter_mut().zip(input.chunks_exact(2)) {
        *c = Cpx { r: pair[0], i: pair[1] };
    }
    let mut tmp = [Cpx::default(); HALF_FFT];
    work(&mut tmp, &packed, 1, twiddles);

    let dc = fixdiv(tmp[0], 2);
    out[0] = Cpx { r: dc.r.wrapping_add(dc.i), i: 0 };
    out[HALF_FFT] = Cpx { r: dc.r.wrapping_sub(dc.i), i: 0 };
    for k in 1..=HALF_FFT / 2 {
        let fpk = fixdiv(tmp[k], 2);
        let mirror = tmp[HALF_FFT - k];
        let fpnk = fixdiv(Cpx { r: mirror.r, i: mirror.i.wrapping_neg() }, 2);
        let f1k = add(fpk, fpnk);
        let f2k = sub(fpk, fpnk);
        let tw = mul(f2k, super_twiddles[k - 1]);
        // HALF_OF: an arithmetic shift of the `int` sum, which always fits `i16`.
        let half = |a: i16, b: i32| ((a as i32 + b) >> 1) as i16;
        out[k] = Cpx { r: half(f1k.r, tw.r as i32), i: half(f1k.i, tw.i as i32) };
        out[HALF_FFT - k] = Cpx { r: half(f1k.r, -(tw.r as i32)), i: half(tw.i, -(f1k.i as i32)) };
    }
}
