//! Layout operators: [`Transpose`] between channel-first `[channels, frames]` and
//! frame-major `[frames, channels]` sequences, and [`Reshape`] (ONNX `Flatten` and
//! `Reshape`), which reinterprets the row-major data under another shape.

use super::{check_input_layout, check_output, expect_dim, expect_rank, only_input, ShapeRule};
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
        let x = only_input(op, inputs, "expects exactly one input")?;
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

/// The shape a [`Reshape`] produces.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReshapeTo {
    /// ONNX `Flatten`: `[d0, .., dn]` -> `[d0 * .. * d(axis - 1), d(axis) * .. * dn]`, so
    /// axis 0 gives `[1, elements]` and axis `rank` gives `[elements, 1]`.
    Flatten {
        /// First axis of the second output dimension, `0..=rank`.
        axis: usize,
    },
    /// A fixed shape with the input's element count (TensorFlow Lite's `Reshape`, ONNX
    /// `Reshape` with a constant shape).
    Dims(Shape),
}

/// Reshape of a tensor of any rank: the same row-major data under another shape, tagged
/// `layout`. The operator is its own geometry (it has no weights).
///
/// Shape rule: see [`ReshapeTo`]; the element count never changes. The output may take the
/// input's storage ([`InPlace::Allowed`](super::InPlace::Allowed): same bytes, nothing to
/// compute), so a planner that gives the output the input's buffer runs nothing at all;
/// otherwise [`Reshape::run`] copies. Argument 0 is the input,
/// argument 1 the output.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Reshape {
    /// The output shape.
    pub to: ReshapeTo,
    /// The layout tag of the output (the input may carry any).
    pub layout: Layout,
}

impl Reshape {
    /// ONNX `Flatten` at `axis` into a `layout` tensor of rank 2.
    pub const fn flatten(axis: usize, layout: Layout) -> Self {
        Self { to: ReshapeTo::Flatten { axis }, layout }
    }

    /// A reshape into the fixed shape `dims` (outermost first), tagged `layout`.
    ///
    /// # Errors
    /// [`Error::BadShape`] for a rank outside 1..=4 or a zero dimension.
    pub fn to_dims(dims: &[usize], layout: Layout) -> Result<Self, Error> {
        Ok(Self { to: ReshapeTo::Dims(Shape::new(dims)?), layout })
    }

    /// Copies `input` into `output`, which must have the output shape and layout.
    ///
    /// # Errors
    /// [`Error::Shape`] from the shape rule or for an output of another shape (argument 1);
    /// [`Error::Layout`] when the output is not tagged `layout`. Nothing is written on
    /// error.
    pub fn run(&self, input: &TensorView, output: &mut TensorViewMut) -> Result<(), Error> {
        let shape = self.output_shape(&[*input.shape()])?;
        check_output(self.name(), &shape, self.layout, output)?;
        output.data_mut().copy_from_slice(input.data());
        Ok(())
    }
}

impl ShapeRule for Reshape {
    fn name(&self) -> &'static str {
        match self.to {
            ReshapeTo::Flatten { .. } => "flatten",
            ReshapeTo::Dims(_) => "reshape",
        }
    }
    /// # Errors
    /// [`ShapeError::Geometry`] unless there is exactly one input, or when a flatten axis
    /// exceeds its rank; [`ShapeError::Dim`] (axis 0, `"elements"`) when a fixed shape
    /// does not have the input's element count.
    fn output_shape<D: Dim>(&self, inputs: &[Shape<D>]) -> Result<Shape<D>, ShapeError<D>> {
        let op = self.name();
        let x = only_input(op, inputs, "expects exactly one input")?;
        let shape = match self.to {
            ReshapeTo::Flatten { axis } => {
                if axis > x.rank() {
                    let reason = "flatten axis exceeds the input rank";
                    return Err(ShapeError::Geometry { op, reason });
                }
                let product = |d: &[D]| d.iter().fold(D::constant(1), |a, b| a.mul(b));
                let (outer, inner) = x.dims().split_at(axis);
                Shape::new(&[product(outer), product(inner)])
            }
            ReshapeTo::Dims(to) => {
                let elements = Shape::new(&[x.numel()])
                    .map_err(|_| ShapeError::Geometry { op, reason: "invalid input shape" })?;
                let want = D::constant(to.dims().iter().product());
                expect_dim(op, 0, &elements, 0, "elements", &want)?;
                let dims: [D; crate::MAX_RANK] =
                    core::array::from_fn(|i| D::constant(to.dims().get(i).copied().unwrap_or(1)));
                Shape::new(&dims[..to.rank()])
            }
        };
        // Products of dims >= 1 and a valid fixed shape are valid shapes.
        shape.map_err(|_| ShapeError::Geometry { op, reason: "invalid output shape" })
    }
    fn in_place(&self) -> super::InPlace {
        super::InPlace::Allowed
    }
    fn reads_layout(&self, _arg: usize) -> Option<Layout> {
        None
    }
    fn writes_layout(&self) -> Option<Layout> {
        Some(self.layout)
    }
}
