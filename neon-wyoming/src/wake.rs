//! The wake-word service of `neon serve`: [`WakeModels`] (every model a server offers,
//! shared by its clients) and [`ClientSession`] (one client's state), behaving as
//! wyoming-openwakeword 2.1's handler does.
//!
//! - `describe` → `info` with one wake program and every model: the built-ins under 2.x's
//!   names (`alexa`, `hey_jarvis`, `hey_mycroft`, `hey_rhasspy`, `okay_nabu`), then the
//!   custom models (named after their files, [`neon_models::openwakeword::custom::names`]).
//! - `detect` with `names` selects the active models: a custom model of that name first,
//!   else a built-in (1.x names such as `ok_nabu` or `hey_jarvis_v0.1` are aliases); unknown
//!   names are skipped; none left (or no names) selects `okay_nabu`.
//! - `audio-start` resets the stream, the trigger counters and the refractory periods;
//!   `audio-chunk`s (each with its own format, audio-start or not) are converted to 16 kHz
//!   mono ([`super::audio::ChunkConverter`]) and scored per 1280-sample step (one embedding,
//!   one score per model).
//! - A score strictly above the threshold, outside the model's refractory period, takes one
//!   off the model's trigger counter (`--trigger-level`, reset only at `audio-start`: the
//!   peer's counter does not require consecutive scores, and neither does this); at zero the
//!   model fires `detection` with `name` and `timestamp` (ms of converted audio before the
//!   chunk that fired, since `audio-start`) and is silent for the refractory period. The
//!   peer measures that period in wall-clock time; here it is audio time, so results do not
//!   depend on how fast a client sends.
//! - `audio-stop` scores what the resampler still holds, then sends `not-detected` when no
//!   active model fired since `audio-start`.
//! - `transcribe` (with `--model-dir`): the audio that follows, up to `audio-stop`, goes to
//!   speech recognition instead ([`super::asr`]): `transcript-start`, a `transcript-chunk`
//!   per decoded piece, `transcript` and `transcript-stop`
//!   ([`super::asr::request`]). Inside a request, `audio-start` is ignored (the request
//!   began at `transcribe`), and a second `transcribe` ends the first as `audio-stop`
//!   would before beginning the next.
//! - Other event types are ignored (forward compatibility).
//!
//! The engines ([`Engines`], `--engine`): openWakeWord alone as above (the default);
//! microWakeWord alone ([`super::micro`], wyoming-microwakeword's behaviour: `audio-start`
//! runs the selection of the last `detect`, or `okay_nabu`); or both in one wake program,
//! the microWakeWord models named `micro:NAME`, a `detect` selecting from both (none known:
//! openWakeWord's `okay_nabu`), each engine scoring the same converted audio.

use std::sync::Arc;

use serde_json::{json, Value};

use super::asr::request::AsrRequest;
use super::asr::AsrModels;
use super::audio::{ChunkConverter, Format, Sink};
use super::event::Event;
use super::micro::{self, MicroModels, MicroStream};
use super::server::log;
use neon_models::openwakeword::builtin;
use neon_models::openwakeword::custom;
use neon_models::openwakeword::detector::WakeWord;
use neon_models::openwakeword::selection::WakeDetector;
use neon_models::openwakeword::session::WakeSession;
use neon_models::openwakeword::stream::CHUNK;
use neon_models::openwakeword::trigger::{Rule, Trigger};
use neon_models::session::SessionOptions;

/// Samples per second of the converted audio.
const RATE: u64 = 16_000;

/// The model `detect` falls back to.
pub const DEFAULT_MODEL: &str = "okay_nabu";

/// The wyoming-openwakeword 2.x name of a built-in head (`ok_nabu_v0.1` → `okay_nabu`).
pub fn builtin_name(head: &str) -> String {
    let base = head.strip_suffix("_v0.1").unwrap_or(head);
    if base == "ok_nabu" {
        "okay_nabu".into()
    } else {
        base.into()
    }
}

/// One offered model.
#[derive(Clone)]
pub struct Offered {
    /// The name clients use.
    pub name: String,
    /// Whether it is one of openWakeWord's own.
    pub builtin: bool,
    /// The head (its weights shared by every session).
    pub word: WakeWord,
}

/// Trigger settings (`--threshold`, `--trigger-level`, `--refractory-seconds`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TriggerOptions {
    /// A score must be strictly above this (0..1).
    pub threshold: f32,
    /// Scores above the threshold needed per detection (>= 1).
    pub trigger_level: u32,
    /// Audio time a model stays silent after firing (s, >= 0).
    pub refractory_seconds: f32,
}

impl TriggerOptions {
    /// The trigger of each model: wyoming-openwakeword's counted rule
    /// ([`Rule::Counted`]) with the refractory period in samples of 16 kHz audio.
    pub fn trigger(&self) -> Trigger {
        let level = self.trigger_level;
        Trigger::with_rule(self.threshold, self.refractory_samples(), Rule::Counted { level })
    }

    /// The refractory period in samples of 16 kHz audio.
    pub fn refractory_samples(&self) -> u64 {
        (f64::from(self.refractory_seconds) * RATE as f64).round() as u64
    }
}

/// The wake-word engines a server runs (`--engine`): at least one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Engines {
    /// openWakeWord (the default): the built-in heads and `.tflite`/`.onnx` custom models.
    pub openwakeword: bool,
    /// microWakeWord ([`super::micro`]): the official models and `"micro"` JSON custom models.
    pub micro: bool,
}

impl Engines {
    /// openWakeWord alone (the default).
    pub const OPENWAKEWORD: Engines = Engines { openwakeword: true, micro: false };
    /// microWakeWord alone.
    pub const MICRO: Engines = Engines { openwakeword: false, micro: true };
}

/// Every model a server offers, and its settings; shared by all sessions.
pub struct WakeModels {
    /// The openWakeWord models (none when that engine is off).
    models: Vec<Offered>,
    /// The microWakeWord engine, when on.
    micro: Option<MicroModels>,
    engines: Engines,
    warnings: Vec<String>,
    options: TriggerOptions,
    session: SessionOptions,
    version: String,
}

impl WakeModels {
    /// The models of `engines`. openWakeWord: the built-in heads (if this build has them)
    /// and every model of `custom_dirs` (`.tflite` and `.onnx`; a file that cannot be read
    /// or loaded is skipped with a warning). Of two custom files with one name the first is
    /// kept, as the peer keeps the first, with a warning ([`WakeModels::warnings`]); a custom
    /// model of a built-in's name replaces the built-in (the peer's lookup order makes it win
    /// in `detect`; `info` lists the name once), also with a warning. microWakeWord:
    /// [`MicroModels::load`]; with both engines, the `.tflite` files that microWakeWord JSON
    /// files name are left out of the openWakeWord scan.
    ///
    /// # Errors
    /// A one-line message when a directory cannot be read, or [`MicroModels::load`]'s.
    pub fn load(
        custom_dirs: &[std::path::PathBuf],
        engines: Engines,
        options: TriggerOptions,
        session: SessionOptions,
        version: &str,
    ) -> Result<Self, String> {
        let dual = engines.openwakeword && engines.micro;
        let micro = if engines.micro {
            Some(MicroModels::load(custom_dirs, options.refractory_samples(), dual)?)
        } else {
            None
        };
        let mut warnings = micro.as_ref().map(|m| m.warnings().to_vec()).unwrap_or_default();
        let mut models: Vec<Offered> = Vec::new();
        let heads = if engines.openwakeword { &builtin::HEADS[..] } else { &[] };
        for (head, _) in heads {
            let word = builtin::wake_word(head).map_err(|e| e.to_string())?;
            models.push(Offered { name: builtin_name(head), builtin: true, word });
        }
        for dir in custom_dirs.iter().filter(|_| engines.openwakeword) {
            let mut words = Vec::new();
            for path in custom::names::scan_dir(dir).map_err(|e| e.to_string())? {
                if micro.as_ref().is_some_and(|m| m.claims(&path)) {
                    continue;
                }
                // One bad file must not keep the server from starting (a restart loop
                // under systemd): it is skipped with a warning.
                match custom::wake_word_from_file(&path) {
                    Ok(word) => words.push(word),
                    Err(e) => warnings.push(format!("skipping a model that does not load: {e}")),
                }
            }
            for word in words {
                let name = word.name().to_string();
                if models.iter().any(|m| !m.builtin && m.name == name) {
                    warnings.push(format!(
                        "--custom-model-dir {}: skipping a second model named `{name}`",
                        dir.display()
                    ));
                    continue;
                }
                if let Some(i) = models.iter().position(|m| m.builtin && m.name == name) {
                    warnings.push(format!(
                        "--custom-model-dir {}: the model `{name}` replaces the built-in one",
                        dir.display()
                    ));
                    models.remove(i);
                }
                models.push(Offered { name, builtin: false, word });
            }
        }
        if let Some(m) = micro.as_ref().filter(|_| dual) {
            if let Some(clash) = m.models().iter().find(|c| models.iter().any(|o| o.name == c.name))
            {
                return Err(format!(
                    "the name `{}` is offered by both engines: rename the openWakeWord model",
                    clash.name
                ));
            }
        }
        Ok(WakeModels {
            models,
            micro,
            engines,
            warnings,
            options,
            session,
            version: version.into(),
        })
    }

    /// What [`WakeModels::load`] skipped or replaced, one line each (for the server's log).
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    /// The offered openWakeWord models, built-ins first.
    pub fn models(&self) -> &[Offered] {
        &self.models
    }

    /// The microWakeWord engine, when on.
    pub fn micro(&self) -> Option<&MicroModels> {
        self.micro.as_ref()
    }

    /// The engines this server runs.
    pub fn engines(&self) -> Engines {
        self.engines
    }

    /// Every offered name: openWakeWord's, then microWakeWord's.
    pub fn names(&self) -> Vec<&str> {
        let micro = self.micro.iter().flat_map(|m| m.models());
        self.models.iter().map(|m| m.name.as_str()).chain(micro.map(|m| m.name.as_str())).collect()
    }

    /// The model `name` selects: a custom one first, then a built-in by name or alias.
    pub fn resolve(&self, name: &str) -> Option<&Offered> {
        let custom = self.models.iter().find(|m| !m.builtin && m.name == name);
        custom.or_else(|| {
            self.models.iter().find(|m| {
                m.builtin
                    && (m.name == name || builtin_name(name) == m.name || m.word.name() == name)
            })
        })
    }

    /// The `info` event (the peer's fields: one wake program `openwakeword`, every model
    /// with its phrase, attribution, languages and version).
    pub fn info(&self) -> Event {
        let attribution =
            json!({"name": "dscripka", "url": "https://github.com/dscripka/openWakeWord"});
        let mut models: Vec<Value> = self
            .models
            .iter()
            .map(|m| {
                let phrase = phrase(&m.name);
                if m.builtin {
                    json!({"name": m.name, "description": phrase, "phrase": phrase,
                           "attribution": attribution, "installed": true,
                           "languages": ["en"], "version": "v0.1"})
                } else {
                    json!({"name": m.name, "description": phrase, "phrase": phrase,
                           "attribution": {"name": "", "url": ""}, "installed": true,
                           "languages": [], "version": ""})
                }
            })
            .collect();
        models.extend(self.micro.iter().flat_map(MicroModels::info_models));
        // Home Assistant reads the first wake program only: both engines share one.
        let (name, description, attribution) = match (self.engines.openwakeword, &self.micro) {
            (false, Some(_)) => (
                micro::PROGRAM,
                "microWakeWord models run by neon, a Rust inference runtime",
                micro::attribution(),
            ),
            (true, Some(_)) => (
                "openwakeword",
                "openWakeWord and microWakeWord models run by neon, a Rust inference runtime",
                attribution,
            ),
            _ => (
                "openwakeword",
                "openWakeWord models run by neon, a Rust inference runtime",
                attribution,
            ),
        };
        Event::with_data(
            "info",
            json!({
                "asr": [], "tts": [], "handle": [], "intent": [], "mic": [], "snd": [],
                "wake": [{
                    "name": name,
                    "description": description,
                    "attribution": attribution,
                    "installed": true,
                    "version": self.version,
                    "models": models,
                }],
            }),
        )
    }
}

/// `hey_jarvis` → `Hey Jarvis` (the peer's phrase).
fn phrase(name: &str) -> String {
    name.trim()
        .to_lowercase()
        .replace('_', " ")
        .split_whitespace()
        .map(|w| {
            let mut c = w.chars();
            c.next().map(|f| f.to_uppercase().chain(c).collect::<String>()).unwrap_or_default()
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// One active model (its trigger state is in the [`WakeSession`]).
struct Active {
    name: String,
    /// Whether it fired since audio-start.
    fired: bool,
}

/// One client's wake-word state: active models, their detector, the audio pipeline; and,
/// between `transcribe` and `audio-stop`, the utterance for speech recognition.
pub struct ClientSession {
    models: Arc<WakeModels>,
    asr: Option<Arc<AsrModels>>,
    request: Option<AsrRequest>,
    active: Vec<Active>,
    /// The active models' detector and triggers (none while no model is active).
    wake: Option<WakeSession>,
    /// The microWakeWord selection and detector (idle when that engine is off).
    micro: MicroStream,
    converter: ChunkConverter,
    pending: Vec<i16>,
    /// Converted samples scored or pending since audio-start.
    samples: u64,
    /// Converted samples of the chunks before the current one (for the timestamp).
    chunk_start: u64,
}

impl ClientSession {
    /// A session with no active model (the peer's: nothing runs before `detect`), or, when
    /// microWakeWord is the only engine, one that runs `okay_nabu` from `audio-start`
    /// (wyoming-microwakeword's).
    pub fn new(models: Arc<WakeModels>) -> Self {
        Self::with_asr(models, None)
    }

    /// A session that also serves `transcribe` with `asr` ([`super::asr`]).
    pub fn with_asr(models: Arc<WakeModels>, asr: Option<Arc<AsrModels>>) -> Self {
        let micro_default = match models.micro() {
            Some(m) if !models.engines.openwakeword => m.default_model().into_iter().collect(),
            _ => Vec::new(),
        };
        ClientSession {
            micro: MicroStream::new(micro_default),
            models,
            asr,
            request: None,
            active: Vec::new(),
            wake: None,
            converter: ChunkConverter::default(),
            pending: Vec::with_capacity(CHUNK * 4),
            samples: 0,
            chunk_start: 0,
        }
    }

    /// The active model names.
    pub fn active(&self) -> Vec<&str> {
        self.active.iter().map(|a| a.name.as_str()).collect()
    }

    /// Handles one event; appends the events to send back to `out`.
    ///
    /// # Errors
    /// A one-line message for an audio chunk without a valid format, or a detector failure;
    /// the session stays usable.
    pub fn handle(&mut self, event: &Event, out: &mut Vec<Event>) -> Result<(), String> {
        if self.request.is_some() && event.kind.starts_with("audio-") {
            return self.asr_audio(event, out);
        }
        match event.kind.as_str() {
            "describe" => {
                let mut info = self.models.info();
                if let Some(asr) = &self.asr {
                    info.data.insert("asr".into(), asr.info());
                }
                out.push(info);
            }
            "transcribe" => {
                let Some(asr) = &self.asr else {
                    return Err(
                        "no speech-recognition model: start neon serve with --model-dir".into()
                    );
                };
                if let Some(mut earlier) = self.request.take() {
                    earlier.stop(asr, out)?;
                }
                self.request = Some(AsrRequest::begin(asr, &event.data, out)?);
            }
            "detect" => self.detect(event)?,
            "audio-start" => self.start(),
            "audio-chunk" => self.chunk(event, out)?,
            "audio-stop" => {
                self.convert(out, |c, sink| c.finish(sink))?;
                let micro_fired = self.micro.stop();
                if !micro_fired && !self.active.iter().any(|a| a.fired) {
                    out.push(Event::new("not-detected"));
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// Audio of a `transcribe` request ([`super::asr::request`]); `audio-stop` ends it.
    fn asr_audio(&mut self, event: &Event, out: &mut Vec<Event>) -> Result<(), String> {
        let (Some(request), Some(asr)) = (self.request.as_mut(), self.asr.as_ref()) else {
            return Ok(());
        };
        match event.kind.as_str() {
            "audio-chunk" if !request.answered() => {
                request.push(asr, chunk_format(event)?, &event.payload, out)?;
            }
            "audio-stop" => {
                let done = request.stop(asr, out);
                self.request = None;
                done?;
            }
            _ => {}
        }
        Ok(())
    }

    fn detect(&mut self, event: &Event) -> Result<(), String> {
        let mut chosen: Vec<&Offered> = Vec::new();
        let mut micro: Vec<usize> = Vec::new();
        let micro_models = self.models.micro();
        if let Some(Value::Array(names)) = event.data.get("names") {
            for n in names.iter().filter_map(Value::as_str) {
                if let Some(m) = self.models.resolve(n) {
                    if !chosen.iter().any(|c| c.name == m.name) {
                        chosen.push(m);
                    }
                } else if let Some(i) = micro_models.and_then(|m| m.position(n)) {
                    if !micro.contains(&i) {
                        micro.push(i);
                    }
                } else {
                    log(&format!("detect: unknown model name `{}`, skipped", n.escape_debug()));
                }
            }
        }
        if chosen.is_empty() && micro.is_empty() {
            if let Some(m) = self.models.resolve(DEFAULT_MODEL) {
                chosen.push(m);
            } else if let Some(i) = micro_models.and_then(MicroModels::default_model) {
                micro.push(i);
            }
        }
        self.micro.select(micro);
        let names: Vec<&str> = chosen.iter().map(|m| m.name.as_str()).collect();
        if names == self.active() {
            return Ok(());
        }
        let words: Vec<WakeWord> = chosen.iter().map(|m| m.word.clone()).collect();
        self.wake = if words.is_empty() {
            None
        } else {
            let detector = WakeDetector::with_builtin_embedding(words, &self.models.session)
                .map_err(|e| e.to_string())?;
            Some(WakeSession::new(detector, self.models.options.trigger()))
        };
        self.active =
            chosen.iter().map(|m| Active { name: m.name.clone(), fired: false }).collect();
        Ok(())
    }

    fn start(&mut self) {
        for a in &mut self.active {
            a.fired = false;
        }
        if let Some(w) = self.wake.as_mut() {
            w.reset();
        }
        if let Some(m) = self.models.micro() {
            self.micro.start(m);
        }
        self.converter.reset();
        self.pending.clear();
        self.samples = 0;
        self.chunk_start = 0;
    }

    fn chunk(&mut self, event: &Event, out: &mut Vec<Event>) -> Result<(), String> {
        let format = chunk_format(event)?;
        self.chunk_start = self.samples;
        self.convert(out, |c, sink| c.push(format, &event.payload, sink))
    }

    /// Runs `convert` on the converter, scoring its samples piece by piece as they come
    /// (so a large chunk is never held whole). A model disabled on the way is reported
    /// after the whole chunk is scored, so the other models miss none of it.
    fn convert(
        &mut self,
        out: &mut Vec<Event>,
        convert: impl FnOnce(&mut ChunkConverter, &mut Sink) -> Result<(), String>,
    ) -> Result<(), String> {
        let mut converter = std::mem::take(&mut self.converter);
        let mut failures = Vec::new();
        let converted = convert(&mut converter, &mut |piece| {
            self.pending.extend_from_slice(piece);
            self.samples += piece.len() as u64;
            if let Err(e) = self.score(out) {
                failures.push(e);
            }
            if let Some(m) = self.models.micro() {
                let timestamp = self.chunk_start * 1000 / RATE;
                if let Err(e) = self.micro.push(m, piece, timestamp, out) {
                    failures.push(e);
                }
            }
            Ok(())
        });
        self.converter = converter;
        converted?;
        if failures.is_empty() {
            Ok(())
        } else {
            Err(failures.join("; "))
        }
    }

    /// Scores every whole 1280-sample step pending.
    fn score(&mut self, out: &mut Vec<Event>) -> Result<(), String> {
        let whole = self.pending.len() / CHUNK * CHUNK;
        let Some(wake) = self.wake.as_mut() else {
            self.pending.drain(..whole);
            return Ok(());
        };
        let mut broken = Vec::new();
        for step in self.pending[..whole].chunks_exact(CHUNK) {
            wake.push(step).map_err(|e| e.to_string())?;
            // A NaN is never below the threshold: it would fire on every step. As
            // `neon wake` does, a non-finite score is an error, never a detection.
            for u in wake.unusable() {
                broken.push(format!(
                    "model `{}` gave a score of {}: its weights are unusable (a corrupt \
                     or incompatible head?); it is disabled on this connection",
                    self.active[u.model].name, u.score
                ));
            }
            for d in wake.detections() {
                let a = &mut self.active[d.model];
                a.fired = true;
                let timestamp = self.chunk_start * 1000 / RATE;
                out.push(Event::with_data(
                    "detection",
                    json!({"name": a.name, "timestamp": timestamp, "speaker": null}),
                ));
            }
        }
        self.pending.drain(..whole);
        if broken.is_empty() {
            Ok(())
        } else {
            Err(broken.join("; "))
        }
    }
}

/// The format an `audio-chunk` states.
fn chunk_format(event: &Event) -> Result<Format, String> {
    let field = |k: &str| -> Result<u32, String> {
        event
            .data
            .get(k)
            .and_then(Value::as_u64)
            .and_then(|v| u32::try_from(v).ok())
            .ok_or_else(|| format!("audio-chunk without a valid `{k}`"))
    };
    Ok(Format { rate: field("rate")?, width: field("width")?, channels: field("channels")? })
}
