//! The community-model tests' helpers (custom_onnx, custom_tflite): their data, a head's
//! scores on a recording, and the parser's answer to truncated and corrupted files.

use std::path::PathBuf;

use neon_audio::Audio;
use neon_models::error::WeightsSource;
use neon_models::openwakeword::builtin;
use neon_models::openwakeword::custom::{self, Format, HeadGraphExt};
use neon_models::openwakeword::detector::WakeDetectorOn;
use neon_models::openwakeword::stream::CHUNK;
use neon_models::weights::TensorFile;
use neon_runtime::Portable;

/// `models/tests/data/custom/<name>`.
pub fn data(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/custom").join(name)
}

/// Scores of `word_path` on every 1280-sample push of the recording `wav` (of
/// `tests/data/custom`) with 1 s of silence before and after it.
pub fn scores(word_path: &str, wav: &str) -> Vec<f32> {
    let word = builtin::wake_word(word_path).unwrap();
    let embedding = TensorFile::parse(builtin::EMBEDDING, WeightsSource::Embedded("e")).unwrap();
    let mut d = WakeDetectorOn::<Portable>::with_embedding(&embedding, vec![word]).unwrap();
    let mut audio = vec![0i16; 16_000];
    audio.extend(Audio::open(data(wav)).unwrap().to_i16());
    audio.extend(vec![0i16; 16_000]);
    audio.chunks(CHUNK).map(|c| d.push(c).unwrap()[0]).collect()
}

/// Scores of the community "computer" model `file` (of `tests/data/custom`) on
/// computer.wav, as [`scores`], after checking that it loads named as wyoming-openwakeword
/// names it, on 16 frames.
pub fn computer_scores(file: &str) -> Vec<f32> {
    let path = data(file);
    let word = custom::wake_word_from_file(&path).unwrap();
    assert_eq!(word.name(), "computer", "named as wyoming-openwakeword names it");
    assert_eq!(word.frames(), 16);
    scores(path.to_str().unwrap(), "computer.wav")
}

/// The highest of `scores` (0 for none).
pub fn peak(scores: &[f32]) -> f32 {
    scores.iter().copied().fold(0.0, f32::max)
}

/// Asserts that the prefixes of `bytes` (a whole model file) `step` bytes apart, from the
/// empty one, are each refused with a one-line error.
pub fn assert_prefixes_are_refused(
    bytes: &[u8],
    format: Format,
    source: &WeightsSource,
    step: usize,
) {
    for end in (0..bytes.len()).step_by(step) {
        let r = custom::parse(&bytes[..end], format, source);
        assert!(r.is_err(), "a {end}-byte prefix parsed");
        let m = r.unwrap_err().to_string();
        assert!(!m.contains('\n'), "one line: {m}");
    }
}

/// Parses `bytes` (a corrupted model file) and builds the graph when it parses: either may
/// fail with an error, neither may panic.
pub fn parse_and_build(bytes: &[u8], format: Format, source: &WeightsSource) {
    if let Ok(g) = custom::parse(bytes, format, source) {
        let _ = g.build(source);
    }
}
