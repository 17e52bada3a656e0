//! Users' ONNX wake-word heads (`openwakeword::custom`): any bytes give a head that
//! validates, builds and scores, or a one-line error, never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use neon_models::error::WeightsSource;
use neon_models::openwakeword::custom::{parse, Format, HeadGraphExt};
use neon_models::FastBackend;

fuzz_target!(|data: &[u8]| {
    let source = WeightsSource::Embedded("fuzz.onnx");
    match parse(data, Format::Onnx, &source) {
        Ok(graph) => {
            if let Ok(head) = graph.build(&source) {
                let mut plans = head.plans().expect("plans of a built head");
                let x = vec![0.5f32; head.frames() * 96];
                let _ = plans.score::<FastBackend>(&x);
            }
        }
        Err(e) => assert!(!e.to_string().contains('\n'), "multi-line error: {e}"),
    }
});
