//! Softmax kernels (stub: filled in by the softmax family work).

use super::Portable;

/// Softmax kernels.
pub trait SoftmaxKernels {}

impl SoftmaxKernels for Portable {}

#[cfg(all(target_arch = "aarch64", feature = "neon"))]
impl SoftmaxKernels for super::Neon {}
