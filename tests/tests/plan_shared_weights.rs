//! `weights = OtherWeights;`: a streaming twin of a whole-image conv2d plan runs on the
//! whole plan's prepared operators (one copy of the weights), row chunks in and
//! `concat_frames` / `last_frames` on images keeping the rows a 3-row kernel needs. Its
//! output rows are bitwise the whole plan's; a twin whose geometry differs is refused
//! before any kernel, naming the weight; allocation-free.

mod common;

use neon_macros::neon_plan;
use neon_runtime::ops::conv2d::Conv2d;
use neon_runtime::{Error, Portable};

neon_plan! {
    /// 10 rows of a 2-channel image, 6 wide → 6 output rows.
    pub plan Whole {
        weight w0: f32[4, 2, 3, 3];
        weight b0: f32[4];
        weight w1: f32[3, 4, 3, 1];
        input x: [2, 10, 6];
        output y: [3, 6, 6];

        let h = conv2d(x, w0, b0, padding = (0, 0, 1, 1), leaky_relu = 0.2);
        y = conv2d(h, w1);
    }
}

/// A twin of `Whole`: a plan on `WholeWeights`, which declares `Whole`'s weights again (as
/// `weights = ..;` requires), then the caller's declarations and statements.
macro_rules! twin {
    ($(#[$attr:meta])* pub plan $name:ident { $($rest:tt)* }) => {
        neon_plan! {
            $(#[$attr])*
            pub plan $name {
                weights = WholeWeights;
                weight w0: f32[4, 2, 3, 3];
                weight b0: f32[4];
                weight w1: f32[3, 4, 3, 1];
                $($rest)*
            }
        }
    };
}

twin! {
    /// The same convs, 2 new rows per step (plus 2 of context): the 2 output rows that
    /// end 4 rows before the newest input row.
    pub plan Step {
        input x: [2, 4, 6];
        output y: [3, 2, 6];
        state s: [4, 2, 6];

        let h = conv2d(x, w0, b0, padding = (0, 0, 1, 1), leaky_relu = 0.2);
        let h = concat_frames(s, h);
        s = last_frames(h, frames = 2);
        y = conv2d(h, w1);
    }
}

twin! {
    /// A twin that pads differently: not the whole plan's operator.
    pub plan Mismatch {
        input x: [2, 4, 6];
        output y: [3, 2, 6];

        let h = conv2d(x, w0, b0, padding = same, leaky_relu = 0.2);
        let h = conv2d(h, w1, padding = (1, 0, 0, 0));
        y = last_frames(h, frames = 2);
    }
}

fn weights() -> WholeWeights<Vec<f32>> {
    let v = |n: usize, s: f32| (0..n).map(|i| ((i * 37 % 23) as f32 - 11.0) * s).collect();
    WholeWeights {
        w0: Conv2d::new(Whole::W0, v(4 * 2 * 9, 0.05), Some(v(4, 0.1))).unwrap(),
        w1: Conv2d::new(Whole::W1, v(3 * 4 * 3, 0.07), None).unwrap(),
    }
}

/// Rows `r0..r0 + rows` of the image `[2, 40, 6]`.
fn rows(image: &[f32], r0: usize, rows: usize) -> Vec<f32> {
    image.chunks_exact(40 * 6).flat_map(|c| c[r0 * 6..(r0 + rows) * 6].to_vec()).collect()
}

#[test]
fn streaming_twin_gives_the_whole_plans_rows() {
    assert_eq!(Step::W0, Whole::W0);
    let w = weights();
    let image: Vec<f32> = (0..2 * 40 * 6).map(|i| ((i * 53 % 31) as f32 - 15.0) / 7.0).collect();
    let (mut whole_ws, mut step_ws) = (WholeWorkspace::new(), StepWorkspace::new());
    let mut state = vec![0.0f32; 4 * 2 * 6];
    let mut y = vec![0.0f32; 3 * 2 * 6];
    let mut want = vec![0.0f32; 3 * 6 * 6];
    for end in (4..=40).step_by(2) {
        let x = rows(&image, end - 4, 4);
        common::allocation_free(|| {
            Step::run::<Portable, _>(&w, &x, &mut y, &mut state, &mut step_ws).unwrap()
        });
        if end < 10 {
            continue; // the state still holds rows from before the image
        }
        Whole::run::<Portable, _>(&w, &rows(&image, end - 10, 10), &mut want, &mut whole_ws)
            .unwrap();
        // The step's rows are the last 2 of the whole plan's 6 for the 10 rows ending here.
        for c in 0..3 {
            let got = &y[c * 12..(c + 1) * 12];
            let last = &want[c * 36 + 24..(c + 1) * 36];
            assert!(
                got.iter().zip(last).all(|(a, b)| a.to_bits() == b.to_bits()),
                "end {end} channel {c}: {got:?} vs {last:?}"
            );
        }
    }
}

#[test]
fn a_twin_with_another_geometry_is_refused_first() {
    let w = weights();
    let x = vec![1.0f32; 2 * 4 * 6];
    let mut y = vec![7.0f32; 3 * 2 * 6];
    let mut ws = MismatchWorkspace::new();
    let e = Mismatch::run::<Portable, _>(&w, &x, &mut y, &mut ws).unwrap_err();
    assert!(matches!(e, Error::Weight { name: "w0" }), "{e:?}");
    assert!(y.iter().all(|&v| v == 7.0), "nothing written");
}
