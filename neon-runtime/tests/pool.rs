//! pool family: `max_pool2d` against a direct reference (exact: a maximum rounds nothing)
//! over every width 1..=33 (the NEON 4-output blocks and their tails), odd heights, kernels
//! and strides 1..=3 per axis (the 2x2/2 and 1x2/(1,2) pools of openWakeWord included),
//! NaN propagation, every backend against the portable one (bitwise), the `MaxPool2d`
//! operator and its errors; `pool1d` (avg and max, PyTorch's `AvgPool1d` / `MaxPool1d`)
//! against the f64 reference over every length 1..=33, kernel and stride 1..=4, every legal
//! padding, both `count_include_pad` and `ceil_mode` values and both layouts; the global
//! pools up to 5000 frames; the `Pool1d` and `GlobalPool` operators and their errors. One
//! generic body per case, run for every backend (`backend_tests!`: Portable, X86<Avx2>,
//! X86<Avx512>, Neon).

mod common;
#[path = "common/pool64.rs"]
mod pool64;

use common::{assert_close, rng, uniform};
use neon_runtime::error::ShapeError;
use neon_runtime::kernels::pool::{GlobalPoolGeometry, Pool1dGeometry, PoolGeometry, PoolKind};
use neon_runtime::kernels::PoolKernels;
use neon_runtime::ops::pool::{GlobalPool, MaxPool2d, Pool1d};
use neon_runtime::ops::ShapeRule;
use neon_runtime::{Backend, Error, Layout, Portable, Shape, TensorView, TensorViewMut};
use pool64::{transpose, Pool1dRef};

neon_runtime::backend_tests!(
    sweep,
    model_pools,
    specials,
    matches_portable,
    matches_portable_with_nans,
    pool1d_sweep,
    pool1d_nans,
    global_pools,
    pool_operators
);

/// `B::max_pool2d` over `c` planes of `h x w`, window `k` at stride `s`.
fn pool<B: PoolKernels>(x: &[f32], c: usize, (h, w): (usize, usize), k: Window, y: &mut [f32]) {
    let g = PoolGeometry { channels: c, height: h, width: w, kernel: k.0, stride: k.1 };
    B::max_pool2d(x, g, y);
}

/// A window and its stride: `((kh, kw), (sh, sw))`.
type Window = ((usize, usize), (usize, usize));

fn f64s(x: &[f32]) -> Vec<f64> {
    x.iter().map(|&v| v as f64).collect()
}

/// The f64 max pooling reference, rounded back (exact: a maximum rounds nothing).
fn pool_ref(
    x: &[f32],
    c: usize,
    hw: (usize, usize),
    k: (usize, usize),
    s: (usize, usize),
) -> Vec<f32> {
    pool64::max_pool2d(&f64s(x), c, hw, k, s).iter().map(|&v| v as f32).collect()
}

fn sweep<B: PoolKernels>() {
    let mut r = rng(41);
    let mut cases = 0;
    for h in [1, 2, 3, 4, 5, 7, 10] {
        for w in 1..=33 {
            let c = 1 + (h + w) % 3;
            let x = uniform(&mut r, c * h * w, -1.0, 1.0);
            for kh in 1..=3.min(h) {
                for kw in 1..=3.min(w) {
                    for (sh, sw) in [(1, 1), (2, 2), (1, 2), (2, 1), (3, 3), (kh, kw)] {
                        let want = pool_ref(&x, c, (h, w), (kh, kw), (sh, sw));
                        let mut y = vec![f32::NAN; want.len()];
                        pool::<B>(&x, c, (h, w), ((kh, kw), (sh, sw)), &mut y);
                        assert_eq!(
                            y,
                            want,
                            "{} c={c} {h}x{w} k=({kh},{kw}) s=({sh},{sw})",
                            B::NAME
                        );
                        cases += 1;
                    }
                }
            }
        }
    }
    assert!(cases > 5000, "{cases}");
}

/// openWakeWord's pools at their sizes (odd sizes drop the last row / column).
fn model_pools<B: PoolKernels>() {
    let mut r = rng(42);
    for (c, h, w, k, s) in [
        (24, 72, 32, (2, 2), (2, 2)),
        (48, 32, 16, (1, 2), (1, 2)),
        (72, 28, 8, (2, 2), (2, 2)),
        (96, 10, 4, (1, 2), (1, 2)),
        (96, 6, 2, (2, 2), (2, 2)),
        (5, 13, 9, (2, 2), (2, 2)),
        (3, 7, 11, (1, 2), (1, 2)),
    ] {
        let x = uniform(&mut r, c * h * w, -3.0, 3.0);
        let want = pool_ref(&x, c, (h, w), k, s);
        let mut y = vec![f32::NAN; want.len()];
        pool::<B>(&x, c, (h, w), (k, s), &mut y);
        assert_eq!(y, want, "{} {c}x{h}x{w} {k:?} {s:?}", B::NAME);
    }
}

/// A NaN anywhere in a window gives NaN there and nowhere else; `max(-0, +0) = +0`.
fn specials<B: PoolKernels>() {
    for (k, s) in [((2, 2), (2, 2)), ((1, 2), (1, 2)), ((2, 3), (1, 1)), ((3, 2), (2, 3))] {
        let (h, w) = (6, 26);
        for pos in [0, 7, 25, 26 + 13, 5 * 26 + 25] {
            let mut x: Vec<f32> = (0..h * w).map(|i| (i % 17) as f32 - 8.0).collect();
            x[pos] = f32::NAN;
            let clean: Vec<f32> = x.iter().map(|v| if v.is_nan() { 0.0 } else { *v }).collect();
            let (oh, ow) = ((h - k.0) / s.0 + 1, (w - k.1) / s.1 + 1);
            let mut y = vec![0.0; oh * ow];
            pool::<B>(&x, 1, (h, w), (k, s), &mut y);
            let want = pool_ref(&clean, 1, (h, w), k, s);
            for r in 0..oh {
                for q in 0..ow {
                    let (pr, pc) = (pos / w, pos % w);
                    let inside = (r * s.0..r * s.0 + k.0).contains(&pr)
                        && (q * s.1..q * s.1 + k.1).contains(&pc);
                    let v = y[r * ow + q];
                    if inside {
                        assert!(
                            v.is_nan(),
                            "{} {k:?} {s:?} NaN at {pos}: ({r},{q}) = {v}",
                            B::NAME
                        );
                    } else {
                        assert_eq!(v, want[r * ow + q], "{} {k:?} {s:?}", B::NAME);
                    }
                }
            }
        }
        // Signed zeros: every window holds -0 and +0 -> +0.
        let x: Vec<f32> = (0..6 * 26).map(|i| if i % 2 == 0 { -0.0 } else { 0.0 }).collect();
        let (oh, ow) = ((6 - k.0) / s.0 + 1, (26 - k.1) / s.1 + 1);
        let mut y = vec![1.0; oh * ow];
        pool::<B>(&x, 1, (6, 26), (k, s), &mut y);
        if k.1 >= 2 {
            assert!(y.iter().all(|v| v.to_bits() == 0), "{} {k:?}: {y:?}", B::NAME);
        }
    }
}

/// Bitwise agreement with the portable backend, random data with repeated values and
/// signed zeros.
fn matches_portable<B: PoolKernels>() {
    let mut r = rng(43);
    for (c, h, w) in [(3, 9, 37), (2, 16, 64), (1, 5, 8)] {
        // Rounded: many equal values, and -0 (from rounding small negatives) next to +0.
        let x: Vec<f32> = uniform(&mut r, c * h * w, -2.0, 2.0).iter().map(|v| v.round()).collect();
        for k in [(2, 2), (1, 2), (3, 1), (2, 3)] {
            for s in [(2, 2), (1, 2), (1, 1)] {
                let (oh, ow) = ((h - k.0) / s.0 + 1, (w - k.1) / s.1 + 1);
                let (mut a, mut b) = (vec![0.0; c * oh * ow], vec![0.0; c * oh * ow]);
                pool::<Portable>(&x, c, (h, w), (k, s), &mut a);
                pool::<B>(&x, c, (h, w), (k, s), &mut b);
                let same = a.iter().zip(&b).all(|(p, q)| p.to_bits() == q.to_bits());
                assert!(same, "{} {k:?} {s:?}", B::NAME);
            }
        }
    }
}

/// Bit for bit against the portable backend: rounded random data (many ties, `-0` next to
/// `+0`) with NaNs sprinkled in, every width 1..=40 (full vectors of 16 and 8 outputs and
/// every tail), heights 2..=7, kernels `kh x 2` at strides `(sh, 2)` and a few others.
/// Where a window holds NaNs only NaN-ness is compared (the x86 kernels may return a
/// different one of them).
fn matches_portable_with_nans<B: PoolKernels>() {
    let mut r = rng(44);
    let mut cases = 0;
    for h in 2..=7 {
        for w in 1..=40 {
            let c = 1 + (h * w) % 3;
            let mut x: Vec<f32> =
                uniform(&mut r, c * h * w, -2.0, 2.0).iter().map(|v| v.round()).collect();
            if w % 3 == 0 {
                x[(h * w * 7) % (c * h * w)] = f32::NAN;
            }
            for (k, s) in [
                ((1, 2), (1, 2)),
                ((2, 2), (2, 2)),
                ((2, 2), (1, 2)),
                ((3, 2), (2, 2)),
                ((1, 2), (2, 2)),
                ((2, 1), (1, 1)),
                ((2, 3), (2, 2)),
            ] {
                if k.0 > h || k.1 > w {
                    continue;
                }
                let (oh, ow) = ((h - k.0) / s.0 + 1, (w - k.1) / s.1 + 1);
                let (mut a, mut b) = (vec![1.0; c * oh * ow], vec![2.0; c * oh * ow]);
                pool::<Portable>(&x, c, (h, w), (k, s), &mut a);
                pool::<B>(&x, c, (h, w), (k, s), &mut b);
                for (i, (p, q)) in a.iter().zip(&b).enumerate() {
                    let same = p.to_bits() == q.to_bits() || (p.is_nan() && q.is_nan());
                    assert!(same, "{} {c}x{h}x{w} {k:?} {s:?} at {i}: {p} vs {q}", B::NAME);
                }
                cases += 1;
            }
        }
    }
    assert!(cases > 1000, "{cases}");
}

#[test]
#[should_panic(expected = "max_pool2d: kernel larger than the image")]
fn contract_kernel() {
    pool::<Portable>(&[0.0; 4], 1, (1, 4), ((2, 2), (2, 2)), &mut [0.0; 2]);
}

#[test]
#[should_panic(expected = "max_pool2d: y length")]
fn contract_y() {
    pool::<Portable>(&[0.0; 8], 1, (2, 4), ((2, 2), (2, 2)), &mut [0.0; 3]);
}

#[test]
fn operator() {
    let cf = Layout::ChannelFirst;
    let pool = MaxPool2d::new((2, 2));
    assert_eq!(pool, MaxPool2d { kernel_h: 2, kernel_w: 2, stride_h: 2, stride_w: 2 });
    let p12 = MaxPool2d::new((1, 2)).stride(1, 2);
    assert_eq!(pool.name(), "max_pool2d");
    let s = |d: &[usize]| Shape::new(d).unwrap();
    assert_eq!(pool.output_shape(&[s(&[24, 73, 32])]), Ok(s(&[24, 36, 16])));
    assert_eq!(p12.output_shape(&[s(&[48, 32, 17])]), Ok(s(&[48, 32, 8])));
    let e = pool.output_shape(&[s(&[8, 5, 1])]).unwrap_err();
    assert_eq!(e.to_string(), "max_pool2d: input width = 1 can be smaller than 2");
    assert!(matches!(pool.output_shape(&[s(&[8, 5])]), Err(ShapeError::Rank { got: 2, .. })));
    let bad = MaxPool2d::new((0, 2));
    assert!(matches!(bad.output_shape(&[s(&[1, 4, 4])]), Err(ShapeError::Geometry { .. })));
    let bad = MaxPool2d::new((2, 2)).stride(2, 0);
    assert!(matches!(bad.output_shape(&[s(&[1, 4, 4])]), Err(ShapeError::Geometry { .. })));

    let mut r = rng(44);
    let x = uniform(&mut r, 3 * 7 * 9, -1.0, 1.0);
    let input = TensorView::new(&x, &[3, 7, 9], cf).unwrap();
    let mut y = vec![7.0; 3 * 3 * 4];
    // Errors before any write: wrong output shape, layouts, rank.
    let mut o = TensorViewMut::new(&mut y[..3 * 3 * 3], &[3, 3, 3], cf).unwrap();
    let e = pool.run::<Portable>(&input, &mut o).unwrap_err();
    assert!(matches!(e, Error::Shape(ShapeError::Dim { arg: 1, axis: 2, .. })), "{e:?}");
    let mut o = TensorViewMut::new(&mut y, &[3, 3, 4], Layout::FrameMajor).unwrap();
    assert!(matches!(pool.run::<Portable>(&input, &mut o), Err(Error::Layout { .. })));
    let fm = TensorView::new(&x, &[3, 7, 9], Layout::FrameMajor).unwrap();
    let mut o = TensorViewMut::new(&mut y, &[3, 3, 4], cf).unwrap();
    assert!(matches!(pool.run::<Portable>(&fm, &mut o), Err(Error::Layout { .. })));
    let mut o = TensorViewMut::new(&mut y, &[3, 12], cf).unwrap();
    assert!(matches!(
        pool.run::<Portable>(&input, &mut o),
        Err(Error::Shape(ShapeError::Rank { arg: 1, .. }))
    ));
    assert!(y.iter().all(|&v| v == 7.0));
    let mut o = TensorViewMut::new(&mut y, &[3, 3, 4], cf).unwrap();
    pool.run::<Portable>(&input, &mut o).unwrap();
    assert_eq!(y, pool_ref(&x, 3, (7, 9), (2, 2), (2, 2)));
    fn send_sync<T: Send + Sync + Copy>() {}
    send_sync::<MaxPool2d>();
}

const LAYOUTS: [Layout; 2] = [Layout::ChannelFirst, Layout::FrameMajor];

/// `B::pool1d` of the channel-first `[c, t]` values `x` with the options of `p`, run in
/// `layout` (the input and output transposed for frame-major); the output channel-first.
fn pool1d<B: PoolKernels>(
    x: &[f32],
    c: usize,
    t: usize,
    p: &Pool1dRef,
    layout: Layout,
) -> Vec<f32> {
    let g = Pool1dGeometry {
        kind: if p.max { PoolKind::Max } else { PoolKind::Avg },
        channels: c,
        frames: t,
        kernel: p.kernel,
        stride: p.stride,
        pad: p.pad,
        ceil_mode: p.ceil_mode,
        count_include_pad: p.count_include_pad,
        layout,
    };
    let out = g.out_frames();
    let mut y = vec![f32::NAN; c * out];
    match layout {
        Layout::ChannelFirst => B::pool1d(x, g, &mut y),
        Layout::FrameMajor => {
            B::pool1d(&transpose(x, c, t), g, &mut y);
            y = transpose(&y, out, c);
        }
    }
    y
}

/// `got` against the f64 reference: NaN exactly where the reference has NaN, elsewhere
/// exact for max, within f32 rounding of a sum for avg.
fn check_pool(what: &str, got: &[f32], want: &[f64], max: bool) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
        assert_eq!(g.is_nan(), w.is_nan(), "{what}: NaN at index {i}: got {g}, want {w}");
    }
    let got: Vec<f32> = got.iter().map(|&v| if v.is_nan() { 0.0 } else { v }).collect();
    let want: Vec<f64> = want.iter().map(|&v| if v.is_nan() { 0.0 } else { v }).collect();
    if max {
        for (i, (&g, &w)) in got.iter().zip(&want).enumerate() {
            assert_eq!(g.to_bits(), (w as f32).to_bits(), "{what}: index {i}: got {g}, want {w}");
        }
    } else {
        assert_close(what, &got, &want, 1e-6, 1e-6);
    }
}

/// Every legal `pool1d` over lengths 1..=33, kernels and strides 1..=4, pads up to
/// `kernel / 2` on either side, both `count_include_pad`, `ceil_mode` where its limit
/// allows (`stride <= kernel - right`: PyTorch's length, last-window drop rule included,
/// is then the plain ceil formula), both layouts, avg and max.
fn pool1d_sweep<B: PoolKernels>() {
    let mut r = rng(45);
    let mut cases = 0;
    for t in 1..=33 {
        let c = 1 + t % 3;
        let x = uniform(&mut r, c * t, -1.0, 1.0);
        let x64 = f64s(&x);
        for k in 1..=4 {
            for s in 1..=4 {
                for (pl, pr) in (0..=k / 2).flat_map(|l| (0..=k / 2).map(move |r| (l, r))) {
                    if t + pl + pr < k {
                        continue;
                    }
                    for (max, cip, ceil) in (0..8).map(|b| (b & 1 == 1, b & 2 == 2, b & 4 == 4)) {
                        if ceil && s > k - pr {
                            continue;
                        }
                        let p = Pool1dRef {
                            max,
                            kernel: k,
                            stride: s,
                            pad: (pl, pr),
                            ceil_mode: ceil,
                            count_include_pad: cip,
                        };
                        let want = p.run(&x64, c, t);
                        for layout in LAYOUTS {
                            let got = pool1d::<B>(&x, c, t, &p, layout);
                            check_pool(
                                &format!("{} t={t} {p:?} {layout:?}", B::NAME),
                                &got,
                                &want,
                                max,
                            );
                            cases += 1;
                        }
                    }
                }
            }
        }
    }
    assert!(cases > 10_000, "{cases}");
}

/// A NaN gives NaN in exactly the windows that hold it (avg and max, padded or not; none
/// when the dropped last frames hold it).
fn pool1d_nans<B: PoolKernels>() {
    let (c, t) = (2, 23);
    for pos in [0, 5, 22, 23 + 11, 2 * 23 - 1] {
        let mut x: Vec<f32> = (0..c * t).map(|i| (i % 7) as f32 - 3.0).collect();
        x[pos] = f32::NAN;
        for (k, s, pad) in [(2, 2, (0, 0)), (3, 2, (1, 1)), (4, 3, (2, 1)), (3, 1, (0, 1))] {
            for max in [false, true] {
                let p = Pool1dRef {
                    max,
                    kernel: k,
                    stride: s,
                    pad,
                    ceil_mode: false,
                    count_include_pad: true,
                };
                let want = p.run(&f64s(&x), c, t);
                for layout in LAYOUTS {
                    let got = pool1d::<B>(&x, c, t, &p, layout);
                    let what = format!("{} NaN at {pos} {p:?} {layout:?}", B::NAME);
                    check_pool(&what, &got, &want, max);
                }
            }
        }
    }
}

/// Global pools: lengths up to 5000 (past the 4096-value blocks of the row sums), both
/// layouts, a NaN in one channel.
fn global_pools<B: PoolKernels>() {
    let mut r = rng(46);
    for t in [1, 2, 3, 7, 33, 4095, 4096, 4097, 5000] {
        for c in [1, 3, 5] {
            let mut x = uniform(&mut r, c * t, -1.0, 1.0);
            if t == 7 {
                x[(c - 1) * t + 3] = f32::NAN; // the last channel
            }
            for max in [false, true] {
                let want = pool64::global_pool(&f64s(&x), c, t, max);
                for layout in LAYOUTS {
                    let kind = if max { PoolKind::Max } else { PoolKind::Avg };
                    let g = GlobalPoolGeometry { kind, channels: c, frames: t, layout };
                    let xs = match layout {
                        Layout::ChannelFirst => x.clone(),
                        Layout::FrameMajor => transpose(&x, c, t),
                    };
                    let mut y = vec![0.5; c];
                    B::global_pool(&xs, g, &mut y);
                    let what = format!("{} global t={t} c={c} max={max} {layout:?}", B::NAME);
                    check_pool(&what, &y, &want, max);
                }
            }
        }
    }
}

/// The `Pool1d` and `GlobalPool` operators: shape rules (symbolic facts through the same
/// rule), their errors before any write, and the runs against the reference.
fn pool_operators<B: Backend>() {
    let s = |d: &[usize]| Shape::new(d).unwrap();
    let avg = Pool1d::new(PoolKind::Avg, 3);
    assert_eq!(avg.stride, 3);
    assert_eq!(avg.name(), "avg_pool1d");
    assert_eq!(Pool1d::new(PoolKind::Max, 2).name(), "max_pool1d");
    assert_eq!(avg.output_shape(&[s(&[4, 10])]), Ok(s(&[4, 3])));
    let fm = avg.stride(2).padding(1, 1).layout(Layout::FrameMajor);
    assert_eq!(fm.output_shape(&[s(&[10, 4])]), Ok(s(&[5, 4])));
    assert_eq!(fm.ceil_mode(true).output_shape(&[s(&[11, 4])]), Ok(s(&[6, 4])));
    let geometry =
        |p: Pool1d| matches!(p.output_shape(&[s(&[4, 10])]), Err(ShapeError::Geometry { .. }));
    assert!(geometry(Pool1d::new(PoolKind::Avg, 0)));
    assert!(geometry(avg.stride(0)));
    assert!(geometry(avg.padding(2, 0)));
    assert!(geometry(avg.padding(0, 2)));
    assert!(geometry(avg.stride(3).padding(0, 1).ceil_mode(true)));
    assert!(!geometry(avg.stride(2).padding(0, 1).ceil_mode(true)));
    let e = Pool1d::new(PoolKind::Max, 5).output_shape(&[s(&[4, 3])]).unwrap_err();
    assert_eq!(e.to_string(), "max_pool1d: input frames = 3 can be smaller than 5");
    let e = avg.padding(1, 0).output_shape(&[s(&[4, 1])]).unwrap_err();
    assert_eq!(e.to_string(), "avg_pool1d: padded input frames = 2 can be smaller than 3");
    assert!(matches!(avg.output_shape(&[s(&[4, 10, 2])]), Err(ShapeError::Rank { got: 3, .. })));
    let global = GlobalPool { kind: PoolKind::Avg, layout: Layout::ChannelFirst };
    assert_eq!(global.name(), "global_avg_pool");
    assert_eq!(global.output_shape(&[s(&[6, 9])]), Ok(s(&[6, 1])));
    let gmax = GlobalPool { kind: PoolKind::Max, layout: Layout::FrameMajor };
    assert_eq!(gmax.name(), "global_max_pool");
    assert_eq!(gmax.output_shape(&[s(&[9, 6])]), Ok(s(&[1, 6])));
    assert!(matches!(gmax.output_shape(&[s(&[9])]), Err(ShapeError::Rank { got: 1, .. })));

    // Runs: errors first (nothing written), then the values.
    let cf = Layout::ChannelFirst;
    let mut r = rng(47);
    let x = uniform(&mut r, 4 * 10, -1.0, 1.0);
    let p = avg.stride(2).padding(1, 1).count_include_pad(false);
    let input = TensorView::new(&x, &[4, 10], cf).unwrap();
    let mut y = vec![7.0; 4 * 5];
    let mut o = TensorViewMut::new(&mut y[..16], &[4, 4], cf).unwrap();
    let e = p.run::<B>(&input, &mut o).unwrap_err();
    assert!(matches!(e, Error::Shape(ShapeError::Dim { arg: 1, axis: 1, .. })), "{e:?}");
    let mut o = TensorViewMut::new(&mut y, &[4, 5], Layout::FrameMajor).unwrap();
    assert!(matches!(p.run::<B>(&input, &mut o), Err(Error::Layout { .. })));
    let fm_in = TensorView::new(&x, &[10, 4], Layout::FrameMajor).unwrap();
    let mut o = TensorViewMut::new(&mut y, &[4, 5], cf).unwrap();
    assert!(matches!(p.run::<B>(&fm_in, &mut o), Err(Error::Layout { .. })));
    let mut o = TensorViewMut::new(&mut y[..4], &[4, 1], cf).unwrap();
    assert!(matches!(global.run::<B>(&fm_in, &mut o), Err(Error::Layout { .. })));
    assert!(y.iter().all(|&v| v == 7.0));
    let mut o = TensorViewMut::new(&mut y, &[4, 5], cf).unwrap();
    p.run::<B>(&input, &mut o).unwrap();
    let want = Pool1dRef {
        max: false,
        kernel: 3,
        stride: 2,
        pad: (1, 1),
        ceil_mode: false,
        count_include_pad: false,
    };
    assert_close("avg_pool1d op", &y, &want.run(&f64s(&x), 4, 10), 1e-6, 1e-6);
    let mut o = TensorViewMut::new(&mut y[..4], &[4, 1], cf).unwrap();
    global.run::<B>(&input, &mut o).unwrap();
    assert_close("global op", &y[..4], &pool64::global_pool(&f64s(&x), 4, 10, false), 1e-6, 1e-6);
    fn send_sync<T: Send + Sync + Copy>() {}
    send_sync::<Pool1d>();
    send_sync::<GlobalPool>();
}

#[test]
#[should_panic(expected = "pool1d: ceil_mode needs stride <= kernel - right pad")]
fn contract_ceil_mode() {
    let g = Pool1dGeometry {
        kind: PoolKind::Avg,
        channels: 1,
        frames: 8,
        kernel: 2,
        stride: 2,
        pad: (0, 1),
        ceil_mode: true,
        count_include_pad: true,
        layout: Layout::ChannelFirst,
    };
    Portable::pool1d(&[0.0; 8], g, &mut [0.0; 5]);
}
