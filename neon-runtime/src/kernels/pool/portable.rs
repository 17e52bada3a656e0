//! The portable max pooling: one scalar window maximum per output (the IEEE `maximum` of
//! the GEMM's epilogue, [`fmax`]). The only kernel off aarch64 and x86-64, and the x86
//! backend's for windows its vector kernels do not take.

use super::PoolGeometry;
use crate::kernels::gemm::fmax;

/// The window maximum of output `(oh, ow)` of one channel plane `xc`.
#[inline(always)]
fn window_max(xc: &[f32], g: &PoolGeometry, oh: usize, ow: usize) -> f32 {
    let ((kh, kw), (sh, sw)) = (g.kernel, g.stride);
    let base = oh * sh * g.width + ow * sw;
    let mut m = xc[base];
    for i in 0..kh {
        for &v in &xc[base + i * g.width..][..kw] {
            m = fmax(m, v);
        }
    }
    m
}

/// Every output of every channel plane, over a geometry the entry point accepted.
pub(crate) fn max_pool2d(x: &[f32], g: PoolGeometry, y: &mut [f32]) {
    let (oh_n, ow_n) = g.out_dims();
    for (xc, yc) in x.chunks_exact(g.height * g.width).zip(y.chunks_exact_mut(oh_n * ow_n)) {
        for (oh, yr) in yc.chunks_exact_mut(ow_n).enumerate() {
            for (ow, v) in yr.iter_mut().enumerate() {
                *v = window_max(xc, &g, oh, ow);
            }
        }
    }
}
