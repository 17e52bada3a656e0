//! microWakeWord end to end (`neon_models::microwakeword::{word, session}`): audio in, every
//! model step's `uint8` output, probability and decision equal to pymicro-wakeword 2.5.0's
//! (TFLite's C library) on every golden clip, pushed in uneven chunks, several models on one
//! stream; `reset` gives the same run again; no allocation per push; model names and files
//! resolve or fail with one line; the crafted models (f32 state, window 8, N = 2) too.
//!
//! References: `models/microwakeword/goldens/<clip>.safetensors` (tools/microwakeword/
//! goldens.py): the clip (metadata `clip`, followed by 16,000 zero samples) and per model
//! `output.<m>` [S] U8, `prob.<m>` [S] F64, `detect.<m>` [S] U8.

use crate::{clip_goldens, repo, thread_alloc};

use std::path::{Path, PathBuf};

use neon_models::error::Error;
use neon_models::microwakeword::load::load;
use neon_models::microwakeword::session::{MicroDetector, MicroEvent};
use neon_models::microwakeword::word::{resolve, MicroWord};
use neon_runtime::BackendKind;
use rand::{rngs::SmallRng, Rng, SeedableRng};
use safetensors::SafeTensors;

/// Zero samples goldens.py appends to each clip.
const PAD: usize = 16_000;

/// The model `name`: an official one by name, a community one by its JSON.
fn word(name: &str) -> MicroWord {
    let community = repo(&format!("models/tests/data/microwakeword/wakewords/{name}.json"));
    if community.exists() {
        MicroWord::load(&load(&community).unwrap()).unwrap()
    } else {
        resolve(name).unwrap_or_else(|e| panic!("{name}: {e}"))
    }
}

/// One model's recorded steps on a clip.
struct Want {
    name: String,
    output: Vec<u8>,
    prob: Vec<f64>,
    detect: Vec<u8>,
}

/// A golden clip: its padded audio and the models recorded on it.
fn clip(path: &Path) -> (Vec<i16>, Vec<Want>) {
    let bytes = std::fs::read(path).unwrap();
    let meta = SafeTensors::read_metadata(&bytes).unwrap().1;
    let meta = meta.metadata().as_ref().expect("golden metadata");
    let mut audio: Vec<i16> = hound::WavReader::open(repo(&meta["clip"]))
        .unwrap()
        .samples::<i16>()
        .map(Result::unwrap)
        .collect();
    audio.resize(audio.len() + PAD, 0);
    let st = SafeTensors::deserialize(&bytes).unwrap();
    let mut names: Vec<String> =
        st.names().iter().filter_map(|n| n.strip_prefix("output.")).map(String::from).collect();
    names.sort();
    let wants = names
        .into_iter()
        .map(|name| {
            let data = |t: &str| st.tensor(&format!("{t}.{name}")).unwrap().data().to_vec();
            let prob = data("prob")
                .chunks_exact(8)
                .map(|b| f64::from_le_bytes(b.try_into().unwrap()))
                .collect();
            Want { output: data("output"), prob, detect: data("detect"), name }
        })
        .collect();
    (audio, wants)
}

/// Pushes `audio` in chunks of 0..=`max` samples (seeded), returning every event; asserts
/// that no push allocates.
fn run(det: &mut MicroDetector, audio: &[i16], rng: &mut SmallRng, max: usize) -> Vec<MicroEvent> {
    let mut events = Vec::with_capacity(audio.len() / 160 * det.words().len() + 8);
    let mut rest = audio;
    while !rest.is_empty() {
        let n = rng.gen_range(0..=max).min(rest.len());
        let (chunk, tail) = rest.split_at(n);
        thread_alloc::allocation_free(|| det.push(chunk, |e| events.push(e)).unwrap());
        rest = tail;
    }
    events
}

/// Asserts that the events of word `k` (N = `n` frames a step, no refractory period) are
/// `want`'s steps: output, probability (bit for bit), decision and end sample. Returns the
/// steps compared.
fn assert_steps(events: &[MicroEvent], k: usize, want: &Want, n: u64, what: &str) -> usize {
    let got: Vec<&MicroEvent> = events.iter().filter(|e| e.word == k).collect();
    assert_eq!(got.len(), want.output.len(), "{what}: steps");
    for (s, e) in got.iter().enumerate() {
        let d = e.decision;
        assert_eq!(d.output, want.output[s], "{what} step {s}: output");
        assert_eq!(d.probability.to_bits(), want.prob[s].to_bits(), "{what} step {s}");
        assert_eq!(u8::from(d.detected), want.detect[s], "{what} step {s}: detect");
        // N frames of 10 ms a step; the first frame ends at 30 ms.
        assert_eq!(e.end_sample, 480 + 160 * (n * s as u64 + n - 1), "{what} step {s}");
        assert_eq!(e.fired, d.detected, "{what}: no refractory period");
    }
    got.len()
}

/// The clips run: all of them on the host; under qemu (NEON kernels, ~20 times slower) two,
/// one with all 7 models, kept short for CI.
fn clips_run() -> Vec<PathBuf> {
    let all = clip_goldens();
    if cfg!(target_arch = "aarch64") {
        let keep = ["hey_jarvis.safetensors", "okay_computer.safetensors"];
        return all.into_iter().filter(|p| keep.iter().any(|k| p.ends_with(k))).collect();
    }
    all
}

/// Every clip, all of its models on one stream, chunks of up to 3,000 samples, on the best
/// backend (`BackendKind::best`), then the same clip again after `reset` on the portable
/// kernels: every step of every model equals the goldens.
#[test]
fn every_step_equals_pymicro_wakeword() {
    let mut rng = SmallRng::seed_from_u64(39);
    let (mut pairs, mut steps) = (0, 0);
    for path in clips_run() {
        let (audio, wants) = clip(&path);
        let file = path.file_stem().unwrap().to_string_lossy().into_owned();
        let words: Vec<MicroWord> = wants.iter().map(|w| word(&w.name)).collect();
        let mut det = MicroDetector::new(words);
        assert_eq!(det.backend(), BackendKind::best());
        for pass in 0..2 {
            if pass == 1 {
                // The second pass on the portable kernels: the same bits as the best ones.
                det = det.with_backend(BackendKind::Portable).unwrap();
            }
            let events = run(&mut det, &audio, &mut rng, 3_000);
            for (k, want) in wants.iter().enumerate() {
                let what = format!("{file} {} pass {pass}", want.name);
                steps += assert_steps(&events, k, want, 3, &what);
                pairs += usize::from(pass == 0);
            }
            det.reset();
        }
    }
    println!("{pairs} model/clip pairs, {steps} steps, all equal");
    let expected = if cfg!(target_arch = "aarch64") { 4 + 7 } else { 12 * 4 + 3 * 3 };
    assert_eq!(pairs, expected, "model/clip pairs (goldens/SUMMARY.md)");
}

/// The crafted models (models/tests/data/microwakeword/crafted/, tools/microwakeword/FACTS.md
/// section 11) from their JSONs on one stream: the f32 state with windows 5 and 8, and
/// N = 2; every step equals pymicro-wakeword's on okay_nabu.wav
/// (`goldens/crafted_<model>.safetensors`: `a.output`, `a.prob.<json>`, `a.detect.<json>`).
/// Host only: micro_plan.rs runs these models with the NEON kernels.
#[cfg(not(target_arch = "aarch64"))]
#[test]
fn crafted_models_equal_pymicro_wakeword() {
    let dir = repo("models/tests/data/microwakeword/crafted");
    let jsons = [("okay_nabu_f32_state", ""), ("okay_nabu_f32_state", "_w8"), ("okay_nabu_n2", "")];
    let words = jsons
        .iter()
        .map(|(m, v)| MicroWord::load(&load(&dir.join(format!("{m}{v}.json"))).unwrap()).unwrap())
        .collect();
    let mut det = MicroDetector::new(words);
    let mut audio: Vec<i16> =
        hound::WavReader::open(repo("models/tests/data/microwakeword/okay_nabu.wav"))
            .unwrap()
            .samples::<i16>()
            .map(Result::unwrap)
            .collect();
    audio.resize(audio.len() + PAD, 0);
    let events = run(&mut det, &audio, &mut SmallRng::seed_from_u64(11), 3_000);
    let mut detections = Vec::new();
    for (k, (m, v)) in jsons.iter().enumerate() {
        let bytes =
            std::fs::read(repo(&format!("models/microwakeword/goldens/crafted_{m}.safetensors")))
                .unwrap();
        let st = SafeTensors::deserialize(&bytes).unwrap();
        let data = |t: &str| st.tensor(t).unwrap().data().to_vec();
        let prob = data(&format!("a.prob.{m}{v}"))
            .chunks_exact(8)
            .map(|b| f64::from_le_bytes(b.try_into().unwrap()))
            .collect();
        let want = Want {
            name: format!("{m}{v}"),
            output: data("a.output"),
            prob,
            detect: data(&format!("a.detect.{m}{v}")),
        };
        let n = if m.ends_with("_n2") { 2 } else { 3 };
        assert_steps(&events, k, &want, n, &want.name);
        detections.push(want.detect.iter().filter(|&&d| d == 1).count());
    }
    // Window 8 changes the decisions (16 detecting steps with window 5, 15 with 8).
    assert_eq!(detections[..2], [16, 15], "detecting steps, windows 5 and 8");
}

/// With a refractory period, a model fires once per utterance (its decision stays positive
/// for several steps), and again only after the period.
#[test]
fn refractory_period_is_counted_in_audio() {
    let path = repo("models/microwakeword/goldens/hey_mycroft.safetensors");
    let (audio, wants) = clip(&path);
    let k = wants.iter().position(|w| w.name == "hey_mycroft").unwrap();
    let positives = wants[k].detect.iter().filter(|&&d| d == 1).count();
    assert!(positives > 10, "the golden's decisions stay positive: {positives}");
    let words: Vec<MicroWord> = wants.iter().map(|w| word(&w.name)).collect();
    let mut rng = SmallRng::seed_from_u64(1);
    let mut det = MicroDetector::new(words.clone()).with_refractory(32_000);
    let fired: Vec<u64> = run(&mut det, &audio, &mut rng, 1_024)
        .iter()
        .filter(|e| e.fired)
        .map(|e| e.end_sample)
        .collect();
    assert_eq!(fired.len(), 1, "one detection in 2 s: {fired:?}");
    // A period shorter than one step fires on every positive decision.
    let mut det = MicroDetector::new(words).with_refractory(1);
    let events = run(&mut det, &audio, &mut rng, 1_024);
    assert_eq!(events.iter().filter(|e| e.word == k && e.fired).count(), positives);
}

/// Names and files: an official name, a community JSON and its `.tflite`; an unknown name,
/// a truncated and a corrupt `.tflite` are one-line errors.
#[test]
fn models_resolve_or_fail_in_one_line() {
    assert_eq!(resolve("okay_nabu").unwrap().name(), "okay_nabu");
    let dir = repo("models/tests/data/microwakeword/wakewords");
    let tflite = dir.join("okay_computer.tflite");
    let w = resolve(tflite.to_str().unwrap()).unwrap();
    assert_eq!((w.name(), w.config().probability_cutoff), ("okay_computer", 0.97));
    let e = resolve("okay_nabuu").unwrap_err();
    assert!(matches!(e, Error::Unknown { .. }) && e.to_string().contains("okay_nabu"), "{e}");
    let scratch = std::env::temp_dir().join(format!("neon-mww-session-{}", std::process::id()));
    std::fs::create_dir_all(&scratch).unwrap();
    let bytes = std::fs::read(&tflite).unwrap();
    for (name, body) in [
        ("truncated", bytes[..bytes.len() / 2].to_vec()),
        ("corrupt", bytes.iter().map(|b| b ^ 0x5a).collect::<Vec<u8>>()),
    ] {
        let path = scratch.join(format!("{name}.tflite"));
        std::fs::write(&path, body).unwrap();
        let e = resolve(path.to_str().unwrap()).unwrap_err().to_string();
        assert!(e.contains(&format!("{name}.tflite")) && !e.contains('\n'), "{name}: {e}");
    }
    std::fs::remove_dir_all(&scratch).unwrap();
}
