//! neon-models: the models of neon as `neon_plan!` plans (openWakeWord, Moonshine base-en,
//! Silero VAD, the sanoTTS decoder), their weight loading and folding, frontends (among them
//! microWakeWord's integer audio frontend, [`microwakeword::frontend`]), streaming state and
//! component selection; depends on neon-runtime and neon-macros only (neon-import
//! with feature `import`).
//!
//! The crate is `no_std` at its core (plans, frontends, streaming state, weights borrowed from
//! `'static` data) so the wake-word detector builds for bare-metal targets. Features:
//! - `alloc`: heap-owned weights (packed at load time) and safetensors parsing; Moonshine
//!   ([`moonshine`]), Silero VAD ([`vad`]) and sanoTTS ([`sanotts`]) need it for their
//!   weights and buffers (their plans are `no_std`).
//! - `std` (default): loading from files (weights, tokenizer, session options), `std::io`
//!   errors, the embedded speech-embedding network, worker teams; no application dependency.
//! - `import` (default): users' `.onnx` / `.tflite` wake-word models through neon-import.
//! - `synthetic` (part of `std`): sanoTTS's synthetic voice.
//! - `builtin-heads` (default): the five official openWakeWord heads embedded.
//! - `builtin-micro` (default): the four official microWakeWord models embedded
//!   ([`microwakeword::builtin`]; no `alloc` needed).
//! - `neon` (default): the NEON backend on aarch64.
//!
//! The `neon` program (neon-cli), the Wyoming server (neon-wyoming), audio decoding
//! (neon-audio) and the C API (neon-capi) are built on this crate. `models/bare-metal/` is a
//! bare-metal build: openWakeWord on `aarch64-unknown-none` with weights packed at build time
//! into `static` arrays.
#![no_std]

#[cfg(feature = "alloc")]
extern crate alloc;
#[cfg(any(feature = "std", feature = "synthetic", test))]
extern crate std;

pub mod microwakeword;
pub mod moonshine;
pub mod openwakeword;
pub mod plans;
pub mod sanotts;
pub mod vad;

pub mod error;
#[cfg(feature = "std")]
pub mod exec_plan;
#[cfg(feature = "std")]
pub mod files;
#[cfg(feature = "std")]
pub mod session;
#[cfg(feature = "alloc")]
pub mod weights;

pub use error::Error;

/// The fastest backend this build can name as a type ([`neon_runtime::FastBackend`]): NEON
/// on aarch64 with feature `neon`, an x86 level when the build targets AVX2 + FMA or
/// AVX-512F, else the portable kernels. A default x86-64 build targets neither, so the `neon`
/// program picks its backend at run time instead ([`neon_runtime::BackendKind::best`], run
/// with [`neon_runtime::BackendKind::with`]).
pub use neon_runtime::FastBackend;
