//! `ReflectPad` against numpy's `np.pad(mode="reflect")` written out by hand (and a direct
//! index reference over many shapes), the shape rule and the errors.

mod common;

use common::{rng, uniform};
use neon_runtime::ops::pad::ReflectPad;
use neon_runtime::ops::{InPlace, ShapeRule};
use neon_runtime::{Error, Layout, Shape, ShapeError, TensorView, TensorViewMut};

/// Pads `x` (`[c, t]`) by the definition: output index `j - left` reflected into `0..t`
/// about 0 and `t - 1` (`-k -> k`, `t - 1 + k -> t - 1 - k`).
fn reference(x: &[f32], c: usize, t: usize, left: usize, right: usize) -> Vec<f32> {
    let mut out = Vec::new();
    for ch in 0..c {
        for j in 0..left + t + right {
            let i = j as isize - left as isize;
            let i = if i < 0 {
                -i
            } else if i >= t as isize {
                2 * (t as isize - 1) - i
            } else {
                i
            };
            out.push(x[ch * t + i as usize]);
        }
    }
    out
}

fn run(pad: ReflectPad, x: &[f32], c: usize, t: usize) -> Result<Vec<f32>, Error> {
    let n = pad.left + t + pad.right;
    let mut y = vec![f32::NAN; c * n];
    let xv = TensorView::new(x, &[c, t], Layout::ChannelFirst)?;
    let mut yv = TensorViewMut::new(&mut y, &[c, n], Layout::ChannelFirst)?;
    pad.run(&xv, &mut yv)?;
    Ok(y)
}

#[test]
fn matches_numpy() {
    // np.pad([1, 2, 3, 4, 5], (3, 2), mode="reflect") == [4, 3, 2, 1, 2, 3, 4, 5, 4, 3]
    let x = [1.0, 2.0, 3.0, 4.0, 5.0];
    let y = run(ReflectPad::new(3, 2), &x, 1, 5).unwrap();
    assert_eq!(y, [4.0, 3.0, 2.0, 1.0, 2.0, 3.0, 4.0, 5.0, 4.0, 3.0]);
    // Right only (Silero VAD's 64 after 576 samples), two rows: [1, 2], [3, 4] by 1.
    let y = run(ReflectPad::new(0, 1), &[1.0, 2.0, 3.0, 4.0], 2, 2).unwrap();
    assert_eq!(y, [1.0, 2.0, 1.0, 3.0, 4.0, 3.0]);
    // The largest padding one reflection allows: T - 1 on each side.
    let y = run(ReflectPad::new(2, 2), &[1.0, 2.0, 3.0], 1, 3).unwrap();
    assert_eq!(y, [3.0, 2.0, 1.0, 2.0, 3.0, 2.0, 1.0]);
}

#[test]
fn matches_reference() {
    let mut r = rng(5);
    for (c, t) in [(1, 2), (1, 576), (3, 7), (2, 65), (5, 1000)] {
        let x = uniform(&mut r, c * t, -1.0, 1.0);
        for (left, right) in [(0, 1), (1, 0), (1, 1), (0, 64), (3, 5), (t - 1, 0), (t - 1, t - 1)] {
            if left.max(right) >= t {
                continue; // one reflection cannot pad more than t - 1 (tested below)
            }
            let pad = ReflectPad::new(left, right);
            let y = run(pad, &x, c, t).unwrap();
            assert_eq!(y, reference(&x, c, t, left, right), "c={c} t={t} pad=({left}, {right})");
        }
    }
}

#[test]
fn shape_rule_and_errors() {
    let s = |d: &[usize]| Shape::new(d).unwrap();
    let pad = ReflectPad { left: 0, right: 64 };
    assert_eq!(pad.name(), "reflect_pad");
    assert_eq!(pad.output_shape(&[s(&[1, 576])]), Ok(s(&[1, 640])));
    assert_eq!(pad.output_shape(&[s(&[1, 65])]), Ok(s(&[1, 129])));
    assert!(matches!(
        pad.output_shape(&[s(&[1, 64])]),
        Err(ShapeError::TooSmall { value: 64, min: 65, .. })
    ));
    let left = ReflectPad::new(3, 1);
    assert!(matches!(left.output_shape(&[s(&[2, 3])]), Err(ShapeError::TooSmall { min: 4, .. })));
    assert!(matches!(pad.output_shape(&[s(&[576])]), Err(ShapeError::Rank { got: 1, .. })));
    let none = ReflectPad::default();
    assert!(matches!(none.output_shape(&[s(&[1, 5])]), Err(ShapeError::Geometry { .. })));
    let huge = ReflectPad::new(usize::MAX, 1);
    assert!(matches!(huge.validate::<usize>(), Err(ShapeError::Geometry { .. })));
    assert!(matches!(
        ReflectPad::new(usize::MAX, 0).output_shape(&[s(&[1, 5])]),
        Err(ShapeError::TooSmall { .. })
    ));
    assert_eq!(pad.in_place(), InPlace::Never);
    let cf = Some(Layout::ChannelFirst);
    assert_eq!((pad.reads_layout(0), pad.writes_layout()), (cf, cf));

    // Run-time errors: nothing written.
    let x = [1.0f32; 8];
    let mut y = [7.0f32; 12];
    let fm = TensorView::new(&x, &[2, 4], Layout::FrameMajor).unwrap();
    let mut yv = TensorViewMut::new(&mut y, &[2, 6], Layout::ChannelFirst).unwrap();
    let p = ReflectPad::new(1, 1);
    assert!(matches!(p.run(&fm, &mut yv), Err(Error::Layout { op: "reflect_pad", .. })));
    let xv = TensorView::new(&x, &[2, 4], Layout::ChannelFirst).unwrap();
    let mut yv = TensorViewMut::new(&mut y, &[3, 4], Layout::ChannelFirst).unwrap();
    assert!(matches!(
        p.run(&xv, &mut yv),
        Err(Error::Shape(ShapeError::Dim { arg: 1, axis: 0, expected: 2, got: 3, .. }))
    ));
    assert!(matches!(
        ReflectPad::new(4, 0)
            .run(&xv, &mut TensorViewMut::new(&mut y, &[2, 6], Layout::ChannelFirst).unwrap()),
        Err(Error::Shape(ShapeError::TooSmall { .. }))
    ));
    assert_eq!(y, [7.0; 12]);
}
