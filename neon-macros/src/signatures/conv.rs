//! Resolving the convolutions (`conv1d`, `depthwise_conv1d`, `conv2d`) into their
//! geometry.

use neon_runtime::ops::conv::{Conv1dGeometry, DepthwiseConv1dGeometry};
use neon_runtime::ops::conv2d::Conv2dGeometry;
use neon_runtime::Layout;

use super::{bias_len, conflict, weight_rank, WeightArg};
use super::{Call, Resolved};
use crate::ir::Op;
use crate::options::Options;
use crate::suggest;

/// The convolutions: `conv1d`, `depthwise_conv1d`, `conv2d`.
pub(super) fn resolve(call: Call, opts: &mut Options) -> Resolved {
    let Call { op, callee, w, b, .. } = call;
    Ok(Some(match op {
        "conv1d" => {
            let w = weight_rank(op, w, 3, "a weight [out_channels, in_channels / groups, kernel]")?;
            let (out_c, in_g, k) = (w.shape[0], w.shape[1], w.shape[2]);
            let groups = opts.usize("groups", 1);
            let mut g = Conv1dGeometry::new(in_g.saturating_mul(groups), out_c, k)
                .stride(opts.usize("stride", 1))
                .dilation(opts.usize("dilation", 1))
                .groups(groups)
                .output_layout(opts.layout("output", Layout::ChannelFirst));
            match (opts.flag("causal"), opts.pair("padding")) {
                (true, Some(_)) => return Err(conflict(callee)),
                (true, None) => g = g.causal(),
                (false, Some((l, r))) => g = g.padding(l, r),
                (false, None) => {}
            }
            bias_len(op, b, out_c, "a bias")?;
            Op::Conv1d(g)
        }
        "depthwise_conv1d" => {
            let w = weight_rank(op, w, 3, "a weight [channels, 1, kernel]")?;
            if w.shape[1] != 1 {
                return Err(syn::Error::new(
                    w.name.span(),
                    format!("depthwise_conv1d expects a weight [channels, 1, kernel], `{}` has shape {:?}", w.name, w.shape),
                ));
            }
            let (c, k) = (w.shape[0], w.shape[2]);
            let mut g = DepthwiseConv1dGeometry {
                channels: c,
                kernel: k,
                stride: opts.usize("stride", 1),
                dilation: opts.usize("dilation", 1),
                pad_left: 0,
                pad_right: 0,
            };
            match (opts.flag("causal"), opts.pair("padding")) {
                (true, Some(_)) => return Err(conflict(callee)),
                (true, None) => g.pad_left = g.dilation.saturating_mul(k.saturating_sub(1)),
                (false, Some((l, r))) => (g.pad_left, g.pad_right) = (l, r),
                (false, None) => {}
            }
            bias_len(op, b, c, "a bias")?;
            Op::DepthwiseConv1d(g)
        }
        "conv2d" => conv2d(op, w, b, opts)?,
        _ => unreachable!("dispatched by operator group"),
    }))
}

/// `conv2d(x, w[, b])`: the weight gives the channels and kernel; `stride`, `padding`
/// (`n`, four paddings, `same` or `valid`) and the fused output stage from the options.
fn conv2d(
    op: &str,
    w: Option<&WeightArg>,
    b: Option<&WeightArg>,
    opts: &mut Options,
) -> Result<Op, syn::Error> {
    let w = weight_rank(op, w, 4, "a weight [out_channels, in_channels, kernel_h, kernel_w]")?;
    let (out_c, in_c) = (w.shape[0], w.shape[1]);
    let mut g = Conv2dGeometry::new(in_c, out_c, (w.shape[2], w.shape[3]));
    if let Some(s) = opts.tuple("stride", 2, "`n` or `(stride_h, stride_w)`") {
        g = g.stride(s[0], s[1]);
    }
    match opts.keyword("padding") {
        Some((kw, _)) if kw == "valid" => {}
        Some((kw, e)) if kw == "same" => {
            if (g.stride_h, g.stride_w) != (1, 1) {
                return Err(syn::Error::new_spanned(
                    e,
                    "conv2d: `padding = same` needs stride 1 (give the four paddings)",
                ));
            }
            g = g.same();
        }
        Some((kw, e)) => {
            let dym = suggest::did_you_mean(&kw, &["same", "valid"]);
            return Err(syn::Error::new_spanned(
                e,
                format!(
                    "`padding` takes `n`, `(top, bottom, left, right)`, `same` or `valid`{dym}"
                ),
            ));
        }
        None => {
            let form = "`n`, `(top, bottom, left, right)`, `same` or `valid`";
            if let Some(p) = opts.tuple("padding", 4, form) {
                g = g.padding(p[0], p[1], p[2], p[3]);
            }
        }
    }
    if let Some(slope) = opts.given_float("leaky_relu") {
        g = g.leaky_relu(slope);
    }
    if let Some(min) = opts.given_float("clamp_min") {
        g = g.clamp_min(min);
    }
    bias_len(op, b, out_c, "a bias")?;
    Ok(Op::Conv2d(g))
}
