//! Resolving the pools (`max_pool2d`, `avg_pool1d`, `max_pool1d`, `global_avg_pool`,
//! `global_max_pool`) into the runtime's own pool operators.

use neon_runtime::ops::pool::{GlobalPool, MaxPool2d, Pool1d, Pool1dRule, PoolKind};
use neon_runtime::Layout;
use syn::Ident;

use super::{Call, Resolved};
use crate::ir::Op;
use crate::options::Options;

/// The pools: `max_pool2d`, `avg_pool1d`, `max_pool1d`, `global_avg_pool`,
/// `global_max_pool`.
pub(super) fn resolve(call: Call, opts: &mut Options) -> Resolved {
    let Call { op, callee, .. } = call;
    let kind = if op.starts_with("max") || op == "global_max_pool" {
        PoolKind::Max
    } else {
        PoolKind::Avg
    };
    Ok(Some(match op {
        "max_pool2d" => {
            let stride = opts.tuple("stride", 2, "`n` or `(stride_h, stride_w)`");
            let form = "`n` or `(kernel_h, kernel_w)`";
            let given = opts.has("kernel");
            let Some(k) = opts.tuple("kernel", 2, form) else {
                if !given {
                    return Err(syn::Error::new(
                        callee.span(),
                        "max_pool2d needs `kernel = (kernel_h, kernel_w)`",
                    ));
                }
                return Ok(None);
            };
            let mut p = MaxPool2d::new((k[0], k[1]));
            if let Some(s) = stride {
                p = p.stride(s[0], s[1]);
            }
            Op::MaxPool2d(p)
        }
        "avg_pool1d" | "max_pool1d" => match pool1d(kind, callee, opts)? {
            Some(p) => Op::Pool1d(p),
            None => return Ok(None),
        },
        "global_avg_pool" | "global_max_pool" => {
            Op::GlobalPool(GlobalPool { kind, layout: opts.layout("layout", Layout::ChannelFirst) })
        }
        _ => unreachable!("dispatched by operator group"),
    }))
}

/// `avg_pool1d` / `max_pool1d`: `kernel` (required), `stride` (default: the kernel),
/// `padding = n | (l, r)`, `ceil_mode`, `count_include_pad` (avg only, default true),
/// `layout`. The padding and `ceil_mode` limits are reported at their options.
fn pool1d(
    kind: PoolKind,
    callee: &Ident,
    opts: &mut Options,
) -> Result<Option<Pool1d>, syn::Error> {
    let Some(k) = opts.required_usize("kernel", callee) else {
        return Ok(None);
    };
    let (pad_left, pad_right) = opts.pair("padding").unwrap_or((0, 0));
    let mut p = Pool1d::new(kind, k)
        .stride(opts.usize("stride", k))
        .padding(pad_left, pad_right)
        .ceil_mode(opts.flag("ceil_mode"))
        .layout(opts.layout("layout", Layout::ChannelFirst));
    if kind == PoolKind::Avg && opts.has("count_include_pad") {
        p = p.count_include_pad(opts.flag("count_include_pad"));
    }
    // The runtime's geometry rules, reported at the option that breaks them (a zero kernel
    // or stride is left to the shape rule, at the call).
    let (key, msg) = match p.broken_rule() {
        Some(Pool1dRule::Padding) => (
            "padding",
            format!(
                "{callee}: each padding must be at most kernel / 2 = {} (PyTorch's rule)",
                k / 2
            ),
        ),
        Some(Pool1dRule::CeilMode) => (
            "ceil_mode",
            format!(
                "{callee}: `ceil_mode` needs stride <= kernel - right padding, here {} > {k} - \
                 {pad_right} (PyTorch would drop a last window starting in the padding for some \
                 lengths)",
                p.stride
            ),
        ),
        _ => return Ok(Some(p)),
    };
    match opts.peek(key) {
        Some(e) => Err(syn::Error::new_spanned(e, msg)),
        None => Ok(Some(p)),
    }
}
