//! The NEON max pooling: blocks of 4 outputs in registers. `kernel_w = stride_w = 2`
//! (openWakeWord's 2x2/2 and 1x2/(1,2) pools) loads each input row with one
//! de-interleaving `ld2` (the even and odd columns, the two taps of 4 windows) and needs
//! `kernel_h` loads and `2 * kernel_h - 1` `fmax` per 4 outputs; a 1x2/(1,2) pool over an
//! even width is one flat pass over the whole tensor (every input pair is an output, across
//! rows and channels: no per-row overhead however narrow the image); so is a 2x2/2 pool
//! whose row pairs tile every plane with a multiple of 4 outputs per row; windows spanning
//! whole rows (`out_width = 1`, `kernel_w = width`) are a vector maximum over contiguous
//! rows; `stride_w = 1` loads each tap with `ld1`; other strides and the last
//! `out_width % 4` outputs of each row are scalar.

use super::{PoolGeometry, PoolKernels};
use crate::kernels::Neon;
use core::arch::aarch64::*;

/// `max(a, b)` with NEON `fmax` (NaN propagates; the portable `fmax` mirrors it).
#[inline(always)]
fn fmax1(a: f32, b: f32) -> f32 {
    // SAFETY: register-only NEON arithmetic (NEON is part of the aarch64 baseline).
    unsafe { vget_lane_f32::<0>(vmax_f32(vdup_n_f32(a), vdup_n_f32(b))) }
}

/// `y[f] = max(x[2f], x[2f + 1])` for every `f < y.len()` (`x.len() == 2 * y.len()`):
/// a 1x2 / (1, 2) pool over an even width is this over the whole tensor. 16 outputs per
/// step (4 `ld2`, 4 `fmax`, one 4-register store), then 4, then scalars.
fn pairs(x: &[f32], y: &mut [f32]) {
    assert_eq!(x.len(), 2 * y.len(), "pairs: lengths");
    let n = y.len();
    let (xp, yp) = (x.as_ptr(), y.as_mut_ptr());
    let mut f = 0;
    // SAFETY: each step reads x[2f .. 2f + 2w] and writes y[f .. f + w] with f + w <= n
    // and 2n = x.len().
    unsafe {
        while f + 16 <= n {
            let p = xp.add(2 * f);
            let (a, b, c, d) =
                (vld2q_f32(p), vld2q_f32(p.add(8)), vld2q_f32(p.add(16)), vld2q_f32(p.add(24)));
            let m = float32x4x4_t(
                vmaxq_f32(a.0, a.1),
                vmaxq_f32(b.0, b.1),
                vmaxq_f32(c.0, c.1),
                vmaxq_f32(d.0, d.1),
            );
            vst1q_f32_x4(yp.add(f), m);
            f += 16;
        }
        while f + 4 <= n {
            let v = vld2q_f32(xp.add(2 * f));
            vst1q_f32(yp.add(f), vmaxq_f32(v.0, v.1));
            f += 4;
        }
    }
    for (v, p) in y[f..].iter_mut().zip(x[2 * f..].chunks_exact(2)) {
        *v = fmax1(p[0], p[1]);
    }
}

/// `blocks` blocks of 4 outputs of `kh x 2` windows at column stride 2 whose top rows
/// start at `p` (window rows `width` apart) into `q`: per block `kh` `ld2` (the even and
/// odd columns, the two taps of 4 windows) and `2 kh - 1` `fmax`, the pointers bumped per
/// block (LLVM then post-increments the loads). Returns the pointers past the blocks.
///
/// # Safety
/// Rows `p + i * width` (`i < kh`) readable for `8 * blocks` values, `q` writable for `4 *
/// blocks`.
#[inline(always)]
unsafe fn two_wide(
    mut p: *const f32,
    width: usize,
    kh: usize,
    mut q: *mut f32,
    blocks: usize,
) -> (*const f32, *mut f32) {
    // SAFETY: contract.
    unsafe {
        for _ in 0..blocks {
            let v = vld2q_f32(p);
            let mut m = vmaxq_f32(v.0, v.1);
            for i in 1..kh {
                let v = vld2q_f32(p.add(i * width));
                m = vmaxq_f32(m, vmaxq_f32(v.0, v.1));
            }
            vst1q_f32(q, m);
            (p, q) = (p.add(8), q.add(4));
        }
    }
    (p, q)
}

/// Non-overlapping `KH x 2` windows with stride `(KH, 2)` over whole row groups: `x`
/// is a sequence of groups of `KH` rows of `width` (even) values, each giving
/// `width / 2` outputs (a multiple of 4) in `y`. One flat loop over every group of every
/// channel (no per-row set-up): per 4 outputs, `KH` `ld2` and `2 KH - 1` `fmax`.
fn row_groups<const KH: usize>(x: &[f32], width: usize, y: &mut [f32]) {
    let ow_n = width / 2;
    assert!(KH >= 1 && ow_n.is_multiple_of(4) && x.len() * ow_n == y.len() * KH * width);
    let (mut p, mut q) = (x.as_ptr(), y.as_mut_ptr());
    // SAFETY: group g reads x[g * KH * width ..][..KH * width] (each `ld2` 8 values of
    // one row, 2 * ow + 8 <= width) and writes y[g * ow_n ..][..ow_n]; there are
    // y.len() / ow_n = x.len() / (KH * width) groups (asserted).
    unsafe {
        for _ in 0..y.len() / ow_n {
            (p, q) = two_wide(p, width, KH, q, ow_n / 4);
            p = p.add((KH - 1) * width);
        }
    }
}

/// The maximum of `x` (non-empty): 4-value vectors (`fmax`, the last one overlapping)
/// reduced with `fmaxv` (NaN propagates), or scalars below 4 values.
fn max_of(x: &[f32]) -> f32 {
    let n = x.len();
    if n < 4 {
        return x[1..].iter().fold(x[0], |m, &v| fmax1(m, v));
    }
    let p = x.as_ptr();
    // SAFETY: every load reads 4 values at offsets i <= n - 4.
    unsafe {
        let mut m = vld1q_f32(p);
        let mut i = 4;
        while i + 4 <= n {
            m = vmaxq_f32(m, vld1q_f32(p.add(i)));
            i += 4;
        }
        if i < n {
            m = vmaxq_f32(m, vld1q_f32(p.add(n - 4)));
        }
        vmaxvq_f32(m)
    }
}

/// One output row of one channel plane `xc` (`width` columns): blocks of 4 outputs in
/// registers (`kw = sw = 2`: one `ld2` per window row; `sw = 1`: one `ld1` per tap),
/// the rest (other strides, the last `out_width % 4`) scalar. `KH` is the kernel
/// height when known at compile time (0: `g.kernel.0`), so the window-row loop unrolls.
#[inline(always)]
fn pool_row<const KH: usize>(xc: &[f32], g: &PoolGeometry, oh: usize, yr: &mut [f32]) {
    let (width, (kh, kw), (sh, sw)) = (g.width, g.kernel, g.stride);
    let kh = if KH == 0 { kh } else { KH };
    let ow_n = yr.len();
    let top = oh * sh * width;
    // Every window row read below lies inside the plane.
    assert!(top + kh * width <= xc.len(), "pool_row: rows");
    let (xp, yp) = (xc.as_ptr(), yr.as_mut_ptr());
    let mut ow = 0;
    // SAFETY (both loops): rows top + i * width (i < kh) are inside `xc` (asserted);
    // the columns read are inside the row (see each loop), and the store writes
    // yr[ow .. ow + 4] with ow + 4 <= ow_n.
    unsafe {
        if (kw, sw) == (2, 2) {
            // Columns 2 ow .. 2 ow + 8 <= 2 ow_n <= width (ow_n = floor(width / 2)).
            two_wide(xp.add(top), width, kh, yp, ow_n / 4);
            ow = ow_n / 4 * 4;
        } else if sw == 1 {
            // Columns ow + j .. ow + j + 4 <= ow_n + kw - 1 = width.
            while ow + 4 <= ow_n {
                let p = xp.add(top + ow);
                let mut m = vld1q_f32(p);
                for i in 0..kh {
                    for j in 0..kw {
                        m = vmaxq_f32(m, vld1q_f32(p.add(i * width + j)));
                    }
                }
                vst1q_f32(yp.add(ow), m);
                ow += 4;
            }
        }
    }
    for (o, v) in yr.iter_mut().enumerate().skip(ow) {
        let base = top + o * sw;
        let mut m = xc[base];
        for i in 0..kh {
            for &t in &xc[base + i * width..][..kw] {
                m = fmax1(m, t);
            }
        }
        *v = m;
    }
}

/// Every output row of every channel plane through [`pool_row`] with `KH`.
fn planes<const KH: usize>(x: &[f32], g: &PoolGeometry, y: &mut [f32]) {
    let (oh_n, ow_n) = g.out_dims();
    for (xc, yc) in x.chunks_exact(g.height * g.width).zip(y.chunks_exact_mut(oh_n * ow_n)) {
        for (oh, yr) in yc.chunks_exact_mut(ow_n).enumerate() {
            pool_row::<KH>(xc, g, oh, yr);
        }
    }
}

impl PoolKernels for Neon {
    unsafe fn max_pool2d_unchecked(x: &[f32], g: PoolGeometry, y: &mut [f32]) {
        let (oh_n, ow_n) = g.out_dims();
        let (height, width, kernel, stride) = (g.height, g.width, g.kernel, g.stride);
        if (kernel, stride) == ((1, 2), (1, 2)) && width.is_multiple_of(2) {
            // Every input pair is one output, across rows and channels.
            return pairs(x, y);
        }
        let (kh, kw) = kernel;
        if (kw, stride) == (2, (kh, 2))
            && width.is_multiple_of(2)
            && height.is_multiple_of(kh)
            && ow_n.is_multiple_of(4)
        {
            // Row groups tile every plane exactly: one flat pass (2x2/2 pools).
            match kh {
                1 => row_groups::<1>(x, width, y),
                2 => row_groups::<2>(x, width, y),
                _ => planes::<0>(x, &g, y),
            }
            return;
        }
        if ow_n == 1 && kw == width {
            // Each window spans whole rows: output oh is the maximum of the contiguous
            // rows oh * sh .. oh * sh + kh (openWakeWord's last pool, 6x2 -> 3x1).
            let span = kh * width;
            for (xc, yc) in x.chunks_exact(height * width).zip(y.chunks_exact_mut(oh_n)) {
                for (oh, v) in yc.iter_mut().enumerate() {
                    *v = max_of(&xc[oh * stride.0 * width..][..span]);
                }
            }
            return;
        }
        // The kernel height is a compile-time constant inside (one indirect call per pool).
        let rows = match kh {
            1 => planes::<1>,
            2 => planes::<2>,
            3 => planes::<3>,
            _ => planes::<0>,
        };
        rows(x, &g, y);
    }
}
