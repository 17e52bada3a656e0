//! Softmax operator: [`Softmax`] over the last axis.
//!
//! No weights, so the operator is its own geometry. Input of rank 1..=4; the last axis is
//! normalised, every other axis is a batch of rows (`[rows, cols]`, `[heads, queries, keys]`,
//! ...). The output has the input's shape. The layout tag is not interpreted (the last axis
//! is the softmax axis in either layout) but input and output must carry the same one.
//! Numerics and special values: see [`crate::kernels::softmax`].

use crate::dim::Dim;
use crate::error::{Error, ShapeError};
use crate::kernels::Backend;
use crate::ops::{expect_arity, expect_rank, ShapeRule};
use crate::tensor::{Shape, TensorView, TensorViewMut};

/// Softmax over the last axis (numerically stable: rows are shifted by their maximum).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Softmax;

impl ShapeRule for Softmax {
    fn name(&self) -> &'static str {
        "softmax"
    }
    fn output_shape<D: Dim>(&self, inputs: &[Shape<D>]) -> Result<Shape<D>, ShapeError<D>> {
        expect_arity(self.name(), inputs, 1)?;
        expect_rank(self.name(), 0, &inputs[0], &[1, 2, 3, 4], "1 to 4")?;
        Ok(inputs[0].clone())
    }
    layout_facts!(any, in_place);
}

/// `(rows, cols)` of a shape: cols = last axis, rows = product of the others.
fn rows_cols(shape: &Shape) -> (usize, usize) {
    let dims = shape.dims();
    let cols = dims[dims.len() - 1];
    (dims[..dims.len() - 1].iter().product(), cols)
}

impl Softmax {
    unary_runs! {
        self;
        /// `output = softmax(input)` over the last axis.
        ///
        /// # Errors
        /// [`Error::Shape`] when the output shape differs from the input's (argument 1);
        /// [`Error::Layout`] when the layouts differ.
        run(input, output) => {
            let (rows, cols) = rows_cols(input.shape());
            B::softmax_to(input.data(), output.data_mut(), rows, cols)
        };
        /// Softmax over the last axis, in place.
        ///
        /// # Errors
        /// None today (every valid view is accepted); the `Result` keeps the operator interface
        /// uniform.
        run_in_place(x) => {
            let (rows, cols) = rows_cols(x.shape());
            B::softmax(x.data_mut(), rows, cols)
        };
    }
}
