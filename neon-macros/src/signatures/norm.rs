//! Resolving the norms and per-channel operators (`layer_norm`, `rms_norm`, `group_norm`,
//! `layer_scale`, `bias_add`, `scale_shift`) into their geometry.

use neon_runtime::ops::elementwise::{PerChannel, PerChannelOp, ScaleShift};
use neon_runtime::ops::norm::{GroupNormGeometry, LayerNormGeometry, RmsNormGeometry};
use neon_runtime::Layout;

use super::{bias_len, weight_rank};
use super::{Call, Resolved};
use crate::ir::Op;
use crate::options::Options;

/// The norms and per-channel operators: `layer_norm`, `rms_norm`, `group_norm`,
/// `layer_scale`, `bias_add`, `scale_shift`.
pub(super) fn resolve(call: Call, opts: &mut Options) -> Resolved {
    let Call { op, w, b, .. } = call;
    if op == "scale_shift" {
        return scale_shift(call, opts);
    }
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

/// How `scale_shift` is written, for its errors.
const SCALE_SHIFT_FORMS: &str = "`scale_shift(x, g, b)` (per channel: two weights `[C]`) or \
     `scale_shift(x, scale = a, shift = b)` (scalars)";

/// `scale_shift`: with two weights `g`, `b` (`[C]` each) the per-channel form
/// `x * g[c] + b[c]` (a folded BatchNorm, option `layout`); without weights the scalar form
/// `x * scale + shift` (`scale` default 1, `shift` default 0, at least one given). One
/// weight is an error that names both forms.
fn scale_shift(call: Call, opts: &mut Options) -> Resolved {
    let Call { op, callee, w, b, .. } = call;
    // Read first, so that an error below does not also report `layout` as unknown.
    let layout = w.is_some().then(|| opts.layout("layout", Layout::ChannelFirst));
    match (w, b, layout) {
        (Some(_), Some(_), Some(layout)) => {
            // Rule: the scalars belong to the other form.
            for key in ["scale", "shift"] {
                let msg = format!(
                    "scale_shift with weights is per channel (`x * g[c] + b[c]`): drop \
                     `{key}`, or drop the weights for the scalar form \
                     `scale_shift(x, scale = a, shift = b)`"
                );
                opts.reject(key, msg);
            }
            let w = weight_rank(op, w, 1, "a scale [channels]")?;
            let c = w.shape[0];
            // Rule: scale and shift have one value per channel each; when their lengths
            // differ, either may be the wrong one, so the message names both.
            if let Some(b) = b.filter(|b| b.shape.len() == 1 && b.shape[0] != c) {
                let msg = format!(
                    "scale_shift: the scale `{}` has {c} values and the shift `{}` has {}: \
                     both hold one value per channel",
                    w.name, b.name, b.shape[0]
                );
                return Err(syn::Error::new(b.name.span(), msg));
            }
            bias_len(op, b, c, "a shift")?;
            Ok(Some(Op::PerChannel(PerChannel::scale_shift(c, layout))))
        }
        (Some(w), _, _) => Err(syn::Error::new(
            w.name.span(),
            format!("scale_shift takes two weights or none: {SCALE_SHIFT_FORMS}"),
        )),
        _ => {
            if !opts.has("scale") && !opts.has("shift") {
                let msg = format!("scale_shift needs weights or options: {SCALE_SHIFT_FORMS}");
                return Err(syn::Error::new(callee.span(), msg));
            }
            let scale = opts.float("scale", 1.0);
            let shift = opts.float("shift", 0.0);
            Ok(Some(Op::ScaleShift(ScaleShift { scale, shift })))
        }
    }
}
