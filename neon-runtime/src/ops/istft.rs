//! Inverse short-time Fourier transform from log-magnitude and phase frames: [`Istft`],
//! with its geometry [`IstftGeometry`] and its streaming state [`IstftStream`].
//!
//! The convention is the vocoder head of `sanotts.md` (our sanoTTS definition; Vocos-style
//! heads use the same one): each frame `y` holds `bins = n_fft/2 + 1` log-magnitudes then
//! `bins` phases (radians), `[2, bins]`. Per frame:
//!
//! 1. `X[k] = exp(min(y[k], max_log)) (cos y[bins + k] + i sin y[bins + k])`
//!    ([`crate::kernels::TrigKernels::from_log_polar`]; `max_log = ln 100` caps magnitudes at 100);
//! 2. `x = irfft(X)` of length `n_fft`, normalised by `1/n_fft`, the imaginary parts of
//!    bins 0 and `n_fft/2` ignored (numpy's `irfft`;
//!    [`crate::kernels::FftKernels::irfft`]);
//! 3. `x * w`, `w` the window (e.g. periodic Hann, [`periodic_hann`]), added into an
//!    overlap-add buffer at sample `hop * t` (frame `t`; buffer length
//!    `(T - 1) hop + n_fft`);
//! 4. each buffer sample divided by the overlap-added `w^2` of the frames covering it (the
//!    envelope, summed in f32 in frame order; left undivided where it is below `1e-11`);
//! 5. "centre" trim: output sample `j` is buffer sample `n_fft/2 + j`, for `j < T * hop`.
//!
//! So `T` frames give exactly `T * hop` samples, frame `t` centred at sample `hop * t`.
//! This is not `torch.istft(center=True)`, which returns `(T - 1) * hop` samples.
//!
//! Streaming: [`Istft::push`] adds one frame and emits the buffer samples no later frame can
//! touch (`hop` per frame once past the trim); [`Istft::finish`] emits the rest (at most
//! `n_fft/2` samples), with the envelope of an utterance that ends there. Whole-utterance
//! [`Istft::run`] is the same pushes and finish, so streaming and whole outputs are equal
//! bit for bit. The latency is `n_fft/2` samples (2 frames of 128 for sanoTTS) beyond
//! the frame that completes them.
//!
//! Memory: the operator borrows its FFT twiddles and window; a stream borrows a caller's
//! workspace of [`Istft::workspace_len`] f32 values (overlap tail, spectrum, frame). No
//! allocation anywhere.

use crate::error::{Error, ShapeError};
use crate::kernels::fft::RealFft;
use crate::kernels::Backend;

const OP: &str = "istft";

/// Envelope values below this are left undivided (`sanotts.md`).
pub const MIN_ENVELOPE: f32 = 1e-11;

/// Geometry of an [`Istft`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct IstftGeometry {
    /// FFT length (a power of two the real FFT supports, 16..=65536); sanoTTS: 512.
    pub n_fft: usize,
    /// Samples between frames, 1..=`n_fft / 2`; sanoTTS: 128.
    pub hop: usize,
    /// Cap on the log-magnitudes (finite); sanoTTS: `ln 100`.
    pub max_log: f32,
}

impl IstftGeometry {
    /// Values per input frame: `n_fft + 2` (`[2, n_fft/2 + 1]`).
    pub const fn frame_len(&self) -> usize {
        self.n_fft + 2
    }

    /// Checks the geometry alone.
    ///
    /// # Errors
    /// [`ShapeError::Geometry`] for an unsupported `n_fft`, a `hop` outside
    /// `1..=n_fft/2`, or a non-finite `max_log`.
    pub const fn validate(&self) -> Result<(), ShapeError<usize>> {
        if !crate::kernels::fft::is_valid_len(self.n_fft) {
            return Err(ShapeError::Geometry {
                op: OP,
                reason: "n_fft must be a power of two in 16..=65536",
            });
        }
        if self.hop == 0 || self.hop > self.n_fft / 2 {
            return Err(ShapeError::Geometry { op: OP, reason: "hop must be in 1..=n_fft/2" });
        }
        if !self.max_log.is_finite() {
            return Err(ShapeError::Geometry { op: OP, reason: "max_log must be finite" });
        }
        Ok(())
    }
}

/// Fills `w` with the periodic Hann window `w[i] = 0.5 - 0.5 cos(2 pi i / n)`, `n = w.len()`
/// (computed in f64, stored as f32; `scipy.signal.get_window("hann", n)`, `torch.hann_window`).
pub fn periodic_hann(w: &mut [f32]) {
    let n = w.len();
    for (i, v) in w.iter_mut().enumerate() {
        let (_, cos) = crate::kernels::fft::sin_cos_turns(i as u64, n as u64);
        *v = (0.5 - 0.5 * cos) as f32;
    }
}

/// Prepared iSTFT: geometry, FFT and window (borrowed). `Copy`; share it between streams.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Istft<'a> {
    geometry: IstftGeometry,
    fft: RealFft<'a>,
    window: &'a [f32],
}

/// The streaming state of one utterance: the overlap-add tail, the work areas, the frames
/// pushed. Borrowed from a caller's workspace ([`Istft::stream`]).
#[derive(Debug)]
pub struct IstftStream<'w> {
    n_fft: usize,
    /// Buffer samples `hop * frames ..` (`n_fft` values; the last `hop` are zero between
    /// pushes).
    tail: &'w mut [f32],
    /// `[2, n_fft/2 + 1]` spectrum work area.
    spectrum: &'w mut [f32],
    /// `[n_fft]` time-domain frame.
    frame: &'w mut [f32],
    frames: usize,
    finished: bool,
}

impl IstftStream<'_> {
    /// Frames pushed since the start (or the last [`reset`](Self::reset)).
    pub fn frames(&self) -> usize {
        self.frames
    }

    /// Starts a new utterance (keeps the workspace).
    pub fn reset(&mut self) {
        self.tail.fill(0.0);
        self.frames = 0;
        self.finished = false;
    }
}

impl<'a> Istft<'a> {
    /// An iSTFT of `geometry` with the FFT's `twiddles` ([`crate::kernels::fft::twiddles`]
    /// or [`crate::kernels::fft::fill_twiddles`] for `n_fft`) and `window` (`[n_fft]`).
    ///
    /// # Errors
    /// [`Error::Shape`] for an invalid geometry; [`Error::Length`] when `twiddles` or
    /// `window` have the wrong length.
    pub fn new(
        geometry: IstftGeometry,
        twiddles: &'a [f32],
        window: &'a [f32],
    ) -> Result<Self, Error> {
        geometry.validate()?;
        let fft = RealFft::new(geometry.n_fft, twiddles)?;
        if window.len() != geometry.n_fft {
            return Err(Error::Length {
                what: "istft window",
                expected: geometry.n_fft,
                got: window.len(),
            });
        }
        Ok(Self { geometry, fft, window })
    }

    /// The geometry.
    pub fn geometry(&self) -> IstftGeometry {
        self.geometry
    }

    /// f32 values of a stream's workspace: `3 n_fft + 2` (tail, spectrum, frame).
    pub const fn workspace_len(n_fft: usize) -> usize {
        3 * n_fft + 2
    }

    /// Output samples of `frames` frames: `frames * hop`.
    pub fn output_len(&self, frames: usize) -> usize {
        frames * self.geometry.hop
    }

    /// A new stream on `workspace` (at least [`Self::workspace_len`] values; the rest is
    /// unused).
    ///
    /// # Errors
    /// [`Error::Length`] when `workspace` is too short.
    pub fn stream<'w>(&self, workspace: &'w mut [f32]) -> Result<IstftStream<'w>, Error> {
        let stream = self.attach(workspace, 0)?;
        stream.tail.fill(0.0);
        Ok(stream)
    }

    /// A stream that continues one left on `workspace` by an earlier stream of this
    /// geometry after `frames` pushes (its overlap-add tail intact; not finished): the
    /// state of a stream is its workspace and its frame count, so an owner can keep both in
    /// its own struct and attach a stream per call, with no self-reference. Pushing into
    /// the resumed stream gives the bits the earlier stream would have given.
    ///
    /// # Errors
    /// [`Error::Length`] when `workspace` is too short.
    pub fn resume<'w>(
        &self,
        workspace: &'w mut [f32],
        frames: usize,
    ) -> Result<IstftStream<'w>, Error> {
        self.attach(workspace, frames)
    }

    /// A stream over `workspace` as it is, `frames` pushes in (the regions of
    /// [`Self::workspace_len`]: overlap-add tail, spectrum, frame).
    fn attach<'w>(
        &self,
        workspace: &'w mut [f32],
        frames: usize,
    ) -> Result<IstftStream<'w>, Error> {
        let n = self.geometry.n_fft;
        let need = Self::workspace_len(n);
        if workspace.len() < need {
            return Err(Error::Length {
                what: "istft workspace",
                expected: need,
                got: workspace.len(),
            });
        }
        let (tail, rest) = workspace[..need].split_at_mut(n);
        let (spectrum, frame) = rest.split_at_mut(n + 2);
        Ok(IstftStream { n_fft: n, tail, spectrum, frame, frames, finished: false })
    }

    fn check_stream(&self, s: &IstftStream<'_>) -> Result<(), Error> {
        if s.n_fft != self.geometry.n_fft {
            return Err(Error::Length {
                what: "istft stream (made for another n_fft)",
                expected: self.geometry.n_fft,
                got: s.n_fft,
            });
        }
        if s.finished {
            return Err(Error::Plan { reason: "istft stream already finished: reset it first" });
        }
        Ok(())
    }

    /// `buffer / envelope` at buffer sample `p`, with the frames `0..frames` present.
    fn normalised(&self, value: f32, p: usize, frames: usize) -> f32 {
        let (n, hop) = (self.geometry.n_fft, self.geometry.hop);
        let first = (p + 1).saturating_sub(n).div_ceil(hop);
        let last = (p / hop).min(frames.saturating_sub(1));
        let mut env = 0.0f32;
        if frames > 0 {
            for t in first..=last {
                let w = self.window[p - hop * t];
                env += w * w;
            }
        }
        if env < MIN_ENVELOPE {
            value
        } else {
            value / env
        }
    }

    /// Adds one frame `y` (`[2, n_fft/2 + 1]`: log-magnitudes, phases) and writes the
    /// samples it completes to the start of `out`; returns how many (`hop`, or fewer while
    /// the first `n_fft/2` buffer samples are trimmed).
    ///
    /// # Errors
    /// [`Error::Length`] when `y` is not `n_fft + 2` values, `out` is shorter than `hop`, or
    /// the stream belongs to another geometry; [`Error::Plan`] after [`Self::finish`]
    /// (until [`IstftStream::reset`]). Nothing changes on error.
    pub fn push<B: Backend>(
        &self,
        s: &mut IstftStream<'_>,
        y: &[f32],
        out: &mut [f32],
    ) -> Result<usize, Error> {
        let IstftGeometry { n_fft: n, hop, max_log } = self.geometry;
        self.check_stream(s)?;
        if y.len() != n + 2 {
            return Err(Error::Length { what: "istft frame", expected: n + 2, got: y.len() });
        }
        if out.len() < hop {
            return Err(Error::Length { what: "istft output", expected: hop, got: out.len() });
        }
        let bins = n / 2 + 1;
        s.spectrum.copy_from_slice(y);
        let (re, im) = s.spectrum.split_at_mut(bins);
        B::from_log_polar(max_log, re, im);
        B::irfft(&self.fft, s.spectrum, s.frame);
        for ((acc, &x), &w) in s.tail.iter_mut().zip(s.frame.iter()).zip(self.window) {
            *acc += x * w;
        }
        s.frames += 1;
        // Buffer samples hop*t .. hop*(t+1) are complete; emit those past the trim.
        let start = hop * (s.frames - 1);
        let skip = (n / 2).saturating_sub(start).min(hop);
        // Their envelope, in `frame` (dead once added): the terms of `normalised` in the same
        // order (frame by frame, the oldest first), one frame's window slice at a time.
        let env = &mut s.frame[..hop];
        env.fill(0.0);
        for t in (start + 1).saturating_sub(n).div_ceil(hop)..s.frames {
            let w = &self.window[start - hop * t..];
            for (e, &w) in env.iter_mut().zip(w) {
                *e += w * w;
            }
        }
        let done = s.tail[skip..hop].iter().zip(&env[skip..]);
        for (o, (&v, &e)) in out.iter_mut().zip(done) {
            *o = if e < MIN_ENVELOPE { v } else { v / e };
        }
        let written = hop - skip;
        s.tail.copy_within(hop.., 0);
        s.tail[n - hop..].fill(0.0);
        Ok(written)
    }

    /// Ends the utterance: writes its last `min(n_fft/2, frames * hop)` samples to the start
    /// of `out` and returns how many, so that all pushes and the finish give `frames * hop`
    /// samples. The stream then refuses pushes until [`IstftStream::reset`].
    ///
    /// # Errors
    /// [`Error::Length`] when `out` is shorter than that or the stream belongs to another
    /// geometry; [`Error::Plan`] when already finished.
    pub fn finish(&self, s: &mut IstftStream<'_>, out: &mut [f32]) -> Result<usize, Error> {
        let IstftGeometry { n_fft: n, hop, .. } = self.geometry;
        self.check_stream(s)?;
        let base = hop * s.frames;
        let pending = (n / 2).min(base);
        if out.len() < pending {
            return Err(Error::Length { what: "istft output", expected: pending, got: out.len() });
        }
        let end = n / 2 + hop * s.frames;
        let mut written = 0;
        for p in base.max(n / 2)..end {
            out[written] = self.normalised(s.tail[p - base], p, s.frames);
            written += 1;
        }
        s.finished = true;
        Ok(written)
    }

    /// The whole utterance: `y` frame-major `[frames, n_fft + 2]` into `out`
    /// (`[frames * hop]`), through a stream on `workspace` ([`Self::workspace_len`]).
    ///
    /// # Errors
    /// [`Error::Length`] when `y` is not whole frames, `out` is not `frames * hop` values
    /// or `workspace` is too short. Nothing is written on error.
    pub fn run<B: Backend>(
        &self,
        y: &[f32],
        workspace: &mut [f32],
        out: &mut [f32],
    ) -> Result<(), Error> {
        let IstftGeometry { n_fft: n, hop, .. } = self.geometry;
        if !y.len().is_multiple_of(n + 2) {
            return Err(Error::Length {
                what: "istft frames (whole frames of n_fft + 2)",
                expected: (y.len() / (n + 2)) * (n + 2),
                got: y.len(),
            });
        }
        let frames = y.len() / (n + 2);
        if out.len() != frames * hop {
            return Err(Error::Length {
                what: "istft output",
                expected: frames * hop,
                got: out.len(),
            });
        }
        let mut s = self.stream(workspace)?;
        let mut at = 0;
        for f in y.chunks_exact(n + 2) {
            // Before frame t, max(0, hop t - n/2) samples are out, so >= hop places remain.
            at += self.push::<B>(&mut s, f, &mut out[at..])?;
        }
        at += self.finish(&mut s, &mut out[at..])?;
        debug_assert_eq!(at, out.len());
        Ok(())
    }
}
