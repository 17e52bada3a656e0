//! Resolving the norms and per-channel operators (`layer_norm`, `rms_norm`, `group_norm`,
//! `layer_scale`, `bias_add`) into their geometry.

use neon_runtime::ops::elementwise::{PerChannel, PerChannelOp};
use neon_runtime::ops::norm::{GroupNormGeometry, LayerNormGeometry, RmsNormGeometry};
use neon_runtime::Layout;

use super::{bias_len, weight_rank};
use super::{Call, Resolved};
use crate::ir::Op;
use crate::options::Options;

/// The norms and per-channel operators: `layer_norm`, `rms_norm`, `group_norm`,
/// `layer_scale`, `bias_add`.
pub(super) fn resolve(call: Call, opts: &mut Options) -> Resolved {
    let Call { op, w, b, .. } = call;
    Ok(Some(match op {
        "layer_norm" | "rms_norm" | "group_norm" => {
            let w = weight_rank(op, w, 1, "a scale [channels]")?;
            let c = w.shape[0];
            let bias = bias_len(op, b, c, "a bias")?;
            let eps = opts.float("eps", 1e-5);
            match op {
                "layer_norm" => Op::LayerNorm(LayerNormGeometry {
                    channels: c,
                    eps,
                    bias,
                    layout: opts.layout("layout", Layout::ChannelFirst),
                }),
                "rms_norm" => Op::RmsNorm(RmsNormGeometry {
                    channels: c,
                    eps,
                    layout: opts.layout("layout", Layout::ChannelFirst),
                }),
                _ => Op::GroupNorm(GroupNormGeometry {
                    channels: c,
                    groups: opts.usize("groups", 1),
                    eps,
                    bias,
                }),
            }
        }
        "layer_scale" | "bias_add" => {
            let w = weight_rank(op, w, 1, "a vector [channels]")?;
            Op::PerChannel(PerChannel {
                channels: w.shape[0],
                layout: opts.layout("layout", Layout::ChannelFirst),
                op: if op == "layer_scale" { PerChannelOp::Scale } else { PerChannelOp::AddBias },
            })
        }
        _ => unreachable!("dispatched by operator group"),
    }))
}
