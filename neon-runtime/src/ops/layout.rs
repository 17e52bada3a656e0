//! Layout operators: [`Transpose`] between channel-first `[channels, frames]` and
//! frame-major `[frames, channels]` sequences.

use super::{check_input_layout, check_output, expect_rank, ShapeRule};
use crate::dim::Dim;
use crate::error::{Error, ShapeError};
use crate::kernels::Backend;
use crate::tensor::{Layout, Shape, TensorView, TensorViewMut};

/// Transpose of a rank-2 sequence into layout `to`: a channel-first `[channels, frames]`
/// input becomes a frame-major `[frames, channels]` output (`to == FrameMajor`), and a
/// frame-major input becomes channel-first (`to == ChannelFirst`).
///
/// The operator is its own geometry (it has no weights). Shape rule: `[a, b] -> [b, a]`.
/// Argument 0 is the input, argument 1 the output.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Transpose {
    /// Layout of the output; the input must have the other one.
    pub to: Layout,
}

impl Transpose {
    /// A transpose into layout `to`.
    pub fn new(to: Layout) -> Self {
        Self { to }
    }

    /// The layout the input must have (the other one).
    pub fn from_layout(&self) -> Layout {
        match self.to {
            Layout::ChannelFirst => Layout::FrameMajor,
            Layout::FrameMajor => Layout::ChannelFirst,
        }
    }

    /// Writes the transpose of `input` into `output`.
    ///
    /// # Errors
    /// [`Error::Shape`] when the input is not rank 2 or the output is not its transpose
    /// (`[b, a]` for an `[a, b]` input); [`Error::Layout`] when the input's layout is not
    /// [`Transpose::from_layout`] or the output's is not `to`. Nothing is written on error.
    pub fn run<B: Backend>(
        &self,
        input: &TensorView,
        output: &mut TensorViewMut,
    ) -> Result<(), Error> {
        let op = self.name();
        let shape = self.output_shape(&[*input.shape()])?;
        check_input_layout(op, input, self.from_layout())?;
        check_output(op, &shape, self.to, output)?;
        let (rows, cols) = (input.dims()[0], input.dims()[1]);
        B::transpose(rows, cols, input.data(), output.data_mut());
        Ok(())
    }
}

impl ShapeRule for Transpose {
    fn name(&self) -> &'static str {
        "transpose"
    }
    /// # Errors
    /// [`ShapeError::Geometry`] unless there is exactly one input; [`ShapeError::Rank`]
    /// unless it has rank 2.
    fn output_shape<D: Dim>(&self, inputs: &[Shape<D>]) -> Result<Shape<D>, ShapeError<D>> {
        let op = self.name();
        let [x] = inputs else {
            return Err(ShapeError::Geometry { op, reason: "expects exactly one input" });
        };
        expect_rank(op, 0, x, &[2], "2")?;
        let d = x.dims();
        // Both dims come from a valid shape, so the swapped one is valid too.
        Shape::new(&[d[1].clone(), d[0].clone()])
            .map_err(|_| ShapeError::Geometry { op, reason: "invalid input shape" })
    }
    fn reads_layout(&self, _arg: usize) -> Option<Layout> {
        Some(self.from_layout())
    }
    fn writes_layout(&self) -> Option<Layout> {
        Some(self.to)
    }
}
