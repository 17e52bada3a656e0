//! Model names and model directories, as wyoming-openwakeword 2.x derives and scans them.
//!
//! - A model's name is its file stem, shortened to the part before `_v` when the whole stem
//!   is `NAME_vVERSION` with `NAME` free of underscores and `VERSION` made of digits and dots
//!   (the regular expression `^([^_]+)_v[0-9.]+$`): `computer_v2` is `computer`, while
//!   `hey_computer_v0.1` keeps its name.
//! - A directory contributes every regular file ending in `.tflite` or `.onnx` (not
//!   recursively); when both `x.tflite` and `x.onnx` are present (openWakeWord's notebook
//!   writes both) only `x.tflite` is loaded.

use alloc::string::{String, ToString};
use alloc::vec::Vec;
use std::path::{Path, PathBuf};

use crate::error::Error;

/// The model-file formats a directory scan picks up, in order of preference for one stem.
pub const EXTENSIONS: [&str; 2] = ["tflite", "onnx"];

/// The name of a model loaded from a file with stem `stem` (see the module docs).
pub fn model_name(stem: &str) -> String {
    if let Some((name, version)) = stem.split_once("_v") {
        let digits = !version.is_empty() && version.chars().all(|c| c.is_ascii_digit() || c == '.');
        if !name.is_empty() && !name.contains('_') && digits {
            return name.to_string();
        }
    }
    stem.to_string()
}

/// The name of the model in file `path`: [`model_name`] of its stem (lossy UTF-8).
pub fn model_name_of(path: &Path) -> String {
    let stem = path.file_stem().map(|s| s.to_string_lossy()).unwrap_or_default();
    model_name(&stem)
}

/// The model files of `dir` (see the module docs), sorted by path.
///
/// # Errors
/// [`Error::Io`] when `dir` cannot be read.
pub fn scan_dir(dir: &Path) -> Result<Vec<PathBuf>, Error> {
    let io = |error| Error::Io { path: dir.to_path_buf(), error };
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(io)? {
        let path = entry.map_err(io)?.path();
        let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
        if !EXTENSIONS.contains(&ext) || !path.is_file() {
            continue;
        }
        files.push(path);
    }
    files.sort();
    // Drop `x.onnx` when `x.tflite` is present.
    let tflite: Vec<PathBuf> = files
        .iter()
        .filter(|p| p.extension().is_some_and(|e| e == "tflite"))
        .map(|p| p.with_extension(""))
        .collect();
    files.retain(|p| {
        !(p.extension().is_some_and(|e| e == "onnx") && tflite.contains(&p.with_extension("")))
    });
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_wyoming_openwakeword() {
        assert_eq!(model_name("computer_v2"), "computer");
        assert_eq!(model_name("alexa_v0.1"), "alexa");
        assert_eq!(model_name("hey_computer_v0.1"), "hey_computer_v0.1");
        assert_eq!(model_name("okay_nabu_v0.1"), "okay_nabu_v0.1");
        assert_eq!(model_name("jarvis_v"), "jarvis_v");
        assert_eq!(model_name("jarvis_v1a"), "jarvis_v1a");
        assert_eq!(model_name("_v1"), "_v1");
        assert_eq!(model_name("plain"), "plain");
        assert_eq!(model_name("x_v1_v2"), "x_v1_v2");
    }

    #[test]
    fn a_directory_prefers_tflite_over_onnx() {
        let dir = std::env::temp_dir().join(alloc::format!("neon-scan-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("sub.onnx")).unwrap();
        for f in ["a.onnx", "a.tflite", "b.onnx", "c.tflite", "d.txt", "e.safetensors"] {
            std::fs::write(dir.join(f), b"x").unwrap();
        }
        let names: Vec<String> = scan_dir(&dir)
            .unwrap()
            .iter()
            .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, ["a.tflite", "b.onnx", "c.tflite"]);
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(matches!(scan_dir(&dir), Err(Error::Io { .. })));
    }
}
