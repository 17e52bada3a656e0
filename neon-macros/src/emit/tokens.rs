//! Runtime tokens of resolved operators: the prepared operator's type, its geometry as a
//! constant expression, and the value of a weightless operator.

use neon_runtime::blocks::{ConvNeXtGeometry, ResidualConvGeometry};
use neon_runtime::kernels::rotary::RotaryPairs;
use neon_runtime::ops::activation::Activation;
use neon_runtime::ops::attention::Attention;
use neon_runtime::ops::conv::{Conv1dGeometry, DepthwiseConv1dGeometry};
use neon_runtime::ops::conv2d::Conv2dGeometry;
use neon_runtime::ops::elementwise::{PerChannel, PerChannelOp, ScaleShift};
use neon_runtime::ops::linear::LinearGeometry;
use neon_runtime::ops::lstm::LstmCellGeometry;
use neon_runtime::ops::norm::{GroupNormGeometry, LayerNormGeometry, RmsNormGeometry};
use neon_runtime::ops::pool::{GlobalPool, MaxPool2d, Pool1d, PoolKind};
use neon_runtime::ops::rotary::RotaryGeometry;
use neon_runtime::ops::stft::StftMagnitudeGeometry;
use neon_runtime::Layout;
use proc_macro2::TokenStream;
use quote::quote;

use crate::ir::Op;

/// `#krate::Layout::..` for `l`.
pub fn layout_tokens(krate: &TokenStream, l: Layout) -> TokenStream {
    match l {
        Layout::ChannelFirst => quote!(#krate::Layout::ChannelFirst),
        Layout::FrameMajor => quote!(#krate::Layout::FrameMajor),
    }
}

/// The geometry constant and type of a fully connected layer whose geometry type `path`
/// has the fields of `g` (the f32 and int8 layers alike).
fn linear_tokens(path: TokenStream, g: LinearGeometry) -> (TokenStream, TokenStream) {
    let LinearGeometry { in_features, out_features, bias } = g;
    (
        quote!(#path {
            in_features: #in_features, out_features: #out_features, bias: #bias,
        }),
        path,
    )
}

/// The runtime type of the prepared operator held in the weights struct, if any.
pub fn weight_type(op: &Op, krate: &TokenStream) -> Option<TokenStream> {
    Some(match op {
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
        Op::PerChannel(PerChannel { op: PerChannelOp::ScaleShift, .. }) => {
            quote!(#krate::ops::elementwise::ChannelScaleShift)
        }
        Op::PerChannel(_) => quote!(#krate::ops::elementwise::BiasAdd),
        Op::LstmCell(_) => quote!(#krate::ops::lstm::LstmCell),
        Op::StftMagnitude(_) => quote!(#krate::ops::stft::StftMagnitude),
        Op::ResidualConv(_) => quote!(#krate::blocks::ResidualConv),
        Op::ConvNeXt(_) => quote!(#krate::blocks::ConvNeXt),
        _ => return None,
    })
}

/// A constant expression of the geometry type, and the type.
pub fn geometry_tokens(op: &Op, krate: &TokenStream) -> Option<(TokenStream, TokenStream)> {
    let layout = |l: Layout| layout_tokens(krate, l);
    Some(match op {
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
            let DepthwiseConv1dGeometry { channels, kernel, stride, dilation, pad_left, pad_right } =
                *g;
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
        Op::Linear(g) => linear_tokens(quote!(#krate::ops::linear::LinearGeometry), *g),
        Op::QuantLinear(g) => {
            linear_tokens(quote!(#krate::ops::quant::QuantLinearGeometry), g.linear())
        }
        Op::BlockQ8Linear(g) => {
            linear_tokens(quote!(#krate::ops::quant::BlockQ8LinearGeometry), g.linear())
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
                PerChannelOp::ScaleShift => {
                    quote!(#krate::ops::elementwise::PerChannelOp::ScaleShift)
                }
            };
            (
                quote!(#krate::ops::elementwise::PerChannel { channels: #channels, layout: #l, op: #op }),
                quote!(#krate::ops::elementwise::PerChannel),
            )
        }
        Op::LstmCell(g) => {
            let LstmCellGeometry { input, hidden, layout: l } = *g;
            let l = layout(l);
            (
                quote!(#krate::ops::lstm::LstmCellGeometry {
                    input: #input, hidden: #hidden, layout: #l,
                }),
                quote!(#krate::ops::lstm::LstmCellGeometry),
            )
        }
        Op::StftMagnitude(g) => {
            let StftMagnitudeGeometry { n_fft, hop } = *g;
            (
                quote!(#krate::ops::stft::StftMagnitudeGeometry { n_fft: #n_fft, hop: #hop }),
                quote!(#krate::ops::stft::StftMagnitudeGeometry),
            )
        }
        Op::ResidualConv(g) => {
            let ResidualConvGeometry { channels, kernels, dilations, activation } = *g;
            let ([k1, k2], [d1, d2]) = (kernels, dilations);
            let act = activation_tokens(activation, krate);
            (
                quote!(#krate::blocks::ResidualConvGeometry {
                    channels: #channels, kernels: [#k1, #k2], dilations: [#d1, #d2],
                    activation: #act,
                }),
                quote!(#krate::blocks::ResidualConvGeometry),
            )
        }
        Op::ConvNeXt(g) => {
            let ConvNeXtGeometry { channels, hidden, kernel, eps } = *g;
            (
                quote!(#krate::blocks::ConvNeXtGeometry {
                    channels: #channels, hidden: #hidden, kernel: #kernel, eps: #eps,
                }),
                quote!(#krate::blocks::ConvNeXtGeometry),
            )
        }
        _ => return None,
    })
}

/// `#krate::ops::activation::Activation::..` for `a`.
fn activation_tokens(a: Activation, krate: &TokenStream) -> TokenStream {
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
        Activation::Ln => quote!(Ln),
        Activation::Log10 => quote!(Log10),
        Activation::Erf => quote!(Erf),
    };
    quote!(#krate::ops::activation::Activation::#v)
}

/// The runtime expression of a weightless operator (its own geometry).
pub fn unit_tokens(op: &Op, krate: &TokenStream) -> Option<TokenStream> {
    Some(match op {
        Op::Act(a) => activation_tokens(*a, krate),
        Op::MaxPool2d(p) => {
            let MaxPool2d { kernel_h, kernel_w, stride_h, stride_w } = *p;
            quote!(#krate::ops::pool::MaxPool2d {
                kernel_h: #kernel_h, kernel_w: #kernel_w, stride_h: #stride_h, stride_w: #stride_w,
            })
        }
        Op::Pool1d(p) => {
            let Pool1d {
                kind,
                kernel,
                stride,
                pad_left,
                pad_right,
                ceil_mode,
                count_include_pad,
                layout,
            } = *p;
            let (kind, layout) = (pool_kind_tokens(kind, krate), layout_tokens(krate, layout));
            quote!(#krate::ops::pool::Pool1d {
                kind: #kind, kernel: #kernel, stride: #stride, pad_left: #pad_left,
                pad_right: #pad_right, ceil_mode: #ceil_mode,
                count_include_pad: #count_include_pad, layout: #layout,
            })
        }
        Op::GlobalPool(p) => {
            let GlobalPool { kind, layout } = *p;
            let (kind, layout) = (pool_kind_tokens(kind, krate), layout_tokens(krate, layout));
            quote!(#krate::ops::pool::GlobalPool { kind: #kind, layout: #layout })
        }
        Op::Add(_) => quote!(#krate::ops::elementwise::Add),
        Op::Mul(_) => quote!(#krate::ops::elementwise::Mul),
        Op::Softmax(_) => quote!(#krate::ops::softmax::Softmax),
        Op::ScaleShift(ScaleShift { scale, shift }) => {
            quote!(#krate::ops::elementwise::ScaleShift { scale: #scale, shift: #shift })
        }
        Op::ComplexMagnitude(_) => quote!(#krate::ops::complex::ComplexMagnitude),
        Op::ReflectPad(p) => {
            let (left, right) = (p.left, p.right);
            quote!(#krate::ops::pad::ReflectPad { left: #left, right: #right })
        }
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

/// The runtime expression of a pool's reduction.
fn pool_kind_tokens(kind: PoolKind, krate: &TokenStream) -> TokenStream {
    match kind {
        PoolKind::Avg => quote!(#krate::ops::pool::PoolKind::Avg),
        PoolKind::Max => quote!(#krate::ops::pool::PoolKind::Max),
    }
}
