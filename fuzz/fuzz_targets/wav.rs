//! WAV decoding (`Audio::from_reader`: header, formats, channels, resampling to 16 kHz):
//! any bytes give audio or an error, never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use neon_audio::Audio;

fuzz_target!(|data: &[u8]| {
    if let Ok(audio) = Audio::from_reader("fuzz", std::io::Cursor::new(data.to_vec())) {
        let _ = audio.to_i16();
    }
});
