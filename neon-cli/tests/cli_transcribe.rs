//! `neon transcribe` as a user runs it: beckett.wav as text and as JSON (the golden tokens,
//! with `--vad off`: the audio as given, as ONNX Runtime decoded it; the default decodes the
//! VAD's speech windows, which keeps the words), audio longer than one 30 s segment (cut at
//! pauses, every part transcribed), raw stdin, and clean one-line errors for a missing or
//! malformed model.
//!
//! Host only (see cli_wake.rs). Needs the converted model (`tools/moonshine/fetch.sh`).
#![cfg(not(target_arch = "aarch64"))]

mod common;

use std::io::Write;
use std::process::{Command, Output, Stdio};

use common::moonshine::*;
use common::neon;

fn text(o: &Output) -> String {
    assert!(o.status.success(), "neon failed: {}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8_lossy(&o.stdout).trim_end().to_string()
}

fn beckett() -> String {
    model_dir().join("beckett.wav").to_string_lossy().into_owned()
}

/// Lowercase words without punctuation.
fn words(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric() && c != '\'')
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect()
}

#[test]
fn beckett_text_and_json() {
    let g = goldens().into_iter().find(|g| g.name == "beckett").unwrap();
    assert_eq!(text(&neon(&["transcribe", &beckett(), "--vad", "off"])), g.text);
    // The speech window (from the first onset to the last offset) holds the same words.
    assert_eq!(words(&text(&neon(&["transcribe", &beckett()]))), words(&g.text));
    let out = text(&neon(&["transcribe", &beckett(), "--json", "--vad", "off"]));
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["text"], g.text.as_str());
    let tokens: Vec<u32> =
        v["tokens"].as_array().unwrap().iter().map(|t| t.as_u64().unwrap() as u32).collect();
    assert_eq!(tokens, g.tokens);
    assert!((v["audio_s"].as_f64().unwrap() - 9.963375).abs() < 1e-9);
    assert!(v["encoder_ms"].as_f64().unwrap() > 0.0 && v["decode_ms"].as_f64().unwrap() > 0.0);
}

/// Our three clips and beckett, each followed by 1 s of silence, repeated to 70 s: with
/// `--vad off` three segments cut in the pauses, so every clip is transcribed whole, in
/// order. (Moonshine words a clip differently inside a longer segment, e.g. "seven
/// forty-five" for "7:45", so the check is one distinctive word per clip.) By default the
/// VAD's windows (speech less than 2 s apart, up to 30 s; beckett.wav's own trailing
/// silence makes its gap 2.02 s) are 9, 24, 24 and 14 s long and cover every clip too; in the
/// third, Moonshine hears the synthetic "quick brown fox jumps over" as "quick brown fax jump
/// sober" (the same clip in the second window is right), so there one keyword of the twelve
/// may be missing: the check is that the rest come in order.
#[test]
fn long_audio_is_segmented_at_pauses() {
    let goldens = goldens();
    let mut audio = Vec::new();
    let mut expected = Vec::new();
    while audio.len() < 70 * 16_000 {
        for g in &goldens {
            audio.extend_from_slice(&g.audio);
            audio.extend(std::iter::repeat_n(0.0f32, 16_000));
            expected.push(match g.name.as_str() {
                "beckett" => "tried",
                "open_the_door" => "door",
                "quick_brown_fox" => "fox",
                "train_numbers" => "train",
                other => panic!("no keyword for clip {other}"),
            });
        }
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("long.wav");
    let mut w = hound::WavWriter::create(&path, common::wav_spec(16_000, 1, 32, true)).unwrap();
    for &s in &audio {
        w.write_sample(s).unwrap();
    }
    w.finalize().unwrap();
    for vad in ["off", "on"] {
        let out = text(&neon(&["transcribe", path.to_str().unwrap(), "--json", "--vad", vad]));
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        let tokens = v["tokens"].as_array().unwrap();
        let segments = tokens.iter().filter(|t| t.as_u64() == Some(1)).count();
        let pieces = audio.len().div_ceil(30 * 16_000);
        assert!(segments == pieces || (vad == "on" && segments == pieces + 1), "{out}");
        let words: Vec<&str> = v["text"]
            .as_str()
            .unwrap()
            .split(|c: char| !c.is_alphanumeric())
            .filter(|w| expected.contains(w))
            .collect();
        if vad == "off" {
            assert_eq!(words, expected, "{out}");
        } else {
            let mut rest = expected.iter();
            let in_order = words.iter().all(|w| rest.any(|e| e == w));
            assert!(in_order && words.len() + 1 >= expected.len(), "--vad on: {out}");
        }
    }
}

#[test]
fn raw_stdin_matches_the_file() {
    let g = goldens().into_iter().find(|g| g.name == "open_the_door").unwrap();
    let raw: Vec<u8> =
        g.audio.iter().flat_map(|&x| ((x * 32768.0).round() as i16).to_le_bytes()).collect();
    let stdin = |vad: &str| {
        let mut child = common::neon_piped(&["transcribe", "-", "--vad", vad]);
        child.stdin.take().unwrap().write_all(&raw).unwrap();
        // One line per decode window: joined, the file's one-line transcript.
        let mut o = child.wait_with_output().unwrap();
        o.stdout = common::one_line(&o.stdout);
        text(&o)
    };
    assert_eq!(stdin("off"), g.text);
    let clip = model_dir().parent().unwrap().join("moonshine/clips/open_the_door.wav");
    assert_eq!(stdin("on"), text(&neon(&["transcribe", clip.to_str().unwrap()])));
}

#[test]
fn missing_or_malformed_model_is_a_one_line_error() {
    let dir = tempfile::tempdir().unwrap();
    let o = neon(&["transcribe", &beckett(), "--model-dir", dir.path().to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("tools/moonshine/fetch.sh"), "{err}");

    // Valid weights, a tokenizer missing its last record.
    let src = model_dir();
    std::fs::copy(src.join("base-en.safetensors"), dir.path().join("base-en.safetensors")).unwrap();
    let tok = std::fs::read(src.join("tokenizer.bin")).unwrap();
    std::fs::write(dir.path().join("tokenizer.bin"), &tok[..tok.len() - 3]).unwrap();
    let o = neon(&["transcribe", &beckett(), "--model-dir", dir.path().to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("tokenizer.bin") && err.contains("record"), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");

    // Truncated weights.
    let w = std::fs::read(src.join("base-en.safetensors")).unwrap();
    std::fs::write(dir.path().join("base-en.safetensors"), &w[..w.len() / 2]).unwrap();
    std::fs::write(dir.path().join("tokenizer.bin"), &tok).unwrap();
    let o = neon(&["transcribe", &beckett(), "--model-dir", dir.path().to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(String::from_utf8_lossy(&o.stderr).lines().count(), 1);
}

/// `--session-option`: a selected decoder backend and the int8 path give the golden text;
/// a bad option is a one-line error before any model is loaded.
#[test]
fn session_options_select_components_and_bad_ones_are_errors() {
    let g = goldens().into_iter().find(|g| g.name == "beckett").unwrap();
    let portable = r#"moonshine_asr.exec_plan={"decoder":{"impl":"portable"}}"#;
    let off = ["--vad", "off"];
    let args = ["transcribe", &beckett(), "--session-option", portable, off[0], off[1]];
    assert_eq!(text(&neon(&args)), g.text);
    // `--int8 dot` is the shorthand of `moonshine_asr.int8=dot`: the same output.
    let dot = text(&neon(&["transcribe", &beckett(), "--int8", "dot", "--json"]));
    let long = ["transcribe", &beckett(), "--session-option", "moonshine_asr.int8=dot", "--json"];
    let same = text(&neon(&long));
    let tokens = |s: &str| serde_json::from_str::<serde_json::Value>(s).unwrap()["tokens"].clone();
    assert_eq!(tokens(&dot), tokens(&same));
    for (option, message) in [
        ("moonshine_asr.int9=dot", "neon: session option `moonshine_asr.int9`: unknown session option; valid: "),
        ("moonshine_asr.exec_plan={\"decoder\":", "neon: session option `moonshine_asr.exec_plan`: malformed JSON: EOF while parsing a value at line 1 column 11"),
        ("moonshine_asr.exec_plan={\"head\":\"neon\"}", "neon: session option `moonshine_asr.exec_plan`: unknown component \"head\" of moonshine_asr; valid: encoder, decoder"),
    ] {
        // A model directory that does not exist: the option is refused first.
        let args = ["transcribe", "no-such.wav", "--model-dir", "/nonexistent", "--session-option", option];
        common::assert_one_line_error(&args, message);
    }
    // A key of another model, and a shorthand together with its long form, are errors.
    for (args, message) in [
        (&["--session-option", "openwakeword.embedding_mode=full"][..], "neon: session option `openwakeword.embedding_mode`: this command does not run openwakeword (it runs moonshine_asr, silero_vad)"),
        (&["--int8", "dot", "--session-option", "moonshine_asr.int8=widening"][..], "neon: --int8 and --session-option moonshine_asr.int8=... set the same option: give one"),
    ] {
        let mut all = vec!["transcribe", "no-such.wav", "--model-dir", "/nonexistent"];
        all.extend_from_slice(args);
        let o = neon(&all);
        assert_eq!(o.status.code(), Some(1), "{args:?}");
        assert_eq!(String::from_utf8_lossy(&o.stderr).trim_end(), message);
    }
    #[cfg(target_arch = "x86_64")]
    {
        let neon_impl = r#"moonshine_asr.exec_plan={"encoder":{"impl":"neon"}}"#;
        let o = neon(&["transcribe", &beckett(), "--session-option", neon_impl]);
        assert_eq!(o.status.code(), Some(1));
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains("impl \"neon\": it needs an aarch64 CPU"), "{err}");
    }
}

#[test]
fn empty_stdin_is_an_error_like_an_empty_file() {
    let o = Command::new(env!("CARGO_BIN_EXE_neon"))
        .args(["transcribe", "-", "--model-dir", model_dir().to_str().unwrap()])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&o.stderr),
        "neon: stdin: no samples (the input ended before one whole sample)\n"
    );
    assert!(o.stdout.is_empty());
}

/// `neon transcribe x.wav 2>&1 | head -1` and friends: an error message that cannot be
/// written is dropped, the status is still 1 (not a panic's 101).
#[test]
fn a_closed_stderr_is_not_a_panic() {
    common::assert_status_1_with_closed_stderr(&[
        "transcribe",
        "no-such.wav",
        "--model-dir",
        "/nonexistent",
    ]);
}

#[cfg(unix)]
/// The model files: each missing one named with the fetch hint; a directory in place of a
/// file said to be one; the tokenizer read and checked before the weights.
#[test]
fn model_files_are_checked_tokenizer_first() {
    let src = model_dir();
    let run = |dir: &std::path::Path| {
        let o = neon(&["transcribe", &beckett(), "--model-dir", dir.to_str().unwrap()]);
        assert_eq!(o.status.code(), Some(1));
        let err = String::from_utf8_lossy(&o.stderr).into_owned();
        assert_eq!(err.lines().count(), 1, "{err}");
        err
    };
    let dir = tempfile::tempdir().unwrap();
    let (weights, tokenizer) =
        (dir.path().join("base-en.safetensors"), dir.path().join("tokenizer.bin"));
    std::os::unix::fs::symlink(src.join("base-en.safetensors"), &weights).unwrap();
    let err = run(dir.path());
    assert!(
        err.starts_with(&format!(
            "neon: no Moonshine tokenizer at {}: run `tools/moonshine/fetch.sh`",
            tokenizer.display()
        )),
        "{err}"
    );
    std::fs::remove_file(&weights).unwrap();
    std::fs::create_dir(&weights).unwrap();
    std::fs::copy(src.join("tokenizer.bin"), &tokenizer).unwrap();
    let err = run(dir.path());
    assert_eq!(err, format!("neon: {}: is a directory, not a file\n", weights.display()));
    // A bad tokenizer is reported although the weights are bad too: it is read first.
    std::fs::write(&tokenizer, b"not a tokenizer").unwrap();
    let err = run(dir.path());
    assert!(err.starts_with(&format!("neon: {}: ", tokenizer.display())), "{err}");
}

/// 95 s of noise: with `--vad off` every 30 s segment warns that it gave no text; the
/// warning is printed once and its repetitions counted in one line at the end. By default
/// the VAD finds no speech in it: no text, and one warning that says so.
#[test]
fn a_warning_repeated_per_segment_is_printed_once_with_a_count() {
    // Roughly Gaussian noise (the sum of four uniforms) at about -26 dBFS, from an LCG.
    let mut state = 1u64;
    let mut uniform = || {
        state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (state >> 40) as f64 / (1u64 << 24) as f64 - 0.5
    };
    let raw: Vec<u8> = (0..95 * 16_000)
        .flat_map(|_| {
            let x = (uniform() + uniform() + uniform() + uniform()) * 0.1;
            ((x * 32767.0) as i16).to_le_bytes()
        })
        .collect();
    let run = |vad: &str| {
        let dir = model_dir();
        let mut child = common::neon_piped(&[
            "transcribe",
            "-",
            "--model-dir",
            dir.to_str().unwrap(),
            "--vad",
            vad,
        ]);
        child.stdin.take().unwrap().write_all(&raw).unwrap();
        child.wait_with_output().unwrap()
    };
    let o = run("on");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert_eq!(
        err,
        "neon: warning: stdin: no speech found by the voice-activity detector (nothing decoded; \
         --vad off decodes the audio as given)\n"
    );
    assert_eq!(String::from_utf8_lossy(&o.stdout), "\n");
    let o = run("off");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    let no_text: Vec<&str> = err.lines().filter(|l| l.contains("no text")).collect();
    assert_eq!(no_text.len(), 2, "{err}");
    assert!(no_text[0].starts_with("neon: warning: 0.00-"), "{err}");
    let summary =
        "neon: warning: a segment gave no text although the audio is not silent (repeated";
    assert!(no_text[1].starts_with(summary) && no_text[1].ends_with(" times)"), "{err}");
    // The counts come last, after every segment's warnings.
    let at = err.lines().position(|l| l == no_text[1]).unwrap();
    assert!(err.lines().skip(at).all(|l| l.ends_with(" times)")), "{err}");
}
