//! The GEMV and GEMM of both formats on every backend, against the f64 reference and
//! against portable.

use crate::common::{assert_close_f32, rng};
use crate::problem::*;
use neon_runtime::kernels::gemm::PACK_NR;
use neon_runtime::kernels::quant::{
    pack_block_scales, pack_i8, packed_block_scales_len, packed_i8_len, QuantFormat, QuantWeights,
    BLOCK_K, KC, MC,
};
use neon_runtime::{Backend, Portable};
use rand::rngs::SmallRng;
use rand::Rng;

/// Prints a body's worst error, so the report can quote the measured errors
/// (`-- --nocapture`).
fn report<B: Backend>(what: &str, w: Worst) {
    println!("{}: {what}: {w}", B::NAME);
}

/// The GEMM on every shape, alternating tight strides and strides padded by `pad`
/// (`(lda, ldc)` extra), with and without bias; `block`: block-int8 weights.
fn gemm_cases<B: Backend>(
    seed: u64,
    shapes: impl IntoIterator<Item = (usize, usize, usize)>,
    pad: (usize, usize),
    block: bool,
    what: &str,
) {
    let mut r = rng(seed);
    let mut w = Worst::default();
    for (idx, (m, n, k)) in shapes.into_iter().enumerate() {
        let (lda, ldc) = if idx % 2 == 0 { (k, n) } else { (k + pad.0, n + pad.1) };
        let p = Problem::new(&mut r, dims(m, n, k, lda, ldc), idx % 3 != 0, block);
        w.add(check_gemm::<B>(&p));
    }
    report::<B>(what, w);
}

/// The GEMV on every `(n, k)`, with and without bias; `block`: block-int8 weights.
fn gemv_cases<B: Backend>(seed: u64, shapes: &[(usize, usize)], block: bool, what: &str) {
    let mut r = rng(seed);
    let mut w = Worst::default();
    for (idx, &(n, k)) in shapes.iter().enumerate() {
        w.add(check_gemv::<B>(&Problem::new(&mut r, dims(1, n, k, k, n), idx % 2 == 0, block)));
    }
    report::<B>(what, w);
}

fn gemm_tensor<B: Backend>() {
    let shapes = tail_shapes().into_iter().chain(odd_shapes());
    gemm_cases::<B>(1, shapes, (3, 5), false, "gemm per-tensor");
}

fn gemv_tensor<B: Backend>() {
    let mut shapes: Vec<(usize, usize)> = (1..=33).map(|t| (t, (t * 13) % 33 + 1)).collect();
    shapes.extend((1..=33).map(|t| ((t * 7) % 33 + 1, t)));
    shapes.extend([(13, 7), (1664, 416), (416, 1664), (3328, 416), (47, 1), (1, 255), (40, 300)]);
    shapes.extend([(48, 9), (17, 1663), (413, 417)]);
    gemv_cases::<B>(2, &shapes, false, "gemv per-tensor");
}

fn gemm_block<B: Backend>() {
    let mut shapes: Vec<(usize, usize, usize)> = (1..=33)
        .map(|t| (t, (t * 7) % 33 + 1, BLOCK_KS[t % 5]))
        .chain((1..=33).map(|t| ((t * 13) % 33 + 1, t, BLOCK_KS[(t + 2) % 5])))
        .collect();
    shapes.extend([(3, 1664, 416), (5, 416, 1664), (MC + 3, 40, KC + 64), (1, 1, 32)]);
    gemm_cases::<B>(3, shapes, (1, 2), true, "gemm block");
}

fn gemv_block<B: Backend>() {
    let mut shapes: Vec<(usize, usize)> = (1..=33).map(|t| (t, BLOCK_KS[t % 5])).collect();
    shapes.extend([(1664, 416), (416, 1664), (3328, 416), (64, 32), (17, 640)]);
    gemv_cases::<B>(4, &shapes, true, "gemv block");
}

/// General per-tensor parameters (an offset that is not a multiple of the scale, a
/// negative scale, a zero offset) on a few shapes.
fn general_parameters<B: Backend>() {
    let mut r = rng(5);
    for (idx, &(scale, offset)) in
        [(0.37f32, -1.3f32), (-2e-3, 5e-4), (1.0, 0.0)].iter().enumerate()
    {
        for &(m, n, k) in &[(1, 33, 17), (4, 20, 45), (1, 16, 64)] {
            let mut p = Problem::new(&mut r, dims(m, n, k, k, n), idx != 1, false);
            p.format = Format::Tensor { scale, offset };
            check_gemm::<B>(&p);
            check_gemv::<B>(&p);
        }
    }
}

/// The extreme codes -128 and 127 convert exactly: with power-of-two scales the whole
/// computation is exact.
fn extreme_codes<B: Backend>() {
    for &(code, k) in &[(-128i8, 37usize), (127, 64), (-128, 416)] {
        let n = 19;
        let q = vec![code; n * k];
        let mut b = vec![0; packed_i8_len(n, k)];
        pack_i8(&q, n, k, &mut b);
        let x = vec![1.0f32; k];
        let (scale, offset) = (0.0078125f32, 0.25f32);
        let tensor = QuantFormat::PerTensor { scale, offset };
        let want = scale * (code as f32 * k as f32) + offset * k as f32;
        let mut y = vec![0.0; n];
        B::gemv_i8(n, k, &x, wts(&b, tensor, None), &mut y);
        assert!(y.iter().all(|&v| v == want), "{}: gemv code {code}: {y:?} != {want}", B::NAME);
        let mut c = vec![0.0; 2 * n];
        let a = [x.clone(), x.clone()].concat();
        B::gemm_i8(dims(2, n, k, k, n), &a, wts(&b, tensor, None), &mut c);
        assert!(c.iter().all(|&v| v == want), "{}: gemm code {code}", B::NAME);
        // Block scales of 2^-7 everywhere: the same dot product without the offset.
        let scales = vec![0.0078125f32; n * k.div_ceil(BLOCK_K)];
        if k % BLOCK_K == 0 {
            let mut s = vec![0.0; packed_block_scales_len(n, k)];
            pack_block_scales(&scales, n, k, &mut s);
            let want = scale * (code as f32 * k as f32);
            B::gemv_i8(n, k, &x, wts(&b, QuantFormat::Block(&s), None), &mut y);
            assert!(y.iter().all(|&v| v == want), "{}: block gemv code {code}", B::NAME);
            B::gemm_i8(dims(2, n, k, k, n), &a, wts(&b, QuantFormat::Block(&s), None), &mut c);
            assert!(c.iter().all(|&v| v == want), "{}: block gemm code {code}", B::NAME);
        }
    }
}

/// The signature of both int8 GEMVs (`n, k, x, w, y`).
type Gemv = fn(usize, usize, &[f32], QuantWeights<'_>, &mut [f32]);

/// `k = 0`: the product is the bias (or zero); `m = 0` / `n = 0`: nothing is written. The
/// same for the int8-activation GEMV.
fn degenerate<B: Backend>() {
    let bias = [1.0, 2.0, 3.0];
    let tensor = QuantFormat::PerTensor { scale: 0.5, offset: 0.25 };
    let mut c = [SENTINEL; 6];
    B::gemm_i8(dims(2, 3, 0, 0, 3), &[], wts(&[], tensor, Some(&bias)), &mut c);
    assert_eq!(c, [1.0, 2.0, 3.0, 1.0, 2.0, 3.0]);
    B::gemm_i8(dims(2, 3, 0, 0, 3), &[], wts(&[], QuantFormat::Block(&[]), None), &mut c);
    assert_eq!(c, [0.0; 6]);
    let gemvs: [Gemv; 2] = [B::gemv_i8, B::gemv_i8_dot];
    for gemv in gemvs {
        let mut y = [SENTINEL; 3];
        gemv(3, 0, &[], wts(&[], tensor, Some(&bias)), &mut y);
        assert_eq!(y, bias);
        let mut y = [SENTINEL; 3];
        gemv(3, 0, &[], wts(&[], QuantFormat::Block(&[]), None), &mut y);
        assert_eq!(y, [0.0; 3]);
    }
    let mut c = [SENTINEL; 2];
    let b = [0i8; PACK_NR * 4];
    let unit = QuantFormat::PerTensor { scale: 1.0, offset: 0.0 };
    B::gemm_i8(dims(0, 2, 4, 4, 2), &[], wts(&b, unit, None), &mut c);
    B::gemm_i8(dims(2, 0, 4, 4, 0), &[0.0; 8], wts(&[], unit, None), &mut c);
    B::gemv_i8(0, 4, &[0.0; 4], wts(&[], unit, None), &mut []);
    B::gemv_i8_dot(0, 4, &[0.0; 4], wts(&[], unit, None), &mut []);
    assert_eq!(c, [SENTINEL; 2]);
}

/// GEMV and a one-row GEMM compute the same thing.
fn gemv_matches_gemm<B: Backend>() {
    let mut r = rng(6);
    for &(n, k, block) in &[(33, 17, false), (100, 64, true), (16, 3, false), (40, 300, false)] {
        let p = Problem::new(&mut r, dims(1, n, k, k, n), true, block);
        let (_, tol) = p.reference();
        let (b, s) = p.packed();
        // Same products summed in a different order: both within tol of the reference.
        assert_close_f32(
            &p.label("gemv vs gemm"),
            &p.run_gemv::<B>(&b, &s),
            &p.run_gemm::<B>(&b, &s),
            2.0 * tol as f32,
            0.0,
        );
    }
}

/// Moonshine's decoder and encoder shapes with activations of the size a LayerNorm
/// output has (most within +-2.5, 1% of them 10x larger: LN gains and outlier channels),
/// per tensor and in blocks, with bias: GEMV `[n, k]` = 416 -> 416, 416 -> 3328,
/// 1664 -> 416; the GEMM on 83 rows (across the GEMM's 80-row block and 8-row tiles).
fn moonshine_magnitudes<B: Backend>() {
    let mut r = rng(8);
    let mut w = Worst::default();
    let ln_like = |r: &mut SmallRng, p: &mut Problem| {
        for v in p.a.iter_mut() {
            *v *= if r.gen_bool(0.01) { 25.0 } else { 2.5 };
        }
    };
    for (n, k) in [(416, 416), (3328, 416), (416, 1664)] {
        for block in [false, true] {
            let mut p = Problem::new(&mut r, dims(1, n, k, k, n), true, block);
            ln_like(&mut r, &mut p);
            w.add(check_gemv::<B>(&p));
        }
    }
    for (n, k) in [(416, 1664), (1664, 416)] {
        let mut p = Problem::new(&mut r, dims(83, n, k, k, n), true, false);
        ln_like(&mut r, &mut p);
        w.add(check_gemm::<B>(&p));
    }
    report::<B>("moonshine magnitudes", w);
}

/// The encoder's full GEMMs (413 rows) and the LM head's GEMV (416 -> 32768) against the
/// f64 reference, per tensor with bias. On x86-64 hosts only: under qemu the reference's
/// 0.6 G f64 multiply-adds take minutes per backend (the other bodies cover every kernel
/// path at smaller sizes).
fn full_size<B: Backend>() {
    if !cfg!(target_arch = "x86_64") {
        println!("{}: full size skipped (x86-64 hosts only)", B::NAME);
        return;
    }
    let mut r = rng(9);
    let mut w = Worst::default();
    for (m, n, k) in [(413, 1664, 416), (413, 416, 1664), (1, 32768, 416)] {
        let p = Problem::new(&mut r, dims(m, n, k, k, n), true, false);
        w.add(if m == 1 { check_gemv::<B>(&p) } else { check_gemm::<B>(&p) });
    }
    report::<B>("full size", w);
}

/// The backend and portable agree on the same inputs (both also checked against f64
/// above).
fn matches_portable<B: Backend>() {
    let mut r = rng(7);
    let shapes = tail_shapes().into_iter().step_by(3).chain([(37, 100, 300), (5, 1664, 416)]);
    for (idx, (m, n, k)) in shapes.enumerate() {
        // Different summation orders, fused or separate multiply-adds: each backend is
        // within tol of the f64 result, so within 2 tol of the other.
        for block in [false, true] {
            let k = if block { k.div_ceil(BLOCK_K) * BLOCK_K } else { k };
            let p = Problem::new(&mut r, dims(m, n, k, k + 1, n + 1), idx % 2 == 0, block);
            let (_, tol) = p.reference();
            let (b, s) = p.packed();
            let label = p.label(&format!("{} vs portable", B::NAME));
            let gemm = (p.run_gemm::<B>(&b, &s), p.run_gemm::<Portable>(&b, &s));
            let gemv = (p.run_gemv::<B>(&b, &s), p.run_gemv::<Portable>(&b, &s));
            for (got, portable) in [gemm, gemv] {
                assert_close_f32(&label, &got, &portable, 2.0 * tol as f32, 0.0);
            }
        }
    }
}

neon_runtime::backend_tests!(
    gemm_tensor,
    gemv_tensor,
    gemm_block,
    gemv_block,
    moonshine_magnitudes,
    general_parameters,
    extreme_codes,
    degenerate,
    gemv_matches_gemm,
    full_size,
    matches_portable,
);
