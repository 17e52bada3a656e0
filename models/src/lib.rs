//! Model components built on neon: openWakeWord (wake-word detection), Moonshine base-en
//! (speech recognition) and the sanoTTS decoder (hidden states to waveform, [`sanotts`]).
//!
//! The crate is `no_std` at its core (plans, frontends, streaming state, weights borrowed from
//! `'static` data) so the wake-word detector builds for bare-metal targets; feature `alloc`
//! adds heap-owned weights and feature `std` (default) adds file loading, WAV input and the
//! `neon` command-line program. Moonshine ([`moonshine`]) and sanoTTS ([`sanotts`]) need
//! feature `alloc` for their weights and buffers (their plans are `no_std`; sanoTTS's
//! synthetic voice needs feature `synthetic`, part of `std`). Feature `neon` (default)
//! selects the NEON backend on aarch64.
//! `models/bare-metal/` is such a bare-metal build: openWakeWord on `aarch64-unknown-none`
//! with weights packed at build time into `static` arrays.
#![no_std]

#[cfg(feature = "alloc")]
extern crate alloc;
#[cfg(any(feature = "std", feature = "synthetic", test))]
extern crate std;

/// Audio input: the `neon-audio` crate (WAV, FLAC and Ogg/Vorbis decoding, streaming
/// resampling to 16 kHz mono, raw PCM).
#[cfg(feature = "std")]
pub use neon_audio as audio;
pub mod moonshine;
pub mod openwakeword;
pub mod plans;
pub mod sanotts;
pub mod vad;

#[cfg(feature = "std")]
pub mod endpoint;
pub mod error;
#[cfg(feature = "std")]
pub mod exec_plan;
#[cfg(feature = "std")]
pub mod files;
#[cfg(feature = "std")]
pub mod session;
#[cfg(feature = "alloc")]
pub mod weights;
#[cfg(feature = "std")]
pub mod wyoming;

pub use error::Error;
#[cfg(feature = "alloc")]
mod workspace;

/// The fastest backend this build can name as a type ([`neon_runtime::FastBackend`]): NEON
/// on aarch64 with feature `neon`, an x86 level when the build targets AVX2 + FMA or
/// AVX-512F, else the portable kernels. A default x86-64 build targets neither, so the `neon`
/// program picks its backend at run time instead ([`neon_runtime::BackendKind::best`], run
/// with [`neon_runtime::BackendKind::with`]).
pub use neon_runtime::FastBackend;
