//! Int8-*activation* kernels with TFLite's requantisation: the arithmetic of TFLite's int8
//! operators (conv2d, depthwise conv2d, fully connected, LUT activations, QUANTIZE,
//! DEQUANTIZE), bit for bit. (The [`quant`](super::quant) family is another thing: int8
//! *weights* with f32 activations.)
//!
//! Tensors use TFLite's layouts and batch 1:
//! - conv2d: input `[1, H, W, Cin]` (NHWC), filter `[Cout, KH, KW, Cin]`, bias i32 `[Cout]`,
//!   output `[1, OH, OW, Cout]`;
//! - depthwise: input `[1, H, W, C]`, filter `[1, KH, KW, C * depth_multiplier]`, output
//!   channel `c * depth_multiplier + m` reading input channel `c`;
//! - fully connected: input `[rows, in]`, filter `[out, in]`, output `[rows, out]`.
//!
//! An output value is `acc = bias + sum (x - x_zp) * w` over the taps inside the image
//! (padding contributes nothing, TFLite's `is_point_inside_image`), then the output stage
//! [`Requant::apply`]: `multiplier * 2^(shift - 31)` in the chosen [`Rounding`], plus the
//! output zero point, clamped to the fused activation's range ([`OutputStage`]). Weights are
//! symmetric (zero point 0, as TFLite requires of int8 filters). Multipliers are per output
//! channel (TFLite's per-channel quantisation) or one for all ([`Int8Weights`]). The i32
//! accumulator wraps on overflow, as the compiled C does (overflow is undefined there); real
//! layers stay far from it (`|acc| <= K * 255 * 128` plus the bias).
//!
//! Geometry travels as structs ([`ConvGeometry`], [`DepthwiseGeometry`], [`FcGeometry`],
//! sharing [`Window2dI8`]), the rest of a layer's operands as [`LayerQuant`] (input zero
//! point, [`Int8Weights`], [`OutputStage`]); the geometry's `check` returns an error for
//! inconsistent lengths or parameters, so no entry point panics on bad input. The rounding
//! is a parameter of every call ([`OutputStage::rounding`]): which form the TFLite library
//! uses for an operator is a measured fact of the caller, not of these kernels. Files: this one (geometry, contract
//! checks, the trait), `requant.rs` (the requantisation), `portable.rs` (the default hooks),
//! `neon.rs` (the `Neon` overrides, aarch64 with feature `neon`).
//!
//! Sources (TensorFlow Lite 2.17, read for the arithmetic): `reference/integer_ops/conv.h`,
//! `depthwise_conv.h`, `fully_connected.h`, `kernels/padding.h` (output size and padding),
//! `kernel_util.cc` (`CalculateActivationRangeQuantized`), `reference/quantize.h`
//! (`AffineQuantize`), `reference/dequantize.h`, `reference/requantize.h`.

#[cfg(all(target_arch = "aarch64", feature = "neon"))]
mod neon;
mod portable;
mod requant;

#[cfg(all(target_arch = "aarch64", feature = "neon"))]
pub use neon::{conv2d_i8_on, fully_connected_i8_on, DotPath};

pub use requant::{
    rounding_divide_by_pot, rounding_shift_half_up, srdhm, QuantizedMultiplier, Requant, Rounding,
    ROUNDING_BLOCK,
};

use super::BackendType;
use crate::error::{Error, ShapeError};

/// How a window's output size and padding are computed (TFLite's `Padding`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Padding {
    /// No padding: `out = (in + stride - effective_kernel) / stride`.
    Valid,
    /// `out = ceil(in / stride)`, zeros around the image: `total = (out - 1) * stride +
    /// effective_kernel - in` (at least 0), `total / 2` before the image, the rest after.
    Same,
}

/// The spatial part of a 2-D window over an `H x W` image: kernel, stride, dilation and
/// padding. `effective_kernel = (kernel - 1) * dilation + 1`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Window2dI8 {
    /// Image rows `H`.
    pub height: usize,
    /// Image columns `W`.
    pub width: usize,
    /// Kernel rows `KH` (`>= 1`).
    pub kernel_h: usize,
    /// Kernel columns `KW` (`>= 1`).
    pub kernel_w: usize,
    /// Input rows between output rows (`>= 1`).
    pub stride_h: usize,
    /// Input columns between output columns (`>= 1`).
    pub stride_w: usize,
    /// Input rows between kernel rows (`>= 1`).
    pub dilation_h: usize,
    /// Input columns between kernel columns (`>= 1`).
    pub dilation_w: usize,
    /// Output size and padding rule.
    pub padding: Padding,
}

/// A [`Window2dI8`] resolved: output size and the padding before the image (TFLite's
/// `ComputeOutSize` and `ComputePaddingWithOffset`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct WindowOut {
    /// Output rows.
    pub out_h: usize,
    /// Output columns.
    pub out_w: usize,
    /// Zero rows above the image.
    pub pad_top: usize,
    /// Zero columns left of the image.
    pub pad_left: usize,
}

/// `(out, pad_before)` along one axis (TFLite `padding.h`), `None` when empty or overflowing.
fn axis_out(
    size: usize,
    kernel: usize,
    stride: usize,
    dilation: usize,
    p: Padding,
) -> Option<(usize, usize)> {
    let effective = (kernel - 1).checked_mul(dilation)?.checked_add(1)?;
    let out = match p {
        Padding::Same => size.div_ceil(stride),
        Padding::Valid => (size.checked_add(stride)?.checked_sub(effective)?) / stride,
    };
    if out == 0 {
        return None;
    }
    let reach = (out - 1).checked_mul(stride)?.checked_add(effective)?;
    Some((out, reach.saturating_sub(size) / 2))
}

/// An error of operator `op` breaking rule `reason`.
fn geometry(op: &'static str, reason: &'static str) -> Error {
    Error::Shape(ShapeError::Geometry { op, reason })
}

/// `Err(Length)` unless `got == expected`.
fn length(what: &'static str, expected: Option<usize>, got: usize) -> Result<(), Error> {
    match expected {
        Some(e) if e == got => Ok(()),
        Some(expected) => Err(Error::Length { what, expected, got }),
        None => Err(Error::BadShape { reason: "tensor size overflows usize" }),
    }
}

impl Window2dI8 {
    /// The output size and padding.
    ///
    /// # Errors
    /// [`Error::Shape`] (`Geometry`) when a size, kernel, stride or dilation is 0, or the
    /// output would be empty (a valid window larger than the image) or overflow.
    pub fn resolve(&self, op: &'static str) -> Result<WindowOut, Error> {
        let sizes = [self.height, self.width, self.kernel_h, self.kernel_w];
        let steps = [self.stride_h, self.stride_w, self.dilation_h, self.dilation_w];
        if sizes.contains(&0) || steps.contains(&0) {
            return Err(geometry(op, "image, kernel, stride and dilation must be >= 1"));
        }
        let rows =
            axis_out(self.height, self.kernel_h, self.stride_h, self.dilation_h, self.padding);
        let cols =
            axis_out(self.width, self.kernel_w, self.stride_w, self.dilation_w, self.padding);
        match (rows, cols) {
            (Some((out_h, pad_top)), Some((out_w, pad_left))) => {
                Ok(WindowOut { out_h, out_w, pad_top, pad_left })
            }
            _ => Err(geometry(op, "the window gives an empty output")),
        }
    }
}

/// The int8 output stage shared by an operator's outputs: [`Requant`] without the
/// multiplier, and the rounding of the product.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct OutputStage {
    /// Output zero point.
    pub zero_point: i32,
    /// Lowest output value (`-128` with no activation, `max(-128, zero_point)` for RELU).
    pub act_min: i32,
    /// Highest output value (127 for int8).
    pub act_max: i32,
    /// How the rescaling rounds (which form the TFLite library uses for the operator); a
    /// layer kernel takes output channel `c`'s as [`Rounding::at`]`(c, Cout)`.
    pub rounding: Rounding,
}

impl OutputStage {
    /// The int8 stage of TFLite's `CalculateActivationRangeQuantized` with no activation:
    /// `[-128, 127]`.
    pub const fn int8(zero_point: i32, rounding: Rounding) -> Self {
        OutputStage { zero_point, act_min: -128, act_max: 127, rounding }
    }

    /// The stage with multiplier `m`.
    #[inline]
    pub fn requant(&self, m: QuantizedMultiplier) -> Requant {
        Requant {
            multiplier: m.multiplier,
            shift: m.shift,
            out_zp: self.zero_point,
            act_min: self.act_min,
            act_max: self.act_max,
        }
    }

    /// Checks zero point and range against the output type's `[lo, hi]`.
    fn check(&self, op: &'static str, [lo, hi]: [i32; 2]) -> Result<(), Error> {
        let inside = |v: i32| (lo..=hi).contains(&v);
        if !inside(self.zero_point) || !inside(self.act_min) || !inside(self.act_max) {
            return Err(geometry(op, "output zero point or activation range outside the type"));
        }
        if self.act_min > self.act_max {
            return Err(geometry(op, "activation range is empty (min > max)"));
        }
        Ok(())
    }
}

/// The int8 range.
const I8: [i32; 2] = [-128, 127];
/// The uint8 range.
const U8: [i32; 2] = [0, 255];

/// Checks an input zero point against the int8 range.
fn check_zero_point(op: &'static str, zp: i32) -> Result<(), Error> {
    if (I8[0]..=I8[1]).contains(&zp) {
        Ok(())
    } else {
        Err(geometry(op, "input zero point outside the int8 range"))
    }
}

/// The weights of a conv, depthwise or fully connected layer.
#[derive(Clone, Copy, Debug)]
pub struct Int8Weights<'a> {
    /// The filter in the layer's TFLite layout (module docs), zero point 0.
    pub filter: &'a [i8],
    /// One i32 per output channel (scale `x_scale * w_scale[c]`, zero point 0), or none.
    pub bias: Option<&'a [i32]>,
    /// One per output channel, or one for all (per-tensor).
    pub multipliers: &'a [QuantizedMultiplier],
}

impl Int8Weights<'_> {
    /// Checks lengths against `channels` outputs and `per_channel` filter values each.
    fn check(&self, op: &'static str, channels: usize, per_channel: usize) -> Result<(), Error> {
        length("filter", channels.checked_mul(per_channel), self.filter.len())?;
        if let Some(bias) = self.bias {
            length("bias", Some(channels), bias.len())?;
        }
        if self.multipliers.len() != 1 {
            length("multipliers", Some(channels), self.multipliers.len())?;
        }
        self.multipliers.iter().try_for_each(|m| m.check(op))
    }

    /// The multiplier of output channel `c`.
    #[inline]
    fn multiplier(&self, c: usize) -> QuantizedMultiplier {
        if self.multipliers.len() == 1 {
            self.multipliers[0]
        } else {
            self.multipliers[c]
        }
    }

    /// The bias of output channel `c` (0 without one).
    #[inline]
    fn bias(&self, c: usize) -> i32 {
        self.bias.map_or(0, |b| b[c])
    }
}

/// The checks of a layer over a window ([`ConvGeometry::check`]): `[in, out, filter]`
/// channels, `filter` being the filter values per tap and output channel (`in` for a conv,
/// 1 for a depthwise one).
fn check_window(
    op: &'static str,
    g: &Window2dI8,
    [c_in, c_out, filter]: [usize; 3],
    x_len: usize,
    q: &LayerQuant<'_>,
    y_len: usize,
) -> Result<WindowOut, Error> {
    if c_in == 0 || c_out == 0 {
        return Err(geometry(op, "channel counts (and the depth multiplier) must be >= 1"));
    }
    let win = g.resolve(op)?;
    let plane = |h: usize, w: usize, c: usize| h.checked_mul(w)?.checked_mul(c);
    length("input", plane(g.height, g.width, c_in), x_len)?;
    let Some(taps) = plane(g.kernel_h, g.kernel_w, filter) else {
        return Err(Error::BadShape { reason: "filter size overflows usize" });
    };
    q.weights.check(op, c_out, taps)?;
    length("output", plane(win.out_h, win.out_w, c_out), y_len)?;
    check_zero_point(op, q.x_zp)?;
    q.out.check(op, I8)?;
    Ok(win)
}

/// What a conv, depthwise or fully connected kernel takes besides its input and output
/// tensors: the input zero point, the weights and the output stage.
#[derive(Clone, Copy, Debug)]
pub struct LayerQuant<'a> {
    /// The input's zero point (int8 range); TFLite's input offset is its negation.
    pub x_zp: i32,
    /// Filter, bias and multipliers.
    pub weights: Int8Weights<'a>,
    /// Zero point, activation range and rounding of the output.
    pub out: OutputStage,
}

/// The geometry of an int8 conv2d (NHWC, batch 1; layouts in the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ConvGeometry {
    /// The spatial window.
    pub window: Window2dI8,
    /// Input channels `Cin` (`>= 1`).
    pub in_channels: usize,
    /// Output channels `Cout` (`>= 1`).
    pub out_channels: usize,
}

impl ConvGeometry {
    /// Checks the geometry and the lengths of input (`x_len`) and output (`y_len`) and the
    /// weights against it; returns the resolved window.
    ///
    /// # Errors
    /// [`Error::Shape`] for a bad window, zero channels, a bad multiplier, zero point or
    /// output stage; [`Error::Length`] for a wrong length (input `H*W*Cin`,
    /// filter `Cout*KH*KW*Cin`, bias `Cout`, multipliers 1 or `Cout`, output
    /// `OH*OW*Cout`).
    pub fn check(
        &self,
        x_len: usize,
        q: &LayerQuant<'_>,
        y_len: usize,
    ) -> Result<WindowOut, Error> {
        let channels = [self.in_channels, self.out_channels, self.in_channels];
        check_window("conv2d_i8", &self.window, channels, x_len, q, y_len)
    }

    /// [`check`](Self::check) against slices `x` and `y`; returns the hook's argument.
    ///
    /// # Errors
    /// As [`check`](Self::check).
    fn checked(&self, x: &[i8], q: &LayerQuant<'_>, y: &[i8]) -> Result<CheckedConv<'_>, Error> {
        Ok((self, self.check(x.len(), q, y.len())?))
    }
}

/// A conv2d geometry that passed [`ConvGeometry::check`], with the window it resolved (the
/// argument of [`Int8Kernels::conv2d_i8_checked`]).
pub type CheckedConv<'a> = (&'a ConvGeometry, WindowOut);

/// A depthwise geometry that passed [`DepthwiseGeometry::check`], with the window it resolved
/// (the argument of [`Int8Kernels::depthwise_conv2d_i8_checked`]).
pub type CheckedDepthwise<'a> = (&'a DepthwiseGeometry, WindowOut);

/// The geometry of an int8 depthwise conv2d (NHWC, batch 1; layouts in the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct DepthwiseGeometry {
    /// The spatial window.
    pub window: Window2dI8,
    /// Input channels `C` (`>= 1`).
    pub channels: usize,
    /// Output channels per input channel (`>= 1`); `Cout = C * depth_multiplier`.
    pub depth_multiplier: usize,
}

impl DepthwiseGeometry {
    /// Output channels `C * depth_multiplier` (`None` on overflow).
    pub fn out_channels(&self) -> Option<usize> {
        self.channels.checked_mul(self.depth_multiplier)
    }

    /// Checks as [`ConvGeometry::check`] does: input `H*W*C`, filter `KH*KW*Cout`, bias and
    /// multipliers `Cout` (or one multiplier), output `OH*OW*Cout`.
    ///
    /// # Errors
    /// As [`ConvGeometry::check`].
    pub fn check(
        &self,
        x_len: usize,
        q: &LayerQuant<'_>,
        y_len: usize,
    ) -> Result<WindowOut, Error> {
        const OP: &str = "depthwise_conv2d_i8";
        let Some(c_out) = self.out_channels() else {
            return Err(geometry(OP, "output channels overflow usize"));
        };
        check_window(OP, &self.window, [self.channels, c_out, 1], x_len, q, y_len)
    }

    /// [`check`](Self::check) against slices `x` and `y`; returns the hook's argument.
    ///
    /// # Errors
    /// As [`check`](Self::check).
    fn checked(
        &self,
        x: &[i8],
        q: &LayerQuant<'_>,
        y: &[i8],
    ) -> Result<CheckedDepthwise<'_>, Error> {
        Ok((self, self.check(x.len(), q, y.len())?))
    }
}

/// The geometry of an int8 fully connected layer: `rows` inputs of `in_features`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FcGeometry {
    /// Input rows (TFLite's batches; `>= 1`).
    pub rows: usize,
    /// Input features (`>= 1`).
    pub in_features: usize,
    /// Output features (`>= 1`).
    pub out_features: usize,
}

impl FcGeometry {
    /// Checks lengths: input `rows*in`, filter `out*in`, bias `out`, multipliers 1 or `out`,
    /// output `rows*out`.
    ///
    /// # Errors
    /// As [`ConvGeometry::check`].
    pub fn check(&self, x_len: usize, q: &LayerQuant<'_>, y_len: usize) -> Result<(), Error> {
        const OP: &str = "fully_connected_i8";
        if self.rows == 0 || self.in_features == 0 || self.out_features == 0 {
            return Err(geometry(OP, "rows and features must be >= 1"));
        }
        length("input", self.rows.checked_mul(self.in_features), x_len)?;
        q.weights.check(OP, self.out_features, self.in_features)?;
        length("output", self.rows.checked_mul(self.out_features), y_len)?;
        check_zero_point(OP, q.x_zp)?;
        q.out.check(OP, I8)
    }

    /// [`check`](Self::check) against slices `x` and `y`; returns the hook's argument.
    ///
    /// # Errors
    /// As [`check`](Self::check).
    fn checked(&self, x: &[i8], q: &LayerQuant<'_>, y: &[i8]) -> Result<&Self, Error> {
        self.check(x.len(), q, y.len()).map(|()| self)
    }
}

/// An affine quantisation of f32 values: `real = scale * (q - zero_point)`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AffineQuant {
    /// The scale (finite, `> 0`).
    pub scale: f32,
    /// The zero point (in the int8 range).
    pub zero_point: i32,
}

impl AffineQuant {
    /// Checks the scale and the zero point.
    fn check(&self, op: &'static str) -> Result<(), Error> {
        if !(self.scale.is_finite() && self.scale > 0.0) {
            return Err(geometry(op, "the scale must be finite and > 0"));
        }
        check_zero_point(op, self.zero_point)
    }
}

/// `Err(Length)` unless `x` and `y` have the same length.
fn same_len(x: usize, y: usize) -> Result<(), Error> {
    length("output", Some(x), y)
}

/// The int8-activation kernels (TFLite's integer arithmetic; module docs).
///
/// The entry points check the geometry and every length and return an error instead of
/// panicking, then call their hook (`*_checked`), whose default body is the portable
/// implementation; a backend overrides hooks only. A hook is called only with checked
/// arguments; an override may rely on that for its results but must stay memory-safe.
pub trait Int8Kernels: BackendType {
    /// conv2d: `y[oy, ox, oc] = stage(bias[oc] + sum_{ky, kx, ic} (x[iy, ix, ic] - x_zp) *
    /// w[oc, ky, kx, ic])` over the taps inside the image, `iy = oy * stride_h - pad_top +
    /// ky * dilation_h` (and the same for columns), `stage` the output stage with channel
    /// `oc`'s multiplier (TFLite `reference_integer_ops::ConvPerChannel`).
    ///
    /// # Errors
    /// [`ConvGeometry::check`]'s; nothing is written then.
    fn conv2d_i8(g: &ConvGeometry, x: &[i8], q: LayerQuant<'_>, y: &mut [i8]) -> Result<(), Error> {
        Self::conv2d_i8_checked(g.checked(x, &q, y)?, x, q, y);
        Ok(())
    }

    /// The hook of [`conv2d_i8`](Self::conv2d_i8) (checked arguments).
    fn conv2d_i8_checked(g: CheckedConv<'_>, x: &[i8], q: LayerQuant<'_>, y: &mut [i8]) {
        portable::conv2d(g, x, q, y);
    }

    /// Depthwise conv2d: `y[oy, ox, c * dm + m] = stage(bias + sum_{ky, kx} (x[iy, ix, c] -
    /// x_zp) * w[ky, kx, c * dm + m])`, taps as in [`conv2d_i8`](Self::conv2d_i8) (TFLite
    /// `reference_integer_ops::DepthwiseConvPerChannel`).
    ///
    /// # Errors
    /// [`DepthwiseGeometry::check`]'s; nothing is written then.
    fn depthwise_conv2d_i8(
        g: &DepthwiseGeometry,
        x: &[i8],
        q: LayerQuant<'_>,
        y: &mut [i8],
    ) -> Result<(), Error> {
        Self::depthwise_conv2d_i8_checked(g.checked(x, &q, y)?, x, q, y);
        Ok(())
    }

    /// The hook of [`depthwise_conv2d_i8`](Self::depthwise_conv2d_i8) (checked arguments).
    fn depthwise_conv2d_i8_checked(
        g: CheckedDepthwise<'_>,
        x: &[i8],
        q: LayerQuant<'_>,
        y: &mut [i8],
    ) {
        portable::depthwise(g, x, q, y);
    }

    /// Fully connected: `y[r, j] = stage(bias[j] + sum_k (x[r, k] - x_zp) * w[j, k])`
    /// (TFLite `reference_integer_ops::FullyConnected`, filter zero point 0).
    ///
    /// # Errors
    /// [`FcGeometry::check`]'s; nothing is written then.
    fn fully_connected_i8(
        g: &FcGeometry,
        x: &[i8],
        q: LayerQuant<'_>,
        y: &mut [i8],
    ) -> Result<(), Error> {
        Self::fully_connected_i8_checked(g.checked(x, &q, y)?, x, q, y);
        Ok(())
    }

    /// The hook of [`fully_connected_i8`](Self::fully_connected_i8) (checked arguments).
    fn fully_connected_i8_checked(g: &FcGeometry, x: &[i8], q: LayerQuant<'_>, y: &mut [i8]) {
        portable::fully_connected(g, x, q, y);
    }

    /// A 256-entry table of an int8 unary function (TFLite's LUT path, e.g. LOGISTIC):
    /// `y[i] = lut[x[i] + 128]`. The table is built elsewhere (entry `q + 128` holds the
    /// output for input `q`).
    ///
    /// # Errors
    /// [`Error::Length`] when `y.len() != x.len()`.
    fn lut_i8(lut: &[i8; 256], x: &[i8], y: &mut [i8]) -> Result<(), Error> {
        same_len(x.len(), y.len())?;
        for (y, &x) in y.iter_mut().zip(x) {
            *y = lut[usize::from(x as u8 ^ 0x80)];
        }
        Ok(())
    }

    /// QUANTIZE between int8 tensors: `y = stage(x - x_zp)` with multiplier `m` (TFLite
    /// `Requantize`; the usual `m` is `QuantizedMultiplier::from_real(x_scale / y_scale)`).
    ///
    /// # Errors
    /// [`Error::Length`] for unequal lengths; [`Error::Shape`] for a bad zero point,
    /// multiplier or stage.
    fn requantize_i8(
        x: &[i8],
        x_zp: i32,
        m: QuantizedMultiplier,
        out: OutputStage,
        y: &mut [i8],
    ) -> Result<(), Error> {
        let stage = check_requantize("requantize_i8", (x.len(), y.len()), x_zp, m, &out, I8)?;
        portable::requantize(x, x_zp, stage, out.rounding, y);
        Ok(())
    }

    /// QUANTIZE int8 to uint8: as [`requantize_i8`](Self::requantize_i8), the output stage
    /// in `[0, 255]` (with equal scales, `m = {2^30, 1}` and zero point `x_zp + 128`: `x + 128`).
    ///
    /// # Errors
    /// As [`requantize_i8`](Self::requantize_i8).
    fn requantize_i8_u8(
        x: &[i8],
        x_zp: i32,
        m: QuantizedMultiplier,
        out: OutputStage,
        y: &mut [u8],
    ) -> Result<(), Error> {
        let stage = check_requantize("requantize_i8_u8", (x.len(), y.len()), x_zp, m, &out, U8)?;
        portable::requantize(x, x_zp, stage, out.rounding, y);
        Ok(())
    }

    /// QUANTIZE f32 to int8 (TFLite `AffineQuantize`): `y = clamp(round(x / scale) +
    /// zero_point, -128, 127)`, the quotient in f32, rounded half away from zero
    /// (`TfLiteRound`); NaN gives `zero_point`.
    ///
    /// # Errors
    /// [`Error::Length`] for unequal lengths; [`Error::Shape`] for a bad scale or zero point.
    fn quantize_f32_i8(x: &[f32], q: AffineQuant, y: &mut [i8]) -> Result<(), Error> {
        same_len(x.len(), y.len())?;
        q.check("quantize_f32_i8")?;
        portable::quantize(x, q, y);
        Ok(())
    }

    /// DEQUANTIZE int8 to f32 (TFLite `Dequantize`): `y = f32(x - zero_point) * scale`, one
    /// rounding of the exact product.
    ///
    /// # Errors
    /// As [`quantize_f32_i8`](Self::quantize_f32_i8).
    fn dequantize_i8_f32(x: &[i8], q: AffineQuant, y: &mut [f32]) -> Result<(), Error> {
        same_len(x.len(), y.len())?;
        q.check("dequantize_i8_f32")?;
        for (y, &x) in y.iter_mut().zip(x) {
            *y = (i32::from(x) - q.zero_point) as f32 * q.scale;
        }
        Ok(())
    }
}

/// The checks of the requantising QUANTIZE: lengths, zero point, multiplier, stage in the
/// output type's range; returns the stage as a [`Requant`].
fn check_requantize(
    op: &'static str,
    (x_len, y_len): (usize, usize),
    x_zp: i32,
    m: QuantizedMultiplier,
    out: &OutputStage,
    range: [i32; 2],
) -> Result<Requant, Error> {
    same_len(x_len, y_len)?;
    check_zero_point(op, x_zp)?;
    m.check(op)?;
    out.check(op, range)?;
    Ok(out.requant(m))
}

impl Int8Kernels for super::Portable {}

impl<I: super::X86Isa> Int8Kernels for super::X86<I> {}
