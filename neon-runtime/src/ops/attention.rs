//! Multi-head attention operator: [`Attention`] (scaled dot-product attention over a KV
//! cache; no projections, which are ordinary `linear` layers).
//!
//! Tensors, all frame-major, `channels = heads * head_dim`:
//! - argument 0, `q`: `[q_frames, channels]`;
//! - arguments 1 and 2, `k` and `v`: `[kv_frames, channels]`, of which the first `len`
//!   rows are used (`len` is a run-time value: the filled part of a KV cache of capacity
//!   `kv_frames`, or all of them);
//! - the output: `[q_frames, channels]`.
//!
//! `out = softmax(q k^T scale) v` per head, optionally causal (query `i` sees the keys
//! `j <= len - q_frames + i`: the queries are the last positions). Algorithm, numerics and
//! special values: [`crate::kernels::attention`].
//!
//! No weights, so the operator is its own geometry.

use crate::dim::Dim;
use crate::error::{Error, ShapeError};
use crate::kernels::attention::AttentionGeometry;
use crate::kernels::norm::sqrt_f32;
use crate::kernels::Backend;
use crate::ops::{
    expect_dim, expect_layout, expect_rank, expect_shape, head_dim, RunOptions, ShapeRule,
};
use crate::tensor::{Layout, Shape, TensorView, TensorViewMut};

const OP: &str = "attention";

/// Multi-head scaled dot-product attention (see the [module docs](self)).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Attention {
    /// Heads the channels split into (>= 1, divides the channels).
    pub heads: usize,
    /// Query `i` of `q_frames` sees only the keys `j <= len - q_frames + i` (needs
    /// `len >= q_frames`).
    pub causal: bool,
    /// Factor of the dot products; `None`: `1 / sqrt(head_dim)` (rounded to f32).
    pub scale: Option<f32>,
}

impl Attention {
    /// Checks the geometry alone (no input).
    ///
    /// # Errors
    /// [`ShapeError::Geometry`] for `heads == 0` or a scale that is not finite.
    pub fn validate<D>(&self) -> Result<(), ShapeError<D>> {
        if self.heads == 0 {
            return Err(ShapeError::Geometry { op: OP, reason: "heads must be >= 1" });
        }
        if self.scale.is_some_and(|s| !s.is_finite()) {
            return Err(ShapeError::Geometry { op: OP, reason: "scale must be finite" });
        }
        Ok(())
    }

    /// The factor of the dot products for heads of `head_dim` values: `scale`, or
    /// `1 / sqrt(head_dim)` (the f32 division of 1 by the correctly rounded square root).
    pub fn scale_for(&self, head_dim: usize) -> f32 {
        self.scale.unwrap_or_else(|| 1.0 / sqrt_f32(head_dim as f32))
    }

    /// `out = attention(q, k[..len], v[..len])`.
    ///
    /// # Errors
    /// [`Error::Shape`] for an invalid geometry, inputs the shape rule rejects or an
    /// output of another shape than `q` (argument 3); [`Error::Layout`] unless every view
    /// is frame-major; [`Error::OutOfRange`] (named `"len"`) unless
    /// `1 <= len <= kv_frames` (with `causal`: `q_frames <= len <= kv_frames`). Nothing is
    /// written on error.
    pub fn run<B: Backend>(
        &self,
        q: &TensorView<'_>,
        k: &TensorView<'_>,
        v: &TensorView<'_>,
        out: &mut TensorViewMut<'_>,
        len: usize,
    ) -> Result<(), Error> {
        self.run_with::<B>((q, k, v), out, len, RunOptions::new())
    }

    /// [`Attention::run`] with `options`: blocks of query rows and heads (a single query
    /// splits over its heads) run on `options.parallel()` (the same bits for any context).
    ///
    /// # Errors
    /// As [`Attention::run`], and the context's error ([`Error::Team`]) after the checks.
    pub fn run_with<B: Backend>(
        &self,
        (q, k, v): (&TensorView<'_>, &TensorView<'_>, &TensorView<'_>),
        out: &mut TensorViewMut<'_>,
        len: usize,
        options: RunOptions<'_>,
    ) -> Result<(), Error> {
        let shape = self.output_shape(&[*q.shape(), *k.shape(), *v.shape()])?;
        let fm = Layout::FrameMajor;
        for layout in [q.layout(), k.layout(), v.layout(), out.layout()] {
            expect_layout(OP, layout, fm, "frame-major tensor")?;
        }
        expect_shape(OP, 3, out.shape(), &shape)?;
        let (q_frames, channels) = (q.dims()[0], q.dims()[1]);
        let kv_frames = k.dims()[0];
        let min = if self.causal { q_frames } else { 1 };
        if len < min || len > kv_frames {
            return Err(Error::OutOfRange { name: "len", value: len, min, max: kv_frames });
        }
        let hd = channels / self.heads;
        let scale = self.scale_for(hd);
        let (qd, kd, vd) = (q.data(), k.data(), v.data());
        let g = AttentionGeometry {
            q_frames,
            len,
            heads: self.heads,
            head_dim: hd,
            scale,
            causal: self.causal,
        };
        B::attention_in(options.parallel(), (qd, kd, vd), out.data_mut(), g)
    }
}

impl ShapeRule for Attention {
    fn name(&self) -> &'static str {
        OP
    }
    fn arity(&self) -> usize {
        3
    }
    /// `(q [q_frames, C], k [kv_frames, C], v [kv_frames, C]) -> [q_frames, C]`.
    ///
    /// # Errors
    /// As [`Attention::validate`]; [`ShapeError::Geometry`] unless three inputs;
    /// [`ShapeError::Rank`] unless each has rank 2; [`ShapeError::Indivisible`] when `q`'s
    /// channels do not split into `heads`; [`ShapeError::Dim`] when `k` or `v` has other
    /// channels than `q`, or `v` other frames than `k`.
    fn output_shape<D: Dim>(&self, inputs: &[Shape<D>]) -> Result<Shape<D>, ShapeError<D>> {
        self.validate()?;
        let [q, k, v] = inputs else {
            return Err(ShapeError::Geometry { op: OP, reason: "attention takes q, k and v" });
        };
        for (arg, x) in [q, k, v].into_iter().enumerate() {
            expect_rank(OP, arg, x, &[2], "2")?;
        }
        head_dim(OP, 0, q, 1, self.heads)?;
        let c = &q.dims()[1];
        expect_dim(OP, 1, k, 1, "channels (as q)", c)?;
        expect_dim(OP, 2, v, 1, "channels (as q)", c)?;
        expect_dim(OP, 2, v, 0, "frames (as k)", &k.dims()[0])?;
        Ok(q.clone())
    }
    layout_facts!(Layout::FrameMajor);
}
