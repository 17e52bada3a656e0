//! Noise reduction: subtracts a per-channel running estimate of stationary noise (TFLite
//! Micro `noise_reduction.cc` / `noise_reduction_util.cc`, with pymicro-features 2.0.2's
//! smoothing bits 10, even smoothing 0.025, odd smoothing 0.06, minimum signal remaining
//! 0.05).

use super::filterbank::CHANNELS;

/// Fraction bits of the coefficients (`kNoiseReductionBits`).
const NOISE_BITS: u32 = 14;
/// The signal is scaled up by this many bits before the estimate is updated.
pub const SMOOTHING_BITS: u32 = 10;
/// Coefficients in Q14, converted from `f32` by truncation as C's `uint16_t` assignment does:
/// `0.025f * 2^14 = 409.6 -> 409`.
const EVEN_SMOOTHING: u32 = (0.025f32 * (1 << NOISE_BITS) as f32) as u32;
/// `0.06f * 2^14 = 983.04 -> 983`.
const ODD_SMOOTHING: u32 = (0.06f32 * (1 << NOISE_BITS) as f32) as u32;
/// `0.05f * 2^14 = 819.2 -> 819`.
const MIN_SIGNAL_REMAINING: u32 = (0.05f32 * (1 << NOISE_BITS) as f32) as u32;

/// `NoiseReductionApply`: updates `estimate` (the noise level scaled by `2^10`, the state
/// carried from frame to frame) with the channel's smoothing coefficient and replaces each
/// channel by `max(signal - estimate, 0.05 signal)` (in the C code's integer steps).
pub(super) fn apply(estimate: &mut [u32; CHANNELS], signal: &mut [u32; CHANNELS]) {
    for (c, (s, e)) in signal.iter_mut().zip(estimate.iter_mut()).enumerate() {
        let smoothing = if c % 2 == 0 { EVEN_SMOOTHING } else { ODD_SMOOTHING };
        let keep = (1 << NOISE_BITS) - smoothing;
        let scaled = s.wrapping_shl(SMOOTHING_BITS);
        let mut next =
            ((scaled as u64 * smoothing as u64 + *e as u64 * keep as u64) >> NOISE_BITS) as u32;
        *e = next;
        next = next.min(scaled);
        let floor = ((*s as u64 * MIN_SIGNAL_REMAINING as u64) >> NOISE_BITS) as u32;
        let subtracted = (scaled - next) >> SMOOTHING_BITS;
        *s = subtracted.max(floor);
    }
}

/// The coefficients `(even, odd, minimum remaining)` in Q14 (pinned by the tests).
pub const fn coefficients() -> [u32; 3] {
    [EVEN_SMOOTHING, ODD_SMOOTHING, MIN_SIGNAL_REMAINING]
}
