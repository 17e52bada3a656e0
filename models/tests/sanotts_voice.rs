//! sanoTTS voice files: the built-in synthetic voice (pinned values, so the Python peer
//! can check its generator), writing and reading back a voice (the same bits out of the
//! decoder), one-line errors for every kind of bad file (missing, unknown, wrong shape or
//! dtype, NaN, truncated, not safetensors, another architecture), and the backend chosen by
//! `sanotts.exec_plan`.

mod common;

use std::sync::Arc;

use neon_models::error::WeightsSource;
use neon_models::sanotts::load::VoiceWeights;
use neon_models::sanotts::names::{index, TENSORS, VALUES};
use neon_models::sanotts::synthetic::{self, hidden_states, SplitMix64, VOICE_SEED};
use neon_models::sanotts::utterance::Decoder;
use neon_models::sanotts::voice::{Voice, ARCHITECTURE};
use neon_models::session::SessionOptions;
use neon_runtime::{BackendKind, Portable};
use safetensors::tensor::TensorView;
use safetensors::Dtype;

/// The first values of the built-in voice and of the test hidden states, and sums over
/// them: what an independent implementation of the generator (the ONNX peer in `tools/`)
/// must reproduce.
#[test]
fn synthetic_values_are_pinned() {
    let v = synthetic::voice(VOICE_SEED).unwrap();
    let proj = v.tensor(index::PROJ);
    let h = hidden_states(3);
    let sum: f64 = v.tensors().iter().flatten().map(|&x| f64::from(x)).sum();
    let count: usize = v.tensors().iter().map(Vec::len).sum();
    println!("proj.weight[..4] = {:?}", &proj[..4]);
    println!("head.bias[..2] = {:?}", &v.tensor(index::HEAD_BIAS)[..2]);
    println!("hidden[..4] = {:?}", &h[..4]);
    println!("sum of the voice = {sum:.12}, {count} values");
    assert_eq!(count, VALUES);
    assert_eq!(VALUES, 653_570);
    let mut r = SplitMix64::new(VOICE_SEED);
    let z = r.next_normal();
    assert_eq!(proj[0], (z / 192f64.sqrt()) as f32);
    assert_eq!(&proj[..4], &PROJ_START);
    assert_eq!(&h[..4], &HIDDEN_START);
    assert!((sum - VOICE_SUM).abs() < 1e-9, "{sum}");
    // The layer scales take no draw: exactly 0.1.
    assert!(v.tensor(index::convnext(2) + 8).iter().all(|&g| g == 0.1));
}

/// Checked against a separate Python implementation of the generator (the f32 roundings of
/// its f64 values).
const PROJ_START: [f32; 4] = [-0.062_979_415, 0.010_321_289, -0.048_798_35, 0.016_922_43];
const HIDDEN_START: [f32; 4] = [1.449_040_8, -1.107_414_4, -0.741_063_9, -0.687_484];
/// The f64 sum of the voice's 653,570 f32 values, in file order.
const VOICE_SUM: f64 = 776.926_612_684_331;

/// One tensor of a file being written: name, dtype, shape, little-endian bytes.
type Entry = (String, Dtype, Vec<usize>, Vec<u8>);

/// Writes a safetensors file of `tensors`.
fn file(tensors: &[Entry], arch: Option<&str>) -> Vec<u8> {
    let views: Vec<(String, TensorView<'_>)> = tensors
        .iter()
        .map(|(n, d, s, b)| (n.clone(), TensorView::new(*d, s.clone(), b).unwrap()))
        .collect();
    let meta = arch.map(|a| [("architecture".to_string(), a.to_string())].into_iter().collect());
    safetensors::serialize(views, meta).unwrap()
}

/// The built-in voice's tensors as file entries, for editing.
fn entries() -> Vec<Entry> {
    let v = synthetic::voice(VOICE_SEED).unwrap();
    TENSORS
        .iter()
        .zip(v.tensors())
        .map(|(spec, t)| {
            let bytes = t.iter().flat_map(|x| x.to_le_bytes()).collect();
            (spec.name.to_string(), Dtype::F32, spec.shape.to_vec(), bytes)
        })
        .collect()
}

fn load_error(bytes: &[u8]) -> String {
    let e = Voice::from_bytes(bytes, WeightsSource::Embedded("test voice")).unwrap_err();
    let m = e.to_string();
    assert!(!m.contains('\n'), "one line: {m}");
    m
}

#[test]
fn bad_voice_files_are_one_line_errors() {
    let base = entries();
    assert!(Voice::from_bytes(&file(&base, None), WeightsSource::Embedded("v")).is_ok());
    let edit = |f: &dyn Fn(&mut Vec<Entry>)| {
        let mut e = base.clone();
        f(&mut e);
        load_error(&file(&e, None))
    };
    let m = edit(&|e| e.retain(|t| t.0 != "convnext.2.pw1.bias"));
    assert_eq!(m, "embedded weights `test voice`: tensor `convnext.2.pw1.bias`: tensor missing");
    let m = edit(&|e| e.push(("extra.weight".into(), Dtype::F32, vec![1], vec![0; 4])));
    assert!(m.contains("unknown tensor `extra.weight`"), "{m}");
    let m = edit(&|e| e[index::HEAD].2 = vec![128, 514]);
    assert!(m.ends_with("tensor `head.weight`: shape is not [514, 128]"), "{m}");
    let m = edit(&|e| {
        let t = &mut e[index::SPEAKER];
        t.1 = Dtype::F64;
        t.3 = vec![0; 8 * 128];
    });
    assert!(m.ends_with("tensor `speaker`: dtype is not F32"), "{m}");
    let m = edit(&|e| e[index::convnext(1)].3[8..12].copy_from_slice(&f32::NAN.to_le_bytes()));
    assert!(m.ends_with("tensor `convnext.1.dw.weight`: contains NaN or infinity"), "{m}");
    let m = edit(&|e| e[index::NORM1].3[..4].copy_from_slice(&f32::INFINITY.to_le_bytes()));
    assert!(m.ends_with("tensor `norm1.weight`: contains NaN or infinity"), "{m}");
    let good = file(&base, None);
    for cut in [good.len() - 1, good.len() / 2, 100, 7, 0] {
        let m = load_error(&good[..cut]);
        assert!(m.contains("not a valid safetensors file"), "cut at {cut}: {m}");
    }
    let m = load_error(b"RIFF\x24\x00\x00\x00WAVEfmt this is a WAV file, not a voice");
    assert!(m.contains("not a valid safetensors file"), "{m}");
    let m = load_error(&file(&base, Some("sanotts-large")));
    assert!(m.ends_with("unknown or unsupported architecture"), "{m}");
    assert!(
        Voice::from_bytes(&file(&base, Some(ARCHITECTURE)), WeightsSource::Embedded("v")).is_ok()
    );
}

/// A voice written and read back is the same voice, and decodes to the same bits.
#[test]
fn written_voice_reads_back() {
    let v = synthetic::voice(VOICE_SEED).unwrap();
    let bytes = v.to_safetensors(&[("voice", "test")]).unwrap();
    let parsed =
        neon_models::weights::TensorFile::parse(&bytes, WeightsSource::Embedded("v")).unwrap();
    assert_eq!(parsed.metadata("architecture"), Some(ARCHITECTURE));
    assert_eq!(parsed.metadata("voice"), Some("test"));
    let back = Voice::load(&parsed).unwrap();
    assert_eq!(back, v);
    let (_, weights) = common::sanotts::voice();
    let again = Arc::new(VoiceWeights::prepare(&back).unwrap());
    let t = 9;
    let hidden = hidden_states(t);
    let mut a = vec![0.0; 128 * t];
    let mut b = vec![0.0; 128 * t];
    Decoder::on::<Portable>(weights.clone()).unwrap().decode(&hidden, t, &mut a).unwrap();
    Decoder::on::<Portable>(again).unwrap().decode(&hidden, t, &mut b).unwrap();
    assert_eq!(common::sanotts::first_difference(&a, &b), None);
}

/// `sanotts.exec_plan` selects the decoder's backend; the default is the best one.
#[test]
fn session_options_select_the_backend() {
    let (_, weights) = common::sanotts::voice();
    let options =
        SessionOptions::from_pairs([r#"sanotts.exec_plan={"decoder":"portable"}"#]).unwrap();
    let d = Decoder::new(weights.clone(), &options).unwrap();
    assert_eq!(d.backend(), BackendKind::Portable);
    let d = Decoder::new(weights.clone(), &SessionOptions::new()).unwrap();
    assert_eq!(d.backend(), BackendKind::best());
    let v = neon_models::sanotts::vocoder::Vocoder::new(weights.clone(), &options).unwrap();
    assert_eq!(v.backend(), BackendKind::Portable);
    assert!(SessionOptions::from_pairs([r#"sanotts.exec_plan={"encoder":"portable"}"#]).is_err());
}

/// Bad calls of the whole-utterance decoder are errors naming the input.
#[test]
fn decoder_input_errors() {
    let (_, weights) = common::sanotts::voice();
    let mut d = Decoder::on::<Portable>(weights.clone()).unwrap();
    let hidden = hidden_states(4);
    let mut audio = vec![0.0; 512];
    let m = |r: Result<(), neon_models::Error>| r.unwrap_err().to_string();
    assert!(m(d.decode(&hidden, 0, &mut audio[..0])).starts_with("frames: expected 1..=2000"));
    let big = vec![0.0; 192 * 2001];
    let mut big_audio = vec![0.0; 128 * 2001];
    assert!(m(d.decode(&big, 2001, &mut big_audio)).contains("Vocoder"));
    assert!(m(d.decode(&hidden, 3, &mut audio)).starts_with("hidden values"));
    assert!(m(d.decode(&hidden, 4, &mut audio[..511])).starts_with("audio samples"));
    let mut inf = hidden.clone();
    inf[700] = f32::NEG_INFINITY;
    assert!(m(d.decode(&inf, 4, &mut audio)).ends_with("got 700"));
    d.decode(&hidden, 4, &mut audio).unwrap();
}

/// The buffers each instance owns (BENCHMARKS.md quotes them): the plan's workspace at 2000
/// frames, the iSTFT frames, window and stream; the vocoder's hidden history and window.
#[test]
fn instance_sizes() {
    use neon_models::sanotts::decoder::DecoderNet;
    use neon_models::sanotts::vocoder::Vocoder;
    assert_eq!(DecoderNet::WORKSPACE_BYTES, 5_136_000);
    assert_eq!(Decoder::INSTANCE_BYTES, 9_256_200);
    assert_eq!(Vocoder::INSTANCE_BYTES, 12_328_200);
}
