//! NEON conv hooks: the strided gather of the im2col rows (also used by the conv2d im2col),
//! the frame-major im2col blocks as 4x4 register transposes, and the depthwise rows with
//! every tap accumulated in registers. The stride is a compile-time constant inside each
//! kernel (1, 2, 3, or 0 for any other stride, chosen once per call).

use super::{depthwise_row_with, gather_scalar, im2col_fm_with, ConvKernels, Win, Window1d};
use crate::kernels::Neon;
use core::arch::aarch64::*;
use core::ops::Range;

/// Loads `[p[0], p[s], p[2s], p[3s]]` for the stride `s` (`S` when non-zero, else
/// `stride`): `vld1q` for 1, the first register of `vld2q`/`vld3q` for 2 and 3.
///
/// # Safety
/// `p .. p + 4 * s` must be readable (the de-interleaving loads read whole groups).
#[inline(always)]
unsafe fn load4<const S: usize>(p: *const f32, stride: usize) -> float32x4_t {
    let s = if S == 0 { stride } else { S };
    // SAFETY: the caller guarantees `4 * s` readable elements from `p`; every branch
    // reads at most that many (vld1q: 4, vld2q: 8, vld3q: 12, lanes: 3 * s + 1).
    unsafe {
        match s {
            1 => vld1q_f32(p),
            2 => vld2q_f32(p).0,
            3 => vld3q_f32(p).0,
            _ => {
                let lanes = [*p, *p.add(s), *p.add(2 * s), *p.add(3 * s)];
                vld1q_f32(lanes.as_ptr())
            }
        }
    }
}

/// Strided gather `dst[j] = src[j * stride]`: a copy for stride 1, de-interleaving
/// loads for stride 2 and 3, scalar otherwise.
#[inline(always)]
pub(in crate::kernels) fn gather(src: &[f32], stride: usize, dst: &mut [f32]) {
    if stride != 2 && stride != 3 {
        return gather_scalar(src, stride, dst);
    }
    let mut j = 0;
    while j + 4 <= dst.len() && (j + 4) * stride <= src.len() {
        // SAFETY: `(j + 4) * stride <= src.len()`: the load reads
        // `src[j * stride .. (j + 4) * stride]`; `j + 4 <= dst.len()` bounds the store
        // of 4 values at `dst[j]`.
        unsafe {
            let p = src.as_ptr().add(j * stride);
            let v = if stride == 2 { vld2q_f32(p).0 } else { vld3q_f32(p).0 };
            vst1q_f32(dst.as_mut_ptr().add(j), v);
        }
        j += 4;
    }
    for (d, s) in dst[j..].iter_mut().zip(src[j * stride..].iter().step_by(stride)) {
        *d = *s;
    }
}

/// 4x4 transpose: rows `a, b, c, d` in, columns out.
#[inline(always)]
fn transpose4(a: float32x4_t, b: float32x4_t, c: float32x4_t, d: float32x4_t) -> [float32x4_t; 4] {
    // SAFETY: register-only NEON operations (NEON is mandatory on aarch64).
    unsafe {
        let ab0 = vreinterpretq_f64_f32(vtrn1q_f32(a, b)); // a0 b0 a2 b2
        let ab1 = vreinterpretq_f64_f32(vtrn2q_f32(a, b)); // a1 b1 a3 b3
        let cd0 = vreinterpretq_f64_f32(vtrn1q_f32(c, d)); // c0 d0 c2 d2
        let cd1 = vreinterpretq_f64_f32(vtrn2q_f32(c, d)); // c1 d1 c3 d3
        [
            vreinterpretq_f32_f64(vtrn1q_f64(ab0, cd0)), // a0 b0 c0 d0
            vreinterpretq_f32_f64(vtrn1q_f64(ab1, cd1)), // a1 b1 c1 d1
            vreinterpretq_f32_f64(vtrn2q_f64(ab0, cd0)), // a2 b2 c2 d2
            vreinterpretq_f32_f64(vtrn2q_f64(ab1, cd1)), // a3 b3 c3 d3
        ]
    }
}

#[inline(always)]
fn vdup_zero() -> float32x4_t {
    // SAFETY: register-only NEON operation.
    unsafe { vdupq_n_f32(0.0) }
}

/// Frame-major im2col: each interior block of 4 output frames is built as 4x4
/// transposes of 4 reduction rows (`r = c * kernel + t`) at a time, loaded through the
/// offset table of [`im2col_fm_with`]; edge frames and the tail are scalar rows.
fn im2col_fm<const S: usize>(x: &[f32], w: Win, col: &mut [f32]) {
    let stride = if S == 0 { w.stride } else { S };
    let rows = w.channels * w.kernel;
    im2col_fm_with(x, w, col, |offs, base, out| {
        let full = offs.len() & !3;
        for (rb, o4) in offs[..full].chunks_exact(4).enumerate() {
            let mut v = [vdup_zero(); 4];
            for (reg, &o) in v.iter_mut().zip(o4) {
                let off = base + o;
                debug_assert!(off / w.ldx < w.channels);
                debug_assert!(off % w.ldx + 4 * stride <= w.x0 + w.frames);
                // SAFETY: `o = c * ldx + t * dilation` for a reduction row r = c *
                // kernel + t < rows, so c < channels, and the interior condition of
                // `im2col_fm_with` keeps the 4 * stride elements read by `load4` inside
                // row c of `x` (`x.len() == channels * ldx`, checked by `Win::new`).
                *reg = unsafe { load4::<S>(x.as_ptr().add(off), stride) };
            }
            let [c0, c1, c2, c3] = transpose4(v[0], v[1], v[2], v[3]);
            // SAFETY: `out` has `3 * rows + offs.len()` elements and `4 * rb + 4 <=
            // offs.len() <= rows`, so the stores at `j * rows + 4 * rb` (j < 4, 4
            // elements each) are inside `out`.
            unsafe {
                let p = out.as_mut_ptr().add(4 * rb);
                vst1q_f32(p, c0);
                vst1q_f32(p.add(rows), c1);
                vst1q_f32(p.add(2 * rows), c2);
                vst1q_f32(p.add(3 * rows), c3);
            }
        }
        for (i, &o) in offs.iter().enumerate().skip(full) {
            for j in 0..4 {
                out[j * rows + i] = x[base + o + j * stride];
            }
        }
    });
}

/// `4 * V` outputs of one channel: every tap accumulated in `V` registers with fused
/// multiply-add, then one store.
///
/// # Safety
/// For every tap `t < wr.len()`, the `4 * V * s` elements from `p + t * dilation` must be
/// readable (`s` the stride), and `o .. o + 4 * V` writable.
#[inline(always)]
unsafe fn depthwise_block<const S: usize, const V: usize>(
    p: *const f32,
    wr: &[f32],
    b: f32,
    stride: usize,
    dilation: usize,
    o: *mut f32,
) {
    let step = 4 * if S == 0 { stride } else { S };
    // SAFETY: the caller guarantees the reads (`load4` at `p + t * dilation + v * step`
    // reads `step` elements, v < V) and the stores (`o + 4 * v`, 4 elements, v < V).
    unsafe {
        let mut acc = [vdupq_n_f32(b); V];
        for (t, &wt) in wr.iter().enumerate() {
            let q = p.add(t * dilation);
            for (v, a) in acc.iter_mut().enumerate() {
                *a = vfmaq_n_f32(*a, load4::<S>(q.add(v * step), stride), wt);
            }
        }
        for (v, a) in acc.iter().enumerate() {
            vst1q_f32(o.add(4 * v), *a);
        }
    }
}

/// Depthwise over one channel: blocks of 32 and then 4 outputs in registers, scalar
/// edges and tail.
fn depthwise_row<const S: usize>(xr: &[f32], wr: &[f32], b: f32, taps: [usize; 3], yr: &mut [f32]) {
    const WIDE: usize = 8;
    let (stride, dilation) = (if S == 0 { taps[0] } else { S }, taps[1]);
    depthwise_row_with::<S, { 4 * WIDE }, 4>(xr, wr, b, taps, yr, |n, base, wide, yr| {
        // SAFETY: an interior block (see `depthwise_row_with`): for every tap t the loads
        // read `xr[base + t * dilation ..][..width * stride]`, inside `xr`; the stores
        // write `yr[n..n + width]`, inside `yr`.
        unsafe {
            let p = xr.as_ptr().add(base);
            let o = yr.as_mut_ptr().add(n);
            if wide {
                depthwise_block::<S, WIDE>(p, wr, b, stride, dilation, o);
            } else {
                depthwise_block::<S, 1>(p, wr, b, stride, dilation, o);
            }
        }
    });
}

impl ConvKernels for Neon {
    unsafe fn im2col_frame_major_unchecked(
        x: &[f32],
        window: Window1d,
        frames: Range<usize>,
        col: &mut [f32],
    ) {
        let w = Win::fold(window, frames.start, frames.len());
        // The stride is a compile-time constant inside (one indirect call per im2col).
        let im2col = match w.stride {
            1 => im2col_fm::<1>,
            2 => im2col_fm::<2>,
            3 => im2col_fm::<3>,
            _ => im2col_fm::<0>,
        };
        im2col(x, w, col);
    }

    fn gather_strided(src: &[f32], stride: usize, dst: &mut [f32]) {
        gather(src, stride, dst)
    }

    unsafe fn depthwise_row_unchecked(
        window: &Window1d,
        xr: &[f32],
        wr: &[f32],
        b: f32,
        yr: &mut [f32],
    ) {
        let taps = [window.stride, window.dilation, window.pad_left];
        match window.stride {
            1 => depthwise_row::<1>(xr, wr, b, taps, yr),
            2 => depthwise_row::<2>(xr, wr, b, taps, yr),
            3 => depthwise_row::<3>(xr, wr, b, taps, yr),
            _ => depthwise_row::<0>(xr, wr, b, taps, yr),
        }
    }
}
