//! Activation kernels: ReLU, leaky ReLU, clamp from below, GELU (erf and tanh forms), SiLU,
//! tanh, sigmoid, exp, erf and the logarithms `ln` and `log10`, in place (`f(x)`) or out of
//! place (`f_to(x, y)`), over flat `f32` slices of any length.
//!
//! `core` has no `exp`, `tanh`, `erf` or `ln` in `no_std`, so this module carries its own
//! vectorisable approximations. [`Portable`] and `Neon` run the same algorithm with the same
//! coefficients; they differ only in that NEON fuses multiply-adds (`fmla`, one rounding)
//! where the portable code rounds twice, so the two agree to a few ulps (the tests allow
//! `4 eps |y|`; ReLU, leaky ReLU and the clamp are bitwise equal).
//!
//! # Algorithms
//! - **exp**: `x = n ln2 + r`, `n = round(x / ln2)` by the `1.5 * 2^23` rounding trick (`n`
//!   is then read from the low mantissa bits: no float-to-int conversion), `ln2` split in
//!   `0.693359375` (9 bits: `n * ln2_hi` is exact) plus a correction (Cody & Waite), so
//!   `|r| <= ln2/2`. `exp(r) = 1 + expm1(r)`, `expm1(r) ~= r + r^2 P(r)` with `P` of degree
//!   4; `2^n` is applied by adding `n << 23` to the exponent field of `exp(r)`, which is
//!   valid for every normal result, including `n = 128` (there `exp(r) < 1`).
//! - **expm1** (inside tanh, erf, GELU): the same reduction, `t = 2^n` built from exponent
//!   bits, `expm1(x) = (t - 1) + t expm1(r)`, exact in relative terms near 0 (`n = 0`).
//! - **tanh**: `tanh(|x|) = e / (e + 2)`, `e = expm1(2|x|)` (no cancellation near 0), sign
//!   restored with copysign; `|x| >= 10` gives exactly `+-1`.
//! - **sigmoid**: `e = exp(-|x|)`, `sigmoid(x) = 1 / (1 + e)` for `x >= 0`, `e / (1 + e)`
//!   for `x < 0` (never overflows; small results keep their relative accuracy).
//! - **SiLU**: `x * sigmoid(x)`.
//! - **GELU, tanh form** (Hendrycks & Gimpel 2016, "Gaussian Error Linear Units (GELUs)",
//!   arXiv:1606.08415): `0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))`, evaluated through
//!   the identity `1 + tanh(u) = 2 sigmoid(2u)` as `x * sigmoid(w)`,
//!   `w = x (1.5957691 + 0.07135481 x^2)` (`2 sqrt(2/pi)` and `0.044715 * 2 sqrt(2/pi)`):
//!   the same function without the cancellation of `1 + tanh` for negative `x`.
//! - **erf**: `erf(z) = 1 - exp(-h)`, `h = z H(z)`, `H` a polynomial of degree 10 fitted to
//!   `-ln(erfc(z)) / z` on `[0, 3.92]`; computed as `(1 - t) - t expm1(r)` for `-h = n ln2 +
//!   r`; `+-1` exactly for `|z| >= 3.92` (there `1 - erf(|z|) < 2^-25`: `+-1` is the
//!   correctly rounded value). No division.
//! - **GELU, erf form**: `0.5 x (1 + erf(x / sqrt 2))` written with `e = exp(-h) = erfc(a)`,
//!   `a = |x| / sqrt 2`, as `(x/2) e` for `x < 0` and `x - (x/2) e` for `x >= 0`: no
//!   cancellation of `1 + erf` for negative `x` (PyTorch and ONNX Runtime evaluate `1 + erf`
//!   and lose the relative accuracy there). `0` for `x < -5.54`.
//!
//! - **ln**: `x = 2^n m` with `m in [2/3, 4/3)`, found with integer arithmetic on the bits:
//!   `n` is the (arithmetic) exponent field of `bits(x) - bits(2/3)`, and `m` has the bits
//!   `bits(x) - (n << 23)` (subnormal `x` is first scaled by `2^23`). `f = m - 1` is exact
//!   (Sterbenz), `|f| <= 1/3`, and `ln(1 + f) ~= f + f^2 Q(f)` with `Q` of degree 8
//!   (`Q(0) = -1/2`); `ln x = n ln2_hi + (n ln2_lo + ln(1 + f))` with the same split `ln 2`
//!   as exp (`n ln2_hi` exact). Near `x = 1` (`n = 0`) the result is `f + f^2 Q`, `f`
//!   exact: the relative accuracy holds down to the smallest `|ln x|`; `ln(1) = +0`
//!   exactly. No division, no table.
//! - **log10**: the same reduction and polynomial, `log10 x = n log10(2)_hi +
//!   (n log10(2)_lo + ln(1 + f) log10(e))` (`log10(2)_hi = 1233/4096`): `ln x / ln 10`
//!   without rounding `ln x` first.
//!
//! The coefficients of `P` (expm1), `Q` (ln) and `H` (erf) are our own fits, reproducible with
//! `tools/fit_activation_approx.py`: a weighted minimax (Lawson's iteratively reweighted
//! least squares, 30-digit arithmetic with mpmath) of the relative error of expm1 on
//! `|r| <= ln2/2 + 5e-4`, of `ln(1 + f)` on `|f| <= 1/3 + 1e-4` and of `H` on `[0, 3.92]`,
//! then rounded to f32 from the highest
//! degree down, re-fitting the remaining coefficients after each rounding. Exact-arithmetic
//! max relative error with the f32 coefficients: expm1 1.8e-8, exp 6.3e-9, `ln(1 + f)`
//! 1.0e-8, `H` and erf 5.2e-8;
//! the rest of the error below is f32 evaluation.
//!
//! # Special values
//! - NaN in gives NaN out for every function.
//! - `exp`: `+inf` for `x > 88.72283` (true overflow), `0` for `x < -87.33654` (results
//!   that would be subnormal are flushed to zero; absolute error < `1.2e-38`), `exp(-inf) =
//!   0`, `exp(+inf) = +inf`, `exp(+-0) = 1` exactly. Where an intermediate exponential is
//!   flushed (sigmoid / SiLU / GELU far in the negative tail) the result is 0, off by less
//!   than `1.2e-38 |x|`.
//! - `tanh(+-inf) = +-1`, `tanh(-0) = -0`; `sigmoid(-inf) = 0`, `sigmoid(+inf) = 1`;
//!   `erf(+-inf) = +-1`, `erf(-0) = -0`; `silu`, `gelu_tanh`, `gelu_erf`: `f(-inf) = 0`,
//!   `f(+inf) = +inf` (their input is clamped where the gate is exactly 0 or 1, so `inf * 0`
//!   never makes a NaN).
//! - `relu(NaN) = NaN`, `relu(-0) = +0` (NEON `fmax` semantics, mirrored by the portable code).
//! - `ln` and `log10`: `-inf` at `+-0`, `+inf` at `+inf`, NaN for `x < 0` (including `-inf`)
//!   and NaN; `ln(1) = log10(1) = +0`; subnormal inputs are exact inputs (scaled by `2^23`
//!   before the reduction), e.g. `ln(2^-149) = -149 ln 2` to within the bound below.
//!
//! # Measured accuracy
//! Against f64 references (`std`'s `exp` and `tanh`; a series / continued-fraction erf and
//! erfc in the tests), every 1e-3 on `[-20, 20]` plus every 7th f32 bit pattern of the range
//! (portable, host) or every 211th (NEON, under qemu-aarch64); `eps = 2^-23 = 1.19e-7`;
//! worst of both backends. Run `cargo test --test activation -- --ignored --nocapture` to
//! measure again; `tests/activation.rs` asserts these bounds (plus 25-45%).
//!
//! | function  | range        | max abs error | max rel error                         |
//! |-----------|--------------|---------------|---------------------------------------|
//! | exp       | [-87.3, 88.7]| (relative)    | 8.3e-8 (0.70 eps)                     |
//! | tanh      | all          | 8.9e-8        | 1.8e-7 (1.54 eps)                     |
//! | sigmoid   | all          | 8.9e-8        | 1.8e-7 (1.50 eps)                     |
//! | silu      | all          | (relative)    | 2.2e-7 (1.87 eps)                     |
//! | gelu_tanh | all          | (relative)    | 1.8e-7 (1.48 eps) x (1 + max(0, -w))  |
//! | erf       | all          | 8.5e-8        | 2.2e-7 (1.84 eps)                     |
//! | gelu_erf  | x >= -5.54   | (relative)    | 2.3e-7 (1.92 eps) x (1 + max(0, h))   |
//! | gelu_erf  | x < -5.54    | 1.5e-8 \|x\|  | (returns 0)                           |
//!
//!
//! The logarithms are measured separately (`tests/log.rs`, `--ignored` to print), over every
//! 97th positive f32 from the least subnormal to `f32::MAX` and every f32 in `[0.9, 1.1]`
//! (host), every 997th and every 7th (NEON, under qemu-aarch64), in ulps of the result
//! (`ulp(y) = 2^(floor(log2 |y|) - 23)`), worst of both backends:
//!
//! | function | range     | max error (ulp) | max abs error on `[0.5, 2]` |
//! |----------|-----------|-----------------|-----------------------------|
//! | ln       | all x > 0 | 0.88            | 4.1e-8                      |
//! | log10    | all x > 0 | 2.39            | 2.2e-8                      |
//!
//! `log10`'s worst case is near `x = 4/3` (`n = 1`, `f ~= -1/3`): `n log10 2` and
//! `ln(1 + f) log10 e` cancel to a result a third of their size, so the roundings of the
//! product `ln(1 + f) log10 e` count for more ulps of the result. As `10 log10(p)` in dB
//! (the mel frontend), the error is below 8.8e-6 dB for every `p` in `1e-10..1e12`
//! (requirement: 3e-5).
//!
//! The factors `(1 + max(0, -w))` (GELU tanh form, `w` as above) and `(1 + h)` for `x < 0`
//! (GELU erf form, `h = -ln(erfc(|x| / sqrt 2))`) say where the result is `~ exp(-|w|)`-small
//! and its exponent is itself rounded to f32: the relative error grows like `|w| eps`, which
//! no f32 evaluation of `w` avoids (e.g. GELU at `x = -3`, result about -4e-3: factor 7.7 for
//! the tanh form and 6.9 for the erf form, relative errors up to about 1.5e-6). For `x >= 0`
//! the factor is 1.

use super::gemm::fmax;
use super::{BackendType, Portable, X86Isa, X86};

/// Constants shared by both backends (one source of truth for the coefficients).
pub(crate) mod consts {
    /// `log2(e)`.
    pub const LOG2E: f32 = core::f32::consts::LOG2_E;
    /// `1.5 * 2^23`: adding it rounds a float of magnitude `< 2^22` to an integer, which then
    /// sits in the low mantissa bits.
    pub const ROUND_MAGIC: f32 = 12_582_912.0;
    /// High part of `ln 2` (9 significant bits, so `n * LN2_HI` is exact for `|n| < 2^15`).
    pub const LN2_HI: f32 = 0.693_359_4;
    /// `ln 2 - LN2_HI`.
    pub const LN2_LO: f32 = -2.121_944_4e-4;
    /// Largest `x` with a finite `exp(x)` in f32 (`0x42b17217`, just below `ln(f32::MAX)`).
    pub const EXP_HI: f32 = 88.722_83;
    /// Smallest `x` whose `exp(x)` is a normal f32 (`0xc2aeac4f`, just above `ln(2^-126)`).
    pub const EXP_LO: f32 = -87.336_54;
    /// `expm1(r) ~= r + r^2 (P0 + P1 r + P2 r^2 + P3 r^3 + P4 r^4)` on `|r| <= ln2/2`
    /// (our fit, see the module docs; exact-arithmetic max relative error 1.8e-8).
    pub const EXPM1_P: [f32; 5] =
        [4.999_999_7e-1, 1.666_654_3e-1, 4.166_720_4e-2, 8.366_631e-3, 1.388_254_5e-3];
    /// Clamp of `2|x|` in tanh (keeps `expm1(2|x|)` finite). tanh rounds to exactly `+-1`
    /// in f32 from `|x| = 9.011` (`1 - tanh(9.011) = 2^-25`), so the clamp at `|x| = 10`
    /// changes nothing.
    pub const TANH_ZMAX: f32 = 20.0;
    /// `|z|` from which `erf(z)` rounds to exactly `+-1` (`erfc(3.91921) = 2^-25`).
    pub const ERF_SAT: f32 = 3.92;
    /// `erf(z) = 1 - exp(-z H(z))` on `0 <= z < 3.92`, `H(z) = sum H[k] z^k` (our fit of
    /// `-ln(erfc(z)) / z` for minimal relative error, see the module docs; exact-arithmetic
    /// max relative error of `H` and of erf 5.2e-8). `H[0] = 2/sqrt(pi)`, `H[1] ~= 2/pi`,
    /// as the Taylor series of `-ln(erfc(z))` says.
    pub const ERF_H: [f32; 11] = [
        core::f32::consts::FRAC_2_SQRT_PI, // the fit's value, 0x3f906ebb
        6.366_195_7e-1,
        1.027_723_4e-1,
        -1.911_588_2e-2,
        -2.701_281e-4,
        1.836_715_1e-3,
        -7.809_595_6e-4,
        1.917_156e-4,
        -2.960_087_8e-5,
        2.669_551_3e-6,
        -1.074_213_6e-7,
    ];
    /// `1 / sqrt(2)`.
    pub const FRAC_1_SQRT_2: f32 = core::f32::consts::FRAC_1_SQRT_2;
    /// `2 sqrt(2 / pi)`: GELU tanh form as a sigmoid, linear coefficient.
    pub const GELU_K0: f32 = 1.595_769_2;
    /// `2 sqrt(2 / pi) * 0.044715`: GELU tanh form as a sigmoid, cubic coefficient.
    pub const GELU_K1: f32 = 7.135_481_4e-2;
    /// Below this the multiplicand `x` of SiLU and of the tanh form of GELU is clamped, so
    /// that `-inf * 0` cannot produce NaN (the sigmoid factor is exactly 0 there anyway).
    pub const GATE_XMIN: f32 = -200.0;
    /// Bits of `2/3` (rounded up): the log kernels' reduction subtracts this from the bits of
    /// `x`, so that the exponent field of the difference is `e` with `x = 2^e m`,
    /// `m in [2/3, 4/3)`.
    pub const LOG_OFF: u32 = 0x3f2a_aaab;
    /// `2^23`: subnormal inputs of the logs are scaled by it first.
    pub const TWO23: f32 = 8_388_608.0;
    /// `ln(1 + f) ~= f + f^2 (Q0 + Q1 f + ... + Q8 f^8)` on `|f| <= 1/3` (our fit, see the
    /// module docs; exact-arithmetic max relative error 1.02e-8).
    pub const LOG_Q: [f32; 9] = [
        -5.0e-1,
        3.333_321e-1,
        -2.499_971_7e-1,
        2.001_077_5e-1,
        -1.668_233_6e-1,
        1.400_065_9e-1,
        -1.216_670_1e-1,
        1.400_745_4e-1,
        -1.295_114e-1,
    ];
    /// High part of `log10(2)` (`1233 / 4096`, 11 significant bits: `n * LOG10_2_HI` is
    /// exact for `|n| < 2^13`).
    pub const LOG10_2_HI: f32 = 0.301_025_4;
    /// `log10(2) - LOG10_2_HI`.
    pub const LOG10_2_LO: f32 = 4.605_038e-6;
    /// `log10(e) = 1 / ln 10`.
    pub const LOG10_E: f32 = core::f32::consts::LOG10_E;
    /// Clamp of the `x / 2` factor of the erf form of GELU, so that `inf * 0` cannot produce
    /// NaN (the factor it multiplies is exactly 0 beyond `|x| = 5.55`).
    pub const GELU_ERF_XMAX: f32 = 8.0;
}

/// Activation kernels, in place (`f(x)`) and out of place (`f_to(x, y)`: `y[i] = f(x[i])`).
///
/// Flat slices of any length (no geometry beyond the length). Accuracy and special values:
/// see the [module docs](self).
pub trait ActivationKernels: BackendType {
    /// ReLU in place: `x = max(x, 0)`; NaN stays NaN.
    fn relu(x: &mut [f32]) {
        portable_map(x, scalar::relu)
    }
    /// ReLU: `y = max(x, 0)`.
    ///
    /// # Panics
    /// When `x.len() != y.len()`.
    fn relu_to(x: &[f32], y: &mut [f32]) {
        portable_map_to(x, y, scalar::relu)
    }

    /// Leaky ReLU in place: `x = x` for `x >= 0`, `slope * x` for `x < 0`.
    fn leaky_relu(x: &mut [f32], slope: f32) {
        portable_map(x, |v| scalar::leaky_relu(v, slope))
    }
    /// Leaky ReLU: `y = x` for `x >= 0`, `slope * x` for `x < 0`.
    ///
    /// # Panics
    /// When `x.len() != y.len()`.
    fn leaky_relu_to(x: &[f32], y: &mut [f32], slope: f32) {
        portable_map_to(x, y, |v| scalar::leaky_relu(v, slope))
    }

    /// Clamp from below in place: `x = max(x, min)` (IEEE `maximum`, as NEON `fmax`: NaN
    /// stays NaN, `max(-0, +0) = +0`). openWakeWord applies `max(x, -0.4)` after each leaky
    /// ReLU of its embedding.
    fn clamp_min(x: &mut [f32], min: f32) {
        portable_map(x, |v| fmax(v, min))
    }
    /// Clamp from below: `y = max(x, min)`.
    ///
    /// # Panics
    /// When `x.len() != y.len()`.
    fn clamp_min_to(x: &[f32], y: &mut [f32], min: f32) {
        portable_map_to(x, y, |v| fmax(v, min))
    }

    /// GELU, erf form, in place: `x = 0.5 x (1 + erf(x / sqrt 2))`.
    fn gelu_erf(x: &mut [f32]) {
        portable_map(x, scalar::gelu_erf)
    }
    /// GELU, erf form: `y = 0.5 x (1 + erf(x / sqrt 2))`.
    ///
    /// # Panics
    /// When `x.len() != y.len()`.
    fn gelu_erf_to(x: &[f32], y: &mut [f32]) {
        portable_map_to(x, y, scalar::gelu_erf)
    }

    /// GELU, tanh form (Hendrycks & Gimpel 2016), in place:
    /// `x = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))`.
    fn gelu_tanh(x: &mut [f32]) {
        portable_map(x, scalar::gelu_tanh)
    }
    /// GELU, tanh form: `y = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))`.
    ///
    /// # Panics
    /// When `x.len() != y.len()`.
    fn gelu_tanh_to(x: &[f32], y: &mut [f32]) {
        portable_map_to(x, y, scalar::gelu_tanh)
    }

    /// SiLU (swish) in place: `x = x * sigmoid(x)`.
    fn silu(x: &mut [f32]) {
        portable_map(x, scalar::silu)
    }
    /// SiLU (swish): `y = x * sigmoid(x)`.
    ///
    /// # Panics
    /// When `x.len() != y.len()`.
    fn silu_to(x: &[f32], y: &mut [f32]) {
        portable_map_to(x, y, scalar::silu)
    }

    /// Hyperbolic tangent in place.
    fn tanh(x: &mut [f32]) {
        portable_map(x, scalar::tanh)
    }
    /// Hyperbolic tangent: `y = tanh(x)`.
    ///
    /// # Panics
    /// When `x.len() != y.len()`.
    fn tanh_to(x: &[f32], y: &mut [f32]) {
        portable_map_to(x, y, scalar::tanh)
    }

    /// Logistic sigmoid in place: `x = 1 / (1 + exp(-x))`.
    fn sigmoid(x: &mut [f32]) {
        portable_map(x, scalar::sigmoid)
    }
    /// Logistic sigmoid: `y = 1 / (1 + exp(-x))`.
    ///
    /// # Panics
    /// When `x.len() != y.len()`.
    fn sigmoid_to(x: &[f32], y: &mut [f32]) {
        portable_map_to(x, y, scalar::sigmoid)
    }

    /// Exponential in place (overflow to `+inf`, subnormal results flushed to 0).
    fn exp(x: &mut [f32]) {
        portable_map(x, scalar::exp)
    }
    /// Exponential: `y = exp(x)`.
    ///
    /// # Panics
    /// When `x.len() != y.len()`.
    fn exp_to(x: &[f32], y: &mut [f32]) {
        portable_map_to(x, y, scalar::exp)
    }

    /// Natural logarithm in place (`ln 0 = -inf`, `ln(x < 0) = NaN`, `ln(+inf) = +inf`).
    fn ln(x: &mut [f32]) {
        portable_map(x, scalar::ln)
    }
    /// Natural logarithm: `y = ln(x)`.
    ///
    /// # Panics
    /// When `x.len() != y.len()`.
    fn ln_to(x: &[f32], y: &mut [f32]) {
        portable_map_to(x, y, scalar::ln)
    }

    /// Decimal logarithm in place, `log10(x) = ln(x) / ln(10)` (special values as [`ln`](Self::ln)).
    fn log10(x: &mut [f32]) {
        portable_map(x, scalar::log10)
    }
    /// Decimal logarithm: `y = log10(x)`.
    ///
    /// # Panics
    /// When `x.len() != y.len()`.
    fn log10_to(x: &[f32], y: &mut [f32]) {
        portable_map_to(x, y, scalar::log10)
    }

    /// Error function in place.
    fn erf(x: &mut [f32]) {
        portable_map(x, scalar::erf)
    }
    /// Error function: `y = erf(x)`.
    ///
    /// # Panics
    /// When `x.len() != y.len()`.
    fn erf_to(x: &[f32], y: &mut [f32]) {
        portable_map_to(x, y, scalar::erf)
    }
}

/// Scalar forms of the approximations, written branch-free (every `if` is a select) so that
/// LLVM vectorises the loops that call them. The portable backend is these functions mapped
/// over the slices; other kernel families (softmax) reuse them.
pub(crate) mod scalar {
    use super::consts::*;

    /// `r + r^2 P(r)`, `|r| <= ln2/2`.
    #[inline(always)]
    pub(crate) fn expm1_poly(r: f32) -> f32 {
        let mut p = EXPM1_P[4];
        p = p * r + EXPM1_P[3];
        p = p * r + EXPM1_P[2];
        p = p * r + EXPM1_P[1];
        p = p * r + EXPM1_P[0];
        (r * r) * p + r
    }

    /// Range reduction: returns `(v, r)` where the low bits of `v` hold `n = round(x / ln2)`
    /// and `r = x - n ln2`. Valid for `|x| < 2^21`.
    #[inline(always)]
    fn reduce(x: f32) -> (f32, f32) {
        let v = x * LOG2E + ROUND_MAGIC;
        let n = v - ROUND_MAGIC;
        let r = x - n * LN2_HI;
        let r = r - n * LN2_LO;
        (v, r)
    }

    /// `exp(x)`; see the module docs for range and special values.
    #[inline(always)]
    pub(crate) fn exp(x: f32) -> f32 {
        let (v, r) = reduce(x);
        let q = expm1_poly(r) + 1.0;
        // q * 2^n by adding n to the exponent field (n << 23 == v.to_bits() << 23).
        let y = f32::from_bits(q.to_bits().wrapping_add(v.to_bits() << 23));
        let y = if x < EXP_LO { 0.0 } else { y };
        // NaN and x > EXP_HI both fail `x <= EXP_HI`: x + inf is +inf or NaN.
        if x <= EXP_HI {
            y
        } else {
            x + f32::INFINITY
        }
    }

    /// `(t, p)` with `t = 2^n`, `p = expm1(r)`, `x = n ln2 + r`, for `|x| <= 87` (NaN
    /// propagates into `p`). `exp(x) = t + t p`, `expm1(x) = (t - 1) + t p`.
    #[inline(always)]
    fn exp_parts(x: f32) -> (f32, f32) {
        let (v, r) = reduce(x);
        // 2^n from the exponent bits (n << 23 == v.to_bits() << 23).
        let t = f32::from_bits((v.to_bits() << 23).wrapping_add(0x3f80_0000));
        (t, expm1_poly(r))
    }

    /// `tanh(x)`.
    #[inline(always)]
    pub(crate) fn tanh(x: f32) -> f32 {
        let z = x.abs() + x.abs();
        let z = if z > TANH_ZMAX { TANH_ZMAX } else { z };
        let (t, p) = exp_parts(z);
        let e = t * p + (t - 1.0); // expm1(2|x|)
        (e / (e + 2.0)).copysign(x)
    }

    /// `1 / (1 + exp(-x))`.
    #[inline(always)]
    pub(crate) fn sigmoid(x: f32) -> f32 {
        let e = exp(-x.abs());
        let num = if x < 0.0 { e } else { 1.0 };
        num / (1.0 + e)
    }

    /// `x * sigmoid(x)`.
    #[inline(always)]
    pub(crate) fn silu(x: f32) -> f32 {
        let xm = if x < GATE_XMIN { GATE_XMIN } else { x };
        xm * sigmoid(x)
    }

    /// GELU, tanh form, as `x * sigmoid(x (K0 + K1 x^2))`.
    #[inline(always)]
    pub(crate) fn gelu_tanh(x: f32) -> f32 {
        let w = x * (GELU_K1 * (x * x) + GELU_K0);
        let xm = if x < GATE_XMIN { GATE_XMIN } else { x };
        xm * sigmoid(w)
    }

    /// `z H(z)` for `z >= 0`: `erf(z) = 1 - exp(-z H(z))`.
    #[inline(always)]
    fn erf_exponent(a: f32) -> f32 {
        let mut h = ERF_H[10];
        for &c in ERF_H[..10].iter().rev() {
            h = h * a + c;
        }
        a * h
    }

    /// `erf(z)`.
    #[inline(always)]
    pub(crate) fn erf(z: f32) -> f32 {
        let a = z.abs();
        let (t, p) = exp_parts(-erf_exponent(a));
        let r = (1.0 - t) - t * p; // -expm1(-a H(a))
        let r = if a >= ERF_SAT { 1.0 } else { r };
        r.copysign(z)
    }

    /// GELU, erf form: with `e = exp(-a H(a)) = 1 - erf(a)`, `a = |x| / sqrt 2`:
    /// `gelu(x) = (x/2) e` for `x < 0` and `x - (x/2) e` for `x >= 0` (no cancellation).
    #[inline(always)]
    pub(crate) fn gelu_erf(x: f32) -> f32 {
        let a = x.abs() * FRAC_1_SQRT_2;
        let (t, p) = exp_parts(-erf_exponent(a));
        let e = t * p + t;
        let e = if a >= ERF_SAT { 0.0 } else { e };
        let xc = if x < -GELU_ERF_XMAX { -GELU_ERF_XMAX } else { x };
        let xc = if xc > GELU_ERF_XMAX { GELU_ERF_XMAX } else { xc };
        let hx = 0.5 * xc;
        if x < 0.0 {
            hx * e
        } else {
            x - hx * e
        }
    }

    /// Log reduction: `(n, f)` with `x = 2^n (1 + f)`, `|f| <= 1/3`, `f` exact, for finite
    /// `x > 0` (subnormals included); garbage (replaced by [`log_special`]) otherwise.
    #[inline(always)]
    fn log_reduce(x: f32) -> (f32, f32) {
        let sub = x < f32::MIN_POSITIVE;
        let xs = if sub { x * TWO23 } else { x };
        let bits = xs.to_bits();
        let e = (bits.wrapping_sub(LOG_OFF) as i32) >> 23;
        let m = f32::from_bits(bits.wrapping_sub((e << 23) as u32));
        let n = e as f32 - if sub { 23.0 } else { 0.0 };
        (n, m - 1.0)
    }

    /// `ln(1 + f) ~= f + f^2 Q(f)`, `|f| <= 1/3`.
    #[inline(always)]
    fn log1p_poly(f: f32) -> f32 {
        let mut q = LOG_Q[8];
        for &c in LOG_Q[..8].iter().rev() {
            q = q * f + c;
        }
        (f * f) * q + f
    }

    /// Special values of the logs: `r` for finite `x > 0`, `-inf` at `+-0`, `+inf` at
    /// `+inf`, NaN for `x < 0` and NaN.
    #[inline(always)]
    fn log_special(x: f32, r: f32) -> f32 {
        let r = if x == f32::INFINITY { x } else { r };
        let r = if x == 0.0 { f32::NEG_INFINITY } else { r };
        if x >= 0.0 {
            r
        } else {
            f32::NAN
        }
    }

    /// `ln(x) = n ln2 + ln(1 + f)`, `ln2` split so that `n * LN2_HI` is exact.
    #[inline(always)]
    pub(crate) fn ln(x: f32) -> f32 {
        let (n, f) = log_reduce(x);
        let l = log1p_poly(f);
        log_special(x, n * LN2_HI + (n * LN2_LO + l))
    }

    /// `log10(x) = n log10(2) + ln(1 + f) log10(e)`.
    #[inline(always)]
    pub(crate) fn log10(x: f32) -> f32 {
        let (n, f) = log_reduce(x);
        let l = log1p_poly(f);
        log_special(x, n * LOG10_2_HI + (n * LOG10_2_LO + l * LOG10_E))
    }

    /// `max(x, 0)` with NaN propagated and `relu(-0) = +0` (the semantics of NEON `fmax`).
    #[inline(always)]
    pub(crate) fn relu(x: f32) -> f32 {
        let y = if x > 0.0 { x } else { 0.0 };
        if x.is_nan() {
            x
        } else {
            y
        }
    }

    /// Leaky ReLU.
    #[inline(always)]
    pub(crate) fn leaky_relu(x: f32, slope: f32) -> f32 {
        if x < 0.0 {
            x * slope
        } else {
            x
        }
    }
}

/// Width of the fixed inner loops of the portable drivers: two 128-bit vectors (or one
/// 256-bit vector), enough independent work for LLVM to vectorise and interleave.
const LANES: usize = 8;

/// `x[i] = f(x[i])`: full `LANES` chunks (vectorised by LLVM), then the scalar tail.
#[inline(always)]
pub(crate) fn portable_map(x: &mut [f32], f: impl Fn(f32) -> f32) {
    let mut chunks = x.chunks_exact_mut(LANES);
    for c in &mut chunks {
        for v in c.iter_mut() {
            *v = f(*v);
        }
    }
    for v in chunks.into_remainder() {
        *v = f(*v);
    }
}

/// `y[i] = f(x[i])`.
///
/// # Panics
/// When `x.len() != y.len()`.
#[inline(always)]
pub(crate) fn portable_map_to(x: &[f32], y: &mut [f32], f: impl Fn(f32) -> f32) {
    assert_eq!(x.len(), y.len(), "activation: input and output lengths differ");
    let mut xs = x.chunks_exact(LANES);
    let mut ys = y.chunks_exact_mut(LANES);
    for (a, b) in (&mut xs).zip(&mut ys) {
        for (u, v) in a.iter().zip(b.iter_mut()) {
            *v = f(*u);
        }
    }
    for (u, v) in xs.remainder().iter().zip(ys.into_remainder()) {
        *v = f(*u);
    }
}

impl ActivationKernels for Portable {}

impl<I: X86Isa> ActivationKernels for X86<I> {}

// The NEON code below calls `core::arch::aarch64` intrinsics from functions without
// `#[target_feature]` (so that they can be `#[inline(always)]`); that is sound only when the
// target enables NEON statically, which `kernels/mod.rs` enforces with a compile_error!.

/// NEON forms of the approximations (same algorithm and constants as [`scalar`]) and the
/// slice drivers. Reused by the softmax kernels.
#[cfg(all(target_arch = "aarch64", feature = "neon"))]
pub(crate) mod neon {
    use super::consts::*;
    use core::arch::aarch64::*;

    /// `r + r^2 P(r)`.
    #[inline(always)]
    pub(crate) fn expm1_poly(r: float32x4_t) -> float32x4_t {
        // SAFETY: register-only NEON arithmetic; NEON is statically enabled (checked by the
        // compile_error! in kernels/mod.rs).
        unsafe {
            let mut p = vdupq_n_f32(EXPM1_P[4]);
            p = vfmaq_f32(vdupq_n_f32(EXPM1_P[3]), p, r);
            p = vfmaq_f32(vdupq_n_f32(EXPM1_P[2]), p, r);
            p = vfmaq_f32(vdupq_n_f32(EXPM1_P[1]), p, r);
            p = vfmaq_f32(vdupq_n_f32(EXPM1_P[0]), p, r);
            vfmaq_f32(r, vmulq_f32(r, r), p)
        }
    }

    /// Range reduction, as `scalar::reduce`: `(v, r)`, `n` in the low bits of `v`.
    #[inline(always)]
    fn reduce(x: float32x4_t) -> (float32x4_t, float32x4_t) {
        // SAFETY: register-only NEON arithmetic; NEON is statically enabled.
        unsafe {
            let magic = vdupq_n_f32(ROUND_MAGIC);
            let v = vfmaq_f32(magic, x, vdupq_n_f32(LOG2E));
            let n = vsubq_f32(v, magic);
            let r = vfmsq_f32(x, n, vdupq_n_f32(LN2_HI));
            let r = vfmsq_f32(r, n, vdupq_n_f32(LN2_LO));
            (v, r)
        }
    }

    /// `exp(x)`.
    #[inline(always)]
    pub(crate) fn exp(x: float32x4_t) -> float32x4_t {
        let (v, r) = reduce(x);
        let p = expm1_poly(r);
        // SAFETY: register-only NEON arithmetic; NEON is statically enabled.
        unsafe {
            let q = vaddq_f32(p, vdupq_n_f32(1.0));
            let y = vreinterpretq_f32_u32(vaddq_u32(
                vreinterpretq_u32_f32(q),
                vshlq_n_u32::<23>(vreinterpretq_u32_f32(v)),
            ));
            let y = vbslq_f32(vcltq_f32(x, vdupq_n_f32(EXP_LO)), vdupq_n_f32(0.0), y);
            let inf = vaddq_f32(x, vdupq_n_f32(f32::INFINITY));
            vbslq_f32(vcleq_f32(x, vdupq_n_f32(EXP_HI)), y, inf)
        }
    }

    /// `(t, p)`: `t = 2^n`, `p = expm1(r)`, as `scalar::exp_parts`.
    #[inline(always)]
    fn exp_parts(x: float32x4_t) -> (float32x4_t, float32x4_t) {
        let (v, r) = reduce(x);
        // SAFETY: register-only NEON arithmetic; NEON is statically enabled.
        let t = unsafe {
            vreinterpretq_f32_u32(vaddq_u32(
                vshlq_n_u32::<23>(vreinterpretq_u32_f32(v)),
                vdupq_n_u32(0x3f80_0000),
            ))
        };
        (t, expm1_poly(r))
    }

    /// `tanh(x)`.
    #[inline(always)]
    pub(crate) fn tanh(x: float32x4_t) -> float32x4_t {
        // SAFETY: register-only NEON arithmetic; NEON is statically enabled.
        unsafe {
            let a = vabsq_f32(x);
            // vminq propagates NaN, like the portable compare-and-select.
            let z = vminq_f32(vaddq_f32(a, a), vdupq_n_f32(TANH_ZMAX));
            let (t, p) = exp_parts(z);
            let e = vfmaq_f32(vsubq_f32(t, vdupq_n_f32(1.0)), t, p);
            let y = vdivq_f32(e, vaddq_f32(e, vdupq_n_f32(2.0)));
            vbslq_f32(vdupq_n_u32(0x8000_0000), x, y)
        }
    }

    /// `1 / (1 + exp(-x))`.
    #[inline(always)]
    pub(crate) fn sigmoid(x: float32x4_t) -> float32x4_t {
        // SAFETY: register-only NEON arithmetic; NEON is statically enabled.
        unsafe {
            let e = exp(vnegq_f32(vabsq_f32(x)));
            let one = vdupq_n_f32(1.0);
            let num = vbslq_f32(vcltzq_f32(x), e, one);
            vdivq_f32(num, vaddq_f32(one, e))
        }
    }

    /// `x * sigmoid(x)`.
    #[inline(always)]
    pub(crate) fn silu(x: float32x4_t) -> float32x4_t {
        // SAFETY: register-only NEON arithmetic; NEON is statically enabled.
        unsafe { vmulq_f32(vmaxq_f32(x, vdupq_n_f32(GATE_XMIN)), sigmoid(x)) }
    }

    /// GELU, tanh form, as `x * sigmoid(x (K0 + K1 x^2))`.
    #[inline(always)]
    pub(crate) fn gelu_tanh(x: float32x4_t) -> float32x4_t {
        // SAFETY: register-only NEON arithmetic; NEON is statically enabled.
        unsafe {
            let t = vfmaq_f32(vdupq_n_f32(GELU_K0), vdupq_n_f32(GELU_K1), vmulq_f32(x, x));
            let s = sigmoid(vmulq_f32(x, t));
            vmulq_f32(vmaxq_f32(x, vdupq_n_f32(GATE_XMIN)), s)
        }
    }

    /// `a H(a)`, as `scalar::erf_exponent`.
    #[inline(always)]
    fn erf_exponent(a: float32x4_t) -> float32x4_t {
        // SAFETY: register-only NEON arithmetic; NEON is statically enabled.
        unsafe {
            let mut h = vdupq_n_f32(ERF_H[10]);
            for &c in ERF_H[..10].iter().rev() {
                h = vfmaq_f32(vdupq_n_f32(c), h, a);
            }
            vmulq_f32(a, h)
        }
    }

    /// `erf(z)`.
    #[inline(always)]
    pub(crate) fn erf(z: float32x4_t) -> float32x4_t {
        // SAFETY: register-only NEON arithmetic; NEON is statically enabled.
        unsafe {
            let a = vabsq_f32(z);
            let one = vdupq_n_f32(1.0);
            let (t, p) = exp_parts(vnegq_f32(erf_exponent(a)));
            let r = vfmsq_f32(vsubq_f32(one, t), t, p);
            let r = vbslq_f32(vcgeq_f32(a, vdupq_n_f32(ERF_SAT)), one, r);
            vbslq_f32(vdupq_n_u32(0x8000_0000), z, r)
        }
    }

    /// GELU, erf form, as `scalar::gelu_erf`.
    #[inline(always)]
    pub(crate) fn gelu_erf(x: float32x4_t) -> float32x4_t {
        // SAFETY: register-only NEON arithmetic; NEON is statically enabled.
        unsafe {
            let a = vmulq_n_f32(vabsq_f32(x), FRAC_1_SQRT_2);
            let (t, p) = exp_parts(vnegq_f32(erf_exponent(a)));
            let e = vfmaq_f32(t, t, p);
            let e = vbslq_f32(vcgeq_f32(a, vdupq_n_f32(ERF_SAT)), vdupq_n_f32(0.0), e);
            // vmaxq / vminq propagate NaN like the portable compare-and-select clamp.
            let xc =
                vminq_f32(vmaxq_f32(x, vdupq_n_f32(-GELU_ERF_XMAX)), vdupq_n_f32(GELU_ERF_XMAX));
            let hx = vmulq_n_f32(xc, 0.5);
            vbslq_f32(vcltzq_f32(x), vmulq_f32(hx, e), vfmsq_f32(x, hx, e))
        }
    }

    /// Log reduction, as `scalar::log_reduce`: `(n, f)`, `x = 2^n (1 + f)`.
    #[inline(always)]
    fn log_reduce(x: float32x4_t) -> (float32x4_t, float32x4_t) {
        // SAFETY: register-only NEON arithmetic; NEON is statically enabled.
        unsafe {
            let sub = vcltq_f32(x, vdupq_n_f32(f32::MIN_POSITIVE));
            let xs = vbslq_f32(sub, vmulq_n_f32(x, TWO23), x);
            let bits = vreinterpretq_s32_f32(xs);
            let e = vshrq_n_s32::<23>(vsubq_s32(bits, vdupq_n_s32(LOG_OFF as i32)));
            let m = vreinterpretq_f32_s32(vsubq_s32(bits, vshlq_n_s32::<23>(e)));
            // 23 where the input was scaled, else 0.
            let adj =
                vreinterpretq_f32_u32(vandq_u32(sub, vreinterpretq_u32_f32(vdupq_n_f32(23.0))));
            let n = vsubq_f32(vcvtq_f32_s32(e), adj);
            (n, vsubq_f32(m, vdupq_n_f32(1.0)))
        }
    }

    /// `f + f^2 Q(f)`.
    #[inline(always)]
    fn log1p_poly(f: float32x4_t) -> float32x4_t {
        // SAFETY: register-only NEON arithmetic; NEON is statically enabled.
        unsafe {
            let mut q = vdupq_n_f32(LOG_Q[8]);
            for &c in LOG_Q[..8].iter().rev() {
                q = vfmaq_f32(vdupq_n_f32(c), q, f);
            }
            vfmaq_f32(f, vmulq_f32(f, f), q)
        }
    }

    /// Special values, as `scalar::log_special`.
    #[inline(always)]
    fn log_special(x: float32x4_t, r: float32x4_t) -> float32x4_t {
        // SAFETY: register-only NEON arithmetic; NEON is statically enabled.
        unsafe {
            let inf = vdupq_n_f32(f32::INFINITY);
            let r = vbslq_f32(vceqq_f32(x, inf), inf, r);
            let r = vbslq_f32(vceqzq_f32(x), vdupq_n_f32(f32::NEG_INFINITY), r);
            // x >= 0 is false for negative x and for NaN.
            vbslq_f32(vcgezq_f32(x), r, vdupq_n_f32(f32::NAN))
        }
    }

    /// `ln(x)`.
    #[inline(always)]
    pub(crate) fn ln(x: float32x4_t) -> float32x4_t {
        let (n, f) = log_reduce(x);
        let l = log1p_poly(f);
        // SAFETY: register-only NEON arithmetic; NEON is statically enabled.
        let r = unsafe { vfmaq_f32(vfmaq_f32(l, n, vdupq_n_f32(LN2_LO)), n, vdupq_n_f32(LN2_HI)) };
        log_special(x, r)
    }

    /// `log10(x)`.
    #[inline(always)]
    pub(crate) fn log10(x: float32x4_t) -> float32x4_t {
        let (n, f) = log_reduce(x);
        let l = log1p_poly(f);
        // SAFETY: register-only NEON arithmetic; NEON is statically enabled.
        let r = unsafe {
            let t = vfmaq_f32(vmulq_n_f32(l, LOG10_E), n, vdupq_n_f32(LOG10_2_LO));
            vfmaq_f32(t, n, vdupq_n_f32(LOG10_2_HI))
        };
        log_special(x, r)
    }

    /// `max(x, 0)` (`fmax`: NaN propagates, `-0 -> +0`).
    #[inline(always)]
    pub(crate) fn relu(x: float32x4_t) -> float32x4_t {
        // SAFETY: register-only NEON arithmetic; NEON is statically enabled.
        unsafe { vmaxq_f32(x, vdupq_n_f32(0.0)) }
    }

    /// `max(x, min)` (`fmax`).
    #[inline(always)]
    pub(crate) fn clamp_min(x: float32x4_t, min: f32) -> float32x4_t {
        // SAFETY: register-only NEON arithmetic; NEON is statically enabled.
        unsafe { vmaxq_f32(x, vdupq_n_f32(min)) }
    }

    /// Leaky ReLU (compare and select, as the portable code).
    #[inline(always)]
    pub(crate) fn leaky_relu(x: float32x4_t, slope: f32) -> float32x4_t {
        // SAFETY: register-only NEON arithmetic; NEON is statically enabled.
        unsafe { vbslq_f32(vcltzq_f32(x), vmulq_n_f32(x, slope), x) }
    }

    /// Applies `f` to one partial vector of `x.len() < 4` lanes through a stack buffer
    /// (the padding lanes are 0 and their results are discarded by the caller).
    #[inline(always)]
    fn tail(x: &[f32], f: &impl Fn(float32x4_t) -> float32x4_t) -> [f32; 4] {
        debug_assert!(x.len() < 4);
        let mut buf = [0.0f32; 4];
        buf[..x.len()].copy_from_slice(x);
        // SAFETY: `buf` holds 4 f32; NEON is statically enabled.
        unsafe { vst1q_f32(buf.as_mut_ptr(), f(vld1q_f32(buf.as_ptr()))) };
        buf
    }

    /// `x[i] = f(x[i])`: 16 floats (4 independent vectors) per step, then single vectors,
    /// then a partial vector.
    #[inline(always)]
    pub(crate) fn map(x: &mut [f32], f: impl Fn(float32x4_t) -> float32x4_t) {
        let mut c16 = x.chunks_exact_mut(16);
        for c in &mut c16 {
            // SAFETY: `c` has exactly 16 elements (4 vectors); NEON is statically enabled.
            unsafe {
                let v = vld1q_f32_x4(c.as_ptr());
                let r = float32x4x4_t(f(v.0), f(v.1), f(v.2), f(v.3));
                vst1q_f32_x4(c.as_mut_ptr(), r);
            }
        }
        let mut c4 = c16.into_remainder().chunks_exact_mut(4);
        for c in &mut c4 {
            // SAFETY: `c` has exactly 4 elements; NEON is statically enabled.
            unsafe { vst1q_f32(c.as_mut_ptr(), f(vld1q_f32(c.as_ptr()))) };
        }
        let rest = c4.into_remainder();
        if !rest.is_empty() {
            let r = tail(rest, &f);
            let n = rest.len();
            rest.copy_from_slice(&r[..n]);
        }
    }

    /// `y[i] = f(x[i])`.
    ///
    /// # Panics
    /// When `x.len() != y.len()`.
    #[inline(always)]
    pub(crate) fn map_to(x: &[f32], y: &mut [f32], f: impl Fn(float32x4_t) -> float32x4_t) {
        assert_eq!(x.len(), y.len(), "activation: input and output lengths differ");
        let mut x16 = x.chunks_exact(16);
        let mut y16 = y.chunks_exact_mut(16);
        for (a, b) in (&mut x16).zip(&mut y16) {
            // SAFETY: `a` and `b` have exactly 16 elements; NEON is statically enabled.
            unsafe {
                let v = vld1q_f32_x4(a.as_ptr());
                let r = float32x4x4_t(f(v.0), f(v.1), f(v.2), f(v.3));
                vst1q_f32_x4(b.as_mut_ptr(), r);
            }
        }
        let mut x4 = x16.remainder().chunks_exact(4);
        let mut y4 = y16.into_remainder().chunks_exact_mut(4);
        for (a, b) in (&mut x4).zip(&mut y4) {
            // SAFETY: `a` and `b` have exactly 4 elements; NEON is statically enabled.
            unsafe { vst1q_f32(b.as_mut_ptr(), f(vld1q_f32(a.as_ptr()))) };
        }
        let (xr, yr) = (x4.remainder(), y4.into_remainder());
        if !xr.is_empty() {
            yr.copy_from_slice(&tail(xr, &f)[..xr.len()]);
        }
    }
}

#[cfg(all(target_arch = "aarch64", feature = "neon"))]
impl ActivationKernels for super::Neon {
    fn relu(x: &mut [f32]) {
        neon::map(x, neon::relu)
    }
    fn relu_to(x: &[f32], y: &mut [f32]) {
        neon::map_to(x, y, neon::relu)
    }
    fn leaky_relu(x: &mut [f32], slope: f32) {
        neon::map(x, |v| neon::leaky_relu(v, slope))
    }
    fn leaky_relu_to(x: &[f32], y: &mut [f32], slope: f32) {
        neon::map_to(x, y, |v| neon::leaky_relu(v, slope))
    }
    fn clamp_min(x: &mut [f32], min: f32) {
        neon::map(x, |v| neon::clamp_min(v, min))
    }
    fn clamp_min_to(x: &[f32], y: &mut [f32], min: f32) {
        neon::map_to(x, y, |v| neon::clamp_min(v, min))
    }
    fn gelu_erf(x: &mut [f32]) {
        neon::map(x, neon::gelu_erf)
    }
    fn gelu_erf_to(x: &[f32], y: &mut [f32]) {
        neon::map_to(x, y, neon::gelu_erf)
    }
    fn gelu_tanh(x: &mut [f32]) {
        neon::map(x, neon::gelu_tanh)
    }
    fn gelu_tanh_to(x: &[f32], y: &mut [f32]) {
        neon::map_to(x, y, neon::gelu_tanh)
    }
    fn silu(x: &mut [f32]) {
        neon::map(x, neon::silu)
    }
    fn silu_to(x: &[f32], y: &mut [f32]) {
        neon::map_to(x, y, neon::silu)
    }
    fn tanh(x: &mut [f32]) {
        neon::map(x, neon::tanh)
    }
    fn tanh_to(x: &[f32], y: &mut [f32]) {
        neon::map_to(x, y, neon::tanh)
    }
    fn sigmoid(x: &mut [f32]) {
        neon::map(x, neon::sigmoid)
    }
    fn sigmoid_to(x: &[f32], y: &mut [f32]) {
        neon::map_to(x, y, neon::sigmoid)
    }
    fn exp(x: &mut [f32]) {
        neon::map(x, neon::exp)
    }
    fn exp_to(x: &[f32], y: &mut [f32]) {
        neon::map_to(x, y, neon::exp)
    }
    fn ln(x: &mut [f32]) {
        neon::map(x, neon::ln)
    }
    fn ln_to(x: &[f32], y: &mut [f32]) {
        neon::map_to(x, y, neon::ln)
    }
    fn log10(x: &mut [f32]) {
        neon::map(x, neon::log10)
    }
    fn log10_to(x: &[f32], y: &mut [f32]) {
        neon::map_to(x, y, neon::log10)
    }
    fn erf(x: &mut [f32]) {
        neon::map(x, neon::erf)
    }
    fn erf_to(x: &[f32], y: &mut [f32]) {
        neon::map_to(x, y, neon::erf)
    }
}
