//! `neon listen`: waits for a wake word, then transcribes what follows up to a pause
//! ([`neon_models::endpoint`]), and waits again. Fixed memory: the detector, the
//! transcriber and one utterance buffer of `--max-seconds`, allocated at start.

use std::path::PathBuf;

use clap::Args;
use neon_models::audio::{f32_to_i16, i16_to_f32};
use neon_models::endpoint::{EndReason, EndpointConfig, Endpointer};
use neon_models::exec_plan::Family;
use neon_models::moonshine::files::{paths, FETCH_COMMAND};
use neon_models::moonshine::transcriber::{MoonshineModel, Transcriber};
use neon_models::openwakeword::selection::WakeDetector;
use neon_models::openwakeword::stream::CHUNK;
use neon_models::openwakeword::trigger::Trigger;
use neon_runtime::Team;
use serde_json::json;

use crate::input::Source;
use crate::{line, SessionArgs};

/// Sample rate of everything after input conversion (Hz).
const RATE: f64 = 16_000.0;

#[derive(Args)]
pub struct ListenArgs {
    /// An audio file (WAV of any layout, FLAC, Ogg/Vorbis, MP3; any channel count and rate;
    /// also a FIFO), or `-` for stdin: decoded the same way when it starts with a file
    /// header, else raw s16le 16 kHz mono (e.g. `arecord -f S16_LE -r 16000 -c 1 | neon listen -`).
    input: String,
    #[command(flatten)]
    models: crate::words::ModelArgs,
    /// Score at or above which a wake word is detected.
    #[arg(long, default_value_t = 0.5, allow_negative_numbers = true)]
    threshold: f32,
    /// Moonshine model directory, as for `neon transcribe`.
    #[arg(long, value_name = "DIR")]
    model_dir: Option<PathBuf>,
    /// Print one JSON object per event: `{"event": "wake", "time_s", "model", "score"}`
    /// and `{"event": "text", "start_s", "end_s", "text", "reason"}`.
    #[arg(long)]
    json_lines: bool,
    /// RMS level (dBFS) at or above which an 80 ms frame counts as speech.
    #[arg(long, value_name = "DB", default_value_t = -45.0, allow_negative_numbers = true)]
    speech_dbfs: f32,
    /// Silence after speech that ends the utterance (ms).
    #[arg(long, value_name = "MS", default_value_t = 700)]
    pause_ms: u32,
    /// Longest utterance (seconds, at most 30: one Moonshine segment).
    #[arg(long, value_name = "S", default_value_t = 15.0)]
    max_seconds: f32,
    /// Threads for the embedding, the encoder and the decoder (as `neon wake`).
    #[arg(long, value_name = "N")]
    threads: Option<usize>,
    #[command(flatten)]
    session: SessionArgs,
}

/// What the listener does with the next chunk.
enum State {
    /// Scoring wake words.
    Waiting,
    /// Gathering the utterance that started at `start` (samples since the stream began).
    Capturing { start: u64 },
}

struct Listener {
    detector: WakeDetector,
    triggers: Vec<Trigger>,
    transcriber: Transcriber,
    team: Team,
    endpointer: Endpointer,
    /// The utterance so far (capacity `--max-seconds`, allocated once).
    utterance: Vec<f32>,
    state: State,
    /// Samples seen since the stream began.
    samples: u64,
    json: bool,
}

impl Listener {
    /// Feeds one chunk (1280 samples, the last one maybe shorter).
    fn push(&mut self, chunk: &[i16]) -> Result<(), String> {
        self.samples += chunk.len() as u64;
        match self.state {
            State::Waiting => {
                let scores = self.detector.push_in(&self.team, chunk).map_err(|e| e.to_string())?;
                let mut best: Option<(usize, f32)> = None;
                for (i, (t, &s)) in self.triggers.iter_mut().zip(scores).enumerate() {
                    if let Some(d) = t.update(s, self.samples) {
                        if best.is_none_or(|(_, b)| d.score > b) {
                            best = Some((i, d.score));
                        }
                    }
                }
                if let Some((i, score)) = best {
                    let model = self.detector.words()[i].name().to_string();
                    let time = self.samples as f64 / RATE;
                    if self.json {
                        let v = json!({"event": "wake", "time_s": time, "model": model, "score": score});
                        line(format_args!("{v}"))?;
                    } else {
                        line(format_args!("{time:8.2} s  wake  {model} {score:.3}"))?;
                    }
                    self.utterance.clear();
                    self.endpointer.reset();
                    self.state = State::Capturing { start: self.samples };
                }
                Ok(())
            }
            State::Capturing { .. } => {
                let room = self.utterance.capacity() - self.utterance.len();
                let take = &chunk[..chunk.len().min(room)];
                self.utterance.extend(take.iter().map(|&s| i16_to_f32(s)));
                match self.endpointer.push(chunk) {
                    Some(reason) => {
                        let keep = match reason {
                            EndReason::Pause => self.endpointer.speech_end() as usize,
                            EndReason::NoSpeech => 0,
                            EndReason::MaxLength => self.utterance.len(),
                        };
                        self.finish(keep, reason.name())
                    }
                    None => Ok(()),
                }
            }
        }
    }

    /// Transcribes the first `keep` samples of the utterance (without its trailing pause),
    /// prints them with why the utterance ended, and waits for the next wake word.
    fn finish(&mut self, keep: usize, reason: &str) -> Result<(), String> {
        let State::Capturing { start } = self.state else { return Ok(()) };
        let audio = &self.utterance[..keep.min(self.utterance.len())];
        let text = if audio.is_empty() {
            String::new()
        } else {
            self.transcriber.transcribe_in(&self.team, audio).map_err(|e| e.to_string())?.text
        };
        let (start_s, end_s) = (start as f64 / RATE, (start + audio.len() as u64) as f64 / RATE);
        if self.json {
            let v = json!({"event": "text", "start_s": start_s, "end_s": end_s, "text": text,
                           "reason": reason});
            line(format_args!("{v}"))?;
        } else {
            line(format_args!("{end_s:8.2} s  text  {text}  ({start_s:.2}-{end_s:.2} s)"))?;
        }
        self.detector.reset();
        for t in &mut self.triggers {
            t.reset();
        }
        self.state = State::Waiting;
        Ok(())
    }

    /// The end of the input: an utterance being gathered is transcribed up to its last
    /// speech frame (reason `end_of_input`).
    fn end(&mut self) -> Result<(), String> {
        let keep = self.endpointer.speech_end() as usize;
        self.finish(keep, "end_of_input")
    }
}

fn check_args(args: &ListenArgs) -> Result<(), String> {
    if !(args.threshold > 0.0 && args.threshold <= 1.0) {
        return Err(format!("--threshold must be in (0, 1], got {}", args.threshold));
    }
    if !(args.max_seconds >= 1.0 && args.max_seconds <= 30.0) {
        return Err(format!("--max-seconds must be in [1, 30], got {}", args.max_seconds));
    }
    if !(100..=10_000).contains(&args.pause_ms) {
        return Err(format!("--pause-ms must be in 100..=10000, got {}", args.pause_ms));
    }
    if !(args.speech_dbfs >= -100.0 && args.speech_dbfs <= 0.0) {
        return Err(format!("--speech-dbfs must be in [-100, 0], got {}", args.speech_dbfs));
    }
    Ok(())
}

pub fn run(args: &ListenArgs) -> Result<(), String> {
    check_args(args)?;
    let options = args.session.options(&[Family::OpenWakeWord, Family::MoonshineAsr], None)?;
    let team = crate::team(args.threads)?;
    let dir = crate::transcribe::model_dir(args.model_dir.as_deref());
    if !paths(&dir).0.is_file() {
        return Err(format!(
            "no Moonshine weights at {}: run `{FETCH_COMMAND}`, or pass --model-dir",
            paths(&dir).0.display()
        ));
    }
    let words = args.models.load()?;
    let triggers = words.iter().map(|_| Trigger::new(args.threshold, 16_000)).collect();
    let detector =
        WakeDetector::with_builtin_embedding(words, &options).map_err(|e| e.to_string())?;
    // The input's header is checked before the weights are loaded.
    let mut source = Source::open(&args.input)?;
    let model = MoonshineModel::open(&dir).map_err(|e| e.to_string())?;
    let transcriber = Transcriber::new(model, &options).map_err(|e| e.to_string())?;
    let max_ms = (args.max_seconds * 1000.0).round() as u32;
    let config = EndpointConfig {
        speech_dbfs: args.speech_dbfs,
        pause_ms: args.pause_ms,
        max_ms,
        ..EndpointConfig::default()
    };
    let mut l = Listener {
        detector,
        triggers,
        transcriber,
        team,
        endpointer: Endpointer::new(config),
        utterance: Vec::with_capacity(max_ms as usize * 16),
        state: State::Waiting,
        samples: 0,
        json: args.json_lines,
    };
    let mut chunk = Vec::with_capacity(CHUNK);
    let mut piece = Vec::new();
    loop {
        piece.clear();
        if source.read(&mut piece)? == 0 {
            break;
        }
        for &x in &piece {
            chunk.push(f32_to_i16(x));
            if chunk.len() == CHUNK {
                l.push(&chunk)?;
                chunk.clear();
            }
        }
    }
    if !chunk.is_empty() {
        l.push(&chunk)?;
    }
    if l.samples == 0 {
        return Err(source.no_samples());
    }
    source.warn_clipping();
    l.end()
}
