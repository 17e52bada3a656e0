//! pool family: `max_pool2d` against a direct reference (exact: a maximum rounds nothing)
//! over every width 1..=33 (the NEON 4-output blocks and their tails), odd heights, kernels
//! and strides 1..=3 per axis (the 2x2/2 and 1x2/(1,2) pools of openWakeWord included),
//! NaN propagation, every backend against the portable one (bitwise), the `MaxPool2d`
//! operator and its errors. One generic body per case, run for every backend
//! (`backend_tests!`: Portable, X86<Avx2>, X86<Avx512>, Neon).

mod common;

use common::{rng, uniform};
use neon_runtime::error::ShapeError;
use neon_runtime::kernels::pool::PoolGeometry;
use neon_runtime::kernels::PoolKernels;
use neon_runtime::ops::pool::MaxPool2d;
use neon_runtime::ops::ShapeRule;
use neon_runtime::{Error, Layout, Portable, Shape, TensorView, TensorViewMut};

neon_runtime::backend_tests!(
    sweep,
    model_pools,
    specials,
    matches_portable,
    matches_portable_with_nans
);

/// `B::max_pool2d` over `c` planes of `h x w`, window `k` at stride `s`.
fn pool<B: PoolKernels>(x: &[f32], c: usize, (h, w): (usize, usize), k: Window, y: &mut [f32]) {
    let g = PoolGeometry { channels: c, height: h, width: w, kernel: k.0, stride: k.1 };
    B::max_pool2d(x, g, y);
}

/// A window and its stride: `((kh, kw), (sh, sw))`.
type Window = ((usize, usize), (usize, usize));

/// Direct max pooling; `f64::max` is enough here (no NaN in these inputs).
fn pool_ref(
    x: &[f32],
    c: usize,
    (h, w): (usize, usize),
    (kh, kw): (usize, usize),
    (sh, sw): (usize, usize),
) -> Vec<f32> {
    let (oh, ow) = ((h - kh) / sh + 1, (w - kw) / sw + 1);
    let mut y = Vec::with_capacity(c * oh * ow);
    for ch in 0..c {
        for r in 0..oh {
            for q in 0..ow {
                let mut m = f32::NEG_INFINITY;
                for i in 0..kh {
                    for j in 0..kw {
                        m = m.max(x[(ch * h + r * sh + i) * w + q * sw + j]);
                    }
                }
                y.push(m);
            }
        }
    }
    y
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
