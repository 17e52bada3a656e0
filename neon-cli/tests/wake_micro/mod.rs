//! `neon wake --engine micro`: the official microWakeWord models on their own recordings, a
//! community model by path and by directory, `--json` against pymicro-wakeword's goldens,
//! raw stdin, and the options it refuses.

use std::path::PathBuf;
use std::process::Output;

use crate::common::{neon, neon_stdin_raw, s16le, stderr, stdout};
use safetensors::SafeTensors;

/// A path under `models/`.
fn models(rel: &str) -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../models")).join(rel)
}

/// The recording `models/tests/data/microwakeword/<name>.wav`.
fn recording(name: &str) -> String {
    models(&format!("tests/data/microwakeword/{name}.wav")).to_string_lossy().into_owned()
}

/// A community model's file `models/tests/data/microwakeword/wakewords/<file>`.
fn community(file: &str) -> String {
    models(&format!("tests/data/microwakeword/wakewords/{file}")).to_string_lossy().into_owned()
}

/// `neon wake --engine micro ARGS`.
fn micro(args: &[&str]) -> Output {
    neon(&[&["wake", "--engine", "micro"][..], args].concat())
}

/// The `--json-lines` detections of a successful run: (model, time_s).
fn detections(o: &Output) -> Vec<(String, f64)> {
    assert!(o.status.success(), "neon failed: {}", stderr(o));
    let lines = stdout(o);
    let parse = |l: &str| serde_json::from_str::<serde_json::Value>(l).unwrap();
    let d = lines.lines().map(parse);
    d.map(|v| (v["model"].as_str().unwrap().to_string(), v["time_s"].as_f64().unwrap())).collect()
}

/// The end of model step `s` (0-based) of the official models (3 frames of 10 ms a step,
/// the first frame ending at 30 ms), in seconds.
fn step_time(s: u64) -> f64 {
    (480 + 160 * (3 * s + 2)) as f64 / 16_000.0
}

/// Each official model fires once, on its own recording, at the first step the goldens
/// mark as detecting (goldens/SUMMARY.md), and no other model fires (the default refractory
/// period of 2 s holds back the positive steps that follow); without one every positive
/// step fires.
#[test]
fn micro_models_detect_their_own_recordings_only() {
    for (name, first_step) in
        [("alexa", 39), ("hey_jarvis", 49), ("hey_mycroft", 77), ("okay_nabu", 98)]
    {
        let o = micro(&[&recording(name), "--json-lines"]);
        assert_eq!(detections(&o), [(name.to_string(), step_time(first_step))], "{name}");
    }
    // 90 ms of padding (3 steps): the step grid stays, the time is relative to the audio.
    let o = micro(&[&recording("alexa"), "--json-lines", "--pad-seconds", "0.09"]);
    assert_eq!(detections(&o), [("alexa".to_string(), step_time(39))]);
    let o =
        micro(&[&recording("hey_mycroft"), "--model", "hey_mycroft", "--refractory-seconds", "0"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    // Steps 77 to 81 of the goldens, the last ones inside the recording, are positive.
    assert!(out.contains("1 model(s), 5 detection(s)"), "{out}");
    let first = out.lines().next().unwrap();
    assert_eq!(first.split_whitespace().collect::<Vec<_>>(), ["2.36", "s", "hey_mycroft", "0.962"]);
}

/// A community model by its `.json`, by its `.tflite` and through `--custom-model-dir`
/// (with the official ones: only it fires); files that are not microWakeWord models are
/// skipped with a warning, as is a second model of one name.
#[test]
fn community_models_by_path_and_directory() {
    let clip = recording("okay_computer");
    for model in [community("okay_computer.json"), community("okay_computer.tflite")] {
        let o = micro(&[&clip, "--json-lines", "--model", &model, "--model", "okay_nabu"]);
        assert_eq!(detections(&o), [("okay_computer".to_string(), step_time(56))], "{model}");
    }
    let dir = community("");
    let o = micro(&[&clip, "--json-lines", "--custom-model-dir", &dir, "--model", "alexa"]);
    assert_eq!(detections(&o), [("okay_computer".to_string(), step_time(56))]);
    assert_eq!(stderr(&o), "");
    // A directory with an openWakeWord-looking JSON and a second `okay_computer`.
    let tmp = tempfile::tempdir().unwrap();
    for file in ["okay_computer.json", "okay_computer.tflite"] {
        std::fs::copy(community(file), tmp.path().join(file)).unwrap();
    }
    std::fs::write(tmp.path().join("other.json"), r#"{"type": "openwakeword"}"#).unwrap();
    let tmp_dir = tmp.path().to_str().unwrap();
    let o = micro(&[&clip, "--custom-model-dir", &dir, "--custom-model-dir", tmp_dir]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("3 model(s), 1 detection(s)"), "{}", stdout(&o));
    let err = stderr(&o);
    assert_eq!(err.lines().count(), 2, "{err}");
    assert!(err.contains("other.json: not a microWakeWord model"), "{err}");
    assert!(err.contains("skipping a second model named `okay_computer`"), "{err}");
}

/// `--json`: every step's `uint8` output and windowed probability equal pymicro-wakeword's
/// (the goldens run the clip followed by 1 s of silence: the CLI's steps are their first
/// ones), and the detections sit at the steps that fired.
#[test]
fn json_outputs_and_probabilities_are_pymicro_wakewords() {
    let o =
        micro(&[&recording("hey_jarvis"), "--json", "--model", "hey_jarvis", "--model", "alexa"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let bytes = std::fs::read(models("microwakeword/goldens/hey_jarvis.safetensors")).unwrap();
    let g = SafeTensors::deserialize(&bytes).unwrap();
    for name in ["hey_jarvis", "alexa"] {
        let m = &v["models"][name];
        let outputs: Vec<u8> =
            m["outputs"].as_array().unwrap().iter().map(|x| x.as_u64().unwrap() as u8).collect();
        let probs: Vec<f64> =
            m["probabilities"].as_array().unwrap().iter().map(|x| x.as_f64().unwrap()).collect();
        // 2 s of audio: (32000 - 480) / 160 + 1 = 198 frames, 66 steps.
        assert_eq!((outputs.len(), probs.len()), (66, 66), "{name}");
        let want = g.tensor(&format!("output.{name}")).unwrap();
        assert_eq!(outputs, want.data()[..66], "{name}: outputs");
        let want = g.tensor(&format!("prob.{name}")).unwrap();
        let want: Vec<f64> = want
            .data()
            .chunks_exact(8)
            .map(|b| f64::from_le_bytes(b.try_into().unwrap()))
            .collect();
        assert_eq!(probs, want[..66], "{name}: probabilities, bit for bit");
    }
    assert_eq!(v["models"]["hey_jarvis"]["probability_cutoff"], 0.97);
    let d = v["models"]["hey_jarvis"]["detections"].as_array().unwrap();
    assert_eq!(d.len(), 1);
    assert_eq!(d[0]["time_s"], step_time(49));
    assert_eq!(d[0]["score"], v["models"]["hey_jarvis"]["probabilities"][49]);
    assert!(v["models"]["alexa"]["detections"].as_array().unwrap().is_empty());
}

/// Raw s16le on stdin, written in odd pieces: the same detection line as the file.
#[test]
fn micro_raw_stdin_detects_like_the_file() {
    let clip = recording("alexa");
    let samples: Vec<i16> =
        hound::WavReader::open(&clip).unwrap().samples::<i16>().map(Result::unwrap).collect();
    let o = neon_stdin_raw(&["wake", "-", "--engine", "micro"], &s16le(&samples));
    assert!(o.status.success(), "{}", stderr(&o));
    let file = micro(&[&clip]);
    let first = |o: &Output| stdout(o).lines().next().unwrap().to_string();
    assert_eq!(first(&o), first(&file));
    assert!(first(&o).contains("alexa"), "{}", stdout(&o));
    assert!(stdout(&o).contains("stdin: 2.00 s of audio, 198 frames of 10 ms, 4 model(s)"));
}

/// Unknown and broken models, duplicate names and openWakeWord's options are one-line
/// errors (status 1) naming what is wrong.
#[test]
fn micro_refusals_are_one_line_errors() {
    let tmp = tempfile::tempdir().unwrap();
    let truncated = tmp.path().join("truncated.tflite");
    let bytes = std::fs::read(community("okay_computer.tflite")).unwrap();
    std::fs::write(&truncated, &bytes[..bytes.len() / 2]).unwrap();
    let clip = recording("alexa");
    let empty = tempfile::tempdir().unwrap();
    let empty = empty.path().to_str().unwrap();
    for (args, says) in [
        (&["--custom-model-dir", empty][..], "no microWakeWord model in it"),
        (&["--custom-model-dir", "/nonexistent"], "/nonexistent"),
        (&["--model", "nope"], "unknown microWakeWord model: `nope`"),
        (&["--model", truncated.to_str().unwrap()], "truncated.tflite"),
        (&["--model", "alexa", "--model", "alexa"], "already loaded"),
        (&["--threshold", "0.5"], "--threshold does not apply to --engine micro"),
        (&["--embedding", "full"], "--embedding does not apply"),
        (&["--threads", "2"], "--threads does not apply"),
        (&["--session-option", "openwakeword.embedding_mode=full"], "--session-option does not"),
    ] {
        let o = micro(&[&[clip.as_str()][..], args].concat());
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(1), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(err.starts_with("neon: ") && err.contains(says), "{args:?}: {err}");
    }
    // A microWakeWord model without `--engine micro` says so, not how openWakeWord fails.
    for model in [community("okay_computer.json"), community("okay_computer.tflite")] {
        let o = neon(&["wake", &clip, "--model", &model]);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(1), "{model}: {err}");
        assert!(err.contains("a microWakeWord model: add --engine micro"), "{model}: {err}");
    }
    let dir = models("tests/data/microwakeword/wakewords");
    let o = neon(&["wake", &clip, "--custom-model-dir", dir.to_str().unwrap()]);
    let err = stderr(&o);
    assert!(err.contains("microWakeWord models: add --engine micro"), "{err}");
    let o = neon(&["wake", &clip, "--engine", "tiny"]);
    assert_eq!(o.status.code(), Some(2), "clap refuses an unknown engine");
}
