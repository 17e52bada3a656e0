//! Analysis window: a 30 ms Hann window in Q12 over 480 samples at 16 kHz (TFLite Micro
//! `window.cc` / `window_util.cc`, window size 30 ms and step 10 ms as pymicro-features 2.0.2
//! configures them).

use super::tables::{floor_f32, nudge_f32, sin_cos};

/// Window length: 30 ms at 16 kHz, in samples.
pub const WINDOW: usize = 480;
/// Window step (hop): 10 ms at 16 kHz, in samples; one feature frame per step.
pub const STEP: usize = 160;
/// Fraction bits of the window coefficients (`kFrontendWindowBits`).
pub const WINDOW_BITS: u32 = 12;

/// `w[i] = floorf((0.5f - 0.5f cosf(2 pi (i + 0.5) / 480)) 2^12 + 0.5f)` computed as
/// `window_util.cc` does in `f32` (the angle `(f32 pi * 2 / 480) * (i + 0.5)` rounded to
/// `f32`, `cosf` evaluated in `f64` and rounded to `f32`, then moved by `ulps`).
pub(super) const fn build_window(ulps: i32) -> [i16; WINDOW] {
    let arg = core::f32::consts::PI * 2.0 / WINDOW as f32;
    let mut w = [0i16; WINDOW];
    let mut i = 0;
    while i < WINDOW {
        let angle = arg * (i as f32 + 0.5);
        let cos = nudge_f32(sin_cos(angle as f64).1 as f32, ulps);
        let v = 0.5 - 0.5 * cos;
        w[i] = floor_f32(v * (1 << WINDOW_BITS) as f32 + 0.5) as i16;
        i += 1;
    }
    w
}

/// Windows `input` into `output` (`(x * w) >> 12`, truncated to `i16` as the C code stores
/// it) and returns the largest `|output|`. A value of -32768 (only from -32768 at a
/// coefficient of 4096) negates to itself in C's `int16_t` and so never counts as the largest.
pub(super) fn apply(
    coefficients: &[i16; WINDOW],
    input: &[i16; WINDOW],
    output: &mut [i16; WINDOW],
) -> i16 {
    let mut max_abs = 0i16;
    for ((o, &x), &w) in output.iter_mut().zip(input).zip(coefficients) {
        let v = ((x as i32 * w as i32) >> WINDOW_BITS) as i16;
        *o = v;
        max_abs = max_abs.max(if v < 0 { v.wrapping_neg() } else { v });
    }
    max_abs
}
