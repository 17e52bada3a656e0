//! Instruction-count workloads for the attention and rotary kernels at Moonshine base's
//! shapes (8 heads x head_dim 52, rotary on 32 of the 52 dims, theta 10000).
//!
//! Run under qemu-aarch64 with the insn-count plugin and `--region`, e.g.
//! `count-insns.sh --region --quiet --cpu neoverse-n1 target/.../insn_attention attention 413 413`:
//! only the measured call (between the plugin's marker system calls) is counted, after one
//! warm-up call.
//!
//! Usage: `insn_attention WORKLOAD A B` with WORKLOAD one of
//! - `attention Q LEN`: `Q` queries over `LEN` keys and values (bidirectional; the
//!   encoder is `413 413`, a decoder step's cross-attention `1 400`);
//! - `attention-causal Q LEN`: the same with the causal mask (a decoder step's
//!   self-attention is `1 LEN`);
//! - `rotary FRAMES AT`: the rotary embedding of `FRAMES` frames at positions `AT..`;
//!
//! each prefixed with `portable-` for the portable backend.

use neon_benches::{data, region_start, region_stop};
use neon_runtime::kernels::attention::AttentionGeometry;
use neon_runtime::kernels::rotary::{inv_freq, RotaryFrames, RotaryPairs};
use neon_runtime::{Backend, Portable};

#[cfg(target_arch = "aarch64")]
type Fast = neon_runtime::Neon;
#[cfg(not(target_arch = "aarch64"))]
type Fast = Portable;

const HEADS: usize = 8;
const HEAD_DIM: usize = 52;
const CHANNELS: usize = HEADS * HEAD_DIM;

fn run<B: Backend>(workload: &str, a: usize, b: usize) -> f32 {
    match workload {
        "attention" | "attention-causal" => {
            let (qf, len) = (a, b);
            let causal = workload == "attention-causal";
            let (q, k, v) =
                (data(qf * CHANNELS, 1), data(len * CHANNELS, 2), data(len * CHANNELS, 3));
            let mut out = vec![0.0; qf * CHANNELS];
            let scale = 1.0 / (HEAD_DIM as f32).sqrt();
            let g = AttentionGeometry {
                q_frames: qf,
                len,
                heads: HEADS,
                head_dim: HEAD_DIM,
                scale,
                causal,
            };
            let call = |out: &mut [f32]| B::attention(&q, &k, &v, out, g);
            call(&mut out);
            region_start(1);
            call(&mut out);
            region_stop(1);
            out.iter().sum()
        }
        "rotary" => {
            let (frames, at) = (a, b);
            let w = inv_freq(10000.0, 32);
            let mut x = data(frames * CHANNELS, 4);
            let pairs = RotaryPairs::Interleaved;
            let f = RotaryFrames { frames, heads: HEADS, head_dim: HEAD_DIM, at };
            B::rotary(&mut x, f, &w[..16], pairs);
            region_start(1);
            B::rotary(&mut x, f, &w[..16], pairs);
            region_stop(1);
            x.iter().sum()
        }
        _ => {
            eprintln!("unknown workload {workload}");
            std::process::exit(2);
        }
    }
}

fn main() {
    neon_benches::sized_main(
        "usage: insn_attention [portable-]attention|attention-causal Q LEN | [portable-]rotary FRAMES AT",
        " ",
        |w, [a, b]| run::<Portable>(w, a, b),
        |w, [a, b]| run::<Fast>(w, a, b),
    );
}
