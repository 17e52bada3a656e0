//! sanoTTS test helpers: the synthetic voices (prepared once per test binary) and an
//! independent f64 implementation of the UNFOLDED decoder, written from `sanotts.md` with
//! plain loops (no runtime calls; its own erf and its own inverse DFT).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, OnceLock};

use neon_models::sanotts::load::VoiceWeights;
use neon_models::sanotts::names::index;
use neon_models::sanotts::synthetic::{self, SECOND_VOICE_SEED, VOICE_SEED};

/// The built-in synthetic voice's tensors (seed 0x5A70) and its prepared weights.
pub fn voice() -> &'static (Vec<Vec<f32>>, Arc<VoiceWeights>) {
    static V: OnceLock<(Vec<Vec<f32>>, Arc<VoiceWeights>)> = OnceLock::new();
    V.get_or_init(|| prepared(VOICE_SEED))
}

/// The second synthetic voice (seed 0x5A71): other random weights.
pub fn second_voice() -> &'static (Vec<Vec<f32>>, Arc<VoiceWeights>) {
    static V: OnceLock<(Vec<Vec<f32>>, Arc<VoiceWeights>)> = OnceLock::new();
    V.get_or_init(|| prepared(SECOND_VOICE_SEED))
}

fn prepared(seed: u64) -> (Vec<Vec<f32>>, Arc<VoiceWeights>) {
    let v = synthetic::voice(seed).unwrap();
    let w = Arc::new(VoiceWeights::prepare(&v).unwrap());
    (v.tensors().to_vec(), w)
}

/// `||got - want|| / ||want||` (L2).
pub fn relative_l2(got: &[f32], want: &[f64]) -> f64 {
    assert_eq!(got.len(), want.len());
    let (mut e, mut n) = (0.0f64, 0.0f64);
    for (&g, &w) in got.iter().zip(want) {
        e += (f64::from(g) - w).powi(2);
        n += w * w;
    }
    (e / n).sqrt()
}

/// Index of the first value whose bits differ, if any.
pub fn first_difference(a: &[f32], b: &[f32]) -> Option<usize> {
    assert_eq!(a.len(), b.len(), "lengths");
    a.iter().zip(b).position(|(x, y)| x.to_bits() != y.to_bits())
}

/// erf in f64: Maclaurin series below 2.5 (terms decrease after n ~ x^2; the largest term
/// is below 40 at x = 2.5, so about 1e-14 of absolute error), else 1 - erfc from its
/// continued fraction (Lentz's algorithm), accurate to 1e-15 there.
pub fn erf(x: f64) -> f64 {
    let a = x.abs();
    if a == 0.0 {
        return x;
    }
    let r = if a < 2.5 {
        // erf x = 2/sqrt(pi) sum_n (-1)^n x^(2n+1) / (n! (2n+1))
        let mut term = a;
        let mut sum = a;
        let mut n = 0.0;
        loop {
            n += 1.0;
            term *= -a * a / n;
            let add = term / (2.0 * n + 1.0);
            sum += add;
            if add.abs() < 1e-17 * sum.abs() {
                break;
            }
        }
        sum * 2.0 / std::f64::consts::PI.sqrt()
    } else {
        // erfc a = exp(-a^2)/sqrt(pi) * 1/(a + (1/2)/(a + 1/(a + (3/2)/(a + 2/(a + ...)))))
        let tiny = 1e-300;
        let mut f = a;
        let mut c = a;
        let mut d = 0.0;
        for k in 1..200 {
            let ak = k as f64 / 2.0;
            d = a + ak * d;
            d = if d == 0.0 { tiny } else { d };
            c = a + ak / c;
            c = if c == 0.0 { tiny } else { c };
            d = 1.0 / d;
            let delta = c * d;
            f *= delta;
            if (delta - 1.0).abs() < 1e-16 {
                break;
            }
        }
        1.0 - (-a * a).exp() / std::f64::consts::PI.sqrt() / f
    };
    if x < 0.0 {
        -r
    } else {
        r
    }
}

/// A conv's taps: kernel, dilation, left padding.
#[derive(Clone, Copy)]
struct Taps {
    kernel: usize,
    dil: usize,
    pad: usize,
}

const POINTWISE: Taps = Taps { kernel: 1, dil: 1, pad: 0 };

/// `x` `[c, t]` → `[out, t]`: `y[o, f] = b[o] + sum_{i, k} w[o, i, k] x[i, f + dil k - pad]`
/// (zero outside), `w` `[out, c, kernel]` row-major; summed in that order (bias, then `i`,
/// then `k`), each tap over the frames it reaches.
fn conv(x: &[f64], c: usize, t: usize, w: &[f32], b: &[f32], taps: Taps) -> Vec<f64> {
    let Taps { kernel, dil, pad } = taps;
    let out = b.len();
    let mut y = vec![0.0; out * t];
    for (o, row) in y.chunks_exact_mut(t).enumerate() {
        row.fill(f64::from(b[o]));
        for (i, xi) in x.chunks_exact(t).enumerate().take(c) {
            for k in 0..kernel {
                let wv = f64::from(w[(o * c + i) * kernel + k]);
                // Output frame f reads input frame f + shift.
                let shift = (dil * k) as isize - pad as isize;
                let from = (-shift).max(0) as usize;
                let to = (t as isize - shift).clamp(0, t as isize) as usize;
                for f in from..to {
                    row[f] += wv * xi[(f as isize + shift) as usize];
                }
            }
        }
    }
    y
}

/// LayerNorm over the `c` channels of each frame of `x` `[c, t]` (eps 1e-6, biased
/// variance), in place.
fn layer_norm(x: &mut [f64], c: usize, t: usize, g: &[f32], b: &[f32]) {
    for f in 0..t {
        let mean = (0..c).map(|i| x[i * t + f]).sum::<f64>() / c as f64;
        let var = (0..c).map(|i| (x[i * t + f] - mean).powi(2)).sum::<f64>() / c as f64;
        let inv = 1.0 / (var + 1e-6).sqrt();
        for i in 0..c {
            let v = &mut x[i * t + f];
            *v = (*v - mean) * inv * f64::from(g[i]) + f64::from(b[i]);
        }
    }
}

fn leaky(v: f64) -> f64 {
    if v < 0.0 {
        0.1 * v
    } else {
        v
    }
}

/// The network in f64 on the unfolded voice `v` (tensors in file order): hidden `[192, t]`
/// → iSTFT frames `[t, 514]`.
pub fn reference_frames(v: &[Vec<f32>], hidden: &[f32], t: usize) -> Vec<f64> {
    let h: Vec<f64> = hidden.iter().map(|&x| f64::from(x)).collect();
    // The acoustic model's projection, then conv_embed, then the speaker embedding.
    let zeros80 = vec![0.0f32; 80];
    let mel = conv(&h, 192, t, &v[index::PROJ], &zeros80, POINTWISE);
    let mut x = conv(
        &mel,
        80,
        t,
        &v[index::EMBED],
        &v[index::EMBED_BIAS],
        Taps { kernel: 7, dil: 1, pad: 3 },
    );
    for d in 0..128 {
        for f in 0..t {
            x[d * t + f] += f64::from(v[index::SPEAKER][d]);
        }
    }
    // ResidualConv: LeakyReLU and a k = 3 conv, dilation 1 then 3 ("same" padding).
    let mut a = x.clone();
    let res = [
        (index::RES_CONV1, index::RES_CONV1_BIAS, 1),
        (index::RES_CONV2, index::RES_CONV2_BIAS, 3),
    ];
    for (w, b, dil) in res {
        let l: Vec<f64> = a.iter().map(|&z| leaky(z)).collect();
        a = conv(&l, 128, t, &v[w], &v[b], Taps { kernel: 3, dil, pad: dil });
    }
    for (xi, ai) in x.iter_mut().zip(&a) {
        *xi += ai;
    }
    layer_norm(&mut x, 128, t, &v[index::NORM0], &v[index::NORM0_BIAS]);
    for blk in 0..4 {
        let p = |k: usize| &v[index::convnext(blk) + k];
        // Depthwise conv k = 7, padding 3.
        let mut c = vec![0.0; 128 * t];
        for ch in 0..128 {
            for f in 0..t {
                let mut acc = f64::from(p(1)[ch]);
                for k in 0..7 {
                    let q = f as isize + k as isize - 3;
                    if q >= 0 && (q as usize) < t {
                        acc += f64::from(p(0)[ch * 7 + k]) * x[ch * t + q as usize];
                    }
                }
                c[ch * t + f] = acc;
            }
        }
        layer_norm(&mut c, 128, t, p(2), p(3));
        let u = conv(&c, 128, t, p(4), p(5), POINTWISE);
        let u: Vec<f64> =
            u.iter().map(|&z| 0.5 * z * (1.0 + erf(z / std::f64::consts::SQRT_2))).collect();
        let d = conv(&u, 384, t, p(6), p(7), POINTWISE);
        for ch in 0..128 {
            for f in 0..t {
                x[ch * t + f] += f64::from(p(8)[ch]) * d[ch * t + f];
            }
        }
    }
    layer_norm(&mut x, 128, t, &v[index::NORM1], &v[index::NORM1_BIAS]);
    let y = conv(&x, 128, t, &v[index::HEAD], &v[index::HEAD_BIAS], POINTWISE);
    // Frame-major [t, 514].
    let mut out = vec![0.0; t * 514];
    for o in 0..514 {
        for f in 0..t {
            out[f * 514 + o] = y[o * t + f];
        }
    }
    out
}

/// The iSTFT head of `sanotts.md` in f64: `y` `[t, 514]` → `128 t` samples. The inverse
/// real DFT is direct: `x[n] = (1/512) (Re X_0 + Re X_256 (-1)^n + 2 sum_{k=1}^{255}
/// (Re X_k cos(2 pi k n / 512) - Im X_k sin(2 pi k n / 512)))` (the imaginary parts of
/// bins 0 and 256 ignored, as numpy's irfft does).
pub fn reference_istft(y: &[f64], t: usize) -> Vec<f64> {
    const N: usize = 512;
    const HOP: usize = 128;
    let tau = 2.0 * std::f64::consts::PI;
    let cos: Vec<f64> = (0..N).map(|j| (tau * j as f64 / N as f64).cos()).collect();
    let sin: Vec<f64> = (0..N).map(|j| (tau * j as f64 / N as f64).sin()).collect();
    let w: Vec<f64> = cos.iter().map(|c| 0.5 - 0.5 * c).collect();
    let len = (t - 1) * HOP + N;
    let mut buf = vec![0.0; len];
    let mut env = vec![0.0; len];
    let ln100 = 100f64.ln();
    for f in 0..t {
        let fr = &y[f * 514..(f + 1) * 514];
        let (mut re, mut im) = (vec![0.0; 257], vec![0.0; 257]);
        for k in 0..257 {
            let mag = fr[k].min(ln100).exp();
            re[k] = mag * fr[257 + k].cos();
            im[k] = mag * fr[257 + k].sin();
        }
        for n in 0..N {
            let sign = if n % 2 == 0 { 1.0 } else { -1.0 };
            let mut s = re[0] + re[256] * sign;
            let mut j = 0; // (k n) mod N
            for k in 1..256 {
                j = (j + n) % N;
                s += 2.0 * (re[k] * cos[j] - im[k] * sin[j]);
            }
            let x = s / N as f64;
            buf[f * HOP + n] += x * w[n];
            env[f * HOP + n] += w[n] * w[n];
        }
    }
    (0..t * HOP)
        .map(|j| {
            let p = N / 2 + j;
            if env[p] < 1e-11 {
                buf[p]
            } else {
                buf[p] / env[p]
            }
        })
        .collect()
}

/// The waveform of the unfolded network and head in f64.
pub fn reference_audio(v: &[Vec<f32>], hidden: &[f32], t: usize) -> Vec<f64> {
    reference_istft(&reference_frames(v, hidden, t), t)
}

/// [`reference_audio`] of the test hidden states (`hidden_states(t)`) on the built-in voice
/// (`second = false`) or the second one, computed once per test binary and shared by the
/// backends' tests (running in parallel threads: the first computes, the others wait).
pub fn cached_reference(second: bool, t: usize) -> Arc<Vec<f64>> {
    type Cell = Arc<OnceLock<Arc<Vec<f64>>>>;
    static CACHE: Mutex<BTreeMap<(bool, usize), Cell>> = Mutex::new(BTreeMap::new());
    let cell = CACHE.lock().unwrap().entry((second, t)).or_default().clone();
    cell.get_or_init(|| {
        let tensors = if second { &second_voice().0 } else { &voice().0 };
        Arc::new(reference_audio(tensors, &synthetic::hidden_states(t), t))
    })
    .clone()
}
