//! The operator table of `neon_plan!`: the argument slots of every builtin call, its
//! flags, and how a call such as `conv1d(x, w, b, stride = 2)` becomes the runtime's own
//! geometry ([`Op`]), whose shape rule and planner facts the check phase then reads.
//!
//! Every geometry here is a `neon_runtime::ops` type: the macro never restates a shape
//! rule, an in-place fact or a layout.

use neon_runtime::blocks::{ConvNeXtGeometry, ResidualConvGeometry};
use neon_runtime::kernels::rotary::RotaryPairs;
use neon_runtime::ops::activation::Activation;
use neon_runtime::ops::attention::Attention;
use neon_runtime::ops::complex::ComplexMagnitude;
use neon_runtime::ops::conv::{Conv1dGeometry, DepthwiseConv1dGeometry};
use neon_runtime::ops::conv2d::Conv2dGeometry;
use neon_runtime::ops::elementwise::{Add, Mul, PerChannel, PerChannelOp};
use neon_runtime::ops::layout::Transpose;
use neon_runtime::ops::linear::LinearGeometry;
use neon_runtime::ops::lstm::LstmCellGeometry;
use neon_runtime::ops::norm::{GroupNormGeometry, LayerNormGeometry, RmsNormGeometry};
use neon_runtime::ops::pad::ReflectPad;
use neon_runtime::ops::pool::MaxPool2d;
use neon_runtime::ops::quant::{BlockQ8LinearGeometry, QuantLinearGeometry};
use neon_runtime::ops::rotary::RotaryGeometry;
use neon_runtime::ops::sequence::{ConcatFrames, LastFrames, WriteFrames};
use neon_runtime::ops::softmax::Softmax;
use neon_runtime::ops::stft::StftMagnitudeGeometry;
use neon_runtime::{Layout, Shape};
use syn::Ident;

use crate::ctxt::Ctxt;
use crate::ir::{BlockKind, Op, Storage};
use crate::options::Options;
use crate::sym::SymDim;

/// What an argument position of an operator takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Slot {
    Tensor,
    Weight,
    OptionalWeight,
}

/// The signature of a builtin operator: argument slots and whether it has weights.
pub fn signature(name: &str) -> Option<&'static [Slot]> {
    use Slot::*;
    Some(match name {
        "conv1d" | "depthwise_conv1d" | "conv2d" | "linear" | "layer_norm" | "group_norm" => {
            &[Tensor, Weight, OptionalWeight]
        }
        "rms_norm" | "layer_scale" | "bias_add" | "residual_conv" | "convnext"
        | "stft_magnitude" => &[Tensor, Weight],
        "transpose" | "relu" | "leaky_relu" | "clamp_min" | "gelu" | "gelu_tanh" | "silu"
        | "tanh" | "sigmoid" | "exp" | "softmax" | "last_frames" | "max_pool2d" | "rotary"
        | "complex_magnitude" | "reflect_pad" => &[Tensor],
        "add" | "mul" | "concat_frames" | "write_frames" => &[Tensor, Tensor],
        "attention" => &[Tensor, Tensor, Tensor],
        "lstm_cell" => &[Tensor, Tensor, Weight, OptionalWeight],
        _ => return None,
    })
}

/// Whether `name` is a flag of operator `op`: an option that may be written bare
/// (`causal` for `causal = true`).
pub fn is_flag(op: &str, name: &str) -> bool {
    matches!(
        (op, name),
        ("conv1d" | "depthwise_conv1d" | "attention", "causal")
            | ("rotary", "half_split")
            | ("residual_conv", "relu")
    )
}

/// How a call of an operator that always writes its first input in place
/// ([`InPlace::Always`](neon_runtime::ops::InPlace::Always)) is written: the hint of the
/// error for a call assigned to anything but the state it reads.
pub fn in_place_example(op: &str) -> String {
    match op {
        "lstm_cell" => "s = lstm_cell(s, x, w, b)".to_string(),
        _ => format!("s = {op}(s, x, at = pos)"),
    }
}

/// A tensor argument as the resolver sees it: the user's name and its symbolic shape.
pub struct TensorArg<'a> {
    pub name: &'a Ident,
    pub shape: &'a Shape<SymDim>,
}

impl TensorArg<'_> {
    /// The shape as the user writes it, `[2, 128]`.
    fn shape_text(&self) -> String {
        let parts: Vec<String> = self.shape.dims().iter().map(|d| d.to_string()).collect();
        format!("[{}]", parts.join(", "))
    }
}

/// A weight argument as the resolver sees it: name, span and constant shape.
pub struct WeightArg<'a> {
    pub name: &'a Ident,
    pub shape: &'a [usize],
    pub storage: Storage,
}

/// Rule: a weight has the rank its operator reads.
fn weight_rank(op: &str, w: &WeightArg, rank: usize, what: &str) -> Result<(), syn::Error> {
    if w.shape.len() == rank {
        Ok(())
    } else {
        Err(syn::Error::new(
            w.name.span(),
            format!("{op} expects {what} of rank {rank}, `{}` has shape {:?}", w.name, w.shape),
        ))
    }
}

/// Rule: a bias has one value per output channel (or feature).
fn bias_len(op: &str, b: Option<&WeightArg>, n: usize, what: &str) -> Result<bool, syn::Error> {
    match b {
        None => Ok(false),
        Some(b) if b.shape == [n] => Ok(true),
        Some(b) => Err(syn::Error::new(
            b.name.span(),
            format!("{op} expects {what} of shape [{n}], `{}` has shape {:?}", b.name, b.shape),
        )),
    }
}

/// A block weight whose declaration does not list the block's sizes (the declaration
/// check reports it first; this keeps the resolver total).
fn block_sizes(w: &WeightArg, kind: BlockKind) -> syn::Error {
    syn::Error::new(
        w.name.span(),
        format!("`{}` must be declared {}, it has sizes {:?}", w.name, kind.form(), w.shape),
    )
}

fn conflict(callee: &Ident) -> syn::Error {
    syn::Error::new(
        callee.span(),
        format!("{callee}: `causal = true` and `padding` both set the padding; give one"),
    )
}

/// Builds the operator of a call from its name, weight shapes, options and (for the
/// operators whose geometry the tensors give, `lstm_cell`) tensor shapes; `None` when the
/// call is invalid (reported into `cx`; malformed option values are reported by `opts`).
pub fn resolve(
    callee: &Ident,
    weights: &[WeightArg],
    tensors: &[TensorArg],
    opts: &mut Options,
    cx: &Ctxt,
) -> Option<Op> {
    match resolve_op(callee, weights, tensors, opts) {
        Ok(op) => op,
        Err(e) => {
            cx.syn_error(e);
            None
        }
    }
}

/// [`resolve`]: `Err` for an error of its own, `Ok(None)` when an option error (already
/// reported) leaves the call without an operator.
fn resolve_op(
    callee: &Ident,
    weights: &[WeightArg],
    tensors: &[TensorArg],
    opts: &mut Options,
) -> Result<Option<Op>, syn::Error> {
    let name = callee.to_string();
    let op = name.as_str();
    let w = weights.first();
    let b = weights.get(1);
    // Rule: a block's weights go to that block's statement, and a block statement takes
    // its own block's weights.
    let block = BlockKind::from_name(op);
    for arg in weights {
        match (arg.storage, block) {
            (Storage::Block(k), Some(b)) if k == b => {}
            (Storage::Block(k), _) => {
                return Err(syn::Error::new(
                    arg.name.span(),
                    format!(
                        "`{}` is a {k} block: call it as `let y = {k}(x, {});`",
                        arg.name, arg.name
                    ),
                ))
            }
            (s, Some(b)) => {
                return Err(syn::Error::new(
                    arg.name.span(),
                    format!(
                        "{op} takes the weights of a block declared {}, `{}` is {s}{:?}",
                        b.form(),
                        arg.name,
                        arg.shape
                    ),
                ))
            }
            (_, None) => {}
        }
    }
    // Rule: only `linear` takes int8 weights; biases and every other weight are f32.
    for (k, arg) in weights.iter().enumerate() {
        if block.is_none() && arg.storage != Storage::F32 && !(op == "linear" && k == 0) {
            return Err(syn::Error::new(
                arg.name.span(),
                format!(
                    "{op} takes f32 {}, `{}` is {}",
                    if k == 0 { "weights" } else { "biases" },
                    arg.name,
                    arg.storage
                ),
            ));
        }
    }
    Ok(Some(match op {
        "conv1d" => {
            let w = w.expect("signature has a weight");
            weight_rank(op, w, 3, "a weight [out_channels, in_channels / groups, kernel]")?;
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
            let w = w.expect("signature has a weight");
            weight_rank(op, w, 3, "a weight [channels, 1, kernel]")?;
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
        "conv2d" => {
            let w = w.expect("signature has a weight");
            weight_rank(op, w, 4, "a weight [out_channels, in_channels, kernel_h, kernel_w]")?;
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
                Some((_, e)) => {
                    return Err(syn::Error::new_spanned(
                        e,
                        "`padding` takes `n`, `(top, bottom, left, right)`, `same` or `valid`",
                    ))
                }
                None => {
                    let form = "`n`, `(top, bottom, left, right)`, `same` or `valid`";
                    if let Some(p) = opts.tuple("padding", 4, form) {
                        g = g.padding(p[0], p[1], p[2], p[3]);
                    }
                }
            }
            if opts.has("leaky_relu") {
                g = g.leaky_relu(opts.float("leaky_relu", 0.0));
            }
            if opts.has("clamp_min") {
                g = g.clamp_min(opts.float("clamp_min", 0.0));
            }
            bias_len(op, b, out_c, "a bias")?;
            Op::Conv2d(g)
        }
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
        "linear" => {
            let w = w.expect("signature has a weight");
            weight_rank(op, w, 2, "a weight [out_features, in_features]")?;
            let bias = bias_len(op, b, w.shape[0], "a bias")?;
            let (in_features, out_features) = (w.shape[1], w.shape[0]);
            match w.storage {
                Storage::F32 => Op::Linear(LinearGeometry { in_features, out_features, bias }),
                Storage::I8 => {
                    Op::QuantLinear(QuantLinearGeometry { in_features, out_features, bias })
                }
                Storage::I8Block32 => {
                    if in_features % 32 != 0 {
                        return Err(syn::Error::new(
                            w.name.span(),
                            format!("i8_block32 weights need in_features divisible by 32, `{}` has {in_features}", w.name),
                        ));
                    }
                    Op::BlockQ8Linear(BlockQ8LinearGeometry { in_features, out_features, bias })
                }
                Storage::Block(_) => unreachable!("block weights go to their block (rule above)"),
            }
        }
        "layer_norm" | "rms_norm" | "group_norm" => {
            let w = w.expect("signature has a weight");
            weight_rank(op, w, 1, "a scale [channels]")?;
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
        "transpose" => Op::Transpose(Transpose { to: opts.layout("to", Layout::FrameMajor) }),
        "relu" => Op::Act(Activation::Relu),
        "leaky_relu" => Op::Act(Activation::LeakyRelu { slope: opts.float("slope", 0.01) }),
        "clamp_min" => match opts.required_float("min", callee) {
            Some(min) => Op::Act(Activation::ClampMin { min }),
            None => return Ok(None),
        },
        "gelu" => Op::Act(Activation::GeluErf),
        "gelu_tanh" => Op::Act(Activation::GeluTanh),
        "silu" => Op::Act(Activation::Silu),
        "tanh" => Op::Act(Activation::Tanh),
        "sigmoid" => Op::Act(Activation::Sigmoid),
        "exp" => Op::Act(Activation::Exp),
        "add" => Op::Add(Add),
        "mul" => Op::Mul(Mul),
        "softmax" => Op::Softmax(Softmax),
        "layer_scale" | "bias_add" => {
            let w = w.expect("signature has a weight");
            weight_rank(op, w, 1, "a vector [channels]")?;
            Op::PerChannel(PerChannel {
                channels: w.shape[0],
                layout: opts.layout("layout", Layout::ChannelFirst),
                op: if op == "layer_scale" { PerChannelOp::Scale } else { PerChannelOp::AddBias },
            })
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
            let scale = opts.has("scale").then(|| opts.float("scale", 1.0));
            let len = opts.ident("len");
            let Some(heads) = heads else {
                return Ok(None);
            };
            Op::Attention(Attention { heads, causal, scale }, len)
        }
        "residual_conv" => {
            let w = w.expect("signature has a weight");
            let (channels, k1, k2) = match *w.shape {
                [c, k] => (c, k, k),
                [c, k1, k2] => (c, k1, k2),
                _ => return Err(block_sizes(w, BlockKind::ResidualConv)),
            };
            let d = opts.tuple("dilations", 2, "`n` or `(first, second)`");
            let d = d.unwrap_or_else(|| vec![1, 1]);
            let relu = opts.flag("relu");
            let slope = opts.has("slope").then(|| opts.float("slope", 0.0));
            let activation = match (slope, relu) {
                (Some(slope), false) => Activation::LeakyRelu { slope },
                (None, true) => Activation::Relu,
                (Some(_), true) => return Err(syn::Error::new(
                    callee.span(),
                    "residual_conv: give one activation, `slope = <number>` (leaky ReLU) or `relu`",
                )),
                (None, false) => return Err(syn::Error::new(
                    callee.span(),
                    "residual_conv needs its activation: `slope = <number>` (leaky ReLU) or `relu`",
                )),
            };
            Op::ResidualConv(
                ResidualConvGeometry::new(channels, k1, activation)
                    .kernels(k1, k2)
                    .dilations(d[0], d[1]),
            )
        }
        "convnext" => {
            let w = w.expect("signature has a weight");
            let &[channels, hidden, kernel] = w.shape else {
                return Err(block_sizes(w, BlockKind::ConvNeXt));
            };
            let eps = opts.float("eps", 1e-6);
            Op::ConvNeXt(ConvNeXtGeometry::new(channels, hidden, kernel).eps(eps))
        }
        "complex_magnitude" => Op::ComplexMagnitude(ComplexMagnitude),
        "stft_magnitude" => {
            let w = w.expect("signature has a weight");
            let hop = opts.required_usize("hop", callee);
            weight_rank(op, w, 1, "a window [n_fft]")?;
            // Rule: the window's length is a size of the runtime's real FFT.
            if !neon_runtime::kernels::fft::is_valid_len(w.shape[0]) {
                return Err(syn::Error::new(
                    w.name.span(),
                    format!(
                        "stft_magnitude expects a window of a power-of-two length in 16..=65536 (the real FFT's sizes), `{}` has shape {:?}",
                        w.name, w.shape
                    ),
                ));
            }
            let Some(hop) = hop else {
                return Ok(None);
            };
            Op::StftMagnitude(StftMagnitudeGeometry::new(w.shape[0], hop))
        }
        "reflect_pad" => {
            Op::ReflectPad(ReflectPad::new(opts.usize("left", 0), opts.usize("right", 0)))
        }
        "lstm_cell" => {
            let w = w.expect("signature has a weight");
            let g = lstm_cell(w, tensors, opts.layout("layout", Layout::ChannelFirst))?;
            bias_len(op, b, g.gates(), "a bias (b_ih + b_hh)")?;
            Op::LstmCell(g)
        }
        _ => unreachable!("resolve is only called for operators with a signature"),
    }))
}

/// The geometry of `lstm_cell(s, x, w[, b])`. Rule: the weight is `[4 * hidden, input +
/// hidden]` for the hidden size of the state and the input size of `x` (the runtime's
/// `LstmCellGeometry::for_shapes`); a weight of another shape is reported on the weight,
/// naming the shape it needs and both tensors'. When the tensors give no geometry
/// (another rank, symbolic sizes) it comes from the weight, and the shape rule then
/// reports what is wrong with the tensors.
fn lstm_cell(
    w: &WeightArg,
    tensors: &[TensorArg],
    layout: Layout,
) -> Result<LstmCellGeometry, syn::Error> {
    let form = "a weight [4 * hidden, input + hidden] ([W_ih | W_hh], gates i, f, g, o)";
    weight_rank("lstm_cell", w, 2, form)?;
    let (rows, cols) = (w.shape[0], w.shape[1]);
    let from_tensors = match tensors {
        [s, x] => LstmCellGeometry::for_shapes(layout, s.shape, x.shape).map(|g| (g, s, x)),
        _ => None,
    };
    if let Some((g, s, x)) = from_tensors {
        if g.weight_shape() == [rows, cols] {
            return Ok(g);
        }
        return Err(syn::Error::new(
            w.name.span(),
            format!(
                "lstm_cell expects a weight of shape {:?} ([4 * hidden, input + hidden] for state `{}` {} and input `{}` {}), `{}` has shape {:?}",
                g.weight_shape(),
                s.name,
                s.shape_text(),
                x.name,
                x.shape_text(),
                w.name,
                w.shape
            ),
        ));
    }
    let hidden = rows / 4;
    if rows % 4 != 0 || hidden == 0 || cols <= hidden {
        return Err(syn::Error::new(
            w.name.span(),
            format!("lstm_cell expects {form}, `{}` has shape {:?}", w.name, w.shape),
        ));
    }
    Ok(LstmCellGeometry::new(cols - hidden, hidden).layout(layout))
}
