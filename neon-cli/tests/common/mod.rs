//! Shared helpers for the `neon` program's tests: running it with piped input, and the
//! model tests' helpers (committed goldens, weights and clips of `models/`).
#![allow(dead_code)]

#[path = "../../../models/tests/common/mod.rs"]
mod models;
pub use models::*;

pub mod live;
pub mod tcp;

/// `neon ARGS` run to its end, with its output.
pub fn neon(args: &[&str]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_neon")).args(args).output().unwrap()
}

/// The stdout of a run, as text.
pub fn stdout(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// The stderr of a run, as text.
pub fn stderr(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// `neon ARGS` with `bytes` written to its stdin from a thread (the program may read while
/// it writes its output, or exit without reading: a refused write is not an error).
///
/// `neon transcribe -` prints one line per decode window, as each is decoded; without
/// `--json` its stdout comes back as the one line a file argument prints (those lines
/// joined with single spaces), so tests compare transcripts. [`neon_stdin_raw`] gives the
/// output as printed.
pub fn neon_stdin(args: &[&str], bytes: &[u8]) -> std::process::Output {
    let mut output = neon_stdin_raw(args, bytes);
    if args.first() == Some(&"transcribe") && !args.contains(&"--json") && !output.stdout.is_empty()
    {
        output.stdout = one_line(&output.stdout);
    }
    output
}

/// `neon transcribe -`'s lines (one per decode window) joined as a file's transcript: with
/// single spaces, one newline at the end.
pub fn one_line(stdout: &[u8]) -> Vec<u8> {
    let text = String::from_utf8_lossy(stdout);
    let mut joined = text.lines().collect::<Vec<_>>().join(" ");
    joined.push('\n');
    joined.into_bytes()
}

/// `neon ARGS` started with stdin, stdout and stderr piped.
pub fn neon_piped(args: &[&str]) -> std::process::Child {
    use std::process::{Command, Stdio};
    Command::new(env!("CARGO_BIN_EXE_neon"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Asserts that `neon ARGS`, which fails, exits with status 1 (not a panic's 101) when its
/// error message cannot be written: stderr's pipe closed before it, or stderr closed
/// outright (`2>&-`).
pub fn assert_status_1_with_closed_stderr(args: &[&str]) {
    let mut child = neon_piped(args);
    drop(child.stderr.take());
    assert_eq!(child.wait().unwrap().code(), Some(1), "{args:?}");
    let o = std::process::Command::new("sh")
        .args(["-c", "\"$0\" \"$@\" 2>&-", env!("CARGO_BIN_EXE_neon")])
        .args(args)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1), "{args:?} 2>&-");
}

/// Asserts that `neon ARGS` fails with status 1 and one line on stderr starting with
/// `message`.
pub fn assert_one_line_error(args: &[&str], message: &str) {
    let o = neon(args);
    assert_eq!(o.status.code(), Some(1), "{args:?}");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.starts_with(message), "{args:?}: {err}");
    assert_eq!(err.lines().count(), 1, "{err}");
}

/// [`neon_stdin`] with the output as the program printed it.
pub fn neon_stdin_raw(args: &[&str], bytes: &[u8]) -> std::process::Output {
    use std::io::Write;
    let mut child = neon_piped(args);
    let mut stdin = child.stdin.take().unwrap();
    let bytes = bytes.to_vec();
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(&bytes);
    });
    let output = child.wait_with_output().unwrap();
    writer.join().unwrap();
    output
}
