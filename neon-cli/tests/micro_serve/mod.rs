//! `neon serve --engine micro` (wyoming-microwakeword 2.1.0's behaviour): the handler
//! (`neon_wyoming::wake::ClientSession` over `WakeModels` with the microWakeWord engine) in
//! process, on the recordings and community models of that project's test
//! (models/tests/data/microwakeword), and the program once over stdio.

use std::io::BufReader;
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

use neon_audio::Audio;
use neon_models::session::SessionOptions;
use neon_wyoming::event::{read_event, write_event, Event};
use neon_wyoming::wake::{ClientSession, Engines, TriggerOptions, WakeModels};
use serde_json::{json, Value};

/// The models of the peer's test: the four official ones and its three community models.
const MODELS: [&str; 7] = [
    "alexa",
    "choo_choo_homie",
    "hey_home_assistant",
    "hey_jarvis",
    "hey_mycroft",
    "okay_computer",
    "okay_nabu",
];

fn data() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../models/tests/data/microwakeword"))
}

fn wakewords() -> PathBuf {
    data().join("wakewords")
}

/// 16 kHz mono samples of the peer's recording of `model`.
fn recording(model: &str) -> Vec<i16> {
    Audio::open(data().join(format!("{model}.wav"))).unwrap().to_i16()
}

fn load(engines: Engines, dirs: &[PathBuf], refractory_seconds: f32) -> WakeModels {
    let options = TriggerOptions { threshold: 0.5, trigger_level: 1, refractory_seconds };
    WakeModels::load(dirs, engines, options, SessionOptions::default(), "9.9.9").unwrap()
}

/// The microWakeWord engine alone over the peer's community models, 2 s refractory period
/// (loaded once for the tests that share it).
fn micro() -> Arc<WakeModels> {
    static MODELS: OnceLock<Arc<WakeModels>> = OnceLock::new();
    MODELS.get_or_init(|| Arc::new(load(Engines::MICRO, &[wakewords()], 2.0))).clone()
}

fn handle(s: &mut ClientSession, e: &Event) -> Vec<Event> {
    let mut out = Vec::new();
    s.handle(e, &mut out).unwrap();
    out
}

fn detect(s: &mut ClientSession, names: &[&str]) {
    assert!(handle(s, &Event::with_data("detect", json!({ "names": names }))).is_empty());
}

/// `audio-start` (unless `start` is false), `audio` in chunks of `chunk` samples (16 kHz
/// mono 16-bit), then `audio-stop` when `stop`: every reply.
fn stream(
    s: &mut ClientSession,
    audio: &[i16],
    chunk: usize,
    start: bool,
    stop: bool,
) -> Vec<Event> {
    let format = json!({"rate": 16000, "width": 2, "channels": 1});
    let mut out = Vec::new();
    if start {
        out.extend(handle(s, &Event::with_data("audio-start", format.clone())));
    }
    for piece in audio.chunks(chunk) {
        let mut e = Event::with_data("audio-chunk", format.clone());
        e.payload = piece.iter().flat_map(|v| v.to_le_bytes()).collect();
        out.extend(handle(s, &e));
    }
    if stop {
        out.extend(handle(s, &Event::new("audio-stop")));
    }
    out
}

/// The `detection` replies: (name, timestamp in ms).
fn detections(events: &[Event]) -> Vec<(String, u64)> {
    let d = events.iter().filter(|e| e.kind == "detection");
    d.map(|e| (e.data["name"].as_str().unwrap().into(), e.data["timestamp"].as_u64().unwrap()))
        .collect()
}

fn names(d: &[(String, u64)]) -> Vec<&str> {
    d.iter().map(|(n, _)| n.as_str()).collect()
}

fn not_detected(events: &[Event]) -> bool {
    events.iter().any(|e| e.kind == "not-detected")
}

#[test]
fn micro_info_lists_the_official_and_community_models() {
    let mut s = ClientSession::new(micro());
    let info = handle(&mut s, &Event::new("describe")).pop().unwrap();
    let wake = info.data["wake"].as_array().unwrap();
    assert_eq!(wake.len(), 1);
    let program = &wake[0];
    assert_eq!(program["name"], "microWakeWord");
    assert_eq!(program["version"], "9.9.9");
    let kahrendt = json!({"name": "kahrendt", "url": "https://github.com/kahrendt/microWakeWord/"});
    assert_eq!(program["attribution"], kahrendt);
    let models = program["models"].as_array().unwrap();
    let mut listed: Vec<&str> = models.iter().map(|m| m["name"].as_str().unwrap()).collect();
    listed.sort();
    assert_eq!(listed, MODELS);
    let model = |n: &str| models.iter().find(|m| m["name"] == n).unwrap();
    assert_eq!(
        *model("okay_nabu"),
        json!({"name": "okay_nabu", "description": "Okay Nabu", "phrase": "Okay Nabu",
               "attribution": kahrendt, "installed": true, "languages": ["en"],
               "version": "2.0.0"})
    );
    assert_eq!(model("hey_jarvis")["phrase"], "Hey Jarvis");
    assert_eq!(
        *model("okay_computer"),
        json!({"name": "okay_computer", "description": "Okay Computer",
               "phrase": "Okay Computer",
               "attribution": {"name": "Michael Hansen", "url": "https://www.home-assistant.io"},
               "installed": true, "languages": ["en"], "version": "2"})
    );
    assert!(micro().warnings().is_empty(), "{:?}", micro().warnings());
}

#[test]
fn micro_each_model_wakes_on_its_own_recording_only() {
    let clips: Vec<Vec<i16>> = MODELS.iter().map(|m| recording(m)).collect();
    // As the peer's test: one model per detect, on one connection.
    let mut s = ClientSession::new(micro());
    for model in MODELS {
        detect(&mut s, &[model]);
        for (clip, other) in clips.iter().zip(MODELS) {
            let got = stream(&mut s, clip, 1024, true, true);
            let d = detections(&got);
            if other == model {
                assert_eq!(names(&d), [model], "{model} on its recording");
                assert!(!not_detected(&got));
                assert!(d[0].1 > 0 && d[0].1 < 8000, "{model}: timestamp {}", d[0].1);
            } else {
                assert!(d.is_empty() && not_detected(&got), "{model} on {other}.wav: {d:?}");
            }
        }
    }
    // All seven at once: each recording wakes its own model only.
    detect(&mut s, &MODELS);
    for (clip, model) in clips.iter().zip(MODELS) {
        let got = stream(&mut s, clip, 1024, true, true);
        assert_eq!(names(&detections(&got)), [model]);
    }
}

#[test]
fn micro_detect_rules() {
    let nabu = recording("okay_nabu");
    let alexa = recording("alexa");
    // No detect: audio-start runs okay_nabu.
    let mut s = ClientSession::new(micro());
    assert_eq!(names(&detections(&stream(&mut s, &nabu, 1024, true, true))), ["okay_nabu"]);
    // Unknown names are skipped; none left selects okay_nabu.
    detect(&mut s, &["nope"]);
    assert_eq!(names(&detections(&stream(&mut s, &nabu, 1024, true, true))), ["okay_nabu"]);
    detect(&mut s, &["nope", "alexa", "alexa"]);
    assert!(detections(&stream(&mut s, &nabu, 1024, true, true)).is_empty());
    assert_eq!(names(&detections(&stream(&mut s, &alexa, 1024, true, true))), ["alexa"]);
    // A detect takes effect at the next audio-start (the peer builds its detectors there).
    let format = json!({"rate": 16000, "width": 2, "channels": 1});
    handle(&mut s, &Event::with_data("audio-start", format));
    detect(&mut s, &["okay_nabu"]);
    let got = stream(&mut s, &nabu, 1024, false, true);
    assert!(detections(&got).is_empty() && not_detected(&got));
    // Outside audio-start .. audio-stop nothing is scored; audio-stop alone: not-detected.
    let got = stream(&mut s, &nabu, 1024, false, true);
    assert!(detections(&got).is_empty() && not_detected(&got));
    assert_eq!(names(&detections(&stream(&mut s, &nabu, 1024, true, false))), ["okay_nabu"]);
}

#[test]
fn micro_refractory_period_is_audio_time() {
    let nabu = recording("okay_nabu");
    let twice: Vec<i16> = nabu.iter().chain(&nabu).copied().collect();
    let gap_ms = nabu.len() as u64 * 1000 / 16_000;
    let fired = |refractory: f32| {
        let mut s = ClientSession::new(Arc::new(load(Engines::MICRO, &[], refractory)));
        detections(&stream(&mut s, &twice, 160, true, true))
    };
    // No refractory period: every positive step fires (chunks of 10 ms: exact timestamps).
    let every = fired(0.0);
    assert!(every.len() > 2, "{every:?}");
    // 2 s: once per utterance, one recording's length apart.
    let two = fired(2.0);
    assert_eq!(two.len(), 2, "{two:?}");
    assert!((2000..=gap_ms + 500).contains(&(two[1].1 - two[0].1)), "{two:?}");
    assert_eq!(two[0], every[0]);
    // Longer than the recording: once.
    assert_eq!(fired(gap_ms as f32 / 1000.0 + 0.5).len(), 1);
}

#[test]
fn micro_chunk_sizes_do_not_change_detections() {
    let clip = recording("hey_mycroft");
    let mut s = ClientSession::new(micro());
    detect(&mut s, &["hey_mycroft"]);
    // Chunks of one sample give the exact time of the step that fired.
    let exact = detections(&stream(&mut s, &clip, 1, true, true));
    assert_eq!(exact.len(), 1);
    for chunk in [7, 160, 480, 1024, 4096, clip.len()] {
        let d = detections(&stream(&mut s, &clip, chunk, true, true));
        assert_eq!(names(&d), ["hey_mycroft"], "chunks of {chunk}");
        // The timestamp is the start of the chunk that fired.
        let chunk_ms = chunk as u64 * 1000 / 16_000;
        assert!(d[0].1 <= exact[0].1 && exact[0].1 <= d[0].1 + chunk_ms + 1, "{chunk}: {d:?}");
    }
}

#[test]
fn both_engines_share_one_wake_program() {
    let custom = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../models/tests/data/custom"));
    let both = Engines { openwakeword: true, micro: true };
    let models = Arc::new(load(both, &[wakewords(), custom], 2.0));
    // The openWakeWord scan passes the microWakeWord .tflite files over (`custom` holds two
    // openWakeWord models named `computer`: one warning).
    assert_eq!(models.warnings().len(), 1, "{:?}", models.warnings());
    assert!(models.warnings()[0].contains("`computer`"), "{:?}", models.warnings());
    let mut s = ClientSession::new(models);
    let info = handle(&mut s, &Event::new("describe")).pop().unwrap();
    let wake = info.data["wake"].as_array().unwrap();
    assert_eq!(wake.len(), 1);
    assert_eq!(wake[0]["name"], "openwakeword");
    let listed: Vec<&Value> = wake[0]["models"].as_array().unwrap().iter().collect();
    let listed_names: Vec<&str> = listed.iter().map(|m| m["name"].as_str().unwrap()).collect();
    for name in ["okay_nabu", "hey_rhasspy", "computer", "micro:okay_nabu", "micro:okay_computer"] {
        assert!(listed_names.contains(&name), "{name} missing from {listed_names:?}");
    }
    assert_eq!(listed.len(), 5 + 1 + MODELS.len(), "{listed_names:?}");
    let micro_nabu = listed.iter().find(|m| m["name"] == "micro:okay_nabu").unwrap();
    assert_eq!(micro_nabu["description"], "Okay Nabu (microWakeWord)");
    assert_eq!(micro_nabu["phrase"], "Okay Nabu");
    // One detect selects from both engines; each scores the same audio.
    detect(&mut s, &["micro:okay_nabu", "hey_jarvis", "okay_computer"]);
    let got = stream(&mut s, &recording("okay_nabu"), 1024, true, true);
    assert_eq!(names(&detections(&got)), ["micro:okay_nabu"]);
    let jarvis = recording("hey_jarvis");
    let got = stream(&mut s, &jarvis, 1024, true, true);
    assert_eq!(names(&detections(&got)), ["hey_jarvis"]);
}

#[test]
fn micro_files_the_scan_skips_are_warned() {
    let dir = std::env::temp_dir().join(format!("neon-micro-serve-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for f in ["okay_computer.json", "okay_computer.tflite"] {
        std::fs::copy(wakewords().join(f), dir.join(f)).unwrap();
    }
    std::fs::write(dir.join("other.json"), r#"{"type": "openwakeword"}"#).unwrap();
    std::fs::write(
        dir.join("gone.json"),
        r#"{"type": "micro", "wake_word": "Gone",
        "model": "gone.tflite", "micro": {"probability_cutoff": 0.9, "sliding_window_size": 5}}"#,
    )
    .unwrap();
    std::fs::write(dir.join("junk.json"), r#"{"type": "micro", "wake_word": "Junk",
        "model": "okay_computer.json", "micro": {"probability_cutoff": 0.9, "sliding_window_size": 5}}"#)
    .unwrap();
    let models = load(Engines::MICRO, std::slice::from_ref(&dir), 2.0);
    std::fs::remove_dir_all(&dir).unwrap();
    let warnings = models.warnings().join("\n");
    for file in ["other.json", "gone.json", "does not load"] {
        assert!(warnings.contains(file), "{file}: {warnings}");
    }
    assert_eq!(models.warnings().len(), 3, "{warnings}");
    assert!(models.names().contains(&"okay_computer"));
    assert!(!models.names().contains(&"junk"));
}

#[test]
fn both_engines_refuse_a_name_offered_twice() {
    let dir = std::env::temp_dir().join(format!("neon-micro-clash-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let head = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../models/tests/data/custom"))
        .join("computer_v2.tflite");
    std::fs::copy(head, dir.join("micro:alexa.tflite")).unwrap();
    let options = TriggerOptions { threshold: 0.5, trigger_level: 1, refractory_seconds: 2.0 };
    let both = Engines { openwakeword: true, micro: true };
    let loaded =
        WakeModels::load(std::slice::from_ref(&dir), both, options, SessionOptions::default(), "");
    std::fs::remove_dir_all(&dir).unwrap();
    let err = loaded.err().expect("a name offered by both engines is refused");
    assert!(err.contains("`micro:alexa` is offered by both engines"), "{err}");
}

#[test]
fn micro_engine_over_stdio() {
    let dir = wakewords();
    let mut child = crate::spawn(&[
        "--engine",
        "micro",
        "--uri",
        "stdio://",
        "--custom-model-dir",
        dir.to_str().unwrap(),
    ]);
    let mut w = child.stdin.take().unwrap();
    let mut r = BufReader::new(child.stdout.take().unwrap());
    write_event(&mut w, &Event::new("describe")).unwrap();
    let info = read_event(&mut r).unwrap().unwrap();
    assert_eq!(info.data["wake"][0]["name"], "microWakeWord");
    write_event(&mut w, &Event::with_data("detect", json!({"names": ["okay_computer"]}))).unwrap();
    crate::send_clip(&mut w, &recording("okay_computer"), 2, 1);
    let got = crate::replies(&mut r);
    assert_eq!(crate::detections(&got), ["okay_computer"]);
    drop(w);
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let o = crate::common::neon(&["serve", "--engine", "onnx"]);
    assert!(!o.status.success());
    assert!(
        crate::common::stderr(&o).contains("invalid value 'onnx'"),
        "{}",
        crate::common::stderr(&o)
    );
}
