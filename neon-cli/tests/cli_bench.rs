//! `neon bench` as a user runs it: the JSON report (CPU, backends, one run per thread
//! count, the microWakeWord steps), without the Moonshine model, and its errors. Timings are not asserted (they are
//! the machine's); only that they are there and positive.
//!
//! Host only (see cli_wake.rs). Needs the converted Moonshine model for the first test.
#![cfg(not(target_arch = "aarch64"))]

mod common;

use common::neon;

fn report(args: &[&str]) -> serde_json::Value {
    let o = neon(args);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    serde_json::from_slice(&o.stdout).unwrap()
}

#[test]
fn json_report_with_the_moonshine_model() {
    let dir = common::moonshine::model_dir();
    let dir = dir.to_str().unwrap();
    let v = report(&["bench", "--json", "--seconds", "0.01", "--threads", "2", "--model-dir", dir]);
    assert_eq!(v["neon_version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(v["cpu"]["arch"], std::env::consts::ARCH);
    assert!(v["cpu"]["cores"].as_u64().unwrap() >= 1);
    assert!(!v["cpu"]["model"].as_str().unwrap().is_empty());
    assert!(v["cpu"]["features"].is_array());
    let best = neon_runtime::BackendKind::best().name();
    for key in ["openwakeword.embedding", "moonshine_asr.encoder", "moonshine_asr.decoder"] {
        assert_eq!(v["backends"][key], best, "{key}");
    }
    assert_eq!(v["openwakeword_heads"], 5);
    assert!((v["moonshine_audio_s"].as_f64().unwrap() - 9.963375).abs() < 1e-6);
    let runs = v["runs"].as_array().unwrap();
    assert_eq!(runs.iter().map(|r| r["threads"].as_u64().unwrap()).collect::<Vec<_>>(), [1, 2]);
    for r in runs {
        for key in [
            "openwakeword_chunk_ms",
            "openwakeword_rtf",
            "moonshine_encoder_ms",
            "moonshine_encoder_rtf",
            "moonshine_decoder_step_ms",
        ] {
            assert!(r[key].as_f64().unwrap() > 0.0, "{key}: {r}");
        }
    }
}

#[test]
fn without_the_model_and_with_a_selected_backend() {
    let v = report(&[
        "bench",
        "--json",
        "--seconds",
        "0.01",
        "--threads",
        "1",
        "--model-dir",
        "/nonexistent",
        "--session-option",
        r#"openwakeword.exec_plan={"embedding":"portable"}"#,
    ]);
    assert_eq!(v["backends"]["openwakeword.embedding"], "portable");
    assert!(v["moonshine_audio_s"].is_null());
    let runs = v["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 1, "--threads 1 times one count");
    assert!(runs[0]["openwakeword_chunk_ms"].as_f64().unwrap() > 0.0);
    assert!(runs[0]["moonshine_encoder_ms"].is_null());
    // microWakeWord: the four official models' steps, the four on one stream per second.
    let micro = &v["microwakeword"];
    let steps = micro["step_ms"].as_array().unwrap();
    let names: Vec<_> = steps.iter().map(|s| s["model"].as_str().unwrap()).collect();
    assert_eq!(names, ["alexa", "hey_jarvis", "hey_mycroft", "okay_nabu"]);
    for s in steps {
        assert_eq!(s["frames"], 3, "{s}");
        assert!(s["ms"].as_f64().unwrap() > 0.0, "{s}");
    }
    assert_eq!(micro["models_per_stream"], 4);
    assert!(micro["second_ms"].as_f64().unwrap() > 0.0 && micro["rtf"].as_f64().unwrap() > 0.0);
    assert!(v["backends"]["microwakeword.step"].is_string());
    // The text form says how to get the model.
    let o = neon(&["bench", "--seconds", "0.01", "--threads", "1", "--model-dir", "/nonexistent"]);
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success() && text.contains("tools/moonshine/fetch.sh"), "{text}");
    assert!(text.contains("openWakeWord chunk"), "{text}");
    assert!(text.contains("microWakeWord step: alexa"), "{text}");
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
    ] {
        common::assert_one_line_error(args, message);
    }
}
