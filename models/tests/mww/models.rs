//! microWakeWord model files: the embedded official models, the model JSON and finding
//! models on disk (models/src/microwakeword/{builtin,config,load}.rs). Expected values are
//! the JSON fields listed in tools/microwakeword/FACTS.md, section 3.

use std::path::{Path, PathBuf};

use neon_models::error::WeightsSource;
use neon_models::microwakeword::builtin;
use neon_models::microwakeword::config::{MicroConfig, MAX_SLIDING_WINDOW};
use neon_models::microwakeword::load::{load, scan_dir, scan_dirs, MicroModelFile, TfliteSource};
use neon_models::Error;

const OFFICIAL: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/microwakeword");
const COMMUNITY: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/microwakeword/wakewords");

/// (name, wake word, cutoff, arena) of the official models (FACTS.md, section 3).
const OFFICIAL_FACTS: [(&str, &str, f64, u64); 4] = [
    ("alexa", "Alexa", 0.9, 22348),
    ("hey_jarvis", "Hey Jarvis", 0.97, 22860),
    ("hey_mycroft", "Hey Mycroft", 0.95, 23628),
    ("okay_nabu", "Okay Nabu", 0.85, 37000),
];

/// (name, wake word) of the community models: cutoff 0.97, arena 30000.
const COMMUNITY_FACTS: [(&str, &str); 3] = [
    ("choo_choo_homie", "Choo Choo Homie"),
    ("hey_home_assistant", "Hey Home Assistant"),
    ("okay_computer", "Okay Computer"),
];

/// A fresh scratch directory for test `name`.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("neon-mww-models-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A model JSON with `micro` given as JSON text.
fn json(model: &str, micro: &str) -> String {
    format!(
        r#"{{"type": "micro", "wake_word": "Test Word", "model": "{model}",
             "trained_languages": ["en"], "version": 2, "micro": {micro}}}"#
    )
}

const GOOD_MICRO: &str = r#"{"probability_cutoff": 0.8, "sliding_window_size": 4,
                             "feature_step_size": 10, "tensor_arena_size": 1000}"#;

/// The one-line message of a config that must fail.
fn config_error(text: &str) -> String {
    let source = WeightsSource::File("dir/x.json".into());
    let e = MicroConfig::from_json(text, &source).expect_err("must fail").to_string();
    assert!(!e.contains('\n'), "one line: {e}");
    assert!(e.starts_with("dir/x.json: "), "names the file: {e}");
    e
}

fn check_official(file: &MicroModelFile, (name, phrase, cutoff, arena): (&str, &str, f64, u64)) {
    assert_eq!(file.name, name);
    let c = &file.config;
    assert_eq!(c.wake_word, phrase);
    assert_eq!(c.model, format!("{name}.tflite"));
    assert_eq!((c.probability_cutoff, c.sliding_window_size), (cutoff, 5), "{name}");
    assert_eq!((c.feature_step_size, c.tensor_arena_size), (10, Some(arena)), "{name}");
    assert_eq!(c.author, "Kevin Ahrendt");
    assert_eq!(c.website, "https://www.kevinahrendt.com/");
    assert_eq!(c.version, "2");
    let langs: &[&str] =
        if name == "okay_nabu" { &["en", "nl", "fr", "de", "it", "es", "sv"] } else { &["en"] };
    assert_eq!(c.trained_languages, langs);
}

#[test]
fn builtins_match_their_json_and_files() {
    let names: Vec<&str> = builtin::names().collect();
    assert_eq!(names, ["alexa", "hey_jarvis", "hey_mycroft", "okay_nabu"]);
    assert!(builtin::get("hey_rhasspy").is_none());
    for facts in OFFICIAL_FACTS {
        let model = builtin::get(facts.0).unwrap();
        let file = MicroModelFile::builtin(model);
        check_official(&file, facts);
        // The constants equal the embedded JSON, and the embedded files the committed ones.
        let parsed = MicroConfig::from_json(model.json, &file.source()).unwrap();
        assert_eq!(parsed, file.config, "{}", facts.0);
        let path = Path::new(OFFICIAL).join(format!("{}.tflite", facts.0));
        assert_eq!(model.tflite, std::fs::read(&path).unwrap());
        assert_eq!(&model.tflite[4..8], b"TFL3", "a TFLite FlatBuffer");
        assert_eq!(*file.tflite_bytes().unwrap(), *model.tflite);
        assert_eq!(file.source(), WeightsSource::Embedded(facts.0));
        // Loading the committed files by path gives the same settings.
        let json_path = Path::new(OFFICIAL).join(format!("{}.json", facts.0));
        let on_disk = load(&json_path).unwrap();
        assert_eq!(on_disk.config, file.config);
        assert_eq!(on_disk.tflite, TfliteSource::File(path.clone()));
        assert_eq!(load(&path).unwrap(), on_disk);
    }
}

#[test]
fn community_models_load_and_scan() {
    let scan = scan_dir(Path::new(COMMUNITY)).unwrap();
    assert!(scan.skipped.is_empty(), "{:?}", scan.skipped);
    let names: Vec<&str> = scan.models.iter().map(|m| m.name.as_str()).collect();
    assert_eq!(names, COMMUNITY_FACTS.map(|(n, _)| n));
    for (model, (name, phrase)) in scan.models.iter().zip(COMMUNITY_FACTS) {
        let c = &model.config;
        assert_eq!(c.wake_word, phrase);
        assert_eq!((c.probability_cutoff, c.sliding_window_size), (0.97, 5), "{name}");
        assert_eq!((c.feature_step_size, c.tensor_arena_size), (10, Some(30000)), "{name}");
        assert_eq!((c.author.as_str(), c.version.as_str()), ("Michael Hansen", "2"));
        let tflite = Path::new(COMMUNITY).join(format!("{name}.tflite"));
        assert_eq!(model.tflite, TfliteSource::File(tflite.clone()));
        assert_eq!(model.tflite_bytes().unwrap().len(), 62112);
        assert_eq!(&load(&tflite).unwrap(), model);
    }
    // The official directory holds the 4 models and frontend_tables.json (no `type`).
    let official = scan_dir(Path::new(OFFICIAL)).unwrap();
    assert_eq!(official.models.len(), 4);
    assert_eq!(official.skipped.len(), 1, "{:?}", official.skipped);
    assert!(official.skipped[0].reason.contains("not a microWakeWord model"));
}

#[test]
fn the_first_directory_wins_a_name() {
    let dir = scratch("first-wins");
    std::fs::write(dir.join("okay_computer.json"), json("other.tflite", GOOD_MICRO)).unwrap();
    std::fs::write(dir.join("other.tflite"), b"x").unwrap();
    std::fs::write(dir.join("notes.json"), r#"{"type": "openWakeWord"}"#).unwrap();
    std::fs::write(dir.join("broken.json"), "{").unwrap();
    std::fs::write(dir.join("lonely.json"), json("absent.tflite", GOOD_MICRO)).unwrap();
    let scan = scan_dirs(&[Path::new(COMMUNITY), &dir]).unwrap();
    assert_eq!(scan.models.len(), 3);
    assert!(scan.models.iter().all(|m| m.config.probability_cutoff == 0.97));
    let reasons: Vec<String> = scan.skipped.iter().map(|s| s.to_string()).collect();
    assert_eq!(reasons.len(), 4, "{reasons:?}");
    assert!(reasons[0].contains("broken.json: not valid JSON"), "{reasons:?}");
    assert!(reasons[1].contains("lonely.json: its model file is missing"), "{reasons:?}");
    assert!(reasons[2].contains("type `openWakeWord`"), "{reasons:?}");
    assert!(reasons[3].contains("a model named `okay_computer` was found before"), "{reasons:?}");
    // In the other order, the scratch directory's okay_computer is found.
    let scan = scan_dirs(&[&dir, Path::new(COMMUNITY)]).unwrap();
    let ok = scan.models.iter().find(|m| m.name == "okay_computer").unwrap();
    assert_eq!(ok.config.probability_cutoff, 0.8);
    // A malformed microWakeWord JSON is an error naming the file.
    std::fs::write(dir.join("bad.json"), json("other.tflite", "{}")).unwrap();
    let e = scan_dir(&dir).expect_err("must fail").to_string();
    assert!(e.contains("bad.json") && e.contains("micro.probability_cutoff"), "{e}");
    std::fs::remove_dir_all(&dir).unwrap();
    assert!(matches!(scan_dir(&dir), Err(Error::Io { .. })));
}

#[test]
fn config_errors_name_the_file_and_field() {
    let good = MicroConfig::from_json(&json("m.tflite", GOOD_MICRO), &WeightsSource::Embedded("t"));
    let good = good.unwrap();
    assert_eq!((good.probability_cutoff, good.sliding_window_size), (0.8, 4));
    let e = config_error(r#"{"type": "openWakeWord", "model": "x.onnx"}"#);
    assert!(e.contains(r#"not a microWakeWord model (type "openWakeWord")"#), "{e}");
    let e = config_error(r#"{"model": "x.tflite"}"#);
    assert!(e.contains("not a microWakeWord model (no `type` field)"), "{e}");
    assert!(config_error("[1, 2]").contains("not a JSON object"));
    assert!(config_error("{").contains("not valid JSON"));
    let no_wake_word = r#"{"type": "micro", "model": "m.tflite", "micro": {}}"#;
    assert!(config_error(no_wake_word).contains("field `wake_word` is missing"));
    let no_model = r#"{"type": "micro", "wake_word": "W", "micro": {}}"#;
    assert!(config_error(no_model).contains("field `model` is missing"));
    let no_micro = r#"{"type": "micro", "wake_word": "W", "model": "m.tflite"}"#;
    assert!(config_error(no_micro).contains("field `micro` is missing"));
    assert!(config_error(&json("", GOOD_MICRO)).contains("field `model` is empty"));
    let cases = [
        (r#"{"sliding_window_size": 5}"#, "field `micro.probability_cutoff` is missing"),
        (r#"{"probability_cutoff": 0.5}"#, "field `micro.sliding_window_size` is missing"),
        (
            r#"{"probability_cutoff": 1.5, "sliding_window_size": 5}"#,
            "field `micro.probability_cutoff` is 1.5: expected a number in (0, 1)",
        ),
        (r#"{"probability_cutoff": 0, "sliding_window_size": 5}"#, "is 0: expected a number"),
        (r#"{"probability_cutoff": "0.5", "sliding_window_size": 5}"#, "expected a number"),
        (
            r#"{"probability_cutoff": 0.5, "sliding_window_size": 0}"#,
            "field `micro.sliding_window_size` is 0: expected an integer in 1..=1024",
        ),
        (r#"{"probability_cutoff": 0.5, "sliding_window_size": 2.5}"#, "is 2.5: expected"),
        (
            r#"{"probability_cutoff": 0.5, "sliding_window_size": 5, "feature_step_size": 20}"#,
            "field `micro.feature_step_size` is 20: only 10 (ms) is supported",
        ),
        (
            r#"{"probability_cutoff": 0.5, "sliding_window_size": 5, "tensor_arena_size": -1}"#,
            "field `micro.tensor_arena_size` is -1: expected a non-negative integer",
        ),
    ];
    for (micro, expected) in cases {
        let e = config_error(&json("m.tflite", micro));
        assert!(e.contains(expected), "{micro}: {e}");
    }
    let max =
        format!(r#"{{"probability_cutoff": 0.5, "sliding_window_size": {MAX_SLIDING_WINDOW}}}"#);
    let source = WeightsSource::Embedded("t");
    assert!(MicroConfig::from_json(&json("m.tflite", &max), &source).is_ok());
    let over = max.replace("1024", "1025");
    assert!(config_error(&json("m.tflite", &over)).contains("is 1025"));
    let wrong_langs = r#"{"type": "micro", "wake_word": "W", "model": "m.tflite",
        "trained_languages": "en", "micro": {"probability_cutoff": 0.5, "sliding_window_size": 5}}"#;
    assert!(config_error(wrong_langs).contains("`trained_languages` is not an array of strings"));
}

#[test]
fn load_errors_and_defaults() {
    let dir = scratch("load");
    // A .tflite without JSON gets our defaults.
    std::fs::write(dir.join("hey_luna.tflite"), b"x").unwrap();
    let m = load(&dir.join("hey_luna.tflite")).unwrap();
    assert_eq!(m.name, "hey_luna");
    assert_eq!(m.config, MicroConfig::default_for("hey_luna"));
    let c = &m.config;
    assert_eq!((c.wake_word.as_str(), c.model.as_str()), ("Hey Luna", "hey_luna.tflite"));
    assert_eq!((c.probability_cutoff, c.sliding_window_size, c.feature_step_size), (0.9, 5, 10));
    assert_eq!(c.tensor_arena_size, None);
    // A JSON whose model file is missing.
    std::fs::write(dir.join("gone.json"), json("gone.tflite", GOOD_MICRO)).unwrap();
    let e = load(&dir.join("gone.json")).expect_err("must fail").to_string();
    assert!(e.contains("gone.json: field `model` names") && e.contains("not a file"), "{e}");
    // A sibling JSON describing another file.
    std::fs::write(dir.join("a.tflite"), b"x").unwrap();
    std::fs::write(dir.join("a.json"), json("b.tflite", GOOD_MICRO)).unwrap();
    let e = load(&dir.join("a.tflite")).expect_err("must fail").to_string();
    assert!(e.contains("a.json: field `model` is `b.tflite`, not `a.tflite`"), "{e}");
    // `model` may be a relative path, as the peers join it to the JSON's directory.
    std::fs::create_dir(dir.join("sub")).unwrap();
    std::fs::write(dir.join("sub/c.tflite"), b"x").unwrap();
    std::fs::write(dir.join("sub/c.json"), json("../sub/c.tflite", GOOD_MICRO)).unwrap();
    assert_eq!(load(&dir.join("sub/c.tflite")).unwrap().config.model, "../sub/c.tflite");
    let m = load(&dir.join("sub/c.json")).unwrap();
    assert_eq!(m.tflite, TfliteSource::File(dir.join("sub/../sub/c.tflite")));
    // A sibling JSON of another type.
    std::fs::write(dir.join("a.json"), r#"{"type": "openWakeWord"}"#).unwrap();
    let e = load(&dir.join("a.tflite")).expect_err("must fail").to_string();
    assert!(e.contains("not a microWakeWord model"), "{e}");
    // Missing files, directories and other extensions.
    assert!(matches!(load(&dir.join("none.tflite")), Err(Error::Io { .. })));
    assert!(matches!(load(&dir.join("none.json")), Err(Error::Io { .. })));
    std::fs::create_dir(dir.join("d.tflite")).unwrap();
    assert!(matches!(load(&dir.join("d.tflite")), Err(Error::Io { .. })));
    assert!(matches!(load(&dir.join("a.onnx")), Err(Error::Unknown { .. })));
    std::fs::remove_dir_all(&dir).unwrap();
}
