//! Raw s16le input (`RawPcmReader`, what `neon wake -` reads): any bytes, read in pieces
//! of any size (from the first byte), give samples or an error, never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use neon_audio::RawPcmReader;

fuzz_target!(|data: &[u8]| {
    let Some((&first, rest)) = data.split_first() else { return };
    let mut reader = RawPcmReader::new("fuzz", rest);
    let mut buf = vec![0i16; usize::from(first) + 1];
    let mut total = 0;
    while let Ok(n) = reader.read_samples(&mut buf) {
        if n == 0 {
            break;
        }
        total += n;
    }
    assert!(total <= rest.len() / 2);
});
