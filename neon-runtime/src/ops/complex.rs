//! [`ComplexMagnitude`]: magnitudes of complex values stored as stacked channels, the
//! layout of an STFT computed as a conv1d whose `2C` output channels are the real parts of
//! `C` bins and then their imaginary parts (Silero VAD: 258 channels, 129 bins).

use crate::dim::Dim;
use crate::error::{Error, ShapeError};
use crate::kernels::Backend;
use crate::ops::{check_channel_first, expect_rank, only_input, ShapeRule};
use crate::tensor::{Layout, Shape, TensorView, TensorViewMut};

const OP: &str = "complex_magnitude";

/// `[2C, T] -> [C, T]`, channel-first: `out[c, t] = sqrt(x[c, t]^2 + x[C + c, t]^2)` (the
/// first `C` channels are the real parts, the last `C` the imaginary parts).
///
/// Evaluated in f32 as ONNX Runtime evaluates Silero VAD's `Pow`, `Pow`, `Add`, `Sqrt`
/// nodes: both squares rounded, their sum rounded, then the correctly rounded square root
/// ([`FftKernels::magnitude_spectrum`](crate::kernels::FftKernels::magnitude_spectrum));
/// every backend gives the same bits. Against the exact magnitude of the f32 inputs the
/// relative error is at most `2u = 2^-23` (`u = 2^-24`, the unit roundoff; to first order:
/// the squares and the sum put at most `2u` into the argument, the root halves it and adds
/// its own `u`) while the squares are normal numbers (`|x| > 1.1e-19`); below, they
/// lose precision or flush to 0 as in ONNX Runtime, and above `|x| = 1.8e19` they overflow
/// to `inf`, as there too.
///
/// The operator has no weights: it is its own geometry ([`ShapeRule`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ComplexMagnitude;

impl ShapeRule for ComplexMagnitude {
    fn name(&self) -> &'static str {
        OP
    }
    /// `[2C, T] -> [C, T]`.
    ///
    /// # Errors
    /// [`ShapeError::Geometry`] unless exactly one input; [`ShapeError::Rank`] unless it
    /// has rank 2; [`ShapeError::Indivisible`] when its channel count is odd.
    fn output_shape<D: Dim>(&self, inputs: &[Shape<D>]) -> Result<Shape<D>, ShapeError<D>> {
        let x = only_input(OP, inputs, "complex_magnitude takes one input")?;
        expect_rank(OP, 0, x, &[2], "2 ([2 * channels, frames])")?;
        let channels = &x.dims()[0];
        let half = channels.div_floor_const(2);
        if half.mul_const(2) != *channels || !half.at_least(1) {
            return Err(ShapeError::Indivisible {
                op: OP,
                arg: 0,
                axis: 0,
                what: "channels",
                divisor: 2,
                divisor_what: "(real and imaginary parts)",
                got: channels.clone(),
            });
        }
        Shape::new(&[half, x.dims()[1].clone()])
            .map_err(|_| ShapeError::Geometry { op: OP, reason: "invalid input shape" })
    }
    layout_facts!(Layout::ChannelFirst);
}

impl ComplexMagnitude {
    /// Writes the magnitudes of `input` (`[2C, T]`, channel-first) into `output` (`[C, T]`,
    /// channel-first).
    ///
    /// # Errors
    /// [`Error::Layout`] for a frame-major input or output; [`Error::Shape`] from the shape
    /// rule (rank, odd channels) or for an output of the wrong shape (argument 1). Nothing
    /// is written on error.
    pub fn run<B: Backend>(
        &self,
        input: &TensorView<'_>,
        output: &mut TensorViewMut<'_>,
    ) -> Result<(), Error> {
        check_channel_first(self, input, output, &["output channels", "output frames"])?;
        // `[2C, T]` row-major: the `C * T` real parts, then the `C * T` imaginary parts.
        B::magnitude_spectrum(input.data(), output.data_mut());
        Ok(())
    }
}
