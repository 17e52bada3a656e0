//! Reading f32 tensors from safetensors data (feature `alloc`), with the checks every model
//! loader needs: presence, dtype, exact shape, finite values. The first mismatch is
//! reported with the file and tensor name; a corrupt file is an error, never a panic.

use alloc::string::ToString;
use alloc::vec::Vec;

use safetensors::{Dtype, SafeTensors};

use crate::error::{Error, WeightsReason, WeightsSource};

/// A parsed safetensors file (borrowing its bytes) and where it came from.
pub struct TensorFile<'a> {
    tensors: SafeTensors<'a>,
    metadata: Option<safetensors::tensor::Metadata>,
    source: WeightsSource,
}

impl<'a> TensorFile<'a> {
    /// Parses the header of `bytes` (a safetensors file: 8-byte little-endian header
    /// length, JSON header, data).
    ///
    /// # Errors
    /// [`Error::Weights`] with [`WeightsReason::Format`] when the header or offsets are
    /// invalid.
    pub fn parse(bytes: &'a [u8], source: WeightsSource) -> Result<Self, Error> {
        let format = |e: safetensors::SafeTensorError| Error::Weights {
            source: source.clone(),
            tensor: "",
            reason: WeightsReason::Format(e.to_string()),
        };
        let tensors = SafeTensors::deserialize(bytes).map_err(format)?;
        let (_, metadata) = SafeTensors::read_metadata(bytes).map_err(format)?;
        Ok(Self { tensors, metadata: Some(metadata), source })
    }

    /// Where the file came from.
    pub fn source(&self) -> &WeightsSource {
        &self.source
    }

    /// The value of a `__metadata__` entry, if present.
    pub fn metadata(&self, key: &str) -> Option<&str> {
        self.metadata.as_ref()?.metadata().as_ref()?.get(key).map(|s| s.as_str())
    }

    /// The names of every tensor in the file (in no particular order).
    pub fn names(&self) -> Vec<&str> {
        self.tensors.names()
    }

    /// Whether a tensor named `name` exists.
    pub fn contains(&self, name: &str) -> bool {
        self.tensors.tensor(name).is_ok()
    }

    /// The shape of tensor `name`, if present.
    pub fn shape(&self, name: &str) -> Option<Vec<usize>> {
        self.tensors.tensor(name).ok().map(|v| v.shape().to_vec())
    }

    /// The f32 tensor `name`, which must have exactly `shape`, copied out (the file's
    /// bytes need not be aligned).
    ///
    /// # Errors
    /// [`Error::Weights`]: missing ([`WeightsReason::Missing`]), another dtype
    /// ([`WeightsReason::Dtype`]), another shape ([`WeightsReason::Shape`]) or a
    /// non-finite value ([`WeightsReason::NotFinite`]).
    pub fn f32(&self, name: &'static str, shape: &[usize]) -> Result<Vec<f32>, Error> {
        let data = self.raw(name, Dtype::F32, shape)?;
        let values: Vec<f32> =
            data.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect();
        if values.iter().any(|v| !v.is_finite()) {
            return Err(self.fail(name, WeightsReason::NotFinite));
        }
        Ok(values)
    }

    /// The int8 tensor `name`, which must have exactly `shape`, copied out.
    ///
    /// # Errors
    /// [`Error::Weights`]: missing, another dtype or another shape (as [`TensorFile::f32`]).
    pub fn i8(&self, name: &'static str, shape: &[usize]) -> Result<Vec<i8>, Error> {
        let data = self.raw(name, Dtype::I8, shape)?;
        Ok(data.iter().map(|&b| b as i8).collect())
    }

    /// A per-tensor int8 weight as converters write it: the int8 tensor `name` of `shape`
    /// and its f32 companions `{name}.scale` and `{name}.offset` of shape `[1]`, standing
    /// for `W = f32(q) * scale + offset`.
    ///
    /// `names` gives the three names (`[name, scale, offset]`): they are `'static` so
    /// errors can name them.
    ///
    /// # Errors
    /// As [`TensorFile::i8`] and [`TensorFile::f32`] for each of the three tensors.
    pub fn quant(&self, names: [&'static str; 3], shape: &[usize]) -> Result<QuantTensor, Error> {
        let q = self.i8(names[0], shape)?;
        let scale = self.f32(names[1], &[1])?[0];
        let offset = self.f32(names[2], &[1])?[0];
        Ok(QuantTensor { q, scale, offset })
    }

    fn fail(&self, name: &'static str, reason: WeightsReason) -> Error {
        Error::Weights { source: self.source.clone(), tensor: name, reason }
    }

    /// The bytes of tensor `name` after checking presence, dtype and shape.
    fn raw(&self, name: &'static str, dtype: Dtype, shape: &[usize]) -> Result<&[u8], Error> {
        let view =
            self.tensors.tensor(name).map_err(|_| self.fail(name, WeightsReason::Missing))?;
        if view.dtype() != dtype {
            let expected = if dtype == Dtype::I8 { "I8" } else { "F32" };
            return Err(self.fail(name, WeightsReason::Dtype(expected)));
        }
        if view.shape() != shape {
            let mut expected = [0; 4];
            let rank = shape.len().min(4);
            expected[..rank].copy_from_slice(&shape[..rank]);
            return Err(self.fail(name, WeightsReason::Shape { expected, rank }));
        }
        Ok(view.data())
    }
}

/// A per-tensor int8 weight: `W = f32(q) * scale + offset` (the shipped Moonshine form).
#[derive(Clone, Debug, PartialEq)]
pub struct QuantTensor {
    /// The int8 values, in the file's order.
    pub q: Vec<i8>,
    /// The per-tensor scale.
    pub scale: f32,
    /// The per-tensor offset.
    pub offset: f32,
}

impl QuantTensor {
    /// The f32 weights, each computed as `f32(q) * scale + offset` in f32 (two roundings,
    /// as ONNX Runtime evaluates the shipped graph's dequantisation).
    pub fn dequantize(&self) -> Vec<f32> {
        self.q.iter().map(|&q| f32::from(q) * self.scale + self.offset).collect()
    }
}
