//! The int8-activation (`dot`) GEMV of both formats on every backend: activations
//! quantised to int8 per block of 32; on Neon `sdot` where the CPU has dotprod, plain NEON
//! (`smull`, `sadalp`) elsewhere; the portable evaluation on the other backends.

use crate::common::{assert_close, rng};
use crate::problem::*;
use neon_runtime::kernels::quant::{
    pack_i8, packed_block_scales_len, packed_i8_len, QuantFormat, BLOCK_K, DOT_KC,
};
use neon_runtime::Backend;

/// Which evaluation backend `B`'s `dot` GEMV runs here (printed with the errors).
fn dot_evaluation<B: Backend>() -> &'static str {
    match (B::NAME, neon_runtime::kernels::cpu::aarch64_dotprod()) {
        ("neon", true) => "sdot",
        ("neon", false) => "smull/sadalp",
        _ => "portable evaluation",
    }
}

/// `QuantKernels::gemv_i8_dot` (the int8-activation path a `QuantLinear` selects with
/// `QuantPath::Dot`), per tensor: within the f32 bound plus the activation quantisation
/// bound of the reference, for every tail of n and k, Moonshine's shapes and k past the
/// 2048-value quantisation chunk.
fn dot_path<B: Backend>() {
    let mut r = rng(40);
    let mut worst = Worst::default();
    let mut shapes: Vec<(usize, usize)> = (1..=33).map(|t| (t, (t * 13) % 33 + 1)).collect();
    shapes.extend((1..=33).map(|t| ((t * 7) % 33 + 1, t)));
    shapes.extend([(1664, 416), (416, 1664), (416, 416), (13, 2048 + 52), (33, 2 * 2048 + 37)]);
    for (idx, &(n, k)) in shapes.iter().enumerate() {
        let p = Problem::new(&mut r, dims(1, n, k, k, n), idx % 2 == 0, false);
        let (want, tol) = p.reference();
        let want = &want[..n];
        let tol = tol + quantisation_bound(&p);
        let (b, _) = p.packed();
        let y = p.run_gemv_dot::<B>(&b, &[]);
        assert_close(&p.label(&format!("{} gemv_i8_dot", B::NAME)), &y, want, tol, 0.0);
        worst.add((max_err(&y, want), tol));
    }
    println!("{} gemv_i8_dot ({}): {worst}", B::NAME, dot_evaluation::<B>());
}

/// Runs backend `B`'s `dot` GEMV on row 0 and checks it; returns (max err, tol,
/// rms err / rms output).
fn check_dot<B: Backend>(p: &Problem) -> (f64, f64, f64) {
    let (want, tol) = p.reference();
    let want = &want[..p.n];
    let tol = tol + quantisation_bound(p);
    let (b, s) = p.packed();
    let y = p.run_gemv_dot::<B>(&b, &s);
    let label = p.label(&format!("{} dot gemv", B::NAME));
    assert_close(&label, &y, want, tol, 0.0);
    // Relative RMS error, quoted in the report for the Moonshine shapes.
    let e2: f64 = y.iter().zip(want).map(|(&g, &w)| (g as f64 - w).powi(2)).sum();
    let w2: f64 = want.iter().map(|w| w * w).sum();
    if p.k >= 416 && p.n >= 416 {
        println!("{label}: rms err / rms y = {:.2e}", (e2 / w2).sqrt());
    }
    (max_err(&y, want), tol, (e2 / w2).sqrt())
}

/// Both formats: every tail of n and k, odd shapes, Moonshine's MLP, k past one
/// quantisation chunk ([`DOT_KC`]) with and without a partial last block.
fn dot_gemv<B: Backend>() {
    let mut r = rng(30);
    let mut worst = Worst::default();
    let mut rel: f64 = 0.0;
    let mut shapes: Vec<(usize, usize)> = (1..=33).map(|t| (t, (t * 13) % 33 + 1)).collect();
    shapes.extend((1..=33).map(|t| ((t * 7) % 33 + 1, t)));
    shapes.extend([(1664, 416), (416, 1664), (47, 1), (1, 255), (40, 300), (13, DOT_KC + 52)]);
    shapes.extend([(33, 2 * DOT_KC + 37), (16, DOT_KC), (3, 63)]);
    for (idx, &(n, k)) in shapes.iter().enumerate() {
        let p = Problem::new(&mut r, dims(1, n, k, k, n), idx % 2 == 0, false);
        let (e, t, q) = check_dot::<B>(&p);
        worst.add((e, t));
        rel = rel.max(q);
    }
    let how = dot_evaluation::<B>();
    println!("{} dot gemv per-tensor ({how}): {worst}, worst rms err / rms y {rel:.2e}", B::NAME);
    let (mut worst, mut rel) = (Worst::default(), 0.0f64);
    let mut shapes: Vec<(usize, usize)> = (1..=33).map(|t| (t, BLOCK_KS[t % 5])).collect();
    shapes.extend([(1664, 416), (416, 1664), (17, DOT_KC + 64), (40, 2 * DOT_KC + 32)]);
    for (idx, &(n, k)) in shapes.iter().enumerate() {
        let p = Problem::new(&mut r, dims(1, n, k, k, n), idx % 2 == 0, true);
        let (e, t, q) = check_dot::<B>(&p);
        worst.add((e, t));
        rel = rel.max(q);
    }
    println!("{} dot gemv block ({how}): {worst}, worst rms err / rms y {rel:.2e}", B::NAME);
}

/// Blocks of very different magnitudes, an all-zero block, tiny values: each block has
/// its own scale.
fn dot_block_magnitudes<B: Backend>() {
    let mut r = rng(31);
    let (n, k) = (37, 160);
    for block in [false, true] {
        let mut p = Problem::new(&mut r, dims(1, n, k, k, n), true, block);
        for (b, xb) in p.a.chunks_mut(BLOCK_K).enumerate() {
            let m = [1e-20f32, 1e3, 0.0, 1e-38, 1.0][b];
            xb.iter_mut().for_each(|v| *v *= m);
        }
        check_dot::<B>(&p);
    }
}

/// A NaN or infinite activation makes the outputs NaN (not silently finite).
fn dot_non_finite<B: Backend>() {
    let (n, k) = (20, 64);
    let q = vec![3i8; n * k];
    let mut b = vec![0; packed_i8_len(n, k)];
    pack_i8(&q, n, k, &mut b);
    for bad in [f32::NAN, f32::INFINITY] {
        let mut x = vec![0.5f32; k];
        x[40] = bad;
        let mut y = vec![0.0; n];
        let format = QuantFormat::PerTensor { scale: 0.01, offset: 0.0 };
        B::gemv_i8_dot(n, k, &x, wts(&b, format, None), &mut y);
        assert!(y.iter().all(|v| v.is_nan()), "{}: {bad}: {y:?}", B::NAME);
    }
}

/// `gemv_i8` is the widening path whatever the CPU: within the f32 tolerance of the
/// reference, and different from the `dot` path (which quantises the activations).
fn widening_is_default<B: Backend>() {
    let mut r = rng(32);
    let p = Problem::new(&mut r, dims(1, 40, 96, 96, 40), true, false);
    check_gemv::<B>(&p);
    let (b, _) = p.packed();
    let via_gemv = p.run_gemv::<B>(&b, &[]);
    let via_dot = p.run_gemv_dot::<B>(&b, &[]);
    assert_ne!(via_gemv, via_dot, "{}: the dot path quantises activations", B::NAME);
}

/// Which evaluation backend `B`'s `QuantPath::Mmla` GEMM runs here.
fn mmla_evaluation<B: Backend>() -> &'static str {
    if B::NAME == "neon" && neon_runtime::kernels::cpu::aarch64_i8mm() {
        "smmla"
    } else {
        dot_evaluation::<B>()
    }
}

/// Backend `B`'s `dot` GEMM on one problem: within the f64 reference's f32 bound plus the
/// activation quantisation bound (worst row), and row `i` bit-equal to `gemv_i8_dot` on
/// row `i` (the GEMM's stated contract); the `QuantPath::Mmla` GEMM (`smmla` where the CPU
/// has i8mm) bit-equal to it, columns past `n` untouched. Returns (max err, tol, rms err /
/// rms output).
fn check_dot_gemm<B: Backend>(p: &Problem) -> (f64, f64, f64) {
    let (want, tol) = p.reference();
    let tol = tol + quantisation_bound(p);
    let (b, s) = p.packed();
    let got = p.run_gemm_dot::<B>(&b, &s);
    let label = p.label(&format!("{} dot gemm", B::NAME));
    assert_close(&label, &got, &want, tol, 0.0);
    for i in 0..p.m {
        let mut y = vec![f32::NAN; p.n];
        let x = &p.a[i * p.lda..i * p.lda + p.k];
        B::gemv_i8_dot(p.n, p.k, x, p.weights(&b, &s), &mut y);
        let row = &got[i * p.n..(i + 1) * p.n];
        let same = row.iter().zip(&y).all(|(g, w)| g.to_bits() == w.to_bits());
        assert!(same, "{label}: row {i} differs from gemv_i8_dot");
    }
    let mmla = p.run_gemm_mmla::<B>(&b, &s);
    for (i, (g, w)) in mmla.iter().zip(&got).enumerate() {
        assert!(g.to_bits() == w.to_bits(), "{label}: mmla [{i}] {g} != dot {w}");
    }
    let e2: f64 = got.iter().zip(&want).map(|(&g, &w)| (g as f64 - w).powi(2)).sum();
    let w2: f64 = want.iter().map(|w| w * w).sum();
    (max_err(&got, &want), tol, (e2 / w2).sqrt())
}

/// `QuantKernels::gemm_i8_dot` (`QuantPath::Dot` of a several-row `QuantLinear`) and the
/// `QuantPath::Mmla` GEMM, both formats: every tail of m, n and k (the 4-row, 8-output
/// `sdot` and 8-row, 4-output `smmla` tiles, partial blocks of 32),
/// odd shapes, strides, Moonshine's encoder shapes, k past one quantisation chunk
/// ([`DOT_KC`]) with and without a partial last block, also with whole tiles.
fn dot_gemm<B: Backend>() {
    let mut r = rng(33);
    let how = dot_evaluation::<B>();
    for block in [false, true] {
        let (mut worst, mut rel) = (Worst::default(), 0.0f64);
        let mut shapes = tail_shapes();
        shapes.extend(odd_shapes());
        shapes.extend([(82, 416, 1664), (9, 1664, 416), (6, 40, DOT_KC + 52)]);
        shapes.extend([(5, 33, 2 * DOT_KC + 64), (4, 8, 32), (1, 16, 64)]);
        // Whole 8-row, 16-output tiles across chunks (written in `c` directly).
        shapes.extend([(16, 32, DOT_KC + 100), (17, 48, 2 * DOT_KC + 8)]);
        for (idx, &(m, n, k)) in shapes.iter().enumerate() {
            let k = if block { BLOCK_KS[k % 5].max(k.div_ceil(BLOCK_K) * BLOCK_K) } else { k };
            let (lda, ldc) = if idx % 3 == 0 { (k + 3, n + 5) } else { (k, n) };
            let p = Problem::new(&mut r, dims(m, n, k, lda, ldc), idx % 2 == 0, block);
            let (e, t, q) = check_dot_gemm::<B>(&p);
            worst.add((e, t));
            if k >= 416 && n >= 416 {
                rel = rel.max(q);
            }
        }
        let kind = if block { "block" } else { "per-tensor" };
        println!(
            "{} dot gemm {kind} ({how}; mmla path: {}): {worst}, Moonshine shapes rms err / rms C {rel:.2e}",
            B::NAME,
            mmla_evaluation::<B>()
        );
    }
}

/// A NaN or infinite activation makes its row's outputs NaN, and only its row's.
fn dot_gemm_non_finite<B: Backend>() {
    let (m, n, k) = (6, 20, 64);
    let q = vec![3i8; n * k];
    let mut b = vec![0; packed_i8_len(n, k)];
    pack_i8(&q, n, k, &mut b);
    let scales = vec![0.01f32; packed_block_scales_len(n, k)];
    for bad in [f32::NAN, f32::INFINITY, f32::NEG_INFINITY] {
        for format in
            [QuantFormat::PerTensor { scale: 0.01, offset: 0.0 }, QuantFormat::Block(&scales)]
        {
            let mut a = vec![0.5f32; m * k];
            a[4 * k + 40] = bad;
            let mut c = vec![0.0; m * n];
            B::gemm_i8_dot(dims(m, n, k, k, n), &a, wts(&b, format, None), &mut c);
            for (i, row) in c.chunks(n).enumerate() {
                let nan = row.iter().all(|v| v.is_nan());
                let finite = row.iter().all(|v| v.is_finite());
                assert!(if i == 4 { nan } else { finite }, "{}: {bad} row {i}: {row:?}", B::NAME);
            }
        }
    }
}

neon_runtime::backend_tests!(
    dot_gemm,
    dot_gemm_non_finite,
    dot_path,
    dot_gemv,
    dot_block_magnitudes,
    dot_non_finite,
    widening_is_default,
);
