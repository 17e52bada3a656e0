//! A decomposed LayerNorm in an ONNX graph (see the module docs of [`super`]): the group of
//! elementwise and `ReduceMean` nodes is gathered, evaluated in f64 to read eps, scale and
//! shift, and checked against a LayerNorm on seeded random rows.

use alloc::collections::{BTreeMap, BTreeSet};
use alloc::format;
use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;

use super::{attr, attr_i, row_vector, short, Graph};
use crate::{Error, Layer};

/// Most nodes a decomposed LayerNorm may span (torch's has 11 with its `Constant`s, TF's 12).
const MAX_NORM_NODES: usize = 64;

/// Ops a decomposed LayerNorm is made of.
pub(super) const NORM_OPS: [&str; 10] =
    ["ReduceMean", "Sub", "Mul", "Pow", "Div", "Sqrt", "Reciprocal", "Neg", "Add", "Identity"];

/// A value of the decomposed-LayerNorm evaluator: one per row, or `[H]`.
#[derive(Clone)]
enum V {
    S(f64),
    R(Vec<f64>),
}

/// A constant operand of a LayerNorm group.
fn norm_operand(g: &Graph<'_>, name: &str, width: usize) -> Result<V, String> {
    let (dims, v) = g
        .f32_const(name)
        .map_err(|_| format!("constant `{}` is not float32 weights in the file", short(name)))?;
    if v.len() == 1 && dims.len() <= 2 {
        return Ok(V::S(f64::from(v[0])));
    }
    row_vector(&dims, v, width)
        .map(|v| V::R(v.into_iter().map(f64::from).collect()))
        .ok_or_else(|| format!("constant `{}` does not broadcast to [1, {width}]", short(name)))
}

/// The group of nodes computing a decomposed LayerNorm from `x` (`[1, width]`): the
/// layer and the group's output tensor. See the module docs.
pub(super) fn decomposed_norm<'a>(
    g: &Graph<'a>,
    x: &'a str,
    width: usize,
    graph_output: &str,
) -> Result<(Layer, &'a str), Error> {
    // Gather the group: nodes of NORM_OPS fed only by `x`, the group and constants, in an
    // order where each node's inputs come first (a worklist over consumers).
    let mut produced: BTreeSet<&'a str> = BTreeSet::new();
    produced.insert(x);
    let mut order: Vec<usize> = Vec::new();
    let mut in_group: BTreeSet<usize> = BTreeSet::new();
    let mut work: Vec<&'a str> = vec![x];
    let first = g.consumers(x).first().copied().unwrap_or(0);
    let refuse = |why: &str| g.err(format!("{} and what follows: {why}", g.label(first)));
    while let Some(t) = work.pop() {
        for &c in g.consumers(t) {
            if in_group.contains(&c) || !NORM_OPS.contains(&g.op(c)) {
                continue;
            }
            let n = &g.nodes[c];
            let ready = n
                .input
                .iter()
                .all(|s| s.is_empty() || produced.contains(s.as_str()) || g.is_const(s));
            if !ready {
                continue; // revisited when its other input is produced (or never: refused below)
            }
            if order.len() >= MAX_NORM_NODES {
                return Err(refuse("too many nodes for a LayerNorm"));
            }
            in_group.insert(c);
            order.push(c);
            for o in n.output.iter().filter(|o| !o.is_empty()) {
                if produced.insert(o.as_str()) {
                    work.push(o.as_str());
                }
            }
        }
    }
    // Every consumer of `x` is in the group; exactly one group tensor leaves it.
    if g.consumers(x).iter().any(|c| !in_group.contains(c)) {
        return Err(refuse("its input is also used outside a LayerNorm"));
    }
    let mut exits = BTreeSet::new();
    for &c in &order {
        for o in g.nodes[c].output.iter().filter(|o| !o.is_empty()) {
            let outside = g.consumers(o).iter().any(|k| !in_group.contains(k));
            let unused = g.consumers(o).is_empty();
            if outside || o == graph_output || unused {
                exits.insert(o.as_str());
            }
        }
    }
    let exit = match exits.len() {
        1 => exits.first().copied().unwrap_or(""),
        0 => return Err(refuse("no output")),
        _ => return Err(refuse("more than one output (not a LayerNorm)")),
    };
    // Operands, decoded once.
    let mut consts: BTreeMap<&'a str, V> = BTreeMap::new();
    let mut axes_ok = true;
    for &c in &order {
        let n = &g.nodes[c];
        if g.op(c) == "ReduceMean" {
            let axes = match n.input.get(1).filter(|s| !s.is_empty()) {
                Some(s) => {
                    g.i64_const(s).map_err(|_| refuse("ReduceMean axes are not constant"))?
                }
                None => attr(n, "axes").map(|a| a.ints.clone()).unwrap_or_default(),
            };
            let all = axes.is_empty() && attr_i(n, "noop_with_empty_axes", 0) == 0;
            axes_ok &= all || axes.iter().any(|&a| a == 1 || a == -1);
            axes_ok &= axes.iter().all(|&a| matches!(a, -2..=1));
            continue; // the axes input is not an operand
        }
        for s in n.input.iter().filter(|s| !s.is_empty()) {
            if !produced.contains(s.as_str()) && !consts.contains_key(s.as_str()) {
                let v = norm_operand(g, s, width).map_err(|m| refuse(&m))?;
                consts.insert(s.as_str(), v);
            }
        }
    }
    if !axes_ok {
        return Err(refuse("a ReduceMean does not reduce the last axis"));
    }
    let eval = |row: &[f64]| -> Result<Vec<f64>, String> {
        let mut vals: BTreeMap<&str, V> = BTreeMap::new();
        vals.insert(x, V::R(row.to_vec()));
        for &c in &order {
            let n = &g.nodes[c];
            let get = |k: usize| -> Result<V, String> {
                let s = n.input.get(k).map(String::as_str).unwrap_or("");
                vals.get(s)
                    .or_else(|| consts.get(s))
                    .cloned()
                    .ok_or_else(|| "missing operand".into())
            };
            let y = match g.op(c) {
                "ReduceMean" => match get(0)? {
                    V::R(v) => V::S(v.iter().sum::<f64>() / v.len().max(1) as f64),
                    s => s,
                },
                "Identity" => get(0)?,
                "Sqrt" => map1(get(0)?, f64::sqrt),
                "Reciprocal" => map1(get(0)?, |a| 1.0 / a),
                "Neg" => map1(get(0)?, |a| -a),
                op => {
                    let (a, b) = (get(0)?, get(1)?);
                    if n.input.len() != 2 {
                        return Err(format!("{} has {} inputs", g.label(c), n.input.len()));
                    }
                    let f: fn(f64, f64) -> f64 = match op {
                        "Add" => |a, b| a + b,
                        "Sub" => |a, b| a - b,
                        "Mul" => |a, b| a * b,
                        "Div" => |a, b| a / b,
                        _ => |a, b| {
                            if b == 2.0 {
                                a * a
                            } else {
                                a.powf(b)
                            }
                        },
                    };
                    if op == "Pow" && !matches!(b, V::S(_)) {
                        return Err(format!("{}: the exponent is not one value", g.label(c)));
                    }
                    map2(a, b, f)
                }
            };
            if let Some(o) = n.output.first() {
                vals.insert(o.as_str(), y);
            }
        }
        match vals.remove(exit) {
            Some(V::R(v)) => Ok(v),
            _ => Err("the output is not a row".into()),
        }
    };
    // eps: the constant added to a ReduceMean of a ReduceMean-derived value (the variance).
    let mut eps = None;
    for &c in &order {
        let n = &g.nodes[c];
        if g.op(c) != "Add" || n.input.len() != 2 {
            continue;
        }
        for (a, b) in [(0, 1), (1, 0)] {
            let from_mean = order.iter().any(|&k| {
                let m = &g.nodes[k];
                g.op(k) == "ReduceMean"
                    && m.output.first() == Some(&n.input[a])
                    && m.input.first().map(String::as_str) != Some(x)
            });
            if from_mean {
                if let Some(V::S(e)) = consts.get(n.input[b].as_str()) {
                    eps = eps.or(Some(*e));
                }
            }
        }
    }
    let eps = eps.ok_or_else(|| refuse("no epsilon added to a variance (not a LayerNorm)"))?;
    if !(eps > 0.0 && eps.is_finite()) {
        return Err(refuse("epsilon is not positive"));
    }
    let not_norm = |m: String| refuse(&format!("does not compute a LayerNorm ({m})"));
    let beta = eval(&vec![0.0; width]).map_err(not_norm)?;
    let probes: [Vec<f64>; 2] =
        [(0..width).map(|i| i as f64).collect(), (0..width).map(|i| (i * i) as f64).collect()];
    let centred = |p: &[f64]| -> (Vec<f64>, f64) {
        let m = p.iter().sum::<f64>() / width as f64;
        let d: Vec<f64> = p.iter().map(|v| v - m).collect();
        let var = d.iter().map(|v| v * v).sum::<f64>() / width as f64;
        (d, 1.0 / (var + eps).sqrt())
    };
    let ys = [eval(&probes[0]).map_err(not_norm)?, eval(&probes[1]).map_err(not_norm)?];
    let cs = [centred(&probes[0]), centred(&probes[1])];
    let mut gamma = vec![0.0f64; width];
    for (j, gm) in gamma.iter_mut().enumerate() {
        let k = usize::from(cs[1].0[j].abs() > cs[0].0[j].abs());
        let (d, r) = (&cs[k].0, cs[k].1);
        *gm = if d[j] == 0.0 { 1.0 } else { (ys[k][j] - beta[j]) / (d[j] * r) };
    }
    let gamma32: Vec<f32> = gamma.iter().map(|&v| v as f32).collect();
    let beta32: Vec<f32> = beta.iter().map(|&v| v as f32).collect();
    // Check on seeded pseudo-random rows of growing scale.
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    for round in 0..6 {
        let scale = [1.0, 0.01, 10.0, 1.0, 100.0, 3.0][round];
        let row: Vec<f64> = (0..width)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                ((state >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0) * scale
            })
            .collect();
        let got = eval(&row).map_err(not_norm)?;
        let (d, r) = centred(&row);
        for j in 0..width {
            let want = d[j] * r * f64::from(gamma32[j]) + f64::from(beta32[j]);
            let close = got.get(j).is_some_and(|g| (g - want).abs() <= 1e-6 * (1.0 + want.abs())); // false for NaN
            if got.len() != width || !close {
                return Err(not_norm(format!(
                    "output {j} is {} where a LayerNorm gives {want}",
                    got.get(j).copied().unwrap_or(f64::NAN)
                )));
            }
        }
    }
    let gamma = (!gamma32.iter().all(|&v| v == 1.0)).then_some(gamma32);
    let beta = (!beta32.iter().all(|&v| v == 0.0)).then_some(beta32);
    Ok((Layer::LayerNorm { features: width, eps: eps as f32, gamma, beta }, exit))
}

fn map1(a: V, f: impl Fn(f64) -> f64) -> V {
    match a {
        V::S(a) => V::S(f(a)),
        V::R(v) => V::R(v.into_iter().map(f).collect()),
    }
}

fn map2(a: V, b: V, f: fn(f64, f64) -> f64) -> V {
    match (a, b) {
        (V::S(a), V::S(b)) => V::S(f(a, b)),
        (V::S(a), V::R(b)) => V::R(b.into_iter().map(|b| f(a, b)).collect()),
        (V::R(a), V::S(b)) => V::R(a.into_iter().map(|a| f(a, b)).collect()),
        (V::R(a), V::R(b)) => V::R(a.into_iter().zip(b).map(|(a, b)| f(a, b)).collect()),
    }
}
