//! Activation operators: [`Activation`], one enum for every pointwise activation, defined
//! with the kernels ([`crate::kernels::activation`]) and re-exported here; this module adds
//! what a plan needs of it.
//!
//! Activations have no weights, so the operator is its own geometry: it implements
//! [`ShapeRule`] with the identity rule (one input of any shape, rank 1..=4; the output has
//! the same shape). They run in place ([`Activation::run_in_place`], what plans use) or out of
//! place ([`Activation::run`]). Accuracy and special values of each function: see
//! [`crate::kernels::activation`].

use crate::dim::Dim;
use crate::error::{Error, ShapeError};
use crate::kernels::Backend;
use crate::ops::{expect_arity, RunOptions, ShapeRule};
use crate::tensor::{Shape, TensorView, TensorViewMut};

pub use crate::kernels::activation::Activation;

impl Activation {
    /// Applies the activation to a flat slice in place (any length).
    ///
    /// # Errors
    /// [`Error::Shape`] ([`ShapeError::Geometry`]) for a non-finite leaky ReLU slope or a
    /// NaN clamp bound.
    pub fn apply<B: Backend>(&self, x: &mut [f32]) -> Result<(), Error> {
        self.check_geometry()?;
        B::activate(*self, x);
        Ok(())
    }

    /// Applies the activation from `x` into `y` (flat slices of equal length).
    ///
    /// # Errors
    /// [`Error::Length`] when `y.len() != x.len()`; [`Error::Shape`] for a non-finite leaky
    /// ReLU slope or a NaN clamp bound.
    pub fn apply_to<B: Backend>(&self, x: &[f32], y: &mut [f32]) -> Result<(), Error> {
        self.check_geometry()?;
        if x.len() != y.len() {
            return Err(Error::Length {
                what: "activation output",
                expected: x.len(),
                got: y.len(),
            });
        }
        B::activate_to(*self, x, y);
        Ok(())
    }

    with_run_options! {
        self;
        /// `output = f(input)`, serially ([`Activation::run_with`] with `RunOptions::new()`).
        ///
        /// # Errors
        /// [`Error::Shape`] when the output shape differs from the input's (argument 1), the
        /// slope is not finite or the clamp bound is NaN; [`Error::Layout`] when the output's
        /// layout differs from the input's.
        run(input: &TensorView<'_>, output: &mut TensorViewMut<'_>);
        /// [`Activation::run`] with `options`: blocks of elements on `options.parallel()`
        /// (the same bits for any context).
        ///
        /// # Errors
        /// As [`Activation::run`], and the context's error ([`Error::Team`]) after the checks.
        run_with(options) => {
            crate::ops::check_unary(self, input, output)?;
            B::activate_to_in(options.parallel(), *self, input.data(), output.data_mut())
        }
    }

    with_run_options! {
        self;
        /// `x = f(x)` in place, serially ([`Activation::run_in_place_with`] with
        /// `RunOptions::new()`).
        ///
        /// # Errors
        /// [`Error::Shape`] for a non-finite leaky ReLU slope or a NaN clamp bound.
        run_in_place(x: &mut TensorViewMut<'_>);
        /// [`Activation::run_in_place`] with `options`: blocks of elements on
        /// `options.parallel()` (the same bits for any context).
        ///
        /// # Errors
        /// As [`Activation::run_in_place`], and the context's error ([`Error::Team`]) after
        /// the checks.
        run_in_place_with(options) => {
            self.output_shape(&[*x.shape()])?;
            B::activate_in(options.parallel(), *self, x.data_mut())
        }
    }

    fn check_geometry<D>(&self) -> Result<(), ShapeError<D>> {
        match *self {
            Activation::LeakyRelu { slope } if !slope.is_finite() => Err(ShapeError::Geometry {
                op: self.name(),
                reason: "leaky ReLU slope must be finite",
            }),
            Activation::ClampMin { min } if min.is_nan() => Err(ShapeError::Geometry {
                op: self.name(),
                reason: "clamp_min bound must not be NaN",
            }),
            _ => Ok(()),
        }
    }
}

impl ShapeRule for Activation {
    fn name(&self) -> &'static str {
        match self {
            Activation::Relu => "relu",
            Activation::LeakyRelu { .. } => "leaky_relu",
            Activation::ClampMin { .. } => "clamp_min",
            Activation::GeluErf => "gelu",
            Activation::GeluTanh => "gelu_tanh",
            Activation::Silu => "silu",
            Activation::Tanh => "tanh",
            Activation::Sigmoid => "sigmoid",
            Activation::Exp => "exp",
            Activation::Ln => "ln",
            Activation::Log10 => "log10",
            Activation::Erf => "erf",
        }
    }
    fn output_shape<D: Dim>(&self, inputs: &[Shape<D>]) -> Result<Shape<D>, ShapeError<D>> {
        expect_arity(self.name(), inputs, 1)?;
        self.check_geometry()?;
        Ok(inputs[0].clone())
    }
    layout_facts!(any, in_place);
}
