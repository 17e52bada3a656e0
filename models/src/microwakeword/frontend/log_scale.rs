//! Fixed-point natural logarithm of each channel, scaled to the `u16` feature (TFLite Micro
//! `log_scale.cc`, `log_lut.cc`; scale shift 6 as pymicro-features 2.0.2 sets it).
//!
//! `log2 x` is the leading bit's position plus a fraction corrected by a 129-entry table of
//! `log2(1 + f) - f`; times `ln 2` in Q16 (45426) it gives `ln x`, scaled by `2^6`. The
//! feature is `round(64 ln(x 2^3))` up to the table's interpolation error, saturated at
//! 65535.

use super::filterbank::CHANNELS;
use super::pcan::CORRECTION_BITS;
use neon_runtime::constmath;

/// Table segments (`kLogSegments`, `2^7`).
const SEGMENTS_LOG2: u32 = 7;
/// Fraction bits of the logarithm (`kLogScaleLog2`).
const SCALE_LOG2: u32 = 16;
/// `ln 2` in Q16 (`kLogCoeff`).
const LN2_Q16: u64 = 45426;
/// Output scale shift (`scale_shift`).
const SCALE_SHIFT: u32 = 6;
/// Table length: 129 points and one entry of padding (`kLogLut`).
pub const LOG_LUT_LEN: usize = (1 << SEGMENTS_LOG2) + 2;

/// `round(2^16 (log2(1 + k / 128) - k / 128))` for `k <= 128`, then 0: the values of TFLite
/// Micro's `kLogLut` (pinned entry by entry in `models/tests/mww/frontend.rs`).
pub(super) const fn build_log_lut() -> [u16; LOG_LUT_LEN] {
    let mut lut = [0u16; LOG_LUT_LEN];
    let mut k = 1;
    while k < 1 << SEGMENTS_LOG2 {
        let f = k as f64 / (1 << SEGMENTS_LOG2) as f64;
        let v = (constmath::ln(1.0 + f) / core::f64::consts::LN_2 - f) * (1 << SCALE_LOG2) as f64;
        lut[k] = (v + 0.5) as u16;
        k += 1;
    }
    lut
}

/// `Log2FractionPart`: the Q16 fraction of `log2 x` for `x` with leading bit `log2x`.
fn log2_fraction(x: u32, log2x: u32, lut: &[u16; LOG_LUT_LEN]) -> u32 {
    let mut frac = x.wrapping_sub(1 << log2x) as i32;
    if log2x < SCALE_LOG2 {
        frac <<= SCALE_LOG2 - log2x;
    } else {
        frac >>= log2x - SCALE_LOG2;
    }
    let segment = (frac as u32 >> (SCALE_LOG2 - SEGMENTS_LOG2)) as usize;
    let unit = (1i32 << SCALE_LOG2) >> SEGMENTS_LOG2;
    let c0 = lut[segment] as i32;
    let c1 = lut[segment + 1] as i32;
    let rel = ((c1 - c0) * (frac - unit * segment as i32)) >> SCALE_LOG2;
    (frac + c0 + rel) as u32
}

/// `Log`: `64 ln x` in the integer steps of the C code, for `x > 1`.
fn log(x: u32, lut: &[u16; LOG_LUT_LEN]) -> u32 {
    let integer = 31 - x.leading_zeros();
    let log2 = (integer << SCALE_LOG2).wrapping_add(log2_fraction(x, integer, lut));
    let round = 1u32 << (SCALE_LOG2 - 1);
    let ln = ((LN2_Q16 * log2 as u64 + round as u64) >> SCALE_LOG2) as u32;
    ((ln << SCALE_SHIFT) + round) >> SCALE_LOG2
}

/// `LogScaleApply`: each channel shifted left by the correction bits (wrapping in `u32` as
/// in C), its log ([`log`]) when above 1 else 0, saturated to `u16`.
pub(super) fn apply(lut: &[u16; LOG_LUT_LEN], signal: &[u32; CHANNELS], out: &mut [u16; CHANNELS]) {
    for (o, &s) in out.iter_mut().zip(signal) {
        let v = s.wrapping_shl(CORRECTION_BITS);
        let v = if v > 1 { log(v, lut) } else { 0 };
        *o = v.min(u16::MAX as u32) as u16;
    }
}
