//! Conv kernels: im2col for the GEMM-based conv1d, and the direct depthwise conv1d.
//!
//! All kernels work on channel-first input `x[channels, frames]` (row-major, one row per
//! channel) and describe the sliding window the same way as PyTorch's `Conv1d`:
//! output frame `n`, tap `t` (`0 <= t < kernel`) reads input frame
//! `n * stride + t * dilation - pad_left`, and reads outside `0..frames` are zeros (zero
//! padding). Right padding is implicit: the caller chooses how many output frames to
//! produce, and every read past the last input frame is a zero.
//!
//! - [`ConvKernels::im2col_channel_first`] builds the GEMM `B` operand `[channels * kernel,
//!   count]` for [`super::GemmKernels::gemm_packed_a`] (channel-first conv output).
//! - [`ConvKernels::im2col_frame_major`] builds the GEMM `A` operand `[count,
//!   channels * kernel]` for [`super::GemmKernels::gemm_packed_b`] (frame-major conv output).
//! - [`ConvKernels::depthwise_conv1d`]: one filter per channel, computed directly (no GEMM).
//!
//! The im2col kernels produce a *tile* of output frames `first_frame .. first_frame +
//! count`, so that an operator can bound its scratch memory on long inputs. In both layouts
//! the reduction index is `r = c * kernel + t`, which matches a PyTorch weight
//! `[out_channels, channels, kernel]` read as a `[out_channels, channels * kernel]` matrix.
//!
//! Edges (outputs whose window reaches into the padding) are handled by scalar code with
//! explicit bounds; the interior runs in fixed-width blocks (vectors on NEON) whose every
//! load is proven in bounds by a single range computation per row (`interior_blocks`).

use super::{BackendType, Portable, X86Isa, X86};

/// im2col and depthwise conv1d kernels.
///
/// Every function takes the window geometry explicitly: `kernel`, `stride`, `dilation`
/// (all `>= 1`) and `pad_left` (zeros before the first frame).
pub trait ConvKernels: BackendType {
    /// im2col, channel-first, for the output frames `first_frame .. first_frame + count`:
    /// `col[c * kernel + t, n] = x[c, (first_frame + n) * stride + t * dilation - pad_left]`
    /// (zero outside the input); `x`: `[channels, frames]`, `col` row-major
    /// `[channels * kernel, count]`.
    ///
    /// # Panics
    /// When `kernel`, `stride` or `dilation` is 0, `x.len() != channels * frames`,
    /// `col.len() != channels * kernel * count`, or the window positions overflow `usize`
    /// (`(first_frame + count) * stride + (kernel - 1) * dilation`, `pad_left + frames`).
    fn im2col_channel_first(
        x: &[f32],
        channels: usize,
        frames: usize,
        kernel: usize,
        stride: usize,
        dilation: usize,
        pad_left: usize,
        first_frame: usize,
        count: usize,
        col: &mut [f32],
    ) {
        let window = (kernel, stride, dilation, pad_left);
        let w = Win::new("im2col", x.len(), channels, frames, window, first_frame, count);
        im2col_cf_with(x, w, col, gather_scalar);
    }

    /// im2col, frame-major, for the output frames `first_frame .. first_frame + count`:
    /// `col[n, c * kernel + t] = x[c, (first_frame + n) * stride + t * dilation - pad_left]`
    /// (zero outside the input); `x`: `[channels, frames]`, `col` row-major
    /// `[count, channels * kernel]`.
    ///
    /// # Panics
    /// As [`ConvKernels::im2col_channel_first`] (same lengths).
    fn im2col_frame_major(
        x: &[f32],
        channels: usize,
        frames: usize,
        kernel: usize,
        stride: usize,
        dilation: usize,
        pad_left: usize,
        first_frame: usize,
        count: usize,
        col: &mut [f32],
    ) {
        let window = (kernel, stride, dilation, pad_left);
        let w = Win::new("im2col", x.len(), channels, frames, window, first_frame, count);
        let rows = channels * kernel;
        im2col_fm_with(x, w, col, |offs, base, out| {
            // A scalar 4x4 block transpose: one bounds check per reduction row.
            let (o0, rest) = out.split_at_mut(rows);
            let (o1, rest) = rest.split_at_mut(rows);
            let (o2, o3) = rest.split_at_mut(rows);
            let dst = o0.iter_mut().zip(o1).zip(o2).zip(o3);
            for (&o, (((d0, d1), d2), d3)) in offs.iter().zip(dst) {
                let src = &x[base + o..][..3 * stride + 1];
                (*d0, *d1, *d2, *d3) = (src[0], src[stride], src[2 * stride], src[3 * stride]);
            }
        });
    }

    /// Depthwise conv1d:
    /// `y[c, n] = bias[c] + sum_t w[c, t] * x[c, n * stride + t * dilation - pad_left]`
    /// (zero outside the input). `x`: `[channels, frames]`; `w`: `[channels, kernel]`
    /// (PyTorch's `[channels, 1, kernel]`); `bias`: `channels` values or `None` (zero);
    /// `y`: `[channels, out_frames]`. Overwrites `y`.
    ///
    /// # Panics
    /// When `kernel`, `stride` or `dilation` is 0, a slice length does not match
    /// (`x`: `channels * frames`, `w`: `channels * kernel`, `bias`: `channels`, `y`:
    /// `channels * out_frames`), or the window positions overflow `usize`.
    fn depthwise_conv1d(
        x: &[f32],
        channels: usize,
        frames: usize,
        w: &[f32],
        bias: Option<&[f32]>,
        kernel: usize,
        stride: usize,
        dilation: usize,
        pad_left: usize,
        out_frames: usize,
        y: &mut [f32],
    ) {
        let window = (kernel, stride, dilation, pad_left);
        check_depthwise(x, channels, frames, w, bias, window, out_frames, y);
        if frames == 0 || out_frames == 0 {
            return depthwise_no_input(bias, out_frames, y);
        }
        let rows =
            x.chunks_exact(frames).zip(w.chunks_exact(kernel)).zip(y.chunks_exact_mut(out_frames));
        for (c, ((xr, wr), yr)) in rows.enumerate() {
            let b = bias.map_or(0.0, |b| b[c]);
            match stride {
                1 => depthwise_row_portable::<1>(xr, wr, b, 1, dilation, pad_left, yr),
                2 => depthwise_row_portable::<2>(xr, wr, b, 2, dilation, pad_left, yr),
                _ => depthwise_row_portable::<0>(xr, wr, b, stride, dilation, pad_left, yr),
            }
        }
    }
}

/// A checked window over `x` with an output tile folded in.
///
/// Output `n` (`< out_frames`, relative to the tile), tap `t` reads channel `c` at
/// `x[c * ldx + x0 + p]` with `p = n * stride + t * dilation - pad_left` when
/// `0 <= p < frames`, else a zero: `x0`, `frames` and `pad_left` describe the part of each
/// row that the tile can see. After [`Win::new`], `n * stride + t * dilation` cannot
/// overflow for `n <= out_frames`, `t < kernel`, nor can `pad_left + frames`, and
/// `x0 + frames <= ldx`.
#[derive(Clone, Copy, Debug)]
struct Win {
    channels: usize,
    ldx: usize,
    x0: usize,
    frames: usize,
    kernel: usize,
    stride: usize,
    dilation: usize,
    pad_left: usize,
    out_frames: usize,
}

impl Win {
    /// Checks the kernel contract (panics) and folds `first_frame` into the window.
    fn new(
        what: &str,
        x_len: usize,
        channels: usize,
        frames: usize,
        (kernel, stride, dilation, pad_left): (usize, usize, usize, usize),
        first_frame: usize,
        out_frames: usize,
    ) -> Self {
        assert!(kernel >= 1 && stride >= 1 && dilation >= 1, "{what}: kernel/stride/dilation 0");
        assert_eq!(Some(x_len), channels.checked_mul(frames), "{what}: input length");
        let reach = first_frame
            .checked_add(out_frames)
            .and_then(|n| n.checked_mul(stride))
            .and_then(|a| (kernel - 1).checked_mul(dilation).and_then(|b| a.checked_add(b)));
        assert!(reach.is_some(), "{what}: window positions overflow");
        assert!(pad_left.checked_add(frames).is_some(), "{what}: padding overflows");
        // Output `first_frame` starts at padded position `start`: either still in the left
        // padding (less padding left), or `skip` frames into the input (a later row start).
        let start = first_frame * stride;
        let (x0, pad) = if start <= pad_left {
            (0, pad_left - start)
        } else {
            ((start - pad_left).min(frames), 0)
        };
        Win {
            channels,
            ldx: frames,
            x0,
            frames: frames - x0,
            kernel,
            stride,
            dilation,
            pad_left: pad,
            out_frames,
        }
    }

    /// Reduction rows `channels * kernel`, after checking `col.len()` (panics).
    fn check_col(&self, col_len: usize) -> usize {
        let rows = self.channels.checked_mul(self.kernel).expect("im2col: rows overflow");
        assert_eq!(Some(col_len), rows.checked_mul(self.out_frames), "im2col: col length");
        rows
    }
}

/// Outputs `n` in `lo..hi` whose tap at offset `off` (`t * dilation`) reads inside the
/// input, i.e. `pad_left <= n * stride + off < pad_left + frames`; `hi <= out_frames`.
#[inline]
pub(super) fn tap_range(
    off: usize,
    stride: usize,
    pad_left: usize,
    frames: usize,
    out_frames: usize,
) -> (usize, usize) {
    let end = pad_left + frames;
    let lo = if off >= pad_left { 0 } else { (pad_left - off).div_ceil(stride) };
    let hi = if off >= end { 0 } else { (end - off).div_ceil(stride) };
    let hi = hi.min(out_frames);
    (lo.min(hi), hi)
}

/// Taps `t` in `lo..hi` of output `n` that read inside the input (the transpose of
/// [`tap_range`]): `pad_left <= n * stride + t * dilation < pad_left + frames`, `hi <= kernel`.
#[inline]
fn tap_window(
    n: usize,
    kernel: usize,
    stride: usize,
    dilation: usize,
    pad_left: usize,
    frames: usize,
) -> (usize, usize) {
    let pos = n * stride;
    let end = pad_left + frames;
    let lo = if pos >= pad_left { 0 } else { (pad_left - pos).div_ceil(dilation) };
    let hi = if pos >= end { 0 } else { (end - pos).div_ceil(dilation) };
    let hi = hi.min(kernel);
    (lo.min(hi), hi)
}

/// The range `lo..hi` of block starts `n` for which every tap of the outputs `n..n + width`
/// reads inside the input *with whole strided loads*: `n * stride >= pad_left` (left edge),
/// `n + width <= out_frames`, and `(n + width) * stride + (kernel - 1) * dilation <=
/// pad_left + frames`, so that a load of `width * stride` elements starting at any tap's
/// first position stays inside the row (the de-interleaving NEON loads read whole groups).
#[inline]
fn interior_blocks(
    width: usize,
    kernel: usize,
    stride: usize,
    dilation: usize,
    pad_left: usize,
    frames: usize,
    out_frames: usize,
) -> (usize, usize) {
    let lo = pad_left.div_ceil(stride);
    let reach = (kernel - 1) * dilation;
    let end = pad_left + frames;
    // Largest m with m * stride + reach <= end: blocks need n + width <= m.
    let m = if reach > end { 0 } else { (end - reach) / stride };
    let m = m.min(out_frames);
    let hi = if m >= width { m - width + 1 } else { 0 };
    (lo, hi)
}

/// Channel-first im2col driver; `gather(src, stride, dst)` writes `dst[j] = src[j * stride]`
/// with `src.len() >= (dst.len() - 1) * stride + 1`.
#[inline(always)]
fn im2col_cf_with(x: &[f32], w: Win, col: &mut [f32], gather: impl Fn(&[f32], usize, &mut [f32])) {
    w.check_col(col.len());
    let of = w.out_frames;
    if of == 0 {
        return;
    }
    for c in 0..w.channels {
        let xr = &x[c * w.ldx + w.x0..][..w.frames];
        for t in 0..w.kernel {
            let row = &mut col[(c * w.kernel + t) * of..][..of];
            let off = t * w.dilation;
            let (lo, hi) = tap_range(off, w.stride, w.pad_left, w.frames, of);
            row[..lo].fill(0.0);
            row[hi..].fill(0.0);
            if lo < hi {
                let s0 = lo * w.stride + off - w.pad_left;
                let last = (hi - 1 - lo) * w.stride;
                gather(&xr[s0..=s0 + last], w.stride, &mut row[lo..hi]);
            }
        }
    }
}

/// Scalar strided gather: `dst[j] = src[j * stride]`.
#[inline(always)]
pub(super) fn gather_scalar(src: &[f32], stride: usize, dst: &mut [f32]) {
    if stride == 1 {
        dst.copy_from_slice(&src[..dst.len()]);
    } else {
        for (d, s) in dst.iter_mut().zip(src.iter().step_by(stride)) {
            *d = *s;
        }
    }
}

/// Writes frame-major im2col row `n` (`channels * kernel` values), scalar.
#[inline(always)]
fn im2col_fm_row(x: &[f32], w: &Win, n: usize, row: &mut [f32]) {
    let (t_lo, t_hi) = tap_window(n, w.kernel, w.stride, w.dilation, w.pad_left, w.frames);
    for (c, seg) in row.chunks_exact_mut(w.kernel).take(w.channels).enumerate() {
        seg[..t_lo].fill(0.0);
        seg[t_hi..].fill(0.0);
        if t_lo < t_hi {
            let s0 = c * w.ldx + w.x0 + n * w.stride + t_lo * w.dilation - w.pad_left;
            let last = (t_hi - 1 - t_lo) * w.dilation;
            gather_scalar(&x[s0..=s0 + last], w.dilation, &mut seg[t_lo..t_hi]);
        }
    }
}

/// Reduction rows per chunk of the frame-major im2col offset table (a multiple of 4;
/// 64 `usize` = 512 bytes of stack).
const FM_CHUNK: usize = 64;

/// Frame-major im2col driver. Interior blocks of 4 output frames `n..n + 4` (see
/// [`interior_blocks`]) are written chunk by chunk of [`FM_CHUNK`] reduction rows by
/// `block(offs, base, out)`: `offs[i] = c * ldx + t * dilation` for reduction row
/// `r0 + i = c * kernel + t`, `base = x0 + n * stride - pad_left`, and `out` starts at
/// `col[n * rows + r0]` with `3 * rows + offs.len()` elements (row `n + j`, reduction row
/// `r0 + i` is `out[j * rows + i]`). In an interior block every tap reads inside the input
/// and `x[base + offs[i] .. + 4 * stride]` lies inside channel `c`'s visible row part
/// `x0 .. x0 + frames`. The other frames (edges, where some tap reads padding, and the
/// tail) are written whole by [`im2col_fm_row`].
#[inline(always)]
fn im2col_fm_with(
    x: &[f32],
    w: Win,
    col: &mut [f32],
    mut block: impl FnMut(&[usize], usize, &mut [f32]),
) {
    let rows = w.check_col(col.len());
    let of = w.out_frames;
    if rows == 0 || of == 0 {
        return;
    }
    let (lo, hi) = interior_blocks(4, w.kernel, w.stride, w.dilation, w.pad_left, w.frames, of);
    // Blocks start at lo, lo + 4, ... while < hi (then n + 4 <= out_frames).
    let lo = lo.min(of);
    let end = lo + 4 * hi.saturating_sub(lo).div_ceil(4);
    for n in (0..lo).chain(end..of) {
        im2col_fm_row(x, &w, n, &mut col[n * rows..][..rows]);
    }
    if lo == end {
        return;
    }
    let mut offs = [0usize; FM_CHUNK];
    let (mut c, mut t, mut r0) = (0, 0, 0);
    while r0 < rows {
        let len = FM_CHUNK.min(rows - r0);
        let offs = &mut offs[..len];
        for o in offs.iter_mut() {
            *o = c * w.ldx + t * w.dilation;
            t += 1;
            if t == w.kernel {
                t = 0;
                c += 1;
            }
        }
        for n in (lo..end).step_by(4) {
            let out = &mut col[n * rows + r0..][..3 * rows + len];
            block(offs, w.x0 + n * w.stride - w.pad_left, out);
        }
        r0 += len;
    }
}

/// Checks the depthwise contract (panics).
fn check_depthwise(
    x: &[f32],
    channels: usize,
    frames: usize,
    w: &[f32],
    bias: Option<&[f32]>,
    window: (usize, usize, usize, usize),
    out_frames: usize,
    y: &[f32],
) {
    let what = "depthwise_conv1d";
    Win::new(what, x.len(), channels, frames, window, 0, out_frames);
    assert_eq!(Some(w.len()), channels.checked_mul(window.0), "{what}: weight length");
    if let Some(b) = bias {
        assert_eq!(b.len(), channels, "{what}: bias length");
    }
    assert_eq!(Some(y.len()), channels.checked_mul(out_frames), "{what}: output length");
}

/// Depthwise output when there is no input frame (every tap reads padding): the bias.
fn depthwise_no_input(bias: Option<&[f32]>, out_frames: usize, y: &mut [f32]) {
    match bias {
        Some(b) if out_frames > 0 => {
            for (yr, &bc) in y.chunks_exact_mut(out_frames).zip(b) {
                yr.fill(bc);
            }
        }
        _ => y.fill(0.0),
    }
}

/// Depthwise output `n` of one channel, scalar, with explicit edge handling.
#[inline(always)]
fn depthwise_scalar_at(
    xr: &[f32],
    wr: &[f32],
    b: f32,
    stride: usize,
    dilation: usize,
    pad_left: usize,
    n: usize,
) -> f32 {
    let (t_lo, t_hi) = tap_window(n, wr.len(), stride, dilation, pad_left, xr.len());
    let mut acc = b;
    if t_lo < t_hi {
        let s0 = n * stride + t_lo * dilation - pad_left;
        for (j, &wt) in wr[t_lo..t_hi].iter().enumerate() {
            acc += wt * xr[s0 + j * dilation];
        }
    }
    acc
}

/// `W` portable depthwise outputs of one channel from `xr[base..]`: every tap accumulated
/// in a fixed-width array (LLVM vectorises the inner loop and keeps it in registers).
#[inline(always)]
fn depthwise_block_portable<const S: usize, const W: usize>(
    xr: &[f32],
    base: usize,
    wr: &[f32],
    b: f32,
    stride: usize,
    dilation: usize,
    out: &mut [f32],
) {
    let stride = if S == 0 { stride } else { S };
    let mut acc = [b; W];
    for (t, &wt) in wr.iter().enumerate() {
        let src = &xr[base + t * dilation..][..W * stride];
        for (a, &v) in acc.iter_mut().zip(src.iter().step_by(stride)) {
            *a += wt * v;
        }
    }
    out[..W].copy_from_slice(&acc);
}

/// Portable depthwise over one channel: blocks of 32 and then 8 outputs in the interior,
/// scalar edges and tail (`S` is the stride when known, 0 = run time).
#[inline(always)]
fn depthwise_row_portable<const S: usize>(
    xr: &[f32],
    wr: &[f32],
    b: f32,
    stride: usize,
    dilation: usize,
    pad_left: usize,
    yr: &mut [f32],
) {
    let stride = if S == 0 { stride } else { S };
    let (frames, kernel, out_frames) = (xr.len(), wr.len(), yr.len());
    let blocks = |w| interior_blocks(w, kernel, stride, dilation, pad_left, frames, out_frames);
    let ((lo, hi32), (_, hi8)) = (blocks(32), blocks(8));
    let mut n = 0;
    while n < out_frames {
        if n >= lo && n < hi32 {
            let (base, out) = (n * stride - pad_left, &mut yr[n..n + 32]);
            depthwise_block_portable::<S, 32>(xr, base, wr, b, stride, dilation, out);
            n += 32;
        } else if n >= lo && n < hi8 {
            let (base, out) = (n * stride - pad_left, &mut yr[n..n + 8]);
            depthwise_block_portable::<S, 8>(xr, base, wr, b, stride, dilation, out);
            n += 8;
        } else {
            yr[n] = depthwise_scalar_at(xr, wr, b, stride, dilation, pad_left, n);
            n += 1;
        }
    }
}

impl ConvKernels for Portable {}

impl<I: X86Isa> ConvKernels for X86<I> {}

#[cfg(all(target_arch = "aarch64", feature = "neon"))]
pub(super) mod neon {
    use super::{depthwise_scalar_at, gather_scalar, im2col_fm_with, interior_blocks, Win};
    use core::arch::aarch64::*;

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
    fn transpose4(
        a: float32x4_t,
        b: float32x4_t,
        c: float32x4_t,
        d: float32x4_t,
    ) -> [float32x4_t; 4] {
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
    pub(super) fn im2col_fm<const S: usize>(x: &[f32], w: Win, col: &mut [f32]) {
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
    pub(super) fn depthwise_row<const S: usize>(
        xr: &[f32],
        wr: &[f32],
        b: f32,
        stride: usize,
        dilation: usize,
        pad_left: usize,
        yr: &mut [f32],
    ) {
        const WIDE: usize = 8;
        let stride = if S == 0 { stride } else { S };
        let (frames, kernel, out_frames) = (xr.len(), wr.len(), yr.len());
        let blocks = |w| interior_blocks(w, kernel, stride, dilation, pad_left, frames, out_frames);
        let ((lo, hi_wide), (_, hi4)) = (blocks(4 * WIDE), blocks(4));
        let mut n = 0;
        while n < out_frames {
            let width = if n >= lo && n < hi_wide {
                4 * WIDE
            } else if n >= lo && n < hi4 {
                4
            } else {
                yr[n] = depthwise_scalar_at(xr, wr, b, stride, dilation, pad_left, n);
                n += 1;
                continue;
            };
            debug_assert!((n + width) * stride + (kernel - 1) * dilation <= pad_left + frames);
            debug_assert!(n * stride >= pad_left && n + width <= out_frames);
            // SAFETY: interior block (see `interior_blocks`): for every tap t the loads read
            // `xr[n * stride - pad_left + t * dilation ..][..width * stride]`, inside `xr`;
            // the stores write `yr[n..n + width]` with `n + width <= out_frames`.
            unsafe {
                let p = xr.as_ptr().add(n * stride - pad_left);
                let o = yr.as_mut_ptr().add(n);
                if width == 4 {
                    depthwise_block::<S, 1>(p, wr, b, stride, dilation, o);
                } else {
                    depthwise_block::<S, WIDE>(p, wr, b, stride, dilation, o);
                }
            }
            n += width;
        }
    }
}

#[cfg(all(target_arch = "aarch64", feature = "neon"))]
impl ConvKernels for super::Neon {
    fn im2col_channel_first(
        x: &[f32],
        channels: usize,
        frames: usize,
        kernel: usize,
        stride: usize,
        dilation: usize,
        pad_left: usize,
        first_frame: usize,
        count: usize,
        col: &mut [f32],
    ) {
        let window = (kernel, stride, dilation, pad_left);
        let w = Win::new("im2col", x.len(), channels, frames, window, first_frame, count);
        im2col_cf_with(x, w, col, neon::gather);
    }

    fn im2col_frame_major(
        x: &[f32],
        channels: usize,
        frames: usize,
        kernel: usize,
        stride: usize,
        dilation: usize,
        pad_left: usize,
        first_frame: usize,
        count: usize,
        col: &mut [f32],
    ) {
        let window = (kernel, stride, dilation, pad_left);
        let w = Win::new("im2col", x.len(), channels, frames, window, first_frame, count);
        // The stride is a compile-time constant inside (one indirect call per im2col).
        let im2col = match stride {
            1 => neon::im2col_fm::<1>,
            2 => neon::im2col_fm::<2>,
            3 => neon::im2col_fm::<3>,
            _ => neon::im2col_fm::<0>,
        };
        im2col(x, w, col);
    }

    fn depthwise_conv1d(
        x: &[f32],
        channels: usize,
        frames: usize,
        w: &[f32],
        bias: Option<&[f32]>,
        kernel: usize,
        stride: usize,
        dilation: usize,
        pad_left: usize,
        out_frames: usize,
        y: &mut [f32],
    ) {
        let window = (kernel, stride, dilation, pad_left);
        check_depthwise(x, channels, frames, w, bias, window, out_frames, y);
        if frames == 0 || out_frames == 0 {
            return depthwise_no_input(bias, out_frames, y);
        }
        let rows =
            x.chunks_exact(frames).zip(w.chunks_exact(kernel)).zip(y.chunks_exact_mut(out_frames));
        for (c, ((xr, wr), yr)) in rows.enumerate() {
            let b = bias.map_or(0.0, |b| b[c]);
            match stride {
                1 => neon::depthwise_row::<1>(xr, wr, b, 1, dilation, pad_left, yr),
                2 => neon::depthwise_row::<2>(xr, wr, b, 2, dilation, pad_left, yr),
                3 => neon::depthwise_row::<3>(xr, wr, b, 3, dilation, pad_left, yr),
                _ => neon::depthwise_row::<0>(xr, wr, b, stride, dilation, pad_left, yr),
            }
        }
    }
}
