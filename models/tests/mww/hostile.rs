//! microWakeWord's frontend, settings and loader against hostile input: extreme and long audio
//! (no overflow panic in a debug build), odd JSON (a one-line error naming the file), and
//! files that are directories, symlink loops or too large (refused without reading them).

use std::path::{Path, PathBuf};

use neon_models::error::WeightsSource;
use neon_models::microwakeword::config::MicroConfig;
use neon_models::microwakeword::frontend::{Frontend, FEATURES};
use neon_models::microwakeword::load::{load, scan_dir};
use rand::{Rng, SeedableRng};

/// A fresh scratch directory for test `name`.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("neon-mww-hostile-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Frames of `samples` fed in one call.
fn frames(samples: &[i16]) -> Vec<[u16; FEATURES]> {
    let mut out = Vec::new();
    Frontend::new().push(samples, |f| out.push(*f));
    out
}

#[test]
fn frontend_takes_extreme_audio() {
    let n = 16_000;
    let cases: Vec<(&str, Vec<i16>)> = vec![
        ("+full scale", vec![i16::MAX; n]),
        ("-full scale", vec![i16::MIN; n]),
        (
            "alternating extremes",
            (0..n).map(|i| if i % 2 == 0 { i16::MIN } else { i16::MAX }).collect(),
        ),
        ("min, max pairs", (0..n).map(|i| if i % 4 < 2 { i16::MIN } else { i16::MAX }).collect()),
        (
            "single -32768 impulses",
            (0..n).map(|i| if i % 480 == 240 { i16::MIN } else { 0 }).collect(),
        ),
        (
            "silence then full scale",
            (0..4 * n)
                .map(|i| {
                    if i < 3 * n {
                        0
                    } else if i % 2 == 0 {
                        i16::MIN
                    } else {
                        i16::MAX
                    }
                })
                .collect(),
        ),
    ];
    for (name, samples) in cases {
        let f = frames(&samples);
        assert_eq!(f.len(), (samples.len() - 480) / 160 + 1, "{name}");
    }
}

#[test]
fn frontend_ten_minutes_in_random_chunks() {
    let mut rng = rand::rngs::SmallRng::seed_from_u64(39);
    let total = 16_000 * 600;
    let samples: Vec<i16> = (0..total)
        .map(|i| match (i / 16_000) % 4 {
            0 => 0,
            1 => rng.gen(),
            2 => {
                if rng.gen_bool(0.5) {
                    i16::MIN
                } else {
                    i16::MAX
                }
            }
            _ => rng.gen::<i16>() >> 8,
        })
        .collect();
    let mut frontend = Frontend::new();
    let mut chunked = Vec::new();
    let mut rest = &samples[..];
    while !rest.is_empty() {
        let take = rng.gen_range(0..=4000).min(rest.len());
        frontend.push(&rest[..take], |f| chunked.push(*f));
        rest = &rest[take..];
    }
    assert_eq!(chunked.len(), (total - 480) / 160 + 1);
    assert!(frontend.buffered() < 480);
    assert!(chunked == frames(&samples), "any chunking gives the frames of one call");
}

/// The one-line message of a config that must fail.
fn config_error(text: &str) -> String {
    let source = WeightsSource::File("dir/x.json".into());
    let e = MicroConfig::from_json(text, &source).expect_err(text).to_string();
    assert!(!e.contains('\n'), "one line: {e}");
    assert!(e.starts_with("dir/x.json: "), "names the file: {e}");
    e
}

/// A model JSON with `micro` given as JSON text.
fn json(micro: &str) -> String {
    format!(r#"{{"type": "micro", "wake_word": "W", "model": "w.tflite", "micro": {micro}}}"#)
}

#[test]
fn config_refuses_odd_json() {
    let w = r#""sliding_window_size": 5"#;
    let c = r#""probability_cutoff": 0.5"#;
    for micro in [
        format!(r#"{{"probability_cutoff": 1e400, {w}}}"#),
        format!(r#"{{"probability_cutoff": -0.0, {w}}}"#),
        format!(r#"{{"probability_cutoff": "NaN", {w}}}"#),
        format!(r#"{{"probability_cutoff": "0.5", {w}}}"#),
        format!(r#"{{"probability_cutoff": [0.5], {w}}}"#),
        format!(r#"{{"probability_cutoff": {{"a\nb": 1}}, {w}}}"#),
        format!(r#"{{{c}, "sliding_window_size": 18446744073709551616}}"#),
        format!(r#"{{{c}, "sliding_window_size": 1e30}}"#),
        format!(r#"{{{c}, "sliding_window_size": 4294967297}}"#),
        format!(r#"{{{c}, "sliding_window_size": -1}}"#),
        format!(r#"{{{c}, "sliding_window_size": 5.5}}"#),
        format!(r#"{{{c}, "sliding_window_size": 0}}"#),
        format!(r#"{{{c}, {w}, "feature_step_size": 18446744073709551615}}"#),
        format!(r#"{{{c}, {w}, "tensor_arena_size": -5}}"#),
        format!(r#"{{{c}, {w}, "feature_step_size": "10\n"}}"#),
    ] {
        config_error(&json(&micro));
    }
    let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
    config_error(&deep);
    config_error(&json(&deep));
    config_error("\u{feff}{}");
    config_error(r#"{"type": "micro\nx"}"#);
    config_error(r#"{"type": "micro", "model": "\n", "wake_word": 5, "micro": {}}"#);
    config_error("");
    config_error("null");
}

/// A model JSON naming `model`.
fn model_json(model: &str) -> String {
    json(r#"{"probability_cutoff": 0.5, "sliding_window_size": 5}"#).replace("w.tflite", model)
}

#[test]
fn loader_refuses_directories_loops_and_huge_files() {
    let dir = scratch("files");
    // A directory where the model should be.
    std::fs::create_dir(dir.join("d.tflite")).unwrap();
    std::fs::write(dir.join("d.json"), model_json("d.tflite")).unwrap();
    assert!(load(&dir.join("d.json")).is_err());
    assert!(load(&dir.join("d.tflite")).is_err());
    // A directory named like a JSON.
    std::fs::create_dir(dir.join("e.json")).unwrap();
    assert!(load(&dir.join("e.json")).is_err());
    // A 2 GiB sparse model: refused by the read limit, quickly.
    let big = std::fs::File::create(dir.join("big.tflite")).unwrap();
    big.set_len(2 << 30).unwrap();
    drop(big);
    let file = load(&dir.join("big.tflite")).unwrap();
    let start = std::time::Instant::now();
    let e = file.tflite_bytes().expect_err("too large").to_string();
    assert!(start.elapsed().as_millis() < 500, "read it all? {e}");
    assert!(!e.contains('\n') && e.contains("limit"), "{e}");
    // A 2 GiB sparse JSON.
    let big = std::fs::File::create(dir.join("huge.json")).unwrap();
    big.set_len(2 << 30).unwrap();
    drop(big);
    assert!(load(&dir.join("huge.json")).is_err());
    // A `model` escaping the directory: allowed as the peers allow it (the file is read
    // with the model limit and must still parse as a model).
    #[cfg(unix)]
    {
        std::fs::write(dir.join("esc.json"), model_json("../../../../../../../../etc/passwd"))
            .unwrap();
        if Path::new("/etc/passwd").is_file() {
            let f = load(&dir.join("esc.json")).unwrap();
            assert!(f.tflite_bytes().is_ok());
        }
        std::os::unix::fs::symlink("loop_b.json", dir.join("loop_a.json")).unwrap();
        std::os::unix::fs::symlink("loop_a.json", dir.join("loop_b.json")).unwrap();
        std::os::unix::fs::symlink(".", dir.join("self")).unwrap();
        std::fs::write(dir.join("lp.json"), model_json("self/self/self/lp.json")).unwrap();
        assert!(load(&dir.join("loop_a.json")).is_err());
        assert!(load(&dir.join("lp.json")).is_ok(), "a path through a symlink is a path");
    }
    // Symlink loops and directories are passed over; the huge JSON and the directory model
    // are skipped with reasons.
    let scan = scan_dir(&dir).unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    let names: Vec<_> = scan.models.iter().map(|m| m.name.as_str()).collect();
    assert!(!names.contains(&"d") && !names.contains(&"huge"), "{names:?}");
    let skipped: Vec<_> = scan.skipped.iter().map(|s| s.path.file_name().unwrap()).collect();
    assert!(skipped.contains(&"huge.json".as_ref()) && skipped.contains(&"d.json".as_ref()));
    assert!(scan.skipped.iter().all(|s| !s.reason.contains('\n')), "{:?}", scan.skipped);
}
