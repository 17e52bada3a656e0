//! The int8 kernels against TFLite, op by op, on the 7 microWakeWord models: a naive
//! reference interpreter (`stream_ref.rs`) runs each [`StreamGraph`] through the
//! portable kernels with the importer's quantisation (`tflite::quant`) and is compared bit
//! for bit with
//! - the per-op goldens `models/microwakeword/goldens/ops_<model>.safetensors`
//!   (tools/microwakeword/dump_ops.py, FACTS.md section 1): every CONV_2D, DEPTHWISE_CONV_2D,
//!   FULLY_CONNECTED, LOGISTIC and QUANTIZE output on 50 steps of 2 clips from the dumped
//!   "before" variables, and the variables after them;
//! - the clip goldens `<clip>.safetensors` (tools/microwakeword/goldens.py): the u8 output of
//!   every step from the initial variables (the acceptance check).
//!
//! Every output must be equal, with no exception: hey_jarvis's depthwise tail channels (30
//! and 60 are not multiples of 8) included, through `Rounding::HalfUpBlocks` (FACTS.md 4.1).
//! The reference interpreter's operators always run on what the kernels computed, never on
//! a golden value.

use std::collections::BTreeMap;

use crate::stream_ref::{computed_output, RefStream};
use crate::support::{as_i8, clip_files, goldens_dir, graph, models_dir, read, MODELS};
use neon_import::tflite::quant::{logistic_lut, logistic_rescaled, LayerRequant, Requantize};
use neon_import::tflite::{DType, StreamGraph, StreamOp, TensorSpec};
use neon_runtime::kernels::int8::{QuantizedMultiplier, Rounding};
use safetensors::SafeTensors;

fn tensor(st: &SafeTensors<'_>, key: &str) -> Vec<i8> {
    as_i8(st.tensor(key).unwrap_or_else(|e| panic!("{key}: {e}")).data())
}

/// The op kind of a computing operator, "other" for the rest.
fn kind(op: &StreamOp) -> &'static str {
    if computed_output(op).is_some() {
        op.name()
    } else {
        "other"
    }
}

/// Outputs compared and outputs that differ from the golden.
#[derive(Default, Debug, Clone, Copy)]
struct Count {
    compared: usize,
    mismatched: usize,
}

/// Per (model, op kind) counts.
type Table = BTreeMap<(&'static str, &'static str), Count>;

/// Mismatches printed (the first ones: a difference propagates to the operators after it).
const SHOWN: usize = 20;

/// Runs the 7 models over their per-op goldens. Returns the counts per (model, op kind) and
/// those of the variables after the 50 steps (one per variable and clip).
fn compare_ops() -> (Table, Count) {
    let mut table: BTreeMap<(&str, &str), Count> = BTreeMap::new();
    let mut vars = Count::default();
    let mut shown = 0;
    for (name, dir) in MODELS {
        let g = graph(name, dir);
        let bytes =
            read(&models_dir().join(format!("microwakeword/goldens/ops_{name}.safetensors")));
        let st = SafeTensors::deserialize(&bytes).unwrap();
        for clip in ["a", "b"] {
            let mut r = RefStream::new(&g);
            for op in &g.ops {
                if let StreamOp::ReadVariable { var, output } = op {
                    r.vars[*var] = tensor(&st, &format!("{clip}.before.t{}", output.index));
                }
            }
            let inputs = tensor(&st, &format!("{clip}.t0"));
            let steps = inputs.len() / g.input.len();
            assert_eq!(steps, 50, "{name}.{clip}");
            // The dumped outputs, one per computing operator.
            let goldens: Vec<Option<Vec<i8>>> = g
                .ops
                .iter()
                .map(|op| {
                    let spec = computed_output(op)?;
                    let key = format!("{clip}.t{}", spec.index);
                    Some(tensor(&st, &key))
                })
                .collect();
            for (s, input) in inputs.chunks(g.input.len()).enumerate() {
                r.step(input, |i, op, y| {
                    let want = goldens[i].as_ref().expect("dumped");
                    let want = &want[s * y.len()..(s + 1) * y.len()];
                    let count = table.entry((name, kind(op))).or_default();
                    count.compared += y.len();
                    for (j, (got, w)) in y.iter().zip(want).enumerate() {
                        if got != w {
                            count.mismatched += 1;
                            if shown < SHOWN {
                                shown += 1;
                                eprintln!(
                                    "{name}.{clip} step {s} op #{i} {} [{j}]: {got} != {w}",
                                    kind(op)
                                );
                            }
                        }
                    }
                });
            }
            for op in &g.ops {
                if let StreamOp::AssignVariable { var, value } = op {
                    let want = tensor(&st, &format!("{clip}.after.t{}", value.index));
                    vars.compared += 1;
                    if r.vars[*var] != want {
                        vars.mismatched += 1;
                        eprintln!("{name}.{clip}: variable {}", g.vars[*var].shared_name);
                    }
                }
            }
        }
    }
    (table, vars)
}

#[test]
fn every_op_output_equals_tflite() {
    let (table, vars) = compare_ops();
    println!("model × op kind: outputs compared / mismatches");
    for ((m, k), c) in &table {
        println!("{m:<20} {k:<18} {:>7} {:>7}", c.compared, c.mismatched);
    }
    println!("variables after 50 steps: {} compared / {} differ", vars.compared, vars.mismatched);
    let bad: usize = table.values().map(|c| c.mismatched).sum();
    assert_eq!((bad, vars.mismatched), (0, 0), "mismatches (see above)");
    // Every model's 5 computing op kinds, each compared on something.
    assert_eq!(table.len(), 7 * 5, "model × op kind pairs");
    assert!(table.values().all(|c| c.compared > 0));
    assert_eq!(vars.compared, 7 * 2 * 6);
}

/// Runs every model/clip pair of the clip goldens from the initial variables. Returns the
/// pairs, the steps and the steps whose u8 output differs.
fn compare_clips() -> (usize, usize, Vec<String>) {
    let graphs: Vec<(&str, StreamGraph)> = MODELS.iter().map(|&(n, d)| (n, graph(n, d))).collect();
    let dir = goldens_dir();
    let clips = clip_files();
    let (mut pairs, mut steps, mut differing) = (0, 0, Vec::new());
    for file in &clips {
        let bytes = read(&dir.join(file));
        let st = SafeTensors::deserialize(&bytes).unwrap();
        for (name, g) in &graphs {
            let Ok(input) = st.tensor(&format!("input.{name}")) else { continue };
            let want = st.tensor(&format!("output.{name}")).unwrap().data().to_vec();
            let input = as_i8(input.data());
            assert_eq!(input.len(), want.len() * g.input.len(), "{file} {name}");
            let mut r = RefStream::new(g);
            for (s, x) in input.chunks(g.input.len()).enumerate() {
                let y = r.step(x, |_, _, _| {});
                if y[0] as u8 != want[s] {
                    differing
                        .push(format!("{file} {name} step {s}: {} != {}", y[0] as u8, want[s]));
                }
            }
            pairs += 1;
            steps += want.len();
        }
    }
    (pairs, steps, differing)
}

/// The clip goldens: every step's u8 output from the initial variables, for every
/// model/clip pair the files hold.
#[test]
fn every_clip_output_equals_tflite() {
    let (pairs, steps, differing) = compare_clips();
    println!("clip goldens: {pairs} model/clip pairs, {steps} steps, {} differ", differing.len());
    for d in &differing {
        println!("  {d}");
    }
    // 12 clip files (7 recordings, 5 openWakeWord clips) × the 4 official models, and each
    // community model on the 3 community recordings (goldens/SUMMARY.md).
    assert_eq!(pairs, 12 * 4 + 3 * 3, "model/clip pairs");
    assert_eq!(differing, Vec::<String>::new(), "steps whose output differs from TFLite");
}

/// The LOGISTIC table of every model: no entry within 2 f32 ulps of a rounding boundary,
/// so any faithful `expf` gives the same table (FACTS.md section 5); it is monotonic and
/// spans the output range.
#[test]
fn logistic_tables_have_margin() {
    for (name, dir) in MODELS {
        let g = graph(name, dir);
        let Some((input, output)) = g.ops.iter().find_map(|op| match op {
            StreamOp::Logistic { input, output } => Some((input, output)),
            _ => None,
        }) else {
            panic!("{name}: no LOGISTIC")
        };
        let lut = logistic_lut(input, output).unwrap();
        assert!(lut.windows(2).all(|w| w[0] <= w[1]), "{name}: not monotonic");
        let (in_s, in_zp) = input.scale_zp().unwrap();
        let (out_s, _) = output.scale_zp().unwrap();
        let mut least = u32::MAX;
        for q in -128..=127 {
            let v = logistic_rescaled(in_s, in_zp as i32, out_s, q);
            let boundary = v.floor() + 0.5;
            if v == 256.0 || v == 0.0 {
                continue;
            }
            let ulps = (v.to_bits() as i64 - boundary.to_bits() as i64).unsigned_abs() as u32;
            least = least.min(ulps);
        }
        println!("{name}: LOGISTIC table margin {least} f32 ulps");
        assert!(least > 2, "{name}: an entry within 2 ulps of a boundary");
    }
}

/// The importer's parameters on the 7 models: the output QUANTIZE is `x + 128`
/// (`{2^30, 1}`, FACTS.md 6), every conv's RELU range starts at its zero point −128, the
/// depthwise and FC layers have no activation, the conv and depthwise multipliers are per
/// channel, the FC's one; conv and FC round half up, depthwise half up on blocks of 8
/// channels (FACTS.md 4.1); the LUT's entry 0 is the output for input −128.
#[test]
fn quant_parameters_of_the_models() {
    for (name, dir) in MODELS {
        let g = graph(name, dir);
        for (i, op) in g.ops.iter().enumerate() {
            let at = format!("{name} op #{i}");
            match op {
                StreamOp::Quantize { input, output } => {
                    let r = Requantize::new(input, output).unwrap();
                    let unit = QuantizedMultiplier { multiplier: 1 << 30, shift: 1 };
                    assert_eq!(r.multiplier, unit, "{at}");
                    assert_eq!((r.input_zero_point, r.stage.zero_point), (-128, 0), "{at}");
                    assert_eq!((r.stage.act_min, r.stage.act_max), (0, 255), "{at}");
                }
                StreamOp::Conv2d(c) => {
                    let q = LayerRequant::conv2d(c).unwrap();
                    assert_eq!((q.stage.zero_point, q.stage.act_min), (-128, -128), "{at}");
                    assert_eq!(q.multipliers.len(), c.output.shape[3], "{at}");
                    assert_eq!(q.stage.rounding, Rounding::HalfUp, "{at}");
                }
                StreamOp::DepthwiseConv2d(c) => {
                    let q = LayerRequant::depthwise(c).unwrap();
                    assert_eq!((q.stage.act_min, q.stage.act_max), (-128, 127), "{at}");
                    assert_eq!(q.multipliers.len(), c.output.shape[3], "{at}");
                    assert_eq!(q.stage.rounding, Rounding::HalfUpBlocks, "{at}");
                }
                StreamOp::FullyConnected(f) => {
                    let q = LayerRequant::fully_connected(f).unwrap();
                    assert_eq!(q.multipliers.len(), 1, "{at}");
                    assert_eq!(q.stage.rounding, Rounding::HalfUp, "{at}");
                    assert_eq!((q.stage.act_min, q.stage.act_max), (-128, 127), "{at}");
                }
                StreamOp::Logistic { input, output } => {
                    let lut = logistic_lut(input, output).unwrap();
                    let (in_s, in_zp) = input.scale_zp().unwrap();
                    let (out_s, out_zp) = output.scale_zp().unwrap();
                    for (k, q) in [(0usize, -128), (128, 0), (255, 127)] {
                        let v = logistic_rescaled(in_s, in_zp as i32, out_s, q).round() as i32;
                        assert_eq!(i32::from(lut[k]), (v + out_zp as i32).clamp(-128, 127), "{at}");
                    }
                }
                _ => {}
            }
        }
    }
}

/// Tensors the parameters cannot come from give an error, not a panic.
#[test]
fn quant_refuses_unquantised_tensors() {
    let spec = |dtype, quant| TensorSpec { index: 7, dtype, shape: vec![1, 1], quant };
    let g = graph("alexa", "microwakeword");
    let Some(StreamOp::Logistic { input, output }) =
        g.ops.iter().find(|op| matches!(op, StreamOp::Logistic { .. }))
    else {
        panic!("alexa: no LOGISTIC")
    };
    let f32_out = spec(DType::F32, None);
    let e = Requantize::new(input, &f32_out).unwrap_err();
    assert!(e.message().contains("F32"), "{e}");
    let bare = spec(DType::I8, None);
    let e = logistic_lut(&bare, output).unwrap_err();
    assert!(e.message().contains("tensor 7"), "{e}");
    let mut zero = input.clone();
    zero.quant.as_mut().unwrap().scale[0] = 0.0;
    assert!(logistic_lut(&zero, output).is_err());
    let e = LayerRequant::new(
        [input, &zero],
        &[1.0],
        neon_import::tflite::FusedActivation::None,
        Rounding::HalfUp,
    )
    .unwrap_err();
    assert!(e.message().contains("finite and > 0"), "{e}");
}
