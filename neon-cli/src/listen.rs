//! `neon listen`: waits for a wake word (openWakeWord, or microWakeWord with
//! `--engine micro`), then transcribes what follows up to a pause, and waits again.
//!
//! The utterance ends by voice activity (default, [`neon_models::vad::windows`]): speech
//! must start within `--no-speech-ms` (3 s) of the wake word, and the utterance ends once
//! `--pause-ms` (1.5 s) of silence follows its last speech segment, so a command with
//! pauses of about a second stays one utterance; the span from its first speech onset to
//! its last offset (100 ms more on each side) is decoded. `--endpointer energy` ends it by
//! loudness instead ([`crate::endpoint`]: 700 ms pause, 4 s without speech by
//! default), decoding from the wake word to the last loud frame.

use std::path::PathBuf;

use crate::endpoint::{EndReason, EndpointConfig, Endpointer};
use clap::Args;
use neon_audio::{f32_to_i16, i16_to_f32};
use neon_models::exec_plan::Family;
use neon_models::microwakeword::session::MicroDetector;
use neon_models::moonshine::files::{paths, FETCH_COMMAND};
use neon_models::moonshine::transcriber::{MoonshineModel, Transcriber};
use neon_models::openwakeword::selection::WakeDetector;
use neon_models::openwakeword::session::WakeSession;
use neon_models::openwakeword::stream::CHUNK;
use neon_models::openwakeword::trigger::Trigger;
use neon_models::session::SessionOptions;
use neon_models::vad::segments::SegmentConfig;
use neon_models::vad::windows::{SpeechWindows, WindowConfig};
use neon_runtime::Team;
use serde_json::{json, Value};

use crate::input::Source;
use crate::ranges::check_in;
use crate::ranges::Interval::{Closed, Inclusive, OpenClosed};
use crate::words::{refuse_with_micro, Engine};
use crate::{line, live, SessionArgs};

/// Sample rate of everything after input conversion (Hz).
const RATE: f64 = 16_000.0;

#[derive(Args)]
pub struct ListenArgs {
    /// An audio file (WAV of any layout, FLAC, Ogg/Vorbis; any channel count and rate;
    /// also a FIFO), or `-` for stdin: decoded the same way when it starts with a file
    /// header, else raw s16le 16 kHz mono (e.g. `arecord -f S16_LE -r 16000 -c 1 | neon listen -`).
    /// On stdin, SIGINT or SIGTERM transcribes the utterance being gathered (reason
    /// `interrupted`), then exits 130 or 143.
    input: String,
    #[command(flatten)]
    models: crate::words::ModelArgs,
    /// Score at or above which a wake word is detected (default 0.5; openWakeWord only: a
    /// microWakeWord model's JSON `probability_cutoff` decides).
    #[arg(long, allow_negative_numbers = true)]
    threshold: Option<f32>,
    /// Moonshine model directory, as for `neon transcribe`.
    #[arg(long, value_name = "DIR")]
    model_dir: Option<PathBuf>,
    /// Print one JSON object per event: `{"event": "wake", "time_s", "model", "score"}`
    /// and `{"event": "text", "start_s", "end_s", "text", "reason"}`.
    #[arg(long)]
    json_lines: bool,
    /// What ends an utterance: `vad` (Silero VAD speech segments) or `energy` (frames below
    /// `--speech-dbfs`).
    #[arg(long, value_name = "KIND", default_value = "vad", value_parser = ["vad", "energy"])]
    endpointer: String,
    /// With `--endpointer energy`: RMS level (dBFS) at or above which an 80 ms frame counts
    /// as speech.
    #[arg(long, value_name = "DB", default_value_t = -45.0, allow_negative_numbers = true)]
    speech_dbfs: f32,
    /// Silence after speech that ends the utterance (ms, 100 to 10000; default 1500 with
    /// `vad`, 700 with `energy`).
    #[arg(long, value_name = "MS")]
    pause_ms: Option<u32>,
    /// Time after the wake word within which speech must start, else the utterance ends
    /// empty (ms, 100 to 30000; default 3000 with `vad`, 4000 with `energy`).
    #[arg(long, value_name = "MS")]
    no_speech_ms: Option<u32>,
    /// Longest utterance (seconds, at most 30: one Moonshine segment).
    #[arg(long, value_name = "S", default_value_t = 15.0)]
    max_seconds: f32,
    /// Threads for the embedding, the encoder and the decoder (as `neon wake`).
    #[arg(long, value_name = "N")]
    threads: Option<usize>,
    #[command(flatten)]
    session: SessionArgs,
}

/// The wake-word detector of either engine.
enum Wake {
    Oww(WakeSession),
    Micro(Box<MicroDetector>),
}

impl Wake {
    /// Feeds one chunk; the detection with the highest score in it, if any: the model's
    /// index, its score and the score as JSON.
    fn push(&mut self, team: &Team, chunk: &[i16]) -> Result<Option<(usize, f64, Value)>, String> {
        let mut best: Option<(usize, f64, Value)> = None;
        let mut keep = |model: usize, score: f64, json: Value| {
            if best.as_ref().is_none_or(|(_, b, _)| score > *b) {
                best = Some((model, score, json));
            }
        };
        match self {
            Wake::Oww(wake) => {
                wake.push_in(team, chunk).map_err(|e| e.to_string())?;
                for d in wake.detections() {
                    keep(d.model, f64::from(d.score), json!(d.score));
                }
            }
            Wake::Micro(detector) => detector
                .push(chunk, |e| {
                    if e.fired {
                        keep(e.word, e.decision.probability, json!(e.decision.probability));
                    }
                })
                .map_err(|e| e.to_string())?,
        }
        Ok(best)
    }

    /// The name of model `i`.
    fn name(&self, i: usize) -> &str {
        match self {
            Wake::Oww(wake) => wake.words()[i].name(),
            Wake::Micro(detector) => detector.words()[i].name(),
        }
    }

    fn reset(&mut self) {
        match self {
            Wake::Oww(wake) => wake.reset(),
            Wake::Micro(detector) => detector.reset(),
        }
    }
}

/// What the listener does with the next chunk.
enum State {
    /// Scoring wake words.
    Waiting,
    /// Gathering the utterance that started at `start` (samples since the stream began).
    Capturing { start: u64 },
}

/// How an utterance ends, and the audio it keeps meanwhile.
enum Utterance {
    /// Loudness ([`Endpointer`]); the utterance so far (capacity `--max-seconds`,
    /// allocated once).
    Energy { endpointer: Endpointer, audio: Vec<f32> },
    /// Voice activity: the decode windows of the audio since the wake word, closed after
    /// `pause` samples of silence (their join gap).
    Vad { windows: Box<SpeechWindows>, no_speech: u64, max: u64, samples: Vec<f32> },
}

/// The utterance's end: why, and the audio to transcribe (start in samples since the
/// utterance began, samples).
struct Ended {
    reason: &'static str,
    pieces: Vec<(u64, Vec<f32>)>,
}

impl Utterance {
    fn reset(&mut self) {
        match self {
            Utterance::Energy { endpointer, audio } => {
                endpointer.reset();
                audio.clear();
            }
            Utterance::Vad { windows, .. } => windows.reset(),
        }
    }

    /// Feeds one chunk of the utterance; `Some` when it has ended.
    fn push(&mut self, chunk: &[i16]) -> Result<Option<Ended>, String> {
        match self {
            Utterance::Energy { endpointer, audio } => {
                let room = audio.capacity() - audio.len();
                audio.extend(chunk[..chunk.len().min(room)].iter().map(|&s| i16_to_f32(s)));
                Ok(endpointer.push(chunk).map(|reason| {
                    let keep = match reason {
                        EndReason::Pause => endpointer.speech_end() as usize,
                        EndReason::NoSpeech => 0,
                        EndReason::MaxLength => audio.len(),
                    };
                    Self::energy_end(audio, keep, reason.name())
                }))
            }
            Utterance::Vad { windows, no_speech, max, samples } => {
                samples.clear();
                samples.extend(chunk.iter().map(|&s| i16_to_f32(s)));
                windows.push(samples).map_err(|e| e.to_string())?;
                let at = windows.samples();
                if windows.windows_closed() > 0 {
                    return Ok(Some(Self::vad_end(windows, "pause")));
                }
                if at >= (*no_speech).min(*max) && !windows.window_open() {
                    return Ok(Some(Ended { reason: "no_speech", pieces: Vec::new() }));
                }
                if at >= *max {
                    windows.finish().map_err(|e| e.to_string())?;
                    return Ok(Some(Self::vad_end(windows, "max_length")));
                }
                Ok(None)
            }
        }
    }

    /// The end of the input (`end_of_input`) or a signal (`interrupted`) during an
    /// utterance.
    fn end(&mut self, reason: &'static str) -> Result<Ended, String> {
        match self {
            Utterance::Energy { endpointer, audio } => {
                let keep = endpointer.speech_end() as usize;
                Ok(Self::energy_end(audio, keep, reason))
            }
            Utterance::Vad { windows, .. } => {
                windows.finish().map_err(|e| e.to_string())?;
                Ok(Self::vad_end(windows, reason))
            }
        }
    }

    fn energy_end(audio: &[f32], keep: usize, reason: &'static str) -> Ended {
        let audio = &audio[..keep.min(audio.len())];
        let pieces = if audio.is_empty() { Vec::new() } else { vec![(0, audio.to_vec())] };
        Ended { reason, pieces }
    }

    /// The pieces of the first window (a second one that opened in the same chunk is
    /// dropped with the utterance).
    fn vad_end(windows: &mut SpeechWindows, reason: &'static str) -> Ended {
        let pieces = std::iter::from_fn(|| windows.pop()).map(|p| (p.start, p.samples)).collect();
        Ended { reason, pieces }
    }
}

struct Listener {
    wake: Wake,
    transcriber: Transcriber,
    team: Team,
    utterance: Utterance,
    state: State,
    /// Samples seen since the stream began.
    samples: u64,
    json: bool,
    /// Samples waiting for a whole chunk.
    chunk: Vec<i16>,
}

impl Listener {
    /// Feeds the next samples, chunk by chunk.
    fn feed(&mut self, samples: &[f32]) -> Result<(), String> {
        for &x in samples {
            self.chunk.push(f32_to_i16(x));
            if self.chunk.len() == CHUNK {
                let chunk = std::mem::take(&mut self.chunk);
                self.push(&chunk)?;
                self.chunk = chunk;
                self.chunk.clear();
            }
        }
        Ok(())
    }

    /// Feeds one chunk (1280 samples, the last one maybe shorter).
    fn push(&mut self, chunk: &[i16]) -> Result<(), String> {
        self.samples += chunk.len() as u64;
        match self.state {
            State::Waiting => {
                if let Some((i, score, score_json)) = self.wake.push(&self.team, chunk)? {
                    let model = self.wake.name(i).to_string();
                    let time = self.samples as f64 / RATE;
                    if self.json {
                        let v = json!({"event": "wake", "time_s": time, "model": model,
                                       "score": score_json});
                        line(format_args!("{v}"))?;
                    } else {
                        line(format_args!("{time:8.2} s  wake  {model} {score:.3}"))?;
                    }
                    self.utterance.reset();
                    self.state = State::Capturing { start: self.samples };
                }
                Ok(())
            }
            State::Capturing { .. } => match self.utterance.push(chunk)? {
                Some(ended) => self.finish(ended),
                None => Ok(()),
            },
        }
    }

    /// Transcribes the utterance's pieces, prints the text with why the utterance ended,
    /// and waits for the next wake word.
    fn finish(&mut self, ended: Ended) -> Result<(), String> {
        let State::Capturing { start } = self.state else { return Ok(()) };
        let mut texts = Vec::new();
        for (_, audio) in &ended.pieces {
            let t = self.transcriber.transcribe_in(&self.team, audio).map_err(|e| e.to_string())?;
            if !t.text.is_empty() {
                texts.push(t.text);
            }
        }
        let text = texts.join(" ");
        let end = ended.pieces.last().map_or(0, |(at, a)| at + a.len() as u64);
        let (start_s, end_s) = (start as f64 / RATE, (start + end) as f64 / RATE);
        let reason = ended.reason;
        if self.json {
            let v = json!({"event": "text", "start_s": start_s, "end_s": end_s, "text": text,
                           "reason": reason});
            line(format_args!("{v}"))?;
        } else {
            let why = if reason == "pause" { String::new() } else { format!(", {reason}") };
            line(format_args!("{end_s:8.2} s  text  {text}  ({start_s:.2}-{end_s:.2} s{why})"))?;
        }
        self.wake.reset();
        self.state = State::Waiting;
        Ok(())
    }

    /// The end of the input (`reason` `end_of_input`) or a signal (`interrupted`): the last
    /// partial chunk is fed, and an utterance being gathered is transcribed up to its last
    /// speech.
    fn end(&mut self, reason: &'static str) -> Result<(), String> {
        if !self.chunk.is_empty() {
            let chunk = std::mem::take(&mut self.chunk);
            self.push(&chunk)?;
        }
        if let State::Capturing { .. } = self.state {
            let ended = self.utterance.end(reason)?;
            self.finish(ended)?;
        }
        Ok(())
    }
}

fn check_args(args: &ListenArgs) -> Result<(), String> {
    if let Some(threshold) = args.threshold {
        check_in("--threshold", threshold, OpenClosed(0.0, 1.0))?;
    }
    check_in("--max-seconds", args.max_seconds, Closed(1.0, 30.0))?;
    if let Some(ms) = args.pause_ms {
        check_in("--pause-ms", ms, Inclusive(100, 10_000))?;
    }
    if let Some(ms) = args.no_speech_ms {
        check_in("--no-speech-ms", ms, Inclusive(100, 30_000))?;
    }
    check_in("--speech-dbfs", args.speech_dbfs, Closed(-100.0, 0.0))
}

/// The utterance's endpointer as the arguments ask.
fn utterance(args: &ListenArgs, options: &SessionOptions) -> Result<Utterance, String> {
    let max_ms = (args.max_seconds * 1000.0).round() as u32;
    if args.endpointer == "energy" {
        let defaults = EndpointConfig::default();
        let config = EndpointConfig {
            speech_dbfs: args.speech_dbfs,
            pause_ms: args.pause_ms.unwrap_or(defaults.pause_ms),
            no_speech_ms: args.no_speech_ms.unwrap_or(defaults.no_speech_ms),
            max_ms,
        };
        let audio = Vec::with_capacity(max_ms as usize * 16);
        return Ok(Utterance::Energy { endpointer: Endpointer::new(config), audio });
    }
    let ms = |ms: u32| u64::from(ms) * 16;
    let config = WindowConfig {
        join_gap: ms(args.pause_ms.unwrap_or(VAD_PAUSE_MS)),
        ..WindowConfig::default()
    };
    let vad = crate::vad::vad(options)?;
    let windows =
        SpeechWindows::new(vad, SegmentConfig::default(), config).map_err(|e| e.to_string())?;
    Ok(Utterance::Vad {
        windows: Box::new(windows),
        no_speech: ms(args.no_speech_ms.unwrap_or(VAD_NO_SPEECH_MS)),
        max: ms(max_ms),
        samples: Vec::with_capacity(CHUNK),
    })
}

/// Default silence (ms) that ends an utterance with the VAD endpointer.
const VAD_PAUSE_MS: u32 = 1500;
/// Default time (ms) for speech to start after the wake word with the VAD endpointer.
const VAD_NO_SPEECH_MS: u32 = 3000;

pub fn run(args: &ListenArgs) -> Result<(), String> {
    check_args(args)?;
    let micro = args.models.engine == Engine::Micro;
    let cutoff = "a microWakeWord model's JSON `probability_cutoff` decides";
    refuse_with_micro("--threshold", micro && args.threshold.is_some(), cutoff)?;
    let mut families = Vec::from([Family::MoonshineAsr]);
    if !micro {
        families.insert(0, Family::OpenWakeWord);
    }
    if args.endpointer == "vad" {
        families.push(Family::SileroVad);
    }
    let options = args.session.options(&families, None)?;
    let team = crate::team(args.threads)?;
    let dir = crate::transcribe::model_dir(args.model_dir.as_deref());
    if !paths(&dir).0.is_file() {
        return Err(format!(
            "no Moonshine weights at {}: run `{FETCH_COMMAND}`, or pass --model-dir",
            paths(&dir).0.display()
        ));
    }
    let wake = if micro {
        // Reset after each utterance: no refractory period needed.
        Wake::Micro(Box::new(MicroDetector::new(args.models.load_micro()?)))
    } else {
        let words = args.models.load()?;
        let detector =
            WakeDetector::with_builtin_embedding(words, &options).map_err(|e| e.to_string())?;
        let threshold = args.threshold.unwrap_or(0.5);
        Wake::Oww(WakeSession::new(detector, Trigger::new(threshold, 16_000)))
    };
    // The input's header is checked before the weights are loaded.
    let mut source = Source::open(&args.input)?;
    // Stdin is a live stream: from here on SIGINT and SIGTERM end it with what it gave.
    let signals = if args.input == "-" { Some(live::Signals::catch()?) } else { None };
    let model = MoonshineModel::open(&dir).map_err(|e| e.to_string())?;
    let transcriber = Transcriber::new(model, &options).map_err(|e| e.to_string())?;
    let mut l = Listener {
        wake,
        transcriber,
        team,
        utterance: utterance(args, &options)?,
        state: State::Waiting,
        samples: 0,
        json: args.json_lines,
        chunk: Vec::with_capacity(CHUNK),
    };
    let ended = match signals {
        None => {
            source.for_each_piece(|piece| l.feed(piece))?;
            live::Ended::Input(Box::new(source))
        }
        // Read on a thread of its own, so that a signal is seen while no audio arrives.
        Some(signals) => live::feed(live::read(move || Ok(source)), &signals, |p| l.feed(p))?,
    };
    match ended {
        live::Ended::Input(source) => {
            if l.samples + l.chunk.len() as u64 == 0 {
                return Err(source.no_samples());
            }
            source.warn_clipping();
            l.end("end_of_input")
        }
        live::Ended::Signal(status) => {
            l.end("interrupted")?;
            std::process::exit(status);
        }
    }
}
