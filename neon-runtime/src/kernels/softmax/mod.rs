//! Softmax over the last axis of a row-major `[rows, cols]` tensor.
//!
//! Numerically stable: each row is shifted by its maximum before exponentiation
//! (`y[j] = exp(x[j] - m) / sum_k exp(x[k] - m)`, `m = max_k x[k]`), so no exponential
//! overflows and the largest term is exactly 1. The exponential is the one of the activation
//! kernels (`kernels/activation.rs`, max relative error ~1.5e-7); the row sum is accumulated in
//! 8 (portable, `softmax/portable.rs`) or 16 (NEON, `softmax/neon.rs`) independent f32
//! partial sums, and the row is scaled by the reciprocal of the sum. Error per element,
//! relative: a few eps for the exponential and the scaling, plus `|x[j] - m| * eps / 2` from
//! rounding the shifted argument, plus the summation error (`<= (cols / 8 + 4) eps / 2`
//! worst case; far less in practice). The x86 backend runs the portable code.
//!
//! # Special values
//! Rows are expected to be finite. `-inf` entries (masked logits) give exactly 0 as long as
//! the row has a finite entry; a row that contains NaN or `+inf`, or only `-inf`, comes out
//! as all NaN (like the f64 formula).

#[cfg(all(target_arch = "aarch64", feature = "neon"))]
mod neon;
mod portable;

use super::{BackendType, Portable, X86Isa, X86};

/// Softmax kernels.
///
/// Callers use the entry points [`softmax`](SoftmaxKernels::softmax) and
/// [`softmax_to`](SoftmaxKernels::softmax_to); backends override only the hook
/// [`softmax_row`](SoftmaxKernels::softmax_row), never an entry point.
pub trait SoftmaxKernels: BackendType {
    /// Softmax of every row of `x` (`[rows, cols]`, row-major), in place.
    ///
    /// # Panics
    /// When `x.len() != rows * cols`.
    fn softmax(x: &mut [f32], rows: usize, cols: usize) {
        check(x.len(), rows, cols);
        each_row::<Self>(x, cols);
    }

    /// Softmax of every row of `x` into `y` (both `[rows, cols]`, row-major).
    ///
    /// # Panics
    /// When `x.len()` or `y.len()` is not `rows * cols`.
    fn softmax_to(x: &[f32], y: &mut [f32], rows: usize, cols: usize) {
        check(x.len(), rows, cols);
        check(y.len(), rows, cols);
        y.copy_from_slice(x);
        each_row::<Self>(y, cols);
    }

    /// The hook of the entry points, called only by them, once per row (`cols >= 1`
    /// values): the softmax of `row` in place. The provided body is the portable kernel.
    fn softmax_row(row: &mut [f32]) {
        portable::row(row);
    }
}

/// Checks the kernel contract.
fn check(x_len: usize, rows: usize, cols: usize) {
    assert_eq!(rows.checked_mul(cols), Some(x_len), "softmax: data length is not rows * cols");
}

/// The hook on every row of `x` (`cols` values each; nothing when `cols = 0`).
#[inline(always)]
fn each_row<B: SoftmaxKernels>(x: &mut [f32], cols: usize) {
    if cols == 0 {
        return;
    }
    for row in x.chunks_exact_mut(cols) {
        B::softmax_row(row);
    }
}

impl SoftmaxKernels for Portable {}

impl<I: X86Isa> SoftmaxKernels for X86<I> {}
