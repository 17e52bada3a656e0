//! Prepared operators.
//!
//! An operator owns immutable, kernel-ready weights (packed once, in its constructor, or
//! borrowed as already-packed `&'static` data on firmware), is `Send + Sync` so plans can
//! share it, validates every shape before any kernel runs (returning [`crate::Error`], never
//! panicking), and never allocates in `run`: scratch memory is the caller's.
//!
//! Each operator has a *geometry*: the `Copy` description of its sizes (channels, kernel
//! size, stride...) without weights. The geometry implements [`ShapeRule`], generic over
//! [`Dim`], so the `neon_plan!` macro runs the very same rule on symbolic shapes at compile
//! time that the operator runs on concrete shapes.
//!
//! Storage is generic: `S: AsRef<[f32]>`: `Vec<f32>` (feature `alloc`), `&'static [f32]`,
//! or anything else that derefs to a slice (int8 weights likewise: `Q: AsRef<[i8]>`, see
//! [`quant`]).

pub mod activation;
pub mod conv;
pub mod elementwise;
pub mod layout;
pub mod linear;
pub mod norm;
pub mod quant;
pub mod sequence;
pub mod softmax;

use crate::dim::Dim;
use crate::error::ShapeError;
use crate::tensor::Shape;

/// The shape rule of an operator geometry.
pub trait ShapeRule {
    /// Operator name used in error messages (`"conv1d"`).
    fn name(&self) -> &'static str;
    /// Number of tensor inputs the operator takes.
    fn arity(&self) -> usize {
        1
    }
    /// The output shape for `inputs` (in call order), or the first violated rule.
    ///
    /// # Errors
    /// [`ShapeError`] naming the argument, the axis and both sizes.
    fn output_shape<D: Dim>(&self, inputs: &[Shape<D>]) -> Result<Shape<D>, ShapeError<D>>;
}

/// Checks that argument `arg` has one of the accepted ranks (a helper for shape rules).
///
/// # Errors
/// [`ShapeError::Rank`] when `shape.rank()` is not in `ranks`.
pub fn expect_rank<D: Dim>(
    op: &'static str,
    arg: usize,
    shape: &Shape<D>,
    ranks: &[usize],
    expected: &'static str,
) -> Result<(), ShapeError<D>> {
    if ranks.contains(&shape.rank()) {
        Ok(())
    } else {
        Err(ShapeError::Rank { op, arg, expected, got: shape.rank() })
    }
}

/// Checks that axis `axis` of argument `arg` equals `expected` (a helper for shape rules).
///
/// # Errors
/// [`ShapeError::Dim`] with both sizes when they differ.
pub fn expect_dim<D: Dim>(
    op: &'static str,
    arg: usize,
    shape: &Shape<D>,
    axis: usize,
    what: &'static str,
    expected: &D,
) -> Result<(), ShapeError<D>> {
    let got = &shape.dims()[axis];
    if got == expected {
        Ok(())
    } else {
        Err(ShapeError::Dim { op, arg, axis, what, expected: expected.clone(), got: got.clone() })
    }
}
