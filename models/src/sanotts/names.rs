//! The tensors of a sanoTTS voice file (`sanotts.md`, "Voice files"): names, shapes and
//! kinds, in the file's documented order (also the draw order of the synthetic voice).
//!
//! Voice files are unfolded, as a training framework exports them: the acoustic model's
//! projection `proj.weight` and the speaker embedding `speaker` are separate tensors (the
//! speaker is folded into the input conv's bias at load time, [`super::load`]; the
//! projection stays a step of its own). All tensors are f32;
//! conv weights are `[out, in / groups, kernel]`, linear weights `[out, in]`.

/// What a tensor is, which sets its synthetic distribution ([`super::synthetic`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A conv or linear weight: `z / sqrt(fan_in)`, `fan_in` the product of the dims after
    /// the first (`in / groups * kernel`, or `in`).
    Weight,
    /// A bias or the speaker embedding: `0.1 z`.
    Bias,
    /// A LayerNorm's scale: `1 + 0.1 z`.
    NormWeight,
    /// A LayerNorm's shift: `0.1 z`.
    NormBias,
    /// A ConvNeXt layer scale `gamma`: exactly 0.1, no draw.
    LayerScale,
}

/// One tensor of a voice file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TensorSpec {
    /// Its name in the file.
    pub name: &'static str,
    /// Its shape, outermost first.
    pub shape: &'static [usize],
    /// What it is.
    pub kind: Kind,
}

impl TensorSpec {
    /// Values in the tensor.
    pub const fn len(&self) -> usize {
        let mut n = 1;
        let mut i = 0;
        while i < self.shape.len() {
            n *= self.shape[i];
            i += 1;
        }
        n
    }

    /// Whether the tensor has no values (never, for a voice's tensors).
    pub const fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The fan-in of a weight: the product of its dims after the first.
    pub const fn fan_in(&self) -> usize {
        self.len() / self.shape[0]
    }
}

const fn spec(name: &'static str, shape: &'static [usize], kind: Kind) -> TensorSpec {
    TensorSpec { name, shape, kind }
}

/// The nine tensors of ConvNeXt block `$i` (a literal), in file order.
macro_rules! convnext {
    ($i:literal) => {
        [
            spec(concat!("convnext.", $i, ".dw.weight"), &[128, 1, 7], Kind::Weight),
            spec(concat!("convnext.", $i, ".dw.bias"), &[128], Kind::Bias),
            spec(concat!("convnext.", $i, ".norm.weight"), &[128], Kind::NormWeight),
            spec(concat!("convnext.", $i, ".norm.bias"), &[128], Kind::NormBias),
            spec(concat!("convnext.", $i, ".pw1.weight"), &[384, 128], Kind::Weight),
            spec(concat!("convnext.", $i, ".pw1.bias"), &[384], Kind::Bias),
            spec(concat!("convnext.", $i, ".pw2.weight"), &[128, 384], Kind::Weight),
            spec(concat!("convnext.", $i, ".pw2.bias"), &[128], Kind::Bias),
            spec(concat!("convnext.", $i, ".gamma"), &[128], Kind::LayerScale),
        ]
    };
}

/// Index of each tensor in [`TENSORS`].
pub mod index {
    pub const PROJ: usize = 0;
    pub const EMBED: usize = 1;
    pub const EMBED_BIAS: usize = 2;
    pub const SPEAKER: usize = 3;
    pub const RES_CONV1: usize = 4;
    pub const RES_CONV1_BIAS: usize = 5;
    pub const RES_CONV2: usize = 6;
    pub const RES_CONV2_BIAS: usize = 7;
    pub const NORM0: usize = 8;
    pub const NORM0_BIAS: usize = 9;
    /// Block `i`'s first tensor (`convnext.{i}.dw.weight`); its nine tensors follow in the
    /// order of [`super::CONVNEXT_PARTS`].
    pub const fn convnext(i: usize) -> usize {
        10 + 9 * i
    }
    pub const NORM1: usize = 46;
    pub const NORM1_BIAS: usize = 47;
    pub const HEAD: usize = 48;
    pub const HEAD_BIAS: usize = 49;
}

/// The parts of one ConvNeXt block, in file order (offsets from [`index::convnext`]).
pub const CONVNEXT_PARTS: [&str; 9] = [
    "dw.weight",
    "dw.bias",
    "norm.weight",
    "norm.bias",
    "pw1.weight",
    "pw1.bias",
    "pw2.weight",
    "pw2.bias",
    "gamma",
];

const fn tensors() -> [TensorSpec; 50] {
    let head = [
        spec("proj.weight", &[80, 192], Kind::Weight),
        spec("embed.weight", &[128, 80, 7], Kind::Weight),
        spec("embed.bias", &[128], Kind::Bias),
        spec("speaker", &[128], Kind::Bias),
        spec("res.conv1.weight", &[128, 128, 3], Kind::Weight),
        spec("res.conv1.bias", &[128], Kind::Bias),
        spec("res.conv2.weight", &[128, 128, 3], Kind::Weight),
        spec("res.conv2.bias", &[128], Kind::Bias),
        spec("norm0.weight", &[128], Kind::NormWeight),
        spec("norm0.bias", &[128], Kind::NormBias),
    ];
    let blocks = [convnext!(0), convnext!(1), convnext!(2), convnext!(3)];
    let tail = [
        spec("norm1.weight", &[128], Kind::NormWeight),
        spec("norm1.bias", &[128], Kind::NormBias),
        spec("head.weight", &[514, 128], Kind::Weight),
        spec("head.bias", &[514], Kind::Bias),
    ];
    let mut out = [head[0]; 50];
    let mut n = 0;
    let mut i = 0;
    while i < head.len() {
        out[n] = head[i];
        n += 1;
        i += 1;
    }
    let mut b = 0;
    while b < blocks.len() {
        let mut j = 0;
        while j < 9 {
            out[n] = blocks[b][j];
            n += 1;
            j += 1;
        }
        b += 1;
    }
    let mut i = 0;
    while i < tail.len() {
        out[n] = tail[i];
        n += 1;
        i += 1;
    }
    assert!(n == 50);
    out
}

/// Every tensor of a voice file, in the documented order.
pub const TENSORS: [TensorSpec; 50] = tensors();

/// Total f32 values in a voice: 653,570 (2.6 MB on disk).
pub const VALUES: usize = {
    let mut n = 0;
    let mut i = 0;
    while i < TENSORS.len() {
        n += TENSORS[i].len();
        i += 1;
    }
    n
};

/// The spec named `name`, if a voice has such a tensor.
pub fn find(name: &str) -> Option<usize> {
    TENSORS.iter().position(|t| t.name == name)
}

// The index constants point at the tensors they name.
const _: () = {
    const fn same(a: &str, b: &str) -> bool {
        let (a, b) = (a.as_bytes(), b.as_bytes());
        if a.len() != b.len() {
            return false;
        }
        let mut i = 0;
        while i < a.len() {
            if a[i] != b[i] {
                return false;
            }
            i += 1;
        }
        true
    }
    assert!(same(TENSORS[index::PROJ].name, "proj.weight"));
    assert!(same(TENSORS[index::SPEAKER].name, "speaker"));
    assert!(same(TENSORS[index::NORM0_BIAS].name, "norm0.bias"));
    assert!(same(TENSORS[index::convnext(3)].name, "convnext.3.dw.weight"));
    assert!(same(TENSORS[index::convnext(3) + 8].name, "convnext.3.gamma"));
    assert!(same(TENSORS[index::NORM1].name, "norm1.weight"));
    assert!(same(TENSORS[index::HEAD_BIAS].name, "head.bias"));
};
