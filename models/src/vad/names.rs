//! Tensor names of the converted Silero VAD file (`tools/silero_vad/convert.py` writes
//! them; `models/vad/silero_vad.safetensors`), all f32. Every name is a `&'static str` so
//! load errors can name the tensor.

/// The STFT basis `[258, 1, 256]`: 129 real rows, then 129 imaginary rows.
pub const STFT: &str = "stft.basis";
/// The four encoder convs: weight `[out, in, 3]` and bias `[out]`, in network order.
pub const ENCODER: [(&str, &str); 4] = [
    ("encoder.0.weight", "encoder.0.bias"),
    ("encoder.1.weight", "encoder.1.bias"),
    ("encoder.2.weight", "encoder.2.bias"),
    ("encoder.3.weight", "encoder.3.bias"),
];
/// The LSTM cell's input weights `[512, 128]` (PyTorch gate order i, f, g, o).
pub const LSTM_WEIGHT_IH: &str = "lstm.weight_ih";
/// The LSTM cell's recurrent weights `[512, 128]`.
pub const LSTM_WEIGHT_HH: &str = "lstm.weight_hh";
/// The LSTM cell's input bias `[512]`.
pub const LSTM_BIAS_IH: &str = "lstm.bias_ih";
/// The LSTM cell's recurrent bias `[512]`.
pub const LSTM_BIAS_HH: &str = "lstm.bias_hh";
/// The output conv's weight `[1, 128, 1]`.
pub const DECODER: &str = "decoder.weight";
/// The output conv's bias `[1]`.
pub const DECODER_BIAS: &str = "decoder.bias";
