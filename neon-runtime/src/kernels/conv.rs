//! Conv kernels (stub: filled in by the conv family work).

use super::Portable;

/// Conv kernels.
pub trait ConvKernels {}

impl ConvKernels for Portable {}

#[cfg(all(target_arch = "aarch64", feature = "neon"))]
impl ConvKernels for super::Neon {}
