//! The detector's quantisation around a model step: raw frontend features (`u16`) to the
//! model's `int8` input, and the model's `uint8` output back to a probability, with the
//! arithmetic of pymicro-wakeword 2.5.0 (`MicroWakeWord.process_streaming_prob`, numpy 2.4.6,
//! x86-64), so that every input byte and every probability equals the peer's.
//!
//! - **Input** ([`InputQuantizer`]): the peer receives each feature as the `f64` value
//!   `raw * 0.0390625` (pymicro-features 2.0.2 returns `(double)(u16 * 0.0390625f)`, exact:
//!   `raw * 5` fits in 24 bits) and computes, in `f64`,
//!   `np.round(x / f64(scale) + zero_point).astype(int8)`: one division and one addition,
//!   each correctly rounded, then rounding to an integer with ties to even, then numpy's cast
//!   ([`numpy_x86_i8`]), which wraps instead of clamping.
//! - **Output** ([`OutputDequantizer`]): `(u8.astype(float32) - zero_point) * scale` in `f32`
//!   (numpy 2 keeps Python scalars weak, so the arithmetic stays `f32`), then widened to `f64`
//!   (`.item()`).

use super::detector::DetectorError;
use super::frontend::FEATURE_SCALE;

/// Rounds `v` to an integer, ties to even (numpy's `np.round` with 0 decimals; IEEE
/// `roundTiesToEven`), in `core` only: `f64::round_ties_even` needs `std`. NaN and infinities
/// are returned unchanged.
pub fn round_ties_even(v: f64) -> f64 {
    // 2^52: from there on every f64 is an integer.
    const INTEGRAL: f64 = 4_503_599_627_370_496.0;
    // NaN, infinities and |v| >= 2^52 are their own rounding.
    if v.is_nan() || v.abs() >= INTEGRAL {
        return v;
    }
    // |v| < 2^52: the truncation is exact in i64 and back, and `v - t` is exact (same sign,
    // |v - t| < 1 with no more significant bits than v).
    let t = v as i64;
    let frac = v - t as f64;
    let step = if v < 0.0 { -1 } else { 1 };
    let half = frac.abs();
    let rounded = if half > 0.5 || (half == 0.5 && t % 2 != 0) { t + step } else { t };
    // Keep the sign of a zero result (np.round(-0.4) is -0.0).
    if rounded == 0 && v.is_sign_negative() {
        -0.0
    } else {
        rounded as f64
    }
}

/// numpy 2.4.6's `float64 → int8` cast (`astype(int8)`) on x86-64, for an integral `q`: the
/// value goes through a truncating 32-bit conversion (`cvttsd2si`) and keeps its low byte, so
/// values in the `i32` range wrap modulo 256 (`128 → -128`, `24979 → -109`); values outside
/// it, infinities and NaN give the conversion's "integer indefinite" `0x8000_0000`, whose low
/// byte is 0. Measured with numpy 2.4.6 on x86-64 over every integer in ±70000, on 2^31,
/// 2^31 + 5, -2^31 - 1, 2^40, 1e300, ±inf and NaN, contiguous and strided (C leaves such a
/// cast undefined; this is what the peer's build does).
pub fn numpy_x86_i8(q: f64) -> i8 {
    // -2^31 <= q < 2^31 (false for NaN).
    if (-2_147_483_648.0..2_147_483_648.0).contains(&q) {
        q as i32 as i8
    } else {
        0
    }
}

/// The model input's quantisation `(scale, zero_point)` and the peer's rule from a raw
/// frontend feature to the input byte.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct InputQuantizer {
    /// The input tensor's scale (`f32`, as TFLite stores it; the official models:
    /// 0.10196078 = 26/255 rounded to `f32`).
    pub scale: f32,
    /// The input tensor's zero point (the official models: -128).
    pub zero_point: i32,
}

impl InputQuantizer {
    /// The quantiser of an input tensor with `scale` and `zero_point`.
    ///
    /// # Errors
    /// [`DetectorError::InputScale`] when `scale` is not finite and positive.
    pub fn new(scale: f32, zero_point: i32) -> Result<Self, DetectorError> {
        if !(scale.is_finite() && scale > 0.0) {
            return Err(DetectorError::InputScale);
        }
        Ok(Self { scale, zero_point })
    }

    /// The input byte of the raw feature `raw` (feature = `raw * 0.0390625`):
    /// `numpy_x86_i8(round_ties_even(f64(raw) * 0.0390625 / f64(scale) + zero_point))`.
    /// With the official models' quantisation, raw 666 gives 127 and raw 667 wraps to -128.
    pub fn quantize(&self, raw: u16) -> i8 {
        let x = f64::from(raw) * f64::from(FEATURE_SCALE);
        numpy_x86_i8(round_ties_even(x / f64::from(self.scale) + f64::from(self.zero_point)))
    }

    /// Quantises a frame: `out[i] = quantize(raw[i])`.
    ///
    /// # Panics
    /// If `raw` and `out` differ in length (a caller's bug: the feeder passes equal slices).
    pub fn quantize_frame(&self, raw: &[u16], out: &mut [i8]) {
        assert_eq!(raw.len(), out.len(), "frame lengths");
        for (o, &r) in out.iter_mut().zip(raw) {
            *o = self.quantize(r);
        }
    }
}

/// The model output's quantisation and the peer's dequantisation of a `uint8` output.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct OutputDequantizer {
    /// The output tensor's scale (the official models: 1/256).
    pub scale: f32,
    /// The output tensor's zero point (the official models: 0).
    pub zero_point: i32,
}

impl OutputDequantizer {
    /// `(f32(q) - f32(zero_point)) * scale` in `f32`, as numpy 2.4.6 computes
    /// `(u8.astype(float32) - zero_point) * scale` (Python scalars are weak: the zero point is
    /// converted to `f32`, the product is `f32`). With scale 1/256 and zero point 0 it is
    /// `q / 256`, exact.
    pub fn dequantize(&self, q: u8) -> f32 {
        // `as`: the peer converts the Python int to float32 (rounding to nearest).
        (f32::from(q) - self.zero_point as f32) * self.scale
    }
}
