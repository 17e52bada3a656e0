//! NEON and portable agree on the real model (aarch64 with feature `neon`; under qemu in
//! CI): the encoder output of a short utterance and the logits of the first decoder steps,
//! with the default (widening) int8 path.
//!
//! Tolerance 1e-4 on both: the backends compute the same f32 formulas with different
//! summation orders (NEON: 4- and 16-lane partial sums; portable: its own blocking), so they
//! differ by f32 rounding only, as each differs from ONNX Runtime (encoder up to 1.5e-4 on
//! 10 s, logits up to 2.5e-4; see moonshine_golden) and from the f64 reference (logits up to
//! 1.1e-5); on this 0.5 s utterance the differences are smaller.

#![cfg(all(target_arch = "aarch64", feature = "neon"))]

mod common;

use common::moonshine::*;
use neon_runtime::{Neon, Portable};

#[test]
fn neon_matches_portable_on_encoder_and_decoder_steps() {
    let goldens = goldens();
    let beckett = goldens.iter().find(|g| g.name == "beckett").expect("beckett golden");
    let audio = &beckett.audio[..8_000];
    let mut neon = transcriber::<Neon>();
    let mut portable = transcriber::<Portable>();
    neon.encode(audio).unwrap();
    portable.encode(audio).unwrap();
    let d = max_diff(neon.encoder_output(), portable.encoder_output());
    println!("encoder: max |neon - portable| = {d:.2e}");
    assert!(d <= 1e-4, "encoder differs by {d}");
    for (s, &t) in beckett.tokens[..3].iter().enumerate() {
        let a = neon.decode_step(t).unwrap().to_vec();
        let b = portable.decode_step(t).unwrap();
        let d = max_diff(&a, b);
        println!("step {s}: max |neon - portable| = {d:.2e}");
        assert!(d <= 1e-4, "step {s} logits differ by {d}");
    }
}
