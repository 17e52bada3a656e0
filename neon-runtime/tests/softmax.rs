//! Softmax kernels against an f64 reference on many `[rows, cols]` geometries (every tail of
//! `cols`), special values, every backend against the portable one; the Softmax operator's
//! errors. One generic body per case, run for every backend (`backend_tests!`).

mod common;

use common::{rng, tail_sizes, uniform};
use neon_runtime::kernels::SoftmaxKernels;
use neon_runtime::ops::softmax::Softmax;
use neon_runtime::ops::ShapeRule;
use neon_runtime::{Error, Layout, Portable, Shape, ShapeError, TensorView, TensorViewMut};

neon_runtime::backend_tests!(softmax, special, matches_portable);

const EPS: f64 = f32::EPSILON as f64;
const U: f64 = EPS / 2.0;

fn reference(x: &[f32], rows: usize, cols: usize) -> Vec<f64> {
    let mut y = Vec::with_capacity(rows * cols);
    for r in x.chunks_exact(cols) {
        let m = r.iter().fold(f64::NEG_INFINITY, |a, &b| a.max(b as f64));
        let e: Vec<f64> = r.iter().map(|&v| (v as f64 - m).exp()).collect();
        let s: f64 = e.iter().sum();
        y.extend(e.iter().map(|v| v / s));
    }
    y
}

/// Error bound per element (relative to the true `y_j`), from the kernel's algorithm:
/// - `x_j - m` is rounded once: `|d_j| U` relative on `exp(d_j)`;
/// - exp: <= 2 eps (measured 0.7 eps, see tests/activation.rs);
/// - the sum: every term carries the two errors above (at most `2 eps + D U` with `D` the
///   row's largest `|d|`), and 8 / 16 partial sums of `cols / 8` terms each plus a
///   pairwise combine add <= `(cols / 8 + 4) U` (positive terms);
/// - reciprocal and product: `2 U`.
///
/// Plus `f32::MIN_POSITIVE` absolute for exponentials flushed below the smallest normal.
fn bounds(x: &[f32], want: &[f64], cols: usize) -> Vec<f64> {
    let mut b = Vec::with_capacity(x.len());
    for (r, w) in x.chunks_exact(cols).zip(want.chunks_exact(cols)) {
        let m = r.iter().fold(f32::NEG_INFINITY, |a, &b| a.max(b)) as f64;
        let dmax = r.iter().map(|&v| (v as f64 - m).abs()).fold(0.0, f64::max);
        let sum_rel = 2.0 * EPS + dmax * U + (cols as f64 / 8.0 + 4.0) * U;
        for (&v, &wj) in r.iter().zip(w) {
            let rel = 2.0 * EPS + (v as f64 - m).abs() * U + sum_rel + 2.0 * U;
            b.push(f32::MIN_POSITIVE as f64 + rel * wj);
        }
    }
    b
}

fn check_close(what: &str, got: &[f32], want: &[f64], bound: &[f64]) {
    for (i, ((&g, &w), &b)) in got.iter().zip(want).zip(bound).enumerate() {
        let err = (g as f64 - w).abs();
        assert!(err <= b, "{what}: index {i}: got {g:e}, want {w:e}, err {err:e}, allowed {b:e}");
    }
}

fn geometries() -> Vec<(usize, usize)> {
    let mut g: Vec<(usize, usize)> = tail_sizes().map(|n| (1, n)).collect();
    g.extend(tail_sizes().take(33).map(|n| (3, n)));
    g.extend([(5, 1), (7, 13), (13, 7), (416, 1664)]);
    g
}

fn softmax<B: SoftmaxKernels>() {
    let mut r = rng(31);
    for (rows, cols) in geometries() {
        // Logit-like data, and a wide range that underflows most exponentials.
        for (lo, hi) in [(-8.0f32, 8.0f32), (-100.0, 100.0)] {
            if rows * cols > 100_000 && lo < -10.0 {
                continue;
            }
            let x = uniform(&mut r, rows * cols, lo, hi);
            let want = reference(&x, rows, cols);
            let bound = bounds(&x, &want, cols);
            let mut y = x.clone();
            B::softmax(&mut y, rows, cols);
            check_close(&format!("{} softmax {rows}x{cols}", B::NAME), &y, &want, &bound);
            let mut z = vec![f32::NAN; rows * cols];
            B::softmax_to(&x, &mut z, rows, cols);
            assert_eq!(y, z, "softmax_to == softmax");
        }
    }
}

fn special<B: SoftmaxKernels>() {
    let ninf = f32::NEG_INFINITY;
    // A single column is exactly 1.
    let mut x = [3.0f32, -1e30, 7.5];
    B::softmax(&mut x, 3, 1);
    assert_eq!(x, [1.0; 3]);
    // Masked (-inf) logits give exactly 0; the rest is normalised.
    let mut x = [0.0f32, ninf, 0.0, ninf, ninf, 1.0];
    B::softmax(&mut x, 1, 6);
    assert_eq!(x[1], 0.0);
    assert_eq!(x[3], 0.0);
    assert_eq!(x[4], 0.0);
    let e = 1.0f64.exp();
    for (g, w) in [(x[0], 1.0 / (2.0 + e)), (x[5], e / (2.0 + e))] {
        assert!((g as f64 - w).abs() < 4.0 * EPS * w);
    }
    // Shift invariance with huge logits (no overflow).
    let mut a = [1000.0f32, 1001.0, 1002.0, 999.0, 1000.5];
    let mut b = [0.0f32, 1.0, 2.0, -1.0, 0.5];
    B::softmax(&mut a, 1, 5);
    B::softmax(&mut b, 1, 5);
    assert_eq!(a, b);
    // NaN or +inf anywhere, or all -inf: the row is NaN; other rows unaffected.
    for bad in [f32::NAN, f32::INFINITY] {
        for pos in [0, 5, 16, 18] {
            let mut x = vec![0.5f32; 2 * 19];
            x[pos] = bad;
            B::softmax(&mut x, 2, 19);
            assert!(x[..19].iter().all(|v| v.is_nan()), "{bad} at {pos}");
            assert!(x[19..].iter().all(|&v| (v as f64 - 1.0 / 19.0).abs() < 1e-7));
        }
    }
    let mut x = [ninf; 5];
    B::softmax(&mut x, 1, 5);
    assert!(x.iter().all(|v| v.is_nan()));
    // Empty geometry.
    B::softmax(&mut [], 0, 7);
    B::softmax(&mut [], 3, 0);
}

#[test]
#[should_panic(expected = "not rows * cols")]
fn geometry_mismatch_panics() {
    Portable::softmax(&mut [0.0; 10], 3, 3);
}

/// Same inputs through `B` and the portable backend: each is within the bound of the f64
/// reference, so they are within twice the bound of each other.
fn matches_portable<B: SoftmaxKernels>() {
    let mut r = rng(32);
    for (rows, cols) in [(1, 1), (2, 3), (7, 13), (13, 7), (4, 257), (1, 1000)] {
        let x = uniform(&mut r, rows * cols, -8.0, 8.0);
        let want = reference(&x, rows, cols);
        let bound = bounds(&x, &want, cols);
        let (mut p, mut q) = (x.clone(), x.clone());
        Portable::softmax(&mut p, rows, cols);
        B::softmax(&mut q, rows, cols);
        for i in 0..p.len() {
            let e = (p[i] - q[i]).abs() as f64;
            assert!(e <= 2.0 * bound[i], "{} {rows}x{cols} {i}", B::NAME);
        }
    }
}

#[test]
fn softmax_op() {
    let x: Vec<f32> = (0..24).map(|i| (i % 5) as f32).collect();
    let s = Softmax;
    // Rank 3 `[heads, queries, keys]`: the last axis is normalised.
    let vx = TensorView::new(&x, &[2, 3, 4], Layout::FrameMajor).unwrap();
    let mut o = vec![0.0; 24];
    let mut out = TensorViewMut::new(&mut o, &[2, 3, 4], Layout::FrameMajor).unwrap();
    s.run::<Portable>(&vx, &mut out).unwrap();
    for row in o.chunks_exact(4) {
        let sum: f32 = row.iter().sum();
        assert!((sum - 1.0).abs() < 1e-6);
    }
    let want = reference(&x, 6, 4);
    assert!(o.iter().zip(&want).all(|(&g, &w)| (g as f64 - w).abs() < 1e-6));

    // Errors: output shape (rank, size), layout; the output stays untouched.
    let mut o = vec![-1.0; 24];
    let mut bad = TensorViewMut::new(&mut o, &[6, 4], Layout::FrameMajor).unwrap();
    let err = s.run::<Portable>(&vx, &mut bad).unwrap_err();
    assert!(matches!(
        err,
        Error::Shape(ShapeError::Rank { op: "softmax", arg: 1, expected: "3", got: 2 })
    ));
    let mut bad = TensorViewMut::new(&mut o, &[2, 4, 3], Layout::FrameMajor).unwrap();
    let err = s.run::<Portable>(&vx, &mut bad).unwrap_err();
    assert!(matches!(
        err,
        Error::Shape(ShapeError::Dim { arg: 1, axis: 1, expected: 3, got: 4, .. })
    ));
    let mut bad = TensorViewMut::new(&mut o, &[2, 3, 4], Layout::ChannelFirst).unwrap();
    assert!(matches!(s.run::<Portable>(&vx, &mut bad), Err(Error::Layout { op: "softmax", .. })));
    assert!(o.iter().all(|&v| v == -1.0));

    // In place, rank 1.
    let mut y = vec![1.0f32, 2.0, 3.0];
    let mut vy = TensorViewMut::new(&mut y, &[3], Layout::ChannelFirst).unwrap();
    s.run_in_place::<Portable>(&mut vy).unwrap();
    assert!((y.iter().sum::<f32>() - 1.0).abs() < 1e-6);

    let sh = Shape::new(&[4usize, 5]).unwrap();
    assert_eq!(s.output_shape(&[sh]), Ok(sh));
    assert!(matches!(s.output_shape(&[sh, sh]), Err(ShapeError::Geometry { .. })));
}
