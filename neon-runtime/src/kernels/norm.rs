//! Norm kernels (stub: filled in by the norm family work).

use super::Portable;

/// Norm kernels.
pub trait NormKernels {}

impl NormKernels for Portable {}

#[cfg(all(target_arch = "aarch64", feature = "neon"))]
impl NormKernels for super::Neon {}
