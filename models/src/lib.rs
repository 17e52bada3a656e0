//! Model components built on neon: openWakeWord (wake-word detection) and Moonshine base-en
//! (speech recognition); sanoTTS to come.
//!
//! The crate is `no_std` at its core (plans, frontends, streaming state, weights borrowed from
//! `'static` data) so the wake-word detector builds for bare-metal targets; feature `alloc`
//! adds heap-owned weights and feature `std` (default) adds file loading, WAV input and the
//! `neon` command-line program. Moonshine ([`moonshine`]) needs feature `alloc` for its
//! weights and buffers (its plans are `no_std`). Feature `neon` (default) selects the NEON
//! backend on aarch64.
//! `models/bare-metal/` is such a bare-metal build: openWakeWord on `aarch64-unknown-none`
//! with weights packed at build time into `static` arrays.
#![no_std]

#[cfg(feature = "alloc")]
extern crate alloc;
#[cfg(any(feature = "std", test))]
extern crate std;

#[cfg(feature = "std")]
pub mod audio;
pub mod moonshine;
pub mod openwakeword;

pub mod error;
#[cfg(feature = "alloc")]
pub mod weights;

pub use error::Error;
#[cfg(feature = "alloc")]
mod workspace;

/// The backend the command line and the default constructors use
/// ([`neon_runtime::FastBackend`]): NEON on aarch64 with feature `neon`, an x86 level when the
/// build targets AVX2 + FMA or AVX-512F, else the portable kernels.
pub use neon_runtime::FastBackend;
