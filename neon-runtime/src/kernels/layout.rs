//! Layout kernels (stub: filled in by the layout family work).

use super::Portable;

/// Layout kernels.
pub trait LayoutKernels {}

impl LayoutKernels for Portable {}

#[cfg(all(target_arch = "aarch64", feature = "neon"))]
impl LayoutKernels for super::Neon {}
