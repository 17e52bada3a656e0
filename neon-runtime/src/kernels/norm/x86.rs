//! The x86-64 channel-first LayerNorm blocks (`X86<I>`): the portable blocks of 16, 4 and 1
//! frames compiled for the level ([`at_level`]): the same bits, one frame a lane of the
//! level's registers (the sanoTTS decoder's six LayerNorms, `BENCHMARKS.md`, "Host: sanoTTS
//! decoder (x86-64)"). Every other hook runs the portable code.

use super::{FrameBlock, NormParams};
use crate::kernels::x86_simd::at_level;

at_level! {
    /// [`super::NormKernels::layer_norm_frames`] at level `I`.
    pub(super) fn layer_norm_frames<const W: usize>(
        b: FrameBlock,
        x: &[f32],
        p: NormParams<'_>,
        y: &mut [f32],
    ) {
        super::portable::layer_norm_frames::<W>(b, x, p, y)
    }
}
