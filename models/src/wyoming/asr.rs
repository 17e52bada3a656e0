//! The speech-recognition service of `neon serve` (Moonshine base-en): [`AsrModels`], shared
//! by every client, and [`AsrUtterance`], one client's audio after `transcribe`.
//!
//! `transcribe`, then `audio-start`, `audio-chunk`s and `audio-stop` give one `transcript`
//! event with `text`: the audio (converted to 16 kHz mono as for the wake service) is held
//! up to [`MAX_SECONDS`] (more is an `error` event at `audio-stop`), then segmented and
//! decoded exactly as `neon transcribe` does (segments of at most 30 s, texts joined by a
//! space), so the text equals `neon transcribe`'s on the same samples. At most `workers`
//! transcriptions run at once (`--asr-workers`); each worker owns a [`Transcriber`]
//! (81.8 MB of workspaces, made at its first use) and a worker team, over one copy of the
//! weights. Other clients wait their turn.

use std::format;
use std::prelude::rust_2021::*;

use std::path::Path;
use std::sync::{Arc, Condvar, Mutex};

use serde_json::{json, Value};

use super::audio::{ChunkConverter, Format};
use crate::moonshine::segment::Segmenter;
use crate::moonshine::transcriber::{token_budget, MoonshineModel, Transcriber};
use crate::moonshine::{MAX_SAMPLES, SAMPLE_RATE};
use crate::session::SessionOptions;

/// Longest utterance held for one `transcribe` (s).
pub const MAX_SECONDS: usize = 300;

/// One worker: a transcriber and its team.
struct Worker {
    transcriber: Transcriber,
    team: neon_runtime::Team,
}

/// The Moonshine model and its workers.
pub struct AsrModels {
    model: Arc<MoonshineModel>,
    options: SessionOptions,
    threads: usize,
    workers: usize,
    idle: Mutex<(Vec<Worker>, usize)>,
    freed: Condvar,
}

impl AsrModels {
    /// Opens the model in `dir` for at most `workers` transcriptions at once, each on a team
    /// of `threads`.
    ///
    /// # Errors
    /// A one-line message when the model cannot be loaded.
    pub fn open(
        dir: &Path,
        options: SessionOptions,
        workers: usize,
        threads: usize,
    ) -> Result<Self, String> {
        let model = MoonshineModel::open(dir).map_err(|e| e.to_string())?;
        Ok(AsrModels {
            model,
            options,
            threads: threads.max(1),
            workers: workers.max(1),
            idle: Mutex::new((Vec::new(), 0)),
            freed: Condvar::new(),
        })
    }

    /// The `asr` programs of `info`.
    pub fn info(&self) -> Value {
        let attribution =
            json!({"name": "Useful Sensors", "url": "https://github.com/usefulsensors/moonshine"});
        json!([{
            "name": "moonshine",
            "description": "Moonshine base-en run by neon",
            "attribution": attribution,
            "installed": true,
            "version": "base-en",
            "models": [{
                "name": "moonshine-base-en",
                "description": "Moonshine base (English)",
                "attribution": attribution,
                "installed": true,
                "version": "base-en",
                "languages": ["en"],
            }],
        }])
    }

    fn take(&self) -> Result<Worker, String> {
        let mut guard =
            self.idle.lock().map_err(|_| "the transcriber pool is poisoned".to_string())?;
        loop {
            if let Some(w) = guard.0.pop() {
                return Ok(w);
            }
            if guard.1 < self.workers {
                guard.1 += 1;
                drop(guard);
                let made = Transcriber::new(self.model.clone(), &self.options)
                    .map_err(|e| e.to_string())
                    .and_then(|transcriber| {
                        let team =
                            neon_runtime::Team::new(self.threads).map_err(|e| e.to_string())?;
                        Ok(Worker { transcriber, team })
                    });
                if made.is_err() {
                    if let Ok(mut g) = self.idle.lock() {
                        g.1 -= 1;
                    }
                }
                return made;
            }
            guard = self
                .freed
                .wait(guard)
                .map_err(|_| "the transcriber pool is poisoned".to_string())?;
        }
    }

    fn give_back(&self, w: Worker) {
        if let Ok(mut g) = self.idle.lock() {
            g.0.push(w);
        }
        self.freed.notify_one();
    }

    /// The text of `samples` (16 kHz mono, full scale 1), as `neon transcribe` gives it.
    ///
    /// # Errors
    /// A one-line message when a worker cannot be made or decoding fails.
    pub fn transcribe(&self, samples: &[f32]) -> Result<String, String> {
        let mut worker = self.take()?;
        let result = transcribe_with(&mut worker, samples);
        self.give_back(worker);
        result
    }
}

fn transcribe_with(w: &mut Worker, samples: &[f32]) -> Result<String, String> {
    let mut segmenter = Segmenter::new(MAX_SAMPLES);
    segmenter.push(samples);
    let mut texts = Vec::new();
    let mut tokens = Vec::new();
    for segment in segmenter.finish() {
        let audio = &segment.samples[..];
        w.transcriber.encode_in(&w.team, audio).map_err(|e| e.to_string())?;
        w.transcriber
            .greedy_in(&w.team, token_budget(audio.len()), &mut tokens)
            .map_err(|e| e.to_string())?;
        let text = w.transcriber.tokenizer().decode(&tokens);
        if !text.is_empty() {
            texts.push(text);
        }
    }
    Ok(texts.join(" "))
}

/// One client's utterance after `transcribe`.
#[derive(Default)]
pub struct AsrUtterance {
    converter: ChunkConverter,
    samples: Vec<i16>,
    too_long: bool,
}

impl AsrUtterance {
    /// Drops what was held (`audio-start`).
    pub fn reset(&mut self) {
        self.converter.reset();
        self.samples.clear();
        self.too_long = false;
    }

    /// Adds one chunk.
    ///
    /// # Errors
    /// An invalid format.
    pub fn push(&mut self, format: Format, payload: &[u8]) -> Result<(), String> {
        if self.too_long {
            return Ok(());
        }
        self.converter.push(format, payload, &mut self.samples)?;
        if self.samples.len() > MAX_SECONDS * SAMPLE_RATE {
            self.too_long = true;
            self.samples = Vec::new();
        }
        Ok(())
    }

    /// Ends the utterance: its text, or an error for one longer than [`MAX_SECONDS`].
    ///
    /// # Errors
    /// Too long, or the transcription's failure.
    pub fn finish(&mut self, models: &AsrModels) -> Result<String, String> {
        let mut tail = Vec::new();
        self.converter.finish(&mut tail)?;
        if self.too_long {
            self.reset();
            return Err(format!(
                "the audio is longer than {MAX_SECONDS} s (the most transcribed at once)"
            ));
        }
        self.samples.extend_from_slice(&tail);
        let audio: Vec<f32> = self.samples.iter().map(|&v| f32::from(v) / 32768.0).collect();
        self.reset();
        if audio.is_empty() {
            return Ok(String::new());
        }
        models.transcribe(&audio)
    }
}
