//! The portable im2col: the driver of [`conv2d`](super) over a slice copy and the scalar
//! strided gather of conv1d.

use super::{im2col_2d_with, Im2colOps, Window2d};
use crate::kernels::conv::gather_scalar;

/// The body of the provided [`Conv2dKernels::im2col_2d_unchecked`](super::Conv2dKernels)
/// hook (contract checked, sizes >= 1).
pub(super) fn im2col_2d(x: &[f32], w: Window2d, first: usize, count: usize, col: &mut [f32]) {
    let copy = |s: &[f32], d: &mut [f32]| d.copy_from_slice(s);
    im2col_2d_with(x, w, (first, count), col, Im2colOps { copy, gather: gather_scalar });
}
