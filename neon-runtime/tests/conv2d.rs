//! conv2d family: the 2-D im2col kernel against a direct reference (exact: it is a copy),
//! the `Conv2d` operator against an f64 direct convolution over odd geometries (every
//! padding combination, strides 1..=3, both GEMM paths, fused output stage, several pixel
//! blocks), every backend vs portable, errors, and the shape rule with `usize` dims; the
//! direct "rows" kernel (`conv_rows`, x86-64 AVX-512F) against im2col + GEMM, bit for bit.
//! The kernel suites are generic bodies instantiated for every backend this build has
//! (`backend_tests!`).

mod common;

use common::{check_sum, rng, uniform, window2d};
use neon_runtime::error::ShapeError;
use neon_runtime::kernels::conv2d::{RowConv, Window2d, ROW_CONV_MAX_KW};
use neon_runtime::kernels::gemm::{pack_a, packed_a_len, Epilogue, GemmA};
use neon_runtime::kernels::{BackendType, Conv2dKernels};
use neon_runtime::ops::activation::Activation;
use neon_runtime::ops::conv2d::{Conv2d, Conv2dGeometry, CONV2D_BLOCK_VALUES};
use neon_runtime::ops::ShapeRule;
use neon_runtime::{
    Avx512, Backend, Error, Layout, Portable, Shape, TensorView, TensorViewMut, X86,
};
use rand::rngs::SmallRng;

// ---------------------------------------------------------------------------------------
// References (plain loops, written independently of the kernels).
// ---------------------------------------------------------------------------------------

/// Input pixel `(row, col)` read by output `(oh, ow)`, tap `(i, j)`; None in the padding.
fn src(
    oh: usize,
    ow: usize,
    i: usize,
    j: usize,
    (sh, sw): (usize, usize),
    (pt, pl): (usize, usize),
    (h, w): (usize, usize),
) -> Option<(usize, usize)> {
    let r = (oh * sh + i) as i64 - pt as i64;
    let c = (ow * sw + j) as i64 - pl as i64;
    (r >= 0 && r < h as i64 && c >= 0 && c < w as i64).then_some((r as usize, c as usize))
}

/// PyTorch's output size along one axis, None when below 1.
fn out_len(size: usize, pad: usize, k: usize, s: usize) -> Option<usize> {
    (size + pad >= k).then(|| (size + pad - k) / s + 1)
}

/// The im2col window of a `ch x h x w` image (`(height, width)`), kernel `(kh, kw)`, strides
/// `(sh, sw)`, padding `(top, bottom, left, right)`; `None` when the padded image is smaller
/// than the kernel.
fn window(
    ch: usize,
    (h, w): (usize, usize),
    (kh, kw): (usize, usize),
    (sh, sw): (usize, usize),
    (pt, pb, pl, pr): (usize, usize, usize, usize),
) -> Option<Window2d> {
    let out = (out_len(h, pt + pb, kh, sh)?, out_len(w, pl + pr, kw, sw)?);
    Some(window2d(ch, (h, w), (kh, kw), (sh, sw), (pt, pl), out))
}

/// im2col reference: `[c * kh * kw, count]` for pixels `first..first + count`.
fn im2col_ref(x: &[f32], w: &Window2d, first: usize, count: usize) -> Vec<f32> {
    let (kh, kw) = (w.kernel_h, w.kernel_w);
    let mut col = vec![0.0; w.channels * kh * kw * count];
    for c in 0..w.channels {
        for i in 0..kh {
            for j in 0..kw {
                for n in 0..count {
                    let p = first + n;
                    let (oh, ow) = (p / w.out_width, p % w.out_width);
                    let st = (w.stride_h, w.stride_w);
                    let pads = (w.pad_top, w.pad_left);
                    if let Some((r, cc)) = src(oh, ow, i, j, st, pads, (w.height, w.width)) {
                        col[((c * kh + i) * kw + j) * count + n] =
                            x[(c * w.height + r) * w.width + cc];
                    }
                }
            }
        }
    }
    col
}

/// Direct conv2d in f64 with the output stage: (output `[out, oh, ow]`, per output the sum
/// of |terms| (|bias| + sum |w * x|), the scale of the f32 rounding error).
fn conv_ref(
    g: &Conv2dGeometry,
    x: &[f32],
    (h, w): (usize, usize),
    wt: &[f32],
    bias: Option<&[f32]>,
) -> (Vec<f64>, Vec<f64>) {
    let oh_n = out_len(h, g.pad_top + g.pad_bottom, g.kernel_h, g.stride_h).unwrap();
    let ow_n = out_len(w, g.pad_left + g.pad_right, g.kernel_w, g.stride_w).unwrap();
    let (kh, kw, cin) = (g.kernel_h, g.kernel_w, g.in_channels);
    let mut y = vec![0.0; g.out_channels * oh_n * ow_n];
    let mut mag = vec![0.0; y.len()];
    for o in 0..g.out_channels {
        for oh in 0..oh_n {
            for ow in 0..ow_n {
                let b = bias.map_or(0.0, |b| b[o] as f64);
                let (mut acc, mut abs) = (b, b.abs());
                for c in 0..cin {
                    for i in 0..kh {
                        for j in 0..kw {
                            let st = (g.stride_h, g.stride_w);
                            let pads = (g.pad_top, g.pad_left);
                            if let Some((r, cc)) = src(oh, ow, i, j, st, pads, (h, w)) {
                                let v = wt[((o * cin + c) * kh + i) * kw + j] as f64
                                    * x[(c * h + r) * w + cc] as f64;
                                acc += v;
                                abs += v.abs();
                            }
                        }
                    }
                }
                // Output stage: leaky ReLU then clamp (1-Lipschitz for slopes in [0, 1]:
                // the error bound of the sum carries over).
                if let Some(s) = g.leaky_slope {
                    acc = if acc < 0.0 { s as f64 * acc } else { acc };
                }
                if let Some(m) = g.clamp_min {
                    acc = acc.max(m as f64);
                }
                let idx = (o * oh_n + oh) * ow_n + ow;
                y[idx] = acc;
                mag[idx] = abs;
            }
        }
    }
    (y, mag)
}

fn nan_vec(n: usize) -> Vec<f32> {
    vec![f32::NAN; n]
}

// ---------------------------------------------------------------------------------------
// im2col_2d (a copy: must match the reference exactly, every element written).
// ---------------------------------------------------------------------------------------

/// The whole output and a few tiles (first row only, mid-row to mid-row, the last pixel).
fn im2col_case<B: Backend>(x: &[f32], w: Window2d) {
    let pixels = w.out_height * w.out_width;
    let rows = w.channels * w.kernel_h * w.kernel_w;
    let mid = pixels / 3;
    let tiles = [(0, pixels), (0, w.out_width.min(pixels)), (mid, pixels / 2), (pixels - 1, 1)];
    for (first, count) in tiles {
        if count == 0 {
            continue;
        }
        let mut col = nan_vec(rows * count);
        B::im2col_2d(x, w, first, count, &mut col);
        let want = im2col_ref(x, &w, first, count);
        assert!(
            col.iter().zip(&want).all(|(a, b)| a.to_bits() == b.to_bits()),
            "{} im2col_2d {w:?} tile {first}+{count}",
            B::NAME
        );
    }
}

/// Every padding combination 0..=2 per side, strides 1..=3 on each axis, kernels 1..=3 by
/// 1..=3 and 5x2 / 1x5, odd image sizes: both strategies (row runs and general).
fn check_im2col<B: Backend>() {
    let mut r = rng(31);
    let mut cases = 0;
    let mut row_runs = 0;
    let kernels = [(1, 1), (1, 2), (1, 3), (2, 1), (2, 2), (3, 1), (3, 2), (3, 3), (5, 2), (1, 5)];
    for (h, w, ch) in [(1, 1, 1), (3, 5, 2), (4, 7, 1), (7, 3, 3), (6, 17, 2), (9, 32, 1)] {
        let x = uniform(&mut r, ch * h * w, -1.0, 1.0);
        for (kh, kw) in kernels {
            for (sh, sw) in [(1, 1), (2, 1), (1, 2), (3, 2)] {
                for pads in 0..81 {
                    let (pt, pb, pl, pr) = (pads % 3, pads / 3 % 3, pads / 9 % 3, pads / 27);
                    let Some(win) = window(ch, (h, w), (kh, kw), (sh, sw), (pt, pb, pl, pr)) else {
                        continue;
                    };
                    if (sh, sw, pt, pb) == (1, 1, 0, 0) && win.out_width == w {
                        row_runs += 1;
                    }
                    im2col_case::<B>(&x, win);
                    cases += 1;
                }
            }
        }
    }
    assert!(cases > 5000 && row_runs > 50, "{cases} {row_runs}");
}

/// Wide images and many channels (the NEON bulk copy's 16- and 4-value blocks and tails),
/// openWakeWord's first layer (3x3, width padded by 1) and a 1x3 "same" layer.
fn check_im2col_wide<B: Backend>() {
    let mut r = rng(32);
    for (ch, h, w, (kh, kw), (sh, sw), (pt, pb, pl, pr)) in [
        (1, 76, 32, (3, 3), (1, 1), (0, 0, 1, 1)),
        (24, 74, 32, (1, 3), (1, 1), (0, 0, 1, 1)),
        (5, 13, 37, (1, 3), (1, 1), (0, 0, 1, 1)),
        (3, 11, 53, (2, 4), (1, 1), (0, 0, 1, 2)),
        (7, 9, 41, (3, 3), (1, 1), (1, 1, 1, 1)),
        (2, 10, 67, (3, 3), (2, 3), (1, 0, 2, 0)),
        (4, 6, 35, (1, 7), (1, 1), (0, 0, 3, 3)),
    ] {
        let x = uniform(&mut r, ch * h * w, -1.0, 1.0);
        let win = window(ch, (h, w), (kh, kw), (sh, sw), (pt, pb, pl, pr)).unwrap();
        im2col_case::<B>(&x, win);
    }
}

#[test]
#[should_panic(expected = "im2col_2d: tile")]
fn im2col_contract_tile() {
    let w = window2d(1, (2, 2), (1, 1), (1, 1), (0, 0), (2, 2));
    Portable::im2col_2d(&[0.0; 4], w, 3, 2, &mut [0.0; 2]);
}

// ---------------------------------------------------------------------------------------
// The Conv2d operator.
// ---------------------------------------------------------------------------------------

fn run_conv<B: Backend>(
    op: &Conv2d<Vec<f32>>,
    x: &[f32],
    (h, w): (usize, usize),
) -> (Vec<f32>, (usize, usize)) {
    let g = op.geometry();
    let (oh, ow) = g.output_size(h, w).unwrap();
    let input = TensorView::new(x, &[g.in_channels, h, w], Layout::ChannelFirst).unwrap();
    let mut y = nan_vec(g.out_channels * oh * ow);
    let mut out =
        TensorViewMut::new(&mut y, &[g.out_channels, oh, ow], Layout::ChannelFirst).unwrap();
    // Scratch filled with NaN: nothing stale may leak into the result.
    let mut scratch = nan_vec(op.scratch_len(h, w));
    op.run::<B>(&input, &mut out, &mut scratch).unwrap();
    (y, (oh, ow))
}

/// One random problem on backend `B` against the f64 reference; returns the worst error.
fn conv_case<B: Backend>(
    r: &mut SmallRng,
    g: Conv2dGeometry,
    hw: (usize, usize),
    bias: bool,
) -> f64 {
    let x = uniform(r, g.in_channels * hw.0 * hw.1, -1.0, 1.0);
    let wt = uniform(r, g.weight_len().unwrap(), -1.0, 1.0);
    let b = bias.then(|| uniform(r, g.out_channels, -1.0, 1.0));
    let op = Conv2d::new(g, wt.clone(), b.clone()).unwrap();
    let (y, _) = run_conv::<B>(&op, &x, hw);
    let (want, mag) = conv_ref(&g, &x, hw, &wt, b.as_deref());
    check_sum(&format!("{} {g:?} {hw:?}", B::NAME), &y, &want, &mag, g.reduction() + 1)
}

fn stage(i: usize) -> (Option<f32>, Option<f32>) {
    [(None, None), (Some(0.2), Some(-0.4)), (Some(0.0), None), (None, Some(0.05))][i % 4]
}

/// Kernels, strides, paddings, channel counts not multiples of 4 or 8, with and without
/// bias and output stage.
fn check_conv_sweeps<B: Backend>() {
    let mut r = rng(33);
    let mut worst = 0.0f64;
    let mut cases = 0;
    for (cin, cout) in [(1, 1), (3, 7), (5, 8), (2, 13), (8, 24)] {
        for (kh, kw) in [(1, 1), (1, 3), (3, 1), (3, 3), (2, 3), (5, 2)] {
            for (sh, sw) in [(1, 1), (2, 2), (1, 2), (3, 1)] {
                for pads in [(0, 0, 0, 0), (0, 0, 1, 1), (1, 1, 0, 0), (1, 0, 0, 2), (2, 1, 1, 0)] {
                    let (slope, min) = stage(cases);
                    let g = Conv2dGeometry {
                        leaky_slope: slope,
                        clamp_min: min,
                        ..Conv2dGeometry::new(cin, cout, (kh, kw))
                            .stride(sh, sw)
                            .padding(pads.0, pads.1, pads.2, pads.3)
                    };
                    let hw = (5 + cases % 4, 7 + cases % 5);
                    worst = worst.max(conv_case::<B>(&mut r, g, hw, cases % 3 != 0));
                    cases += 1;
                }
            }
        }
    }
    println!("{} conv2d sweeps: {cases} cases, worst error {worst:.2} eps sum|terms|", B::NAME);
}

/// openWakeWord's layer types at their sizes (several pixel blocks each), "same" padding,
/// the direct path with odd channel counts, and a 1x1 conv.
fn check_conv_model_shapes<B: Backend>() {
    let mut r = rng(34);
    let ow = |g: Conv2dGeometry| g.leaky_relu(0.2).clamp_min(-0.4);
    let cases = [
        (ow(Conv2dGeometry::new(1, 24, (3, 3)).padding(0, 0, 1, 1)), (76, 32)),
        (ow(Conv2dGeometry::new(24, 24, (1, 3)).same()), (74, 32)),
        (ow(Conv2dGeometry::new(24, 24, (3, 1))), (74, 32)),
        (ow(Conv2dGeometry::new(24, 48, (1, 3)).same()), (36, 16)),
        (ow(Conv2dGeometry::new(72, 72, (3, 1))), (30, 8)),
        (ow(Conv2dGeometry::new(96, 96, (1, 3)).same()), (10, 2)),
        (Conv2dGeometry::new(96, 96, (3, 1)), (3, 1)),
        (Conv2dGeometry::new(13, 11, (3, 1)), (23, 19)),
        (ow(Conv2dGeometry::new(7, 9, (1, 1))), (17, 29)),
        (Conv2dGeometry::new(5, 3, (4, 1)), (9, 5)),
    ];
    for (g, hw) in cases {
        conv_case::<B>(&mut r, g, hw, true);
    }
}

/// The fused output stage equals the conv followed by the separate activations, bit for
/// bit, on both paths (direct and im2col).
fn check_fused_equals_separate<B: Backend>() {
    let mut r = rng(35);
    for (g, hw) in [
        (Conv2dGeometry::new(6, 16, (1, 3)).same(), (9, 11)),
        (Conv2dGeometry::new(6, 16, (3, 1)), (9, 11)),
    ] {
        let x = uniform(&mut r, 6 * hw.0 * hw.1, -2.0, 2.0);
        let wt = uniform(&mut r, g.weight_len().unwrap(), -1.0, 1.0);
        let b = uniform(&mut r, 16, -1.0, 1.0);
        let plain = Conv2d::new(g, wt.clone(), Some(b.clone())).unwrap();
        let fused = Conv2d::new(g.leaky_relu(0.2).clamp_min(-0.4), wt, Some(b)).unwrap();
        let (mut y1, (oh, ow)) = run_conv::<B>(&plain, &x, hw);
        let (y2, _) = run_conv::<B>(&fused, &x, hw);
        let mut v = TensorViewMut::new(&mut y1, &[16, oh, ow], Layout::ChannelFirst).unwrap();
        Activation::LeakyRelu { slope: 0.2 }.run_in_place::<B>(&mut v).unwrap();
        Activation::ClampMin { min: -0.4 }.run_in_place::<B>(&mut v).unwrap();
        assert!(y1.iter().zip(&y2).all(|(a, b)| a.to_bits() == b.to_bits()), "{g:?}");
        assert!(y2.iter().all(|&v| v >= -0.4) && y2.iter().any(|&v| v < 0.0));
    }
}

/// Random geometries on backend `B` and portable: each within the f64 bound, so within
/// twice it of each other (they round differently: fused multiply-add, summation order).
fn matches_portable<B: Backend>() {
    use rand::Rng;
    let mut r = rng(36);
    for i in 0..80 {
        let (kh, kw) = (r.gen_range(1..4), r.gen_range(1..4));
        let (pt, pb) = (r.gen_range(0..kh), r.gen_range(0..kh));
        let (pl, pr) = (r.gen_range(0..kw), r.gen_range(0..kw));
        let (slope, min) = stage(i);
        let g = Conv2dGeometry {
            leaky_slope: slope,
            clamp_min: min,
            ..Conv2dGeometry::new(r.gen_range(1..20), r.gen_range(1..30), (kh, kw))
                .stride(r.gen_range(1..3), r.gen_range(1..3))
                .padding(pt, pb, pl, pr)
        };
        let hw = (r.gen_range(kh..20), r.gen_range(kw..40));
        let x = uniform(&mut r, g.in_channels * hw.0 * hw.1, -1.0, 1.0);
        let wt = uniform(&mut r, g.weight_len().unwrap(), -1.0, 1.0);
        let b = uniform(&mut r, g.out_channels, -1.0, 1.0);
        let op = Conv2d::new(g, wt, Some(b)).unwrap();
        let (yp, _) = run_conv::<Portable>(&op, &x, hw);
        let (yn, _) = run_conv::<B>(&op, &x, hw);
        // Per-output bound (k + 2) eps sum|terms| with sum|terms| <= k + 1 (|w|, |x| < 1).
        let k = g.reduction() as f32;
        let tol = 2.0 * (k + 2.0) * f32::EPSILON * (k + 1.0);
        common::assert_close_f32(&format!("{} {g:?} {hw:?}", B::NAME), &yn, &yp, tol, 0.0);
    }
}

// ---------------------------------------------------------------------------------------
// conv_rows: the direct kernel for convs "valid" along the height and "same" along the
// width (x86-64 AVX-512F; every other backend answers `false`).
// ---------------------------------------------------------------------------------------

const SENTINEL: f32 = 1234.5;

/// `conv_rows` on `B` and the im2col path (`im2col_2d` of every output pixel, then
/// `gemm_packed_a` on the same backend) on one random problem: equal bit for bit, and
/// nothing written past the output. Returns whether `conv_rows` ran.
fn rows_case<B: Backend>(r: &mut SmallRng, g: RowConv, bias: bool, e: Option<Epilogue>) -> bool {
    let (m, kh, kw) = (g.out_channels, g.kernel_h, g.kernel_w);
    let k = g.channels * kh * kw;
    let oh = g.height - kh + 1;
    let n = oh * g.width;
    let x = uniform(r, g.channels * g.height * g.width, -1.0, 1.0);
    let w = uniform(r, m * k, -1.0, 1.0);
    let b = bias.then(|| uniform(r, m, -1.0, 1.0));
    let mut packed = vec![0.0; packed_a_len(m, k)];
    pack_a(&w, m, k, &mut packed);
    let mut y = vec![SENTINEL; m * n + 7];
    let ran = B::conv_rows(&packed, g, &x, b.as_deref(), e, &mut y);
    if !ran {
        assert!(y.iter().all(|&v| v == SENTINEL), "{g:?}: written without running");
        return false;
    }
    assert!(y[m * n..].iter().all(|&v| v == SENTINEL), "{g:?}: written past the output");
    let (image, pad) = ((g.height, g.width), (0, g.pad_left));
    let window = window2d(g.channels, image, (kh, kw), (1, 1), pad, (oh, g.width));
    let mut col = vec![0.0; k * n];
    B::im2col_2d(&x, window, 0, n, &mut col);
    let mut want = vec![SENTINEL; m * n];
    let ga = GemmA::contiguous(m, n, k, n, n).with_epilogue(e);
    B::gemm_packed_a(ga, &packed, &col, b.as_deref(), &mut want);
    for (i, (a, b)) in y.iter().zip(&want).enumerate() {
        let same = a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan());
        assert!(same, "{} {g:?} {e:?}: output {i}: {a} vs im2col {b}", B::NAME);
    }
    true
}

/// Every width 1..=40 (48-column tiles spanning several image rows, every tail), heights
/// with `kernel_h` 1..=3, kernel widths 1..=3 with every left padding, odd channel counts,
/// bias on and off, each output stage (a NaN slope takes the scalar pass); the
/// openWakeWord convs (1x3 "same" 24 -> 24 on 74x32, 96 -> 96 on 10x2; 3x3 1 -> 24 on
/// 76x32 padded by one column); rows of 77 and 130 columns.
fn conv_rows_matches_im2col<B: Backend>() {
    use rand::Rng;
    let epilogues = [
        None,
        Some(Epilogue { slope: 0.2, min: -0.4 }),
        Some(Epilogue::clamp_min(0.0)),
        Some(Epilogue { slope: f32::NAN, min: -0.4 }),
    ];
    let mut r = rng(37);
    let mut ran = 0;
    for width in 1..=40 {
        let kw = 1 + width % ROW_CONV_MAX_KW;
        let kh = 1 + (width / 3) % 3;
        let g = RowConv {
            channels: 1 + width % 5,
            out_channels: 1 + (width * 7) % 17,
            height: kh + width % 4,
            width,
            kernel_h: kh,
            kernel_w: kw,
            pad_left: r.gen_range(0..kw),
        };
        ran += rows_case::<B>(&mut r, g, width % 2 == 0, epilogues[width % 4]) as usize;
    }
    let model = [
        (24, 24, 74, 32, 1, 3, 1),
        (96, 96, 10, 2, 1, 3, 1),
        (1, 24, 76, 32, 3, 3, 1),
        (5, 9, 6, 7, 2, 2, 0),
        // Rows wider than a tile (edges in some 48-column blocks only).
        (3, 5, 4, 77, 1, 3, 1),
        (2, 3, 3, 130, 2, 3, 2),
    ];
    for (channels, out_channels, height, width, kernel_h, kernel_w, pad_left) in model {
        let g = RowConv { channels, out_channels, height, width, kernel_h, kernel_w, pad_left };
        ran += rows_case::<B>(&mut r, g, true, epilogues[1]) as usize;
    }
    // No kernel for wider windows on any backend.
    let g = RowConv {
        channels: 2,
        out_channels: 3,
        height: 4,
        width: 9,
        kernel_h: 1,
        kernel_w: ROW_CONV_MAX_KW + 1,
        pad_left: 1,
    };
    assert!(!rows_case::<B>(&mut r, g, true, None));
    if B::NAME == X86::<Avx512>::NAME {
        assert_eq!(ran, 46, "AVX-512 runs every case");
    } else {
        assert_eq!(ran, 0, "{} has no direct kernel", B::NAME);
    }
}

neon_runtime::backend_tests!(
    check_im2col,
    check_im2col_wide,
    check_conv_sweeps,
    check_conv_model_shapes,
    check_fused_equals_separate,
    matches_portable,
    conv_rows_matches_im2col,
);

// ---------------------------------------------------------------------------------------
// Geometry, packing, errors.
// ---------------------------------------------------------------------------------------

#[test]
fn geometry_and_scratch() {
    let g = Conv2dGeometry::new(24, 48, (1, 3)).same();
    assert_eq!((g.pad_top, g.pad_bottom, g.pad_left, g.pad_right), (0, 0, 1, 1));
    let even = Conv2dGeometry::new(1, 1, (4, 2)).same();
    assert_eq!((even.pad_top, even.pad_bottom, even.pad_left, even.pad_right), (1, 2, 0, 1));
    assert_eq!(g.output_size(36, 16), Some((36, 16)));
    assert_eq!(g.reduction(), 72);
    // 32768 / 72 = 455 -> 444 pixels per block.
    assert_eq!(CONV2D_BLOCK_VALUES, 32768);
    assert_eq!(g.tile_pixels(576), 444);
    assert_eq!(g.tile_pixels(100), 100);
    assert_eq!(g.scratch_len(36, 16), 72 * 444);
    let big = Conv2dGeometry::new(8192, 8, (3, 3));
    assert_eq!(big.tile_pixels(1000), 12, "at least one GEMM tile");
    let direct = Conv2dGeometry::new(72, 72, (3, 1));
    assert!(direct.is_direct() && !g.is_direct());
    assert_eq!(direct.scratch_len(30, 8), 0);
    assert_eq!(direct.output_size(30, 8), Some((28, 8)));
    assert_eq!(direct.output_size(2, 8), None);
    assert_eq!(direct.scratch_len(2, 8), 0);
    assert!(!direct.stride(1, 2).is_direct() && !direct.padding(0, 0, 0, 1).is_direct());
    let s = Conv2dGeometry::new(3, 5, (3, 3)).stride(2, 2).padding(1, 1, 1, 1);
    assert_eq!(s.output_size(7, 8), Some((4, 4)));
    assert_eq!(g.epilogue(), None);
    let e = g.leaky_relu(0.2).epilogue().unwrap();
    assert_eq!((e.slope, e.min), (0.2, f32::NEG_INFINITY));
    let e = g.clamp_min(-0.4).epilogue().unwrap();
    assert_eq!((e.slope, e.min), (1.0, -0.4));

    // The shape rule with usize dims.
    let x = Shape::new(&[24usize, 36, 16]).unwrap();
    assert_eq!(g.output_shape(&[x]), Ok(Shape::new(&[48usize, 36, 16]).unwrap()));
    let small = Shape::new(&[72usize, 2, 8]).unwrap();
    let e = direct.output_shape(&[small]).unwrap_err();
    assert_eq!(
        e.to_string(),
        "conv2d: padded input height (height + pad_top + pad_bottom) = 2 can be smaller than 3"
    );
    let wrong = Shape::new(&[23usize, 36, 16]).unwrap();
    assert_eq!(
        g.output_shape(&[wrong]).unwrap_err().to_string(),
        "conv2d expects 24 input channels, argument 0 has 23 (axis 0)"
    );
    let r2 = Shape::new(&[24usize, 36]).unwrap();
    assert!(matches!(g.output_shape(&[r2]), Err(ShapeError::Rank { got: 2, .. })));
    assert!(matches!(g.output_shape::<usize>(&[]), Err(ShapeError::Geometry { .. })));
    for bad in [
        Conv2dGeometry::new(0, 1, (1, 1)),
        Conv2dGeometry::new(1, 1, (0, 1)),
        Conv2dGeometry::new(1, 1, (1, 1)).stride(1, 0),
        Conv2dGeometry::new(1, 1, (1, 1)).leaky_relu(1.5),
        Conv2dGeometry::new(1, 1, (1, 1)).leaky_relu(-0.1),
        Conv2dGeometry::new(1, 1, (1, 1)).leaky_relu(f32::NAN),
        Conv2dGeometry::new(1, 1, (1, 1)).clamp_min(f32::NAN),
        Conv2dGeometry::new(1, 1, (1, 1)).padding(usize::MAX, 1, 0, 0),
        Conv2dGeometry::new(usize::MAX, 2, (1, 1)),
    ] {
        assert!(matches!(bad.validate::<usize>(), Err(ShapeError::Geometry { op: "conv2d", .. })));
        assert!(Conv2d::new(bad, vec![0.0; 1], None).is_err());
        assert_eq!(bad.output_size(4, 4), None);
    }
}

/// Weights packed offline (`pack_weights` into a borrowed buffer) give the same result as
/// `new`, on both the direct and the im2col path.
#[test]
fn from_packed_matches_new() {
    let mut r = rng(37);
    for g in [Conv2dGeometry::new(5, 9, (3, 1)), Conv2dGeometry::new(5, 9, (2, 3)).same()] {
        let wt = uniform(&mut r, g.weight_len().unwrap(), -1.0, 1.0);
        let b = uniform(&mut r, 9, -1.0, 1.0);
        let (op, packed) = common::new_and_packed!(Conv2d, g, wt, b);
        let borrowed = Conv2d::from_packed(g, &packed[..], Some(&b[..])).unwrap();
        let sliced = Conv2d::from_slice(g, &wt, Some(&b)).unwrap();
        assert_eq!(sliced.packed_weight(), op.packed_weight());
        let x = uniform(&mut r, 5 * 8 * 7, -1.0, 1.0);
        let (y1, (oh, ow)) = run_conv::<Portable>(&op, &x, (8, 7));
        let input = TensorView::new(&x, &[5, 8, 7], Layout::ChannelFirst).unwrap();
        let mut y2 = vec![0.0; y1.len()];
        let mut out = TensorViewMut::new(&mut y2, &[9, oh, ow], Layout::ChannelFirst).unwrap();
        let mut scratch = vec![0.0; borrowed.scratch_len(8, 7)];
        borrowed.run::<Portable>(&input, &mut out, &mut scratch).unwrap();
        assert_eq!(y1, y2);
        assert_eq!(borrowed.bias(), Some(&b[..]));
        assert_eq!(borrowed.geometry(), g);
    }
    fn send_sync<T: Send + Sync>() {}
    send_sync::<Conv2d<Vec<f32>>>();
    send_sync::<Conv2d<&'static [f32]>>();
}

#[test]
fn errors_then_reuse() {
    let mut r = rng(38);
    let g = Conv2dGeometry::new(3, 4, (3, 3)).stride(2, 1).padding(1, 0, 1, 1);
    let wt = uniform(&mut r, g.weight_len().unwrap(), -1.0, 1.0);
    let op = Conv2d::new(g, wt.clone(), None).unwrap();
    let (h, w) = (9, 6);
    let (oh, ow) = g.output_size(h, w).unwrap();
    assert_eq!((oh, ow), (4, 6));
    let x = uniform(&mut r, 3 * h * w, -1.0, 1.0);
    let input = TensorView::new(&x, &[3, h, w], Layout::ChannelFirst).unwrap();
    let mut y = vec![7.0; 4 * oh * ow];
    let mut scratch = vec![0.0; op.scratch_len(h, w)];
    let cf = Layout::ChannelFirst;

    // Too-small input: 1 + 1 rows < 3.
    let tiny = [0.0; 3 * 6];
    let tv = TensorView::new(&tiny, &[3, 1, 6], cf).unwrap();
    let mut o = TensorViewMut::new(&mut y[..24], &[4, 1, 6], cf).unwrap();
    let e = op.run::<Portable>(&tv, &mut o, &mut scratch).unwrap_err();
    assert!(matches!(e, Error::Shape(ShapeError::TooSmall { value: 2, min: 3, .. })), "{e:?}");
    // Wrong channels, rank, input layout.
    let wrong = vec![0.0; 2 * h * w];
    let wv = TensorView::new(&wrong, &[2, h, w], cf).unwrap();
    let mut o = TensorViewMut::new(&mut y, &[4, oh, ow], cf).unwrap();
    let e = op.run::<Portable>(&wv, &mut o, &mut scratch).unwrap_err();
    assert_eq!(e.to_string(), "conv2d expects 3 input channels, argument 0 has 2 (axis 0)");
    let r2 = TensorView::new(&x, &[3, h * w], cf).unwrap();
    let e = op.run::<Portable>(&r2, &mut o, &mut scratch).unwrap_err();
    assert!(matches!(e, Error::Shape(ShapeError::Rank { arg: 0, got: 2, .. })), "{e:?}");
    let fm = TensorView::new(&x, &[3, h, w], Layout::FrameMajor).unwrap();
    let e = op.run::<Portable>(&fm, &mut o, &mut scratch).unwrap_err();
    assert!(matches!(e, Error::Layout { op: "conv2d", .. }), "{e:?}");
    // Wrong output: width, channels, rank, layout.
    let mut big = vec![7.0; 4 * oh * (ow + 1)];
    let mut ob = TensorViewMut::new(&mut big, &[4, oh, ow + 1], cf).unwrap();
    let e = op.run::<Portable>(&input, &mut ob, &mut scratch).unwrap_err();
    assert!(
        matches!(e, Error::Shape(ShapeError::Dim { arg: 1, axis: 2, what: "output width", .. })),
        "{e:?}"
    );
    let mut oc = TensorViewMut::new(&mut big[..3 * oh * ow], &[3, oh, ow], cf).unwrap();
    let e = op.run::<Portable>(&input, &mut oc, &mut scratch).unwrap_err();
    assert!(matches!(e, Error::Shape(ShapeError::Dim { arg: 1, axis: 0, .. })), "{e:?}");
    let mut o2 = TensorViewMut::new(&mut big[..4 * oh * ow], &[4, oh * ow], cf).unwrap();
    let e = op.run::<Portable>(&input, &mut o2, &mut scratch).unwrap_err();
    assert!(matches!(e, Error::Shape(ShapeError::Rank { arg: 1, .. })), "{e:?}");
    let mut ol =
        TensorViewMut::new(&mut big[..4 * oh * ow], &[4, oh, ow], Layout::FrameMajor).unwrap();
    let e = op.run::<Portable>(&input, &mut ol, &mut scratch).unwrap_err();
    assert!(matches!(e, Error::Layout { .. }), "{e:?}");
    // Short scratch.
    let n = scratch.len();
    let mut o = TensorViewMut::new(&mut y, &[4, oh, ow], cf).unwrap();
    let e = op.run::<Portable>(&input, &mut o, &mut scratch[..n - 1]).unwrap_err();
    assert_eq!(e, Error::Length { what: "scratch", expected: n, got: n - 1 });
    assert!(y.iter().all(|&v| v == 7.0), "a failed run wrote output");
    // Constructor errors.
    assert_eq!(
        Conv2d::new(g, vec![0.0; 5], None).unwrap_err(),
        Error::Length { what: "weight", expected: 4 * 3 * 9, got: 5 }
    );
    assert_eq!(
        Conv2d::new(g, wt.clone(), Some(vec![0.0; 3])).unwrap_err(),
        Error::Length { what: "bias", expected: 4, got: 3 }
    );
    assert!(matches!(
        Conv2d::from_packed(g, vec![0.0; 3], None),
        Err(Error::Length { what: "packed weight", .. })
    ));
    assert!(matches!(
        g.pack_weights(&wt, &mut [0.0; 3]),
        Err(Error::Length { what: "packed weight", .. })
    ));
    // Still usable.
    let mut o = TensorViewMut::new(&mut y, &[4, oh, ow], cf).unwrap();
    op.run::<Portable>(&input, &mut o, &mut scratch).unwrap();
    let (want, mag) = conv_ref(&g, &x, (h, w), &wt, None);
    check_sum("after errors", &y, &want, &mag, 28);
}
