//! `neon serve --model-dir` speech recognition as Home Assistant uses it: silence around and
//! between speech, streamed transcripts, server-side endpointing, the per-request cap and
//! clients that vanish mid-request.
//!
//! - Streaming: real speech (`models/speech/clips`) with 1 s of silence before, a 3 s pause
//!   between two clips and 1 s after gives `transcript-start`, a `transcript-chunk` per
//!   decode window (the first one before `audio-stop` is sent), `transcript` and
//!   `transcript-stop`, in that order; the chunks concatenated are the transcript, which
//!   equals `neon transcribe` on the same samples (`--vad on` and `--vad off`).
//! - Endpointing: with `--vad-endpointing`, speech then silence ends the request without
//!   `audio-stop`; its later audio and `audio-stop` give nothing; `vad_sensitivity` scales
//!   the silence.
//! - The cap: past `--max-request-seconds`, the text so far, then an `error`
//!   (`audio-too-long`); the connection goes on.
//! - A TCP client that vanishes mid-request harms nobody: the next client (one ASR worker)
//!   gets its text.
//! - Bytes that are not speech (every width, garbage payloads, including bit patterns that
//!   would be NaN as floats: Wyoming audio is integer PCM) give a transcript, never a
//!   panic.
//!
//! Host only (the test starts the host `neon` binary). Needs the converted model
//! (`tools/moonshine/fetch.sh`).
#![cfg(not(target_arch = "aarch64"))]

mod common;

use std::io::{BufReader, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{channel, Receiver};
use std::time::Duration;

use neon_audio::Audio;
use neon_wyoming::event::{read_event, write_event, Event};
use serde_json::{json, Value};

const RATE: usize = 16_000;
/// Longest wait for one reply (a decode in the test profile takes well under a second).
const WAIT: Duration = Duration::from_secs(60);

fn clip(name: &str) -> Vec<i16> {
    let path = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../models"))
        .join("speech/clips")
        .join(name);
    Audio::open(path).unwrap().to_i16()
}

fn silence(seconds: f64) -> Vec<i16> {
    vec![0; (seconds * RATE as f64) as usize]
}

/// A running `neon serve --uri stdio://` and a thread reading its events.
struct Server {
    child: Child,
    input: ChildStdin,
    events: Receiver<Event>,
}

impl Server {
    fn start(args: &[&str]) -> Server {
        let dir = common::moonshine::model_dir();
        let mut child = Command::new(env!("CARGO_BIN_EXE_neon"))
            .args(["serve", "--model-dir", dir.to_str().unwrap(), "--threads", "2"])
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let input = child.stdin.take().unwrap();
        let mut output = BufReader::new(child.stdout.take().unwrap());
        let (tx, events) = channel();
        std::thread::spawn(move || {
            while let Ok(Some(e)) = read_event(&mut output) {
                if tx.send(e).is_err() {
                    return;
                }
            }
        });
        Server { child, input, events }
    }

    fn send(&mut self, e: &Event) {
        write_event(&mut self.input, e).unwrap();
    }

    fn next(&self) -> Event {
        self.events.recv_timeout(WAIT).expect("no reply from the server")
    }

    /// Events up to and including the next `kind`.
    fn until(&self, kind: &str) -> Vec<Event> {
        let mut out = Vec::new();
        loop {
            let e = self.next();
            let done = e.kind == kind;
            out.push(e);
            if done {
                return out;
            }
        }
    }

    /// Sends `describe` and returns every event before its `info`: what the server still
    /// had to say.
    fn barrier(&mut self) -> Vec<Event> {
        self.send(&Event::new("describe"));
        let mut got = self.until("info");
        got.pop();
        got
    }

    fn stop(mut self) {
        drop(self.input);
        assert!(self.child.wait().unwrap().success());
    }
}

fn chunk_event(samples: &[i16]) -> Event {
    let mut e = Event::with_data("audio-chunk", json!({"rate": 16000, "width": 2, "channels": 1}));
    e.payload = common::s16le(samples);
    e
}

/// `samples` as 1024-sample `audio-chunk`s (as Home Assistant's satellites send 1024 or
/// 512), no start or stop.
fn send_audio<W: Write>(w: &mut W, samples: &[i16]) {
    for piece in samples.chunks(1024) {
        write_event(w, &chunk_event(piece)).unwrap();
    }
}

fn begin<W: Write>(w: &mut W, transcribe: Value) {
    write_event(w, &Event::with_data("transcribe", transcribe)).unwrap();
    let format = json!({"rate": 16000, "width": 2, "channels": 1});
    write_event(w, &Event::with_data("audio-start", format)).unwrap();
}

fn text(e: &Event) -> &str {
    e.data["text"].as_str().unwrap()
}

/// Checks one answered request: `transcript-start` first, chunks, `transcript`,
/// `transcript-stop` last; returns (the chunks' texts, the transcript).
fn answer(events: &[Event]) -> (Vec<String>, String) {
    let kinds: Vec<&str> = events.iter().map(|e| e.kind.as_str()).collect();
    assert_eq!(kinds.first(), Some(&"transcript-start"), "{kinds:?}");
    assert_eq!(&kinds[kinds.len() - 2..], ["transcript", "transcript-stop"], "{kinds:?}");
    let middle = &events[1..events.len() - 2];
    assert!(middle.iter().all(|e| e.kind == "transcript-chunk"), "{kinds:?}");
    let chunks: Vec<String> = middle.iter().map(|e| text(e).to_string()).collect();
    let transcript = text(&events[events.len() - 2]).to_string();
    assert_eq!(chunks.concat(), transcript, "the chunks concatenated are the transcript");
    (chunks, transcript)
}

/// `neon transcribe` of `samples` (raw s16le on stdin) with `args`.
fn neon_transcribe(samples: &[i16], extra: &[&str]) -> String {
    let dir = common::moonshine::model_dir();
    let mut args = vec!["transcribe", "-", "--model-dir", dir.to_str().unwrap()];
    args.extend_from_slice(extra);
    let out = common::neon_stdin(&args, &common::s16le(samples));
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

fn join(parts: &[&[i16]]) -> Vec<i16> {
    parts.concat()
}

#[test]
fn silence_around_and_between_speech_streams_one_chunk_per_window() {
    let speech = clip("librivox_sense_0930.wav");
    let other = clip("cmu_cards_005.wav");
    let first = join(&[&silence(1.0), &speech, &silence(3.0)]);
    let rest = join(&[&other, &silence(1.0)]);
    let whole = join(&[&first, &rest]);
    let mut server = Server::start(&[]);
    server.send(&Event::new("describe"));
    let info = server.until("info").pop().unwrap();
    let asr = &info.data["asr"][0];
    assert_eq!(asr["supports_transcript_streaming"], true, "{asr}");
    assert_eq!(asr["requires_external_vad"], true, "{asr}");
    for round in 0..2 {
        begin(&mut server.input, json!({"language": "en"}));
        send_audio(&mut server.input, &first);
        // The first window closed 2 s into the pause: its chunk comes before audio-stop.
        let early = server.until("transcript-chunk");
        assert_eq!(early[0].kind, "transcript-start", "round {round}: {early:?}");
        assert!(text(&early[1]).to_lowercase().contains("amiable"), "{early:?}");
        send_audio(&mut server.input, &rest);
        server.send(&Event::new("audio-stop"));
        let mut events = early;
        events.extend(server.until("transcript-stop"));
        let (chunks, transcript) = answer(&events);
        assert_eq!(chunks.len(), 2, "one chunk per window: {chunks:?}");
        assert!(chunks[1].starts_with(' '), "{chunks:?}");
        assert_eq!(transcript, neon_transcribe(&whole, &[]), "as neon transcribe");
        assert!(server.barrier().is_empty());
    }
    server.stop();
    // --vad off: the audio as given, as `neon transcribe --vad off`.
    let mut server = Server::start(&["--vad", "off"]);
    begin(&mut server.input, json!({}));
    send_audio(&mut server.input, &whole);
    server.send(&Event::new("audio-stop"));
    let (_, transcript) = answer(&server.until("transcript-stop"));
    assert_eq!(transcript, neon_transcribe(&whole, &["--vad", "off"]));
    server.stop();
}

#[test]
fn endpointing_ends_a_command_on_silence_and_ignores_the_rest() {
    let speech = clip("cmu_goforward.wav");
    let mut server = Server::start(&["--vad-endpointing", "0.7"]);
    server.send(&Event::new("describe"));
    let info = server.until("info").pop().unwrap();
    assert_eq!(info.data["asr"][0]["requires_external_vad"], false);
    for _ in 0..2 {
        begin(&mut server.input, json!({"vad_sensitivity": "default"}));
        send_audio(&mut server.input, &join(&[&silence(1.5), &speech, &silence(1.5)]));
        // No audio-stop: the silence ended it.
        let (_, transcript) = answer(&server.until("transcript-stop"));
        assert!(transcript.to_lowercase().contains("forward"), "{transcript}");
        // The rest of its audio (speech included) and its audio-stop give nothing.
        send_audio(&mut server.input, &join(&[&speech, &silence(2.0)]));
        server.send(&Event::new("audio-stop"));
        assert!(server.barrier().is_empty());
    }
    // Before any speech, silence never ends a request.
    begin(&mut server.input, json!({}));
    send_audio(&mut server.input, &silence(3.0));
    assert!(server.barrier().iter().all(|e| e.kind == "transcript-start"));
    server.send(&Event::new("audio-stop"));
    let got = server.until("transcript-stop");
    assert_eq!(text(&got[got.len() - 2]), "");
    server.stop();
    // vad_sensitivity scales the silence: 1.2 s of it ends an aggressive request (2 s ×
    // 0.25/0.7 = 0.71 s), not a default or relaxed one.
    let mut server = Server::start(&["--vad-endpointing", "2"]);
    for (sensitivity, ends) in [("aggressive", true), ("default", false), ("relaxed", false)] {
        begin(&mut server.input, json!({"vad_sensitivity": sensitivity}));
        send_audio(&mut server.input, &join(&[&speech, &silence(1.2)]));
        let got = server.barrier();
        let ended = got.iter().any(|e| e.kind == "transcript-stop");
        assert_eq!(ended, ends, "{sensitivity}: {got:?}");
        server.send(&Event::new("audio-stop"));
        let after = server.barrier();
        assert_eq!(after.iter().any(|e| e.kind == "transcript-stop"), !ends, "{after:?}");
    }
    server.stop();
}

#[test]
fn a_request_past_the_cap_gets_its_text_so_far_then_an_error() {
    let speech = clip("cmu_goforward.wav");
    let mut server = Server::start(&["--max-request-seconds", "3"]);
    begin(&mut server.input, json!({}));
    // 2.1 s of speech, then silence to 6 s: the cap falls in the silence.
    send_audio(&mut server.input, &join(&[&speech, &silence(4.0)]));
    let mut got = server.until("error");
    let error = got.pop().unwrap();
    assert_eq!(error.data["code"], "audio-too-long", "{error:?}");
    let (_, transcript) = answer(&got);
    assert!(transcript.to_lowercase().contains("forward"), "{transcript}");
    server.send(&Event::new("audio-stop"));
    assert!(server.barrier().is_empty(), "the rest of the request is ignored");
    // The connection goes on.
    begin(&mut server.input, json!({}));
    send_audio(&mut server.input, &speech);
    server.send(&Event::new("audio-stop"));
    let (_, again) = answer(&server.until("transcript-stop"));
    assert_eq!(again, transcript);
    server.stop();
}

#[test]
fn audio_that_is_not_speech_gives_a_transcript_never_a_panic() {
    let mut server = Server::start(&[]);
    for width in [1u32, 2, 3, 4] {
        begin(&mut server.input, json!({}));
        let format = json!({"rate": 16000, "width": width, "channels": 1});
        // Full-scale square waves, all-ones bytes (NaN as f32) and a ramp of every byte.
        for pattern in [[0xff_u8, 0x7f, 0xff, 0x7f], [0xff; 4], [0x00, 0x00, 0xc0, 0x7f]] {
            let mut e = Event::with_data("audio-chunk", format.clone());
            e.payload = pattern.iter().copied().cycle().take(16_000 * width as usize).collect();
            server.send(&e);
        }
        let mut e = Event::with_data("audio-chunk", format.clone());
        e.payload = (0..=255u8).cycle().take(40_001).collect();
        server.send(&e);
        server.send(&Event::new("audio-stop"));
        answer(&server.until("transcript-stop"));
    }
    server.stop();
}

fn connect(port: u16) -> TcpStream {
    let s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(WAIT)).unwrap();
    s
}

#[test]
fn a_client_vanishing_mid_request_harms_no_other() {
    let dir = common::moonshine::model_dir();
    let mut server = common::tcp::TcpServer::start(&[
        "--model-dir",
        dir.to_str().unwrap(),
        "--asr-workers",
        "1",
        "--threads",
        "1",
    ]);
    let port = server.port;
    let speech = clip("cmu_goforward.wav");
    let padded = join(&[&silence(0.5), &speech, &silence(2.5), &speech]);
    // Gone mid-audio; gone right after a window closed (its decode may still run); gone
    // after audio-stop, before reading the answer.
    for cut in [padded.len() / 3, speech.len() + 3 * RATE, padded.len()] {
        let mut s = connect(port);
        begin(&mut s, json!({}));
        send_audio(&mut s, &padded[..cut]);
        if cut == padded.len() {
            write_event(&mut s, &Event::new("audio-stop")).unwrap();
        }
        drop(s);
    }
    let mut s = connect(port);
    begin(&mut s, json!({}));
    send_audio(&mut s, &padded);
    write_event(&mut s, &Event::new("audio-stop")).unwrap();
    let mut r = BufReader::new(s.try_clone().unwrap());
    let mut events = Vec::new();
    loop {
        let e = read_event(&mut r).unwrap().expect("the server closed the connection");
        let done = e.kind == "transcript-stop";
        events.push(e);
        if done {
            break;
        }
    }
    let (chunks, transcript) = answer(&events);
    assert_eq!(chunks.len(), 2, "{chunks:?}");
    assert!(transcript.to_lowercase().contains("forward"), "{transcript}");
    assert!(server.alive(), "the server is still running");
    server.stop();
}

#[test]
fn a_long_request_holds_only_its_open_window() {
    use neon_models::session::SessionOptions;
    use neon_wyoming::asr::request::AsrRequest;
    use neon_wyoming::asr::{AsrConfig, AsrModels};
    use neon_wyoming::audio::Format;

    let dir = common::moonshine::model_dir();
    let models =
        AsrModels::open(&dir, SessionOptions::default(), 1, 2, AsrConfig::default()).unwrap();
    // 8 × (a 2.9 s clip, 3 s of silence), then 40 s of speech with no pause longer than the
    // clips' own (the clip over and over), then silence: 2 min 30 s in all.
    let speech = clip("librivox_sense_0930.wav");
    let mut audio = Vec::new();
    for _ in 0..8 {
        audio.extend(join(&[&speech, &silence(3.0)]));
    }
    while audio.len() < 88 * RATE {
        audio.extend_from_slice(&speech);
    }
    audio.extend(silence(60.0));
    let format = Format { rate: 16_000, width: 2, channels: 1 };
    let mut out = Vec::new();
    let mut request = AsrRequest::begin(&models, &serde_json::Map::new(), &mut out).unwrap();
    let (mut most, mut chunks_before_stop) = (0, 0);
    for piece in audio.chunks(1024) {
        request.push(&models, format, &common::s16le(piece), &mut out).unwrap();
        most = most.max(request.held());
    }
    chunks_before_stop += out.iter().filter(|e| e.kind == "transcript-chunk").count();
    eprintln!(
        "held at most {most} samples ({:.1} s); {chunks_before_stop} chunks before audio-stop",
        most as f64 / RATE as f64
    );
    request.stop(&models, &mut out).unwrap();
    // At most a 30 s window, the 2 s it waits for more speech, the segmenter's decision
    // delay (about 130 ms) and one chunk.
    let bound = 30 * RATE + 2 * RATE + RATE / 4 + 1024;
    assert!(most <= bound, "held {most} samples, more than {bound}");
    // Every window was sent while the audio went on: 8 clips, then the long speech in
    // windows of at most 30 s; the trailing silence closed the last one.
    assert!(chunks_before_stop >= 10, "{chunks_before_stop} chunks before audio-stop");
    let (chunks, transcript) = answer(&out);
    assert_eq!(chunks.len(), chunks_before_stop, "nothing was left for audio-stop");
    assert!(transcript.matches("amiable").count() >= 15, "{transcript}");
    assert_eq!(request.samples(), audio.len() as u64);
}
