//! 512-point real FFT in Q15 fixed point, with kissfft's int16 arithmetic (kissfft 1.3 as
//! vendored by TFLite Micro's frontend and built with `FIXED_POINT=16`: `kiss_fft.c`,
//! `tools/kiss_fftr.c`, `_kiss_fft_guts.h`).
//!
//! The real input of `N = 512` samples is read as 256 complex values `(x[2k], x[2k+1])`; a
//! 256-point complex FFT in four radix-4 stages (kissfft's factorisation `4 * 4 * 4 * 4`) is
//! followed by the split into the 257 bins of the real spectrum. The stages run one after
//! the other (not in kissfft's recursion, whose order of butterflies does not change their
//! results), on real and imaginary parts stored apart, with each stage's twiddles contiguous
//! ([`StageTwiddles`]) so that the butterflies and the split vectorise; the first stage
//! gathers its inputs in the recursion's order and skips its products by `twiddles[0] = 1`.
//! A test compares every bin with kissfft's recursion, kept as the reference.
//!
//! Every butterfly input is first divided by the radix (`C_FIXDIV`: multiplication by `32767 / radix` in Q15), so the
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
/// Butterflies of the first stage (blocks of 4 points).
const BLOCKS: usize = HALF_FFT / RADIX;
/// Twiddles per factor `j + 1` of the three later stages (`m = 4, 16, 64`), stage `m` at
/// offset `(m - 4) / 3` (the sum of the smaller `m`s).
pub const STAGE_TWIDDLES: usize = 4 + 16 + 64;

/// Offset of stage `m`'s twiddles in [`StageTwiddles`]: the sum of the smaller `m`s.
const fn stage_at(m: usize) -> usize {
    (m - RADIX) / 3
}

/// kissfft's twiddles as the butterflies of each later stage read them, contiguous in `k`
/// and split into real and imaginary parts: `re[j][(m - 4) / 3 + k]` is
/// `twiddles[(j + 1) k stride].r` for the stage of length-`m` sub-transforms
/// (`stride = 256 / (4 m)`), `j < 3`, `k < m`. Built from the kissfft table (not a table of
/// its own).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StageTwiddles {
    /// Real parts, Q15.
    pub re: [[i16; STAGE_TWIDDLES]; 3],
    /// Imaginary parts, Q15.
    pub im: [[i16; STAGE_TWIDDLES]; 3],
}

/// [`StageTwiddles`] of kissfft's table `twiddles`.
pub(super) const fn build_stage_twiddles(twiddles: &[Cpx; HALF_FFT]) -> StageTwiddles {
    let mut t = StageTwiddles { re: [[0; STAGE_TWIDDLES]; 3], im: [[0; STAGE_TWIDDLES]; 3] };
    let mut m = RADIX;
    while m < HALF_FFT {
        let stride = HALF_FFT / (RADIX * m);
        let mut j = 0;
        while j < 3 {
            let mut k = 0;
            while k < m {
                let c = twiddles[(j + 1) * k * stride];
                t.re[j][stage_at(m) + k] = c.r;
                t.im[j][stage_at(m) + k] = c.i;
                k += 1;
            }
            j += 1;
        }
        m *= RADIX;
    }
    t
}

/// `DIGIT_REVERSED[g]`: the first complex input of block `g` of the first stage, whose four
/// inputs are `g'`, `g' + 64`, `g' + 128`, `g' + 192` with `g'` the three base-4 digits of
/// `g` reversed (where `kf_work`'s recursion leaves each length-1 sub-transform).
const DIGIT_REVERSED: [u8; BLOCKS] = {
    let mut t = [0u8; BLOCKS];
    let mut g = 0;
    while g < BLOCKS {
        t[g] = ((g % 4) * 16 + (g / 4 % 4) * 4 + g / 16) as u8;
        g += 1;
    }
    t
};

// The first stage's twiddles are all `twiddles[0]`; it skips their products, which are the
// identity on its inputs (`|x| <= 8192` after `fixdiv(_, 4)`: `sround(32767 x) = x` for
// `|x| <= 16384`) when that twiddle is `(32767, 0)`, as [`super::tables::TABLES`]' is
// (asserted there).

/// `kf_bfly4` (forward) on one group `k` of a stage: the four points `x[j]` (already read,
/// not yet divided) and the twiddles `tw[j]` of points 1..=3; returns the four outputs.
#[inline(always)]
fn butterfly(x: [Cpx; 4], tw: [Cpx; 3]) -> [Cpx; 4] {
    let [f0, f1, f2, f3] = x.map(|c| fixdiv(c, 4));
    let s0 = mul(f1, tw[0]);
    let s1 = mul(f2, tw[1]);
    let s2 = mul(f3, tw[2]);
    combine(f0, s0, s1, s2)
}

/// The additions of `kf_bfly4` after its products `s0 = f1 w1`, `s1 = f2 w2`, `s2 = f3 w3`.
#[inline(always)]
fn combine(f0: Cpx, s0: Cpx, s1: Cpx, s2: Cpx) -> [Cpx; 4] {
    let s5 = sub(f0, s1);
    let f0 = add(f0, s1);
    let s3 = add(s0, s2);
    let s4 = sub(s0, s2);
    [
        add(f0, s3),
        Cpx { r: s5.r.wrapping_add(s4.i), i: s5.i.wrapping_sub(s4.r) },
        sub(f0, s3),
        Cpx { r: s5.r.wrapping_sub(s4.i), i: s5.i.wrapping_add(s4.r) },
    ]
}

/// The first stage (`m = 1`, kissfft's leaves): block `g` reads the real frame's pairs
/// `(x[2 i], x[2 i + 1])` at `i = DIGIT_REVERSED[g] + 64 q` (the recursion's order) and
/// writes points `4 g..4 g + 4`; its twiddles are 1.
fn first_stage(input: &[i16; FFT_SIZE], re: &mut [i16; HALF_FFT], im: &mut [i16; HALF_FFT]) {
    let pairs = input.as_chunks::<2>().0;
    for ((r, i), &h) in
        re.as_chunks_mut::<4>().0.iter_mut().zip(im.as_chunks_mut::<4>().0).zip(&DIGIT_REVERSED)
    {
        let x = core::array::from_fn::<_, 4, _>(|q| {
            let p = pairs[h as usize + q * BLOCKS];
            fixdiv(Cpx { r: p[0], i: p[1] }, 4)
        });
        let y = combine(x[0], x[1], x[2], x[3]);
        for q in 0..4 {
            r[q] = y[q].r;
            i[q] = y[q].i;
        }
    }
}

/// A later stage: every group of `4 M` points combines its four length-`M` DFTs into one of
/// length `4 M` (`kf_bfly4` with the stride of `M`), in place. `M` is a constant so that each
/// stage's loop over `k` has a known length (and vectorises).
fn stage<const M: usize>(re: &mut [i16; HALF_FFT], im: &mut [i16; HALF_FFT], tw: &StageTwiddles) {
    let at = stage_at(M);
    let t = |j: usize| -> (&[i16; M], &[i16; M]) {
        let r = tw.re[j][at..at + M].try_into().expect("M twiddles");
        let i = tw.im[j][at..at + M].try_into().expect("M twiddles");
        (r, i)
    };
    let (t1, t2, t3) = (t(0), t(1), t(2));
    for (gr, gi) in re
        .as_chunks_mut::<M>()
        .0
        .chunks_exact_mut(4)
        .zip(im.as_chunks_mut::<M>().0.chunks_exact_mut(4))
    {
        let [r0, r1, r2, r3] = gr else { unreachable!() };
        let [i0, i1, i2, i3] = gi else { unreachable!() };
        for k in 0..M {
            let x = [
                Cpx { r: r0[k], i: i0[k] },
                Cpx { r: r1[k], i: i1[k] },
                Cpx { r: r2[k], i: i2[k] },
                Cpx { r: r3[k], i: i3[k] },
            ];
            let w = [
                Cpx { r: t1.0[k], i: t1.1[k] },
                Cpx { r: t2.0[k], i: t2.1[k] },
                Cpx { r: t3.0[k], i: t3.1[k] },
            ];
            let y = butterfly(x, w);
            (r0[k], i0[k]) = (y[0].r, y[0].i);
            (r1[k], i1[k]) = (y[1].r, y[1].i);
            (r2[k], i2[k]) = (y[2].r, y[2].i);
            (r3[k], i3[k]) = (y[3].r, y[3].i);
        }
    }
}

/// The spectrum of a real frame, real and imaginary parts apart (`FFT_BINS` each).
#[derive(Clone, Debug)]
pub struct Spectrum {
    /// Real parts, Q15 (see the module docs for the scale).
    pub re: [i16; FFT_BINS],
    /// Imaginary parts; `im[0]` and `im[256]` are 0.
    pub im: [i16; FFT_BINS],
}

/// `kiss_fftr` (forward): the spectrum of the real frame `input` (Q15 scaled by 1/512, see
/// the module docs) into `out`. The 256-point complex FFT runs stage by stage (the first one
/// reading its inputs in `kf_work`'s order), with the butterflies and roundings of kissfft's
/// recursion.
pub(super) fn real_fft(
    input: &[i16; FFT_SIZE],
    stage_twiddles: &StageTwiddles,
    super_twiddles: &[Cpx; HALF_FFT / 2],
    out: &mut Spectrum,
) {
    let mut re = [0i16; HALF_FFT];
    let mut im = [0i16; HALF_FFT];
    first_stage(input, &mut re, &mut im);
    stage::<4>(&mut re, &mut im, stage_twiddles);
    stage::<16>(&mut re, &mut im, stage_twiddles);
    stage::<64>(&mut re, &mut im, stage_twiddles);
    const _: () = assert!(RADIX * RADIX * RADIX * RADIX == HALF_FFT);

    let dc = fixdiv(Cpx { r: re[0], i: im[0] }, 2);
    (out.re[0], out.im[0]) = (dc.r.wrapping_add(dc.i), 0);
    (out.re[HALF_FFT], out.im[HALF_FFT]) = (dc.r.wrapping_sub(dc.i), 0);
    // The split of bins `k` and `256 - k` for `k = 1..=128`, bins `k` first (the C code
    // writes bin 128 twice, `256 - k` last); in two passes over contiguous (one of them
    // reversed) parts so that the loop vectorises.
    const Q: usize = HALF_FFT / 2;
    let (mut high_re, mut high_im) = ([0i16; Q], [0i16; Q]);
    let mirror_re = re[Q..].iter().rev();
    let mirror_im = im[Q..].iter().rev();
    let points = re[1..=Q].iter().zip(&im[1..=Q]).zip(mirror_re.zip(mirror_im));
    let low = out.re[1..=Q].iter_mut().zip(&mut out.im[1..=Q]);
    let high_parts = high_re.iter_mut().zip(&mut high_im);
    for ((((&r, &i), (&mr, &mi)), &tw), ((lr, li), (hr, hi))) in
        points.zip(super_twiddles).zip(low.zip(high_parts))
    {
        let fpk = fixdiv(Cpx { r, i }, 2);
        let fpnk = fixdiv(Cpx { r: mr, i: mi.wrapping_neg() }, 2);
        let f1k = add(fpk, fpnk);
        let f2k = sub(fpk, fpnk);
        let tw = mul(f2k, tw);
        // HALF_OF: an arithmetic shift of the `int` sum, which always fits `i16`.
        let half = |a: i16, b: i32| ((a as i32 + b) >> 1) as i16;
        (*lr, *li) = (half(f1k.r, tw.r as i32), half(f1k.i, tw.i as i32));
        (*hr, *hi) = (half(f1k.r, -(tw.r as i32)), half(tw.i, -(f1k.i as i32)));
    }
    // Bin `256 - k` is `high_re[k - 1]`, `high_im[k - 1]`.
    let re_parts = out.re[Q..HALF_FFT].iter_mut().rev().zip(&high_re);
    for (o, &h) in re_parts.chain(out.im[Q..HALF_FFT].iter_mut().rev().zip(&high_im)) {
        *o = h;
    }
}

/// kissfft's recursive `kf_work` as the C code runs it, the reference of the staged
/// [`real_fft`].
#[cfg(test)]
mod reference {
    use super::*;

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
            out[HALF_FFT - k] =
                Cpx { r: half(f1k.r, -(tw.r as i32)), i: half(tw.i, -(f1k.i as i32)) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::tables::TABLES;
    use super::*;

    /// xorshift64: deterministic test samples without a dependency.
    fn samples(seed: u64, amplitude: i32) -> [i16; FFT_SIZE] {
        let mut s = seed;
        core::array::from_fn(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            let v = (s >> 16) as u16 as i16 as i32;
            (v * amplitude / 32768) as i16
        })
    }

    #[test]
    fn staged_fft_equals_kissfft_s_recursion() {
        let mut inputs = alloc::vec![
            [0i16; FFT_SIZE],
            [i16::MIN; FFT_SIZE],
            [i16::MAX; FFT_SIZE],
            core::array::from_fn(|i| if i % 2 == 0 { i16::MIN } else { i16::MAX }),
            core::array::from_fn(|i| if i % 3 == 0 { i16::MIN } else { 0 }),
        ];
        for at in [0, 1, 2, 255, 256, 479, 511] {
            let mut x = [0i16; FFT_SIZE];
            x[at] = i16::MIN;
            inputs.push(x);
            x[at] = i16::MAX;
            inputs.push(x);
        }
        for seed in 1..300u64 {
            let amplitude = [32768, 32767, 16384, 1000, 7][seed as usize % 5];
            inputs.push(samples(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15), amplitude));
        }
        let t = &TABLES;
        for (n, x) in inputs.iter().enumerate() {
            let mut want = [Cpx::default(); FFT_BINS];
            reference::real_fft(x, &t.twiddles, &t.super_twiddles, &mut want);
            let mut got = Spectrum { re: [1; FFT_BINS], im: [1; FFT_BINS] };
            real_fft(x, &t.stage_twiddles, &t.super_twiddles, &mut got);
            for (k, w) in want.iter().enumerate() {
                assert_eq!((got.re[k], got.im[k]), (w.r, w.i), "input {n}, bin {k}");
            }
        }
    }
}
