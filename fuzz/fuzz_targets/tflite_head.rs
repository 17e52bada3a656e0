//! Users' TFLite wake-word heads (`openwakeword::custom`): any bytes give a head that
//! validates, builds and scores, or a one-line error, never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use neon_models::openwakeword::custom::Format;

fuzz_target!(|data: &[u8]| neon_fuzz::check_head(data, Format::Tflite, "fuzz.tflite"));
