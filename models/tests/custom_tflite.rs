//! Community models in TFLite form: `data/custom/computer_v2.tflite` (the custom model of
//! wyoming-openwakeword's own tests; see `data/custom/README.md`) loads through
//! `--model PATH.tflite`'s path and detects its wake word on a real recording; the parser
//! refuses every truncation and seeded corruption with an error, never a panic. An ignored
//! test loads a whole collection of community models (`NEON_COMMUNITY_DIR`).

mod common;

use std::path::PathBuf;

use neon_models::error::WeightsSource;
use neon_models::openwakeword::custom::{self, Format, HeadGraphExt};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use common::custom::{
    assert_prefixes_are_refused, computer_scores, data, parse_and_build, peak, scores,
};

#[test]
fn a_community_tflite_model_detects_its_word() {
    let s = computer_scores("computer_v2.tflite");
    let p = peak(&s);
    assert!(p > 0.9, "computer_v2.tflite peaks at {p} on computer.wav");
    // Silence before the word stays quiet: the first 15 pushes are 1.2 s of zeros.
    assert!(peak(&s[..15]) < 0.1, "fires on silence: {:?}", &s[..15]);
    // The v1 model of the same word (ONNX) fires on the same recording.
    assert!(peak(&scores(data("computer_v1.onnx").to_str().unwrap(), "computer.wav")) > 0.9);
}

#[test]
fn corrupt_tflite_bytes_are_errors_not_panics() {
    let bytes = std::fs::read(data("computer_v2.tflite")).unwrap();
    let source = WeightsSource::Embedded("computer_v2.tflite");
    custom::parse(&bytes, Format::Tflite, &source).unwrap().build(&source).unwrap();
    assert_prefixes_are_refused(&bytes, Format::Tflite, &source, 89);
    // Corrupt the structure (the first and last 4 KiB hold the tables, not the weights).
    let mut rng = SmallRng::seed_from_u64(0x7f1e);
    for round in 0..600 {
        let mut b = bytes.clone();
        for _ in 0..rng.gen_range(1..6) {
            let i = if round % 2 == 0 {
                rng.gen_range(0..4096)
            } else {
                rng.gen_range(b.len() - 4096..b.len())
            };
            b[i] = rng.gen();
        }
        parse_and_build(&b, Format::Tflite, &source);
    }
    for bad in [&b""[..], b"TFL3", b"\x08\0\0\0TFL3\0\0\0\0", b"not a model at all"] {
        assert!(custom::parse(bad, Format::Tflite, &source).is_err());
    }
}

/// Every `.tflite` and `.onnx` file under `NEON_COMMUNITY_DIR` (e.g. a checkout of a
/// community wake-word collection) loads. Not run by default: the collection is not ours
/// to ship. `NEON_COMMUNITY_DIR=DIR cargo test -p neon-models --test custom_tflite -- --ignored`
#[test]
#[ignore]
fn a_community_collection_loads() {
    let dir = PathBuf::from(std::env::var("NEON_COMMUNITY_DIR").expect("NEON_COMMUNITY_DIR"));
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| Format::of(p).is_some())
        .collect();
    files.sort();
    let mut failed = Vec::new();
    for f in &files {
        match custom::wake_word_from_file(f) {
            Ok(w) => {
                println!("ok   {} ({} frames, hidden {:?})", f.display(), w.frames(), w.hidden())
            }
            Err(e) => {
                println!("FAIL {}: {e}", f.display());
                failed.push(f);
            }
        }
    }
    println!("{} of {} files load", files.len() - failed.len(), files.len());
    // Where a model comes in both forms, both describe the same head.
    let source = WeightsSource::Embedded("pair");
    let mut pairs = 0;
    for t in files.iter().filter(|f| Format::of(f) == Some(Format::Tflite)) {
        let o = t.with_extension("onnx");
        let (Ok(a), Ok(b)) = (std::fs::read(t), std::fs::read(&o)) else { continue };
        let a = custom::parse(&a, Format::Tflite, &source).unwrap();
        let b = custom::parse(&b, Format::Onnx, &source).unwrap();
        let d = max_diff(&a.layers, &b.layers);
        println!("pair {}: max |weight diff| {d:e}", t.display());
        assert!(d <= 1e-6, "{} and its .onnx differ by {d}", t.display());
        pairs += 1;
    }
    println!("{pairs} tflite/onnx pairs agree");
    assert!(failed.is_empty(), "{} files failed", failed.len());
}

/// Largest difference between two chains of layers of the same structure (infinite if not).
fn max_diff(a: &[custom::Layer], b: &[custom::Layer]) -> f32 {
    use custom::Layer as L;
    let d = |x: &[f32], y: &[f32]| {
        if x.len() != y.len() {
            return f32::INFINITY;
        }
        x.iter().zip(y).map(|(p, q)| (p - q).abs()).fold(0.0, f32::max)
    };
    let opt = |x: &Option<Vec<f32>>, y: &Option<Vec<f32>>, n: usize, fill: f32| {
        let full = |v: &Option<Vec<f32>>| v.clone().unwrap_or_else(|| vec![fill; n]);
        d(&full(x), &full(y))
    };
    if a.len() != b.len() {
        return f32::INFINITY;
    }
    a.iter()
        .zip(b)
        .map(|(x, y)| match (x, y) {
            (
                L::Dense { weight: w1, bias: b1, out_features: o1, .. },
                L::Dense { weight: w2, bias: b2, .. },
            ) => d(w1, w2).max(opt(b1, b2, *o1, 0.0)),
            (
                L::LayerNorm { features, eps: e1, gamma: g1, beta: b1 },
                L::LayerNorm { eps: e2, gamma: g2, beta: b2, .. },
            ) => (e1 - e2).abs().max(opt(g1, g2, *features, 1.0)).max(opt(b1, b2, *features, 0.0)),
            (L::Relu, L::Relu) | (L::Sigmoid, L::Sigmoid) => 0.0,
            _ => f32::INFINITY,
        })
        .fold(0.0, f32::max)
}
