//! The x86-64 log-polar conversion (`X86<I>`): the portable branch-free `exp`, `sin` and
//! `cos` compiled for the level ([`at_level`]): the same bits, 16 or 8 lanes at a time
//! instead of SSE2's 4 (the iSTFT head of the sanoTTS decoder, 257 pairs a frame,
//! `BENCHMARKS.md`, "Host: sanoTTS decoder (x86-64)"). `sin_cos` runs the portable code.

use crate::kernels::x86_simd::at_level;

at_level! {
    /// [`super::TrigKernels::from_log_polar_unchecked`] at level `I`.
    pub(super) fn from_log_polar(max_log: f32, a: &mut [f32], b: &mut [f32]) {
        super::portable::from_log_polar(max_log, a, b)
    }
}
