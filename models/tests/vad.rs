//! Silero VAD against ONNX Runtime: every committed clip's per-window probabilities, on
//! every backend this machine runs (under qemu in CI: NEON), fed as silero-vad's
//! `OnnxWrapper` feeds `silero_vad.onnx` (`models/vad/goldens/`, written by
//! `tools/silero_vad/goldens.py`). Then the stream's contract: any chunking gives the same
//! bits, NaN samples are an error that leaves the stream usable, an empty stream gives
//! nothing, a cut window is zero-padded.
//!
//! Tolerance 1e-4 (the acceptance): ONNX Runtime's f32 network differs from an f64
//! evaluation of the same weights by up to 5.8e-6 on these clips; ours computes the same
//! f32 formulas in other summation orders and with vectorised sigmoid / tanh (max relative
//! error about 1e-7 each), so it lands within a few 1e-6 of both. The check against the f64
//! reference (2e-5) shows the margin that is left.

use std::path::Path;
use std::sync::Arc;

use neon_models::vad::detector::{Vad, VadModel};
use neon_runtime::BackendKind;

struct Golden {
    name: String,
    samples: Vec<f32>,
    onnx: Vec<f32>,
    f64: Vec<f64>,
}

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap()
}

fn wav(path: &Path) -> Vec<f32> {
    let mut r = hound::WavReader::open(path).unwrap();
    assert_eq!(r.spec().sample_rate, 16_000);
    assert_eq!(r.spec().channels, 1);
    r.samples::<i16>().map(|s| f32::from(s.unwrap()) / 32768.0).collect()
}

/// Every golden whose clip is present (beckett.wav comes with the Moonshine download).
fn goldens() -> Vec<Golden> {
    let dir = root().join("models/vad/goldens");
    let mut out = Vec::new();
    let mut paths: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).collect();
    paths.sort();
    for path in paths {
        let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        let Some(clip) = v["clip"].as_str() else { continue };
        let clip = root().join(clip);
        if !clip.exists() {
            eprintln!("skipped {}: {} is not here", path.display(), clip.display());
            continue;
        }
        let floats = |k: &str| -> Vec<f64> {
            v[k].as_array().unwrap().iter().map(|x| x.as_f64().unwrap()).collect()
        };
        out.push(Golden {
            name: path.file_stem().unwrap().to_string_lossy().into_owned(),
            samples: wav(&clip),
            onnx: floats("probabilities").into_iter().map(|x| x as f32).collect(),
            f64: floats("reference_f64"),
        });
    }
    assert!(out.len() >= 9, "expected the 9 committed clips' goldens, found {}", out.len());
    out
}

fn model() -> Arc<VadModel> {
    VadModel::builtin().unwrap()
}

/// The probabilities of `samples` pushed in pieces of `sizes` (cycled), then finished.
fn probabilities(vad: &mut Vad, samples: &[f32], sizes: &[usize]) -> Vec<f32> {
    let mut out = Vec::new();
    let mut at = 0;
    for &n in sizes.iter().cycle() {
        if at >= samples.len() {
            break;
        }
        let piece = &samples[at..(at + n).min(samples.len())];
        vad.push(piece, |p| out.push(p)).unwrap();
        at += piece.len();
    }
    vad.finish(|p| out.push(p)).unwrap();
    out
}

#[test]
fn probabilities_match_onnx_runtime_on_every_backend() {
    let goldens = goldens();
    let model = model();
    for backend in BackendKind::available() {
        let mut vad = Vad::new(model.clone(), backend).unwrap();
        let (mut worst_onnx, mut worst_f64) = (0.0f64, 0.0f64);
        for g in &goldens {
            vad.reset();
            let got = probabilities(&mut vad, &g.samples, &[g.samples.len()]);
            assert_eq!(got.len(), g.onnx.len(), "{}: windows", g.name);
            assert_eq!(got.len(), g.samples.len().div_ceil(512));
            for (i, ((&a, &b), &r)) in got.iter().zip(&g.onnx).zip(&g.f64).enumerate() {
                let (d, e) = ((a - b).abs() as f64, (f64::from(a) - r).abs());
                assert!(
                    d <= 1e-4,
                    "{} {}: window {i}: {a} vs ONNX Runtime {b}",
                    backend.name(),
                    g.name
                );
                assert!(e <= 2e-5, "{} {}: window {i}: {a} vs f64 {r}", backend.name(), g.name);
                worst_onnx = worst_onnx.max(d);
                worst_f64 = worst_f64.max(e);
            }
        }
        println!(
            "{}: max |ours - ONNX Runtime| {worst_onnx:.2e}, max |ours - f64| {worst_f64:.2e}",
            backend.name()
        );
    }
}

#[test]
fn any_chunking_gives_the_same_bits() {
    let g = goldens().into_iter().find(|g| g.name == "hey_jarvis").unwrap();
    let mut vad = Vad::new(model(), BackendKind::best()).unwrap();
    let whole = probabilities(&mut vad, &g.samples, &[g.samples.len()]);
    for sizes in [&[1][..], &[511, 513], &[64], &[1280], &[3, 1000, 17, 4096], &[100_000]] {
        vad.reset();
        let got = probabilities(&mut vad, &g.samples, sizes);
        assert_eq!(got, whole, "pieces {sizes:?}");
    }
}

#[test]
fn bad_and_empty_input() {
    let mut vad = Vad::new(model(), BackendKind::best()).unwrap();
    let mut out = Vec::new();
    // Nothing pushed: no window, and finish adds none.
    vad.finish(|p| out.push(p)).unwrap();
    assert!(out.is_empty());
    vad.push(&[], |p| out.push(p)).unwrap();
    assert!(out.is_empty());
    // A NaN is refused before anything is used; the stream goes on as if it never came.
    let audio: Vec<f32> = (0..2000).map(|i| ((i * 37 % 200) as f32 - 100.0) / 400.0).collect();
    let mut expected = Vec::new();
    let mut clean = Vad::new(model(), BackendKind::best()).unwrap();
    clean.push(&audio, |p| expected.push(p)).unwrap();
    vad.push(&audio[..700], |p| out.push(p)).unwrap();
    let mut bad = audio[700..900].to_vec();
    bad[150] = f32::NAN;
    let e = vad.push(&bad, |p| out.push(p)).unwrap_err();
    assert!(e.to_string().contains("NaN"), "{e}");
    bad[150] = f32::INFINITY;
    assert!(vad.push(&bad, |p| out.push(p)).is_err());
    vad.push(&audio[700..], |p| out.push(p)).unwrap();
    assert_eq!(out, expected);
    assert_eq!(vad.pending(), 2000 % 512);
    // A stream cut mid-window: the rest is zero-padded, as OnnxWrapper pads a clip's end.
    let mut padded = audio.clone();
    padded.resize(2048, 0.0);
    let mut whole = Vec::new();
    clean.reset();
    clean.push(&padded, |p| whole.push(p)).unwrap();
    vad.finish(|p| out.push(p)).unwrap();
    assert_eq!(out, whole);
    // Probabilities are probabilities, also on full-scale noise and silence.
    let noise: Vec<f32> =
        (0..16_000).map(|i| if (i * 7919) % 3 == 0 { 1.0 } else { -1.0 }).collect();
    vad.reset();
    let p = probabilities(&mut vad, &noise, &[16_000]);
    assert!(p.iter().all(|p| (0.0..=1.0).contains(p)), "{p:?}");
}

#[test]
fn the_embedded_weights_are_the_converted_file() {
    let file = root().join("models/vad/silero_vad.safetensors");
    assert_eq!(std::fs::read(file).unwrap(), neon_models::vad::WEIGHTS);
    // A corrupt copy is an error naming the file, never a panic.
    let mut bytes = neon_models::vad::WEIGHTS.to_vec();
    bytes.truncate(bytes.len() / 2);
    let e = VadModel::from_bytes(&bytes, neon_models::error::WeightsSource::Embedded("cut"))
        .err()
        .unwrap();
    assert!(e.to_string().contains("cut"), "{e}");
}

/// The plan's FFT is the STFT basis only when the basis is its row 0 times cos / -sin: a
/// basis with one entry off by 1e-3 (another model's) is refused, naming the tensor.
#[test]
fn another_stft_basis_is_refused() {
    let mut bytes = neon_models::vad::WEIGHTS.to_vec();
    let header_len = u64::from_le_bytes(bytes[..8].try_into().unwrap()) as usize;
    let header = std::str::from_utf8(&bytes[8..8 + header_len]).unwrap();
    let at = header.find("\"stft.basis\"").unwrap();
    let offsets = &header[at..];
    let start = offsets.find("\"data_offsets\":[").unwrap() + "\"data_offsets\":[".len();
    let begin: usize = offsets[start..].split(',').next().unwrap().trim().parse().unwrap();
    // Row 5 (bin 5's real part), column 10.
    let p = 8 + header_len + begin + 4 * (5 * 256 + 10);
    let v = f32::from_le_bytes(bytes[p..p + 4].try_into().unwrap()) + 1e-3;
    bytes[p..p + 4].copy_from_slice(&v.to_le_bytes());
    let e = VadModel::from_bytes(&bytes, neon_models::error::WeightsSource::Embedded("basis"))
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("stft.basis") && e.contains("row 5"), "{e}");
}
