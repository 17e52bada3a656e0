//! Instruction-count workloads for Silero VAD: one 512-sample window (32 ms of audio).
//!
//! Run under `benches/insn-count.sh` (qemu-aarch64 with the insn-count plugin, `--region`):
//! only the marked region is counted. Loading and packing the weights, decoding the clip and
//! streaming the windows before the counted one happen before it; the check against ONNX
//! Runtime's probability after it.
//!
//! Input: window 109 of `models/moonshine/clips/train_numbers.wav` (embedded; ONNX Runtime's
//! probability 0.618), after windows 0..109 of the clip, so the LSTM state and the context
//! are the stream's (`neon_benches::vad`).
//!
//! Usage: `insn_vad WORKLOAD [portable]` with WORKLOAD one of
//! - `window`: the compiled plan alone, `SileroVad::run` on the window's 576 inputs (64
//!   samples of context, then the 512 new ones) and the carried `[2, 128]` state: what ONNX
//!   Runtime's `session.run` computes per window;
//! - `push`: `Vad::push` of the window's 512 samples to a stream that was pushed windows
//!   0..109: the finiteness check, the copy into the input buffer, the one backend dispatch,
//!   the plan, the context shift;
//! - `steps`: the plan's steps as separate operator calls on the same window and state,
//!   each kind in its own region (printed by `count-insns.sh --region` without `--quiet`
//!   as `region_insns[id]`): 1 reflect pad, 2 STFT (window, 256-point real FFT and
//!   magnitudes of the 4 frames; 3, the magnitudes of the former STFT conv, is no longer
//!   marked), 4..7 encoder convs 0..3 (frame-major outputs, as the plan), 8 the four ReLUs,
//!   9 LSTM cell, 10 decoder (the state's h, ReLU, linear, sigmoid), 11 the three transposes
//!   back to channel-first.
//!   The probability is checked bit for bit against the plan's. `steps:N` marks only region
//!   `N`, for `count-insns.sh --sym` of one step.
//!
//! FLOPs (in `insn-count.sh`): 2 x `neon_benches::vad::MACS_PER_WINDOW` (679,552
//! multiply-adds). After the region the probability is checked against ONNX Runtime's
//! (`models/vad/goldens/train_numbers.json`, within 1e-4 as `models/tests/vad.rs`). On
//! aarch64 the backend is `Neon` (or `Portable` with the last argument `portable`).

use std::sync::atomic::{AtomicU64, Ordering};

use neon_benches::vad::{clip, golden, windows, COUNTED_WINDOW, INPUT, MACS_PER_WINDOW, STATE};
use neon_benches::{region_start, region_stop};
use neon_models::vad::detector::{Vad, VadModel};
use neon_models::vad::network::{SileroVad, SileroVadWorkspace};
use neon_models::vad::WINDOW;
use neon_runtime::ops::activation::Activation;
use neon_runtime::ops::conv::Conv1d;
use neon_runtime::ops::layout::Transpose;
use neon_runtime::ops::pad::ReflectPad;
use neon_runtime::{Backend, Layout, Portable, TensorView, TensorViewMut};

#[cfg(target_arch = "aarch64")]
type Fast = neon_runtime::Neon;
#[cfg(not(target_arch = "aarch64"))]
type Fast = Portable;

const USAGE: &str = "usage: insn_vad window | push | steps[:N]  [portable]";

/// The only region `steps` marks (`steps:N`), or 0 for all (read inside the regions of
/// `steps` only: `window` and `push` mark theirs directly).
static ONLY: AtomicU64 = AtomicU64::new(0);

fn step_start(id: u64) {
    let only = ONLY.load(Ordering::Relaxed);
    if only == 0 || only == id {
        region_start(id);
    }
}

fn step_stop(id: u64) {
    let only = ONLY.load(Ordering::Relaxed);
    if only == 0 || only == id {
        region_stop(id);
    }
}

/// The plan's steps one by one on `x` and `state` (see the module docs for the regions);
/// returns the probability.
fn steps<B: Backend>(model: &VadModel, x: &[f32], state: &mut [f32]) -> f32 {
    let w = &model.weights;
    let (cf, fm) = (Layout::ChannelFirst, Layout::FrameMajor);
    // Every buffer is allocated before the first region.
    let mut pad = vec![0.0; 640];
    let mut out = vec![0.0; 128 * 4]; // a conv's frame-major output
    let mut h = vec![0.0; 129 * 4]; // the next conv's channel-first input
    let mut scratch = vec![0.0; 1 << 14];
    let mut stft_scratch = vec![0.0; w.stft_window.scratch_len()];
    let mut lstm_scratch = vec![0.0; w.lstm.scratch_len()];
    let mut hidden = [0.0f32; 128];
    let mut p = [0.0f32];
    // Conv `c` (region `id`) of the channel-first `x` `dims` into `out` frame-major, ReLU
    // (region 8); returns its `[frames, channels]`.
    let conv =
        |c: &Conv1d<Vec<f32>>, id, x: &[f32], dims: [usize; 2], out: &mut [f32], s: &mut [f32]| {
            let g = c.geometry();
            let t = g.output_frames(dims[1]).unwrap();
            let n = t * g.out_channels;
            let mut yv = TensorViewMut::new(&mut out[..n], &[t, g.out_channels], fm).unwrap();
            step_start(id);
            c.run::<B>(&TensorView::new(&x[..dims[0] * dims[1]], &dims, cf).unwrap(), &mut yv, s)
                .unwrap();
            step_stop(id);
            step_start(8);
            Activation::Relu.run_in_place::<B>(&mut yv).unwrap();
            step_stop(8);
            [t, g.out_channels]
        };
    // The frame-major `[t, c]` in `out` to channel-first `[c, t]` in `y` (region 11).
    let transpose = |out: &[f32], [t, c]: [usize; 2], y: &mut [f32]| {
        step_start(11);
        let mut yv = TensorViewMut::new(&mut y[..t * c], &[c, t], cf).unwrap();
        Transpose::new(cf)
            .run::<B>(&TensorView::new(&out[..t * c], &[t, c], fm).unwrap(), &mut yv)
            .unwrap();
        step_stop(11);
        [c, t]
    };

    step_start(1);
    let mut pv = TensorViewMut::new(&mut pad, &[1, 640], cf).unwrap();
    ReflectPad::new(0, 64).run(&TensorView::new(x, &[1, 576], cf).unwrap(), &mut pv).unwrap();
    step_stop(1);
    step_start(2);
    let mut mv = TensorViewMut::new(&mut h, &[129, 4], cf).unwrap();
    let pv = TensorView::new(&pad, &[1, 640], cf).unwrap();
    w.stft_window.run::<B>(&pv, &mut mv, &mut stft_scratch).unwrap();
    step_stop(2);
    let mut dims = [129, 4];
    for (id, c) in [(4, &w.conv0), (5, &w.conv1), (6, &w.conv2)] {
        let d = conv(c, id, &h.clone(), dims, &mut out, &mut scratch);
        dims = transpose(&out, d, &mut h);
    }
    // The last conv's one frame is the LSTM's frame-major input as it is.
    conv(&w.conv3, 7, &h.clone(), dims, &mut out, &mut scratch);
    step_start(9);
    let mut sv = TensorViewMut::new(state, &[2, 128], fm).unwrap();
    let xv = TensorView::new(&out[..128], &[1, 128], fm).unwrap();
    w.lstm.run::<B>(&mut sv, &xv, &mut lstm_scratch).unwrap();
    step_stop(9);
    step_start(10);
    hidden.copy_from_slice(&state[128..]);
    Activation::Relu.apply::<B>(&mut hidden).unwrap();
    let hv = TensorView::new(&hidden, &[1, 128], fm).unwrap();
    let mut yv = TensorViewMut::new(&mut p, &[1, 1], fm).unwrap();
    w.decoder.run::<B>(&hv, &mut yv).unwrap();
    Activation::Sigmoid.apply::<B>(&mut p).unwrap();
    step_stop(10);
    p[0]
}

/// The plan run over the clip's first windows (before any region): the model inputs of all
/// the windows, and the recurrent state, workspace and output after the first `k`.
struct Primed {
    inputs: Vec<[f32; INPUT]>,
    state: [f32; STATE],
    ws: Box<SileroVadWorkspace>,
    p: [f32; 1],
}

fn primed<B: Backend>(model: &VadModel, samples: &[f32], k: usize) -> Primed {
    let inputs = windows(samples);
    let mut state = [0.0f32; STATE];
    let mut ws = Box::new(SileroVadWorkspace::new());
    let mut p = [0.0f32];
    for x in &inputs[..k] {
        SileroVad::run::<B, _>(&model.weights, x, &mut p, &mut state, &mut ws).unwrap();
    }
    Primed { inputs, state, ws, p }
}

/// Runs the workload on backend `B`; returns the counted window's probability.
fn run<B: Backend>(workload: &str) -> Option<f32> {
    let model = VadModel::builtin().expect("the embedded weights load");
    let samples = clip();
    let k = COUNTED_WINDOW;
    let workload = match workload.split_once(':') {
        Some(("steps", n)) => {
            ONLY.store(n.parse().ok().filter(|n| (1..=10).contains(n))?, Ordering::Relaxed);
            "steps"
        }
        _ => workload,
    };
    let p = match workload {
        "window" => {
            let Primed { inputs, mut state, mut ws, mut p } = primed::<B>(&model, &samples, k);
            region_start(1);
            let r = SileroVad::run::<B, _>(&model.weights, &inputs[k], &mut p, &mut state, &mut ws);
            region_stop(1);
            r.unwrap();
            p[0]
        }
        "push" => {
            let mut vad = Vad::new(model, B::KIND).unwrap();
            vad.push(&samples[..k * WINDOW], |_| {}).unwrap();
            let window = &samples[k * WINDOW..(k + 1) * WINDOW];
            let mut p = f32::NAN;
            region_start(1);
            let r = vad.push(window, |v| p = v);
            region_stop(1);
            r.unwrap();
            p
        }
        "steps" => {
            let Primed { inputs, mut state, mut ws, mut p } = primed::<B>(&model, &samples, k);
            let mut by_steps = state;
            let q = steps::<B>(&model, &inputs[k], &mut by_steps);
            SileroVad::run::<B, _>(&model.weights, &inputs[k], &mut p, &mut state, &mut ws)
                .unwrap();
            if q.to_bits() != p[0].to_bits() || by_steps != state {
                eprintln!("insn_vad steps ({}): {q} one by one, {} by the plan", B::NAME, p[0]);
                std::process::exit(1);
            }
            q
        }
        _ => return None,
    };
    let want = golden()[k];
    if (p - want).abs() > 1e-4 {
        eprintln!("insn_vad {workload} ({}): window {k}: {p}, ONNX Runtime {want}", B::NAME);
        std::process::exit(1);
    }
    eprintln!("{workload} ({}): window {k}, p = {p}, {} FLOPs", B::NAME, 2 * MACS_PER_WINDOW);
    Some(p)
}

fn main() {
    neon_benches::workload_main(USAGE, run::<Portable>, run::<Fast>);
}
