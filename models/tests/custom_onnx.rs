//! A real community model in ONNX form (`data/custom/computer_v1.onnx`, exported by tf2onnx
//! from a model trained with openWakeWord's notebook; see `data/custom/README.md`) loads
//! through `--model PATH.onnx`'s path, detects its wake word on a real recording, and the
//! parser refuses every truncation and seeded byte corruption of it with an error, never a
//! panic. Test heads in each LayerNorm form and unusual shapes
//! (`data/custom/onnx_heads/`, `tools/openwakeword/onnx_heads.py`) score as openwakeword
//! 0.6.0 scores them.

mod common;

use neon_audio::Audio;
use neon_models::error::WeightsSource;
use neon_models::openwakeword::builtin;
use neon_models::openwakeword::custom::{self, Format, HeadGraphExt};
use neon_models::openwakeword::detector::WakeDetectorOn;
use neon_models::openwakeword::stream::CHUNK;
use neon_models::weights::TensorFile;
use neon_runtime::Portable;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use common::custom::{assert_prefixes_are_refused, computer_scores, data, parse_and_build, scores};

/// The peak score of `word_path` over the padded recording `wav`.
fn peak(word_path: &str, wav: &str) -> f32 {
    common::custom::peak(&scores(word_path, wav))
}

#[test]
fn a_community_onnx_model_detects_its_word() {
    let p = common::custom::peak(&computer_scores("computer_v1.onnx"));
    assert!(p > 0.9, "computer_v1.onnx peaks at {p} on computer.wav");
    // The official heads stay quiet on it.
    for (name, _) in builtin::HEADS {
        let q = peak(name, "computer.wav");
        assert!(q < 0.5, "{name} peaks at {q} on computer.wav");
    }
}

/// The five test heads of `onnx_heads.py` (LayerNormalization op; torch's and TF's
/// decomposed forms, the latter with three hidden layers; no LayerNorm on 28 frames; a plain
/// LayerNorm on 1 frame; hidden 16 to 96) in one detector, on two clips padded as
/// `predict_clip` pads them, 1280-sample pushes from the goldens' initial features: every
/// per-call score within 1e-5 of openwakeword 0.6.0's own (its ONNX path, ONNX frontends) and
/// of ONNX Runtime running the head on the TFLite pipeline's features. The tool measured the
/// two references 1.6e-6 apart at most (the ONNX and TFLite frontends differ that little),
/// so 1e-5 is the tolerance with room for f32 rounding of the heads.
#[test]
fn test_heads_score_as_openwakeword_scores_them() {
    let dir = data("onnx_heads");
    let names = ["ln_op", "ln_torch", "ln_tf", "no_ln", "ln_plain"];
    let words: Vec<_> = names
        .iter()
        .map(|n| custom::wake_word_from_file(&dir.join(format!("{n}.onnx"))).unwrap())
        .collect();
    let frames: Vec<usize> = words.iter().map(|w| w.frames()).collect();
    assert_eq!(frames, [16, 16, 8, 28, 1]);
    let embedding = common::oww_file("embedding.safetensors");
    let mut d = WakeDetectorOn::<Portable>::with_embedding(&embedding, words).unwrap();
    let init = common::tensor(&common::oww_file("goldens/init.safetensors"), "init_features").0;
    d.stream_mut().set_initial_features(&init).unwrap();
    let goldens = std::fs::read(dir.join("goldens.safetensors")).unwrap();
    let goldens = TensorFile::parse(&goldens, WeightsSource::Embedded("goldens")).unwrap();
    for clip in ["hey_jarvis", "weather"] {
        d.reset();
        let mut audio = vec![0i16; 16_000];
        let wav = common::oww_path(&format!("clips/{clip}.wav"));
        audio.extend(Audio::open(wav).unwrap().to_i16());
        audio.extend(vec![0i16; 16_000]);
        let calls = (audio.len() - CHUNK).div_ceil(CHUNK);
        let got: Vec<Vec<f32>> =
            audio.chunks(CHUNK).take(calls).map(|c| d.push(c).unwrap().to_vec()).collect();
        for (h, name) in names.iter().enumerate() {
            for reference in ["oww", "ort"] {
                let want = common::tensor(&goldens, &format!("{clip}.{reference}.{name}")).0;
                assert_eq!(want.len(), calls, "{clip} {name}");
                let worst =
                    got.iter().zip(&want).map(|(g, w)| (g[h] - w).abs()).fold(0.0, f32::max);
                assert!(worst <= 1e-5, "{clip} {name} vs {reference}: max |diff| {worst:e}");
                println!("{clip} {name} vs {reference}: max |score diff| {worst:.2e}");
            }
        }
    }
}

#[test]
fn corrupt_onnx_bytes_are_errors_not_panics() {
    let bytes = std::fs::read(data("computer_v1.onnx")).unwrap();
    let source = WeightsSource::Embedded("computer_v1.onnx");
    let graph = custom::parse(&bytes, Format::Onnx, &source).unwrap();
    graph.build(&source).unwrap();
    assert_prefixes_are_refused(&bytes, Format::Onnx, &source, 97);
    let mut rng = SmallRng::seed_from_u64(0x0111);
    for _ in 0..300 {
        let mut b = bytes.clone();
        for _ in 0..rng.gen_range(1..8) {
            let i = rng.gen_range(0..b.len());
            b[i] = rng.gen();
        }
        // Either a clean error or a graph that validates and builds (a flipped weight).
        parse_and_build(&b, Format::Onnx, &source);
    }
    assert!(custom::parse(b"not a model", Format::Onnx, &source).is_err());
    assert!(custom::parse(&[], Format::Tflite, &source).is_err());
}
