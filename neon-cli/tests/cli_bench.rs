//! `neon bench` as a user runs it: the JSON report (CPU, backends, one row per workload of
//! the aarch64 peer tables and thread count, named as in BENCHMARKS.md), `--only`, the
//! Moonshine rows with and without the model, and its errors. Timings are not asserted (they
//! are the machine's); only that they are there and positive.
//!
//! Host only (see cli_wake.rs). Needs the converted Moonshine model for the first test.
#![cfg(not(target_arch = "aarch64"))]

mod common;

use common::neon;
use serde_json::Value;

fn report(args: &[&str]) -> Value {
    let o = neon(args);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    serde_json::from_slice(&o.stdout).unwrap()
}

/// The JSON report of `neon bench --json --seconds 0.01 --threads 1 ARGS` (1 thread, short).
fn report_1_thread(args: &[&str]) -> Value {
    let mut all = vec!["bench", "--json", "--seconds", "0.01", "--threads", "1"];
    all.extend_from_slice(args);
    report(&all)
}

/// The rows' `(key, workload, threads)`, each row's time, calls per second and real-time
/// factor checked.
fn rows(v: &Value) -> Vec<(String, String, u64)> {
    v["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            let ms = r["ms"].as_f64().unwrap();
            assert!(ms > 0.0, "{r}");
            assert!((r["calls_per_s"].as_f64().unwrap() - 1e3 / ms).abs() < 1e-6 * 1e3 / ms);
            match r["audio_ms"].as_f64() {
                Some(a) => assert!((r["rtf"].as_f64().unwrap() - ms / a).abs() < 1e-9, "{r}"),
                None => assert!(r["rtf"].is_null(), "{r}"),
            }
            let s = |k: &str| r[k].as_str().unwrap().to_string();
            (s("key"), s("workload"), r["threads"].as_u64().unwrap())
        })
        .collect()
}

#[test]
fn moonshine_rows_with_the_model_and_the_dot_path() {
    let dir = common::moonshine::model_dir();
    let dir = dir.to_str().unwrap();
    let v = report(&[
        "bench",
        "--json",
        "--seconds",
        "0.01",
        "--threads",
        "2",
        "--model-dir",
        dir,
        "--only",
        "moonshine",
        "--session-option",
        "moonshine_asr.int8=dot",
    ]);
    assert_eq!(v["neon_version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(v["cpu"]["arch"], std::env::consts::ARCH);
    assert!(v["cpu"]["cores"].as_u64().unwrap() >= 1);
    assert!(!v["cpu"]["model"].as_str().unwrap().is_empty());
    assert!(v["cpu"]["features"].is_array());
    let best = neon_runtime::BackendKind::best().name();
    for key in ["openwakeword.embedding", "moonshine_asr.encoder", "moonshine_asr.decoder"] {
        assert_eq!(v["backends"][key], best, "{key}");
    }
    assert_eq!(v["backends"]["moonshine_asr.int8"], "dot");
    assert_eq!(v["moonshine_model"], dir);
    assert_eq!(v["skipped"], serde_json::json!([]));
    // The names of BENCHMARKS.md's "aarch64 peers: ONNX Runtime" rows; the step also on the
    // dot path the session option asks for.
    let mut want = Vec::new();
    for (key, name) in [
        ("ms_encoder_2", "Moonshine base-en encoder, 2 s (82 frames)"),
        ("ms_encoder_beckett", "Moonshine base-en encoder, beckett.wav (9.96 s, 413 frames)"),
        ("ms_step", "Moonshine base-en decoder step (position 7, 413 frames)"),
        ("ms_step", "Moonshine base-en decoder step (position 7, 413 frames), dot path"),
    ] {
        for threads in [1, 2] {
            want.push((key.to_string(), name.to_string(), threads));
        }
    }
    assert_eq!(rows(&v), want);
    let rtf: Vec<bool> = v["rows"].as_array().unwrap().iter().map(|r| r["rtf"].is_null()).collect();
    assert_eq!(rtf, [false, false, false, false, true, true, true, true], "no RTF for a step");
}

#[test]
fn every_other_row_without_the_model_and_with_selected_backends() {
    let v = report_1_thread(&[
        "--model-dir",
        "/nonexistent",
        "--session-option",
        r#"openwakeword.exec_plan={"embedding":"portable"}"#,
        "--session-option",
        r#"sanotts.exec_plan={"decoder":"portable"}"#,
    ]);
    assert_eq!(v["backends"]["openwakeword.embedding"], "portable");
    assert_eq!(v["backends"]["sanotts.decoder"], "portable");
    assert_eq!(v["backends"]["moonshine_asr.int8"], "widening");
    assert!(v["backends"]["microwakeword.step"].is_string());
    assert!(v["moonshine_model"].is_null());
    // The names of BENCHMARKS.md's aarch64 peer rows (TFLite and ONNX Runtime), one thread
    // (`--threads 1` times one count).
    let want = [
        ("vad", "Silero VAD, one 32 ms window"),
        ("oww_chunk", "openWakeWord chunk (80 ms): mel + embedding + hey_jarvis"),
        (
            "oww_heads",
            "openWakeWord chunk (80 ms), five heads: ours WakeDetector::push (incremental embedding)",
        ),
        ("micro_step", "microWakeWord alexa, one step (30 ms)"),
        ("micro_step", "microWakeWord hey_jarvis, one step (30 ms)"),
        ("micro_step", "microWakeWord hey_mycroft, one step (30 ms)"),
        ("micro_step", "microWakeWord okay_nabu, one step (30 ms)"),
        ("micro_stream", "microWakeWord, the four on one stream, 1 s of audio"),
        ("sanotts", "sanoTTS decoder, 1 s of audio (125 frames)"),
    ];
    let want: Vec<_> = want.iter().map(|(k, n)| (k.to_string(), n.to_string(), 1)).collect();
    assert_eq!(rows(&v), want);
    let audio: Vec<f64> =
        v["rows"].as_array().unwrap().iter().map(|r| r["audio_ms"].as_f64().unwrap()).collect();
    assert_eq!(audio, [32.0, 80.0, 80.0, 30.0, 30.0, 30.0, 30.0, 1000.0, 1000.0]);
    let skipped: Vec<&str> =
        v["skipped"].as_array().unwrap().iter().map(|s| s["key"].as_str().unwrap()).collect();
    assert_eq!(skipped, ["ms_encoder_2", "ms_encoder_beckett", "ms_step"]);
    assert!(v["skipped"][0]["reason"].as_str().unwrap().contains("/nonexistent"));
}

#[test]
fn only_selects_rows_and_the_text_table() {
    // The whole-window row with the session's embedding mode in the five-heads row's name.
    let v = report_1_thread(&[
        "--only",
        "oww_heads,vad,vad",
        "--session-option",
        "openwakeword.embedding_mode=full",
    ]);
    let keys: Vec<_> = rows(&v).into_iter().map(|(k, n, _)| (k, n)).collect();
    assert_eq!(
        keys,
        [
            ("vad".into(), "Silero VAD, one 32 ms window".into()),
            (
                "oww_heads".into(),
                "openWakeWord chunk (80 ms), five heads: ours WakeDetector::push (whole-window \
                 embedding)"
                    .into()
            ),
        ]
    );
    // The text form: a markdown table, and how to get the Moonshine model.
    let o = neon(&[
        "bench",
        "--seconds",
        "0.01",
        "--threads",
        "1",
        "--model-dir",
        "/nonexistent",
        "--only",
        "micro_step,ms_step",
    ]);
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success() && text.contains("tools/moonshine/fetch.sh"), "{text}");
    assert!(text.contains("| workload | threads | time per call | calls/s | RTF |"), "{text}");
    assert!(text.contains("| microWakeWord alexa, one step (30 ms) | 1 | "), "{text}");
    assert!(text.contains("skipped ms_step: no Moonshine model at /nonexistent"), "{text}");
    assert!(!text.contains("Silero VAD"), "{text}");
}

#[test]
fn bad_arguments_are_one_line_errors() {
    for (args, message) in [
        (&["bench", "--seconds", "0"][..], "neon: --seconds must be in (0, 600], got 0"),
        (&["bench", "--threads", "0"][..], "neon: --threads must be in 1..=64, got 0"),
        (
            &["bench", "--session-option", "x=1"][..],
            "neon: session option `x`: unknown session option",
        ),
        (
            &["bench", "--only", "vad,whisper"][..],
            "neon: --only: unknown workload `whisper` (one of: vad, oww, micro, sanotts, \
             moonshine, oww_chunk, oww_heads, micro_step, micro_stream, ms_encoder_2, \
             ms_encoder_beckett, ms_step)",
        ),
        (
            &["bench", "--only", ""][..],
            "neon: --only: unknown workload `` (one of: vad, oww, micro, sanotts, moonshine, \
             oww_chunk, oww_heads, micro_step, micro_stream, ms_encoder_2, ms_encoder_beckett, \
             ms_step)",
        ),
    ] {
        common::assert_one_line_error(args, message);
    }
}
