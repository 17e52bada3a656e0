//! What the fuzz targets share: the check of a user's wake-word head file, the same for each
//! of its formats (`onnx_head`, `tflite_head`).

use neon_models::error::WeightsSource;
use neon_models::openwakeword::custom::{parse, Format, HeadGraphExt};
use neon_models::FastBackend;

/// Any bytes `data`, read as a head file of `format` named `name`, give a head that
/// validates, builds and scores (96-feature frames of 0.5), or a one-line error, never a
/// panic. A build error is allowed (the graph parsed but is not a head we run); building the
/// plans of a built head must not fail.
pub fn check_head(data: &[u8], format: Format, name: &'static str) {
    let source = WeightsSource::Embedded(name);
    match parse(data, format, &source) {
        Ok(graph) => {
            if let Ok(head) = graph.build(&source) {
                let mut plans = head.plans().expect("plans of a built head");
                let x = vec![0.5f32; head.frames() * 96];
                let _ = plans.score::<FastBackend>(&x);
            }
        }
        Err(e) => assert!(!e.to_string().contains('\n'), "multi-line error: {e}"),
    }
}
