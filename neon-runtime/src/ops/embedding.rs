//! Embedding lookups: token ids (an [`IndexView`]) → frame-major vectors `[tokens, dim]`.
//!
//! - [`Embedding`]: an f32 table `[vocab, dim]`.
//! - [`QuantLinear::embed`]: the rows of a per-tensor int8 linear layer's weights
//!   `[out_features = vocab, in_features = dim]`, dequantised. This is a *tied* embedding:
//!   one int8 table serves as both the input embedding and the LM head (Moonshine,
//!   Press & Wolf 2017), so the weights are stored once.

#[cfg(feature = "alloc")]
use alloc::vec::Vec;

use super::quant::QuantLinear;
use crate::error::{Error, ShapeError};
use crate::kernels::quant::dequantize_row;
use crate::tensor::{IndexView, Layout, TensorViewMut};

const OP: &str = "embedding";

/// Checks `ids` (rank 1, every id in `0..vocab`) and `output` (frame-major
/// `[ids, dim]`), so the lookups that follow cannot fail.
fn check(ids: &IndexView, output: &TensorViewMut, vocab: usize, dim: usize) -> Result<(), Error> {
    if ids.shape().rank() != 1 {
        let got = ids.shape().rank();
        return Err(ShapeError::Rank { op: OP, arg: 0, expected: "1", got }.into());
    }
    for &id in ids.data() {
        let row =
            usize::try_from(id).map_err(|_| Error::BadShape { reason: "negative token id" })?;
        if row >= vocab {
            return Err(Error::OutOfRange { name: "token id", value: row, min: 0, max: vocab - 1 });
        }
    }
    let want = [ids.data().len(), dim];
    if output.dims() != want {
        return Err(Error::Length {
            what: "embedding output",
            expected: want[0] * want[1],
            got: output.data().len(),
        });
    }
    if output.layout() != Layout::FrameMajor {
        return Err(Error::Layout { op: OP, expected: "frame-major [tokens, dim]" });
    }
    Ok(())
}

/// The geometry of an [`Embedding`]: the table's `[vocab, dim]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EmbeddingGeometry {
    /// Tokens in the table (>= 1).
    pub vocab: usize,
    /// Values per token (>= 1).
    pub dim: usize,
}

impl EmbeddingGeometry {
    /// Values of the table, `vocab * dim`.
    ///
    /// # Errors
    /// [`Error::BadShape`] for a zero `vocab` or `dim`, or a table too large for `usize`.
    fn table_len(&self) -> Result<usize, Error> {
        if self.vocab == 0 || self.dim == 0 {
            return Err(Error::BadShape { reason: "embedding vocab and dim must be >= 1" });
        }
        self.vocab
            .checked_mul(self.dim)
            .ok_or(Error::BadShape { reason: "embedding table too large" })
    }
}

/// An f32 embedding table `[vocab, dim]` (row `i` is token `i`'s vector).
///
/// `S` stores the table (`Vec<f32>` with feature `alloc`, `&'static [f32]` on firmware).
#[derive(Clone, Debug)]
pub struct Embedding<S> {
    geometry: EmbeddingGeometry,
    table: S,
}

impl<S: AsRef<[f32]>> Embedding<S> {
    /// Wraps a row-major table `[vocab, dim]` (the lookup's layout: nothing to pack).
    ///
    /// # Errors
    /// [`Error::BadShape`] for a zero `vocab` or `dim`; [`Error::Length`] when the table
    /// does not hold `vocab * dim` values.
    pub fn from_packed(geometry: EmbeddingGeometry, table: S) -> Result<Self, Error> {
        let expected = geometry.table_len()?;
        let got = table.as_ref().len();
        if got != expected {
            return Err(Error::Length { what: "embedding table", expected, got });
        }
        Ok(Self { geometry, table })
    }

    /// The geometry, `[vocab, dim]`.
    pub fn geometry(&self) -> EmbeddingGeometry {
        self.geometry
    }

    /// The table, `[vocab, dim]` row-major.
    pub fn packed_weight(&self) -> &[f32] {
        self.table.as_ref()
    }

    /// Copies the rows of `ids` (rank 1, `[tokens]`) into `output` (frame-major
    /// `[tokens, dim]`).
    ///
    /// # Errors
    /// Checked before anything is written: [`Error::Shape`] for `ids` not of rank 1;
    /// [`Error::BadShape`] for a negative id; [`Error::OutOfRange`] for an id `>= vocab`;
    /// [`Error::Length`] / [`Error::Layout`] for an output that is not frame-major
    /// `[tokens, dim]`.
    pub fn run(&self, ids: &IndexView, output: &mut TensorViewMut) -> Result<(), Error> {
        let EmbeddingGeometry { vocab, dim } = self.geometry;
        check(ids, output, vocab, dim)?;
        let table = self.table.as_ref();
        for (&id, out) in ids.data().iter().zip(output.data_mut().chunks_exact_mut(dim)) {
            let row = id as usize; // validated non-negative and < vocab
            out.copy_from_slice(&table[row * dim..(row + 1) * dim]);
        }
        Ok(())
    }
}

#[cfg(feature = "alloc")]
impl Embedding<Vec<f32>> {
    /// Takes a table `[vocab, dim]` by value.
    ///
    /// # Errors
    /// As [`Embedding::from_packed`].
    pub fn new(geometry: EmbeddingGeometry, table: Vec<f32>) -> Result<Self, Error> {
        Self::from_packed(geometry, table)
    }

    /// Copies a borrowed table `[vocab, dim]`.
    ///
    /// # Errors
    /// As [`Embedding::from_packed`].
    pub fn from_slice(geometry: EmbeddingGeometry, table: &[f32]) -> Result<Self, Error> {
        geometry.table_len()?;
        Self::from_packed(geometry, table.to_vec())
    }
}

impl<Q: AsRef<[i8]>, S: AsRef<[f32]>> QuantLinear<Q, S> {
    /// Tied embedding lookup: row `id` of the weights `W = q * scale + offset`
    /// (`[out_features, in_features]`) for each of `ids` (rank 1, `[tokens]`, each in
    /// `0..out_features`), into `output` (frame-major `[tokens, in_features]`). The bias is
    /// not used. Each value is `f32(q) * scale + offset` (two roundings).
    ///
    /// # Errors
    /// As [`Embedding::run`], with `vocab = out_features`, `dim = in_features`.
    pub fn embed(&self, ids: &IndexView, output: &mut TensorViewMut) -> Result<(), Error> {
        let g = self.geometry();
        let (vocab, dim) = (g.out_features, g.in_features);
        check(ids, output, vocab, dim)?;
        let (w, scale, offset) = (self.packed_weight(), self.scale(), self.offset());
        for (&id, out) in ids.data().iter().zip(output.data_mut().chunks_exact_mut(dim)) {
            dequantize_row(w, vocab, dim, id as usize, scale, offset, out);
        }
        Ok(())
    }
}

#[cfg(all(test, feature = "alloc"))]
mod tests {
    use super::*;
    use crate::ops::quant::QuantLinearGeometry;
    use alloc::vec;

    fn out(buf: &mut [f32], rows: usize, dim: usize) -> TensorViewMut<'_> {
        TensorViewMut::new(buf, &[rows, dim], Layout::FrameMajor).unwrap()
    }

    #[test]
    fn f32_rows_in_id_order() {
        let table: Vec<f32> = (0..12).map(|i| i as f32).collect(); // [4, 3]
        let e = Embedding::from_slice(EmbeddingGeometry { vocab: 4, dim: 3 }, &table).unwrap();
        let ids = [3, 0, 3];
        let mut buf = vec![0.0; 9];
        e.run(&IndexView::new(&ids, &[3]).unwrap(), &mut out(&mut buf, 3, 3)).unwrap();
        assert_eq!(buf, [9.0, 10.0, 11.0, 0.0, 1.0, 2.0, 9.0, 10.0, 11.0]);
    }

    /// Tied lookup against an f64 dequantisation of the unpacked weights, for odd sizes
    /// (packing pads outputs to 16 and inputs to 4). Tolerance: `f32(q) * scale + offset`
    /// has two roundings, each at most half an ulp of a value <= `128 |scale| + |offset|`.
    #[test]
    fn tied_rows_match_dequantised_weights() {
        for (n, k) in [(1, 1), (5, 3), (17, 7), (33, 13), (40, 416)] {
            let q: Vec<i8> =
                (0..n * k).map(|i| ((i * 37 + 11) % 256) as i32 - 128).map(|v| v as i8).collect();
            let (scale, offset) = (0.0123f32, -0.0123f32 * 17.0);
            let g = QuantLinearGeometry { in_features: k, out_features: n, bias: false };
            let op = QuantLinear::new(g, q.clone(), scale, offset, None).unwrap();
            let ids: Vec<i32> = (0..n as i32).rev().collect();
            let mut buf = vec![0.0; n * k];
            op.embed(&IndexView::new(&ids, &[n]).unwrap(), &mut out(&mut buf, n, k)).unwrap();
            let bound = (128.0 * scale.abs() + offset.abs()) as f64 * f64::from(f32::EPSILON);
            for (t, &id) in ids.iter().enumerate() {
                for kk in 0..k {
                    let want =
                        f64::from(q[id as usize * k + kk]) * f64::from(scale) + f64::from(offset);
                    let got = f64::from(buf[t * k + kk]);
                    assert!(
                        (got - want).abs() <= bound,
                        "n {n} k {k} id {id} kk {kk}: {got} vs {want}"
                    );
                }
            }
        }
    }

    #[test]
    fn bad_ids_and_outputs_are_errors_before_writing() {
        let g = QuantLinearGeometry { in_features: 4, out_features: 8, bias: false };
        let op = QuantLinear::new(g, vec![1; 8 * 4], 1.0, 0.0, None).unwrap();
        let mut buf = vec![7.0; 8];
        let cases: [(&[i32], Error); 2] = [
            (&[1, 8], Error::OutOfRange { name: "token id", value: 8, min: 0, max: 7 }),
            (&[-1, 0], Error::BadShape { reason: "negative token id" }),
        ];
        for (ids, err) in cases {
            let r = op.embed(&IndexView::new(ids, &[2]).unwrap(), &mut out(&mut buf, 2, 4));
            assert_eq!(r, Err(err));
            assert!(buf.iter().all(|&v| v == 7.0));
        }
        let r = op.embed(&IndexView::new(&[0], &[1]).unwrap(), &mut out(&mut buf, 2, 4));
        assert!(matches!(r, Err(Error::Length { .. })));
        let mut cf = TensorViewMut::new(&mut buf[..4], &[1, 4], Layout::ChannelFirst).unwrap();
        let r = op.embed(&IndexView::new(&[0], &[1]).unwrap(), &mut cf);
        assert!(matches!(r, Err(Error::Layout { .. })));
        let ids2 = [0, 1];
        let r = op.embed(&IndexView::new(&ids2, &[1, 2]).unwrap(), &mut out(&mut buf, 2, 4));
        assert!(matches!(r, Err(Error::Shape(_))));
    }
}
