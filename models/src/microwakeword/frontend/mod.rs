//! microWakeWord's audio frontend: 16 kHz `i16` samples to 40 `u16` features per 10 ms, bit
//! for bit as pymicro-features 2.0.2 computes them (TFLite Micro's
//! `tensorflow/lite/experimental/microfrontend`, built with kissfft's int16 FFT), in integer
//! arithmetic, `no_std`, without allocation.
//!
//! # Computation (per frame)
//! Configuration from pymicro-features 2.0.2 (`micro_features.cpp`): window 30 ms, step
//! 10 ms, 40 channels from 125 Hz to 7500 Hz, noise reduction (smoothing bits 10, even 0.025,
//! odd 0.06, minimum 0.05), PCAN (strength 0.95, offset 80, gain bits 21), log scale (shift 6).
//! 1. **Window** ([`window`]): once 480 samples are buffered, they are multiplied by a Q12
//!    Hann window; the buffer then drops its oldest 160 samples. So the first frame comes
//!    after 480 samples and then one per 160.
//! 2. **FFT** ([`fft`]): the windowed frame is shifted left by `15 - msb(max |x|)` bits (so
//!    its peak uses the full `i16` range), zero-padded to 512 and transformed (Q15, scaled by
//!    1/512).
//! 3. **Filterbank** ([`filterbank`]): power of bins 5..241, 40 mel channels with Q12
//!    weights, `u64` sums, integer square root, shifted back right by the same bits.
//! 4. **Noise reduction** ([`noise`]): subtracts a running per-channel noise estimate (the
//!    frontend's only state besides the sample buffer).
//! 5. **PCAN** ([`pcan`]): per-channel gain from the noise estimate, then compression.
//! 6. **Log** ([`log_scale`]): `64 ln(8 x)` in fixed point, saturated to `u16`.
//!
//! The output is a raw `u16` per channel; microWakeWord's feature value is
//! `raw * 0.0390625` ([`FEATURE_SCALE`], exact in `f32` and `f64`). Tables are built at
//! compile time ([`tables`]).
//!
//! # Tables and libm
//! The package builds its tables at start-up with the host's `cosf`, `log1pf` and `powf`, so
//! its features depend on the host's libm. The reference is Debian 12 x86-64 (glibc 2.36),
//! where the goldens were made: every libm result is computed here correctly rounded, except
//! glibc 2.36's `log1pf`, which is not correctly rounded on some filterbank frequencies; its
//! results there are pinned as data ([`filterbank`]). The measurements (which entries, their
//! margins) are in `tools/microwakeword/FACTS.md`, section 8.
//!
//! # Memory
//! A [`Frontend`] holds 480 samples and 40 noise estimates (1.1 KB); a frame uses about 6 KB
//! of stack. The tables ([`tables::TABLES`]) are a 6 KB `static`.

pub mod fft;
pub mod filterbank;
pub mod log_scale;
pub mod noise;
pub mod pcan;
pub mod tables;
pub mod window;

use fft::{Spectrum, FFT_BINS, FFT_SIZE};
use filterbank::CHANNELS;
use tables::TABLES;
use window::{STEP, WINDOW};

/// Features per frame (one per filterbank channel).
pub const FEATURES: usize = CHANNELS;
/// Sample rate of the input, Hz.
pub const SAMPLE_RATE: u32 = 16_000;
/// microWakeWord's feature is `raw * FEATURE_SCALE` (pymicro-features' `FLOAT32_SCALE`,
/// `1 / 25.6`).
pub const FEATURE_SCALE: f32 = 0.0390625;

/// The streaming frontend: push samples of any chunking, get one feature frame per 160
/// samples (after the first 480).
#[derive(Clone, Debug)]
pub struct Frontend {
    /// Samples of the next window, `input[..used]` filled.
    input: [i16; WINDOW],
    used: usize,
    /// Noise estimate per channel (scaled by `2^10`).
    estimate: [u32; CHANNELS],
}

impl Default for Frontend {
    fn default() -> Self {
        Self::new()
    }
}

impl Frontend {
    /// A frontend with no samples buffered and zero noise estimates.
    pub const fn new() -> Self {
        Self { input: [0; WINDOW], used: 0, estimate: [0; CHANNELS] }
    }

    /// Back to the state of [`Frontend::new`] (pymicro-features' `reset`).
    pub fn reset(&mut self) {
        *self = Self::new();
    }

    /// Feeds 16 kHz mono samples and calls `emit` with each completed frame's raw features, in
    /// order. Any chunking gives the same frames as one call with all the samples. Allocates
    /// nothing.
    pub fn push(&mut self, mut samples: &[i16], mut emit: impl FnMut(&[u16; FEATURES])) {
        while !samples.is_empty() {
            let take = (WINDOW - self.used).min(samples.len());
            self.input[self.used..self.used + take].copy_from_slice(&samples[..take]);
            self.used += take;
            samples = &samples[take..];
            if self.used == WINDOW {
                let features = self.frame();
                self.input.copy_within(STEP.., 0);
                self.used = WINDOW - STEP;
                emit(&features);
            }
        }
    }

    /// Samples buffered towards the next frame (`0..480`).
    pub fn buffered(&self) -> usize {
        self.used
    }

    /// Steps 1 to 6 of the module docs on the full window buffer.
    fn frame(&mut self) -> [u16; FEATURES] {
        let t = &TABLES;
        let mut windowed = [0i16; WINDOW];
        let max_abs = window::apply(&t.window, &self.input, &mut windowed);
        // `15 - MostSignificantBit32(max_abs)`, with `max_abs` in 0..=32767.
        let shift = 15 - (32 - (max_abs as u32).leading_zeros());
        let mut fft_in = [0i16; FFT_SIZE];
        for (f, &w) in fft_in.iter_mut().zip(&windowed) {
            *f = ((w as u16) << shift) as i16;
        }
        let mut spectrum = Spectrum { re: [0; FFT_BINS], im: [0; FFT_BINS] };
        fft::real_fft(&fft_in, &t.stage_twiddles, &t.super_twiddles, &mut spectrum);
        let mut energy = [0i32; FFT_BINS];
        filterbank::energy(&t.filterbank, &spectrum, &mut energy);
        let mut signal = [0u32; CHANNELS];
        filterbank::accumulate_sqrt(&t.filterbank, &energy, shift, &mut signal);
        noise::apply(&mut self.estimate, &mut signal);
        pcan::apply(&t.gain_lut, &self.estimate, &mut signal);
        let mut out = [0u16; FEATURES];
        log_scale::apply(&t.log_lut, &signal, &mut out);
        out
    }
}
