//! Moonshine end to end against ONNX Runtime on the shipped int8 model (goldens from
//! `tools/moonshine/goldens.py`): our espeak-ng clips and the package's beckett.wav give the
//! same tokens and text; the encoder output is within 5e-4 and every teacher-forced step's
//! logits within 1e-3 (the tolerances: ONNX Runtime dequantises each weight to f32
//! and multiplies in f32, we compute `scale * (x . q) + offset * sum(x)`; both are f32 sums
//! in different orders, measured differences are printed).

mod common;

use common::moonshine::*;
use neon_models::moonshine::transcriber::argmax;
use neon_models::moonshine::VOCAB;
use neon_models::FastBackend;

/// Clips longer than this are skipped on aarch64: under qemu the four clips take 7 minutes,
/// the two shortest (with the same checks) about a minute.
const AARCH64_MAX_SECONDS: f32 = 4.0;

#[test]
fn transcripts_encoder_and_logits_match_onnx_runtime() {
    let mut t = transcriber::<FastBackend>();
    for g in goldens() {
        if cfg!(target_arch = "aarch64") && g.audio.len() as f32 > AARCH64_MAX_SECONDS * 16e3 {
            println!("{}: skipped under aarch64 (longer than {AARCH64_MAX_SECONDS} s)", g.name);
            continue;
        }
        let got = t.transcribe(&g.audio).unwrap();
        assert_eq!(got.tokens, g.tokens, "{}: tokens", g.name);
        assert_eq!(got.text, g.text, "{}: text", g.name);

        // Teacher forcing on the golden tokens, from a fresh encode.
        let frames = t.encode(&g.audio).unwrap();
        assert_eq!(frames, g.frames, "{}: frames", g.name);
        let enc = max_diff(t.encoder_output(), &g.encoder);
        assert!(enc <= 5e-4, "{}: encoder differs by {enc}", g.name);
        let mut worst = 0.0f32;
        for (s, want) in g.logits.chunks_exact(VOCAB).enumerate() {
            let logits = t.decode_step(g.tokens[s]).unwrap();
            let d = max_diff(logits, want);
            assert!(d <= 1e-3, "{}: step {s} logits differ by {d}", g.name);
            assert_eq!(argmax(logits), g.tokens[s + 1], "{}: step {s}", g.name);
            worst = worst.max(d);
        }
        println!("{}: {:?} encoder {enc:.2e}, logits {worst:.2e}", g.name, g.text);
    }
}
