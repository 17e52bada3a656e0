//! microWakeWord (TFLite Micro streaming wake-word models, as run by pymicro-wakeword and
//! wyoming-microwakeword): so far its audio [`frontend`] and its model files: the embedded
//! official models ([`builtin`]), the model JSON ([`config`], feature `std`) and finding
//! models on disk ([`load`], feature `std`).

pub mod builtin;
#[cfg(feature = "std")]
pub mod config;
pub mod frontend;
#[cfg(feature = "std")]
pub mod load;
