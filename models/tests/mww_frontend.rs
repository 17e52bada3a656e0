//! microWakeWord frontend (`neon_models::microwakeword::frontend`) against pymicro-features
//! 2.0.2: start-up tables equal those its C code prints, features bit-exact on real clips and
//! extreme signals for any chunking, `reset`, no allocation in `push`.
//!
//! References (models/tests/data/microwakeword/, see frontend_fixtures.md): `frontend_<clip>.safetensors`
//! and `frontend_digests.json` from `tools/microwakeword/frontend_features.py`;
//! `frontend_c_tables.json` printed from the package's own C sources.

#[path = "../../tests/tests/common/mod.rs"]
mod thread_alloc;

use std::path::PathBuf;

use neon_models::microwakeword::frontend::fft::Cpx;
use neon_models::microwakeword::frontend::tables::{Tables, TABLES};
use neon_models::microwakeword::frontend::{noise, pcan, Frontend, FEATURES};
use rand::{rngs::SmallRng, Rng, SeedableRng};
use serde_json::Value;

fn data(rel: &str) -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data")).join(rel)
}

fn samples(clip: &str) -> Vec<i16> {
    let mut r = hound::WavReader::open(data(&format!("wyoming/{clip}.wav"))).unwrap();
    let s = r.spec();
    assert_eq!((s.sample_rate, s.channels, s.bits_per_sample), (16000, 1, 16));
    r.samples::<i16>().map(Result::unwrap).collect()
}

/// Raw features of `audio` pushed in chunks of `sizes` (cycled; 0 is an empty push).
fn features(frontend: &mut Frontend, audio: &[i16], sizes: &mut dyn FnMut() -> usize) -> Vec<u16> {
    let mut out = Vec::new();
    let mut rest = audio;
    while !rest.is_empty() {
        let n = sizes().min(rest.len());
        frontend.push(&rest[..n], |f| out.extend_from_slice(f));
        rest = &rest[n..];
    }
    out
}

fn whole(audio: &[i16]) -> Vec<u16> {
    features(&mut Frontend::new(), audio, &mut || usize::MAX)
}

fn fnv1a64(values: &[u16]) -> u64 {
    values
        .iter()
        .flat_map(|v| v.to_le_bytes())
        .fold(0xcbf2_9ce4_8422_2325, |h, b| (h ^ b as u64).wrapping_mul(0x0000_0100_0000_01b3))
}

const CLIPS: [&str; 6] =
    ["alexa", "hey_jarvis", "hey_mycroft", "hey_rhasspy", "okay_nabu", "snowboy"];

#[test]
fn features_match_pymicro_features_on_every_clip() {
    let digests: Value = serde_json::from_slice(
        &std::fs::read(data("microwakeword/frontend_digests.json")).unwrap(),
    )
    .unwrap();
    for clip in CLIPS {
        let audio = samples(clip);
        let got = whole(&audio);
        let frames = (audio.len() - 480) / 160 + 1;
        assert_eq!(got.len(), frames * FEATURES, "{clip}: frames");
        let want = &digests[clip];
        assert_eq!(want["frames"].as_u64(), Some(frames as u64), "{clip}: reference frames");
        assert_eq!(format!("{:016x}", fnv1a64(&got)), want["fnv1a64"].as_str().unwrap(), "{clip}");
    }
    for clip in ["alexa", "okay_nabu"] {
        let bytes =
            std::fs::read(data(&format!("microwakeword/frontend_{clip}.safetensors"))).unwrap();
        let st = safetensors::SafeTensors::deserialize(&bytes).unwrap();
        let t = st.tensor("features").unwrap();
        assert_eq!(t.dtype(), safetensors::Dtype::U16);
        let want: Vec<u16> =
            t.data().chunks_exact(2).map(|b| u16::from_le_bytes([b[0], b[1]])).collect();
        let got = whole(&samples(clip));
        let first_diff = got.iter().zip(&want).position(|(a, b)| a != b);
        assert_eq!(got.len(), want.len(), "{clip}");
        assert_eq!(
            first_diff,
            None,
            "{clip}: first difference at frame {:?}",
            first_diff.map(|i| i / 40)
        );
    }
}

/// Extreme signals (the formulas of `synthetic()` in `tools/microwakeword/frontend_features.py`):
/// they reach the wrapping and saturating paths that speech does not.
fn synthetic() -> Vec<(&'static str, Vec<i16>)> {
    let mut state = 39u64;
    let (mut noise, mut quiet) = (Vec::new(), Vec::new());
    for _ in 0..48_000 {
        state =
            state.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        noise.push((state >> 48) as u16 as i16);
        quiet.push(((state >> 33) % 5) as i16 - 2);
    }
    let square = (0..16_000).map(|i| if (i / 7) % 2 == 1 { i16::MIN } else { i16::MAX }).collect();
    let impulses = (0..16_000)
        .map(|i| {
            if i % 480 == 240 {
                i16::MIN
            } else if i % 333 == 0 {
                i16::MAX
            } else {
                0
            }
        })
        .collect();
    vec![
        ("full_scale_noise", noise),
        ("quiet_noise", quiet),
        ("min_value", vec![i16::MIN; 16_000]),
        ("square_min_max", square),
        ("impulses", impulses),
    ]
}

#[test]
fn features_match_pymicro_features_on_extreme_signals() {
    let digests: Value = serde_json::from_slice(
        &std::fs::read(data("microwakeword/frontend_digests.json")).unwrap(),
    )
    .unwrap();
    for (name, audio) in synthetic() {
        let got = whole(&audio);
        let want = &digests[format!("synthetic/{name}")];
        assert_eq!(want["frames"].as_u64(), Some((got.len() / FEATURES) as u64), "{name}: frames");
        assert_eq!(format!("{:016x}", fnv1a64(&got)), want["fnv1a64"].as_str().unwrap(), "{name}");
    }
}

#[test]
fn any_chunking_gives_the_same_features() {
    let audio = samples("hey_jarvis");
    let reference = whole(&audio);
    for size in [1usize, 159, 160, 161, 479, 480, 481, 4000] {
        let got = features(&mut Frontend::new(), &audio, &mut || size);
        assert!(got == reference, "chunks of {size}");
    }
    let mut rng = SmallRng::seed_from_u64(39);
    for round in 0..4 {
        let got = features(&mut Frontend::new(), &audio, &mut || rng.gen_range(0..=4000));
        assert!(got == reference, "random chunks, round {round}");
    }
}

#[test]
fn reset_equals_a_fresh_frontend() {
    let (a, b) = (samples("alexa"), samples("snowboy"));
    let mut f = Frontend::new();
    f.push(&a[..12_345], |_| {});
    assert_ne!(f.buffered(), 0);
    f.reset();
    assert_eq!(f.buffered(), 0);
    assert!(features(&mut f, &b, &mut || 1000) == whole(&b));
}

#[test]
fn push_allocates_nothing() {
    let audio = samples("okay_nabu");
    let mut f = Frontend::new();
    let mut frames = 0usize;
    let mut sum = 0u64;
    thread_alloc::allocation_free(|| {
        for chunk in audio.chunks(1234) {
            f.push(chunk, |x| {
                frames += 1;
                sum += x.iter().map(|&v| v as u64).sum::<u64>();
            });
        }
    });
    assert_eq!(frames, (audio.len() - 480) / 160 + 1);
    assert_ne!(sum, 0);
}

fn ints(v: &Value) -> Vec<i64> {
    v.as_array().unwrap().iter().map(|x| x.as_i64().unwrap()).collect()
}

fn flat(c: &[Cpx]) -> Vec<i64> {
    c.iter().flat_map(|c| [c.r as i64, c.i as i64]).collect()
}

/// Every table as the C driver's JSON names them.
fn named(t: &Tables) -> Vec<(&'static str, Vec<i64>)> {
    let fb = &t.filterbank;
    let n = fb.weights_len;
    let v = |s: &[i16]| s.iter().map(|&x| x as i64).collect::<Vec<_>>();
    let u = |s: &[u16]| s.iter().map(|&x| x as i64).collect::<Vec<_>>();
    vec![
        ("window", v(&t.window)),
        ("fft_twiddles", flat(&t.twiddles)),
        ("fft_super_twiddles", flat(&t.super_twiddles)),
        ("start_index", vec![fb.start_index as i64]),
        ("end_index", vec![fb.end_index as i64]),
        ("channel_frequency_starts", u(&fb.frequency_starts)),
        ("channel_weight_starts", u(&fb.weight_starts)),
        ("channel_widths", u(&fb.widths)),
        ("weights", v(&fb.weights[..n])),
        ("unweights", v(&fb.unweights[..n])),
        ("noise", noise::coefficients().iter().map(|&x| x as i64).collect()),
        ("pcan_gain_lut", v(&t.gain_lut)),
        ("log_lut", u(&t.log_lut)),
    ]
}

#[test]
fn tables_equal_the_c_code_s_and_their_margins() {
    let c: Value = serde_json::from_slice(
        &std::fs::read(data("microwakeword/frontend_c_tables.json")).unwrap(),
    )
    .unwrap();
    let mut wrong = Vec::new();
    for (name, ours) in named(&TABLES) {
        let theirs = match &c[name] {
            Value::Array(_) => ints(&c[name]),
            v => vec![v.as_i64().unwrap()],
        };
        assert_eq!(ours.len(), theirs.len(), "table {name}: length");
        for (i, (a, b)) in ours.iter().zip(&theirs).enumerate() {
            if a != b {
                wrong.push(format!("{name}[{i}]: {a}, C {b}"));
            }
        }
    }
    assert!(wrong.is_empty(), "entries that differ from the C code's:\n{}", wrong.join("\n"));
    assert!(TABLES.filterbank.weights[TABLES.filterbank.weights_len..].iter().all(|&w| w == 0));
    assert_eq!(c["snr_shift"].as_i64(), Some(pcan::SNR_SHIFT as i64));

    // Margin: every libm result moved by 1 or 2 ulps. The entries that change are the ones a
    // libm off by that much would get wrong. At 1 ulp: two window coefficients (`cosf`) and,
    // through `log1pf`, the filterbank's end and a few weights (211 and 293 are the two that
    // glibc 2.36's `log1pf` already moves, see `GLIBC_LOG1PF`). The values above are the
    // C code's on glibc 2.36; this list shows which of them another libm could change.
    let base = named(&TABLES);
    let mut sensitive = Vec::new();
    for ulps in [-2, -1, 1, 2] {
        let moved = named(&Tables::build(ulps));
        for ((name, a), (_, b)) in base.iter().zip(&moved) {
            assert_eq!(a.len(), b.len(), "{name}: length changes at {ulps:+} ulps");
            for (i, (x, y)) in a.iter().zip(b).enumerate() {
                if x != y {
                    println!("libm {ulps:+} ulps: {name}[{i}]: {x} -> {y}");
                    if ulps.abs() == 1 {
                        sensitive.push(format!("{name}[{i}]"));
                    }
                }
            }
        }
    }
    let expected = [
        "window[462]",
        "window[17]",
        "end_index[0]",
        "weights[211]",
        "weights[293]",
        "weights[297]",
        "unweights[211]",
        "unweights[293]",
        "unweights[297]",
        "unweights[314]",
    ];
    assert_eq!(sensitive, expected, "entries within 1 ulp of a rounding boundary");
}
