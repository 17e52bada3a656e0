//! conv family: im2col and depthwise kernels against f64 direct-convolution references,
//! the `Conv1d` / `DepthwiseConv1d` operators over many geometries and both output layouts,
//! every backend vs portable (generic bodies, `backend_tests!`), operator errors, and the
//! shape rules with `usize` dims.

mod common;

use common::{check_sum, nan_vec, rng, tail_sizes, transpose_ref as transpose, uniform};
use neon_runtime::error::ShapeError;
use neon_runtime::kernels::conv::Window1d;
use neon_runtime::kernels::ConvKernels;
use neon_runtime::ops::conv::{
    Conv1d, Conv1dGeometry, DepthwiseConv1d, DepthwiseConv1dGeometry, IM2COL_TILE_FRAMES,
};
use neon_runtime::ops::ShapeRule;
use neon_runtime::{Backend, Error, Layout, Portable, Shape, TensorView, TensorViewMut};
use rand::rngs::SmallRng;
use rand::Rng;

// ---------------------------------------------------------------------------------------
// References (plain f64 loops, written independently of the kernels).
// ---------------------------------------------------------------------------------------

/// Input frame read by output `n`, tap `t` (None in the zero padding).
fn src_pos(
    n: usize,
    t: usize,
    s: usize,
    d: usize,
    pad_left: usize,
    frames: usize,
) -> Option<usize> {
    let pos = (n * s + t * d) as i64 - pad_left as i64;
    (pos >= 0 && pos < frames as i64).then_some(pos as usize)
}

/// PyTorch's output length, or None when it is below 1.
fn out_len(frames: usize, k: usize, s: usize, d: usize, pl: usize, pr: usize) -> Option<usize> {
    let num = (frames + pl + pr) as i64 - (d * (k - 1)) as i64 - 1;
    (num >= 0).then(|| num as usize / s + 1)
}

/// Direct conv1d in f64: (output `[out_channels, out_frames]`, and per output the sum of
/// |terms| (|bias| + sum |w * x|), the scale of the f32 rounding error).
fn conv_ref(
    g: &Conv1dGeometry,
    x: &[f32],
    frames: usize,
    w: &[f32],
    bias: Option<&[f32]>,
) -> (Vec<f64>, Vec<f64>, usize) {
    let of = out_len(frames, g.kernel, g.stride, g.dilation, g.pad_left, g.pad_right).unwrap();
    let (cin_g, cout_g) = (g.in_channels / g.groups, g.out_channels / g.groups);
    let mut y = vec![0.0f64; g.out_channels * of];
    let mut mag = vec![0.0f64; g.out_channels * of];
    for o in 0..g.out_channels {
        let grp = o / cout_g;
        for n in 0..of {
            let b = bias.map_or(0.0, |b| b[o] as f64);
            let (mut acc, mut abs) = (b, b.abs());
            for c in 0..cin_g {
                for t in 0..g.kernel {
                    if let Some(p) = src_pos(n, t, g.stride, g.dilation, g.pad_left, frames) {
                        let v = w[(o * cin_g + c) * g.kernel + t] as f64
                            * x[(grp * cin_g + c) * frames + p] as f64;
                        acc += v;
                        abs += v.abs();
                    }
                }
            }
            y[o * of + n] = acc;
            mag[o * of + n] = abs;
        }
    }
    (y, mag, of)
}

fn with_bias(rng: &mut SmallRng, on: bool, n: usize) -> Option<Vec<f32>> {
    on.then(|| uniform(rng, n, -1.0, 1.0))
}

/// The kernels' window over `[ch, frames]`: kernel `k`, stride `s`, dilation `d`, left
/// padding `pl`.
fn window(ch: usize, frames: usize, (k, s, d, pl): (usize, usize, usize, usize)) -> Window1d {
    Window1d { channels: ch, frames, kernel: k, stride: s, dilation: d, pad_left: pl }
}

// ---------------------------------------------------------------------------------------
// im2col kernels (pure copies: must match the reference exactly).
// ---------------------------------------------------------------------------------------

/// Channel-first im2col `[ch * k, count]` of output frames `first..first + count`.
fn im2col_refs(x: &[f32], w: &Window1d, first: usize, count: usize) -> Vec<f32> {
    let (ch, frames) = (w.channels, w.frames);
    let (k, s, d, pl) = (w.kernel, w.stride, w.dilation, w.pad_left);
    let mut col = vec![0.0; ch * k * count];
    for c in 0..ch {
        for t in 0..k {
            for n in 0..count {
                if let Some(p) = src_pos(first + n, t, s, d, pl, frames) {
                    col[(c * k + t) * count + n] = x[c * frames + p];
                }
            }
        }
    }
    col
}

/// Both im2col layouts of the tile `first..first + count` on backend B, against the reference.
fn im2col_case<B: Backend>(x: &[f32], w: Window1d, first: usize, count: usize) {
    let (ch, frames) = (w.channels, w.frames);
    let (k, s, d, pl) = (w.kernel, w.stride, w.dilation, w.pad_left);
    let want = im2col_refs(x, &w, first, count);
    let ctx = format!(
        "{} im2col ch={ch} t={frames} k={k} s={s} d={d} pl={pl} tile={first}+{count}",
        B::NAME
    );
    let mut cf = nan_vec(ch * k * count);
    B::im2col_channel_first(x, w, first, count, &mut cf);
    assert_eq!(cf, want, "{ctx}");
    let mut fm = nan_vec(ch * k * count);
    B::im2col_frame_major(x, w, first, count, &mut fm);
    assert_eq!(fm, transpose(&want, ch * k, count), "{ctx} (frame-major)");
}

/// Paddings worth testing for a window: none, left, right, both (asymmetric), causal, "same".
fn paddings(k: usize, d: usize) -> [(usize, usize); 6] {
    let span = d * (k - 1);
    [(0, 0), (1, 0), (0, 2), (3, 1), (span, 0), (span / 2, span - span / 2)]
}

fn im2col<B: Backend>() {
    let mut r = rng(1);
    let frames_list: Vec<usize> = (1..=33).chain([64, 65, 127]).collect();
    let mut cases = 0;
    for &frames in &frames_list {
        let ch = if frames % 2 == 0 { 3 } else { 2 };
        let x = uniform(&mut r, ch * frames, -1.0, 1.0);
        for k in 1..=7 {
            for s in 1..=4 {
                for d in 1..=3 {
                    if k == 1 && d > 1 {
                        continue;
                    }
                    for (pl, pr) in paddings(k, d) {
                        let Some(of) = out_len(frames, k, s, d, pl, pr) else { continue };
                        im2col_case::<B>(&x, window(ch, frames, (k, s, d, pl)), 0, of);
                        // Tiles: inside the left padding, in the middle, the last frame,
                        // and past the input (all padding).
                        for first in [1, of / 2, of - 1, of + 3] {
                            let count = (of - first.min(of)).max(1);
                            im2col_case::<B>(&x, window(ch, frames, (k, s, d, pl)), first, count);
                        }
                        cases += 1;
                    }
                }
            }
        }
    }
    assert!(cases > 5000, "{cases}");
}

/// Frame-major im2col with many channels (exercises the 4-row transposes with every
/// remainder of `channels * kernel` mod 4) and a large odd shape.
fn im2col_wide<B: Backend>() {
    let mut r = rng(2);
    for (ch, frames, k, s, d, pl) in [
        (7, 40, 1, 1, 1, 0),
        (13, 33, 3, 1, 1, 1),
        (33, 29, 5, 2, 1, 2),
        (5, 50, 7, 3, 2, 6),
        (6, 31, 2, 5, 3, 1),
        (416, 37, 3, 1, 1, 1),
    ] {
        let x = uniform(&mut r, ch * frames, -1.0, 1.0);
        let of = out_len(frames, k, s, d, pl, pl).unwrap();
        let w = window(ch, frames, (k, s, d, pl));
        im2col_case::<B>(&x, w, 0, of);
        im2col_case::<B>(&x, w, of / 3, of / 2);
    }
}

// ---------------------------------------------------------------------------------------
// Depthwise kernel.
// ---------------------------------------------------------------------------------------

fn depthwise_ref(
    x: &[f32],
    win: &Window1d,
    w: &[f32],
    bias: Option<&[f32]>,
    of: usize,
) -> (Vec<f64>, Vec<f64>) {
    let (ch, frames) = (win.channels, win.frames);
    let (k, s, d, pl) = (win.kernel, win.stride, win.dilation, win.pad_left);
    let mut y = vec![0.0; ch * of];
    let mut mag = vec![0.0; ch * of];
    for c in 0..ch {
        for n in 0..of {
            let b = bias.map_or(0.0, |b| b[c] as f64);
            let (mut acc, mut abs) = (b, b.abs());
            for t in 0..k {
                if let Some(p) = src_pos(n, t, s, d, pl, frames) {
                    let v = w[c * k + t] as f64 * x[c * frames + p] as f64;
                    acc += v;
                    abs += v.abs();
                }
            }
            y[c * of + n] = acc;
            mag[c * of + n] = abs;
        }
    }
    (y, mag)
}

/// Runs one depthwise case on backend B against the reference; returns the error in units
/// of eps * sum|terms|.
/// `win` carries the left padding, `pr` is the right padding.
fn depthwise_case<B: Backend>(
    r: &mut SmallRng,
    win: Window1d,
    pr: usize,
    bias_on: bool,
) -> Option<f64> {
    let (ch, frames) = (win.channels, win.frames);
    let (k, s, d, pl) = (win.kernel, win.stride, win.dilation, win.pad_left);
    let of = out_len(frames, k, s, d, pl, pr)?;
    let x = uniform(r, ch * frames, -1.0, 1.0);
    let w = uniform(r, ch * k, -1.0, 1.0);
    let bias = with_bias(r, bias_on, ch);
    let (want, mag) = depthwise_ref(&x, &win, &w, bias.as_deref(), of);
    let mut y = nan_vec(ch * of);
    B::depthwise_conv1d(&x, win, &w, bias.as_deref(), of, &mut y);
    let what = format!("{} depthwise ch={ch} t={frames} k={k} s={s} d={d} p=({pl},{pr})", B::NAME);
    // Tolerance: a sum of k products plus the bias (see `check_sum`).
    Some(check_sum(&what, &y, &want, &mag, k + 1))
}

fn depthwise<B: Backend>() {
    let mut r = rng(3);
    let mut worst = 0.0f64;
    // Every tail 1..=33 over every small geometry.
    for frames in 1..=33 {
        for k in 1..=7 {
            for s in 1..=4 {
                for d in 1..=3 {
                    if k == 1 && d > 1 {
                        continue;
                    }
                    for (i, (pl, pr)) in paddings(k, d).into_iter().enumerate() {
                        let ch = 1 + (frames + i) % 3;
                        let bias = (frames + k + i) % 2 == 0;
                        let win = window(ch, frames, (k, s, d, pl));
                        if let Some(e) = depthwise_case::<B>(&mut r, win, pr, bias) {
                            worst = worst.max(e);
                        }
                    }
                }
            }
        }
    }
    // Longer rows (the vector interior) with the ConvNeXt k=7 "same" and causal shapes.
    for frames in tail_sizes().filter(|&t| t > 33) {
        for (k, s, d) in [(7, 1, 1), (3, 1, 2), (5, 2, 1), (3, 3, 1), (4, 5, 1)] {
            for (pl, pr) in [(0, 0), (d * (k - 1), 0), (3, 3)] {
                let win = window(3, frames, (k, s, d, pl));
                let e = depthwise_case::<B>(&mut r, win, pr, true).unwrap();
                worst = worst.max(e);
            }
        }
    }
    // Odd channel counts.
    for ch in [7, 13, 33] {
        let win = window(ch, 45, (7, 1, 1, 3));
        worst = worst.max(depthwise_case::<B>(&mut r, win, 3, true).unwrap());
    }
    eprintln!("{} depthwise: max error {worst:.3} eps * sum|terms|", B::NAME);
}

// ---------------------------------------------------------------------------------------
// Conv1d operator.
// ---------------------------------------------------------------------------------------

/// Runs `Conv1d` on backend B; output in the geometry's layout.
fn run_conv<B: Backend>(
    g: Conv1dGeometry,
    x: &[f32],
    frames: usize,
    w: &[f32],
    bias: Option<&[f32]>,
) -> Vec<f32> {
    let op = Conv1d::from_slice(g, w, bias).unwrap();
    let of = g.output_frames(frames).unwrap();
    let input = TensorView::new(x, &[g.in_channels, frames], Layout::ChannelFirst).unwrap();
    let dims = match g.output_layout {
        Layout::ChannelFirst => [g.out_channels, of],
        Layout::FrameMajor => [of, g.out_channels],
    };
    let mut y = nan_vec(g.out_channels * of);
    let mut output = TensorViewMut::new(&mut y, &dims, g.output_layout).unwrap();
    let mut scratch = nan_vec(op.scratch_len(frames));
    op.run::<B>(&input, &mut output, &mut scratch).unwrap();
    y
}

/// One conv case on backend B against the reference (converted to the output layout).
fn conv_case<B: Backend>(r: &mut SmallRng, g: Conv1dGeometry, frames: usize, bias_on: bool) -> f64 {
    let x = uniform(r, g.in_channels * frames, -1.0, 1.0);
    let w = uniform(r, g.weight_len().unwrap(), -1.0, 1.0);
    let bias = with_bias(r, bias_on, g.out_channels);
    let (want, mag, of) = conv_ref(&g, &x, frames, &w, bias.as_deref());
    let got = run_conv::<B>(g, &x, frames, &w, bias.as_deref());
    let (want, mag) = match g.output_layout {
        Layout::ChannelFirst => (want, mag),
        Layout::FrameMajor => {
            (transpose(&want, g.out_channels, of), transpose(&mag, g.out_channels, of))
        }
    };
    // Tolerance: each output is a sum of (in_channels / groups) * kernel products plus the
    // bias (see `check_sum`).
    let terms = g.in_channels / g.groups * g.kernel + 1;
    check_sum(&format!("{} {g:?} frames={frames}", B::NAME), &got, &want, &mag, terms)
}

fn both_layouts(g: Conv1dGeometry) -> [Conv1dGeometry; 2] {
    [g.output_layout(Layout::ChannelFirst), g.output_layout(Layout::FrameMajor)]
}

/// The smallest input length that gives one output frame.
fn min_frames(g: &Conv1dGeometry) -> usize {
    (g.dilation * (g.kernel - 1) + 1).saturating_sub(g.pad_left + g.pad_right).max(1)
}

fn conv1d_sweeps<B: Backend>() {
    let mut r = rng(4);
    let mut worst = 0.0f64;
    let base = [
        Conv1dGeometry::new(4, 6, 3).padding(1, 1),
        Conv1dGeometry::new(6, 4, 5).stride(2).dilation(2).groups(2).padding(4, 0),
        Conv1dGeometry::new(8, 12, 7).stride(3).groups(4).padding(2, 3),
        Conv1dGeometry::new(5, 10, 1),
        Conv1dGeometry::new(6, 12, 3).dilation(3).groups(6).causal(),
        Conv1dGeometry::new(3, 5, 2).stride(3).dilation(2),
    ];
    // Every tail 1..=33 (and the too-short lengths, which must be errors).
    for (i, g0) in base.into_iter().enumerate() {
        for g in both_layouts(g0) {
            for frames in 1..=33 {
                if g.output_frames(frames).is_none() {
                    assert!(frames < min_frames(&g));
                    continue;
                }
                worst = worst.max(conv_case::<B>(&mut r, g, frames, (frames + i) % 2 == 0));
            }
        }
    }
    // Odd channel counts, the pointwise fast path, groups == channels, a larger layer.
    let odd = [
        (Conv1dGeometry::new(7, 13, 3).padding(1, 1), 29),
        (Conv1dGeometry::new(13, 7, 5).stride(2).dilation(2).padding(4, 0), 33),
        (Conv1dGeometry::new(33, 33, 3).padding(2, 0), 31),
        (Conv1dGeometry::new(33, 33, 7).groups(33).padding(3, 3), 17),
        (Conv1dGeometry::new(7, 7, 1), 33),
        (Conv1dGeometry::new(33, 13, 1), 9),
        (Conv1dGeometry::new(13, 33, 1).stride(2), 25),
        (Conv1dGeometry::new(12, 9, 1).groups(3), 13),
        (Conv1dGeometry::new(64, 64, 3).padding(1, 1), 100),
        // Longer than one im2col tile (IM2COL_TILE_FRAMES = 256 output frames).
        (Conv1dGeometry::new(3, 5, 5).padding(2, 2), 600),
        (Conv1dGeometry::new(4, 6, 3).stride(2).dilation(2).groups(2).padding(3, 0), 1031),
        (Conv1dGeometry::new(2, 3, 1), 513),
    ];
    for (i, (g0, frames)) in odd.into_iter().enumerate() {
        for g in both_layouts(g0) {
            worst = worst.max(conv_case::<B>(&mut r, g, frames, i % 2 == 0));
            worst = worst.max(conv_case::<B>(&mut r, g, min_frames(&g), i % 2 == 1));
        }
    }
    eprintln!("{} conv1d sweeps: max error {worst:.3} eps * sum|terms|", B::NAME);
}

/// A random geometry: kernel 1..=7, stride 1..=3, dilation 1..=3, groups 1/2/4/channels,
/// asymmetric padding, either layout, frames from the shortest valid length up.
fn random_geometry(r: &mut SmallRng) -> (Conv1dGeometry, usize, bool) {
    let (cin_g, cout_g) = (r.gen_range(1..=5), r.gen_range(1..=5));
    let groups = [1, 2, 4, 0][r.gen_range(0..4)];
    let (groups, cin_g) = if groups == 0 { (r.gen_range(3..=9), 1) } else { (groups, cin_g) };
    let layout = if r.gen_bool(0.5) { Layout::ChannelFirst } else { Layout::FrameMajor };
    let g = Conv1dGeometry::new(cin_g * groups, cout_g * groups, r.gen_range(1..=7))
        .stride(r.gen_range(1..=3))
        .dilation(r.gen_range(1..=3))
        .groups(groups)
        .padding(r.gen_range(0..=4), r.gen_range(0..=4))
        .output_layout(layout);
    let frames = min_frames(&g) + if r.gen_bool(0.2) { 0 } else { r.gen_range(0..=33) };
    (g, frames, r.gen_bool(0.5))
}

fn conv1d_random<B: Backend>() {
    let mut r = rng(5);
    let mut worst = 0.0f64;
    for _ in 0..300 {
        let (g, frames, bias) = random_geometry(&mut r);
        worst = worst.max(conv_case::<B>(&mut r, g, frames, bias));
    }
    eprintln!("{} conv1d random: max error {worst:.3} eps * sum|terms|", B::NAME);
}

#[test]
fn conv1d_from_packed_matches_new() {
    let mut r = rng(6);
    for layout in [Layout::ChannelFirst, Layout::FrameMajor] {
        let g = Conv1dGeometry::new(6, 9, 3).groups(3).padding(2, 0).output_layout(layout);
        let w = uniform(&mut r, g.weight_len().unwrap(), -1.0, 1.0);
        let b = uniform(&mut r, 9, -1.0, 1.0);
        let (owned, packed) = common::new_and_packed!(Conv1d, g, w, b);
        let borrowed = Conv1d::from_packed(g, &packed[..], Some(&b[..])).unwrap();
        let x = uniform(&mut r, 6 * 20, -1.0, 1.0);
        let input = TensorView::new(&x, &[6, 20], Layout::ChannelFirst).unwrap();
        let of = g.output_frames(20).unwrap();
        let dims = if layout == Layout::ChannelFirst { [9, of] } else { [of, 9] };
        let (mut y1, mut y2) = (vec![0.0; 9 * of], vec![0.0; 9 * of]);
        let mut scratch = vec![0.0; owned.scratch_len(20)];
        let mut o1 = TensorViewMut::new(&mut y1, &dims, layout).unwrap();
        owned.run::<Portable>(&input, &mut o1, &mut scratch).unwrap();
        let mut o2 = TensorViewMut::new(&mut y2, &dims, layout).unwrap();
        borrowed.run::<Portable>(&input, &mut o2, &mut scratch).unwrap();
        assert_eq!(y1, y2);
    }
}

#[test]
fn operators_are_send_sync() {
    common::assert_ops_send_sync!(Conv1d, DepthwiseConv1d);
}

#[test]
fn depthwise_operator_matches_reference() {
    let mut r = rng(7);
    for (ch, frames, k, s, d, pl, pr) in [
        (33, 40, 7, 1, 1, 3, 3),
        (7, 19, 3, 2, 2, 4, 0),
        (13, 5, 5, 1, 1, 2, 2),
        (1, 1, 1, 1, 1, 0, 0),
    ] {
        let g = DepthwiseConv1dGeometry::new(ch, k).stride(s).dilation(d).padding(pl, pr);
        let x = uniform(&mut r, ch * frames, -1.0, 1.0);
        let w = uniform(&mut r, ch * k, -1.0, 1.0);
        let b = uniform(&mut r, ch, -1.0, 1.0);
        let op = DepthwiseConv1d::new(g, w.clone(), Some(b.clone())).unwrap();
        let of = g.output_frames(frames).unwrap();
        let input = TensorView::new(&x, &[ch, frames], Layout::ChannelFirst).unwrap();
        let mut y = nan_vec(ch * of);
        let mut out = TensorViewMut::new(&mut y, &[ch, of], Layout::ChannelFirst).unwrap();
        op.run::<Portable>(&input, &mut out).unwrap();
        let (want, mag) = depthwise_ref(&x, &window(ch, frames, (k, s, d, pl)), &w, Some(&b), of);
        check_sum("depthwise op", &y, &want, &mag, k + 1);
        // The same as a Conv1d with groups == channels.
        let cg = Conv1dGeometry::new(ch, ch, k).stride(s).dilation(d).groups(ch).padding(pl, pr);
        let y2 = run_conv::<Portable>(cg, &x, frames, &w, Some(&b));
        common::assert_close_f32("depthwise vs conv1d", &y, &y2, 1e-5, 1e-5);
    }
}

// ---------------------------------------------------------------------------------------
// Every backend vs portable on the same inputs.
// ---------------------------------------------------------------------------------------

fn matches_portable<B: Backend>() {
    let mut r = rng(8);
    // im2col is a copy: bitwise identical.
    for _ in 0..200 {
        let (g, frames, _) = random_geometry(&mut r);
        let ch = g.in_channels;
        let of = g.output_frames(frames).unwrap();
        let x = uniform(&mut r, ch * frames, -1.0, 1.0);
        let (k, s, d, pl) = (g.kernel, g.stride, g.dilation, g.pad_left);
        let win = window(ch, frames, (k, s, d, pl));
        let first = r.gen_range(0..of);
        let count = of - first;
        let (mut a, mut b) = (nan_vec(ch * k * count), nan_vec(ch * k * count));
        Portable::im2col_channel_first(&x, win, first, count, &mut a);
        B::im2col_channel_first(&x, win, first, count, &mut b);
        assert_eq!(a, b, "im2col cf {g:?}");
        Portable::im2col_frame_major(&x, win, first, count, &mut a);
        B::im2col_frame_major(&x, win, first, count, &mut b);
        assert_eq!(a, b, "im2col fm {g:?}");

        // Depthwise on the same data (one filter per channel): the two backends differ only
        // in rounding (NEON and x86 fuse multiply-adds), each within (k + 2) eps sum|terms| of the
        // exact value, so within twice that of each other; sum|terms| <= k + 1 here.
        let w = uniform(&mut r, ch * k, -1.0, 1.0);
        let bias = uniform(&mut r, ch, -1.0, 1.0);
        let (mut p, mut n) = (nan_vec(ch * of), nan_vec(ch * of));
        Portable::depthwise_conv1d(&x, win, &w, Some(&bias), of, &mut p);
        B::depthwise_conv1d(&x, win, &w, Some(&bias), of, &mut n);
        common::assert_x86_bits::<B>(&format!("depthwise {g:?}"), &n, &p);
        let tol = 2.0 * (k as f32 + 2.0) * f32::EPSILON * (k as f32 + 1.0);
        common::assert_close_f32(&format!("depthwise {} vs portable", B::NAME), &n, &p, tol, 0.0);
    }
    // The whole operator.
    for _ in 0..100 {
        let (g, frames, bias_on) = random_geometry(&mut r);
        let x = uniform(&mut r, g.in_channels * frames, -1.0, 1.0);
        let w = uniform(&mut r, g.weight_len().unwrap(), -1.0, 1.0);
        let bias = with_bias(&mut r, bias_on, g.out_channels);
        let yp = run_conv::<Portable>(g, &x, frames, &w, bias.as_deref());
        let yn = run_conv::<B>(g, &x, frames, &w, bias.as_deref());
        // Same bound as above with K = in_channels / groups * kernel products.
        let kk = (g.in_channels / g.groups * g.kernel) as f32;
        let tol = 2.0 * (kk + 2.0) * f32::EPSILON * (kk + 1.0);
        common::assert_close_f32(
            &format!("conv1d {} vs portable {g:?}", B::NAME),
            &yn,
            &yp,
            tol,
            0.0,
        );
    }
}

neon_runtime::backend_tests!(
    im2col,
    im2col_wide,
    depthwise,
    conv1d_sweeps,
    conv1d_random,
    matches_portable
);

// ---------------------------------------------------------------------------------------
// Errors.
// ---------------------------------------------------------------------------------------

#[test]
fn conv1d_errors_then_reuse() {
    let mut r = rng(9);
    let g = Conv1dGeometry::new(4, 6, 5).stride(2).padding(1, 0);
    let w = uniform(&mut r, g.weight_len().unwrap(), -1.0, 1.0);
    let op = Conv1d::new(g, w.clone(), None).unwrap();
    let frames = 12;
    let of = g.output_frames(frames).unwrap();
    assert_eq!(of, (12 + 1 - 5) / 2 + 1);
    let x = uniform(&mut r, 4 * frames, -1.0, 1.0);
    let input = TensorView::new(&x, &[4, frames], Layout::ChannelFirst).unwrap();
    let mut y = vec![7.0; 6 * of];
    let mut scratch = vec![0.0; op.scratch_len(frames)];
    assert_eq!(op.scratch_len(frames), 4 * 5 * of);

    // Too-short input: frames + pads < span.
    let short = [0.0; 4 * 3];
    let sv = TensorView::new(&short, &[4, 3], Layout::ChannelFirst).unwrap();
    let mut y1 = [0.0; 6];
    let mut o1 = TensorViewMut::new(&mut y1, &[6, 1], Layout::ChannelFirst).unwrap();
    let e = op.run::<Portable>(&sv, &mut o1, &mut scratch).unwrap_err();
    assert!(
        matches!(e, Error::Shape(ShapeError::TooSmall { op: "conv1d", value: 4, min: 5, .. })),
        "{e:?}"
    );
    assert_eq!(op.scratch_len(3), 0);

    // Wrong channel count.
    let wrong = vec![0.0; 3 * frames];
    let wv = TensorView::new(&wrong, &[3, frames], Layout::ChannelFirst).unwrap();
    let mut o = TensorViewMut::new(&mut y, &[6, of], Layout::ChannelFirst).unwrap();
    let e = op.run::<Portable>(&wv, &mut o, &mut scratch).unwrap_err();
    assert_eq!(e.to_string(), "conv1d expects 4 input channels, argument 0 has 3 (axis 0)");

    // Frame-major input, rank-3 input.
    let fv = TensorView::new(&x, &[frames, 4], Layout::FrameMajor).unwrap();
    let e = op.run::<Portable>(&fv, &mut o, &mut scratch).unwrap_err();
    assert!(matches!(e, Error::Layout { op: "conv1d", .. }), "{e:?}");
    let r3 = TensorView::new(&x, &[4, 3, 4], Layout::ChannelFirst).unwrap();
    let e = op.run::<Portable>(&r3, &mut o, &mut scratch).unwrap_err();
    assert!(matches!(e, Error::Shape(ShapeError::Rank { got: 3, .. })), "{e:?}");

    // Wrong output shape: frames off by one, wrong channels, wrong layout.
    let mut big = vec![7.0; 6 * (of + 1)];
    let mut ob = TensorViewMut::new(&mut big, &[6, of + 1], Layout::ChannelFirst).unwrap();
    let e = op.run::<Portable>(&input, &mut ob, &mut scratch).unwrap_err();
    assert!(
        matches!(e, Error::Shape(ShapeError::Dim { arg: 1, axis: 1, what: "output frames", .. })),
        "{e:?}"
    );
    let mut oc = TensorViewMut::new(&mut big[..5 * of], &[5, of], Layout::ChannelFirst).unwrap();
    let e = op.run::<Portable>(&input, &mut oc, &mut scratch).unwrap_err();
    assert!(matches!(e, Error::Shape(ShapeError::Dim { arg: 1, axis: 0, .. })), "{e:?}");
    let mut ol = TensorViewMut::new(&mut y, &[of, 6], Layout::FrameMajor).unwrap();
    let e = op.run::<Portable>(&input, &mut ol, &mut scratch).unwrap_err();
    assert!(matches!(e, Error::Layout { .. }), "{e:?}");

    // Short scratch.
    let mut o = TensorViewMut::new(&mut y, &[6, of], Layout::ChannelFirst).unwrap();
    let n = scratch.len();
    let e = op.run::<Portable>(&input, &mut o, &mut scratch[..n - 1]).unwrap_err();
    assert_eq!(e, Error::Length { what: "scratch", expected: n, got: n - 1 });
    assert!(y.iter().all(|&v| v == 7.0), "a failed run wrote output");

    // Still usable, and a longer scratch is fine.
    let mut long = vec![0.0; n + 5];
    let mut o = TensorViewMut::new(&mut y, &[6, of], Layout::ChannelFirst).unwrap();
    op.run::<Portable>(&input, &mut o, &mut long).unwrap();
    let (want, mag, _) = conv_ref(&g, &x, frames, &w, None);
    check_sum("after errors", &y, &want, &mag, 4 * 5 + 1);
}

#[test]
fn conv1d_constructor_errors() {
    let g = Conv1dGeometry::new(4, 6, 3).groups(2);
    let wl = g.weight_len().unwrap();
    assert_eq!(wl, 6 * 2 * 3);
    assert!(matches!(
        Conv1d::new(g, vec![0.0; wl - 1], None),
        Err(Error::Length { what: "weight", .. })
    ));
    assert!(matches!(
        Conv1d::new(g, vec![0.0; wl], Some(vec![0.0; 5])),
        Err(Error::Length { what: "bias", expected: 6, got: 5 })
    ));
    assert!(matches!(
        Conv1d::from_packed(g, vec![0.0; wl], None),
        Err(Error::Length { what: "packed weight", .. })
    ));
    let geometry_err = |g: Conv1dGeometry| {
        matches!(
            Conv1d::from_slice(g, &[0.0; 64], None),
            Err(Error::Shape(ShapeError::Geometry { .. }))
        )
    };
    assert!(geometry_err(Conv1dGeometry::new(4, 6, 3).groups(3)));
    assert!(geometry_err(Conv1dGeometry::new(4, 6, 3).groups(4)));
    assert!(geometry_err(Conv1dGeometry::new(4, 6, 3).groups(0)));
    assert!(geometry_err(Conv1dGeometry::new(4, 6, 0)));
    assert!(geometry_err(Conv1dGeometry::new(4, 6, 3).stride(0)));
    assert!(geometry_err(Conv1dGeometry::new(4, 6, 3).dilation(0)));
    assert!(geometry_err(Conv1dGeometry::new(0, 6, 3)));
    assert!(geometry_err(Conv1dGeometry::new(4, 6, 3).dilation(usize::MAX)));
    assert!(geometry_err(Conv1dGeometry::new(4, 6, 3).padding(usize::MAX, 1)));
    assert!(geometry_err(Conv1dGeometry::new(usize::MAX, usize::MAX, 3)));
}

#[test]
fn depthwise_errors_then_reuse() {
    let mut r = rng(10);
    let g = DepthwiseConv1dGeometry::new(5, 7).padding(3, 3);
    let w = uniform(&mut r, 35, -1.0, 1.0);
    assert!(matches!(
        DepthwiseConv1d::new(g, w[..34].to_vec(), None),
        Err(Error::Length { what: "weight", .. })
    ));
    assert!(matches!(
        DepthwiseConv1d::from_slice(g, &w, Some(&[0.0; 4])),
        Err(Error::Length { what: "bias", .. })
    ));
    assert!(matches!(
        DepthwiseConv1d::from_slice(g.stride(0), &w, None),
        Err(Error::Shape(ShapeError::Geometry { .. }))
    ));
    let op = DepthwiseConv1d::from_packed(g, &w[..], None).unwrap();
    let x = uniform(&mut r, 5 * 9, -1.0, 1.0);
    let input = TensorView::new(&x, &[5, 9], Layout::ChannelFirst).unwrap();
    let mut y = vec![7.0; 5 * 9];

    // Too short: 0 frames are impossible (shapes), 1 frame + 6 padding = 7 = span is fine,
    // so use a geometry without padding.
    let nopad =
        DepthwiseConv1d::from_packed(DepthwiseConv1dGeometry::new(5, 7), &w[..], None).unwrap();
    let mut o = TensorViewMut::new(&mut y, &[5, 9], Layout::ChannelFirst).unwrap();
    let sx = [0.0; 5 * 6];
    let sv = TensorView::new(&sx, &[5, 6], Layout::ChannelFirst).unwrap();
    let e = nopad.run::<Portable>(&sv, &mut o).unwrap_err();
    assert!(matches!(e, Error::Shape(ShapeError::TooSmall { value: 6, min: 7, .. })), "{e:?}");
    // Wrong channels, wrong input layout.
    let wv = TensorView::new(&x[..4 * 9], &[4, 9], Layout::ChannelFirst).unwrap();
    let e = op.run::<Portable>(&wv, &mut o).unwrap_err();
    assert_eq!(
        e.to_string(),
        "depthwise_conv1d expects 5 input channels, argument 0 has 4 (axis 0)"
    );
    let fv = TensorView::new(&x, &[9, 5], Layout::FrameMajor).unwrap();
    assert!(matches!(op.run::<Portable>(&fv, &mut o), Err(Error::Layout { .. })));
    // Wrong output shape and layout.
    let mut o = TensorViewMut::new(&mut y[..40], &[5, 8], Layout::ChannelFirst).unwrap();
    assert!(matches!(
        op.run::<Portable>(&input, &mut o),
        Err(Error::Shape(ShapeError::Dim { arg: 1, .. }))
    ));
    let mut o = TensorViewMut::new(&mut y, &[9, 5], Layout::FrameMajor).unwrap();
    assert!(matches!(op.run::<Portable>(&input, &mut o), Err(Error::Layout { .. })));
    assert!(y.iter().all(|&v| v == 7.0), "a failed run wrote output");
    // Still usable.
    let mut o = TensorViewMut::new(&mut y, &[5, 9], Layout::ChannelFirst).unwrap();
    op.run::<Portable>(&input, &mut o).unwrap();
    let (want, mag) = depthwise_ref(&x, &window(5, 9, (7, 1, 1, 3)), &w, None, 9);
    check_sum("depthwise after errors", &y, &want, &mag, 8);
}

// ---------------------------------------------------------------------------------------
// Shape rules with usize dims.
// ---------------------------------------------------------------------------------------

#[test]
fn shape_rules_usize() {
    let s = |d: &[usize]| Shape::new(d).unwrap();
    let g = Conv1dGeometry::new(64, 128, 3).stride(2).padding(1, 1);
    assert_eq!(g.name(), "conv1d");
    assert_eq!(g.arity(), 1);
    assert_eq!(g.output_shape(&[s(&[64, 100])]).unwrap(), s(&[128, 50]));
    let fm = g.output_layout(Layout::FrameMajor);
    assert_eq!(fm.output_shape(&[s(&[64, 100])]).unwrap(), s(&[50, 128]));
    // Channels.
    let e = g.output_shape(&[s(&[32, 100])]).unwrap_err();
    assert_eq!(e.to_string(), "conv1d expects 64 input channels, argument 0 has 32 (axis 0)");
    // Rank.
    assert!(matches!(g.output_shape(&[s(&[64])]), Err(ShapeError::Rank { got: 1, .. })));
    assert!(matches!(g.output_shape::<usize>(&[]), Err(ShapeError::Geometry { .. })));
    // Too short: frames + 2 < 3.
    assert!(matches!(
        g.output_shape(&[s(&[64, 1])]),
        Ok(sh) if sh == s(&[128, 1])
    ));
    let nopad = Conv1dGeometry::new(1, 1, 5).dilation(3);
    let e = nopad.output_shape(&[s(&[1, 12])]).unwrap_err();
    assert!(matches!(e, ShapeError::TooSmall { op: "conv1d", value: 12, min: 13, .. }), "{e:?}");
    assert_eq!(nopad.output_shape(&[s(&[1, 13])]).unwrap(), s(&[1, 1]));
    // Geometry.
    for bad in [
        Conv1dGeometry::new(64, 128, 3).stride(0),
        Conv1dGeometry::new(64, 128, 3).dilation(0),
        Conv1dGeometry::new(64, 128, 0),
        Conv1dGeometry::new(64, 128, 3).groups(3),
        Conv1dGeometry::new(64, 100, 3).groups(8),
    ] {
        assert!(matches!(bad.output_shape(&[s(&[64, 100])]), Err(ShapeError::Geometry { .. })));
    }
    // The formula against brute force (count the window starts that fit) over a range.
    for k in 1..=7 {
        for st in 1..=3 {
            for d in 1..=3 {
                for (pl, pr) in [(0, 0), (2, 1), (0, 3)] {
                    let g = Conv1dGeometry::new(2, 3, k).stride(st).dilation(d).padding(pl, pr);
                    for frames in 1..=40 {
                        let padded = frames + pl + pr;
                        let count =
                            (0..padded).step_by(st).filter(|&p| p + d * (k - 1) < padded).count();
                        match g.output_shape(&[s(&[2, frames])]) {
                            Ok(sh) => assert_eq!(sh.dims(), &[3, count]),
                            Err(ShapeError::TooSmall { .. }) => assert_eq!(count, 0),
                            Err(e) => panic!("{e}"),
                        }
                        assert_eq!(g.output_frames(frames).unwrap_or(0), count);
                    }
                }
            }
        }
    }
    // Causal: output length == input length for stride 1.
    let c = Conv1dGeometry::new(8, 8, 4).dilation(2).causal();
    assert_eq!((c.pad_left, c.pad_right), (6, 0));
    assert_eq!(c.output_shape(&[s(&[8, 1])]).unwrap(), s(&[8, 1]));
    assert_eq!(c.output_shape(&[s(&[8, 77])]).unwrap(), s(&[8, 77]));

    // Depthwise.
    let dw = DepthwiseConv1dGeometry::new(48, 7).padding(3, 3);
    assert_eq!(dw.name(), "depthwise_conv1d");
    assert_eq!(dw.output_shape(&[s(&[48, 100])]).unwrap(), s(&[48, 100]));
    assert_eq!(dw.stride(2).output_shape(&[s(&[48, 100])]).unwrap(), s(&[48, 50]));
    assert!(matches!(dw.output_shape(&[s(&[47, 100])]), Err(ShapeError::Dim { .. })));
    let dwn = DepthwiseConv1dGeometry::new(4, 7);
    assert!(matches!(dwn.output_shape(&[s(&[4, 6])]), Err(ShapeError::TooSmall { min: 7, .. })));
    assert!(matches!(
        DepthwiseConv1dGeometry::new(0, 3).output_shape(&[s(&[4, 6])]),
        Err(ShapeError::Geometry { .. })
    ));
}

/// Scratch: the pointwise fast path needs none; otherwise one group's im2col.
#[test]
fn scratch_lengths() {
    let pw = Conv1dGeometry::new(16, 32, 1);
    assert!(pw.is_pointwise_fast_path());
    assert_eq!(pw.scratch_len(100), 0);
    let pwf = pw.output_layout(Layout::FrameMajor);
    assert!(!pwf.is_pointwise_fast_path());
    assert_eq!(pwf.scratch_len(100), 16 * 100);
    let g = Conv1dGeometry::new(16, 32, 3).groups(4).stride(2).padding(1, 1);
    assert_eq!(g.scratch_len(100), 4 * 3 * 50);
    // Long inputs: one tile of IM2COL_TILE_FRAMES output frames.
    assert_eq!(g.scratch_len(100_000), 4 * 3 * IM2COL_TILE_FRAMES);
}
