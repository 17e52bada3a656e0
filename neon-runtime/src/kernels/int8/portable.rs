//! The portable int8-activation kernels: the default bodies of every
//! [`Int8Kernels`](super::Int8Kernels) hook, plain Rust on every target. The arithmetic is
//! TFLite's reference integer kernels' (module docs of [`int8`](super)); the loops are
//! ordered so the innermost one runs over contiguous channels (conv2d: input channels of one
//! tap against the filter row; depthwise: channels of one tap, in blocks of [`DW_BLOCK`]).
//! Every i32 sum wraps (the exact result modulo 2^32, in any order).

use super::{
    AffineQuant, ConvGeometry, DepthwiseGeometry, FcGeometry, Int8Weights, LayerOperands,
    LayerQuant, OutputStage, Requant, Rounding, Window2d, ROW_SUMS_CHANNELS,
};
use core::ops::Range;

/// Output channels of a depthwise conv accumulated together (an i32 stack block).
pub(super) const DW_BLOCK: usize = 64;

/// `sum (x[i] - x_zp) * w[i]` with wrapping i32 sums (`x - x_zp` fits 9 bits, the product
/// 17).
#[inline]
fn dot(x: &[i8], w: &[i8], x_zp: i32) -> i32 {
    x.iter()
        .zip(w)
        .fold(0i32, |acc, (&x, &w)| acc.wrapping_add((i32::from(x) - x_zp) * i32::from(w)))
}

/// The kernel taps `k` whose input position `origin + k * dilation` lies in `0..size`
/// (`origin = o * stride - pad`, returned as well; it may be negative).
#[inline]
fn taps(
    o: usize,
    stride: usize,
    pad: usize,
    dilation: usize,
    kernel: usize,
    size: usize,
) -> (Range<usize>, isize) {
    let origin = (o * stride) as isize - pad as isize;
    let first = origin.min(0).unsigned_abs().div_ceil(dilation);
    let reach = size as isize - origin;
    let end = if reach <= 0 { 0 } else { ((reach as usize - 1) / dilation + 1).min(kernel) };
    (first.min(end)..end, origin)
}

/// One output pixel's inside taps: kernel rows and columns, and the input position of tap
/// `(0, 0)`.
pub(super) struct Pixel {
    rows: Range<usize>,
    y0: isize,
    cols: Range<usize>,
    x0: isize,
}

impl Pixel {
    /// The inside taps as `(tap number ky * KW + kx, input pixel number iy * W + ix)`.
    #[inline]
    pub(super) fn taps<'g>(&self, g: &'g Window2d) -> impl Iterator<Item = (usize, usize)> + 'g {
        let (cols, x0, y0) = (self.cols.clone(), self.x0, self.y0);
        self.rows.clone().flat_map(move |ky| {
            let iy = (y0 + (ky * g.dilation_h) as isize) as usize;
            cols.clone().map(move |kx| {
                let ix = (x0 + (kx * g.dilation_w) as isize) as usize;
                (ky * g.kernel_w + kx, iy * g.width + ix)
            })
        })
    }
}

impl Pixel {
    /// The first input pixel when this pixel's taps are all inside and read consecutive
    /// input pixels in tap order (tap `t` at pixel `first + t`: e.g. a `[K, 1]` kernel over
    /// a one-column image, or a 1x1 kernel), so that the input values of all taps are one
    /// contiguous run in the filter row's order.
    #[inline]
    pub(super) fn contiguous(&self, g: &Window2d) -> Option<usize> {
        let full = self.rows == (0..g.kernel_h) && self.cols == (0..g.kernel_w);
        let along_w = g.kernel_w == 1 || g.dilation_w == 1;
        let along_h = g.kernel_h == 1 || g.dilation_h * g.width == g.kernel_w;
        // All taps inside: `y0` and `x0` are >= 0.
        (full && along_w && along_h).then(|| self.y0 as usize * g.width + self.x0 as usize)
    }

    /// Calls `f(tap, input pixel)` for the inside taps in [`taps`](Self::taps)' order, as
    /// nested loops (cheaper per tap than the iterator).
    #[inline]
    pub(super) fn for_each_tap(&self, g: &Window2d, mut f: impl FnMut(usize, usize)) {
        for ky in self.rows.clone() {
            let iy = (self.y0 + (ky * g.dilation_h) as isize) as usize;
            for kx in self.cols.clone() {
                let ix = (self.x0 + (kx * g.dilation_w) as isize) as usize;
                f(ky * g.kernel_w + kx, iy * g.width + ix);
            }
        }
    }
}

/// The output pixels of `g` in row-major order (pixel `oy * out_width + ox`).
pub(super) fn pixels(g: &Window2d) -> impl Iterator<Item = Pixel> + '_ {
    (0..g.out_height).flat_map(move |oy| {
        let (rows, y0) = taps(oy, g.stride_h, g.pad_top, g.dilation_h, g.kernel_h, g.height);
        (0..g.out_width).map(move |ox| {
            let (cols, x0) = taps(ox, g.stride_w, g.pad_left, g.dilation_w, g.kernel_w, g.width);
            Pixel { rows: rows.clone(), y0, cols, x0 }
        })
    })
}

/// The output stage of channel `c` of `channels` applied to `acc`, as an i8 (the stage
/// clamps into it), in the channel's rounding ([`Rounding::at`]).
#[inline]
pub(super) fn finish(
    out: &OutputStage,
    w: &Int8Weights<'_>,
    (c, channels): (usize, usize),
    acc: i32,
) -> i8 {
    out.requant(w.multiplier(c)).apply(acc, out.rounding.at(c, channels)) as i8
}

/// A backend's pieces of the conv2d and fully connected loops ([`conv2d_with`],
/// [`fully_connected_with`]) for one layer's operands.
pub(super) trait DotPieces {
    /// The layer's input zero point, weights and output stage.
    fn quant(&self) -> &LayerQuant<'_>;

    /// `sum (x - x_zp) * w` over equal-length `x` and `w`, wrapping.
    fn dot(&self, x: &[i8], w: &[i8]) -> i32;

    /// [`dot`](Self::dot) over output channel `oc`'s whole filter row `w` (so a backend
    /// may use the row's precomputed sum).
    fn dot_row(&self, x: &[i8], w: &[i8], _oc: usize) -> i32 {
        self.dot(x, w)
    }

    /// `acc[j] = dot_row(x, row j of rows, oc0 + j)` for each `j` of `acc`, the rows
    /// `x.len()` long and consecutive in `rows` (output channels `oc0..oc0 + acc.len()`).
    fn dot_rows(&self, x: &[i8], rows: &[i8], oc0: usize, acc: &mut [i32]) {
        for (j, (a, w)) in acc.iter_mut().zip(rows.chunks_exact(x.len())).enumerate() {
            *a = self.dot_row(x, w, oc0 + j);
        }
    }

    /// Writes one output pixel or row, `y[j] = stage(acc(j))`.
    fn row(&self, y: &mut [i8], acc: &dyn Fn(usize) -> i32);
}

/// A vector backend's dot-product path (its `DotPath` enum): the kernels the conv2d and
/// fully connected loops call through [`OnPath`]. Public in this private module only (a
/// sealed trait): the bound of [`DotLayer`](super::DotLayer)'s impls and
/// [`layer_i8_on`](super::layer_i8_on).
pub trait PathKernels: Copy {
    /// `sum (x - x_zp) * w` over equal-length `x` and `w` on this path, wrapping.
    fn dot(self, x: &[i8], w: &[i8], x_zp: i32) -> i32;

    /// [`dot`](Self::dot) given `w_sum = sum w` (wrapping): a path that folds the input
    /// offset uses it instead of forming it.
    fn dot_with_sum(self, x: &[i8], w: &[i8], x_zp: i32, _w_sum: i32) -> i32 {
        self.dot(x, w, x_zp)
    }

    /// `acc[j] = dot_with_sum(x, row j of rows, x_zp, sums[j])` for each `j` of `acc`,
    /// the rows `x.len()` long and consecutive in `rows`.
    fn dot_rows_with_sums(self, x: &[i8], rows: &[i8], x_zp: i32, sums: &[i32], acc: &mut [i32]) {
        for ((a, w), &s) in acc.iter_mut().zip(rows.chunks_exact(x.len())).zip(sums) {
            *a = self.dot_with_sum(x, w, x_zp, s);
        }
    }

    /// Writes one output pixel or row, `y[j] = stage(acc(j))`, with the backend's output
    /// stage.
    fn row(q: &LayerQuant<'_>, y: &mut [i8], acc: &dyn Fn(usize) -> i32);

    /// The path that runs in `self`'s place on this CPU (`self` where it has it), or
    /// `None`: the portable kernel.
    fn usable(self) -> Option<Self>;

    /// conv2d on this path (checked arguments, a [`usable`](Self::usable) path):
    /// [`conv2d_with`] over [`OnPath`] unless the backend has its own loops.
    fn conv2d(self, g: &ConvGeometry, (x, q, sums): LayerOperands<'_>, y: &mut [i8]) {
        conv2d_with(g, x, y, &OnPath { path: self, q: &q, sums });
    }

    /// Fully connected on this path, as [`conv2d`](Self::conv2d) ([`fully_connected_with`]).
    fn fully_connected(self, g: &FcGeometry, (x, q, sums): LayerOperands<'_>, y: &mut [i8]) {
        fully_connected_with(g, x, y, &OnPath { path: self, q: &q, sums });
    }
}

/// The [`DotPieces`] of a vector backend: one layer's operands and the path its dot
/// products take.
pub(super) struct OnPath<'a, 'q, P> {
    /// The dot-product path.
    pub(super) path: P,
    /// The layer's input zero point, weights and output stage.
    pub(super) q: &'a LayerQuant<'q>,
    /// The filter's row sums ([`RowSums`](super::RowSums), one per output channel), if the
    /// layer was prepared with them.
    pub(super) sums: Option<&'a [i32]>,
}

#[cfg_attr(not(any(neon_x86, all(target_arch = "aarch64", feature = "neon"))), allow(dead_code))]
impl<P: PathKernels> DotPieces for OnPath<'_, '_, P> {
    fn quant(&self) -> &LayerQuant<'_> {
        self.q
    }

    fn dot(&self, x: &[i8], w: &[i8]) -> i32 {
        self.path.dot(x, w, self.q.x_zp)
    }

    #[inline]
    fn dot_row(&self, x: &[i8], w: &[i8], oc: usize) -> i32 {
        match self.sums {
            Some(sums) => self.path.dot_with_sum(x, w, self.q.x_zp, sums[oc]),
            None => self.path.dot(x, w, self.q.x_zp),
        }
    }

    fn dot_rows(&self, x: &[i8], rows: &[i8], oc0: usize, acc: &mut [i32]) {
        match self.sums {
            Some(sums) => {
                self.path.dot_rows_with_sums(x, rows, self.q.x_zp, &sums[oc0..], acc);
            }
            None => {
                for (j, (a, w)) in acc.iter_mut().zip(rows.chunks_exact(x.len())).enumerate() {
                    *a = self.dot_row(x, w, oc0 + j);
                }
            }
        }
    }

    fn row(&self, y: &mut [i8], acc: &dyn Fn(usize) -> i32) {
        P::row(self.q, y, acc);
    }
}

/// The portable pieces: the scalar dot product, the output stage one value at a time.
struct Scalar<'a, 'q>(&'a LayerQuant<'q>);

impl DotPieces for Scalar<'_, '_> {
    fn quant(&self) -> &LayerQuant<'_> {
        self.0
    }

    fn dot(&self, x: &[i8], w: &[i8]) -> i32 {
        dot(x, w, self.0.x_zp)
    }

    fn row(&self, y: &mut [i8], acc: &dyn Fn(usize) -> i32) {
        let n = y.len();
        for (j, y) in y.iter_mut().enumerate() {
            *y = finish(&self.0.out, &self.0.weights, (j, n), acc(j));
        }
    }
}

/// The portable conv2d (checked arguments).
pub(super) fn conv2d(g: &ConvGeometry, x: &[i8], q: LayerQuant<'_>, y: &mut [i8]) {
    conv2d_with(g, x, y, &Scalar(&q));
}

/// conv2d's loops (checked arguments) over a backend's pieces `p`: a pixel's outputs
/// ([`DotPieces::row`]) from their accumulators `acc(oc)`, the bias plus one
/// [`DotPieces::dot`] over the input channels per inside tap, or one
/// [`DotPieces::dot_row`] over the whole filter row where the pixel's inputs are contiguous
/// ([`Pixel::contiguous`]: the same sum, wrapping).
pub(super) fn conv2d_with(g: &ConvGeometry, x: &[i8], y: &mut [i8], p: &impl DotPieces) {
    let w = &p.quant().weights;
    let (cin, cout) = (g.window.channels, g.out_channels);
    let per_oc = g.window.kernel_h * g.window.kernel_w * cin;
    for (px, y) in pixels(&g.window).zip(y.chunks_exact_mut(cout)) {
        if let Some(first) = px.contiguous(&g.window) {
            whole_rows(&x[first * cin..][..per_oc], y, p);
            continue;
        }
        p.row(y, &|oc| {
            let filter = &w.filter[oc * per_oc..][..per_oc];
            px.taps(&g.window).fold(w.bias(oc), |acc, (t, i)| {
                acc.wrapping_add(p.dot(&x[i * cin..][..cin], &filter[t * cin..][..cin]))
            })
        });
    }
}

/// The portable depthwise conv2d (checked arguments): per pixel, output channels in blocks
/// of [`DW_BLOCK`], each tap's channels against the filter's row.
pub(super) fn depthwise(g: &DepthwiseGeometry, x: &[i8], q: LayerQuant<'_>, y: &mut [i8]) {
    let LayerQuant { x_zp, weights: w, out } = q;
    let (c, dm) = (g.window.channels, g.depth_multiplier);
    let cout = c * dm;
    for (px, y) in pixels(&g.window).zip(y.chunks_exact_mut(cout)) {
        for c0 in (0..cout).step_by(DW_BLOCK) {
            let n = DW_BLOCK.min(cout - c0);
            let mut acc = [0i32; DW_BLOCK];
            let acc = &mut acc[..n];
            for (j, acc) in acc.iter_mut().enumerate() {
                *acc = w.bias(c0 + j);
            }
            px.for_each_tap(&g.window, |t, i| {
                let xs = &x[i * c..][..c];
                let ws = &w.filter[t * cout + c0..][..n];
                if dm == 1 {
                    for ((acc, &x), &w) in acc.iter_mut().zip(&xs[c0..]).zip(ws) {
                        *acc = acc.wrapping_add((i32::from(x) - x_zp) * i32::from(w));
                    }
                } else {
                    for (j, (acc, &w)) in acc.iter_mut().zip(ws).enumerate() {
                        let x = i32::from(xs[(c0 + j) / dm]);
                        *acc = acc.wrapping_add((x - x_zp) * i32::from(w));
                    }
                }
            });
            for (j, &acc) in acc.iter().enumerate() {
                y[c0 + j] = finish(&out, &w, (c0 + j, cout), acc);
            }
        }
    }
}

/// A backend's pieces of the depthwise loop with depth multiplier 1
/// ([`depthwise_dm1_with`]).
#[cfg_attr(not(any(neon_x86, all(target_arch = "aarch64", feature = "neon"))), allow(dead_code))]
pub(super) trait DepthwisePieces {
    /// `acc += (x - x_zp) * w` over whole blocks of 8 values of `acc` (`x` and `w` at least
    /// as long), wrapping.
    fn mla_blocks(&self, acc: &mut [i32], x: &[i8], w: &[i8]);

    /// Writes `y[..8] = stage(acc[..8])`, the stage of channels `c0..c0 + 8` of `channels`
    /// (whole blocks of 8: one rounding).
    fn stage8(&self, q: &LayerQuant<'_>, at: (usize, usize), acc: &[i32], y: &mut [i8]);
}

/// The depthwise loop with depth multiplier 1 (checked arguments) over a backend's pieces
/// `p`: per output pixel, channels in chunks of [`DW_BLOCK`] on the stack, each tap walked
/// once per chunk, the chunk's whole blocks of 8 channels through `p` (accumulation and
/// output stage), its last `C mod 8` channels scalar.
#[cfg_attr(not(any(neon_x86, all(target_arch = "aarch64", feature = "neon"))), allow(dead_code))]
pub(super) fn depthwise_dm1_with(
    g: &DepthwiseGeometry,
    x: &[i8],
    q: LayerQuant<'_>,
    y: &mut [i8],
    p: &impl DepthwisePieces,
) {
    let c = g.window.channels;
    let body = c - c % super::ROUNDING_BLOCK;
    let LayerQuant { x_zp, weights: w, out } = q;
    for (px, y) in pixels(&g.window).zip(y.chunks_exact_mut(c)) {
        for c0 in (0..c).step_by(DW_BLOCK) {
            let n = DW_BLOCK.min(c - c0);
            // The chunk's channels in whole blocks of 8 (c0 is a multiple of 8).
            let vector = body.saturating_sub(c0).min(n);
            let mut acc = [0i32; DW_BLOCK];
            let acc = &mut acc[..n];
            for (j, acc) in acc.iter_mut().enumerate() {
                *acc = w.bias(c0 + j);
            }
            px.for_each_tap(&g.window, |t, i| {
                let (xs, ws) = (&x[i * c + c0..][..n], &w.filter[t * c + c0..][..n]);
                let (head, tail) = acc.split_at_mut(vector);
                p.mla_blocks(head, xs, ws);
                for ((acc, &x), &w) in tail.iter_mut().zip(&xs[vector..]).zip(&ws[vector..]) {
                    *acc = acc.wrapping_add((i32::from(x) - x_zp) * i32::from(w));
                }
            });
            let (yv, yt) = y[c0..c0 + n].split_at_mut(vector);
            for (b, (y, acc)) in yv.chunks_exact_mut(8).zip(acc.chunks_exact(8)).enumerate() {
                p.stage8(&q, (c0 + 8 * b, c), acc, y);
            }
            for (j, (y, &acc)) in yt.iter_mut().zip(&acc[vector..]).enumerate() {
                *y = finish(&out, &w, (c0 + vector + j, c), acc);
            }
        }
    }
}

/// The portable fully connected layer (checked arguments).
pub(super) fn fully_connected(g: &FcGeometry, x: &[i8], q: LayerQuant<'_>, y: &mut [i8]) {
    fully_connected_with(g, x, y, &Scalar(&q));
}

/// The fully connected layer's loops (checked arguments) over a backend's pieces `p`, as
/// [`conv2d_with`]: one dot product per input row and output feature, one
/// [`DotPieces::row`] per output row.
pub(super) fn fully_connected_with(g: &FcGeometry, x: &[i8], y: &mut [i8], p: &impl DotPieces) {
    let k = g.in_features;
    for (x, y) in x.chunks_exact(k).zip(y.chunks_exact_mut(g.out_features)) {
        whole_rows(x, y, p);
    }
}

/// One output pixel or row `y` whose accumulators are each the bias plus one dot product
/// of `x` with the whole filter row (`x.len()` values): up to [`ROW_SUMS_CHANNELS`]
/// channels at once ([`DotPieces::dot_rows`]), one at a time beyond.
fn whole_rows(x: &[i8], y: &mut [i8], p: &impl DotPieces) {
    let (w, k, cout) = (&p.quant().weights, x.len(), y.len());
    if cout <= ROW_SUMS_CHANNELS {
        let mut acc = [0i32; ROW_SUMS_CHANNELS];
        p.dot_rows(x, &w.filter[..cout * k], 0, &mut acc[..cout]);
        p.row(y, &|j| w.bias(j).wrapping_add(acc[j]));
    } else {
        p.row(y, &|j| w.bias(j).wrapping_add(p.dot_row(x, &w.filter[j * k..][..k], j)));
    }
}

/// The requantising QUANTIZE (checked arguments): `y = stage(x - x_zp)`, stored as `T` (the
/// stage clamps into `T`'s range).
pub(super) fn requantize<T: TryFrom<i32> + Default>(
    x: &[i8],
    x_zp: i32,
    stage: Requant,
    rounding: Rounding,
    y: &mut [T],
) {
    for (y, &x) in y.iter_mut().zip(x) {
        *y = T::try_from(stage.apply(i32::from(x) - x_zp, rounding)).unwrap_or_default();
    }
}

/// `v` rounded to an integer, half away from zero (C's `roundf`), saturated to i32 (NaN
/// gives 0).
#[inline]
pub(super) fn round_half_away(v: f32) -> i32 {
    // The cast truncates towards zero and saturates. Below 2^24 in magnitude `t` converts
    // back exactly and `v - t` is exact; from 2^23 on every f32 is an integer (frac 0).
    let t = v as i32;
    let frac = v - t as f32;
    if frac >= 0.5 {
        t.saturating_add(1)
    } else if frac <= -0.5 {
        t.saturating_sub(1)
    } else {
        t
    }
}

/// The portable f32 to int8 QUANTIZE (checked arguments).
pub(super) fn quantize(x: &[f32], q: AffineQuant, y: &mut [i8]) {
    for (y, &x) in y.iter_mut().zip(x) {
        let v = i64::from(round_half_away(x / q.scale)) + i64::from(q.zero_point);
        *y = v.clamp(-128, 127) as i8;
    }
}
