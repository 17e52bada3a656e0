//! sanoTTS for the benchmarks: the built-in synthetic voice (seed 0x5A70), the test hidden
//! states and the workloads' FLOPs.
//!
//! Used by the criterion bench `benches/sanotts.rs` and the aarch64 instruction-count binary
//! `insn_sanotts`. `neon-models` needs only its `synthetic` feature (no file, no `std` CLI
//! dependencies).

use std::sync::Arc;

use neon_models::sanotts::load::VoiceWeights;
use neon_models::sanotts::synthetic::prepared_voice;
use neon_models::sanotts::{EXPANDED, FRAME_VALUES, HIDDEN, KERNEL, MEL, WIDTH};

/// Frames of one second of audio (125; `neon bench` times the same).
pub use neon_models::sanotts::synthetic::SECOND_FRAMES as SECOND;

/// Multiply-adds of the decoder network per frame, as the plan computes them: projection
/// 80 x 192, input conv 128 x 80 x 7, residual convs 2 x 128 x 128 x 3, per ConvNeXt
/// block depthwise 128 x 7 and pointwise 2 x 128 x 384, head 514 x 128: 647,936. The iSTFT
/// (an inverse FFT of 512 per frame) and the norms and activations count no FLOPs here.
pub const MACS_PER_FRAME: usize = MEL * HIDDEN
    + WIDTH * MEL * KERNEL
    + 2 * WIDTH * WIDTH * 3
    + 4 * (WIDTH * 7 + 2 * WIDTH * EXPANDED)
    + FRAME_VALUES * WIDTH;

const _: () = assert!(MACS_PER_FRAME == 647_936);

/// The built-in synthetic voice, prepared (speaker folded, packed).
pub fn weights() -> Arc<VoiceWeights> {
    prepared_voice().expect("the synthetic voice is finite and prepares")
}

/// Columns `from..to` of `hidden` `[192, t]` as their own `[192, to - from]`.
pub fn columns(hidden: &[f32], t: usize, from: usize, to: usize) -> Vec<f32> {
    hidden.chunks_exact(t).flat_map(|row| row[from..to].iter().copied()).collect()
}

/// `hidden` `[192, t]` cut into pushes of `chunk` frames (the last may be shorter).
pub fn chunks(hidden: &[f32], t: usize, chunk: usize) -> Vec<(Vec<f32>, usize)> {
    (0..t)
        .step_by(chunk)
        .map(|f| {
            let to = (f + chunk).min(t);
            (columns(hidden, t, f, to), to - f)
        })
        .collect()
}
