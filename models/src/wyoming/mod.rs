//! The Wyoming protocol of Home Assistant (feature `std`): event framing ([`event`]), audio
//! conversion ([`audio`]) and the wake-word service ([`wake`]) of `neon serve`, a drop-in for
//! wyoming-openwakeword.

pub mod audio;
pub mod event;
pub mod wake;
