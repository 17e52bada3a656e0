//! Layout kernels: out-of-place transpose of a row-major `[rows, cols]` matrix, which
//! converts between channel-first `[channels, frames]` and frame-major
//! `[frames, channels]` sequences.
//!
//! The matrix is walked in 32 x 32 tiles, so a tile's reads and writes both cover whole
//! 64-byte cache lines (32 f32 = 2 lines per tile row) and stay in L1, instead of striding
//! through the whole output for every input row. Inside a tile, 4 x 4 blocks are
//! transposed in registers (NEON: `TRN1`/`TRN2` on 32-bit lanes, then on 64-bit lanes, in
//! `neon.rs`; portable: a fixed 4 x 4 array, in `portable.rs`). The last `rows % 4` rows and
//! `cols % 4` columns are copied element by element.
//!
//! The walk over the tiles and the edges is shared ([`LayoutKernels::transpose`]); a backend
//! provides the 4 x 4 blocks of one tile ([`LayoutKernels::transpose_tile`]). `X86<I>` runs
//! SSE blocks (`x86.rs`).

use super::{BackendType, Portable, X86Isa, X86};

#[cfg(all(target_arch = "aarch64", feature = "neon"))]
mod neon;
mod portable;
#[cfg(neon_x86)]
mod x86;

/// Side of the cache tiles (elements).
const TILE: usize = 32;

/// One tile of a transpose of the row-major `[rows, cols]` matrix `x` into the `[cols, rows]`
/// matrix `y`: the 4 x 4 blocks of rows `r0..r1` and columns `c0..c1` (multiples of 4, at
/// most 32 apart, `r1 <= rows`, `c1 <= cols`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tile {
    /// Rows of `x`.
    pub rows: usize,
    /// Columns of `x`.
    pub cols: usize,
    /// First row of the tile.
    pub r0: usize,
    /// End of the tile's rows (exclusive).
    pub r1: usize,
    /// First column of the tile.
    pub c0: usize,
    /// End of the tile's columns (exclusive).
    pub c1: usize,
}

/// Layout kernels.
///
/// [`transpose`](Self::transpose) is the entry point: it checks the lengths, handles vectors
/// and the edges, and walks the tiles, calling the hook [`transpose_tile`](Self::transpose_tile)
/// for each. Backends override the hook only; its default is the portable code.
pub trait LayoutKernels: BackendType {
    /// `y[j, i] = x[i, j]`: transposes the row-major `[rows, cols]` matrix `x` into the
    /// row-major `[cols, rows]` matrix `y` (channel-first `[channels, frames]` to frame-major
    /// `[frames, channels]` with `rows = channels`, or back with `rows = frames`).
    ///
    /// # Panics
    /// When `x.len()` or `y.len()` is not `rows * cols`.
    fn transpose(rows: usize, cols: usize, x: &[f32], y: &mut [f32]) {
        check(rows, cols, x, y);
        if rows == 1 || cols == 1 {
            // A vector (or nothing): the transpose is a copy.
            y.copy_from_slice(x);
            return;
        }
        let (r4, c4) = (rows - rows % 4, cols - cols % 4);
        for r0 in (0..r4).step_by(TILE) {
            let r1 = (r0 + TILE).min(r4);
            for c0 in (0..c4).step_by(TILE) {
                let c1 = (c0 + TILE).min(c4);
                Self::transpose_tile(Tile { rows, cols, r0, r1, c0, c1 }, x, y);
            }
            // Columns past the last multiple of 4, for these rows.
            transpose_scalar(rows, cols, (r0, r1), (c4, cols), x, y);
        }
        // Rows past the last multiple of 4.
        transpose_scalar(rows, cols, (r4, rows), (0, cols), x, y);
    }

    /// Hook: transposes the 4 x 4 blocks of `tile` from `x` into `y`. Called only by
    /// [`transpose`](Self::transpose): lengths checked, the tile inside the matrix (an
    /// implementation may still assert what its unsafe code relies on). Default: the
    /// portable code.
    #[inline]
    fn transpose_tile(tile: Tile, x: &[f32], y: &mut [f32]) {
        portable::transpose_tile(tile, x, y)
    }
}

fn check(rows: usize, cols: usize, x: &[f32], y: &[f32]) {
    let len = rows.checked_mul(cols).expect("transpose: rows * cols overflows");
    assert_eq!(x.len(), len, "transpose: x length");
    assert_eq!(y.len(), len, "transpose: y length");
}

/// Element-by-element transpose of the sub-block `rows r0..r1`, `cols c0..c1`.
fn transpose_scalar(
    rows: usize,
    cols: usize,
    (r0, r1): (usize, usize),
    (c0, c1): (usize, usize),
    x: &[f32],
    y: &mut [f32],
) {
    for i in r0..r1 {
        for j in c0..c1 {
            y[j * rows + i] = x[i * cols + j];
        }
    }
}

impl LayoutKernels for Portable {}

impl<I: X86Isa> LayoutKernels for X86<I> {
    #[cfg(neon_x86)]
    fn transpose_tile(tile: Tile, x: &[f32], y: &mut [f32]) {
        x86::transpose_tile(tile, x, y)
    }
}
