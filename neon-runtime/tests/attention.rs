//! Attention kernels against an f64 reference with the documented error bound (odd head
//! dims, every tail of the key and query blocks, partial KV caches whose unused rows hold
//! NaN, causal with several queries, a single key, large scores), every backend against
//! the portable one; the operator's validation. One generic body per case, run for every
//! backend (`backend_tests!`: Portable, X86<Avx2>, X86<Avx512>, Neon).

mod common;

use common::{rng, uniform};
use neon_runtime::kernels::attention::AttentionGeometry;
use neon_runtime::kernels::{AttentionKernels, BackendKind, WithBackend};
use neon_runtime::ops::attention::Attention;
use neon_runtime::ops::ShapeRule;
use neon_runtime::{
    Backend, Error, Layout, Portable, Shape, ShapeError, TensorView, TensorViewMut,
};
use rand::Rng;

neon_runtime::backend_tests!(kernel, encoder_shape, single_key, matches_portable);

/// Unit roundoff of f32.
const U: f64 = f32::EPSILON as f64 / 2.0;
const EPS: f64 = f32::EPSILON as f64;

fn gamma(n: usize) -> f64 {
    n as f64 * U / (1.0 - n as f64 * U)
}

/// One attention problem: `q [qf, c]`, `k`, `v` `[kv, c]` with `len` valid rows.
struct Case {
    qf: usize,
    kv: usize,
    len: usize,
    heads: usize,
    hd: usize,
    scale: f32,
    causal: bool,
    q: Vec<f32>,
    k: Vec<f32>,
    v: Vec<f32>,
}

impl Case {
    /// Random data, `q` in `[-spread, spread]`, `k` and `v` in `[-1, 1]`; rows `len..kv`
    /// of `k` and `v` are NaN (never to be read).
    fn new(
        r: &mut impl Rng,
        (qf, kv, len): (usize, usize, usize),
        (heads, hd): (usize, usize),
        causal: bool,
        spread: f32,
    ) -> Case {
        let c = heads * hd;
        let mut r2 = rng(r.gen());
        let q = uniform(&mut r2, qf * c, -spread, spread);
        let mut k = uniform(&mut r2, kv * c, -1.0, 1.0);
        let mut v = uniform(&mut r2, kv * c, -1.0, 1.0);
        k[len * c..].fill(f32::NAN);
        v[len * c..].fill(f32::NAN);
        let scale = 1.0 / (hd as f32).sqrt();
        Case { qf, kv, len, heads, hd, scale, causal, q, k, v }
    }

    fn geometry(&self) -> AttentionGeometry {
        AttentionGeometry {
            q_frames: self.qf,
            len: self.len,
            heads: self.heads,
            head_dim: self.hd,
            scale: self.scale,
            causal: self.causal,
        }
    }

    fn run<B: AttentionKernels>(&self) -> Vec<f32> {
        let mut out = vec![f32::NAN; self.qf * self.heads * self.hd];
        B::attention(&self.q, &self.k, &self.v, &mut out, self.geometry());
        out
    }

    /// f64 reference and the bound of the module docs, per output value:
    /// `(2 max_j r_j + 2 gamma(n + n/4 + 2) + 3u) sum_j w_j |v_j|` with
    /// `r_j = D_j + u |s_j - m| + 2 eps`, `D_j = gamma(hd + 1) scale sum_d |q_d k_jd|`.
    /// Plus `1e-30` absolute, so exact zeros compare.
    fn reference(&self) -> (Vec<f64>, Vec<f64>) {
        let (c, hd) = (self.heads * self.hd, self.hd);
        let mut want = vec![0.0; self.qf * c];
        let mut bound = vec![0.0; self.qf * c];
        let scale = self.scale as f64;
        for i in 0..self.qf {
            let n = if self.causal { self.len - self.qf + i + 1 } else { self.len };
            for h in 0..self.heads {
                let off = h * hd;
                let qh = &self.q[i * c + off..][..hd];
                let mut s = vec![0.0f64; n];
                let mut dj = vec![0.0f64; n];
                for j in 0..n {
                    let kh = &self.k[j * c + off..][..hd];
                    s[j] =
                        scale * qh.iter().zip(kh).map(|(&a, &b)| a as f64 * b as f64).sum::<f64>();
                    let abs: f64 =
                        qh.iter().zip(kh).map(|(&a, &b)| (a as f64 * b as f64).abs()).sum();
                    dj[j] = gamma(hd + 1) * scale * abs;
                }
                let m = s.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
                let e: Vec<f64> = s.iter().map(|&x| (x - m).exp()).collect();
                let l: f64 = e.iter().sum();
                let rmax =
                    (0..n).map(|j| dj[j] + U * (s[j] - m).abs() + 2.0 * EPS).fold(0.0, f64::max);
                let factor = 2.0 * rmax + 2.0 * gamma(n + n / 4 + 2) + 3.0 * U;
                for d in 0..hd {
                    let (mut o, mut a) = (0.0, 0.0);
                    for (j, ej) in e.iter().enumerate() {
                        let vj = self.v[j * c + off + d] as f64;
                        o += ej / l * vj;
                        a += ej / l * vj.abs();
                    }
                    want[i * c + off + d] = o;
                    bound[i * c + off + d] = factor * a + 1e-30;
                }
            }
        }
        (want, bound)
    }

    fn name(&self) -> String {
        format!(
            "q {} kv {} len {} heads {} hd {} causal {}",
            self.qf, self.kv, self.len, self.heads, self.hd, self.causal
        )
    }
}

fn check_case<B: AttentionKernels>(case: &Case) -> Vec<f32> {
    let got = case.run::<B>();
    let (want, bound) = case.reference();
    for (i, ((&g, &w), &b)) in got.iter().zip(&want).zip(&bound).enumerate() {
        let e = (g as f64 - w).abs();
        assert!(
            e <= b,
            "{} {}: index {i}: got {g:e}, want {w:e}, err {e:e} > {b:e}",
            B::NAME,
            case.name()
        );
    }
    got
}

/// Fixed geometries (Moonshine's head_dim 52, powers of two, odd sizes, every tail of the
/// 4-query and 4 / 8-key blocks, the x86-64 blocks of 16 queries (AVX2: 2 x 8) and 8
/// (AVX2: 6) keys) and random ones.
fn cases(seed: u64) -> Vec<Case> {
    let mut r = rng(seed);
    let mut cases = Vec::new();
    let fixed: &[(usize, usize, usize, usize, usize, bool)] = &[
        // (qf, kv, len, heads, hd, causal)
        (1, 1, 1, 1, 1, false),
        (1, 5, 1, 2, 3, false),
        (3, 9, 9, 8, 52, false),
        (1, 200, 137, 8, 52, true),
        (1, 400, 400, 8, 52, false),
        (5, 40, 13, 2, 64, true),
        (7, 7, 7, 3, 17, true),
        (9, 33, 20, 1, 1, true),
        (4, 4, 4, 2, 3, true),
        (6, 31, 31, 2, 16, false),
        (8, 12, 12, 1, 33, false),
        (2, 70, 65, 4, 5, true),
        (64, 80, 77, 2, 52, true),
        // Blocks of 8 or 16 queries (x86-64), full and partial, causal across several key
        // blocks; head dims past the x86 query tile (128).
        (24, 30, 30, 2, 52, true),
        (37, 60, 45, 1, 20, true),
        (21, 25, 21, 3, 7, false),
        (16, 16, 16, 1, 64, true),
        (13, 100, 90, 2, 130, true),
        (3, 20, 17, 1, 200, false),
        // AVX2's blocks of 2 x 8 queries x 6 keys: a partial second query vector, `len`
        // not a multiple of 6, causal across the key blocks.
        (14, 41, 41, 2, 52, true),
        (30, 35, 35, 1, 9, false),
    ];
    for &(qf, kv, len, heads, hd, causal) in fixed {
        cases.push(Case::new(&mut r, (qf, kv, len), (heads, hd), causal, 2.0));
    }
    for n in 0..80 {
        let hd = *[1, 2, 3, 4, 5, 7, 8, 12, 16, 17, 20, 31, 33, 52, 64, 65].get(n % 16).unwrap();
        let heads = r.gen_range(1..=4);
        let qf = r.gen_range(1..=if n % 4 == 0 { 40 } else { 10 });
        let causal = r.gen_bool(0.5);
        let len = r.gen_range(if causal { qf } else { 1 }..=qf + 30);
        let kv = len + r.gen_range(0..=5);
        cases.push(Case::new(&mut r, (qf, kv, len), (heads, hd), causal, 2.0));
    }
    // Large scores (|s| up to ~100): the running maximum keeps every exponential in range.
    cases.push(Case::new(&mut r, (5, 50, 50), (2, 52), false, 30.0));
    cases.push(Case::new(&mut r, (1, 50, 43), (2, 52), true, 30.0));
    cases.push(Case::new(&mut r, (20, 50, 50), (2, 52), false, 30.0));
    cases.push(Case::new(&mut r, (19, 50, 41), (1, 17), true, 30.0));
    cases
}

fn kernel<B: AttentionKernels>() {
    for case in cases(3) {
        check_case::<B>(&case);
    }
}

/// Moonshine's encoder shape (413 frames, head_dim 52; 2 of the 8 heads, to keep the f64
/// reference fast under qemu).
fn encoder_shape<B: AttentionKernels>() {
    let mut r = rng(9);
    check_case::<B>(&Case::new(&mut r, (413, 413, 413), (2, 52), false, 1.5));
}

/// A single visible key: the output is that key's value row, exactly (`p = exp(0) = 1`).
fn single_key<B: AttentionKernels>() {
    let mut r = rng(4);
    for hd in [1, 3, 17, 52, 64] {
        let case = Case::new(&mut r, (1, 6, 1), (3, hd), false, 2.0);
        assert_eq!(case.run::<B>(), &case.v[..3 * hd], "hd {hd}");
        // Causal with as many queries as keys: the first query sees only key 0.
        let case = Case::new(&mut r, (5, 5, 5), (2, hd), true, 2.0);
        assert_eq!(&case.run::<B>()[..2 * hd], &case.v[..2 * hd], "hd {hd}");
    }
}

/// Same inputs through `B` and the portable backend: each is within the bound of the f64
/// reference (asserted), so they are within twice the bound of each other (asserted too).
fn matches_portable<B: AttentionKernels>() {
    for case in cases(5) {
        let p = check_case::<Portable>(&case);
        let q = check_case::<B>(&case);
        let (_, bound) = case.reference();
        for i in 0..p.len() {
            let e = (p[i] - q[i]).abs() as f64;
            assert!(e <= 2.0 * bound[i], "{} {} {i}: {} vs {}", B::NAME, case.name(), p[i], q[i]);
        }
    }
}

/// `Portable::attention` of one head of 4 dimensions (scale 1) on zeros: `q_frames` query
/// frames over `len` key frames, `causal` or not, with `q_len` values of `q` and of the
/// output and `kv_len` values of `k` and of `v`.
fn one_head_on_zeros(
    (q_frames, len, causal): (usize, usize, bool),
    (q_len, kv_len): (usize, usize),
) {
    let g = AttentionGeometry { q_frames, len, heads: 1, head_dim: 4, scale: 1.0, causal };
    let kv = vec![0.0; kv_len];
    Portable::attention(&vec![0.0; q_len], &kv, &kv, &mut vec![0.0; q_len], g);
}

#[test]
#[should_panic(expected = "causal needs len >= q_frames")]
fn causal_short_cache_panics() {
    one_head_on_zeros((2, 1, true), (8, 4));
}

#[test]
#[should_panic(expected = "fewer than len rows")]
fn short_kv_panics() {
    one_head_on_zeros((1, 2, false), (4, 4));
}

fn s(d: &[usize]) -> Shape {
    Shape::new(d).unwrap()
}

#[test]
fn shape_rule() {
    let a = Attention { heads: 8, causal: false, scale: None };
    let (q, kv) = (s(&[3, 416]), s(&[400, 416]));
    assert_eq!(a.output_shape(&[q, kv, kv]), Ok(q));
    assert_eq!(a.arity(), 3);
    assert!(matches!(
        a.output_shape(&[s(&[3, 415]), kv, kv]),
        Err(ShapeError::Indivisible { arg: 0, divisor: 8, got: 415, .. })
    ));
    assert!(matches!(
        a.output_shape(&[q, s(&[400, 208]), kv]),
        Err(ShapeError::Dim { arg: 1, axis: 1, expected: 416, got: 208, .. })
    ));
    assert!(matches!(
        a.output_shape(&[q, kv, s(&[400, 208])]),
        Err(ShapeError::Dim { arg: 2, axis: 1, expected: 416, got: 208, .. })
    ));
    assert!(matches!(
        a.output_shape(&[q, kv, s(&[399, 416])]),
        Err(ShapeError::Dim { arg: 2, axis: 0, expected: 400, got: 399, .. })
    ));
    assert!(matches!(a.output_shape(&[q, kv]), Err(ShapeError::Geometry { .. })));
    assert!(matches!(a.output_shape(&[q, kv, s(&[416])]), Err(ShapeError::Rank { arg: 2, .. })));
    let bad = Attention { heads: 0, ..a };
    assert!(matches!(bad.output_shape(&[q, kv, kv]), Err(ShapeError::Geometry { .. })));
    let bad = Attention { scale: Some(f32::INFINITY), ..a };
    assert!(matches!(bad.output_shape(&[q, kv, kv]), Err(ShapeError::Geometry { .. })));
    assert_eq!(a.scale_for(64), 0.125);
    assert_eq!(a.scale_for(52), (1.0f64 / 52f64.sqrt()) as f32);
    assert_eq!(Attention { scale: Some(0.5), ..a }.scale_for(52), 0.5);
}

#[test]
fn operator_matches_kernel_and_validates() {
    let mut r = rng(17);
    let (qf, kv, heads, hd) = (3, 10, 2, 6);
    let c = heads * hd;
    let case = Case::new(&mut r, (qf, kv, 7), (heads, hd), true, 1.0);
    let a = Attention { heads, causal: true, scale: None };
    let vq = TensorView::new(&case.q, &[qf, c], Layout::FrameMajor).unwrap();
    let vk = TensorView::new(&case.k, &[kv, c], Layout::FrameMajor).unwrap();
    let vv = TensorView::new(&case.v, &[kv, c], Layout::FrameMajor).unwrap();
    let mut o = vec![0.0; qf * c];
    let mut vo = TensorViewMut::new(&mut o, &[qf, c], Layout::FrameMajor).unwrap();
    a.run::<Portable>(&vq, &vk, &vv, &mut vo, 7).unwrap();
    assert_eq!(o, case.run::<Portable>());

    // Errors, nothing written.
    let mut o = vec![-1.0; qf * c];
    let mut vo = TensorViewMut::new(&mut o, &[qf, c], Layout::FrameMajor).unwrap();
    for (len, min) in [(0, 3), (2, 3), (11, 3)] {
        assert_eq!(
            a.run::<Portable>(&vq, &vk, &vv, &mut vo, len),
            Err(Error::OutOfRange { name: "len", value: len, min, max: 10 })
        );
    }
    let nc = Attention { causal: false, ..a };
    assert_eq!(
        nc.run::<Portable>(&vq, &vk, &vv, &mut vo, 0),
        Err(Error::OutOfRange { name: "len", value: 0, min: 1, max: 10 })
    );
    let vkc = TensorView::new(&case.k, &[kv, c], Layout::ChannelFirst).unwrap();
    assert!(matches!(a.run::<Portable>(&vq, &vkc, &vv, &mut vo, 7), Err(Error::Layout { .. })));
    let vk_short =
        TensorView::new(&case.k[..(kv - 1) * c], &[kv - 1, c], Layout::FrameMajor).unwrap();
    assert!(matches!(
        a.run::<Portable>(&vq, &vk_short, &vv, &mut vo, 7),
        Err(Error::Shape(ShapeError::Dim { arg: 2, axis: 0, .. }))
    ));
    let mut o2 = vec![-1.0; qf * c];
    let mut bad = TensorViewMut::new(&mut o2, &[c, qf], Layout::FrameMajor).unwrap();
    assert!(matches!(
        a.run::<Portable>(&vq, &vk, &vv, &mut bad, 7),
        Err(Error::Shape(ShapeError::Dim { arg: 3, .. }))
    ));
    let mut bad = TensorViewMut::new(&mut o2, &[qf, c], Layout::ChannelFirst).unwrap();
    assert!(matches!(a.run::<Portable>(&vq, &vk, &vv, &mut bad, 7), Err(Error::Layout { .. })));
    assert!(o.iter().chain(&o2).all(|&v| v == -1.0));
}

/// Prints the worst error relative to the bound and the worst absolute error per backend
/// (`cargo test --test attention -- --ignored --nocapture`).
#[test]
#[ignore = "measurement"]
fn measure() {
    struct Worst;
    impl WithBackend for Worst {
        type Output = String;
        fn run<B: Backend>(self) -> String {
            worst::<B>()
        }
    }
    for kind in BackendKind::available() {
        println!("{}", kind.with(Worst).unwrap());
    }
}

/// The worst error relative to the bound and the worst absolute error of a kernel over
/// the suite and the encoder shape, as a line of text.
fn worst<B: AttentionKernels>() -> String {
    let (mut ratio, mut abs) = (0.0f64, 0.0f64);
    let mut all = cases(3);
    all.push(Case::new(&mut rng(9), (413, 413, 413), (2, 52), false, 1.5));
    for case in &all {
        let got = case.run::<B>();
        let (want, bound) = case.reference();
        for ((&g, &w), &b) in got.iter().zip(&want).zip(&bound) {
            let e = (g as f64 - w).abs();
            ratio = ratio.max(e / b);
            abs = abs.max(e);
        }
    }
    format!("{}: error / bound <= {ratio:.2e}, |error| <= {abs:.2e}", B::NAME)
}
