//! The openWakeWord mel frontend: log-mel spectrogram of 16 kHz audio, as computed by the
//! official `melspectrogram` model (its window, filterbank and dB formula were read out of
//! the model by `tools/openwakeword/convert.py`; see that directory's README, and
//! `models/tests/oww_golden_mel.rs` for the comparison with the official runtime).
//!
//! # Computation
//! Input: `N >= 512` samples at 16 kHz, **raw int16 sample values as f32** (not divided by
//! 32768). Output: `[frames, 32]` frame-major, in dB.
//!
//! 1. **Frames**: `frames = floor((N - 512) / 160) + 1`, frame `t` is
//!    `samples[160 t .. 160 t + 512]` (hop 10 ms, no centring, no padding).
//! 2. **Window**: a periodic Hann window of length 400, zero-padded to 512 with 56 zeros on
//!    each side: `w[56 + i] = 0.5 - 0.5 cos(2 pi i / 400)`, `i < 400` (computed in f64,
//!    rounded to f32).
//! 3. **Power spectrum**: `P[k] = |X[k]|^2`, `k = 0..=256`, of the 512-point DFT of the
//!    windowed frame (real FFT kernel `neon_runtime::kernels::fft`; units: squared int16
//!    amplitude).
//! 4. **Mel filterbank**: `M[j] = sum_k F[j, k] P[k]`, `j < 32`, with `F` ([`N_MELS`] x
//!    [`N_BINS`], row-major) the Slaney-style filterbank of librosa's
//!    `librosa.filters.mel(sr=16000, n_fft=512, n_mels=32, fmin=60, fmax=3800, htk=False,
//!    norm='slaney')` (librosa documentation, `librosa.filters.mel` and
//!    `librosa.mel_frequencies`; the scale is from M. Slaney, *Auditory Toolbox*, Interval
//!    Research technical report 1998-010, `mfcc.m`):
//!    - Slaney mel scale: `mel(f) = f / (200/3)` below 1000 Hz (linear, 15 mel at 1 kHz),
//!      `mel(f) = 15 + ln(f / 1000) / (ln(6.4) / 27)` above (logarithmic, 27 mel per
//!      factor 6.4), and its inverse.
//!    - 34 band edges `f_i = mel^-1(m_i)`, `m_i` equally spaced from `mel(60)` to
//!      `mel(3800)` (numpy `linspace`: `m_i = i step + mel(60)`, the last exactly
//!      `mel(3800)`).
//!    - Triangles on the FFT bin frequencies `b_k = k * 16000 / 512 = 31.25 k` Hz:
//!      `F[j, k] = max(0, min((b_k - f_j) / (f_{j+1} - f_j), (f_{j+2} - b_k) / (f_{j+2} -
//!      f_{j+1})))`.
//!    - Area normalisation ("slaney"): row `j` times `2 / (f_{j+2} - f_j)`.
//!
//!    All of it is computed in f64 in a `const fn` (no weights file), rounded as librosa
//!    does: the triangle rounded to f32 first (librosa stores it in a float32 array), then
//!    multiplied by the f64 normalisation and rounded again. Only bins inside a filter's
//!    support are summed (each row's non-zero range is stored next to the dense matrix).
//! 5. **dB**: `D = 10 log10(max(M, 1e-10))` (kernel `log10` of the activation family).
//! 6. **Floor**: `out = max(D, max(D over the whole call) - 80)`: the top is taken over
//!    every frame and every mel band of this call, so splitting the audio into several
//!    calls changes the output (as it does for the official model).
//!
//! openWakeWord then scales the output to its features with [`to_features`]
//! (`D / 10 + 2`).
//!
//! # Accuracy
//! Against an f64 implementation (direct DFT, separately coded filterbank) the output is
//! within about `1e-4` dB on int16-scale speech-like signals (tests in `tests/mel.rs`,
//! which assert `3e-4` dB). The error comes from the f32 FFT, whose error is norm-wise:
//! bands far below a frame's loudest band carry the same absolute power error, so their dB
//! error grows as they get quieter relative to it (about `4.3 * 2 e ||X|| / |X_band|` dB
//! for a norm-wise relative FFT error `e` ~ 1.2e-7), until the floor takes over.
//! `log10` adds less than `9e-6` dB, the f32 filterbank less than `1e-6`.
//!
//! # Memory
//! A [`MelFrontend`] holds the window, the dense filterbank and the FFT twiddles: about
//! 38 KB, built at compile time by the `const fn` [`MelFrontend::new`]; use it as a
//! `static` ([`FRONTEND`]). [`MelFrontend::run`] allocates nothing; its scratch (about
//! 5 KB) is on the stack.

use super::stream::MelStage;
use neon_runtime::kernels::activation::Activation;
use neon_runtime::kernels::fft::{twiddle_len, twiddles, RealFft};
use neon_runtime::{Backend, Error};

use neon_runtime::constmath;

/// Sample rate, Hz.
pub const SAMPLE_RATE: usize = 16_000;
/// FFT length (and the frame length), samples.
pub const N_FFT: usize = 512;
/// Hop between frames, samples (10 ms).
pub const HOP: usize = 160;
/// Hann window length, samples (25 ms), centred in the 512-sample frame.
pub const WIN_LEN: usize = 400;
/// Offset of the window in the frame: `(512 - 400) / 2`.
pub const WIN_OFFSET: usize = (N_FFT - WIN_LEN) / 2;
/// Number of mel bands.
pub const N_MELS: usize = 32;
/// Number of power-spectrum bins, `512 / 2 + 1`.
pub const N_BINS: usize = N_FFT / 2 + 1;
/// Lowest filter edge, Hz.
pub const FMIN: f64 = 60.0;
/// Highest filter edge, Hz.
pub const FMAX: f64 = 3800.0;
/// Power floor before the logarithm (`1e-10`, i.e. -100 dB).
pub const AMIN: f32 = 1e-10;
/// Dynamic range kept below the loudest value of a call, dB.
pub const TOP_DB: f32 = 80.0;

const TW_LEN: usize = twiddle_len(N_FFT);

/// Slaney mel scale, librosa's `hz_to_mel(f, htk=False)` (same operation order).
const fn hz_to_mel(f: f64) -> f64 {
    let f_sp = 200.0 / 3.0;
    if f >= 1000.0 {
        let min_log_mel = 1000.0 / f_sp;
        let logstep = constmath::ln(6.4) / 27.0;
        min_log_mel + constmath::ln(f / 1000.0) / logstep
    } else {
        f / f_sp
    }
}

/// Inverse of [`hz_to_mel`], librosa's `mel_to_hz(m, htk=False)` (same operation order).
const fn mel_to_hz(m: f64) -> f64 {
    let f_sp = 200.0 / 3.0;
    let min_log_mel = 1000.0 / f_sp;
    if m >= min_log_mel {
        let logstep = constmath::ln(6.4) / 27.0;
        1000.0 * constmath::exp(logstep * (m - min_log_mel))
    } else {
        f_sp * m
    }
}

/// The 34 filter edges in Hz (librosa's `mel_frequencies(34, fmin=60, fmax=3800)`).
const fn mel_edges() -> [f64; N_MELS + 2] {
    let lo = hz_to_mel(FMIN);
    let hi = hz_to_mel(FMAX);
    let step = (hi - lo) / (N_MELS + 1) as f64;
    let mut f = [0.0; N_MELS + 2];
    let mut i = 0;
    while i < N_MELS + 2 {
        let m = if i == N_MELS + 1 { hi } else { i as f64 * step + lo };
        f[i] = mel_to_hz(m);
        i += 1;
    }
    f
}

/// The filterbank `[32, 257]` and each row's non-zero bin range `[start, end)`.
const fn filterbank() -> ([f32; N_MELS * N_BINS], [(u16, u16); N_MELS]) {
    let edges = mel_edges();
    // numpy's rfftfreq(512, 1/16000): k * (1 / (512 * (1 / 16000))) = 31.25 k exactly.
    let bin_hz = 1.0 / (N_FFT as f64 * (1.0 / SAMPLE_RATE as f64));
    let mut w = [0.0f32; N_MELS * N_BINS];
    let mut ranges = [(0u16, 0u16); N_MELS];
    let mut j = 0;
    while j < N_MELS {
        let enorm = 2.0 / (edges[j + 2] - edges[j]);
        let (d0, d1) = (edges[j + 1] - edges[j], edges[j + 2] - edges[j + 1]);
        let (mut start, mut end) = (N_BINS, 0);
        let mut k = 0;
        while k < N_BINS {
            let b = k as f64 * bin_hz;
            let lower = -(edges[j] - b) / d0;
            let upper = (edges[j + 2] - b) / d1;
            let tri = if lower < upper { lower } else { upper };
            let tri = (if tri > 0.0 { tri } else { 0.0 }) as f32;
            let v = (tri as f64 * enorm) as f32;
            w[j * N_BINS + k] = v;
            if v != 0.0 {
                if k < start {
                    start = k;
                }
                end = k + 1;
            }
            k += 1;
        }
        if end == 0 {
            start = 0;
        }
        ranges[j] = (start as u16, end as u16);
        j += 1;
    }
    (w, ranges)
}

/// The zero-padded periodic Hann window `[512]`.
const fn window() -> [f32; N_FFT] {
    let mut w = [0.0f32; N_FFT];
    let mut i = 0;
    while i < WIN_LEN {
        let (_, c) = neon_runtime::kernels::fft::sin_cos_turns(i as u64, WIN_LEN as u64);
        w[WIN_OFFSET + i] = (0.5 - 0.5 * c) as f32;
        i += 1;
    }
    w
}

/// The openWakeWord mel frontend (see the [module docs](self)): window, filterbank and FFT
/// twiddles, all computed at compile time. `Send + Sync`; one instance serves every
/// caller: [`FRONTEND`].
#[derive(Clone, Debug)]
pub struct MelFrontend {
    window: [f32; N_FFT],
    filterbank: [f32; N_MELS * N_BINS],
    ranges: [(u16, u16); N_MELS],
    twiddles: [f32; TW_LEN],
}

/// The frontend, built at compile time (read-only data, no run-time initialisation).
pub static FRONTEND: MelFrontend = MelFrontend::new();

impl Default for MelFrontend {
    fn default() -> Self {
        Self::new()
    }
}

impl MelFrontend {
    /// Builds the tables (a `const fn`: use it in a `static`, like [`FRONTEND`]; at run time
    /// it returns a 38 KB value).
    pub const fn new() -> Self {
        let (filterbank, ranges) = filterbank();
        MelFrontend { window: window(), filterbank, ranges, twiddles: twiddles(N_FFT) }
    }

    /// Number of frames of `n_samples` samples: `floor((n - 512) / 160) + 1`, 0 when
    /// `n < 512`.
    pub const fn frames(n_samples: usize) -> usize {
        if n_samples < N_FFT {
            0
        } else {
            (n_samples - N_FFT) / HOP + 1
        }
    }

    /// Output length for `n_samples` samples: `frames(n) * 32`.
    pub const fn output_len(n_samples: usize) -> usize {
        Self::frames(n_samples) * N_MELS
    }

    /// The mel filterbank, `[32, 257]` row-major (band `j`, FFT bin `k` at `31.25 k` Hz);
    /// dimensionless weights, Slaney area-normalised (each row sums to about
    /// `2 / (f_{j+2} - f_j)` per Hz of bin spacing).
    pub fn filterbank(&self) -> &[f32] {
        &self.filterbank
    }

    /// Non-zero bin range `[start, end)` of each filterbank row.
    pub fn filter_ranges(&self) -> &[(u16, u16); N_MELS] {
        &self.ranges
    }

    /// The analysis window, `[512]` (zero outside `56..456`).
    pub fn window(&self) -> &[f32; N_FFT] {
        &self.window
    }

    /// Log-mel spectrogram of `samples` (`[N]`, raw int16 values as f32, `N >= 512`) into
    /// `out` (`[frames, 32]` frame-major, dB, floored at the call's maximum minus 80);
    /// returns `frames`. No allocation.
    ///
    /// # Errors
    /// [`Error::Length`] when `samples` has fewer than 512 values or `out.len()` is not
    /// `frames(N) * 32`; `out` is then left untouched.
    pub fn run<B: Backend>(&self, samples: &[f32], out: &mut [f32]) -> Result<usize, Error> {
        if samples.len() < N_FFT {
            return Err(Error::Length {
                what: "mel input samples (at least 512)",
                expected: N_FFT,
                got: samples.len(),
            });
        }
        let frames = Self::frames(samples.len());
        if out.len() != frames * N_MELS {
            return Err(Error::Length {
                what: "mel output [frames, 32]",
                expected: frames * N_MELS,
                got: out.len(),
            });
        }
        let fft = RealFft::new(N_FFT, &self.twiddles)?;
        let mut frame = [0.0f32; N_FFT];
        let mut spectrum = [0.0f32; N_FFT + 2];
        let mut power = [0.0f32; N_BINS];
        let win = WIN_OFFSET..WIN_OFFSET + WIN_LEN;
        for (t, mel) in out.chunks_exact_mut(N_MELS).enumerate() {
            let s = &samples[t * HOP..t * HOP + N_FFT];
            // The frame outside the window stays 0.
            for ((f, &x), &w) in
                frame[win.clone()].iter_mut().zip(&s[win.clone()]).zip(&self.window[win.clone()])
            {
                *f = x * w;
            }
            B::rfft_power(&fft, &frame, &mut spectrum, &mut power);
            for (j, m) in mel.iter_mut().enumerate() {
                let (a, b) = (self.ranges[j].0 as usize, self.ranges[j].1 as usize);
                let row = &self.filterbank[j * N_BINS + a..j * N_BINS + b];
                *m = row.iter().zip(&power[a..b]).fold(0.0f32, |acc, (&w, &p)| acc + w * p);
            }
        }
        to_decibels::<B>(out);
        Ok(frames)
    }
}

/// `x = 10 log10(max(x, 1e-10))`, then `x = max(x, max(x) - 80)` over the whole slice.
fn to_decibels<B: Backend>(x: &mut [f32]) {
    for v in x.iter_mut() {
        // NaN stays NaN (the comparison is false).
        if *v < AMIN {
            *v = AMIN;
        }
    }
    B::activate(Activation::Log10, x);
    let mut top = f32::NEG_INFINITY;
    for v in x.iter_mut() {
        *v *= 10.0;
        if *v > top {
            top = *v;
        }
    }
    let floor = top - TOP_DB;
    for v in x.iter_mut() {
        if *v < floor {
            *v = floor;
        }
    }
}

/// openWakeWord's feature scaling of the frontend's dB output, in place: `x = x / 10 + 2`
/// (a division, as openwakeword's numpy code does, so the results are bitwise its float32
/// values).
pub fn to_features(db: &mut [f32]) {
    for v in db {
        *v = *v / 10.0 + 2.0;
    }
}

/// The compile-time frontend [`FRONTEND`] as the stream's [`MelStage`], on backend `B`.
#[derive(Clone, Copy, Debug, Default)]
pub struct Mel<B>(core::marker::PhantomData<B>);

impl<B> Mel<B> {
    /// The frontend on backend `B`.
    pub const fn new() -> Self {
        Self(core::marker::PhantomData)
    }
}

impl<B: Backend> MelStage for Mel<B> {
    fn mel(&mut self, samples: &[f32], out: &mut [f32]) -> Result<usize, crate::Error> {
        Ok(FRONTEND.run::<B>(samples, out)?)
    }
}
