//! The decoder against an independent f64 implementation: plain loops over the dequantised
//! weights read straight from the safetensors file (none of the runtime's kernels, packing or
//! plans), fed the same encoder output. Also: a transcriber that decoded one utterance and is
//! then given another of a different length (new memory length, cache reset by `encode`)
//! produces bit-identical logits to a fresh one.
//!
//! Tolerance 1e-4 on the logits. Each logit is a 416-term dot product of the final
//! LayerNorm output (|h| up to ~20) with an embedding row (|E| <= 0.3); with f32 sums the
//! rounding error grows like `sqrt(terms) * eps * sum |h E|` (~1.2e-4 for `sum |h E|` ~ 100),
//! and the eight layers before it contribute less (their outputs are renormalised). Measured:
//! at most 1.1e-5.

mod common;

use common::moonshine::*;
use neon_models::moonshine::VOCAB;
use neon_runtime::Portable;

const D: usize = 416;
const HEADS: usize = 8;
const HEAD_DIM: usize = 52;
const ROTARY: usize = 32;
const HIDDEN: usize = 1664;

/// A per-tensor int8 matrix as stored: `[rows, cols]`, `W = q * scale + offset`.
struct Q {
    q: Vec<i8>,
    scale: f64,
    offset: f64,
    cols: usize,
}

impl Q {
    fn w(&self, r: usize, c: usize) -> f64 {
        f64::from(self.q[r * self.cols + c]) * self.scale + self.offset
    }
    /// `x W` for `W` stored `[in, out]`.
    fn apply(&self, x: &[f64]) -> Vec<f64> {
        let mut y = vec![0.0; self.cols];
        for (i, &xi) in x.iter().enumerate() {
            for (o, yo) in y.iter_mut().enumerate() {
                *yo += xi * self.w(i, o);
            }
        }
        y
    }
}

struct Raw(safetensors::SafeTensors<'static>);

impl Raw {
    fn f32(&self, name: &str) -> Vec<f64> {
        let v = self.0.tensor(name).unwrap();
        v.data()
            .chunks_exact(4)
            .map(|b| f64::from(f32::from_le_bytes([b[0], b[1], b[2], b[3]])))
            .collect()
    }
    fn q(&self, name: &str) -> Q {
        let v = self.0.tensor(name).unwrap();
        let cols = v.shape()[1];
        let q = v.data().iter().map(|&b| b as i8).collect();
        Q {
            q,
            scale: self.f32(&format!("{name}.scale"))[0],
            offset: self.f32(&format!("{name}.offset"))[0],
            cols,
        }
    }
}

fn layer_norm(x: &[f64], g: &[f64]) -> Vec<f64> {
    let n = x.len() as f64;
    let mean = x.iter().sum::<f64>() / n;
    let var = x.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / n;
    let inv = 1.0 / (var + 1e-5).sqrt();
    x.iter().zip(g).map(|(v, g)| (v - mean) * inv * g).collect()
}

/// Interleaved rotary on the first 32 dims of each head at `pos` (theta 10000).
fn rotary(x: &mut [f64], pos: usize) {
    for h in 0..HEADS {
        for i in 0..ROTARY / 2 {
            let angle = pos as f64 * 10000f64.powf(-2.0 * i as f64 / ROTARY as f64);
            let (s, c) = angle.sin_cos();
            let (a, b) = (x[h * HEAD_DIM + 2 * i], x[h * HEAD_DIM + 2 * i + 1]);
            x[h * HEAD_DIM + 2 * i] = a * c - b * s;
            x[h * HEAD_DIM + 2 * i + 1] = b * c + a * s;
        }
    }
}

/// Softmax attention of one query over `keys` / `values` rows, per head.
fn attend(q: &[f64], keys: &[Vec<f64>], values: &[Vec<f64>]) -> Vec<f64> {
    let mut out = vec![0.0; D];
    for h in 0..HEADS {
        let r = h * HEAD_DIM..(h + 1) * HEAD_DIM;
        let scores: Vec<f64> = keys
            .iter()
            .map(|k| {
                q[r.clone()].iter().zip(&k[r.clone()]).map(|(a, b)| a * b).sum::<f64>()
                    / (HEAD_DIM as f64).sqrt()
            })
            .collect();
        let max = scores.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
        let e: Vec<f64> = scores.iter().map(|s| (s - max).exp()).collect();
        let total: f64 = e.iter().sum();
        for (w, v) in e.iter().zip(values) {
            for (o, vv) in out[r.clone()].iter_mut().zip(&v[r.clone()]) {
                *o += w / total * vv;
            }
        }
    }
    out
}

struct Layer {
    self_norm: Vec<f64>,
    sq: Q,
    sk: Q,
    sv: Q,
    so: Q,
    cross_norm: Vec<f64>,
    cq: Q,
    ck: Q,
    cv: Q,
    co: Q,
    mlp_norm: Vec<f64>,
    up: Q,
    up_b: Vec<f64>,
    down: Q,
    down_b: Vec<f64>,
}

/// Keys and values, one row of `[D]` per position.
type KeysValues = (Vec<Vec<f64>>, Vec<Vec<f64>>);

/// The f64 decoder for one utterance.
struct Reference {
    layers: Vec<Layer>,
    norm: Vec<f64>,
    embed: Q,
    /// Per layer: cross-attention (keys, values), rows of `[D]`.
    cross: Vec<KeysValues>,
    /// Per layer: self-attention cache (keys after rotary, values).
    cache: Vec<KeysValues>,
}

impl Reference {
    fn new(raw: &Raw, memory: &[f32]) -> Self {
        let p = |i: usize, n: &str| format!("decoder.layers.{i}.{n}");
        let layers: Vec<Layer> = (0..8)
            .map(|i| Layer {
                self_norm: raw.f32(&p(i, "self_attn_norm.weight")),
                sq: raw.q(&p(i, "self_attn.q.weight")),
                sk: raw.q(&p(i, "self_attn.k.weight")),
                sv: raw.q(&p(i, "self_attn.v.weight")),
                so: raw.q(&p(i, "self_attn.o.weight")),
                cross_norm: raw.f32(&p(i, "cross_attn_norm.weight")),
                cq: raw.q(&p(i, "cross_attn.q.weight")),
                ck: raw.q(&p(i, "cross_attn.k.weight")),
                cv: raw.q(&p(i, "cross_attn.v.weight")),
                co: raw.q(&p(i, "cross_attn.o.weight")),
                mlp_norm: raw.f32(&p(i, "mlp_norm.weight")),
                up: raw.q(&p(i, "mlp.up.weight")),
                up_b: raw.f32(&p(i, "mlp.up.bias")),
                down: raw.q(&p(i, "mlp.down.weight")),
                down_b: raw.f32(&p(i, "mlp.down.bias")),
            })
            .collect();
        let rows: Vec<Vec<f64>> =
            memory.chunks_exact(D).map(|r| r.iter().map(|&v| f64::from(v)).collect()).collect();
        let cross = layers
            .iter()
            .map(|l| {
                (
                    rows.iter().map(|r| l.ck.apply(r)).collect(),
                    rows.iter().map(|r| l.cv.apply(r)).collect(),
                )
            })
            .collect();
        Reference {
            layers,
            norm: raw.f32("decoder.norm.weight"),
            embed: raw.q("decoder.embed.weight"),
            cross,
            cache: (0..8).map(|_| (Vec::new(), Vec::new())).collect(),
        }
    }

    fn step(&mut self, token: u32) -> Vec<f64> {
        let pos = self.cache[0].0.len();
        let mut x: Vec<f64> = (0..D).map(|c| self.embed.w(token as usize, c)).collect();
        for (l, layer) in self.layers.iter().enumerate() {
            let h = layer_norm(&x, &layer.self_norm);
            let (mut q, mut k, v) = (layer.sq.apply(&h), layer.sk.apply(&h), layer.sv.apply(&h));
            rotary(&mut q, pos);
            rotary(&mut k, pos);
            self.cache[l].0.push(k);
            self.cache[l].1.push(v);
            let a = attend(&q, &self.cache[l].0, &self.cache[l].1);
            x.iter_mut().zip(layer.so.apply(&a)).for_each(|(x, o)| *x += o);
            let h = layer_norm(&x, &layer.cross_norm);
            let a = attend(&layer.cq.apply(&h), &self.cross[l].0, &self.cross[l].1);
            x.iter_mut().zip(layer.co.apply(&a)).for_each(|(x, o)| *x += o);
            let h = layer_norm(&x, &layer.mlp_norm);
            let u: Vec<f64> =
                layer.up.apply(&h).iter().zip(&layer.up_b).map(|(u, b)| u + b).collect();
            let m: Vec<f64> = (0..HIDDEN)
                .map(|i| u[i] * (u[HIDDEN + i] / (1.0 + (-u[HIDDEN + i]).exp())))
                .collect();
            let d = layer.down.apply(&m);
            x.iter_mut().zip(d.iter().zip(&layer.down_b)).for_each(|(x, (d, b))| *x += d + b);
        }
        let h = layer_norm(&x, &self.norm);
        (0..VOCAB).map(|t| (0..D).map(|c| h[c] * self.embed.w(t, c)).sum()).collect()
    }
}

/// Tokens fed in teacher forcing (beckett's first ones; any ids would do).
const FED: [u32; 4] = [1, 18274, 1898, 3926];

#[test]
#[cfg_attr(
    target_arch = "aarch64",
    ignore = "slow under qemu; NEON is checked against portable by moonshine_backends"
)]
fn decoder_matches_f64_reference_and_cache_reset_is_clean() {
    let goldens = goldens();
    let beckett = goldens.iter().find(|g| g.name == "beckett").expect("beckett golden");
    // Two utterances of different lengths (memory lengths 83 and 38 frames).
    let long = &beckett.audio[..32_000];
    let short = &beckett.audio[40_000..55_000];

    let mut fresh = transcriber::<Portable>();
    fresh.encode(short).unwrap();
    let memory = fresh.encoder_output().to_vec();
    let want: Vec<Vec<f32>> = FED.iter().map(|&t| fresh.decode_step(t).unwrap().to_vec()).collect();

    let mut reused = transcriber::<Portable>();
    reused.encode(long).unwrap();
    for &t in &FED {
        reused.decode_step(t).unwrap();
    }
    reused.encode(short).unwrap();
    for (s, &t) in FED.iter().enumerate() {
        assert_eq!(reused.decode_step(t).unwrap(), &want[s][..], "step {s} after reuse");
    }

    let bytes = std::fs::read(model_dir().join("base-en.safetensors")).unwrap();
    let raw =
        Raw(safetensors::SafeTensors::deserialize(Box::leak(bytes.into_boxed_slice())).unwrap());
    let mut reference = Reference::new(&raw, &memory);
    for (s, &t) in FED.iter().enumerate() {
        let r = reference.step(t);
        let worst =
            r.iter().zip(&want[s]).map(|(r, g)| (r - f64::from(*g)).abs()).fold(0.0, f64::max);
        println!("step {s}: max |f32 - f64| = {worst:.2e}");
        assert!(worst <= 1e-4, "step {s}: {worst}");
    }
}
