//! `neon serve`: a Wyoming server for Home Assistant, a drop-in for wyoming-openwakeword
//! (its options, model names and events; `neon_wyoming::wake` lists the behaviour
//! and where it differs), or with `--engine micro` for wyoming-microwakeword
//! (`neon_wyoming::micro`); `--engine openwakeword,micro` offers both in one wake program.
//!
//! With `--model-dir`, `transcribe` then audio is speech recognition (Moonshine base-en over
//! the speech Silero VAD finds, streamed: `transcript-start`, `transcript-chunk`s,
//! `transcript`, `transcript-stop`; `--vad-endpointing` ends a command on silence;
//! `neon_wyoming::asr`).
//!
//! Transports: `stdio://` (one client: events on stdin, replies on stdout; the end of stdin
//! ends the server with status 0), `tcp://HOST:PORT` and `unix://PATH` (a thread per client,
//! at most `--max-clients` at once: one more gets an `error` event and is closed). A client
//! whose bytes are not Wyoming events gets an `error` event and is disconnected (stdio: the
//! server exits with status 1); an audio chunk the session cannot use gets an `error` event
//! and the session goes on. Other clients are never affected.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use clap::Args;

use neon_models::session::SessionOptions;
use neon_wyoming::asr::{AsrConfig, AsrModels};
use neon_wyoming::server::{log, Server};
use neon_wyoming::wake::{Engines, TriggerOptions, WakeModels};

use crate::ranges::check_in;
use crate::ranges::Interval::Inclusive;

#[derive(Args)]
pub struct ServeArgs {
    /// Where to listen: `tcp://HOST:PORT`, `unix://PATH` or `stdio://`.
    #[arg(long, default_value = "stdio://")]
    uri: String,
    /// The wake-word engines: `openwakeword` (default), `micro` (microWakeWord, as
    /// wyoming-microwakeword), or both (`openwakeword,micro`, or the flag twice: one wake
    /// program, the microWakeWord models named `micro:NAME`).
    #[arg(
        long,
        value_name = "ENGINE",
        value_delimiter = ',',
        default_value = "openwakeword",
        value_parser = ["openwakeword", "micro"]
    )]
    engine: Vec<String>,
    /// A directory of custom wake-word models, offered besides the built-in ones: openWakeWord
    /// models (`.tflite`, `.onnx`) and microWakeWord models (each `*.json` of type `micro`
    /// with the `.tflite` it names), for the engines that run. Repeatable.
    #[arg(long = "custom-model-dir", value_name = "DIR")]
    custom_model_dirs: Vec<PathBuf>,
    /// openWakeWord: a detection needs a score strictly above this (0 to 1). (microWakeWord
    /// models use their JSON's `probability_cutoff`.)
    #[arg(long, default_value_t = 0.5, allow_negative_numbers = true)]
    threshold: f32,
    /// openWakeWord: scores above the threshold needed before a detection (since audio-start).
    #[arg(long = "trigger-level", default_value_t = 1)]
    trigger_level: u32,
    /// Seconds of audio a model stays silent after a detection.
    #[arg(long = "refractory-seconds", default_value_t = 2.0, allow_negative_numbers = true)]
    refractory_seconds: f32,
    /// Accepted for compatibility; discovery is not implemented (add the server in Home
    /// Assistant by host and port).
    #[arg(long, num_args = 0..=1, default_missing_value = "openWakeWord", value_name = "NAME")]
    zeroconf: Option<String>,
    /// Log every client and event on stderr.
    #[arg(long)]
    debug: bool,
    /// Accepted for compatibility (Python logging format); log lines are plain.
    #[arg(long = "log-format", value_name = "FORMAT")]
    log_format: Option<String>,
    /// Print the version and exit.
    #[arg(long)]
    version: bool,
    /// A Moonshine model directory (`base-en.safetensors`, `tokenizer.bin`: tools/moonshine/fetch.sh
    /// writes models/moonshine): also serve speech recognition (`transcribe`).
    #[arg(long = "model-dir", value_name = "DIR")]
    model_dir: Option<PathBuf>,
    /// `on` (default): transcribe only the speech that Silero VAD finds, in decode windows
    /// as `neon transcribe` does, so silence around and between speech cannot empty the
    /// text; each window's text is streamed as soon as the window closes. `off`: transcribe
    /// the audio as given (cut at quiet points every 30 s).
    #[arg(long, value_name = "MODE", default_value = "on", value_parser = ["on", "off"])]
    vad: String,
    /// End a transcription once SEC seconds of silence follow its speech, without waiting
    /// for `audio-stop` (the rest of that request's audio is ignored); info then says no
    /// external VAD is needed. A request's `vad_sensitivity` scales SEC: `relaxed`
    /// 1.25/0.7 of it, `aggressive` 0.25/0.7 (Home Assistant's proportions).
    #[arg(long = "vad-endpointing", value_name = "SEC")]
    vad_endpointing: Option<f32>,
    /// Longest audio of one transcription (s): past it, the text so far, then an `error`.
    #[arg(long = "max-request-seconds", default_value_t = 300, value_name = "SEC")]
    max_request_seconds: u32,
    /// Pieces decoded at once (each worker holds 81.8 MB of workspaces); other requests
    /// wait for a free worker.
    #[arg(long = "asr-workers", default_value_t = 1, value_name = "N")]
    asr_workers: usize,
    /// Threads of each transcription (default: the cores the OS offers, at most 4).
    #[arg(long, value_name = "N")]
    threads: Option<usize>,
    /// Most TCP or Unix clients served at once.
    #[arg(long = "max-clients", default_value_t = 16)]
    max_clients: usize,
    /// Seconds a TCP or Unix client has to send each event whole (header, data and payload),
    /// counted from when the server waits for it: a client silent for longer, or one that
    /// stops or crawls halfway through an event, gets an `error` event (`timeout`) and is
    /// closed, freeing its place. Home Assistant's clients send an audio chunk every
    /// 32-64 ms while they stream.
    #[arg(long = "idle-timeout", default_value_t = 30.0, value_name = "SEC")]
    idle_timeout: f64,
    /// Deprecated (accepted and ignored, as wyoming-openwakeword 2.x does).
    #[arg(long, hide = true)]
    model: Vec<String>,
    /// Deprecated (ignored).
    #[arg(long = "models-dir", hide = true)]
    models_dir: Option<String>,
    /// Deprecated (ignored).
    #[arg(long = "preload-model", hide = true)]
    preload_model: Vec<String>,
    /// Deprecated (ignored).
    #[arg(long = "output-dir", hide = true)]
    output_dir: Option<String>,
    /// Deprecated (ignored).
    #[arg(long = "debug-probability", hide = true)]
    debug_probability: bool,
}

fn check(args: &ServeArgs) -> Result<(), String> {
    if !(0.0..=1.0).contains(&args.threshold) {
        return Err(format!("--threshold {} is not in 0..1", args.threshold));
    }
    if args.trigger_level == 0 {
        return Err("--trigger-level must be at least 1".into());
    }
    if !(args.refractory_seconds >= 0.0 && args.refractory_seconds <= 3600.0) {
        return Err(format!("--refractory-seconds {} is not in 0..3600", args.refractory_seconds));
    }
    if !(args.idle_timeout > 0.0 && args.idle_timeout <= 86_400.0) {
        return Err(format!("--idle-timeout {} is not in (0, 86400] seconds", args.idle_timeout));
    }
    if args.max_clients == 0 {
        return Err("--max-clients must be at least 1".into());
    }
    if let Some(sec) = args.vad_endpointing {
        if !(sec > 0.0 && sec <= 60.0) {
            return Err(format!("--vad-endpointing {sec} is not in (0, 60] seconds"));
        }
        if args.vad == "off" {
            return Err("--vad-endpointing needs --vad on".into());
        }
    }
    check_in("--max-request-seconds", args.max_request_seconds, Inclusive(1, 3600))?;
    check_in("--asr-workers", args.asr_workers, Inclusive(1, 16))
}

pub fn run(args: &ServeArgs) -> Result<(), String> {
    if args.version {
        return crate::line(format_args!("{}", env!("CARGO_PKG_VERSION")));
    }
    check(args)?;
    for (given, flag) in [
        (!args.model.is_empty(), "--model"),
        (args.models_dir.is_some(), "--models-dir"),
        (!args.preload_model.is_empty(), "--preload-model"),
        (args.output_dir.is_some(), "--output-dir"),
        (args.debug_probability, "--debug-probability"),
    ] {
        if given {
            log(&format!("{flag} is deprecated and ignored"));
        }
    }
    if args.zeroconf.is_some() {
        log("--zeroconf: discovery is not implemented; add the server in Home Assistant by host and port");
    }
    let _ = &args.log_format;
    let options = TriggerOptions {
        threshold: args.threshold,
        trigger_level: args.trigger_level,
        refractory_seconds: args.refractory_seconds,
    };
    let engines = Engines {
        openwakeword: args.engine.iter().any(|e| e == "openwakeword"),
        micro: args.engine.iter().any(|e| e == "micro"),
    };
    let models = Arc::new(WakeModels::load(
        &args.custom_model_dirs,
        engines,
        options,
        SessionOptions::default(),
        env!("CARGO_PKG_VERSION"),
    )?);
    for w in models.warnings() {
        log(&format!("warning: {w}"));
    }
    if models.names().is_empty() {
        return Err(
            "no wake-word models: this build has no built-in ones; pass --custom-model-dir DIR"
                .into(),
        );
    }
    let asr = match &args.model_dir {
        None => None,
        Some(dir) => {
            let (weights, tokenizer) = neon_models::moonshine::files::paths(dir);
            for path in [&weights, &tokenizer] {
                if !path.exists() {
                    return Err(format!(
                        "--model-dir {}: no {} (run `{}`)",
                        dir.display(),
                        path.display(),
                        neon_models::moonshine::files::FETCH_COMMAND
                    ));
                }
            }
            let threads = crate::team(args.threads)?.threads();
            let config = AsrConfig {
                vad: args.vad == "on",
                endpointing: args.vad_endpointing,
                max_samples: u64::from(args.max_request_seconds) * 16_000,
            };
            Some(Arc::new(AsrModels::open(
                dir,
                SessionOptions::default(),
                args.asr_workers,
                threads,
                config,
            )?))
        }
    };
    if args.debug {
        log(&format!("models: {}", models.names().join(", ")));
    }
    let server = Server {
        wake: models,
        asr,
        max_clients: args.max_clients,
        debug: args.debug,
        idle: Duration::from_secs_f64(args.idle_timeout),
    };
    server.serve(&args.uri)
}
