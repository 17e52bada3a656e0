//! neon-capi: the C API of neon: wake-word detection (openWakeWord or microWakeWord), Moonshine
//! speech recognition and Silero VAD voice activity behind opaque handles, for programs in C (or
//! anything with a C FFI). Depends on neon-models and neon-runtime only (no audio decoding).
//!
//! The header is `include/neon.h`, generated from these sources by cbindgen
//! (`tests/header.rs` checks that the committed header is current; `NEON_UPDATE_HEADER=1
//! cargo test -p neon-capi --test header` rewrites it).
//!
//! # Rules
//! - Every function returns a [`NeonStatus`] (except the few that return a string or a
//!   count, documented as such). Nothing panics across the boundary: a panic inside is caught
//!   and reported as [`NeonStatus::Panic`].
//! - The library never prints. The panic hook being process-wide, its first call installs a
//!   hook that wraps the one installed before (the host's, or Rust's default): silent for
//!   panics inside the library's calls (their message goes to the status and
//!   [`neon_last_error`]), the previous hook's behaviour for every other panic. A hook the
//!   host sets later replaces it; the library's panics then reach that hook.
//! - Pointers are checked: NULL is [`NeonStatus::NullPointer`], a pointer not aligned for its
//!   type is [`NeonStatus::MisalignedPointer`]. An output buffer may be NULL only when its
//!   capacity is 0 (to ask for the size needed).
//! - Handles are created by `neon_wake_new` (or `neon_wake_new_shared`,
//!   `neon_wake_new_micro`) / `neon_transcriber_open` / `neon_vad_new` and
//!   released by `neon_wake_free` / `neon_transcriber_close` / `neon_vad_free` (NULL is a
//!   no-op there). Live handles are kept in a registry; a handle that is not in it (already
//!   freed, never created, or a handle of another kind) is [`NeonStatus::UnknownHandle`],
//!   never a crash. The check is by address: when a later `neon_*_new` happens to return the
//!   address of a freed handle, the old pointer refers to the new handle and cannot be told
//!   apart.
//! - Threads: a handle may be used from any thread, one call at a time. A call that finds
//!   its handle inside a call on another thread returns [`NeonStatus::Busy`] at once and
//!   does nothing (a per-handle busy flag; no waiting, no panic). Freeing a handle while
//!   another thread is inside a call on it is safe: the handle leaves the registry at once
//!   (later calls are `UnknownHandle`), the call in flight completes, and the memory is
//!   released when it returns. Separate handles are independent.
//! - Strings are UTF-8 and NUL-terminated. Strings returned by the library are owned by it:
//!   a handle's strings stay valid until the next call on that handle (model names until the
//!   handle is freed), [`neon_last_error`]'s until the next failing call on the same thread.
//! - Errors: the message of the last failed call on a handle is `neon_wake_error` /
//!   `neon_transcriber_error` / `neon_vad_error`; every failed call, with or without a
//!   handle, also sets the calling thread's [`neon_last_error`]. Successful calls leave both
//!   untouched.
//!
//! # Modules
//! One per handle kind (`wake`, with its microWakeWord engine in `wake_micro`, `transcriber`,
//! `vad`), over the shared machinery: `status`
//! (status codes, failures, the last error, caught panics), `args` (pointer and length
//! checks, caller-owned output buffers, strings, session options) and `handle` (the registry
//! of live handles). Everything C sees is re-exported here.

// In the header's order (cbindgen reads the modules in this order).
mod args;
mod handle;
mod status;
mod wake;
mod wake_micro;

mod transcriber;
mod vad;

pub use status::{neon_last_error, neon_status_string, NeonStatus};
pub use transcriber::{
    neon_transcribe_f32, neon_transcribe_i16, neon_transcriber_close, neon_transcriber_error,
    neon_transcriber_open, neon_transcriber_set_threads, neon_transcriber_text,
    neon_transcriber_threads, NeonTranscriber,
};
pub use vad::{
    neon_vad_config_default, neon_vad_error, neon_vad_finish, neon_vad_free, neon_vad_new,
    neon_vad_probabilities, neon_vad_push_f32, neon_vad_push_i16, neon_vad_reset,
    neon_vad_segments, neon_vad_speaking, NeonVad, NeonVadConfig, NeonVadSegment,
    NEON_VAD_WINDOW_SAMPLES,
};
pub use wake::{
    neon_wake_detections, neon_wake_error, neon_wake_free, neon_wake_model_count,
    neon_wake_model_name, neon_wake_models_free, neon_wake_models_open, neon_wake_new,
    neon_wake_new_shared, neon_wake_push, neon_wake_reset, neon_wake_scores, NeonDetection,
    NeonWake, NeonWakeModels,
};
pub use wake_micro::neon_wake_new_micro;

/// Sample rate of every input (Hz).
const RATE: u64 = 16_000;

/// An int16 sample as f32 in `[-1, 1)`: divided by 32768, the convention of the models'
/// f32 inputs (Moonshine, Silero VAD) and of neon-audio's decoders.
fn i16_to_f32(v: i16) -> f32 {
    f32::from(v) / 32768.0
}
