//! `neon serve`: a Wyoming server for Home Assistant, a drop-in for wyoming-openwakeword
//! (its options, model names and events; `neon_models::wyoming::wake` lists the behaviour
//! and where it differs).
//!
//! With `--model-dir`, `transcribe` then audio is speech recognition (Moonshine base-en over
//! the speech Silero VAD finds, streamed: `transcript-start`, `transcript-chunk`s,
//! `transcript`, `transcript-stop`; `--vad-endpointing` ends a command on silence;
//! `neon_models::wyoming::asr`).
//!
//! Transports: `stdio://` (one client: events on stdin, replies on stdout; the end of stdin
//! ends the server with status 0), `tcp://HOST:PORT` and `unix://PATH` (a thread per client,
//! at most `--max-clients` at once: one more gets an `error` event and is closed). A client
//! whose bytes are not Wyoming events gets an `error` event and is disconnected (stdio: the
//! server exits with status 1); an audio chunk the session cannot use gets an `error` event
//! and the session goes on. Other clients are never affected.

use std::io::{self, BufRead, BufReader, Write};
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use clap::Args;

use crate::accept::{refuse, Backoff, Reserve};
use crate::deadline::{ClientStream, Deadline, TimedReader};
use neon_models::session::SessionOptions;
use neon_models::wyoming::asr::{AsrConfig, AsrModels};
use neon_models::wyoming::event::{read_event, write_event, Event, ReadError};
use neon_models::wyoming::wake::{TriggerOptions, WakeModels, WakeSession};

#[derive(Args)]
pub struct ServeArgs {
    /// Where to listen: `tcp://HOST:PORT`, `unix://PATH` or `stdio://`.
    #[arg(long, default_value = "stdio://")]
    uri: String,
    /// A directory of wake-word models trained with openWakeWord (`.tflite`, `.onnx`), offered
    /// besides the built-in ones. Repeatable.
    #[arg(long = "custom-model-dir", value_name = "DIR")]
    custom_model_dirs: Vec<PathBuf>,
    /// A detection needs a score strictly above this (0 to 1).
    #[arg(long, default_value_t = 0.5, allow_negative_numbers = true)]
    threshold: f32,
    /// Scores above the threshold needed before a detection (since audio-start).
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

fn log(line: &str) {
    let _ = writeln!(io::stderr(), "neon serve: {line}");
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
    if !(1..=3600).contains(&args.max_request_seconds) {
        return Err(format!(
            "--max-request-seconds must be in 1..=3600, got {}",
            args.max_request_seconds
        ));
    }
    if !(1..=16).contains(&args.asr_workers) {
        return Err(format!("--asr-workers must be in 1..=16, got {}", args.asr_workers));
    }
    Ok(())
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
    let models = Arc::new(WakeModels::load(
        &args.custom_model_dirs,
        options,
        SessionOptions::default(),
        env!("CARGO_PKG_VERSION"),
    )?);
    for w in models.warnings() {
        log(&format!("warning: {w}"));
    }
    if models.models().is_empty() {
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
        let names: Vec<&str> = models.models().iter().map(|m| m.name.as_str()).collect();
        log(&format!("models: {}", names.join(", ")));
    }
    let debug = args.debug;
    let idle = Duration::from_secs_f64(args.idle_timeout);
    if args.uri == "stdio://" {
        log("ready on stdio://");
        let stdin = io::stdin();
        let stdout = io::stdout();
        let (mut r, mut w) = (stdin.lock(), stdout.lock());
        return serve_client(&models, &asr, (&mut r, &mut w, None), debug, "stdio");
    }
    if let Some(addr) = args.uri.strip_prefix("tcp://") {
        let listener = std::net::TcpListener::bind(addr)
            .map_err(|e| format!("--uri {}: cannot listen: {e}", args.uri))?;
        log(&format!("ready on tcp://{}", listener.local_addr().map_err(|e| e.to_string())?));
        let mut reserve = Reserve::new();
        let serving = Serving { models, asr, max: args.max_clients, debug, idle };
        return serving.accept_loop(|| {
            let (s, peer) = reserve.accept(|| listener.accept())?;
            // Replies are small and each is awaited: send them at once.
            s.set_nodelay(true)?;
            Ok((s, peer.to_string()))
        });
    }
    #[cfg(unix)]
    if let Some(path) = args.uri.strip_prefix("unix://") {
        use std::os::unix::fs::FileTypeExt;
        if path.is_empty() {
            return Err(format!("--uri {}: no socket path after unix://", args.uri));
        }
        if std::fs::metadata(path).is_ok_and(|m| m.file_type().is_socket()) {
            // A socket file left by a server that is gone is replaced; a live one is not.
            if std::os::unix::net::UnixStream::connect(path).is_ok() {
                return Err(format!("--uri {}: a server is already listening on {path}", args.uri));
            }
            let _ = std::fs::remove_file(path);
        }
        let listener = std::os::unix::net::UnixListener::bind(path)
            .map_err(|e| format!("--uri {}: cannot listen: {e}", args.uri))?;
        log(&format!("ready on unix://{path}"));
        let mut n = 0u64;
        let mut reserve = Reserve::new();
        let serving = Serving { models, asr, max: args.max_clients, debug, idle };
        return serving.accept_loop(|| {
            let (s, _) = reserve.accept(|| listener.accept())?;
            n += 1;
            Ok((s, format!("unix client {n}")))
        });
    }
    Err(format!("--uri {}: expected tcp://HOST:PORT, unix://PATH or stdio://", args.uri))
}

/// What every client of a socket server is served with.
struct Serving {
    models: Arc<WakeModels>,
    asr: Option<Arc<AsrModels>>,
    /// `--max-clients`.
    max: usize,
    debug: bool,
    /// `--idle-timeout`.
    idle: Duration,
}

impl Serving {
    /// Accepts clients (a stream and a name for the log) for ever, one thread each, at most
    /// `max` at once.
    fn accept_loop<S: ClientStream>(
        self,
        mut accept: impl FnMut() -> io::Result<(S, String)>,
    ) -> Result<(), String> {
        let clients = Arc::new(AtomicUsize::new(0));
        let refusing = Arc::new(AtomicUsize::new(0));
        let mut backoff = Backoff::new();
        loop {
            let (stream, who) = match accept() {
                Ok(c) => {
                    backoff.succeeded();
                    c
                }
                Err(e) => {
                    backoff.failed(&e, log);
                    continue;
                }
            };
            if clients.fetch_add(1, Ordering::SeqCst) >= self.max {
                clients.fetch_sub(1, Ordering::SeqCst);
                let text = format!("too many clients (at most {}); try again later", self.max);
                log(&format!("{who}: refused: {text}"));
                refuse_aside(stream, Event::error(&text, "too-many-clients"), &refusing);
                continue;
            }
            // The reading handle; at the descriptor limit the client is told so.
            let reading = match stream.try_clone() {
                Ok(r) => r,
                Err(e) => {
                    clients.fetch_sub(1, Ordering::SeqCst);
                    let text = format!("the server cannot take another client now: {e}");
                    log(&format!("{who}: refused: {text}"));
                    refuse_aside(stream, Event::error(&text, "too-many-clients"), &refusing);
                    continue;
                }
            };
            if let Err(e) = self.spawn_client((reading, stream), &who, &clients) {
                log(&format!("cannot serve {who}: {e}"));
                clients.fetch_sub(1, Ordering::SeqCst);
            }
        }
    }

    /// Serves one client on a thread of its own, which gives its place back when it ends.
    ///
    /// # Errors
    /// The thread's.
    fn spawn_client<S: ClientStream>(
        &self,
        (reading, mut writer): (S, S),
        who: &str,
        clients: &Arc<AtomicUsize>,
    ) -> io::Result<()> {
        let deadline = Deadline::new(self.idle);
        let mut reader = BufReader::new(TimedReader::new(reading, deadline.clone()));
        let (models, asr, clients) = (self.models.clone(), self.asr.clone(), clients.clone());
        let (debug, who) = (self.debug, who.to_string());
        std::thread::Builder::new().name(format!("client {who}")).spawn(move || {
            if debug {
                log(&format!("{who}: connected"));
            }
            let io = (&mut reader, &mut writer, Some(&*deadline));
            if let Err(e) = serve_client(&models, &asr, io, debug, &who) {
                log(&format!("{who}: {e}"));
            }
            if debug {
                log(&format!("{who}: disconnected"));
            }
            clients.fetch_sub(1, Ordering::SeqCst);
        })?;
        Ok(())
    }
}

/// Refused clients drained at once on threads of their own, at most; more are closed
/// without draining (their reply may then be lost to a reset).
const MAX_REFUSING: usize = 16;

/// How long a client refused for `--max-clients` is drained (so that it reads its reply).
const DRAIN: Duration = Duration::from_millis(200);

/// [`refuse`] on a thread of its own, so that a crowd of refused clients does not slow
/// the accept loop; past [`MAX_REFUSING`] at once, without draining.
fn refuse_aside<S: ClientStream>(stream: S, event: Event, refusing: &Arc<AtomicUsize>) {
    if refusing.fetch_add(1, Ordering::SeqCst) >= MAX_REFUSING {
        refusing.fetch_sub(1, Ordering::SeqCst);
        return refuse(stream, &event, Duration::ZERO);
    }
    let counter = refusing.clone();
    let spawned = std::thread::Builder::new().name("refusing".into()).spawn(move || {
        refuse(stream, &event, DRAIN);
        counter.fetch_sub(1, Ordering::SeqCst);
    });
    if spawned.is_err() {
        refusing.fetch_sub(1, Ordering::SeqCst);
    }
}

/// One client's events until it disconnects.
///
/// # Errors
/// A one-line message when its bytes are not Wyoming events (after an `error` event is
/// sent) or the connection fails.
fn serve_client<R: BufRead, W: Write>(
    models: &Arc<WakeModels>,
    asr: &Option<Arc<AsrModels>>,
    (reader, writer, deadline): (&mut R, &mut W, Option<&Deadline>),
    debug: bool,
    who: &str,
) -> Result<(), String> {
    let mut session = WakeSession::with_asr(models.clone(), asr.clone());
    let mut replies = Vec::new();
    let mut out = Vec::new();
    loop {
        if let Some(d) = deadline {
            d.restart();
        }
        let event = match read_event(reader) {
            Ok(Some(e)) => e,
            Ok(None) => return Ok(()),
            Err(ReadError::Malformed(m)) => {
                let _ = write_event(
                    writer,
                    &Event::error(&format!("malformed event: {m}"), "malformed-event"),
                );
                return Err(format!("malformed event, disconnected: {m}"));
            }
            Err(ReadError::Io(e)) if e.kind() == io::ErrorKind::UnexpectedEof => {
                return Err(format!("disconnected inside an event: {e}"));
            }
            Err(ReadError::Io(e)) if e.kind() == io::ErrorKind::TimedOut => {
                let limit = deadline.map_or(0.0, |d| d.limit().as_secs_f64());
                let text = format!("no complete event within {limit} s (--idle-timeout)");
                let _ = write_event(writer, &Event::error(&text, "timeout"));
                return Err(format!("{text}: disconnected"));
            }
            Err(ReadError::Io(e)) => return Err(format!("read failed: {e}")),
        };
        if debug && event.kind != "audio-chunk" {
            log(&format!(
                "{who}: {} {}",
                event.kind,
                serde_json::Value::Object(event.data.clone())
            ));
        }
        replies.clear();
        if let Err(m) = session.handle(&event, &mut replies) {
            replies.push(Event::error(&m, "bad-event"));
        }
        // The replies to one event go out in one write: over TCP, separate small writes
        // would wait for the client's delayed ACK (Nagle), ~40 ms each after the first.
        out.clear();
        for r in &replies {
            if debug {
                log(&format!("{who}: -> {} {}", r.kind, serde_json::Value::Object(r.data.clone())));
            }
            write_event(&mut out, r).map_err(|e| format!("cannot encode a reply: {e}"))?;
        }
        if out.is_empty() {
            continue;
        }
        match writer.write_all(&out).and_then(|()| writer.flush()) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::BrokenPipe => return Ok(()),
            Err(e) => return Err(format!("write failed: {e}")),
        }
    }
}
