//! microWakeWord wake handles (`neon_wake_new_micro`): detections and scores equal to
//! `MicroDetector`'s through the same `neon_wake_*` calls as openWakeWord, community models
//! by path, and bad models or pointers as error statuses with a one-line message.

use std::ffi::{c_char, CString};
use std::path::Path;
use std::ptr::{null, null_mut};

use neon_capi::*;
use neon_models::microwakeword::builtin;
use neon_models::microwakeword::session::MicroDetector;
use neon_models::microwakeword::word::resolve;

use super::wake::{detections, scores};
use super::{last_error, read_wav, repo, text};

/// wyoming-microwakeword's test streams its clips in chunks of 1024 samples.
const CHUNK: usize = 1024;

/// The recordings of wyoming-microwakeword's test suite.
fn clip(name: &str) -> Vec<i16> {
    read_wav(&repo().join(format!("models/tests/data/microwakeword/{name}.wav")))
}

/// The refractory period of a microWakeWord handle: 2 s of 16 kHz audio.
const REFRACTORY: u64 = 32_000;

/// A community model of wyoming-microwakeword's test suite, `ext` being `tflite` or `json`.
fn community(name: &str, ext: &str) -> String {
    let path = repo().join(format!("models/tests/data/microwakeword/wakewords/{name}.{ext}"));
    path.to_str().unwrap().to_string()
}

/// A microWakeWord wake handle over `models` (every built-in model for none).
fn micro(models: &[&str]) -> (NeonStatus, *mut NeonWake) {
    let names: Vec<CString> = models.iter().map(|m| CString::new(*m).unwrap()).collect();
    let ptrs: Vec<*const c_char> = names.iter().map(|n| n.as_ptr()).collect();
    let mut out = null_mut();
    // SAFETY: `ptrs` holds `models.len()` NUL-terminated strings; `out` is writable.
    let status = unsafe { neon_wake_new_micro(ptrs.as_ptr(), ptrs.len(), &mut out) };
    (status, out)
}

/// The names of `w`'s models.
fn names(w: *const NeonWake) -> Vec<String> {
    let mut count = 0;
    // SAFETY: `w` is live, `count` writable.
    assert_eq!(unsafe { neon_wake_model_count(w, &mut count) }, NeonStatus::Ok);
    // SAFETY: `w` is live; every index is in range.
    (0..count).map(|i| text(unsafe { neon_wake_model_name(w, i) })).collect()
}

/// Pushes `audio` in `CHUNK`s, checking each push's scores and detections against `reference`
/// (the same models, [`REFRACTORY`]); returns every detection.
fn run(w: *mut NeonWake, reference: &mut MicroDetector, audio: &[i16]) -> Vec<NeonDetection> {
    let models = reference.words().len();
    let mut want_scores = vec![0.0f32; models];
    let mut found = Vec::new();
    for (i, chunk) in audio.chunks(CHUNK).enumerate() {
        // SAFETY: `w` is live; `chunk` holds `chunk.len()` samples.
        assert_eq!(unsafe { neon_wake_push(w, chunk.as_ptr(), chunk.len()) }, NeonStatus::Ok);
        let (mut stepped, mut want) = (vec![false; models], Vec::new());
        reference
            .push(chunk, |e| {
                let p = e.decision.probability as f32;
                let s = &mut want_scores[e.word];
                *s = if stepped[e.word] { s.max(p) } else { p };
                stepped[e.word] = true;
                if e.fired {
                    let time_s = e.end_sample as f64 / 16_000.0;
                    want.push(NeonDetection { model: e.word, time_s, score: p });
                }
            })
            .unwrap();
        let got = scores(w);
        assert_eq!(
            got.iter().map(|s| s.to_bits()).collect::<Vec<_>>(),
            want_scores.iter().map(|s| s.to_bits()).collect::<Vec<_>>(),
            "push {i}"
        );
        let got = detections(w);
        assert_eq!(got, want, "push {i}");
        found.extend(got);
    }
    found
}

/// Every built-in model (no names) on okay_nabu's recording: okay_nabu fires, once, and
/// nothing else; scores and detections as `MicroDetector` gives them. After a reset (the
/// scores bit for bit those of a new `MicroDetector`), nothing on a recording of another
/// phrase.
#[test]
fn builtin_models_detect_okay_nabu_as_the_library() {
    let (status, w) = micro(&[]);
    assert_eq!(status, NeonStatus::Ok, "{}", last_error());
    let names = names(w);
    assert_eq!(names, builtin::names().collect::<Vec<_>>());
    let words = names.iter().map(|n| resolve(n).unwrap()).collect();
    let mut reference = MicroDetector::new(words).with_refractory(REFRACTORY);
    let nabu = names.iter().position(|n| n == "okay_nabu").unwrap();

    let found = run(w, &mut reference, &clip("okay_nabu"));
    assert_eq!(found.len(), 1, "one detection: {found:?}");
    assert_eq!(found[0].model, nabu);
    assert!(f64::from(found[0].score) > 0.85, "{found:?}");
    println!("okay_nabu.wav: {found:?}");

    // SAFETY: `w` is live.
    assert_eq!(unsafe { neon_wake_reset(w) }, NeonStatus::Ok);
    assert!(scores(w).iter().all(|&s| s == 0.0));
    reference.reset();
    assert_eq!(run(w, &mut reference, &clip("okay_computer")), []);
    // SAFETY: `w` is live; freed once.
    assert_eq!(unsafe { neon_wake_free(w) }, NeonStatus::Ok);
}

/// One utterance fires once: hey_mycroft's decision stays positive for 1.2 s of its
/// recording followed by 1 s of silence, so a 1 s refractory period fired twice.
#[test]
fn one_utterance_fires_once() {
    let (status, w) = micro(&["hey_mycroft"]);
    assert_eq!(status, NeonStatus::Ok, "{}", last_error());
    let mut audio = clip("hey_mycroft");
    audio.resize(audio.len() + 16_000, 0);
    let mut reference =
        MicroDetector::new(vec![resolve("hey_mycroft").unwrap()]).with_refractory(REFRACTORY);
    let found = run(w, &mut reference, &audio);
    assert_eq!(found.len(), 1, "one detection: {found:?}");
    // SAFETY: `w` is live; freed once.
    assert_eq!(unsafe { neon_wake_free(w) }, NeonStatus::Ok);
}

/// Community models by path (a `.tflite` with its JSON beside it, and a `.json`), named
/// after their file stem: only the one whose phrase is spoken fires.
#[test]
fn community_models_by_path() {
    let paths = [community("hey_home_assistant", "tflite"), community("okay_computer", "json")];
    let (status, w) = micro(&[&paths[0], &paths[1]]);
    assert_eq!(status, NeonStatus::Ok, "{}", last_error());
    assert_eq!(names(w), ["hey_home_assistant", "okay_computer"]);
    let words = paths.iter().map(|p| resolve(p).unwrap()).collect();
    let mut reference = MicroDetector::new(words).with_refractory(REFRACTORY);
    let found = run(w, &mut reference, &clip("hey_home_assistant"));
    assert!(!found.is_empty() && found.iter().all(|d| d.model == 0), "{found:?}");
    // SAFETY: `w` is live; freed once.
    assert_eq!(unsafe { neon_wake_free(w) }, NeonStatus::Ok);
}

/// The status and the one-line message of `neon_wake_new_micro` over `models`, which must
/// fail (no handle stored).
fn refused(models: &[&str]) -> (NeonStatus, String) {
    let (status, w) = micro(models);
    assert_ne!(status, NeonStatus::Ok, "{models:?}");
    assert!(w.is_null());
    let message = last_error();
    assert!(!message.is_empty() && !message.contains('\n'), "{models:?}: {message}");
    (status, message)
}

#[test]
fn bad_models_and_pointers_are_errors() {
    let (status, message) = refused(&["okay_nobody"]);
    assert_eq!(status, NeonStatus::InvalidArgument);
    assert!(message.contains("okay_nobody") && message.contains("okay_nabu"), "{message}");
    let missing = repo().join("no/such/model.tflite");
    let (status, message) = refused(&[missing.to_str().unwrap()]);
    assert_eq!(status, NeonStatus::InvalidArgument);
    assert!(message.contains("model.tflite"), "{message}");
    let (status, message) = refused(&["okay_nabu", "okay_nabu"]);
    assert_eq!(status, NeonStatus::InvalidArgument);
    assert!(message.contains("already loaded"), "{message}");
    // A file of another format.
    let head = repo().join("Cargo.toml");
    assert_eq!(refused(&[head.to_str().unwrap()]).0, NeonStatus::InvalidArgument);

    // A truncated model, and a file that is not a model at all.
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("micro_capi");
    std::fs::create_dir_all(&dir).unwrap();
    let bytes = std::fs::read(community("okay_computer", "tflite")).unwrap();
    for (name, bytes) in [("truncated", &bytes[..bytes.len() / 2]), ("text", &b"not a model"[..])] {
        let path = dir.join(format!("{name}.tflite"));
        std::fs::write(&path, bytes).unwrap();
        let (status, message) = refused(&[path.to_str().unwrap()]);
        assert_eq!(status, NeonStatus::Model, "{message}");
        assert!(message.contains(&format!("{name}.tflite")), "{message}");
        println!("{name}: {message}");
    }

    let mut out = null_mut();
    // SAFETY: every pointer is either valid or NULL, which the library checks.
    unsafe {
        assert_eq!(neon_wake_new_micro(null(), 0, null_mut()), NeonStatus::NullPointer);
        assert_eq!(neon_wake_new_micro(null(), 1, &mut out), NeonStatus::NullPointer);
        let names = [null()];
        assert_eq!(neon_wake_new_micro(names.as_ptr(), 1, &mut out), NeonStatus::NullPointer);
        assert!(out.is_null());
    }

    let (status, w) = micro(&["okay_nabu"]);
    assert_eq!(status, NeonStatus::Ok, "{}", last_error());
    let samples = [0i16; CHUNK];
    // SAFETY: `w` is live until its free; afterwards every call checks the registry.
    unsafe {
        assert_eq!(neon_wake_push(w, null(), 0), NeonStatus::NullPointer);
        assert!(text(neon_wake_error(w)).contains("NULL"));
        assert_eq!(neon_wake_push(w, samples.as_ptr(), CHUNK), NeonStatus::Ok);
        let mut n = 0;
        assert_eq!(neon_wake_detections(w, null_mut(), 0, &mut n), NeonStatus::Ok);
        assert_eq!(n, 0);
        assert_eq!(neon_wake_free(w), NeonStatus::Ok);
        assert_eq!(neon_wake_push(w, samples.as_ptr(), CHUNK), NeonStatus::UnknownHandle);
        assert_eq!(neon_wake_free(w), NeonStatus::UnknownHandle);
    }
}
