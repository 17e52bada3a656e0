//! microWakeWord (TFLite Micro streaming wake-word models, as run by pymicro-wakeword and
//! wyoming-microwakeword): so far its audio [`frontend`], the detector's arithmetic around a
//! model step ([`detector`]: input quantisation [`quantize`], steps of N frames [`feeder`],
//! the windowed probability [`window`]) and its model files: the embedded official models
//! ([`builtin`]), the model JSON ([`config`], feature `std`) and finding models on disk
//! ([`load`], feature `std`); a loaded model ([`word`]) and several models on one stream
//! ([`session`]: [`session::MicroDetector`]), feature `import`.

pub mod builtin;
#[cfg(feature = "std")]
pub mod config;
pub mod detector;
pub mod feeder;
pub mod frontend;
#[cfg(feature = "std")]
pub mod load;
pub mod quantize;
#[cfg(feature = "import")]
pub mod session;
pub mod window;
#[cfg(feature = "import")]
pub mod word;
