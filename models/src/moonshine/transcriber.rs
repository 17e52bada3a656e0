//! Greedy transcription: 16 kHz mono f32 samples → token ids → text.
//!
//! A [`MoonshineModel`] holds the immutable parts: the prepared weights (about 77 MB in
//! memory, from a 62 MB file) and
//! the tokenizer. Several [`Transcriber`]s (one per stream or client) share one model
//! through an [`Arc`]; each owns only its buffers, allocated once at construction:
//! [`Transcriber::INSTANCE_BYTES`] (81.8 MB for the 30 s bound, mostly the encoder's
//! workspaces and the cross-attention keys and values). After that,
//! [`Transcriber::encode`], [`Transcriber::decode_step`] and [`Transcriber::greedy`]
//! allocate nothing; [`Transcriber::transcribe`] allocates only to build the returned
//! [`Transcript`] (its token vector and text).
//!
//! Each component runs on the backend chosen at construction (session option
//! `moonshine_asr.exec_plan`, components `encoder` and `decoder`, see
//! [`crate::exec_plan`]): monomorphised per backend, one dispatch per component call
//! ([`neon_runtime::dispatch!`]), none per kernel.
//!
//! Every step also has an `_in` form ([`Transcriber::encode_in`],
//! [`Transcriber::decode_step_in`], [`Transcriber::greedy_in`], [`Transcriber::transcribe_in`])
//! that runs the encoder, the cross-attention keys and values and each decoder step on a
//! caller-owned execution context, e.g. a [`Team`](neon_runtime::Team): the tokens and every
//! logit are the same bits for any thread count. The forms without the suffix run serially.

use alloc::boxed::Box;
use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec;
use alloc::vec::Vec;

use neon_runtime::ops::quant::QuantPath;
use neon_runtime::{dispatch, Backend, BackendKind, IndexView, Layout, Parallel, RunOptions};
use neon_runtime::{Serial, TensorViewMut};

use super::decoder::{CrossKv, CrossKvWorkspace, DecoderHead, DecoderHeadWorkspace};
use super::decoder::{DecoderLayer, DecoderLayerWorkspace};
use super::encoder::{EncoderLayer, EncoderLayerWorkspace, EncoderNorm, EncoderNormWorkspace};
use super::encoder::{EncoderStem, EncoderStemWorkspace};
use super::load::MoonshineWeights;
use super::tokenizer::Tokenizer;
use super::{encoder_frames, BOS, CACHE, D_MODEL, EOS, LAYERS, MAX_FRAMES, MAX_SAMPLES};
use super::{MIN_SAMPLES, SAMPLE_RATE, VOCAB};
use crate::error::Error;
use neon_runtime::workspace::boxed_zeroed;

/// Moonshine's immutable parts: the prepared weights and the tokenizer. Share one through
/// an [`Arc`] among every [`Transcriber`] that uses it.
pub struct MoonshineModel {
    /// The prepared operators.
    pub weights: MoonshineWeights,
    /// The tokenizer.
    pub tokenizer: Tokenizer,
}

impl MoonshineModel {
    /// The model of `weights` and `tokenizer`, ready to share.
    pub fn new(weights: MoonshineWeights, tokenizer: Tokenizer) -> Arc<Self> {
        Arc::new(Self { weights, tokenizer })
    }
}

/// Generated tokens allowed for `samples` samples of audio: `ceil(6.5 * seconds)`, at least 1
/// (a budget against runaway repetition; see `tools/moonshine/README.md`).
pub const fn token_budget(samples: usize) -> usize {
    let budget = (samples * 13).div_ceil(2 * SAMPLE_RATE);
    if budget == 0 {
        1
    } else {
        budget
    }
}

/// The result of transcribing one segment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Transcript {
    /// The decoded text.
    pub text: String,
    /// Every token id: the leading BOS, the generated ids and the final EOS (absent when
    /// the token budget ran out first).
    pub tokens: Vec<u32>,
}

/// The encoder's and decoder's workspaces.
struct Workspaces {
    stem: Box<EncoderStemWorkspace>,
    layer: Box<EncoderLayerWorkspace>,
    norm: Box<EncoderNormWorkspace>,
    cross: Box<CrossKvWorkspace>,
    decoder: Box<DecoderLayerWorkspace>,
    head: Box<DecoderHeadWorkspace>,
}

/// Moonshine with its buffers, ready to transcribe: a shared [`MoonshineModel`], the
/// backend of each component, and [`Transcriber::INSTANCE_BYTES`] of buffers of its own.
pub struct Transcriber {
    model: Arc<MoonshineModel>,
    /// The encoder's backend (stem, layers, final norm, cross-attention keys and values).
    encoder: BackendKind,
    /// The decoder's backend (layers and LM head).
    decoder: BackendKind,
    ws: Workspaces,
    /// Audio padded to [`MIN_SAMPLES`] when shorter.
    padded: Vec<f32>,
    /// Encoder activations, frame-major `[frames, 416]`, ping-pong.
    enc: [Vec<f32>; 2],
    /// Per layer: cross-attention keys and values `[frames, 416]`.
    cross_k: Vec<Vec<f32>>,
    cross_v: Vec<Vec<f32>>,
    /// Per layer: self-attention caches `[CACHE, 416]`.
    k_cache: Vec<Vec<f32>>,
    v_cache: Vec<Vec<f32>>,
    /// Decoder activations `[1, 416]`, ping-pong.
    x: [Vec<f32>; 2],
    logits: Vec<f32>,
    /// Encoder frames of the current utterance (0 before [`Transcriber::encode`]).
    frames: usize,
    /// Tokens fed to the decoder since the last encode.
    pos: usize,
    /// How the decoder's int8 GEMVs run (passed to every decoder step).
    decoder_path: QuantPath,
    /// How the encoder's int8 GEMMs run (passed to every encode).
    encoder_path: QuantPath,
}

impl Transcriber {
    /// Bytes of buffers each transcriber owns (its workspaces, encoder activations,
    /// cross-attention keys and values, KV caches and logits; the model is shared).
    pub const INSTANCE_BYTES: usize = EncoderStem::WORKSPACE_BYTES
        + EncoderLayer::WORKSPACE_BYTES
        + EncoderNorm::WORKSPACE_BYTES
        + CrossKv::WORKSPACE_BYTES
        + DecoderLayer::WORKSPACE_BYTES
        + DecoderHead::WORKSPACE_BYTES
        + 4 * (MIN_SAMPLES
            + 2 * MAX_FRAMES * D_MODEL * (1 + LAYERS)
            + 2 * LAYERS * CACHE * D_MODEL
            + 2 * D_MODEL
            + VOCAB);

    /// A transcriber over `model` with every component on backend `B`; allocates every
    /// buffer.
    ///
    /// # Errors
    /// [`Error::Backend`] when `B` cannot run on this CPU (an x86 level it lacks).
    pub fn on<B: Backend>(model: Arc<MoonshineModel>) -> Result<Self, Error> {
        Self::with_backends(model, B::KIND, B::KIND)
    }

    /// A transcriber over `model` with the encoder on `encoder` and the decoder on
    /// `decoder`; allocates every buffer. The decoder's and the encoder's int8 paths are
    /// [`QuantPath::Widening`] ([`Transcriber::set_decoder_path`],
    /// [`Transcriber::set_encoder_path`]).
    ///
    /// # Errors
    /// [`Error::Backend`] when either backend cannot run here, naming what is missing.
    pub fn with_backends(
        model: Arc<MoonshineModel>,
        encoder: BackendKind,
        decoder: BackendKind,
    ) -> Result<Self, Error> {
        encoder.availability().map_err(Error::Backend)?;
        decoder.availability().map_err(Error::Backend)?;
        // SAFETY: every workspace is a plain `[f32; N]` in an aligned wrapper, valid when
        // all-zero.
        let ws = unsafe {
            Workspaces {
                stem: boxed_zeroed(),
                layer: boxed_zeroed(),
                norm: boxed_zeroed(),
                cross: boxed_zeroed(),
                decoder: boxed_zeroed(),
                head: boxed_zeroed(),
            }
        };
        let per_layer = |len: usize| (0..LAYERS).map(|_| vec![0.0; len]).collect::<Vec<_>>();
        Ok(Self {
            model,
            encoder,
            decoder,
            ws,
            padded: vec![0.0; MIN_SAMPLES],
            enc: [vec![0.0; MAX_FRAMES * D_MODEL], vec![0.0; MAX_FRAMES * D_MODEL]],
            cross_k: per_layer(MAX_FRAMES * D_MODEL),
            cross_v: per_layer(MAX_FRAMES * D_MODEL),
            k_cache: per_layer(CACHE * D_MODEL),
            v_cache: per_layer(CACHE * D_MODEL),
            x: [vec![0.0; D_MODEL], vec![0.0; D_MODEL]],
            logits: vec![0.0; VOCAB],
            frames: 0,
            pos: 0,
            decoder_path: QuantPath::Widening,
            encoder_path: QuantPath::Widening,
        })
    }

    /// The backends of the encoder and of the decoder.
    pub fn backends(&self) -> (BackendKind, BackendKind) {
        (self.encoder, self.decoder)
    }

    /// The shared model.
    pub fn model(&self) -> &Arc<MoonshineModel> {
        &self.model
    }

    /// Selects how the decoder's int8 GEMVs run (every projection of the eight layers and
    /// the LM head) from the next decoder step on: [`QuantPath::Widening`] (the default,
    /// exact products) or [`QuantPath::Dot`] (activations quantised per block of 32; `sdot`
    /// on CPUs with the dot-product extension, `smull` / `sadalp` with the same bits on the
    /// other ARM cores; [`QuantPath::Mmla`] runs the same GEMVs). The encoder's GEMMs have
    /// their own choice
    /// ([`Transcriber::set_encoder_path`]). The choice belongs to this transcriber, not to
    /// the weights: it is passed to the decoder plans with every call ([`RunOptions`]).
    pub fn set_decoder_path(&mut self, path: QuantPath) {
        self.decoder_path = path;
    }

    /// Selects how the encoder's int8 GEMMs run (the projections and MLP of the eight
    /// layers and the cross-attention keys and values) from the next encode on:
    /// [`QuantPath::Widening`] (the default, exact products) or [`QuantPath::Dot`] (each
    /// frame's activations quantised per block of 32; `sdot` on CPUs with the dot-product
    /// extension, the portable evaluation of the same arithmetic elsewhere; accuracy and
    /// instructions: BENCHMARKS.md, "Moonshine encoder on the int8-activation path") or
    /// [`QuantPath::Mmla`] (the same bits, the GEMMs on `smmla` on CPUs with the int8
    /// matrix-multiply extension: 0.91x `Dot`'s instructions there).
    /// Passed to the encoder plans with every call
    /// ([`RunOptions::with_int8_gemm_path`]).
    pub fn set_encoder_path(&mut self, path: QuantPath) {
        self.encoder_path = path;
    }

    /// The tokenizer.
    pub fn tokenizer(&self) -> &Tokenizer {
        &self.model.tokenizer
    }

    /// Runs the encoder on one segment of 16 kHz mono samples in `[-1, 1]` (at most
    /// [`MAX_SAMPLES`]; fewer than [`MIN_SAMPLES`] are padded with zeros to that length),
    /// computes every layer's cross-attention keys and values and resets the decoder.
    /// Returns the number of encoder frames. Allocates nothing.
    ///
    /// # Errors
    /// [`Error::Input`] for more than [`MAX_SAMPLES`] samples (split longer audio, see
    /// [`super::segment`]) or a sample that is NaN or infinite (reported by its index). The
    /// transcriber stays usable.
    pub fn encode(&mut self, samples: &[f32]) -> Result<usize, Error> {
        self.encode_in(&Serial, samples)
    }

    /// [`Transcriber::encode`] on `par` (the same bits for any context).
    ///
    /// # Errors
    /// As [`Transcriber::encode`], and the context's error ([`neon_runtime::Error::Team`],
    /// reported as [`Error::Runtime`]); the transcriber stays usable.
    pub fn encode_in(&mut self, par: &dyn Parallel, samples: &[f32]) -> Result<usize, Error> {
        dispatch!(self.encoder, B => self.encode_on::<B>(par, samples)).map_err(Error::Backend)?
    }

    /// [`Transcriber::encode_in`] on backend `B`.
    fn encode_on<B: Backend>(
        &mut self,
        par: &dyn Parallel,
        samples: &[f32],
    ) -> Result<usize, Error> {
        if samples.len() > MAX_SAMPLES {
            return Err(Error::Input {
                what: "samples",
                expected: "at most 480000 (30 s at 16 kHz) per segment",
                got: samples.len(),
            });
        }
        Error::check_finite(
            samples,
            "index of the first NaN or infinite sample",
            "none (finite samples only)",
        )?;
        let audio = if samples.len() < MIN_SAMPLES {
            self.padded.fill(0.0);
            self.padded[..samples.len()].copy_from_slice(samples);
            &self.padded[..]
        } else {
            samples
        };
        let frames = encoder_frames(audio.len());
        let len = frames * D_MODEL;
        let w = &self.model.weights;
        let o = RunOptions::new().with_int8_gemm_path(self.encoder_path).with_parallel(par);
        // A failed step leaves the encoder output meaningless: no segment until the next
        // encode succeeds.
        self.frames = 0;
        let [a, b] = &mut self.enc;
        let (n, ws) = (audio.len(), &mut self.ws.stem);
        EncoderStem::run_with::<B, _>(&w.stem, audio, &mut a[..len], n, ws, o)?;
        for layer in &w.encoder {
            let ws = &mut self.ws.layer;
            EncoderLayer::run_with::<B, _, _>(layer, &a[..len], &mut b[..len], frames, ws, o)?;
            core::mem::swap(a, b);
        }
        let ws = &mut self.ws.norm;
        EncoderNorm::run_with::<B, _>(&w.encoder_norm, &a[..len], &mut b[..len], frames, ws, o)?;
        for (l, cross) in w.cross_kv.iter().enumerate() {
            let (k, v) = (&mut self.cross_k[l][..len], &mut self.cross_v[l][..len]);
            let ws = &mut self.ws.cross;
            CrossKv::run_with::<B, _, _>(cross, &b[..len], k, v, frames, ws, o)?;
        }
        self.frames = frames;
        self.pos = 0;
        Ok(frames)
    }

    /// The last encoder output, frame-major `[frames, 416]` (after the final LayerNorm).
    pub fn encoder_output(&self) -> &[f32] {
        &self.enc[1][..self.frames * D_MODEL]
    }

    /// Starts decoding the current utterance again from its first token (keeps the encoder
    /// output and cross-attention keys and values).
    pub fn restart(&mut self) {
        self.pos = 0;
    }

    /// Tokens fed since the last [`Transcriber::encode`] or [`Transcriber::restart`].
    pub fn position(&self) -> usize {
        self.pos
    }

    /// Feeds `token` at the next position and returns the logits `[32768]` of the token
    /// after it. Allocates nothing.
    ///
    /// # Errors
    /// [`Error::Input`] before any encode, for a token `>= 32768`, or when the KV cache
    /// ([`CACHE`] tokens) is full. Nothing changes on error.
    pub fn decode_step(&mut self, token: u32) -> Result<&[f32], Error> {
        self.decode_step_in(&Serial, token)
    }

    /// [`Transcriber::decode_step`] on `par` (the same bits for any context).
    ///
    /// # Errors
    /// As [`Transcriber::decode_step`], and the context's error
    /// ([`neon_runtime::Error::Team`], reported as [`Error::Runtime`]).
    pub fn decode_step_in(&mut self, par: &dyn Parallel, token: u32) -> Result<&[f32], Error> {
        dispatch!(self.decoder, B => self.decode_on::<B>(par, token)).map_err(Error::Backend)??;
        Ok(&self.logits)
    }

    /// [`Transcriber::decode_step_in`] on backend `B`: the logits are in `self.logits`.
    fn decode_on<B: Backend>(&mut self, par: &dyn Parallel, token: u32) -> Result<(), Error> {
        if self.frames == 0 {
            return Err(Error::Input {
                what: "decoder",
                expected: "an encoded segment first",
                got: 0,
            });
        }
        if self.pos >= CACHE {
            return Err(Error::Input {
                what: "decoder position",
                expected: "below 256",
                got: self.pos,
            });
        }
        let id = i32::try_from(token).unwrap_or(i32::MAX);
        let ids = [id];
        let ids = IndexView::new(&ids, &[1])?;
        let w = &self.model.weights;
        let [x, y] = &mut self.x;
        let mut out = TensorViewMut::new(x, &[1, D_MODEL], Layout::FrameMajor)?;
        w.head.embedding.embed(&ids, &mut out).map_err(|_| Error::Input {
            what: "token id",
            expected: "below 32768",
            got: token as usize,
        })?;
        let len = self.frames * D_MODEL;
        let options = RunOptions::new().with_int8_path(self.decoder_path).with_parallel(par);
        for (l, layer) in w.decoder.iter().enumerate() {
            DecoderLayer::run_with::<B, _, _>(
                layer,
                x,
                &self.cross_k[l][..len],
                &self.cross_v[l][..len],
                y,
                &mut self.k_cache[l],
                &mut self.v_cache[l],
                self.frames,
                self.pos,
                self.pos + 1,
                &mut self.ws.decoder,
                options,
            )?;
            core::mem::swap(x, y);
        }
        let (logits, ws) = (&mut self.logits, &mut self.ws.head);
        DecoderHead::run_with::<B, _, _>(&w.head, x, logits, ws, options)?;
        self.pos += 1;
        Ok(())
    }

    /// Greedy decoding of the encoded segment: BOS, then the most likely token at each step
    /// (the lowest id on ties) until EOS or `budget` generated tokens. Pushes every id,
    /// BOS first, onto `tokens` (which it clears first).
    ///
    /// # Errors
    /// As [`Transcriber::decode_step`].
    pub fn greedy(&mut self, budget: usize, tokens: &mut Vec<u32>) -> Result<(), Error> {
        self.greedy_in(&Serial, budget, tokens)
    }

    /// [`Transcriber::greedy`] with every decoder step on `par` (the same tokens for any
    /// context).
    ///
    /// # Errors
    /// As [`Transcriber::decode_step_in`].
    pub fn greedy_in(
        &mut self,
        par: &dyn Parallel,
        budget: usize,
        tokens: &mut Vec<u32>,
    ) -> Result<(), Error> {
        self.restart();
        tokens.clear();
        tokens.push(BOS);
        let budget = budget.min(CACHE);
        for _ in 0..budget {
            let last = *tokens.last().unwrap_or(&BOS);
            let next = argmax(self.decode_step_in(par, last)?);
            tokens.push(next);
            if next == EOS {
                break;
            }
        }
        Ok(())
    }

    /// Transcribes one segment (at most [`MAX_SAMPLES`] samples of 16 kHz mono audio in
    /// `[-1, 1]`) greedily with a budget of [`token_budget`] tokens.
    ///
    /// # Errors
    /// As [`Transcriber::encode`].
    pub fn transcribe(&mut self, samples: &[f32]) -> Result<Transcript, Error> {
        self.transcribe_in(&Serial, samples)
    }

    /// [`Transcriber::transcribe`] on `par` (the same transcript for any context).
    ///
    /// # Errors
    /// As [`Transcriber::encode_in`] and [`Transcriber::decode_step_in`].
    pub fn transcribe_in(
        &mut self,
        par: &dyn Parallel,
        samples: &[f32],
    ) -> Result<Transcript, Error> {
        self.encode_in(par, samples)?;
        let mut tokens = Vec::with_capacity(token_budget(samples.len()) + 2);
        self.greedy_in(par, token_budget(samples.len()), &mut tokens)?;
        let text = self.model.tokenizer.decode(&tokens);
        Ok(Transcript { text, tokens })
    }
}

/// Index of the largest value (the first one on ties; NaN never wins).
pub fn argmax(logits: &[f32]) -> u32 {
    let mut best = 0;
    for (i, &v) in logits.iter().enumerate() {
        if v > logits[best] {
            best = i;
        }
    }
    best as u32
}

#[cfg(test)]
mod tests {
    use super::super::decoder::*;
    use super::super::encoder::*;
    use super::*;

    /// The bounds the buffers are sized for, and their sizes (printed for the README).
    #[test]
    fn budget_and_buffer_sizes() {
        assert_eq!(token_budget(0), 1);
        assert_eq!(token_budget(159_414), 65); // beckett.wav, 9.96 s
        assert_eq!(token_budget(MAX_SAMPLES), 195);
        assert!(token_budget(MAX_SAMPLES) < CACHE);
        assert_eq!(encoder_frames(MIN_SAMPLES), 1);
        assert_eq!(encoder_frames(159_414), 413);
        let workspaces = [
            EncoderStem::WORKSPACE_BYTES,
            EncoderLayer::WORKSPACE_BYTES,
            EncoderNorm::WORKSPACE_BYTES,
            CrossKv::WORKSPACE_BYTES,
            DecoderLayer::WORKSPACE_BYTES,
            DecoderHead::WORKSPACE_BYTES,
        ];
        let buffers = 4 * (2 * MAX_FRAMES * D_MODEL * (1 + LAYERS) + 2 * LAYERS * CACHE * D_MODEL);
        std::println!("workspaces {workspaces:?}, buffers {buffers} bytes");
        let total = workspaces.iter().sum::<usize>() + buffers;
        std::println!("total {} MB", total as f64 / 1e6);
        // The small buffers (padding, decoder activations, logits) are the rest.
        assert_eq!(Transcriber::INSTANCE_BYTES - total, 4 * (MIN_SAMPLES + 2 * D_MODEL + VOCAB));
        assert_eq!(Transcriber::INSTANCE_BYTES.div_ceil(100_000), 818); // 81.8 MB
    }
}
