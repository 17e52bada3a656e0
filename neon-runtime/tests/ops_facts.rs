//! The planner facts every operator states beside its shape rule (`ShapeRule::in_place`,
//! `reads_layout`, `writes_layout`), as `neon_plan!` and planners read them.

use neon_runtime::kernels::rotary::RotaryPairs;
use neon_runtime::ops::activation::Activation;
use neon_runtime::ops::attention::Attention;
use neon_runtime::ops::complex::ComplexMagnitude;
use neon_runtime::ops::conv::{Conv1dGeometry, DepthwiseConv1dGeometry};
use neon_runtime::ops::conv2d::Conv2dGeometry;
use neon_runtime::ops::elementwise::{Add, Mul, PerChannel, Scale, ScaleShift};
use neon_runtime::ops::layout::Transpose;
use neon_runtime::ops::linear::LinearGeometry;
use neon_runtime::ops::lstm::LstmCellGeometry;
use neon_runtime::ops::norm::{GroupNormGeometry, LayerNormGeometry, RmsNormGeometry};
use neon_runtime::ops::pad::ReflectPad;
use neon_runtime::ops::pool::{GlobalPool, MaxPool2d, Pool1d, PoolKind};
use neon_runtime::ops::quant::{BlockQ8LinearGeometry, QuantLinearGeometry};
use neon_runtime::ops::rotary::RotaryGeometry;
use neon_runtime::ops::sequence::{ConcatFrames, LastFrames, WriteFrames};
use neon_runtime::ops::softmax::Softmax;
use neon_runtime::ops::{InPlace, ShapeRule};
use neon_runtime::Layout;

const CF: Option<Layout> = Some(Layout::ChannelFirst);
const FM: Option<Layout> = Some(Layout::FrameMajor);

/// Checks one operator's facts: in-place, every input's layout, the output's layout.
fn facts<R: ShapeRule>(rule: R, in_place: InPlace, inputs: Option<Layout>, output: Option<Layout>) {
    let name = rule.name();
    assert_eq!(rule.in_place(), in_place, "{name}: in place");
    for arg in 0..rule.arity() {
        assert_eq!(rule.reads_layout(arg), inputs, "{name}: input {arg}");
    }
    assert_eq!(rule.writes_layout(), output, "{name}: output");
}

#[test]
fn every_operator_states_its_facts() {
    use InPlace::{Allowed, Always, Never};
    let linear = LinearGeometry { in_features: 4, out_features: 2, bias: false };
    facts(linear, Never, FM, FM);
    let q = QuantLinearGeometry { in_features: 4, out_features: 2, bias: false };
    facts(q, Never, FM, FM);
    let b = BlockQ8LinearGeometry { in_features: 32, out_features: 2, bias: false };
    facts(b, Never, FM, FM);
    facts(Conv1dGeometry::new(4, 8, 3), Never, CF, CF);
    let fm_conv = Conv1dGeometry::new(4, 8, 3).output_layout(Layout::FrameMajor);
    facts(fm_conv, Never, CF, FM);
    facts(DepthwiseConv1dGeometry::new(4, 7), Never, CF, CF);
    facts(Conv2dGeometry::new(1, 8, (3, 3)), Never, CF, CF);
    facts(MaxPool2d::new((2, 2)), Never, CF, CF);
    for layout in [Layout::ChannelFirst, Layout::FrameMajor] {
        let l = Some(layout);
        facts(LayerNormGeometry { channels: 4, eps: 1e-5, bias: true, layout }, Never, l, l);
        facts(RmsNormGeometry { channels: 4, eps: 1e-5, layout }, Never, l, l);
        facts(PerChannel::bias_add(4, layout), Allowed, l, l);
        facts(PerChannel::layer_scale(4, layout), Allowed, l, l);
        facts(PerChannel::scale_shift(4, layout), Allowed, l, l);
        facts(ConcatFrames { layout }, Never, l, l);
        facts(LastFrames { frames: 2, layout }, Never, l, l);
        facts(WriteFrames { layout }, Always, l, l);
        for kind in [PoolKind::Avg, PoolKind::Max] {
            facts(Pool1d::new(kind, 3).layout(layout), Never, l, l);
            facts(GlobalPool { kind, layout }, Never, l, l);
        }
    }
    facts(GroupNormGeometry { channels: 4, groups: 2, eps: 1e-5, bias: false }, Never, CF, CF);
    let to_fm = Transpose::new(Layout::FrameMajor);
    assert_eq!((to_fm.reads_layout(0), to_fm.writes_layout()), (CF, FM));
    assert_eq!(to_fm.in_place(), Never);
    for act in [Activation::Relu, Activation::GeluErf, Activation::Silu, Activation::Exp] {
        facts(act, Allowed, None, None);
    }
    facts(Add, Allowed, None, None);
    facts(Mul, Allowed, None, None);
    facts(Scale { scale: 2.0 }, Allowed, None, None);
    facts(ScaleShift { scale: 2.0, shift: 1.0 }, Allowed, None, None);
    facts(Softmax, Allowed, None, None);
    let rope = RotaryGeometry {
        heads: 2,
        rotary_dims: 4,
        theta: 10000.0,
        pairs: RotaryPairs::Interleaved,
    };
    facts(rope, Allowed, FM, FM);
    facts(Attention { heads: 2, causal: false, scale: None }, Never, FM, FM);
    facts(ReflectPad::new(0, 2), Never, CF, CF);
    facts(ComplexMagnitude, Never, CF, CF);
    // The LSTM cell updates its frame-major state (row 0 c, row 1 h) in place and reads x
    // in its geometry's layout.
    for layout in [Layout::ChannelFirst, Layout::FrameMajor] {
        let lstm = LstmCellGeometry::new(4, 2).layout(layout);
        assert_eq!(lstm.in_place(), Always);
        assert_eq!((lstm.reads_layout(0), lstm.reads_layout(1)), (FM, Some(layout)));
        assert_eq!(lstm.writes_layout(), FM);
    }
}
