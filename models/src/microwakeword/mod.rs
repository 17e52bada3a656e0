//! microWakeWord (TFLite Micro streaming wake-word models, as run by pymicro-wakeword and
//! wyoming-microwakeword): so far its audio [`frontend`] and the model JSON ([`config`],
//! feature `std`).

#[cfg(feature = "std")]
pub mod config;
pub mod frontend;
