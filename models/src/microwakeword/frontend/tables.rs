//! The frontend's start-up tables, built at compile time into the `static` [`TABLES`].
//!
//! TFLite Micro's frontend (as built by pymicro-features 2.0.2) computes them when a frontend
//! is created: the window and filterbank in `f32` with C's `cosf` and `log1pf`, the PCAN gain
//! table with `powf`, each rounded to fixed point (`floorf(v * 2^bits + 0.5f)`, or a
//! truncation of `v + 0.5f`); kissfft's twiddles in `f64` with `cos`/`sin` as
//! `floor(0.5 + 32767 * cos(phase))`. Here every such library call is evaluated in `f64` (the
//! `const fn`s below and [`neon_runtime::constmath`]) and rounded to `f32` where the C
//! function returns `f32`; the arithmetic around it is the C code's, in the same types and
//! order. One exception: glibc 2.36's `log1pf` is not correctly rounded, and its results on
//! the filterbank's arguments are pinned where they differ (`GLIBC_LOG1PF` in
//! [`super::filterbank`]; measured in `tools/microwakeword/FACTS.md`, section 8).
//!
//! A libm result may differ from the correctly rounded one by an ulp. [`Tables::build`] takes
//! an `ulps` offset added to every such result, so a test can show how far each table is
//! from a rounding boundary (`models/tests/mww/frontend.rs` builds them at ±1 and ±2 ulps).

use super::fft::{
    build_stage_twiddles, build_super_twiddles, build_twiddles, Cpx, StageTwiddles, FFT_BINS,
    HALF_FFT,
};
use super::filterbank::{build_filterbank, Filterbank};
use super::log_scale::{build_log_lut, LOG_LUT_LEN};
use super::pcan::{build_gain_lut, GAIN_LUT_LEN};
use super::window::{build_window, WINDOW};

/// Every table the frontend reads, for one `ulps` offset (see the module docs).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tables {
    /// Hann window in Q12 ([`WINDOW`] coefficients, 0..=4096).
    pub window: [i16; WINDOW],
    /// Twiddles of the 256-point complex FFT, `e^{-2 pi i k / 256}` in Q15.
    pub twiddles: [Cpx; HALF_FFT],
    /// The same twiddles in the order the FFT's stages read them (derived from `twiddles`).
    pub stage_twiddles: StageTwiddles,
    /// Twiddles of the real-FFT split, `e^{-i pi ((k + 1) / 256 + 1/2)}` in Q15, `k < 128`.
    pub super_twiddles: [Cpx; HALF_FFT / 2],
    /// Mel filterbank: bin ranges and Q12 weights.
    pub filterbank: Filterbank,
    /// PCAN gain lookup table (piecewise quadratic, see [`super::pcan`]).
    pub gain_lut: [i16; GAIN_LUT_LEN],
    /// `log2(1 + x) - x` in Q16 at `x = k / 128` (two trailing zeros).
    pub log_lut: [u16; LOG_LUT_LEN],
}

/// The frontend's tables, exactly as pymicro-features 2.0.2 builds them on Debian 12 x86-64
/// (glibc 2.36; pinned against `models/microwakeword/frontend_tables.json` by
/// `models/tests/mww/frontend.rs`).
pub static TABLES: Tables = Tables::build(0);

impl Tables {
    /// Builds every table, with each libm result (`cosf`, `log1pf`, `powf`, `cos`, `sin`)
    /// moved by `ulps` units in the last place of its type; `ulps = 0` gives [`TABLES`].
    pub const fn build(ulps: i32) -> Self {
        let twiddles = build_twiddles(ulps);
        Self {
            window: build_window(ulps),
            stage_twiddles: build_stage_twiddles(&twiddles),
            twiddles,
            super_twiddles: build_super_twiddles(ulps),
            filterbank: build_filterbank(ulps),
            gain_lut: build_gain_lut(ulps),
            log_lut: build_log_lut(),
        }
    }
}

// Spectrum bins are what the filterbank indexes; checked once here.
const _: () = assert!(FFT_BINS == HALF_FFT + 1);
// The FFT's first stage skips its products by `twiddles[0]`, the identity when it is
// `(32767, 0)` (see [`super::fft`]).
const _: () = assert!(TABLES.twiddles[0].r == 32767 && TABLES.twiddles[0].i == 0);

/// `x` moved by `ulps` units in the last place of `f32` (towards +inf for `ulps > 0`).
pub(super) const fn nudge_f32(x: f32, ulps: i32) -> f32 {
    if ulps == 0 {
        return x;
    }
    let b = x.to_bits();
    let ordered = if b >> 31 == 1 { -((b & 0x7fff_ffff) as i64) } else { b as i64 };
    let moved = ordered + ulps as i64;
    if moved < 0 {
        f32::from_bits(((-moved) as u32) | 0x8000_0000)
    } else {
        f32::from_bits(moved as u32)
    }
}

/// `x` moved by `ulps` units in the last place of `f64` (towards +inf for `ulps > 0`).
pub(super) const fn nudge_f64(x: f64, ulps: i32) -> f64 {
    if ulps == 0 {
        return x;
    }
    let b = x.to_bits();
    let ordered = if b >> 63 == 1 { -((b & (u64::MAX >> 1)) as i128) } else { b as i128 };
    let moved = ordered + ulps as i128;
    if moved < 0 {
        f64::from_bits(((-moved) as u64) | (1 << 63))
    } else {
        f64::from_bits(moved as u64)
    }
}

/// High part of `pi / 2` (33 significant bits: `k * PIO2_HI` is exact for `|k| < 2^20`).
const PIO2_HI: f64 = f64::from_bits(0x3ff9_21fb_5440_0000);
/// `pi / 2 - PIO2_HI`, rounded to f64.
const PIO2_LO: f64 = f64::from_bits(0x3dd0_b461_1a62_6331);

/// `(sin x, cos x)` in `f64` for `|x| < 2^20`: `x = k pi/2 + r` (Cody and Waite), `|r| <=
/// pi/4`, Taylor polynomials to `r^17` / `r^18` (truncation below `1e-19`), then the
/// quadrant `k mod 4`. Error below about 2e-16 absolute; the twiddles pinned against kissfft's
/// (glibc `cos`/`sin`) in `models/tests/mww/frontend.rs` check it where it matters.
pub(super) const fn sin_cos(x: f64) -> (f64, f64) {
    let t = x / PIO2_HI;
    let k = if t >= 0.0 { (t + 0.5) as i64 } else { (t - 0.5) as i64 };
    let kf = k as f64;
    let r = (x - kf * PIO2_HI) - kf * PIO2_LO;
    let r2 = r * r;
    // sin r = r (1 - r^2/(2*3) (1 - r^2/(4*5) (1 - ...))), cos r likewise.
    let mut s = 1.0;
    let mut c = 1.0;
    let mut n = 9i32;
    while n >= 1 {
        let sn = (2 * n) as f64 * (2 * n + 1) as f64;
        let cn = (2 * n - 1) as f64 * (2 * n) as f64;
        s = 1.0 - r2 / sn * s;
        c = 1.0 - r2 / cn * c;
        n -= 1;
    }
    let (sin_r, cos_r) = (r * s, c);
    match k.rem_euclid(4) {
        0 => (sin_r, cos_r),
        1 => (cos_r, -sin_r),
        2 => (-sin_r, -cos_r),
        _ => (-cos_r, sin_r),
    }
}

/// `log1p(x)` for `x > -1` with `1 + x` exact in `f64` (true for every `f32` `x >= 2^-29`
/// below `2^29`, and for `x = 0`).
pub(super) const fn log1p(x: f64) -> f64 {
    if x == 0.0 {
        return 0.0;
    }
    neon_runtime::constmath::ln(1.0 + x)
}

/// `x^y` for `x > 0` as `exp(y ln x)` in `f64` (relative error about `|y ln x| * 1e-15`).
pub(super) const fn pow(x: f64, y: f64) -> f64 {
    neon_runtime::constmath::exp(y * neon_runtime::constmath::ln(x))
}

/// C's `floorf` for the finite values the builders produce (`|v| < 2^31`).
pub(super) const fn floor_f32(v: f32) -> i32 {
    let t = v as i32;
    if (t as f32) > v {
        t - 1
    } else {
        t
    }
}

/// C's `floor` for `|v| < 2^31`.
pub(super) const fn floor_f64(v: f64) -> i32 {
    let t = v as i32;
    if (t as f64) > v {
        t - 1
    } else {
        t
    }
}
