//! The integer parameters the int8 kernels take, computed from a [`StreamGraph`]'s scales
//! as the TFLite library computes them, so that no float is needed at run time.
//!
//! - conv, depthwise and fully connected ([`LayerRequant`]): one [`QuantizedMultiplier`] per
//!   output channel from `f64(input) * f64(filter[c]) / f64(output)`
//!   ([`QuantizedMultiplier::from_scales`]; TFLite `kernel_util.cc`
//!   `PopulateConvolutionQuantizationParams`, the FC per-tensor), the input zero point, and
//!   the output stage: zero point and the fused activation's range (TFLite
//!   `CalculateActivationRangeQuantized`: RELU `[max(-128, zp), 127]`, NONE `[-128, 127]`);
//! - the rounding of each kind, measured against the x86-64 library
//!   (`tools/microwakeword/FACTS.md` section 4.1): [`CONV_ROUNDING`], [`DEPTHWISE_ROUNDING`],
//!   [`FC_ROUNDING`];
//! - `LOGISTIC`'s 256-entry table ([`logistic_lut`], FACTS.md section 5);
//! - `QUANTIZE` between int8 / uint8 tensors ([`Requantize`], FACTS.md section 6).
//!
//! [`StreamGraph`]: super::StreamGraph

use alloc::format;
use alloc::vec::Vec;

use neon_runtime::kernels::int8::{
    Int8Weights, LayerQuant, OutputStage, QuantizedMultiplier, Rounding,
};

use super::{Conv2d, DType, FullyConnected, FusedActivation, TensorSpec};
use crate::Error;

/// CONV_2D's rounding. Every conv of the 7 models has RELU and output zero point −128, so
/// the negative halves where the two double roundings differ clamp away: both reproduce all
/// 2.9 M observed outputs (FACTS.md 4.1); half up is the library's vector form.
pub const CONV_ROUNDING: Rounding = Rounding::HalfUp;

/// DEPTHWISE_CONV_2D's rounding: half up on the output channels of whole blocks of 8 (the
/// library's vector body), half away from zero on the last `C mod 8` (its scalar tail), as
/// both the x86-64 and the aarch64 library do (FACTS.md 4.1 and 4.3: 0 mismatches over 2.3 M
/// outputs with 2 869 ties; the tail shows only in hey_jarvis, whose 30 and 60 channels are
/// not multiples of 8).
pub const DEPTHWISE_ROUNDING: Rounding = Rounding::HalfUpBlocks;

/// FULLY_CONNECTED's rounding in the x86-64 library (FACTS.md 4.1; the aarch64 library
/// rounds once, 4.3).
pub const FC_ROUNDING: Rounding = Rounding::HalfUp;

/// What a conv, depthwise or fully connected kernel takes besides its weights and tensors.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LayerRequant {
    /// The input's zero point.
    pub input_zero_point: i32,
    /// One multiplier per output channel (conv, depthwise) or one for all (FC).
    pub multipliers: Vec<QuantizedMultiplier>,
    /// Output zero point, activation range, rounding.
    pub stage: OutputStage,
}

impl LayerRequant {
    /// The kernels' operands for `filter` (values) and `bias` with these parameters.
    pub fn layer_quant<'a>(&'a self, filter: &'a [i8], bias: &'a [i32]) -> LayerQuant<'a> {
        LayerQuant {
            x_zp: self.input_zero_point,
            weights: Int8Weights { filter, bias: Some(bias), multipliers: &self.multipliers },
            out: self.stage,
        }
    }

    /// A `CONV_2D`'s parameters (rounding [`CONV_ROUNDING`]).
    ///
    /// # Errors
    /// As [`LayerRequant::new`].
    pub fn conv2d(c: &Conv2d) -> Result<Self, Error> {
        Self::new([&c.input, &c.output], &c.filter.scales, c.activation, CONV_ROUNDING)
    }

    /// A `DEPTHWISE_CONV_2D`'s parameters (rounding [`DEPTHWISE_ROUNDING`]).
    ///
    /// # Errors
    /// As [`LayerRequant::new`].
    pub fn depthwise(c: &Conv2d) -> Result<Self, Error> {
        Self::new([&c.input, &c.output], &c.filter.scales, c.activation, DEPTHWISE_ROUNDING)
    }

    /// A `FULLY_CONNECTED`'s parameters (rounding [`FC_ROUNDING`]); its weights are
    /// per-tensor, so one multiplier.
    ///
    /// # Errors
    /// As [`LayerRequant::new`], and for weights without a scale.
    pub fn fully_connected(f: &FullyConnected) -> Result<Self, Error> {
        let Some(scale) = f.filter.scales.first() else {
            return Err(Error::new("FULLY_CONNECTED: the weights have no scale"));
        };
        Self::new([&f.input, &f.output], &[*scale], f.activation, FC_ROUNDING)
    }

    /// The parameters of a layer reading `input`, writing `output` (both int8, per-tensor),
    /// with weight scales `filter` (one per output channel, or one).
    ///
    /// # Errors
    /// A tensor that is not int8 with one scale and zero point in the int8 range; a
    /// multiplier [`QuantizedMultiplier::from_scales`] refuses (scale not finite or `<= 0`,
    /// ratio `>= 2^30`).
    pub fn new(
        [input, output]: [&TensorSpec; 2],
        filter: &[f32],
        activation: FusedActivation,
        rounding: Rounding,
    ) -> Result<Self, Error> {
        let (in_s, in_zp) = int8_quant(input, DType::I8)?;
        let (out_s, out_zp) = int8_quant(output, DType::I8)?;
        let multipliers =
            filter.iter().map(|&w| multiplier(in_s, w, out_s)).collect::<Result<Vec<_>, _>>()?;
        let act_min = match activation {
            FusedActivation::None => -128,
            // TFLite: max(qmin, zp + round(0 / scale)).
            FusedActivation::Relu => out_zp.max(-128),
        };
        let stage = OutputStage { zero_point: out_zp, act_min, act_max: 127, rounding };
        Ok(LayerRequant { input_zero_point: in_zp, multipliers, stage })
    }
}

/// `QuantizedMultiplier::from_scales` with this crate's error; the scales must be finite
/// and positive.
fn multiplier(input: f32, filter: f32, output: f32) -> Result<QuantizedMultiplier, Error> {
    let ok = |s: f32| s.is_finite() && s > 0.0;
    if !(ok(input) && ok(filter) && ok(output)) {
        return Err(Error::new(format!(
            "scales {input}, {filter}, {output}: every scale must be finite and > 0"
        )));
    }
    QuantizedMultiplier::from_scales(input, filter, output)
        .map_err(|e| Error::new(format!("scales {input}, {filter}, {output}: {e}")))
}

/// The (scale, zero point) of an 8-bit tensor of type `dtype` with one of each, the zero
/// point in the type's range.
fn int8_quant(t: &TensorSpec, dtype: DType) -> Result<(f32, i32), Error> {
    let range = if dtype == DType::U8 { 0..=255 } else { -128..=127 };
    match t.scale_zp() {
        Some((s, z)) if t.dtype == dtype && range.contains(&z) => Ok((s, z as i32)),
        _ => Err(Error::new(format!(
            "tensor {} is not {dtype:?} with one scale and a zero point in its range",
            t.index
        ))),
    }
}

/// `LOGISTIC`'s table for an int8 `input` and `output`, in the kernels' order (entry
/// `q + 128` holds the output for input `q`, as `Int8Kernels::lut_i8` reads it).
///
/// TFLite's int8 LOGISTIC is a table (`activations.cc`, `LUTPopulate<int8_t>` of `lut.h`),
/// built in f32: `x = in_s * f32(q - in_zp)`, `f = 1 / (1 + exp(-x))`, `y = round(f *
/// (1 / out_s))` half away from zero, `+ out_zp`, clamped to `[-128, 127]`. `exp` here is
/// f64's rounded to f32 (within one f32 ulp of any faithful `expf`): FACTS.md section 5
/// found the same 256 entries with glibc `expf`, f64 `exp` and numpy's, and no entry of the
/// 7 models (nor of 3 more) within 2 f32 ulps of a rounding boundary (the closest is 237
/// ulps away), so an `exp` that differs by an ulp cannot move an entry.
///
/// # Errors
/// A tensor that is not int8 with one scale and zero point, or a scale not finite and > 0.
pub fn logistic_lut(input: &TensorSpec, output: &TensorSpec) -> Result<[i8; 256], Error> {
    let (in_s, in_zp) = int8_quant(input, DType::I8)?;
    let (out_s, out_zp) = int8_quant(output, DType::I8)?;
    let ok = |s: f32| s.is_finite() && s > 0.0;
    if !(ok(in_s) && ok(out_s)) {
        return Err(Error::new(format!("LOGISTIC: scales {in_s}, {out_s} must be finite and > 0")));
    }
    let mut lut = [0i8; 256];
    for (q, entry) in (-128i32..=127).zip(lut.iter_mut()) {
        let rescaled = logistic_rescaled(in_s, in_zp, out_s, q).round();
        // f32 + i32 as TFLite adds them (exact: an integer below 2^24), then the clamp.
        let y = (rescaled + out_zp as f32) as i32;
        *entry = y.clamp(-128, 127) as i8;
    }
    Ok(lut)
}

/// `f32(1 / (1 + exp(-x))) * f32(1 / out_s)` before rounding, for input `q` (the value
/// [`logistic_lut`] rounds; public for margin checks).
pub fn logistic_rescaled(in_s: f32, in_zp: i32, out_s: f32, q: i32) -> f32 {
    let x = in_s * (q - in_zp) as f32;
    let e = f64::from(-x).exp() as f32;
    let f = 1.0f32 / (1.0f32 + e);
    f * (1.0f32 / out_s)
}

/// A `QUANTIZE` between 8-bit tensors as the kernels take it (`Int8Kernels::requantize_i8`,
/// to int8 or uint8): `y = stage(x - input_zero_point)` with `multiplier =
/// from_scales(in_s, 1, out_s)` (TFLite `quantize.cc`, `f64(in_s) / f64(out_s)`). For the
/// microWakeWord output, int8 → uint8 with equal scales, this is `{2^30, 1}` and `y = x + 128`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Requantize {
    /// The input's zero point.
    pub input_zero_point: i32,
    /// `in_s / out_s` as a quantised multiplier.
    pub multiplier: QuantizedMultiplier,
    /// Output zero point and the output type's full range (no activation).
    pub stage: OutputStage,
}

impl Requantize {
    /// The parameters of a QUANTIZE from int8 `input` to int8 or uint8 `output`.
    ///
    /// # Errors
    /// Another pair of types (f32 in or out is not a requantisation); a tensor without one
    /// scale and zero point in its type's range; a bad multiplier.
    pub fn new(input: &TensorSpec, output: &TensorSpec) -> Result<Self, Error> {
        let (in_s, in_zp) = int8_quant(input, DType::I8)?;
        let (out_s, out_zp) = match output.dtype {
            DType::I8 | DType::U8 => int8_quant(output, output.dtype)?,
            d => return Err(Error::new(format!("QUANTIZE from int8 to {d:?} is not supported"))),
        };
        let [act_min, act_max] = if output.dtype == DType::U8 { [0, 255] } else { [-128, 127] };
        // The requantising QUANTIZE rounds as the portable reference (it is exact here).
        let stage =
            OutputStage { zero_point: out_zp, act_min, act_max, rounding: Rounding::AwayFromZero };
        Ok(Requantize { input_zero_point: in_zp, multiplier: multiplier(in_s, 1.0, out_s)?, stage })
    }
}
