//! `neon serve` as Home Assistant and wyoming-openwakeword's own test drive it: over stdio
//! and TCP, describe lists the models (built-ins under their 2.x names and a custom model),
//! each clip wakes its own model when all are named in `detect`, a clip without a wake word
//! gives `not-detected` after `audio-stop`, other audio formats detect alike, malformed
//! clients get an error event and the others are unaffected, and closing stdin ends the
//! server with status 0. `micro_serve`: the same for `--engine micro` (microWakeWord).
//!
//! Host only (the test starts the host `neon` binary).
#![cfg(not(target_arch = "aarch64"))]

mod common;
mod micro_serve;

use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use common::tcp::TcpServer;
use neon_audio::Audio;
use neon_wyoming::event::{read_event, write_event, Event};
use serde_json::json;

const MODELS: [&str; 6] =
    ["okay_nabu", "hey_jarvis", "hey_mycroft", "hey_rhasspy", "alexa", "computer"];

fn custom_dir() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../models")).join("tests/data/custom")
}

/// (model, clip) pairs: our TTS clips and the community model's recording.
fn clips() -> Vec<(&'static str, PathBuf)> {
    let oww = |n: &str| common::oww_path(&format!("clips/{n}.wav"));
    vec![
        ("okay_nabu", oww("ok_nabu")),
        ("hey_jarvis", oww("hey_jarvis")),
        ("hey_mycroft", oww("hey_mycroft")),
        ("hey_rhasspy", oww("hey_rhasspy")),
        ("alexa", oww("alexa")),
        ("computer", custom_dir().join("computer.wav")),
    ]
}

fn spawn(args: &[&str]) -> Child {
    common::neon_piped(&[&["serve"][..], args].concat())
}

/// 16 kHz mono int16 samples of `path`, with 1 s of silence after (a microphone goes on).
fn samples(path: &PathBuf) -> Vec<i16> {
    let mut s = Audio::open(path).unwrap().to_i16();
    s.extend(vec![0i16; 16_000]);
    s
}

/// The recordings of wyoming-openwakeword's own test (`data/wyoming/README.md`), as is.
fn peer_clips() -> Vec<(&'static str, Vec<i16>)> {
    let dir =
        PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../models")).join("tests/data/wyoming");
    MODELS
        .iter()
        .map(|&m| {
            let path = if m == "computer" {
                custom_dir().join("computer.wav")
            } else {
                dir.join(format!("{m}.wav"))
            };
            (m, Audio::open(path).unwrap().to_i16())
        })
        .collect()
}

/// audio-start, chunks of 1024 frames in `format` (rate 16 kHz; width 2 or 4; 1 or 2
/// channels), audio-stop, then describe (a barrier: its info is the last reply).
fn send_clip<W: Write>(w: &mut W, audio: &[i16], width: u32, channels: u32) {
    send_clip_at(w, audio, 16_000, width, channels)
}

/// As [`send_clip`] at `rate` (16 kHz, or 32 kHz: each sample sent twice).
fn send_clip_at<W: Write>(w: &mut W, audio: &[i16], rate: u32, width: u32, channels: u32) {
    let doubled: Vec<i16>;
    let audio = if rate == 32_000 {
        doubled = audio.iter().flat_map(|&v| [v, v]).collect();
        &doubled[..]
    } else {
        audio
    };
    let format = json!({"rate": rate, "width": width, "channels": channels});
    write_event(w, &Event::with_data("audio-start", format.clone())).unwrap();
    for piece in audio.chunks(1024) {
        let mut payload = Vec::new();
        for &v in piece {
            for _ in 0..channels {
                // Two channels sum (audioop.tomono 1.0, 1.0): send halves.
                let v = if channels == 2 { v / 2 } else { v };
                match width {
                    4 => payload.extend_from_slice(&(i32::from(v) << 16).to_le_bytes()),
                    _ => payload.extend_from_slice(&v.to_le_bytes()),
                }
            }
        }
        let mut e = Event::with_data("audio-chunk", format.clone());
        e.payload = payload;
        write_event(w, &e).unwrap();
    }
    write_event(w, &Event::new("audio-stop")).unwrap();
    write_event(w, &Event::new("describe")).unwrap();
}

/// Events up to and including the next `info`.
fn replies<R: BufRead>(r: &mut R) -> Vec<Event> {
    let mut out = Vec::new();
    loop {
        let e = read_event(r).unwrap().expect("the server closed the stream");
        let done = e.kind == "info";
        out.push(e);
        if done {
            return out;
        }
    }
}

fn detections(events: &[Event]) -> Vec<String> {
    events
        .iter()
        .filter(|e| e.kind == "detection")
        .map(|e| e.data["name"].as_str().unwrap().to_string())
        .collect()
}

/// The whole exchange of the peer's test, on one connection: `clips` (model, samples) and
/// a negative recording.
fn peer_exchange<R: BufRead, W: Write>(
    r: &mut R,
    w: &mut W,
    clips: &[(&str, Vec<i16>)],
    negative: &[i16],
) {
    write_event(w, &Event::new("describe")).unwrap();
    let info = replies(r).pop().unwrap();
    let wake = info.data["wake"].as_array().unwrap();
    assert_eq!(wake.len(), 1, "one wake program");
    let names: Vec<&str> =
        wake[0]["models"].as_array().unwrap().iter().map(|m| m["name"].as_str().unwrap()).collect();
    for m in MODELS {
        assert!(names.contains(&m), "{m} missing from {names:?}");
    }
    write_event(w, &Event::with_data("detect", json!({"names": MODELS}))).unwrap();
    for (model, clip) in clips {
        let model = *model;
        send_clip(w, clip, 2, 1);
        let got = replies(r);
        let d = detections(&got);
        assert!(!d.is_empty() && d.iter().all(|n| n == model), "{model}: {d:?}");
        assert!(!got.iter().any(|e| e.kind == "not-detected"), "{model}");
        let ts =
            got.iter().find(|e| e.kind == "detection").unwrap().data["timestamp"].as_u64().unwrap();
        assert!(ts > 0 && ts < 4000, "{model}: timestamp {ts} ms");
    }
    // No wake word: not-detected after audio-stop.
    send_clip(w, negative, 2, 1);
    let got = replies(r);
    assert!(detections(&got).is_empty(), "{:?}", detections(&got));
    assert!(got.iter().any(|e| e.kind == "not-detected"));
}

#[test]
fn stdio_server_passes_the_peer_exchange_and_exits_0_on_eof() {
    let dir = custom_dir();
    let mut child = spawn(&["--uri", "stdio://", "--custom-model-dir", dir.to_str().unwrap()]);
    let mut w = child.stdin.take().unwrap();
    let mut r = BufReader::new(child.stdout.take().unwrap());
    let ours: Vec<(&str, Vec<i16>)> = clips().into_iter().map(|(m, p)| (m, samples(&p))).collect();
    peer_exchange(&mut r, &mut w, &ours, &samples(&common::oww_path("clips/weather.wav")));
    // The peer's own recordings, unpadded, as its test sends them.
    let snowboy = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../models"))
        .join("tests/data/wyoming/snowboy.wav");
    peer_exchange(&mut r, &mut w, &peer_clips(), &Audio::open(snowboy).unwrap().to_i16());
    drop(w);
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn other_formats_and_detect_rules() {
    let mut child = spawn(&[]);
    let mut w = child.stdin.take().unwrap();
    let mut r = BufReader::new(child.stdout.take().unwrap());
    let jarvis = samples(&common::oww_path("clips/hey_jarvis.wav"));
    // Before any detect, nothing runs: not-detected.
    send_clip(&mut w, &jarvis, 2, 1);
    let got = replies(&mut r);
    assert!(detections(&got).is_empty() && got.iter().any(|e| e.kind == "not-detected"));
    // An unknown name falls back to okay_nabu, which does not fire on hey_jarvis.
    write_event(&mut w, &Event::with_data("detect", json!({"names": ["nope"]}))).unwrap();
    send_clip(&mut w, &jarvis, 2, 1);
    assert!(detections(&replies(&mut r)).is_empty());
    // 1.x names are aliases; 32-bit and stereo chunks detect alike.
    write_event(
        &mut w,
        &Event::with_data("detect", json!({"names": ["hey_jarvis_v0.1", "ok_nabu"]})),
    )
    .unwrap();
    for (width, channels) in [(2, 1), (4, 1), (2, 2)] {
        send_clip(&mut w, &jarvis, width, channels);
        assert_eq!(
            detections(&replies(&mut r)),
            ["hey_jarvis"],
            "width {width} channels {channels}"
        );
    }
    // A chunk without a format: an error event, and the session goes on.
    write_event(&mut w, &Event::new("audio-chunk")).unwrap();
    write_event(&mut w, &Event::new("some-future-event")).unwrap();
    write_event(&mut w, &Event::new("describe")).unwrap();
    let got = replies(&mut r);
    assert!(got.iter().any(|e| e.kind == "error"), "{got:?}");
    send_clip(&mut w, &jarvis, 2, 1);
    assert_eq!(detections(&replies(&mut r)), ["hey_jarvis"]);
    // Malformed bytes: an error event, then the stdio server exits (status 1).
    w.write_all(b"this is not json\n").unwrap();
    let e = read_event(&mut r).unwrap().unwrap();
    assert_eq!(e.kind, "error");
    drop(w);
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(1));
}

fn connect(port: u16) -> (BufReader<TcpStream>, TcpStream) {
    for _ in 0..200 {
        if let Ok(s) = TcpStream::connect(("127.0.0.1", port)) {
            s.set_read_timeout(Some(Duration::from_secs(120))).unwrap();
            return (BufReader::new(s.try_clone().unwrap()), s);
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("cannot connect to port {port}");
}

#[test]
fn tcp_clients_at_once_get_their_own_results_and_a_bad_one_harms_none() {
    let dir = custom_dir();
    let server =
        TcpServer::start(&["--custom-model-dir", dir.to_str().unwrap(), "--max-clients", "9"]);
    let port = server.port;
    // A malformed client first: error event, disconnected.
    let (mut r, mut w) = connect(port);
    w.write_all(b"{\"type\": \"audio-chunk\", \"payload_length\": -5}\n").unwrap();
    let e = read_event(&mut r).unwrap().unwrap();
    assert_eq!(e.kind, "error");
    assert!(read_event(&mut r).unwrap().is_none(), "disconnected");
    // 8 clients streaming their clips at once.
    let threads: Vec<_> = (0..8)
        .map(|i| {
            std::thread::spawn(move || {
                let (model, clip) = clips()[i % 6].clone();
                let (mut r, mut w) = connect(port);
                write_event(&mut w, &Event::with_data("detect", json!({"names": MODELS}))).unwrap();
                send_clip(&mut w, &samples(&clip), 2, 1);
                assert_eq!(detections(&replies(&mut r)), [model], "client {i}");
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    // One more than the maximum is refused while 9 are served (each proven served by a
    // describe; a client refused because a finished one was still being counted retries).
    let mut held = Vec::new();
    while held.len() < 9 {
        let (mut r, mut w) = connect(port);
        write_event(&mut w, &Event::new("describe")).unwrap();
        if read_event(&mut r).unwrap().unwrap().kind == "info" {
            held.push((r, w));
        } else {
            std::thread::sleep(Duration::from_millis(100));
        }
    }
    let (mut r, _w) = connect(port);
    let e = read_event(&mut r).unwrap().unwrap();
    assert_eq!((e.kind.as_str(), e.data["code"].as_str()), ("error", Some("too-many-clients")));
    drop(held);
    server.stop();
}

#[test]
fn options_and_version() {
    let out =
        Command::new(env!("CARGO_BIN_EXE_neon")).args(["serve", "--version"]).output().unwrap();
    assert!(out.status.success());
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), env!("CARGO_PKG_VERSION"));
    // A failed write of the output is an error (status 1 and a message), not a panic.
    for args in [&["serve", "--version"][..], &["--help"], &["serve", "--help"], &["--version"]] {
        let Ok(full) = std::fs::OpenOptions::new().write(true).open("/dev/full") else {
            break;
        };
        let out = Command::new(env!("CARGO_BIN_EXE_neon")).args(args).stdout(full).output();
        let out = out.unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
        assert!(err.contains("cannot write to stdout") && !err.contains("panicked"), "{err}");
    }
    for (args, says) in [
        (&["--threshold", "1.5"][..], "--threshold"),
        (&["--trigger-level", "0"], "--trigger-level"),
        (&["--uri", "udp://x"], "--uri"),
        (&["--custom-model-dir", "/nonexistent-dir"], "nonexistent"),
        (&["--vad-endpointing", "0"], "--vad-endpointing"),
        (&["--vad-endpointing", "1", "--vad", "off"], "--vad on"),
        (&["--max-request-seconds", "0"], "--max-request-seconds"),
    ] {
        let out =
            Command::new(env!("CARGO_BIN_EXE_neon")).arg("serve").args(args).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success() && err.contains(says), "{args:?}: {err}");
    }
    // Deprecated options are accepted (and ignored) as the peer accepts them.
    let mut child = spawn(&[
        "--model",
        "x",
        "--preload-model",
        "y",
        "--models-dir",
        "d",
        "--debug-probability",
        "--zeroconf",
    ]);
    drop(child.stdin.take());
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stderr).contains("deprecated"));
}

#[cfg(unix)]
#[test]
fn unix_socket_server_answers() {
    use std::os::unix::net::UnixStream;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("neon.sock");
    let uri = format!("unix://{}", path.display());
    let mut server = spawn(&["--uri", &uri]);
    let mut stream = None;
    for _ in 0..200 {
        if let Ok(s) = UnixStream::connect(&path) {
            stream = Some(s);
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let s = stream.expect("cannot connect to the unix socket");
    s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    let mut r = BufReader::new(s.try_clone().unwrap());
    let mut w = s;
    write_event(&mut w, &Event::with_data("detect", json!({"names": ["hey_jarvis"]}))).unwrap();
    send_clip(&mut w, &samples(&common::oww_path("clips/hey_jarvis.wav")), 2, 1);
    assert_eq!(detections(&replies(&mut r)), ["hey_jarvis"]);
    // A second server on a live socket is refused, and the first one keeps it.
    let out = Command::new(env!("CARGO_BIN_EXE_neon"))
        .args(["serve", "--uri", &uri])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("already listening"), "{err}");
    send_clip(&mut w, &samples(&common::oww_path("clips/hey_jarvis.wav")), 2, 1);
    assert_eq!(detections(&replies(&mut r)), ["hey_jarvis"]);
    assert!(UnixStream::connect(&path).is_ok(), "the first server still answers");
    server.kill().unwrap();
    let _ = server.wait();
    // Its socket file is left behind: a new server takes it over. No path is an error.
    let mut again = spawn(&["--uri", &uri]);
    let mut answered = false;
    for _ in 0..200 {
        if UnixStream::connect(&path).is_ok() {
            answered = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    again.kill().unwrap();
    let _ = again.wait();
    assert!(answered, "a stale socket file is replaced");
    let out = Command::new(env!("CARGO_BIN_EXE_neon"))
        .args(["serve", "--uri", "unix://"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("no socket path"), "{err}");
}

/// With `--model-dir`, `transcribe` then a clip gives one `transcript` equal to
/// `neon transcribe`'s text on the same file; the wake service goes on afterwards, and a
/// server without a model answers `transcribe` with an error event.
#[test]
fn transcribe_gives_neon_transcribes_text() {
    let dir = common::moonshine::model_dir();
    let clip = dir.join("clips/quick_brown_fox.wav");
    let want = Command::new(env!("CARGO_BIN_EXE_neon"))
        .args(["transcribe", clip.to_str().unwrap(), "--model-dir", dir.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(want.status.success(), "{}", String::from_utf8_lossy(&want.stderr));
    let want = String::from_utf8_lossy(&want.stdout).trim().to_string();
    assert!(!want.is_empty());
    let mut child = spawn(&["--model-dir", dir.to_str().unwrap(), "--threads", "2"]);
    let mut w = child.stdin.take().unwrap();
    let mut r = BufReader::new(child.stdout.take().unwrap());
    write_event(&mut w, &Event::new("describe")).unwrap();
    let info = replies(&mut r).pop().unwrap();
    assert_eq!(info.data["asr"][0]["models"][0]["languages"][0], "en", "{:?}", info.data["asr"]);
    for _ in 0..2 {
        write_event(&mut w, &Event::new("transcribe")).unwrap();
        let audio = Audio::open(&clip).unwrap().to_i16();
        send_clip(&mut w, &audio, 2, 1);
        let got = replies(&mut r);
        let t: Vec<&Event> = got.iter().filter(|e| e.kind == "transcript").collect();
        assert_eq!(t.len(), 1, "{got:?}");
        assert_eq!(t[0].data["text"].as_str().unwrap(), want);
        assert!(!got.iter().any(|e| e.kind == "not-detected"), "ASR audio is not wake audio");
    }
    // Back to wake words.
    write_event(&mut w, &Event::with_data("detect", json!({"names": ["hey_jarvis"]}))).unwrap();
    send_clip(&mut w, &samples(&common::oww_path("clips/hey_jarvis.wav")), 2, 1);
    assert_eq!(detections(&replies(&mut r)), ["hey_jarvis"]);
    drop(w);
    assert!(child.wait().unwrap().success());
    // No model: an error event, the session goes on.
    let mut child = spawn(&[]);
    let mut w = child.stdin.take().unwrap();
    let mut r = BufReader::new(child.stdout.take().unwrap());
    write_event(&mut w, &Event::new("transcribe")).unwrap();
    write_event(&mut w, &Event::new("describe")).unwrap();
    let got = replies(&mut r);
    assert!(got
        .iter()
        .any(|e| e.kind == "error" && e.data["text"].as_str().unwrap().contains("--model-dir")));
    drop(w);
    assert!(child.wait().unwrap().success());
}

#[test]
fn a_name_is_offered_once_and_what_is_skipped_is_said() {
    // `alexa.onnx` (the community `computer` head under a built-in's name) and the two
    // `computer` files of tests/data/custom.
    let dir = tempfile::tempdir().unwrap();
    for (from, to) in [
        ("computer_v1.onnx", "alexa.onnx"),
        ("computer_v1.onnx", "computer_v1.onnx"),
        ("computer_v2.tflite", "computer_v2.tflite"),
    ] {
        std::fs::copy(custom_dir().join(from), dir.path().join(to)).unwrap();
    }
    // A corrupt file is skipped: the server starts with the others.
    std::fs::write(dir.path().join("broken.onnx"), b"not a model").unwrap();
    let mut child = spawn(&["--custom-model-dir", dir.path().to_str().unwrap()]);
    let mut w = child.stdin.take().unwrap();
    let mut r = BufReader::new(child.stdout.take().unwrap());
    write_event(&mut w, &Event::new("describe")).unwrap();
    let info = replies(&mut r).pop().unwrap();
    let models = info.data["wake"][0]["models"].as_array().unwrap().clone();
    let named = |n: &str| models.iter().filter(|m| m["name"] == n).cloned().collect::<Vec<_>>();
    let alexa = named("alexa");
    assert_eq!(alexa.len(), 1, "{models:?}");
    assert_eq!(alexa[0]["attribution"]["name"], "", "the custom model: {alexa:?}");
    assert_eq!(named("computer").len(), 1, "{models:?}");
    // `alexa` is now the custom head: the computer recording wakes it.
    write_event(&mut w, &Event::with_data("detect", json!({"names": ["alexa"]}))).unwrap();
    send_clip(&mut w, &samples(&custom_dir().join("computer.wav")), 2, 1);
    assert_eq!(detections(&replies(&mut r)), ["alexa"]);
    drop(w);
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("skipping a second model named `computer`"), "{err}");
    assert!(err.contains("`alexa` replaces the built-in one"), "{err}");
    assert!(err.contains("skipping a model that does not load: ") && err.contains("broken.onnx"));
}

/// A custom head whose layers overflow (weights of ±3.4e38: inf - inf = NaN): an `error`
/// event naming it, never a detection (a NaN is never at or below the threshold), and the
/// other models go on.
#[test]
fn a_head_scoring_nan_is_an_error_not_detections() {
    use neon_models::openwakeword::custom::onnx_proto::ModelProto;
    use prost::Message;

    let bytes = std::fs::read(custom_dir().join("computer_v1.onnx")).unwrap();
    let mut model = ModelProto::decode(&bytes[..]).unwrap();
    let graph = model.graph.as_mut().unwrap();
    for t in &mut graph.initializer {
        let huge = |i: usize| if i.is_multiple_of(2) { f32::MAX } else { -f32::MAX };
        if let Some(raw) = t.raw_data.as_mut() {
            if t.data_type == Some(1) {
                let n = raw.len() / 4;
                *raw = (0..n).flat_map(|i| huge(i).to_le_bytes()).collect();
            }
        }
        for (i, v) in t.float_data.iter_mut().enumerate() {
            *v = huge(i);
        }
    }
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("overflow.onnx"), model.encode_to_vec()).unwrap();
    let mut child = spawn(&["--custom-model-dir", dir.path().to_str().unwrap()]);
    let mut w = child.stdin.take().unwrap();
    let mut r = BufReader::new(child.stdout.take().unwrap());
    let names = json!({"names": ["overflow", "hey_jarvis"]});
    write_event(&mut w, &Event::with_data("detect", names)).unwrap();
    // Silence, then hey jarvis: the broken head never fires, hey_jarvis does.
    let mut audio = vec![0i16; 3 * 16_000];
    audio.extend(samples(&common::oww_path("clips/hey_jarvis.wav")));
    send_clip(&mut w, &audio, 2, 1);
    let got = replies(&mut r);
    let errors: Vec<&Event> = got.iter().filter(|e| e.kind == "error").collect();
    assert_eq!(errors.len(), 1, "one error, then the model is off: {got:?}");
    let text = errors[0].data["text"].as_str().unwrap();
    assert!(text.contains("model `overflow` gave a score of") && text.contains("unusable"));
    assert_eq!(detections(&got), ["hey_jarvis"]);
    drop(w);
    assert!(child.wait().unwrap().success());
}

/// `--idle-timeout`: a silent client, one stopped halfway through a header and one sending
/// a header a byte at a time slower than the limit each get an `error` (`timeout`) and are
/// closed, freeing their places; a client that pauses less than the limit between events
/// is served.
#[test]
fn idle_and_stalled_clients_are_closed_and_free_their_place() {
    let server = TcpServer::start(&["--max-clients", "3", "--idle-timeout", "1"]);
    let port = server.port;
    let t0 = std::time::Instant::now();
    let (silent_r, _silent_w) = connect(port);
    let (half_r, mut half_w) = connect(port);
    half_w.write_all(b"{\"type\": \"audio-chu").unwrap();
    let (crawl_r, mut crawl_w) = connect(port);
    let crawler = std::thread::spawn(move || {
        for b in b"{\"type\": \"describe\"}\n" {
            if crawl_w.write_all(&[*b]).is_err() {
                return;
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    });
    // A fourth client finds every place taken.
    let (mut r, _w) = connect(port);
    assert_eq!(read_event(&mut r).unwrap().unwrap().data["code"], "too-many-clients");
    for (name, mut r) in [("silent", silent_r), ("half", half_r), ("crawl", crawl_r)] {
        let e = read_event(&mut r).unwrap().unwrap();
        assert_eq!(e.data["code"], "timeout", "{name}: {e:?}");
        assert!(read_event(&mut r).unwrap().is_none(), "{name}: closed");
    }
    assert!(t0.elapsed() < Duration::from_secs(10), "{:?}", t0.elapsed());
    crawler.join().unwrap();
    // The places are free: a client pausing 0.5 s between its events is served.
    let (mut r, mut w) = connect(port);
    write_event(&mut w, &Event::with_data("detect", json!({"names": ["hey_jarvis"]}))).unwrap();
    std::thread::sleep(Duration::from_millis(500));
    send_clip(&mut w, &samples(&common::oww_path("clips/hey_jarvis.wav")), 2, 1);
    assert_eq!(detections(&replies(&mut r)), ["hey_jarvis"]);
    std::thread::sleep(Duration::from_millis(500));
    write_event(&mut w, &Event::new("describe")).unwrap();
    assert_eq!(read_event(&mut r).unwrap().unwrap().kind, "info");
    server.stop();
}

/// A client closed for an error (here a malformed event followed by bytes the server never
/// reads) reads the `error` event and then the end of the stream, not a connection reset:
/// the server ends its writing half before it closes (closing a socket with unread bytes
/// resets the connection, and a client still reading then loses the end of the stream).
#[test]
fn a_client_closed_for_an_error_reads_the_error_then_the_end() {
    let server = TcpServer::start(&[]);
    let port = server.port;
    for round in 0..5 {
        let (mut r, mut w) = connect(port);
        let mut bytes = b"not an event\n".to_vec();
        bytes.resize(256 * 1024, b'x');
        let writer = std::thread::spawn(move || {
            let _ = w.write_all(&bytes);
            w
        });
        let e = read_event(&mut r).unwrap().unwrap();
        assert_eq!(e.data["code"], "malformed-event", "round {round}: {e:?}");
        let end = read_event(&mut r);
        assert!(matches!(end, Ok(None)), "round {round}: {end:?}");
        drop(writer.join().unwrap());
    }
    server.stop();
}

/// At the file-descriptor limit (`ulimit -n 30`: a TCP client costs the server two), the
/// clients it cannot take get `too-many-clients` instead of silence, the accept loop does
/// not spin (little CPU, one log line), and once clients leave new ones are served.
#[test]
fn at_the_descriptor_limit_clients_are_refused_without_spinning() {
    let neon = env!("CARGO_BIN_EXE_neon");
    let mut sh = Command::new("sh");
    sh.arg("-c")
        .arg(format!("ulimit -n 30 && exec {neon} serve --uri tcp://127.0.0.1:0 --max-clients 64"));
    let server = TcpServer::spawn(sh);
    let port = server.port;
    let mut clients: Vec<_> = (0..20).map(|_| connect(port)).collect();
    let mut answers = Vec::new();
    for (r, w) in &mut clients {
        w.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        let _ = write_event(w, &Event::new("describe"));
        let e = read_event(r).map(|e| e.map(|e| (e.kind, e.data.get("code").cloned())));
        answers.push(format!("{e:?}"));
    }
    let served = answers.iter().filter(|a| a.contains("\"info\"")).count();
    let refused = answers.iter().filter(|a| a.contains("too-many-clients")).count();
    if !(served >= 5 && refused >= 1 && served + refused == 20) {
        panic!("{answers:?}\n{}", server.stop());
    }
    std::thread::sleep(Duration::from_secs(1));
    let stat = std::fs::read_to_string(format!("/proc/{}/stat", server.child.id())).unwrap();
    let fields: Vec<&str> = stat.rsplit(')').next().unwrap().split_whitespace().collect();
    let ticks: u64 = fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap();
    assert!(ticks < 100, "{ticks} ticks of CPU: the accept loop spins");
    // The clients leave: once their threads have closed them, a new one is served.
    drop(clients);
    let mut got = Vec::new();
    for _ in 0..50 {
        let (mut r, mut w) = connect(port);
        let _ = write_event(&mut w, &Event::new("describe"));
        let kind = read_event(&mut r).ok().flatten().map(|e| e.kind);
        if kind.as_deref() == Some("info") {
            break;
        }
        got.push(kind);
        std::thread::sleep(Duration::from_millis(200));
    }
    assert!(got.len() < 50, "never served again: {got:?}");
    let err = server.stop();
    assert!(err.matches("accept failed").count() <= 3, "{err}");
}
