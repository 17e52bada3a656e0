//! The `neon serve` soak test: 16 clients at once for `NEON_SOAK_SECONDS` (120 s) over TCP,
//! mixing well-behaved wake-word and speech-recognition clients with odd formats, the
//! largest chunks, idle sockets, abrupt disconnects and malformed bytes, while the
//! server's resident memory is sampled. Passes when the server never crashes, its RSS stays
//! within the bound docs/serving.md documents per client, and every well-behaved client gets
//! its detection (or the same transcript) on every round.
//!
//! `#[ignore]`d: `scripts/test.sh` runs it once on the host
//! (`cargo test -p neon-models --test serve_soak -- --ignored`), not under qemu.

mod common;

use std::io::{BufReader, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::tcp::TcpServer;

use neon_audio::Audio;
use neon_wyoming::event::{read_event, write_event, Event};
use serde_json::{json, Value};

/// The per-client bound docs/serving.md states (MB of RSS above the idle server).
const CLIENT_MB: u64 = 16;
/// Clients at once.
const CLIENTS: u64 = 16;
/// `--idle-timeout` of the soaked server (s).
const IDLE: u64 = 3;

/// A small deterministic generator (a 64-bit LCG) for chunk sizes and formats.
struct Lcg(u64);

impl Lcg {
    fn below(&mut self, n: u64) -> u64 {
        self.0 =
            self.0.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        (self.0 >> 33) % n
    }
}

fn manifest(rel: &str) -> PathBuf {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../models")).join(rel)
}

fn connect(port: u16) -> (BufReader<TcpStream>, TcpStream) {
    let s = TcpStream::connect(("127.0.0.1", port)).expect("the server is gone");
    s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    (BufReader::new(s.try_clone().unwrap()), s)
}

fn chunk(format: &Value, payload: Vec<u8>) -> Event {
    let mut e = Event::with_data("audio-chunk", format.clone());
    e.payload = payload;
    e
}

/// Events until one of `kind`'s (included); panics on an `error` unless `errors_ok`.
fn until(r: &mut BufReader<TcpStream>, kind: &str, errors_ok: bool) -> Vec<Event> {
    let mut got = Vec::new();
    loop {
        let e = read_event(r).expect("reply").expect("the server closed the connection");
        assert!(errors_ok || e.kind != "error", "{e:?}");
        let done = e.kind == kind;
        got.push(e);
        if done {
            return got;
        }
    }
}

/// `samples` in `width` bytes, cut into chunks of odd byte counts (frames split across
/// chunks), at 16 kHz mono.
fn send_cut(w: &mut TcpStream, samples: &[i16], width: u32, rng: &mut Lcg) {
    let format = json!({"rate": 16_000, "width": width, "channels": 1});
    let bytes: Vec<u8> = samples
        .iter()
        .flat_map(|&v| match width {
            4 => (i32::from(v) << 16).to_le_bytes().to_vec(),
            3 => (i32::from(v) << 8).to_le_bytes()[..3].to_vec(),
            _ => v.to_le_bytes().to_vec(),
        })
        .collect();
    write_event(w, &Event::with_data("audio-start", format.clone())).unwrap();
    let mut at = 0;
    while at < bytes.len() {
        let n = (1 + rng.below(8191) as usize).min(bytes.len() - at);
        write_event(w, &chunk(&format, bytes[at..at + n].to_vec())).unwrap();
        at += n;
    }
    write_event(w, &Event::new("audio-stop")).unwrap();
}

/// A well-behaved wake client: hey jarvis in 2-, 3- and 4-byte samples, cut anywhere; one
/// detection each round.
fn wake(port: u16, seed: u64, clip: &[i16], stop: &AtomicBool) -> u64 {
    let mut rng = Lcg(seed);
    let (mut r, mut w) = connect(port);
    let mut rounds = 0;
    while !stop.load(Ordering::Relaxed) {
        write_event(&mut w, &Event::with_data("detect", json!({"names": ["hey_jarvis"]}))).unwrap();
        send_cut(&mut w, clip, 2 + rng.below(3) as u32, &mut rng);
        write_event(&mut w, &Event::new("describe")).unwrap();
        let got = until(&mut r, "info", false);
        let names: Vec<&Value> =
            got.iter().filter(|e| e.kind == "detection").map(|e| &e.data["name"]).collect();
        assert_eq!(names, [&json!("hey_jarvis")], "wake client {seed}, round {rounds}");
        rounds += 1;
    }
    rounds
}

/// A well-behaved speech-recognition client: the same clip each round, the same text.
fn transcribe(port: u16, clip: &[i16], stop: &AtomicBool) -> u64 {
    let mut rng = Lcg(99);
    let (mut r, mut w) = connect(port);
    let mut first: Option<Value> = None;
    let mut rounds = 0;
    while !stop.load(Ordering::Relaxed) {
        write_event(&mut w, &Event::new("transcribe")).unwrap();
        send_cut(&mut w, clip, 2, &mut rng);
        let got = until(&mut r, "transcript-stop", false);
        let text =
            got.iter().find(|e| e.kind == "transcript").expect("a transcript").data["text"].clone();
        assert_ne!(text, json!(""), "an empty transcript");
        assert_eq!(first.get_or_insert(text.clone()), &text, "round {rounds}");
        rounds += 1;
    }
    rounds
}

/// Odd formats and refused rates (or, `largest`, only the largest chunks at 8 kHz: 2 MiB,
/// 131 s of audio, the most one chunk may convert to, and 4 MiB, refused), with a model
/// active; the connection stays up (errors allowed) and answers `describe`.
fn odd(port: u16, seed: u64, largest: bool, stop: &AtomicBool) -> u64 {
    let mut rng = Lcg(seed);
    let (mut r, mut w) = connect(port);
    write_event(&mut w, &Event::with_data("detect", json!({"names": ["alexa", "hey_jarvis"]})))
        .unwrap();
    let rates = [8_000, 11_025, 22_050, 44_100, 48_000, 1_000, 16_001, 500, 191_999, 0];
    let mut rounds = 0;
    while !stop.load(Ordering::Relaxed) {
        let (rate, width, channels, n) = if largest {
            (8_000, 2, 1, (2 + 2 * (rounds % 2) as usize) << 20)
        } else {
            let rate = rates[rng.below(rates.len() as u64) as usize];
            (rate, rng.below(6), rng.below(4), rng.below(65_536) as usize)
        };
        let format = json!({"rate": rate, "width": width, "channels": channels});
        write_event(&mut w, &Event::with_data("audio-start", format.clone())).unwrap();
        let payload: Vec<u8> = (0..n).map(|_| rng.below(256) as u8).collect();
        write_event(&mut w, &chunk(&format, payload)).unwrap();
        write_event(&mut w, &Event::new("audio-stop")).unwrap();
        write_event(&mut w, &Event::new("describe")).unwrap();
        until(&mut r, "info", true);
        rounds += 1;
    }
    rounds
}

/// Connects and says nothing: closed with a `timeout` error after `--idle-timeout`.
fn idle(port: u16, stop: &AtomicBool) -> u64 {
    let mut rounds = 0;
    while !stop.load(Ordering::Relaxed) {
        let (mut r, _w) = connect(port);
        let e = read_event(&mut r).unwrap().unwrap();
        assert_eq!(e.data["code"], "timeout", "{e:?}");
        rounds += 1;
    }
    rounds
}

/// Leaves in the middle of things: inside a chunk's payload, inside a header, and in the
/// middle of a transcription.
fn abrupt(port: u16, seed: u64, clip: &[i16], stop: &AtomicBool) -> u64 {
    let mut rng = Lcg(seed);
    let mut rounds = 0;
    while !stop.load(Ordering::Relaxed) {
        let (_r, mut w) = connect(port);
        let start = if rng.below(2) == 0 { "transcribe" } else { "detect" };
        let _ = write_event(&mut w, &Event::new(start));
        let format = json!({"rate": 16_000, "width": 2, "channels": 1});
        let payload: Vec<u8> = clip.iter().take(16_000).flat_map(|v| v.to_le_bytes()).collect();
        let mut bytes = Vec::new();
        write_event(&mut bytes, &chunk(&format, payload)).unwrap();
        let cut = rng.below(bytes.len() as u64) as usize;
        let _ = w.write_all(&bytes[..cut]);
        std::thread::sleep(Duration::from_millis(rng.below(300)));
        drop(w);
        rounds += 1;
    }
    rounds
}

/// Bytes that are not events: an `error`, then the connection is closed.
fn malformed(port: u16, stop: &AtomicBool) -> u64 {
    let mut rounds = 0;
    while !stop.load(Ordering::Relaxed) {
        let (mut r, mut w) = connect(port);
        w.write_all(b"GET / HTTP/1.1\r\n\r\n").unwrap();
        let e = read_event(&mut r).unwrap().unwrap();
        assert_eq!(e.data["code"], "malformed-event", "{e:?}");
        assert!(read_event(&mut r).map(|e| e.is_none()).unwrap_or(true));
        std::thread::sleep(Duration::from_millis(100));
        rounds += 1;
    }
    rounds
}

/// A `/proc/PID/status` field in kB (`VmRSS`: resident now; `VmHWM`: the peak).
fn status_kb(pid: u32, field: &str) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with(field))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

fn rss_kb(pid: u32) -> Option<u64> {
    status_kb(pid, "VmRSS:")
}

/// Starts `neon serve` on a free port with `args`; returns it once it answers `describe`.
fn start(args: &[&str]) -> TcpServer {
    let server = TcpServer::start(args);
    let (mut r, mut w) = connect(server.port);
    write_event(&mut w, &Event::new("describe")).unwrap();
    until(&mut r, "info", false);
    server
}

/// 16 clients each sending the largest chunk that converts (2 MiB at 8 kHz: 131 s), all
/// completed at the same instant: each client holds its payload and at most 2 MB more (a
/// converted piece, the 8 kHz resampler, the session) because the chunk is converted piece
/// by piece. Converted whole (before), the peak was 208 MB here (12 MB a client), 353 MB in
/// a release build.
#[test]
#[ignore = "sixteen large chunks at once: scripts/test.sh runs it with the soak test on the host"]
fn sixteen_largest_chunks_at_once_stay_within_the_bound() {
    let mut server = start(&["--max-clients", "16"]);
    let (pid, port) = (server.child.id(), server.port);
    let idle_kb = status_kb(pid, "VmHWM:").unwrap();
    let format = json!({"rate": 8_000, "width": 2, "channels": 1});
    let mut bytes = Vec::new();
    write_event(&mut bytes, &chunk(&format, vec![0x11; 2 << 20])).unwrap();
    let barrier = Arc::new(std::sync::Barrier::new(CLIENTS as usize));
    let bytes = Arc::new(bytes);
    let clients: Vec<_> = (0..CLIENTS)
        .map(|_| {
            let (barrier, bytes) = (barrier.clone(), bytes.clone());
            std::thread::spawn(move || {
                let (mut r, mut w) = connect(port);
                write_event(&mut w, &Event::with_data("audio-start", json!({}))).unwrap();
                w.write_all(&bytes[..bytes.len() - 1]).unwrap();
                barrier.wait();
                w.write_all(&bytes[bytes.len() - 1..]).unwrap();
                write_event(&mut w, &Event::new("describe")).unwrap();
                until(&mut r, "info", false);
            })
        })
        .collect();
    for c in clients {
        c.join().unwrap();
    }
    let peak_mb = status_kb(pid, "VmHWM:").unwrap() / 1024;
    assert!(server.child.try_wait().unwrap().is_none(), "the server exited");
    server.stop();
    let idle_mb = idle_kb / 1024;
    eprintln!("16 largest chunks: idle {idle_mb} MB, peak {peak_mb} MB");
    let client_mb = 2 + 2;
    assert!(
        peak_mb <= idle_mb + CLIENTS * client_mb,
        "peak RSS {peak_mb} MB > idle {idle_mb} MB + {CLIENTS} × {client_mb} MB"
    );
}

#[test]
#[ignore = "two minutes: scripts/test.sh runs it once on the host"]
fn sixteen_mixed_clients_for_two_minutes() {
    let seconds: u64 =
        std::env::var("NEON_SOAK_SECONDS").ok().and_then(|s| s.parse().ok()).unwrap_or(120);
    let moonshine = manifest("moonshine");
    assert!(
        moonshine.join("base-en.safetensors").is_file(),
        "models/moonshine is missing: run tools/moonshine/fetch.sh"
    );
    let idle_timeout = IDLE.to_string();
    let mut server = start(&[
        "--max-clients",
        "32",
        "--idle-timeout",
        &idle_timeout,
        "--model-dir",
        moonshine.to_str().unwrap(),
    ]);
    let (pid, port) = (server.child.id(), server.port);
    // The RSS of the server ready and idle is the reference of the bound.
    let idle_kb = rss_kb(pid).unwrap();

    let jarvis = {
        let mut s = Audio::open(manifest("openwakeword/clips/hey_jarvis.wav")).unwrap().to_i16();
        s.extend(vec![0i16; 16_000]);
        Arc::new(s)
    };
    let door = Arc::new(Audio::open(moonshine.join("clips/open_the_door.wav")).unwrap().to_i16());

    let stop = Arc::new(AtomicBool::new(false));
    let peak = Arc::new(AtomicU64::new(idle_kb));
    let sampler = {
        let (stop, peak) = (stop.clone(), peak.clone());
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                if let Some(kb) = rss_kb(pid) {
                    peak.fetch_max(kb, Ordering::Relaxed);
                }
                std::thread::sleep(Duration::from_millis(50));
            }
        })
    };
    let rounds = Arc::new(Mutex::new(Vec::new()));
    let clients: Vec<_> = (0..CLIENTS)
        .map(|i| {
            let (stop, rounds) = (stop.clone(), rounds.clone());
            let (jarvis, door) = (jarvis.clone(), door.clone());
            std::thread::spawn(move || {
                let (kind, n) = match i {
                    0..=5 => ("wake", wake(port, i, &jarvis, &stop)),
                    6 => ("transcribe", transcribe(port, &door, &stop)),
                    7..=8 => ("odd formats", odd(port, i, false, &stop)),
                    9..=10 => ("idle", idle(port, &stop)),
                    11..=12 => ("abrupt", abrupt(port, i, &jarvis, &stop)),
                    13 => ("malformed", malformed(port, &stop)),
                    _ => ("largest chunks", odd(port, i, true, &stop)),
                };
                rounds.lock().unwrap().push((i, kind, n));
            })
        })
        .collect();
    let t0 = Instant::now();
    while t0.elapsed() < Duration::from_secs(seconds) {
        assert!(server.child.try_wait().unwrap().is_none(), "the server exited");
        assert!(!clients.iter().all(|c| c.is_finished()), "every client stopped early");
        std::thread::sleep(Duration::from_millis(200));
    }
    stop.store(true, Ordering::Relaxed);
    let mut failed = Vec::new();
    for c in clients {
        if let Err(e) = c.join() {
            failed.push(e.downcast_ref::<String>().cloned().unwrap_or_else(|| format!("{e:?}")));
        }
    }
    sampler.join().unwrap();
    let alive = server.child.try_wait().unwrap().is_none();
    let log = server.stop();
    let peak_mb = peak.load(Ordering::Relaxed) / 1024;
    let idle_mb = idle_kb / 1024;
    let rounds = rounds.lock().unwrap().clone();
    eprintln!("soak: {seconds} s, idle {idle_mb} MB, peak {peak_mb} MB; rounds {rounds:?}");
    assert!(alive, "the server exited:\n{log}");
    assert!(failed.is_empty(), "clients failed: {failed:?}");
    assert!(!log.contains("panicked"), "{log}");
    for (i, kind, n) in &rounds {
        assert!(*n > 0, "client {i} ({kind}) never finished a round");
    }
    assert!(
        peak_mb <= idle_mb + CLIENTS * CLIENT_MB,
        "peak RSS {peak_mb} MB > idle {idle_mb} MB + {CLIENTS} × {CLIENT_MB} MB"
    );
}
