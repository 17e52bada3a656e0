//! Silero VAD's network (16 kHz) as a `neon_plan!`: one 512-sample window in, one speech
//! probability out, the LSTM state carried by the caller.
//!
//! Facts (PyPI `silero-vad` 6.2.3, `silero_vad/tinygrad_model.py` and the 16 kHz branch of
//! `data/silero_vad.onnx`; checked by `tools/silero_vad/`): the input is the window's 512
//! samples after the last 64 samples of the previous window (zeros before the first), 576
//! in all, values in `[-1, 1]`. It is reflect-padded by 64 samples on the right (640), cut
//! into 4 frames of 256 samples every 128 by the STFT (in the model a convolution with a
//! basis `[258, 1, 256]`: 129 real rows, then 129 imaginary rows, a periodic Hann window
//! times `cos` and `-sin`), whose magnitude `sqrt(re^2 + im^2)` gives `[129, 4]`. Four
//! conv1d (kernel 3, padding 1, strides 1, 2, 2, 1; each + bias + ReLU) take it to
//! `[128, 4]`, `[64, 2]`, `[64, 1]`, `[128, 1]`. One LSTM cell (input 128, hidden 128,
//! PyTorch gate order) updates the state; ReLU of its output h, a 1x1 conv 128 -> 1 with
//! bias and a sigmoid give the probability. 679,552 multiply-accumulates per window as the model computes it (21 M
//! per second of audio), 39% of them the STFT's convolution.
//!
//! The STFT runs as one: [`stft_magnitude`](neon_runtime::ops::stft) windows each frame and
//! takes its real FFT (256 points) and magnitudes, instead of the 264,192 multiply-adds and
//! 264 KB of basis per window of the convolution; its window is the basis's row 0 (bin 0's
//! real part, `w[j] cos 0`), and the loader checks that the basis is that window times
//! `cos`/`-sin` ([`load`](super::load)).
//!
//! The convs write frame-major outputs (`[frames, channels]`, transposed back for the next
//! conv): with only 4, 2 or 1 output frames, a channel-first output would fill a quarter or
//! less of each vector, while frame-major rows vectorise over the 64 or 128 output channels
//! (`BENCHMARKS.md`, "Silero VAD per 32 ms window"). The last conv's one frame is the
//! LSTM's frame-major input as it is.

use neon_macros::neon_plan;

neon_plan! {
    /// One Silero VAD window: `x` `[1, 576]` (64 samples of context, then 512 new ones) and
    /// the LSTM state `s` `[2, 128]` (row 0 the cell state c, row 1 the hidden state h;
    /// zeros at the start of a stream) -> the speech probability `p` `[1, 1]`; `s` is
    /// updated in place.
    pub plan SileroVad {
        weight stft_window: f32[256];
        weight conv0: f32[128, 129, 3];
        weight conv0_b: f32[128];
        weight conv1: f32[64, 128, 3];
        weight conv1_b: f32[64];
        weight conv2: f32[64, 64, 3];
        weight conv2_b: f32[64];
        weight conv3: f32[128, 64, 3];
        weight conv3_b: f32[128];
        weight lstm: f32[512, 256];
        weight lstm_b: f32[512];
        weight decoder: f32[1, 128];
        weight decoder_b: f32[1];
        input x: [1, 576];
        state s: [2, 128];
        output p: [1, 1];

        let h = reflect_pad(x, right = 64);
        let h = stft_magnitude(h, stft_window, hop = 128);
        let h = conv1d(h, conv0, conv0_b, padding = 1, output = frame_major);
        let h = relu(h);
        let h = transpose(h, to = channel_first);
        let h = conv1d(h, conv1, conv1_b, stride = 2, padding = 1, output = frame_major);
        let h = relu(h);
        let h = transpose(h, to = channel_first);
        let h = conv1d(h, conv2, conv2_b, stride = 2, padding = 1, output = frame_major);
        let h = relu(h);
        let h = transpose(h, to = channel_first);
        let h = conv1d(h, conv3, conv3_b, padding = 1, output = frame_major);
        let h = relu(h);
        s = lstm_cell(s, h, lstm, lstm_b, layout = frame_major);
        let h = last_frames(s, frames = 1, layout = frame_major);
        let h = relu(h);
        let h = linear(h, decoder, decoder_b);
        p = sigmoid(h);
    }
}
