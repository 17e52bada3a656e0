//! The reference workloads of Moonshine base-en, shared by the benchmarks (`benches/`: the
//! criterion bench, `time_moonshine`, `insn_moonshine` and the aarch64 peers) and
//! `neon bench`, so that every figure of the encoder and of the decoder step measures the
//! same call: beckett.wav's greedy tokens (the utterance every step benchmark decodes), the
//! decoder position measured, the short encoder clip.

use super::transcriber::Transcriber;

/// beckett.wav's greedy tokens, BOS ... EOS (ONNX Runtime's and ours:
/// `models/moonshine/goldens/beckett.json`).
pub const BECKETT_TOKENS: [u32; 16] =
    [1, 18274, 1898, 3926, 5229, 29892, 694, 4383, 1018, 1449, 4418, 1449, 4418, 2253, 29889, 2];

/// Samples of beckett.wav (9.96 s at 16 kHz).
pub const BECKETT_SAMPLES: usize = 159_414;

/// Encoder frames of beckett.wav ([`super::encoder_frames`] of [`BECKETT_SAMPLES`]).
pub const BECKETT_FRAMES: usize = 413;

const _: () = assert!(super::encoder_frames(BECKETT_SAMPLES) == BECKETT_FRAMES);

/// The decoder position every step benchmark measures: the step fed the 8th token of
/// beckett's greedy sequence (`BECKETT_TOKENS[7]`), with 7 tokens already in the
/// self-attention cache, so it attends to 8 cached keys and to the 413 encoder frames.
pub const STEP_POSITION: usize = 7;

/// Samples of the short encoder clip (2 s at 16 kHz: 82 encoder frames).
pub const SHORT_SAMPLES: usize = 32_000;

const _: () = assert!(super::encoder_frames(SHORT_SAMPLES) == 82);

/// Restarts decoding the encoded segment and feeds `BECKETT_TOKENS[..position]`, so that the
/// next `decode_step(BECKETT_TOKENS[position])` runs at `position`.
///
/// # Panics
/// If nothing is encoded or `position >= 16`.
pub fn prefill(t: &mut Transcriber, position: usize) {
    prefill_in(t, &neon_runtime::Serial, position);
}

/// [`prefill`] with the steps on `par` (so a team's members are as busy before the timed
/// step as in a decoding loop).
///
/// # Panics
/// As [`prefill`].
pub fn prefill_in(t: &mut Transcriber, par: &dyn neon_runtime::Parallel, position: usize) {
    t.restart();
    for &token in &BECKETT_TOKENS[..position] {
        t.decode_step_in(par, token).expect("decoder step");
    }
}
