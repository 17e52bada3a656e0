//! Silero VAD for the benchmarks: the clip, its windows as silero-vad's `OnnxWrapper` feeds
//! them, ONNX Runtime's probabilities on them, and the multiply-adds of one window.
//!
//! Used by the criterion bench `benches/vad.rs`, the host timing binary `time_vad` (the
//! counterpart of `tools/silero_vad/bench_peer.py`) and the aarch64 instruction-count
//! binary `insn_vad`. The clip and its golden are committed files, embedded here so the
//! qemu binaries need no file access.

use neon_models::vad::network::SileroVad;
use neon_models::vad::{CONTEXT, WINDOW};
use neon_runtime::ops::conv::Conv1dGeometry;

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

/// Frames of the STFT's output (640 padded samples, frames of 256 every 128) and of the
/// four encoder convs (kernel 3, padding 1, strides 1, 2, 2, 1).
const FRAMES: [usize; 5] = [4, 4, 2, 1, 1];

const fn conv_macs(g: Conv1dGeometry, frames: usize) -> usize {
    g.out_channels * (g.in_channels / g.groups) * g.kernel * frames
}

/// Multiply-adds of one window as the model computes them (what ONNX Runtime runs), from
/// the plan's geometry: STFT conv 258 x 256 x 4 frames (264,192; the plan computes the
/// STFT by FFT instead, far fewer operations, but the count stays the model's so that
/// FLOPs per instruction compare with earlier rows and with ONNX Runtime), encoder convs
/// 128 x 129 x 3 x 4 (198,144), 64 x 128 x 3 x 2 (49,152), 64 x 64 x 3 x 1 (12,288), 128 x 64 x 3 x 1 (24,576), the LSTM cell's GEMV 512 x 256
/// (131,072), the decoder 128: 679,552. The padding taps of the convs count (every
/// implementation multiplies them: ONNX Runtime's im2col too); the magnitudes, ReLUs, gate
/// activations and sigmoid count none.
pub const MACS_PER_WINDOW: usize =
    2 * SileroVad::STFT_WINDOW.bins() * SileroVad::STFT_WINDOW.n_fft * FRAMES[0]
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
