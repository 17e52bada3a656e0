//! Moonshine end to end against ONNX Runtime on the shipped int8 model (goldens from
//! `tools/moonshine/goldens.py`): our espeak-ng clips and the package's beckett.wav give the
//! same tokens and text; the encoder output is within 5e-4 and every teacher-forced step's
//! logits within 1e-3 (the tolerances: ONNX Runtime dequantises each weight to f32
//! and multiplies in f32, as our GEMM does, while our GEMVs compute
//! `scale * (x . q) + offset * sum(x)`; all are f32 sums in different orders, measured
//! differences are printed).

mod common;

use common::moonshine::*;
use neon_models::moonshine::transcriber::{argmax, Transcriber};
use neon_models::moonshine::{D_MODEL, VOCAB};
use neon_runtime::ops::quant::QuantPath;
use neon_runtime::Backend;

/// Tolerance of the `dot` path's logits. Quantising a GEMV's activations to int8 per block
/// of 32 moves each output by at most `|scale| sum_b d_b / 2 sum |q|` (`d_b = max|x| / 127`
/// per block; bound checked per kernel in `neon-runtime/tests/quant.rs`), about 0.4% of the
/// output's RMS on Moonshine's shapes. A token passes through 73 such GEMVs (9 per layer and
/// the LM head) whose errors partly cancel and are renormalised by the LayerNorms; on logits
/// spanning about +-20 the measured worst difference from ONNX Runtime over every step of
/// the four clips is 0.31. 0.5 keeps 1.6x headroom over that; it is not a bound.
const DOT_TOLERANCE: f32 = 0.5;

/// Clips longer than this are skipped on aarch64: under qemu the four clips take 7 minutes,
/// the shortest (open_the_door, 2.1 s; with the same checks) about a minute.
const AARCH64_MAX_SECONDS: f32 = 3.0;

/// Whether `g` is too long to run here (under qemu).
fn skipped_here(g: &Golden) -> bool {
    cfg!(target_arch = "aarch64") && g.audio.len() as f32 > AARCH64_MAX_SECONDS * 16e3
}

/// On the backend the `neon` program picks (`BackendKind::best()`). Per clip one encode
/// serves every check: the transcript's, then the encoder output and both decoder paths
/// teacher-forced from the first token again ([`Transcriber::restart`]): one encode per clip
/// where a fresh one for each teacher-forced path made three (under qemu in CI this
/// executable took 96 s).
#[test]
fn transcripts_encoder_and_logits_match_onnx_runtime() {
    on_best_backend!(transcripts_encoder_and_logits);
}

fn transcripts_encoder_and_logits<B: Backend>() {
    let mut t = transcriber::<B>();
    let mut dot = DotPath::default();
    for g in goldens() {
        if skipped_here(&g) {
            println!("{}: skipped under aarch64 (longer than {AARCH64_MAX_SECONDS} s)", g.name);
            continue;
        }
        let got = t.transcribe(&g.audio).unwrap();
        assert_eq!(got.tokens, g.tokens, "{}: tokens", g.name);
        assert_eq!(got.text, g.text, "{}: text", g.name);

        // The transcript's encode: its output, then teacher forcing on the golden tokens.
        assert_eq!(t.encoder_output().len(), g.frames * D_MODEL, "{}: frames", g.name);
        let enc = max_diff(t.encoder_output(), &g.encoder);
        assert!(enc <= 5e-4, "{}: encoder differs by {enc}", g.name);
        t.restart();
        let mut worst = 0.0f32;
        for (s, want) in g.logits.chunks_exact(VOCAB).enumerate() {
            let logits = t.decode_step(g.tokens[s]).unwrap();
            let d = max_diff(logits, want);
            assert!(d <= 1e-3, "{}: step {s} logits differ by {d}", g.name);
            assert_eq!(argmax(logits), g.tokens[s + 1], "{}: step {s}", g.name);
            worst = worst.max(d);
        }
        println!("{}: {:?} encoder {enc:.2e}, logits {worst:.2e}", g.name, g.text);

        t.set_decoder_path(QuantPath::Dot);
        t.restart();
        dot.check(&mut t, &g);
        t.set_decoder_path(QuantPath::Widening);
    }
    println!(
        "dot path: logits within {:.3e} of ONNX Runtime; top token checked at {} of {} steps \
         (top-2 gap > {})",
        dot.worst,
        dot.checked,
        dot.steps,
        10.0 * DOT_TOLERANCE
    );
    assert!(dot.checked > 0);
}

/// The decoder on the int8-activation path (`QuantPath::Dot`: `sdot` on aarch64 CPUs with
/// dotprod, the same arithmetic in portable code elsewhere), teacher-forced on the golden
/// tokens: logits within `DOT_TOLERANCE` of ONNX Runtime's, and the same top token at every
/// step whose golden top-2 gap exceeds ten times that. Sums over the clips.
#[derive(Default)]
struct DotPath {
    /// Largest logit difference from ONNX Runtime.
    worst: f32,
    /// Steps whose top token was checked.
    checked: usize,
    /// Steps fed.
    steps: usize,
}

impl DotPath {
    /// Feeds `g`'s tokens to `t` (encoded, at its first position, on the dot path).
    fn check(&mut self, t: &mut Transcriber, g: &Golden) {
        self.steps += g.top2_gap.len();
        for (s, want) in g.logits.chunks_exact(VOCAB).enumerate() {
            let logits = t.decode_step(g.tokens[s]).unwrap();
            let d = max_diff(logits, want);
            self.worst = self.worst.max(d);
            assert!(d <= DOT_TOLERANCE, "{}: step {s} logits differ by {d}", g.name);
            if g.top2_gap[s] > 10.0 * DOT_TOLERANCE {
                self.checked += 1;
                assert_eq!(argmax(logits), g.tokens[s + 1], "{}: step {s}", g.name);
            }
        }
    }
}
