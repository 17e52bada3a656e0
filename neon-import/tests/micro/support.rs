//! Where the microWakeWord models and goldens are, shared by the modules of
//! neon-import's `micro` test binary (`ops.rs`, `plan.rs`): the 7 models, their reading limits, the
//! clip goldens `models/microwakeword/goldens/<clip>.safetensors` (tools/microwakeword/
//! goldens.py: `input.<model>` `[S, N, 40]` i8 and `output.<model>` `[S]` u8).

use std::path::{Path, PathBuf};

use neon_import::tflite::{parse_stream, StreamGraph};
use neon_import::Limits;

/// The limits the models are read with.
pub const LIMITS: Limits =
    Limits { frame_width: 40, max_frames: 16, max_features: 1 << 20, max_layers: 512 };

/// The 7 models: (name, directory under `models/`).
pub const MODELS: [(&str, &str); 7] = [
    ("alexa", "microwakeword"),
    ("hey_jarvis", "microwakeword"),
    ("hey_mycroft", "microwakeword"),
    ("okay_nabu", "microwakeword"),
    ("choo_choo_homie", "tests/data/microwakeword/wakewords"),
    ("hey_home_assistant", "tests/data/microwakeword/wakewords"),
    ("okay_computer", "tests/data/microwakeword/wakewords"),
];

/// The workspace's `models/` directory.
pub fn models_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../models")
}

/// The bytes of `path` (panics naming it).
pub fn read(path: &Path) -> Vec<u8> {
    std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The `.tflite` bytes of model `name` in `dir`.
pub fn model_bytes(name: &str, dir: &str) -> Vec<u8> {
    read(&models_dir().join(dir).join(format!("{name}.tflite")))
}

/// Model `name` in `dir` as a [`StreamGraph`].
pub fn graph(name: &str, dir: &str) -> StreamGraph {
    parse_stream(&model_bytes(name, dir), &LIMITS).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// The clip goldens' directory.
pub fn goldens_dir() -> PathBuf {
    models_dir().join("microwakeword/goldens")
}

/// The clip golden files (not the per-op `ops_*` or the `crafted_*` ones), sorted.
pub fn clip_files() -> Vec<String> {
    let mut clips: Vec<_> = std::fs::read_dir(goldens_dir())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|f| {
            f.ends_with(".safetensors") && !f.starts_with("ops_") && !f.starts_with("crafted_")
        })
        .collect();
    clips.sort();
    clips
}

/// Bytes as i8 values.
pub fn as_i8(bytes: &[u8]) -> Vec<i8> {
    bytes.iter().map(|&b| b as i8).collect()
}
