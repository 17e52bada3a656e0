//! Tensor names of the converted openWakeWord files (`tools/openwakeword/convert.py` writes
//! them): `embedding.safetensors` and the wake-word heads.
//!
//! Every name is a `&'static str` so load errors can name the tensor.

/// `("conv{i}.weight", "conv{i}.bias")` for each `i`.
macro_rules! convs {
    ($($i:literal)+) => {
        [$((concat!("conv", $i, ".weight"), concat!("conv", $i, ".bias"))),+]
    };
}

/// Weight (`[out, in, kernel_h, kernel_w]`) and bias (`[out]`) names of the speech-embedding
/// CNN's 20 convs in `embedding.safetensors`, in network order.
pub const EMBEDDING_CONVS: [(&str, &str); 20] =
    convs!(0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19);

/// Tensor names of one head's parameters (a prefix applied to the converter's names).
#[derive(Clone, Copy, Debug)]
pub struct HeadNames {
    /// `dense{0,1,2}.weight`.
    pub dense: [&'static str; 3],
    /// `dense{0,1,2}.bias`.
    pub dense_bias: [&'static str; 3],
    /// `norm{0,1}.weight`.
    pub norm: [&'static str; 2],
    /// `norm{0,1}.bias`.
    pub norm_bias: [&'static str; 2],
}

/// The [`HeadNames`] of a head whose tensors start with `$prefix`.
macro_rules! head_names {
    ($prefix:literal) => {
        HeadNames {
            dense: [
                concat!($prefix, "dense0.weight"),
                concat!($prefix, "dense1.weight"),
                concat!($prefix, "dense2.weight"),
            ],
            dense_bias: [
                concat!($prefix, "dense0.bias"),
                concat!($prefix, "dense1.bias"),
                concat!($prefix, "dense2.bias"),
            ],
            norm: [concat!($prefix, "norm0.weight"), concat!($prefix, "norm1.weight")],
            norm_bias: [concat!($prefix, "norm0.bias"), concat!($prefix, "norm1.bias")],
        }
    };
}

/// Names of a head's first (or only) stage.
pub const STAGE1: HeadNames = head_names!("");

/// Names of hey_jarvis's second stage (prefix `stage2.`).
pub const STAGE2: HeadNames = head_names!("stage2.");

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spelled_as_the_converter_writes_them() {
        assert_eq!(EMBEDDING_CONVS[0], ("conv0.weight", "conv0.bias"));
        assert_eq!(EMBEDDING_CONVS[19], ("conv19.weight", "conv19.bias"));
        assert_eq!(STAGE1.dense, ["dense0.weight", "dense1.weight", "dense2.weight"]);
        assert_eq!(STAGE1.norm_bias, ["norm0.bias", "norm1.bias"]);
        assert_eq!(STAGE2.dense_bias[2], "stage2.dense2.bias");
        assert_eq!(STAGE2.norm, ["stage2.norm0.weight", "stage2.norm1.weight"]);
    }
}
