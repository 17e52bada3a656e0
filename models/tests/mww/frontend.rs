//! microWakeWord frontend (`neon_models::microwakeword::frontend`) against pymicro-features
//! 2.0.2: start-up tables equal those its C code builds, features bit-exact on every golden
//! clip and on extreme signals, for any chunking, `reset`, no allocation in `push`.
//!
//! References:
//! - `models/microwakeword/goldens/<clip>.safetensors` (tools/microwakeword/goldens.py): per
//!   clip `features` [F, 40] U16 of the clip followed by 1 s of zeros, and `features_mix`, the
//!   same pushed in `mix_sizes` (I32) chunks; the clip's WAV is named in the metadata;
//! - `models/microwakeword/frontend_tables.json` (tools/microwakeword/dump_tables.sh): the
//!   tables as the package's own C code builds them;
//! - `models/tests/data/microwakeword/frontend_digests.json`
//!   (tools/microwakeword/frontend_features.py): digests of the features of extreme synthetic
//!   signals.

use crate::{clip_goldens, repo, thread_alloc};

use std::path::Path;

use neon_models::microwakeword::frontend::fft::{Cpx, FFT_SIZE, HALF_FFT};
use neon_models::microwakeword::frontend::tables::{Tables, TABLES};
use neon_models::microwakeword::frontend::window::{STEP, WINDOW};
use neon_models::microwakeword::frontend::{noise, pcan, Frontend, FEATURES, SAMPLE_RATE};
use rand::{rngs::SmallRng, Rng, SeedableRng};
use safetensors::{Dtype, SafeTensors};
use serde_json::Value;

fn json(rel: &str) -> Value {
    serde_json::from_slice(&std::fs::read(repo(rel)).unwrap()).unwrap()
}

/// Zero samples after each golden clip (goldens.py `PAD`; its metadata `padding` says it).
const PAD: usize = 16_000;

/// One golden clip: its padded samples and the features pymicro-features computed.
struct Golden {
    name: String,
    audio: Vec<i16>,
    features: Vec<u16>,
    mix_sizes: Vec<usize>,
    features_mix: Vec<u16>,
}

/// The little-endian values of tensor `name`, checked to be `dtype` of `shape` (`None`: any
/// dimension).
fn tensor<T, const N: usize>(
    st: &SafeTensors,
    name: &str,
    dtype: Dtype,
    shape: &[Option<usize>],
    from: fn([u8; N]) -> T,
) -> Vec<T> {
    let t = st.tensor(name).unwrap_or_else(|e| panic!("{name}: {e}"));
    assert_eq!(t.dtype(), dtype, "{name}: dtype");
    assert_eq!(t.shape().len(), shape.len(), "{name}: rank");
    for (i, (&got, want)) in t.shape().iter().zip(shape).enumerate() {
        assert!(want.is_none_or(|w| w == got), "{name}: dimension {i} is {got}");
    }
    t.data().chunks_exact(N).map(|b| from(b.try_into().unwrap())).collect()
}

/// Reads a golden file and the WAV its metadata names, padded as goldens.py pads it.
fn golden(path: &Path) -> Golden {
    let bytes = std::fs::read(path).unwrap();
    let meta = SafeTensors::read_metadata(&bytes).unwrap().1;
    let meta = meta.metadata().as_ref().expect("golden metadata");
    assert_eq!(meta["padding"], format!("{PAD} zero samples after the clip (none before)"));
    let mut r = hound::WavReader::open(repo(&meta["clip"])).unwrap();
    let s = r.spec();
    assert_eq!((s.sample_rate, s.channels, s.bits_per_sample), (SAMPLE_RATE, 1, 16));
    let mut audio: Vec<i16> = r.samples::<i16>().map(Result::unwrap).collect();
    assert_eq!(audio.len().to_string(), meta["clip_samples"], "{}: samples", meta["clip"]);
    audio.resize(audio.len() + PAD, 0);
    let st = SafeTensors::deserialize(&bytes).unwrap();
    let frames = Some((audio.len() - WINDOW) / STEP + 1);
    let rows = [frames, Some(FEATURES)];
    Golden {
        name: path.file_stem().unwrap().to_string_lossy().into_owned(),
        audio,
        features: tensor(&st, "features", Dtype::U16, &rows, u16::from_le_bytes),
        mix_sizes: tensor(&st, "mix_sizes", Dtype::I32, &[None], i32::from_le_bytes)
            .into_iter()
            .map(|n| usize::try_from(n).unwrap())
            .collect(),
        features_mix: tensor(&st, "features_mix", Dtype::U16, &rows, u16::from_le_bytes),
    }
}

/// Every clip golden ([`clip_goldens`]), by name.
fn goldens() -> Vec<Golden> {
    clip_goldens().iter().map(|p| golden(p)).collect()
}

fn one_golden(name: &str) -> Golden {
    golden(&repo(&format!("models/microwakeword/goldens/{name}.safetensors")))
}

/// Raw features of `audio` pushed in chunks of `sizes` (called per chunk; 0 is an empty push).
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

/// Panics naming the first differing frame and channel.
fn assert_same(got: &[u16], want: &[u16], what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: values");
    if let Some(i) = got.iter().zip(want).position(|(a, b)| a != b) {
        let (f, c) = (i / FEATURES, i % FEATURES);
        panic!("{what}: first difference at frame {f} channel {c}: {} vs {}", got[i], want[i]);
    }
}

fn fnv1a64(values: &[u16]) -> u64 {
    values
        .iter()
        .flat_map(|v| v.to_le_bytes())
        .fold(0xcbf2_9ce4_8422_2325, |h, b| (h ^ b as u64).wrapping_mul(0x0000_0100_0000_01b3))
}

#[test]
fn features_match_the_goldens_bit_for_bit() {
    let all = goldens();
    assert_eq!(all.len(), 12, "clip goldens");
    for g in &all {
        assert_same(&whole(&g.audio), &g.features, &g.name);
        assert_eq!(g.mix_sizes.iter().sum::<usize>(), g.audio.len(), "{}: mix_sizes", g.name);
        let mut sizes = g.mix_sizes.iter().copied();
        let got = features(&mut Frontend::new(), &g.audio, &mut || sizes.next().unwrap());
        assert_same(&got, &g.features_mix, &format!("{} pushed in mix_sizes", g.name));
    }
}

/// Extreme signals (the formulas of `synthetic()` in `tools/microwakeword/frontend_features.py`):
/// -32768 and full-scale waves, which no golden clip holds (their samples lie in
/// -32764..=32764), reach the window's wrapping negation of the peak.
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
    let digests = json("models/tests/data/microwakeword/frontend_digests.json");
    let signals = synthetic();
    assert_eq!(digests.as_object().unwrap().len(), signals.len(), "digests");
    for (name, audio) in signals {
        let got = whole(&audio);
        let want = &digests[format!("synthetic/{name}")];
        assert_eq!(want["frames"].as_u64(), Some((got.len() / FEATURES) as u64), "{name}: frames");
        assert_eq!(format!("{:016x}", fnv1a64(&got)), want["fnv1a64"].as_str().unwrap(), "{name}");
    }
}

#[test]
fn any_chunking_gives_the_same_features() {
    let g = one_golden("hey_jarvis");
    for size in [1usize, 159, 160, 161, 479, 480, 481, 4000] {
        let got = features(&mut Frontend::new(), &g.audio, &mut || size);
        assert_same(&got, &g.features, &format!("chunks of {size}"));
    }
    let mut rng = SmallRng::seed_from_u64(39);
    for round in 0..4 {
        let got = features(&mut Frontend::new(), &g.audio, &mut || rng.gen_range(0..=4000));
        assert_same(&got, &g.features, &format!("random chunks, round {round}"));
    }
}

#[test]
fn reset_equals_a_fresh_frontend() {
    let (a, b) = (one_golden("alexa"), one_golden("oww_snowboy"));
    let mut f = Frontend::new();
    f.push(&a.audio[..12_345], |_| {});
    assert_ne!(f.buffered(), 0);
    f.reset();
    assert_eq!(f.buffered(), 0);
    assert_same(&features(&mut f, &b.audio, &mut || 1000), &b.features, "after reset");
}

#[test]
fn push_allocates_nothing() {
    let audio = one_golden("okay_nabu").audio;
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
    assert_eq!(frames, (audio.len() - WINDOW) / STEP + 1);
    assert_ne!(sum, 0);
}

/// A table of `frontend_tables.json` flattened (pairs of twiddles become `r, i`); `None` where
/// the C code never writes the slot (`null`: PCAN's unused fourth entries).
fn c_table(c: &Value, name: &str) -> Vec<Option<i64>> {
    fn flatten(v: &Value, out: &mut Vec<Option<i64>>) {
        match v {
            Value::Array(items) => items.iter().for_each(|x| flatten(x, out)),
            Value::Null => out.push(None),
            x => out.push(Some(x.as_i64().unwrap())),
        }
    }
    let v = c.get(name).unwrap_or_else(|| panic!("frontend_tables.json has no {name}"));
    let mut out = Vec::new();
    flatten(v, &mut out);
    out
}

fn flat(c: &[Cpx]) -> Vec<i64> {
    c.iter().flat_map(|c| [c.r as i64, c.i as i64]).collect()
}

/// Every table, under the name `frontend_tables.json` gives it.
fn named(t: &Tables) -> Vec<(&'static str, Vec<i64>)> {
    let fb = &t.filterbank;
    let n = fb.weights_len;
    let v = |s: &[i16]| s.iter().map(|&x| x as i64).collect::<Vec<_>>();
    let u = |s: &[u16]| s.iter().map(|&x| x as i64).collect::<Vec<_>>();
    let [even, odd, min_remaining] = noise::coefficients().map(|x| vec![x as i64]);
    vec![
        ("window_coefficients", v(&t.window)),
        ("kiss_twiddles", flat(&t.twiddles)),
        ("kiss_super_twiddles", flat(&t.super_twiddles)),
        ("start_index", vec![fb.start_index as i64]),
        ("end_index", vec![fb.end_index as i64]),
        ("channel_frequency_starts", u(&fb.frequency_starts)),
        ("channel_weight_starts", u(&fb.weight_starts)),
        ("channel_widths", u(&fb.widths)),
        ("weights", v(&fb.weights[..n])),
        ("unweights", v(&fb.unweights[..n])),
        ("noise_even_smoothing", even),
        ("noise_odd_smoothing", odd),
        ("noise_min_signal_remaining", min_remaining),
        ("pcan_gain_lut", v(&t.gain_lut)),
        ("log_lut", u(&t.log_lut)),
    ]
}

#[test]
fn tables_equal_the_c_code_s_and_their_margins() {
    let c = json("models/microwakeword/frontend_tables.json");
    let sizes = [
        ("sample_rate", SAMPLE_RATE as usize),
        ("window_size", WINDOW),
        ("window_step", STEP),
        ("fft_size", FFT_SIZE),
        ("kiss_nfft", HALF_FFT),
        ("num_channels", FEATURES),
        ("noise_smoothing_bits", noise::SMOOTHING_BITS as usize),
        ("input_correction_bits", pcan::CORRECTION_BITS as usize),
        ("pcan_snr_shift", pcan::SNR_SHIFT as usize),
    ];
    for (name, ours) in sizes {
        assert_eq!(c[name].as_u64(), Some(ours as u64), "{name}");
    }
    let mut wrong = Vec::new();
    for (name, ours) in named(&TABLES) {
        let theirs = c_table(&c, name);
        assert_eq!(ours.len(), theirs.len(), "table {name}: length");
        for (i, (&a, &b)) in ours.iter().zip(&theirs).enumerate() {
            // A slot the C code never writes is never read; the builder leaves it 0.
            if b.unwrap_or(0) != a {
                wrong.push(format!("{name}[{i}]: {a}, C {b:?}"));
            }
        }
    }
    assert!(wrong.is_empty(), "entries that differ from the C code's:\n{}", wrong.join("\n"));
    let fb = &TABLES.filterbank;
    assert!(fb.weights[fb.weights_len..].iter().all(|&w| w == 0));
    assert_eq!(c_table(&c, "pcan_gain_lut").iter().filter(|x| x.is_none()).count(), 30);

    // Margin: every libm result moved by 1 or 2 ulps. The entries that change are the ones a
    // libm off by that much would get wrong (tools/microwakeword/FACTS.md section 8 measures
    // the C code's own margins). The values above are the C code's on glibc 2.36; this list
    // shows which of them another libm could change.
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
        "window_coefficients[462]",
        "window_coefficients[17]",
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
