//! Elementwise kernels (stub: filled in by the elementwise family work).

use super::Portable;

/// Elementwise kernels.
pub trait ElementwiseKernels {}

impl ElementwiseKernels for Portable {}

#[cfg(all(target_arch = "aarch64", feature = "neon"))]
impl ElementwiseKernels for super::Neon {}
