//! TFLite's requantisation: a real multiplier as a Q31 fixed-point value and a power of two
//! ([`QuantizedMultiplier`]), and the integer product that rescales an i32 accumulator by it
//! ([`QuantizedMultiplier::apply`]) in each rounding the TFLite library can compile to
//! ([`Rounding`]), then the output zero point and the activation clamp ([`Requant`]).
//!
//! Sources (TensorFlow Lite 2.17, read for the arithmetic only):
//! `tensorflow/lite/kernels/internal/quantization_util.cc` (`QuantizeMultiplier`),
//! `tensorflow/lite/kernels/internal/common.h` (`MultiplyByQuantizedMultiplier`, its
//! `TFLITE_SINGLE_ROUNDING` form and the NEON `MultiplyByQuantizedMultiplier4Rows`), and
//! gemmlowp `fixedpoint/fixedpoint.h` (`SaturatingRoundingDoublingHighMul`,
//! `RoundingDivideByPOT`).

use crate::error::{Error, ShapeError};

/// A real multiplier `m` as `multiplier * 2^(shift - 31)`: `multiplier` in
/// `[2^30, 2^31)` (a Q31 value in `[0.5, 1)`) or 0, `shift` a power of two.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct QuantizedMultiplier {
    /// The Q31 significand: `round(frac * 2^31)` with `frac` in `[0.5, 1)`, or 0.
    pub multiplier: i32,
    /// The binary exponent: `m = frac * 2^shift`. Positive values shift the accumulator
    /// left before the product, negative ones divide the product by `2^-shift`.
    pub shift: i32,
}

/// How the rescaling product [`QuantizedMultiplier::apply`] rounds: each variant is one
/// form the TFLite library computes, depending on its build and the kernel's code path.
///
/// The doubling high product `SRDHM(a, b)` (gemmlowp) is `floor((2ab + 2^31) / 2^32)`
/// saturated to i32 (ties towards `+inf`); NEON's `sqrdmulh` computes the same value, so the
/// two double-rounding variants differ only in the final division by `2^-shift`, at ties of
/// negative values.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Rounding {
    /// TFLite's default portable form (no `TFLITE_SINGLE_ROUNDING`):
    /// `RoundingDivideByPOT(SRDHM(x << left, multiplier), right)`, the division rounding
    /// half away from zero (gemmlowp's `RoundingDivideByPOT`).
    AwayFromZero,
    /// The NEON form of the same build (`MultiplyByQuantizedMultiplier4Rows`:
    /// `vrshlq_s32(vqrdmulhq_s32(vshlq_s32(x, left), multiplier), -right)`): the same
    /// doubling high product, then a division rounding half up (towards `+inf`).
    HalfUp,
    /// The `TFLITE_SINGLE_ROUNDING` form: `(x * multiplier + 2^(30 - shift)) >> (31 - shift)`
    /// in i64, one rounding half up of the exact product.
    Single,
    /// TFLite's DEPTHWISE_CONV_2D as measured on its x86-64 and aarch64 libraries
    /// (`tools/microwakeword/FACTS.md` section 4.1 and 4.3: 0 mismatches over 2.3 M outputs
    /// with 2 869 ties): [`HalfUp`](Self::HalfUp) on the output channels of whole blocks of
    /// [`ROUNDING_BLOCK`] (the library's 8-lane vector body), [`AwayFromZero`](Self::AwayFromZero)
    /// on the last `C mod 8` (its scalar tail), `C` being the layer's output channels. A
    /// layer kernel resolves it per channel with [`at`](Self::at); where there are no
    /// channels ([`QuantizedMultiplier::apply`], the requantising QUANTIZE) it is `HalfUp`.
    HalfUpBlocks,
}

/// The channel block of [`Rounding::HalfUpBlocks`]: 8 (FACTS.md section 4.1).
pub const ROUNDING_BLOCK: usize = 8;

impl Rounding {
    /// The rounding of output channel `c` of a layer of `channels` output channels: `self`,
    /// except for [`HalfUpBlocks`](Self::HalfUpBlocks), which gives `HalfUp` for `c` below
    /// `channels - channels % 8` and `AwayFromZero` from there on.
    #[inline]
    pub const fn at(self, c: usize, channels: usize) -> Rounding {
        match self {
            Rounding::HalfUpBlocks if c >= channels - channels % ROUNDING_BLOCK => {
                Rounding::AwayFromZero
            }
            Rounding::HalfUpBlocks => Rounding::HalfUp,
            other => other,
        }
    }
}

/// The rule broken by a bad multiplier, as an error of operator `op`.
fn geometry(op: &'static str, reason: &'static str) -> Error {
    Error::Shape(ShapeError::Geometry { op, reason })
}

/// `(q, e)` with `x = q * 2^e`, `q` in `[0.5, 1)`, for finite `x > 0` (C's `frexp`).
fn frexp(x: f64) -> (f64, i32) {
    const MANTISSA: u32 = 52;
    let bits = x.to_bits();
    let exp = ((bits >> MANTISSA) & 0x7ff) as i32;
    if exp == 0 {
        // Subnormal: scale into the normal range first (2^64 is exact).
        let (q, e) = frexp(x * f64::from_bits(0x43f0_0000_0000_0000));
        return (q, e - 64);
    }
    // Replace the exponent by -1's (biased 1022): the significand in [0.5, 1).
    let q = f64::from_bits((bits & !(0x7ff << MANTISSA)) | (1022 << MANTISSA));
    (q, exp - 1022)
}

impl QuantizedMultiplier {
    /// TFLite's `QuantizeMultiplier` of a real multiplier (`quantization_util.cc`):
    /// `(q, shift) = frexp(real)`, `multiplier = round(q * 2^31)` half away from zero
    /// (`TfLiteRound`); a result of exactly `2^31` becomes `2^30` with `shift + 1`; a shift
    /// below -31 (reals below about `2^-32`) gives `{0, 0}`, as does `real == 0`. The
    /// `TFLITE_SINGLE_ROUNDING` build also saturates shifts above 30 to `{2^31 - 1, 30}`;
    /// such reals (`>= 2^30`) are refused here instead.
    ///
    /// # Errors
    /// [`Error::Shape`] (`Geometry`) when `real` is negative, not finite or `>= 2^30`
    /// (requantisation scales are positive ratios of scales; a shift above 30 would not fit
    /// the left shift of an i32).
    pub fn from_real(real: f64) -> Result<Self, Error> {
        const OP: &str = "quantize_multiplier";
        if !real.is_finite() || real < 0.0 {
            return Err(geometry(OP, "the real multiplier must be finite and >= 0"));
        }
        if real == 0.0 {
            return Ok(Self { multiplier: 0, shift: 0 });
        }
        let (q, mut shift) = frexp(real);
        // q * 2^31 is exact (a power-of-two scaling) and below 2^31, where an f64 step is
        // 2^-22, so adding 0.5 is exact and the truncating cast rounds half away from zero.
        let mut fixed = (q * 2_147_483_648.0 + 0.5) as i64;
        if fixed == 1 << 31 {
            fixed /= 2;
            shift += 1;
        }
        if shift < -31 {
            return Ok(Self { multiplier: 0, shift: 0 });
        }
        if shift > 30 {
            return Err(geometry(OP, "the real multiplier must be below 2^30"));
        }
        Ok(Self { multiplier: fixed as i32, shift })
    }

    /// The multiplier of a layer from its f32 scales, as TFLite computes it
    /// (`PopulateConvolutionQuantizationParams` and `GetQuantizedConvolutionMultipler` in
    /// `kernel_util.cc`): `from_real(f64(input) * f64(filter) / f64(output))`, in f64. With
    /// `filter = 1.0` it is the multiplier of a requantising QUANTIZE (`quantize.cc`:
    /// `f64(input) / f64(output)`; the product by 1 is exact).
    ///
    /// # Errors
    /// As [`from_real`](Self::from_real), and for an output scale of 0 (the ratio is not
    /// finite).
    pub fn from_scales(input: f32, filter: f32, output: f32) -> Result<Self, Error> {
        Self::from_real(f64::from(input) * f64::from(filter) / f64::from(output))
    }

    /// Checks what [`apply`](Self::apply) needs: `multiplier >= 0` and `shift` in
    /// `-31..=30` (every value [`from_real`](Self::from_real) returns).
    ///
    /// # Errors
    /// [`Error::Shape`] (`Geometry`, operator `op`) otherwise.
    pub fn check(&self, op: &'static str) -> Result<(), Error> {
        if self.multiplier < 0 {
            return Err(geometry(op, "a quantized multiplier is negative"));
        }
        if !(-31..=30).contains(&self.shift) {
            return Err(geometry(op, "a quantized multiplier's shift is outside -31..=30"));
        }
        Ok(())
    }

    /// `x * multiplier * 2^(shift - 31)`, rounded as `rounding` says (TFLite's
    /// `MultiplyByQuantizedMultiplier`; [`Rounding::HalfUpBlocks`] as `HalfUp`). A positive shift multiplies `x` by `2^shift` in
    /// i32 first, wrapping on overflow as the compiled C does (overflow is undefined there;
    /// accumulators of real models are far from it). Needs [`check`](Self::check)ed values
    /// (a shift outside `-31..=30` is clamped into it).
    #[inline]
    pub fn apply(self, x: i32, rounding: Rounding) -> i32 {
        let shift = self.shift.clamp(-31, 30);
        match rounding {
            Rounding::AwayFromZero | Rounding::HalfUp | Rounding::HalfUpBlocks => {
                let left = shift.max(0) as u32;
                let right = (-shift).max(0) as u32;
                let high = srdhm(x.wrapping_shl(left), self.multiplier);
                if rounding == Rounding::AwayFromZero {
                    rounding_divide_by_pot(high, right)
                } else {
                    rounding_shift_half_up(high, right)
                }
            }
            Rounding::Single => {
                let total = (31 - shift) as u32;
                let product = i64::from(x) * i64::from(self.multiplier) + (1i64 << (total - 1));
                (product >> total) as i32
            }
        }
    }
}

/// gemmlowp's `SaturatingRoundingDoublingHighMul`: the high 32 bits of `2ab`, rounded
/// half up (`(ab + 2^30) / 2^31` for `ab >= 0`, `(ab + 1 - 2^30) / 2^31` truncated towards
/// zero otherwise), saturated at the one overflowing input `a = b = i32::MIN`.
#[inline]
pub fn srdhm(a: i32, b: i32) -> i32 {
    if a == i32::MIN && b == i32::MIN {
        return i32::MAX;
    }
    let ab = i64::from(a) * i64::from(b);
    let nudge = if ab >= 0 { 1i64 << 30 } else { 1 - (1i64 << 30) };
    ((ab + nudge) / (1i64 << 31)) as i32
}

/// gemmlowp's `RoundingDivideByPOT`: `x / 2^exponent` rounded half away from zero
/// (`exponent` in `0..=31`).
#[inline]
pub fn rounding_divide_by_pot(x: i32, exponent: u32) -> i32 {
    let mask = ((1i64 << exponent) - 1) as i32;
    let remainder = x & mask;
    let threshold = (mask >> 1) + i32::from(x < 0);
    (x >> exponent) + i32::from(remainder > threshold)
}

/// NEON's rounding shift right (`srshl` by `-exponent`): `(x + 2^(exponent-1)) >> exponent`
/// without overflow, rounding half up (`exponent` in `0..=31`).
#[inline]
pub fn rounding_shift_half_up(x: i32, exponent: u32) -> i32 {
    if exponent == 0 {
        return x;
    }
    ((i64::from(x) + (1i64 << (exponent - 1))) >> exponent) as i32
}

/// The output stage of an int8 kernel: rescale, add the output zero point, clamp to the
/// fused activation's range (TFLite's `CalculateActivationRangeQuantized`: `[-128, 127]`
/// with no activation, `[max(-128, zero_point), 127]` for RELU).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Requant {
    /// The Q31 significand of the multiplier ([`QuantizedMultiplier::multiplier`]).
    pub multiplier: i32,
    /// Its power of two ([`QuantizedMultiplier::shift`]).
    pub shift: i32,
    /// The output zero point (`[-128, 127]` for int8).
    pub out_zp: i32,
    /// The lowest output value (the fused activation's lower bound).
    pub act_min: i32,
    /// The highest output value.
    pub act_max: i32,
}

impl Requant {
    /// `min(max(apply(acc) + out_zp, act_min), act_max)`: TFLite's int8 output stage, in
    /// its order (so `act_min > act_max` gives `act_max`, never a panic). The zero point is
    /// added with wrapping, as the C's i32 addition does in practice.
    #[inline]
    pub fn apply(&self, acc: i32, rounding: Rounding) -> i32 {
        let m = QuantizedMultiplier { multiplier: self.multiplier, shift: self.shift };
        m.apply(acc, rounding).wrapping_add(self.out_zp).max(self.act_min).min(self.act_max)
    }
}
