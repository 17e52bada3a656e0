//! C programs against the static library (`tests/c/*.c`, compiled with `cc` and linked with
//! `libneon_capi.a` as `examples/c/run.sh` does): what only a C host shows. Each must exit 0
//! and write nothing to stderr: the library never prints, not even for a caught panic.
//!
//! Host only (the aarch64 suite runs under qemu without a C compiler); needs `cc`.
#![cfg(not(target_arch = "aarch64"))]

use std::path::{Path, PathBuf};
use std::process::Command;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

/// `libneon_capi.a` of this build: cargo builds every crate type of the library (the
/// static one too) next to this test executable.
fn static_library() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let lib = exe.parent().unwrap().join("libneon_capi.a");
    assert!(lib.is_file(), "no {} (cargo builds it with the tests)", lib.display());
    lib
}

/// Compiles `tests/c/NAME.c` (with `examples/c/wav.c`, the example's WAV reader) against
/// the static library and runs it with `args` in the repository root; returns its stdout.
/// Fails on a compiler error, a non-zero exit or anything written to stderr.
fn run_c(name: &str, args: &[&str]) -> String {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let exe = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("c-{name}"));
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let out = Command::new(&cc)
        .args(["-std=c11", "-O2", "-Wall", "-Wextra", "-Werror", "-pthread"])
        .arg(format!("-I{}", dir.join("include").display()))
        .arg(format!("-I{}", repo().join("examples/c").display()))
        .arg(dir.join("tests/c").join(format!("{name}.c")))
        .arg(repo().join("examples/c/wav.c"))
        .arg(static_library())
        .args(["-lpthread", "-ldl", "-lm", "-o"])
        .arg(&exe)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {cc}: {e}"));
    assert!(out.status.success(), "{cc} failed:\n{}", String::from_utf8_lossy(&out.stderr));
    // RUST_BACKTRACE=1: a panic printed by the library would come with its backtrace.
    let out = Command::new(&exe)
        .args(args)
        .current_dir(repo())
        .env("RUST_BACKTRACE", "1")
        .output()
        .unwrap();
    let (stdout, stderr) =
        (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{name}: {}\nstdout:\n{stdout}\nstderr:\n{stderr}", out.status);
    assert!(stderr.is_empty(), "{name} wrote to stderr:\n{stderr}\nstdout:\n{stdout}");
    println!("{stdout}");
    stdout.into_owned()
}

#[test]
fn concurrent_use_of_one_handle_is_busy_and_free_waits_for_the_call_in_flight() {
    let out = run_c("concurrency", &[]);
    assert!(out.contains("concurrency: ok"), "{out}");
}

/// The resident memory `shared_weights` reports for its handles, in MB.
fn total_mb(out: &str, mode: &str) -> f64 {
    let line = out.lines().find(|l| l.starts_with(&format!("{mode}: "))).expect(mode);
    let mb = line.split(": ").nth(2).and_then(|r| r.split(' ').next()).expect(line);
    mb.parse().expect(line)
}

/// 1000 detectors over one `neon_wake_models` against 100 with their own weights (every
/// built-in model), each process measuring its resident set.
#[test]
fn wake_handles_share_one_copy_of_the_weights() {
    let clip = "models/openwakeword/clips/hey_jarvis.wav";
    let shared = run_c("shared_weights", &[clip, "shared", "1000"]);
    let private = run_c("shared_weights", &[clip, "private", "100"]);
    let (shared, private) = (total_mb(&shared, "shared"), total_mb(&private, "private") * 10.0);
    // Measured: 1000 shared handles take about 1/10 of 1000 private ones.
    assert!(shared * 4.0 < private, "1000 shared handles: {shared} MB, private: {private} MB");
}
