//! Real FFT (power-of-two lengths) and power spectrum.
//!
//! # Definition and output convention
//! For a real input `x` of length `n` (a power of two, [`MIN_LEN`]`..=`[`MAX_LEN`]) the
//! forward transform is the unnormalised DFT
//!
//! `X[k] = sum_{j=0}^{n-1} x[j] exp(-2 pi i j k / n)`, `k = 0..=n/2`
//!
//! (the same sign and scale as numpy's `rfft` and `rustfft`'s forward transform; the bins
//! above `n/2` are the complex conjugates of these and are not produced). The spectrum is
//! stored **split**, as a `[2, n/2 + 1]` array: row 0 holds `Re X[0..=n/2]`, row 1 holds
//! `Im X[0..=n/2]` (so `spectrum.len() == n + 2`); `Im X[0]` and `Im X[n/2]` are exactly 0.
//! Split storage keeps the real and imaginary parts in separate vectors, so that both the
//! butterflies and the power spectrum `|X[k]|^2 = Re^2 + Im^2` ([`FftKernels::power_spectrum`],
//! `[n/2 + 1]`, in squared input units) are plain vertical SIMD arithmetic.
//!
//! # Algorithm
//! The classic "two-for-one" real FFT (e.g. Press et al., *Numerical Recipes*, 3rd ed.,
//! 12.3): the `n` reals are read as `m = n/2` complex values `z[j] = x[2j] + i x[2j+1]`,
//! `Z = DFT_m(z)` is computed by an iterative radix-2 decimation-in-time FFT (Cooley & Tukey
//! 1965), and the spectrum follows from `E[k] = (Z[k] + conj Z[m-k]) / 2` (DFT of the even
//! samples), `O[k] = (Z[k] - conj Z[m-k]) / 2i` (odd samples) as
//! `X[k] = E[k] + w^k O[k]`, `X[m-k] = conj(E[k] - w^k O[k])`, `w = exp(-2 pi i / n)`,
//! for each pair `(k, m - k)`. All of it runs in place in the spectrum buffer (the `m`
//! complex working values sit in the first `m` entries of each row; the last entry of each
//! row receives `X[n/2]`), so no scratch memory is needed.
//!
//! 1. **Load, permute, first two stages.** The first two radix-2 stages are done as one
//!    radix-4 pass straight from the input: for `b < m/4` the four values
//!    `z[b + s m/4]`, `s = 0..4`, are loaded (contiguous in `b`; NEON deinterleaves real
//!    and imaginary parts with `ld2`), their 4-point DFT is computed, and the four results
//!    are stored at `4 rev(b) + r` (`rev` reverses the `log2(m) - 2` index bits). That is
//!    exactly the state of the in-place bit-reversed DIT after two stages, so no separate
//!    bit-reversal pass exists. NEON handles four `b` at once and stores the four
//!    results of one `b` as one vector after a 4x4 transpose (`trn1/trn2/zip1/zip2`).
//! 2. **Radix-2 stages** of half-span `h = 4, 8, ..., m/2`, fused in pairs into radix-2^2
//!    passes (stages `h` and `2h` in one sweep over memory: four loads, four stores and
//!    four complex multiplications per four points; the second stage's odd twiddle is
//!    `-i` times its even one). A single radix-2 pass remains when the stage count is odd.
//!    Each vector holds four consecutive butterflies; the twiddles of each stage are stored
//!    contiguously (cosines, then sines), so they are plain vector loads.
//! 3. **Post-processing** of the pairs `(k, m - k)`, four `k` per vector; the mirrored
//!    block is loaded and stored lane-reversed (`rev64` + `ext`).
//!
//! Both backends run this algorithm with the same twiddles; [`Portable`] is plain Rust
//! (its radix-2 loops vectorise), `Neon` is written with `float32x4_t` intrinsics; NEON
//! fuses multiply-adds (`fmla`/`fmls`), so the two agree to rounding (see below), not
//! bitwise. `n = 16` (`m = 8`, too small for four-wide vectors in step 1) runs the portable
//! code on both backends.
//!
//! # Twiddle tables (no allocation)
//! A transform is described by a [`RealFft`]: the length and a borrowed table of
//! [`twiddle_len`]`(n) = 3n/2 - 2` f32 values, laid out as follows (`m = n/2`):
//! for each stage half-span `h = 1, 2, 4, ..., m/2` a block of `2h` values at offset
//! `2h - 2`, `cos(pi j / h)` for `j < h` then `sin(pi j / h)` for `j < h` (the stage
//! twiddle is `cos - i sin`); then, at offset `2m - 2`, `cos(2 pi k / n)` for `k < m/2`
//! followed by `sin(2 pi k / n)` for `k < m/2` (post-processing). The table comes from
//! [`twiddles`], a `const fn`, so it can live in a `static` and cost nothing at run time:
//!
//! ```
//! use neon_runtime::kernels::fft::{twiddle_len, twiddles, RealFft};
//! use neon_runtime::kernels::FftKernels;
//! use neon_runtime::Portable;
//!
//! static TW512: [f32; twiddle_len(512)] = twiddles(512);
//! let fft = RealFft::new(512, &TW512).unwrap();
//! let x = [1.0f32; 512];
//! let mut spectrum = [0.0f32; 514];
//! Portable::rfft(&fft, &x, &mut spectrum);
//! assert_eq!(spectrum[0], 512.0); // X[0] = sum of the input
//! ```
//!
//! or from [`fill_twiddles`] into caller-provided storage. The values are computed in f64
//! by [`sin_cos_turns`] (exact rational range reduction, then Taylor polynomials; absolute
//! error below `4e-16`, see there) and rounded to nearest f32, so each stored twiddle is the
//! correctly rounded f32 value except in cases within `4e-16` of a rounding boundary.
//!
//! # Accuracy
//! The usual bound for a radix-2 FFT in floating point (Higham, *Accuracy and Stability of
//! Numerical Algorithms*, 2nd ed., Theorem 24.2) is
//! `||X_computed - X|| / ||X|| <= L eta / (1 - L eta)` with `L` the number of stages and
//! `eta = mu + gamma_4 (sqrt 2 + mu)`, `mu` the twiddle error and `gamma_4 = 4u / (1 - 4u)`,
//! `u = 2^-24`: with `mu <= u` (rounded twiddles) `eta ~= 6.7 u = 4.0e-7` per stage. Here
//! `L = log2 n` (the `log2(n/2)` complex stages plus the post-processing, which is a
//! butterfly of the same shape), so the norm-wise relative error is below
//! `4.0e-7 log2 n` (3.6e-6 for `n = 512`). The error is norm-wise: a bin far below the
//! spectrum's norm carries the same absolute error as a loud one.
//!
//! Measured against `rustfft` in f64 on uniform random inputs in `[-1, 1)` (worst of 20
//! inputs per length; `tests/fft.rs`, `cargo test --test fft -- --ignored --nocapture`),
//! norm-wise relative error, next to `rustfft`'s own f32 FFT on the same inputs:
//!
//! | n     | portable | NEON (qemu) | rustfft f32 | asserted bound |
//! |-------|----------|-------------|-------------|----------------|
//! | 16    | 8.0e-8   | 8.0e-8      | 6.0e-8      | 1.7e-6         |
//! | 64    | 9.4e-8   | 9.6e-8      | 8.1e-8      | 2.5e-6         |
//! | 512   | 1.19e-7  | 1.12e-7     | 9.9e-8      | 3.8e-6         |
//! | 4096  | 1.33e-7  | 1.24e-7     | 1.17e-7     | 5.0e-6         |
//! | 65536 | 1.53e-7  | -           | 1.36e-7     | 6.7e-6         |
//!
//! i.e. 1.3 to 2.6 `u`, growing like `sqrt(log2 n)` (random rounding errors), 1.1 to 1.2
//! times `rustfft`'s f32 error. The largest single-bin error is below `6e-8 ||X||`.
//!
//! # Cost
//! Per transform of `n = 2m` reals: one pass that loads the input and does two stages,
//! `ceil((log2 m - 2) / 2)` radix-2^2 / radix-2 passes over `2m` floats, and one
//! post-processing pass; every pass is four-wide on NEON. No scratch, no allocation.
//!
//! Guest instructions under qemu (`--cpu neoverse-n1`, `benches/src/bin/insn_fft.rs`, per
//! transform): `n = 512`: NEON 5.6 k, portable 21.5 k, `realfft` 3 (`rustfft` 6 with its
//! NEON code) 9.6 k; `n = 4096`: NEON 53 k, `realfft` 88 k; `n = 64`: NEON 0.68 k, `realfft`
//! 0.84 k. The NEON `n = 512` transform is 14% `ldr q`, 11% `str q`, 34% vector
//! `fadd`/`fsub`/`fmul`, 8% `fmla`/`fmls`, 5% lane permutes (`rev64`, `ext`, `ins`, `ld2`)
//! and 18% integer address arithmetic, with no scalar floating point: every butterfly runs
//! on `float32x4_t`. `rfft_power` adds 0.8 k for the 257 bins.

use super::{BackendType, Portable, X86Isa, X86};
use crate::error::{Error, ShapeError};

/// Smallest supported transform length.
pub const MIN_LEN: usize = 16;
/// Largest supported transform length (`2^16`).
pub const MAX_LEN: usize = 1 << 16;

/// Whether `n` is a supported transform length (a power of two in
/// [`MIN_LEN`]`..=`[`MAX_LEN`]).
pub const fn is_valid_len(n: usize) -> bool {
    n.is_power_of_two() && n >= MIN_LEN && n <= MAX_LEN
}

/// Length of the twiddle table of a length-`n` transform: `3n/2 - 2` f32 values.
///
/// # Panics
/// When `n` is not a valid length (a compile error when evaluated in a constant).
pub const fn twiddle_len(n: usize) -> usize {
    assert!(is_valid_len(n), "rfft: length must be a power of two in 16..=65536");
    3 * (n / 2) - 2
}

/// `(sin, cos)` of the angle `2 pi num / den` (a rational number of turns), in f64, usable
/// in constants.
///
/// Range reduction is exact: `num mod den` picks the quadrant and the remainder is folded
/// into the first octant with integer arithmetic, so the polynomial argument is
/// `x = (pi/2) r / den` with `0 <= x <= pi/4`; `r / den` and the product with `pi/2` are the
/// only roundings (relative error of `x` below `1.5 * 2^-53`). `sin x` and `cos x` are
/// Taylor polynomials of degree 23 and 22 evaluated in Horner form with exact rational
/// factors `1 / ((2k)(2k+1))`; the truncation error is below `(pi/4)^24 / 24! < 2e-26`.
/// Total absolute error below `4e-16` (2 ulp of 1 in f64; the tests compare with `std`'s
/// `sin_cos` over every `num < den` for many `den`), far below the f32 half-ulp of a
/// twiddle (`>= 3e-8` for values near 1). Exact values: `sin = 0`, `cos = +-1` on the axes
/// (`4 num` a multiple of `den`).
///
/// # Panics
/// When `den == 0` or `den >= 2^52` (so that the integer arithmetic cannot overflow and
/// `r / den` is one rounding).
pub const fn sin_cos_turns(num: u64, den: u64) -> (f64, f64) {
    assert!(den > 0 && den < (1 << 52), "sin_cos_turns: den must be in 1..2^52");
    let t = num % den;
    // Quadrant q and remainder r4 / den of a quadrant: 4t = q den + r4.
    let q = (4 * t as u128 / den as u128) as u64;
    let r4 = (4 * t as u128 - q as u128 * den as u128) as u64;
    // Fold into the first octant: theta = (pi/2) r4 / den = pi/2 - (pi/2) (den - r4) / den.
    let swap = 2 * r4 > den;
    let r = if swap { den - r4 } else { r4 };
    let x = core::f64::consts::FRAC_PI_2 * (r as f64 / den as f64);
    let (s, c) = sin_cos_octant(x);
    let (st, ct) = if swap { (c, s) } else { (s, c) };
    match q {
        0 => (st, ct),
        1 => (ct, -st),
        2 => (-st, -ct),
        _ => (-ct, st),
    }
}

/// `(sin x, cos x)` for `0 <= x <= pi/4`: Taylor polynomials in Horner form,
/// `sin x = x (1 - x^2/(2*3) (1 - x^2/(4*5) (1 - ...)))` up to `x^23`, `cos x` likewise up
/// to `x^22`.
const fn sin_cos_octant(x: f64) -> (f64, f64) {
    let x2 = x * x;
    let mut s = 1.0;
    let mut c = 1.0;
    let mut k = 11u32;
    while k >= 1 {
        let kf = k as f64;
        // sin: factors 1/((2k)(2k+1)); cos: 1/((2k-1)(2k)).
        s = 1.0 - x2 / ((2.0 * kf) * (2.0 * kf + 1.0)) * s;
        c = 1.0 - x2 / ((2.0 * kf - 1.0) * (2.0 * kf)) * c;
        k -= 1;
    }
    (x * s, c)
}

/// Fills `table` with the twiddles of a length-`n` transform (layout: see the
/// [module docs](self)). A `const fn`: [`twiddles`] uses it to build tables at compile time.
///
/// # Panics
/// When `n` is not a valid length or `table.len() != twiddle_len(n)`.
pub const fn fill_twiddles(n: usize, table: &mut [f32]) {
    assert!(table.len() == twiddle_len(n), "rfft: twiddle table length is not twiddle_len(n)");
    let m = n / 2;
    let mut h = 1;
    while h < m {
        let off = 2 * h - 2;
        let mut j = 0;
        while j < h {
            let (s, c) = sin_cos_turns(j as u64, 2 * h as u64);
            table[off + j] = c as f32;
            table[off + h + j] = s as f32;
            j += 1;
        }
        h *= 2;
    }
    let off = 2 * m - 2;
    let q = m / 2;
    let mut k = 0;
    while k < q {
        let (s, c) = sin_cos_turns(k as u64, n as u64);
        table[off + k] = c as f32;
        table[off + q + k] = s as f32;
        k += 1;
    }
}

/// The twiddle table of a length-`n` transform as an array, for `static`s:
/// `static TW: [f32; twiddle_len(512)] = twiddles(512);`. Const evaluation of the largest
/// tables (`n >= 16384`) is slow; fill those at run time with [`fill_twiddles`].
///
/// # Panics
/// When `n` is not a valid length or `T != twiddle_len(n)` (at compile time in a constant).
pub const fn twiddles<const T: usize>(n: usize) -> [f32; T] {
    let mut t = [0.0f32; T];
    fill_twiddles(n, &mut t);
    t
}

/// A real FFT of one length: the length and its borrowed twiddle table (see the
/// [module docs](self)). `Copy`, `Send + Sync`; build it once and share it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RealFft<'a> {
    n: usize,
    twiddles: &'a [f32],
}

impl<'a> RealFft<'a> {
    /// A length-`n` transform using `twiddles` (from [`twiddles`] or [`fill_twiddles`];
    /// another table of the right length gives wrong spectra, never unsafety).
    ///
    /// # Errors
    /// [`Error::Shape`] (geometry) when `n` is not a power of two in
    /// [`MIN_LEN`]`..=`[`MAX_LEN`]; [`Error::Length`] when `twiddles.len()` is not
    /// [`twiddle_len`]`(n)`.
    pub const fn new(n: usize, twiddles: &'a [f32]) -> Result<Self, Error> {
        if !is_valid_len(n) {
            return Err(Error::Shape(ShapeError::Geometry {
                op: "rfft",
                reason: "length must be a power of two in 16..=65536",
            }));
        }
        let expected = twiddle_len(n);
        if twiddles.len() != expected {
            return Err(Error::Length { what: "rfft twiddles", expected, got: twiddles.len() });
        }
        Ok(RealFft { n, twiddles })
    }

    /// Transform length `n` (real input samples).
    pub const fn len(&self) -> usize {
        self.n
    }

    /// Always false (lengths are at least [`MIN_LEN`]); for clippy's `len` convention.
    pub const fn is_empty(&self) -> bool {
        false
    }

    /// Number of output bins, `n/2 + 1`.
    pub const fn bins(&self) -> usize {
        self.n / 2 + 1
    }

    /// Length of the split spectrum `[2, n/2 + 1]`: `n + 2`.
    pub const fn spectrum_len(&self) -> usize {
        self.n + 2
    }

    /// The twiddle table.
    pub const fn twiddle_table(&self) -> &'a [f32] {
        self.twiddles
    }

    /// Stage twiddles of half-span `h`: `(cos, sin)`, `h` values each.
    #[inline(always)]
    fn stage(&self, h: usize) -> (&'a [f32], &'a [f32]) {
        let t = &self.twiddles[2 * h - 2..4 * h - 2];
        t.split_at(h)
    }

    /// Post-processing twiddles: `(cos, sin)` of `2 pi k / n`, `k < n/4`.
    #[inline(always)]
    fn post(&self) -> (&'a [f32], &'a [f32]) {
        let m = self.n / 2;
        self.twiddles[2 * m - 2..].split_at(m / 2)
    }
}

/// Real-FFT kernels. Shapes: input `[n]`, split spectrum `[2, n/2 + 1]` (real parts, then
/// imaginary parts), power spectrum `[n/2 + 1]`. See the [module docs](self) for the
/// definition, the algorithm and the error bound.
pub trait FftKernels: BackendType {
    /// Forward real FFT of `x` (`[n]`) into the split spectrum `spectrum` (`[2, n/2 + 1]`).
    ///
    /// # Panics
    /// When `x.len() != n` or `spectrum.len() != n + 2`.
    fn rfft(fft: &RealFft<'_>, x: &[f32], spectrum: &mut [f32]) {
        portable_rfft(fft, x, spectrum)
    }

    /// Power spectrum of a split spectrum: `power[k] = re[k]^2 + im[k]^2` for a `[2, bins]`
    /// `spectrum` and a `[bins]` `power`.
    ///
    /// # Panics
    /// When `spectrum.len() != 2 * power.len()`.
    fn power_spectrum(spectrum: &[f32], power: &mut [f32]) {
        let k = power.len();
        assert_eq!(spectrum.len(), 2 * k, "power_spectrum: spectrum length is not 2 * bins");
        let (re, im) = spectrum.split_at(k);
        for ((p, &a), &b) in power.iter_mut().zip(re).zip(im) {
            *p = a * a + b * b;
        }
    }

    /// [`rfft`](Self::rfft) into `scratch` (`[2, n/2 + 1]`), then
    /// [`power_spectrum`](Self::power_spectrum) into `power` (`[n/2 + 1]`).
    ///
    /// # Panics
    /// When `x.len() != n`, `scratch.len() != n + 2` or `power.len() != n/2 + 1`.
    fn rfft_power(fft: &RealFft<'_>, x: &[f32], scratch: &mut [f32], power: &mut [f32]) {
        assert_eq!(power.len(), fft.bins(), "rfft_power: power length is not n/2 + 1");
        Self::rfft(fft, x, scratch);
        Self::power_spectrum(scratch, power);
    }
}

fn check(fft: &RealFft<'_>, x: &[f32], spectrum: &[f32]) {
    assert_eq!(x.len(), fft.n, "rfft: input length is not n");
    assert_eq!(spectrum.len(), fft.n + 2, "rfft: spectrum length is not n + 2");
}

/// Reverses the low `bits` bits of `i`.
#[inline(always)]
fn rev(i: usize, bits: u32) -> usize {
    if bits == 0 {
        0
    } else {
        i.reverse_bits() >> (usize::BITS - bits)
    }
}

/// Step 1, portable: load `z[j] = x[2j] + i x[2j+1]`, radix-4 on `z[b + s m/4]`, store at
/// `4 rev(b) + r` (see the module docs). `re`, `im`: the first `m` entries of each row.
fn portable_first_pass(x: &[f32], re: &mut [f32], im: &mut [f32], m: usize) {
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
fn portable_radix2(re: &mut [f32], im: &mut [f32], c: &[f32], s: &[f32]) {
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
fn portable_radix22(
    re: &mut [f32],
    im: &mut [f32],
    c1: &[f32],
    s1: &[f32],
    c2: &[f32],
    s2: &[f32],
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

/// Runs the radix-2 stages `h = 4, ..., m/2` through `radix2` / `radix22` (pairs fused;
/// a lone radix-2 stage first when the count is odd).
#[inline(always)]
fn stages(
    fft: &RealFft<'_>,
    re: &mut [f32],
    im: &mut [f32],
    radix2: impl Fn(&mut [f32], &mut [f32], &[f32], &[f32]),
    radix22: impl Fn(&mut [f32], &mut [f32], &[f32], &[f32], &[f32], &[f32]),
) {
    let m = fft.n / 2;
    let count = m.trailing_zeros() - 2; // stages h = 4 .. m/2
    let mut h = 4;
    if count % 2 == 1 {
        let (c, s) = fft.stage(h);
        radix2(re, im, c, s);
        h *= 2;
    }
    while h < m {
        let (c1, s1) = fft.stage(h);
        let (c2, s2) = fft.stage(2 * h);
        radix22(re, im, c1, s1, c2, s2);
        h *= 4;
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
fn portable_post(fft: &RealFft<'_>, re: &mut [f32], im: &mut [f32]) {
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

fn portable_rfft(fft: &RealFft<'_>, x: &[f32], spectrum: &mut [f32]) {
    check(fft, x, spectrum);
    let m = fft.n / 2;
    let (re, im) = spectrum.split_at_mut(m + 1);
    portable_first_pass(x, &mut re[..m], &mut im[..m], m);
    stages(fft, &mut re[..m], &mut im[..m], portable_radix2, portable_radix22);
    portable_post(fft, re, im);
}

impl FftKernels for Portable {}

impl<I: X86Isa> FftKernels for X86<I> {}

#[cfg(all(target_arch = "aarch64", feature = "neon"))]
mod neon_impl {
    //! NEON forms of the three steps. Every function works on raw pointers into the
    //! spectrum buffer; the bounds each one relies on are established by `rfft` (which
    //! checks the slice lengths) and stated at each `unsafe` block.
    use super::super::Neon;
    use super::{check, portable_rfft, rev, stages, FftKernels, RealFft};
    use core::arch::aarch64::*;

    /// Complex product `(c - i s)(br + i bi)`: `(c br + s bi, c bi - s br)`.
    #[inline(always)]
    fn cmul(
        c: float32x4_t,
        s: float32x4_t,
        br: float32x4_t,
        bi: float32x4_t,
    ) -> (float32x4_t, float32x4_t) {
        // SAFETY: register-only NEON arithmetic; NEON is statically enabled (kernels/mod.rs).
        unsafe { (vfmaq_f32(vmulq_f32(c, br), s, bi), vfmsq_f32(vmulq_f32(c, bi), s, br)) }
    }

    /// 4x4 transpose: rows `(a, b, c, d)` -> columns.
    #[inline(always)]
    fn transpose(
        a: float32x4_t,
        b: float32x4_t,
        c: float32x4_t,
        d: float32x4_t,
    ) -> [float32x4_t; 4] {
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
    fn radix2(re: &mut [f32], im: &mut [f32], c: &[f32], s: &[f32]) {
        let h = c.len();
        let len = re.len();
        assert!(
            h.is_multiple_of(4) && len.is_multiple_of(2 * h) && im.len() == len && s.len() == h
        );
        let (re, im) = (re.as_mut_ptr(), im.as_mut_ptr());
        let mut g = 0;
        while g < len {
            let mut j = 0;
            while j < h {
                // SAFETY: g + h + j + 3 < g + 2h <= len, and j + 3 < h (asserted above:
                // h % 4 == 0, len % 2h == 0): all accesses are in bounds.
                unsafe {
                    let (c, s) = (vld1q_f32(c.as_ptr().add(j)), vld1q_f32(s.as_ptr().add(j)));
                    let pa = g + j;
                    let pb = pa + h;
                    let (tr, ti) = cmul(c, s, vld1q_f32(re.add(pb)), vld1q_f32(im.add(pb)));
                    let (ar, ai) = (vld1q_f32(re.add(pa)), vld1q_f32(im.add(pa)));
                    vst1q_f32(re.add(pa), vaddq_f32(ar, tr));
                    vst1q_f32(im.add(pa), vaddq_f32(ai, ti));
                    vst1q_f32(re.add(pb), vsubq_f32(ar, tr));
                    vst1q_f32(im.add(pb), vsubq_f32(ai, ti));
                }
                j += 4;
            }
            g += 2 * h;
        }
    }

    /// Radix-2^2 pass (stages `h` and `2h`, `h` a multiple of 4).
    fn radix22(re: &mut [f32], im: &mut [f32], c1: &[f32], s1: &[f32], c2: &[f32], s2: &[f32]) {
        let h = c1.len();
        let len = re.len();
        assert!(h.is_multiple_of(4) && len.is_multiple_of(4 * h) && im.len() == len);
        assert!(s1.len() == h && c2.len() >= h && s2.len() >= h);
        let (re, im) = (re.as_mut_ptr(), im.as_mut_ptr());
        let mut g = 0;
        while g < len {
            let mut j = 0;
            while j < h {
                // SAFETY: g + 3h + j + 3 < g + 4h <= len and j + 3 < h (asserted above),
                // so every load and store is in bounds; the twiddle loads read j..j+4 < h.
                unsafe {
                    let w1c = vld1q_f32(c1.as_ptr().add(j));
                    let w1s = vld1q_f32(s1.as_ptr().add(j));
                    let w2c = vld1q_f32(c2.as_ptr().add(j));
                    let w2s = vld1q_f32(s2.as_ptr().add(j));
                    let pa = g + j;
                    let (pb, pc, pd) = (pa + h, pa + 2 * h, pa + 3 * h);
                    let (t1r, t1i) = cmul(w1c, w1s, vld1q_f32(re.add(pb)), vld1q_f32(im.add(pb)));
                    let (t2r, t2i) = cmul(w1c, w1s, vld1q_f32(re.add(pd)), vld1q_f32(im.add(pd)));
                    let (ar, ai) = (vld1q_f32(re.add(pa)), vld1q_f32(im.add(pa)));
                    let (cr, ci) = (vld1q_f32(re.add(pc)), vld1q_f32(im.add(pc)));
                    let (a1r, a1i) = (vaddq_f32(ar, t1r), vaddq_f32(ai, t1i));
                    let (b1r, b1i) = (vsubq_f32(ar, t1r), vsubq_f32(ai, t1i));
                    let (c1r, c1i) = (vaddq_f32(cr, t2r), vaddq_f32(ci, t2i));
                    let (d1r, d1i) = (vsubq_f32(cr, t2r), vsubq_f32(ci, t2i));
                    let (u1r, u1i) = cmul(w2c, w2s, c1r, c1i);
                    let (u2r, u2i) = cmul(w2c, w2s, d1r, d1i);
                    vst1q_f32(re.add(pa), vaddq_f32(a1r, u1r));
                    vst1q_f32(im.add(pa), vaddq_f32(a1i, u1i));
                    vst1q_f32(re.add(pc), vsubq_f32(a1r, u1r));
                    vst1q_f32(im.add(pc), vsubq_f32(a1i, u1i));
                    vst1q_f32(re.add(pb), vaddq_f32(b1r, u2i));
                    vst1q_f32(im.add(pb), vsubq_f32(b1i, u2r));
                    vst1q_f32(re.add(pd), vsubq_f32(b1r, u2i));
                    vst1q_f32(im.add(pd), vaddq_f32(b1i, u2r));
                }
                j += 4;
            }
            g += 4 * h;
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
        fn rfft(fft: &RealFft<'_>, x: &[f32], spectrum: &mut [f32]) {
            let m = fft.n / 2;
            if m < 16 {
                return portable_rfft(fft, x, spectrum);
            }
            check(fft, x, spectrum);
            let (re, im) = spectrum.split_at_mut(m + 1);
            // SAFETY: x has 2m floats, re and im have m + 1 >= m each (checked above), the
            // spectrum does not alias x (& vs &mut), m is a power of two >= 16.
            unsafe { first_pass(x.as_ptr(), re.as_mut_ptr(), im.as_mut_ptr(), m) };
            stages(fft, &mut re[..m], &mut im[..m], radix2, radix22);
            post(fft, re, im);
        }

        fn power_spectrum(spectrum: &[f32], power: &mut [f32]) {
            let k = power.len();
            assert_eq!(spectrum.len(), 2 * k, "power_spectrum: spectrum length is not 2 * bins");
            let (re, im) = spectrum.split_at(k);
            let mut i = 0;
            while i + 4 <= k {
                // SAFETY: i + 4 <= k = re.len() = im.len() = power.len().
                unsafe {
                    let a = vld1q_f32(re.as_ptr().add(i));
                    let b = vld1q_f32(im.as_ptr().add(i));
                    vst1q_f32(power.as_mut_ptr().add(i), vfmaq_f32(vmulq_f32(a, a), b, b));
                }
                i += 4;
            }
            if i < k {
                // Partial vector through stack buffers (padding lanes are 0 and dropped).
                let n = k - i;
                let (mut a, mut b) = ([0.0f32; 4], [0.0f32; 4]);
                a[..n].copy_from_slice(&re[i..]);
                b[..n].copy_from_slice(&im[i..]);
                // SAFETY: a and b hold 4 floats each.
                unsafe {
                    let (va, vb) = (vld1q_f32(a.as_ptr()), vld1q_f32(b.as_ptr()));
                    vst1q_f32(a.as_mut_ptr(), vfmaq_f32(vmulq_f32(va, va), vb, vb));
                }
                power[i..].copy_from_slice(&a[..n]);
            }
        }
    }
}
