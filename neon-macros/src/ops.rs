//! The operator table of `neon_plan!`: how a call such as `conv1d(x, w, b, stride = 2)`
//! becomes the runtime's own geometry (whose shape rule the check phase runs on symbolic
//! shapes), and how it is emitted as a call into the runtime.
//!
//! Every geometry here is a `neon_runtime::ops` type: the macro never restates a shape rule.

use neon_runtime::kernels::rotary::RotaryPairs;
use neon_runtime::ops::activation::Activation;
use neon_runtime::ops::attention::Attention;
use neon_runtime::ops::conv::{Conv1dGeometry, DepthwiseConv1dGeometry};
use neon_runtime::ops::conv2d::Conv2dGeometry;
use neon_runtime::ops::elementwise::{Add, Mul, PerChannel, PerChannelOp};
use neon_runtime::ops::layout::Transpose;
use neon_runtime::ops::linear::LinearGeometry;
use neon_runtime::ops::norm::{GroupNormGeometry, LayerNormGeometry, RmsNormGeometry};
use neon_runtime::ops::pool::MaxPool2d;
use neon_runtime::ops::quant::{BlockQ8LinearGeometry, QuantLinearGeometry};
use neon_runtime::ops::rotary::RotaryGeometry;
use neon_runtime::ops::sequence::{ConcatFrames, LastFrames, WriteFrames};
use neon_runtime::ops::softmax::Softmax;
use neon_runtime::ops::ShapeRule;
use neon_runtime::{Layout, Shape, ShapeError};
use proc_macro2::TokenStream;
use quote::quote;
use syn::{Expr, Ident, Lit};

use crate::check::Storage;
use crate::parse::lit_int;
use crate::sym::SymDim;

/// Elementwise binary operators (in place over their first operand).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Bin {
    Add,
    Mul,
}

/// A resolved operator call.
#[derive(Clone, Debug, PartialEq)]
pub enum Op {
    Conv1d(Conv1dGeometry),
    DepthwiseConv1d(DepthwiseConv1dGeometry),
    Conv2d(Conv2dGeometry),
    MaxPool2d(MaxPool2d),
    Linear(LinearGeometry),
    QuantLinear(QuantLinearGeometry),
    BlockQ8Linear(BlockQ8LinearGeometry),
    LayerNorm(LayerNormGeometry),
    RmsNorm(RmsNormGeometry),
    GroupNorm(GroupNormGeometry),
    Transpose(Transpose),
    Act(Activation),
    Bin(Bin),
    Softmax,
    /// `layer_scale` (`PerChannelOp::Scale`) or `bias_add` (`PerChannelOp::AddBias`).
    PerChannel(PerChannel),
    ConcatFrames(ConcatFrames),
    LastFrames(LastFrames),
    /// Writes into the state given as its first argument at the scalar `at`.
    WriteFrames(WriteFrames, Ident),
    /// Rotary embedding (in place) at the optional scalar position `at` (default 0).
    Rotary(RotaryGeometry, Option<Ident>),
    /// Attention over the first `len` frames of `k` and `v` (optional scalar; default all).
    Attention(Attention, Option<Ident>),
}

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
        "rms_norm" | "layer_scale" | "bias_add" => &[Tensor, Weight],
        "transpose" | "relu" | "leaky_relu" | "clamp_min" | "gelu" | "gelu_tanh" | "silu"
        | "tanh" | "sigmoid" | "exp" | "softmax" | "last_frames" | "max_pool2d" | "rotary" => {
            &[Tensor]
        }
        "add" | "mul" | "concat_frames" | "write_frames" => &[Tensor, Tensor],
        "attention" => &[Tensor, Tensor, Tensor],
        _ => return None,
    })
}

/// Whether `name` is a flag of operator `op`: an option that may be written bare
/// (`causal` for `causal = true`).
pub fn is_flag(op: &str, name: &str) -> bool {
    matches!(
        (op, name),
        ("conv1d" | "depthwise_conv1d" | "attention", "causal") | ("rotary", "half_split")
    )
}

/// Options of one call, checked off as they are read so unknown ones can be reported.
pub struct Options<'a> {
    items: &'a [(Ident, Expr)],
    used: Vec<bool>,
    pub errors: Vec<syn::Error>,
}

impl<'a> Options<'a> {
    pub fn new(items: &'a [(Ident, Expr)]) -> Self {
        Options { items, used: vec![false; items.len()], errors: Vec::new() }
    }
    fn get(&mut self, key: &str) -> Option<&'a Expr> {
        let i = self.items.iter().position(|(k, _)| k == key)?;
        self.used[i] = true;
        Some(&self.items[i].1)
    }
    fn usize(&mut self, key: &str, default: usize) -> usize {
        match self.get(key) {
            None => default,
            Some(e) => match lit_int(e).and_then(|v| usize::try_from(v).ok()) {
                Some(v) => v,
                None => {
                    self.errors
                        .push(syn::Error::new_spanned(e, format!("`{key}` takes an integer >= 0")));
                    default
                }
            },
        }
    }
    fn float(&mut self, key: &str, default: f32) -> f32 {
        match self.get(key) {
            None => default,
            Some(e) => match lit_float(e) {
                Some(v) => v as f32,
                None => {
                    self.errors.push(syn::Error::new_spanned(e, format!("`{key}` takes a number")));
                    default
                }
            },
        }
    }
    fn pair(&mut self, key: &str) -> Option<(usize, usize)> {
        let e = self.get(key)?;
        if let Expr::Tuple(t) = e {
            let v: Vec<Option<usize>> =
                t.elems.iter().map(|x| lit_int(x).and_then(|v| usize::try_from(v).ok())).collect();
            if let [Some(a), Some(b)] = v[..] {
                return Some((a, b));
            }
        }
        if let Some(v) = lit_int(e).and_then(|v| usize::try_from(v).ok()) {
            return Some((v, v));
        }
        self.errors
            .push(syn::Error::new_spanned(e, format!("`{key}` takes `n` or `(left, right)`")));
        None
    }
    /// `n` (every element `n`) or a tuple of `len` integers; `None` when absent.
    fn tuple(&mut self, key: &str, len: usize, form: &str) -> Option<Vec<usize>> {
        let e = self.get(key)?;
        let as_usize = |x: &Expr| lit_int(x).and_then(|v| usize::try_from(v).ok());
        if let Some(v) = as_usize(e) {
            return Some(vec![v; len]);
        }
        if let Expr::Tuple(t) = e {
            let v: Option<Vec<usize>> = t.elems.iter().map(as_usize).collect();
            if let Some(v) = v.filter(|v| v.len() == len) {
                return Some(v);
            }
        }
        self.errors.push(syn::Error::new_spanned(e, format!("`{key}` takes {form}")));
        None
    }
    /// An integer that must be given.
    fn required_usize(&mut self, key: &str, callee: &Ident) -> Option<usize> {
        if self.items.iter().any(|(k, _)| k == key) {
            let before = self.errors.len();
            let v = self.usize(key, 0);
            (self.errors.len() == before).then_some(v)
        } else {
            self.errors.push(syn::Error::new(
                callee.span(),
                format!("{callee} needs `{key} = <integer>`"),
            ));
            None
        }
    }
    /// A number that must be given.
    fn required_float(&mut self, key: &str, callee: &Ident) -> Option<f32> {
        if self.items.iter().any(|(k, _)| k == key) {
            Some(self.float(key, 0.0))
        } else {
            self.errors
                .push(syn::Error::new(callee.span(), format!("{callee} needs `{key} = <number>`")));
            None
        }
    }
    /// The value of `key` when it is a bare name (`padding = same`), without consuming it
    /// otherwise.
    fn keyword(&mut self, key: &str) -> Option<(String, &'a Expr)> {
        let i = self.items.iter().position(|(k, _)| k == key)?;
        let e = &self.items[i].1;
        let name = path_ident(e)?;
        self.used[i] = true;
        Some((name, e))
    }
    fn flag(&mut self, key: &str) -> bool {
        match self.get(key) {
            None => false,
            Some(Expr::Lit(l)) if matches!(&l.lit, Lit::Bool(b) if b.value) => true,
            Some(Expr::Lit(l)) if matches!(&l.lit, Lit::Bool(_)) => false,
            Some(e) => {
                self.errors
                    .push(syn::Error::new_spanned(e, format!("`{key}` takes `true` or `false`")));
                false
            }
        }
    }
    fn layout(&mut self, key: &str, default: Layout) -> Layout {
        match self.get(key) {
            None => default,
            Some(e) => match path_ident(e).as_deref() {
                Some("channel_first") => Layout::ChannelFirst,
                Some("frame_major") => Layout::FrameMajor,
                _ => {
                    self.errors.push(syn::Error::new_spanned(
                        e,
                        format!("`{key}` takes `channel_first` or `frame_major`"),
                    ));
                    default
                }
            },
        }
    }
    fn ident(&mut self, key: &str) -> Option<Ident> {
        let e = self.get(key)?;
        match e {
            Expr::Path(p) if p.path.get_ident().is_some() => p.path.get_ident().cloned(),
            _ => {
                self.errors
                    .push(syn::Error::new_spanned(e, format!("`{key}` takes a scalar's name")));
                None
            }
        }
    }
    /// Reports every option nobody read.
    pub fn finish(mut self, op: &str) -> Vec<syn::Error> {
        for (i, (k, _)) in self.items.iter().enumerate() {
            if !self.used[i] {
                self.errors.push(syn::Error::new(k.span(), format!("{op} has no option `{k}`")));
            }
        }
        self.errors
    }
}

fn lit_float(e: &Expr) -> Option<f64> {
    match e {
        Expr::Lit(l) => match &l.lit {
            Lit::Float(f) => f.base10_parse().ok(),
            Lit::Int(i) => i.base10_parse::<i64>().ok().map(|v| v as f64),
            _ => None,
        },
        Expr::Unary(u) if matches!(u.op, syn::UnOp::Neg(_)) => lit_float(&u.expr).map(|v| -v),
        _ => None,
    }
}

fn path_ident(e: &Expr) -> Option<String> {
    match e {
        Expr::Path(p) => p.path.get_ident().map(|i| i.to_string()),
        _ => None,
    }
}

/// A weight argument as the resolver sees it: name, span and constant shape.
pub struct WeightArg<'a> {
    pub name: &'a Ident,
    pub shape: &'a [usize],
    pub storage: Storage,
}

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

fn conflict(callee: &Ident) -> syn::Error {
    syn::Error::new(
        callee.span(),
        format!("{callee}: `causal = true` and `padding` both set the padding; give one"),
    )
}

/// Builds the operator of a call from its name, weight shapes and options.
pub fn resolve(
    callee: &Ident,
    weights: &[WeightArg],
    opts: &mut Options,
) -> Result<Op, syn::Error> {
    let name = callee.to_string();
    let op = name.as_str();
    let w = weights.first();
    let b = weights.get(1);
    // Only `linear` takes int8 weights; biases and every other weight are f32.
    for (k, arg) in weights.iter().enumerate() {
        if arg.storage != Storage::F32 && !(op == "linear" && k == 0) {
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
    Ok(match op {
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
            if opts.items.iter().any(|(k, _)| k == "leaky_relu") {
                g = g.leaky_relu(opts.float("leaky_relu", 0.0));
            }
            if opts.items.iter().any(|(k, _)| k == "clamp_min") {
                g = g.clamp_min(opts.float("clamp_min", 0.0));
            }
            bias_len(op, b, out_c, "a bias")?;
            Op::Conv2d(g)
        }
        "max_pool2d" => {
            let stride = opts.tuple("stride", 2, "`n` or `(stride_h, stride_w)`");
            let form = "`n` or `(kernel_h, kernel_w)`";
            let Some(k) = opts.tuple("kernel", 2, form) else {
                if opts.errors.is_empty() {
                    return Err(syn::Error::new(
                        callee.span(),
                        "max_pool2d needs `kernel = (kernel_h, kernel_w)`",
                    ));
                }
                return Err(opts.errors.remove(0));
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
            None => return Err(opts.errors.remove(0)),
        },
        "gelu" => Op::Act(Activation::GeluErf),
        "gelu_tanh" => Op::Act(Activation::GeluTanh),
        "silu" => Op::Act(Activation::Silu),
        "tanh" => Op::Act(Activation::Tanh),
        "sigmoid" => Op::Act(Activation::Sigmoid),
        "exp" => Op::Act(Activation::Exp),
        "add" => Op::Bin(Bin::Add),
        "mul" => Op::Bin(Bin::Mul),
        "softmax" => Op::Softmax,
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
                return Err(opts.errors.remove(0));
            };
            Op::Rotary(RotaryGeometry { heads, rotary_dims, theta, pairs }, at)
        }
        "attention" => {
            let heads = opts.required_usize("heads", callee);
            let causal = opts.flag("causal");
            let scale =
                opts.items.iter().any(|(k, _)| k == "scale").then(|| opts.float("scale", 1.0));
            let len = opts.ident("len");
            let Some(heads) = heads else {
                return Err(opts.errors.remove(0));
            };
            Op::Attention(Attention { heads, causal, scale }, len)
        }
        _ => unreachable!("resolve is only called for operators with a signature"),
    })
}

impl Op {
    /// Runs the runtime's shape rule on symbolic shapes.
    pub fn output_shape(
        &self,
        inputs: &[Shape<SymDim>],
    ) -> Result<Shape<SymDim>, ShapeError<SymDim>> {
        match self {
            Op::Conv1d(g) => g.output_shape(inputs),
            Op::DepthwiseConv1d(g) => g.output_shape(inputs),
            Op::Conv2d(g) => g.output_shape(inputs),
            Op::MaxPool2d(p) => p.output_shape(inputs),
            Op::Linear(g) => g.output_shape(inputs),
            Op::QuantLinear(g) => g.output_shape(inputs),
            Op::BlockQ8Linear(g) => g.output_shape(inputs),
            Op::LayerNorm(g) => g.output_shape(inputs),
            Op::RmsNorm(g) => g.output_shape(inputs),
            Op::GroupNorm(g) => g.output_shape(inputs),
            Op::Transpose(g) => g.output_shape(inputs),
            Op::Act(a) => a.output_shape(inputs),
            Op::Bin(Bin::Add) => Add.output_shape(inputs),
            Op::Bin(Bin::Mul) => Mul.output_shape(inputs),
            Op::Softmax => Softmax.output_shape(inputs),
            Op::PerChannel(g) => g.output_shape(inputs),
            Op::ConcatFrames(g) => g.output_shape(inputs),
            Op::LastFrames(g) => g.output_shape(inputs),
            Op::WriteFrames(g, _) => g.output_shape(inputs),
            Op::Rotary(g, _) => g.output_shape(inputs),
            Op::Attention(a, _) => a.output_shape(inputs),
        }
    }

    /// The run-time scalar the call reads (`at` of write_frames and rotary, `len` of
    /// attention), if any.
    pub fn scalar(&self) -> Option<&Ident> {
        match self {
            Op::WriteFrames(_, at) => Some(at),
            Op::Rotary(_, at) => at.as_ref(),
            Op::Attention(_, len) => len.as_ref(),
            _ => None,
        }
    }

    /// May write its output over its first input.
    pub fn in_place(&self) -> bool {
        matches!(
            self,
            Op::Act(_)
                | Op::Bin(_)
                | Op::Softmax
                | Op::PerChannel(_)
                | Op::WriteFrames(..)
                | Op::Rotary(..)
        )
    }

    /// Scratch elements for an input whose dims are at most `max_dims`.
    pub fn scratch_len(&self, max_dims: &[usize]) -> usize {
        match self {
            Op::Conv1d(g) => g.scratch_len(max_dims.get(1).copied().unwrap_or(1)),
            Op::Conv2d(g) => g.scratch_len(
                max_dims.get(1).copied().unwrap_or(1),
                max_dims.get(2).copied().unwrap_or(1),
            ),
            _ => 0,
        }
    }

    /// Whether the prepared operator stores int8 weights (its type is `Op<Q, S>`).
    pub fn int8(&self) -> bool {
        matches!(self, Op::QuantLinear(_) | Op::BlockQ8Linear(_))
    }

    /// The runtime type of the prepared operator held in the weights struct, if any.
    pub fn weight_type(&self, krate: &TokenStream) -> Option<TokenStream> {
        Some(match self {
            Op::Conv1d(_) => quote!(#krate::ops::conv::Conv1d),
            Op::DepthwiseConv1d(_) => quote!(#krate::ops::conv::DepthwiseConv1d),
            Op::Conv2d(_) => quote!(#krate::ops::conv2d::Conv2d),
            Op::Linear(_) => quote!(#krate::ops::linear::Linear),
            Op::QuantLinear(_) => quote!(#krate::ops::quant::QuantLinear),
            Op::BlockQ8Linear(_) => quote!(#krate::ops::quant::BlockQ8Linear),
            Op::LayerNorm(_) => quote!(#krate::ops::norm::LayerNorm),
            Op::RmsNorm(_) => quote!(#krate::ops::norm::RmsNorm),
            Op::GroupNorm(_) => quote!(#krate::ops::norm::GroupNorm),
            Op::PerChannel(PerChannel { op: PerChannelOp::Scale, .. }) => {
                quote!(#krate::ops::elementwise::LayerScale)
            }
            Op::PerChannel(_) => quote!(#krate::ops::elementwise::BiasAdd),
            _ => return None,
        })
    }

    /// A constant expression of the geometry type, and the type.
    pub fn geometry_tokens(&self, krate: &TokenStream) -> Option<(TokenStream, TokenStream)> {
        let layout = |l: Layout| match l {
            Layout::ChannelFirst => quote!(#krate::Layout::ChannelFirst),
            Layout::FrameMajor => quote!(#krate::Layout::FrameMajor),
        };
        Some(match self {
            Op::Conv1d(g) => {
                let Conv1dGeometry {
                    in_channels,
                    out_channels,
                    kernel,
                    stride,
                    dilation,
                    groups,
                    pad_left,
                    pad_right,
                    output_layout,
                } = *g;
                let ol = layout(output_layout);
                (
                    quote!(#krate::ops::conv::Conv1dGeometry {
                        in_channels: #in_channels, out_channels: #out_channels, kernel: #kernel,
                        stride: #stride, dilation: #dilation, groups: #groups,
                        pad_left: #pad_left, pad_right: #pad_right, output_layout: #ol,
                    }),
                    quote!(#krate::ops::conv::Conv1dGeometry),
                )
            }
            Op::DepthwiseConv1d(g) => {
                let DepthwiseConv1dGeometry {
                    channels,
                    kernel,
                    stride,
                    dilation,
                    pad_left,
                    pad_right,
                } = *g;
                (
                    quote!(#krate::ops::conv::DepthwiseConv1dGeometry {
                        channels: #channels, kernel: #kernel, stride: #stride, dilation: #dilation,
                        pad_left: #pad_left, pad_right: #pad_right,
                    }),
                    quote!(#krate::ops::conv::DepthwiseConv1dGeometry),
                )
            }
            Op::Conv2d(g) => {
                let Conv2dGeometry {
                    in_channels,
                    out_channels,
                    kernel_h,
                    kernel_w,
                    stride_h,
                    stride_w,
                    pad_top,
                    pad_bottom,
                    pad_left,
                    pad_right,
                    leaky_slope,
                    clamp_min,
                } = *g;
                let opt = |v: Option<f32>| match v {
                    Some(v) => quote!(::core::option::Option::Some(#v)),
                    None => quote!(::core::option::Option::None),
                };
                let (leaky_slope, clamp_min) = (opt(leaky_slope), opt(clamp_min));
                (
                    quote!(#krate::ops::conv2d::Conv2dGeometry {
                        in_channels: #in_channels, out_channels: #out_channels,
                        kernel_h: #kernel_h, kernel_w: #kernel_w,
                        stride_h: #stride_h, stride_w: #stride_w,
                        pad_top: #pad_top, pad_bottom: #pad_bottom,
                        pad_left: #pad_left, pad_right: #pad_right,
                        leaky_slope: #leaky_slope, clamp_min: #clamp_min,
                    }),
                    quote!(#krate::ops::conv2d::Conv2dGeometry),
                )
            }
            Op::Linear(g) => {
                let LinearGeometry { in_features, out_features, bias } = *g;
                (
                    quote!(#krate::ops::linear::LinearGeometry {
                        in_features: #in_features, out_features: #out_features, bias: #bias,
                    }),
                    quote!(#krate::ops::linear::LinearGeometry),
                )
            }
            Op::QuantLinear(g) => {
                let QuantLinearGeometry { in_features, out_features, bias } = *g;
                (
                    quote!(#krate::ops::quant::QuantLinearGeometry {
                        in_features: #in_features, out_features: #out_features, bias: #bias,
                    }),
                    quote!(#krate::ops::quant::QuantLinearGeometry),
                )
            }
            Op::BlockQ8Linear(g) => {
                let BlockQ8LinearGeometry { in_features, out_features, bias } = *g;
                (
                    quote!(#krate::ops::quant::BlockQ8LinearGeometry {
                        in_features: #in_features, out_features: #out_features, bias: #bias,
                    }),
                    quote!(#krate::ops::quant::BlockQ8LinearGeometry),
                )
            }
            Op::LayerNorm(g) => {
                let LayerNormGeometry { channels, eps, bias, layout: l } = *g;
                let l = layout(l);
                (
                    quote!(#krate::ops::norm::LayerNormGeometry {
                        channels: #channels, eps: #eps, bias: #bias, layout: #l,
                    }),
                    quote!(#krate::ops::norm::LayerNormGeometry),
                )
            }
            Op::RmsNorm(g) => {
                let RmsNormGeometry { channels, eps, layout: l } = *g;
                let l = layout(l);
                (
                    quote!(#krate::ops::norm::RmsNormGeometry { channels: #channels, eps: #eps, layout: #l }),
                    quote!(#krate::ops::norm::RmsNormGeometry),
                )
            }
            Op::GroupNorm(g) => {
                let GroupNormGeometry { channels, groups, eps, bias } = *g;
                (
                    quote!(#krate::ops::norm::GroupNormGeometry {
                        channels: #channels, groups: #groups, eps: #eps, bias: #bias,
                    }),
                    quote!(#krate::ops::norm::GroupNormGeometry),
                )
            }
            Op::PerChannel(g) => {
                let PerChannel { channels, layout: l, op } = *g;
                let l = layout(l);
                let op = match op {
                    PerChannelOp::Scale => quote!(#krate::ops::elementwise::PerChannelOp::Scale),
                    PerChannelOp::AddBias => {
                        quote!(#krate::ops::elementwise::PerChannelOp::AddBias)
                    }
                    PerChannelOp::AddScaled => {
                        quote!(#krate::ops::elementwise::PerChannelOp::AddScaled)
                    }
                };
                (
                    quote!(#krate::ops::elementwise::PerChannel { channels: #channels, layout: #l, op: #op }),
                    quote!(#krate::ops::elementwise::PerChannel),
                )
            }
            _ => return None,
        })
    }

    /// The runtime expression of a weightless operator (its own geometry).
    pub fn unit_tokens(&self, krate: &TokenStream) -> Option<TokenStream> {
        Some(match self {
            Op::Act(a) => {
                let v = match a {
                    Activation::Relu => quote!(Relu),
                    Activation::LeakyRelu { slope } => quote!(LeakyRelu { slope: #slope }),
                    Activation::ClampMin { min } => quote!(ClampMin { min: #min }),
                    Activation::GeluErf => quote!(GeluErf),
                    Activation::GeluTanh => quote!(GeluTanh),
                    Activation::Silu => quote!(Silu),
                    Activation::Tanh => quote!(Tanh),
                    Activation::Sigmoid => quote!(Sigmoid),
                    Activation::Exp => quote!(Exp),
                };
                quote!(#krate::ops::activation::Activation::#v)
            }
            Op::MaxPool2d(p) => {
                let MaxPool2d { kernel_h, kernel_w, stride_h, stride_w } = *p;
                quote!(#krate::ops::pool::MaxPool2d {
                    kernel_h: #kernel_h, kernel_w: #kernel_w, stride_h: #stride_h, stride_w: #stride_w,
                })
            }
            Op::Bin(Bin::Add) => quote!(#krate::ops::elementwise::Add),
            Op::Bin(Bin::Mul) => quote!(#krate::ops::elementwise::Mul),
            Op::Softmax => quote!(#krate::ops::softmax::Softmax),
            Op::Attention(a, _) => {
                let Attention { heads, causal, scale } = *a;
                let scale = match scale {
                    Some(s) => quote!(::core::option::Option::Some(#s)),
                    None => quote!(::core::option::Option::None),
                };
                quote!(#krate::ops::attention::Attention { heads: #heads, causal: #causal, scale: #scale })
            }
            Op::Rotary(g, _) => {
                let RotaryGeometry { heads, rotary_dims, theta, pairs } = *g;
                let pairs = match pairs {
                    RotaryPairs::Interleaved => quote!(Interleaved),
                    RotaryPairs::HalfSplit => quote!(HalfSplit),
                };
                quote!(#krate::ops::rotary::RotaryGeometry {
                    heads: #heads, rotary_dims: #rotary_dims, theta: #theta,
                    pairs: #krate::kernels::rotary::RotaryPairs::#pairs,
                })
            }
            _ => return None,
        })
    }

    /// Layouts of the tensor inputs and of the output, as the runtime operator expects them.
    pub fn layouts(&self, arity: usize) -> (Vec<Layout>, Layout) {
        let cf = Layout::ChannelFirst;
        let fm = Layout::FrameMajor;
        match self {
            Op::Conv1d(g) => (vec![cf], g.output_layout),
            Op::DepthwiseConv1d(_) | Op::Conv2d(_) | Op::MaxPool2d(_) => (vec![cf], cf),
            Op::Linear(_) | Op::QuantLinear(_) | Op::BlockQ8Linear(_) => (vec![fm], fm),
            Op::LayerNorm(g) => (vec![g.layout], g.layout),
            Op::RmsNorm(g) => (vec![g.layout], g.layout),
            Op::GroupNorm(_) => (vec![cf], cf),
            Op::Transpose(t) => (vec![t.from_layout()], t.to),
            Op::ConcatFrames(g) => (vec![g.layout; 2], g.layout),
            Op::LastFrames(g) => (vec![g.layout], g.layout),
            Op::WriteFrames(g, _) => (vec![g.layout; 2], g.layout),
            Op::PerChannel(g) => (vec![g.layout], g.layout),
            Op::Act(_) | Op::Bin(_) => (vec![cf; arity], cf),
            Op::Softmax | Op::Rotary(..) => (vec![fm], fm),
            Op::Attention(..) => (vec![fm; 3], fm),
        }
    }
}
