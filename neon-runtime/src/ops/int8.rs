//! Prepared int8-activation operators: TFLite's integer conv2d, depthwise conv2d, fully
//! connected, LUT activation (LOGISTIC), QUANTIZE and DEQUANTIZE, over the kernels of
//! [`crate::kernels::int8`] (whose docs give the arithmetic and its sources).
//!
//! - [`Int8Layer`] over a geometry ([`ConvGeometry`], [`DepthwiseGeometry`],
//!   [`FcGeometry`]; aliases [`Conv2dI8`], [`DepthwiseI8`], [`FullyConnectedI8`]) owns its
//!   filter, bias and multipliers ([`Int8Params`]: `Vec`s with feature `alloc`, or
//!   `&'static` slices), the input zero point and the output stage, all checked once in
//!   `new`; `run` checks only the two slice lengths and calls the kernel hook
//!   ([`Int8Kernels`]' `*_checked`) directly, without the entry point's per-call check of
//!   the geometry and every channel's multiplier.
//! - [`LogisticI8`] (a 256-entry table), [`RequantizeI8`], [`RequantizeI8U8`],
//!   [`QuantizeF32I8`], [`DequantizeI8F32`]: elementwise, any shape ([`Elementwise8`]).
//!
//! Tensors are plain slices (the runtime's views are f32): NHWC `[1, H, W, C]` with the
//! geometry's static sizes for the window layers, `[rows, features]` for fully connected.
//! The shape rules state those shapes in the channels-last layout
//! ([`Layout::FrameMajor`]). `run` never allocates and checks lengths before any kernel runs.

#[cfg(feature = "alloc")]
use alloc::vec::Vec;

use super::{expect_dim, expect_rank, only_input, ShapeRule};
use crate::dim::Dim;
use crate::error::{Error, ShapeError};
use crate::kernels::int8::{
    AffineQuant, ConvGeometry, DepthwiseGeometry, FcGeometry, Int8Geometry, Int8Kernels,
    Int8Weights, LayerQuant, OutputStage, QuantizedMultiplier, RequantOut, RowSums,
};
use crate::tensor::{Layout, Shape};

/// The filter, bias and multipliers of an int8 layer, in any storage
/// (`Q: AsRef<[i8]>`, `A: AsRef<[i32]>`, `M: AsRef<[QuantizedMultiplier]>`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Int8Params<Q, A, M> {
    /// The filter in the layer's TFLite layout ([`crate::kernels::int8`]).
    pub filter: Q,
    /// One i32 per output channel, or none.
    pub bias: Option<A>,
    /// One multiplier per output channel, or one for all.
    pub multipliers: M,
}

/// [`Int8Params`] in `Vec`s.
#[cfg(feature = "alloc")]
pub type OwnedInt8Params = Int8Params<Vec<i8>, Vec<i32>, Vec<QuantizedMultiplier>>;

/// [`Int8Params`] borrowed for the program's life (e.g. arrays in a firmware image).
pub type StaticInt8Params =
    Int8Params<&'static [i8], &'static [i32], &'static [QuantizedMultiplier]>;

impl<Q: AsRef<[i8]>, A: AsRef<[i32]>, M: AsRef<[QuantizedMultiplier]>> Int8Params<Q, A, M> {
    /// The parameters as the kernels take them.
    pub fn weights(&self) -> Int8Weights<'_> {
        Int8Weights {
            filter: self.filter.as_ref(),
            bias: self.bias.as_ref().map(AsRef::as_ref),
            multipliers: self.multipliers.as_ref(),
        }
    }
}

/// A layer geometry of [`Int8Layer`] ([`ConvGeometry`], [`DepthwiseGeometry`],
/// [`FcGeometry`]): its shape rule and the kernels' [`Int8Geometry`] (lengths, full check,
/// hook).
pub trait Int8LayerGeometry: ShapeRule + Int8Geometry {}

impl<G: ShapeRule + Int8Geometry> Int8LayerGeometry for G {}

/// The lengths that passed a geometry's full check against a layer's parameters
/// ([`Int8Layer`]'s checked-once path: `run` checks the two slice lengths against them and
/// calls the kernel hook).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Validated {
    x_len: usize,
    y_len: usize,
}

impl Validated {
    /// The kernel entry point's full check of `g` against `q`, at the lengths `g` gives.
    ///
    /// # Errors
    /// The geometry's own error, or as the kernel's `check`.
    fn new<G: Int8Geometry>(g: &G, q: &LayerQuant<'_>) -> Result<Self, Error> {
        let (x_len, y_len) = g.lengths()?;
        g.check(x_len, q, y_len)?;
        Ok(Validated { x_len, y_len })
    }

    /// `Err(Length)` unless `x` and `y` have the checked lengths (the kernels' errors, input
    /// first).
    #[inline]
    fn check_lengths(&self, x_len: usize, y_len: usize) -> Result<(), Error> {
        let pairs = [("input", self.x_len, x_len), ("output", self.y_len, y_len)];
        for (what, expected, got) in pairs {
            if expected != got {
                return Err(Error::Length { what, expected, got });
            }
        }
        Ok(())
    }
}

/// `[1, H, W, C]` -> `[1, OH, OW, Cout]` for a window layer with input channels `c_in`.
fn nhwc_rule<D: Dim>(
    op: &'static str,
    inputs: &[Shape<D>],
    [h, w, c_in]: [usize; 3],
    [oh, ow, c_out]: [usize; 3],
) -> Result<Shape<D>, ShapeError<D>> {
    let x = only_input(op, inputs, "expects exactly 1 input")?;
    expect_rank(op, 0, x, &[4], "4")?;
    let names = ["batch", "height", "width", "input channels"];
    for (axis, (what, size)) in names.into_iter().zip([1, h, w, c_in]).enumerate() {
        expect_dim(op, 0, x, axis, what, &D::constant(size))?;
    }
    Shape::new(&[1, oh, ow, c_out].map(D::constant))
        .map_err(|_| ShapeError::Geometry { op, reason: "empty output" })
}

/// The window layers' rule: the geometry's error, or `[1, H, W, C]` -> `[1, OH, OW,
/// Cout]`.
macro_rules! window_layer {
    ($geometry:ident, $c_out:expr) => {
        impl ShapeRule for $geometry {
            fn name(&self) -> &'static str {
                Self::OP
            }

            /// `[1, H, W, C]` -> `[1, OH, OW, Cout]` (NHWC, static sizes).
            ///
            /// # Errors
            /// [`ShapeError::Geometry`] for a bad geometry, [`ShapeError::Rank`] /
            /// [`ShapeError::Dim`] for another input shape.
            fn output_shape<D: Dim>(&self, inputs: &[Shape<D>]) -> Result<Shape<D>, ShapeError<D>> {
                let g = &self.window;
                let reason = "invalid window or channel count";
                let c_out: Option<usize> = $c_out(self);
                let (Ok(_), Some(c_out)) = (self.lengths(), c_out) else {
                    return Err(ShapeError::Geometry { op: Self::OP, reason });
                };
                let (input, output) =
                    ([g.height, g.width, g.channels], [g.out_height, g.out_width, c_out]);
                nhwc_rule(Self::OP, inputs, input, output)
            }
            layout_facts!(Layout::FrameMajor);
        }
    };
}

window_layer!(ConvGeometry, |g: &ConvGeometry| Some(g.out_channels));
window_layer!(DepthwiseGeometry, DepthwiseGeometry::out_channels);

impl ShapeRule for FcGeometry {
    fn name(&self) -> &'static str {
        Self::OP
    }

    /// `[rows, in_features]` -> `[rows, out_features]`.
    ///
    /// # Errors
    /// [`ShapeError::Geometry`] for zero sizes, [`ShapeError::Rank`] / [`ShapeError::Dim`]
    /// for another input shape.
    fn output_shape<D: Dim>(&self, inputs: &[Shape<D>]) -> Result<Shape<D>, ShapeError<D>> {
        let op = self.name();
        if self.rows == 0 || self.in_features == 0 || self.out_features == 0 {
            return Err(ShapeError::Geometry { op, reason: "rows and features must be >= 1" });
        }
        let x = only_input(op, inputs, "expects exactly 1 input")?;
        expect_rank(op, 0, x, &[2], "2")?;
        expect_dim(op, 0, x, 0, "rows", &D::constant(self.rows))?;
        expect_dim(op, 0, x, 1, "input features", &D::constant(self.in_features))?;
        Shape::new(&[self.rows, self.out_features].map(D::constant))
            .map_err(|_| ShapeError::Geometry { op, reason: "empty output" })
    }
    layout_facts!(Layout::FrameMajor);
}

/// A prepared int8 layer: geometry `G`, parameters `P` ([`Int8Params`]), the input zero
/// point and the output stage, checked together once in [`new`](Self::new) (which keeps
/// the lengths it checked, and the filter's [`RowSums`]); `run` then checks only the two
/// slice lengths.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Int8Layer<G: Int8LayerGeometry, P> {
    geometry: G,
    params: P,
    input_zero_point: i32,
    output: OutputStage,
    validated: Validated,
    /// The filter's row sums (conv2d and fully connected with at most
    /// [`ROW_SUMS_CHANNELS`](crate::kernels::int8::ROW_SUMS_CHANNELS) outputs), computed in
    /// `new` for the kernels that fold the input offset.
    sums: RowSums,
}

/// An int8 conv2d (NHWC).
pub type Conv2dI8<P> = Int8Layer<ConvGeometry, P>;
/// An int8 depthwise conv2d (NHWC).
pub type DepthwiseI8<P> = Int8Layer<DepthwiseGeometry, P>;
/// An int8 fully connected layer.
pub type FullyConnectedI8<P> = Int8Layer<FcGeometry, P>;

impl<G, Q, A, M> Int8Layer<G, Int8Params<Q, A, M>>
where
    G: Int8LayerGeometry,
    Q: AsRef<[i8]>,
    A: AsRef<[i32]>,
    M: AsRef<[QuantizedMultiplier]>,
{
    /// The layer; `input_zero_point` is the input tensor's zero point.
    ///
    /// # Errors
    /// The kernel's checks of the geometry against the parameters ([`Error::Length`] for a
    /// filter, bias or multipliers of the wrong length; [`Error::Shape`] for a bad geometry,
    /// multiplier, zero point or output stage).
    pub fn new(
        geometry: G,
        params: Int8Params<Q, A, M>,
        input_zero_point: i32,
        output: OutputStage,
    ) -> Result<Self, Error> {
        let q = LayerQuant { x_zp: input_zero_point, weights: params.weights(), out: output };
        let validated = Validated::new(&geometry, &q)?;
        let sums = geometry.row_sums(q.weights.filter);
        Ok(Int8Layer { geometry, params, input_zero_point, output, validated, sums })
    }

    /// The geometry.
    pub fn geometry(&self) -> G {
        self.geometry
    }

    /// The parameters.
    pub fn params(&self) -> &Int8Params<Q, A, M> {
        &self.params
    }

    /// The input zero point.
    pub fn input_zero_point(&self) -> i32 {
        self.input_zero_point
    }

    /// The output stage.
    pub fn output_stage(&self) -> OutputStage {
        self.output
    }

    /// Input and output values (`[1, H, W, C]`, `[1, OH, OW, Cout]`, or the rows).
    ///
    /// # Errors
    /// None after a successful [`new`](Self::new).
    pub fn lengths(&self) -> Result<(usize, usize), Error> {
        Ok((self.validated.x_len, self.validated.y_len))
    }

    /// Runs the layer with backend `B`: `x` the input, `y` the output (overwritten). Only
    /// the two lengths are checked here; the geometry and parameters were checked in
    /// [`new`](Self::new), so the kernel hook runs directly (no per-call check of every
    /// channel's multiplier).
    ///
    /// # Errors
    /// [`Error::Length`] for a slice of the wrong length (input first; nothing is written).
    pub fn run<B: Int8Kernels>(&self, x: &[i8], y: &mut [i8]) -> Result<(), Error> {
        self.validated.check_lengths(x.len(), y.len())?;
        let q = LayerQuant {
            x_zp: self.input_zero_point,
            weights: self.params.weights(),
            out: self.output,
        };
        self.geometry.run_checked::<B>((x, q, self.sums.get()), y);
        Ok(())
    }
}

/// The shape rule of the elementwise int8 operators: one input of any shape, the output of
/// the same shape (and layout).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Elementwise8 {
    /// The operator's name.
    pub op: &'static str,
}

impl ShapeRule for Elementwise8 {
    fn name(&self) -> &'static str {
        self.op
    }

    /// The input's shape.
    ///
    /// # Errors
    /// [`ShapeError::Geometry`] unless exactly one input.
    fn output_shape<D: Dim>(&self, inputs: &[Shape<D>]) -> Result<Shape<D>, ShapeError<D>> {
        only_input(self.op, inputs, "expects exactly 1 input").cloned()
    }
    layout_facts!(any);
}

/// LOGISTIC (or any int8 unary function) as a 256-entry table: entry `q + 128` holds the
/// output for input `q` (the table is built by whoever reads the model: TFLite builds it
/// with `LUTPopulate` from the input and output quantisation).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LogisticI8 {
    lut: [i8; 256],
}

impl LogisticI8 {
    /// The shape rule.
    pub const RULE: Elementwise8 = Elementwise8 { op: "logistic_i8" };

    /// The operator of table `lut`.
    pub const fn new(lut: [i8; 256]) -> Self {
        LogisticI8 { lut }
    }

    /// The table.
    pub fn lut(&self) -> &[i8; 256] {
        &self.lut
    }

    /// `y[i] = lut[x[i] + 128]`.
    ///
    /// # Errors
    /// [`Error::Length`] for unequal lengths.
    pub fn run<B: Int8Kernels>(&self, x: &[i8], y: &mut [i8]) -> Result<(), Error> {
        B::lut_i8(&self.lut, x, y)
    }
}

/// A requantising QUANTIZE of int8 input (`x - zero_point` rescaled by `multiplier`, then
/// the output stage), to int8 ([`RequantizeI8`]) or uint8 ([`RequantizeI8U8`]).
macro_rules! requantize_op {
    ($(#[$doc:meta])* $name:ident, $t:ty) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub struct $name {
            input_zero_point: i32,
            multiplier: QuantizedMultiplier,
            output: OutputStage,
        }

        impl $name {
            /// The shape rule.
            pub const RULE: Elementwise8 = Elementwise8 { op: <$t as RequantOut>::OP };

            /// The operator (`multiplier` is usually `from_real(x_scale / y_scale)`).
            ///
            /// # Errors
            /// [`Error::Shape`] for a bad zero point, multiplier or stage.
            pub fn new(
                input_zero_point: i32,
                multiplier: QuantizedMultiplier,
                output: OutputStage,
            ) -> Result<Self, Error> {
                B0::requantize_i8::<$t>(&[], input_zero_point, multiplier, output, &mut [])?;
                Ok($name { input_zero_point, multiplier, output })
            }

            /// The input zero point, the multiplier and the output stage, as given to
            /// [`new`](Self::new).
            pub fn parts(&self) -> (i32, QuantizedMultiplier, OutputStage) {
                (self.input_zero_point, self.multiplier, self.output)
            }

            /// Runs it: `y` gets the requantised `x`.
            ///
            /// # Errors
            /// [`Error::Length`] for unequal lengths.
            pub fn run<B: Int8Kernels>(&self, x: &[i8], y: &mut [$t]) -> Result<(), Error> {
                B::requantize_i8(x, self.input_zero_point, self.multiplier, self.output, y)
            }
        }
    };
}

/// The backend `new` checks with (the checks are the same for every backend).
type B0 = crate::kernels::Portable;

requantize_op!(
    /// QUANTIZE int8 -> int8 (TFLite `Requantize`).
    RequantizeI8, i8
);
requantize_op!(
    /// QUANTIZE int8 -> uint8 (TFLite `Requantize`; equal scales: `x + 128`).
    RequantizeI8U8, u8
);

/// An operator between f32 and int8 with one [`AffineQuant`]: `$name::new(q)` checks it,
/// `run::<B>(x, y)` runs kernel `$kernel` from `$from` to `$to`.
macro_rules! affine_op {
    ($(#[$doc:meta])* $name:ident, $op:literal, $from:ty => $to:ty, $kernel:ident) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, PartialEq)]
        pub struct $name {
            q: AffineQuant,
        }

        impl $name {
            /// The shape rule.
            pub const RULE: Elementwise8 = Elementwise8 { op: $op };

            /// The operator of the int8 side's quantisation.
            ///
            /// # Errors
            /// [`Error::Shape`] for a scale not finite and positive, or a zero point outside
            /// int8.
            pub fn new(q: AffineQuant) -> Result<Self, Error> {
                B0::$kernel(&[], q, &mut [])?;
                Ok($name { q })
            }

            /// The int8 side's quantisation, as given to [`new`](Self::new).
            pub fn quant(&self) -> AffineQuant {
                self.q
            }

            /// Runs it.
            ///
            /// # Errors
            /// [`Error::Length`] for unequal lengths.
            pub fn run<B: Int8Kernels>(&self, x: &[$from], y: &mut [$to]) -> Result<(), Error> {
                B::$kernel(x, self.q, y)
            }
        }
    };
}

affine_op!(
    /// QUANTIZE f32 -> int8 (TFLite `AffineQuantize`: `round(x / scale) + zero_point`,
    /// clamped; see [`Int8Kernels::quantize_f32_i8`]).
    QuantizeF32I8, "quantize_f32_i8", f32 => i8, quantize_f32_i8
);
affine_op!(
    /// DEQUANTIZE int8 -> f32 (x86-64 TFLite's: two roundings on blocks of 8, one on the
    /// tail; `Int8Kernels::dequantize_i8_f32`).
    DequantizeI8F32, "dequantize_i8_f32", i8 => f32, dequantize_i8_f32
);
