//! Moonshine's encoder with its int8 GEMMs on the int8-activation path
//! (`moonshine_asr.encoder_int8=dot`, `Transcriber::set_encoder_path(QuantPath::Dot)`:
//! `sdot` on aarch64 CPUs with dotprod, the portable evaluation of the same arithmetic
//! elsewhere) against the default widening path: on every ONNX Runtime golden clip the
//! same tokens as ONNX Runtime, and on the speech clips of `models/speech/clips` (real
//! recordings) the tokens of each path are printed with the encoder output's relative RMS
//! difference and their agreement (an ignored test: a measurement). Only the goldens are
//! asserted: the corpus decides
//! whether the path may become a default (BENCHMARKS.md, "Moonshine encoder on the
//! int8-activation path").
//!
//! Under qemu (aarch64) only the goldens up to 3 s run (one clip, about a minute), which
//! is enough to exercise the `sdot` GEMM on real activations.

mod common;

use std::path::PathBuf;

use common::moonshine::*;
use neon_models::moonshine::transcriber::Transcriber;
use neon_runtime::ops::quant::QuantPath;
use neon_runtime::Backend;

/// Clips longer than this are skipped on aarch64 (qemu), as in `moonshine_golden.rs`.
const AARCH64_MAX_SECONDS: f32 = 3.0;

/// Relative RMS difference `|a - b| / |b|`.
fn rel_rms(a: &[f32], b: &[f32]) -> f64 {
    let d: f64 = a.iter().zip(b).map(|(&x, &y)| (x as f64 - y as f64).powi(2)).sum();
    let n: f64 = b.iter().map(|&y| (y as f64).powi(2)).sum();
    (d / n).sqrt()
}

/// One clip on both encoder paths: tokens and encoder output of each.
struct Paths {
    wide: Vec<u32>,
    dot: Vec<u32>,
    enc_wide: Vec<f32>,
    enc_dot: Vec<f32>,
}

/// Transcribes `audio` on the widening, then the dot encoder path.
fn both_paths(t: &mut Transcriber, audio: &[f32]) -> Paths {
    let mut run = |path| {
        t.set_encoder_path(path);
        let tokens = t.transcribe(audio).unwrap().tokens;
        (tokens, t.encoder_output().to_vec())
    };
    let ((wide, enc_wide), (dot, enc_dot)) = (run(QuantPath::Widening), run(QuantPath::Dot));
    t.set_encoder_path(QuantPath::Widening);
    Paths { wide, dot, enc_wide, enc_dot }
}

#[test]
fn encoder_dot_path_keeps_the_golden_tokens() {
    on_best_backend!(encoder_dot_path);
}

fn encoder_dot_path<B: Backend>() {
    let mut t = transcriber::<B>();
    let mut ran = 0;
    for g in goldens() {
        if cfg!(target_arch = "aarch64") && g.audio.len() as f32 > AARCH64_MAX_SECONDS * 16e3 {
            continue;
        }
        let p = both_paths(&mut t, &g.audio);
        println!(
            "golden {}: encoder rel rms: dot vs widening {:.2e}, dot vs ORT {:.2e}, widening \
             vs ORT {:.2e}; tokens {}",
            g.name,
            rel_rms(&p.enc_dot, &p.enc_wide),
            rel_rms(&p.enc_dot, &g.encoder),
            rel_rms(&p.enc_wide, &g.encoder),
            if p.dot == p.wide { "identical" } else { "differ" }
        );
        assert_eq!(p.wide, g.tokens, "{}: widening tokens", g.name);
        assert_eq!(p.dot, g.tokens, "{}: dot tokens", g.name);
        ran += 1;
    }
    assert!(ran > 0);
}

/// The speech clips on both paths, printed (nothing asserted; several minutes, so not part
/// of the default run): `cargo test --release -p neon-models --test moonshine_encoder_dot
/// -- --ignored --nocapture`.
#[test]
#[ignore = "measurement: prints token agreement on models/speech/clips"]
fn encoder_dot_path_on_speech_clips() {
    on_best_backend!(speech_clips);
}

fn speech_clips<B: Backend>() {
    let mut t = transcriber::<B>();
    let dir = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../models/speech/clips"));
    let (mut same, mut clips, mut tokens, mut agree) = (0, 0, 0, 0);
    for path in common::files_with_extension(&dir, "wav", "speech clips") {
        let audio = neon_audio::Audio::open(&path).unwrap().samples;
        let p = both_paths(&mut t, &audio);
        let n = p.wide.len().max(p.dot.len());
        let matching = p.wide.iter().zip(&p.dot).filter(|(a, b)| a == b).count();
        println!(
            "clip {}: encoder rel rms dot vs widening {:.2e}; tokens {matching}/{n} agree{}",
            path.file_stem().unwrap().to_string_lossy(),
            rel_rms(&p.enc_dot, &p.enc_wide),
            if p.wide == p.dot { ", identical" } else { "" }
        );
        (clips, tokens, agree) = (clips + 1, tokens + n, agree + matching);
        same += usize::from(p.wide == p.dot);
    }
    println!(
        "speech clips: {same} of {clips} identical transcripts, {agree} of {tokens} tokens at \
         the same position agree"
    );
}
