//! Moonshine's `tokenizer.bin` (`Tokenizer::parse`, `parse_moonshine`) and decoding any
//! token ids with what was parsed: never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use neon_models::moonshine::tokenizer::Tokenizer;

fuzz_target!(|data: &[u8]| {
    let _ = Tokenizer::parse_moonshine(data);
    if let Ok(t) = Tokenizer::parse(data) {
        // Ids from the data itself, in and out of range.
        let ids: Vec<u32> = data.chunks(2).map(|c| u32::from(c[0]) * 3 + c.len() as u32).collect();
        let _ = t.decode(&ids);
    }
});
