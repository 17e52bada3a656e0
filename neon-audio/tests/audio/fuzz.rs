//! Fuzz: no input panics.

use neon_audio::resample;

use super::errors::{data_start, one_line_naming, read_bytes, valid_wav_bytes};
use super::spec;

/// xorshift64*: a small deterministic generator (no dependency).
pub(crate) struct Rng(pub(crate) u64);

impl Rng {
    pub(crate) fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    pub(crate) fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// Reads `bytes`; on success checks the result's invariants, on error its message.
fn read_any(bytes: &[u8]) {
    match read_bytes("fuzz", bytes) {
        Ok(a) => {
            assert_eq!(a.len(), resample::output_len(a.info.frames as usize, a.info.sample_rate));
            assert!(a.samples.iter().all(|x| (-1.0..1.0).contains(x)));
        }
        Err(e) => {
            one_line_naming(&e, "fuzz");
        }
    }
}

#[test]
fn fuzz_random_bytes_and_headers() {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    for case in 0..3000 {
        let len = rng.below(200);
        let mut bytes: Vec<u8> = (0..len).map(|_| rng.next() as u8).collect();
        // Half the cases get a valid signature so the header parser is exercised too.
        if case % 2 == 0 && len >= 12 {
            bytes[..4].copy_from_slice(b"RIFF");
            bytes[8..12].copy_from_slice(b"WAVE");
        }
        if case % 4 == 0 && len >= 24 {
            bytes[12..16].copy_from_slice(b"fmt ");
            bytes[16..20].copy_from_slice(&[16, 0, 0, 0]);
        }
        read_any(&bytes);
    }
}

#[test]
fn fuzz_mutated_and_truncated_valid_files() {
    let mut rng = Rng(0x2545_F491_4F6C_DD1D);
    let specs = [
        spec(44_100, 1, 16, false),
        spec(16_000, 2, 8, false),
        spec(48_000, 3, 24, false),
        spec(22_050, 1, 32, true),
        spec(8_000, 1, 32, false),
    ];
    for case in 0..2000 {
        let mut bytes = valid_wav_bytes(1 + rng.below(300), specs[case % specs.len()]);
        let start = data_start(&bytes);
        // Flip 1 to 4 bytes, mostly in the header.
        for _ in 0..1 + rng.below(4) {
            let at = if rng.below(4) == 0 { rng.below(bytes.len()) } else { rng.below(start) };
            bytes[at] = rng.next() as u8;
        }
        // And cut it short every other time.
        if case % 2 == 1 {
            bytes.truncate(rng.below(bytes.len() + 1));
        }
        read_any(&bytes);
    }
}
