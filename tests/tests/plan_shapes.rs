//! Derived shapes in caller-owned tensors (valid and strided convs, frame-major outputs) and
//! a plan without weights: the generated lengths, validation and results are right; a flag
//! written bare after an optional weight's place (`conv1d(x, w, causal)`).

use neon_macros::neon_plan;
use neon_runtime::ops::conv::Conv1d;
use neon_runtime::Portable;

// The plan skeletons of the compile-fail cases (`conv_plan!`).
#[macro_use]
#[path = "../ui/fixtures/plans.rs"]
mod fixtures;

neon_plan! {
    /// A valid conv then a strided one; both outputs have derived frame counts.
    pub plan Strided {
        dim frames in 3..=200;
        weight w1: f32[8, 4, 3];
        weight w2: f32[16, 8, 3];
        input x: [4, frames];
        output mid: [frames - 2, 8];
        output y: [16, (frames - 1) / 2];

        let h = conv1d(x, w1);
        mid = transpose(h);
        y = conv1d(h, w2, stride = 2, padding = 1);
    }
}

neon_plan! {
    /// A gate without weights: y = a * sigmoid(b).
    pub plan Gate {
        dim n in 1..=64;
        input a: [n, 8];
        input b: [n, 8];
        output y: [n, 8];

        let s = sigmoid(b);
        y = mul(a, s);
    }
}

conv_plan! {
    /// A flag written bare where an optional weight could stand: `causal` pads the conv on
    /// the left, so the frames are kept (the ui case `did_you_mean.rs` misspells it).
    BareFlag;
    y = conv1d(x, w, causal);
}

#[test]
fn a_bare_flag_after_the_weight_is_a_flag() {
    assert_eq!((BareFlag::W.pad_left, BareFlag::W.pad_right), (2, 0));
}

fn conv(
    w: &[f32],
    cin: usize,
    cout: usize,
    x: &[f32],
    frames: usize,
    stride: usize,
    pad: usize,
) -> Vec<f32> {
    let out = (frames + 2 * pad - 3) / stride + 1;
    let mut y = vec![0.0f64; cout * out];
    for o in 0..cout {
        for t in 0..out {
            for c in 0..cin {
                for k in 0..3 {
                    let p = (t * stride + k) as isize - pad as isize;
                    if p >= 0 && (p as usize) < frames {
                        y[o * out + t] +=
                            w[(o * cin + c) * 3 + k] as f64 * x[c * frames + p as usize] as f64;
                    }
                }
            }
        }
    }
    y.into_iter().map(|v| v as f32).collect()
}

#[test]
fn derived_lengths_and_results() {
    let w1: Vec<f32> = (0..8 * 4 * 3).map(|i| ((i % 7) as f32 - 3.0) / 8.0).collect();
    let w2: Vec<f32> = (0..16 * 8 * 3).map(|i| ((i % 5) as f32 - 2.0) / 8.0).collect();
    let weights = StridedWeights {
        w1: Conv1d::new(Strided::W1, w1.clone(), None).unwrap(),
        w2: Conv1d::new(Strided::W2, w2.clone(), None).unwrap(),
    };
    let mut ws = Box::new(StridedWorkspace::new());
    for frames in [3, 4, 5, 10, 101, 200] {
        assert_eq!(Strided::mid_len(frames), (frames - 2) * 8);
        assert_eq!(Strided::y_len(frames), 16 * ((frames - 1) / 2));
        let x: Vec<f32> = (0..4 * frames).map(|i| ((i * 13 % 17) as f32 - 8.0) / 4.0).collect();
        let mut mid = vec![0.0; Strided::mid_len(frames)];
        let mut y = vec![0.0; Strided::y_len(frames)];
        Strided::run::<Portable, _>(&weights, &x, &mut mid, &mut y, frames, &mut ws).unwrap();
        let h = conv(&w1, 4, 8, &x, frames, 1, 0);
        let want_y = conv(&w2, 8, 16, &h, frames - 2, 2, 1);
        for (a, b) in y.iter().zip(&want_y) {
            assert!((a - b).abs() <= 1e-4, "frames {frames}: {a} vs {b}");
        }
        for t in 0..frames - 2 {
            for c in 0..8 {
                assert!((mid[t * 8 + c] - h[c * (frames - 2) + t]).abs() <= 1e-4);
            }
        }
    }
    // Too short for the valid conv and the strided one: an error, not a panic.
    let mut y = vec![0.0; 16];
    assert!(Strided::run::<Portable, _>(&weights, &[0.0; 8], &mut [0.0; 0], &mut y, 2, &mut ws)
        .is_err());
}

#[test]
fn plan_without_weights() {
    let mut ws = GateWorkspace::new();
    let a: Vec<f32> = (0..24).map(|i| i as f32).collect();
    let b = vec![0.0f32; 24];
    let mut y = vec![0.0; 24];
    Gate::run::<Portable>(&GateWeights {}, &a, &b, &mut y, 3, &mut ws).unwrap();
    assert!(y.iter().zip(&a).all(|(y, a)| (y - a * 0.5).abs() < 1e-6));
}
