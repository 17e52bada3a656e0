//! x86-64 int8-activation kernels: the [`X86`] implementation of [`Int8Kernels`], bit for
//! bit the portable kernels' results (every sum wraps modulo 2^32 in both, and the vector
//! requantisation is the scalar [`Requant::apply`](super::Requant::apply) per lane).
//!
//! - **Fully connected and conv2d**: the portable loops ([`DotPieces`](portable::DotPieces)) with one dot
//!   product per output channel (per tap for conv2d, or over the whole filter row where
//!   a pixel's inputs are contiguous) over contiguous input features, on one of four
//!   [`DotPath`]s (`dot.rs`), and the output stage of whole blocks of 8 channels in AVX2
//!   registers (`stage.rs`). Given a prepared layer's [`RowSums`], the VNNI paths take
//!   `sum w` from them instead of forming it, and AVX-512 VNNI forms the whole-row dots of
//!   four output channels together.
//! - **Depthwise** with depth multiplier 1: AVX2, 8 channels per step (`depthwise.rs`);
//!   other depth multipliers run the portable kernel.
//! - LUT, QUANTIZE and DEQUANTIZE stay portable (a few hundred values per model step).
//!
//! Both levels use the same AVX2 stage and depthwise kernel (every AVX-512 CPU has AVX2);
//! they differ in the dot product: [`DotPath::detect`] picks the best path of the level at
//! run time (feature `std`) or from the build's target features, as [`X86Level`] does.

mod depthwise;
mod dot;
mod stage;

use super::portable::{self, OnPath, PathKernels};
use super::{
    ConvGeometry, DepthwiseGeometry, FcGeometry, Int8Geometry, Int8Kernels, LayerQuant, RowSums,
};
use crate::error::Error;
use crate::kernels::cpu::{X86Extension, X86Level};
use crate::kernels::{X86Isa, X86};

/// How the x86 fully connected and conv2d kernels form their dot products (`dot.rs`). All
/// are exact, so they give the same outputs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DotPath {
    /// AVX2: `vpmovsxbw`, `vpsubw`, `vpmaddwd` on `ymm`, 16 products per step.
    Avx2Widening,
    /// AVX-VNNI: `vpdpbusd` on `ymm`, 32 products per instruction, the offset folded.
    AvxVnni,
    /// AVX-512BW: `vpmaddwd` on `zmm`, 32 products per step, masked tails.
    Avx512Widening,
    /// AVX-512 VNNI: `vpdpbusd` on `zmm`, 64 products per instruction, masked tails.
    Avx512Vnni,
}

impl DotPath {
    /// Every path, slowest first.
    pub const ALL: [DotPath; 4] =
        [DotPath::Avx2Widening, DotPath::AvxVnni, DotPath::Avx512Widening, DotPath::Avx512Vnni];

    /// The [`X86Level`] a path belongs to (the AVX2 stage runs on both).
    pub const fn level(self) -> X86Level {
        match self {
            DotPath::Avx2Widening | DotPath::AvxVnni => X86Level::Avx2,
            DotPath::Avx512Widening | DotPath::Avx512Vnni => X86Level::Avx512,
        }
    }

    /// Whether the path may run here: AVX2 and FMA (the stage's level) plus the path's
    /// extension ([`X86Extension`]).
    #[inline]
    pub fn supported(self) -> bool {
        X86Level::Avx2.supported()
            && match self {
                DotPath::Avx2Widening => true,
                DotPath::AvxVnni => X86Extension::AvxVnni.supported(),
                DotPath::Avx512Widening => X86Extension::Avx512Bw.supported(),
                DotPath::Avx512Vnni => X86Extension::Avx512Vnni.supported(),
            }
    }

    /// The fastest supported path of `level` or below (VNNI before widening, `zmm` before
    /// `ymm`); `None` without AVX2.
    #[inline]
    pub fn detect(level: X86Level) -> Option<Self> {
        Self::ALL.into_iter().rev().find(|p| p.level() <= level && p.supported())
    }
}

/// A layer whose x86 kernel forms its dot products on a [`DotPath`]: [`ConvGeometry`] and
/// [`FcGeometry`].
pub trait DotLayer: Int8Geometry {
    /// Runs the layer's x86 kernel on `path` (arguments that passed
    /// [`Int8Geometry::check`]; `path` [`supported`](DotPath::supported)), with the
    /// filter's row sums `sums` ([`RowSums`], one per output channel) if given.
    fn run_on(
        &self,
        path: DotPath,
        x: &[i8],
        q: LayerQuant<'_>,
        sums: Option<&[i32]>,
        y: &mut [i8],
    );
}

/// conv2d: per output pixel and channel, one dot product per inside tap over the input
/// channels, or one over the whole filter row where the pixel's inputs are contiguous.
impl DotLayer for ConvGeometry {
    fn run_on(
        &self,
        path: DotPath,
        x: &[i8],
        q: LayerQuant<'_>,
        sums: Option<&[i32]>,
        y: &mut [i8],
    ) {
        assert!(path.supported(), "int8 dot path {path:?} used on a CPU without it");
        portable::conv2d_with(self, x, y, &OnPath { path, q: &q, sums });
    }
}

/// Fully connected: one dot product per input row and output feature.
impl DotLayer for FcGeometry {
    fn run_on(
        &self,
        path: DotPath,
        x: &[i8],
        q: LayerQuant<'_>,
        sums: Option<&[i32]>,
        y: &mut [i8],
    ) {
        assert!(path.supported(), "int8 dot path {path:?} used on a CPU without it");
        portable::fully_connected_with(self, x, y, &OnPath { path, q: &q, sums });
    }
}

/// The x86 pieces of the conv2d and fully connected loops: the dot product on the path
/// (only reached with a [`supported`](DotPath::supported) one: the layers' `run_on` assert
/// it), the AVX2 output stage.
impl PathKernels for DotPath {
    fn dot(self, x: &[i8], w: &[i8], x_zp: i32) -> i32 {
        // SAFETY: the path is supported (`run_on` asserts it before building `OnPath`).
        unsafe { dot::dot(self, x, w, x_zp) }
    }

    fn dot_with_sum(self, x: &[i8], w: &[i8], x_zp: i32, w_sum: i32) -> i32 {
        // SAFETY: as in `dot`.
        unsafe { dot::dot_with_sum(self, x, w, x_zp, w_sum) }
    }

    fn dot_rows_with_sums(self, x: &[i8], rows: &[i8], x_zp: i32, sums: &[i32], acc: &mut [i32]) {
        // SAFETY: as in `dot`.
        unsafe { dot::dot_rows_with_sums(self, x, rows, x_zp, sums, acc) }
    }

    fn row(q: &LayerQuant<'_>, y: &mut [i8], acc: &dyn Fn(usize) -> i32) {
        // SAFETY: every supported path includes AVX2, and only supported ones get here.
        unsafe { stage::finish_row(q, y, acc) }
    }
}

/// [`Int8Kernels::layer_i8`] for [`X86`] on a chosen [`DotPath`] (tests and measurements
/// force each path with it); a path the CPU lacks runs the best one it has
/// ([`DotPath::detect`]), or the portable kernel without AVX2.
///
/// # Errors
/// As [`Int8Kernels::layer_i8`].
pub fn layer_i8_on<G: DotLayer>(
    path: DotPath,
    g: &G,
    x: &[i8],
    q: LayerQuant<'_>,
    y: &mut [i8],
) -> Result<(), Error> {
    layer_i8_on_with_sums(path, g, x, q, &RowSums::NONE, y)
}

/// [`layer_i8_on`] with the filter's row sums `sums` as a prepared layer passes them
/// ([`Int8Geometry::row_sums`] of `q`'s filter; [`RowSums::NONE`]: formed per call).
///
/// # Errors
/// As [`Int8Kernels::layer_i8`]; [`Error::Length`] when `sums` holds a number of channels
/// other than the layer's.
pub fn layer_i8_on_with_sums<G: DotLayer>(
    path: DotPath,
    g: &G,
    x: &[i8],
    q: LayerQuant<'_>,
    sums: &RowSums,
    y: &mut [i8],
) -> Result<(), Error> {
    let sums = sums.get();
    if let Some(s) = sums {
        super::length("row sums", g.filter_shape().ok().map(|[c, _]| c), s.len())?;
    }
    let path = if path.supported() { Some(path) } else { DotPath::detect(X86Level::Avx512) };
    g.check_then((x, q, y), |g, x, q, y| match path {
        Some(path) => g.run_on(path, x, q, sums, y),
        None => g.run_checked::<crate::kernels::Portable>(x, q, y),
    })
}

impl<I: X86Isa> X86<I> {
    /// The dot path of this level after the level guard ([`X86::require`]).
    #[inline]
    fn int8_path() -> Option<DotPath> {
        Self::require();
        DotPath::detect(I::LEVEL)
    }

    /// Layer `g` on this level's dot path with row sums `sums` if given, or the portable
    /// kernel `portable` without AVX2 (checked arguments).
    #[inline]
    fn dot_layer<G: DotLayer>(
        g: &G,
        (x, q, sums): (&[i8], LayerQuant<'_>, Option<&[i32]>),
        y: &mut [i8],
        portable: fn(&G, &[i8], LayerQuant<'_>, &mut [i8]),
    ) {
        match Self::int8_path() {
            Some(path) => g.run_on(path, x, q, sums, y),
            None => portable(g, x, q, y),
        }
    }
}

impl<I: X86Isa> Int8Kernels for X86<I> {
    fn conv2d_i8_checked(g: &ConvGeometry, x: &[i8], q: LayerQuant<'_>, y: &mut [i8]) {
        Self::dot_layer(g, (x, q, None), y, portable::conv2d);
    }

    fn conv2d_i8_with_sums(g: &ConvGeometry, x: &[i8], q: LayerQuant<'_>, s: &[i32], y: &mut [i8]) {
        Self::dot_layer(g, (x, q, Some(s)), y, portable::conv2d);
    }

    fn fully_connected_i8_with_sums(
        g: &FcGeometry,
        x: &[i8],
        q: LayerQuant<'_>,
        s: &[i32],
        y: &mut [i8],
    ) {
        Self::dot_layer(g, (x, q, Some(s)), y, portable::fully_connected);
    }

    fn depthwise_conv2d_i8_checked(
        g: &DepthwiseGeometry,
        x: &[i8],
        q: LayerQuant<'_>,
        y: &mut [i8],
    ) {
        if Self::int8_path().is_some() && g.depth_multiplier == 1 {
            // SAFETY: a path was detected, so the CPU has AVX2.
            unsafe { depthwise::depthwise(g, x, q, y) }
        } else {
            portable::depthwise(g, x, q, y);
        }
    }

    fn fully_connected_i8_checked(g: &FcGeometry, x: &[i8], q: LayerQuant<'_>, y: &mut [i8]) {
        Self::dot_layer(g, (x, q, None), y, portable::fully_connected);
    }
}
