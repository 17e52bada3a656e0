//! Whole-utterance decoding: hidden states `[192, frames]` (1..=2000 frames) → exactly
//! `128 * frames` samples at 16 kHz, the network ([`DecoderNet`]) then the iSTFT head
//! ([`ISTFT`]).
//!
//! A [`Decoder`] holds the voice's prepared weights through an [`Arc`] (shared with every
//! other decoder and vocoder of the voice) and owns its buffers, allocated once at
//! construction ([`Decoder::INSTANCE_BYTES`]); [`Decoder::decode`] allocates nothing. The
//! backend is chosen at construction (session option `sanotts.exec_plan`, component
//! `decoder`, see [`crate::exec_plan`]): one dispatch per call, none per kernel. The `_in`
//! forms run the plan's heavy steps on a caller's execution context (e.g. a
//! [`Team`](neon_runtime::Team)): the same bits for any thread count.

use alloc::boxed::Box;
use alloc::sync::Arc;
use alloc::vec;
use alloc::vec::Vec;

use neon_runtime::kernels::fft::{twiddle_len, twiddles};
use neon_runtime::ops::istft::{periodic_hann, Istft};
use neon_runtime::{dispatch, Backend, BackendKind, Parallel, RunOptions, Serial};

use super::decoder::{DecoderNet, DecoderNetWorkspace, ISTFT};
use super::load::VoiceWeights;
use super::{FRAME_VALUES, HIDDEN, HOP, MAX_FRAMES};
use crate::error::Error;
use neon_runtime::workspace::boxed_zeroed;

/// The inverse real FFT's twiddles for n_fft 512, computed at compile time.
static TWIDDLES: [f32; twiddle_len(ISTFT.n_fft)] = twiddles(ISTFT.n_fft);

/// The network part of a decoder: weights, backend, workspace and the head's output.
pub(crate) struct Network {
    pub(crate) weights: Arc<VoiceWeights>,
    pub(crate) backend: BackendKind,
    workspace: Box<DecoderNetWorkspace>,
    /// iSTFT frames, frame-major `[MAX_FRAMES, 514]`.
    pub(crate) frames: Vec<f32>,
}

impl Network {
    /// Runs the plan on `hidden` `[192, frames]` (checked by the caller) on backend `B`;
    /// the iSTFT frames are `self.frames[..frames * 514]`.
    pub(crate) fn run<B: Backend>(
        &mut self,
        par: &dyn Parallel,
        hidden: &[f32],
        frames: usize,
    ) -> Result<(), Error> {
        let y = &mut self.frames[..frames * FRAME_VALUES];
        let o = RunOptions::new().with_parallel(par);
        let w = &self.weights.net;
        DecoderNet::run_with::<B, _>(w, hidden, y, frames, &mut self.workspace, o)?;
        Ok(())
    }
}

/// The iSTFT head: the periodic Hann window (the twiddles are a `static`).
pub(crate) struct Head {
    window: Vec<f32>,
}

impl Head {
    fn new() -> Self {
        let mut window = vec![0.0; ISTFT.n_fft];
        periodic_hann(&mut window);
        Self { window }
    }

    /// The prepared iSTFT (borrowing the window).
    pub(crate) fn istft(&self) -> Result<Istft<'_>, Error> {
        Ok(Istft::new(ISTFT, &TWIDDLES, &self.window)?)
    }
}

/// Checks that `hidden` holds `[192, frames]` finite values.
pub(crate) fn check_hidden(hidden: &[f32], frames: usize) -> Result<(), Error> {
    if hidden.len() != HIDDEN * frames {
        return Err(Error::Input {
            what: "hidden values",
            expected: "192 * frames (channel-first [192, frames])",
            got: hidden.len(),
        });
    }
    Error::check_finite(
        hidden,
        "index of the first NaN or infinite hidden value",
        "none (finite values only)",
    )?;
    Ok(())
}

/// The sanoTTS decoder with its buffers, for whole utterances of up to 2000 frames (16 s;
/// stream longer ones through a [`super::vocoder::Vocoder`]).
pub struct Decoder {
    pub(crate) network: Network,
    pub(crate) head: Head,
    /// The iSTFT stream's workspace.
    pub(crate) stream: Vec<f32>,
}

impl Decoder {
    /// Bytes of buffers each decoder owns (the weights are shared): the plan's workspace,
    /// the iSTFT frames of 2000 frames, the window and the iSTFT stream's workspace.
    pub const INSTANCE_BYTES: usize = DecoderNet::WORKSPACE_BYTES
        + 4 * (MAX_FRAMES * FRAME_VALUES + ISTFT.n_fft + Istft::workspace_len(ISTFT.n_fft));

    /// A decoder over `weights` on `backend`; allocates every buffer.
    ///
    /// # Errors
    /// [`Error::Backend`] when `backend` cannot run here, naming what is missing.
    pub fn with_backend(weights: Arc<VoiceWeights>, backend: BackendKind) -> Result<Self, Error> {
        backend.availability().map_err(Error::Backend)?;
        // SAFETY: the workspace is a plain `[f32; N]` in an aligned wrapper, valid when
        // all-zero.
        let workspace = unsafe { boxed_zeroed() };
        Ok(Self {
            network: Network {
                weights,
                backend,
                workspace,
                frames: vec![0.0; MAX_FRAMES * FRAME_VALUES],
            },
            head: Head::new(),
            stream: vec![0.0; Istft::workspace_len(ISTFT.n_fft)],
        })
    }

    /// A decoder over `weights` on backend `B`.
    ///
    /// # Errors
    /// As [`Decoder::with_backend`].
    pub fn on<B: Backend>(weights: Arc<VoiceWeights>) -> Result<Self, Error> {
        Self::with_backend(weights, B::KIND)
    }

    /// The backend the decoder runs on.
    pub fn backend(&self) -> BackendKind {
        self.network.backend
    }

    /// The shared weights.
    pub fn weights(&self) -> &Arc<VoiceWeights> {
        &self.network.weights
    }

    /// Decodes one utterance: `hidden` channel-first `[192, frames]` (1..=2000 frames,
    /// finite) → `audio`, exactly `128 * frames` samples at 16 kHz, not clipped. Frame `t`
    /// is centred at sample `128 t`. Allocates nothing.
    ///
    /// # Errors
    /// [`Error::Input`] for `frames` outside 1..=2000, a `hidden` or `audio` of another
    /// length, or a non-finite hidden value (by index). Nothing is written on error.
    pub fn decode(
        &mut self,
        hidden: &[f32],
        frames: usize,
        audio: &mut [f32],
    ) -> Result<(), Error> {
        self.decode_in(&Serial, hidden, frames, audio)
    }

    /// [`Decoder::decode`] with the network's heavy steps on `par` (the same bits for any
    /// context).
    ///
    /// # Errors
    /// As [`Decoder::decode`], and the context's error ([`neon_runtime::Error::Team`],
    /// reported as [`Error::Runtime`]).
    pub fn decode_in(
        &mut self,
        par: &dyn Parallel,
        hidden: &[f32],
        frames: usize,
        audio: &mut [f32],
    ) -> Result<(), Error> {
        check_frames(frames)?;
        check_hidden(hidden, frames)?;
        if audio.len() != HOP * frames {
            return Err(Error::Input {
                what: "audio samples",
                expected: "128 * frames",
                got: audio.len(),
            });
        }
        dispatch!(self.network.backend, B => {
            self.network.run::<B>(par, hidden, frames)?;
            let y = &self.network.frames[..frames * FRAME_VALUES];
            self.head.istft()?.run::<B>(y, &mut self.stream, audio)?;
            Ok(())
        })
        .map_err(Error::Backend)?
    }

    /// The network alone: `hidden` `[192, frames]` → the iSTFT frames, frame-major
    /// `[frames, 514]` (per frame 257 log-magnitudes, then 257 phases), valid until the next
    /// call. Allocates nothing.
    ///
    /// # Errors
    /// As [`Decoder::decode_in`] (without the audio length).
    pub fn network_in(
        &mut self,
        par: &dyn Parallel,
        hidden: &[f32],
        frames: usize,
    ) -> Result<&[f32], Error> {
        check_frames(frames)?;
        check_hidden(hidden, frames)?;
        let net = &mut self.network;
        dispatch!(net.backend, B => net.run::<B>(par, hidden, frames))
            .map_err(Error::Backend)??;
        Ok(&self.network.frames[..frames * FRAME_VALUES])
    }
}

fn check_frames(frames: usize) -> Result<(), Error> {
    if frames == 0 || frames > MAX_FRAMES {
        return Err(Error::Input {
            what: "frames",
            expected: "1..=2000 per decode (stream longer utterances through a Vocoder)",
            got: frames,
        });
    }
    Ok(())
}
