//! `neon transcribe -` on a live stream (`arecord | neon transcribe -`): each decode window's
//! text is printed as soon as the voice-activity detector closes the window, while stdin
//! stays open; SIGINT and SIGTERM decode the window still open, print it, and exit 130 /
//! 143. Every wait is bounded (`common::live`).
//!
//! Host only (see cli_wake.rs). Needs the converted Moonshine model.
#![cfg(not(target_arch = "aarch64"))]

mod common;

use std::time::Duration;

use common::live::Live;

/// Long enough for a slow CI machine to decode a window; a program that waits for the end of
/// stdin never prints within it.
const WAIT: Duration = Duration::from_secs(60);

fn clip(name: &str) -> Vec<i16> {
    let path = common::moonshine::model_dir().join(format!("clips/{name}.wav"));
    let mut r = hound::WavReader::open(path).unwrap();
    assert_eq!(r.spec().sample_rate, 16_000);
    r.samples::<i16>().map(Result::unwrap).collect()
}

fn silence(seconds: f64) -> Vec<i16> {
    vec![0; (seconds * 16_000.0) as usize]
}

fn model_dir() -> String {
    common::moonshine::model_dir().to_string_lossy().into_owned()
}

/// "Open the door, please.", 3 s of silence (the window closes 2 s after the speech), "the
/// quick brown fox ...".
fn two_windows() -> (Vec<i16>, Vec<i16>) {
    let mut first = clip("open_the_door");
    first.extend(silence(3.0));
    (first, clip("quick_brown_fox"))
}

/// The lines `neon transcribe - EXTRA` prints for `samples` sent whole, stdin then closed.
fn reference(samples: &[i16], extra: &[&str]) -> Vec<String> {
    let md = model_dir();
    let args = [&["transcribe", "-", "--model-dir", &md][..], extra].concat();
    let o = common::neon_stdin_raw(&args, &common::s16le(samples));
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8(o.stdout).unwrap().lines().map(String::from).collect()
}

/// Each window's text is printed (one line, flushed) once its window closes, while stdin
/// is still open; the lines are those of the whole input sent at once, and joined with
/// spaces they are the transcript a file gives.
#[test]
fn each_window_is_printed_when_it_closes() {
    let (first, second) = two_windows();
    let whole = [&first[..], &second[..], &silence(3.0)].concat();
    let expected = reference(&whole, &[]);
    assert_eq!(expected.len(), 2, "{expected:?}");
    assert!(expected[0].to_lowercase().contains("door"), "{expected:?}");
    assert!(expected[1].to_lowercase().contains("lazy dog"), "{expected:?}");

    let md = model_dir();
    let mut live = Live::spawn(&["transcribe", "-", "--model-dir", &md]);
    live.write(&first);
    assert_eq!(live.line(WAIT), expected[0], "the first window, before the input ends");
    live.write(&second);
    live.write(&silence(3.0));
    assert_eq!(live.line(WAIT), expected[1]);
    live.close();
    let o = live.wait(WAIT);
    assert!(o.status.success(), "{}", o.stderr);
    assert!(o.lines.is_empty(), "{:?}", o.lines);

    // A file gives the same words on one line.
    let dir = tempfile::tempdir().unwrap();
    let wav = dir.path().join("two.wav");
    let spec = hound::WavSpec {
        channels: 1,
        sample_rate: 16_000,
        bits_per_sample: 16,
        sample_format: hound::SampleFormat::Int,
    };
    let mut w = hound::WavWriter::create(&wav, spec).unwrap();
    whole.iter().for_each(|&s| w.write_sample(s).unwrap());
    w.finalize().unwrap();
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_neon"))
        .args(["transcribe", wav.to_str().unwrap(), "--model-dir", &md])
        .output()
        .unwrap();
    assert!(o.status.success());
    assert_eq!(String::from_utf8(o.stdout).unwrap(), format!("{}\n", expected.join(" ")));
}

/// `--json` on stdin: one object per decode window as it is decoded, `{"text", "tokens",
/// "start_s", "end_s", "encoder_ms", "decode_ms"}`, the texts those of the text form.
#[test]
fn json_prints_one_object_per_window() {
    let (first, second) = two_windows();
    let whole = [&first[..], &second[..]].concat();
    let texts = reference(&whole, &[]);
    let md = model_dir();
    let mut live = Live::spawn(&["transcribe", "-", "--model-dir", &md, "--json"]);
    live.write(&first);
    let v: serde_json::Value = serde_json::from_str(&live.line(WAIT)).unwrap();
    assert_eq!(v["text"], texts[0].as_str(), "{v}");
    let tokens = v["tokens"].as_array().unwrap();
    assert_eq!((tokens[0].as_u64(), tokens.last().unwrap().as_u64()), (Some(1), Some(2)));
    let (start, end) = (v["start_s"].as_f64().unwrap(), v["end_s"].as_f64().unwrap());
    assert!(0.0 <= start && start < end && end < first.len() as f64 / 16_000.0, "{v}");
    assert!(v["encoder_ms"].as_f64().unwrap() > 0.0 && v["decode_ms"].as_f64().unwrap() > 0.0);
    live.write(&second);
    live.close();
    let o = live.wait(WAIT);
    assert!(o.status.success(), "{}", o.stderr);
    assert_eq!(o.lines.len(), 1, "{:?}", o.lines);
    let v: serde_json::Value = serde_json::from_str(&o.lines[0]).unwrap();
    assert_eq!(v["text"], texts[1].as_str(), "{v}");
    assert!(v["start_s"].as_f64().unwrap() > end, "{v}");
}

/// A window printed, the next one open (its speech sent, no pause yet), then `sig`: the open
/// window is decoded and printed as at the end of the input, then the exit status.
fn a_signal_prints_the_open_window(sig: i32, status: i32) {
    let (first, second) = two_windows();
    let expected = reference(&[&first[..], &second[..]].concat(), &[]);
    assert_eq!(expected.len(), 2, "{expected:?}");
    let md = model_dir();
    let mut live = Live::spawn(&["transcribe", "-", "--model-dir", &md]);
    live.write(&first);
    assert_eq!(live.line(WAIT), expected[0]);
    live.write(&second);
    // Let it read what it was sent (3 s of audio: a fraction of a second here).
    std::thread::sleep(Duration::from_millis(1500));
    live.signal(sig);
    let o = live.wait(WAIT);
    assert_eq!(o.status.code(), Some(status), "{}", o.stderr);
    assert_eq!(o.lines, expected[1..], "{}", o.stderr);
}

common::live::signal_tests!(
    a_signal_prints_the_open_window,
    sigint_prints_the_open_window_then_exits_130,
    sigterm_prints_the_open_window_then_exits_143
);

/// A signal before any speech: nothing to decode; the empty transcript (one empty line, as
/// for a file without speech), then the exit status.
#[test]
fn a_signal_in_silence_prints_the_empty_transcript() {
    let md = model_dir();
    let mut live = Live::spawn(&["transcribe", "-", "--model-dir", &md]);
    live.write(&silence(1.0));
    std::thread::sleep(Duration::from_millis(1500));
    live.signal(libc::SIGINT);
    let o = live.wait(WAIT);
    assert_eq!(o.status.code(), Some(130), "{}", o.stderr);
    assert_eq!(o.lines, [""], "{}", o.stderr);
}
