//! Fully connected layers with int8 weights and f32 activations.
//!
//! - [`QuantLinear`]: per-tensor int8, `W = f32(q) * scale + offset` with one `scale` and
//!   one `offset` per tensor (the format Moonshine ships). One row (GEMV) runs
//!   `y = scale * (x · q_j) + offset * sum(x) + b[j]` without dequantising the weights;
//!   several rows (GEMM) dequantise each weight to f32 once per call and multiply by those.
//! - [`BlockQ8Linear`]: block-int8, `W[j, k] = f32(q[j, k]) * scale[j, k / 32]`
//!   (symmetric, one f32 scale per 32 consecutive weights of a row), for models we
//!   convert ourselves. `in_features` must be a multiple of 32: other sizes are an error,
//!   not padded, because the converter is ours and padding `k` would also need the
//!   activations padded.
//!
//! Both have the shape rule of [`Linear`](crate::ops::linear::Linear) (the same code,
//! [`LinearGeometry`]'s rule, run under their own operator names): input frame-major
//! `[rows, in_features]` (or rank 1 `[in_features]`, one row), output
//! `[rows, out_features]` (`[out_features]`). One row runs the int8 GEMV, several the
//! int8 GEMM of [`crate::kernels::quant`].
//!
//! Weights are `[out_features, in_features]` (PyTorch's layout) in `new` / `from_slice`;
//! `from_in_out` takes `[in_features, out_features]` (the `y = x · W` layout of ONNX and
//! TFLite exports, Moonshine's included) and transposes while packing. Packing
//! ([`crate::kernels::quant::pack_i8`]) happens once, in the constructor; `from_packed`
//! wraps data packed offline (e.g. `&'static` arrays embedded in a firmware image).

#[cfg(feature = "alloc")]
use alloc::vec::Vec;

use super::linear::{check_bias, LinearGeometry};
use super::{check_len, RunOptions, ShapeRule};
use crate::dim::Dim;
use crate::error::{Error, ShapeError};
use crate::kernels::gemm::PACK_NR;
use crate::kernels::quant::{
    packed_block_scales_len, packed_i8_len, QuantFormat, QuantGemm, QuantWeights, BLOCK_K, QUANT_KR,
};
use crate::kernels::Backend;
use crate::tensor::{Layout, Shape, TensorView, TensorViewMut};

pub use crate::kernels::quant::QuantPath;

const OP: &str = "quant_linear";
const BLOCK_OP: &str = "block_q8_linear";

/// A linear geometry type `$name` (feature counts and whether it has a bias; `$k_doc`
/// documents `in_features`) with the methods both int8 formats share: `linear` (the f32
/// [`LinearGeometry`] of the same sizes, whose shape rule the layer uses) and
/// `packed_weight_len`, then the items `$extra` (its own methods).
macro_rules! quant_linear_geometry {
    (
        $(#[$doc:meta])*
        $name:ident, $k_doc:literal, $packed_doc:literal;
        $($extra:item)*
    ) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub struct $name {
            #[doc = $k_doc]
            pub in_features: usize,
            /// Output features (`N`, the last axis of the output).
            pub out_features: usize,
            /// Whether a bias of `out_features` values is added.
            pub bias: bool,
        }

        impl $name {
            /// The same sizes as an f32 [`LinearGeometry`], whose shape rule this layer uses.
            pub const fn linear(&self) -> LinearGeometry {
                LinearGeometry {
                    in_features: self.in_features,
                    out_features: self.out_features,
                    bias: self.bias,
                }
            }

            #[doc = $packed_doc]
            pub const fn packed_weight_len(&self) -> usize {
                packed_i8_len(self.out_features, self.in_features)
            }

            $($extra)*
        }
    };
}

quant_linear_geometry! {
    /// The geometry of a [`QuantLinear`] layer: feature counts and whether it has a bias.
    QuantLinearGeometry,
    "Input features (`K`, the last axis of the input).",
    "Bytes of the packed weights ([`crate::kernels::quant::pack_i8`] layout), as \
     [`QuantLinear::from_packed`] expects them (sizes whose buffer would not fit in \
     memory overflow; the constructors check that case and return an error).";

    /// Checks the geometry itself.
    ///
    /// # Errors
    /// [`ShapeError::Geometry`] when a feature count is 0.
    pub fn validate<D>(&self) -> Result<(), ShapeError<D>> {
        self.linear().validate_as(OP)
    }
}

impl ShapeRule for QuantLinearGeometry {
    fn name(&self) -> &'static str {
        OP
    }

    /// `[rows, in_features] -> [rows, out_features]`, `[in_features] -> [out_features]`
    /// ([`LinearGeometry`]'s rule).
    ///
    /// # Errors
    /// As [`LinearGeometry`]'s rule, named `quant_linear`.
    fn output_shape<D: Dim>(&self, inputs: &[Shape<D>]) -> Result<Shape<D>, ShapeError<D>> {
        self.linear().output_shape_as(OP, inputs)
    }
    layout_facts!(Layout::FrameMajor);
}

quant_linear_geometry! {
    /// The geometry of a [`BlockQ8Linear`] layer: feature counts and whether it has a bias.
    BlockQ8LinearGeometry,
    "Input features (`K`, the last axis of the input); a multiple of 32.",
    "Bytes of the packed weights ([`crate::kernels::quant::pack_i8`] layout).";

    /// Values of the packed block scales ([`crate::kernels::quant::pack_block_scales`]
    /// layout).
    pub const fn packed_scales_len(&self) -> usize {
        packed_block_scales_len(self.out_features, self.in_features)
    }

    /// Checks the geometry itself.
    ///
    /// # Errors
    /// [`ShapeError::Geometry`] when a feature count is 0 or `in_features` is not a
    /// multiple of 32.
    pub fn validate<D>(&self) -> Result<(), ShapeError<D>> {
        self.linear().validate_as(BLOCK_OP)?;
        if !self.in_features.is_multiple_of(BLOCK_K) {
            let reason = "in_features must be a multiple of 32 (the block size)";
            return Err(ShapeError::Geometry { op: BLOCK_OP, reason });
        }
        Ok(())
    }
}

impl ShapeRule for BlockQ8LinearGeometry {
    fn name(&self) -> &'static str {
        BLOCK_OP
    }

    /// `[rows, in_features] -> [rows, out_features]`, `[in_features] -> [out_features]`
    /// ([`LinearGeometry`]'s rule).
    ///
    /// # Errors
    /// As [`LinearGeometry`]'s rule, named `block_q8_linear`, and
    /// [`ShapeError::Geometry`] when `in_features` is not a multiple of 32.
    fn output_shape<D: Dim>(&self, inputs: &[Shape<D>]) -> Result<Shape<D>, ShapeError<D>> {
        self.validate()?;
        self.linear().output_shape_as(BLOCK_OP, inputs)
    }
    layout_facts!(Layout::FrameMajor);
}

/// `out_features * in_features`, checked for overflow.
#[cfg(feature = "alloc")]
fn checked_weight_len(g: &LinearGeometry) -> Result<usize, Error> {
    g.out_features
        .checked_mul(g.in_features)
        .ok_or(Error::BadShape { reason: "in_features * out_features overflows usize" })
}

/// [`packed_i8_len`], checked for overflow.
fn checked_packed_len(g: &LinearGeometry) -> Result<usize, Error> {
    g.out_features
        .div_ceil(PACK_NR)
        .checked_mul(PACK_NR)
        .and_then(|n| n.checked_mul(g.in_features.div_ceil(QUANT_KR)))
        .and_then(|n| n.checked_mul(QUANT_KR))
        .ok_or(Error::BadShape { reason: "packed weight length overflows usize" })
}

/// [`packed_block_scales_len`], checked for overflow.
fn checked_scales_len(g: &LinearGeometry) -> Result<usize, Error> {
    g.out_features
        .div_ceil(PACK_NR)
        .checked_mul(PACK_NR)
        .and_then(|n| n.checked_mul(g.in_features / BLOCK_K))
        .ok_or(Error::BadShape { reason: "packed scales length overflows usize" })
}

/// A fully connected layer with per-tensor int8 weights:
/// `y[r, j] = scale * sum_k x[r, k] q[j, k] + offset * sum_k x[r, k] + b[j]`, i.e.
/// `x · W^T + b` with `W = q * scale + offset`.
///
/// `Q` stores the packed int8 weights (`Vec<i8>` with feature `alloc`, `&'static [i8]`
/// for weights packed offline), `S` the f32 bias. Immutable after construction,
/// `Send + Sync` when `Q` and `S` are.
#[derive(Clone, Debug)]
pub struct QuantLinear<Q, S> {
    geometry: QuantLinearGeometry,
    /// [`crate::kernels::quant::pack_i8`] of `q[out_features, in_features]`.
    weight: Q,
    scale: f32,
    offset: f32,
    bias: Option<S>,
}

/// Checks the geometry and the per-tensor parameters.
fn check_scale_offset(g: &QuantLinearGeometry, scale: f32, offset: f32) -> Result<(), Error> {
    g.validate::<usize>()?;
    if !scale.is_finite() || !offset.is_finite() {
        return Err(
            ShapeError::Geometry { op: OP, reason: "scale and offset must be finite" }.into()
        );
    }
    Ok(())
}

#[cfg(feature = "alloc")]
impl QuantLinear<Vec<i8>, Vec<f32>> {
    /// Packs `q` (`[out_features, in_features]`, row-major) once and keeps `scale`,
    /// `offset` and `bias` (`[out_features]`, given exactly when `geometry.bias`) as given.
    ///
    /// # Errors
    /// [`Error::Shape`] for a zero feature count, a non-finite scale or offset;
    /// [`Error::Length`] when `q` does not have `out_features * in_features` values or
    /// `bias` `out_features`, or a bias that does not match `geometry.bias`.
    pub fn new(
        geometry: QuantLinearGeometry,
        q: Vec<i8>,
        scale: f32,
        offset: f32,
        bias: Option<Vec<f32>>,
    ) -> Result<Self, Error> {
        let packed = pack_tensor(&geometry, &q, scale, offset, false)?;
        Self::from_packed(geometry, packed, scale, offset, bias)
    }

    /// As [`QuantLinear::new`], from borrowed data: packs `q` and copies `bias`.
    ///
    /// # Errors
    /// As [`QuantLinear::new`].
    pub fn from_slice(
        geometry: QuantLinearGeometry,
        q: &[i8],
        scale: f32,
        offset: f32,
        bias: Option<&[f32]>,
    ) -> Result<Self, Error> {
        let packed = pack_tensor(&geometry, q, scale, offset, false)?;
        Self::from_packed(geometry, packed, scale, offset, bias.map(<[f32]>::to_vec))
    }

    /// As [`QuantLinear::from_slice`], with `q` given as `[in_features, out_features]`
    /// (`y = x · W`, the layout of ONNX / TFLite exports such as Moonshine's): transposed
    /// while packing.
    ///
    /// # Errors
    /// As [`QuantLinear::new`].
    pub fn from_in_out(
        geometry: QuantLinearGeometry,
        q: &[i8],
        scale: f32,
        offset: f32,
        bias: Option<&[f32]>,
    ) -> Result<Self, Error> {
        let packed = pack_tensor(&geometry, q, scale, offset, true)?;
        Self::from_packed(geometry, packed, scale, offset, bias.map(<[f32]>::to_vec))
    }
}

/// Checks per-tensor int8 weights against the geometry and packs them (`in_out`: `q` is
/// `[in_features, out_features]`, transposed while packing).
#[cfg(feature = "alloc")]
fn pack_tensor(
    g: &QuantLinearGeometry,
    q: &[i8],
    scale: f32,
    offset: f32,
    in_out: bool,
) -> Result<Vec<i8>, Error> {
    check_scale_offset(g, scale, offset)?;
    let linear = g.linear();
    check_len("weight", checked_weight_len(&linear)?, q.len())?;
    let mut packed = alloc::vec![0; checked_packed_len(&linear)?];
    let (n, k) = (g.out_features, g.in_features);
    if in_out {
        crate::kernels::quant::pack_i8_transposed(q, n, k, &mut packed);
    } else {
        crate::kernels::quant::pack_i8(q, n, k, &mut packed);
    }
    Ok(packed)
}

impl<Q: AsRef<[i8]>, S: AsRef<[f32]>> QuantLinear<Q, S> {
    /// Wraps weights already packed ([`crate::kernels::quant::pack_i8`] of
    /// `q[out_features, in_features]`, [`QuantLinearGeometry::packed_weight_len`] bytes)
    /// and `bias` (`[out_features]`, given exactly when `geometry.bias`), without packing
    /// or copying.
    ///
    /// # Errors
    /// [`Error::Shape`] for a zero feature count, a non-finite scale or offset;
    /// [`Error::Length`] for packed weights or a bias of the wrong length, or a bias that
    /// does not match `geometry.bias`.
    pub fn from_packed(
        geometry: QuantLinearGeometry,
        packed: Q,
        scale: f32,
        offset: f32,
        bias: Option<S>,
    ) -> Result<Self, Error> {
        check_scale_offset(&geometry, scale, offset)?;
        check_bias(&geometry.linear(), bias.as_ref().map(AsRef::as_ref))?;
        let expected = checked_packed_len(&geometry.linear())?;
        check_len("packed weight", expected, packed.as_ref().len())?;
        Ok(Self { geometry, weight: packed, scale, offset, bias })
    }

    weight_accessors!(
        QuantLinearGeometry,
        weight: [i8], "The packed weights ([`crate::kernels::quant::pack_i8`] layout).",
        bias, "The bias (`[out_features]`), if any."
    );

    /// The per-tensor scale.
    pub fn scale(&self) -> f32 {
        self.scale
    }

    /// The per-tensor offset.
    pub fn offset(&self) -> f32 {
        self.offset
    }

    with_run_options! {
        self;
        /// [`QuantLinear::run_with`] with the default options (single rows widen: exact
        /// products).
        ///
        /// # Errors
        /// As [`QuantLinear::run_with`].
        run(input: &TensorView, output: &mut TensorViewMut);
        /// `output = input · W^T + bias` with `W = q * scale + offset`, backend `B`; a single
        /// row takes `options.int8_path()` ([`QuantPath`]), several rows the GEMM on
        /// `options.int8_gemm_path()`.
        ///
        /// `input`: frame-major `[rows, in_features]` or rank-1 `[in_features]`; `output`:
        /// frame-major `[rows, out_features]`, or `[out_features]` for a rank-1 input. One row
        /// runs the GEMV, several the GEMM. No scratch, no allocation (the GEMM converts
        /// weights through a 21 KiB stack buffer, see [`crate::kernels::quant`]).
        ///
        /// # Errors
        /// Everything is checked before any kernel runs: [`Error::Shape`] when the input
        /// breaks the shape rule or the output shape differs from it (reported as argument 1);
        /// [`Error::Layout`] for a rank-2 input or output that is not frame-major. `output` is
        /// untouched on error.
        run_with(options) => {
            let format = QuantFormat::PerTensor { scale: self.scale, offset: self.offset };
            let w = QuantWeights { packed: self.weight.as_ref(), format, bias: self.bias() };
            run_rows::<B>(self.geometry.linear(), OP, w, options, input, output)
        }
    }
}

/// A fully connected layer with block-int8 weights:
/// `y[r, j] = sum_k x[r, k] q[j, k] scale[j, k / 32] + b[j]`.
///
/// `Q` stores the packed int8 weights, `S` the packed block scales and the bias.
/// Immutable after construction, `Send + Sync` when `Q` and `S` are.
#[derive(Clone, Debug)]
pub struct BlockQ8Linear<Q, S> {
    geometry: BlockQ8LinearGeometry,
    /// [`crate::kernels::quant::pack_i8`] of `q[out_features, in_features]`.
    weight: Q,
    /// [`crate::kernels::quant::pack_block_scales`] of `scale[out_features, in / 32]`.
    scales: S,
    bias: Option<S>,
}

/// Checks block scales: `len` values, all finite.
fn check_scales(scales: &[f32], len: usize) -> Result<(), Error> {
    check_len("scales", len, scales.len())?;
    if !scales.iter().all(|v| v.is_finite()) {
        let reason = "block scales must be finite";
        return Err(ShapeError::Geometry { op: BLOCK_OP, reason }.into());
    }
    Ok(())
}

#[cfg(feature = "alloc")]
impl BlockQ8Linear<Vec<i8>, Vec<f32>> {
    /// Packs `q` (`[out_features, in_features]`) and `scales` (`[out_features,
    /// in_features / 32]`: row `j` holds output `j`'s block scales) once; keeps `bias`
    /// (`[out_features]`, given exactly when `geometry.bias`).
    ///
    /// # Errors
    /// [`Error::Shape`] for a zero feature count, `in_features` not a multiple of 32, or
    /// a non-finite block scale; [`Error::Length`] for `q`, `scales` or `bias` of the
    /// wrong length, or a bias that does not match `geometry.bias`.
    pub fn new(
        geometry: BlockQ8LinearGeometry,
        q: Vec<i8>,
        scales: Vec<f32>,
        bias: Option<Vec<f32>>,
    ) -> Result<Self, Error> {
        let (packed, packed_scales) = pack_blocks(&geometry, &q, &scales, false)?;
        Self::from_packed(geometry, packed, packed_scales, bias)
    }

    /// As [`BlockQ8Linear::new`], from borrowed data (packed and copied).
    ///
    /// # Errors
    /// As [`BlockQ8Linear::new`].
    pub fn from_slice(
        geometry: BlockQ8LinearGeometry,
        q: &[i8],
        scales: &[f32],
        bias: Option<&[f32]>,
    ) -> Result<Self, Error> {
        let (packed, packed_scales) = pack_blocks(&geometry, q, scales, false)?;
        Self::from_packed(geometry, packed, packed_scales, bias.map(<[f32]>::to_vec))
    }

    /// As [`BlockQ8Linear::from_slice`], with `q` given as `[in_features, out_features]`
    /// and `scales` as `[in_features / 32, out_features]` (row `b` holds block `b` of
    /// every output), transposed while packing.
    ///
    /// # Errors
    /// As [`BlockQ8Linear::new`].
    pub fn from_in_out(
        geometry: BlockQ8LinearGeometry,
        q: &[i8],
        scales: &[f32],
        bias: Option<&[f32]>,
    ) -> Result<Self, Error> {
        let (packed, packed_scales) = pack_blocks(&geometry, q, scales, true)?;
        Self::from_packed(geometry, packed, packed_scales, bias.map(<[f32]>::to_vec))
    }
}

/// Checks block-int8 weights and scales against the geometry and packs both (`in_out`:
/// given as `[in_features, out_features]` and `[in_features / 32, out_features]`,
/// transposed while packing).
#[cfg(feature = "alloc")]
fn pack_blocks(
    g: &BlockQ8LinearGeometry,
    q: &[i8],
    scales: &[f32],
    in_out: bool,
) -> Result<(Vec<i8>, Vec<f32>), Error> {
    use crate::kernels::quant as k;
    g.validate::<usize>()?;
    let (n, kk) = (g.out_features, g.in_features);
    let raw_scales = n
        .checked_mul(kk / BLOCK_K)
        .ok_or(Error::BadShape { reason: "scales length overflows usize" })?;
    check_scales(scales, raw_scales)?;
    let linear = g.linear();
    check_len("weight", checked_weight_len(&linear)?, q.len())?;
    let mut packed = alloc::vec![0; checked_packed_len(&linear)?];
    let mut packed_scales = alloc::vec![0.0; checked_scales_len(&linear)?];
    if in_out {
        k::pack_i8_transposed(q, n, kk, &mut packed);
        k::pack_block_scales_transposed(scales, n, kk, &mut packed_scales);
    } else {
        k::pack_i8(q, n, kk, &mut packed);
        k::pack_block_scales(scales, n, kk, &mut packed_scales);
    }
    Ok((packed, packed_scales))
}

impl<Q: AsRef<[i8]>, S: AsRef<[f32]>> BlockQ8Linear<Q, S> {
    /// Wraps already packed weights ([`BlockQ8LinearGeometry::packed_weight_len`] bytes)
    /// and block scales ([`BlockQ8LinearGeometry::packed_scales_len`] values), and `bias`
    /// (`[out_features]`, given exactly when `geometry.bias`), without packing or copying.
    ///
    /// # Errors
    /// [`Error::Shape`] for a zero feature count, `in_features` not a multiple of 32, or
    /// a non-finite block scale; [`Error::Length`] for buffers of the wrong length or a
    /// bias that does not match `geometry.bias`.
    pub fn from_packed(
        geometry: BlockQ8LinearGeometry,
        packed: Q,
        packed_scales: S,
        bias: Option<S>,
    ) -> Result<Self, Error> {
        geometry.validate::<usize>()?;
        let linear = geometry.linear();
        check_scales(packed_scales.as_ref(), checked_scales_len(&linear)?)?;
        check_bias(&linear, bias.as_ref().map(AsRef::as_ref))?;
        check_len("packed weight", checked_packed_len(&linear)?, packed.as_ref().len())?;
        Ok(Self { geometry, weight: packed, scales: packed_scales, bias })
    }

    weight_accessors!(
        BlockQ8LinearGeometry,
        weight: [i8], "The packed weights ([`crate::kernels::quant::pack_i8`] layout).",
        bias, "The bias (`[out_features]`), if any."
    );

    /// The packed block scales ([`crate::kernels::quant::pack_block_scales`] layout).
    pub fn packed_scales(&self) -> &[f32] {
        self.scales.as_ref()
    }

    with_run_options! {
        self;
        /// `output = input · W^T + bias` with `W[j, k] = q[j, k] * scale[j, k / 32]`, backend
        /// `B`. Shapes, layouts and errors as [`QuantLinear::run`].
        ///
        /// # Errors
        /// As [`QuantLinear::run`] (named `block_q8_linear`).
        run(input: &TensorView, output: &mut TensorViewMut);
        /// [`BlockQ8Linear::run`] on `options.parallel()` (the same bits for any context; the
        /// int8 path options do not apply: block-int8 always widens).
        ///
        /// # Errors
        /// As [`BlockQ8Linear::run`], and the context's error ([`Error::Team`]) after the
        /// checks.
        run_with(options) => {
            let format = QuantFormat::Block(self.scales.as_ref());
            let w = QuantWeights { packed: self.weight.as_ref(), format, bias: self.bias() };
            let widen = options
                .with_int8_path(QuantPath::Widening)
                .with_int8_gemm_path(QuantPath::Widening);
            run_rows::<B>(self.geometry.linear(), BLOCK_OP, w, widen, input, output)
        }
    }
}

/// The run of both operators (named `op` in errors): checks the call against `g`'s shape
/// rule ([`LinearGeometry::check_run`]), then one row runs the GEMV (on the
/// [`QuantPath::Dot`] path the int8-activation one), several the GEMM (on the GEMM path's
/// choice), on `rows x
/// in_features -> out_features`, on `options.parallel()`.
fn run_rows<B: Backend>(
    g: LinearGeometry,
    op: &'static str,
    w: QuantWeights<'_>,
    options: RunOptions<'_>,
    input: &TensorView,
    output: &mut TensorViewMut,
) -> Result<(), Error> {
    let rows = g.check_run(op, input, output)?;
    let (x, y) = (input.data(), output.data_mut());
    let (k, n, par) = (g.in_features, g.out_features, options.parallel());
    if rows == 1 {
        B::gemv_i8_in(par, options.int8_path(), (n, k), x, w, y)
    } else {
        let path = options.int8_gemm_path();
        B::gemm_i8_in(par, path, QuantGemm::contiguous(rows, n, k), x, w, y)
    }
}
