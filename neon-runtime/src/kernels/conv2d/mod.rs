//! conv2d kernels: im2col of a 2-D window over channel-first images, the `B` operand of
//! the packed GEMM ([`super::GemmKernels::gemm_packed_a`]), and a direct kernel for
//! convs "valid" along the height and "same" along the width where a backend has one.
//!
//! Images are `x[channels, height, width]`, row-major (one `height x width` plane per
//! channel). The window ([`Window2d`] at dilation 1) is PyTorch's `Conv2d` without groups: output pixel
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
//!
//! Files: this one holds the geometry ([`Window2d`], shared with the int8 kernels, with
//! TFLite's [`Padding`] rules; [`RowConv`]), the trait with its
//! contract checks and the im2col driver (the choice of strategy, both strategies over a
//! backend's copy and gather); `portable.rs` the scalar copy and gather, `neon.rs` the NEON
//! ones, `x86.rs` the AVX-512F direct kernel ([`Conv2dKernels::conv_rows`]). The family
//! depends on [`gemm`](super::gemm) (packing, [`Epilogue`], the x86 tiles), never the
//! reverse.

#[cfg(all(target_arch = "aarch64", feature = "neon"))]
mod neon;
mod portable;
mod x86;

use super::conv::tap_range;
use super::gemm::{bias_only_a, check_packed_a, packed_a_len, BRows, Epilogue, GemmA};
use super::gemm::{GemmKernels, PACK_MR};
use super::parallel::{block, grid_blocks, task_count, Disjoint, Grid, Parallel};
use super::strided::StridedMut;
use super::{BackendType, Portable};
use crate::error::{Error, ShapeError};
use core::ops::Range;

/// The largest `kernel_w` for which the x86-64 backend at the AVX-512F level has a direct
/// [`Conv2dKernels::conv_rows`] kernel.
pub const ROW_CONV_MAX_KW: usize = 3;

/// The geometry of a 2-D sliding window over an image of `channels` planes of `height x
/// width`: kernel, stride, dilation, top/left zero padding, and the output size (which fixes
/// the bottom/right padding). Output pixel `(oh, ow)`, tap `(i, j)` reads input pixel `(oh *
/// stride_h + i * dilation_h - pad_top, ow * stride_w + j * dilation_w - pad_left)`, a zero
/// outside the image. The layout of the channels is the kernel family's: channel-first for
/// [`Conv2dKernels::im2col_2d`] (dilation 1 only), NHWC for the int8 kernels
/// ([`super::int8`]); [`with_padding`](Self::with_padding) resolves TFLite's padding rules.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
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
    /// Step between kernel rows, in input rows (`>= 1`).
    pub dilation_h: usize,
    /// Step between kernel columns, in input columns (`>= 1`).
    pub dilation_w: usize,
    /// Zero rows above the image.
    pub pad_top: usize,
    /// Zero columns left of the image.
    pub pad_left: usize,
    /// Output rows.
    pub out_height: usize,
    /// Output columns.
    pub out_width: usize,
}

/// How a [`Window2d`]'s output size and padding follow from the image, kernel, stride and
/// dilation (TFLite's `Padding`; `effective_kernel = (kernel - 1) * dilation + 1`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Padding {
    /// No padding: `out = (in + stride - effective_kernel) / stride`.
    Valid,
    /// `out = ceil(in / stride)`, zeros around the image: `total = (out - 1) * stride +
    /// effective_kernel - in` (at least 0), `total / 2` before the image, the rest after.
    Same,
}

/// `(out, pad_before)` along one axis (TFLite `padding.h`), `None` when empty or overflowing.
fn axis_out(
    size: usize,
    kernel: usize,
    stride: usize,
    dilation: usize,
    p: Padding,
) -> Option<(usize, usize)> {
    let effective = (kernel - 1).checked_mul(dilation)?.checked_add(1)?;
    let out = match p {
        Padding::Same => size.div_ceil(stride),
        Padding::Valid => (size.checked_add(stride)?.checked_sub(effective)?) / stride,
    };
    if out == 0 {
        return None;
    }
    let reach = (out - 1).checked_mul(stride)?.checked_add(effective)?;
    Some((out, reach.saturating_sub(size) / 2))
}

/// Whether every input position along one axis, `o * stride + k * dilation - pad` for `o <
/// out`, `k < kernel`, and the size fit `isize`.
fn axis_fits(out: usize, stride: usize, kernel: usize, dilation: usize, pad: usize) -> bool {
    let reach = (out - 1).checked_mul(stride).zip((kernel - 1).checked_mul(dilation));
    reach.and_then(|(a, b)| a.checked_add(b)).is_some_and(|r| r <= isize::MAX as usize)
        && pad <= isize::MAX as usize
}

impl Window2d {
    /// The window of TFLite's padding rule `padding` over `channels` planes of `[height,
    /// width]` (TFLite `ComputeOutSize` and `ComputePaddingWithOffset`, `kernels/padding.h`):
    /// output size and top/left padding from kernel `[kernel_h, kernel_w]`, stride and
    /// dilation (height first).
    ///
    /// # Errors
    /// [`Error::Shape`] (`Geometry`) when a size, kernel, stride or dilation is 0, or the
    /// output would be empty (a valid window larger than the image) or overflow.
    pub fn with_padding(
        channels: usize,
        [height, width]: [usize; 2],
        [kernel_h, kernel_w]: [usize; 2],
        [stride_h, stride_w]: [usize; 2],
        [dilation_h, dilation_w]: [usize; 2],
        padding: Padding,
    ) -> Result<Self, Error> {
        let geometry = |reason| Error::Shape(ShapeError::Geometry { op: "window2d", reason });
        let sizes = [channels, height, width, kernel_h, kernel_w];
        if sizes.contains(&0) || [stride_h, stride_w, dilation_h, dilation_w].contains(&0) {
            return Err(geometry("image, kernel, stride and dilation must be >= 1"));
        }
        let rows = axis_out(height, kernel_h, stride_h, dilation_h, padding);
        let cols = axis_out(width, kernel_w, stride_w, dilation_w, padding);
        let (Some((out_height, pad_top)), Some((out_width, pad_left))) = (rows, cols) else {
            return Err(geometry("the window gives an empty output"));
        };
        let window = Window2d {
            channels,
            height,
            width,
            kernel_h,
            kernel_w,
            stride_h,
            stride_w,
            dilation_h,
            dilation_w,
            pad_top,
            pad_left,
            out_height,
            out_width,
        };
        if !window.is_valid() {
            return Err(geometry("the window gives an empty output"));
        }
        Ok(window)
    }

    /// Whether every size, stride and dilation (output size included) is at least 1 and
    /// every input position a tap can name fits `isize`.
    pub fn is_valid(&self) -> bool {
        let sizes = [self.channels, self.height, self.width, self.kernel_h, self.kernel_w];
        let steps = [self.stride_h, self.stride_w, self.dilation_h, self.dilation_w];
        !sizes.contains(&0)
            && !steps.contains(&0)
            && self.out_height >= 1
            && self.out_width >= 1
            && self.height <= isize::MAX as usize
            && self.width <= isize::MAX as usize
            && axis_fits(
                self.out_height,
                self.stride_h,
                self.kernel_h,
                self.dilation_h,
                self.pad_top,
            )
            && axis_fits(
                self.out_width,
                self.stride_w,
                self.kernel_w,
                self.dilation_w,
                self.pad_left,
            )
    }

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
        assert!(self.dilation_h == 1 && self.dilation_w == 1, "im2col_2d: dilation above 1");
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

impl RowConv {
    /// Checks the kernel contract of [`Conv2dKernels::conv_rows`] (panics) and returns
    /// `(m, n, k)`: output channels, output pixels, reduction rows.
    fn check(
        &self,
        packed: &[f32],
        x: &[f32],
        bias: Option<&[f32]>,
        y: &[f32],
    ) -> (usize, usize, usize) {
        assert!(self.pad_left < self.kernel_w, "conv_rows: pad_left >= kernel_w");
        assert!(self.kernel_h >= 1 && self.kernel_h <= self.height, "conv_rows: kernel_h");
        let plane = self.height.checked_mul(self.width).expect("conv_rows: plane overflows");
        let k = self
            .channels
            .checked_mul(self.kernel_h)
            .and_then(|v| v.checked_mul(self.kernel_w))
            .expect("conv_rows: k overflows");
        let (m, n) = (self.out_channels, (self.height - self.kernel_h + 1) * self.width);
        let x_len = self.channels.checked_mul(plane);
        assert!(x_len.is_some_and(|l| x.len() >= l), "conv_rows: x too short");
        assert!(
            m.checked_add(super::gemm::PACK_MR).and_then(|v| v.checked_mul(k)).is_some()
                && packed.len() >= packed_a_len(m, k),
            "conv_rows: packed a too short"
        );
        assert!(m.checked_mul(n).is_some_and(|l| y.len() >= l), "conv_rows: y too short");
        if let Some(bias) = bias {
            assert!(bias.len() >= m, "conv_rows: bias too short");
        }
        (m, n, k)
    }
}

/// The conv2d kernels: im2col, and optionally a direct conv that reads its input in place.
///
/// The entry points ([`im2col_2d`](Self::im2col_2d), [`conv_rows`](Self::conv_rows))
/// check the contract and answer empty shapes themselves, then call the matching hook; the
/// hooks' provided bodies are the portable ones. A backend overrides hooks only, never
/// entry points.
pub trait Conv2dKernels: BackendType {
    /// Output pixels per column tile of this backend's direct kernel
    /// ([`conv_rows`](Self::conv_rows)), which covers the pixels from the first on: the
    /// unit of the pixel blocks of [`conv_rows_in`](Self::conv_rows_in).
    const CONV_ROWS_COL_TILE: usize = 1;

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
        let rows = window.check(x.len(), first, count, col.len());
        if rows == 0 || count == 0 {
            return;
        }
        // SAFETY: the contract was checked above and every size is at least 1.
        unsafe { Self::im2col_2d_unchecked(x, window, first..first + count, col) }
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
    /// [`GemmKernels::gemm_packed_a`] give on the same
    /// backend. Returns `false`, writing nothing, when the backend has no such kernel
    /// ([`conv_rows_supported`](Self::conv_rows_supported) is false: portable, NEON,
    /// x86-64 AVX2, or `kernel_w` above [`ROW_CONV_MAX_KW`]): the caller then runs
    /// im2col and the GEMM.
    ///
    /// # Panics
    /// When it would return `true`, on a slice shorter than the geometry needs (`x`:
    /// `channels * height * width`, `packed`: `packed_a_len(out_channels, channels *
    /// kernel_h * kernel_w)`, `y`: `out_channels * (height - kernel_h + 1) * width`,
    /// `bias`: `out_channels`), `kernel_h` 0 or above `height`, `pad_left >= kernel_w`, or
    /// a size that overflows.
    fn conv_rows(
        packed: &[f32],
        g: RowConv,
        x: &[f32],
        bias: Option<&[f32]>,
        epilogue: Option<Epilogue>,
        y: &mut [f32],
    ) -> bool {
        if !Self::conv_rows_supported(&g) {
            return false;
        }
        let (m, n, k) = g.check(packed, x, bias, y);
        if m == 0 || n == 0 {
            return true;
        }
        let mut y = StridedMut::new(y, m, n, n);
        if k == 0 {
            bias_only_a(bias, epilogue, &mut y);
            return true;
        }
        // SAFETY: the contract was checked above, every size is at least 1, and the
        // backend has a kernel for `g`.
        unsafe { Self::conv_rows_unchecked(packed, g, x, (bias, epilogue), 0..n, y) };
        true
    }

    /// [`conv_rows`](Self::conv_rows) on `par`: a grid of blocks of whole row panels of
    /// the packed weights ([`PACK_MR`] output channels) by whole column tiles
    /// ([`CONV_ROWS_COL_TILE`](Self::CONV_ROWS_COL_TILE) output pixels; the same bits for
    /// any context). `Ok(false)`, writing nothing, where `conv_rows` returns `false`.
    ///
    /// # Errors
    /// The context's ([`Parallel::dispatch`]); `y` is then partly written.
    ///
    /// # Panics
    /// As [`conv_rows`](Self::conv_rows), before any task runs.
    fn conv_rows_in(
        par: &dyn Parallel,
        (packed, g): (&[f32], RowConv),
        x: &[f32],
        (bias, epilogue): (Option<&[f32]>, Option<Epilogue>),
        y: &mut [f32],
    ) -> Result<bool, Error> {
        if !Self::conv_rows_supported(&g) {
            return Ok(false);
        }
        let (m, n, k) = g.check(packed, x, bias, y);
        if m == 0 || n == 0 || k == 0 {
            return Ok(Self::conv_rows(packed, g, x, bias, epilogue, y));
        }
        let grid = Grid {
            shape: (m, n, n),
            tile: (PACK_MR, Self::CONV_ROWS_COL_TILE),
            work_per_value: k,
            fixed_rows: 0,
            join_tail: false,
        };
        grid_blocks(par, grid, y, |rows, pixels, y| {
            let gs = RowConv { out_channels: rows.len(), ..g };
            let (a, b) = (&packed[rows.start * k..], bias.map(|b| &b[rows.start..]));
            // SAFETY: the contract was checked for all channels and every size is at
            // least 1; panel `rows.start / PACK_MR` of `packed` starts at `rows.start * k`,
            // and `y` is the block of channels `rows` and pixels `pixels` (a multiple of
            // the column tile from the first pixel on).
            unsafe { Self::conv_rows_unchecked(a, gs, x, (b, epilogue), pixels, y) }
        })?;
        Ok(true)
    }

    /// Hook of [`im2col_2d`](Self::im2col_2d), called only by it, for the output pixels
    /// `pixels` (`first .. first + count`).
    ///
    /// # Safety
    /// The contract of `im2col_2d` holds (checked), with `pixels` not empty and at least
    /// one reduction row.
    unsafe fn im2col_2d_unchecked(
        x: &[f32],
        window: Window2d,
        pixels: Range<usize>,
        col: &mut [f32],
    ) {
        portable::im2col_2d(x, window, pixels.start, pixels.len(), col)
    }

    /// Hook of [`conv_rows`](Self::conv_rows): whether this backend has a direct kernel
    /// for `g` (provided: none).
    fn conv_rows_supported(g: &RowConv) -> bool {
        let _ = g;
        false
    }

    /// Hook of [`conv_rows`](Self::conv_rows), called only by it and by the blocks of
    /// [`conv_rows_in`](Self::conv_rows_in), and only when
    /// [`conv_rows_supported`](Self::conv_rows_supported) accepted `g`: the direct kernel
    /// for the output pixels `pixels` of every output channel, into the block `y`
    /// (`out_channels x pixels.len()`, rows `n` apart, `n` the output pixels of `g`).
    /// The provided body is never called (no portable kernel) and panics.
    ///
    /// # Safety
    /// The contract of `conv_rows` holds (checked), output channels, output pixels and
    /// reduction rows are at least 1, `conv_rows_supported(&g)` is true, and `pixels` is
    /// a non-empty range of the output pixels starting on a multiple of
    /// [`CONV_ROWS_COL_TILE`](Self::CONV_ROWS_COL_TILE).
    unsafe fn conv_rows_unchecked(
        packed: &[f32],
        g: RowConv,
        x: &[f32],
        (bias, epilogue): (Option<&[f32]>, Option<Epilogue>),
        pixels: Range<usize>,
        y: StridedMut<'_>,
    ) {
        let _ = (packed, x, bias, epilogue, pixels, y);
        unreachable!("conv_rows_unchecked without a kernel for {g:?}")
    }
}

impl Conv2dKernels for Portable {}

/// Output pixels per task below which [`im2col_gemm_in`] copies the whole tile on the
/// calling thread instead: each im2col call costs a few tens of instructions per reduction
/// row whatever its width, which narrow blocks repeat for little copying (openWakeWord's
/// incremental step, 12-256 pixels per conv; `BENCHMARKS.md`, "Host: threads (x86-64)").
const IM2COL_MIN_PIXELS: usize = 128;

/// The weights side of [`im2col_gemm_in`]: [`pack_a`](super::gemm::pack_a) of `W[m, k]`
/// (`m` output channels, `k = channels * kernel_h * kernel_w` in im2col's reduction order),
/// the bias (`m` values) and the output stage.
#[derive(Clone, Copy, Debug)]
pub struct PackedConv<'a> {
    /// The packed weights.
    pub packed: &'a [f32],
    /// Output channels.
    pub m: usize,
    /// `bias[o]` added to output channel `o`.
    pub bias: Option<&'a [f32]>,
    /// The output stage fused into the GEMM.
    pub epilogue: Option<Epilogue>,
}

/// A conv2d tile as im2col + packed-A GEMM on `par`: for the output pixels `p` in `first
/// .. first + count` (row-major pixel numbers of `window`'s output),
/// `y[o, p - first] = e(bias[o] + W[o, :] · col[:, p])` with `col` the
/// [`Conv2dKernels::im2col_2d`] operand, `y` rows `ldc` apart. The pixels split into blocks of whole column tiles
/// ([`GemmKernels::GEMM_A_COL_TILE`]), each task copying its own pixels into its own part
/// of `col` (`col[k * c0 .. k * c1]` as a `[k, c1 - c0]` operand) and multiplying every
/// output channel by them: the im2col copies run on the threads too, the scratch is the
/// same `k * count` values for any context, and every context gives the serial call's bits
/// (the same tiles over the same `B` values). One block (im2col of the whole tile, then
/// the GEMM) when `par` has one worker or the work is small; im2col of the whole tile on
/// the calling thread, then the GEMM split over `par`, when the blocks would have fewer
/// than 128 pixels each.
///
/// # Errors
/// The context's ([`Parallel::dispatch`]); `y` is then partly written.
///
/// # Panics
/// Before any task runs: as [`Conv2dKernels::im2col_2d`] (with `col` at least `k * count`
/// values) and [`GemmKernels::gemm_packed_a`] (`packed`, `bias`, `y` shorter than the
/// geometry needs, `ldc < count`).
pub fn im2col_gemm_in<B: Conv2dKernels + GemmKernels>(
    par: &dyn Parallel,
    (x, window): (&[f32], Window2d),
    (first, count): (usize, usize),
    w: PackedConv<'_>,
    col: &mut [f32],
    (y, ldc): (&mut [f32], usize),
) -> Result<(), Error> {
    let k = window.rows().expect("im2col_2d: rows overflow");
    let need = k.checked_mul(count).expect("im2col_2d: col length overflows");
    assert!(col.len() >= need, "im2col_gemm_in: col too short");
    let col = &mut col[..need];
    window.check(x.len(), first, count, col.len());
    let PackedConv { packed, m, bias, epilogue } = w;
    let tile = B::GEMM_A_COL_TILE.max(1);
    let tiles = count.div_ceil(tile);
    let tasks = task_count(par, tiles, m.saturating_mul(k).saturating_mul(tile));
    if tasks <= 1 || count < tasks * IM2COL_MIN_PIXELS {
        // One block, or blocks too narrow for the copies: im2col of the whole tile on the
        // calling thread, then the GEMM's own split (the same bits either way).
        B::im2col_2d(x, window, first, count, col);
        let g = GemmA { m, n: count, rows: BRows::contiguous(k, count), epilogue, ldc };
        return B::gemm_packed_a_in(par, g, packed, col, bias, y);
    }
    // The whole product's contract, before any task runs (each block's GEMM checks its
    // own); two or more tasks mean m, k >= 1 and count >= 2.
    let g = GemmA { m, n: count, rows: BRows::contiguous(k, count), epilogue, ldc };
    check_packed_a(&g, packed, col, bias, y);
    let (cols_out, y_out) = (Disjoint::new(col), Disjoint::new(y));
    par.dispatch(tasks, &|task, _| {
        let t = block(tiles, tasks, task);
        let (c0, c1) = (t.start * tile, (t.end * tile).min(count));
        if c0 >= c1 {
            return;
        }
        let n = c1 - c0;
        // SAFETY: the tasks' pixel ranges are disjoint, so are their `k * n` values of
        // `col` and their columns of `y` (an `m x count` matrix, rows `ldc >= count`
        // apart, checked above).
        let (col, yb) = unsafe { (cols_out.piece(k * c0..k * c1), y_out.block(0..m, c0..c1, ldc)) };
        B::im2col_2d(x, window, first + c0, n, col);
        let g = GemmA { m, n, rows: BRows::contiguous(k, n), epilogue, ldc };
        B::gemm_packed_a_to(g, packed, col, bias, yb);
    })
}

/// A backend's primitives for the im2col driver: `copy(src, dst)` copies equal-length
/// slices, `gather(src, stride, dst)` writes `dst[j] = src[j * stride]` (`src.len() >=
/// (dst.len() - 1) * stride + 1`).
#[derive(Clone, Copy)]
struct Im2colOps<C, G> {
    copy: C,
    gather: G,
}

/// The im2col driver (contract checked, sizes >= 1): the row-runs strategy where it
/// applies, else the general one, over a backend's copy and gather.
#[inline(always)]
fn im2col_2d_with<C, G>(
    x: &[f32],
    w: Window2d,
    (first, count): (usize, usize),
    col: &mut [f32],
    ops: Im2colOps<C, G>,
) where
    C: Fn(&[f32], &mut [f32]),
    G: Fn(&[f32], usize, &mut [f32]),
{
    let Im2colOps { copy, gather } = ops;
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
