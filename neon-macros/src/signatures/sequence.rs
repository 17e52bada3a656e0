//! Resolving the layout, sequence and attention operators (`transpose`, `reshape`,
//! `concat_frames`, `last_frames`, `write_frames`, `reflect_pad`, `rotary`, `attention`).

use neon_runtime::kernels::rotary::RotaryPairs;
use neon_runtime::ops::attention::Attention;
use neon_runtime::ops::layout::{Reshape, Transpose};
use neon_runtime::ops::pad::ReflectPad;
use neon_runtime::ops::rotary::RotaryGeometry;
use neon_runtime::ops::sequence::{ConcatFrames, LastFrames, WriteFrames};
use neon_runtime::Layout;

use super::{Call, Resolved};
use crate::ir::Op;
use crate::options::Options;

/// The layout, sequence and attention operators: `transpose`, `reshape`, `concat_frames`,
/// `last_frames`, `write_frames`, `reflect_pad`, `rotary`, `attention`.
pub(super) fn resolve(call: Call, opts: &mut Options) -> Resolved {
    let Call { op, callee, .. } = call;
    Ok(Some(match op {
        "transpose" => Op::Transpose(Transpose { to: opts.layout("to", Layout::FrameMajor) }),
        // Constant targets only: the shape rule then compares element counts (`reshape
        // expects 64 elements, `h` has 64 * frames`).
        "reshape" => {
            let layout = opts.layout("layout", Layout::ChannelFirst);
            let Some(dims) = opts.dims("to", callee) else {
                return Ok(None);
            };
            match Reshape::to_dims(&dims, layout) {
                Ok(r) => Op::Reshape(r),
                // `Options::dims` gives rank 1..=4 and dims >= 1.
                Err(_) => return Ok(None),
            }
        }
        "concat_frames" => {
            Op::ConcatFrames(ConcatFrames { layout: opts.layout("layout", Layout::ChannelFirst) })
        }
        "last_frames" => Op::LastFrames(LastFrames {
            frames: opts.usize("frames", 0),
            layout: opts.layout("layout", Layout::ChannelFirst),
        }),
        "write_frames" => {
            let layout = opts.layout("layout", Layout::ChannelFirst);
            let Some(at) = opts.ident("at") else {
                return Err(syn::Error::new(callee.span(), "write_frames needs `at = <scalar>`"));
            };
            Op::WriteFrames(WriteFrames { layout }, at)
        }
        "rotary" => {
            let heads = opts.required_usize("heads", callee);
            let dims = opts.required_usize("dims", callee);
            let theta = opts.float("theta", 10000.0);
            let pairs = if opts.flag("half_split") {
                RotaryPairs::HalfSplit
            } else {
                RotaryPairs::Interleaved
            };
            let at = opts.ident("at");
            let (Some(heads), Some(rotary_dims)) = (heads, dims) else {
                return Ok(None);
            };
            Op::Rotary(RotaryGeometry { heads, rotary_dims, theta, pairs }, at)
        }
        "attention" => {
            let heads = opts.required_usize("heads", callee);
            let causal = opts.flag("causal");
            let scale = opts.given_float("scale");
            let len = opts.ident("len");
            let Some(heads) = heads else {
                return Ok(None);
            };
            Op::Attention(Attention { heads, causal, scale }, len)
        }
        "reflect_pad" => {
            Op::ReflectPad(ReflectPad::new(opts.usize("left", 0), opts.usize("right", 0)))
        }
        _ => unreachable!("dispatched by operator group"),
    }))
}
