//! microWakeWord (TFLite Micro streaming wake-word models, as run by pymicro-wakeword and
//! wyoming-microwakeword): so far its audio [`frontend`].

pub mod frontend;
