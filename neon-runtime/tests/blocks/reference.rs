//! f64 references of the blocks, plain loops written from the block definitions (not
//! calling the runtime), each value carrying a bound on the error an f32 evaluation of the
//! same steps may have (a running forward error analysis, first order).
//!
//! ## Error bounds
//! `eps = 2^-23`. A value computed in f32 from inputs that are off by at most `e_in` is off
//! by at most (per element):
//! - **conv** (`b + sum w a` over `n` products): `sum |w| e_in` (propagated) plus `(n + 3)
//!   eps (|b| + sum |w| (|a| + e_in))` (the rounding of a sum of `n + 1` terms in any order,
//!   fused or not: Higham, "Accuracy and Stability of Numerical Algorithms", 3.1, `gamma_n
//!   <= n eps` taken twice over as in `common::check_sum`);
//! - **leaky ReLU / ReLU**: `max(1, |slope|) e_in` (Lipschitz, kink included) plus `eps |y|`
//!   (the product's rounding);
//! - **GELU (erf)**: `1.13 e_in` (`max |gelu'| = 1.1289` at `x = sqrt 2`) plus the kernel's
//!   measured error (`kernels::activation` docs: `1.92 eps |y| (1 + h)` for `x < 0`, `h =
//!   -ln erfc(|x| / sqrt 2)`, and `1.5e-8 |x|` below -5.54), bounded here by `3 eps (|y| +
//!   0.19 |x|) + 2e-8 |x|`: for `x < 0`, `|y| h = (|x| / 2) h e^-h <= |x| / (2e)`;
//! - **LayerNorm** over `n` channels: `1.1 |gamma_c| ||e_in||_2 / sigma` (the Jacobian of
//!   `(a - mean) / sigma` has norm <= `1 / sigma`, `sigma = sqrt(var + eps_ln)`; 10% for
//!   the second-order terms) plus the kernel's tolerance `eps (8 + sqrt n) S`, `S = max
//!   |gamma| max |z| + max |beta|` (`tests/norm.rs`);
//! - **layer scale** `g a`: `|g| e_in + eps |y|`; **add** `a + b`: `e_a + e_b + eps |y|`.
//!
//! The bounds are worst cases; `blocks.rs` asserts them with no extra factor and prints the
//! largest observed fraction.

/// `[channels, frames]` values in f64 with their error bounds.
pub struct Approx {
    pub v: Vec<f64>,
    pub e: Vec<f64>,
}

const EPS: f64 = f32::EPSILON as f64;

impl Approx {
    /// Exact data (a block's input).
    pub fn exact(x: &[f32]) -> Self {
        Approx { v: x.iter().map(|&a| a as f64).collect(), e: vec![0.0; x.len()] }
    }

    fn map(&self, f: impl Fn(f64, f64) -> (f64, f64)) -> Self {
        let (v, e) = self.v.iter().zip(&self.e).map(|(&v, &e)| f(v, e)).unzip();
        Approx { v, e }
    }
}

/// Activation before each conv of a residual block.
#[derive(Clone, Copy, Debug)]
pub enum Act {
    Relu,
    Leaky(f64),
}

/// `act(x)` elementwise.
pub fn activate(x: &Approx, act: Act) -> Approx {
    let slope = match act {
        Act::Relu => 0.0,
        Act::Leaky(s) => s,
    };
    x.map(|v, e| {
        let y = if v >= 0.0 { v } else { slope * v };
        (y, slope.abs().max(1.0) * e + EPS * y.abs())
    })
}

/// One conv: `[cin, frames]` -> `[cout, frames]`, weight `[cout, cin / groups, k]`,
/// dilation `d`, `pad_left` zeros before the input (as many frames out as in).
pub struct Conv<'a> {
    pub cin: usize,
    pub cout: usize,
    pub k: usize,
    pub d: usize,
    pub pad_left: usize,
    pub groups: usize,
    pub w: &'a [f32],
    pub b: &'a [f32],
}

pub fn conv(x: &Approx, c: &Conv, frames: usize) -> Approx {
    let (cin_g, cout_g) = (c.cin / c.groups, c.cout / c.groups);
    let terms = (cin_g * c.k + 1) as f64;
    let mut out = Approx { v: vec![0.0; c.cout * frames], e: vec![0.0; c.cout * frames] };
    for o in 0..c.cout {
        let g = o / cout_g;
        for t in 0..frames {
            let b = c.b[o] as f64;
            let (mut acc, mut mag, mut prop) = (b, b.abs(), 0.0);
            for i in 0..cin_g {
                let ch = g * cin_g + i;
                for j in 0..c.k {
                    let pos = (t + j * c.d) as i64 - c.pad_left as i64;
                    if pos < 0 || pos >= frames as i64 {
                        continue;
                    }
                    let w = c.w[(o * cin_g + i) * c.k + j] as f64;
                    let idx = ch * frames + pos as usize;
                    acc += w * x.v[idx];
                    mag += w.abs() * (x.v[idx].abs() + x.e[idx]);
                    prop += w.abs() * x.e[idx];
                }
            }
            out.v[o * frames + t] = acc;
            out.e[o * frames + t] = prop + (terms + 2.0) * EPS * mag;
        }
    }
    out
}

/// `erf` in f64: the series `2/sqrt(pi) e^(-z^2) sum_n 2^n z^(2n+1) / (1 3 5 .. (2n+1))`
/// (positive terms, no cancellation), `+-1` past `|z| = 6` (`erfc(6) < 2.2e-17`).
fn erf(z: f64) -> f64 {
    let a = z.abs();
    if a >= 6.0 {
        return 1f64.copysign(z);
    }
    let (mut term, mut sum) = (a, a);
    for n in 0..400 {
        term *= 2.0 * a * a / (2 * n + 3) as f64;
        sum += term;
        if term < sum * 1e-17 {
            break;
        }
    }
    (2.0 / core::f64::consts::PI.sqrt() * (-a * a).exp() * sum).copysign(z)
}

/// GELU, erf form, elementwise.
pub fn gelu(x: &Approx) -> Approx {
    x.map(|v, e| {
        let y = 0.5 * v * (1.0 + erf(v / core::f64::consts::SQRT_2));
        let xa = v.abs() + e;
        (y, 1.13 * e + 3.0 * EPS * (y.abs() + 0.19 * xa) + 2e-8 * xa)
    })
}

/// LayerNorm over the channels of each frame of `[channels, frames]`.
pub fn layer_norm(
    x: &Approx,
    channels: usize,
    frames: usize,
    g: &[f32],
    b: &[f32],
    eps: f64,
) -> Approx {
    let mut out = Approx { v: vec![0.0; x.v.len()], e: vec![0.0; x.v.len()] };
    let gmax = g.iter().fold(0.0f64, |m, &v| m.max((v as f64).abs()));
    let bmax = b.iter().fold(0.0f64, |m, &v| m.max((v as f64).abs()));
    let n = channels as f64;
    for t in 0..frames {
        let col = |c: usize| c * frames + t;
        let mean = (0..channels).map(|c| x.v[col(c)]).sum::<f64>() / n;
        let var = (0..channels).map(|c| (x.v[col(c)] - mean).powi(2)).sum::<f64>() / n;
        let sigma = (var + eps).sqrt();
        let err_norm = (0..channels).map(|c| x.e[col(c)].powi(2)).sum::<f64>().sqrt();
        let zmax = (0..channels).fold(0.0f64, |m, c| m.max(((x.v[col(c)] - mean) / sigma).abs()));
        let rounding = EPS * (8.0 + n.sqrt()) * (gmax * zmax + bmax);
        for c in 0..channels {
            let gc = g[c] as f64;
            out.v[col(c)] = (x.v[col(c)] - mean) / sigma * gc + b[c] as f64;
            out.e[col(c)] = 1.1 * gc.abs() * err_norm / sigma + rounding;
        }
    }
    out
}

/// `gamma[c] * x` per channel of `[channels, frames]`.
pub fn layer_scale(x: &Approx, frames: usize, gamma: &[f32]) -> Approx {
    let mut out = Approx { v: x.v.clone(), e: x.e.clone() };
    for (i, (v, e)) in out.v.iter_mut().zip(out.e.iter_mut()).enumerate() {
        let g = gamma[i / frames] as f64;
        *v *= g;
        *e = g.abs() * *e + EPS * v.abs();
    }
    out
}

/// `a + b`.
pub fn add(a: &Approx, b: &Approx) -> Approx {
    let (v, e) =
        a.v.iter()
            .zip(&b.v)
            .zip(a.e.iter().zip(&b.e))
            .map(|((x, y), (ex, ey))| (x + y, ex + ey + EPS * (x + y).abs()))
            .unzip();
    Approx { v, e }
}

/// Asserts `|got - want| <= bound` elementwise; returns the largest `|got - want| / bound`.
pub fn assert_within(what: &str, got: &[f32], want: &Approx) -> f64 {
    assert_eq!(got.len(), want.v.len(), "{what}: length");
    let mut worst = 0.0f64;
    for (i, (&g, (&w, &e))) in got.iter().zip(want.v.iter().zip(&want.e)).enumerate() {
        let err = (g as f64 - w).abs();
        assert!(err <= e, "{what}: index {i}: got {g}, want {w} (err {err:e}, bound {e:e})");
        worst = worst.max(err / e.max(f64::MIN_POSITIVE));
    }
    worst
}
