//! Per-channel automatic gain control, PCAN (TFLite Micro `pcan_gain_control.cc` /
//! `pcan_gain_control_util.cc`; Y. Wang et al., "Trainable frontend for robust and far-field
//! keyword spotting", ICASSP 2017). pymicro-features 2.0.2: strength 0.95, offset 80, gain
//! bits 21.
//!
//! Each channel is multiplied by a gain `2^21 (noise + 80)^-0.95` of its noise estimate (read
//! from a piecewise-quadratic table over the estimate's octaves), then compressed
//! (`PcanShrink`).

use super::filterbank::CHANNELS;
use super::noise::SMOOTHING_BITS;
use super::tables::{nudge_f32, pow};

/// Gain normalisation exponent.
const STRENGTH: f32 = 0.95;
/// Added to the noise estimate in the gain's denominator.
const OFFSET: f32 = 80.0;
/// Fraction bits of the gain.
const GAIN_BITS: u32 = 21;
/// Fraction bits of the signal-to-noise ratio (`kPcanSnrBits`).
const SNR_BITS: u32 = 12;
/// Fraction bits of the output (`kPcanOutputBits`).
const OUTPUT_BITS: u32 = 6;
/// Octaves covered by the gain table (`kWideDynamicFunctionBits`).
const LUT_BITS: usize = 32;
/// Gain table length (`kWideDynamicFunctionLUTSize`): entries 0 and 1 for `x = 0, 1`, then
/// `(y0, a1, a2, unused)` per octave `2..=32` starting at `4 * octave - 6`.
pub const GAIN_LUT_LEN: usize = 4 * LUT_BITS - 3;
/// `input_correction_bits` of the frontend: `msb(512) - 1 - 12 / 2 = 3`. The filterbank output
/// carries this many bits fewer than the gain table assumes.
pub const CORRECTION_BITS: u32 = 3;
/// Right shift of `signal * gain` to the Q12 signal-to-noise ratio: `21 - 3 - 12`.
pub const SNR_SHIFT: u32 = GAIN_BITS - CORRECTION_BITS - SNR_BITS;

/// `PcanGainLookupFunction` for noise estimate `x` (Q7: smoothing bits 10 minus the
/// correction 3): `(int16)(2^21 powf(x / 2^7 + 80, -0.95) + 0.5f)` in `f32`, at most 32767;
/// the `powf` result moved by `ulps`.
const fn gain(x: u32, ulps: i32) -> i16 {
    let input_bits = SMOOTHING_BITS - CORRECTION_BITS;
    let x_f = x as f32 / (1u32 << input_bits) as f32;
    let p = nudge_f32(pow((x_f + OFFSET) as f64, -STRENGTH as f64) as f32, ulps);
    let g = (1u32 << GAIN_BITS) as f32 * p;
    if g > i16::MAX as f32 {
        i16::MAX
    } else {
        (g + 0.5) as i16
    }
}

/// The gain table as `PcanGainControlPopulateState` fills it: per octave `[x0, 2 x0)`, the
/// gains at `x0`, `1.5 x0` and `2 x0` (the last octave ends at `2^32 - 1`) fitted by
/// `y0 + a1 t + a2 t^2`. The fourth entry of each octave is never read and left 0.
pub(super) const fn build_gain_lut(ulps: i32) -> [i16; GAIN_LUT_LEN] {
    let mut lut = [0i16; GAIN_LUT_LEN];
    lut[0] = gain(0, ulps);
    lut[1] = gain(1, ulps);
    let mut octave = 2;
    while octave <= LUT_BITS {
        let x0 = 1u32 << (octave - 1);
        let x1 = x0 + (x0 >> 1);
        let x2 = if octave == LUT_BITS { x0 + (x0 - 1) } else { 2 * x0 };
        let y0 = gain(x0, ulps) as i32;
        let diff1 = gain(x1, ulps) as i32 - y0;
        let diff2 = gain(x2, ulps) as i32 - y0;
        let a1 = 4 * diff1 - diff2;
        let a2 = diff2 - a1;
        let at = 4 * octave - 6;
        lut[at] = y0 as i16;
        lut[at + 1] = a1 as i16;
        lut[at + 2] = a2 as i16;
        octave += 1;
    }
    lut
}

/// `WideDynamicFunction`: the gain for noise estimate `x` from the table, interpolated on
/// the 10 bits below the leading one, in the C code's `int32` steps.
fn wide_dynamic(x: u32, lut: &[i16; GAIN_LUT_LEN]) -> i16 {
    if x <= 2 {
        return lut[x as usize];
    }
    let octave = 32 - x.leading_zeros();
    let at = 4 * octave as usize - 6;
    let frac = (if octave < 11 { x << (11 - octave) } else { x >> (octave - 11) } & 0x3FF) as i32;
    let mut r = (lut[at + 2] as i32 * frac) >> 5;
    r = r.wrapping_add(((lut[at + 1] as i32 as u32) << 5) as i32);
    r = r.wrapping_mul(frac);
    r = r.wrapping_add(1 << 14) >> 15;
    r.wrapping_add(lut[at] as i32) as i16
}

/// `PcanShrink`: compresses the Q12 signal-to-noise ratio to Q6, quadratic below 2 and
/// linear (minus 1) above.
fn shrink(x: u32) -> u32 {
    if x < (2 << SNR_BITS) {
        (x * x) >> (2 + 2 * SNR_BITS - OUTPUT_BITS)
    } else {
        (x >> (SNR_BITS - OUTPUT_BITS)) - (1 << OUTPUT_BITS)
    }
}

/// `PcanGainControlApply`: each channel times its gain (from the noise reduction's updated
/// `estimate`), shifted to the Q12 ratio and shrunk.
pub(super) fn apply(
    lut: &[i16; GAIN_LUT_LEN],
    estimate: &[u32; CHANNELS],
    signal: &mut [u32; CHANNELS],
) {
    for (s, &e) in signal.iter_mut().zip(estimate) {
        // C converts the `int16_t` gain to `uint32_t`, then multiplies in `uint64_t`.
        let g = wide_dynamic(e, lut) as i32 as u32;
        let snr = ((*s as u64 * g as u64) >> SNR_SHIFT) as u32;
        *s = shrink(snr);
    }
}
