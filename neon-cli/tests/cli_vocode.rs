//! `neon vocode` as a user runs it: hidden states to a 16 kHz mono float WAV of exactly
//! `128 T` samples equal to the library's decoding (short, and longer than the plan's 2000
//! frames, streamed), the same audio for any `--threads` and on the portable backend by
//! session option, `--save-voice` and `--voice` round trip, and clean one-line errors
//! (exit 1) for bad files, names, shapes, dtypes, values and options.
//!
//! Host only (see cli_wake.rs).
#![cfg(not(target_arch = "aarch64"))]

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::sanotts::{first_difference, voice};
use common::{neon, stderr};
use neon_models::error::WeightsSource;
use neon_models::sanotts::load::VoiceWeights;
use neon_models::sanotts::names::index;
use neon_models::sanotts::synthetic::{self, hidden_states, VOICE_SEED};
use neon_models::sanotts::utterance::Decoder;
use neon_models::sanotts::vocoder::Vocoder;
use neon_models::sanotts::voice::Voice;
use neon_models::session::SessionOptions;
use safetensors::tensor::TensorView;
use safetensors::Dtype;

/// The one-line error of a failed run (exit status 1).
fn error(o: &Output) -> String {
    assert_eq!(o.status.code(), Some(1), "expected failure: {}", stderr(o));
    let e = stderr(o);
    assert_eq!(e.lines().count(), 1, "one line: {e}");
    assert!(e.starts_with("neon: "), "{e}");
    e.trim_end().to_string()
}

/// Writes a safetensors file of `(name, dtype, shape, bytes)` tensors to `dir/name`.
fn write_file(dir: &Path, name: &str, tensors: &[(&str, Dtype, Vec<usize>, Vec<u8>)]) -> PathBuf {
    let views: Vec<(&str, TensorView<'_>)> = tensors
        .iter()
        .map(|(n, d, s, b)| (*n, TensorView::new(*d, s.clone(), b).unwrap()))
        .collect();
    let path = dir.join(name);
    std::fs::write(&path, safetensors::serialize(views, None).unwrap()).unwrap();
    path
}

fn f32_bytes(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// A hidden-states file of the test states for `t` frames.
fn hidden_file(dir: &Path, t: usize) -> PathBuf {
    let bytes = f32_bytes(&hidden_states(t));
    write_file(
        dir,
        &format!("hidden{t}.safetensors"),
        &[("hidden", Dtype::F32, vec![192, t], bytes)],
    )
}

/// Runs `neon vocode HIDDEN -o OUT extra..` and returns the WAV's samples after checking
/// its format.
fn vocode(dir: &Path, hidden: &Path, extra: &[&str]) -> Vec<f32> {
    let out = dir.join("out.wav");
    let mut args = vec!["vocode", hidden.to_str().unwrap(), "-o", out.to_str().unwrap()];
    args.extend_from_slice(extra);
    let o = neon(&args);
    assert!(o.status.success(), "neon failed: {}", stderr(&o));
    let r = hound::WavReader::open(&out).unwrap();
    assert_eq!(r.spec(), common::wav_spec(16_000, 1, 32, true));
    r.into_samples::<f32>().map(Result::unwrap).collect()
}

/// The library's whole-utterance decoding on the default backend.
fn decoded(t: usize, options: &SessionOptions) -> Vec<f32> {
    let mut d = Decoder::new(voice().1.clone(), options).unwrap();
    let mut audio = vec![0.0; 128 * t];
    d.decode(&hidden_states(t), t, &mut audio).unwrap();
    audio
}

#[test]
fn writes_exactly_the_decoded_samples() {
    let dir = tempfile::tempdir().unwrap();
    let default = SessionOptions::new();
    for t in [1, 37, 300] {
        let got = vocode(dir.path(), &hidden_file(dir.path(), t), &[]);
        assert_eq!(got.len(), 128 * t);
        assert_eq!(first_difference(&got, &decoded(t, &default)), None, "T = {t}");
    }
    let hidden = hidden_file(dir.path(), 300);
    let want = decoded(300, &default);
    for threads in ["1", "3"] {
        let got = vocode(dir.path(), &hidden, &["--threads", threads]);
        assert_eq!(first_difference(&got, &want), None, "--threads {threads}");
    }
    let portable = r#"sanotts.exec_plan={"decoder":"portable"}"#;
    let got = vocode(dir.path(), &hidden, &["--session-option", portable]);
    let want = decoded(300, &SessionOptions::from_pairs([portable]).unwrap());
    assert_eq!(first_difference(&got, &want), None, "portable");
}

/// Samples beyond full scale are written as computed: a voice whose head adds 4 to every
/// log-magnitude (magnitudes x 55) peaks well above 1, and the WAV holds the library's
/// values.
#[test]
fn loud_audio_is_not_clipped() {
    let dir = tempfile::tempdir().unwrap();
    let mut tensors = synthetic::voice(VOICE_SEED).unwrap().tensors().to_vec();
    tensors[index::HEAD_BIAS][..257].iter_mut().for_each(|b| *b += 4.0);
    let loud = Voice::from_tensors(tensors, WeightsSource::Embedded("loud")).unwrap();
    let path = dir.path().join("loud.safetensors");
    std::fs::write(&path, loud.to_safetensors(&[]).unwrap()).unwrap();
    let t = 30;
    let got = vocode(dir.path(), &hidden_file(dir.path(), t), &["--voice", path.to_str().unwrap()]);
    let weights = std::sync::Arc::new(VoiceWeights::prepare(&loud).unwrap());
    let mut d = Decoder::new(weights, &SessionOptions::new()).unwrap();
    let mut want = vec![0.0; 128 * t];
    d.decode(&hidden_states(t), t, &mut want).unwrap();
    assert_eq!(first_difference(&got, &want), None);
    let peak = got.iter().fold(0.0f32, |m, v| m.max(v.abs()));
    assert!(peak > 2.0, "peak {peak}");
}

/// 2300 frames (over the plan's 2000) stream through the vocoder: exactly 2300 * 128
/// samples, the library's streamed samples bit for bit.
#[test]
fn longer_than_the_plan_streams() {
    let dir = tempfile::tempdir().unwrap();
    let t = 2300;
    let got = vocode(dir.path(), &hidden_file(dir.path(), t), &[]);
    assert_eq!(got.len(), 128 * t);
    let mut v = Vocoder::new(voice().1.clone(), &SessionOptions::new()).unwrap();
    let hidden = hidden_states(t);
    let mut want = Vec::new();
    let mut out = vec![0.0; v.max_push_samples(t)];
    let k = v.push(&hidden, t, &mut out).unwrap();
    want.extend_from_slice(&out[..k]);
    let k = v.finish(&mut out).unwrap();
    want.extend_from_slice(&out[..k]);
    assert_eq!(first_difference(&got, &want), None);
}

/// `--save-voice` writes the built-in voice with the documented names; `--voice` with that
/// file gives the built-in voice's audio.
#[test]
fn saved_voice_round_trips() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("voice.safetensors");
    let o = neon(&["vocode", "--save-voice", path.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let bytes = std::fs::read(&path).unwrap();
    let saved = Voice::from_bytes(&bytes, WeightsSource::Embedded("saved")).unwrap();
    assert_eq!(saved, synthetic::voice(VOICE_SEED).unwrap());
    let file =
        neon_models::weights::TensorFile::parse(&bytes, WeightsSource::Embedded("s")).unwrap();
    assert_eq!(file.metadata("architecture"), Some("sanotts-nano"));
    assert!(file.metadata("voice").unwrap().contains("0x5A70"), "{:?}", file.metadata("voice"));
    let hidden = hidden_file(dir.path(), 40);
    let a = vocode(dir.path(), &hidden, &[]);
    let b = vocode(dir.path(), &hidden, &["--voice", path.to_str().unwrap()]);
    assert_eq!(first_difference(&a, &b), None);
}

#[test]
fn bad_inputs_are_one_line_errors() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let out = d.join("out.wav");
    let out = out.to_str().unwrap();
    let run = |hidden: &Path, extra: &[&str]| {
        let mut args = vec!["vocode", hidden.to_str().unwrap(), "-o", out];
        args.extend_from_slice(extra);
        error(&neon(&args))
    };
    let good = hidden_file(d, 5);
    let h = hidden_states(5);

    let e = run(&d.join("missing.safetensors"), &[]);
    assert!(e.contains("missing.safetensors") && e.contains("No such file"), "{e}");
    let e = run(d, &[]);
    assert!(e.contains("is a directory"), "{e}");
    let wav = d.join("not.safetensors");
    std::fs::write(&wav, b"RIFF\x24\x00\x00\x00WAVEfmt not safetensors at all").unwrap();
    assert!(run(&wav, &[]).contains("not a valid safetensors file"));
    let bytes = std::fs::read(&good).unwrap();
    let cut = d.join("cut.safetensors");
    std::fs::write(&cut, &bytes[..bytes.len() - 4]).unwrap();
    let e = run(&cut, &[]);
    assert!(e.contains("not a valid safetensors file"), "{e}");
    std::fs::write(&cut, &bytes[..5]).unwrap();
    assert!(run(&cut, &[]).contains("not a valid safetensors file"));

    let other =
        write_file(d, "name.safetensors", &[("hiddens", Dtype::F32, vec![192, 5], f32_bytes(&h))]);
    assert!(run(&other, &[]).contains("unknown tensor `hiddens`"));
    let two = write_file(
        d,
        "two.safetensors",
        &[
            ("hidden", Dtype::F32, vec![192, 5], f32_bytes(&h)),
            ("x", Dtype::F32, vec![1], vec![0; 4]),
        ],
    );
    assert!(run(&two, &[]).contains("unknown tensor `x`"));
    let shape = write_file(
        d,
        "shape.safetensors",
        &[("hidden", Dtype::F32, vec![80, 12], f32_bytes(&h[..960]))],
    );
    let e = run(&shape, &[]);
    assert!(e.ends_with("tensor `hidden`: shape is [80, 12], expected [192, T], T >= 1"), "{e}");
    let flat =
        write_file(d, "flat.safetensors", &[("hidden", Dtype::F32, vec![960], f32_bytes(&h))]);
    assert!(run(&flat, &[]).contains("shape is [960]"));
    let empty = write_file(d, "empty.safetensors", &[("hidden", Dtype::F32, vec![192, 0], vec![])]);
    assert!(run(&empty, &[]).contains("shape is [192, 0]"));
    let f64s: Vec<u8> = h.iter().flat_map(|&x| f64::from(x).to_le_bytes()).collect();
    let dtype = write_file(d, "f64.safetensors", &[("hidden", Dtype::F64, vec![192, 5], f64s)]);
    assert!(run(&dtype, &[]).ends_with("tensor `hidden`: dtype is not F32"));
    let mut nan = h.clone();
    nan[3 * 5 + 2] = f32::NAN;
    let nan =
        write_file(d, "nan.safetensors", &[("hidden", Dtype::F32, vec![192, 5], f32_bytes(&nan))]);
    let e = run(&nan, &[]);
    assert!(e.ends_with("NaN or infinity at channel 3, frame 2"), "{e}");
    assert!(!Path::new(out).exists(), "no partial WAV left behind");

    // A bad voice, a session option of another model, bad paths and threads.
    let voice = write_file(
        d,
        "voice.safetensors",
        &[("proj.weight", Dtype::F32, vec![80, 192], vec![0; 4 * 80 * 192])],
    );
    let e = run(&good, &["--voice", voice.to_str().unwrap()]);
    assert!(e.ends_with("tensor `embed.weight`: tensor missing"), "{e}");
    let e = run(&good, &["--session-option", r#"moonshine_asr.exec_plan={"decoder":"portable"}"#]);
    assert!(e.contains("this command does not run moonshine_asr"), "{e}");
    let e = run(&good, &["--session-option", r#"sanotts.exec_plan={"vocoder":"portable"}"#]);
    assert!(e.contains("sanotts.exec_plan"), "{e}");
    assert!(run(&good, &["--threads", "0"]).contains("--threads must be in 1..=64"));
    let e = error(&neon(&["vocode", good.to_str().unwrap(), "-o", "/nonexistent-dir/x.wav"]));
    assert!(e.contains("cannot write /nonexistent-dir/x.wav"), "{e}");
    let e = error(&neon(&["vocode", "--save-voice", "/nonexistent-dir/v.safetensors"]));
    assert!(e.contains("cannot write /nonexistent-dir/v.safetensors"), "{e}");
    // Usage errors are clap's (status 2).
    assert_eq!(neon(&["vocode"]).status.code(), Some(2));
    assert_eq!(neon(&["vocode", good.to_str().unwrap()]).status.code(), Some(2));
}

/// The output path is never destroyed by a failure and never deleted unless the command
/// made it: the input as output is refused; an existing file survives an error mid-way
/// (NaN states after the first window) and no temporary file is left; `/dev/null` and a
/// FIFO are written in place and stay; SIGTERM mid-write exits 143 leaving the old file.
#[test]
fn the_output_path_survives_errors_and_signals() {
    use std::os::unix::fs::FileTypeExt;
    let dir = tempfile::tempdir().unwrap();
    let good = hidden_file(dir.path(), 40);
    let before = std::fs::read(&good).unwrap();
    let e = error(&neon(&["vocode", good.to_str().unwrap(), "-o", good.to_str().unwrap()]));
    assert!(e.contains("the output is the input"), "{e}");
    assert_eq!(std::fs::read(&good).unwrap(), before, "the input is intact");
    // NaN in the second window: the error comes after the first window was written.
    let t = 2 * 2000 + 10;
    let mut states = hidden_states(t);
    states[191 * t + 3000] = f32::NAN;
    let bad = write_file(
        dir.path(),
        "bad.safetensors",
        &[("hidden", Dtype::F32, vec![192, t], f32_bytes(&states))],
    );
    let out = dir.path().join("keep.wav");
    std::fs::write(&out, b"precious").unwrap();
    let e = error(&neon(&["vocode", bad.to_str().unwrap(), "-o", out.to_str().unwrap()]));
    assert!(e.contains("NaN") || e.contains("finite"), "{e}");
    assert_eq!(std::fs::read(&out).unwrap(), b"precious", "the old file is intact");
    let leftovers: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains("neon-"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
    // A device: written, never removed.
    let o = neon(&["vocode", good.to_str().unwrap(), "-o", "/dev/null"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(std::fs::metadata("/dev/null").unwrap().file_type().is_char_device());
    // A FIFO: its reader gets the WAV; the FIFO stays.
    let fifo = dir.path().join("pipe.wav");
    assert!(Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    let reader = {
        let fifo = fifo.clone();
        std::thread::spawn(move || std::fs::read(fifo).unwrap())
    };
    let o = neon(&["vocode", good.to_str().unwrap(), "-o", fifo.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let wav = reader.join().unwrap();
    let r = hound::WavReader::new(std::io::Cursor::new(wav)).unwrap();
    assert_eq!(r.len(), 128 * 40);
    assert!(std::fs::symlink_metadata(&fifo).is_ok(), "the FIFO is still there");
    // SIGTERM while a long input is decoded: status 143, the old file as it was.
    let long = hidden_file(dir.path(), 60_000);
    let mut child = Command::new(env!("CARGO_BIN_EXE_neon"))
        .args(["vocode", long.to_str().unwrap(), "-o", out.to_str().unwrap()])
        .spawn()
        .unwrap();
    // Once its temporary file exists, the signal handlers are in place and decoding runs.
    let started = std::time::Instant::now();
    while !std::fs::read_dir(dir.path())
        .unwrap()
        .any(|e| e.unwrap().file_name().to_string_lossy().contains("neon-"))
    {
        assert!(started.elapsed().as_secs() < 60, "no temporary file appeared");
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    // SAFETY: kill(2) on our own child's pid with a valid signal number.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(143), "{status:?}");
    assert_eq!(std::fs::read(&out).unwrap(), b"precious");
    let left = std::fs::read_dir(dir.path())
        .unwrap()
        .filter(|e| e.as_ref().unwrap().file_name().to_string_lossy().contains("neon-"));
    assert_eq!(left.count(), 0, "the temporary file is removed");
}
