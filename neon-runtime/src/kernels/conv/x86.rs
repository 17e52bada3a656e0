//! The x86-64 depthwise row (`X86<I>`): the portable row compiled for the level
//! ([`at_level`]): the same bits, its blocks of 32 and 8 outputs in 16- or 8-lane registers
//! instead of SSE2's 4 (the ConvNeXt blocks of the sanoTTS decoder, `BENCHMARKS.md`, "Host:
//! sanoTTS decoder (x86-64)"). The im2col hooks run the portable code.

use super::Window1d;
use crate::kernels::x86_simd::at_level;

at_level! {
    /// [`super::ConvKernels::depthwise_row_unchecked`] at level `I`.
    pub(super) fn depthwise_row(w: &Window1d, xr: &[f32], wr: &[f32], b: f32, yr: &mut [f32]) {
        super::portable::depthwise_row(w, xr, wr, b, yr)
    }
}
