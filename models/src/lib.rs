//! Model components built on neon (OpenWakeWord, Moonshine, sanoTTS).
//!
//! Not implemented yet: a placeholder in the workspace layout until the model work lands.
#![no_std]
