//! The LSTM cell (`ops::lstm::LstmCell`, driver `kernels::lstm`): several steps in a row
//! against an f64 reference of `nn.LSTMCell` over geometries with vector tails, every
//! constructor, a worker team, the shape rule and its facts, and every error returned
//! before the state is touched. One generic body per case, run for every backend
//! (`backend_tests!`).
#![cfg(feature = "alloc")]

mod common;

use common::{rng, uniform};
use neon_runtime::kernels::gemm::pack_b;
use neon_runtime::ops::lstm::{LstmCell, LstmCellGeometry};
use neon_runtime::ops::{InPlace, RunOptions, ShapeRule};
use neon_runtime::{Backend, Error, Layout, Shape, ShapeError, Team, TensorView, TensorViewMut};

neon_runtime::backend_tests!(steps_match_reference, team_gives_same_bits, errors_leave_state);

const EPS: f64 = f32::EPSILON as f64;

/// Largest absolute error of the sigmoid and tanh kernels, 8.9e-8 each over all inputs
/// (measured, `kernels/activation` docs), with the same margin the activation tests give
/// their bounds (here +35%).
const ACT: f64 = 1.2e-7;

fn sigmoid(z: f64) -> f64 {
    1.0 / (1.0 + (-z).exp())
}

/// One step of `nn.LSTMCell` in f64 from the f32 inputs (`w`: `[4H, In + H]`, `state`:
/// `[c; h]`), and per value of the new state an error bound for an f32 evaluation (in the
/// kernel's order):
///
/// - gate pre-activation `z_j`: the f32 sum bound `(K + 2) eps sum|terms|`, `K = In + H`
///   terms and the bias (Higham 3.1, as the linear and GEMM tests use);
/// - gates: `dz / 4 + ACT` for the sigmoids (`sigmoid' <= 1/4`), `dz + ACT` for tanh
///   (`tanh' <= 1`);
/// - `c' = f c + i g`: the gates' errors times the other factor (`|f|, |i| < 1`,
///   `|g| <= 1`) plus one rounding per operation (`eps` each, twice the unit roundoff);
/// - `h' = o tanh(c')`: `|tanh c'| do + |o| (dc' + ACT)` plus one rounding.
///
/// The tests allow twice the bound. Each step starts from the state the kernel wrote, so
/// the bound is per step and errors are not compounded.
#[allow(clippy::type_complexity)]
fn reference(w: &[f32], b: Option<&[f32]>, x: &[f32], state: &[f32]) -> (Vec<f64>, Vec<f64>) {
    let h = state.len() / 2;
    let k = x.len() + h;
    let xh: Vec<f64> = x.iter().chain(&state[h..]).map(|&v| v as f64).collect();
    let (mut z, mut dz) = (vec![0.0; 4 * h], vec![0.0; 4 * h]);
    for j in 0..4 * h {
        let bias = b.map_or(0.0, |b| b[j] as f64);
        let (mut s, mut mag) = (bias, bias.abs());
        for (kk, &v) in xh.iter().enumerate() {
            let p = w[j * k + kk] as f64 * v;
            s += p;
            mag += p.abs();
        }
        z[j] = s;
        dz[j] = (k as f64 + 2.0) * EPS * mag;
    }
    let (mut want, mut tol) = (vec![0.0; 2 * h], vec![0.0; 2 * h]);
    for u in 0..h {
        let (i, f) = (sigmoid(z[u]), sigmoid(z[h + u]));
        let (g, o) = (z[2 * h + u].tanh(), sigmoid(z[3 * h + u]));
        let (di, df) = (dz[u] / 4.0 + ACT, dz[h + u] / 4.0 + ACT);
        let (dg, d_o) = (dz[2 * h + u] + ACT, dz[3 * h + u] / 4.0 + ACT);
        let c = state[u] as f64;
        let c1 = f * c + i * g;
        let dc = c.abs() * df
            + g.abs() * di
            + i * dg
            + di * dg
            + EPS * ((f * c).abs() + (i * g).abs() + c1.abs());
        let t = c1.tanh();
        let h1 = o * t;
        let dh = t.abs() * d_o + o * (dc + ACT) + d_o * (dc + ACT) + EPS * h1.abs();
        (want[u], want[h + u]) = (c1, h1);
        (tol[u], tol[h + u]) = (2.0 * dc, 2.0 * dh);
    }
    (want, tol)
}

/// `(input, hidden)`: every tail of 4, 8 and 16 lanes in both sizes, and Silero VAD's
/// 128 x 128.
fn geometries() -> impl Iterator<Item = (usize, usize)> {
    [1, 7, 128].into_iter().flat_map(|inp| [1, 3, 5, 17, 128].map(|h| (inp, h)))
}

/// Weights uniform in `+-2 / sqrt(In + H)` (twice PyTorch's initial range, so gates also
/// saturate), bias or not.
fn problem(seed: u64, inp: usize, h: usize, bias: bool) -> (Vec<f32>, Option<Vec<f32>>) {
    let mut r = rng(seed);
    let a = 2.0 / ((inp + h) as f32).sqrt();
    let w = uniform(&mut r, 4 * h * (inp + h), -a, a);
    let b = bias.then(|| uniform(&mut r, 4 * h, -1.0, 1.0));
    (w, b)
}

fn steps_match_reference<B: Backend>() {
    for (n, (inp, h)) in geometries().enumerate() {
        let bias = n % 2 == 0;
        let (w, b) = problem(n as u64, inp, h, bias);
        let layout = if n % 3 == 0 { Layout::FrameMajor } else { Layout::ChannelFirst };
        let g = LstmCellGeometry::new(inp, h).layout(layout);
        let x_dims = match layout {
            Layout::ChannelFirst => [inp, 1],
            Layout::FrameMajor => [1, inp],
        };

        // The three constructors hold the same packed weight.
        let cell = LstmCell::new(g, w.clone(), b.clone()).unwrap();
        let by_slice = LstmCell::from_slice(g, &w, b.as_deref()).unwrap();
        let mut packed = vec![0.0; g.packed_len().unwrap()];
        pack_b(&w, 4 * h, inp + h, &mut packed);
        let by_packed = LstmCell::from_packed(g, &packed[..], b.as_deref()).unwrap();
        assert_eq!(cell.packed_weight(), by_slice.packed_weight());
        assert_eq!(cell.packed_weight(), by_packed.packed_weight());
        assert_eq!(cell.bias(), b.as_deref());
        assert_eq!(cell.geometry(), g);
        assert_eq!(cell.scratch_len(), inp + 5 * h);

        // A random state to start from (not only zeros), then five steps carrying it.
        let mut r = rng(100 + n as u64);
        let mut state = uniform(&mut r, h, -3.0, 3.0);
        state.extend(uniform(&mut r, h, -1.0, 1.0));
        let mut twin = state.clone();
        let mut scratch = vec![f32::NAN; cell.scratch_len()];
        for step in 0..5 {
            let x = uniform(&mut r, inp, -2.0, 2.0);
            let (want, tol) = reference(&w, b.as_deref(), &x, &state);
            let xv = TensorView::new(&x, &x_dims, layout).unwrap();
            let mut sv = TensorViewMut::new(&mut state, &[2, h], Layout::FrameMajor).unwrap();
            cell.run::<B>(&mut sv, &xv, &mut scratch).unwrap();
            let what = format!("{} lstm in={inp} h={h} bias={bias} step {step}", B::NAME);
            for (j, ((&got, &want), &tol)) in state.iter().zip(&want).zip(&tol).enumerate() {
                let err = (got as f64 - want).abs();
                let part = if j < h { "c" } else { "h" };
                assert!(
                    err <= tol,
                    "{what}: {part}[{}]: got {got}, want {want} (err {err:e}, allowed {tol:e})",
                    j % h
                );
            }
            // The operator packed from the caller's buffer gives the same bits.
            let mut tv = TensorViewMut::new(&mut twin, &[2, h], Layout::FrameMajor).unwrap();
            by_packed.run::<B>(&mut tv, &xv, &mut scratch).unwrap();
            assert_eq!(twin, state, "{what}: from_packed");
        }
    }
}

fn team_gives_same_bits<B: Backend>() {
    // 4H = 512 outputs in 16 pairs of panels: the GEMV splits over the team.
    let team = Team::new(3).unwrap();
    let (inp, h) = (128, 128);
    let (w, b) = problem(7, inp, h, true);
    let cell = LstmCell::new(LstmCellGeometry::new(inp, h), w, b).unwrap();
    let mut r = rng(8);
    let x = uniform(&mut r, inp, -1.0, 1.0);
    let start = uniform(&mut r, 2 * h, -1.0, 1.0);
    let (mut serial, mut teamed) = (start.clone(), start);
    let mut scratch = vec![0.0; cell.scratch_len()];
    let xv = TensorView::new(&x, &[inp, 1], Layout::ChannelFirst).unwrap();
    for _ in 0..3 {
        let mut sv = TensorViewMut::new(&mut serial, &[2, h], Layout::FrameMajor).unwrap();
        cell.run::<B>(&mut sv, &xv, &mut scratch).unwrap();
        let mut tv = TensorViewMut::new(&mut teamed, &[2, h], Layout::FrameMajor).unwrap();
        let options = RunOptions::new().with_parallel(&team);
        cell.run_with::<B>(&mut tv, &xv, &mut scratch, options).unwrap();
        assert_eq!(serial, teamed, "{}", B::NAME);
    }
}

fn errors_leave_state<B: Backend>() {
    let (inp, h) = (7, 5);
    let g = LstmCellGeometry::new(inp, h);
    let (w, b) = problem(3, inp, h, true);
    let cell = LstmCell::new(g, w, b).unwrap();
    let x = [0.5f32; 7];
    let start: Vec<f32> = (0..2 * h).map(|i| i as f32 * 0.1).collect();
    let mut state = start.clone();
    let mut scratch = vec![0.0; cell.scratch_len()];
    let xv = TensorView::new(&x, &[inp, 1], Layout::ChannelFirst).unwrap();
    let run = |state: &mut [f32], dims: &[usize], layout, x: &TensorView, scratch: &mut [f32]| {
        let mut sv = TensorViewMut::new(state, dims, layout).unwrap();
        cell.run::<B>(&mut sv, x, scratch)
    };
    let fm = Layout::FrameMajor;
    // A channel-first state.
    let r = run(&mut state, &[2, h], Layout::ChannelFirst, &xv, &mut scratch);
    assert!(matches!(r, Err(Error::Layout { op: "lstm_cell", .. })), "{r:?}");
    // A state of another shape: one row of 2h.
    let r = run(&mut state, &[1, 2 * h], fm, &xv, &mut scratch);
    assert!(
        matches!(
            r,
            Err(Error::Shape(ShapeError::Dim { arg: 0, axis: 0, expected: 2, got: 1, .. }))
        ),
        "{r:?}"
    );
    // x in the other layout, x with the wrong feature count, two frames.
    let xf = TensorView::new(&x, &[1, inp], fm).unwrap();
    let r = run(&mut state, &[2, h], fm, &xf, &mut scratch);
    assert!(matches!(r, Err(Error::Layout { .. })), "{r:?}");
    let x6 = TensorView::new(&x[..6], &[6, 1], Layout::ChannelFirst).unwrap();
    let r = run(&mut state, &[2, h], fm, &x6, &mut scratch);
    assert!(
        matches!(
            r,
            Err(Error::Shape(ShapeError::Dim { arg: 1, axis: 0, expected: 7, got: 6, .. }))
        ),
        "{r:?}"
    );
    // Short scratch.
    let r = run(&mut state, &[2, h], fm, &xv, &mut scratch[..inp + 5 * h - 1]);
    assert_eq!(r, Err(Error::Length { what: "scratch", expected: 32, got: 31 }));
    assert_eq!(state, start, "nothing written on error");
    // And the cell still runs.
    run(&mut state, &[2, h], fm, &xv, &mut scratch).unwrap();
    assert_ne!(state, start);
}

#[test]
fn constructors_check_lengths() {
    let g = LstmCellGeometry::new(3, 2); // weight [8, 5], bias [8]
    assert_eq!(g.weight_shape(), [8, 5]);
    assert_eq!(g.weight_len(), Some(40));
    let too_short = LstmCell::new(g, vec![0.0; 39], None);
    assert_eq!(too_short.unwrap_err(), Error::Length { what: "weight", expected: 40, got: 39 });
    let bias = LstmCell::from_slice(g, &[0.0; 40], Some(&[0.0; 4]));
    assert_eq!(bias.unwrap_err(), Error::Length { what: "bias", expected: 8, got: 4 });
    let packed = LstmCell::from_packed(g, &[0.0f32; 40][..], None);
    let want = g.packed_len().unwrap(); // 16 rows (one panel) x 5
    assert_eq!(
        packed.unwrap_err(),
        Error::Length { what: "packed weight", expected: want, got: 40 }
    );
    let zero = LstmCell::new(LstmCellGeometry::new(0, 2), vec![], None);
    assert!(matches!(zero, Err(Error::Shape(ShapeError::Geometry { .. }))));
    let huge = LstmCellGeometry::new(1, usize::MAX / 2);
    assert!(matches!(huge.validate::<usize>(), Err(ShapeError::Geometry { .. })));
    // Prepared operators are shared between threads.
    fn send_sync<T: Send + Sync>() {}
    send_sync::<LstmCell<Vec<f32>>>();
    send_sync::<LstmCell<&'static [f32]>>();
}

#[test]
fn shape_rule_and_facts() {
    let s = |d: &[usize]| Shape::new(d).unwrap();
    let g = LstmCellGeometry::new(7, 5);
    assert_eq!(g.name(), "lstm_cell");
    assert_eq!(g.arity(), 2);
    assert_eq!(g.output_shape(&[s(&[2, 5]), s(&[7, 1])]), Ok(s(&[2, 5])));
    let fm = g.layout(Layout::FrameMajor);
    assert_eq!(fm.output_shape(&[s(&[2, 5]), s(&[1, 7])]), Ok(s(&[2, 5])));
    assert!(matches!(
        fm.output_shape(&[s(&[2, 5]), s(&[7, 1])]),
        Err(ShapeError::Dim { arg: 1, axis: 1, expected: 7, got: 1, .. })
    ));
    assert!(matches!(
        g.output_shape(&[s(&[2, 6]), s(&[7, 1])]),
        Err(ShapeError::Dim { arg: 0, axis: 1, what: "hidden units", expected: 5, got: 6, .. })
    ));
    assert!(matches!(
        g.output_shape(&[s(&[3, 5]), s(&[7, 1])]),
        Err(ShapeError::Dim { arg: 0, axis: 0, expected: 2, got: 3, .. })
    ));
    assert!(matches!(
        g.output_shape(&[s(&[10]), s(&[7, 1])]),
        Err(ShapeError::Rank { arg: 0, got: 1, .. })
    ));
    assert!(matches!(
        g.output_shape(&[s(&[2, 5]), s(&[7, 2])]),
        Err(ShapeError::Dim {
            arg: 1,
            axis: 1,
            what: "frame (one step per call)",
            expected: 1,
            got: 2,
            ..
        })
    ));
    assert!(matches!(g.output_shape(&[s(&[2, 5])]), Err(ShapeError::Geometry { .. })));
    // The geometry two tensors call for (what `neon_plan!` checks the weight against).
    let found = LstmCellGeometry::for_shapes(Layout::ChannelFirst, &s(&[2, 5]), &s(&[7, 1]));
    assert_eq!(found, Some(g));
    let found = LstmCellGeometry::for_shapes(Layout::FrameMajor, &s(&[2, 5]), &s(&[1, 7]));
    assert_eq!(found, Some(fm));
    assert_eq!(LstmCellGeometry::for_shapes(Layout::FrameMajor, &s(&[10]), &s(&[1, 7])), None);
    // Facts: the state is updated in place and is frame-major (row 0 c, row 1 h); x is
    // read in the geometry's layout.
    assert_eq!(g.in_place(), InPlace::Always);
    assert_eq!(g.reads_layout(0), Some(Layout::FrameMajor));
    assert_eq!(g.reads_layout(1), Some(Layout::ChannelFirst));
    assert_eq!(fm.reads_layout(1), Some(Layout::FrameMajor));
    assert_eq!(g.writes_layout(), Some(Layout::FrameMajor));
}
