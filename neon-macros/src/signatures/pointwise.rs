//! Resolving the activations and elementwise operators (`relu` .. `exp`, `add`, `mul`,
//! `softmax`, `complex_magnitude`).

use neon_runtime::ops::activation::Activation;
use neon_runtime::ops::complex::ComplexMagnitude;
use neon_runtime::ops::elementwise::{Add, Mul};
use neon_runtime::ops::softmax::Softmax;

use super::{Call, Resolved};
use crate::ir::Op;
use crate::options::Options;

/// The activations and elementwise operators: `relu` .. `exp`, `add`, `mul`, `softmax`,
/// `complex_magnitude`.
pub(super) fn resolve(call: Call, opts: &mut Options) -> Resolved {
    let Call { op, callee, .. } = call;
    Ok(Some(match op {
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
        "complex_magnitude" => Op::ComplexMagnitude(ComplexMagnitude),
        _ => unreachable!("dispatched by operator group"),
    }))
}
