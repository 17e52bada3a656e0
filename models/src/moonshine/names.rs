//! Tensor names of the converted weights file (`tools/moonshine/convert.py` writes them).
//!
//! Every name is a `&'static str` so load errors can name the tensor. An int8 tensor `NAME`
//! comes with `NAME.scale` and `NAME.offset` (shape `[1]`): [`Quant`] holds the three names.

/// The three names of one per-tensor int8 weight: values, scale, offset.
pub type Quant = [&'static str; 3];

macro_rules! quant {
    ($name:expr) => {
        [$name, concat!($name, ".scale"), concat!($name, ".offset")]
    };
}

/// `$name` itself (the identity `per_layer!` applies by default).
macro_rules! name {
    ($name:expr) => {
        $name
    };
}

/// The same tensor name in each of the eight layers of `encoder` or `decoder`, each passed
/// through `$each!` (`name!` by default, `quant!` for an int8 weight's three names).
macro_rules! per_layer {
    ($stack:literal, $name:literal) => {
        per_layer!(name, $stack, $name)
    };
    ($each:ident, $stack:literal, $name:literal) => {
        [
            $each!(concat!($stack, ".layers.0.", $name)),
            $each!(concat!($stack, ".layers.1.", $name)),
            $each!(concat!($stack, ".layers.2.", $name)),
            $each!(concat!($stack, ".layers.3.", $name)),
            $each!(concat!($stack, ".layers.4.", $name)),
            $each!(concat!($stack, ".layers.5.", $name)),
            $each!(concat!($stack, ".layers.6.", $name)),
            $each!(concat!($stack, ".layers.7.", $name)),
        ]
    };
}

/// As `per_layer!`, for an int8 weight: its three names in each layer.
macro_rules! per_layer_quant {
    ($stack:literal, $name:literal) => {
        per_layer!(quant, $stack, $name)
    };
}

pub const CONV1: Quant = quant!("encoder.conv1.weight");
pub const GROUPNORM: &str = "encoder.groupnorm.weight";
pub const GROUPNORM_BIAS: &str = "encoder.groupnorm.bias";
pub const CONV2: Quant = quant!("encoder.conv2.weight");
pub const CONV2_BIAS: &str = "encoder.conv2.bias";
pub const CONV3: Quant = quant!("encoder.conv3.weight");
pub const CONV3_BIAS: &str = "encoder.conv3.bias";
pub const ENCODER_NORM: &str = "encoder.norm.weight";

/// Names of one encoder layer's tensors.
pub mod enc {
    use super::Quant;
    pub const ATTN_NORM: [&str; 8] = per_layer!("encoder", "attn_norm.weight");
    pub const Q: [Quant; 8] = per_layer_quant!("encoder", "attn.q.weight");
    pub const K: [Quant; 8] = per_layer_quant!("encoder", "attn.k.weight");
    pub const V: [Quant; 8] = per_layer_quant!("encoder", "attn.v.weight");
    pub const O: [Quant; 8] = per_layer_quant!("encoder", "attn.o.weight");
    pub const MLP_NORM: [&str; 8] = per_layer!("encoder", "mlp_norm.weight");
    pub const FC1: [Quant; 8] = per_layer_quant!("encoder", "mlp.fc1.weight");
    pub const FC1_BIAS: [&str; 8] = per_layer!("encoder", "mlp.fc1.bias");
    pub const FC2: [Quant; 8] = per_layer_quant!("encoder", "mlp.fc2.weight");
    pub const FC2_BIAS: [&str; 8] = per_layer!("encoder", "mlp.fc2.bias");
}

/// Names of one decoder layer's tensors.
pub mod dec {
    use super::Quant;
    pub const SELF_NORM: [&str; 8] = per_layer!("decoder", "self_attn_norm.weight");
    pub const SELF_Q: [Quant; 8] = per_layer_quant!("decoder", "self_attn.q.weight");
    pub const SELF_K: [Quant; 8] = per_layer_quant!("decoder", "self_attn.k.weight");
    pub const SELF_V: [Quant; 8] = per_layer_quant!("decoder", "self_attn.v.weight");
    pub const SELF_O: [Quant; 8] = per_layer_quant!("decoder", "self_attn.o.weight");
    pub const CROSS_NORM: [&str; 8] = per_layer!("decoder", "cross_attn_norm.weight");
    pub const CROSS_Q: [Quant; 8] = per_layer_quant!("decoder", "cross_attn.q.weight");
    pub const CROSS_K: [Quant; 8] = per_layer_quant!("decoder", "cross_attn.k.weight");
    pub const CROSS_V: [Quant; 8] = per_layer_quant!("decoder", "cross_attn.v.weight");
    pub const CROSS_O: [Quant; 8] = per_layer_quant!("decoder", "cross_attn.o.weight");
    pub const MLP_NORM: [&str; 8] = per_layer!("decoder", "mlp_norm.weight");
    pub const UP: [Quant; 8] = per_layer_quant!("decoder", "mlp.up.weight");
    pub const UP_BIAS: [&str; 8] = per_layer!("decoder", "mlp.up.bias");
    pub const DOWN: [Quant; 8] = per_layer_quant!("decoder", "mlp.down.weight");
    pub const DOWN_BIAS: [&str; 8] = per_layer!("decoder", "mlp.down.bias");
}

pub const EMBEDDING: Quant = quant!("decoder.embed.weight");
pub const DECODER_NORM: &str = "decoder.norm.weight";
