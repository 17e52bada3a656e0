//! The wake-word detector allocates nothing per push once constructed, for any chunk size
//! (including pushes that complete several chunks, none, or more than the 8-chunk maximum),
//! and on `reset`; nor does the mel frontend alone.

mod common;

use neon_models::error::WeightsSource;
use neon_models::openwakeword::builtin;
use neon_models::openwakeword::detector::WakeDetectorOn;
use neon_models::openwakeword::mel::{MelFrontend, FRONTEND};
use neon_models::weights::TensorFile;
use neon_runtime::Backend;

fn wake_detector_push_allocates_nothing<B: Backend>() {
    let words = builtin::HEADS.iter().map(|(n, _)| builtin::wake_word(n).unwrap()).collect();
    let embedding =
        TensorFile::parse(builtin::EMBEDDING, WeightsSource::Embedded("embedding")).unwrap();
    let mut d = WakeDetectorOn::<B>::with_embedding(&embedding, words).unwrap();
    let audio: Vec<i16> = (0..40_000).map(|i| ((i * 7919) % 2001) as i16 - 1000).collect();
    let mut pos = 0;
    for size in [1280, 0, 1, 700, 4000, 2560, 12_000, 333] {
        let chunk = &audio[pos..pos + size];
        pos += size;
        let (r, n) = common::count_allocations(|| d.push(chunk).map(<[f32]>::len));
        assert_eq!(r.unwrap(), 5);
        assert_eq!(n, 0, "{} push of {size} samples allocated", B::NAME);
    }
    let ((), n) = common::count_allocations(|| d.reset());
    assert_eq!(n, 0, "reset allocated");
}

fn mel_frontend_allocates_nothing<B: Backend>() {
    // 1760 samples at int16 scale (one chunk with its context): 8 frames.
    let x: Vec<f32> = (0..1760).map(|i| ((i * 7919) % 16001) as f32 - 8000.0).collect();
    let mut out = vec![0.0; MelFrontend::output_len(1760)];
    assert_eq!(common::allocation_free(|| FRONTEND.run::<B>(&x, &mut out)), Ok(8));
}

neon_runtime::backend_tests!(wake_detector_push_allocates_nothing, mel_frontend_allocates_nothing);
