//! `neon wake`: wake-word detection on a WAV file or raw audio from stdin.

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
use crate::{line, live, SessionArgs, NO_STDIN_SAMPLES};

/// Sample rate of everything after input conversion (Hz).
const RATE: usize = 16_000;

#[derive(Args)]
pub struct WakeArgs {
    /// An audio file (WAV of any layout, FLAC, Ogg/Vorbis; any channel count and rate;
    /// also a FIFO), or `-` for stdin: decoded the same way when it starts with a file
    /// header, else raw s16le 16 kHz mono (e.g. `arecord -f S16_LE -r 16000 -c 1 | neon wake -`).
    input: String,
    #[command(flatten)]
    models: crate::words::ModelArgs,
    /// Score at or above which a wake word is detected.
    #[arg(long, default_value_t = 0.5, allow_negative_numbers = true)]
    threshold: f32,
    /// Seconds of silence added before and after the audio (openwakeword's `predict_clip`
    /// pads 1 s). Detection times stay relative to the audio (0.00 for one inside the
    /// leading silence).
    #[arg(long, default_value_t = 0.0, value_name = "S", allow_negative_numbers = true)]
    pad_seconds: f32,
    /// Seconds after a detection during which the same model cannot fire again.
    #[arg(long, default_value_t = 1.0, value_name = "S", allow_negative_numbers = true)]
    refractory_seconds: f32,
    /// Print one JSON object: per model, the score of every 1280-sample chunk and the
    /// detections.
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

/// `--embedding`: the detector's embedding mode.
#[derive(Clone, Copy, ValueEnum)]
enum Embedding {
    Incremental,
    Full,
}

/// Scores and detections of one model.
struct Track {
    name: String,
    /// Highest score so far.
    peak: f32,
    /// Every score, kept for `--json` only (a live stream would otherwise grow without bound).
    scores: Vec<f32>,
    detections: Vec<(f64, f32)>,
}

struct Session {
    wake: WakeSession,
    team: Team,
    tracks: Vec<Track>,
    pad: usize,
    json: bool,
    json_lines: bool,
    chunks: u64,
}

impl Session {
    /// Feeds one 1280-sample chunk (as openwakeword's `predict_clip` does) and reports.
    fn push(&mut self, chunk: &[i16]) -> Result<(), String> {
        self.wake.push_in(&self.team, chunk).map_err(|e| e.to_string())?;
        self.chunks += 1;
        // Relative to the original audio, 0 inside the leading padding. One rounding (from
        // whole samples), so `--json` prints 0.9, not 0.8999999999999999.
        let time = |end: u64| end.saturating_sub(self.pad as u64) as f64 / RATE as f64;
        // A NaN would never reach the threshold and `max` would hide it from the peak: the
        // model is broken (e.g. weights so large that its layers overflow).
        if let Some(u) = self.wake.unusable().first() {
            return Err(format!(
                "model `{}` gave a score of {} at {:.2} s: its weights are unusable \
                 (a corrupt or incompatible head?)",
                self.tracks[u.model].name,
                u.score,
                time(self.wake.samples())
            ));
        }
        for (track, &score) in self.tracks.iter_mut().zip(self.wake.scores()) {
            track.peak = track.peak.max(score);
            if self.json {
                track.scores.push(score);
            }
        }
        for d in self.wake.detections() {
            let (track, time) = (&mut self.tracks[d.model], time(d.end_sample));
            track.detections.push((time, d.score));
            if self.json_lines {
                let v = json!({"time_s": time, "model": track.name, "score": short(d.score)});
                line(format_args!("{v}"))?;
            } else if !self.json {
                line(format_args!("{time:8.2} s  {:<18} {:.3}", track.name, d.score))?;
            }
        }
        Ok(())
    }
}

fn check_args(args: &WakeArgs) -> Result<(), String> {
    check_in("--threshold", args.threshold, OpenClosed(0.0, 1.0))?;
    check_in("--pad-seconds", args.pad_seconds, Closed(0.0, 60.0))?;
    check_in("--refractory-seconds", args.refractory_seconds, Closed(0.0, 3600.0))
}

pub fn run(args: &WakeArgs) -> Result<(), String> {
    check_args(args)?;
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
    let tracks = words
        .iter()
        .map(|w| Track {
            name: w.name().to_string(),
            peak: 0.0,
            scores: Vec::new(),
            detections: Vec::new(),
        })
        .collect();
    let detector =
        WakeDetector::with_builtin_embedding(words, &options).map_err(|e| e.to_string())?;
    let refractory = (f64::from(args.refractory_seconds) * RATE as f64).round() as u64;
    let wake = WakeSession::new(detector, Trigger::new(args.threshold, refractory));
    let pad = (f64::from(args.pad_seconds) * RATE as f64).round() as usize;
    let (json, json_lines) = (args.json, args.json_lines);
    let mut s = Session { wake, team, tracks, pad, json, json_lines, chunks: 0 };
    let started = Instant::now();
    let (label, audio_samples, signal) = if args.input == "-" {
        let (samples, signal) = run_stdin(&mut s)?;
        ("stdin".to_string(), samples, signal)
    } else {
        (args.input.clone(), run_file(&mut s, &args.input)?, None)
    };
    report(&s, &label, audio_samples, started.elapsed().as_secs_f64())?;
    if let Some(status) = signal {
        // Interrupted: the results so far are printed; the status says why it ended.
        std::process::exit(status);
    }
    Ok(())
}

/// A file, read piece by piece ([`Source`]): converted to 16 kHz mono int16, padded, fed
/// as openwakeword's `predict_clip` feeds a whole clip (`data[i..i + 1280]` for `i` in
/// `(0..len - 1280).step_by(1280)`: a chunk is scored once a sample follows it, so the last
/// 1 to 1280 samples are not).
fn run_file(s: &mut Session, path: &str) -> Result<usize, String> {
    let mut source = Source::open(path)?;
    let mut chunk = vec![0i16; CHUNK];
    // Samples in `chunk`; a full chunk waits there until the next sample arrives.
    let mut filled = 0;
    let mut pushed = false;
    let mut feed = |s: &mut Session, samples: &mut dyn Iterator<Item = i16>| {
        for v in samples {
            if filled == CHUNK {
                s.push(&chunk)?;
                pushed = true;
                filled = 0;
            }
            chunk[filled] = v;
            filled += 1;
        }
        Ok::<(), String>(())
    };
    feed(s, &mut std::iter::repeat_n(0, s.pad))?;
    source.for_each_piece(|piece| feed(s, &mut piece.iter().map(|&x| f32_to_i16(x))))?;
    let samples = source.samples() as usize;
    if samples == 0 {
        return Err(source.no_samples());
    }
    feed(s, &mut std::iter::repeat_n(0, s.pad))?;
    source.warn_clipping();
    if !pushed {
        return Err(too_short(path, samples));
    }
    Ok(samples)
}

/// Raw s16le 16 kHz mono from stdin, in 1280-sample chunks as they arrive; a final partial
/// chunk is not scored (as in openwakeword, it would wait for more audio). Read on a thread
/// of its own ([`live`]): SIGINT or SIGTERM ends the stream with what was
/// gathered (the second value: the exit status, 130 or 143); a closed stdout ends the
/// command quietly (status 0) within 200 ms even while no audio arrives.
fn run_stdin(s: &mut Session) -> Result<(usize, Option<i32>), String> {
    let signals = live::Signals::catch()?;
    let reader = live::read(|| Source::open("-"));
    let mut chunk = vec![0i16; CHUNK];
    let zeros = vec![0i16; CHUNK];
    let mut pad = s.pad;
    while pad >= CHUNK {
        s.push(&zeros)?;
        pad -= CHUNK;
    }
    let mut filled = pad; // leading padding that does not fill a chunk
    chunk[..filled].fill(0);
    let mut total = 0usize;
    let ended = live::feed(reader, &signals, |piece| {
        for &x in piece {
            chunk[filled] = f32_to_i16(x);
            filled += 1;
            if filled == CHUNK {
                s.push(&chunk)?;
                filled = 0;
            }
        }
        total += piece.len();
        Ok(())
    })?;
    match ended {
        live::Ended::Signal(status) => return Ok((total, Some(status))),
        live::Ended::Input(source) => source.warn_clipping(),
    }
    if total == 0 {
        // As an empty WAV file is: nothing to detect in.
        return Err(NO_STDIN_SAMPLES.into());
    }
    let mut tail = s.pad;
    while tail > 0 {
        let n = (CHUNK - filled).min(tail);
        chunk[filled..filled + n].fill(0);
        filled += n;
        tail -= n;
        if filled == CHUNK {
            s.push(&chunk)?;
            filled = 0;
        }
    }
    if s.chunks == 0 {
        // As a file this short is: not one chunk was scored.
        return Err(too_short("stdin", total));
    }
    Ok((total, None))
}

/// The error for input with no whole 1280-sample chunk to score, padding included.
fn too_short(name: &str, samples: usize) -> String {
    format!(
        "{name}: audio too short: {samples} samples ({:.0} ms) at 16 kHz; wake-word detection \
         needs more than {CHUNK} samples (80 ms) including --pad-seconds",
        samples as f64 * 1000.0 / RATE as f64
    )
}

/// An f32 as the JSON number with the shortest decimal form that reads back as the same
/// f32 (a plain `f32 as f64` would print its binary expansion, e.g. 0.1 as 0.10000000149).
fn short(v: f32) -> Value {
    format!("{v}").parse::<f64>().map_or(Value::Null, Value::from)
}

fn report(s: &Session, label: &str, audio_samples: usize, seconds: f64) -> Result<(), String> {
    if s.json_lines {
        return Ok(()); // every detection is printed already
    }
    if s.json {
        let mut models = Map::new();
        for t in &s.tracks {
            let detections: Vec<Value> = t
                .detections
                .iter()
                .map(|&(time, score)| json!({"time_s": time, "score": short(score)}))
                .collect();
            let scores: Vec<Value> = t.scores.iter().map(|&v| short(v)).collect();
            models.insert(t.name.clone(), json!({"scores": scores, "detections": detections}));
        }
        return line(format_args!("{}", json!({ "models": models })));
    }
    let audio_s = audio_samples as f64 / RATE as f64;
    let total: usize = s.tracks.iter().map(|t| t.detections.len()).sum();
    line(format_args!(
        "{label}: {audio_s:.2} s of audio, {} chunks of 80 ms, {} model(s), {total} detection(s); \
         {:.1} ms ({:.0}x real time)",
        s.chunks,
        s.tracks.len(),
        seconds * 1e3,
        if seconds > 0.0 { (s.chunks as f64 * 0.08) / seconds } else { f64::INFINITY }
    ))?;
    for t in &s.tracks {
        line(format_args!(
            "  {:<18} peak {:.3}, {} detection(s)",
            t.name,
            t.peak,
            t.detections.len()
        ))?;
    }
    Ok(())
}
