//! The commands' audio input as a user feeds it: a WAV on stdin (decoded, not taken as raw
//! samples), a FIFO read like a regular file, a WAV written to a pipe (sizes 0xFFFFFFFF)
//! read to its end, and `neon transcribe` cutting segments while it reads.
//!
//! Host only (the tests start the host `neon` binary; see cli_wake.rs).
#![cfg(not(target_arch = "aarch64"))]

mod common;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::*;

fn ok(o: &Output) -> String {
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "neon failed: {err}");
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn clip(name: &str) -> PathBuf {
    oww_path(&format!("clips/{name}.wav"))
}

/// `bytes` of a canonical 44-byte-header WAV with the RIFF and data sizes set to
/// 0xFFFFFFFF, as sox and ffmpeg write one to a pipe.
fn as_pipe_written(wav: &[u8]) -> Vec<u8> {
    let mut bytes = wav.to_vec();
    assert_eq!(&bytes[36..40], b"data", "canonical header expected");
    bytes[4..8].copy_from_slice(&u32::MAX.to_le_bytes());
    bytes[40..44].copy_from_slice(&u32::MAX.to_le_bytes());
    bytes
}

/// `neon wake --json` scores of each model, per chunk.
fn scores(out: &str) -> serde_json::Value {
    let v: serde_json::Value = serde_json::from_str(out).unwrap();
    v["models"].clone()
}

#[test]
fn a_wav_on_stdin_is_decoded_not_taken_as_raw_samples() {
    let path = clip("hey_jarvis");
    let bytes = std::fs::read(&path).unwrap();
    let file = ok(&neon(&["wake", path.to_str().unwrap(), "--json"]));
    for input in [bytes.clone(), as_pipe_written(&bytes)] {
        let piped = ok(&common::neon_stdin(&["wake", "-", "--json"], &input));
        // stdin scores every whole chunk; the file path (predict_clip) leaves out the last
        // one when the length is a multiple of 1280: compare the file's chunks.
        let (f, p) = (scores(&file), scores(&piped));
        for (name, s) in f.as_object().unwrap() {
            let fs = s["scores"].as_array().unwrap();
            let ps = p[name]["scores"].as_array().unwrap();
            assert!(ps.len() == fs.len() || ps.len() == fs.len() + 1, "{name}");
            assert_eq!(&ps[..fs.len()], &fs[..], "{name}");
        }
    }
}

#[test]
fn a_pipe_written_wav_file_is_read_to_its_end() {
    let dir = tempfile::tempdir().unwrap();
    let bytes = std::fs::read(clip("alexa")).unwrap();
    let piped = dir.path().join("piped.wav");
    std::fs::write(&piped, as_pipe_written(&bytes)).unwrap();
    let a = ok(&neon(&["wake", clip("alexa").to_str().unwrap(), "--json"]));
    let b = ok(&neon(&["wake", piped.to_str().unwrap(), "--json"]));
    assert_eq!(a, b);
}

/// A FIFO at `path` fed `bytes` by a thread (which blocks until a reader opens it).
fn fifo(path: &Path, bytes: Vec<u8>) -> std::thread::JoinHandle<()> {
    let status = Command::new("mkfifo").arg(path).status().unwrap();
    assert!(status.success());
    let path = path.to_path_buf();
    std::thread::spawn(move || {
        let mut f = std::fs::OpenOptions::new().write(true).open(path).unwrap();
        // The reader may stop early on an error; that is for the test to check.
        let _ = f.write_all(&bytes);
    })
}

#[test]
fn a_fifo_is_read_like_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = clip("hey_jarvis");
    let file = ok(&neon(&["wake", path.to_str().unwrap(), "--json"]));
    let fifo_path = dir.path().join("audio.fifo");
    let writer = fifo(&fifo_path, std::fs::read(&path).unwrap());
    let fifo_out = ok(&neon(&["wake", fifo_path.to_str().unwrap(), "--json"]));
    writer.join().unwrap();
    assert_eq!(fifo_out, file);
}

#[test]
fn a_directory_or_garbage_is_a_one_line_error() {
    let dir = tempfile::tempdir().unwrap();
    let o = neon(&["wake", dir.path().to_str().unwrap()]);
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    let junk = dir.path().join("junk.wav");
    std::fs::write(&junk, b"RIFF\x10\x00\x00\x00WAVEjunk and more junk").unwrap();
    let o = neon(&["wake", junk.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("junk.wav"), "{err}");
    // A header on stdin that does not parse is an error, not raw samples.
    let o = common::neon_stdin(&["wake", "-"], b"RIFF\x10\x00\x00\x00WAVEjunk and more junk");
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("stdin"), "{err}");
}

#[test]
fn neon_transcribe_reads_a_wav_from_stdin_as_from_the_file() {
    let dir = common::moonshine::model_dir();
    let clip = dir.join("beckett.wav");
    let args = |input: &str| {
        ["transcribe", input, "--model-dir", dir.to_str().unwrap()].map(String::from).to_vec()
    };
    let file_args = args(clip.to_str().unwrap());
    let file: Vec<&str> = file_args.iter().map(String::as_str).collect();
    let from_file = ok(&neon(&file));
    let stdin_args = args("-");
    let stdin: Vec<&str> = stdin_args.iter().map(String::as_str).collect();
    let from_stdin = ok(&common::neon_stdin(&stdin, &std::fs::read(&clip).unwrap()));
    assert!(!from_file.trim().is_empty());
    assert_eq!(from_stdin, from_file);
}

/// Exit status 1 and one stderr line containing `what`.
fn one_line_error(o: &Output, what: &str) {
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains(what), "expected {what:?} in {err}");
}

#[test]
fn headers_refused_by_path_are_refused_on_stdin_too() {
    let wav = std::fs::read(clip("alexa")).unwrap();
    let mut rifx = wav.clone();
    rifx[..4].copy_from_slice(b"RIFX");
    one_line_error(&common::neon_stdin(&["wake", "-"], &rifx), "RIFX");
    let mut rf64 = wav;
    rf64[..4].copy_from_slice(b"RF64");
    one_line_error(&common::neon_stdin(&["wake", "-"], &rf64), "RF64");
}

#[test]
fn stdin_too_short_for_one_chunk_is_an_error_like_such_a_file() {
    let wav = std::fs::read(clip("alexa")).unwrap();
    // A WAV of 100 samples, and 100 raw samples.
    let mut short = wav[..44 + 200].to_vec();
    short[40..44].copy_from_slice(&200u32.to_le_bytes());
    short[4..8].copy_from_slice(&(36 + 200u32).to_le_bytes());
    for input in [short.clone(), short[44..].to_vec()] {
        one_line_error(&common::neon_stdin(&["wake", "-"], &input), "audio too short: 100 samples");
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("short.wav");
    std::fs::write(&path, &short).unwrap();
    one_line_error(&neon(&["wake", path.to_str().unwrap()]), "audio too short: 100 samples");
    // Padding makes whole chunks: then it is scored.
    ok(&common::neon_stdin(&["wake", "-", "--pad-seconds", "1"], &short));
}

#[test]
fn a_block_align_that_contradicts_the_sample_size_is_an_error() {
    let mut wav = std::fs::read(clip("alexa")).unwrap();
    // Mono 16-bit with 4-byte blocks.
    wav[32..34].copy_from_slice(&4u16.to_le_bytes());
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("align.wav");
    std::fs::write(&path, &wav).unwrap();
    one_line_error(&neon(&["wake", path.to_str().unwrap()]), "block align of 4 bytes");
}
