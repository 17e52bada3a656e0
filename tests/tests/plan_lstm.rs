//! `lstm_cell` in plans: steps carrying a caller-owned `[2, H]` state (row 0 `c`, row 1
//! `h`, read back with `last_frames(.., layout = frame_major)`) against an f64 reference and
//! bit for bit against the runtime operator, with zero allocations in `run`; and a plan of
//! Silero VAD's shape (`reflect_pad`, STFT conv, `complex_magnitude`, encoder convs,
//! `lstm_cell`, decoder) against the same operators called one by one.

mod common;

use neon_macros::neon_plan;
use neon_runtime::ops::activation::Activation;
use neon_runtime::ops::complex::ComplexMagnitude;
use neon_runtime::ops::conv::{Conv1d, Conv1dGeometry};
use neon_runtime::ops::lstm::LstmCell;
use neon_runtime::ops::pad::ReflectPad;
use neon_runtime::{Error, Layout, Portable, TensorView, TensorViewMut};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

fn uniform(r: &mut SmallRng, n: usize, a: f32) -> Vec<f32> {
    (0..n).map(|_| r.gen_range(-a..a)).collect()
}

neon_plan! {
    /// One LSTM step (7 inputs, 5 hidden units: tails of every vector width), the new `h`
    /// as the output.
    pub plan Cell {
        weight w: f32[20, 12];
        weight b: f32[20];
        input x: [7, 1];
        state s: [2, 5];
        output y: [1, 5];

        s = lstm_cell(s, x, w, b);
        y = last_frames(s, frames = 1, layout = frame_major);
    }
}

neon_plan! {
    /// The same cell without a bias, reading a frame-major `[1, In]` input.
    pub plan CellFrameMajor {
        weight w: f32[20, 12];
        input x: [1, 7];
        state s: [2, 5];
        output y: [1, 5];

        s = lstm_cell(s, x, w, layout = frame_major);
        y = last_frames(s, frames = 1, layout = frame_major);
    }
}

fn sigmoid(z: f64) -> f64 {
    1.0 / (1.0 + (-z).exp())
}

/// `nn.LSTMCell` in f64 from the f32 weight `[4H, In + H]`, bias and state `[c; h]`.
fn reference(w: &[f32], b: Option<&[f32]>, x: &[f32], state: &[f32]) -> Vec<f64> {
    let h = state.len() / 2;
    let xh: Vec<f64> = x.iter().chain(&state[h..]).map(|&v| v as f64).collect();
    let z: Vec<f64> = (0..4 * h)
        .map(|j| {
            let row = &w[j * xh.len()..(j + 1) * xh.len()];
            let dot: f64 = row.iter().zip(&xh).map(|(&w, &v)| w as f64 * v).sum();
            dot + b.map_or(0.0, |b| b[j] as f64)
        })
        .collect();
    let mut out = vec![0.0; 2 * h];
    for u in 0..h {
        let (i, f) = (sigmoid(z[u]), sigmoid(z[h + u]));
        let (g, o) = (z[2 * h + u].tanh(), sigmoid(z[3 * h + u]));
        out[u] = f * state[u] as f64 + i * g;
        out[h + u] = o * out[u].tanh();
    }
    out
}

/// Tolerance of a step against the f64 reference: the runtime's tests check each value's
/// own bound (`neon-runtime/tests/lstm.rs`); here sums of 12 products of `|w| <= 0.5` and
/// values `|v| <= 1` plus a bias `|b| <= 0.5` have the f32 bound `14 eps * 6.5 = 1.1e-5`,
/// the activations add 1.2e-7, and `c' = f c + i g` carries both gates' errors (`|c| < 3`
/// here): 1e-4 covers every value while a mix-up of gates, rows or layouts is off by 1e-2 or
/// more.
const TOL: f64 = 1e-4;

#[test]
fn steps_match_reference_and_the_operator() {
    let mut r = SmallRng::seed_from_u64(41);
    let (w, b) = (uniform(&mut r, 20 * 12, 0.5), uniform(&mut r, 20, 0.5));
    let weights = CellWeights { w: LstmCell::new(Cell::W, w.clone(), Some(b.clone())).unwrap() };
    let fm_weights =
        CellFrameMajorWeights { w: LstmCell::from_slice(CellFrameMajor::W, &w, None).unwrap() };
    let mut ws = CellWorkspace::new();
    let mut fm_ws = CellFrameMajorWorkspace::new();
    let mut s = vec![0.0f32; Cell::s_len()];
    let mut fm_s = s.clone();
    let mut op_s = s.clone(); // the runtime operator called directly
    let mut scratch = vec![0.0; weights.w.scratch_len()];
    let mut y = vec![f32::NAN; Cell::y_len()];
    for step in 0..6 {
        let x = uniform(&mut r, 7, 1.0);
        let want = reference(&w, Some(&b), &x, &s);
        let fm_want = reference(&w, None, &x, &fm_s);
        common::allocation_free(|| Cell::run::<Portable, _>(&weights, &x, &mut y, &mut s, &mut ws))
            .unwrap();
        for (k, (&got, &want)) in s.iter().zip(&want).enumerate() {
            let err = (got as f64 - want).abs();
            assert!(err <= TOL, "step {step}: s[{k}] = {got}, want {want}");
        }
        assert_eq!(y, s[5..], "step {step}: y is row 1 of the state, h");

        let xv = TensorView::new(&x, &[7, 1], Layout::ChannelFirst).unwrap();
        let mut sv = TensorViewMut::new(&mut op_s, &[2, 5], Layout::FrameMajor).unwrap();
        weights.w.run::<Portable>(&mut sv, &xv, &mut scratch).unwrap();
        assert_eq!(op_s, s, "step {step}: the plan runs the runtime operator");

        let mut fm_y = vec![f32::NAN; 5];
        CellFrameMajor::run::<Portable, _>(&fm_weights, &x, &mut fm_y, &mut fm_s, &mut fm_ws)
            .unwrap();
        for (k, (&got, &want)) in fm_s.iter().zip(&fm_want).enumerate() {
            let err = (got as f64 - want).abs();
            assert!(err <= TOL, "frame-major, step {step}: s[{k}] = {got}, want {want}");
        }
        assert_eq!(fm_y, fm_s[5..]);
    }
    // The state is the caller's: zeroing it starts a new sequence (same bits as the first
    // step above, which started from zeros).
    assert_eq!(Cell::s_len(), 10);
    assert_eq!(Cell::STEPS, 2);
    assert_eq!(Cell::MEMORY_MAP.iter().find(|m| m.name.contains("scratch")).unwrap().bytes, 4 * 32);
}

#[test]
fn validates_before_the_first_kernel() {
    let mut r = SmallRng::seed_from_u64(42);
    let w = uniform(&mut r, 20 * 12, 0.5);
    let mut ws = CellWorkspace::new();
    let (x, mut y, mut s) = (vec![1.0; 7], vec![0.0; 5], vec![0.5f32; 10]);
    // A prepared operator without the bias the plan declares.
    let no_bias = CellWeights { w: LstmCell::new(Cell::W, w.clone(), None).unwrap() };
    let r1 = Cell::run::<Portable, _>(&no_bias, &x, &mut y, &mut s, &mut ws);
    assert_eq!(r1, Err(Error::Weight { name: "w" }));
    // A state of the wrong length.
    let weights = CellWeights { w: LstmCell::new(Cell::W, w, Some(vec![0.0; 20])).unwrap() };
    let r2 = Cell::run::<Portable, _>(&weights, &x, &mut y, &mut s[..9], &mut ws);
    assert!(matches!(r2, Err(Error::Length { what: "state `s`", expected: 10, got: 9 })));
    assert_eq!(s, [0.5; 10], "nothing written on error");
}

neon_plan! {
    /// Silero VAD's shape (16 kHz, one 512-sample chunk after 64 samples of context):
    /// reflection pad, STFT as a strided conv, magnitudes, four conv + ReLU encoder layers,
    /// the LSTM cell on the caller's state, and the decoder on its `h`.
    pub plan VadShape {
        weight stft: f32[258, 1, 256];
        weight e1: f32[128, 129, 3];
        weight e1_b: f32[128];
        weight e2: f32[64, 128, 3];
        weight e2_b: f32[64];
        weight e3: f32[64, 64, 3];
        weight e3_b: f32[64];
        weight e4: f32[128, 64, 3];
        weight e4_b: f32[128];
        weight lstm: f32[512, 256];
        weight lstm_b: f32[512];
        weight dec: f32[1, 128, 1];
        weight dec_b: f32[1];
        input x: [1, 576];
        state s: [2, 128];
        output p: [1, 1];

        let h = reflect_pad(x, right = 64);                        // [1, 640]
        let h = conv1d(h, stft, stride = 128);                     // [258, 4]
        let h = complex_magnitude(h);                              // [129, 4]
        let h = conv1d(h, e1, e1_b, padding = 1);                  // [128, 4]
        let h = relu(h);
        let h = conv1d(h, e2, e2_b, stride = 2, padding = 1);      // [64, 2]
        let h = relu(h);
        let h = conv1d(h, e3, e3_b, stride = 2, padding = 1);      // [64, 1]
        let h = relu(h);
        let h = conv1d(h, e4, e4_b, padding = 1);                  // [128, 1]
        let h = relu(h);
        s = lstm_cell(s, h, lstm, lstm_b);
        let h = last_frames(s, frames = 1, layout = frame_major);  // [1, 128]: h
        let h = relu(h);
        let h = transpose(h, to = channel_first);                  // [128, 1]
        let h = conv1d(h, dec, dec_b);                             // [1, 1]
        p = sigmoid(h);
    }
}

fn conv(g: Conv1dGeometry, r: &mut SmallRng) -> Conv1d<Vec<f32>> {
    let a = 1.0 / ((g.in_channels * g.kernel) as f32).sqrt();
    let w = uniform(r, g.weight_len().unwrap(), a);
    Conv1d::new(g, w, Some(uniform(r, g.out_channels, 0.1))).unwrap()
}

fn vad_weights() -> VadShapeWeights<Vec<f32>> {
    let mut r = SmallRng::seed_from_u64(43);
    let stft = uniform(&mut r, 258 * 256, 0.1);
    let a = 1.0 / 16.0;
    VadShapeWeights {
        stft: Conv1d::new(VadShape::STFT, stft, None).unwrap(),
        e1: conv(VadShape::E1, &mut r),
        e2: conv(VadShape::E2, &mut r),
        e3: conv(VadShape::E3, &mut r),
        e4: conv(VadShape::E4, &mut r),
        lstm: LstmCell::new(
            VadShape::LSTM,
            uniform(&mut r, 512 * 256, a),
            Some(uniform(&mut r, 512, a)),
        )
        .unwrap(),
        dec: conv(VadShape::DEC, &mut r),
    }
}

/// The plan's steps as separate runtime calls (what the plan must do, in order).
fn vad_by_hand(w: &VadShapeWeights<Vec<f32>>, x: &[f32], s: &mut [f32]) -> f32 {
    let cf = Layout::ChannelFirst;
    fn view<'a>(d: &'a [f32], dims: &[usize]) -> TensorView<'a> {
        TensorView::new(d, dims, Layout::ChannelFirst).unwrap()
    }
    let mut pad = vec![0.0; 640];
    let xv = TensorView::new(x, &[1, 576], cf).unwrap();
    ReflectPad::new(0, 64)
        .run(&xv, &mut TensorViewMut::new(&mut pad, &[1, 640], cf).unwrap())
        .unwrap();
    let mut scratch = vec![0.0; 1 << 16];
    let mut run_conv = |c: &Conv1d<Vec<f32>>, x: &[f32], dims: [usize; 2]| {
        let g = c.geometry();
        let t = g.output_frames(dims[1]).unwrap();
        let mut y = vec![0.0; g.out_channels * t];
        let mut yv = TensorViewMut::new(&mut y, &[g.out_channels, t], cf).unwrap();
        c.run::<Portable>(&view(x, &dims), &mut yv, &mut scratch).unwrap();
        let mut relu = y.clone();
        Activation::Relu.apply::<Portable>(&mut relu).unwrap();
        (y, relu, [g.out_channels, t])
    };
    let (spec, _, dims) = run_conv(&w.stft, &pad, [1, 640]);
    let mut mag = vec![0.0; 129 * 4];
    let mut mv = TensorViewMut::new(&mut mag, &[129, 4], cf).unwrap();
    ComplexMagnitude.run::<Portable>(&view(&spec, &dims), &mut mv).unwrap();
    let (_, h, dims) = run_conv(&w.e1, &mag, [129, 4]);
    let (_, h, dims) = run_conv(&w.e2, &h, dims);
    let (_, h, dims) = run_conv(&w.e3, &h, dims);
    let (_, h, dims) = run_conv(&w.e4, &h, dims);
    let mut lstm_scratch = vec![0.0; w.lstm.scratch_len()];
    let mut sv = TensorViewMut::new(s, &[2, 128], Layout::FrameMajor).unwrap();
    w.lstm.run::<Portable>(&mut sv, &view(&h, &dims), &mut lstm_scratch).unwrap();
    let mut hidden = s[128..].to_vec();
    Activation::Relu.apply::<Portable>(&mut hidden).unwrap();
    let (logit, _, _) = run_conv(&w.dec, &hidden, [128, 1]);
    let mut p = logit;
    Activation::Sigmoid.apply::<Portable>(&mut p).unwrap();
    p[0]
}

#[test]
fn vad_shaped_plan_runs_the_operators_in_order() {
    let w = vad_weights();
    let mut ws = Box::new(VadShapeWorkspace::new());
    let mut r = SmallRng::seed_from_u64(44);
    let (mut s, mut s_hand) = (vec![0.0f32; VadShape::s_len()], vec![0.0f32; 256]);
    let mut p = [f32::NAN; 1];
    for chunk in 0..4 {
        let x = uniform(&mut r, VadShape::x_len(), 0.5);
        common::allocation_free(|| VadShape::run::<Portable, _>(&w, &x, &mut p, &mut s, &mut ws))
            .unwrap();
        let want = vad_by_hand(&w, &x, &mut s_hand);
        assert_eq!(s, s_hand, "chunk {chunk}: LSTM state");
        assert_eq!(p[0], want, "chunk {chunk}: probability");
        assert!(p[0] > 0.0 && p[0] < 1.0);
    }
    assert_eq!(VadShape::STEPS, 17);
    common::print_memory("VadShape", VadShape::WORKSPACE_BYTES, VadShape::LOWER_BOUND_BYTES);
}

neon_plan! {
    /// Reflection padding then magnitudes over a symbolic frame count (odd channels, odd
    /// lengths): the padded length must exceed both paddings for every `frames`.
    pub plan Spectrum {
        dim frames in 9..=40;
        input x: [6, frames];
        output y: [3, frames + 11];

        let p = reflect_pad(x, left = 3, right = 8);
        y = complex_magnitude(p);
    }
}

#[test]
fn pad_and_magnitude_match_reference() {
    let mut r = SmallRng::seed_from_u64(45);
    let mut ws = SpectrumWorkspace::new();
    for frames in [9, 10, 17, 33, 40] {
        let x = uniform(&mut r, Spectrum::x_len(frames), 2.0);
        let mut y = vec![f32::NAN; Spectrum::y_len(frames)];
        common::allocation_free(|| {
            Spectrum::run::<Portable>(&SpectrumWeights {}, &x, &mut y, frames, &mut ws)
        })
        .unwrap();
        let n = frames + 11;
        for c in 0..3 {
            for j in 0..n {
                // np.pad(mode="reflect"): index j - 3 reflected about 0 and frames - 1.
                let i = j as isize - 3;
                let i = if i < 0 { -i } else { i.min(2 * (frames as isize - 1) - i) } as usize;
                let (re, im) = (x[c * frames + i] as f64, x[(3 + c) * frames + i] as f64);
                let want = re.hypot(im);
                let got = y[c * n + j] as f64;
                assert!(
                    (got - want).abs() <= f32::EPSILON as f64 * want,
                    "[{c}, {j}]: {got} vs {want}"
                );
            }
        }
    }
    assert!(Spectrum::run::<Portable>(&SpectrumWeights {}, &[0.0; 48], &mut [0.0; 57], 8, &mut ws)
        .is_err());
}
