//! Resampling to 16 kHz with rubato's synchronous FFT resampler, of a whole clip
//! ([`to_16k`]) or of a stream as it arrives ([`Streaming`], bitwise the same output).
//!
//! # Choice
//! `rubato::Fft` (fixed ratio, the one rubato recommends for offline file conversion): each
//! block of `n_in` input samples is transformed, multiplied by the spectrum of a windowed-sinc
//! anti-aliasing filter (Blackman-Harris² window, `n_in` taps at the input rate), cut or
//! zero-padded to `n_out = n_in * 16000 / rate` bins and transformed back, with overlap-add
//! between blocks (a linear convolution, exact up to rounding, not a circular one). It has no
//! quality knobs besides the block size; the asynchronous sinc resampler reaches the same
//! quality at several times the cost.
//!
//! Block size: `n_in = c * rate / g`, `n_out = c * 16000 / g` (`g = gcd(rate, 16000)`) with `c`
//! the smallest **even** count making `min(n_in, n_out) >= 1024` (e.g. 3528 / 1280 for
//! 44.1 kHz, 3072 / 1024 for 48 kHz, 1024 / 2048 for 8 kHz). The filter's cutoff
//! ([`cutoff_hz`]) grows with the shorter block: 7893 Hz from 32, 48 or 96 kHz, 7914 Hz from
//! 22.05 or 44.1 kHz, 5470 Hz from 11.025 kHz, 3947 Hz from 8 kHz.
//!
//! Passband (measured with sines, `neon-audio/tests/audio/`): amplitude and phase are exact to
//! within 3e-6 of the amplitude (f32 rounding) up to 0.97 x the lower of the two Nyquist
//! frequencies (7.76 kHz when downsampling, 3.88 kHz from 8 kHz); at 0.98 x the error is
//! 1e-5 to 1.2e-2 depending on the rate, at 0.99 x the tone is mostly removed. openWakeWord's
//! mel bank ends at 3.8 kHz, inside the passband for every rate (8 kHz included); models that
//! take the waveform lose only the top 3% of the 8 kHz band.
//!
//! # Delay and length
//! The filter is centred on tap `n_in / 2`, i.e. it delays by `n_in / 2` input samples, which
//! rubato trims as `n_out / 2` output samples. With `c` even both halves are whole numbers
//! and `(n_in / 2) / rate == (n_out / 2) / 16000` exactly, so the output is time-aligned with
//! the input (an odd `n_in` would misalign by half an input sample: a 2.5% error on a 440 Hz
//! tone at 44.1 kHz). The clip is resampled in one call (`process_all`), which trims the delay
//! and pumps zeros after the end; the result is cut to `round(len * 16000 / rate)` samples.
//!
//! # Edges
//! The input is taken as zero before its first and after its last sample, so the output is
//! the band-limited version of the zero-extended clip: a clip that starts or stops abruptly
//! rings (Gibbs) at its ends. Measured after a jump of size J (a constant clip): the ringing
//! stays below 0.01 J from 26 output samples (1.6 ms) on and below 0.001 J from 180 samples
//! (11.2 ms) on for every rate (8 kHz is the slowest; from 22.05 kHz up, 11 and 63 samples).
//! A clip that is smooth at its ends (fades in and out) is reproduced over its whole length.

use std::string::{String, ToString};
use std::vec::Vec;

use rubato::audioadapter_buffers::direct::InterleavedSlice;
use rubato::{Fft, FixedSync, Resampler, WindowFunction};

use super::SAMPLE_RATE;

/// Minimum length of the shorter FFT block (input or output side), in samples.
const MIN_BLOCK: usize = 1024;
/// The anti-aliasing window.
const WINDOW: WindowFunction = WindowFunction::BlackmanHarris2;

fn gcd(mut a: usize, mut b: usize) -> usize {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

/// FFT block sizes `(n_in, n_out)` for resampling from `rate` Hz to 16 kHz, in samples (see
/// the [module documentation](self)). `rate` must be non-zero.
pub fn block_sizes(rate: u32) -> (usize, usize) {
    let (rate, out) = (rate as usize, SAMPLE_RATE as usize);
    let g = gcd(rate, out);
    let (unit_in, unit_out) = (rate / g, out / g);
    let c = MIN_BLOCK.div_ceil(unit_in.min(unit_out)).max(2);
    let c = c + c % 2;
    (c * unit_in, c * unit_out)
}

/// Cutoff of the anti-aliasing filter for resampling from `rate` Hz to 16 kHz, in Hz (the
/// frequency rubato designs the windowed sinc for; the passband ends a little below it).
pub fn cutoff_hz(rate: u32) -> f64 {
    let (n_in, n_out) = block_sizes(rate);
    let nyquist = f64::from(rate.min(SAMPLE_RATE)) / 2.0;
    rubato::calculate_cutoff::<f64>(n_in.min(n_out), WINDOW) * nyquist
}

/// Length of a clip of `len` samples at `rate` Hz once resampled to 16 kHz:
/// `round(len * 16000 / rate)`, halves rounded up. `rate` must be non-zero.
pub fn output_len(len: usize, rate: u32) -> usize {
    let num = len as u128 * u128::from(SAMPLE_RATE);
    let rate = u128::from(rate);
    ((2 * num + rate) / (2 * rate)) as usize
}

/// rubato's FFT resampler with blocks of exactly `block_sizes(rate)`, one channel.
fn new_fft(rate: u32) -> Result<Fft<f32>, String> {
    let (n_in, n_out) = block_sizes(rate);
    // `FixedSync::Both` with a chunk of exactly `c` minimal blocks gives FFT blocks of
    // `n_in` / `n_out` samples; one sub-chunk per chunk.
    let fft = Fft::<f32>::new_custom(
        rate as usize,
        SAMPLE_RATE as usize,
        n_in,
        1,
        1,
        WINDOW,
        FixedSync::Both,
    )
    .map_err(|e| e.to_string())?;
    if (fft.fft_size_in(), fft.fft_size_out()) != (n_in, n_out) {
        return Err(std::format!(
            "unexpected FFT block sizes {} / {} (wanted {n_in} / {n_out})",
            fft.fft_size_in(),
            fft.fft_size_out()
        ));
    }
    Ok(fft)
}

/// Resamples a mono clip from `rate` Hz to 16 kHz; returns `output_len(input.len(), rate)`
/// samples, time-aligned with the input (see the [module documentation](self)). A 16 kHz clip
/// is returned unchanged.
///
/// # Errors
/// The resampler's message if it rejects the configuration (a zero rate) or fails.
pub fn to_16k(input: &[f32], rate: u32) -> Result<Vec<f32>, String> {
    if rate == SAMPLE_RATE {
        return Ok(input.to_vec());
    }
    if rate == 0 {
        return Err("the input sample rate is 0 Hz".into());
    }
    let want = output_len(input.len(), rate);
    if input.is_empty() {
        return Ok(Vec::new());
    }
    let mut fft = new_fft(rate)?;
    let adapter = InterleavedSlice::new(input, 1, input.len()).map_err(|e| e.to_string())?;
    let mut out =
        fft.process_all(&adapter, input.len(), None).map_err(|e| e.to_string())?.take_data();
    // `process_all` returns `ceil(len * n_out / n_in)` samples computed in f64: cut (or, if
    // rounding ever made it short, pad) to the exact rounded length.
    out.resize(want, 0.0);
    Ok(out)
}

/// A resampler from `rate` Hz to 16 kHz fed piece by piece: its output is bitwise the output
/// of [`to_16k`] on the concatenation of the pieces, and it holds one FFT block of input and
/// one of output.
///
/// [`to_16k`]'s `process_all` cuts the clip into blocks of `n_in` samples, resamples each (the
/// last one zero-padded), then blocks of zeros until the output is long enough, and drops the
/// first `n_out / 2` output samples (the filter's delay). This does the same blocks in the
/// same order as their input arrives, so every FFT sees the same numbers.
pub struct Streaming {
    fft: Fft<f32>,
    n_in: usize,
    /// Input not yet resampled (less than one block).
    pending: Vec<f32>,
    /// One block of output.
    block: Vec<f32>,
    /// Output samples still to drop at the start (the delay).
    to_trim: usize,
    /// Input samples taken so far.
    consumed: u64,
    /// Output samples emitted so far.
    produced: u64,
    rate: u32,
    /// [`Streaming::finish`] has run.
    finished: bool,
}

impl Streaming {
    /// A resampler from `rate` Hz (not 16 kHz, not 0) to 16 kHz.
    ///
    /// # Errors
    /// The resampler's message if it rejects the configuration.
    pub fn new(rate: u32) -> Result<Streaming, String> {
        if rate == 0 || rate == SAMPLE_RATE {
            return Err(std::format!("no resampler for an input at {rate} Hz"));
        }
        let fft = new_fft(rate)?;
        let (n_in, n_out) = block_sizes(rate);
        Ok(Streaming {
            to_trim: fft.output_delay(),
            fft,
            n_in,
            pending: Vec::with_capacity(n_in),
            block: std::vec![0.0; n_out],
            consumed: 0,
            produced: 0,
            rate,
            finished: false,
        })
    }

    /// Resamples `input`, the next samples of the stream, appending what is ready to `out`
    /// (one FFT block of output per `n_in` input samples, minus the delay at the start).
    ///
    /// # Errors
    /// The resampler's message if it fails (not expected).
    pub fn push(&mut self, mut input: &[f32], out: &mut Vec<f32>) -> Result<(), String> {
        if self.finished {
            return Err("input after the end of the stream".into());
        }
        self.consumed += input.len() as u64;
        while !input.is_empty() {
            let k = (self.n_in - self.pending.len()).min(input.len());
            self.pending.extend_from_slice(&input[..k]);
            input = &input[k..];
            if self.pending.len() == self.n_in {
                self.process(None, out)?;
                self.pending.clear();
            }
        }
        Ok(())
    }

    /// Ends the stream: resamples the rest and appends the last samples, so that the whole
    /// output has `output_len(consumed, rate)` samples, as [`to_16k`]'s. Calling it again
    /// appends nothing.
    ///
    /// # Errors
    /// The resampler's message if it fails (not expected).
    pub fn finish(&mut self, out: &mut Vec<f32>) -> Result<(), String> {
        if self.finished {
            return Ok(());
        }
        self.finished = true;
        let want = output_len(self.consumed as usize, self.rate) as u64;
        // `process_all` computes (and keeps) this many samples; `to_16k` cuts or zero-pads
        // them to `want`.
        let computed = (self.fft.resample_ratio() * self.consumed as f64).ceil() as u64;
        let keep = want.min(computed);
        let start = out.len();
        if !self.pending.is_empty() {
            let partial = self.pending.len();
            self.process(Some(partial), out)?;
            self.pending.clear();
        }
        while self.produced < keep && self.consumed > 0 {
            self.process(Some(0), out)?;
        }
        // Cut what `process_all` would not have kept, pad as `to_16k` does.
        let over = self.produced.saturating_sub(keep) as usize;
        out.truncate(out.len() - over.min(out.len() - start));
        self.produced -= over as u64;
        while self.produced < want {
            out.push(0.0);
            self.produced += 1;
        }
        Ok(())
    }

    /// Starts a new stream of the same rate, as [`Streaming::new`] would (without
    /// designing the filter and planning the FFTs again).
    pub fn reset(&mut self) {
        self.fft.reset();
        self.pending.clear();
        self.to_trim = self.fft.output_delay();
        self.consumed = 0;
        self.produced = 0;
        self.finished = false;
    }

    /// Resamples one block (`partial`: that many valid samples in `pending`, the rest zero).
    fn process(&mut self, partial: Option<usize>, out: &mut Vec<f32>) -> Result<(), String> {
        let input = InterleavedSlice::new(&self.pending[..], 1, self.pending.len())
            .map_err(|e| e.to_string())?;
        let n_out = self.block.len();
        let mut output =
            InterleavedSlice::new_mut(&mut self.block[..], 1, n_out).map_err(|e| e.to_string())?;
        let indexing = rubato::Indexing {
            input_offset: 0,
            output_offset: 0,
            active_channels_mask: None,
            partial_len: partial,
        };
        let (_, produced) = self
            .fft
            .process_into_buffer(&input, &mut output, Some(&indexing))
            .map_err(|e| e.to_string())?;
        let skip = self.to_trim.min(produced);
        self.to_trim -= skip;
        out.extend_from_slice(&self.block[skip..produced]);
        self.produced += (produced - skip) as u64;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn block_sizes_are_even_and_long_enough() {
        for rate in [1_000, 8_000, 11_025, 16_001, 22_050, 32_000, 44_100, 48_000, 96_000, 767_999]
        {
            let (n_in, n_out) = block_sizes(rate);
            assert_eq!(n_in % 2, 0, "{rate}");
            assert_eq!(n_out % 2, 0, "{rate}");
            assert!(n_in.min(n_out) >= MIN_BLOCK, "{rate}");
            // Same duration on both sides: n_in / rate == n_out / 16000.
            assert_eq!(n_in as u64 * 16_000, n_out as u64 * u64::from(rate), "{rate}");
        }
        assert_eq!(block_sizes(44_100), (3528, 1280));
        assert_eq!(block_sizes(48_000), (3072, 1024));
        assert_eq!(block_sizes(8_000), (1024, 2048));
    }

    #[test]
    fn streaming_is_bitwise_the_whole_clip_resampling() {
        for rate in [8_000, 11_025, 22_050, 44_100, 48_000] {
            let (n_in, _) = block_sizes(rate);
            for len in [1, 7, n_in - 1, n_in, n_in + 1, 3 * n_in, 3 * n_in + 517] {
                let x: std::vec::Vec<f32> =
                    (0..len).map(|i| ((i as f32) * 0.031).sin() * 0.7).collect();
                let whole = to_16k(&x, rate).unwrap();
                for piece in [1usize, 100, 1000, n_in, 5000] {
                    let mut s = Streaming::new(rate).unwrap();
                    let mut out = Vec::new();
                    for p in x.chunks(piece) {
                        s.push(p, &mut out).unwrap();
                    }
                    s.finish(&mut out).unwrap();
                    s.finish(&mut out).unwrap();
                    assert_eq!(out.len(), whole.len(), "{rate} {len} {piece}");
                    let same = out.iter().zip(&whole).all(|(a, b)| a.to_bits() == b.to_bits());
                    assert!(same, "{rate} Hz, {len} samples in pieces of {piece}");
                }
            }
        }
    }

    #[test]
    fn a_reset_stream_is_a_new_one() {
        for rate in [8_000, 44_100, 44_101] {
            let x: std::vec::Vec<f32> =
                (0..9_000).map(|i| ((i as f32) * 0.017).sin() * 0.5).collect();
            let whole = to_16k(&x, rate).unwrap();
            let mut s = Streaming::new(rate).unwrap();
            let mut out = Vec::new();
            // Part of another stream, finished or not, then reset.
            s.push(&[0.3; 5_000], &mut out).unwrap();
            s.reset();
            s.push(&[0.2; 77], &mut out).unwrap();
            s.finish(&mut out).unwrap();
            s.reset();
            out.clear();
            s.push(&x, &mut out).unwrap();
            s.finish(&mut out).unwrap();
            let same = out.len() == whole.len()
                && out.iter().zip(&whole).all(|(a, b)| a.to_bits() == b.to_bits());
            assert!(same, "{rate} Hz");
        }
    }

    #[test]
    fn output_len_rounds() {
        assert_eq!(output_len(44_100, 44_100), 16_000);
        assert_eq!(output_len(3, 48_000), 1);
        assert_eq!(output_len(1, 48_000), 0);
        // 1.5 output samples rounds up.
        assert_eq!(output_len(3, 32_000), 2);
    }

    #[test]
    fn output_has_the_rounded_length() {
        for rate in [8_000, 22_050, 44_100, 48_000, 11_025] {
            for len in [1, 2, 3, 7, 100, 1023, 4097] {
                let x = std::vec![0.25f32; len];
                assert_eq!(to_16k(&x, rate).unwrap().len(), output_len(len, rate), "{rate} {len}");
            }
        }
    }
}
