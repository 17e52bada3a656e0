//! `ExecutionPlan` from the outside: the design's contract example, and a property test:
//! random graphs (chains and branches of Linear, LayerNorm, ReLU, Sigmoid, Add and Mul, and
//! a few BiasAdd, Scale and Softmax steps; any sizes, vector tails included) give the same bits through a plan as the operators run one
//! by one on plain `Vec`s, on every backend this machine runs, at two row counts; blocks as
//! steps.
#![cfg(feature = "alloc")]

mod common;

use std::sync::Arc;

use common::{rng, uniform};
use neon_runtime::blocks::{
    ConvNeXt, ConvNeXtGeometry, ConvNeXtWeights, ResidualConv, ResidualConvGeometry,
    ResidualConvWeights,
};
use neon_runtime::exec::{ExecutionPlan, Value};
use neon_runtime::ops::activation::Activation;
use neon_runtime::ops::conv::{Conv1d, Conv1dGeometry};
use neon_runtime::ops::elementwise::{Add, BiasAdd, Mul, PerChannel, Scale};
use neon_runtime::ops::linear::{Linear, LinearGeometry};
use neon_runtime::ops::norm::{LayerNorm, LayerNormGeometry};
use neon_runtime::ops::softmax::Softmax;
use neon_runtime::{
    Backend, BackendKind, Error, Layout, Portable, ShapeError, TensorView, TensorViewMut,
    WithBackend,
};
use rand::rngs::SmallRng;
use rand::Rng;

const FM: Layout = Layout::FrameMajor;

#[test]
fn contract_example() {
    let geometry = Conv1dGeometry::new(2, 2, 1).output_layout(Layout::FrameMajor);
    let conv = Arc::new(Conv1d::new(geometry, vec![1.0, 0.0, 0.0, 1.0], None).unwrap());
    let mut plan = ExecutionPlan::new();
    let x = plan.input();
    let y = plan.add(conv, &[x]).unwrap();
    plan.set_output(y, Layout::FrameMajor).unwrap();
    let input = TensorView::new(&[1.0, 2.0, 3.0, 4.0], &[2, 2], Layout::ChannelFirst).unwrap();
    let out = plan.run::<Portable>(&[input]).unwrap();
    assert_eq!(out.data(), &[1.0, 3.0, 2.0, 4.0]);
    assert_eq!((out.dims(), out.layout()), (&[2, 2][..], Layout::FrameMajor));
}

/// A backend this build or CPU cannot run is `Error::Backend` before any kernel, never a
/// panic; the plan stays usable. Only levels that are unavailable here are checked (on an
/// x86-64 host with every level, none; under qemu-aarch64, both x86 levels).
#[test]
fn unavailable_backend_is_an_error() {
    use neon_runtime::{Avx2, Avx512, BackendType, X86};
    let mut plan = ExecutionPlan::new();
    let x = plan.input();
    let y = plan.add(Activation::Relu, &[x]).unwrap();
    plan.set_output(y, Layout::ChannelFirst).unwrap();
    let input = TensorView::new(&[-1.0, 2.0], &[1, 2], Layout::ChannelFirst).unwrap();
    let runs = [
        (X86::<Avx2>::KIND, plan.run::<X86<Avx2>>(&[input]).map(|_| ())),
        (X86::<Avx512>::KIND, plan.run::<X86<Avx512>>(&[input]).map(|_| ())),
    ];
    for (kind, result) in runs {
        assert_eq!(result, kind.availability().map_err(Error::Backend), "{}", kind.name());
    }
    assert_eq!(plan.run::<Portable>(&[input]).unwrap().data(), &[0.0, 2.0]);
}

/// One step of a random graph: what it computes and the indices of its inputs.
enum Kind {
    Linear(Arc<Linear<Vec<f32>>>),
    Norm(Arc<LayerNorm<Vec<f32>>>),
    Act(Activation),
    Add,
    Mul,
    Bias(Arc<BiasAdd<Vec<f32>>>),
    Scale(Scale),
    Softmax,
}

struct Graph {
    /// Width (features) of every value; value 0 is the input.
    widths: Vec<usize>,
    /// Steps: kind and inputs; step `s` writes value `s + 1`.
    steps: Vec<(Kind, Vec<usize>)>,
    /// Values kept readable.
    retained: Vec<usize>,
}

/// Sizes 1..=40, so every vector tail of 4, 8 and 16 lanes shows up.
fn width(r: &mut SmallRng) -> usize {
    r.gen_range(1..=40)
}

fn random_graph(r: &mut SmallRng) -> Graph {
    let mut g = Graph { widths: vec![width(r)], steps: Vec::new(), retained: Vec::new() };
    for _ in 0..r.gen_range(1..=14) {
        let n = g.widths.len();
        // Mostly the newest value (chains), sometimes an older one (branches).
        let a = if r.gen_bool(0.6) { n - 1 } else { r.gen_range(0..n) };
        let c = g.widths[a];
        let (kind, inputs, out) = match r.gen_range(0..8) {
            0 | 1 => {
                let (k, m) = (c, width(r));
                let geo = LinearGeometry { in_features: k, out_features: m, bias: r.gen_bool(0.7) };
                let bias = geo.bias.then(|| uniform(r, m, -0.5, 0.5));
                let op = Linear::new(geo, uniform(r, m * k, -0.5, 0.5), bias).unwrap();
                (Kind::Linear(Arc::new(op)), vec![a], m)
            }
            2 => {
                let geo = LayerNormGeometry { channels: c, eps: 1e-5, bias: true, layout: FM };
                let gamma = uniform(r, c, 0.5, 1.5);
                let op = LayerNorm::new(geo, gamma, Some(uniform(r, c, -0.5, 0.5))).unwrap();
                (Kind::Norm(Arc::new(op)), vec![a], c)
            }
            3 => (Kind::Act(Activation::Relu), vec![a], c),
            7 => match r.gen_range(0..3) {
                0 => {
                    let op = BiasAdd::new(PerChannel::bias_add(c, FM), uniform(r, c, -1.0, 1.0));
                    (Kind::Bias(Arc::new(op.unwrap())), vec![a], c)
                }
                1 => (Kind::Scale(Scale { scale: r.gen_range(-2.0..2.0) }), vec![a], c),
                _ => (Kind::Softmax, vec![a], c),
            },
            4 => (Kind::Act(Activation::Sigmoid), vec![a], c),
            k => {
                // A partner of the same width (possibly `a` itself).
                let same: Vec<usize> = (0..n).filter(|&v| g.widths[v] == c).collect();
                let b = same[r.gen_range(0..same.len())];
                (if k == 5 { Kind::Add } else { Kind::Mul }, vec![a, b], c)
            }
        };
        g.steps.push((kind, inputs));
        g.widths.push(out);
        if r.gen_bool(0.25) {
            g.retained.push(g.widths.len() - 1);
        }
    }
    g
}

fn plan_of(g: &Graph) -> (ExecutionPlan, Vec<Value>) {
    let mut plan = ExecutionPlan::new();
    let mut values = vec![plan.input()];
    for (kind, inputs) in &g.steps {
        let args: Vec<Value> = inputs.iter().map(|&v| values[v]).collect();
        let v = match kind {
            Kind::Linear(op) => plan.add(op.clone(), &args),
            Kind::Norm(op) => plan.add(op.clone(), &args),
            Kind::Act(a) => plan.add(*a, &args),
            Kind::Add => plan.add(Add, &args),
            Kind::Mul => plan.add(Mul, &args),
            Kind::Bias(op) => plan.add(op.clone(), &args),
            Kind::Scale(op) => plan.add(*op, &args),
            Kind::Softmax => plan.add(Softmax, &args),
        };
        values.push(v.unwrap());
    }
    plan.set_output(*values.last().unwrap(), FM).unwrap();
    for &v in &g.retained {
        plan.retain(values[v]).unwrap();
    }
    (plan, values)
}

fn view(d: &[f32], rows: usize, c: usize) -> TensorView<'_> {
    TensorView::new(d, &[rows, c], FM).unwrap()
}

/// Every value of `g` for input `x` (`[rows, width 0]`), each operator run on its own on
/// plain `Vec`s with backend `B`.
fn reference<B: Backend>(g: &Graph, x: &[f32], rows: usize) -> Vec<Vec<f32>> {
    let mut vals = vec![x.to_vec()];
    for (s, (kind, inputs)) in g.steps.iter().enumerate() {
        let c = g.widths[s + 1];
        let mut y = vec![0.0; rows * c];
        let a = view(&vals[inputs[0]], rows, g.widths[inputs[0]]);
        let mut out = TensorViewMut::new(&mut y, &[rows, c], FM).unwrap();
        match kind {
            Kind::Linear(op) => op.run::<B>(&a, &mut out),
            Kind::Norm(op) => op.run::<B>(&a, &mut out),
            Kind::Act(f) => f.run::<B>(&a, &mut out),
            Kind::Add => Add.run::<B>(&a, &view(&vals[inputs[1]], rows, c), &mut out),
            Kind::Mul => Mul.run::<B>(&a, &view(&vals[inputs[1]], rows, c), &mut out),
            Kind::Bias(op) => op.run::<B>(&a, &mut out),
            Kind::Scale(op) => op.run::<B>(&a, &mut out),
            Kind::Softmax => Softmax.run::<B>(&a, &mut out),
        }
        .unwrap();
        vals.push(y);
    }
    vals
}

fn bits(x: &[f32]) -> Vec<u32> {
    x.iter().map(|v| v.to_bits()).collect()
}

#[derive(Clone, Copy)]
struct RandomGraphs;

impl WithBackend for RandomGraphs {
    type Output = ();
    fn run<B: Backend>(self) {
        // Steps whose output took their input's buffer, over all graphs: the in-place
        // path must be exercised, not only the out-of-place one.
        let mut in_place = 0;
        for seed in 0..300 {
            let mut r = rng(seed);
            let g = random_graph(&mut r);
            let (mut plan, values) = plan_of(&g);
            // Two row counts (one row runs the GEMV, several the GEMM), then the first again.
            let r1 = r.gen_range(1..=6);
            for rows in [r1, r.gen_range(1..=9), r1] {
                let x = uniform(&mut r, rows * g.widths[0], -1.0, 1.0);
                let want = reference::<B>(&g, &x, rows);
                let xv = TensorView::new(&x, &[rows, g.widths[0]], FM).unwrap();
                let out = plan.run::<B>(&[xv]).unwrap();
                let what = format!("{} seed {seed} rows {rows}", B::NAME);
                assert_eq!(bits(out.data()), bits(want.last().unwrap()), "{what}: output");
                for &v in &g.retained {
                    let got = plan.view(values[v]).unwrap();
                    assert_eq!(bits(got.data()), bits(&want[v]), "{what}: value {v}");
                }
            }
            let placements = &plan.memory_plan().unwrap().placements;
            in_place += placements.iter().filter(|p| p.aliases.is_some()).count();
        }
        assert!(in_place > 300, "{in_place} in-place steps in 300 graphs");
    }
}

#[test]
fn random_graphs_match_the_operators_one_by_one() {
    for kind in BackendKind::available() {
        kind.with(RandomGraphs).unwrap();
    }
}

/// Blocks are steps: a residual conv and a ConvNeXt block through a plan give the bits of
/// the blocks called directly, at several frame counts (the plan re-plans the blocks'
/// scratch for each), and a block fed the wrong channels is an error before dispatch.
#[test]
fn blocks_are_steps() {
    let mut r = rng(41);
    let c = 13;
    let act = Activation::LeakyRelu { slope: 0.1 };
    let gr = ResidualConvGeometry::new(c, 3, act).dilations(1, 3);
    let weights = ResidualConvWeights {
        conv1_weight: uniform(&mut r, c * c * 3, -0.2, 0.2),
        conv1_bias: uniform(&mut r, c, -0.1, 0.1),
        conv2_weight: uniform(&mut r, c * c * 3, -0.2, 0.2),
        conv2_bias: uniform(&mut r, c, -0.1, 0.1),
    };
    let res = Arc::new(ResidualConv::new(gr, weights).unwrap());
    let gc = ConvNeXtGeometry::new(c, 3 * c, 7);
    let weights = ConvNeXtWeights {
        dw_weight: uniform(&mut r, c * 7, -0.3, 0.3),
        dw_bias: uniform(&mut r, c, -0.1, 0.1),
        norm_weight: uniform(&mut r, c, 0.9, 1.1),
        norm_bias: uniform(&mut r, c, -0.1, 0.1),
        pw1_weight: uniform(&mut r, 3 * c * c, -0.3, 0.3),
        pw1_bias: uniform(&mut r, 3 * c, -0.1, 0.1),
        pw2_weight: uniform(&mut r, 3 * c * c, -0.2, 0.2),
        pw2_bias: uniform(&mut r, c, -0.1, 0.1),
        gamma: uniform(&mut r, c, 0.1, 0.5),
    };
    let cnx = Arc::new(ConvNeXt::new(gc, weights).unwrap());
    let mut plan = ExecutionPlan::new();
    let x = plan.input();
    let h = plan.add(Arc::clone(&res), &[x]).unwrap();
    let y = plan.add(Arc::clone(&cnx), &[h]).unwrap();
    plan.set_output(y, Layout::ChannelFirst).unwrap();
    let cf = Layout::ChannelFirst;
    for frames in [1, 40, 17] {
        let xs = uniform(&mut r, c * frames, -1.0, 1.0);
        let xv = TensorView::new(&xs, &[c, frames], cf).unwrap();
        let (mut a, mut want) = (vec![0.0; c * frames], vec![0.0; c * frames]);
        let mut scratch = vec![0.0; res.scratch_len(frames).max(cnx.scratch_len(frames))];
        let mut av = TensorViewMut::new(&mut a, &[c, frames], cf).unwrap();
        res.run::<Portable>(&xv, &mut av, &mut scratch).unwrap();
        let mut wv = TensorViewMut::new(&mut want, &[c, frames], cf).unwrap();
        cnx.run::<Portable>(&av.as_view(), &mut wv, &mut scratch).unwrap();
        let out = plan.run::<Portable>(&[xv]).unwrap();
        assert_eq!(bits(out.data()), bits(&want), "frames = {frames}");
        // The larger scratch and the block's input and output all live in the workspace.
        let need = 4 * (cnx.scratch_len(frames) + 2 * c * frames);
        assert!(plan.workspace_bytes() >= need, "frames = {frames}");
    }
    let wrong = vec![0.0; 12 * 5];
    let wv = TensorView::new(&wrong, &[12, 5], cf).unwrap();
    let e = plan.run::<Portable>(&[wv]).unwrap_err();
    assert!(matches!(e, Error::Shape(ShapeError::Dim { op: "residual_conv", .. })), "{e:?}");
}
