//! Streaming voice activity: 16 kHz samples in, in pieces of any size, one speech
//! probability per 512-sample window out, as silero-vad's `OnnxWrapper` computes them.
//!
//! # Feeding (silero-vad 6.2.3, `OnnxWrapper` at 16 kHz)
//! Window `i` covers samples `512 i .. 512 (i + 1)`; the network sees it after the 64
//! samples before it (zeros before the first window), and carries its LSTM state from
//! window to window (zeros at the start). [`Vad::finish`] zero-pads a last partial window
//! to 512 samples, as `OnnxWrapper.audio_forward` pads the end of a clip. Since every window
//! depends only on the samples and the state before it, any split of the input into pushes
//! gives the same probabilities, bit for bit.
//!
//! # Memory and cost
//! A [`VadModel`] holds the prepared weights (about 1.2 MB) and is shared through an
//! [`Arc`] by any number of [`Vad`] streams, each of which owns [`Vad::INSTANCE_BYTES`] of
//! buffers allocated at construction; [`Vad::push`] and [`Vad::finish`] allocate nothing.
//! One window is about 0.68 M multiply-accumulates, run on the backend chosen at
//! construction (one dispatch per window, none per kernel).

use alloc::boxed::Box;
use alloc::sync::Arc;

use neon_runtime::{dispatch, BackendKind};

use super::network::{SileroVad, SileroVadWeights, SileroVadWorkspace};
use super::{CONTEXT, WINDOW};
use crate::error::{Error, WeightsSource};
use crate::weights::TensorFile;
use neon_runtime::workspace::boxed_zeroed;

/// Samples the network reads per window: the context, then the window.
const INPUT: usize = CONTEXT + WINDOW;
/// LSTM state values: `[2, 128]` (c, then h).
const STATE: usize = 2 * 128;

/// Silero VAD's prepared weights. Share one through an [`Arc`] among every [`Vad`].
pub struct VadModel {
    /// The prepared operators of [`SileroVad`].
    pub weights: SileroVadWeights<alloc::vec::Vec<f32>>,
}

impl VadModel {
    /// The model in the safetensors `bytes` (the converter's tensor names,
    /// [`super::names`]).
    ///
    /// # Errors
    /// [`Error::Weights`] for a malformed file or a tensor of the wrong name, shape, dtype,
    /// or with non-finite values.
    pub fn from_bytes(bytes: &[u8], source: WeightsSource) -> Result<Arc<Self>, Error> {
        let file = TensorFile::parse(bytes, source)?;
        Ok(Arc::new(Self { weights: SileroVadWeights::load(&file)? }))
    }

    /// The model embedded in the program ([`super::WEIGHTS`]: silero-vad 6.2.3, MIT).
    ///
    /// # Errors
    /// As [`VadModel::from_bytes`] (not expected for the embedded file, which is tested).
    pub fn builtin() -> Result<Arc<Self>, Error> {
        Self::from_bytes(super::WEIGHTS, WeightsSource::Embedded("silero_vad"))
    }
}

/// One voice-activity stream: a shared [`VadModel`], its backend, and its own buffers.
pub struct Vad {
    model: Arc<VadModel>,
    backend: BackendKind,
    workspace: Box<SileroVadWorkspace>,
    /// The network's input: `CONTEXT` samples of context, then the window being filled.
    input: [f32; INPUT],
    /// Samples of the current window received so far (`0..WINDOW`).
    filled: usize,
    /// The LSTM state, `[2, 128]`.
    state: [f32; STATE],
    /// Windows computed since the start (or the last reset).
    windows: u64,
}

impl Vad {
    /// Bytes of buffers each stream owns: the plan's workspace and the stream itself.
    pub const INSTANCE_BYTES: usize = SileroVad::WORKSPACE_BYTES + core::mem::size_of::<Vad>();

    /// A stream at its start over `model`, running on `backend`.
    ///
    /// # Errors
    /// [`Error::Backend`] when `backend` cannot run on this machine or build.
    pub fn new(model: Arc<VadModel>, backend: BackendKind) -> Result<Self, Error> {
        backend.availability().map_err(Error::Backend)?;
        Ok(Self {
            model,
            backend,
            // SAFETY: a plan workspace is an aligned array of f32, valid when zeroed.
            workspace: unsafe { boxed_zeroed() },
            input: [0.0; INPUT],
            filled: 0,
            state: [0.0; STATE],
            windows: 0,
        })
    }

    /// The backend the network runs on.
    pub fn backend(&self) -> BackendKind {
        self.backend
    }

    /// The shared model.
    pub fn model(&self) -> &Arc<VadModel> {
        &self.model
    }

    /// Windows computed since the start or the last [`Vad::reset`].
    pub fn windows(&self) -> u64 {
        self.windows
    }

    /// Samples received and not yet part of a computed window (`0..512`).
    pub fn pending(&self) -> usize {
        self.filled
    }

    /// Back to the start of a stream: zero context, zero state, no pending samples.
    pub fn reset(&mut self) {
        self.input = [0.0; INPUT];
        self.filled = 0;
        self.state = [0.0; STATE];
        self.windows = 0;
    }

    /// Feeds the next `samples` (16 kHz mono, full scale 1) and calls `on_window` with the
    /// speech probability of every window they complete, in order.
    ///
    /// # Errors
    /// [`Error::Input`] naming the first NaN or infinite sample: nothing of `samples` is
    /// used and the stream is as before the call. [`Error::Runtime`] if the plan rejects
    /// its buffers (not expected).
    pub fn push(&mut self, samples: &[f32], mut on_window: impl FnMut(f32)) -> Result<(), Error> {
        Error::check_finite(
            samples,
            "index of the first NaN or infinite sample",
            "none (finite samples only)",
        )?;
        let mut rest = samples;
        while !rest.is_empty() {
            let take = rest.len().min(WINDOW - self.filled);
            let at = CONTEXT + self.filled;
            self.input[at..at + take].copy_from_slice(&rest[..take]);
            self.filled += take;
            rest = &rest[take..];
            if self.filled == WINDOW {
                on_window(self.run()?);
            }
        }
        Ok(())
    }

    /// Ends the stream: a partial last window is zero-padded to 512 samples and its
    /// probability passed to `on_window` (nothing happens without one). Afterwards the
    /// stream continues as if those zeros had been pushed; call [`Vad::reset`] to start a
    /// new one.
    ///
    /// # Errors
    /// As [`Vad::push`].
    pub fn finish(&mut self, mut on_window: impl FnMut(f32)) -> Result<(), Error> {
        if self.filled > 0 {
            self.input[CONTEXT + self.filled..].fill(0.0);
            self.filled = WINDOW;
            on_window(self.run()?);
        }
        Ok(())
    }

    /// Runs the network on the full window in `input` and makes its last `CONTEXT`
    /// samples the next window's context.
    fn run(&mut self) -> Result<f32, Error> {
        let mut p = [0.0f32];
        let weights = &self.model.weights;
        let (input, state, ws) = (&self.input, &mut self.state, &mut *self.workspace);
        dispatch!(self.backend, B => SileroVad::run::<B, _>(weights, input, &mut p, state, ws))
            .map_err(Error::Backend)??;
        self.input.copy_within(WINDOW.., 0);
        self.filled = 0;
        self.windows += 1;
        Ok(p[0])
    }
}
