//! neon-wyoming: the Wyoming protocol server of `neon serve` for Home Assistant.
//! Event framing, audio conversion, the wake-word and speech-recognition handlers and the
//! server loop; depends on neon-models (the models) and neon-audio (resampling).
//!
//! - [`event`]: reading and writing events (JSON header, data, payload), with size limits.
//! - [`audio`]: `audio-chunk` payloads of any rate, width and channel count to 16 kHz mono.
//! - [`wake`]: the wake-word service (a drop-in for wyoming-openwakeword) and one client's
//!   state ([`wake::ClientSession`]), which hands `transcribe` requests to [`asr`].
//! - [`micro`]: its microWakeWord engine (`--engine micro`: a drop-in for
//!   wyoming-microwakeword).
//! - [`asr`]: speech recognition with Moonshine over the speech Silero VAD finds, streamed.
//! - [`server`]: stdio, TCP and Unix transports, a thread per client, timeouts and limits.

mod accept;
pub mod asr;
pub mod audio;
mod deadline;
pub mod event;
pub mod micro;
pub mod server;
pub mod wake;
