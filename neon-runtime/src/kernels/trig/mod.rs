//! Sine and cosine over slices ([`TrigKernels::sin_cos`]) and the conversion of
//! log-magnitude / phase pairs to Cartesian complex values ([`TrigKernels::from_log_polar`],
//! the first step of an iSTFT head), for `f32` slices of any length.
//!
//! Files: this one holds the definitions, the constants and the trait; `portable.rs` the
//! scalar forms (branch-free, so the slice loops vectorise) and the portable drivers;
//! `neon.rs` the `float32x4_t` forms. [`Portable`] and `Neon` run the same algorithm with
//! the same constants; NEON fuses multiply-adds (`fmla`/`fmls`, one rounding where the
//! portable code rounds twice), and its quadrant choice `round(x 2/pi)` is computed with
//! one rounding instead of two, so near a quadrant boundary the two backends may reduce to
//! neighbouring quadrants (both reductions are exact up to the bound below). `X86<I>` runs
//! the portable code, `from_log_polar` compiled for its level (`x86.rs`: the same bits).
//!
//! # Algorithm
//! - **Range reduction** (Cody & Waite, *Software Manual for the Elementary Functions*,
//!   1980): `n = round(x 2/pi)` by the `1.5 * 2^23` rounding trick (valid for
//!   `|x 2/pi| < 2^22`; `n mod 4` is then the low two bits of the sum, no float-to-int
//!   conversion), and `r = x - n pi/2` with `pi/2` split into three f32 parts:
//!   [`consts::PIO2_HI`] `= 1.5703125` (8 significant bits: `n PIO2_HI` is exact for
//!   `|n| < 2^16`), [`consts::PIO2_MID`] (11 bits: `n PIO2_MID` exact for `|n| < 2^13`)
//!   and [`consts::PIO2_LO`] (the rest, rounded to f32; `pi/2 - HI - MID - LO` is below
//!   `2e-15`). The first subtraction is exact (Sterbenz: `x` and `n PIO2_HI` are within a
//!   factor 2), the second has an exact product and a result below `pi/4 + 4e-4` in size,
//!   so `r` carries a few rounding errors of a number of size `pi/4`, for every
//!   `|x| <= `[`SIN_COS_MAX`] (`|n| <= 5216`). `|r|` exceeds `pi/4` at most by the
//!   rounding of `x 2/pi` (a few `1e-7`), where the polynomials are still accurate.
//! - **Polynomials**: the Taylor polynomials `sin r ~= r + r^3 S(r^2)` of degree 9 and
//!   `cos r ~= 1 + r^2 C(r^2)` of degree 10, with the coefficients `(-1)^k / (2k+1)!` and
//!   `(-1)^k / (2k)!` rounded to f32 (truncation errors below `(pi/4)^11 / 11! = 1.8e-9` and
//!   `(pi/4)^12 / 12! = 1.2e-10`), Horner form.
//! - **Quadrant**: `(sin x, cos x)` is `(s, c)`, `(c, -s)`, `(-s, -c)`, `(-c, s)` for
//!   `n mod 4 = 0, 1, 2, 3`: a select and two sign flips (`xor` of the sign bit), no
//!   branch.
//!
//! # Range, special values
//! The accuracy below holds for `|x| <= `[`SIN_COS_MAX`] `= 8192`. Beyond it the reduction
//! loses exactness gradually (portable: below `1e-6` at `|x| = 1e5`, see the figures
//! below), and from `|x| >= 2^22 pi/2` (6.6e6) the rounding trick fails
//! and the results are meaningless (finite for finite `x`). NaN and `+-inf` give NaN. A
//! phase in radians from a model's head sits far inside the accurate range. `sin(+-0) = +0`
//! and `cos(+-0) = 1` exactly (the sign of a zero is not kept: `r + r^3 S(r^2)` adds `+0`
//! to `-0`); tiny `|x|` (below `1e-19`) give `sin x = x` exactly.
//!
//! # Measured accuracy
//! Against `std`'s f64 `sin` / `cos` of the same f32 input (`tests/trig.rs`; `cargo test
//! --test trig -- --ignored --nocapture` measures again): every f32 in `[-2 pi, 2 pi]` with
//! a stride of 7 bit patterns (host; 97 under qemu-aarch64) on each sign, plus a uniform
//! grid of step `1e-4` on `[-SIN_COS_MAX, SIN_COS_MAX]` (host; `1e-2` under qemu), worst
//! of both backends:
//!
//! | backend      | sweep                             | sin max abs | cos max abs |
//! |--------------|-----------------------------------|-------------|-------------|
//! | portable     | `[-2 pi, 2 pi]`, every 7th f32    | 7.7e-8      | 8.6e-8      |
//! | portable     | grid `1e-4` on `+-8192`           | 8.6e-8      | 8.7e-8      |
//! | NEON (qemu)  | `[-2 pi, 2 pi]`, every 97th f32   | 6.1e-8      | 6.8e-8      |
//! | NEON (qemu)  | grid `1e-2` on `+-8192`           | 6.7e-8      | 6.7e-8      |
//!
//! i.e. below `0.73 eps` (`eps = 2^-23`) absolute. Beyond the stated range (measured on
//! 100 000 points each of `[0, 12867]`, `[0, 1e5]`, `[0, 1e6]`): portable 7.9e-8, 9.6e-7,
//! 3.1e-2; NEON 6.7e-8, 6.4e-8, 6.9e-8 (its fused `fmls` keeps `x - n PIO2_MID` exact
//! further out, but only the stated range is promised).
//!
//! `tests/trig.rs` asserts `1.2e-7` absolute for both functions on a sparser sweep of the
//! same range.
//!
//! # Log-polar to Cartesian
//! [`TrigKernels::from_log_polar`] turns a log-magnitude `l` and a phase `p` (radians) into
//! `m cos p + i m sin p` with `m = exp(min(l, max_log))`; `min` propagates NaN (`l = NaN`
//! gives NaN, as numpy's `minimum` and `torch.clamp` do). `exp` is the activation
//! family's (relative error below `1e-7` for `l <= 88.7`, see
//! [`activation`](super::activation)), so the result has an error below
//! `m (1.2e-7 + 1.2e-7)` per component, plus one rounding of the product.

use super::{BackendType, Portable, X86Isa, X86};

#[cfg(all(target_arch = "aarch64", feature = "neon"))]
pub(crate) mod neon;
pub(crate) mod portable;
#[cfg(neon_x86)]
mod x86;

/// Largest `|x|` for which the measured accuracy of [`TrigKernels::sin_cos`] is stated (see
/// the [module docs](self)).
pub const SIN_COS_MAX: f32 = 8192.0;

/// Constants shared by both backends (one source of truth).
pub mod consts {
    /// `2 / pi` rounded to f32.
    pub const FRAC_2_PI: f32 = core::f32::consts::FRAC_2_PI;
    /// High part of `pi/2`: `1.5703125 = 201 / 128` (8 significant bits).
    pub const PIO2_HI: f32 = 1.570_312_5;
    /// Middle part of `pi/2`: `pi/2 - PIO2_HI` rounded to 11 significant bits
    /// (`0x39fd_9000`).
    pub const PIO2_MID: f32 = 4.837_513e-4;
    /// Low part: `pi/2 - PIO2_HI - PIO2_MID` rounded to f32.
    pub const PIO2_LO: f32 = 7.549_79e-8;
    /// `sin r ~= r + r^3 (S0 + S1 r^2 + S2 r^4 + S3 r^6)`: Taylor coefficients.
    pub const SIN_P: [f32; 4] = [-1.0 / 6.0, 1.0 / 120.0, -1.0 / 5040.0, 1.0 / 362_880.0];
    /// `cos r ~= 1 + r^2 (C0 + C1 r^2 + ... + C4 r^8)`: Taylor coefficients.
    pub const COS_P: [f32; 5] =
        [-0.5, 1.0 / 24.0, -1.0 / 720.0, 1.0 / 40_320.0, -1.0 / 3_628_800.0];
}

/// Trigonometric kernels over flat slices (no geometry beyond the length). Algorithms,
/// accuracy and special values: see the [module docs](self).
///
/// [`sin_cos`](Self::sin_cos) and [`from_log_polar`](Self::from_log_polar) are the entry
/// points: they check the lengths, return at once for empty slices and call a hook.
/// Backends override hooks only; their defaults are the portable code.
pub trait TrigKernels: BackendType {
    /// `sin[i] = sin(x[i])`, `cos[i] = cos(x[i])` (radians).
    ///
    /// # Panics
    /// When the three lengths differ.
    fn sin_cos(x: &[f32], sin: &mut [f32], cos: &mut [f32]) {
        assert!(
            sin.len() == x.len() && cos.len() == x.len(),
            "sin_cos: input and output lengths differ"
        );
        if !x.is_empty() {
            Self::sin_cos_unchecked(x, sin, cos);
        }
    }

    /// Log-polar to Cartesian, in place: on entry `a[i]` is a log-magnitude and `b[i]` a
    /// phase (radians); on return `a[i] = m cos b[i]`, `b[i] = m sin b[i]` with
    /// `m = exp(min(a[i], max_log))` (e.g. `max_log = ln 100` caps the magnitude at 100).
    ///
    /// # Panics
    /// When `a.len() != b.len()`.
    fn from_log_polar(max_log: f32, a: &mut [f32], b: &mut [f32]) {
        assert_eq!(a.len(), b.len(), "from_log_polar: magnitude and phase lengths differ");
        if !a.is_empty() {
            Self::from_log_polar_unchecked(max_log, a, b);
        }
    }

    /// Hook of [`sin_cos`](Self::sin_cos): equal lengths, at least one element.
    fn sin_cos_unchecked(x: &[f32], sin: &mut [f32], cos: &mut [f32]) {
        portable::sin_cos_slices(x, sin, cos)
    }

    /// Hook of [`from_log_polar`](Self::from_log_polar): equal lengths, at least one element.
    fn from_log_polar_unchecked(max_log: f32, a: &mut [f32], b: &mut [f32]) {
        portable::from_log_polar(max_log, a, b)
    }
}

impl TrigKernels for Portable {}

impl<I: X86Isa> TrigKernels for X86<I> {
    #[cfg(neon_x86)]
    fn from_log_polar_unchecked(max_log: f32, a: &mut [f32], b: &mut [f32]) {
        x86::from_log_polar::<I>(max_log, a, b)
    }
}
