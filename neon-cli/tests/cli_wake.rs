//! `neon wake` as a user runs it: detections on our clips, other WAV formats, raw stdin,
//! `--json` against openwakeword's own scores, and clean one-line errors; `--engine micro`
//! in `wake_micro/`.
//!
//! Host only: under qemu-user the test process could not start the aarch64 `neon` binary
//! without a binfmt handler. The library paths it uses are tested on aarch64 elsewhere.
#![cfg(not(target_arch = "aarch64"))]

mod common;
mod wake_micro;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::*;

/// The models with a detection line in default output (`   0.96 s  hey_jarvis_v0.1  0.637`).
fn detected(o: &Output) -> Vec<String> {
    assert!(o.status.success(), "neon failed: {}", stderr(o));
    stdout(o)
        .lines()
        .filter(|l| l.split_whitespace().nth(1) == Some("s"))
        .map(|l| l.split_whitespace().nth(2).unwrap().to_string())
        .collect()
}

fn clip(name: &str) -> PathBuf {
    oww_path(&format!("clips/{name}.wav"))
}

fn read_clip(name: &str) -> Vec<i16> {
    hound::WavReader::open(clip(name)).unwrap().samples::<i16>().map(Result::unwrap).collect()
}

#[test]
fn each_clip_wakes_its_own_model_only() {
    for (c, model) in [
        ("hey_jarvis", Some("hey_jarvis_v0.1")),
        ("alexa", Some("alexa_v0.1")),
        ("hey_mycroft", Some("hey_mycroft_v0.1")),
        ("hey_rhasspy", Some("hey_rhasspy_v0.1")),
        ("ok_nabu", Some("ok_nabu_v0.1")),
        ("weather", None),
    ] {
        let o = neon(&["wake", clip(c).to_str().unwrap()]);
        assert_eq!(detected(&o), model.map(String::from).into_iter().collect::<Vec<_>>(), "{c}");
        assert!(stdout(&o).contains("5 model(s)"), "{}", stdout(&o));
    }
}

fn write_wav(path: &Path, spec: hound::WavSpec, frames: &[Vec<f64>]) {
    let mut w = hound::WavWriter::create(path, spec).unwrap();
    for frame in frames {
        for &v in frame {
            match (spec.sample_format, spec.bits_per_sample) {
                (hound::SampleFormat::Float, _) => w.write_sample(v as f32).unwrap(),
                (_, 8) => w.write_sample((v * 127.0).round() as i8).unwrap(),
                (_, 16) => w.write_sample((v * 32767.0).round() as i16).unwrap(),
                (_, 24) => w.write_sample((v * 8_388_607.0).round() as i32).unwrap(),
                _ => w.write_sample((v * 2_147_483_647.0).round() as i32).unwrap(),
            }
        }
    }
    w.finalize().unwrap();
}

#[test]
fn other_wav_formats_detect_the_same_wake_word() {
    let dir = tempfile::tempdir().unwrap();
    let x: Vec<f64> = read_clip("hey_jarvis").iter().map(|&v| v as f64 / 32768.0).collect();
    let mono: Vec<Vec<f64>> = x.iter().map(|&v| vec![v]).collect();
    let spec = |bits, float, channels, rate| common::wav_spec(rate, channels, bits, float);
    // 44.1 kHz by linear interpolation: a crude resampler (its images above 8 kHz are
    // removed again by ours), enough to show the rate is converted.
    let ratio = 16_000.0 / 44_100.0;
    let up: Vec<Vec<f64>> = (0..(x.len() as f64 / ratio) as usize)
        .map(|i| {
            let t = i as f64 * ratio;
            let (j, f) = (t as usize, t.fract());
            vec![x[j] * (1.0 - f) + x.get(j + 1).copied().unwrap_or(0.0) * f]
        })
        .collect();
    let cases = [
        ("u8.wav", spec(8, false, 1, 16_000), mono.clone()),
        ("s24.wav", spec(24, false, 1, 16_000), mono.clone()),
        ("s32.wav", spec(32, false, 1, 16_000), mono.clone()),
        ("f32.wav", spec(32, true, 1, 16_000), mono.clone()),
        // Stereo: the voice in the left channel at full level, the right one quieter.
        ("stereo.wav", spec(16, false, 2, 16_000), x.iter().map(|&v| vec![v, 0.5 * v]).collect()),
        ("44k.wav", spec(16, false, 1, 44_100), up),
    ];
    for (name, s, frames) in cases {
        let path = dir.path().join(name);
        write_wav(&path, s, &frames);
        let o = neon(&["wake", path.to_str().unwrap()]);
        assert_eq!(detected(&o), ["hey_jarvis_v0.1"], "{name}: {}", stdout(&o));
    }
}

#[test]
fn bad_inputs_are_one_line_errors() {
    let dir = tempfile::tempdir().unwrap();
    let spec = common::wav_spec(16_000, 1, 16, false);
    let empty = dir.path().join("empty.wav");
    write_wav(&empty, spec, &[]);
    let short = dir.path().join("short.wav");
    write_wav(&short, spec, &vec![vec![0.1]; 100]);
    let truncated = dir.path().join("truncated.wav");
    std::fs::write(&truncated, &std::fs::read(clip("hey_jarvis")).unwrap()[..30]).unwrap();
    let text = dir.path().join("notes.wav");
    std::fs::write(&text, "these are not samples\n").unwrap();
    let missing = dir.path().join("missing.wav");
    for (path, says) in [
        (&empty, "no samples"),
        (&short, "too short"),
        (&truncated, "truncated"),
        (&text, "not a WAV"),
        (&missing, "missing.wav"),
    ] {
        let o = neon(&["wake", path.to_str().unwrap()]);
        let err = stderr(&o);
        assert!(!o.status.success(), "{}: succeeded", path.display());
        assert_eq!(err.lines().count(), 1, "{}: {err}", path.display());
        assert!(err.starts_with("neon: ") && err.contains(says), "{}: {err}", path.display());
        assert!(!err.contains("panicked"));
    }
    for (args, says) in [
        (&["wake", "x.wav", "--model", "nope"][..], "nope"),
        (&["wake", "x.wav", "--threshold", "1.5"], "--threshold"),
        (&["wake", "x.wav", "--pad-seconds=-1"], "--pad-seconds"),
        // Negative numbers reach the range checks (not clap's "unexpected argument '-0'").
        (&["wake", "x.wav", "--threshold", "-0.5"], "--threshold"),
        (&["wake", "x.wav", "--refractory-seconds", "-1"], "--refractory-seconds"),
        // One name twice would share one `--json` key.
        (&["wake", "x.wav", "--model", "hey_jarvis", "--model", "hey_jarvis_v0.1"], "already"),
    ] {
        let o = neon(args);
        let err = stderr(&o);
        assert!(!o.status.success() && err.lines().count() == 1, "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
    }
}

fn custom(name: &str) -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../models"))
        .join("tests/data/custom")
        .join(name)
}

#[test]
fn users_models_from_files_and_directories_detect_their_word() {
    let wav = custom("computer.wav");
    let wav = wav.to_str().unwrap();
    for model in ["computer_v2.tflite", "computer_v1.onnx"] {
        let path = custom(model);
        let o = neon(&["wake", wav, "--model", path.to_str().unwrap(), "--model", "hey_jarvis"]);
        assert_eq!(detected(&o), ["computer"], "{model}: {}", stdout(&o));
    }
    // Both files of the directory are named `computer`: the first (v1.onnx) is used.
    let dir = custom("");
    let o = neon(&["wake", wav, "--custom-model-dir", dir.to_str().unwrap()]);
    assert_eq!(detected(&o), ["computer"], "{}", stdout(&o));
    assert!(stderr(&o).contains("skipping a second model named `computer`"), "{}", stderr(&o));
    // Faults: an empty directory, a broken model file, a model of another format.
    let tmp = tempfile::tempdir().unwrap();
    let broken = tmp.path().join("broken_v1.tflite");
    std::fs::write(&broken, &std::fs::read(custom("computer_v2.tflite")).unwrap()[..5000]).unwrap();
    let other = tmp.path().join("model.pb");
    std::fs::write(&other, b"x").unwrap();
    let empty = tempfile::tempdir().unwrap();
    for (args, says) in [
        (vec!["--custom-model-dir", empty.path().to_str().unwrap()], "no .tflite or .onnx"),
        (vec!["--model", broken.to_str().unwrap()], "broken_v1.tflite"),
        (vec!["--custom-model-dir", tmp.path().to_str().unwrap()], "broken_v1.tflite"),
        (vec!["--model", other.to_str().unwrap()], "model.pb"),
    ] {
        let o = neon(&[&["wake", wav][..], &args].concat());
        let err = stderr(&o);
        assert!(!o.status.success() && err.lines().count() == 1, "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
    }
}

#[test]
fn raw_stdin_detects_like_the_file() {
    let samples = read_clip("hey_jarvis");
    let bytes: Vec<u8> = samples.iter().flat_map(|v| v.to_le_bytes()).collect();
    // Odd-sized writes: samples split across reads.
    let o = wake_stdin_in_pieces(&bytes, &[], 1001);
    assert_eq!(detected(&o), ["hey_jarvis_v0.1"]);
    let file = neon(&["wake", clip("hey_jarvis").to_str().unwrap()]);
    let first = |o: &Output| stdout(o).lines().next().unwrap().to_string();
    assert_eq!(first(&o), first(&file), "same detection line from stdin and file");
}

/// Raw bytes on `neon wake -`'s stdin (one write); returns its output.
fn wake_stdin(bytes: &[u8], extra: &[&str]) -> Output {
    wake_stdin_in_pieces(bytes, extra, bytes.len().max(1))
}

/// `neon wake - EXTRA..` with piped stdin, stdout and stderr.
fn spawn_wake_stdin(extra: &[&str]) -> std::process::Child {
    neon_piped(&[&["wake", "-"][..], extra].concat())
}

/// As `wake_stdin`, written in pieces of `piece` bytes.
fn wake_stdin_in_pieces(bytes: &[u8], extra: &[&str], piece: usize) -> Output {
    let mut child = spawn_wake_stdin(extra);
    let mut stdin = child.stdin.take().unwrap();
    for part in bytes.chunks(piece) {
        stdin.write_all(part).unwrap();
    }
    drop(stdin);
    child.wait_with_output().unwrap()
}

#[test]
fn stdin_ending_inside_a_sample_still_reports() {
    let samples = read_clip("hey_jarvis");
    let mut bytes: Vec<u8> = samples.iter().flat_map(|v| v.to_le_bytes()).collect();
    bytes.push(0x7f);
    let o = wake_stdin(&bytes, &[]);
    assert_eq!(detected(&o), ["hey_jarvis_v0.1"]);
    assert!(stdout(&o).contains("1 detection(s)"), "summary printed: {}", stdout(&o));
    let err = stderr(&o);
    assert!(err.starts_with("neon: warning: ") && err.contains("last byte"), "{err}");
    let o = wake_stdin(&bytes, &["--json"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["models"]["hey_jarvis_v0.1"]["detections"].as_array().unwrap().len(), 1);
}

#[test]
fn clipped_float_wavs_are_warned_about() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("int16_scale.wav");
    let spec = common::wav_spec(16_000, 1, 32, true);
    // A float WAV holding int16-scale values: a common numpy mistake.
    let frames: Vec<Vec<f64>> = read_clip("hey_jarvis").iter().map(|&v| vec![v as f64]).collect();
    write_wav(&path, spec, &frames);
    let o = neon(&["wake", path.to_str().unwrap()]);
    assert!(o.status.success());
    let err = stderr(&o);
    assert!(err.contains("clipped") && err.contains("int16 scale"), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");

    // A full-scale 16-bit square wave at 44.1 kHz: in range as stored, the resampler's
    // ringing overshoots full scale.
    let path = dir.path().join("square.wav");
    let frames: Vec<Vec<f64>> =
        (0..44_100).map(|i| vec![if (i / 50) % 2 == 0 { 1.0 } else { -1.0 }]).collect();
    write_wav(&path, common::wav_spec(44_100, 1, 16, false), &frames);
    let o = neon(&["wake", path.to_str().unwrap()]);
    assert!(o.status.success());
    let err = stderr(&o);
    assert!(err.contains("clipped") && err.contains("resampling 44100 Hz"), "{err}");
    assert!(!err.contains("int16 scale"), "{err}");
}

#[test]
fn json_scores_are_openwakewords_predict_clip_scores() {
    let o = neon(&[
        "wake",
        clip("hey_jarvis").to_str().unwrap(),
        "--pad-seconds",
        "1",
        "--json",
        "--model",
        "hey_jarvis",
        "--model",
        "alexa_v0.1",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let g = oww_file("goldens/hey_jarvis.safetensors");
    for head in ["hey_jarvis_v0.1", "alexa_v0.1"] {
        let m = &v["models"][head];
        let scores: Vec<f32> =
            m["scores"].as_array().unwrap().iter().map(|s| s.as_f64().unwrap() as f32).collect();
        let want = tensor(&g, &format!("scores.{head}")).0;
        assert_eq!(scores.len(), want.len(), "one score per predict_clip call");
        // The CLI starts from its own deterministic state, openwakeword from seeded noise:
        // from the 16th call on the scores no longer depend on it.
        for (i, (a, b)) in scores.iter().zip(&want).enumerate().skip(16) {
            assert!((a - b).abs() <= score_tolerance(head), "{head} call {i}: {a} vs {b}");
        }
    }
    let d = v["models"]["hey_jarvis_v0.1"]["detections"].as_array().unwrap();
    assert_eq!(d.len(), 1);
    assert!(d[0]["score"].as_f64().unwrap() >= 0.5 && d[0]["time_s"].as_f64().unwrap() > 0.0);
    assert!(v["models"]["alexa_v0.1"]["detections"].as_array().unwrap().is_empty());
}

#[test]
fn both_embedding_modes_print_the_same_scores() {
    let run = |mode: &[&str]| {
        let mut args = vec!["wake", "--json", "--pad-seconds", "1"];
        let path = clip("hey_jarvis");
        args.push(path.to_str().unwrap());
        args.extend_from_slice(mode);
        let o = neon(&args);
        assert!(o.status.success(), "{}", stderr(&o));
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        v["models"].clone()
    };
    let incremental = run(&[]);
    assert_eq!(incremental, run(&["--embedding", "incremental"]));
    assert_eq!(incremental, run(&["--embedding", "full"]), "the same scores, bit for bit");
    let o = neon(&["wake", clip("hey_jarvis").to_str().unwrap(), "--embedding", "half"]);
    assert!(!o.status.success() && stderr(&o).contains("incremental"), "{}", stderr(&o));
    // `--embedding` is the shorthand of a session option.
    let full = ["--session-option", "openwakeword.embedding_mode=full"];
    assert_eq!(incremental, run(&full), "the session option");
    let both = ["--embedding", "full", "--session-option", "openwakeword.embedding_mode=full"];
    let o = neon(&[&["wake", clip("hey_jarvis").to_str().unwrap()][..], &both[..]].concat());
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).starts_with("neon: --embedding and --session-option"), "{}", stderr(&o));
}

/// `--session-option`: the portable embedding gives the same detections (its scores differ
/// from the default backend's in the last bits); bad options are one-line errors, exit 1.
#[test]
fn session_options_select_the_embedding_backend_and_bad_ones_are_errors() {
    let path = clip("hey_jarvis");
    let path = path.to_str().unwrap();
    let portable = r#"openwakeword.exec_plan={"embedding":{"impl":"portable"}}"#;
    let words = detected(&neon(&["wake", path, "--session-option", portable]));
    assert_eq!(words, detected(&neon(&["wake", path])));
    assert_eq!(words, ["hey_jarvis_v0.1"]);
    for (option, message) in [
        ("openwakeword.exec_plan={\"mel\":\"portable\"}", "neon: session option `openwakeword.exec_plan`: unknown component \"mel\" of openwakeword; valid: embedding"),
        ("openwakeword.exec_plan={\"embedding\":{\"impl\":\"portable\",\"artifacts\":[]}}", "neon: session option `openwakeword.exec_plan`: embedding: \"artifacts\" is not supported"),
        ("openwakeword.threshold=0.5", "neon: session option `openwakeword.threshold`: unknown session option; valid: openwakeword.exec_plan, "),
        ("openwakeword.embedding_mode", "neon: session option `openwakeword.embedding_mode`: expected KEY=VALUE"),
        ("moonshine_asr.int8=dot", "neon: session option `moonshine_asr.int8`: this command does not run moonshine_asr (it runs openwakeword)"),
        ("openwakeword.exec_plan={\"embedding\":\"portable\",\"embedding\":\"bogus\"}", "neon: session option `openwakeword.exec_plan`: the key \"embedding\" appears twice"),
    ] {
        let o = neon(&["wake", path, "--session-option", option]);
        assert_eq!(o.status.code(), Some(1), "{option}");
        assert!(stderr(&o).starts_with(message), "{option}: {}", stderr(&o));
        assert_eq!(stderr(&o).lines().count(), 1, "{}", stderr(&o));
        assert!(stdout(&o).is_empty(), "{option}: nothing on stdout");
    }
}

#[test]
fn detection_times_are_whole_samples_and_the_summary_peak_is_the_max_score() {
    let path = clip("hey_jarvis");
    let path = path.to_str().unwrap();
    // 0.3 s of padding: the time is (end - 4800) / 16000, which a difference of two divided
    // floats printed as 0.8999999999999999.
    let args = ["wake", path, "--model", "hey_jarvis", "--pad-seconds", "0.3"];
    let o = neon(&[&args[..], &["--json"]].concat());
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let m = &v["models"]["hey_jarvis_v0.1"];
    let d = m["detections"].as_array().unwrap();
    assert_eq!(d.len(), 1);
    let t = d[0]["time_s"].as_f64().unwrap();
    assert_eq!((t * 16_000.0).round() / 16_000.0, t, "time_s {t} is not a whole sample count");
    let max =
        m["scores"].as_array().unwrap().iter().map(|s| s.as_f64().unwrap()).fold(0.0, f64::max);
    let text = neon(&args);
    assert!(text.status.success(), "{}", stderr(&text));
    let peak = format!("peak {max:.3},");
    assert!(stdout(&text).contains(&peak), "{peak} not in {}", stdout(&text));
}

#[test]
fn a_closed_output_pipe_ends_the_program_quietly() {
    // `neon wake - | head -1`: the reader takes the first detection and goes away.
    let bytes: Vec<u8> = read_clip("hey_jarvis").iter().flat_map(|v| v.to_le_bytes()).collect();
    let mut child = spawn_wake_stdin(&["--model", "hey_jarvis"]);
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(&bytes).unwrap();
    let mut out = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut first = String::new();
    std::io::BufRead::read_line(&mut out, &mut first).unwrap();
    assert!(first.contains("hey_jarvis_v0.1"), "{first}");
    drop(out);
    // Two more utterances: their detection lines (or the summary) meet the closed pipe. The
    // program may exit before it has read everything, so write errors are expected here.
    for _ in 0..2 {
        let _ = stdin.write_all(&bytes);
    }
    drop(stdin);
    let o = child.wait_with_output().unwrap();
    assert!(o.status.success(), "{:?}: {}", o.status, stderr(&o));
    assert_eq!(stderr(&o), "");
}

#[cfg(target_os = "linux")]
#[test]
fn an_unwritable_output_is_a_one_line_error() {
    for json in [false, true] {
        let full = std::fs::File::create("/dev/full").unwrap();
        let mut args = vec!["wake".to_string(), clip("hey_jarvis").to_str().unwrap().to_string()];
        if json {
            args.push("--json".into());
        }
        let o = Command::new(env!("CARGO_BIN_EXE_neon")).args(&args).stdout(full).output().unwrap();
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(1), "{err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.starts_with("neon: cannot write to stdout"), "{err}");
    }
}

#[test]
fn help_describes_what_the_program_does() {
    let o = neon(&["--help"]);
    assert!(o.status.success());
    assert!(stdout(&o).lines().next().unwrap().contains("openWakeWord"), "{}", stdout(&o));
}

/// `neon wake ... 2>&-`, or stderr a pipe nobody reads: warnings and errors that cannot be
/// written are dropped, never a panic (status 101); the status still tells the outcome.
#[test]
fn a_closed_stderr_is_not_a_panic() {
    // A warning (stdin ends inside a sample) on a pipe whose reader has gone: status 0.
    let mut bytes: Vec<u8> = read_clip("hey_jarvis").iter().flat_map(|v| v.to_le_bytes()).collect();
    bytes.push(0x7f);
    let mut child = spawn_wake_stdin(&["--model", "hey_jarvis"]);
    drop(child.stderr.take());
    child.stdin.take().unwrap().write_all(&bytes).unwrap();
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
    assert!(stdout(&o).contains("1 detection(s)"), "{}", stdout(&o));
    // An error message on such a pipe: status 1.
    // And closed outright (`2>&-`).
    assert_status_1_with_closed_stderr(&["wake", "no-such-file.wav"]);
}

#[test]
fn empty_stdin_is_an_error_like_an_empty_file() {
    for extra in [&[][..], &["--pad-seconds", "1"], &["--json"]] {
        let o = wake_stdin(&[], extra);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(1), "{extra:?}: {err}");
        assert_eq!(
            err, "neon: stdin: no samples (the input ended before one whole sample)\n",
            "{extra:?}"
        );
        assert!(stdout(&o).is_empty(), "{extra:?}: {}", stdout(&o));
    }
}

#[test]
fn detection_times_are_relative_to_the_audio_and_never_negative() {
    // A threshold every score reaches: detections inside the leading second of padding.
    let path = clip("hey_jarvis");
    let args = ["wake", path.to_str().unwrap(), "--model", "hey_jarvis", "--pad-seconds", "1"];
    let low = ["--threshold", "1e-30", "--refractory-seconds", "0", "--json"];
    let o = neon(&[&args[..], &low].concat());
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let d = v["models"]["hey_jarvis_v0.1"]["detections"].as_array().unwrap();
    let times: Vec<f64> = d.iter().map(|d| d["time_s"].as_f64().unwrap()).collect();
    assert!(times.iter().all(|&t| t >= 0.0), "{times:?}");
    assert_eq!(times[0], 0.0, "the first detection is inside the padding: {times:?}");
    // With and without padding the detection of the wake word is at the same time (to
    // within one 80 ms chunk: the chunk grid moves with the padding).
    let time = |extra: &[&str]| {
        let o = neon(
            &[&["wake", path.to_str().unwrap(), "--model", "hey_jarvis", "--json"], extra].concat(),
        );
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        v["models"]["hey_jarvis_v0.1"]["detections"][0]["time_s"].as_f64().unwrap()
    };
    let (plain, padded) = (time(&[]), time(&["--pad-seconds", "1"]));
    assert!((plain - padded).abs() <= 0.08 + 1e-9, "{plain} vs {padded}");
}

/// A head whose layers overflow (NaN or infinite scores): an error naming the model, not
/// `peak 0.000` and status 0.
#[test]
fn a_head_scoring_nan_is_an_error_naming_it() {
    let bytes = std::fs::read(oww_path("alexa_v0.1.safetensors")).unwrap();
    let st = safetensors::SafeTensors::deserialize(&bytes).unwrap();
    let (_, meta) = safetensors::SafeTensors::read_metadata(&bytes).unwrap();
    // Huge weights: the hidden layers overflow to +inf, and the output layer's weights of
    // both signs meet them as inf - inf = NaN.
    let raw: Vec<(String, Vec<usize>, Vec<u8>)> = st
        .tensors()
        .into_iter()
        .map(|(name, view)| {
            let n = view.data().len() / 4;
            let sign = |i: usize| if name.starts_with("dense2") && i % 2 == 1 { -1.0 } else { 1.0 };
            let data: Vec<u8> = if name.ends_with("weight") {
                (0..n).flat_map(|i| (sign(i) * f32::MAX).to_le_bytes()).collect()
            } else {
                view.data().to_vec()
            };
            (name, view.shape().to_vec(), data)
        })
        .collect();
    let views: Vec<(String, safetensors::tensor::TensorView<'_>)> = raw
        .iter()
        .map(|(n, s, b)| {
            let view = safetensors::tensor::TensorView::new(safetensors::Dtype::F32, s.clone(), b);
            (n.clone(), view.unwrap())
        })
        .collect();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("overflow.safetensors");
    std::fs::write(&path, safetensors::serialize(views, meta.metadata().clone()).unwrap()).unwrap();
    let o =
        neon(&["wake", clip("hey_jarvis").to_str().unwrap(), "--model", path.to_str().unwrap()]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{}{err}", stdout(&o));
    assert!(err.starts_with("neon: model `overflow` gave a score of NaN at 0.48 s"), "{err}");
    assert!(err.contains("unusable"), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
}

/// `--model PATH` must be a regular file of at most 16 MiB: a device, a directory or a huge
/// file is a one-line error naming it (not a read that never ends).
#[test]
fn a_head_path_must_be_a_small_regular_file() {
    let dir = tempfile::tempdir().unwrap();
    let big = dir.path().join("big.safetensors");
    std::fs::File::create(&big).unwrap().set_len(17 << 20).unwrap(); // sparse
    let input = clip("hey_jarvis");
    let cases = [
        ("/dev/zero".to_string(), "/dev/zero: not a regular file"),
        (dir.path().display().to_string(), "is a directory, not a file"),
        (big.display().to_string(), "larger than the limit of 16 MiB"),
    ];
    for (model, says) in &cases {
        let o = neon(&["wake", input.to_str().unwrap(), "--model", model]);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(1), "{model}: {err}");
        assert!(err.starts_with(&format!("neon: {model}")) && err.contains(says), "{err}");
        assert_eq!(err.lines().count(), 1, "{err}");
    }
}

/// `--json-lines`: one `{"time_s", "model", "score"}` object per detection, from a file and
/// from stdin, and nothing else on stdout.
#[test]
fn json_lines_print_one_object_per_detection() {
    let path = clip("hey_jarvis");
    let o = neon(&["wake", path.to_str().unwrap(), "--json-lines"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let lines: Vec<serde_json::Value> =
        stdout(&o).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines.len(), 1, "{}", stdout(&o));
    let keys: Vec<&String> = lines[0].as_object().unwrap().keys().collect();
    assert_eq!(keys, ["model", "score", "time_s"]);
    assert_eq!(lines[0]["model"], "hey_jarvis_v0.1");
    assert_eq!(lines[0]["time_s"], 0.96);
    assert!(lines[0]["score"].as_f64().unwrap() >= 0.5);
    let o = neon(&["wake", path.to_str().unwrap(), "--json-lines", "--json"]);
    assert_eq!(o.status.code(), Some(2), "the two JSON forms conflict");
}

/// Spawns `neon wake - ARGS` with piped stdin and stdout, feeds it the hey_jarvis clip and
/// keeps stdin open (a live stream), until `done(stdout so far)`.
fn live(args: &[&str]) -> std::process::Child {
    let mut child = spawn_wake_stdin(args);
    let audio = neon_audio::Audio::open(clip("hey_jarvis")).unwrap().to_i16();
    let bytes: Vec<u8> = audio.iter().flat_map(|s| s.to_le_bytes()).collect();
    child.stdin.as_mut().unwrap().write_all(&bytes).unwrap();
    child
}

fn signal(child: &std::process::Child, sig: &str) {
    // Let it score what it was sent (2.4 s of audio: well under a second here).
    std::thread::sleep(std::time::Duration::from_millis(1500));
    let ok = Command::new("kill").args([sig, &child.id().to_string()]).status().unwrap();
    assert!(ok.success());
}

/// SIGINT and SIGTERM end a live stream with what it gathered: the `--json` object so far
/// (exit 130), the summary (exit 143), the detections already printed with `--json-lines`.
#[test]
fn signals_end_a_live_stream_with_its_results() {
    let child = live(&["--json"]);
    signal(&child, "-INT");
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(130), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let scores = v["models"]["hey_jarvis_v0.1"]["scores"].as_array().unwrap();
    // What was scored before the signal: all 30 whole chunks unless the machine is very
    // busy (the detection comes with chunk 12).
    assert!((1..=30).contains(&scores.len()), "{}", scores.len());
    let detections = v["models"]["hey_jarvis_v0.1"]["detections"].as_array().unwrap().len();
    assert_eq!(detections, usize::from(scores.len() >= 12));

    let child = live(&[]);
    signal(&child, "-TERM");
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(143), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.contains("hey_jarvis_v0.1") && out.contains("stdin: "), "{out}");

    let child = live(&["--json-lines", "--model", "hey_jarvis"]);
    signal(&child, "-INT");
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(130));
    assert!(stdout(&o).lines().count() <= 1, "{}", stdout(&o));
}

/// A closed stdout ends a live stream quietly (status 0) within a second, although no more
/// audio arrives to be scored.
#[test]
fn a_closed_stdout_is_noticed_while_no_audio_arrives() {
    let mut child = live(&["--model", "hey_jarvis"]);
    std::thread::sleep(std::time::Duration::from_millis(300));
    drop(child.stdout.take()); // the reader goes away; stdin stays open
    let start = std::time::Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        assert!(start.elapsed().as_secs_f64() < 5.0, "still running after 5 s");
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    assert_eq!(status.code(), Some(0));
    // Within a second of noticing (the check runs every 200 ms), with margin for a busy CI.
    assert!(start.elapsed().as_secs_f64() < 2.0, "{:?}", start.elapsed());
}
