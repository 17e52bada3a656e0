//! Moonshine test helpers: the converted model (`tools/moonshine/fetch.sh` writes it; CI
//! runs that first) and the ONNX Runtime goldens.

use std::path::PathBuf;

use neon_models::error::WeightsSource;
use std::sync::{Arc, OnceLock};

use neon_models::moonshine::transcriber::{MoonshineModel, Transcriber};
use neon_models::weights::TensorFile;
use neon_runtime::Backend;

/// `models/moonshine`, after checking the converted weights are there.
pub fn model_dir() -> PathBuf {
    let dir = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../models")).join("moonshine");
    let weights = dir.join("base-en.safetensors");
    assert!(
        weights.is_file(),
        "{} is missing: run tools/moonshine/fetch.sh (downloads and converts the official \
         model; scripts/test.sh does it)",
        weights.display()
    );
    dir
}

/// The converted model, loaded once per test binary and shared.
pub fn model() -> Arc<MoonshineModel> {
    static MODEL: OnceLock<Arc<MoonshineModel>> = OnceLock::new();
    MODEL.get_or_init(|| MoonshineModel::open(&model_dir()).unwrap()).clone()
}

/// A transcriber on backend `B` over the shared converted model.
pub fn transcriber<B: Backend>() -> Transcriber {
    Transcriber::on::<B>(model()).unwrap()
}

/// The converted weights file, parsed (its bytes leak for the test run).
pub fn weights_file() -> TensorFile<'static> {
    let path = model_dir().join("base-en.safetensors");
    let bytes = std::fs::read(&path).unwrap();
    TensorFile::parse(Box::leak(bytes.into_boxed_slice()), WeightsSource::File(path)).unwrap()
}

/// One clip's ONNX Runtime goldens (`goldens/<clip>.safetensors`, written by
/// `tools/moonshine/goldens.py`).
pub struct Golden {
    pub name: String,
    /// The samples ONNX Runtime was fed (16 kHz, `[-1, 1]`).
    pub audio: Vec<f32>,
    /// Encoder output, frame-major `[frames, 416]`.
    pub encoder: Vec<f32>,
    pub frames: usize,
    /// Every token: BOS, generated ids, EOS.
    pub tokens: Vec<u32>,
    /// Logits `[steps, 32768]`: step `s` was fed `tokens[..=s]`.
    pub logits: Vec<f32>,
    /// Per step: top-1 minus top-2 logit.
    pub top2_gap: Vec<f32>,
    /// The transcript.
    pub text: String,
}

fn f32s(st: &safetensors::SafeTensors<'_>, name: &str) -> (Vec<f32>, Vec<usize>) {
    let v = st.tensor(name).unwrap_or_else(|_| panic!("golden tensor {name} missing"));
    assert_eq!(v.dtype(), safetensors::Dtype::F32, "{name}");
    let data = v.data().chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]));
    (data.collect(), v.shape().to_vec())
}

/// Every golden clip, sorted by name.
pub fn goldens() -> Vec<Golden> {
    let dir = model_dir().join("goldens");
    super::files_with_extension(&dir, "safetensors", "goldens").iter().map(|p| golden(p)).collect()
}

fn golden(path: &std::path::Path) -> Golden {
    let bytes = std::fs::read(path).unwrap();
    let st = safetensors::SafeTensors::deserialize(&bytes).unwrap();
    let (_, meta) = safetensors::SafeTensors::read_metadata(&bytes).unwrap();
    let text = meta.metadata().as_ref().and_then(|m| m.get("text").cloned()).expect("text");
    let (encoder, shape) = f32s(&st, "encoder");
    let t = st.tensor("tokens").unwrap();
    assert_eq!(t.dtype(), safetensors::Dtype::I32);
    let tokens =
        t.data().chunks_exact(4).map(|b| i32::from_le_bytes([b[0], b[1], b[2], b[3]]) as u32);
    Golden {
        name: path.file_stem().unwrap().to_string_lossy().into_owned(),
        audio: f32s(&st, "audio").0,
        encoder,
        frames: shape[0],
        tokens: tokens.collect(),
        logits: f32s(&st, "logits").0,
        top2_gap: f32s(&st, "top2_gap").0,
        text,
    }
}

/// Largest absolute difference.
pub fn max_diff(a: &[f32], b: &[f32]) -> f32 {
    assert_eq!(a.len(), b.len());
    a.iter().zip(b).map(|(x, y)| (x - y).abs()).fold(0.0, f32::max)
}
