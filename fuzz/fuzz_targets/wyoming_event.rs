//! Wyoming events (`neon serve`'s reader) and their audio: any bytes give events, a clean
//! end or a one-line error, never a panic; every audio chunk's payload in the format its
//! data states is converted or refused with a one-line error.
#![no_main]

use libfuzzer_sys::fuzz_target;
use neon_wyoming::audio::{ChunkConverter, Format};
use neon_wyoming::event::{read_event, write_event, ReadError};

fuzz_target!(|data: &[u8]| {
    let mut reader = std::io::BufReader::new(data);
    let mut converter = ChunkConverter::default();
    // Converted samples are counted, not kept.
    let mut count = 0usize;
    let mut sink = |piece: &[i16]| {
        count += piece.len();
        Ok(())
    };
    for _ in 0..64 {
        match read_event(&mut reader) {
            Ok(Some(event)) => {
                // What was read writes back and reads again (numbers may print differently).
                let mut bytes = Vec::new();
                write_event(&mut bytes, &event).unwrap();
                let again = read_event(&mut std::io::BufReader::new(&bytes[..])).unwrap().unwrap();
                assert_eq!((&again.kind, &again.payload), (&event.kind, &event.payload));
                let field = |k: &str| event.data.get(k).and_then(|v| v.as_u64()).unwrap_or(0);
                let format = Format {
                    rate: field("rate").min(u64::from(u32::MAX)) as u32,
                    width: field("width").min(8) as u32,
                    channels: field("channels").min(64) as u32,
                };
                if let Err(m) = converter.push(format, &event.payload, &mut sink) {
                    assert!(!m.contains('\n'));
                }
            }
            Ok(None) => break,
            Err(ReadError::Malformed(m)) => {
                assert!(!m.contains('\n'), "multi-line error: {m}");
                break;
            }
            Err(ReadError::Io(_)) => break,
        }
    }
    let _ = converter.finish(&mut sink);
});
