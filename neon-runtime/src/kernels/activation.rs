//! Activation kernels (stub: filled in by the activation family work).

use super::Portable;

/// Activation kernels.
pub trait ActivationKernels {}

impl ActivationKernels for Portable {}

#[cfg(all(target_arch = "aarch64", feature = "neon"))]
impl ActivationKernels for super::Neon {}
