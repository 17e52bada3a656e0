//! The sanoTTS decoder against ONNX Runtime (the peer of `tools/sanotts/onnx_peer.py`) and
//! against the numpy f64 reference (`tools/sanotts/reference.py`), on the committed goldens
//! `data/sanotts/{synthetic_t7, synthetic_t64, second_t7}.safetensors` (`tools/sanotts/
//! goldens.py`). Each file holds `hidden` f32 `[192, T]` (the seeded test hidden states),
//! `audio` f32 `[128 T]` (ONNX Runtime 1.32.0, unfolded graph, 1 thread) and `reference` f32
//! `[128 T]` (f64 reference rounded to f32); metadata `voice_seed` and `frames`.

use std::path::PathBuf;
use std::sync::Arc;

use neon_models::sanotts::load::VoiceWeights;
use neon_models::sanotts::synthetic;
use neon_models::sanotts::utterance::Decoder;
use neon_runtime::Backend;

/// (file, voice seed, frames).
const CASES: [(&str, u64, usize); 3] = [
    ("synthetic_t7", synthetic::VOICE_SEED, 7),
    ("synthetic_t64", synthetic::VOICE_SEED, 64),
    ("second_t7", synthetic::SECOND_VOICE_SEED, 7),
];

/// Issue 12's bound for every independent check of the decoder (relative L2 of the waveform).
const TOL: f64 = 1e-4;
/// ONNX Runtime's own error against the f64 reference, measured by `onnx_peer.py selfcheck`
/// at <= 1.1e-6 (recorded per file in the metadata `audio_vs_reference_rel_l2`): ours vs ORT
/// can exceed ours vs the truth by that much, so the ORT comparison gets TOL plus 2e-6.
const ORT_TOL: f64 = TOL + 2e-6;

/// Decodes `hidden` `[192, frames]` (row-major) with the synthetic voice of `seed`, whole
/// utterance, on backend `B`, to `128 * frames` samples.
fn decode<B: Backend>(seed: u64, hidden: &[f32], frames: usize) -> Vec<f32> {
    let voice = synthetic::voice(seed).unwrap();
    let weights = Arc::new(VoiceWeights::prepare(&voice).unwrap());
    let mut decoder = Decoder::on::<B>(weights).unwrap();
    let mut audio = vec![f32::NAN; 128 * frames];
    decoder.decode(hidden, frames, &mut audio).unwrap();
    audio
}

/// (values, shape) of the f32 tensor `name`.
fn f32s(st: &safetensors::SafeTensors<'_>, name: &str) -> (Vec<f32>, Vec<usize>) {
    let t = st.tensor(name).unwrap_or_else(|e| panic!("golden tensor {name}: {e}"));
    assert_eq!(t.dtype(), safetensors::Dtype::F32, "{name}");
    let v = t.data().chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]));
    (v.collect(), t.shape().to_vec())
}

fn rel_l2(got: &[f32], want: &[f32]) -> f64 {
    assert_eq!(got.len(), want.len());
    let (mut num, mut den) = (0.0f64, 0.0f64);
    for (&g, &w) in got.iter().zip(want) {
        num += (g as f64 - w as f64).powi(2);
        den += (w as f64).powi(2);
    }
    (num / den).sqrt()
}

fn decoder_matches_onnx_runtime_and_the_f64_reference<B: Backend>() {
    for (name, seed, frames) in CASES {
        let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("tests/data/sanotts")
            .join(format!("{name}.safetensors"));
        let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let (_, meta) = safetensors::SafeTensors::read_metadata(&bytes).unwrap();
        let meta = meta.metadata().clone().unwrap_or_default();
        assert_eq!(meta.get("voice_seed").map(String::as_str), Some(format!("{seed:#X}").as_str()));
        assert_eq!(meta.get("frames").map(String::as_str), Some(frames.to_string().as_str()));
        let st = safetensors::SafeTensors::deserialize(&bytes).unwrap();
        let (hidden, hshape) = f32s(&st, "hidden");
        let (ort, ashape) = f32s(&st, "audio");
        let (reference, _) = f32s(&st, "reference");
        assert_eq!((hshape, ashape), (vec![192, frames], vec![128 * frames]));
        // The hidden-state convention is shared by both generators: the Python one
        // (tools/sanotts/voice.py) wrote these, ours gives the same values: the same bits
        // with glibc's x86-64 libm, within one f32 ulp with another libm (its f64 `ln` and
        // `cos` may round a last bit differently; harmless to the comparisons below).
        let ours_hidden = synthetic::hidden_states(frames);
        for (i, (a, b)) in ours_hidden.iter().zip(&hidden).enumerate() {
            let ulps = (a.to_bits() as i64 - b.to_bits() as i64).abs();
            let allowed = if cfg!(target_arch = "x86_64") { 0 } else { 1 };
            assert!(ulps <= allowed, "{name}: hidden_states({frames})[{i}]: {a} vs voice.py's {b}");
        }
        let audio = decode::<B>(seed, &hidden, frames);
        assert_eq!(audio.len(), 128 * frames, "{name}");
        let (e_ort, e_ref) = (rel_l2(&audio, &ort), rel_l2(&audio, &reference));
        println!(
            "{} {name}: relative L2 vs ONNX Runtime {e_ort:.2e}, vs f64 reference {e_ref:.2e}",
            B::NAME
        );
        assert!(e_ref <= TOL, "{name}: relative L2 {e_ref:.2e} vs the f64 reference > {TOL:e}");
        assert!(e_ort <= ORT_TOL, "{name}: relative L2 {e_ort:.2e} vs ONNX Runtime > {ORT_TOL:e}");
    }
}

neon_runtime::backend_tests!(decoder_matches_onnx_runtime_and_the_f64_reference);
