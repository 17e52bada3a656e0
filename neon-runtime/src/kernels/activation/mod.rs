//! Activation kernels: ReLU, leaky ReLU, clamp from below, GELU (erf and tanh forms), SiLU,
//! tanh, sigmoid, exp, erf and the logarithms `ln` and `log10` (the [`Activation`]s), in
//! place ([`ActivationKernels::activate`]) or out of place
//! ([`ActivationKernels::activate_to`]), over flat `f32` slices of any length.
//!
//! Files: this one holds the definitions, the constants and the trait (entry points and the
//! hook); `portable.rs` the scalar forms of the approximations and the portable slice
//! drivers (other families name them `activation::scalar`), `neon.rs` the `float32x4_t`
//! forms and the NEON drivers (reused by the softmax and attention kernels), `x86.rs` the
//! x86 GELU (erf form) and tanh.
//!
//! `core` has no `exp`, `tanh`, `erf` or `ln` in `no_std`, so this module carries its own
//! vectorisable approximations. [`Portable`] and `Neon` run the same algorithm with the same
//! coefficients; they differ only in that NEON fuses multiply-adds (`fmla`, one rounding)
//! where the portable code rounds twice, so the two agree to a few ulps (the tests allow
//! `4 eps |y|`; ReLU, leaky ReLU and the clamp are bitwise equal). `X86<I>` runs GELU (erf
//! form) and tanh 16 lanes at a time with AVX-512F, 8 with AVX2 and FMA (`x86.rs`; fused
//! like NEON; both levels give the same bits) and the portable code for every other
//! function.
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

use super::parallel::{row_blocks, Parallel, Rows};
use super::{BackendType, Portable};
use crate::error::Error;

/// The hook body of a backend: `match f` over the forms in scope where it is invoked
/// (`relu`, `leaky_relu`, `clamp_min`, `gelu_erf`, ..., and the slice driver `map_args`),
/// so that the list of functions is written once for every backend.
macro_rules! activate_with_forms {
    ($f:expr, $io:expr) => {
        match $f {
            Activation::Relu => map_args($io, relu),
            Activation::LeakyRelu { slope } => map_args($io, |v| leaky_relu(v, slope)),
            Activation::ClampMin { min } => map_args($io, |v| clamp_min(v, min)),
            Activation::GeluErf => map_args($io, gelu_erf),
            Activation::GeluTanh => map_args($io, gelu_tanh),
            Activation::Silu => map_args($io, silu),
            Activation::Tanh => map_args($io, tanh),
            Activation::Sigmoid => map_args($io, sigmoid),
            Activation::Exp => map_args($io, exp),
            Activation::Ln => map_args($io, ln),
            Activation::Log10 => map_args($io, log10),
            Activation::Erf => map_args($io, erf),
        }
    };
}

#[cfg(all(target_arch = "aarch64", feature = "neon"))]
pub(crate) mod neon;
pub(crate) mod portable;
mod x86;

/// The scalar forms of the approximations (the portable backend maps them over slices);
/// other kernel families (softmax, attention) reuse them.
pub(crate) use portable as scalar;
pub(crate) use portable::{map_args as portable_map_args, portable_map};

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

/// A pointwise activation function: the function a kernel call applies and, as the operator
/// [`crate::ops::activation::Activation`] (the same type, re-exported), a step of a plan.
/// Definitions, algorithms, accuracy and special values: see the [module docs](self).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Activation {
    /// ReLU: `max(x, 0)`; NaN stays NaN, `relu(-0) = +0`.
    Relu,
    /// Leaky ReLU: `x` for `x >= 0`, `slope * x` for `x < 0` (PyTorch's `negative_slope`,
    /// commonly 0.01 or 0.2).
    LeakyRelu {
        /// Factor of the negative inputs; the operator requires it finite.
        slope: f32,
    },
    /// Clamp from below: `max(x, min)` (IEEE `maximum`, as NEON `fmax`: NaN stays NaN,
    /// `max(-0, +0) = +0`). openWakeWord applies `ClampMin { min: -0.4 }` after each leaky
    /// ReLU of its embedding.
    ClampMin {
        /// The lower bound; the operator requires it not NaN.
        min: f32,
    },
    /// GELU, exact (erf) form: `0.5 x (1 + erf(x / sqrt 2))` (PyTorch `approximate="none"`).
    GeluErf,
    /// GELU, tanh form (Hendrycks & Gimpel 2016):
    /// `0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))` (PyTorch `approximate="tanh"`).
    GeluTanh,
    /// SiLU (swish): `x * sigmoid(x)`.
    Silu,
    /// Hyperbolic tangent.
    Tanh,
    /// Logistic sigmoid: `1 / (1 + exp(-x))`.
    Sigmoid,
    /// Exponential (overflow to `+inf`, subnormal results flushed to 0).
    Exp,
    /// Natural logarithm (`ln 0 = -inf`, `ln(x < 0) = NaN`, `ln(+inf) = +inf`).
    Ln,
    /// Decimal logarithm, `log10(x) = ln(x) / ln(10)` (special values as [`Ln`](Self::Ln)).
    Log10,
    /// Error function.
    Erf,
}

/// Elements per unit of the blocks of [`ActivationKernels::activate_in`]: a multiple of every
/// backend's vector width and unrolling, so a block boundary never falls inside a vector
/// step of the serial call.
pub const ACTIVATION_BLOCK: usize = 64;

/// The slices of a one-input elementwise kernel: updated in place, or read from `x` and
/// written to `y` (`y[i] = f(x[i])`, equal lengths).
#[derive(Debug)]
pub enum MapArgs<'a> {
    /// `x[i] = f(x[i])`.
    InPlace(&'a mut [f32]),
    /// `y[i] = f(x[i])`: `(x, y)`.
    To(&'a [f32], &'a mut [f32]),
}

/// Activation kernels over flat slices of any length (no geometry beyond the length).
///
/// [`activate`](Self::activate) and [`activate_to`](Self::activate_to) are the entry points:
/// they check the lengths, return at once for empty slices and call the hook
/// [`activate_unchecked`](Self::activate_unchecked). Backends override the hook only, never
/// an entry point; its default is the portable code.
pub trait ActivationKernels: BackendType {
    /// `x[i] = f(x[i])` for every element.
    fn activate(f: Activation, x: &mut [f32]) {
        if !x.is_empty() {
            Self::activate_unchecked(f, MapArgs::InPlace(x));
        }
    }

    /// `y[i] = f(x[i])`: the same results as [`activate`](Self::activate), bit for bit.
    ///
    /// # Panics
    /// When `x.len() != y.len()`.
    fn activate_to(f: Activation, x: &[f32], y: &mut [f32]) {
        assert_eq!(x.len(), y.len(), "activation: input and output lengths differ");
        if !x.is_empty() {
            Self::activate_unchecked(f, MapArgs::To(x, y));
        }
    }

    /// [`activate`](Self::activate) on `par`: blocks of whole multiples of
    /// [`ACTIVATION_BLOCK`] elements (whole vectors of every backend, so every element is
    /// computed as in the serial call: the same bits for any context).
    ///
    /// # Errors
    /// The context's ([`Parallel::dispatch`]); `x` is then partly updated.
    fn activate_in(par: &dyn Parallel, f: Activation, x: &mut [f32]) -> Result<(), Error> {
        let split = Rows {
            shape: (x.len(), 1, 1),
            tile: ACTIVATION_BLOCK,
            join_tail: false,
            work_per_row: 16,
        };
        row_blocks(par, split, x, |_, x| Self::activate(f, x))
    }

    /// [`activate_to`](Self::activate_to) on `par`, split as
    /// [`activate_in`](Self::activate_in).
    ///
    /// # Errors
    /// The context's ([`Parallel::dispatch`]); `y` is then partly written.
    ///
    /// # Panics
    /// When `x.len() != y.len()`, before any task runs.
    fn activate_to_in(
        par: &dyn Parallel,
        f: Activation,
        x: &[f32],
        y: &mut [f32],
    ) -> Result<(), Error> {
        assert_eq!(x.len(), y.len(), "activation: input and output lengths differ");
        let split = Rows {
            shape: (y.len(), 1, 1),
            tile: ACTIVATION_BLOCK,
            join_tail: false,
            work_per_row: 16,
        };
        row_blocks(par, split, y, |r, y| Self::activate_to(f, &x[r], y))
    }

    /// Hook: applies `f` to `io`. Called only by the entry points: the contract is checked
    /// (equal lengths) and there is at least one element. Default: the portable code.
    fn activate_unchecked(f: Activation, io: MapArgs<'_>) {
        portable::activate(f, io)
    }
}

impl ActivationKernels for Portable {}
