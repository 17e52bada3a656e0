//! [`LstmCell`]: one step of an LSTM cell, PyTorch's `nn.LSTMCell` (gate order `i, f, g,
//! o`), with its geometry [`LstmCellGeometry`]. Silero VAD runs one step per 512-sample
//! chunk.
//!
//! # Computation
//! `z = W_ih x + b_ih + W_hh h + b_hh`; `i, f, o = sigmoid`, `g = tanh` of the four `H`-row
//! blocks of `z`; `c' = f * c + i * g`; `h' = o * tanh(c')` (the `torch.nn.LSTMCell`
//! documentation). The weights are given as one matrix `[W_ih | W_hh]`, `[4H, In + H]`
//! (row blocks in gate order `i, f, g, o`; per row the `In` input weights, then the `H`
//! recurrent weights), and the bias as one vector `b_ih + b_hh`, `[4H]` (folded by the
//! caller; optional). The weight is packed once into the GEMV's layout ([`pack_b`]); the
//! step is the driver [`lstm_cell_in`] (order of operations and accuracy: see
//! [`crate::kernels::lstm`]).
//!
//! # State
//! One caller-owned tensor `[2, H]`, **frame-major**, read and written in place: **row 0 is
//! the cell state `c`, row 1 the hidden state `h`**. `h` is last so that the cell's output
//! is the state's last frame: in a `neon_plan!`,
//! `last_frames(s, frames = 1, layout = frame_major)` reads `h` as `[1, H]`. Zero it to
//! start a sequence (PyTorch's default `(h_0, c_0) = 0`).
//!
//! # Input
//! One frame of `In` features: channel-first `[In, 1]` (what a conv1d produces for one
//! frame; [`LstmCellGeometry::layout`] `ChannelFirst`, the default) or frame-major `[1,
//! In]` (`FrameMajor`). Both hold the same `In` values.

#[cfg(feature = "alloc")]
use alloc::vec::Vec;

use crate::dim::Dim;
use crate::error::{Error, ShapeError};
use crate::kernels::gemm::pack_b;
use crate::kernels::lstm::{lstm_cell_in, LstmDims};
use crate::kernels::Backend;
use crate::ops::{
    check_bias_len, check_len, check_scratch, expect_dim, expect_layout, expect_rank, layout_name,
    InPlace, RunOptions, ShapeRule,
};
use crate::tensor::{Layout, Shape, TensorView, TensorViewMut};

const OP: &str = "lstm_cell";

/// Geometry of an [`LstmCell`]: sizes without weights. Implements [`ShapeRule`].
///
/// Inputs (in call order): the state `[2, hidden]` (frame-major; row 0 `c`, row 1 `h`) and
/// one frame `x`, `[input, 1]` (`layout` channel-first) or `[1, input]` (frame-major).
/// Output: the state itself (updated in place, [`InPlace::Always`]). Weight `[4 * hidden,
/// input + hidden]` (`[W_ih | W_hh]`, gates `i, f, g, o`), bias `[4 * hidden]` (`b_ih +
/// b_hh`). See the [module docs](self).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LstmCellGeometry {
    /// Input features `In` (`>= 1`).
    pub input: usize,
    /// Hidden units `H` (`>= 1`).
    pub hidden: usize,
    /// Layout of the input frame `x`: `[input, 1]` channel-first or `[1, input]`
    /// frame-major.
    pub layout: Layout,
}

impl LstmCellGeometry {
    /// `input` features, `hidden` units, the input channel-first (`[input, 1]`).
    pub const fn new(input: usize, hidden: usize) -> Self {
        Self { input, hidden, layout: Layout::ChannelFirst }
    }

    field_setters! {
        /// With the input frame in `layout`.
        layout: Layout;
    }

    /// The kernel's sizes.
    pub const fn dims(&self) -> LstmDims {
        LstmDims { input: self.input, hidden: self.hidden }
    }

    /// Checks the geometry itself.
    ///
    /// # Errors
    /// [`ShapeError::Geometry`] for a zero size, or sizes whose weight or scratch overflows
    /// `usize`.
    pub fn validate<D>(&self) -> Result<(), ShapeError<D>> {
        let geometry = |reason| Err(ShapeError::Geometry { op: OP, reason });
        if self.input == 0 || self.hidden == 0 {
            return geometry("input and hidden sizes must be >= 1");
        }
        let d = self.dims();
        if d.packed_len().is_none() || d.weight_len().is_none() || d.scratch_len().is_none() {
            return geometry("weight size overflows usize");
        }
        Ok(())
    }

    /// Gate pre-activations, `4 * hidden`: the weight's rows and the bias length.
    pub const fn gates(&self) -> usize {
        self.hidden.saturating_mul(4)
    }

    /// The weight shape `[4 * hidden, input + hidden]`.
    pub const fn weight_shape(&self) -> [usize; 2] {
        [self.gates(), self.input.saturating_add(self.hidden)]
    }

    /// Elements of the weight `[4 * hidden, input + hidden]` (`None` on overflow).
    pub const fn weight_len(&self) -> Option<usize> {
        self.dims().weight_len()
    }

    /// Elements of the packed weight, what [`LstmCell::from_packed`] takes (`None` on
    /// overflow).
    pub const fn packed_len(&self) -> Option<usize> {
        self.dims().packed_len()
    }

    /// Scratch elements of [`LstmCell::run`]: `input + 5 * hidden` (the GEMV operand `[x;
    /// h]` and the `4 * hidden` gates; saturating).
    pub const fn scratch_len(&self) -> usize {
        match self.dims().scratch_len() {
            Some(n) => n,
            None => usize::MAX,
        }
    }

    /// The geometry that a state `state` and an input `x` (in `layout`) call for, when
    /// both have rank 2 and constant sizes: `hidden` is the state's axis 1, `input` the
    /// features axis of `x`. `None` otherwise. Nothing else is checked here: the shape rule
    /// does that. `neon_plan!` uses it to name the weight shape a call needs.
    pub fn for_shapes<D: Dim>(layout: Layout, state: &Shape<D>, x: &Shape<D>) -> Option<Self> {
        if state.rank() != 2 || x.rank() != 2 {
            return None;
        }
        let hidden = state.dims()[1].as_constant()?;
        let input = x.dims()[features_axis(layout)].as_constant()?;
        Some(Self { input, hidden, layout })
    }

    /// Packs the `[4 * hidden, input + hidden]` weight (`[W_ih | W_hh]`, row-major) into
    /// the layout [`LstmCell::from_packed`] takes ([`pack_b`]), e.g. into a static buffer
    /// without `alloc`, or offline.
    ///
    /// # Errors
    /// [`Error::Shape`] for an invalid geometry; [`Error::Length`] when `weight` or `out`
    /// does not have [`weight_len`](Self::weight_len) /
    /// [`packed_len`](Self::packed_len) elements.
    pub fn pack_weights(&self, weight: &[f32], out: &mut [f32]) -> Result<(), Error> {
        self.validate::<usize>()?;
        check_len("weight", self.weight_len().unwrap_or(0), weight.len())?;
        check_len("packed weight", self.packed_len().unwrap_or(0), out.len())?;
        let [n, k] = self.weight_shape();
        pack_b(weight, n, k, out);
        Ok(())
    }
}

/// The axis of `x` that holds its features.
fn features_axis(layout: Layout) -> usize {
    match layout {
        Layout::ChannelFirst => 0,
        Layout::FrameMajor => 1,
    }
}

impl ShapeRule for LstmCellGeometry {
    fn name(&self) -> &'static str {
        OP
    }
    fn arity(&self) -> usize {
        2
    }
    /// `(state [2, hidden], x [input, 1] or [1, input]) -> [2, hidden]` (the state).
    ///
    /// # Errors
    /// [`ShapeError::Geometry`] for an invalid geometry or not exactly two inputs;
    /// [`ShapeError::Rank`] unless both have rank 2; [`ShapeError::Dim`] when the state
    /// does not have 2 rows (`c`, `h`) of `hidden` units, or `x` is not one frame of
    /// `input` features.
    fn output_shape<D: Dim>(&self, inputs: &[Shape<D>]) -> Result<Shape<D>, ShapeError<D>> {
        self.validate()?;
        let [state, x] = inputs else {
            return Err(ShapeError::Geometry { op: OP, reason: "lstm_cell takes a state and x" });
        };
        expect_rank(OP, 0, state, &[2], "2 ([2, hidden]: rows c and h)")?;
        expect_dim(OP, 0, state, 0, "state rows (c and h)", &D::constant(2))?;
        expect_dim(OP, 0, state, 1, "hidden units", &D::constant(self.hidden))?;
        let wording = match self.layout {
            Layout::ChannelFirst => "2 ([input, 1])",
            Layout::FrameMajor => "2 ([1, input])",
        };
        expect_rank(OP, 1, x, &[2], wording)?;
        let f = features_axis(self.layout);
        expect_dim(OP, 1, x, f, "input features", &D::constant(self.input))?;
        expect_dim(OP, 1, x, 1 - f, "frame (one step per call)", &D::constant(1))?;
        Ok(state.clone())
    }
    fn in_place(&self) -> InPlace {
        InPlace::Always
    }
    fn reads_layout(&self, arg: usize) -> Option<Layout> {
        Some(if arg == 0 { Layout::FrameMajor } else { self.layout })
    }
    fn writes_layout(&self) -> Option<Layout> {
        Some(Layout::FrameMajor)
    }
}

/// A prepared LSTM cell: the `[4 * hidden, input + hidden]` weight packed once for the
/// GEMV, and the folded bias. See the [module docs](self) for the computation and the
/// state, [`LstmCellGeometry`] for the shapes.
///
/// `S` is the storage of the packed weight and of the bias: `Vec<f32>` (feature `alloc`),
/// `&'static [f32]` for data packed offline ([`LstmCell::from_packed`]), or any
/// `AsRef<[f32]>`. Immutable after construction, `Send + Sync` when `S` is.
#[derive(Clone, Debug)]
pub struct LstmCell<S> {
    geometry: LstmCellGeometry,
    packed: S,
    bias: Option<S>,
}

#[cfg(feature = "alloc")]
impl LstmCell<Vec<f32>> {
    fn pack_to_vec(geometry: &LstmCellGeometry, weight: &[f32]) -> Result<Vec<f32>, Error> {
        geometry.validate::<usize>()?;
        // Check the weight before allocating the packed buffer.
        check_len("weight", geometry.weight_len().unwrap_or(0), weight.len())?;
        let mut packed = alloc::vec![0.0; geometry.packed_len().unwrap_or(0)];
        geometry.pack_weights(weight, &mut packed)?;
        Ok(packed)
    }
}

weight_constructors! {
    LstmCell, LstmCellGeometry, Self::pack_to_vec;
    /// Packs `weight` (`[4 * hidden, input + hidden]`, row-major: `[W_ih | W_hh]`, row
    /// blocks in gate order `i, f, g, o`) and takes `bias` (`[4 * hidden]`, `b_ih + b_hh`)
    /// by value.
    ///
    /// # Errors
    /// [`Error::Shape`] for an invalid geometry, [`Error::Length`] for a weight or bias of
    /// the wrong length.
    new;
    /// As [`LstmCell::new`], copying the borrowed `bias` (the weight is packed into a new
    /// buffer either way).
    ///
    /// # Errors
    /// As [`LstmCell::new`].
    from_slice;
    /// Wraps a weight already packed by [`LstmCellGeometry::pack_weights`] (e.g. offline,
    /// as `&'static` data) and `bias` (`[4 * hidden]`): no packing, no copy.
    ///
    /// # Errors
    /// [`Error::Shape`] for an invalid geometry, [`Error::Length`] when `packed` does not
    /// have [`LstmCellGeometry::packed_len`] elements or `bias` is not `4 * hidden` long.
    from_packed(geometry, packed, bias) => {
        check_len("packed weight", geometry.packed_len().unwrap_or(0), packed.as_ref().len())?;
        check_bias_len(bias.as_ref(), geometry.gates())?;
    } -> packed
}

impl<S: AsRef<[f32]>> LstmCell<S> {
    weight_accessors!(
        LstmCellGeometry,
        packed: [f32],
        "The packed weight ([`LstmCellGeometry::pack_weights`] layout).",
        bias,
        "The bias, `[4 * hidden]` (`b_ih + b_hh`)."
    );

    /// Scratch elements [`LstmCell::run`] needs ([`LstmCellGeometry::scratch_len`]).
    pub fn scratch_len(&self) -> usize {
        self.geometry.scratch_len()
    }

    with_run_options! {
        self;
        /// One step: reads `x` and `state`, writes the new cell and hidden state into `state`.
        /// `state`: frame-major `[2, hidden]`, row 0 `c`, row 1 `h`; `x`: `[input, 1]`
        /// channel-first or `[1, input]` frame-major, per the geometry's `layout`; `scratch`: at
        /// least [`LstmCell::scratch_len`] elements (contents ignored).
        ///
        /// # Errors
        /// Before any computation: [`Error::Layout`] for a state that is not frame-major or an
        /// `x` not in the geometry's layout, [`Error::Shape`] from the shape rule (argument 0 the
        /// state, 1 `x`), [`Error::Length`] for short scratch. `state` is untouched on error.
        run(state: &mut TensorViewMut<'_>, x: &TensorView<'_>, scratch: &mut [f32]);
        /// [`LstmCell::run`] with `options`: the GEMV (blocks of output panels) runs on
        /// `options.parallel()`, the same bits for any context; the gates run on the calling
        /// thread.
        ///
        /// # Errors
        /// As [`LstmCell::run`], and the context's error ([`Error::Team`]) after the checks
        /// (`state` is then unchanged).
        run_with(options) => {
            let g = &self.geometry;
            let fm = Layout::FrameMajor;
            expect_layout(OP, state.layout(), fm, layout_name(fm))?;
            expect_layout(OP, x.layout(), g.layout, layout_name(g.layout))?;
            g.output_shape(&[*state.shape(), *x.shape()])?;
            check_scratch(g.scratch_len(), scratch.len())?;
            let weights = (self.packed.as_ref(), self.bias());
            let par = options.parallel();
            lstm_cell_in::<B>(par, g.dims(), weights, x.data(), state.data_mut(), scratch)
        }
    }
}
