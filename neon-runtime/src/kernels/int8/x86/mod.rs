//! x86-64 int8-activation kernels: the [`X86`] implementation of [`Int8Kernels`], bit for
//! bit the portable kernels' results (every sum wraps modulo 2^32 in both, and the vector
//! requantisation is the scalar [`Requant::apply`](super::Requant::apply) per lane).
//!
//! - **Fully connected and conv2d**: the portable loops ([`DotPieces`](portable::DotPieces)) with one dot
//!   product per output channel (per tap for conv2d, or over the whole filter row where
//!   a pixel's inputs are contiguous) over contiguous input features, on one of four
//!   [`DotPath`]s (`dot.rs`), and the output stage of whole blocks of 8 channels in AVX2
//!   registers (`stage.rs`). Given a prepared layer's [`RowSums`](super::RowSums), the
//!   VNNI paths take `sum w` from them instead of forming it, and AVX-512 VNNI forms the
//!   whole-row dots of four output channels together.
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
    ConvGeometry, DepthwiseGeometry, DotLayer, FcGeometry, Int8Kernels, LayerOperands, LayerQuant,
};
use crate::kernels::cpu::{X86Extension, X86Level};
use crate::kernels::{Portable, X86Isa, X86};

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

/// The x86 pieces of the conv2d and fully connected loops: the dot product on the path
/// (only reached with a [`supported`](DotPath::supported) one: `conv2d` and
/// `fully_connected` assert it before the shared loops run), the AVX2 output stage.
impl PathKernels for DotPath {
    fn dot(self, x: &[i8], w: &[i8], x_zp: i32) -> i32 {
        // SAFETY: the path is supported (asserted before `OnPath` is built).
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

    /// `self` where supported, else the best path the CPU has ([`DotPath::detect`]);
    /// `None` without AVX2.
    #[inline]
    fn usable(self) -> Option<Self> {
        if self.supported() {
            Some(self)
        } else {
            DotPath::detect(X86Level::Avx512)
        }
    }

    /// Per output pixel and channel, one dot product per inside tap over the input
    /// channels, or one over the whole filter row where the pixel's inputs are contiguous.
    fn conv2d(self, g: &ConvGeometry, (x, q, sums): LayerOperands<'_>, y: &mut [i8]) {
        assert!(self.supported(), "int8 dot path {self:?} used on a CPU without it");
        portable::conv2d_with(g, x, y, &OnPath { path: self, q: &q, sums });
    }

    /// One dot product per input row and output feature.
    fn fully_connected(self, g: &FcGeometry, (x, q, sums): LayerOperands<'_>, y: &mut [i8]) {
        assert!(self.supported(), "int8 dot path {self:?} used on a CPU without it");
        portable::fully_connected_with(g, x, y, &OnPath { path: self, q: &q, sums });
    }
}

impl<I: X86Isa> X86<I> {
    /// The dot path of this level after the level guard ([`X86::require`]).
    #[inline]
    fn int8_path() -> Option<DotPath> {
        Self::require();
        DotPath::detect(I::LEVEL)
    }

    /// Layer `g` on this level's dot path, or the portable kernel without AVX2 (checked
    /// arguments).
    #[inline]
    fn dot_layer<G: DotLayer<DotPath>>(g: &G, operands: LayerOperands<'_>, y: &mut [i8]) {
        match Self::int8_path() {
            Some(path) => g.run_on(path, operands, y),
            None => g.run_checked::<Portable>(operands, y),
        }
    }
}

impl<I: X86Isa> Int8Kernels for X86<I> {
    fn conv2d_i8_checked(
        g: &ConvGeometry,
        x: &[i8],
        q: LayerQuant<'_>,
        sums: Option<&[i32]>,
        y: &mut [i8],
    ) {
        Self::dot_layer(g, (x, q, sums), y);
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

    fn fully_connected_i8_checked(
        g: &FcGeometry,
        x: &[i8],
        q: LayerQuant<'_>,
        sums: Option<&[i32]>,
        y: &mut [i8],
    ) {
        Self::dot_layer(g, (x, q, sums), y);
    }
}
