//! Real FFT (power-of-two lengths), its inverse, and power and magnitude spectra.
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
//! (its radix-2 loops vectorise, `portable.rs`), `Neon` is written with `float32x4_t`
//! intrinsics (`neon.rs`); NEON fuses multiply-adds (`fmla`/`fmls`), so the two agree to
//! rounding (see below), not bitwise. `X86<I>` runs step 1, the inverse transform's steps 1
//! and 3 and the magnitudes of a split spectrum with SSE (`x86.rs`, no FMA: the portable
//! code's bits), the rest with the portable code; those three steps are one generic
//! four-lane code for NEON and SSE (`simd.rs`). The order of the
//! steps, the pairing of the stages and the checks are shared ([`FftKernels::rfft`]); a
//! backend provides the steps (the hooks [`FftKernels::rfft_first_pass`],
//! [`FftKernels::rfft_radix2`], [`FftKernels::rfft_radix22`], [`FftKernels::rfft_post`]).
//! `n = 16` (`m = 8`, too small for four-wide vectors in step 1) runs the portable steps on
//! every backend.
//!
//! # Inverse transform
//! [`FftKernels::irfft`] maps a split half-spectrum `[2, n/2 + 1]` back to `n` reals:
//!
//! `x[j] = (1/n) sum_{k=0}^{n-1} X[k] exp(+2 pi i j k / n)`, `j = 0..n`,
//!
//! with the bins above `n/2` taken as `X[n-k] = conj X[k]` and `Im X[0]`, `Im X[n/2]` read
//! as 0 whatever the buffer holds (numpy's `irfft` with its default normalisation, which
//! ignores those two imaginary parts the same way). It inverts [`FftKernels::rfft`] up to
//! rounding. The algorithm runs the forward steps backwards around the same complex FFT
//! and the same twiddle table:
//!
//! 1. **Pre-processing** (the inverse of step 3): for each pair `(k, m - k)`,
//!    `E[k] = (X[k] + conj X[m-k]) / 2` and `O[k] = (X[k] - conj X[m-k]) conj(w^k) / 2`
//!    (the DFTs of the even and odd samples), `Z[k] = E[k] + i O[k]`,
//!    `Z[m-k] = conj E[k] + i conj O[k]`, each scaled by `1/m` (so the factor is `1/n`
//!    where the forward step has `1/2`); `Z[m/2] = 2 conj X[m/2] / n`. The result is written
//!    into the output buffer `x` as interleaved complex values with real and imaginary parts
//!    **swapped** (`x[2k] = Im Z[k]`, `x[2k+1] = Re Z[k]`).
//! 2. **The forward complex FFT** of those `m` values (step 1 and 2 above, unchanged:
//!    `x` is their input, the spectrum buffer their output). Swapping real and imaginary
//!    parts before and after a forward DFT gives the unnormalised inverse DFT
//!    (`swap(v) = i conj v`, so `DFT(swap Y) = swap(IDFT(Y))`), so `z = IDFT_m(Z)` is the
//!    swapped FFT output.
//! 3. **Interleave**: `x[2j] = Re z[j]`, `x[2j+1] = Im z[j]`, i.e. the FFT's imaginary row
//!    then its real row, interleaved (NEON: one `st2` per four `j`).
//!
//! The spectrum buffer is the work area of step 2, so `irfft` takes it `&mut` and leaves
//! it holding intermediate values; no other scratch is needed. NEON runs steps 1 and 3 four
//! `k` (`j`) at a time (step 1 with the mirrored block lane-reversed, as in step 3 of the
//! forward transform); `n = 16` runs the portable steps on every backend, as forward.
//! The error bound is the forward one (the same butterflies and twiddles, run once), taken
//! relative to `||x||_2 = ||X_full||_2 / sqrt n`; measured errors are in the table below.
//!
//! # Twiddle tables (no allocation)
//! A transform is described by a [`RealFft`]: the length and a borrowed table of
//! [`twiddle_len`]`(n) = 3n/2 - 2` f32 values, laid out as follows (`m = n/2`):
//! for each stage half-span `h = 1, 2, 4, ..., m/2` a block of `2h` values at offset
//! `2h - 2`, `cos(pi j / h)` for `j < h` then `sin(pi j / h)` for `j < h` (the stage
//! twiddle is `cos - i sin`); then, at offset `2m - 2`, `cos(2 pi k / n)` for `k < m/2`
//! followed by `sin(2 pi k / n)` for `k < m/2` (post-processing). The table comes from
//! [`twiddles()`], a `const fn`, so it can live in a `static` and cost nothing at run time:
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
//! Measured against an f64 FFT on uniform random inputs in `[-1, 1)` (worst of 20 inputs
//! per length; `tests/fft_accuracy.rs`, `cargo test -p neon-runtime --test fft_accuracy --
//! --ignored --nocapture`), norm-wise relative error, next to `rustfft`'s own f32 FFT on the
//! same inputs:
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
//! The inverse transform, measured against a direct f64 inverse DFT on the spectra of
//! uniform random inputs in `[-1, 1)` (worst of 20 per length; `tests/irfft.rs`,
//! `cargo test --test irfft -- --ignored --nocapture`), norm-wise relative error of `x`,
//! asserted against the same bound as the forward transform:
//!
//! | n    | portable | NEON (qemu) | asserted bound |
//! |------|----------|-------------|----------------|
//! | 16   | 7.8e-8   | 7.8e-8      | 1.7e-6         |
//! | 64   | 1.03e-7  | 1.01e-7     | 2.5e-6         |
//! | 512  | 1.24e-7  | 1.16e-7     | 3.8e-6         |
//! | 1024 | 1.25e-7  | 1.17e-7     | 4.2e-6         |
//! | 4096 | 1.36e-7  | -           | 5.0e-6         |
//!
//! i.e. 1.3 to 2.3 `u`, the forward transform's figures.
//!
//! # Cost
//! Per transform of `n = 2m` reals: one pass that loads the input and does two stages,
//! `ceil((log2 m - 2) / 2)` radix-2^2 / radix-2 passes over `2m` floats, and one
//! post-processing pass; every pass is four-wide on NEON. No scratch, no allocation. The
//! NEON transform has no scalar floating point: every butterfly runs on `float32x4_t`.
//! Instruction counts against `realfft` and the NEON instruction mix: `BENCHMARKS.md`
//! ("Results", the real-FFT rows).

use super::{BackendType, Portable};
use crate::error::{Error, ShapeError};

#[cfg(all(target_arch = "aarch64", feature = "neon"))]
mod neon;
mod portable;
#[cfg(any(all(target_arch = "aarch64", feature = "neon"), neon_x86))]
mod simd;
mod twiddles;
mod x86;

/// A vector of four `f32` lanes and its unaligned load and store: what [`map_pairs`] needs
/// of a backend.
#[cfg(any(all(target_arch = "aarch64", feature = "neon"), neon_x86))]
trait Lanes4: Copy {
    /// Loads 4 floats from `p`.
    ///
    /// # Safety
    /// `p` is readable for 4 floats.
    unsafe fn load(p: *const f32) -> Self;
    /// Stores the 4 lanes at `p`.
    ///
    /// # Safety
    /// `p` is writable for 4 floats.
    unsafe fn store(p: *mut f32, v: Self);
}

/// `out[i] = step(re[i], im[i])`, four lanes at a time; the last partial vector goes through
/// stack buffers (padding lanes are 0 and dropped), so every element is computed by the same
/// instructions wherever it sits. The vector drivers of the NEON and x86 backends.
///
/// # Safety
/// `re`, `im` and `out` have the same length.
#[cfg(any(all(target_arch = "aarch64", feature = "neon"), neon_x86))]
#[inline(always)]
unsafe fn map_pairs<V: Lanes4>(re: &[f32], im: &[f32], out: &mut [f32], step: impl Fn(V, V) -> V) {
    let k = out.len();
    let mut i = 0;
    while i + 4 <= k {
        // SAFETY: i + 4 <= k = re.len() = im.len() = out.len() (the caller's contract).
        unsafe {
            let a = V::load(re.as_ptr().add(i));
            let b = V::load(im.as_ptr().add(i));
            V::store(out.as_mut_ptr().add(i), step(a, b));
        }
        i += 4;
    }
    if i < k {
        let n = k - i;
        let (mut a, mut b) = ([0.0f32; 4], [0.0f32; 4]);
        a[..n].copy_from_slice(&re[i..]);
        b[..n].copy_from_slice(&im[i..]);
        // SAFETY: a and b hold 4 floats each.
        unsafe {
            let (va, vb) = (V::load(a.as_ptr()), V::load(b.as_ptr()));
            V::store(a.as_mut_ptr(), step(va, vb));
        }
        out[i..].copy_from_slice(&a[..n]);
    }
}

pub use twiddles::{
    fill_twiddles, is_valid_len, sin_cos_turns, twiddle_len, twiddles, MAX_LEN, MIN_LEN,
};

/// The twiddles of one stage of half-span `h`: `(cos, sin)` of `pi j / h`, `j < h` (the
/// stage twiddle is `cos - i sin`), borrowed from a [`RealFft`]'s table.
pub type Twiddles<'a> = (&'a [f32], &'a [f32]);

/// A real FFT of one length: the length and its borrowed twiddle table (see the
/// [module docs](self)). `Copy`, `Send + Sync`; build it once and share it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RealFft<'a> {
    n: usize,
    twiddles: &'a [f32],
}

impl<'a> RealFft<'a> {
    /// A length-`n` transform using `twiddles` (from [`twiddles()`] or [`fill_twiddles`];
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
    fn stage(&self, h: usize) -> Twiddles<'a> {
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
/// imaginary parts), power and magnitude spectra `[n/2 + 1]`. See the [module docs](self) for the
/// definition, the algorithm and the error bound.
///
/// [`rfft`](Self::rfft), [`power_spectrum`](Self::power_spectrum),
/// [`magnitude_spectrum`](Self::magnitude_spectrum) and [`rfft_power`](Self::rfft_power) are
/// the entry points: they check the lengths and run the
/// steps of the algorithm through the hooks (the remaining methods). Backends override
/// hooks only, never an entry point; the hooks' defaults are the portable code. The hooks
/// see `n >= 32` (a length-16 transform runs [`Portable`]'s hooks on every backend).
pub trait FftKernels: BackendType {
    /// Forward real FFT of `x` (`[n]`) into the split spectrum `spectrum` (`[2, n/2 + 1]`).
    ///
    /// # Panics
    /// When `x.len() != n` or `spectrum.len() != n + 2`.
    fn rfft(fft: &RealFft<'_>, x: &[f32], spectrum: &mut [f32]) {
        check(fft, x, spectrum);
        if fft.n == MIN_LEN {
            // m = 8: too small for the four-wide vectors of step 1 (see the module docs).
            rfft_steps::<Portable>(fft, x, spectrum)
        } else {
            rfft_steps::<Self>(fft, x, spectrum)
        }
    }

    /// Power spectrum of a split spectrum: `power[k] = re[k]^2 + im[k]^2` for a `[2, bins]`
    /// `spectrum` and a `[bins]` `power`.
    ///
    /// # Panics
    /// When `spectrum.len() != 2 * power.len()`.
    fn power_spectrum(spectrum: &[f32], power: &mut [f32]) {
        if let Some((re, im)) = split_spectrum("power_spectrum", spectrum, power.len()) {
            // SAFETY: `re`, `im` and `power` all hold `power.len()` values (checked).
            unsafe { Self::power_spectrum_unchecked(re, im, power) }
        }
    }

    /// Magnitudes of a split spectrum: `magnitude[k] = sqrt(re[k]^2 + im[k]^2)` for a
    /// `[2, bins]` `spectrum` and a `[bins]` `magnitude`, in f32 in the order of ONNX
    /// Runtime's `Pow`, `Pow`, `Add`, `Sqrt`: both squares rounded, their sum rounded (no
    /// fused multiply-add), then the correctly rounded square root, so every backend gives
    /// the same bits. Any `[2, len]` pair of real and imaginary rows works (e.g. `[2C, T]`
    /// channel-first: the first `C * T` values are the real parts).
    ///
    /// # Panics
    /// When `spectrum.len() != 2 * magnitude.len()`.
    fn magnitude_spectrum(spectrum: &[f32], magnitude: &mut [f32]) {
        if let Some((re, im)) = split_spectrum("magnitude_spectrum", spectrum, magnitude.len()) {
            // SAFETY: `re`, `im` and `magnitude` all hold `magnitude.len()` values (checked).
            unsafe { Self::magnitude_spectrum_unchecked(re, im, magnitude) }
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

    /// Inverse real FFT of the split half-spectrum `spectrum` (`[2, n/2 + 1]`) into `x`
    /// (`[n]`), normalised by `1/n`, `Im X[0]` and `Im X[n/2]` ignored (see the
    /// [module docs](self)). `spectrum` is the work area: it holds intermediate values on
    /// return.
    ///
    /// # Panics
    /// When `x.len() != n` or `spectrum.len() != n + 2`.
    fn irfft(fft: &RealFft<'_>, spectrum: &mut [f32], x: &mut [f32]) {
        assert_eq!(x.len(), fft.n, "irfft: output length is not n");
        assert_eq!(spectrum.len(), fft.n + 2, "irfft: spectrum length is not n + 2");
        if fft.n == MIN_LEN {
            irfft_steps::<Portable>(fft, spectrum, x)
        } else {
            irfft_steps::<Self>(fft, spectrum, x)
        }
    }

    /// Hook, inverse step 1 (see the module docs): from the full rows `re` and `im` of a
    /// spectrum (`m + 1` entries each) writes `Z / m` into `x` (`[2m]`) as interleaved
    /// complex values with real and imaginary parts swapped.
    ///
    /// # Safety
    /// `re.len() == im.len() == m + 1` and `x.len() == 2 * m`, with `m` a power of two
    /// `>= 16` (`>= 8` for [`Portable`]): [`irfft`](Self::irfft) checks it.
    #[inline(always)]
    unsafe fn irfft_pre(fft: &RealFft<'_>, re: &[f32], im: &[f32], x: &mut [f32]) {
        portable::inverse_pre(fft, re, im, x)
    }

    /// Hook, inverse step 3: `x[2j] = im[j]`, `x[2j+1] = re[j]` for `j < m`.
    ///
    /// # Safety
    /// `re.len() == im.len() == m` and `x.len() == 2 * m`, with `m` a power of two `>= 16`
    /// (`>= 8` for [`Portable`]): [`irfft`](Self::irfft) checks it.
    #[inline(always)]
    unsafe fn irfft_interleave(re: &[f32], im: &[f32], x: &mut [f32]) {
        portable::interleave_swapped(re, im, x)
    }

    /// Hook, step 1 (see the module docs): loads `z[j] = x[2j] + i x[2j+1]`, does the first
    /// two radix-2 stages as one radix-4 pass and stores the results in bit-reversed order
    /// into `re` and `im`, the first `m = n/2` entries of the spectrum's rows.
    ///
    /// # Safety
    /// `re.len() == im.len() == m` with `m` a power of two `>= 16` (`>= 8` for
    /// [`Portable`]), and `x.len() == 2 * m`: [`rfft`](Self::rfft) checks it.
    #[inline(always)]
    unsafe fn rfft_first_pass(x: &[f32], re: &mut [f32], im: &mut [f32]) {
        portable::first_pass(x, re, im)
    }

    /// Hook, step 2: one radix-2 DIT stage of half-span `h` over the `m` complex values
    /// `(re, im)`, with the stage's [`Twiddles`] `w = (c, s)` (`h` values each).
    #[inline(always)]
    fn rfft_radix2(re: &mut [f32], im: &mut [f32], w: Twiddles<'_>) {
        portable::radix2(re, im, w)
    }

    /// Hook, step 2: one radix-2^2 pass, stages `h` (twiddles `w1`, `h` values each) and
    /// `2h` (`w2`, `2h` values; only the first `h` are read, the odd one is `-i` times the
    /// even one).
    #[inline(always)]
    fn rfft_radix22(re: &mut [f32], im: &mut [f32], w1: Twiddles<'_>, w2: Twiddles<'_>) {
        portable::radix22(re, im, w1, w2)
    }

    /// Hook, step 3: the post-processing of the pairs `(k, m - k)` over the full rows `re`
    /// and `im` (`m + 1` entries each), which turns `Z = DFT_m(z)` into the spectrum.
    #[inline(always)]
    fn rfft_post(fft: &RealFft<'_>, re: &mut [f32], im: &mut [f32]) {
        portable::post(fft, re, im)
    }

    /// Hook: `power[k] = re[k]^2 + im[k]^2`.
    ///
    /// # Safety
    /// `re`, `im` and `power` have the same length, at least 1: [`power_spectrum`](Self::power_spectrum)
    /// checks it.
    unsafe fn power_spectrum_unchecked(re: &[f32], im: &[f32], power: &mut [f32]) {
        portable::power_spectrum(re, im, power)
    }

    /// Hook: `magnitude[k] = sqrt(re[k] * re[k] + im[k] * im[k])`, each operation rounded
    /// (default: the portable code, whose square root is the software
    /// [`sqrt_f32`](crate::kernels::norm::sqrt_f32): `core` has none).
    ///
    /// # Safety
    /// `re`, `im` and `magnitude` have the same length, at least 1:
    /// [`magnitude_spectrum`](Self::magnitude_spectrum) checks it.
    unsafe fn magnitude_spectrum_unchecked(re: &[f32], im: &[f32], magnitude: &mut [f32]) {
        portable::magnitude_spectrum(re, im, magnitude)
    }
}

/// The real and imaginary rows of a `[2, bins]` `spectrum`; `None` when `bins` is 0.
///
/// # Panics
/// When `spectrum.len() != 2 * bins`, naming `what`.
fn split_spectrum<'a>(
    what: &str,
    spectrum: &'a [f32],
    bins: usize,
) -> Option<(&'a [f32], &'a [f32])> {
    assert_eq!(spectrum.len(), 2 * bins, "{what}: spectrum length is not 2 * bins");
    (bins > 0).then(|| spectrum.split_at(bins))
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

/// The three steps of a checked transform with the hooks of `B` (see the module docs).
#[inline(always)]
fn rfft_steps<B: FftKernels>(fft: &RealFft<'_>, x: &[f32], spectrum: &mut [f32]) {
    let m = fft.n / 2;
    let (re, im) = spectrum.split_at_mut(m + 1);
    // SAFETY: `check` made `x.len() == n = 2m` and `spectrum.len() == n + 2`, so `re` and
    // `im` hold `m + 1` values each; `m` is a power of two >= 8, >= 16 unless `B` is
    // `Portable` (see `rfft`).
    unsafe { B::rfft_first_pass(x, &mut re[..m], &mut im[..m]) };
    stages::<B>(fft, &mut re[..m], &mut im[..m]);
    B::rfft_post(fft, re, im);
}

/// The three steps of a checked inverse transform with the hooks of `B` (module docs).
#[inline(always)]
fn irfft_steps<B: FftKernels>(fft: &RealFft<'_>, spectrum: &mut [f32], x: &mut [f32]) {
    let m = fft.n / 2;
    let (re, im) = spectrum.split_at_mut(m + 1);
    // SAFETY: `irfft` checked `x.len() == n = 2m` and `spectrum.len() == n + 2`, so `re`
    // and `im` hold `m + 1` values each; `m` is a power of two >= 8, >= 16 unless `B` is
    // `Portable` (see `irfft`).
    unsafe { B::irfft_pre(fft, re, im, x) };
    // SAFETY: as above; `x` (read) and the spectrum rows (written) are distinct buffers.
    unsafe { B::rfft_first_pass(x, &mut re[..m], &mut im[..m]) };
    stages::<B>(fft, &mut re[..m], &mut im[..m]);
    // SAFETY: as above.
    unsafe { B::irfft_interleave(&re[..m], &im[..m], x) };
}

/// Runs the radix-2 stages `h = 4, ..., m/2` through `radix2` / `radix22` (pairs fused;
/// a lone radix-2 stage first when the count is odd).
#[inline(always)]
fn stages<B: FftKernels>(fft: &RealFft<'_>, re: &mut [f32], im: &mut [f32]) {
    let m = fft.n / 2;
    let count = m.trailing_zeros() - 2; // stages h = 4 .. m/2
    let mut h = 4;
    if count % 2 == 1 {
        B::rfft_radix2(re, im, fft.stage(h));
        h *= 2;
    }
    while h < m {
        B::rfft_radix22(re, im, fft.stage(h), fft.stage(2 * h));
        h *= 4;
    }
}

impl FftKernels for Portable {}
