//! conv2d kernel: im2col of a 2-D window over channel-first images, the `B` operand of
//! the packed GEMM ([`super::GemmKernels::gemm_packed_a_rows`]).
//!
//! Images are `x[channels, height, width]`, row-major (one `height x width` plane per
//! channel). The window is PyTorch's `Conv2d` without dilation or groups: output pixel
//! `(oh, ow)`, tap `(i, j)` (`i < kernel_h`, `j < kernel_w`) reads input pixel
//! `(oh * stride_h + i - pad_top, ow * stride_w + j - pad_left)`, and reads outside the
//! image are zeros (zero padding). Bottom and right padding are implicit: the caller
//! chooses the output size, and every read past the last row or column is a zero.
//!
//! [`Conv2dKernels::im2col_2d`] writes the GEMM operand `col[k, count]` for a *tile* of
//! output pixels `first .. first + count`, pixels numbered row-major (`p = oh * out_width +
//! ow`), so that an operator can bound its scratch memory and keep the block in cache.
//! The reduction index is `r = (c * kernel_h + i) * kernel_w + j`, which matches a PyTorch
//! weight `[out_channels, in_channels, kernel_h, kernel_w]` read as a `[out_channels,
//! in_channels * kernel_h * kernel_w]` matrix.
//!
//! ## Two strategies
//! - **Row runs** (the common "same along the width" case: both strides 1, no top padding,
//!   no row read below the image, `out_width == width`). Then output pixel `p` of reduction
//!   row `(c, i, j)` reads input element `c * height * width + i * width + j - pad_left + p`:
//!   the whole tile is one contiguous run of the input, shifted. It is copied in one go
//!   (NEON: 16 values per load/store pair), and only the pixels whose column falls into the
//!   left or right padding (`ow < pad_left - j` or `ow >= width + pad_left - j`; at most
//!   `kernel_w - 1` per image row) are then set to zero. openWakeWord's 1x3 "same" convs and
//!   its first 3x3 conv (width padded by 1) take this path.
//! - **General**: per reduction row and output row, the input row (or zeros above and below
//!   the image) is gathered with stride `stride_w` between the zero edges
//!   (NEON: de-interleaving loads for strides 2 and 3).
//!
//! Both write every element of `col` (tests fill it with NaN first). A `kh x 1` conv with
//! stride 1 and no padding needs no im2col at all: see [`super::gemm::BRows`].

use super::conv::{gather_scalar, tap_range};
use super::gemm::Epilogue;
use super::{BackendType, Portable, X86Isa, X86};

/// The geometry of a 2-D sliding window over `[channels, height, width]`: kernel, stride,
/// top/left zero padding, and the output size (which fixes the bottom/right padding).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Window2d {
    /// Input channels.
    pub channels: usize,
    /// Input height (rows).
    pub height: usize,
    /// Input width (columns).
    pub width: usize,
    /// Kernel rows (`>= 1`).
    pub kernel_h: usize,
    /// Kernel columns (`>= 1`).
    pub kernel_w: usize,
    /// Step between output rows, in input rows (`>= 1`).
    pub stride_h: usize,
    /// Step between output columns, in input columns (`>= 1`).
    pub stride_w: usize,
    /// Zero rows above the image.
    pub pad_top: usize,
    /// Zero columns left of the image.
    pub pad_left: usize,
    /// Output rows.
    pub out_height: usize,
    /// Output columns.
    pub out_width: usize,
}

impl Window2d {
    /// Reduction rows `channels * kernel_h * kernel_w` (`None` on overflow).
    pub fn rows(&self) -> Option<usize> {
        self.channels.checked_mul(self.kernel_h)?.checked_mul(self.kernel_w)
    }

    /// Output pixels `out_height * out_width` (`None` on overflow).
    pub fn pixels(&self) -> Option<usize> {
        self.out_height.checked_mul(self.out_width)
    }

    /// Checks the kernel contract of [`Conv2dKernels::im2col_2d`] (panics) and returns the
    /// reduction rows.
    fn check(&self, x_len: usize, first: usize, count: usize, col_len: usize) -> usize {
        assert!(
            self.kernel_h >= 1 && self.kernel_w >= 1 && self.stride_h >= 1 && self.stride_w >= 1,
            "im2col_2d: kernel/stride 0"
        );
        let plane = self.height.checked_mul(self.width);
        assert_eq!(
            Some(x_len),
            plane.and_then(|p| p.checked_mul(self.channels)),
            "im2col_2d: input length"
        );
        let rows = self.rows().expect("im2col_2d: rows overflow");
        assert_eq!(Some(col_len), rows.checked_mul(count), "im2col_2d: col length");
        let pixels = self.pixels().expect("im2col_2d: pixels overflow");
        assert!(first.checked_add(count).is_some_and(|e| e <= pixels), "im2col_2d: tile");
        let reach = |out: usize, s: usize, k: usize| {
            out.checked_mul(s).and_then(|a| a.checked_add(k)).is_some()
        };
        assert!(
            reach(self.out_height, self.stride_h, self.kernel_h)
                && reach(self.out_width, self.stride_w, self.kernel_w)
                && self.pad_top.checked_add(self.height).is_some()
                && self.pad_left.checked_add(self.width).is_some(),
            "im2col_2d: window positions overflow"
        );
        rows
    }

    /// The row-runs case (see the module docs): strides 1, no top padding, no row below the
    /// image read, and `out_width == width`.
    fn row_runs(&self) -> bool {
        self.stride_h == 1
            && self.stride_w == 1
            && self.pad_top == 0
            && self.out_width == self.width
            && self.out_height + self.kernel_h - 1 <= self.height
    }
}

/// The geometry of [`Conv2dKernels::conv_rows`]: a `kernel_h x kernel_w` conv at stride 1
/// over `[channels, height, width]`, "valid" along the height (no top or bottom padding)
/// and "same" along the width: `pad_left` zero columns on the left and `kernel_w - 1 -
/// pad_left` on the right. The output is `[out_channels, height - kernel_h + 1, width]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RowConv {
    /// Input channels.
    pub channels: usize,
    /// Output channels.
    pub out_channels: usize,
    /// Input rows (`>= kernel_h`).
    pub height: usize,
    /// Image columns (input and output).
    pub width: usize,
    /// Kernel rows (`>= 1`).
    pub kernel_h: usize,
    /// Kernel columns (`>= 1`).
    pub kernel_w: usize,
    /// Zero columns left of the image (`< kernel_w`).
    pub pad_left: usize,
}

/// The conv2d kernels: im2col, and optionally a direct `1 x kernel_w` conv.
pub trait Conv2dKernels: BackendType {
    /// im2col of the output pixels `first .. first + count` (row-major pixel numbers,
    /// `p = oh * out_width + ow`):
    /// `col[(c * kernel_h + i) * kernel_w + j, n] = x[c, ih, iw]` for `p = first + n`, with
    /// `ih = oh * stride_h + i - pad_top`, `iw = ow * stride_w + j - pad_left`, and zero
    /// outside the image. `x`: `[channels, height, width]`; `col` row-major
    /// `[channels * kernel_h * kernel_w, count]`. Every element of `col` is written.
    ///
    /// # Panics
    /// When a kernel size or stride is 0, `x.len() != channels * height * width`,
    /// `col.len() != channels * kernel_h * kernel_w * count`, `first + count > out_height *
    /// out_width`, or the window positions overflow `usize`.
    fn im2col_2d(x: &[f32], window: Window2d, first: usize, count: usize, col: &mut [f32]) {
        let copy = |s: &[f32], d: &mut [f32]| d.copy_from_slice(s);
        im2col_2d_with(x, window, first, count, col, copy, gather_scalar);
    }

    /// A conv "valid" along the height and "same" along the width at stride 1
    /// ([`RowConv`]), as a packed-A GEMM that reads `x` (`[channels, height, width]`)
    /// directly instead of an im2col copy, where the backend has such a kernel:
    /// `y[o, p] = e(bias[o] + sum_{c, i, j} W[o, c, i, j] x[c, p + i * width + j -
    /// pad_left])` over the pixels `p` of `[out_channels, height - kernel_h + 1, width]`,
    /// with zero where column `p % width + j - pad_left` is outside the image; `packed` is
    /// [`pack_a`](super::gemm::pack_a) of `W` as `[out_channels, channels * kernel_h *
    /// kernel_w]` (PyTorch's layout read row-major). The result is bit for bit what
    /// [`Conv2dKernels::im2col_2d`] followed by
    /// [`GemmKernels::gemm_packed_a_rows`](super::GemmKernels::gemm_packed_a_rows) give on
    /// the same backend. Returns `false`, writing nothing, when the backend has no such
    /// kernel (the default; NEON; the portable backend below the x86-64 AVX-512F level or
    /// for `kernel_w > 3`): the caller then runs im2col and the GEMM.
    ///
    /// # Panics
    /// When it would return `true`, on a slice shorter than the geometry needs (`x`:
    /// `channels * height * width`, `packed`: `packed_a_len(out_channels, channels *
    /// kernel_h * kernel_w)`, `y`: `out_channels * (height - kernel_h + 1) * width`,
    /// `bias`: `out_channels`), `kernel_h` 0 or above `height`, `pad_left >= kernel_w`, or
    /// a size that overflows.
    ///
    /// On x86-64 at the AVX-512F level (`kernel_w <= 3`): masked loads of the input rows
    /// (`gemm::x86::conv_rows`); elsewhere `false`.
    #[allow(unused_variables)]
    fn conv_rows(
        packed: &[f32],
        g: RowConv,
        x: &[f32],
        bias: Option<&[f32]>,
        epilogue: Option<Epilogue>,
        y: &mut [f32],
    ) -> bool {
        #[cfg(all(target_arch = "x86_64", target_feature = "sse2", not(miri)))]
        {
            use super::gemm::x86;
            // SAFETY: `detected()` only returns a level whose extensions the CPU (or the
            // build's target) has.
            unsafe { x86::conv_rows(x86::detected(), g, packed, x, bias, epilogue, y) }
        }
        #[cfg(not(all(target_arch = "x86_64", target_feature = "sse2", not(miri))))]
        false
    }
}

/// The im2col driver; `copy(src, dst)` copies equal-length slices and `gather(src, stride,
/// dst)` writes `dst[j] = src[j * stride]` (`src.len() >= (dst.len() - 1) * stride + 1`).
#[inline(always)]
fn im2col_2d_with(
    x: &[f32],
    w: Window2d,
    first: usize,
    count: usize,
    col: &mut [f32],
    copy: impl Fn(&[f32], &mut [f32]),
    gather: impl Fn(&[f32], usize, &mut [f32]),
) {
    let rows = w.check(x.len(), first, count, col.len());
    if rows == 0 || count == 0 {
        return;
    }
    if w.row_runs() {
        row_runs(x, w, first, count, col, copy);
    } else {
        general(x, w, first, count, col, gather);
    }
}

/// The row-runs strategy: one shifted copy per reduction row, then the padding columns.
#[inline(always)]
fn row_runs(
    x: &[f32],
    w: Window2d,
    first: usize,
    count: usize,
    col: &mut [f32],
    copy: impl Fn(&[f32], &mut [f32]),
) {
    let (width, plane) = (w.width, w.height * w.width);
    let (kh, kw, pl) = (w.kernel_h, w.kernel_w, w.pad_left);
    // Tile position of the first pixel of column 0 of an output row (mod width).
    let phase = (width - first % width) % width;
    // Zeroes tile positions q, q + width, ... (one padding column) of `row`.
    let zero_column = |row: &mut [f32], ow: usize| {
        let mut q = phase + ow;
        if q >= width {
            q -= width;
        }
        while q < count {
            row[q] = 0.0;
            q += width;
        }
    };
    for i in 0..kh {
        for j in 0..kw {
            // Pixel p reads x[c * plane + i * width + j + p - pl]: the tile is one shifted
            // run per channel. Its pixels before `lo` / from `hi` on would read outside the
            // channel's plane; they all lie in padding columns (ow < pl - j, resp. ow >=
            // width + pl - j), which are zeroed below, so they are not copied.
            let start = (i * width + j + first) as isize - pl as isize;
            let lo = (-start).clamp(0, count as isize) as usize;
            let hi = (plane as isize - start).clamp(lo as isize, count as isize) as usize;
            let s0 = (start + lo as isize) as usize;
            // Padding columns, at most kw - 1 per output row.
            let left = pl.saturating_sub(j).min(width);
            let right = j.saturating_sub(pl).min(width);
            for c in 0..w.channels {
                let row = &mut col[((c * kh + i) * kw + j) * count..][..count];
                if lo < hi {
                    copy(&x[c * plane + s0..][..hi - lo], &mut row[lo..hi]);
                }
                for ow in 0..left {
                    zero_column(row, ow);
                }
                for ow in width - right..width {
                    zero_column(row, ow);
                }
            }
        }
    }
}

/// The general strategy: per reduction row and output row, zeros above/below the image and
/// in the left/right padding, a strided gather in between.
#[inline(always)]
fn general(
    x: &[f32],
    w: Window2d,
    first: usize,
    count: usize,
    col: &mut [f32],
    gather: impl Fn(&[f32], usize, &mut [f32]),
) {
    let (width, plane, ow_n) = (w.width, w.height * w.width, w.out_width);
    let (kh, kw, sw, pl) = (w.kernel_h, w.kernel_w, w.stride_w, w.pad_left);
    let (oh0, oh1) = (first / ow_n, (first + count - 1) / ow_n);
    for j in 0..kw {
        // Output columns whose tap j reads inside the image.
        let (lo_j, hi_j) = tap_range(j, sw, pl, width, ow_n);
        for c in 0..w.channels {
            let xc = &x[c * plane..(c + 1) * plane];
            for i in 0..kh {
                let row = &mut col[((c * kh + i) * kw + j) * count..][..count];
                for oh in oh0..=oh1 {
                    let base = oh * ow_n;
                    // This output row's columns inside the tile, and their slice of `row`.
                    let (ow_a, ow_b) =
                        (first.max(base) - base, (first + count).min(base + ow_n) - base);
                    let dst = &mut row[base + ow_a - first..base + ow_b - first];
                    let ih = (oh * w.stride_h + i).checked_sub(w.pad_top).filter(|&h| h < w.height);
                    let Some(ih) = ih else {
                        dst.fill(0.0);
                        continue;
                    };
                    let (lo, hi) = (lo_j.clamp(ow_a, ow_b), hi_j.clamp(ow_a, ow_b));
                    dst[..lo - ow_a].fill(0.0);
                    dst[hi - ow_a..].fill(0.0);
                    if lo < hi {
                        let s0 = ih * width + lo * sw + j - pl;
                        let last = (hi - 1 - lo) * sw;
                        gather(&xc[s0..=s0 + last], sw, &mut dst[lo - ow_a..hi - ow_a]);
                    }
                }
            }
        }
    }
}

impl Conv2dKernels for Portable {}

impl<I: X86Isa> Conv2dKernels for X86<I> {}

#[cfg(all(target_arch = "aarch64", feature = "neon"))]
mod neon {
    use core::arch::aarch64::*;

    /// `dst = src` (equal lengths), without a call or a loop LLVM would turn into one:
    /// 16 values per `ld1`/`st1` of 4 registers in an assembly loop, then one overlapping
    /// block for the remainder (lengths >= 16), 4-value blocks and an overlapping last one
    /// (4..16), or single values (< 4). Explicit so that bare-metal builds do not depend
    /// on the platform's `memcpy`, and short runs cost no call.
    #[inline(always)]
    pub(super) fn copy(src: &[f32], dst: &mut [f32]) {
        assert_eq!(src.len(), dst.len(), "copy: lengths differ");
        let n = dst.len();
        let (s, d) = (src.as_ptr(), dst.as_mut_ptr());
        // SAFETY: every access below is inside `0..n` of both slices (which do not overlap:
        // one is shared, the other exclusive): the loop copies `16 * (n / 16)` values,
        // the overlapping blocks start at `n - 16` / `n - 4` >= 0, and the small cases
        // check `n` first.
        unsafe {
            if n >= 16 {
                core::arch::asm!(
                    "2:",
                    "ld1 {{v0.4s, v1.4s, v2.4s, v3.4s}}, [{s}], #64",
                    "st1 {{v0.4s, v1.4s, v2.4s, v3.4s}}, [{d}], #64",
                    "subs {n}, {n}, #1",
                    "b.ne 2b",
                    s = inout(reg) s => _,
                    d = inout(reg) d => _,
                    n = inout(reg) n / 16 => _,
                    out("v0") _, out("v1") _, out("v2") _, out("v3") _,
                    options(nostack),
                );
                if !n.is_multiple_of(16) {
                    vst1q_f32_x4(d.add(n - 16), vld1q_f32_x4(s.add(n - 16)));
                }
            } else if n >= 4 {
                vst1q_f32(d, vld1q_f32(s));
                if n >= 8 {
                    vst1q_f32(d.add(4), vld1q_f32(s.add(4)));
                }
                if n >= 12 {
                    vst1q_f32(d.add(8), vld1q_f32(s.add(8)));
                }
                vst1q_f32(d.add(n - 4), vld1q_f32(s.add(n - 4)));
            } else {
                if n > 0 {
                    *d = *s;
                }
                if n > 1 {
                    *d.add(1) = *s.add(1);
                }
                if n > 2 {
                    *d.add(2) = *s.add(2);
                }
            }
        }
    }
}

#[cfg(all(target_arch = "aarch64", feature = "neon"))]
impl Conv2dKernels for super::Neon {
    fn im2col_2d(x: &[f32], window: Window2d, first: usize, count: usize, col: &mut [f32]) {
        im2col_2d_with(x, window, first, count, col, neon::copy, super::conv::neon::gather);
    }
}
