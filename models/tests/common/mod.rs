//! Shared helpers for the model tests: committed goldens and weights.
#![allow(dead_code)]

use std::path::PathBuf;

use neon_models::error::WeightsSource;
use neon_models::weights::TensorFile;

/// The files of `dir` named `*.<ext>`, sorted; panics when there are none (`no <what> in
/// <dir>`) or the folder cannot be read.
pub fn files_with_extension(dir: &std::path::Path, ext: &str, what: &str) -> Vec<PathBuf> {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == ext))
        .collect();
    paths.sort();
    assert!(!paths.is_empty(), "no {what} in {}", dir.display());
    paths
}

/// `models/openwakeword/<rel>`.
pub fn oww_path(rel: &str) -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../models")).join("openwakeword").join(rel)
}

/// A committed safetensors file, parsed (its bytes live for the whole test run).
pub fn oww_file(rel: &str) -> TensorFile<'static> {
    let path = oww_path(rel);
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    TensorFile::parse(Box::leak(bytes.into_boxed_slice()), WeightsSource::File(path)).unwrap()
}

/// An f32 tensor of any shape: (values, shape).
pub fn tensor(f: &TensorFile<'_>, name: &str) -> (Vec<f32>, Vec<usize>) {
    let shape = f.shape(name).unwrap_or_else(|| panic!("golden tensor {name} missing"));
    let name: &'static str = Box::leak(name.to_string().into_boxed_str());
    (f.f32(name, &shape).unwrap(), shape)
}

/// The i32 tensor `name` (e.g. `mix_sizes`).
pub fn tensor_i32(path: &str, name: &str) -> Vec<i32> {
    let bytes = std::fs::read(oww_path(path)).unwrap();
    let st = safetensors::SafeTensors::deserialize(&bytes).unwrap();
    let v = st.tensor(name).unwrap();
    assert_eq!(v.dtype(), safetensors::Dtype::I32);
    v.data().chunks_exact(4).map(|b| i32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect()
}

/// A WAV format: `bits`-bit integer or (with `float`) 32-bit float samples.
pub fn wav_spec(rate: u32, channels: u16, bits: u16, float: bool) -> hound::WavSpec {
    let sample_format = if float { hound::SampleFormat::Float } else { hound::SampleFormat::Int };
    hound::WavSpec { channels, sample_rate: rate, bits_per_sample: bits, sample_format }
}

/// Every clip with goldens.
pub const CLIPS: [&str; 6] =
    ["hey_jarvis", "alexa", "hey_mycroft", "hey_rhasspy", "ok_nabu", "weather"];
/// Every head.
pub const HEADS: [&str; 5] =
    ["alexa_v0.1", "hey_jarvis_v0.1", "hey_mycroft_v0.1", "hey_rhasspy_v0.1", "ok_nabu_v0.1"];

/// Score tolerance against the official runtime, per head. TFLite's own f32 scores differ
/// from an f64 evaluation of the same heads on the same features by up to 5.9e-5 on
/// hey_mycroft (first-layer outputs in the hundreds; measured by the converter) and by at
/// most 1e-5 on the others, so a tolerance below that would test TFLite's rounding, not ours.
pub fn score_tolerance(head: &str) -> f32 {
    if head == "hey_mycroft_v0.1" {
        1e-4
    } else {
        1e-5
    }
}
pub mod custom;
pub mod moonshine;

/// Runs the generic test body `$body::<B>()` with the backend the `neon` program picks,
/// `BackendKind::best()` (one dispatch for the whole body).
#[macro_export]
macro_rules! on_best_backend {
    ($body:ident) => {{
        struct Body;
        impl neon_runtime::WithBackend for Body {
            type Output = ();
            fn run<B: neon_runtime::Backend>(self) {
                $body::<B>()
            }
        }
        neon_runtime::BackendKind::best().with(Body).unwrap()
    }};
}

/// The generic tests `$body::<B>()`: on the host for every backend
/// (`neon_runtime::backend_tests!`), on aarch64 for NEON only, in a module `neon` (under qemu
/// the portable kernels would only run the host's code again, slowly).
#[macro_export]
macro_rules! host_and_neon_tests {
    ($($body:ident),+ $(,)?) => {
        #[cfg(not(target_arch = "aarch64"))]
        neon_runtime::backend_tests!($($body),+);

        #[cfg(all(target_arch = "aarch64", feature = "neon"))]
        mod neon {
            $(#[test]
            fn $body() {
                super::$body::<neon_runtime::Neon>()
            })+
        }
    };
}
pub mod sanotts;

/// 16-bit samples as little-endian bytes (raw s16le, as `neon ... -` reads).
pub fn s16le(samples: &[i16]) -> Vec<u8> {
    samples.iter().flat_map(|s| s.to_le_bytes()).collect()
}

/// `host` on the host, `qemu` on aarch64, where the tests run under qemu (far slower): how
/// much work a test does.
pub const fn host_or_qemu(host: usize, qemu: usize) -> usize {
    if cfg!(target_arch = "aarch64") {
        qemu
    } else {
        host
    }
}
