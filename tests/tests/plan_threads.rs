//! Generated plans on a worker team: a ConvNeXt-like block (depthwise conv, pointwise
//! convs) and an attention block (a frame-major conv, linear projections, attention) give
//! the serial run's bits for teams of 2, 3, 4 and 7 threads; a context that fails returns
//! its error from `run_with`, and the plan runs correctly afterwards (the workspace is the
//! same compile-time constant for any thread count: blocks split output rows only, the
//! im2col copies stay on the calling thread); a team above a plan's declared `workers`
//! bound is refused before any kernel runs.

use neon_macros::neon_plan;
use neon_runtime::ops::conv::{Conv1d, DepthwiseConv1d};
use neon_runtime::ops::linear::Linear;
use neon_runtime::{Backend, Error, Parallel, RunOptions, Serial, Team, TeamError};

neon_plan! {
    /// Pointwise convs around a depthwise one, channel-first `[48, frames]`.
    pub plan Convs {
        dim frames in 1..=400;
        weight dw: f32[48, 1, 7];
        weight dw_b: f32[48];
        weight up: f32[96, 48, 1];
        weight up_b: f32[96];
        weight down: f32[48, 96, 3];
        input x: [48, frames];
        output y: [48, frames];

        let h = depthwise_conv1d(x, dw, dw_b, padding = (3, 3));
        let h = conv1d(h, up, up_b);
        let h = gelu(h);
        y = conv1d(h, down, padding = (1, 1));
    }
}

neon_plan! {
    /// A conv to frame-major features, then bidirectional attention over them.
    pub plan AttentionBlock {
        workers 8;
        dim frames in 1..=200;
        weight conv: f32[64, 32, 3];
        weight conv_b: f32[64];
        weight wq: f32[64, 64];
        weight wv: f32[64, 64];
        input x: [32, frames];
        output y: [frames, 64];

        let h = conv1d(x, conv, conv_b, padding = (1, 1), output = frame_major);
        let q = linear(h, wq);
        let v = linear(h, wv);
        y = attention(q, h, v, heads = 4);
    }
}

fn values(n: usize, seed: usize, scale: f32) -> Vec<f32> {
    (0..n).map(|i| (((i * 7919 + seed * 104_729) % 1009) as f32 / 504.5 - 1.0) * scale).collect()
}

fn convs_weights() -> ConvsWeights<Vec<f32>> {
    type P = Convs;
    ConvsWeights {
        dw: DepthwiseConv1d::new(P::DW, values(48 * 7, 1, 0.3), Some(values(48, 2, 0.1))).unwrap(),
        up: Conv1d::new(P::UP, values(96 * 48, 3, 0.2), Some(values(96, 4, 0.1))).unwrap(),
        down: Conv1d::new(P::DOWN, values(48 * 96 * 3, 5, 0.1), None).unwrap(),
    }
}

fn attention_weights() -> AttentionBlockWeights<Vec<f32>> {
    type P = AttentionBlock;
    AttentionBlockWeights {
        conv: Conv1d::new(P::CONV, values(64 * 32 * 3, 6, 0.2), Some(values(64, 7, 0.1))).unwrap(),
        wq: Linear::new(P::WQ, values(64 * 64, 8, 0.2), None).unwrap(),
        wv: Linear::new(P::WV, values(64 * 64, 9, 0.2), None).unwrap(),
    }
}

/// The weights and workspaces of both plans.
struct Plans {
    convs: ConvsWeights<Vec<f32>>,
    attention: AttentionBlockWeights<Vec<f32>>,
    ws: Box<(ConvsWorkspace, AttentionBlockWorkspace)>,
}

impl Plans {
    fn new() -> Self {
        let ws = Box::new((ConvsWorkspace::new(), AttentionBlockWorkspace::new()));
        Self { convs: convs_weights(), attention: attention_weights(), ws }
    }

    /// Both plans on `par`: their outputs, or the first error.
    fn run<B: Backend>(
        &mut self,
        par: &dyn Parallel,
        frames: usize,
    ) -> Result<(Vec<f32>, Vec<f32>), Error> {
        let o = RunOptions::new().with_parallel(par);
        let x = values(48 * frames, 10, 1.0);
        let mut y = vec![f32::NAN; 48 * frames];
        Convs::run_with::<B, _>(&self.convs, &x, &mut y, frames, &mut self.ws.0, o)?;
        let f2 = frames.min(200);
        let x2 = values(32 * f2, 11, 1.0);
        let mut y2 = vec![f32::NAN; f2 * 64];
        AttentionBlock::run_with::<B, _>(&self.attention, &x2, &mut y2, f2, &mut self.ws.1, o)?;
        Ok((y, y2))
    }
}

fn plans_same_bits<B: Backend>() {
    let mut plans = Plans::new();
    let teams: Vec<Team> = [2, 3, 4, 7].iter().map(|&n| Team::new(n).unwrap()).collect();
    for frames in [1, 37, 150, 400] {
        let want = plans.run::<B>(&Serial, frames).unwrap();
        for team in &teams {
            let n = team.threads();
            let got = plans.run::<B>(team, frames).unwrap();
            for (what, g, w) in [("convs", &got.0, &want.0), ("attention", &got.1, &want.1)] {
                let i = g.iter().zip(w).position(|(a, b)| a.to_bits() != b.to_bits());
                assert_eq!(i, None, "{} {what}, {frames} frames, {n} threads", B::NAME);
            }
        }
    }
}

/// A context whose every dispatch fails, as a team's does after a task panicked.
struct Failing;

impl Parallel for Failing {
    fn workers(&self) -> usize {
        4
    }
    fn dispatch(&self, _: usize, _: &(dyn Fn(usize, usize) + Sync)) -> Result<(), Error> {
        Err(Error::Team(TeamError::Panicked))
    }
}

fn failing_context_is_an_error_and_the_plan_stays_usable<B: Backend>() {
    let mut plans = Plans::new();
    let want = plans.run::<B>(&Serial, 150).unwrap();
    let err = plans.run::<B>(&Failing, 150).unwrap_err();
    assert_eq!(err, Error::Team(TeamError::Panicked));
    assert_eq!(plans.run::<B>(&Serial, 150).unwrap(), want);
}

/// `workers 8;`: a team of 9 is refused before any kernel runs, naming the bound; a plan
/// without the declaration takes any team.
fn a_team_above_the_declared_maximum_is_an_error<B: Backend>() {
    assert_eq!(AttentionBlock::MAX_WORKERS, 8);
    assert_eq!(Convs::MAX_WORKERS, usize::MAX);
    let mut plans = Plans::new();
    let nine = Team::new(9).unwrap();
    let err = plans.run::<B>(&nine, 20).unwrap_err();
    assert_eq!(err, Error::OutOfRange { name: "workers", value: 9, min: 1, max: 8 });
    assert!(err.to_string().contains("workers = 9 is outside 1..=8"), "{err}");
    let eight = Team::new(8).unwrap();
    assert_eq!(plans.run::<B>(&eight, 20).unwrap(), plans.run::<B>(&Serial, 20).unwrap());
}

neon_runtime::backend_tests!(
    plans_same_bits,
    failing_context_is_an_error_and_the_plan_stays_usable,
    a_team_above_the_declared_maximum_is_an_error
);
