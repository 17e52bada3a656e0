//! Silero VAD allocates nothing per push once constructed, on every backend: pushes that
//! complete no window, one, several, or end mid-window, `finish` with a partial window,
//! and `reset`; nor does the segment rule fed those probabilities.

mod common;

use neon_models::vad::detector::{Vad, VadModel};
use neon_models::vad::segments::{SegmentConfig, SpeechSegmenter};
use neon_runtime::Backend;

fn vad_push_allocates_nothing<B: Backend>() {
    let mut vad = Vad::new(VadModel::builtin().unwrap(), B::KIND).unwrap();
    let mut segmenter = SpeechSegmenter::new(&SegmentConfig::default()).unwrap();
    // A tone burst between quiet stretches (the segment rule sees both states).
    let audio: Vec<f32> = (0..40_000)
        .map(|i| if (8000..24_000).contains(&i) { ((i as f32) * 0.07).sin() * 0.3 } else { 0.0 })
        .collect();
    let mut windows = 0;
    let mut pos = 0;
    for size in [512, 0, 1, 700, 4000, 2560, 12_000, 333, 19_894] {
        let chunk = &audio[pos..pos + size];
        pos += size;
        let (r, n) = common::count_allocations(|| {
            vad.push(chunk, |p| {
                windows += 1;
                for s in segmenter.push(p) {
                    assert!(s.end > s.start);
                }
            })
        });
        r.unwrap();
        assert_eq!(n, 0, "{} push of {size} samples allocated", B::NAME);
    }
    assert_eq!(pos, audio.len());
    let (r, n) = common::count_allocations(|| vad.finish(|_| windows += 1));
    r.unwrap();
    assert_eq!(n, 0, "finish allocated");
    assert_eq!(windows, audio.len().div_ceil(512));
    let ((), n) = common::count_allocations(|| vad.reset());
    assert_eq!(n, 0, "reset allocated");
}

neon_runtime::backend_tests!(vad_push_allocates_nothing);
