//! A voice as its file holds it: the 50 unfolded f32 tensors of [`TENSORS`], checked.
//!
//! [`Voice::load`] validates a parsed safetensors file (every documented name present with
//! dtype F32, its exact shape and finite values; no other tensor; an `architecture`
//! metadata entry, when present, must be [`ARCHITECTURE`]); [`Voice::to_safetensors`]
//! writes one with the documented names and metadata. Folding for the decoder happens in
//! [`super::load`].

use alloc::format;
use alloc::string::ToString;
use alloc::vec::Vec;

use safetensors::tensor::TensorView;
use safetensors::Dtype;

use super::names::{TensorSpec, TENSORS};
use crate::error::{Error, WeightsReason, WeightsSource};
use crate::weights::TensorFile;

/// The `architecture` metadata value of a sanoTTS nano voice file.
pub const ARCHITECTURE: &str = "sanotts-nano";

/// The 50 tensors of a voice, unfolded, in [`TENSORS`] order; every value finite.
#[derive(Clone, Debug, PartialEq)]
pub struct Voice {
    tensors: Vec<Vec<f32>>,
}

impl Voice {
    /// A voice from its tensors in [`TENSORS`] order, each row-major in its spec's shape.
    ///
    /// # Errors
    /// [`Error::Weights`] (source `source`) naming the first tensor with a wrong number of
    /// values ([`WeightsReason::Shape`]) or a non-finite value, or a wrong tensor count.
    pub fn from_tensors(tensors: Vec<Vec<f32>>, source: WeightsSource) -> Result<Self, Error> {
        if tensors.len() != TENSORS.len() {
            return Err(Error::Weights {
                source,
                tensor: "",
                reason: WeightsReason::Invalid(format!(
                    "{} tensors given, a voice has {}",
                    tensors.len(),
                    TENSORS.len()
                )),
            });
        }
        for (spec, values) in TENSORS.iter().zip(&tensors) {
            let fail =
                |reason| Error::Weights { source: source.clone(), tensor: spec.name, reason };
            if values.len() != spec.len() {
                return Err(fail(shape_reason(spec)));
            }
            if values.iter().any(|v| !v.is_finite()) {
                return Err(fail(WeightsReason::NotFinite));
            }
        }
        Ok(Self { tensors })
    }

    /// Reads and checks every tensor of a voice file: first the 50 documented ones in
    /// order (present, dtype F32, exact shape, finite), then that there is no other, then
    /// the `architecture` metadata entry if the file has one.
    ///
    /// # Errors
    /// [`Error::Weights`] naming the file and the first problem: a missing tensor, another
    /// dtype, another shape, a NaN or infinity; an unknown tensor
    /// ([`WeightsReason::Invalid`] naming it); an `architecture` other than
    /// [`ARCHITECTURE`] ([`WeightsReason::Architecture`]).
    pub fn load(file: &TensorFile<'_>) -> Result<Self, Error> {
        let tensors = TENSORS
            .iter()
            .map(|spec| file.f32(spec.name, spec.shape))
            .collect::<Result<Vec<_>, _>>()?;
        let mut names = file.names();
        names.sort_unstable();
        if let Some(unknown) = names.iter().find(|n| super::names::find(n).is_none()) {
            return Err(Error::Weights {
                source: file.source().clone(),
                tensor: "",
                reason: WeightsReason::Invalid(format!(
                    "unknown tensor `{}` (a sanoTTS nano voice has exactly the {} tensors \
                     of sanotts.md)",
                    unknown.escape_debug(),
                    TENSORS.len()
                )),
            });
        }
        match file.metadata("architecture") {
            Some(a) if a != ARCHITECTURE => Err(Error::Weights {
                source: file.source().clone(),
                tensor: "",
                reason: WeightsReason::Architecture,
            }),
            _ => Ok(Self { tensors }),
        }
    }

    /// Reads and checks a voice from safetensors bytes ([`Voice::load`]).
    ///
    /// # Errors
    /// [`Error::Weights`] with [`WeightsReason::Format`] when `bytes` are not a valid
    /// safetensors file (truncated, bad header), else as [`Voice::load`].
    pub fn from_bytes(bytes: &[u8], source: WeightsSource) -> Result<Self, Error> {
        Voice::load(&TensorFile::parse(bytes, source)?)
    }

    /// Tensor `i` of [`TENSORS`], row-major.
    ///
    /// # Panics
    /// When `i >= 50` (an index from [`super::names::index`] is expected).
    pub fn tensor(&self, i: usize) -> &[f32] {
        &self.tensors[i]
    }

    /// Every tensor, in [`TENSORS`] order.
    pub fn tensors(&self) -> &[Vec<f32>] {
        &self.tensors
    }

    /// The voice as a safetensors file: the documented names, dtype F32, shapes of
    /// [`TENSORS`], metadata `architecture` = [`ARCHITECTURE`] and the `extra` entries
    /// (e.g. where the voice came from).
    ///
    /// # Errors
    /// [`Error::Weights`] with [`WeightsReason::Format`] if the serialiser refuses a tensor
    /// (not expected: shapes and lengths agree by construction).
    pub fn to_safetensors(&self, extra: &[(&str, &str)]) -> Result<Vec<u8>, Error> {
        let fail = |tensor, e: safetensors::SafeTensorError| Error::Weights {
            source: WeightsSource::Embedded("voice being written"),
            tensor,
            reason: WeightsReason::Format(e.to_string()),
        };
        let bytes: Vec<Vec<u8>> =
            self.tensors.iter().map(|t| t.iter().flat_map(|v| v.to_le_bytes()).collect()).collect();
        let mut views = Vec::with_capacity(TENSORS.len());
        for (spec, data) in TENSORS.iter().zip(&bytes) {
            let view = TensorView::new(Dtype::F32, spec.shape.to_vec(), data)
                .map_err(|e| fail(spec.name, e))?;
            views.push((spec.name, view));
        }
        let metadata = core::iter::once(("architecture", ARCHITECTURE))
            .chain(extra.iter().copied())
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        safetensors::serialize(views, Some(metadata)).map_err(|e| fail("", e))
    }
}

/// The shape error of `spec`.
fn shape_reason(spec: &TensorSpec) -> WeightsReason {
    let mut expected = [0; 4];
    expected[..spec.shape.len()].copy_from_slice(spec.shape);
    WeightsReason::Shape { expected, rank: spec.shape.len() }
}
