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
//! Geometry travels as structs ([`ConvGeometry`], [`DepthwiseGeometry`], [`FcGeometry`];
//! the window layers hold the conv2d family's [`Window2d`], which [`Window2d::with_padding`]
//! resolves from TFLite's [`Padding`] rules), the rest of a layer's operands as
//! [`LayerQuant`] (input zero point, [`Int8Weights`], [`OutputStage`]); one entry point,
//! [`Int8Kernels::layer_i8`], takes any of the three geometries ([`Int8Geometry`]), whose
//! `check` returns an error for inconsistent lengths or parameters, so no entry point panics
//! on bad input. The rounding
//! is a parameter of every call ([`OutputStage::rounding`]): which form the TFLite library
//! uses for an operator is a measured fact of the caller, not of these kernels. Files: this one (geometry, contract
//! checks, the trait, and [`DotLayer`] and [`layer_i8_on`], shared by the vector backends'
//! dot paths), `requant.rs` (the requantisation), `portable.rs` (the default hooks),
//! `neon.rs` (the `Neon` overrides, aarch64 with feature `neon`), `x86/` (the `X86` overrides).
//!
//! Sources (TensorFlow Lite 2.17, read for the arithmetic): `reference/integer_ops/conv.h`,
//! `depthwise_conv.h`, `fully_connected.h`, `kernels/padding.h` (output size and padding),
//! `kernel_util.cc` (`CalculateActivationRangeQuantized`), `reference/quantize.h`
//! (`AffineQuantize`), `reference/dequantize.h`, `reference/requantize.h`.

#[cfg(all(target_arch = "aarch64", feature = "neon"))]
mod neon;
mod portable;
mod requant;
#[cfg(neon_x86)]
mod x86;

#[cfg(all(target_arch = "aarch64", feature = "neon"))]
pub use neon::{DotPath, NeonWidening};
#[cfg(neon_x86)]
pub use x86::DotPath;

pub use requant::{
    rounding_divide_by_pot, rounding_shift_half_up, srdhm, QuantizedMultiplier, Requant, Rounding,
    ROUNDING_BLOCK,
};

pub use super::conv2d::{Padding, Window2d};

use super::BackendType;
use crate::error::{Error, ShapeError};
use portable::PathKernels;

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

/// The output type of the requantising QUANTIZE ([`Int8Kernels::requantize_i8`]): `i8` or
/// `u8`.
pub trait RequantOut: TryFrom<i32> + Default + Copy {
    /// The operator's name in errors.
    const OP: &'static str;
    /// The type's range `[lo, hi]`.
    const RANGE: [i32; 2];
}

impl RequantOut for i8 {
    const OP: &'static str = "requantize_i8";
    const RANGE: [i32; 2] = I8;
}

impl RequantOut for u8 {
    const OP: &'static str = "requantize_i8_u8";
    const RANGE: [i32; 2] = [0, 255];
}

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

    /// The multipliers of the 8 output channels `c0..c0 + 8` (per tensor: 8 copies of the
    /// one; per channel: `c0 + 8 <= Cout`).
    #[inline]
    #[cfg_attr(not(neon_x86), allow(dead_code))]
    fn multipliers8(&self, c0: usize) -> [QuantizedMultiplier; 8] {
        match self.multipliers.get(c0..c0 + 8) {
            Some(ms) if self.multipliers.len() > 1 => core::array::from_fn(|j| ms[j]),
            _ => [self.multiplier(c0); 8],
        }
    }

    /// The bias of output channel `c` (0 without one).
    #[inline]
    fn bias(&self, c: usize) -> i32 {
        self.bias.map_or(0, |b| b[c])
    }
}

/// The lengths `(H*W*C, OH*OW*c_out)` of a window layer `op` with `c_out` output channels
/// (`None`: they overflow), after the window's own checks: every size, stride and dilation
/// at least 1 and every position in range ([`Window2d::is_valid`]).
fn window_lengths(
    op: &'static str,
    g: &Window2d,
    c_out: Option<usize>,
) -> Result<(usize, usize), Error> {
    let Some(c_out) = c_out else {
        return Err(geometry(op, "output channels overflow usize"));
    };
    if g.channels == 0 || c_out == 0 {
        return Err(geometry(op, "channel counts (and the depth multiplier) must be >= 1"));
    }
    if !g.is_valid() {
        return Err(geometry(op, "window sizes, strides and dilations must be >= 1"));
    }
    Ok((volume([g.height, g.width, g.channels])?, volume([g.out_height, g.out_width, c_out])?))
}

/// The product of `sizes`.
///
/// # Errors
/// [`Error::BadShape`] on overflow.
pub(crate) fn volume<const N: usize>(sizes: [usize; N]) -> Result<usize, Error> {
    let overflow = Error::BadShape { reason: "size overflows usize" };
    sizes.into_iter().try_fold(1usize, |a, b| a.checked_mul(b)).ok_or(overflow)
}

/// A layer geometry of the int8 kernels ([`ConvGeometry`], [`DepthwiseGeometry`],
/// [`FcGeometry`]): its lengths and filter shape, its full check, and the [`Int8Kernels`]
/// hook that runs it ([`Int8Kernels::layer_i8`] is the checked entry point of all three).
pub trait Int8Geometry: Copy {
    /// The operator's name in errors.
    const OP: &'static str;

    /// Input and output values `(x_len, y_len)`: `H*W*Cin` and `OH*OW*Cout` for the
    /// window layers, `rows*in` and `rows*out` for fully connected.
    ///
    /// # Errors
    /// [`Error::Shape`] (`Geometry`) for zero channels or features, or an invalid window;
    /// [`Error::BadShape`] when a length overflows.
    fn lengths(&self) -> Result<(usize, usize), Error>;

    /// The filter as `[output channels, values per output channel]`: `[Cout, KH*KW*Cin]`
    /// for conv2d, `[Cout, KH*KW]` for depthwise (stored `KH*KW*Cout`, module docs),
    /// `[out, in]` for fully connected.
    ///
    /// # Errors
    /// As [`lengths`](Self::lengths).
    fn filter_shape(&self) -> Result<[usize; 2], Error>;

    /// Checks the geometry, then the input length `x_len`, the weights of `q`, the output
    /// length `y_len`, the input zero point and the output stage, in that order.
    ///
    /// # Errors
    /// [`lengths`](Self::lengths)'; [`Error::Length`] for a wrong length (input, filter,
    /// bias `Cout`, multipliers 1 or `Cout`, output); [`Error::Shape`] for a bad
    /// multiplier, zero point or output stage.
    fn check(&self, x_len: usize, q: &LayerQuant<'_>, y_len: usize) -> Result<(), Error> {
        let (x, y) = self.lengths()?;
        let [channels, per_channel] = self.filter_shape()?;
        length("input", Some(x), x_len)?;
        q.weights.check(Self::OP, channels, per_channel)?;
        length("output", Some(y), y_len)?;
        check_zero_point(Self::OP, q.x_zp)?;
        q.out.check(Self::OP, I8)
    }

    /// [`check`](Self::check)s `x`, `q` and `y`, then runs `layer` on them: the checked
    /// entry of every layer kernel.
    ///
    /// # Errors
    /// [`check`](Self::check)'s; nothing is written then.
    fn check_then(
        &self,
        (x, q, y): (&[i8], LayerQuant<'_>, &mut [i8]),
        layer: impl FnOnce(&Self, &[i8], LayerQuant<'_>, &mut [i8]),
    ) -> Result<(), Error> {
        self.check(x.len(), &q, y.len())?;
        layer(self, x, q, y);
        Ok(())
    }

    /// Runs backend `B`'s hook for this layer (`*_checked`) on `operands` (with the
    /// filter's row sums if given; the depthwise hook takes none); only with arguments that
    /// passed [`check`](Self::check).
    fn run_checked<B: Int8Kernels>(&self, operands: LayerOperands<'_>, y: &mut [i8]);

    /// The [`RowSums`] of `filter` that [`run_checked`](Self::run_checked) takes:
    /// [`RowSums::new`] over [`filter_shape`](Self::filter_shape) (conv2d and fully
    /// connected, whose rows are stored one after another), [`RowSums::NONE`] for depthwise
    /// or a bad geometry.
    fn row_sums(&self, filter: &[i8]) -> RowSums {
        self.filter_shape().map_or(RowSums::NONE, |shape| RowSums::new(filter, shape))
    }
}

/// Output channels whose filter row sums a [`RowSums`] holds (the official microWakeWord
/// models have at most 64; a layer with more runs without them).
pub const ROW_SUMS_CHANNELS: usize = 64;

/// The sum of each output channel's filter row (`sum_k w[c, k]` over the whole row:
/// `KH*KW*Cin` values for conv2d, `in` for fully connected; wrapping i32), computed once
/// when a layer is prepared, for up to [`ROW_SUMS_CHANNELS`] channels. The VNNI dot products
/// need it to fold the input offset (`vpdpbusd` multiplies unsigned bytes, so `x` goes in as
/// `x + 128`: `sum (x - x_zp) w = sum (x + 128) w - (128 + x_zp) sum w`); without it they
/// form the sum on every call. A fixed-size array, so `no_std` layers without `alloc`
/// (static parameters) hold one too.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct RowSums {
    /// Channels held: `Cout`, or 0 (none: more than [`ROW_SUMS_CHANNELS`]).
    len: usize,
    sums: [i32; ROW_SUMS_CHANNELS],
}

impl RowSums {
    /// No sums (kernels form them per call).
    pub const NONE: RowSums = RowSums { len: 0, sums: [0; ROW_SUMS_CHANNELS] };

    /// The sums of the rows of `filter` as `[channels, per_channel]` (row major), or
    /// [`NONE`](Self::NONE) for more than [`ROW_SUMS_CHANNELS`] channels or a filter
    /// shorter than `channels * per_channel`.
    pub fn new(filter: &[i8], [channels, per_channel]: [usize; 2]) -> Self {
        let fits = channels.checked_mul(per_channel).is_some_and(|n| n <= filter.len());
        if channels > ROW_SUMS_CHANNELS || per_channel == 0 || !fits {
            return RowSums::NONE;
        }
        let mut sums = [0i32; ROW_SUMS_CHANNELS];
        for (s, row) in sums.iter_mut().zip(filter.chunks_exact(per_channel).take(channels)) {
            *s = row.iter().fold(0i32, |a, &w| a.wrapping_add(i32::from(w)));
        }
        RowSums { len: channels, sums }
    }

    /// The sums, one per output channel, or `None` when not held.
    #[inline]
    pub fn get(&self) -> Option<&[i32]> {
        (self.len > 0).then(|| &self.sums[..self.len])
    }
}

/// A layer kernel's operands besides its output: the input, the [`LayerQuant`], and the
/// filter's row sums ([`RowSums`], one per output channel) if given.
pub type LayerOperands<'a> = (&'a [i8], LayerQuant<'a>, Option<&'a [i32]>);

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

/// The geometry of an int8 conv2d (NHWC, batch 1; layouts in the module docs): input
/// channels `Cin` are the window's `channels`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ConvGeometry {
    /// The spatial window and the input channels `Cin` (`>= 1`).
    pub window: Window2d,
    /// Output channels `Cout` (`>= 1`).
    pub out_channels: usize,
}

/// The geometry of an int8 depthwise conv2d (NHWC, batch 1; layouts in the module docs):
/// input channels `C` are the window's `channels`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct DepthwiseGeometry {
    /// The spatial window and the input channels `C` (`>= 1`).
    pub window: Window2d,
    /// Output channels per input channel (`>= 1`); `Cout = C * depth_multiplier`.
    pub depth_multiplier: usize,
}

impl DepthwiseGeometry {
    /// Output channels `C * depth_multiplier` (`None` on overflow).
    pub fn out_channels(&self) -> Option<usize> {
        self.window.channels.checked_mul(self.depth_multiplier)
    }
}

impl Int8Geometry for ConvGeometry {
    const OP: &'static str = "conv2d_i8";

    fn lengths(&self) -> Result<(usize, usize), Error> {
        window_lengths(Self::OP, &self.window, Some(self.out_channels))
    }

    fn filter_shape(&self) -> Result<[usize; 2], Error> {
        let g = &self.window;
        Ok([self.out_channels, volume([g.kernel_h, g.kernel_w, g.channels])?])
    }

    fn run_checked<B: Int8Kernels>(&self, (x, q, sums): LayerOperands<'_>, y: &mut [i8]) {
        B::conv2d_i8_checked(self, x, q, sums, y);
    }
}

impl Int8Geometry for DepthwiseGeometry {
    const OP: &'static str = "depthwise_conv2d_i8";

    fn lengths(&self) -> Result<(usize, usize), Error> {
        window_lengths(Self::OP, &self.window, self.out_channels())
    }

    fn filter_shape(&self) -> Result<[usize; 2], Error> {
        let c_out =
            self.out_channels().ok_or(Error::BadShape { reason: "size overflows usize" })?;
        Ok([c_out, volume([self.window.kernel_h, self.window.kernel_w])?])
    }

    fn run_checked<B: Int8Kernels>(&self, (x, q, _): LayerOperands<'_>, y: &mut [i8]) {
        B::depthwise_conv2d_i8_checked(self, x, q, y);
    }

    /// [`RowSums::NONE`]: the depthwise filter (`KH*KW*Cout`) holds no channel's row
    /// contiguously, and its kernels take no sums.
    fn row_sums(&self, _filter: &[i8]) -> RowSums {
        RowSums::NONE
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

impl Int8Geometry for FcGeometry {
    const OP: &'static str = "fully_connected_i8";

    fn lengths(&self) -> Result<(usize, usize), Error> {
        if self.rows == 0 || self.in_features == 0 || self.out_features == 0 {
            return Err(geometry(Self::OP, "rows and features must be >= 1"));
        }
        Ok((volume([self.rows, self.in_features])?, volume([self.rows, self.out_features])?))
    }

    fn filter_shape(&self) -> Result<[usize; 2], Error> {
        Ok([self.out_features, self.in_features])
    }

    fn run_checked<B: Int8Kernels>(&self, (x, q, sums): LayerOperands<'_>, y: &mut [i8]) {
        B::fully_connected_i8_checked(self, x, q, sums, y);
    }
}

/// A layer whose vector kernel forms its dot products on a path `P` (a backend's `DotPath`:
/// NEON's `sdot` or widening, x86's four): [`ConvGeometry`] and [`FcGeometry`].
pub trait DotLayer<P>: Int8Geometry {
    /// Runs the layer's kernel on `path` (arguments that passed [`Int8Geometry::check`];
    /// a path the CPU has, as [`layer_i8_on`] picks) with `operands`.
    fn run_on(&self, path: P, operands: LayerOperands<'_>, y: &mut [i8]);
}

/// conv2d: per output pixel, one dot product per output channel over the whole filter row
/// where the pixel's inputs are contiguous (or gathered), else one per inside tap.
impl<P: PathKernels> DotLayer<P> for ConvGeometry {
    fn run_on(&self, path: P, operands: LayerOperands<'_>, y: &mut [i8]) {
        path.conv2d(self, operands, y);
    }
}

/// Fully connected: one dot product per input row and output feature.
impl<P: PathKernels> DotLayer<P> for FcGeometry {
    fn run_on(&self, path: P, operands: LayerOperands<'_>, y: &mut [i8]) {
        path.fully_connected(self, operands, y);
    }
}

/// [`Int8Kernels::layer_i8`] on a chosen dot path `path` (a backend's `DotPath`; tests and
/// measurements force each path with it), with the filter's row sums `sums` as a prepared
/// layer passes them ([`Int8Geometry::row_sums`] of `q`'s filter) or `None` (formed per
/// call). A path the CPU lacks runs the one the backend has instead: NEON `Sdot` without
/// FEAT_DotProd runs `Widening`; an x86 path runs the best one the CPU has
/// (`DotPath::detect`), or the portable kernel without AVX2.
///
/// # Errors
/// As [`Int8Kernels::layer_i8`]; [`Error::Length`] when `sums` holds a number of values
/// other than the layer's output channels.
pub fn layer_i8_on<P: PathKernels, G: DotLayer<P>>(
    path: P,
    g: &G,
    x: &[i8],
    q: LayerQuant<'_>,
    sums: Option<&[i32]>,
    y: &mut [i8],
) -> Result<(), Error> {
    if let Some(s) = sums {
        length("row sums", g.filter_shape().ok().map(|[c, _]| c), s.len())?;
    }
    g.check_then((x, q, y), |g, x, q, y| match path.usable() {
        Some(path) => g.run_on(path, (x, q, sums), y),
        None => g.run_checked::<super::Portable>((x, q, sums), y),
    })
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
/// The entry points ([`layer_i8`](Self::layer_i8) and the elementwise ones) check the
/// geometry and every length and return an error instead of panicking; the layers' then
/// call their hook (`*_checked`), whose default body is the portable
/// implementation; a backend overrides hooks only. A hook is called only with checked
/// arguments; an override may rely on that for its results but must stay memory-safe.
pub trait Int8Kernels: BackendType {
    /// A conv2d, depthwise conv2d or fully connected layer of geometry `g` (the formulas
    /// are the hooks'): checks `g` against `x`, `q` and `y` ([`Int8Geometry::check`]), then
    /// runs the layer's hook.
    ///
    /// # Errors
    /// [`Int8Geometry::check`]'s; nothing is written then.
    fn layer_i8<G: Int8Geometry>(
        g: &G,
        x: &[i8],
        q: LayerQuant<'_>,
        y: &mut [i8],
    ) -> Result<(), Error> {
        g.check_then((x, q, y), |g, x, q, y| g.run_checked::<Self>((x, q, None), y))
    }

    /// conv2d, the hook of [`layer_i8`](Self::layer_i8) for a [`ConvGeometry`] (checked
    /// arguments): `y[oy, ox, oc] = stage(bias[oc] + sum_{ky, kx, ic} (x[iy, ix, ic] -
    /// x_zp) * w[oc, ky, kx, ic])` over the taps inside the image, `iy = oy * stride_h -
    /// pad_top + ky * dilation_h` (and the same for columns), `stage` the output stage with
    /// channel `oc`'s multiplier (TFLite `reference_integer_ops::ConvPerChannel`).
    ///
    /// `sums`: the filter's row sums ([`RowSums`], `Cout` values, those of `q`'s filter)
    /// when a prepared layer holds them ([`Int8Geometry::row_sums`]), else `None`; a
    /// backend whose dot products fold the input offset uses them, the portable kernel
    /// ignores them (same outputs either way).
    fn conv2d_i8_checked(
        g: &ConvGeometry,
        x: &[i8],
        q: LayerQuant<'_>,
        _sums: Option<&[i32]>,
        y: &mut [i8],
    ) {
        portable::conv2d(g, x, q, y);
    }

    /// Depthwise conv2d, the hook for a [`DepthwiseGeometry`] (checked arguments):
    /// `y[oy, ox, c * dm + m] = stage(bias + sum_{ky, kx} (x[iy, ix, c] - x_zp) * w[ky, kx,
    /// c * dm + m])`, taps as in [`conv2d_i8_checked`](Self::conv2d_i8_checked) (TFLite
    /// `reference_integer_ops::DepthwiseConvPerChannel`).
    fn depthwise_conv2d_i8_checked(
        g: &DepthwiseGeometry,
        x: &[i8],
        q: LayerQuant<'_>,
        y: &mut [i8],
    ) {
        portable::depthwise(g, x, q, y);
    }

    /// Fully connected, the hook for an [`FcGeometry`] (checked arguments): `y[r, j] =
    /// stage(bias[j] + sum_k (x[r, k] - x_zp) * w[j, k])` (TFLite
    /// `reference_integer_ops::FullyConnected`, filter zero point 0); `sums` as in
    /// [`conv2d_i8_checked`](Self::conv2d_i8_checked) (`out` values).
    fn fully_connected_i8_checked(
        g: &FcGeometry,
        x: &[i8],
        q: LayerQuant<'_>,
        _sums: Option<&[i32]>,
        y: &mut [i8],
    ) {
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

    /// QUANTIZE from int8 to `T` (int8 or uint8, [`RequantOut`]): `y = stage(x - x_zp)`
    /// with multiplier `m`, the output stage in `T`'s range (TFLite `Requantize`; the usual
    /// `m` is `QuantizedMultiplier::from_real(x_scale / y_scale)`; to uint8 with equal
    /// scales, `m = {2^30, 1}` and zero point `x_zp + 128` give `x + 128`).
    ///
    /// # Errors
    /// [`Error::Length`] for unequal lengths; [`Error::Shape`] for a bad zero point,
    /// multiplier or stage.
    fn requantize_i8<T: RequantOut>(
        x: &[i8],
        x_zp: i32,
        m: QuantizedMultiplier,
        out: OutputStage,
        y: &mut [T],
    ) -> Result<(), Error> {
        let stage = check_requantize(T::OP, (x.len(), y.len()), x_zp, m, &out, T::RANGE)?;
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

    /// DEQUANTIZE int8 to f32 (TFLite's optimised `Dequantize`, as the x86-64 library runs
    /// it): on the first `len - len mod 8` elements (its vector body)
    /// `y = f32(x · scale) + f32(-zero_point · scale)`, two roundings (the product in f32,
    /// the offset rounded once from f64, then the sum); on the last `len mod 8` (its scalar
    /// tail) one rounding of `(x - zero_point) · scale`. Measured:
    /// tools/microwakeword/FACTS.md section 6 (hey_luna, the crafted goldens, lengths 1–67).
    /// (The aarch64 library rounds once everywhere; the port follows x86-64, FACTS.md 4.3.)
    ///
    /// # Errors
    /// As [`quantize_f32_i8`](Self::quantize_f32_i8).
    fn dequantize_i8_f32(x: &[i8], q: AffineQuant, y: &mut [f32]) -> Result<(), Error> {
        same_len(x.len(), y.len())?;
        q.check("dequantize_i8_f32")?;
        let body = x.len() - x.len() % 8;
        let offset = (-f64::from(q.zero_point) * f64::from(q.scale)) as f32;
        for (y, &x) in y[..body].iter_mut().zip(&x[..body]) {
            *y = f32::from(x) * q.scale + offset;
        }
        for (y, &x) in y[body..].iter_mut().zip(&x[body..]) {
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

#[cfg(not(neon_x86))]
impl<I: super::X86Isa> Int8Kernels for super::X86<I> {}
