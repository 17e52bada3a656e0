//! Audio decoding (`AudioStream`: WAV, FLAC, Ogg/Vorbis, down-mixing, streaming resampling to
//! 16 kHz), over a seekable `Cursor` and over a non-seekable reader: any bytes give samples or
//! an error, never a panic, and a stream that ends has the length it promises.
#![no_main]

use std::io::{Cursor, Read};

use libfuzzer_sys::fuzz_target;
use neon_audio::{resample, AudioStream};

/// A reader without `Seek`, returning at most 613 bytes per call.
struct Pipe(Cursor<Vec<u8>>);

impl Read for Pipe {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let k = buf.len().min(613);
        self.0.read(&mut buf[..k])
    }
}

fn drain(stream: Result<AudioStream, neon_audio::AudioError>) {
    let Ok(mut s) = stream else { return };
    let mut out = Vec::new();
    loop {
        out.clear();
        match s.read(&mut out) {
            Ok(0) => {
                let want = resample::output_len(s.frames_decoded() as usize, s.info().sample_rate);
                assert_eq!(s.samples_out(), want as u64);
                break;
            }
            Ok(_) => assert!(out.iter().all(|x| (-1.0..1.0).contains(x))),
            Err(e) => {
                assert!(!e.to_string().contains('\n'));
                break;
            }
        }
    }
}

fuzz_target!(|data: &[u8]| {
    drain(AudioStream::from_seekable("fuzz", Cursor::new(data.to_vec())));
    drain(AudioStream::from_read("fuzz", Pipe(Cursor::new(data.to_vec()))));
});
