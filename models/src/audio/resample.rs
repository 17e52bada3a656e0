//! Whole-clip resampling to 16 kHz with rubato's synchronous FFT resampler.
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
//! Passband (measured with sines, `models/tests/audio.rs`): amplitude and phase are exact to
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
    let (n_in, n_out) = block_sizes(rate);
    // `FixedSync::Both` with a chunk of exactly `c` minimal blocks gives FFT blocks of
    // `n_in` / `n_out` samples; one sub-chunk per chunk.
    let mut fft = Fft::<f32>::new_custom(
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
    let adapter = InterleavedSlice::new(input, 1, input.len()).map_err(|e| e.to_string())?;
    let mut out =
        fft.process_all(&adapter, input.len(), None).map_err(|e| e.to_string())?.take_data();
    // `process_all` returns `ceil(len * n_out / n_in)` samples computed in f64: cut (or, if
    // rounding ever made it short, pad) to the exact rounded length.
    out.resize(want, 0.0);
    Ok(out)
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
