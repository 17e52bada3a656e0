//! Magnitude short-time Fourier transform of a mono signal: [`StftMagnitude`], with its
//! geometry [`StftMagnitudeGeometry`].
//!
//! # Computation
//! For an input `x` `[1, T]` (channel-first mono), frame `t` is the `n_fft` samples from
//! `hop * t`, for `t < frames = (T - n_fft) / hop + 1` (floor division: samples after the
//! last whole frame are not read; no padding, which is a separate step, e.g.
//! [`ReflectPad`](crate::ops::pad::ReflectPad)). Per frame, in f32:
//!
//! 1. `y[j] = x[hop t + j] * w[j]`, `w` the analysis window `[n_fft]` (the operator's
//!    weight, e.g. a periodic Hann window,
//!    [`periodic_hann`](crate::ops::istft::periodic_hann));
//! 2. `Y = rfft(y)`, the unnormalised DFT `Y[k] = sum_j y[j] exp(-2 pi i j k / n_fft)`,
//!    `k = 0..=n_fft/2` ([`FftKernels::rfft`](crate::kernels::FftKernels::rfft));
//! 3. `out[k, t] = sqrt(Re Y[k]^2 + Im Y[k]^2)`
//!    ([`FftKernels::magnitude_spectrum`](crate::kernels::FftKernels::magnitude_spectrum):
//!    both squares rounded, their sum rounded, the correctly rounded square root).
//!
//! The output is `[n_fft/2 + 1, frames]`, channel-first (bins are channels): what a conv1d
//! with the `[n_fft + 2, 1, n_fft]` basis `w[j] cos(2 pi j k / n)` (rows `k = 0..=n/2`), then
//! `-w[j] sin(2 pi j k / n)`, stride `hop`, followed by
//! [`ComplexMagnitude`](crate::ops::complex::ComplexMagnitude) computes (Silero VAD's STFT),
//! in `O(n log n)` per frame instead of `O(n^2)`.
//!
//! # Accuracy
//! The windowing is one rounded product per sample (relative error `u = 2^-24`). The FFT's
//! norm-wise relative error is below `4.0e-7 log2 n_fft` (the bound of the
//! [FFT docs](crate::kernels::fft); measured 1.2e-7 at 512): every bin's absolute error is
//! at most that times `||Y||_2 = sqrt(n_fft) ||y||_2` (Parseval). The magnitude adds
//! `2u` relative to the bin, and `|(|a| - |b|)| <= |a - b|`, so
//! `|out[k, t] - |Y_exact[k]|| <= (4.0e-7 log2 n_fft + u) sqrt(n_fft) ||y||_2 + 2u |Y[k]|`.
//!
//! # Memory
//! The operator owns (or borrows, [`StftMagnitude::from_packed`]) its window and the FFT's
//! twiddle table ([`crate::kernels::fft::fill_twiddles`], built by the constructors). `run`
//! takes the caller's scratch of [`StftMagnitudeGeometry::scratch_len`] values (`2 n_fft +
//! 2`: the windowed frame, then the split spectrum; the magnitudes reuse the frame) and
//! allocates nothing.

#[cfg(feature = "alloc")]
use alloc::vec::Vec;

use crate::dim::Dim;
use crate::error::{Error, ShapeError};
use crate::kernels::fft::{is_valid_len, RealFft};
use crate::kernels::Backend;
use crate::ops::{
    check_channel_first, check_len, check_scratch, expect_dim, first_input, window_output,
    ShapeRule,
};
use crate::tensor::{Layout, Shape, TensorView, TensorViewMut};

const OP: &str = "stft_magnitude";

/// Geometry of a [`StftMagnitude`]: `[1, T] -> [n_fft/2 + 1, (T - n_fft) / hop + 1]`,
/// channel-first (see the [module docs](self)). Implements [`ShapeRule`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StftMagnitudeGeometry {
    /// Frame and FFT length: a power of two the real FFT supports
    /// ([`is_valid_len`]: 16..=65536); Silero VAD: 256.
    pub n_fft: usize,
    /// Samples between frames, `>= 1` (above `n_fft` samples are skipped); Silero VAD: 128.
    pub hop: usize,
}

impl StftMagnitudeGeometry {
    /// Frames of `n_fft` samples every `hop`.
    pub const fn new(n_fft: usize, hop: usize) -> Self {
        Self { n_fft, hop }
    }

    /// Checks the geometry itself.
    ///
    /// # Errors
    /// [`ShapeError::Geometry`] for an `n_fft` the real FFT does not support or `hop == 0`.
    pub const fn validate<D>(&self) -> Result<(), ShapeError<D>> {
        if !is_valid_len(self.n_fft) {
            return Err(ShapeError::Geometry {
                op: OP,
                reason: "n_fft must be a power of two in 16..=65536",
            });
        }
        if self.hop == 0 {
            return Err(ShapeError::Geometry { op: OP, reason: "hop must be >= 1" });
        }
        Ok(())
    }

    /// Frequency bins, the output channels: `n_fft/2 + 1`.
    pub const fn bins(&self) -> usize {
        self.n_fft / 2 + 1
    }

    /// Scratch values of [`StftMagnitude::run`]: `2 n_fft + 2` (the windowed frame and the
    /// split spectrum `[2, n_fft/2 + 1]`), saturating.
    pub const fn scratch_len(&self) -> usize {
        self.n_fft.saturating_mul(2).saturating_add(2)
    }

    /// Output frames of an input of `samples` samples (`None` when shorter than `n_fft` or
    /// for an invalid geometry).
    pub fn output_frames(&self, samples: usize) -> Option<usize> {
        self.validate::<usize>().ok()?;
        window_output(OP, "input samples", &samples, 0, self.n_fft, self.hop).ok()
    }
}

impl ShapeRule for StftMagnitudeGeometry {
    fn name(&self) -> &'static str {
        OP
    }
    /// `[1, T] -> [n_fft/2 + 1, (T - n_fft) / hop + 1]`.
    ///
    /// # Errors
    /// [`ShapeError::Geometry`] for an invalid geometry or no input; [`ShapeError::Rank`]
    /// unless rank 2; [`ShapeError::Dim`] unless one channel; [`ShapeError::TooSmall`] when
    /// `T` can be smaller than `n_fft`.
    fn output_shape<D: Dim>(&self, inputs: &[Shape<D>]) -> Result<Shape<D>, ShapeError<D>> {
        let x = first_input(OP, self.validate(), inputs, "stft_magnitude takes one input", 2)?;
        expect_dim(OP, 0, x, 0, "channels (mono)", &D::constant(1))?;
        let samples = &x.dims()[1];
        let frames = window_output(OP, "input samples", samples, 0, self.n_fft, self.hop)?;
        Shape::new(&[D::constant(self.bins()), frames])
            .map_err(|_| ShapeError::Geometry { op: OP, reason: "invalid input shape" })
    }
    layout_facts!(Layout::ChannelFirst);
}

/// A prepared magnitude STFT: the analysis window `[n_fft]` and the FFT's twiddle table
/// ([`twiddle_len`](crate::kernels::fft::twiddle_len)`(n_fft)` values). See the [module docs](self).
///
/// `S` is the storage of both: `Vec<f32>` (feature `alloc`), `&'static [f32]`
/// ([`StftMagnitude::from_packed`], e.g. a table from the `const fn`
/// [`twiddles`](crate::kernels::fft::twiddles)), or any `AsRef<[f32]>`. Immutable after
/// construction, `Send + Sync` when `S` is.
#[derive(Clone, Debug)]
pub struct StftMagnitude<S> {
    geometry: StftMagnitudeGeometry,
    window: S,
    twiddles: S,
}

#[cfg(feature = "alloc")]
impl StftMagnitude<Vec<f32>> {
    /// Takes `window` (`[n_fft]`) by value and builds the twiddle table.
    ///
    /// # Errors
    /// [`Error::Shape`] for an invalid geometry, [`Error::Length`] for a window of the wrong
    /// length.
    pub fn new(geometry: StftMagnitudeGeometry, window: Vec<f32>) -> Result<Self, Error> {
        geometry.validate::<usize>()?;
        check_len("stft window", geometry.n_fft, window.len())?;
        let mut twiddles = alloc::vec![0.0; crate::kernels::fft::twiddle_len(geometry.n_fft)];
        crate::kernels::fft::fill_twiddles(geometry.n_fft, &mut twiddles);
        Self::from_packed(geometry, window, twiddles)
    }

    /// As [`StftMagnitude::new`], copying the borrowed `window`.
    ///
    /// # Errors
    /// As [`StftMagnitude::new`].
    pub fn from_slice(geometry: StftMagnitudeGeometry, window: &[f32]) -> Result<Self, Error> {
        geometry.validate::<usize>()?;
        check_len("stft window", geometry.n_fft, window.len())?;
        Self::new(geometry, window.to_vec())
    }
}

impl<S: AsRef<[f32]>> StftMagnitude<S> {
    /// Wraps a `window` (`[n_fft]`) and a twiddle table for `n_fft`
    /// ([`twiddles`](crate::kernels::fft::twiddles) or
    /// [`fill_twiddles`](crate::kernels::fft::fill_twiddles); another table of that length
    /// gives wrong spectra, never unsafety): no copy.
    ///
    /// # Errors
    /// [`Error::Shape`] for an invalid geometry, [`Error::Length`] when `window` is not
    /// `n_fft` long or `twiddles` not [`twiddle_len`](crate::kernels::fft::twiddle_len)`(n_fft)`.
    pub fn from_packed(
        geometry: StftMagnitudeGeometry,
        window: S,
        twiddles: S,
    ) -> Result<Self, Error> {
        geometry.validate::<usize>()?;
        check_len("stft window", geometry.n_fft, window.as_ref().len())?;
        RealFft::new(geometry.n_fft, twiddles.as_ref())?;
        Ok(Self { geometry, window, twiddles })
    }

    weight_accessors!(
        StftMagnitudeGeometry,
        window: [f32],
        "The analysis window, `[n_fft]` (what [`StftMagnitude::from_packed`] takes)."
    );

    /// The FFT's twiddle table ([`twiddle_len`](crate::kernels::fft::twiddle_len)`(n_fft)` values).
    pub fn twiddles(&self) -> &[f32] {
        self.twiddles.as_ref()
    }

    /// Scratch values [`StftMagnitude::run`] needs ([`StftMagnitudeGeometry::scratch_len`]).
    pub fn scratch_len(&self) -> usize {
        self.geometry.scratch_len()
    }

    /// Writes the magnitude spectra of `input` (`[1, T]`, channel-first) into `output`
    /// (`[n_fft/2 + 1, frames]`, channel-first); `scratch`: at least
    /// [`StftMagnitude::scratch_len`] values (contents ignored).
    ///
    /// # Errors
    /// Before any computation: [`Error::Layout`] for a frame-major input or output,
    /// [`Error::Shape`] from the shape rule or for an output of the wrong shape (argument
    /// 1), [`Error::Length`] for short scratch. Nothing is written on error.
    pub fn run<B: Backend>(
        &self,
        input: &TensorView<'_>,
        output: &mut TensorViewMut<'_>,
        scratch: &mut [f32],
    ) -> Result<(), Error> {
        let g = self.geometry;
        let out = check_channel_first(&g, input, output, &["frequency bins", "frames"])?;
        let need = g.scratch_len();
        check_scratch(need, scratch.len())?;
        let fft = RealFft::new(g.n_fft, self.twiddles.as_ref())?;
        let (n, bins, frames) = (g.n_fft, g.bins(), out.dims()[1]);
        let (frame, rest) = scratch[..need].split_at_mut(n);
        let window = self.window.as_ref();
        let (x, y) = (input.data(), output.data_mut());
        for t in 0..frames {
            let samples = &x[g.hop * t..g.hop * t + n];
            for ((f, &s), &w) in frame.iter_mut().zip(samples).zip(window) {
                *f = s * w;
            }
            B::rfft(&fft, frame, rest);
            // The frame is free again: its first `bins` values take the magnitudes.
            B::magnitude_spectrum(rest, &mut frame[..bins]);
            for (k, &m) in frame[..bins].iter().enumerate() {
                y[k * frames + t] = m;
            }
        }
        Ok(())
    }
}
