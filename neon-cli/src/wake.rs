//! `neon wake`: wake-word detection on a WAV file or raw audio from stdin, with either
//! engine: openWakeWord (here) or microWakeWord ([`crate::wake_micro`]). The input, the
//! padding and the output are shared: an engine is a [`WakeStream`] fed 16 kHz int16
//! samples, recording its models' [`Track`]s.

use std::time::Instant;

use clap::{Args, ValueEnum};
use neon_audio::f32_to_i16;
use neon_models::exec_plan::Family;
use neon_models::openwakeword::selection::WakeDetector;
use neon_models::openwakeword::session::WakeSession;
use neon_models::openwakeword::stream::CHUNK;
use neon_models::openwakeword::trigger::Trigger;
use neon_runtime::Team;
use serde_json::{json, Map, Value};

use crate::input::Source;
use crate::ranges::check_in;
use crate::ranges::Interval::{Closed, OpenClosed};
use crate::wake_micro::MicroStream;
use crate::words::{refuse_with_micro, Engine};
use crate::{line, live, SessionArgs, NO_STDIN_SAMPLES};

/// Sample rate of everything after input conversion (Hz).
pub(crate) const RATE: usize = 16_000;

#[derive(Args)]
pub struct WakeArgs {
    /// An audio file (WAV of any layout, FLAC, Ogg/Vorbis; any channel count and rate;
    /// also a FIFO), or `-` for stdin: decoded the same way when it starts with a file
    /// header, else raw s16le 16 kHz mono (e.g. `arecord -f S16_LE -r 16000 -c 1 | neon wake -`).
    input: String,
    #[command(flatten)]
    pub(crate) models: crate::words::ModelArgs,
    /// Score at or above which a wake word is detected (default 0.5; openWakeWord only: a
    /// microWakeWord model's JSON `probability_cutoff` decides).
    #[arg(long, allow_negative_numbers = true)]
    threshold: Option<f32>,
    /// Seconds of silence added before and after the audio (openwakeword's `predict_clip`
    /// pads 1 s). Detection times stay relative to the audio (0.00 for one inside the
    /// leading silence).
    #[arg(long, default_value_t = 0.0, value_name = "S", allow_negative_numbers = true)]
    pad_seconds: f32,
    /// Seconds after a detection during which the same model cannot fire again (default 1;
    /// 2 with `--engine micro`, as wyoming-microwakeword; counted in audio time).
    #[arg(long, value_name = "S", allow_negative_numbers = true)]
    refractory_seconds: Option<f32>,
    /// Print one JSON object: per model, the score of every 1280-sample chunk (with
    /// `--engine micro`: every step's `outputs` and `probabilities`) and the detections.
    #[arg(long, conflicts_with = "json_lines")]
    json: bool,
    /// Print one JSON object per detection as it happens: `{"time_s", "model", "score"}`
    /// (flushed; for live streams), and nothing else on stdout.
    #[arg(long)]
    json_lines: bool,
    /// Threads computing the speech embedding (default: the cores the OS offers, at most
    /// 4; 1 runs on the calling thread). The scores are the same for any count.
    #[arg(long, value_name = "N")]
    threads: Option<usize>,
    /// How the speech embedding is computed: `incremental` (only the rows each 80 ms chunk
    /// adds, about a sixth of the instructions; the default) or `full` (the whole 76-frame
    /// window every chunk, as openwakeword does). The scores are the same bits either way.
    /// Shorthand for `--session-option openwakeword.embedding_mode=MODE`.
    #[arg(long, value_enum, value_name = "MODE")]
    embedding: Option<Embedding>,
    #[command(flatten)]
    session: SessionArgs,
}

/// `--threshold`'s default.
const THRESHOLD: f32 = 0.5;
/// `--refractory-seconds`' default for openWakeWord.
const REFRACTORY_S: f32 = 1.0;
/// `--refractory-seconds`' default for microWakeWord: wyoming-microwakeword 2.1.0's
/// `--refractory-seconds` default (a detection's decision stays positive for up to 1.2 s on
/// the official models' recordings: a shorter period would fire twice).
const MICRO_REFRACTORY_S: f32 = 2.0;

/// `--embedding`: the detector's embedding mode.
#[derive(Clone, Copy, ValueEnum)]
enum Embedding {
    Incremental,
    Full,
}

/// A detection score as printed: in text with 3 decimals, in JSON as the shortest number that
/// reads back as the same value.
pub(crate) trait Score: Copy {
    /// The exact value.
    fn value(self) -> f64;
    /// The JSON number.
    fn json(self) -> Value;
}

/// An openWakeWord head's score.
impl Score for f32 {
    fn value(self) -> f64 {
        f64::from(self)
    }
    fn json(self) -> Value {
        short(self)
    }
}

/// A microWakeWord probability (serde_json prints the shortest form that reads back).
impl Score for f64 {
    fn value(self) -> f64 {
        self
    }
    fn json(self) -> Value {
        Value::from(self)
    }
}

/// Where results go: `--json` (one object at the end), `--json-lines` (one object per
/// detection) or text (a line per detection, a summary at the end).
#[derive(Clone, Copy)]
pub(crate) struct Printer {
    pub json: bool,
    pub json_lines: bool,
}

impl Printer {
    /// Prints a detection of `model` at `time` seconds as it happens (nothing with `--json`).
    fn detection(self, time: f64, model: &str, score: impl Score) -> Result<(), String> {
        if self.json_lines {
            let v = json!({"time_s": time, "model": model, "score": score.json()});
            line(format_args!("{v}"))
        } else if !self.json {
            line(format_args!("{time:8.2} s  {model:<18} {:.3}", score.value()))
        } else {
            Ok(())
        }
    }
}

/// One model's peak score and detections (times in seconds of the audio, with scores),
/// shared by the engines.
pub(crate) struct Track<S> {
    pub name: String,
    /// Highest score so far.
    peak: f64,
    detections: Vec<(f64, S)>,
}

impl<S: Score> Track<S> {
    pub fn new(name: &str) -> Self {
        Track { name: name.to_string(), peak: 0.0, detections: Vec::new() }
    }

    /// Counts `score` into the peak.
    pub fn score(&mut self, score: S) {
        self.peak = self.peak.max(score.value());
    }

    /// Records a detection at `time` seconds and prints it.
    pub fn detect(&mut self, out: Printer, time: f64, score: S) -> Result<(), String> {
        self.detections.push((time, score));
        out.detection(time, &self.name, score)
    }
}

/// Seconds of the audio at the stream's sample `end`, `pad` samples of leading silence
/// included: 0 inside the padding. One rounding (from whole samples), so `--json` prints
/// 0.9, not 0.8999999999999999.
pub(crate) fn audio_time(end: u64, pad: u64) -> f64 {
    end.saturating_sub(pad) as f64 / RATE as f64
}

/// What a run went through, for the summary line.
pub(crate) struct RunStats<'a> {
    /// The input's name (`stdin` for `-`).
    pub label: &'a str,
    /// 16 kHz samples of the input (padding excluded).
    pub audio_samples: usize,
    /// Wall-clock seconds.
    pub seconds: f64,
    /// The model steps, as the summary says them (`30 chunks of 80 ms`).
    pub steps: String,
    /// Seconds of audio the models ran on (padding included), for the real-time factor.
    pub processed_s: f64,
}

/// The end of a run: with `--json` one object `{"models": {NAME: {FIELDS.., "detections":
/// [{"time_s", "score"}]}}}` (`fields(i)`: model `i`'s engine's fields); in text the
/// summary line and a line per model (peak score, detections); nothing with `--json-lines`
/// (every detection is printed already).
pub(crate) fn report<S: Score>(
    out: Printer,
    tracks: &[Track<S>],
    mut fields: impl FnMut(usize) -> Map<String, Value>,
    run: &RunStats,
) -> Result<(), String> {
    if out.json_lines {
        return Ok(());
    }
    if out.json {
        let mut models = Map::new();
        for (i, t) in tracks.iter().enumerate() {
            let detections: Vec<Value> = t
                .detections
                .iter()
                .map(|&(time, score)| json!({"time_s": time, "score": score.json()}))
                .collect();
            let mut model = fields(i);
            model.insert("detections".into(), detections.into());
            models.insert(t.name.clone(), model.into());
        }
        return line(format_args!("{}", json!({ "models": models })));
    }
    let audio_s = run.audio_samples as f64 / RATE as f64;
    let total: usize = tracks.iter().map(|t| t.detections.len()).sum();
    let seconds = run.seconds;
    line(format_args!(
        "{}: {audio_s:.2} s of audio, {}, {} model(s), {total} detection(s); {:.1} ms ({:.0}x \
         real time)",
        run.label,
        run.steps,
        tracks.len(),
        seconds * 1e3,
        if seconds > 0.0 { run.processed_s / seconds } else { f64::INFINITY }
    ))?;
    for t in tracks {
        line(format_args!(
            "  {:<18} peak {:.3}, {} detection(s)",
            t.name,
            t.peak,
            t.detections.len()
        ))?;
    }
    Ok(())
}

/// An engine's detector on one stream: 16 kHz samples in (any count), detections printed
/// as they happen, the results at the end.
pub(crate) trait WakeStream {
    /// Feeds the next samples.
    fn push(&mut self, samples: &[i16]) -> Result<(), String>;
    /// Model steps run so far (0 when the input was too short for one).
    fn steps(&self) -> u64;
    /// What one step needs, for the error on too short an input (`more than 1280 samples
    /// (80 ms)`).
    fn needs(&self) -> String;
    /// Prints the results ([`report`]).
    fn report(&self, label: &str, audio_samples: usize, seconds: f64) -> Result<(), String>;
}

/// openWakeWord's scores and detections.
struct OwwStream {
    wake: WakeSession,
    team: Team,
    tracks: Vec<Track<f32>>,
    /// Every score per model, kept for `--json` only (a live stream would otherwise grow
    /// without bound).
    scores: Vec<Vec<f32>>,
    out: Printer,
    pad: u64,
    chunks: u64,
    /// The chunk being filled, and its samples.
    chunk: Vec<i16>,
    filled: usize,
    /// A full chunk waits for the next sample before it is scored (a file, fed as
    /// openwakeword's `predict_clip` feeds a clip: `data[i..i + 1280]` for `i` in
    /// `(0..len - 1280).step_by(1280)`, so the last 1 to 1280 samples are not scored); else
    /// (a live stream) it is scored at once.
    deferred: bool,
}

impl OwwStream {
    /// Scores one 1280-sample chunk and reports.
    fn score(&mut self) -> Result<(), String> {
        self.wake.push_in(&self.team, &self.chunk).map_err(|e| e.to_string())?;
        self.chunks += 1;
        let pad = self.pad;
        // A NaN would never reach the threshold and `max` would hide it from the peak: the
        // model is broken (e.g. weights so large that its layers overflow).
        if let Some(u) = self.wake.unusable().first() {
            return Err(format!(
                "model `{}` gave a score of {} at {:.2} s: its weights are unusable \
                 (a corrupt or incompatible head?)",
                self.tracks[u.model].name,
                u.score,
                audio_time(self.wake.samples(), pad)
            ));
        }
        for (i, (track, &score)) in self.tracks.iter_mut().zip(self.wake.scores()).enumerate() {
            track.score(score);
            if self.out.json {
                self.scores[i].push(score);
            }
        }
        for d in self.wake.detections() {
            self.tracks[d.model].detect(self.out, audio_time(d.end_sample, pad), d.score)?;
        }
        Ok(())
    }
}

impl WakeStream for OwwStream {
    fn push(&mut self, samples: &[i16]) -> Result<(), String> {
        for &v in samples {
            if self.filled == CHUNK {
                self.score()?;
                self.filled = 0;
            }
            self.chunk[self.filled] = v;
            self.filled += 1;
            if !self.deferred && self.filled == CHUNK {
                self.score()?;
                self.filled = 0;
            }
        }
        Ok(())
    }

    fn steps(&self) -> u64 {
        self.chunks
    }

    fn needs(&self) -> String {
        format!("more than {CHUNK} samples (80 ms)")
    }

    fn report(&self, label: &str, audio_samples: usize, seconds: f64) -> Result<(), String> {
        let steps = format!("{} chunks of 80 ms", self.chunks);
        let processed_s = self.chunks as f64 * 0.08;
        let run = RunStats { label, audio_samples, seconds, steps, processed_s };
        let fields = |i: usize| {
            let scores: Vec<Value> = self.scores[i].iter().map(|&v| short(v)).collect();
            Map::from_iter([("scores".to_string(), Value::from(scores))])
        };
        report(self.out, &self.tracks, fields, &run)
    }
}

fn check_args(args: &WakeArgs) -> Result<(), String> {
    if let Some(threshold) = args.threshold {
        check_in("--threshold", threshold, OpenClosed(0.0, 1.0))?;
    }
    check_in("--pad-seconds", args.pad_seconds, Closed(0.0, 60.0))?;
    if let Some(refractory) = args.refractory_seconds {
        check_in("--refractory-seconds", refractory, Closed(0.0, 3600.0))?;
    }
    Ok(())
}

/// Samples in `seconds` at 16 kHz, rounded.
fn samples_in(seconds: f32) -> u64 {
    (f64::from(seconds) * RATE as f64).round() as u64
}

/// The openWakeWord detector the arguments ask for.
fn oww_stream(args: &WakeArgs, out: Printer, pad: u64) -> Result<OwwStream, String> {
    let shorthand = args.embedding.map(|mode| {
        let mode = match mode {
            Embedding::Incremental => "incremental",
            Embedding::Full => "full",
        };
        ("--embedding", format!("openwakeword.embedding_mode={mode}"))
    });
    let options = args.session.options(&[Family::OpenWakeWord], shorthand)?;
    let team = crate::team(args.threads)?;
    let words = args.models.load()?;
    let tracks: Vec<Track<f32>> = words.iter().map(|w| Track::new(w.name())).collect();
    let detector =
        WakeDetector::with_builtin_embedding(words, &options).map_err(|e| e.to_string())?;
    let refractory = samples_in(args.refractory_seconds.unwrap_or(REFRACTORY_S));
    let wake =
        WakeSession::new(detector, Trigger::new(args.threshold.unwrap_or(THRESHOLD), refractory));
    Ok(OwwStream {
        wake,
        team,
        scores: vec![Vec::new(); tracks.len()],
        tracks,
        out,
        pad,
        chunks: 0,
        chunk: vec![0; CHUNK],
        filled: 0,
        deferred: args.input != "-",
    })
}

/// The microWakeWord detector the arguments ask for (options only openWakeWord uses are
/// refused).
fn micro_stream(args: &WakeArgs, out: Printer, pad: u64) -> Result<MicroStream, String> {
    let cutoff = "a microWakeWord model's JSON `probability_cutoff` decides";
    refuse_with_micro("--threshold", args.threshold.is_some(), cutoff)?;
    let embedding = "microWakeWord models have no speech embedding";
    refuse_with_micro("--embedding", args.embedding.is_some(), embedding)?;
    let threads = "its models run on the calling thread";
    refuse_with_micro("--threads", args.threads.is_some(), threads)?;
    let options = "no session option applies to its models";
    refuse_with_micro("--session-option", !args.session.session_option.is_empty(), options)?;
    let refractory = samples_in(args.refractory_seconds.unwrap_or(MICRO_REFRACTORY_S));
    Ok(MicroStream::new(args.models.load_micro()?, refractory, out, pad))
}

pub fn run(args: &WakeArgs) -> Result<(), String> {
    check_args(args)?;
    let pad = samples_in(args.pad_seconds);
    let out = Printer { json: args.json, json_lines: args.json_lines };
    let mut stream: Box<dyn WakeStream> = match args.models.engine {
        Engine::Openwakeword => Box::new(oww_stream(args, out, pad)?),
        Engine::Micro => Box::new(micro_stream(args, out, pad)?),
    };
    let s = stream.as_mut();
    let started = Instant::now();
    let (label, audio_samples, signal) = if args.input == "-" {
        let (samples, signal) = run_stdin(s, pad)?;
        ("stdin".to_string(), samples, signal)
    } else {
        (args.input.clone(), run_file(s, &args.input, pad)?, None)
    };
    s.report(&label, audio_samples, started.elapsed().as_secs_f64())?;
    if let Some(status) = signal {
        // Interrupted: the results so far are printed; the status says why it ended.
        std::process::exit(status);
    }
    Ok(())
}

/// Pushes `n` samples of silence (the padding).
fn push_zeros(s: &mut dyn WakeStream, mut n: u64) -> Result<(), String> {
    const ZEROS: [i16; CHUNK] = [0; CHUNK];
    while n > 0 {
        let k = n.min(CHUNK as u64);
        s.push(&ZEROS[..k as usize])?;
        n -= k;
    }
    Ok(())
}

/// Converts a piece of input to int16 into `buf` and pushes it.
fn push_piece(s: &mut dyn WakeStream, buf: &mut Vec<i16>, piece: &[f32]) -> Result<(), String> {
    buf.clear();
    buf.extend(piece.iter().map(|&x| f32_to_i16(x)));
    s.push(buf)
}

/// A file, read piece by piece ([`Source`]): converted to 16 kHz mono int16, padded with
/// `pad` samples of silence on both sides, fed to `s`.
fn run_file(s: &mut dyn WakeStream, path: &str, pad: u64) -> Result<usize, String> {
    let mut source = Source::open(path)?;
    let mut buf = Vec::new();
    push_zeros(s, pad)?;
    source.for_each_piece(|piece| push_piece(s, &mut buf, piece))?;
    let samples = source.samples() as usize;
    if samples == 0 {
        return Err(source.no_samples());
    }
    push_zeros(s, pad)?;
    source.warn_clipping();
    if s.steps() == 0 {
        return Err(too_short(path, samples, s));
    }
    Ok(samples)
}

/// Raw s16le 16 kHz mono from stdin (or a file format), fed as it arrives; with
/// openWakeWord a final partial chunk is not scored (as in openwakeword, it would wait for
/// more audio). Read on a thread of its own ([`live`]): SIGINT or SIGTERM ends the stream
/// with what was gathered (the second value: the exit status, 130 or 143); a closed stdout
/// ends the command quietly (status 0) within 200 ms even while no audio arrives.
fn run_stdin(s: &mut dyn WakeStream, pad: u64) -> Result<(usize, Option<i32>), String> {
    let signals = live::Signals::catch()?;
    let reader = live::read(|| Source::open("-"));
    push_zeros(s, pad)?;
    let mut buf = Vec::new();
    let mut total = 0usize;
    let ended = live::feed(reader, &signals, |piece| {
        total += piece.len();
        push_piece(s, &mut buf, piece)
    })?;
    match ended {
        live::Ended::Signal(status) => return Ok((total, Some(status))),
        live::Ended::Input(source) => source.warn_clipping(),
    }
    if total == 0 {
        // As an empty WAV file is: nothing to detect in.
        return Err(NO_STDIN_SAMPLES.into());
    }
    push_zeros(s, pad)?;
    if s.steps() == 0 {
        // As a file this short is: not one step was run.
        return Err(too_short("stdin", total, s));
    }
    Ok((total, None))
}

/// The error for input with no whole model step, padding included.
fn too_short(name: &str, samples: usize, s: &dyn WakeStream) -> String {
    format!(
        "{name}: audio too short: {samples} samples ({:.0} ms) at 16 kHz; wake-word detection \
         needs {} including --pad-seconds",
        samples as f64 * 1000.0 / RATE as f64,
        s.needs()
    )
}

/// An f32 as the JSON number with the shortest decimal form that reads back as the same
/// f32 (a plain `f32 as f64` would print its binary expansion, e.g. 0.1 as 0.10000000149).
fn short(v: f32) -> Value {
    format!("{v}").parse::<f64>().map_or(Value::Null, Value::from)
}
