//! The operator table: one row ([`OpSpec`]) per builtin operator, with its group, argument
//! slots, call form, shape text and options ([`OptSpec`]: form and default). It is the one
//! place an operator is described: [`signature`](super::signature), the flags, the
//! suggestions' candidate lists, the group dispatch of the resolvers and the option reader
//! ([`Options`](crate::options::Options), which asserts in debug builds that every option
//! a resolver reads and every default it uses is in its row) read it, and
//! [`markdown`] renders it as the crate documentation's operator table
//! (`neon-macros/docs/operators.md`, kept current by the unit test
//! `operator_table_is_current`; `NEON_BLESS=1` rewrites it).
//!
//! Adding an operator is one row here (in any position: the documentation sorts by group,
//! the "unknown operator" list keeps the table's order) plus its resolver arm in its
//! group's module.

use neon_runtime::Layout;

use super::Slot;

/// The operator groups, as the resolvers (one module each) and the documentation (in this
/// order) group them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Group {
    /// `signatures/conv.rs`.
    Conv,
    /// `signatures/pool.rs`.
    Pool,
    /// `signatures/dense.rs`.
    Dense,
    /// `signatures/norm.rs`.
    Norm,
    /// `signatures/pointwise.rs`.
    Pointwise,
    /// `signatures/sequence.rs`.
    Sequence,
    /// `signatures/blocks.rs`.
    Blocks,
}

/// An option's default.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum DefaultValue {
    /// An integer.
    Int(usize),
    /// A number.
    Float(f32),
    /// A layout (`channel_first` / `frame_major`).
    Layout(Layout),
    /// A default the resolver computes or an absent option's effect, described in words
    /// (`"the kernel"`).
    Text(&'static str),
    /// The call must give the option.
    Required,
    /// A flag: `true` / `false`, or written bare for `true`; its default.
    Flag(bool),
}

/// One option of an operator: `name = form`, its default and a note for the documentation.
#[derive(Clone, Copy, Debug)]
pub struct OptSpec {
    pub name: &'static str,
    /// The value as the documentation writes it (`n | (l, r)`); empty for a flag.
    // Read only by the documentation's rendering, a unit test.
    #[cfg_attr(not(test), allow(dead_code))]
    pub form: &'static str,
    pub default: DefaultValue,
    /// A note for the documentation (limits, interactions); may be empty.
    // Read only by the documentation's rendering, a unit test.
    #[cfg_attr(not(test), allow(dead_code))]
    pub note: &'static str,
}

/// An option without a note.
const fn opt(name: &'static str, form: &'static str, default: DefaultValue) -> OptSpec {
    OptSpec { name, form, default, note: "" }
}

impl OptSpec {
    /// The option with a note for the documentation.
    const fn note(self, note: &'static str) -> OptSpec {
        OptSpec { note, ..self }
    }
}

/// One builtin operator.
#[derive(Clone, Copy, Debug)]
pub struct OpSpec {
    pub name: &'static str,
    pub group: Group,
    /// What each argument position takes.
    pub slots: &'static [Slot],
    /// The call as the documentation writes it, `conv1d(x, w[, b])`.
    // Read only by the documentation's rendering, a unit test.
    #[cfg_attr(not(test), allow(dead_code))]
    pub call: &'static str,
    /// The shapes it reads and writes, with the operator's notes.
    // Read only by the documentation's rendering, a unit test.
    #[cfg_attr(not(test), allow(dead_code))]
    pub shape: &'static str,
    /// Its options, in the order the "unknown option" hint lists them.
    pub options: &'static [OptSpec],
}

impl OpSpec {
    /// The option `name` of this operator.
    pub fn option(&self, name: &str) -> Option<&'static OptSpec> {
        self.options.iter().find(|o| o.name == name)
    }
}

use DefaultValue::*;
use Group::*;
use Slot::*;

const CF: DefaultValue = DefaultValue::Layout(Layout::ChannelFirst);
const LAYOUT: &str = "channel_first | frame_major";
const TENSOR: &[Slot] = &[Tensor];
const WEIGHTED: &[Slot] = &[Tensor, Weight, OptionalWeight];

/// A unary operator `name(x)` of the pointwise group without options.
const fn pointwise(name: &'static str, call: &'static str, shape: &'static str) -> OpSpec {
    OpSpec { name, group: Pointwise, slots: TENSOR, call, shape, options: &[] }
}

/// Every builtin operator, in the order the "unknown operator" hint lists them.
pub const OPERATORS: &[OpSpec] = &[
    OpSpec {
        name: "conv1d",
        group: Conv,
        slots: WEIGHTED,
        call: "conv1d(x, w[, b])",
        shape: "`[Cin, T]` -> `[Cout, T']` (w: `[Cout, Cin/groups, K]`)",
        options: &[
            opt("groups", "g", Int(1)),
            opt("stride", "s", Int(1)),
            opt("dilation", "d", Int(1)),
            opt("output", LAYOUT, CF).note("`frame_major` writes `[T', Cout]`"),
            opt("causal", "", Flag(false))
                .note("left padding `dilation * (K - 1)`; not with `padding`"),
            opt("padding", "n | (l, r)", Int(0)),
        ],
    },
    OpSpec {
        name: "depthwise_conv1d",
        group: Conv,
        slots: WEIGHTED,
        call: "depthwise_conv1d(x, w[, b])",
        shape: "`[C, T]` -> `[C, T']` (w: `[C, 1, K]`)",
        options: &[
            opt("stride", "s", Int(1)),
            opt("dilation", "d", Int(1)),
            opt("causal", "", Flag(false))
                .note("left padding `dilation * (K - 1)`; not with `padding`"),
            opt("padding", "n | (l, r)", Int(0)),
        ],
    },
    OpSpec {
        name: "conv2d",
        group: Conv,
        slots: WEIGHTED,
        call: "conv2d(x, w[, b])",
        shape: "`[Cin, H, W]` -> `[Cout, H', W']` (w: `[Cout, Cin, KH, KW]`, PyTorch's OIHW)",
        options: &[
            opt("stride", "n | (sh, sw)", Int(1)),
            opt("padding", "n | (top, bottom, left, right) | same | valid", Int(0)),
            opt("leaky_relu", "slope", Text("none"))
                .note("fused output stage, slope in `[0, 1]`; applied before `clamp_min`"),
            opt("clamp_min", "min", Text("none"))
                .note("fused output stage; applied after `leaky_relu`"),
        ],
    },
    OpSpec {
        name: "linear",
        group: Dense,
        slots: WEIGHTED,
        call: "linear(x, w[, b])",
        shape: "`[T, In]` -> `[T, Out]` frame-major (w: `[Out, In]`; f32, i8 or i8_block32)",
        options: &[],
    },
    OpSpec {
        name: "layer_norm",
        group: Norm,
        slots: WEIGHTED,
        call: "layer_norm(x, g[, b])",
        shape: "same shape (g, b: `[C]`)",
        options: &[opt("eps", "e", Float(1e-5)), opt("layout", LAYOUT, CF)],
    },
    OpSpec {
        name: "group_norm",
        group: Norm,
        slots: WEIGHTED,
        call: "group_norm(x, g[, b])",
        shape: "`[C, T]` -> `[C, T]` (g, b: `[C]`)",
        options: &[opt("groups", "g", Int(1)), opt("eps", "e", Float(1e-5))],
    },
    OpSpec {
        name: "rms_norm",
        group: Norm,
        slots: &[Tensor, Weight],
        call: "rms_norm(x, g)",
        shape: "same shape (g: `[C]`)",
        options: &[opt("eps", "e", Float(1e-5)), opt("layout", LAYOUT, CF)],
    },
    OpSpec {
        name: "layer_scale",
        group: Norm,
        slots: &[Tensor, Weight],
        call: "layer_scale(x, g)",
        shape: "same shape, times `g[c]` per channel (g: `[C]`)",
        options: &[opt("layout", LAYOUT, CF)],
    },
    OpSpec {
        name: "bias_add",
        group: Norm,
        slots: &[Tensor, Weight],
        call: "bias_add(x, b)",
        shape: "same shape, plus `b[c]` per channel (b: `[C]`)",
        options: &[opt("layout", LAYOUT, CF)],
    },
    OpSpec {
        name: "residual_conv",
        group: Blocks,
        slots: &[Tensor, Weight],
        call: "residual_conv(x, r)",
        shape: "`[C, T]` -> `[C, T]`: `x + conv2(act(conv1(act(x))))`, both convs `[C, C, K]` \
                with bias, \"same\" padding (r: `residual_conv[C, K]` or `[C, K1, K2]`)",
        options: &[
            opt("dilations", "n | (d1, d2)", Int(1)),
            opt("relu", "", Flag(false)).note("act = ReLU; give `relu` or `slope`"),
            opt("slope", "s", Text("none")).note("act = leaky ReLU; give `relu` or `slope`"),
        ],
    },
    OpSpec {
        name: "convnext",
        group: Blocks,
        slots: &[Tensor, Weight],
        call: "convnext(x, b)",
        shape: "`[C, T]` -> `[C, T]`: depthwise conv K (\"same\" padding) -> LayerNorm over \
                channels -> pointwise `C -> E` -> GELU (erf) -> pointwise `E -> C` -> layer \
                scale -> `+ x` (b: `convnext[C, E, K]`)",
        options: &[opt("eps", "e", Float(1e-6)).note("the LayerNorm's")],
    },
    OpSpec {
        name: "stft_magnitude",
        group: Blocks,
        slots: &[Tensor, Weight],
        call: "stft_magnitude(x, w)",
        shape: "`[1, T]` -> `[n/2 + 1, (T - n) / hop + 1]`: per frame of `n` samples every \
                `hop`, times the window `w` `[n]`, real FFT, `sqrt(re^2 + im^2)` (f32 square, \
                square, add, sqrt); `n` a power of two in 16..=65536; `T >= n` over the whole \
                range of `T`; samples after the last whole frame unused",
        options: &[opt("hop", "h", Required).note(">= 1")],
    },
    OpSpec {
        name: "transpose",
        group: Sequence,
        slots: TENSOR,
        call: "transpose(x)",
        shape: "`[a, b]` -> `[b, a]`",
        options: &[opt("to", LAYOUT, DefaultValue::Layout(Layout::FrameMajor))],
    },
    pointwise("relu", "relu(x)", "same shape"),
    OpSpec {
        name: "leaky_relu",
        group: Pointwise,
        slots: TENSOR,
        call: "leaky_relu(x)",
        shape: "same shape",
        options: &[opt("slope", "s", Float(0.01))],
    },
    OpSpec {
        name: "clamp_min",
        group: Pointwise,
        slots: TENSOR,
        call: "clamp_min(x, min = v)",
        shape: "same shape, `max(x, v)`",
        options: &[opt("min", "v", Required).note("negative numbers as `-0.4`")],
    },
    pointwise("gelu", "gelu(x)", "same shape: GELU, erf form"),
    pointwise("gelu_tanh", "gelu_tanh(x)", "same shape: GELU, tanh approximation"),
    pointwise("silu", "silu(x)", "same shape"),
    pointwise("tanh", "tanh(x)", "same shape"),
    pointwise("sigmoid", "sigmoid(x)", "same shape"),
    pointwise("exp", "exp(x)", "same shape"),
    pointwise("softmax", "softmax(x)", "same shape, over the last axis"),
    OpSpec {
        name: "last_frames",
        group: Sequence,
        slots: TENSOR,
        call: "last_frames(x, frames = n)",
        shape: "`[C, T]` -> `[C, n]`; images `[C, T, W]` -> `[C, n, W]`",
        options: &[
            opt("frames", "n", Int(0)).note("`0` is an error: give `n >= 1`"),
            opt("layout", LAYOUT, CF),
        ],
    },
    OpSpec {
        name: "max_pool2d",
        group: Pool,
        slots: TENSOR,
        call: "max_pool2d(x, kernel = k)",
        shape: "`[C, H, W]` -> `[C, H', W']` (no padding; last rows / columns that do not fill \
                a window are dropped)",
        options: &[
            opt("kernel", "n | (kh, kw)", Required),
            opt("stride", "n | (sh, sw)", Text("the kernel")),
        ],
    },
    OpSpec {
        name: "rotary",
        group: Sequence,
        slots: TENSOR,
        call: "rotary(x, heads = h, dims = d)",
        shape: "`[T, C]` frame-major, same shape: rotary position embedding (in place) on the \
                first `d` values of each of the `h` heads, frame `t` at position `pos + t`",
        options: &[
            opt("heads", "h", Required),
            opt("dims", "d", Required).note("even, at most `C / h`"),
            opt("theta", "t", Float(10000.0)),
            opt("half_split", "", Flag(false))
                .note("pairs `(i, i + d/2)` instead of `(2i, 2i + 1)`"),
            opt("at", "pos", Int(0)).note("a scalar"),
        ],
    },
    pointwise(
        "complex_magnitude",
        "complex_magnitude(x)",
        "`[2C, T]` -> `[C, T]`: `sqrt(re^2 + im^2)` with the real parts in the first `C` \
         channels and the imaginary parts in the last `C` (an STFT as a conv1d); f32 square, \
         square, add, sqrt",
    ),
    OpSpec {
        name: "reflect_pad",
        group: Sequence,
        slots: TENSOR,
        call: "reflect_pad(x, left = l, right = r)",
        shape: "`[C, T]` -> `[C, l + T + r]`: each row padded by its reflection without \
                repeating the edge sample (PyTorch's `F.pad(mode=\"reflect\")`); `T > max(l, r)` \
                over the whole range of `T`",
        options: &[
            opt("left", "l", Int(0)).note("`left` or `right` >= 1"),
            opt("right", "r", Int(0)).note("`left` or `right` >= 1"),
        ],
    },
    OpSpec {
        name: "avg_pool1d",
        group: Pool,
        slots: TENSOR,
        call: "avg_pool1d(x, kernel = k)",
        shape: "`[C, T]` -> `[C, T']`, `T' = floor((T + l + r - k) / s) + 1` (PyTorch's \
                `AvgPool1d`)",
        options: &[
            opt("kernel", "k", Required),
            opt("stride", "s", Text("the kernel")),
            opt("padding", "n | (l, r)", Int(0)).note("each at most `k / 2`"),
            opt("ceil_mode", "", Flag(false)).note("rounds `T'` up; needs `s <= k - r`"),
            opt("count_include_pad", "", Flag(true)).note(
                "the mean divides by the window's length over the padded input (`k`, less for \
                     a `ceil_mode` last window); `false`: by the samples inside `x`",
            ),
            opt("layout", LAYOUT, CF).note("frame-major: `[T, C]` -> `[T', C]`"),
        ],
    },
    OpSpec {
        name: "max_pool1d",
        group: Pool,
        slots: TENSOR,
        call: "max_pool1d(x, kernel = k)",
        shape: "`[C, T]` -> `[C, T']`, `T' = floor((T + l + r - k) / s) + 1` (PyTorch's \
                `MaxPool1d`; pads with `-inf`, NaN propagates)",
        options: &[
            opt("kernel", "k", Required),
            opt("stride", "s", Text("the kernel")),
            opt("padding", "n | (l, r)", Int(0)).note("each at most `k / 2`"),
            opt("ceil_mode", "", Flag(false)).note("rounds `T'` up; needs `s <= k - r`"),
            opt("layout", LAYOUT, CF).note("frame-major: `[T, C]` -> `[T', C]`"),
        ],
    },
    OpSpec {
        name: "global_avg_pool",
        group: Pool,
        slots: TENSOR,
        call: "global_avg_pool(x)",
        shape: "`[C, T]` -> `[C, 1]`: the mean over all frames",
        options: &[opt("layout", LAYOUT, CF).note("frame-major: `[T, C]` -> `[1, C]`")],
    },
    OpSpec {
        name: "global_max_pool",
        group: Pool,
        slots: TENSOR,
        call: "global_max_pool(x)",
        shape: "`[C, T]` -> `[C, 1]`: the maximum over all frames",
        options: &[opt("layout", LAYOUT, CF).note("frame-major: `[T, C]` -> `[1, C]`")],
    },
    OpSpec {
        name: "reshape",
        group: Sequence,
        slots: TENSOR,
        call: "reshape(x, to = [d0, ..])",
        shape: "the same elements under constant dims `[d0, ..]` (rank 1..=4; the element count \
                must match over the whole range of the dims); takes the input's storage when the \
                planner allows (nothing runs), else copies",
        options: &[
            opt("layout", LAYOUT, CF).note("of the output"),
            opt("to", "[d0, ..]", Required),
        ],
    },
    OpSpec {
        name: "add",
        group: Pointwise,
        slots: &[Tensor, Tensor],
        call: "add(a, b)",
        shape: "equal shapes",
        options: &[],
    },
    OpSpec {
        name: "mul",
        group: Pointwise,
        slots: &[Tensor, Tensor],
        call: "mul(a, b)",
        shape: "equal shapes",
        options: &[],
    },
    OpSpec {
        name: "concat_frames",
        group: Sequence,
        slots: &[Tensor, Tensor],
        call: "concat_frames(a, b)",
        shape: "`[C, Ta]`, `[C, Tb]` -> `[C, Ta + Tb]`; channel-first images along their rows: \
                `[C, Ta, W]`, `[C, Tb, W]` -> `[C, Ta + Tb, W]`",
        options: &[opt("layout", LAYOUT, CF)],
    },
    OpSpec {
        name: "write_frames",
        group: Sequence,
        slots: &[Tensor, Tensor],
        call: "s = write_frames(s, x, at = pos)",
        shape: "writes `x` into state `s` at frame `pos`",
        options: &[opt("layout", LAYOUT, CF), opt("at", "pos", Required).note("a scalar")],
    },
    OpSpec {
        name: "attention",
        group: Sequence,
        slots: &[Tensor, Tensor, Tensor],
        call: "attention(q, k, v, heads = h)",
        shape: "`q` `[Tq, C]`, `k` and `v` `[Tk, C]` (frame-major; inputs, states or \
                intermediates) -> `[Tq, C]`: per head `softmax(q k^T scale) v` over the first \
                `n` frames of `k` and `v`",
        options: &[
            opt("heads", "h", Required).note("divides `C`"),
            opt("causal", "", Flag(false)).note("query `i` sees keys `<= n - Tq + i`"),
            opt("scale", "s", Text("`1/sqrt(C / h)`")),
            opt("len", "n", Text("`Tk`")).note("a scalar, `1..=Tk`, with `causal` `Tq..=Tk`"),
        ],
    },
    OpSpec {
        name: "lstm_cell",
        group: Dense,
        slots: &[Tensor, Tensor, Weight, OptionalWeight],
        call: "s = lstm_cell(s, x, w[, b])",
        shape: "one step of an LSTM cell (PyTorch's `nn.LSTMCell`, gates `i, f, g, o`) on state \
                `s` `[2, H]`, updated in place: row 0 the cell `c`, row 1 the hidden state `h` \
                (frame-major, so `last_frames(s, frames = 1, layout = frame_major)` reads `h` as \
                `[1, H]`); `x` one frame `[In, 1]` (w: `[4H, In + H]` = `[W_ih | W_hh]`, b: \
                `[4H]` = `b_ih + b_hh`)",
        options: &[opt("layout", LAYOUT, CF).note("`frame_major`: `x` is `[1, In]`")],
    },
    OpSpec {
        name: "scale_shift",
        group: Norm,
        // No weights: the scalar form; two: per channel (one is an error naming both).
        slots: &[Tensor, OptionalWeight, OptionalWeight],
        call: "scale_shift(x, g, b)`, `scale_shift(x, scale = a, shift = b)",
        shape: "same shape: with two weights `[C]`, `x * g[c] + b[c]` per channel, a BatchNorm \
                folded for inference (`g = weight / sqrt(var + eps)`, `b = bias - mean * g`); \
                without weights, `x * a + b`",
        options: &[
            opt("layout", LAYOUT, CF).note("the per-channel form"),
            opt("scale", "a", Float(1.0)).note("the scalar form; `scale` or `shift` required"),
            opt("shift", "b", Float(0.0)).note("the scalar form"),
        ],
    },
];

/// The row of operator `name`.
pub fn lookup(name: &str) -> Option<&'static OpSpec> {
    OPERATORS.iter().find(|op| op.name == name)
}

/// A default as the documentation writes it.
#[cfg(test)]
fn default_text(default: DefaultValue) -> String {
    match default {
        Int(v) => format!("default {v}"),
        Float(v) => format!("default {v:?}"),
        DefaultValue::Layout(Layout::ChannelFirst) => "default `channel_first`".to_string(),
        DefaultValue::Layout(Layout::FrameMajor) => "default `frame_major`".to_string(),
        Text(text) => format!("default: {text}"),
        Required => "required".to_string(),
        Flag(v) => format!("flag, default `{v}`"),
    }
}

/// One option as the documentation writes it: `` `stride = s` (default 1; note) ``, or
/// `` `causal` (flag, default `false`) ``.
#[cfg(test)]
fn option_text(o: &OptSpec) -> String {
    let written = if o.form.is_empty() {
        format!("`{}`", o.name)
    } else {
        format!("`{} = {}`", o.name, o.form)
    };
    let note = if o.note.is_empty() { String::new() } else { format!("; {}", o.note) };
    format!("{written} ({}{note})", default_text(o.default))
}

/// The operator table as markdown (`neon-macros/docs/operators.md`): call | input ->
/// output | options with their defaults, one row per operator sorted by [`Group`] (the
/// table's order within a group); operators of a group with the same shape text and
/// options share a row. (Only the unit test `operator_table_is_current` renders it: a
/// proc-macro crate cannot export the table to a build script.)
#[cfg(test)]
pub fn markdown() -> String {
    let mut ops: Vec<&OpSpec> = OPERATORS.iter().collect();
    ops.sort_by_key(|op| op.group);
    // A `|` in a cell (even in a code span) must be escaped in a markdown table.
    let cell = |text: &str| text.replace('|', "\\|");
    let mut rows: Vec<(String, String, String)> = Vec::new();
    for op in ops {
        let call = format!("`{}`", cell(op.call));
        let shape = cell(op.shape);
        let options = op.options.iter().map(|o| cell(&option_text(o))).collect::<Vec<_>>();
        let options = options.join(", ");
        match rows.last_mut() {
            Some(last) if last.1 == shape && last.2 == options => {
                last.0 = format!("{}, {call}", last.0)
            }
            _ => rows.push((call, shape, options)),
        }
    }
    let mut md = String::from(
        "<!-- Generated from neon-macros/src/signatures/table.rs by the unit test \
         `operator_table_is_current`; `NEON_BLESS=1 cargo test -p neon-macros` rewrites it. \
         Do not edit. -->\n\n\
         A flag is written bare (`causal`) or as `causal = true` / `causal = false`.\n\n\
         | call | input -> output | options |\n|---|---|---|\n",
    );
    for (call, shape, options) in rows {
        md += &format!("| {call} | {shape} | {options} |\n");
    }
    md
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The committed `docs/operators.md` (included by the crate docs) is the rendering of
    /// this table; `NEON_BLESS=1` rewrites it.
    #[test]
    fn operator_table_is_current() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/operators.md");
        let rendered = markdown();
        if std::env::var_os("NEON_BLESS").is_some() {
            std::fs::write(path, &rendered).expect("write docs/operators.md");
            return;
        }
        let committed = std::fs::read_to_string(path).unwrap_or_default();
        assert!(
            committed == rendered,
            "neon-macros/docs/operators.md is not the rendering of signatures/table.rs: \
             rerun with NEON_BLESS=1 and review the diff"
        );
    }

    /// Each operator is named once and called by its name; each option is named once per
    /// operator, and only flags are written without a form.
    #[test]
    fn rows_are_consistent() {
        for (i, op) in OPERATORS.iter().enumerate() {
            assert!(OPERATORS[..i].iter().all(|o| o.name != op.name), "{} twice", op.name);
            assert!(op.call.contains(&format!("{}(", op.name)), "{}: call {}", op.name, op.call);
            assert!(!op.slots.is_empty() && op.slots[0] == Slot::Tensor, "{}", op.name);
            for (j, o) in op.options.iter().enumerate() {
                assert!(op.options[..j].iter().all(|p| p.name != o.name), "{}.{}", op.name, o.name);
                assert_eq!(
                    o.form.is_empty(),
                    matches!(o.default, Flag(_)),
                    "{}.{}",
                    op.name,
                    o.name
                );
            }
        }
    }
}
