//! Streaming vocoding: hidden frames in as they arrive ([`Vocoder::push`]), audio out with a
//! bounded look-ahead, for utterances of any length, equal to decoding the whole utterance
//! at once.
//!
//! # Look-ahead
//! An output frame of the network depends on the hidden frames within
//! [`RECEPTIVE_FIELD`] = 19 on each side (3 + 1 + 3 + 4 × 3, see [`super::decoder`]), and
//! the iSTFT completes the samples of frame `t` (`128 t .. 128 (t + 1)` after the centre
//! trim) only when frame `t + 2` has been added (n_fft / 2 = 256 samples of overlap). So the
//! samples of frame `t` can be emitted once hidden frame `t + 21` has arrived:
//! [`LOOKAHEAD`] = 21 frames = 2688 samples = 168 ms. With the default block of 1, every
//! push made after the first 44 frames leaves exactly `128 (n - 21)` samples emitted in
//! all, `n` the frames pushed so far, whatever the sizes of the pushes; until then, between
//! `128 (4 floor(n / 4) - 21)` and `128 (n - 21)` (up to 3 frames more look-ahead while the
//! windows have to start at the utterance's first frame, see below). [`Vocoder::finish`]
//! emits the rest, so an utterance of `T` frames gives `128 T` samples.
//!
//! # How
//! The vocoder keeps the last hidden frames (frame-major, at most 2000). When at least
//! `block` frames have their 19 frames of right context (or at [`Vocoder::finish`], the
//! true end of the utterance), it runs the network ([`super::decoder::DecoderNet`]) on a
//! window holding them with 19 to 22 frames of left context (fewer only when the window
//! starts at the true start), keeps the iSTFT frames of those centre frames and adds them
//! to an iSTFT stream ([`neon_runtime::ops::istft::IstftStream`]). Frames near a window
//! edge that is not an utterance edge are computed from zero padding and discarded; the
//! kept ones see exactly what they see in a whole-utterance run, whose zero padding at
//! both ends the true edges reproduce. Windows hold at most 2000 frames (the plan's
//! bound), so a long push runs several windows of up to 1959 new frames each; there is no
//! limit on the utterance's length.
//!
//! Cost: a window of `k` new frames computes `k` + 38 to 41 context frames. Pushing one
//! frame at a time with block 1 computes about 40 frames per frame; a larger block
//! ([`Vocoder::with_block`]) trades latency (up to `block - 1` frames more) for less
//! recomputation.
//!
//! # Equality with the whole utterance
//! The output is bitwise the [`super::utterance::Decoder`]'s for the same frames (tested for
//! chunkings 1, 3, 17 and random mixes, block sizes 1 and 8, every backend, and thread
//! counts). That holds because every kernel of the plan computes an output frame with the
//! same operations whatever the window's length and the frame's place in it, with one
//! exception the windows are shaped around: the NEON channel-first GEMM computes the last
//! `columns % 4` columns (frames) of a conv in a tail that sums over `k` in two interleaved
//! chains. So a window that does not end at the utterance's end holds a multiple of 4
//! frames (no tail: it starts 19 to 22 frames before its first new frame, or at the
//! utterance's first frame and ends on a multiple of 4), and the last window starts on a
//! multiple of 4 (its tail is then the whole run's: the last `T % 4` frames). The
//! iSTFT stream is the one the whole decode runs.
//!
//! # Memory
//! Fixed buffers allocated at construction ([`Vocoder::INSTANCE_BYTES`]); `push` and
//! `finish` allocate nothing.

use alloc::sync::Arc;
use alloc::vec;
use alloc::vec::Vec;

use neon_runtime::{dispatch, Backend, BackendKind, Parallel, Serial};

use super::decoder::{ISTFT, RECEPTIVE_FIELD};
use super::load::VoiceWeights;
use super::utterance::{check_hidden, Decoder};
use super::{FRAME_VALUES, HIDDEN, HOP, MAX_FRAMES};
use crate::error::Error;

/// Frames of look-ahead: hidden frame `t + LOOKAHEAD` must have arrived before the samples
/// of frame `t` are emitted (block 1): 19 of receptive field and 2 of iSTFT overlap.
pub const LOOKAHEAD: usize = RECEPTIVE_FIELD + ISTFT.n_fft / 2 / ISTFT.hop;

/// Frames a window other than the last holds a multiple of; the last one starts on one
/// (module docs, "Equality with the whole utterance").
const ALIGN: usize = 4;

/// Most left context a window takes: 19, plus up to 3 to end on a multiple of [`ALIGN`].
const MAX_LEFT: usize = RECEPTIVE_FIELD + ALIGN - 1;

/// The largest block ([`Vocoder::with_block`]): a full history of 2000 frames always has
/// at least this many to compute, 2000 minus the context (up to 22 frames on the left, 19
/// on the right).
pub const MAX_BLOCK: usize = MAX_FRAMES - MAX_LEFT - RECEPTIVE_FIELD;

/// A streaming sanoTTS decoder (module docs).
pub struct Vocoder {
    decoder: Decoder,
    /// Hidden frames `base .. base + len`, frame-major `[MAX_FRAMES, 192]`.
    history: Vec<f32>,
    /// The plan's input: the window channel-first `[192, frames]`.
    input: Vec<f32>,
    /// Absolute index of `history`'s first frame.
    base: usize,
    /// Frames in `history`.
    len: usize,
    /// Frames whose iSTFT frames have been computed and added to the stream.
    next: usize,
    /// Least number of ready frames that runs a window during a push.
    block: usize,
}

impl Vocoder {
    /// Bytes of buffers each vocoder owns (the weights are shared): a [`Decoder`]'s and the
    /// hidden frames' history and window.
    pub const INSTANCE_BYTES: usize = Decoder::INSTANCE_BYTES + 4 * 2 * MAX_FRAMES * HIDDEN;

    /// A vocoder over `weights` on `backend`, block 1 (the least look-ahead); allocates
    /// every buffer.
    ///
    /// # Errors
    /// [`Error::Backend`] when `backend` cannot run here, naming what is missing.
    pub fn with_backend(weights: Arc<VoiceWeights>, backend: BackendKind) -> Result<Self, Error> {
        Ok(Self::from_decoder(Decoder::with_backend(weights, backend)?))
    }

    /// A vocoder over `weights` on backend `B`.
    ///
    /// # Errors
    /// As [`Vocoder::with_backend`].
    pub fn on<B: Backend>(weights: Arc<VoiceWeights>) -> Result<Self, Error> {
        Self::with_backend(weights, B::KIND)
    }

    /// A vocoder using `decoder`'s weights, backend and buffers.
    pub fn from_decoder(decoder: Decoder) -> Self {
        Self {
            decoder,
            history: vec![0.0; MAX_FRAMES * HIDDEN],
            input: vec![0.0; MAX_FRAMES * HIDDEN],
            base: 0,
            len: 0,
            next: 0,
            block: 1,
        }
    }

    /// This vocoder with windows run only once `block` frames (1..=[`MAX_BLOCK`]) are ready
    /// during a push: up to `block - 1` frames more look-ahead, about `(block + 40) / block`
    /// network frames computed per frame.
    ///
    /// # Errors
    /// [`Error::Input`] for a block outside 1..=1959.
    pub fn with_block(mut self, block: usize) -> Result<Self, Error> {
        if block == 0 || block > MAX_BLOCK {
            return Err(Error::Input { what: "vocoder block", expected: "1..=1959", got: block });
        }
        self.block = block;
        Ok(self)
    }

    /// The block ([`Vocoder::with_block`]).
    pub fn block(&self) -> usize {
        self.block
    }

    /// The backend the vocoder runs on.
    pub fn backend(&self) -> BackendKind {
        self.decoder.backend()
    }

    /// Hidden frames pushed in this utterance.
    pub fn frames(&self) -> usize {
        self.base + self.len
    }

    /// Most samples one [`Vocoder::push`] of `frames` frames can emit:
    /// `128 * (frames + block + 2)` (the frames pushed, those a block left waiting and up
    /// to 3 an aligned window left); `out` must hold that many.
    pub fn max_push_samples(&self, frames: usize) -> usize {
        HOP * (frames + self.block + ALIGN - 2)
    }

    /// Most samples [`Vocoder::finish`] can emit: `128 * (block + 21) + 256` (the right
    /// context, the frames a block or an aligned window left waiting, the iSTFT's tail).
    pub fn max_finish_samples(&self) -> usize {
        HOP * (RECEPTIVE_FIELD + self.block + ALIGN - 2) + ISTFT.n_fft / 2
    }

    /// Adds `frames` hidden frames, channel-first `[192, frames]` (a chunk of the
    /// utterance's `[192, T]`; 0 frames is allowed), and writes the samples they complete
    /// to the start of `out` (at least [`Vocoder::max_push_samples`] long); returns how
    /// many. Allocates nothing.
    ///
    /// # Errors
    /// [`Error::Input`] for a `hidden` of another length than `192 * frames`, a non-finite
    /// value (by index in `hidden`) or a short `out`; the vocoder is unchanged.
    pub fn push(&mut self, hidden: &[f32], frames: usize, out: &mut [f32]) -> Result<usize, Error> {
        self.push_in(&Serial, hidden, frames, out)
    }

    /// [`Vocoder::push`] with the network's heavy steps on `par` (the same bits for any
    /// context).
    ///
    /// # Errors
    /// As [`Vocoder::push`], and the context's error ([`neon_runtime::Error::Team`],
    /// reported as [`Error::Runtime`]), after which the utterance is lost: call
    /// [`Vocoder::reset`].
    pub fn push_in(
        &mut self,
        par: &dyn Parallel,
        hidden: &[f32],
        frames: usize,
        out: &mut [f32],
    ) -> Result<usize, Error> {
        check_hidden(hidden, frames)?;
        if out.len() < self.max_push_samples(frames) {
            return Err(Error::Input {
                what: "vocoder output samples",
                expected: "at least max_push_samples(frames) = 128 * (frames + block + 2)",
                got: out.len(),
            });
        }
        let backend = self.decoder.backend();
        dispatch!(backend, B => self.push_on::<B>(par, hidden, out)).map_err(Error::Backend)?
    }

    /// [`Vocoder::push_in`] on backend `B`, after its checks: `hidden` holds `192 * frames`
    /// values, channel-first.
    fn push_on<B: Backend>(
        &mut self,
        par: &dyn Parallel,
        hidden: &[f32],
        out: &mut [f32],
    ) -> Result<usize, Error> {
        let frames = hidden.len() / HIDDEN;
        let mut written = 0;
        let mut i = 0;
        while i < frames {
            if self.len == MAX_FRAMES {
                // Full: compute every frame with right context (at least MAX_BLOCK), which
                // frees all but the last 41 frames at most.
                let Some(w) = self.next_window(false) else {
                    return Err(Error::Runtime(neon_runtime::Error::Plan {
                        reason: "vocoder history full with no frame to compute",
                    }));
                };
                written += self.window::<B>(par, w, &mut out[written..])?;
            }
            let take = (MAX_FRAMES - self.len).min(frames - i);
            for j in 0..take {
                let row = &mut self.history[(self.len + j) * HIDDEN..][..HIDDEN];
                for (c, v) in row.iter_mut().enumerate() {
                    *v = hidden[c * frames + i + j];
                }
            }
            self.len += take;
            i += take;
        }
        match self.next_window(false) {
            Some(w) if w.end_new - self.next >= self.block => {
                written += self.window::<B>(par, w, &mut out[written..])?;
            }
            _ => {}
        }
        Ok(written)
    }

    /// Ends the utterance: computes its remaining frames against its true end (the zero
    /// padding of a whole-utterance run), flushes the iSTFT, writes the samples to the start
    /// of `out` (at least [`Vocoder::max_finish_samples`] long) and returns how many. All
    /// pushes and the finish together give `128 * T` samples for `T` frames pushed. The
    /// vocoder is then ready for the next utterance (as after [`Vocoder::reset`]).
    /// Allocates nothing.
    ///
    /// # Errors
    /// [`Error::Input`] for a short `out` (the vocoder is unchanged), and the context's
    /// error (after which the vocoder is reset).
    pub fn finish(&mut self, out: &mut [f32]) -> Result<usize, Error> {
        self.finish_in(&Serial, out)
    }

    /// [`Vocoder::finish`] with the network's heavy steps on `par`.
    ///
    /// # Errors
    /// As [`Vocoder::finish`].
    pub fn finish_in(&mut self, par: &dyn Parallel, out: &mut [f32]) -> Result<usize, Error> {
        if out.len() < self.max_finish_samples() {
            return Err(Error::Input {
                what: "vocoder output samples",
                expected: "at least max_finish_samples() = 128 * (block + 21) + 256",
                got: out.len(),
            });
        }
        let backend = self.decoder.backend();
        let r = dispatch!(backend, B => self.finish_on::<B>(par, out)).map_err(Error::Backend);
        self.reset();
        r?
    }

    fn finish_on<B: Backend>(
        &mut self,
        par: &dyn Parallel,
        out: &mut [f32],
    ) -> Result<usize, Error> {
        if self.frames() == 0 {
            return Ok(0);
        }
        let mut written = 0;
        if let Some(w) = self.next_window(true) {
            written += self.window::<B>(par, w, out)?;
        }
        let istft = self.decoder.head.istft()?;
        let mut stream = istft.resume(&mut self.decoder.stream, self.next)?;
        written += istft.finish(&mut stream, &mut out[written..])?;
        Ok(written)
    }

    /// Abandons the utterance: the next push starts a new one.
    pub fn reset(&mut self) {
        self.base = 0;
        self.len = 0;
        self.next = 0;
    }

    /// The window that computes the most new frames now, if any (module docs): the last
    /// one (`finish`: to the utterance's end, starting on a multiple of 4) or one of a
    /// multiple of 4 frames ending at the newest frame (or, while it would have to start
    /// before the utterance, starting at its first frame and ending on a multiple of 4).
    fn next_window(&self, finish: bool) -> Option<Window> {
        let received = self.frames();
        let left = self.next.checked_sub(RECEPTIVE_FIELD);
        let w = if finish {
            let start = left.map_or(0, |l| l - l % ALIGN);
            Window { start, end: received, end_new: received }
        } else {
            // The latest start with 19 frames of left context and a multiple of 4 frames.
            match left.and_then(|l| l.checked_sub((l + ALIGN - received % ALIGN) % ALIGN)) {
                Some(start) => Window { start, end: received, end_new: received - RECEPTIVE_FIELD },
                None => {
                    let end = received - received % ALIGN;
                    Window { start: 0, end, end_new: end.checked_sub(RECEPTIVE_FIELD)? }
                }
            }
        };
        debug_assert!(w.start >= self.base && w.end - w.start <= MAX_FRAMES);
        (w.end_new > self.next).then_some(w)
    }

    /// Computes frames `self.next .. w.end_new` on window `w`, adds their iSTFT frames to
    /// the stream, writes the samples completed to `out` and drops the history no later
    /// window needs (all but the last 22 frames before the first frame still to compute).
    fn window<B: Backend>(
        &mut self,
        par: &dyn Parallel,
        w: Window,
        out: &mut [f32],
    ) -> Result<usize, Error> {
        let frames = w.end - w.start;
        let input = &mut self.input[..HIDDEN * frames];
        let rows = &self.history[HIDDEN * (w.start - self.base)..HIDDEN * (w.end - self.base)];
        for (f, row) in rows.chunks_exact(HIDDEN).enumerate() {
            for (c, &v) in row.iter().enumerate() {
                input[c * frames + f] = v;
            }
        }
        self.decoder.network.run::<B>(par, input, frames)?;
        let istft = self.decoder.head.istft()?;
        let ws = &mut self.decoder.stream;
        let mut stream =
            if self.next == 0 { istft.stream(ws)? } else { istft.resume(ws, self.next)? };
        let y = &self.decoder.network.frames;
        let mut written = 0;
        for row in self.next - w.start..w.end_new - w.start {
            let frame = &y[row * FRAME_VALUES..][..FRAME_VALUES];
            written += istft.push::<B>(&mut stream, frame, &mut out[written..])?;
        }
        self.next = w.end_new;
        let base = self.next.saturating_sub(MAX_LEFT).max(self.base);
        let drop = base - self.base;
        self.history.copy_within(HIDDEN * drop..HIDDEN * self.len, 0);
        self.len -= drop;
        self.base = base;
        Ok(written)
    }
}

/// A run of the network: hidden frames `start .. end` (absolute), of which
/// `next .. end_new` are new.
#[derive(Clone, Copy, Debug)]
struct Window {
    start: usize,
    end: usize,
    end_new: usize,
}
