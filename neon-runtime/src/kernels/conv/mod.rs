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
//!
//! The window travels as a [`Window1d`]. The entry points check the contract, handle empty
//! shapes, and walk the channels and taps (channel-first im2col), the rows (depthwise);
//! backends provide the hooks: the strided gather of (part of) one im2col row
//! ([`ConvKernels::gather_strided`]; a tap one stride after another copies that tap's
//! row one frame on instead, when the stride is a multiple of the dilation), the frame-major im2col
//! ([`ConvKernels::im2col_frame_major_unchecked`], over the shared block driver
//! `im2col_fm_with`), and one depthwise row ([`ConvKernels::depthwise_row_unchecked`]).
//! `portable.rs` holds the portable hooks, `neon.rs` the NEON ones; `X86<I>` runs the
//! portable depthwise row compiled for its level (`x86.rs`) and the portable im2col.

use super::parallel::{row_blocks, Parallel, Rows};
use super::{BackendType, Portable, X86Isa, X86};
use crate::error::Error;
use crate::tensor::Layout;
use core::ops::Range;

#[cfg(all(target_arch = "aarch64", feature = "neon"))]
pub(in crate::kernels) mod neon;
mod portable;
#[cfg(neon_x86)]
mod x86;

/// The sliding window of a conv1d over a channel-first input `x[channels, frames]`, as
/// PyTorch's `Conv1d` describes it (see the [module docs](self)): output frame `n`, tap `t`
/// reads input frame `n * stride + t * dilation - pad_left`, zero outside the input.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Window1d {
    /// Input channels (rows of `x`).
    pub channels: usize,
    /// Input frames (columns of `x`).
    pub frames: usize,
    /// Taps (`>= 1`).
    pub kernel: usize,
    /// Step between output frames, in input frames (`>= 1`).
    pub stride: usize,
    /// Step between taps, in input frames (`>= 1`).
    pub dilation: usize,
    /// Zero frames before the first input frame.
    pub pad_left: usize,
}

/// im2col and depthwise conv1d kernels.
///
/// Every function takes the window geometry as a [`Window1d`]. The three named kernels are
/// the entry points; backends override hooks only (the methods documented as hooks), never
/// an entry point; the hooks' defaults are the portable code.
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
        window: Window1d,
        first_frame: usize,
        count: usize,
        col: &mut [f32],
    ) {
        let w = Win::new("im2col", x.len(), window, first_frame, count);
        w.check_col(col.len());
        let of = w.out_frames;
        if of == 0 {
            return;
        }
        // Tap `t` reads at output frame `n` what tap `t - shift` reads at `n + 1` when a
        // stride is `shift` dilations: its row is mostly a copy of that row one frame on,
        // and only its last frame is gathered (Moonshine's conv2, kernel 7, stride 3: 3
        // strided rows of 7 per channel).
        let shift = match w.stride > 1 && w.stride.is_multiple_of(w.dilation) {
            true => w.stride / w.dilation,
            false => 0,
        };
        for c in 0..w.channels {
            let xr = &x[c * w.ldx + w.x0..][..w.frames];
            for t in 0..w.kernel {
                let at = (c * w.kernel + t) * of;
                let off = t * w.dilation;
                let (mut lo, hi) = tap_range(off, w.stride, w.pad_left, w.frames, of);
                col[at..at + lo].fill(0.0);
                col[at + hi..at + of].fill(0.0);
                if shift > 0 && t >= shift {
                    // Frames lo..copied of this row are frames lo + 1..copied + 1 of row
                    // t - shift (the same input positions, inside the input alike); the
                    // rest (at most the last frame) is gathered below.
                    let copied = hi.min(of - 1).max(lo);
                    let from = at - shift * of;
                    col.copy_within(from + lo + 1..from + copied + 1, at + lo);
                    lo = copied;
                }
                if lo < hi {
                    let s0 = lo * w.stride + off - w.pad_left;
                    let last = (hi - 1 - lo) * w.stride;
                    Self::gather_strided(&xr[s0..=s0 + last], w.stride, &mut col[at + lo..at + hi]);
                }
            }
        }
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
        window: Window1d,
        first_frame: usize,
        count: usize,
        col: &mut [f32],
    ) {
        let w = Win::new("im2col", x.len(), window, first_frame, count);
        let rows = w.check_col(col.len());
        if rows > 0 && count > 0 {
            let frames = first_frame..first_frame + count;
            // SAFETY: `Win::new` and `check_col` checked the contract (see the hook).
            unsafe { Self::im2col_frame_major_unchecked(x, window, frames, col) }
        }
    }

    /// The im2col copy of `layout` on `par`: [`im2col_channel_first`](Self::im2col_channel_first)
    /// ([`Layout::ChannelFirst`]) in blocks of input channels, each writing its channels'
    /// `kernel` rows of `col`, or [`im2col_frame_major`](Self::im2col_frame_major)
    /// ([`Layout::FrameMajor`]) in blocks of output frames, each writing its rows (a copy:
    /// any context gives the same `col`).
    ///
    /// # Errors
    /// The context's ([`Parallel::dispatch`]); `col` is then partly written.
    ///
    /// # Panics
    /// As the copy of `layout` (the same lengths for both), before any task runs.
    fn im2col_in(
        par: &dyn Parallel,
        layout: Layout,
        (x, window): (&[f32], Window1d),
        first_frame: usize,
        count: usize,
        col: &mut [f32],
    ) -> Result<(), Error> {
        let w = Win::new("im2col", x.len(), window, first_frame, count);
        let rows = w.check_col(col.len());
        if rows == 0 || count == 0 {
            return Ok(());
        }
        // Blocks of whole rows of `col`: a channel's `kernel` rows of `count` values, or an
        // output frame's row of `rows` values (`col` holds `rows * count >= 1` values, so
        // the products fit). A copied value costs about what a multiply-add does (a load
        // and a store).
        let (blocks, row) = match layout {
            Layout::ChannelFirst => (window.channels, window.kernel * count),
            Layout::FrameMajor => (count, rows),
        };
        let split =
            Rows { shape: (blocks, row, row), tile: 1, join_tail: false, work_per_row: row };
        row_blocks(par, split, col, |r, col| match layout {
            Layout::ChannelFirst => {
                let xs = &x[r.start * window.frames..r.end * window.frames];
                let wn = Window1d { channels: r.len(), ..window };
                Self::im2col_channel_first(xs, wn, first_frame, count, col);
            }
            Layout::FrameMajor => {
                Self::im2col_frame_major(x, window, first_frame + r.start, r.len(), col);
            }
        })
    }

    /// Depthwise conv1d:
    /// `y[c, n] = bias[c] + sum_t w[c, t] * x[c, n * stride + t * dilation - pad_left]`
    /// (zero outside the input). `x`: `[channels, frames]`; `weight`: `[channels, kernel]`
    /// (PyTorch's `[channels, 1, kernel]`); `bias`: `channels` values or `None` (zero);
    /// `y`: `[channels, out_frames]`. Overwrites `y`.
    ///
    /// # Panics
    /// When `kernel`, `stride` or `dilation` is 0, a slice length does not match
    /// (`x`: `channels * frames`, `weight`: `channels * kernel`, `bias`: `channels`, `y`:
    /// `channels * out_frames`), or the window positions overflow `usize`.
    fn depthwise_conv1d(
        x: &[f32],
        window: Window1d,
        weight: &[f32],
        bias: Option<&[f32]>,
        out_frames: usize,
        y: &mut [f32],
    ) {
        check_depthwise(x, &window, weight, bias, out_frames, y);
        let (frames, kernel) = (window.frames, window.kernel);
        if frames == 0 || out_frames == 0 {
            return depthwise_no_input(bias, out_frames, y);
        }
        let rows = x
            .chunks_exact(frames)
            .zip(weight.chunks_exact(kernel))
            .zip(y.chunks_exact_mut(out_frames));
        for (c, ((xr, wr), yr)) in rows.enumerate() {
            let b = bias.map_or(0.0, |b| b[c]);
            // SAFETY: `check_depthwise` checked the window (no position overflows) and the
            // lengths: `xr` holds `frames` values, `wr` `kernel`, `yr` `out_frames >= 1`.
            unsafe { Self::depthwise_row_unchecked(&window, xr, wr, b, yr) }
        }
    }

    /// [`depthwise_conv1d`](Self::depthwise_conv1d) on `par`: blocks of channels (each
    /// channel is computed alone, so any context gives the same bits).
    ///
    /// # Errors
    /// The context's ([`Parallel::dispatch`]); `y` is then partly written.
    ///
    /// # Panics
    /// As [`depthwise_conv1d`](Self::depthwise_conv1d), before any task runs.
    fn depthwise_conv1d_in(
        par: &dyn Parallel,
        (x, window): (&[f32], Window1d),
        (weight, bias): (&[f32], Option<&[f32]>),
        out_frames: usize,
        y: &mut [f32],
    ) -> Result<(), Error> {
        check_depthwise(x, &window, weight, bias, out_frames, y);
        let (frames, kernel) = (window.frames, window.kernel);
        if frames == 0 || out_frames == 0 {
            depthwise_no_input(bias, out_frames, y);
            return Ok(());
        }
        let split = Rows {
            shape: (window.channels, out_frames, out_frames),
            tile: 1,
            join_tail: false,
            work_per_row: out_frames * kernel,
        };
        row_blocks(par, split, y, |rows, y| {
            let xs = &x[rows.start * frames..rows.end * frames];
            let ws = &weight[rows.start * kernel..rows.end * kernel];
            let bs = bias.map(|b| &b[rows.clone()]);
            let wn = Window1d { channels: rows.len(), ..window };
            Self::depthwise_conv1d(xs, wn, ws, bs, out_frames, y);
        })
    }

    /// Hook: strided gather `dst[j] = src[j * stride]` (one im2col row, or its last frames),
    /// with `src.len() >= (dst.len() - 1) * stride + 1` and `dst` not empty. Called only by
    /// [`im2col_channel_first`](Self::im2col_channel_first).
    fn gather_strided(src: &[f32], stride: usize, dst: &mut [f32]) {
        gather_scalar(src, stride, dst)
    }

    /// Hook: the frame-major im2col of [`im2col_frame_major`](Self::im2col_frame_major),
    /// for the output frames `frames` (`first_frame .. first_frame + count`).
    ///
    /// # Safety
    /// The contract of the entry point holds (it checks it): the lengths of `x` and `col`,
    /// no window position overflows, `frames` is not empty and `channels >= 1`.
    unsafe fn im2col_frame_major_unchecked(
        x: &[f32],
        window: Window1d,
        frames: Range<usize>,
        col: &mut [f32],
    ) {
        portable::im2col_fm(x, Win::fold(window, frames.start, frames.len()), col)
    }

    /// Hook: one depthwise row,
    /// `yr[n] = bias + sum_t wr[t] * xr[n * stride + t * dilation - pad_left]` for
    /// `n < yr.len()` (`xr`: the channel's `frames` input values, `wr`: its `kernel` taps).
    ///
    /// # Safety
    /// The contract of [`depthwise_conv1d`](Self::depthwise_conv1d) holds (it checks it):
    /// `xr.len() == window.frames >= 1`, `wr.len() == window.kernel`, `yr.len() >= 1`, and
    /// no window position overflows.
    unsafe fn depthwise_row_unchecked(
        window: &Window1d,
        xr: &[f32],
        wr: &[f32],
        bias: f32,
        yr: &mut [f32],
    ) {
        portable::depthwise_row(window, xr, wr, bias, yr)
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
    fn new(what: &str, x_len: usize, w: Window1d, first_frame: usize, out_frames: usize) -> Self {
        let (kernel, stride, dilation) = (w.kernel, w.stride, w.dilation);
        assert!(kernel >= 1 && stride >= 1 && dilation >= 1, "{what}: kernel/stride/dilation 0");
        assert_eq!(Some(x_len), w.channels.checked_mul(w.frames), "{what}: input length");
        let reach = first_frame
            .checked_add(out_frames)
            .and_then(|n| n.checked_mul(stride))
            .and_then(|a| (kernel - 1).checked_mul(dilation).and_then(|b| a.checked_add(b)));
        assert!(reach.is_some(), "{what}: window positions overflow");
        assert!(w.pad_left.checked_add(w.frames).is_some(), "{what}: padding overflows");
        Self::fold(w, first_frame, out_frames)
    }

    /// Folds `first_frame` into the window (a checked window: see [`Win::new`]).
    fn fold(w: Window1d, first_frame: usize, out_frames: usize) -> Self {
        let (frames, pad_left) = (w.frames, w.pad_left);
        // Output `first_frame` starts at padded position `start`: either still in the left
        // padding (less padding left), or `skip` frames into the input (a later row start).
        let start = first_frame * w.stride;
        let (x0, pad) = if start <= pad_left {
            (0, pad_left - start)
        } else {
            ((start - pad_left).min(frames), 0)
        };
        Win {
            channels: w.channels,
            ldx: frames,
            x0,
            frames: frames - x0,
            kernel: w.kernel,
            stride: w.stride,
            dilation: w.dilation,
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
pub(in crate::kernels) fn tap_range(
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
/// The same range as [`tap_range`]'s, over taps (step `dilation`) from position `n * stride`.
#[inline(always)]
fn tap_window(
    n: usize,
    kernel: usize,
    stride: usize,
    dilation: usize,
    pad_left: usize,
    frames: usize,
) -> (usize, usize) {
    tap_range(n * stride, dilation, pad_left, frames, kernel)
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

/// Scalar strided gather: `dst[j] = src[j * stride]`.
#[inline(always)]
pub(in crate::kernels) fn gather_scalar(src: &[f32], stride: usize, dst: &mut [f32]) {
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
/// tail) are written whole by [`im2col_fm_row`]. Shared by the backends' hooks; the entry
/// point checked the contract (`channels * kernel >= 1`, `out_frames >= 1`).
#[inline(always)]
fn im2col_fm_with(
    x: &[f32],
    w: Win,
    col: &mut [f32],
    mut block: impl FnMut(&[usize], usize, &mut [f32]),
) {
    let (rows, of) = (w.channels * w.kernel, w.out_frames);
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
    w: &Window1d,
    weight: &[f32],
    bias: Option<&[f32]>,
    out_frames: usize,
    y: &[f32],
) {
    let what = "depthwise_conv1d";
    Win::new(what, x.len(), *w, 0, out_frames);
    assert_eq!(Some(weight.len()), w.channels.checked_mul(w.kernel), "{what}: weight length");
    if let Some(b) = bias {
        assert_eq!(b.len(), w.channels, "{what}: bias length");
    }
    assert_eq!(Some(y.len()), w.channels.checked_mul(out_frames), "{what}: output length");
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

/// One channel's depthwise row, the driver of every backend's
/// [`depthwise_row_unchecked`](ConvKernels::depthwise_row_unchecked): interior blocks (see
/// [`interior_blocks`]) of `WIDE` outputs, then of `NARROW`, written by
/// `block(n, base, wide, yr)` (outputs `n..n + WIDE` when `wide`, else `n..n + NARROW`, whose
/// taps read `xr[base + t * dilation..][..width * stride]` with `base = n * stride -
/// pad_left`, all inside `xr`); the edges and the tail scalar ([`depthwise_scalar_at`]).
/// `S` is the stride when known (0 = run time, `stride`).
#[inline(always)]
fn depthwise_row_with<const S: usize, const WIDE: usize, const NARROW: usize>(
    xr: &[f32],
    wr: &[f32],
    b: f32,
    [stride, dilation, pad_left]: [usize; 3],
    yr: &mut [f32],
    mut block: impl FnMut(usize, usize, bool, &mut [f32]),
) {
    let stride = if S == 0 { stride } else { S };
    let (frames, kernel, out_frames) = (xr.len(), wr.len(), yr.len());
    let blocks = |w| interior_blocks(w, kernel, stride, dilation, pad_left, frames, out_frames);
    let ((lo, hi_wide), (_, hi_narrow)) = (blocks(WIDE), blocks(NARROW));
    let mut n = 0;
    while n < out_frames {
        let width = if n >= lo && n < hi_wide {
            WIDE
        } else if n >= lo && n < hi_narrow {
            NARROW
        } else {
            yr[n] = depthwise_scalar_at(xr, wr, b, stride, dilation, pad_left, n);
            n += 1;
            continue;
        };
        debug_assert!((n + width) * stride + (kernel - 1) * dilation <= pad_left + frames);
        debug_assert!(n * stride >= pad_left && n + width <= out_frames);
        block(n, n * stride - pad_left, width == WIDE, yr);
        n += width;
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

impl ConvKernels for Portable {}

impl<I: X86Isa> ConvKernels for X86<I> {
    #[cfg(neon_x86)]
    unsafe fn depthwise_row_unchecked(
        window: &Window1d,
        xr: &[f32],
        wr: &[f32],
        bias: f32,
        yr: &mut [f32],
    ) {
        x86::depthwise_row::<I>(window, xr, wr, bias, yr)
    }
}
