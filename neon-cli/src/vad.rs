//! `neon vad`: voice activity with Silero VAD on a file or stdin: the speech segments as
//! they are decided, or (`--json`) every window's probability and the segments.

use clap::Args;
use neon_models::exec_plan::Family;
use neon_models::session::SessionOptions;
use neon_models::vad::detector::{Vad, VadModel};
use neon_models::vad::segments::{SegmentConfig, SpeechSegment, SpeechSegmenter};
use neon_models::vad::windows::{SpeechWindows, WindowConfig};
use neon_models::vad::SAMPLE_RATE;
use serde_json::json;

use crate::input::Source;
use crate::{line, SessionArgs};

#[derive(Args)]
pub struct VadArgs {
    /// An audio file (WAV of any layout, FLAC, Ogg/Vorbis; any channel count and rate;
    /// also a FIFO), or `-` for stdin: decoded the same way when it starts with a file header,
    /// else raw s16le 16 kHz mono.
    input: String,
    /// Print one JSON object at the end: {"probabilities": [one per 512-sample window],
    /// "segments": [{"start_s", "end_s"}]}.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    segments: SegmentArgs,
    #[command(flatten)]
    session: SessionArgs,
}

/// The segment rule's settings (silero-vad's `get_speech_timestamps` defaults).
#[derive(Args)]
pub struct SegmentArgs {
    /// Probability at or above which a window starts speech (silence: below
    /// max(threshold - 0.15, 0.01), as silero-vad).
    #[arg(long, value_name = "P", default_value_t = 0.5)]
    threshold: f64,
    /// Shortest speech segment kept (ms).
    #[arg(long, value_name = "MS", default_value_t = 250)]
    min_speech_ms: u32,
    /// Silence (ms) that ends a segment.
    #[arg(long, value_name = "MS", default_value_t = 100)]
    min_silence_ms: u32,
    /// Padding added to each side of a segment (ms).
    #[arg(long, value_name = "MS", default_value_t = 30)]
    speech_pad_ms: u32,
}

impl SegmentArgs {
    fn config(&self) -> SegmentConfig {
        SegmentConfig {
            threshold: self.threshold,
            min_speech_duration_ms: self.min_speech_ms,
            min_silence_duration_ms: self.min_silence_ms,
            speech_pad_ms: self.speech_pad_ms,
            ..SegmentConfig::default()
        }
    }
}

/// A VAD stream on the embedded weights, on the backend `options` select.
pub(crate) fn vad(options: &SessionOptions) -> Result<Vad, String> {
    let model = VadModel::builtin().map_err(|e| e.to_string())?;
    Vad::new(model, options.backend(Family::SileroVad, "network")).map_err(|e| e.to_string())
}

/// Decode windows for Moonshine over a VAD stream with the default segment rule.
pub(crate) fn speech_windows(options: &SessionOptions) -> Result<SpeechWindows, String> {
    SpeechWindows::new(vad(options)?, SegmentConfig::default(), WindowConfig::default())
        .map_err(|e| e.to_string())
}

/// Seconds of `samples` at 16 kHz (unrounded).
fn seconds(samples: u64) -> f64 {
    samples as f64 / SAMPLE_RATE as f64
}

pub fn run(args: &VadArgs) -> Result<(), String> {
    let options = args.session.options(&[Family::SileroVad], None)?;
    let mut segmenter = SpeechSegmenter::new(&args.segments.config()).map_err(|e| e.to_string())?;
    let mut source = Source::open(&args.input)?;
    let mut vad = vad(&options)?;
    let mut probabilities = Vec::new();
    let mut segments = Vec::new();
    let mut piece = Vec::new();
    let report = |s: SpeechSegment, segments: &mut Vec<SpeechSegment>| {
        if !args.json {
            line(format_args!("{:8.2} s  {:8.2} s  speech", seconds(s.start), seconds(s.end)))?;
        }
        segments.push(s);
        Ok::<(), String>(())
    };
    loop {
        piece.clear();
        if source.read(&mut piece)? == 0 {
            break;
        }
        let first = probabilities.len();
        vad.push(&piece, |p| probabilities.push(p)).map_err(|e| e.to_string())?;
        for &p in &probabilities[first..] {
            for s in segmenter.push(p) {
                report(s, &mut segments)?;
            }
        }
        if !args.json {
            // Only the segments are printed: keep no history on a live stream.
            probabilities.clear();
        }
    }
    if source.samples() == 0 {
        return Err(source.no_samples());
    }
    let first = probabilities.len();
    vad.finish(|p| probabilities.push(p)).map_err(|e| e.to_string())?;
    for &p in &probabilities[first..] {
        for s in segmenter.push(p) {
            report(s, &mut segments)?;
        }
    }
    for s in segmenter.finish(source.samples()).map_err(|e| e.to_string())? {
        report(s, &mut segments)?;
    }
    source.warn_clipping();
    if args.json {
        let segments: Vec<_> = segments
            .iter()
            .map(|s| json!({"start_s": seconds(s.start), "end_s": seconds(s.end)}))
            .collect();
        return line(format_args!(
            "{}",
            json!({"probabilities": probabilities, "segments": segments})
        ));
    }
    let speech: u64 = segments.iter().map(|s| s.end - s.start).sum();
    line(format_args!(
        "{}: {:.2} s of audio, {} speech segment(s), {:.2} s of speech",
        source.name,
        source.samples() as f64 / SAMPLE_RATE as f64,
        segments.len(),
        speech as f64 / SAMPLE_RATE as f64
    ))
}
