//! `neon listen` as a user runs it, on audio made by concatenating committed clips: a wake
//! word, the speech after it, silence, and again; from a WAV file and from raw stdin; an
//! utterance cut by the end of the input; audio without a wake word; bad arguments.
//!
//! Host only (see cli_wake.rs). Needs the converted Moonshine model.
#![cfg(not(target_arch = "aarch64"))]

mod common;

use std::path::Path;
use std::process::{Command, Output, Stdio};

use common::neon;

fn clip(path: &str) -> Vec<i16> {
    let root = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../models"));
    let mut r = hound::WavReader::open(root.join(path)).unwrap();
    assert_eq!(r.spec().sample_rate, 16_000);
    r.samples::<i16>().map(Result::unwrap).collect()
}

fn silence(seconds: f64) -> Vec<i16> {
    vec![0; (seconds * 16_000.0) as usize]
}

/// "hey jarvis, what time is it?", 0.3 s, "open the door, please", 1.5 s, "hey jarvis, ...",
/// 0.3 s, "the quick brown fox ...", then `tail` seconds of silence.
fn session(tail: f64) -> Vec<i16> {
    let jarvis = clip("openwakeword/clips/hey_jarvis.wav");
    let mut all = jarvis.clone();
    all.extend(silence(0.3));
    all.extend(clip("moonshine/clips/open_the_door.wav"));
    all.extend(silence(1.5));
    all.extend(jarvis);
    all.extend(silence(0.3));
    all.extend(clip("moonshine/clips/quick_brown_fox.wav"));
    all.extend(silence(tail));
    all
}

fn write_wav(path: &Path, samples: &[i16]) {
    let spec = hound::WavSpec {
        channels: 1,
        sample_rate: 16_000,
        bits_per_sample: 16,
        sample_format: hound::SampleFormat::Int,
    };
    let mut w = hound::WavWriter::create(path, spec).unwrap();
    for &s in samples {
        w.write_sample(s).unwrap();
    }
    w.finalize().unwrap();
}

fn events(o: &Output) -> Vec<serde_json::Value> {
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8_lossy(&o.stdout).lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

fn model_dir() -> String {
    common::moonshine::model_dir().to_string_lossy().into_owned()
}

/// Two wakes, each followed by its utterance's text, ended at the pause.
fn check_session(ev: &[serde_json::Value]) {
    let kinds: Vec<&str> = ev.iter().map(|e| e["event"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["wake", "text", "wake", "text"], "{ev:?}");
    for (i, e) in ev.iter().enumerate().filter(|(_, e)| e["event"] == "wake") {
        assert_eq!(e["model"], "hey_jarvis_v0.1");
        assert!(e["score"].as_f64().unwrap() >= 0.5);
        let text = &ev[i + 1];
        assert_eq!(text["reason"], "pause", "{text}");
        assert_eq!(text["start_s"], e["time_s"], "the utterance starts after the wake word");
        assert!(text["end_s"].as_f64().unwrap() > text["start_s"].as_f64().unwrap());
    }
    let text = |i: usize| ev[i]["text"].as_str().unwrap().to_lowercase();
    assert!(text(1).contains("door"), "{}", text(1));
    assert!(text(3).contains("lazy dog"), "{}", text(3));
    // The second wake comes after the first utterance's pause.
    assert!(ev[2]["time_s"].as_f64().unwrap() > ev[1]["end_s"].as_f64().unwrap());
}

#[test]
fn wake_then_text_from_a_file_and_from_stdin() {
    let dir = tempfile::tempdir().unwrap();
    let wav = dir.path().join("session.wav");
    let samples = session(1.5);
    write_wav(&wav, &samples);
    let md = model_dir();
    let file =
        events(&neon(&["listen", wav.to_str().unwrap(), "--json-lines", "--model-dir", &md]));
    check_session(&file);

    let stdin = events(&common::neon_stdin(
        &["listen", "-", "--json-lines", "--model-dir", &md],
        &common::s16le(&samples),
    ));
    assert_eq!(stdin, file, "raw stdin gives the file's events");

    // The text form: one line per event.
    let o = neon(&["listen", wav.to_str().unwrap(), "--model-dir", &md]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(out.lines().filter(|l| l.contains(" wake ")).count(), 2, "{out}");
    assert_eq!(out.lines().filter(|l| l.contains(" text ")).count(), 2, "{out}");
}

#[test]
fn the_end_of_input_ends_an_utterance_and_no_wake_word_prints_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let md = model_dir();
    // No silence after the last utterance: it ends with the input.
    let wav = dir.path().join("cut.wav");
    write_wav(&wav, &session(0.0));
    let ev = events(&neon(&["listen", wav.to_str().unwrap(), "--json-lines", "--model-dir", &md]));
    assert_eq!(ev.len(), 4, "{ev:?}");
    assert_eq!(ev[3]["reason"], "end_of_input");
    assert!(ev[3]["text"].as_str().unwrap().to_lowercase().contains("lazy dog"), "{}", ev[3]);
    // Speech without a wake word.
    let wav = dir.path().join("door.wav");
    write_wav(&wav, &clip("moonshine/clips/open_the_door.wav"));
    let ev = events(&neon(&["listen", wav.to_str().unwrap(), "--json-lines", "--model-dir", &md]));
    assert!(ev.is_empty(), "{ev:?}");
    // A wake word and then silence: an empty text, ended for want of speech.
    let wav = dir.path().join("quiet.wav");
    let mut s = clip("openwakeword/clips/hey_jarvis.wav");
    s.truncate(15_360); // "hey jarvis" only: up to the detection at 0.96 s
    s.extend(silence(5.0));
    write_wav(&wav, &s);
    let ev = events(&neon(&["listen", wav.to_str().unwrap(), "--json-lines", "--model-dir", &md]));
    assert_eq!(ev.len(), 2, "{ev:?}");
    assert_eq!(ev[1]["reason"], "no_speech", "{ev:?}");
    assert_eq!(ev[1]["text"], "");
}

/// Low noise (about -60 dBFS, a fixed-seed LCG): a room between words, not digital zeros.
fn room(seconds: f64, seed: u64) -> Vec<i16> {
    let mut state = seed;
    (0..(seconds * 16_000.0) as usize)
        .map(|_| {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            ((state >> 33) % 65) as i16 - 32
        })
        .collect()
}

/// The pause people leave for the chime: "hey jarvis", 0.5 to 2 s of room noise, then the
/// command. The VAD endpointer waits up to 3 s for speech and ends 1.5 s after it, so the
/// command is transcribed whatever the pause (the energy endpointer ended such utterances
/// in the wake word's tail, with an empty text).
#[test]
fn a_pause_after_the_wake_word_keeps_the_command() {
    let dir = tempfile::tempdir().unwrap();
    let md = model_dir();
    for (i, pause) in [0.5, 1.0, 2.0].into_iter().enumerate() {
        let mut s = clip("openwakeword/clips/hey_jarvis.wav");
        s.truncate(16_640); // "hey jarvis" and its 0.14 s of silence, not "what time is it"
        s.extend(room(pause, i as u64));
        s.extend(clip("moonshine/clips/open_the_door.wav"));
        s.extend(room(2.5, 7));
        let wav = dir.path().join(format!("pause{i}.wav"));
        write_wav(&wav, &s);
        let args = ["listen", wav.to_str().unwrap(), "--json-lines", "--model-dir", &md];
        let ev = events(&neon(&args));
        assert_eq!(ev.len(), 2, "pause {pause} s: {ev:?}");
        assert_eq!(ev[1]["reason"], "pause", "pause {pause} s: {ev:?}");
        let text = ev[1]["text"].as_str().unwrap().to_lowercase();
        assert!(text.contains("open the door"), "pause {pause} s: {text:?}");
    }
}

#[test]
fn bad_arguments_are_one_line_errors() {
    // `neon listen x.wav OPTION VALUE`.
    for (option, value, message) in [
        ("--max-seconds", "40", "neon: --max-seconds must be in [1, 30], got 40"),
        ("--pause-ms", "5", "neon: --pause-ms must be in 100..=10000, got 5"),
        ("--no-speech-ms", "50", "neon: --no-speech-ms must be in 100..=30000, got 50"),
        ("--threshold", "0", "neon: --threshold must be in (0, 1], got 0"),
        (
            "--model-dir",
            "/nonexistent",
            "neon: no Moonshine weights at /nonexistent/base-en.safetensors",
        ),
        ("--session-option", "a.b=c", "neon: session option `a.b`: unknown session option"),
    ] {
        common::assert_one_line_error(&["listen", "x.wav", option, value], message);
    }
}

#[test]
fn empty_stdin_is_an_error() {
    let o = Command::new(env!("CARGO_BIN_EXE_neon"))
        .args(["listen", "-", "--model-dir", &model_dir()])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&o.stderr).trim_end(),
        "neon: stdin: no samples (the input ended before one whole sample)"
    );
}

/// `--no-speech-ms` longer than `--max-seconds`: silence after the wake word still ends as
/// `no_speech` (at the maximum), and the text line names the reason; a VAD session option
/// is refused with the energy endpointer, which runs no VAD.
#[test]
fn no_speech_at_the_maximum_and_options_of_the_endpointer_in_use() {
    let dir = tempfile::tempdir().unwrap();
    let md = model_dir();
    let wav = dir.path().join("quiet.wav");
    let mut s = clip("openwakeword/clips/hey_jarvis.wav");
    s.truncate(16_640);
    s.extend(silence(5.0));
    write_wav(&wav, &s);
    let path = wav.to_str().unwrap();
    let args = ["listen", path, "--json-lines", "--model-dir", &md, "--no-speech-ms", "30000"];
    let ev = events(&neon(&[&args[..], &["--max-seconds", "2"]].concat()));
    assert_eq!(ev.len(), 2, "{ev:?}");
    assert_eq!(ev[1]["reason"], "no_speech", "{ev:?}");
    let o = neon(&["listen", path, "--model-dir", &md]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.lines().any(|l| l.contains(" text ") && l.ends_with(", no_speech)")), "{out}");
    let vad_option = r#"silero_vad.exec_plan={"network":"portable"}"#;
    let o = neon(&[
        "listen",
        path,
        "--model-dir",
        &md,
        "--endpointer",
        "energy",
        "--session-option",
        vad_option,
    ]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("this command does not run silero_vad"), "{err}");
    assert!(
        events(&neon(&[
            "listen",
            path,
            "--model-dir",
            &md,
            "--json-lines",
            "--session-option",
            vad_option
        ]))
        .len()
            == 2
    );
}

/// `neon listen -` kept fed (a live stream): SIGINT or SIGTERM while an utterance is gathered
/// transcribes it as the end of the input would, with reason `interrupted`, then exits with
/// 130 or 143.
fn a_signal_transcribes_the_utterance(sig: i32, status: i32) {
    let wait = std::time::Duration::from_secs(60);
    let mut s = clip("openwakeword/clips/hey_jarvis.wav");
    s.extend(silence(0.3));
    s.extend(clip("moonshine/clips/open_the_door.wav"));
    let md = model_dir();
    let args = ["listen", "-", "--json-lines", "--model", "hey_jarvis", "--model-dir", &md];
    let reference = events(&common::neon_stdin(&args, &common::s16le(&s)));
    assert_eq!(reference.len(), 2, "{reference:?}");
    assert_eq!(reference[1]["reason"], "end_of_input", "{reference:?}");
    assert!(reference[1]["text"].as_str().unwrap().to_lowercase().contains("door"));

    let mut live = common::live::Live::spawn(&args);
    live.write(&s);
    let wake: serde_json::Value = serde_json::from_str(&live.line(wait)).unwrap();
    assert_eq!(wake, reference[0]);
    // Let it read the command it was sent (2.7 s of audio: a fraction of a second here).
    std::thread::sleep(std::time::Duration::from_millis(1500));
    live.signal(sig);
    let o = live.wait(wait);
    assert_eq!(o.status.code(), Some(status), "{}", o.stderr);
    assert_eq!(o.lines.len(), 1, "{:?}", o.lines);
    let mut text: serde_json::Value = serde_json::from_str(&o.lines[0]).unwrap();
    assert_eq!(text["reason"], "interrupted", "{text}");
    text["reason"] = reference[1]["reason"].clone();
    assert_eq!(text, reference[1]);
}

common::live::signal_tests!(
    a_signal_transcribes_the_utterance,
    sigint_transcribes_the_utterance_then_exits_130,
    sigterm_transcribes_the_utterance_then_exits_143
);

/// `--engine micro`: microWakeWord's hey_jarvis wakes it ("hey jarvis", 0.3 s, "open the
/// door, please", 1.5 s), the text follows; openWakeWord's threshold and session options are
/// refused.
#[test]
fn micro_engine_wakes_then_transcribes() {
    let dir = tempfile::tempdir().unwrap();
    let wav = dir.path().join("micro.wav");
    let mut s = clip("tests/data/microwakeword/hey_jarvis.wav");
    s.extend(silence(0.3));
    s.extend(clip("moonshine/clips/open_the_door.wav"));
    s.extend(silence(1.5));
    write_wav(&wav, &s);
    let md = model_dir();
    let args = ["listen", wav.to_str().unwrap(), "--json-lines", "--model-dir", &md];
    let ev = events(&neon(&[&args[..], &["--engine", "micro", "--model", "hey_jarvis"]].concat()));
    let kinds: Vec<&str> = ev.iter().map(|e| e["event"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["wake", "text"], "{ev:?}");
    assert_eq!(ev[0]["model"], "hey_jarvis");
    // The detection at 1.52 s (goldens: step 49), the end of the 19th chunk of 80 ms.
    assert_eq!(ev[0]["time_s"], 1.52);
    assert!(ev[1]["text"].as_str().unwrap().to_lowercase().contains("door"), "{}", ev[1]);
    for (extra, message) in [
        (["--threshold", "0.5"], "neon: --threshold does not apply to --engine micro"),
        (
            ["--session-option", "openwakeword.embedding_mode=full"],
            "neon: session option `openwakeword.embedding_mode`: this command does not run \
             openwakeword",
        ),
    ] {
        let listen = ["listen", "x.wav", "--engine", "micro"];
        common::assert_one_line_error(&[&listen[..], &extra[..]].concat(), message);
    }
}
