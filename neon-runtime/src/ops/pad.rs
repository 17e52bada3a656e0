//! [`ReflectPad`]: padding of a channel-first sequence by reflection at both ends, without
//! repeating the edge sample (PyTorch's `F.pad(x, (left, right), mode="reflect")`, numpy's
//! `np.pad(x, (left, right), mode="reflect")`; Silero VAD pads each 576-sample chunk by 64
//! on the right before its STFT).

use crate::dim::Dim;
use crate::error::{Error, ShapeError};
use crate::ops::{check_channel_first, expect_rank, only_input, ShapeRule};
use crate::tensor::{Layout, Shape, TensorView, TensorViewMut};

const OP: &str = "reflect_pad";

/// `[C, T] -> [C, left + T + right]`, channel-first, each row padded by its own reflection
/// about its first and last samples:
///
/// ```text
/// out[c, j] = x[c, left - j]               j < left            (x[left], ..., x[1])
/// out[c, j] = x[c, j - left]               left <= j < left + T
/// out[c, j] = x[c, 2 (T - 1) - (j - left)] j >= left + T       (x[T - 2], ..., x[T - 1 - right])
/// ```
///
/// The edge samples `x[0]` and `x[T - 1]` are not repeated, so the input must be longer
/// than either padding: `T > max(left, right)` (PyTorch's and numpy's requirement for one
/// reflection). A copy: the output's bits are the input's.
///
/// The operator has no weights: it is its own geometry ([`ShapeRule`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ReflectPad {
    /// Samples added before the first one.
    pub left: usize,
    /// Samples added after the last one.
    pub right: usize,
}

impl ReflectPad {
    /// `left` samples before, `right` after.
    pub const fn new(left: usize, right: usize) -> Self {
        Self { left, right }
    }

    /// Checks the padding itself.
    ///
    /// # Errors
    /// [`ShapeError::Geometry`] when both paddings are 0 (the call would be a copy) or
    /// their sum overflows `usize`.
    pub fn validate<D>(&self) -> Result<(), ShapeError<D>> {
        let geometry = |reason| Err(ShapeError::Geometry { op: OP, reason });
        if self.left == 0 && self.right == 0 {
            return geometry("give `left` or `right` (at least one >= 1)");
        }
        if self.left.checked_add(self.right).is_none() {
            return geometry("left + right overflows usize");
        }
        Ok(())
    }

    /// Writes `input` (`[C, T]`, channel-first) padded into `output` (`[C, left + T +
    /// right]`, channel-first).
    ///
    /// # Errors
    /// [`Error::Layout`] for a frame-major input or output; [`Error::Shape`] from the shape
    /// rule (no padding, rank, too few frames) or for an output of the wrong shape
    /// (argument 1). Nothing is written on error.
    pub fn run(&self, input: &TensorView<'_>, output: &mut TensorViewMut<'_>) -> Result<(), Error> {
        check_channel_first(self, input, output, &["output channels", "output frames"])?;
        let t = input.dims()[1];
        let (left, right) = (self.left, self.right);
        let rows =
            output.data_mut().chunks_exact_mut(left + t + right).zip(input.data().chunks_exact(t));
        for (row, x) in rows {
            let (head, rest) = row.split_at_mut(left);
            let (body, tail) = rest.split_at_mut(t);
            // x[left], ..., x[1] and x[T - 2], ..., x[T - 1 - right] (T > left, right).
            head.iter_mut().zip(x[1..=left].iter().rev()).for_each(|(o, &v)| *o = v);
            body.copy_from_slice(x);
            tail.iter_mut().zip(x[t - 1 - right..t - 1].iter().rev()).for_each(|(o, &v)| *o = v);
        }
        Ok(())
    }
}

impl ShapeRule for ReflectPad {
    fn name(&self) -> &'static str {
        OP
    }
    /// `[C, T] -> [C, left + T + right]`.
    ///
    /// # Errors
    /// [`ShapeError::Geometry`] for no padding or not exactly one input;
    /// [`ShapeError::Rank`] unless it has rank 2; [`ShapeError::TooSmall`] when `T` can be
    /// `max(left, right)` or less.
    fn output_shape<D: Dim>(&self, inputs: &[Shape<D>]) -> Result<Shape<D>, ShapeError<D>> {
        self.validate()?;
        let x = only_input(OP, inputs, "reflect_pad takes one input")?;
        expect_rank(OP, 0, x, &[2], "2 ([channels, frames])")?;
        let frames = &x.dims()[1];
        let min = self.left.max(self.right).saturating_add(1);
        if !frames.at_least(min) {
            let what = "input frames (at least max(left, right) + 1)";
            return Err(ShapeError::TooSmall { op: OP, what, value: frames.clone(), min });
        }
        let out = frames.add_const(self.left + self.right);
        Shape::new(&[x.dims()[0].clone(), out])
            .map_err(|_| ShapeError::Geometry { op: OP, reason: "invalid input shape" })
    }
    layout_facts!(Layout::ChannelFirst);
}
