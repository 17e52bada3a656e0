//! Rotary position embedding operator: [`Rotary`], with its geometry [`RotaryGeometry`].
//!
//! Input and output are frame-major `[frames, heads * head_dim]` (queries or keys after
//! their projection); `head_dim = channels / heads` comes from the input. In every head the
//! first `rotary_dims` values are rotated pair by pair by the angle
//! `(at + frame) * theta^(-2i / rotary_dims)` (pair `i`), the rest pass through; `at` is a
//! run-time position (the decoding step; 0 for a whole sequence). Formula, pair
//! conventions, angle evaluation and accuracy: [`crate::kernels::rotary`].
//!
//! The operator has no weights: its frequency table is a function of the geometry,
//! computed by the `const fn` [`Rotary::new`], so a plan holds it in a constant.

use crate::dim::Dim;
use crate::error::{Error, ShapeError};
use crate::kernels::rotary::{inv_freq, RotaryFrames, RotaryPairs, MAX_POSITION, MAX_ROTARY_DIMS};
use crate::kernels::Backend;
use crate::ops::{
    check_output, expect_layout, expect_rank, head_dim, layout_name, only_input, RunOptions,
    ShapeRule,
};
use crate::tensor::{Layout, Shape, TensorView, TensorViewMut};

const OP: &str = "rotary";

/// Geometry of a [`Rotary`] embedding.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RotaryGeometry {
    /// Heads the channels split into (>= 1, divides the input's channels).
    pub heads: usize,
    /// Rotated values at the start of each head (even, 2..=`head_dim`, at most
    /// [`MAX_ROTARY_DIMS`]); Moonshine: 32 of 52.
    pub rotary_dims: usize,
    /// Base of the frequencies (finite, >= 1; usually 10000).
    pub theta: f32,
    /// Which values form the pairs.
    pub pairs: RotaryPairs,
}

impl RotaryGeometry {
    /// Checks the geometry alone (no input).
    ///
    /// # Errors
    /// [`ShapeError::Geometry`] for `heads == 0`, an odd, zero or too large `rotary_dims`,
    /// or `theta` below 1 or not finite.
    pub const fn validate<D>(&self) -> Result<(), ShapeError<D>> {
        if self.heads == 0 {
            return Err(ShapeError::Geometry { op: OP, reason: "heads must be >= 1" });
        }
        if self.rotary_dims == 0 || !self.rotary_dims.is_multiple_of(2) {
            return Err(ShapeError::Geometry { op: OP, reason: "dims must be even and >= 2" });
        }
        if self.rotary_dims > MAX_ROTARY_DIMS {
            return Err(ShapeError::Geometry { op: OP, reason: "dims must be at most 256" });
        }
        if !(self.theta >= 1.0 && self.theta < f32::INFINITY) {
            return Err(ShapeError::Geometry { op: OP, reason: "theta must be finite and >= 1" });
        }
        Ok(())
    }
}

impl ShapeRule for RotaryGeometry {
    fn name(&self) -> &'static str {
        OP
    }
    /// `[frames, channels] -> [frames, channels]`.
    ///
    /// # Errors
    /// As [`RotaryGeometry::validate`]; [`ShapeError::Geometry`] unless one input;
    /// [`ShapeError::Rank`] unless rank 2; [`ShapeError::Indivisible`] when the channels
    /// do not split into `heads`; [`ShapeError::TooSmall`] when `head_dim` can be smaller
    /// than `rotary_dims`.
    fn output_shape<D: Dim>(&self, inputs: &[Shape<D>]) -> Result<Shape<D>, ShapeError<D>> {
        self.validate()?;
        let x = only_input(OP, inputs, "rotary takes one input")?;
        expect_rank(OP, 0, x, &[2], "2")?;
        let hd = head_dim(OP, 0, x, 1, self.heads)?;
        if !hd.at_least(self.rotary_dims) {
            return Err(ShapeError::TooSmall {
                op: OP,
                what: "head_dim (channels / heads)",
                value: hd,
                min: self.rotary_dims,
            });
        }
        Ok(x.clone())
    }
    layout_facts!(Layout::FrameMajor, in_place);
}

/// Prepared rotary embedding: the geometry and its frequency table
/// (`inv_freq[i] = theta^(-2i / rotary_dims)`, f32). `Copy`, 528 bytes.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Rotary {
    geometry: RotaryGeometry,
    inv_freq: [f32; MAX_ROTARY_DIMS / 2],
}

impl Rotary {
    /// Computes the frequency table of `geometry` ([`inv_freq`]); a `const fn`, so a
    /// plan can hold the operator in a constant. An invalid geometry is reported by `run`
    /// (and by the shape rule), not here.
    pub const fn new(geometry: RotaryGeometry) -> Self {
        Self { geometry, inv_freq: inv_freq(geometry.theta, geometry.rotary_dims) }
    }

    /// The geometry.
    pub fn geometry(&self) -> RotaryGeometry {
        self.geometry
    }

    /// The frequency table: `rotary_dims / 2` values (empty for an invalid geometry).
    pub fn inv_freq(&self) -> &[f32] {
        match self.geometry.validate::<usize>() {
            Ok(()) => &self.inv_freq[..self.geometry.rotary_dims / 2],
            Err(_) => &[],
        }
    }

    /// Checks `x` (frame-major, shape rule) and the position range; returns
    /// `(frames, head_dim)`.
    fn check(&self, shape: &Shape, layout: Layout, at: usize) -> Result<(usize, usize), Error> {
        self.geometry.output_shape(&[*shape])?;
        expect_layout(OP, layout, Layout::FrameMajor, layout_name(Layout::FrameMajor))?;
        let [frames, channels] = [shape.dims()[0], shape.dims()[1]];
        let max = (MAX_POSITION + 1).saturating_sub(frames);
        if at > max {
            return Err(Error::OutOfRange { name: "at", value: at, min: 0, max });
        }
        Ok((frames, channels / self.geometry.heads))
    }

    with_run_options! {
        self;
        /// Rotates `x` (frame-major `[frames, heads * head_dim]`) in place; frame `f` is at
        /// position `at + f`.
        ///
        /// # Errors
        /// [`Error::Shape`] for an invalid geometry or an input the shape rule rejects;
        /// [`Error::Layout`] unless frame-major; [`Error::OutOfRange`] (named `"at"`) when the
        /// last position `at + frames - 1` exceeds [`MAX_POSITION`]. Nothing is written on
        /// error.
        run_in_place(x: &mut TensorViewMut<'_>, at: usize);
        /// [`Rotary::run_in_place`] with `options`: blocks of frames on `options.parallel()`
        /// (each frame alone: the same bits for any context).
        ///
        /// # Errors
        /// As [`Rotary::run_in_place`], and the context's error ([`Error::Team`]) after the
        /// checks.
        run_in_place_with(options) => {
            let (frames, hd) = self.check(x.shape(), x.layout(), at)?;
            let g = &self.geometry;
            let half = g.rotary_dims / 2;
            let f = RotaryFrames { frames, heads: g.heads, head_dim: hd, at };
            B::rotary_in(options.parallel(), x.data_mut(), f, &self.inv_freq[..half], g.pairs)
        }
    }

    with_run_options! {
        self;
        /// Writes the rotated `x` into `out` (same shape, both frame-major).
        ///
        /// # Errors
        /// As [`Rotary::run_in_place`], plus [`Error::Shape`] / [`Error::Layout`] for an output
        /// of another shape (argument 1) or layout.
        run(x: &TensorView<'_>, out: &mut TensorViewMut<'_>, at: usize);
        /// [`Rotary::run`] with `options`: the copy on the calling thread, the rotation as
        /// [`Rotary::run_in_place_with`].
        ///
        /// # Errors
        /// As [`Rotary::run`], and the context's error ([`Error::Team`]) after the checks.
        run_with(options) => {
            let (frames, hd) = self.check(x.shape(), x.layout(), at)?;
            check_output(OP, x.shape(), Layout::FrameMajor, out)?;
            out.data_mut().copy_from_slice(x.data());
            let g = &self.geometry;
            let half = g.rotary_dims / 2;
            let f = RotaryFrames { frames, heads: g.heads, head_dim: hd, at };
            B::rotary_in(options.parallel(), out.data_mut(), f, &self.inv_freq[..half], g.pairs)
        }
    }
}
