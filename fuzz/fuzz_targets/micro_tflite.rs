//! microWakeWord's int8 streaming `.tflite` models (`neon_import::tflite::parse_stream`):
//! any bytes give a stream graph whose variables hold their whole initial values, or a
//! one-line error, never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use neon_import::tflite::{parse_stream, StreamOp};
use neon_import::Limits;

/// microWakeWord's features: 40 per frame, a few frames per step.
const LIMITS: Limits =
    Limits { frame_width: 40, max_frames: 16, max_features: 1 << 20, max_layers: 512 };

fuzz_target!(|data: &[u8]| match parse_stream(data, &LIMITS) {
    Ok(g) => {
        for v in &g.vars {
            let len: usize = v.shape.iter().product();
            assert_eq!(v.init.len(), len * v.dtype.size(), "initial bytes of {}", v.shared_name);
        }
        for op in &g.ops {
            if let StreamOp::ReadVariable { var, .. } | StreamOp::AssignVariable { var, .. } = op {
                assert!(*var < g.vars.len());
            }
        }
    }
    Err(e) => assert!(!e.to_string().contains('\n'), "multi-line error: {e}"),
});
