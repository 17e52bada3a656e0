//! One `transcribe` request of `neon serve`, streamed: [`AsrRequest`].
//!
//! The events, in `wyoming` 1.10's order:
//! - `transcribe` → `transcript-start` at once (also for a request too short to give any
//!   text);
//! - while the audio arrives, each piece (a decode window, [`neon_models::vad::windows`]; or,
//!   with the VAD off, 30 s cut at a quiet point) is decoded as soon as it is decided and
//!   its text sent as one `transcript-chunk`. A window is decided when the VAD sees its
//!   end: 2 s of silence after its speech, or 30 s of audio. A chunk starts with a space
//!   when text came before it, so the chunks concatenated are the final text; a piece that
//!   gives no text sends no chunk;
//! - `audio-stop` → the pieces left (the open window) as chunks, then `transcript` with the
//!   whole text (for clients that do not stream) and `transcript-stop`.
//!
//! **Endpointing** ([`super::AsrConfig::endpointing`], `neon serve --vad-endpointing SEC`):
//! once SEC of silence follows speech ([`SpeechWindows::silence_after_speech`]: the gap
//! after the last speech segment, as silero-vad's `get_speech_timestamps` reports
//! segments), the request ends as at `audio-stop` without waiting for it; the rest of its
//! audio, up to its `audio-stop`, is ignored. No endpoint comes before the first speech.
//! The request's `vad_sensitivity` scales SEC ([`super::Sensitivity`]).
//!
//! **Cap** ([`super::AsrConfig::max_samples`], 5 minutes): the chunk that passes it is
//! used up to the cap, the request ends there (its text so far: chunks, `transcript`,
//! `transcript-stop`), then an `error` event (`audio-too-long`) follows at once; the rest of
//! its audio is ignored.
//!
//! **Memory**: a request holds its open decode window (at most 30 s, plus the pause that
//! speech may still join; [`neon_models::vad::windows`]) or, with the VAD off, at most 30 s; never
//! the whole request.
//!
//! **Errors** (a chunk whose format is invalid, samples the VAD refuses, a failed decode):
//! the call returns the message; the server sends it as an `error` event. A request whose
//! decode failed is over (its next audio is ignored up to `audio-stop`); a bad chunk is
//! skipped and the request goes on.

use serde_json::json;

use super::super::audio::{ChunkConverter, Format, Sink};
use super::super::event::Event;
use super::{AsrModels, Sensitivity};
use neon_models::moonshine::segment::{Segment, Segmenter};
use neon_models::moonshine::{MAX_SAMPLES, SAMPLE_RATE};
use neon_models::vad::segments::SegmentConfig;
use neon_models::vad::windows::{SpeechWindows, WindowConfig};

/// The language of every transcript (Moonshine base-en).
const LANGUAGE: &str = "en";

/// How the audio is cut into pieces.
enum Cutter {
    /// Decode windows around the speech (VAD on).
    Speech(Box<SpeechWindows>),
    /// Everything, cut at quiet points every 30 s (VAD off).
    Quiet(Segmenter),
}

/// Where a request is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    /// Taking audio.
    Open,
    /// Answered (endpoint, cap or failure); its audio is ignored up to `audio-stop`.
    Answered,
}

/// One `transcribe` request (module docs).
pub struct AsrRequest {
    converter: ChunkConverter,
    cutter: Cutter,
    /// Endpointing silence (samples), if on.
    endpoint: Option<u64>,
    max_samples: u64,
    /// Converted samples taken so far.
    samples: u64,
    /// The text sent so far (the chunks concatenated).
    text: String,
    state: State,
    /// The piece being fed, as floats.
    floats: Vec<f32>,
}

impl AsrRequest {
    /// A request begun by a `transcribe` event with `data` (its `vad_sensitivity` is read);
    /// appends `transcript-start` to `out`.
    ///
    /// # Errors
    /// A one-line message when the VAD stream cannot be made.
    pub fn begin(
        models: &AsrModels,
        data: &serde_json::Map<String, serde_json::Value>,
        out: &mut Vec<Event>,
    ) -> Result<Self, String> {
        let config = models.config();
        let cutter = if config.vad {
            let windows = SpeechWindows::new(
                models.vad()?,
                SegmentConfig::default(),
                WindowConfig::default(),
            )
            .map_err(|e| e.to_string())?;
            Cutter::Speech(Box::new(windows))
        } else {
            Cutter::Quiet(Segmenter::new(MAX_SAMPLES))
        };
        let sensitivity =
            Sensitivity::parse(data.get("vad_sensitivity").and_then(serde_json::Value::as_str));
        let endpoint = config.endpointing.map(|s| {
            (f64::from(sensitivity.scale(s)) * f64::from(SAMPLE_RATE as u32)).round() as u64
        });
        out.push(Event::with_data("transcript-start", json!({ "language": LANGUAGE })));
        Ok(Self {
            converter: ChunkConverter::default(),
            cutter,
            endpoint,
            max_samples: config.max_samples,
            samples: 0,
            text: String::new(),
            state: State::Open,
            floats: Vec::new(),
        })
    }

    /// Whether the request has been answered before its `audio-stop` (endpoint, cap or a
    /// failed decode): its audio is then ignored.
    pub fn answered(&self) -> bool {
        self.state == State::Answered
    }

    /// The text sent so far.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// Converted samples taken so far (16 kHz).
    pub fn samples(&self) -> u64 {
        self.samples
    }

    /// Samples held: the open decode window and what it may still claim.
    pub fn held(&self) -> usize {
        match &self.cutter {
            Cutter::Speech(w) => w.held(),
            Cutter::Quiet(s) => s.held(),
        }
    }

    /// One `audio-chunk`: converted, cut, and every piece decided decoded (a chunk event
    /// each); at an endpoint or the cap the request is answered (module docs).
    ///
    /// # Errors
    /// An invalid format (the chunk is skipped), samples the VAD refuses or a failed decode
    /// (the request is then answered without its `transcript`).
    pub fn push(
        &mut self,
        models: &AsrModels,
        format: Format,
        payload: &[u8],
        out: &mut Vec<Event>,
    ) -> Result<(), String> {
        if self.answered() {
            return Ok(());
        }
        let over = self.convert(models, out, |c, sink| c.push(format, payload, sink))?;
        if over {
            self.end(models, out)?;
            out.push(Event::error(
                &format!(
                    "the audio is longer than {} s (the most one request takes): the \
                     transcript ends there",
                    self.max_samples as f64 / f64::from(SAMPLE_RATE as u32)
                ),
                "audio-too-long",
            ));
            return Ok(());
        }
        let silence = match &self.cutter {
            Cutter::Speech(w) => w.silence_after_speech(),
            Cutter::Quiet(_) => None,
        };
        if let (Some(endpoint), Some(silence)) = (self.endpoint, silence) {
            if silence >= endpoint {
                self.end(models, out)?;
            }
        }
        Ok(())
    }

    /// `audio-stop`: the rest of the audio decoded, then `transcript` and
    /// `transcript-stop` (nothing when the request was answered already).
    ///
    /// # Errors
    /// As [`AsrRequest::push`].
    pub fn stop(&mut self, models: &AsrModels, out: &mut Vec<Event>) -> Result<(), String> {
        if self.answered() {
            return Ok(());
        }
        self.convert(models, out, |c, sink| c.finish(sink))?;
        self.end(models, out)
    }

    /// Runs `convert` on the converter, feeding its samples piece by piece as they come
    /// (so a large chunk is never held whole) up to the cap; whether some were past the
    /// cap (and dropped).
    ///
    /// # Errors
    /// The converter's (an invalid format: the request goes on) or the feeding's (the
    /// request is then answered).
    fn convert(
        &mut self,
        models: &AsrModels,
        out: &mut Vec<Event>,
        convert: impl FnOnce(&mut ChunkConverter, &mut Sink) -> Result<(), String>,
    ) -> Result<bool, String> {
        let mut converter = std::mem::take(&mut self.converter);
        let (mut over, mut failed) = (false, false);
        let converted = convert(&mut converter, &mut |piece| {
            if over {
                return Ok(());
            }
            over = self.take(piece);
            let fed = self.feed(models, out);
            failed = fed.is_err();
            fed
        });
        self.converter = converter;
        if failed {
            self.state = State::Answered;
        }
        converted.map(|()| over)
    }

    /// `piece` as floats in `self.floats`, up to the cap; whether some of it was past the
    /// cap (and dropped).
    fn take(&mut self, piece: &[i16]) -> bool {
        let room = self.max_samples - self.samples;
        let over = piece.len() as u64 > room;
        let piece = &piece[..room.min(piece.len() as u64) as usize];
        self.floats.clear();
        self.floats.extend(piece.iter().map(|&v| f32::from(v) / 32768.0));
        over
    }

    /// Feeds `self.floats` to the cutter and decodes the pieces it decides.
    fn feed(&mut self, models: &AsrModels, out: &mut Vec<Event>) -> Result<(), String> {
        self.samples += self.floats.len() as u64;
        match &mut self.cutter {
            Cutter::Speech(w) => w.push(&self.floats).map_err(|e| e.to_string())?,
            Cutter::Quiet(s) => s.push(&self.floats),
        }
        while let Some(piece) = self.pop() {
            self.decode(models, &piece, out)?;
        }
        Ok(())
    }

    fn pop(&mut self) -> Option<Segment> {
        match &mut self.cutter {
            Cutter::Speech(w) => w.pop(),
            Cutter::Quiet(s) => s.pop(),
        }
    }

    /// Decodes one piece; its text (if any) as a chunk.
    fn decode(
        &mut self,
        models: &AsrModels,
        piece: &Segment,
        out: &mut Vec<Event>,
    ) -> Result<(), String> {
        let text = models.decode(&piece.samples)?;
        if text.is_empty() {
            return Ok(());
        }
        let chunk = if self.text.is_empty() { text } else { format!(" {text}") };
        self.text.push_str(&chunk);
        out.push(Event::with_data("transcript-chunk", json!({ "text": chunk })));
        Ok(())
    }

    /// The end of the audio: the open pieces decoded, then `transcript` and
    /// `transcript-stop`; the request is answered.
    fn end(&mut self, models: &AsrModels, out: &mut Vec<Event>) -> Result<(), String> {
        self.state = State::Answered;
        let rest = match &mut self.cutter {
            Cutter::Speech(w) => {
                w.finish().map_err(|e| e.to_string())?;
                std::iter::from_fn(|| w.pop()).collect()
            }
            Cutter::Quiet(s) => s.finish(),
        };
        for piece in rest {
            self.decode(models, &piece, out)?;
        }
        out.push(Event::with_data(
            "transcript",
            json!({ "text": self.text, "language": LANGUAGE }),
        ));
        out.push(Event::new("transcript-stop"));
        Ok(())
    }
}
