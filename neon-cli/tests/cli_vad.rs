//! `neon vad` as a user runs it (host only, as the other CLI tests): `--json` gives the
//! library's probabilities bit for bit and the segments of silero-vad's rule; the text form
//! one line per segment and a summary; stdin works; bad input is a one-line error.
#![cfg(not(target_arch = "aarch64"))]

mod common;

use std::path::Path;

use neon_models::vad::detector::{Vad, VadModel};
use neon_models::vad::segments::{speech_segments, SegmentConfig};
use neon_runtime::BackendKind;

use common::neon_stdin as neon;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap()
}

fn wav(path: &Path) -> Vec<f32> {
    let mut r = hound::WavReader::open(path).unwrap();
    r.samples::<i16>().map(|s| f32::from(s.unwrap()) / 32768.0).collect()
}

#[test]
fn json_text_stdin_and_errors() {
    let clip = root().join("models/speech/clips/jfk_ask_not.wav");
    let samples = wav(&clip);
    let mut vad = Vad::new(VadModel::builtin().unwrap(), BackendKind::best()).unwrap();
    let mut expected = Vec::new();
    vad.push(&samples, |p| expected.push(p)).unwrap();
    vad.finish(|p| expected.push(p)).unwrap();
    let segments =
        speech_segments(&expected, samples.len() as u64, &SegmentConfig::default()).unwrap();
    assert!(segments.len() >= 2, "{segments:?}");

    let o = neon(&["vad", clip.to_str().unwrap(), "--json"], &[]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let got: Vec<f32> =
        v["probabilities"].as_array().unwrap().iter().map(|p| p.as_f64().unwrap() as f32).collect();
    assert_eq!(got, expected);
    let spans: Vec<(f64, f64)> = v["segments"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| (s["start_s"].as_f64().unwrap(), s["end_s"].as_f64().unwrap()))
        .collect();
    let want: Vec<(f64, f64)> =
        segments.iter().map(|s| (s.start as f64 / 16e3, s.end as f64 / 16e3)).collect();
    assert_eq!(spans, want);

    // Text: one line per segment, then the summary; raw stdin gives the same.
    let text = neon(&["vad", clip.to_str().unwrap()], &[]);
    let out = String::from_utf8_lossy(&text.stdout).into_owned();
    assert_eq!(out.lines().filter(|l| l.ends_with(" s  speech")).count(), segments.len());
    assert!(out.lines().last().unwrap().contains("speech segment(s)"), "{out}");
    let raw: Vec<u8> = samples.iter().flat_map(|&x| ((x * 32768.0) as i16).to_le_bytes()).collect();
    let o = neon(&["vad", "-"], &raw);
    let stdin_out = String::from_utf8_lossy(&o.stdout);
    let lines = |s: &str| -> Vec<String> {
        s.lines().filter(|l| l.ends_with(" s  speech")).map(String::from).collect()
    };
    assert_eq!(lines(&stdin_out), lines(&out));

    // Empty stdin, a bad threshold, a missing file: one-line errors, status 1.
    for (args, input, message) in [
        (&["vad", "-"][..], &[][..], "neon: stdin: no samples"),
        (&["vad", "-", "--threshold", "1.5"][..], &raw[..], "neon: VAD threshold 1.5"),
        (&["vad", "/nonexistent.wav"][..], &[][..], "neon: "),
    ] {
        let o = neon(args, input);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{args:?}: {err}");
        assert!(err.starts_with(message) && err.lines().count() == 1, "{args:?}: {err}");
    }
}
