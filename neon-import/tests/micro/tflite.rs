//! `tflite::parse_stream` on the 7 microWakeWord models (tools/microwakeword/FACTS.md
//! section 3) and on crafted faults.

use neon_import::tflite::{parse, parse_stream, DType, FusedActivation, Padding, StreamOp};
use neon_import::Limits;

use crate::support::LIMITS;

/// openWakeWord's head limits, as neon-models passes them to `parse`.
const HEAD_LIMITS: Limits =
    Limits { frame_width: 96, max_frames: 120, max_features: 1 << 16, max_layers: 256 };

macro_rules! model {
    ($dir:literal, $name:literal) => {
        ($name, include_bytes!(concat!("../../../models/", $dir, "/", $name, ".tflite")).as_slice())
    };
}

/// One model and its facts from FACTS.md section 3.
struct Facts {
    name: &'static str,
    bytes: &'static [u8],
    /// CONCATENATION, STRIDED_SLICE, SPLIT_V, CONV_2D, DEPTHWISE_CONV_2D, FULLY_CONNECTED,
    /// RESHAPE.
    hist: [usize; 7],
    /// The FULLY_CONNECTED's K.
    k: usize,
    /// The depthwise kernel heights.
    dw_heights: &'static [usize],
}

/// FACTS.md's rows: the histogram, K, the depthwise heights.
const fn facts(
    m: (&'static str, &'static [u8]),
    row: ([usize; 7], usize, &'static [usize]),
) -> Facts {
    Facts { name: m.0, bytes: m.1, hist: row.0, k: row.1, dw_heights: row.2 }
}

const OLD: [usize; 7] = [6, 6, 0, 5, 4, 1, 2];
const COMMUNITY: ([usize; 7], usize, &[usize]) =
    ([8, 10, 2, 5, 6, 1, 2], 1088, &[5, 7, 9, 11, 15, 23]);
const MODELS: [Facts; 7] = [
    facts(model!("microwakeword", "alexa"), (OLD, 320, &[5, 9, 13, 21])),
    facts(model!("microwakeword", "hey_jarvis"), (OLD, 300, &[5, 9, 13, 21])),
    facts(model!("microwakeword", "hey_mycroft"), (OLD, 960, &[5, 9, 13, 21])),
    facts(
        model!("microwakeword", "okay_nabu"),
        ([9, 12, 3, 6, 8, 1, 1], 64, &[3, 5, 7, 9, 13, 15, 17]),
    ),
    facts(model!("tests/data/microwakeword/wakewords", "choo_choo_homie"), COMMUNITY),
    facts(model!("tests/data/microwakeword/wakewords", "hey_home_assistant"), COMMUNITY),
    facts(model!("tests/data/microwakeword/wakewords", "okay_computer"), COMMUNITY),
];

#[test]
fn the_seven_models_parse_with_their_facts() {
    for Facts { name, bytes, hist, k, dw_heights } in MODELS {
        let g = parse_stream(bytes, &LIMITS).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(g.input.dtype, DType::I8, "{name}");
        assert_eq!(g.input.shape, [1, 3, 40], "{name}");
        let (s, z) = g.input.scale_zp().unwrap();
        assert_eq!((s, z), (26.0f32 / 255.0, -128), "{name}");
        assert_eq!(g.output.dtype, DType::U8, "{name}");
        assert_eq!(g.output.shape, [1, 1], "{name}");
        assert_eq!(g.output.scale_zp(), Some((1.0 / 256.0, 0)), "{name}");
        assert_eq!(g.vars.len(), 6, "{name}");
        for v in &g.vars {
            assert_eq!(v.dtype, DType::I8, "{name}");
            assert!(matches!(v.shape[..], [1, _, 1, _]), "{name}: {:?}", v.shape);
            assert!(v.init.iter().all(|&b| b as i8 == -128), "{name}: {}", v.shared_name);
            assert!(v.container.is_empty());
        }
        // One variable buffers the last 2 input frames, quantised as the input.
        let buffer: Vec<_> = g.vars.iter().filter(|v| v.shape == [1, 2, 1, 40]).collect();
        assert_eq!(buffer.len(), 1, "{name}");
        assert_eq!(buffer[0].quant, g.input.quant, "{name}");
        let mut counts = [0usize; 7];
        let (mut reads, mut assigns, mut logistic, mut quantize) = (0, 0, 0, 0);
        let mut heights = Vec::new();
        for (i, op) in g.ops.iter().enumerate() {
            match op {
                StreamOp::Concatenation { .. } => counts[0] += 1,
                StreamOp::StridedSlice { strides, begin_mask, end_mask, .. } => {
                    counts[1] += 1;
                    assert!(strides.iter().all(|&s| s == 1));
                    assert_eq!((*begin_mask, *end_mask), (13, 15), "{name}");
                }
                StreamOp::SplitV { sizes, .. } => {
                    counts[2] += 1;
                    assert_eq!(sizes, &[32, 32], "{name}");
                }
                StreamOp::Conv2d(c) => {
                    counts[3] += 1;
                    assert_eq!(c.activation, FusedActivation::Relu, "{name}");
                    assert_eq!(c.dilation, [1, 1]);
                    assert_eq!(c.output.scale_zp().unwrap().1, -128, "{name}");
                    let c_out = c.output.shape[3];
                    assert_eq!((c.filter.scales.len(), c.filter.bias.len()), (c_out, c_out));
                    if counts[3] == 1 {
                        assert_eq!(c.input.shape, [1, 5, 1, 40], "{name}");
                        assert_eq!(c.filter.spec.shape[1..], [5, 1, 40], "{name}");
                        assert_eq!((c.padding, c.stride), (Padding::Valid, [3, 1]), "{name}");
                        assert_eq!(c.output.shape[..3], [1, 1, 1], "{name}");
                    } else {
                        assert_eq!(c.filter.spec.shape[1..3], [1, 1], "{name}");
                        assert_eq!((c.padding, c.stride), (Padding::Same, [1, 1]), "{name}");
                    }
                }
                StreamOp::DepthwiseConv2d(c) => {
                    counts[4] += 1;
                    assert_eq!(c.activation, FusedActivation::None, "{name}");
                    assert_eq!((c.padding, c.stride, c.dilation), (Padding::Valid, [1, 1], [1, 1]));
                    assert_eq!(c.depth_multiplier, 1);
                    assert_eq!(c.filter.scales.len(), c.output.shape[3]);
                    heights.push(c.filter.spec.shape[1]);
                }
                StreamOp::FullyConnected(f) => {
                    counts[5] += 1;
                    assert_eq!(f.filter.spec.shape, [1, k], "{name}");
                    assert_eq!(f.activation, FusedActivation::None, "{name}");
                }
                StreamOp::Reshape { .. } => counts[6] += 1,
                StreamOp::ReadVariable { var, output } => {
                    reads += 1;
                    assert_eq!(output.shape, g.vars[*var].shape);
                }
                StreamOp::AssignVariable { .. } => assigns += 1,
                StreamOp::Logistic { .. } => logistic += 1,
                StreamOp::Quantize { input, output } => {
                    quantize += 1;
                    assert_eq!((input.dtype, output.dtype), (DType::I8, DType::U8));
                    assert_eq!(i, g.ops.len() - 1, "{name}: QUANTIZE is last");
                }
                StreamOp::Dequantize { .. } => panic!("{name}: no DEQUANTIZE in FACTS.md"),
            }
        }
        assert_eq!(counts, hist, "{name}");
        assert_eq!((reads, assigns, logistic, quantize), (6, 6, 1, 1), "{name}");
        heights.sort_unstable();
        heights.dedup();
        assert_eq!(heights, dw_heights, "{name}");
        // FACTS.md's main op count adds CALL_ONCE and the 6 VAR_HANDLEs.
        let total =
            [45, 45, 45, 61, 55, 55, 55][MODELS.iter().position(|m| m.name == name).unwrap()];
        assert_eq!(g.ops.len() + 7, total, "{name}");
    }
}

#[test]
fn the_head_reader_still_refuses_the_int8_models() {
    for Facts { name, bytes, .. } in MODELS {
        let e = parse(bytes, &HEAD_LIMITS).expect_err(name).to_string();
        eprintln!("{name}: {e}");
        assert!(
            e.contains("[1, N, 96]") || e.contains("unsupported") || e.contains("int8"),
            "{name}: {e}"
        );
    }
}

#[test]
fn the_stream_reader_refuses_the_openwakeword_heads() {
    let head = include_bytes!("../../../models/tests/data/custom/computer_v2.tflite");
    let e = parse_stream(head, &LIMITS).unwrap_err().to_string();
    assert!(e.contains("the input is F32 [1, 16, 96]"), "{e}");
}
