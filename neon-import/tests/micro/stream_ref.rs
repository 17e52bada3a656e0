//! A naive reference interpreter of a [`StreamGraph`]: one `Vec<i8>` per tensor, operators
//! run in file order through the portable int8 kernels, the variables in plain vectors. No
//! planning and no reuse: it is the oracle that the real stream plan is compared with.
//!
//! Covers the operators of the 7 microWakeWord models (FACTS.md section 3): READ / ASSIGN
//! variables, CONCATENATION, STRIDED_SLICE (stride 1), SPLIT_V, RESHAPE, QUANTIZE between
//! 8-bit tensors, CONV_2D, DEPTHWISE_CONV_2D, FULLY_CONNECTED and LOGISTIC. Anything else
//! (DEQUANTIZE, f32 tensors) is refused when the interpreter is built. uint8 tensors are
//! kept as their bytes reinterpreted as i8.

use std::collections::HashMap;

use neon_import::tflite::quant::{logistic_lut, LayerRequant, Requantize};
use neon_import::tflite::{self, DType, StreamGraph, StreamOp, TensorSpec};
use neon_runtime::kernels::int8::{ConvGeometry, DepthwiseGeometry, FcGeometry};
use neon_runtime::kernels::{Int8Kernels, Portable};

use crate::support::as_i8;

/// Per-operator parameters computed once from the graph.
enum Prepared {
    /// Conv, depthwise or FC parameters.
    Layer(LayerRequant),
    /// A LOGISTIC table.
    Lut(Box<[i8; 256]>),
    /// A QUANTIZE between 8-bit tensors.
    Requantize(Requantize),
    /// A copy or a variable access.
    Nothing,
}

/// The interpreter: a graph, its prepared parameters and the current variables.
pub struct RefStream<'g> {
    graph: &'g StreamGraph,
    prepared: Vec<Prepared>,
    /// The variables' current values, indexed as `graph.vars`.
    pub vars: Vec<Vec<i8>>,
}

/// The output tensor of a computing operator (conv, depthwise, FC, LOGISTIC, QUANTIZE).
pub fn computed_output(op: &StreamOp) -> Option<&TensorSpec> {
    match op {
        StreamOp::Conv2d(c) | StreamOp::DepthwiseConv2d(c) => Some(&c.output),
        StreamOp::FullyConnected(f) => Some(&f.output),
        StreamOp::Logistic { output, .. } | StreamOp::Quantize { output, .. } => Some(output),
        _ => None,
    }
}

impl<'g> RefStream<'g> {
    /// The interpreter of `graph`, its variables at their initial values.
    ///
    /// # Panics
    /// On an operator or type outside the list of the module docs, or parameters the
    /// importer's quantisation refuses (a test stops there).
    pub fn new(graph: &'g StreamGraph) -> Self {
        let prepared = graph.ops.iter().enumerate().map(|(i, op)| prepare(i, op)).collect();
        for v in &graph.vars {
            assert_eq!(v.dtype, DType::I8, "variable {}: only int8 state", v.shared_name);
        }
        let vars = graph.vars.iter().map(|v| as_i8(&v.init)).collect();
        RefStream { graph, prepared, vars }
    }

    /// Runs one step on `input` (the graph input's values). After each computing operator
    /// `inspect(op index, op, output values)` is called; it only reads them, so every later
    /// operator runs on what the kernels computed. Returns the graph output's values.
    pub fn step(
        &mut self,
        input: &[i8],
        mut inspect: impl FnMut(usize, &StreamOp, &[i8]),
    ) -> Vec<i8> {
        let g = self.graph;
        assert_eq!(input.len(), g.input.len(), "input length");
        let mut t: HashMap<usize, Vec<i8>> = HashMap::new();
        t.insert(g.input.index, input.to_vec());
        for (i, op) in g.ops.iter().enumerate() {
            let get = |s: &TensorSpec| -> &Vec<i8> {
                t.get(&s.index).unwrap_or_else(|| panic!("op {i}: tensor {} unset", s.index))
            };
            let out: Vec<(usize, Vec<i8>)> = match op {
                StreamOp::ReadVariable { var, output } => {
                    vec![(output.index, self.vars[*var].clone())]
                }
                StreamOp::AssignVariable { var, value } => {
                    self.vars[*var] = get(value).clone();
                    vec![]
                }
                StreamOp::Concatenation { inputs, output, axis } => {
                    let parts: Vec<(&TensorSpec, &Vec<i8>)> =
                        inputs.iter().map(|s| (s, get(s))).collect();
                    vec![(output.index, concat(&parts, *axis))]
                }
                StreamOp::StridedSlice { input, output, begin, .. } => {
                    vec![(output.index, slice(input, get(input), begin, &output.shape))]
                }
                StreamOp::SplitV { input, outputs, sizes, axis } => {
                    split(input, get(input), sizes, *axis)
                        .into_iter()
                        .zip(outputs)
                        .map(|(v, o)| (o.index, v))
                        .collect()
                }
                StreamOp::Reshape { input, output, .. } => vec![(output.index, get(input).clone())],
                _ => {
                    let spec = computed_output(op).expect("a computing operator");
                    let mut y = vec![0i8; spec.len()];
                    self.compute(i, op, &t, &mut y);
                    inspect(i, op, &y);
                    vec![(spec.index, y)]
                }
            };
            for (index, v) in out {
                t.insert(index, v);
            }
        }
        t.remove(&g.output.index).expect("the graph output is computed")
    }

    /// Runs computing operator `i` into `y`.
    fn compute(&self, i: usize, op: &StreamOp, t: &HashMap<usize, Vec<i8>>, y: &mut [i8]) {
        let get = |s: &TensorSpec| t[&s.index].as_slice();
        let res = match (op, &self.prepared[i]) {
            (StreamOp::Conv2d(c), Prepared::Layer(q)) => {
                let g = ConvGeometry {
                    window: tflite::window(c).unwrap_or_else(|e| panic!("op {i}: {e}")),
                    out_channels: c.output.shape[3],
                };
                let q = q.layer_quant(&c.filter.weights, &c.filter.bias);
                Portable::layer_i8(&g, get(&c.input), q, y)
            }
            (StreamOp::DepthwiseConv2d(c), Prepared::Layer(q)) => {
                let g = DepthwiseGeometry {
                    window: tflite::window(c).unwrap_or_else(|e| panic!("op {i}: {e}")),
                    depth_multiplier: c.depth_multiplier,
                };
                let q = q.layer_quant(&c.filter.weights, &c.filter.bias);
                Portable::layer_i8(&g, get(&c.input), q, y)
            }
            (StreamOp::FullyConnected(f), Prepared::Layer(q)) => {
                let (units, k) = (f.filter.spec.shape[0], f.filter.spec.shape[1]);
                let g = FcGeometry { rows: f.input.len() / k, in_features: k, out_features: units };
                let q = q.layer_quant(&f.filter.weights, &f.filter.bias);
                Portable::layer_i8(&g, get(&f.input), q, y)
            }
            (StreamOp::Logistic { input, .. }, Prepared::Lut(lut)) => {
                Portable::lut_i8(lut, get(input), y)
            }
            (StreamOp::Quantize { input, output }, Prepared::Requantize(r)) => {
                let x = get(input);
                if output.dtype == DType::U8 {
                    let mut u = vec![0u8; y.len()];
                    let res = Portable::requantize_i8(
                        x,
                        r.input_zero_point,
                        r.multiplier,
                        r.stage,
                        &mut u,
                    );
                    y.copy_from_slice(&as_i8(&u));
                    res
                } else {
                    Portable::requantize_i8(x, r.input_zero_point, r.multiplier, r.stage, y)
                }
            }
            _ => unreachable!("op {i}: prepared for another kind"),
        };
        res.unwrap_or_else(|e| panic!("op {i}: the kernel refuses: {e}"));
    }
}

/// The parameters of operator `i`.
fn prepare(i: usize, op: &StreamOp) -> Prepared {
    let fail = |e: neon_import::Error| -> ! { panic!("op {i}: {e}") };
    match op {
        StreamOp::Conv2d(c) => Prepared::Layer(LayerRequant::conv2d(c).unwrap_or_else(|e| fail(e))),
        StreamOp::DepthwiseConv2d(c) => {
            Prepared::Layer(LayerRequant::depthwise(c).unwrap_or_else(|e| fail(e)))
        }
        StreamOp::FullyConnected(f) => {
            Prepared::Layer(LayerRequant::fully_connected(f).unwrap_or_else(|e| fail(e)))
        }
        StreamOp::Logistic { input, output } => {
            Prepared::Lut(Box::new(logistic_lut(input, output).unwrap_or_else(|e| fail(e))))
        }
        StreamOp::Quantize { input, output } => {
            Prepared::Requantize(Requantize::new(input, output).unwrap_or_else(|e| fail(e)))
        }
        StreamOp::Dequantize { .. } => panic!("op {i}: DEQUANTIZE is not interpreted here"),
        StreamOp::Concatenation { inputs, output, .. } => {
            for s in inputs {
                assert_eq!(s.quant, output.quant, "op {i}: CONCATENATION rescales");
            }
            Prepared::Nothing
        }
        _ => Prepared::Nothing,
    }
}

/// `(outer, inner)`: the products of the dimensions before `axis` and from `axis` on.
fn outer_inner(shape: &[usize], axis: usize) -> (usize, usize) {
    (shape[..axis].iter().product(), shape[axis..].iter().product())
}

/// Concatenation along `axis`.
fn concat(parts: &[(&TensorSpec, &Vec<i8>)], axis: usize) -> Vec<i8> {
    let outer = outer_inner(&parts[0].0.shape, axis).0;
    let mut y = Vec::new();
    for o in 0..outer {
        for (spec, v) in parts {
            let inner = outer_inner(&spec.shape, axis).1;
            y.extend_from_slice(&v[o * inner..(o + 1) * inner]);
        }
    }
    y
}

/// SPLIT_V along `axis` into pieces of `sizes`.
fn split(spec: &TensorSpec, x: &[i8], sizes: &[usize], axis: usize) -> Vec<Vec<i8>> {
    let (outer, inner) = outer_inner(&spec.shape, axis);
    let per = inner / spec.shape[axis];
    let mut pieces: Vec<Vec<i8>> = sizes.iter().map(|_| Vec::new()).collect();
    for o in 0..outer {
        let mut at = o * inner;
        for (p, &n) in pieces.iter_mut().zip(sizes) {
            p.extend_from_slice(&x[at..at + n * per]);
            at += n * per;
        }
    }
    pieces
}

/// STRIDED_SLICE with stride 1: `out[i] = x[begin + i]` per dimension.
fn slice(spec: &TensorSpec, x: &[i8], begin: &[usize], out: &[usize]) -> Vec<i8> {
    let n: usize = out.iter().product();
    let rank = out.len();
    (0..n)
        .map(|flat| {
            let (mut rest, mut at, mut stride) = (flat, 0, 1);
            for d in (0..rank).rev() {
                at += (rest % out[d] + begin[d]) * stride;
                rest /= out[d];
                stride *= spec.shape[d];
            }
            x[at]
        })
        .collect()
}
