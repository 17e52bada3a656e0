//! `Linear`: a fully connected layer, `y = x · W^T + b` (PyTorch's `nn.Linear`).
//!
//! Weights are `[out_features, in_features]` (PyTorch's layout) and are packed once into
//! the packed-B layout of [`crate::kernels::gemm`]; the input is frame-major
//! `[rows, in_features]` (or one row, rank 1 `[in_features]`) and the output
//! `[rows, out_features]` (rank 1 `[out_features]` for a rank-1 input). Several rows run
//! the packed GEMM, a single row the GEMV.

#[cfg(feature = "alloc")]
use alloc::vec::Vec;

use super::{
    check_len, expect_dim, expect_named_shape, expect_rank, only_input, RunOptions, ShapeRule,
};
use crate::dim::Dim;
use crate::error::{Error, ShapeError};
use crate::kernels::gemm::{packed_b_len, GemmB};
use crate::kernels::Backend;
use crate::tensor::{Layout, Shape, TensorView, TensorViewMut};

const OP: &str = "linear";

/// The geometry of a [`Linear`] layer: feature counts and whether it has a bias.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LinearGeometry {
    /// Input features (`K`, the last axis of the input).
    pub in_features: usize,
    /// Output features (`N`, the last axis of the output).
    pub out_features: usize,
    /// Whether a bias of `out_features` values is added.
    pub bias: bool,
}

impl LinearGeometry {
    /// Elements of the packed weight buffer ([`crate::kernels::gemm::pack_b`] layout), as
    /// [`Linear::from_packed`] expects it (sizes whose buffer would not fit in memory
    /// overflow; the constructors check that case and return an error).
    pub const fn packed_weight_len(&self) -> usize {
        packed_b_len(self.out_features, self.in_features)
    }

    /// Checks the geometry itself.
    ///
    /// # Errors
    /// [`ShapeError::Geometry`] when a feature count is 0.
    pub fn validate<D>(&self) -> Result<(), ShapeError<D>> {
        self.validate_as(OP)
    }

    /// [`LinearGeometry::validate`], reporting errors as operator `op`.
    pub(crate) fn validate_as<D>(&self, op: &'static str) -> Result<(), ShapeError<D>> {
        if self.in_features == 0 {
            return Err(ShapeError::Geometry { op, reason: "in_features must be >= 1" });
        }
        if self.out_features == 0 {
            return Err(ShapeError::Geometry { op, reason: "out_features must be >= 1" });
        }
        Ok(())
    }

    /// The shape rule of [`LinearGeometry`], reporting errors as operator `op`: the one
    /// source of the rule for every fully connected layer (the int8 layers of
    /// [`crate::ops::quant`] run it under their own names).
    pub(crate) fn output_shape_as<D: Dim>(
        &self,
        op: &'static str,
        inputs: &[Shape<D>],
    ) -> Result<Shape<D>, ShapeError<D>> {
        self.validate_as(op)?;
        let x = only_input(op, inputs, "linear takes exactly one input")?;
        expect_rank(op, 0, x, &[1, 2], "1 or 2")?;
        let last = x.rank() - 1;
        expect_dim(op, 0, x, last, "input features", &D::constant(self.in_features))?;
        let out = D::constant(self.out_features);
        let shape = match x.dims() {
            [rows, _] => Shape::new(&[rows.clone(), out]),
            _ => Shape::new(&[out]),
        };
        // Every dimension is >= 1 (the input's were, out_features was checked above).
        shape.map_err(|_| ShapeError::Geometry { op, reason: "output shape" })
    }

    /// Validates `input` and `output` of a run against the shape rule (as operator `op`)
    /// and the frame-major layout; returns the number of rows (1 for a rank-1 input).
    ///
    /// # Errors
    /// As [`Linear::run`].
    pub(crate) fn check_run(
        &self,
        op: &'static str,
        input: &TensorView,
        output: &TensorViewMut,
    ) -> Result<usize, Error> {
        let want = self.output_shape_as(op, core::slice::from_ref(input.shape()))?;
        let frame_major = "frame-major [rows, features]";
        if input.dims().len() == 2 && input.layout() != Layout::FrameMajor {
            return Err(Error::Layout { op, expected: frame_major });
        }
        let names: &[&'static str] = if want.rank() == 2 {
            &["output rows", "output features"]
        } else {
            &["output features"]
        };
        expect_named_shape(op, 1, output.shape(), &want, names)?;
        if output.dims().len() == 2 && output.layout() != Layout::FrameMajor {
            return Err(Error::Layout { op, expected: frame_major });
        }
        Ok(if input.dims().len() == 2 { input.dims()[0] } else { 1 })
    }
}

impl ShapeRule for LinearGeometry {
    fn name(&self) -> &'static str {
        OP
    }

    /// `[rows, in_features] -> [rows, out_features]`, `[in_features] -> [out_features]`.
    ///
    /// # Errors
    /// [`ShapeError::Geometry`] for a zero feature count or not exactly one input;
    /// [`ShapeError::Rank`] for an input of rank other than 1 or 2; [`ShapeError::Dim`]
    /// when the last axis is not `in_features`.
    fn output_shape<D: Dim>(&self, inputs: &[Shape<D>]) -> Result<Shape<D>, ShapeError<D>> {
        self.output_shape_as(OP, inputs)
    }
    layout_facts!(Layout::FrameMajor);
}

/// A fully connected layer holding packed weights: `y[r, j] = sum_k x[r, k] W[j, k] + b[j]`.
///
/// `S` is the weight storage (`Vec<f32>` with feature `alloc`, `&'static [f32]` for
/// weights packed offline, ...). Immutable after construction, `Send + Sync` when `S` is.
#[derive(Clone, Debug)]
pub struct Linear<S> {
    geometry: LinearGeometry,
    /// [`crate::kernels::gemm::pack_b`] of `W[out_features, in_features]`.
    weight: S,
    bias: Option<S>,
}

/// Checks the unpacked weight against the geometry and packs it.
#[cfg(feature = "alloc")]
fn pack(g: &LinearGeometry, weight: &[f32]) -> Result<Vec<f32>, Error> {
    g.validate::<usize>()?;
    let expected = g
        .out_features
        .checked_mul(g.in_features)
        .ok_or(Error::BadShape { reason: "in_features * out_features overflows usize" })?;
    if weight.len() != expected {
        return Err(Error::Length { what: "weight", expected, got: weight.len() });
    }
    let mut packed = alloc::vec![0.0; checked_packed_len(g)?];
    crate::kernels::gemm::pack_b(weight, g.out_features, g.in_features, &mut packed);
    Ok(packed)
}

/// [`LinearGeometry::packed_weight_len`], checked for overflow.
fn checked_packed_len(g: &LinearGeometry) -> Result<usize, Error> {
    let nr = crate::kernels::gemm::PACK_NR;
    g.out_features
        .div_ceil(nr)
        .checked_mul(nr)
        .and_then(|n| n.checked_mul(g.in_features))
        .ok_or(Error::BadShape { reason: "packed weight length overflows usize" })
}

/// Checks that a bias is given exactly when the geometry has one, with `out_features`
/// values (shared with the int8 layers of [`crate::ops::quant`]).
pub(crate) fn check_bias(g: &LinearGeometry, bias: Option<&[f32]>) -> Result<(), Error> {
    match (g.bias, bias) {
        (true, Some(b)) if b.len() == g.out_features => Ok(()),
        (false, None) => Ok(()),
        (true, b) => Err(Error::Length {
            what: "bias",
            expected: g.out_features,
            got: b.map_or(0, <[f32]>::len),
        }),
        (false, Some(b)) => Err(Error::Length { what: "bias", expected: 0, got: b.len() }),
    }
}

weight_constructors! {
    Linear, LinearGeometry, pack;
    /// Packs `weight` (`[out_features, in_features]`, row-major, PyTorch's layout) once
    /// and keeps `bias` (`[out_features]`, given exactly when `geometry.bias`) as given.
    ///
    /// # Errors
    /// [`Error::Shape`] for a zero feature count; [`Error::Length`] when `weight` does not
    /// have `out_features * in_features` values or `bias` `out_features`, or a bias is
    /// given without `geometry.bias` (or missing with it).
    new;
    /// As [`Linear::new`], from borrowed weights: packs `weight` and copies `bias`.
    ///
    /// # Errors
    /// As [`Linear::new`].
    from_slice;
    /// Wraps weights already in the packed-B layout ([`crate::kernels::gemm::pack_b`] of
    /// `W[out_features, in_features]`, [`LinearGeometry::packed_weight_len`] values) and
    /// `bias` (`[out_features]`, given exactly when `geometry.bias`), without packing or
    /// copying.
    ///
    /// # Errors
    /// [`Error::Shape`] for a zero feature count; [`Error::Length`] for a packed weight or
    /// bias of the wrong length, or a bias that does not match `geometry.bias`.
    from_packed(geometry, packed, bias) => {
        check_len("packed weight", checked_packed_len(&geometry)?, packed.as_ref().len())?;
        check_bias(&geometry, bias.as_ref().map(AsRef::as_ref))?;
    } -> weight
}

impl<S: AsRef<[f32]>> Linear<S> {
    weight_accessors!(
        LinearGeometry,
        weight: [f32], "The packed weights ([`crate::kernels::gemm::pack_b`] layout).",
        bias, "The bias (`[out_features]`), if any."
    );

    with_run_options! {
        self;
        /// `output = input · W^T + bias` with backend `B`.
        ///
        /// `input`: frame-major `[rows, in_features]` or rank-1 `[in_features]`; `output`:
        /// frame-major `[rows, out_features]`, or `[out_features]` for a rank-1 input. One row
        /// runs the GEMV, several the packed GEMM. No scratch, no allocation.
        ///
        /// # Errors
        /// Everything is checked before any kernel runs: [`Error::Shape`] when the input
        /// breaks the [`LinearGeometry`] shape rule or the output shape differs from it
        /// (reported as argument 1); [`Error::Layout`] for a rank-2 input or output that is not
        /// [`Layout::FrameMajor`]. `output` is untouched on error.
        run(input: &TensorView, output: &mut TensorViewMut);
        /// [`Linear::run`] with `options`: the product runs on `options.parallel()` (rows of
        /// the GEMM, pairs of output panels of the GEMV; the same bits for any context).
        ///
        /// # Errors
        /// As [`Linear::run`], and the context's error ([`Error::Team`]) after the checks.
        run_with(options) => {
            let rows = self.geometry.check_run(OP, input, output)?;
            let (k, n) = (self.geometry.in_features, self.geometry.out_features);
            let (w, bias) = (self.weight.as_ref(), self.bias());
            let (x, y, par) = (input.data(), output.data_mut(), options.parallel());
            if rows == 1 {
                B::gemv_packed_b_in(par, (n, k), x, w, bias, y)
            } else {
                B::gemm_packed_b_in(par, GemmB::contiguous(rows, n, k), x, w, bias, y)
            }
        }
    }
}
