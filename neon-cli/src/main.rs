//! neon-cli: `neon`, on-device audio models from the command line. Depends on neon-models
//! (the models), neon-audio (decoding), neon-wyoming (`neon serve`) and neon-runtime, plus
//! clap, indicatif, serde_json and signal-hook for the command line.
//!
//! - `neon wake WAV|-`: wake-word detection with openWakeWord or microWakeWord models.
//! - `neon transcribe WAV|-`: speech recognition with Moonshine base-en.
//! - `neon vocode HIDDEN -o OUT.wav`: acoustic hidden states to audio with the sanoTTS decoder.
//! - `neon plan NAME`: the workspace and memory map of a compiled plan (`--list` names them).
//! - `neon bench`: the models' speed on this machine, to paste into an issue.
//! - `neon listen WAV|-`: a wake word, then the speech that follows as text.
//! - `neon serve --uri tcp://HOST:PORT`: a Wyoming wake-word server for Home Assistant.
//! - `neon vad WAV|-`: speech segments (and per-window probabilities) with Silero VAD.

mod bench;
mod cpu;
mod endpoint;
mod input;
mod listen;
mod live;
mod output;
mod plan;
mod ranges;
mod serve;
mod transcribe;
mod vad;
mod vocode;
mod wake;
mod wake_micro;
mod words;

use std::io::{self, Write};
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};
use neon_models::exec_plan::Family;
use neon_models::session::SessionOptions;

/// On-device audio models (openWakeWord, microWakeWord, Moonshine, sanoTTS) on ARM64 NEON;
/// portable fallback.
#[derive(Parser)]
#[command(name = "neon", version)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Detect wake words in a WAV file, or in raw s16le 16 kHz mono audio on stdin (`-`).
    Wake(wake::WakeArgs),
    /// Transcribe speech in a WAV file, or in raw s16le 16 kHz mono audio on stdin (`-`).
    Transcribe(transcribe::TranscribeArgs),
    /// Turn acoustic hidden states (safetensors `hidden`, f32 [192, T]) into 16 kHz audio
    /// with the sanoTTS decoder (`--save-voice PATH` writes the built-in synthetic voice).
    Vocode(vocode::VocodeArgs),
    /// Show the workspace and memory map of a compiled plan (`--list` for the names).
    Plan(plan::PlanArgs),
    /// Wait for a wake word, then transcribe what follows up to a pause; repeat.
    Listen(listen::ListenArgs),
    /// Time the workloads of the aarch64 peer tables on this machine, one row each (1 thread
    /// and the cores), and describe the CPU.
    Bench(bench::BenchArgs),
    /// Serve wake-word detection over the Wyoming protocol (Home Assistant), as
    /// wyoming-openwakeword does.
    Serve(serve::ServeArgs),
    /// Find speech with Silero VAD: segments as they are decided, or with `--json` every
    /// 32 ms window's probability and the segments.
    Vad(vad::VadArgs),
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        // Help, version and usage errors as clap prints them, but a failed write of them
        // (a full disk, a closed pipe) is reported, not ignored.
        Err(e) => {
            match e.print().and_then(|()| io::stdout().flush()) {
                Ok(()) => {}
                // As `line`: a reader that went away (`neon --help | head -1`) is not an error.
                Err(w) if w.kind() == io::ErrorKind::BrokenPipe => return ExitCode::SUCCESS,
                Err(w) => {
                    report(format_args!("neon: cannot write to stdout: {w}"));
                    return ExitCode::FAILURE;
                }
            }
            return ExitCode::from(e.exit_code().clamp(0, 255) as u8);
        }
    };
    let result = match cli.command {
        Command::Wake(args) => wake::run(&args),
        Command::Transcribe(args) => transcribe::run(&args),
        Command::Vocode(args) => vocode::run(&args),
        Command::Plan(args) => plan::run(&args),
        Command::Bench(args) => bench::run(&args),
        Command::Listen(args) => listen::run(&args),
        Command::Serve(args) => serve::run(&args),
        Command::Vad(args) => vad::run(&args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            // Status 1 whether or not the message could be written.
            report(format_args!("neon: {message}"));
            ExitCode::FAILURE
        }
    }
}

/// The error for `-` when stdin ends before one whole sample (as an empty WAV file is an
/// error).
const NO_STDIN_SAMPLES: &str = "stdin: no samples (the input ended before one whole sample)";

/// Writes one line to stderr. A failed write (stderr closed, or a pipe nobody reads) is
/// ignored: a diagnostic that cannot be delivered must not turn into a panic (status 101)
/// or change the outcome; the exit status still tells success (0) from failure (1).
/// (`eprintln!` would panic instead.)
fn report(text: std::fmt::Arguments<'_>) {
    let mut err = io::stderr().lock();
    let _ = writeln!(err, "{text}").and_then(|()| err.flush());
}

/// Writes `neon: warning: TEXT` to stderr ([`report`]: a failed write is ignored).
fn warn(text: std::fmt::Arguments<'_>) {
    report(format_args!("neon: warning: {text}"));
}

/// Warnings that may recur many times (one per segment of an hour of noise): the first of
/// each kind is printed in full, later ones of that kind are counted and summed up in one
/// line when the collector is dropped (`neon: warning: KIND (repeated N times)`, N the
/// occurrences after the first).
#[derive(Default)]
struct Warnings {
    /// Each kind seen, in first-seen order, with its count.
    seen: Vec<(&'static str, usize)>,
}

impl Warnings {
    /// Warns `text` if this is the first warning of `kind` (a short description that names
    /// it in the summary), else counts it.
    fn warn(&mut self, kind: &'static str, text: std::fmt::Arguments<'_>) {
        match self.seen.iter_mut().find(|(k, _)| *k == kind) {
            Some((_, n)) => *n += 1,
            None => {
                self.seen.push((kind, 1));
                warn(text);
            }
        }
    }

    /// The summary lines, one per kind warned more than once.
    fn summary(&self) -> Vec<String> {
        let repeated = self.seen.iter().filter(|(_, n)| *n > 1);
        repeated.map(|(kind, n)| format!("{kind} (repeated {} times)", n - 1)).collect()
    }
}

impl Drop for Warnings {
    fn drop(&mut self) {
        for text in self.summary() {
            warn(format_args!("{text}"));
        }
    }
}

/// Writes one line to stdout and flushes it (detections must appear as they happen). When
/// the reader has gone (`neon wake - | head -1`: a pipeline saying it has seen enough), exits
/// quietly with status 0; any other write error is an error.
fn line(text: std::fmt::Arguments<'_>) -> Result<(), String> {
    let mut out = io::stdout().lock();
    match writeln!(out, "{text}").and_then(|()| out.flush()) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => std::process::exit(0),
        Err(e) => Err(format!("cannot write to stdout: {e}")),
    }
}

/// `--session-option KEY=VALUE` (repeatable), shared by every command that runs a model.
#[derive(Args)]
struct SessionArgs {
    /// A session option of a model this command runs, e.g.
    /// `openwakeword.exec_plan={"embedding":"portable"}` (repeatable; keys:
    /// openwakeword.exec_plan, openwakeword.embedding_mode, moonshine_asr.exec_plan,
    /// moonshine_asr.int8, moonshine_asr.encoder_int8, sanotts.exec_plan, silero_vad.exec_plan). Unknown keys and values, and keys of models
    /// the command does not run, are errors.
    #[arg(long = "session-option", value_name = "KEY=VALUE")]
    session_option: Vec<String>,
}

impl SessionArgs {
    /// The options of a command that runs the models of `families`: every
    /// `--session-option` in order (a later value of a key replaces an earlier one) and a
    /// shorthand flag's pair (`("--int8", "moonshine_asr.int8=dot")`).
    ///
    /// # Errors
    /// A bad pair; a key of a family the command does not run; a shorthand flag together
    /// with a `--session-option` of the same key (which one wins would be a guess).
    fn options(
        &self,
        families: &[Family],
        shorthand: Option<(&str, String)>,
    ) -> Result<SessionOptions, String> {
        for pair in &self.session_option {
            let Some(key) = SessionOptions::pair_key(pair) else { continue };
            let family = key.split_once('.').map_or(key, |(f, _)| f);
            if let Some(f) = Family::from_name(family).filter(|f| !families.contains(f)) {
                let runs: Vec<&str> = families.iter().map(|f| f.name()).collect();
                return Err(format!(
                    "session option `{key}`: this command does not run {} (it runs {})",
                    f.name(),
                    runs.join(", ")
                ));
            }
            if let Some((flag, short)) = &shorthand {
                if SessionOptions::pair_key(short) == Some(key) {
                    return Err(format!(
                        "{flag} and --session-option {key}=... set the same option: give one"
                    ));
                }
            }
        }
        let shorthand = shorthand.map(|(_, pair)| pair);
        SessionOptions::from_pairs(self.session_option.iter().chain(&shorthand))
            .map_err(|e| e.to_string())
    }
}

/// Threads used when `--threads` is not given: the cores the OS offers this process, at most
/// [`DEFAULT_MAX_THREADS`].
fn default_threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get()).min(DEFAULT_MAX_THREADS)
}

/// The default's cap: every board we target has 4 cores or more (Raspberry Pi 4/5; Orange
/// Pi 5 has 8, 4 of them little cores that would make the team wait for its slowest
/// member), and the models' layers are too small to keep more than 4 busy.
const DEFAULT_MAX_THREADS: usize = 4;

/// Largest `--threads` accepted.
const MAX_THREADS: usize = 64;

/// The worker team of a command: `threads` (default [`default_threads`]) members, the
/// calling thread included; 1 runs everything on the calling thread.
fn team(threads: Option<usize>) -> Result<neon_runtime::Team, String> {
    let n = threads.unwrap_or_else(default_threads);
    ranges::check_in("--threads", n, ranges::Interval::Inclusive(1, MAX_THREADS))?;
    neon_runtime::Team::new(n).map_err(|e| format!("cannot start {n} threads: {e}"))
}

/// The clipping warning's text: `n` samples were clipped; why, from the largest magnitude
/// decoded (`peak`, full scale 1: [`neon_audio::AudioStream::source_peak`]) and the
/// source's rate in Hz.
fn clip_message(n: usize, peak: f32, rate: u32) -> String {
    if peak > 1.0 {
        // Only float samples can exceed full scale as decoded.
        let cause = if peak >= 2.0 {
            "the float samples look stored at int16 scale (they must lie in [-1, 1]); the \
             audio is a square wave now"
        } else {
            "the float samples go beyond full scale (a float WAV, or a lossy codec's \
             overshoot)"
        };
        format!("{n} sample(s) outside [-1, 1] were clipped: {cause} (peak {peak:.1})")
    } else {
        format!(
            "{n} sample(s) outside [-1, 1] were clipped: resampling {rate} Hz to 16 kHz overshoots \
             full scale on this near-full-scale recording (peak {peak:.3}; lower its level to \
             avoid it)"
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repeated_warnings_are_counted_once_per_kind() {
        let mut w = Warnings::default();
        for i in 0..5 {
            w.warn("budget", format_args!("segment {i}"));
        }
        w.warn("empty", format_args!("once"));
        assert_eq!(w.summary(), ["budget (repeated 4 times)"]);
        std::mem::forget(w); // no summary on the test's stderr
    }
}
