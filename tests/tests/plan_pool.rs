//! The pools in `neon_plan!` over a symbolic number of frames: `avg_pool1d` with padding
//! and `count_include_pad = false`, `max_pool1d` with asymmetric padding and `ceil_mode`,
//! an unpadded `max_pool1d` (the runtime's `max_pool2d` path), the global pools, and
//! frame-major pools after a transpose. Every output is checked against the f64
//! reference written from PyTorch's definitions, on every backend, and `run` allocates
//! nothing.

mod common;
#[path = "../../neon-runtime/tests/common/pool64.rs"]
mod pool_ref;

use neon_macros::neon_plan;
use neon_runtime::{Backend, Error, Portable};
use pool_ref::{transpose, Pool1dRef};

neon_plan! {
    /// `[6, frames]` through every pool.
    pub plan Pools {
        dim frames in 4..=200;
        input x: [6, frames];
        output a: [6, (frames - 1) / 2 + 1];
        output b: [6, (frames + 1) / 3 + 1];
        output c: [6, (frames - 2) / 2 + 1];
        output g: [6, 1];
        output gm: [1, 6];
        output f: [(frames - 1) / 3 + 1, 6];

        a = avg_pool1d(x, kernel = 3, stride = 2, padding = 1, count_include_pad = false);
        b = max_pool1d(x, kernel = 4, stride = 3, padding = (2, 1), ceil_mode);
        c = max_pool1d(x, kernel = 2);
        g = global_avg_pool(x);
        let t = transpose(x);
        gm = global_max_pool(t, layout = frame_major);
        f = avg_pool1d(t, kernel = 3, ceil_mode = true, layout = frame_major);
    }
}

const C: usize = 6;

fn values(n: usize, seed: usize) -> Vec<f32> {
    (0..n).map(|i| ((i * 7919 + seed * 104_729) % 1009) as f32 / 504.5 - 1.0).collect()
}

fn pool(max: bool, kernel: usize, stride: usize, pad: (usize, usize), ceil: bool) -> Pool1dRef {
    Pool1dRef { max, kernel, stride, pad, ceil_mode: ceil, count_include_pad: true }
}

/// The plan's outputs `[a, b, c, g, gm, f]` for `frames`, as the f64 reference computes
/// them (frame-major outputs transposed back to their layout).
fn reference(x: &[f32], t: usize) -> [Vec<f64>; 6] {
    let x: Vec<f64> = x.iter().map(|&v| v as f64).collect();
    let a = Pool1dRef { count_include_pad: false, ..pool(false, 3, 2, (1, 1), false) };
    let f = pool(false, 3, 3, (0, 0), true);
    let f_frames = f.out_frames(t);
    [
        a.run(&x, C, t),
        pool(true, 4, 3, (2, 1), true).run(&x, C, t),
        pool(true, 2, 2, (0, 0), false).run(&x, C, t),
        pool_ref::global_pool(&x, C, t, false),
        pool_ref::global_pool(&x, C, t, true),
        transpose(&f.run(&x, C, t), C, f_frames),
    ]
}

type Outputs = [Vec<f32>; 6];

/// Output buffers for `t` frames, filled with `v`.
fn outputs(t: usize, v: f32) -> Outputs {
    let lens = [
        Pools::a_len(t),
        Pools::b_len(t),
        Pools::c_len(t),
        Pools::g_len(),
        Pools::gm_len(),
        Pools::f_len(t),
    ];
    lens.map(|n| vec![v; n])
}

fn run<B: Backend>(
    x: &[f32],
    t: usize,
    o: &mut Outputs,
    ws: &mut PoolsWorkspace,
) -> Result<(), Error> {
    let [a, b, c, g, gm, f] = o;
    Pools::run::<B>(&PoolsWeights {}, x, a, b, c, g, gm, f, t, ws)
}

fn plan_equals_f64<B: Backend>() {
    let mut ws = Box::new(PoolsWorkspace::new());
    for t in (4..=40).chain([63, 64, 65, 127, 199, 200]) {
        let x = values(C * t, t);
        let mut got = outputs(t, f32::NAN);
        run::<B>(&x, t, &mut got, &mut ws).unwrap();
        for (i, (g, w)) in got.iter().zip(reference(&x, t)).enumerate() {
            assert_eq!(g.len(), w.len(), "{} frames {t} output {i}", B::NAME);
            for (j, (&g, &w)) in g.iter().zip(&w).enumerate() {
                // Maxima are exact; means are sums of at most 200 values of magnitude <= 1.
                let ok = (g as f64 - w).abs() <= 2e-6;
                assert!(ok, "{} frames {t} output {i} [{j}]: {g} vs {w}", B::NAME);
            }
        }
    }
}

neon_runtime::backend_tests!(plan_equals_f64);

#[test]
fn lengths_and_errors() {
    assert_eq!(Pools::a_len(10), 6 * 5);
    assert_eq!(Pools::b_len(10), 6 * 4);
    assert_eq!(Pools::c_len(11), 6 * 5);
    assert_eq!((Pools::g_len(), Pools::gm_len()), (6, 6));
    assert_eq!(Pools::f_len(10), 4 * 6);
    let mut ws = Box::new(PoolsWorkspace::new());
    // Below the range of frames, or a wrong input length: errors before any kernel.
    let mut o = outputs(4, 7.0);
    assert!(run::<Portable>(&values(C * 3, 1), 3, &mut o, &mut ws).is_err());
    assert!(run::<Portable>(&values(C * 3, 1), 4, &mut o, &mut ws).is_err());
    assert!(o.iter().flatten().all(|&v| v == 7.0));
}

#[test]
fn run_allocates_nothing() {
    let mut ws = Box::new(PoolsWorkspace::new());
    let x = values(C * 200, 3);
    let mut o = outputs(200, 0.0);
    common::allocation_free(|| run::<Portable>(&x, 200, &mut o, &mut ws)).unwrap();
}
