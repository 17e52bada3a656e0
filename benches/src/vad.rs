//! Silero VAD for the benchmarks: the clip, its windows as silero-vad's `OnnxWrapper` feeds
//! them, ONNX Runtime's probabilities on them, and the multiply-adds of one window.
//!
//! Used by the criterion bench `benches/vad.rs`, the host timing binary `time_vad` (the
//! counterpart of `tools/silero_vad/bench_peer.py`) and the aarch64 instruction-count
//! binary `insn_vad`. The clip and its golden are committed files, embedded here so the
//! qemu binaries need no file access.

use neon_models::vad::detector::VadModel;
use neon_models::vad::network::SileroVad;
use neon_models::vad::{CONTEXT, WINDOW};
use neon_runtime::ops::activation::Activation;
use neon_runtime::ops::complex::ComplexMagnitude;
use neon_runtime::ops::conv::{Conv1d, Conv1dGeometry};
use neon_runtime::ops::layout::Transpose;
use neon_runtime::ops::pad::ReflectPad;
use neon_runtime::{Backend, Layout, TensorView, TensorViewMut};

/// The clip every VAD benchmark streams: `models/moonshine/clips/train_numbers.wav`
/// (93,243 samples, 5.8 s of speech: 183 windows, the last one zero-padded).
pub const CLIP: &str = "models/moonshine/clips/train_numbers.wav";
const CLIP_BYTES: &[u8] = include_bytes!("../../models/moonshine/clips/train_numbers.wav");
/// ONNX Runtime 1.32.0's probabilities on [`CLIP`] (`tools/silero_vad/goldens.py`).
const GOLDEN: &str = include_str!("../../models/vad/goldens/train_numbers.json");

/// Values of the network's input per window: 64 samples of context, then 512 new ones.
pub const INPUT: usize = CONTEXT + WINDOW;
/// Values of the LSTM state `[2, 128]`.
pub const STATE: usize = 2 * 128;

/// The window the instruction counts measure: window 109 of [`CLIP`] (ONNX Runtime's
/// probability 0.618, inside speech), after windows 0..109 have been streamed.
pub const COUNTED_WINDOW: usize = 109;

/// Frames of the STFT conv's output (640 padded samples, kernel 256, stride 128) and of the
/// four encoder convs (kernel 3, padding 1, strides 1, 2, 2, 1).
const FRAMES: [usize; 5] = [4, 4, 2, 1, 1];

const fn conv_macs(g: Conv1dGeometry, frames: usize) -> usize {
    g.out_channels * (g.in_channels / g.groups) * g.kernel * frames
}

/// Multiply-adds of one window, from the plan's geometry: STFT conv 258 x 256 x 4 frames
/// (264,192), encoder convs 128 x 129 x 3 x 4 (198,144), 64 x 128 x 3 x 2 (49,152),
/// 64 x 64 x 3 x 1 (12,288), 128 x 64 x 3 x 1 (24,576), the LSTM cell's GEMV 512 x 256
/// (131,072), the decoder 128: 679,552. The padding taps of the convs count (every
/// implementation multiplies them: ONNX Runtime's im2col too); the magnitudes, ReLUs, gate
/// activations and sigmoid count none.
pub const MACS_PER_WINDOW: usize = conv_macs(SileroVad::STFT, FRAMES[0])
    + conv_macs(SileroVad::CONV0, FRAMES[1])
    + conv_macs(SileroVad::CONV1, FRAMES[2])
    + conv_macs(SileroVad::CONV2, FRAMES[3])
    + conv_macs(SileroVad::CONV3, FRAMES[4])
    + 4 * SileroVad::LSTM.hidden * (SileroVad::LSTM.input + SileroVad::LSTM.hidden)
    + SileroVad::DECODER.out_features * SileroVad::DECODER.in_features;

const _: () = assert!(MACS_PER_WINDOW == 679_552);

/// [`CLIP`]'s samples as `OnnxWrapper` reads them: int16 / 32768, zero-padded at the end to
/// whole windows (183 x 512).
pub fn clip() -> Vec<f32> {
    let mut s: Vec<f32> =
        crate::wav_i16(CLIP_BYTES).iter().map(|&v| f32::from(v) / 32768.0).collect();
    s.resize(s.len().div_ceil(WINDOW) * WINDOW, 0.0);
    s
}

/// The network's inputs for `samples` (whole windows): window `k` is the 64 samples before
/// it (zeros for `k = 0`) followed by its 512 samples, as `OnnxWrapper` builds them.
pub fn windows(samples: &[f32]) -> Vec<[f32; INPUT]> {
    assert_eq!(samples.len() % WINDOW, 0, "whole windows only");
    let mut padded = vec![0.0; CONTEXT];
    padded.extend_from_slice(samples);
    padded.windows(INPUT).step_by(WINDOW).map(|x| x.try_into().unwrap()).collect()
}

/// ONNX Runtime's probability of every window of [`CLIP`] (`"probabilities"` of the golden).
pub fn golden() -> Vec<f32> {
    let at = GOLDEN.find("\"probabilities\"").expect("golden without probabilities");
    let open = at + GOLDEN[at..].find('[').expect("probabilities array");
    let close = open + GOLDEN[open..].find(']').expect("end of the probabilities");
    GOLDEN[open + 1..close]
        .split(',')
        .map(|v| v.trim().parse::<f64>().expect("a number") as f32)
        .collect()
}

/// An experiment, not what [`neon_models::vad`] runs: the same window network with every
/// conv writing its output frame-major (`Conv1d` with `output_layout(FrameMajor)`: im2col
/// rows of output frames and the packed-B GEMM, whose vectors run along the output
/// channels), each followed by a transpose back to channel-first for the next conv. The
/// plan's channel-first convs run the packed-A GEMM, whose vectors run along the output
/// frames, and this network has only 4, 2 or 1 of them: on x86 most lanes of every vector
/// are masked off. Operators called one by one on the model's weights (the convs
/// re-prepared from the embedded file), buffers allocated once; the probability agrees with
/// ONNX Runtime's to the same tolerance (`time_vad` checks it).
pub struct FrameMajorConvs {
    /// STFT, then encoder convs 0..3, with frame-major outputs.
    convs: [Conv1d<Vec<f32>>; 5],
    pad: Vec<f32>,
    fm: Vec<f32>,
    cf: Vec<f32>,
    mag: Vec<f32>,
    scratch: Vec<f32>,
    lstm_scratch: Vec<f32>,
    hidden: [f32; 128],
}

impl FrameMajorConvs {
    /// The convs of the embedded weights, prepared for frame-major outputs.
    pub fn new(model: &VadModel) -> Self {
        use neon_models::error::WeightsSource;
        use neon_models::vad::names;
        use neon_models::weights::TensorFile;

        let file = TensorFile::parse(neon_models::vad::WEIGHTS, WeightsSource::Embedded("vad"))
            .expect("the embedded weights parse");
        let fm = |g: Conv1dGeometry, w: &'static str, b: Option<&'static str>| {
            let weight = file.f32(w, &[g.out_channels, g.in_channels, g.kernel]).unwrap();
            let bias = b.map(|b| file.f32(b, &[g.out_channels]).unwrap());
            Conv1d::new(g.output_layout(Layout::FrameMajor), weight, bias).unwrap()
        };
        let e = names::ENCODER;
        Self {
            convs: [
                fm(SileroVad::STFT, names::STFT, None),
                fm(SileroVad::CONV0, e[0].0, Some(e[0].1)),
                fm(SileroVad::CONV1, e[1].0, Some(e[1].1)),
                fm(SileroVad::CONV2, e[2].0, Some(e[2].1)),
                fm(SileroVad::CONV3, e[3].0, Some(e[3].1)),
            ],
            pad: vec![0.0; INPUT + 64],
            fm: vec![0.0; 258 * 4],
            cf: vec![0.0; 258 * 4],
            mag: vec![0.0; 129 * 4],
            scratch: vec![0.0; 1 << 14],
            lstm_scratch: vec![0.0; model.weights.lstm.scratch_len()],
            hidden: [0.0; 128],
        }
    }

    /// One window: `x` the 576 inputs, `state` the carried `[2, 128]` LSTM state (updated);
    /// returns the speech probability.
    pub fn run<B: Backend>(&mut self, model: &VadModel, x: &[f32], state: &mut [f32]) -> f32 {
        let (cf, fm) = (Layout::ChannelFirst, Layout::FrameMajor);
        let w = &model.weights;
        let mut pv = TensorViewMut::new(&mut self.pad, &[1, INPUT + 64], cf).unwrap();
        ReflectPad::new(0, 64).run(&TensorView::new(x, &[1, INPUT], cf).unwrap(), &mut pv).unwrap();
        // Each conv: channel-first input `[c, t]` -> frame-major `[t', c']` in `self.fm`
        // (ReLU for the encoder convs) -> transposed to channel-first in `self.cf`; the STFT's
        // output goes on through the magnitudes into `self.mag`.
        let mut dims = [1, INPUT + 64];
        for (i, conv) in self.convs.iter().enumerate() {
            let g = conv.geometry();
            let t = g.output_frames(dims[1]).unwrap();
            let n = g.out_channels * t;
            let input = match i {
                0 => &self.pad[..],
                1 => &self.mag[..],
                _ => &self.cf[..dims[0] * dims[1]],
            };
            let xv = TensorView::new(input, &dims, cf).unwrap();
            let mut yv = TensorViewMut::new(&mut self.fm[..n], &[t, g.out_channels], fm).unwrap();
            conv.run::<B>(&xv, &mut yv, &mut self.scratch).unwrap();
            if i > 0 {
                Activation::Relu.run_in_place::<B>(&mut yv).unwrap();
            }
            let mut tv = TensorViewMut::new(&mut self.cf[..n], &[g.out_channels, t], cf).unwrap();
            Transpose::new(cf)
                .run::<B>(
                    &TensorView::new(&self.fm[..n], &[t, g.out_channels], fm).unwrap(),
                    &mut tv,
                )
                .unwrap();
            dims = [g.out_channels, t];
            if i == 0 {
                let mut mv = TensorViewMut::new(&mut self.mag, &[129, 4], cf).unwrap();
                ComplexMagnitude
                    .run::<B>(&TensorView::new(&self.cf[..n], &dims, cf).unwrap(), &mut mv)
                    .unwrap();
                dims = [129, 4];
            }
        }
        // The last conv's output [128, 1] is the LSTM's input frame.
        let mut sv = TensorViewMut::new(state, &[2, 128], fm).unwrap();
        let xv = match SileroVad::LSTM.layout {
            Layout::ChannelFirst => TensorView::new(&self.cf[..128], &[128, 1], cf),
            Layout::FrameMajor => TensorView::new(&self.cf[..128], &[1, 128], fm),
        };
        w.lstm.run::<B>(&mut sv, &xv.unwrap(), &mut self.lstm_scratch).unwrap();
        self.hidden.copy_from_slice(&state[128..]);
        Activation::Relu.apply::<B>(&mut self.hidden).unwrap();
        let mut p = [0.0f32];
        let hv = TensorView::new(&self.hidden, &[1, 128], fm).unwrap();
        w.decoder.run::<B>(&hv, &mut TensorViewMut::new(&mut p, &[1, 1], fm).unwrap()).unwrap();
        Activation::Sigmoid.apply::<B>(&mut p).unwrap();
        p[0]
    }
}
