//! The five official heads (converted weights) on the official embeddings (goldens) give the
//! official per-call scores, 1280-sample calls: heads, hey_jarvis's second stage and the
//! warm-up rule checked against openwakeword 0.6.0 + TFLite.

mod common;

use common::*;
use neon_models::openwakeword::detector::STAGE2_THRESHOLD;
use neon_models::openwakeword::head::HeadNet;
use neon_models::openwakeword::names::{STAGE1, STAGE2};
use neon_runtime::Backend;

fn heads_match_the_official_scores<B: Backend>() {
    let init = tensor(&oww_file("goldens/init.safetensors"), "init_features").0;
    for head in HEADS {
        let file = oww_file(&format!("{head}.safetensors"));
        let net = HeadNet::load(&file, &STAGE1).unwrap();
        let stage2 = file.contains(STAGE2.dense[0]).then(|| HeadNet::load(&file, &STAGE2).unwrap());
        for clip in CLIPS {
            let g = oww_file(&format!("goldens/{clip}.safetensors"));
            let features = tensor(&g, "features").0;
            let want = tensor(&g, &format!("scores.{head}")).0;
            let mut all = init.clone();
            all.extend_from_slice(&features);
            let rows = all.len() / 96;
            assert_eq!(rows - 41, want.len(), "one embedding per 1280-sample call");
            let mut worst = 0.0f32;
            for (call, &w) in want.iter().enumerate() {
                let end = 41 + call + 1;
                let x = &all[(end - 16) * 96..end * 96];
                let p1 = net.score::<B>(x).unwrap();
                let mut got = match &stage2 {
                    Some(s2) if p1 >= STAGE2_THRESHOLD => s2.score::<B>(x).unwrap(),
                    _ => p1,
                };
                if call < 5 {
                    got = 0.0;
                }
                worst = worst.max((got - w).abs());
            }
            // The 1e-5, except hey_mycroft (1e-4, see `score_tolerance`): its scores
            // are sensitive to f32 rounding (TFLite vs f64: 5.9e-5). Measured: 4.1e-6 with
            // the plain-Rust GEMV, 3.0e-5 with the AVX-512 one (FMA) on hey_mycroft's clip;
            // every other head stays below 1e-5 on every path.
            assert!(worst <= score_tolerance(head), "{head} on {clip}: max |diff| {worst:e}");
            println!("{} {head} on {clip}: max |score diff| {worst:.2e}", B::NAME);
        }
    }
}

neon_runtime::backend_tests!(heads_match_the_official_scores);
