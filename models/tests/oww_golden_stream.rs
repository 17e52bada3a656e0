//! End to end against openwakeword 0.6.0 + TFLite (goldens): our clips, padded by 1 s of
//! zeros as `predict_clip` pads them, streamed through `WakeDetector` in 1280-, 640-, 1000-
//! and 4000-sample pushes and the seeded random mix of sizes, from the goldens' seeded
//! initial state: every embedding and every per-call score of all five heads.

mod common;

use common::*;
use neon_audio::Audio;
use neon_models::openwakeword::builtin;
use neon_models::openwakeword::detector::WakeDetectorOn;
use neon_runtime::{Backend, Portable};

fn detector<B: Backend>() -> WakeDetectorOn<B> {
    let words = HEADS.iter().map(|h| builtin::wake_word(h).unwrap()).collect();
    let file = oww_file("embedding.safetensors");
    let mut d = WakeDetectorOn::<B>::with_embedding(&file, words).unwrap();
    let init = tensor(&oww_file("goldens/init.safetensors"), "init_features").0;
    d.stream_mut().set_initial_features(&init).unwrap();
    d
}

fn padded(clip: &str) -> Vec<i16> {
    let audio = Audio::open(oww_path(&format!("clips/{clip}.wav"))).unwrap();
    let mut data = vec![0i16; 16000];
    data.extend(audio.to_i16());
    data.extend(std::iter::repeat_n(0, 16000));
    data
}

/// Pushes as `predict_clip` feeds fixed sizes: `data[i..i + size]` for `i` in
/// `(0..len - size).step_by(size)`.
fn fixed(len: usize, size: usize) -> Vec<usize> {
    (0..len - size).step_by(size).map(|_| size).collect()
}

struct Worst {
    embedding: f32,
    score: f32,
}

fn run<B: Backend>(
    d: &mut WakeDetectorOn<B>,
    data: &[i16],
    sizes: &[usize],
    g: &TensorFileRef,
    key: &str,
    w: &mut Worst,
) {
    d.reset();
    let wants: Vec<Vec<f32>> = HEADS.iter().map(|h| tensor(g, &format!("{key}.{h}")).0).collect();
    let (features, _) = tensor(g, "features");
    let mut pos = 0;
    for (call, &n) in sizes.iter().enumerate() {
        let scores = d.push(&data[pos..pos + n]).unwrap().to_vec();
        pos += n;
        for (h, want) in HEADS.iter().zip(&wants) {
            let got = scores[HEADS.iter().position(|x| x == h).unwrap()];
            let diff = (got - want[call]).abs();
            w.score = w.score.max(diff);
            assert!(
                diff <= score_tolerance(h),
                "{} {key} call {call} {h}: {got} vs {}",
                B::NAME,
                want[call]
            );
        }
        if key == "scores" {
            // 1280-sample pushes: one embedding each, the golden's row `call`.
            let row = &features[call * 96..(call + 1) * 96];
            for (a, b) in d.stream().last_embedding().iter().zip(row) {
                w.embedding = w.embedding.max((a - b).abs());
            }
        }
    }
}

type TensorFileRef = neon_models::weights::TensorFile<'static>;

fn check<B: Backend>(clips: &[&str], all_chunkings: bool) {
    let mut d = detector::<B>();
    for &clip in clips {
        let g = oww_file(&format!("goldens/{clip}.safetensors"));
        let data = padded(clip);
        let mut w = Worst { embedding: 0.0, score: 0.0 };
        for (key, sizes) in [
            ("scores", fixed(data.len(), 1280)),
            ("scores_640", fixed(data.len(), 640)),
            ("scores_1000", fixed(data.len(), 1000)),
            ("scores_4000", fixed(data.len(), 4000)),
        ] {
            if key == "scores" || all_chunkings {
                run(&mut d, &data, &sizes, &g, key, &mut w);
            }
        }
        let mix: Vec<usize> = tensor_i32(&format!("goldens/{clip}.safetensors"), "mix_sizes")
            .iter()
            .map(|&v| v as usize)
            .collect();
        run(&mut d, &data, &mix, &g, "scores_mix", &mut w);
        println!(
            "{} {clip}: embeddings max |diff| {:.2e}, scores {:.2e}",
            B::NAME,
            w.embedding,
            w.score
        );
        // Embeddings (values up to ~60): 1.5e-4, not the 1e-4. Measured: 1.18e-4 at
        // worst (hey_jarvis; 17 of ~16,000 values above 8e-5); 1.26e-4 on an x86-64 host with
        // the AVX-512 kernels (fused multiply-adds round differently). The input already differs:
        // our mel agrees with the official model's to 2.5e-4 dB in loud bands but only to
        // 9.2e-4 dB in bands 60-80 dB below the frame's loudest (f32 FFT vs the model's f32
        // convolution DFT, each ~4e-4 dB from exact there; see oww_golden_mel.rs), i.e. up
        // to 9e-5 in the CNN's input features, and 20 convs pass that on. The official
        // runtime itself differs from an exact f64 evaluation of the same CNN by 3.3e-5
        // (converter, random inputs).
        assert!(w.embedding <= 1.5e-4, "{} {clip}: embeddings {:e}", B::NAME, w.embedding);
    }
}

#[test]
fn streams_match_openwakeword() {
    // Under qemu (aarch64) the portable backend is ~4x slower than NEON: NEON runs two clips,
    // every chunking; the host runs everything.
    #[cfg(not(target_arch = "aarch64"))]
    check::<Portable>(&CLIPS, true);
    #[cfg(target_arch = "aarch64")]
    check::<neon_runtime::Neon>(&["hey_jarvis", "weather"], true);
}

/// NEON and portable agree on real windows (aarch64): the first 40 pushes of a clip.
#[cfg(target_arch = "aarch64")]
#[test]
fn neon_and_portable_agree() {
    let data = padded("hey_jarvis");
    let mut n = detector::<neon_runtime::Neon>();
    let mut p = detector::<Portable>();
    let mut worst = (0.0f32, 0.0f32);
    for chunk in data.chunks_exact(1280).take(40) {
        let sn = n.push(chunk).unwrap().to_vec();
        let sp = p.push(chunk).unwrap().to_vec();
        for (a, b) in sn.iter().zip(&sp) {
            worst.1 = worst.1.max((a - b).abs());
        }
        for (a, b) in n.stream().last_embedding().iter().zip(p.stream().last_embedding()) {
            worst.0 = worst.0.max((a - b).abs());
        }
    }
    println!("neon vs portable: embeddings {:.2e}, scores {:.2e}", worst.0, worst.1);
    // Both backends are within 1.5e-4 / 1e-5 of the official runtime; FMA vs separate
    // multiply-add rounding is smaller still (measured below 5e-5 on embeddings).
    assert!(worst.0 <= 1.5e-4 && worst.1 <= 1e-5, "{worst:?}");
}
