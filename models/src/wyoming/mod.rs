//! The Wyoming protocol of Home Assistant (feature `std`): event framing ([`event`]), audio
//! conversion ([`audio`]), the wake-word service ([`wake`]) and speech recognition ([`asr`]) of
//! `neon serve`, a drop-in for
//! wyoming-openwakeword.

pub mod asr;
pub mod audio;
pub mod event;
pub mod wake;
