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
        let fail = |reason| Error::Weights { source: self.source.clone(), tensor: name, reason };
        let view = self.tensors.tensor(name).map_err(|_| fail(WeightsReason::Missing))?;
        if view.dtype() != Dtype::F32 {
            return Err(fail(WeightsReason::Dtype));
        }
        if view.shape() != shape {
            let mut expected = [0; 4];
            let rank = shape.len().min(4);
            expected[..rank].copy_from_slice(&shape[..rank]);
            return Err(fail(WeightsReason::Shape { expected, rank }));
        }
        let values: Vec<f32> = view
            .data()
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect();
        if values.iter().any(|v| !v.is_finite()) {
            return Err(fail(WeightsReason::NotFinite));
        }
        Ok(values)
    }
}
