//! Wake-word heads loaded from safetensors: scores against an f64 reference, and clear errors
//! for malformed files.

use std::collections::HashMap;

use neon_models::error::{Error, WeightsReason, WeightsSource};
use neon_models::openwakeword::head::{HeadNet, HEAD_INPUT};
use neon_models::openwakeword::names::{STAGE1, STAGE2};
use neon_models::weights::TensorFile;
use neon_runtime::Portable;
use safetensors::tensor::TensorView;
use safetensors::Dtype;

/// Deterministic pseudo-random values in [-scale, scale).
fn values(n: usize, seed: u64, scale: f32) -> Vec<f32> {
    let mut s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            ((s >> 40) as f32 / (1u64 << 24) as f32 * 2.0 - 1.0) * scale
        })
        .collect()
}

struct Tensors(Vec<(String, Vec<usize>, Vec<f32>)>);

impl Tensors {
    /// A head with hidden width `h` (`norm`: LayerNorm head), names prefixed by `prefix`.
    fn head(h: usize, norm: bool, prefix: &str, seed: u64) -> Self {
        let mut t = Vec::new();
        let dims = [(HEAD_INPUT, h), (h, h), (h, 1)];
        for (i, (inp, out)) in dims.into_iter().enumerate() {
            let s = seed + 10 * i as u64;
            let scale = 1.0 / (inp as f32).sqrt();
            t.push((
                format!("{prefix}dense{i}.weight"),
                vec![out, inp],
                values(out * inp, s, scale),
            ));
            t.push((format!("{prefix}dense{i}.bias"), vec![out], values(out, s + 1, 0.1)));
            if norm && i < 2 {
                let g: Vec<f32> = values(h, s + 2, 0.5).iter().map(|v| 1.0 + v).collect();
                t.push((format!("{prefix}norm{i}.weight"), vec![h], g));
                t.push((format!("{prefix}norm{i}.bias"), vec![h], values(h, s + 3, 0.2)));
            }
        }
        Self(t)
    }

    fn get(&self, name: &str) -> &[f32] {
        &self.0.iter().find(|t| t.0 == name).unwrap().2
    }

    fn bytes(&self) -> Vec<u8> {
        let raw: Vec<(String, Vec<usize>, Vec<u8>)> = self
            .0
            .iter()
            .map(|(n, s, v)| {
                (n.clone(), s.clone(), v.iter().flat_map(|x| x.to_le_bytes()).collect())
            })
            .collect();
        let views: Vec<(String, TensorView<'_>)> = raw
            .iter()
            .map(|(n, s, b)| (n.clone(), TensorView::new(Dtype::F32, s.clone(), b).unwrap()))
            .collect();
        let meta: HashMap<String, String> = [("converter".into(), "test".into())].into();
        safetensors::serialize(views, Some(meta)).unwrap()
    }
}

/// Plain f64 loops: dense, optional LayerNorm (biased variance, eps 1e-5), ReLU; sigmoid.
fn reference(t: &Tensors, h: usize, norm: bool, prefix: &str, x: &[f32]) -> f64 {
    let mut a: Vec<f64> = x.iter().map(|&v| v as f64).collect();
    for (i, out) in [h, h, 1].into_iter().enumerate() {
        let w = t.get(&format!("{prefix}dense{i}.weight"));
        let b = t.get(&format!("{prefix}dense{i}.bias"));
        let inp = a.len();
        let mut y: Vec<f64> = (0..out)
            .map(|o| b[o] as f64 + (0..inp).map(|k| w[o * inp + k] as f64 * a[k]).sum::<f64>())
            .collect();
        if i < 2 {
            if norm {
                let g = t.get(&format!("{prefix}norm{i}.weight"));
                let beta = t.get(&format!("{prefix}norm{i}.bias"));
                let mean = y.iter().sum::<f64>() / out as f64;
                let var = y.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / out as f64;
                for (j, v) in y.iter_mut().enumerate() {
                    *v = (*v - mean) / (var + 1e-5).sqrt() * g[j] as f64 + beta[j] as f64;
                }
            }
            y.iter_mut().for_each(|v| *v = v.max(0.0));
        }
        a = y;
    }
    1.0 / (1.0 + (-a[0]).exp())
}

fn source() -> WeightsSource {
    WeightsSource::Embedded("test head")
}

#[test]
fn every_head_architecture_matches_f64() {
    for (h, norm) in [(128, false), (128, true), (64, true), (32, true)] {
        let t = Tensors::head(h, norm, "", h as u64 + norm as u64);
        let bytes = t.bytes();
        let file = TensorFile::parse(&bytes, source()).unwrap();
        let head = HeadNet::load(&file, &STAGE1).unwrap();
        assert_eq!(head.hidden(), h);
        for seed in 0..4 {
            let x = values(HEAD_INPUT, 100 + seed, 2.0);
            let got = head.score::<Portable>(&x).unwrap() as f64;
            let want = reference(&t, h, norm, "", &x);
            // f32 accumulation over 1536 terms (~1e-6 relative per output) and the sigmoid's
            // documented 1.5 eps: 1e-5 absolute on a score in (0, 1) is ~100x the margin.
            assert!((got - want).abs() < 1e-5, "h {h} norm {norm}: {got} vs {want}");
            #[cfg(target_arch = "aarch64")]
            {
                let neon = head.score::<neon_runtime::Neon>(&x).unwrap() as f64;
                assert!((neon - want).abs() < 1e-5, "neon h {h}: {neon} vs {want}");
            }
        }
    }
}

#[test]
fn second_stage_names_load() {
    let mut t = Tensors::head(128, true, "", 1);
    t.0.extend(Tensors::head(64, true, "stage2.", 2).0);
    let bytes = t.bytes();
    let file = TensorFile::parse(&bytes, source()).unwrap();
    let stage2 = HeadNet::load(&file, &STAGE2).unwrap();
    assert_eq!(stage2.hidden(), 64);
    let x = values(HEAD_INPUT, 7, 2.0);
    let got = stage2.score::<Portable>(&x).unwrap() as f64;
    assert!((got - reference(&t, 64, true, "stage2.", &x)).abs() < 1e-5);
    assert_eq!(file.metadata("converter"), Some("test"));
}

fn load_err(t: &Tensors) -> Error {
    let bytes = t.bytes();
    let file = TensorFile::parse(&bytes, source()).unwrap();
    match HeadNet::load(&file, &STAGE1) {
        Err(e) => e,
        Ok(_) => panic!("loaded a malformed head"),
    }
}

#[test]
fn malformed_heads_are_clear_errors() {
    // A missing tensor.
    let mut t = Tensors::head(64, true, "", 3);
    t.0.retain(|x| x.0 != "norm1.bias");
    let e = load_err(&t);
    assert!(matches!(
        e,
        Error::Weights { tensor: "norm1.bias", reason: WeightsReason::Missing, .. }
    ));
    assert_eq!(e.to_string(), "embedded weights `test head`: tensor `norm1.bias`: tensor missing");

    // A wrong shape.
    let mut t = Tensors::head(64, true, "", 3);
    let d1 = t.0.iter_mut().find(|x| x.0 == "dense1.weight").unwrap();
    d1.1 = vec![32, 128];
    let e = load_err(&t);
    assert!(matches!(
        e,
        Error::Weights { tensor: "dense1.weight", reason: WeightsReason::Shape { .. }, .. }
    ));
    assert!(e.to_string().ends_with("shape is not [64, 64]"), "{e}");

    // A NaN.
    let mut t = Tensors::head(32, true, "", 3);
    t.0.iter_mut().find(|x| x.0 == "dense2.weight").unwrap().2[5] = f32::NAN;
    assert!(matches!(load_err(&t), Error::Weights { reason: WeightsReason::NotFinite, .. }));

    // An unsupported width.
    let t = Tensors::head(48, true, "", 3);
    assert!(matches!(load_err(&t), Error::Weights { reason: WeightsReason::Architecture, .. }));

    // A ReLU head must be 128 wide.
    let t = Tensors::head(64, false, "", 3);
    assert!(matches!(load_err(&t), Error::Weights { reason: WeightsReason::Architecture, .. }));
}

#[test]
fn corrupt_files_are_errors_not_panics() {
    let bytes = Tensors::head(32, true, "", 5).bytes();
    assert!(TensorFile::parse(b"not a safetensors file", source()).is_err());
    assert!(TensorFile::parse(&[], source()).is_err());
    // Every truncation and a few corruptions of a valid file.
    for cut in (0..bytes.len()).step_by(97) {
        if let Ok(f) = TensorFile::parse(&bytes[..cut], source()) {
            let _ = HeadNet::load(&f, &STAGE1);
        }
    }
    for i in (0..bytes.len().min(400)).step_by(3) {
        let mut b = bytes.clone();
        b[i] ^= 0x5A;
        if let Ok(f) = TensorFile::parse(&b, source()) {
            let _ = HeadNet::load(&f, &STAGE1);
        }
    }
}

#[test]
fn wrong_input_length_is_an_error() {
    let bytes = Tensors::head(32, true, "", 9).bytes();
    let file = TensorFile::parse(&bytes, source()).unwrap();
    let head = HeadNet::load(&file, &STAGE1).unwrap();
    assert!(matches!(head.score::<Portable>(&[0.0; 100]), Err(Error::Runtime(_))));
    // Still usable afterwards.
    assert!(head.score::<Portable>(&[0.0; HEAD_INPUT]).is_ok());
}
