//! Rotary position embedding (RoPE; Su et al. 2021, "RoFormer: Enhanced Transformer with
//! Rotary Position Embedding", arXiv:2104.09864), in place on a frame-major
//! `[frames, heads * head_dim]` tensor (queries or keys, one row per frame).
//!
//! In every head, the first `rotary_dims` of its `head_dim` values form `rotary_dims / 2`
//! pairs `(a, b)`; pair `i` of frame `f` is rotated by the angle
//! `t = (at + f) * inv_freq[i]`, `inv_freq[i] = theta^(-2i / rotary_dims)`:
//!
//! ```text
//! a' = a cos t - b sin t
//! b' = b cos t + a sin t
//! ```
//!
//! The remaining `head_dim - rotary_dims` values of the head pass through ("partial
//! rotary", as Moonshine: 32 of 52). Two pair conventions ([`RotaryPairs`]):
//! - [`RotaryPairs::Interleaved`]: pairs `(2i, 2i + 1)` (RoFormer, GPT-J, Moonshine);
//! - [`RotaryPairs::HalfSplit`]: pairs `(i, i + rotary_dims / 2)` (GPT-NeoX, Llama; the
//!   `rotate_half` form).
//!
//! # Angles
//! The angle is computed as the reference ONNX graphs compute it, in f32: the position
//! `at + f` converted to f32 (exact up to [`MAX_POSITION`] = 2^24) times the f32
//! `inv_freq[i]`, one f32 rounding. `cos t` and `sin t` of that f32 value are then evaluated
//! in f64 ([`sin_cos`]: Cody-Waite reduction by pi/2 with a two-part constant accurate to
//! 1.6e-26, Taylor polynomials of degree 15 / 16 on `|r| <= pi/4`; absolute error below
//! 3e-16 for every f32 angle of magnitude below 2^25) and rounded to f32, so they are the
//! correctly rounded f32 values except within 3e-16 of a rounding boundary. There is no
//! table of sines: `core` has no `sin`/`cos` and the runtime has no dependencies.
//! [`inv_freq`] is a `const fn` (f64 `exp`/`ln` series, relative error below 1e-14,
//! then rounded to f32), so an operator can hold its table in a constant.
//!
//! `cos` and `sin` of one frame are computed once into two stack arrays of
//! [`MAX_ROTARY_DIMS`]` / 2` values (1 KiB together, [`SinCos`]) and shared by all heads;
//! the rotation of each head is the backends' hook [`RotaryKernels::rotary_head`], the
//! vectorised part (`rotary/portable.rs`: plain loops; `rotary/neon.rs`: `ld2`/`st2`
//! de-interleave the interleaved pairs, the half-split pairs are two contiguous vectors;
//! tails go through a stack buffer so every lane is computed the same way). The x86
//! backend runs the portable code.
//!
//! Cost: most of a frame's instructions are the f64 sine / cosine pairs (16 for Moonshine's
//! 8 heads x 32 rotated dims), which is why they are computed once per frame for all heads
//! and their loop runs out of line ([`SinCos`]); instruction counts in `BENCHMARKS.md`,
//! "Attention and rotary (Moonshine shapes)".
//!
//! # Accuracy
//! Per output value, `|error| <= 3 u (|a| + |b|)` with `u = 2^-24` (`cos`, `sin` rounded
//! to f32, two products and a sum; NEON fuses one product into the sum, one rounding
//! less). The backends agree to within `2 u (|a| + |b|)`.

#[cfg(all(target_arch = "aarch64", feature = "neon"))]
pub(crate) mod neon;
mod portable;

use super::parallel::{row_blocks, Parallel, Rows};
use super::{BackendType, Portable, X86Isa, X86};
use crate::error::Error;

/// Largest `rotary_dims` the kernels accept: the per-frame `cos` / `sin` arrays are
/// `MAX_ROTARY_DIMS / 2` f32 values each, on the stack.
pub const MAX_ROTARY_DIMS: usize = 256;

/// Largest position (`at + frame`) the kernels accept: 2^24, the last integer from which
/// every smaller integer is exact in f32 (the position is converted to f32 as in the
/// reference graphs).
pub const MAX_POSITION: usize = 1 << 24;

/// Which values of a head form the rotated pairs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum RotaryPairs {
    /// Pairs `(2i, 2i + 1)`: RoFormer, GPT-J, Moonshine.
    #[default]
    Interleaved,
    /// Pairs `(i, i + rotary_dims / 2)`: GPT-NeoX, Llama (`rotate_half`).
    HalfSplit,
}

/// The rows a rotary call rotates: `frames` frames of `heads * head_dim` values (frame-major
/// `[frames, heads * head_dim]`), frame `f` at position `at + f`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RotaryFrames {
    /// Frames (rows).
    pub frames: usize,
    /// Heads per frame.
    pub heads: usize,
    /// Values per head (the rotated pairs come first).
    pub head_dim: usize,
    /// Position of the first frame.
    pub at: usize,
}

/// `sin t` and `cos t` of the angle `t` of every pair at one position, shared by all heads
/// of a frame: entries `..half` hold the frame's values; the others are zero or stale (the
/// NEON tail reads them into lanes it discards).
#[derive(Clone, Debug)]
pub struct SinCos {
    /// `sin t` of pair `i < half`.
    pub sin: [f32; MAX_ROTARY_DIMS / 2],
    /// `cos t` of pair `i < half`.
    pub cos: [f32; MAX_ROTARY_DIMS / 2],
    /// Pairs per head: `rotary_dims / 2`, `1..=MAX_ROTARY_DIMS / 2`.
    pub half: usize,
}

impl SinCos {
    /// Fills entries `..half` (`half = inv_freq.len()`) for position `pos`. Out of line:
    /// the loop of f64 polynomials wants every register (inlined into the frame loop, it
    /// would shuffle its constants between registers at every step).
    #[inline(never)]
    fn fill(&mut self, pos: usize, inv_freq: &[f32]) {
        // Exact: pos <= MAX_POSITION = 2^24 (checked by the entry point).
        let p = pos as f32;
        let (sin, cos) = (&mut self.sin[..self.half], &mut self.cos[..self.half]);
        for ((&w, s), c) in inv_freq.iter().zip(sin.iter_mut()).zip(cos.iter_mut()) {
            (*s, *c) = sin_cos(p * w);
        }
    }
}

/// Rotary embedding kernels.
///
/// Callers use the entry point [`rotary`](RotaryKernels::rotary), which checks the
/// contract, computes the sines and cosines of each frame once and calls the hook
/// [`rotary_head`](RotaryKernels::rotary_head) for every head; backends override only the
/// hook, never the entry point.
pub trait RotaryKernels: BackendType {
    /// Rotates `x` (frame-major `[frames, heads * head_dim]`, geometry `f`) in place: in
    /// every head of frame `i`, pair `p < inv_freq.len()` by the angle `f32(f.at + i) *
    /// inv_freq[p]` (see the [module docs](self)); `rotary_dims = 2 * inv_freq.len()`, the
    /// rest of each head passes through. `inv_freq` is usually [`inv_freq`]`(theta,
    /// rotary_dims)`.
    ///
    /// # Panics
    /// When `x.len() != frames * heads * head_dim`, `2 * inv_freq.len() > head_dim`,
    /// `2 * inv_freq.len() > MAX_ROTARY_DIMS`, or the last position `at + frames - 1`
    /// exceeds [`MAX_POSITION`].
    fn rotary(x: &mut [f32], f: RotaryFrames, inv_freq: &[f32], pairs: RotaryPairs) {
        let half = inv_freq.len();
        check(x.len(), &f, half);
        if half == 0 || x.is_empty() {
            return;
        }
        let mut t = SinCos { sin: [0.0; HALF_MAX], cos: [0.0; HALF_MAX], half };
        for (i, row) in x.chunks_exact_mut(f.heads * f.head_dim).enumerate() {
            t.fill(f.at + i, inv_freq);
            for head in row.chunks_exact_mut(f.head_dim) {
                // SAFETY: `check`: `2 half <= head_dim = head.len()`, `half <= HALF_MAX`;
                // `half >= 1`.
                unsafe { Self::rotary_head(head, &t, pairs) };
            }
        }
    }

    /// [`rotary`](Self::rotary) on `par`: blocks of frames (each frame alone, with its own
    /// sines and cosines: the same bits for any context).
    ///
    /// # Errors
    /// The context's ([`Parallel::dispatch`]); `x` is then partly rotated.
    ///
    /// # Panics
    /// As [`rotary`](Self::rotary), before any task runs.
    fn rotary_in(
        par: &dyn Parallel,
        x: &mut [f32],
        f: RotaryFrames,
        inv_freq: &[f32],
        pairs: RotaryPairs,
    ) -> Result<(), Error> {
        let half = inv_freq.len();
        check(x.len(), &f, half);
        if half == 0 || x.is_empty() {
            return Ok(());
        }
        // `x` holds `frames * heads * head_dim >= 1` values and `2 * half <= head_dim`, so
        // these products fit.
        let row = f.heads * f.head_dim;
        // A frame: `half` sines and cosines (f64 polynomials, ~16 multiply-adds each) and
        // 4 multiply-adds per rotated pair of every head.
        let work = half * (16 + 4 * f.heads);
        let split =
            Rows { shape: (f.frames, row, row), tile: 1, join_tail: false, work_per_row: work };
        row_blocks(par, split, x, |r, x| {
            let fr = RotaryFrames { frames: r.len(), at: f.at + r.start, ..f };
            Self::rotary(x, fr, inv_freq, pairs);
        })
    }

    /// The hook of [`rotary`](RotaryKernels::rotary), called only by it, once per head of
    /// every frame (contract checked, sizes >= 1): rotates the pairs of `head[..2 *
    /// t.half]` by the angles of `t`. The provided body is the portable kernel.
    ///
    /// # Safety
    /// `1 <= t.half <= MAX_ROTARY_DIMS / 2` and `2 * t.half <= head.len()`.
    unsafe fn rotary_head(head: &mut [f32], t: &SinCos, pairs: RotaryPairs) {
        portable::rotary_head(head, t, pairs);
    }
}

/// Checks the kernel contract (`half` pairs per head).
fn check(x_len: usize, f: &RotaryFrames, half: usize) {
    let n = f.frames.checked_mul(f.heads).and_then(|v| v.checked_mul(f.head_dim));
    assert_eq!(n, Some(x_len), "rotary: data length is not frames * heads * head_dim");
    assert!(2 * half <= f.head_dim, "rotary: rotary_dims exceeds head_dim");
    assert!(2 * half <= MAX_ROTARY_DIMS, "rotary: rotary_dims exceeds MAX_ROTARY_DIMS");
    if f.frames > 0 {
        assert!(
            f.at.checked_add(f.frames - 1).is_some_and(|last| last <= MAX_POSITION),
            "rotary: position exceeds MAX_POSITION"
        );
    }
}

// ---------------------------------------------------------------------------------------
// f64 helpers (const where the frequency table needs them)
// ---------------------------------------------------------------------------------------

/// The frequency table of a rotary embedding: `inv_freq[i] = theta^(-2i / rotary_dims)`
/// rounded to f32 for `i < rotary_dims / 2` (zeros after), computed in f64 (relative error
/// below 1e-14 for `theta` in `[2^-60, 2^60]`, so each entry is the correctly rounded f32
/// value except within 1e-14 of a rounding boundary). A `const fn`:
///
/// ```
/// use neon_runtime::kernels::rotary::{inv_freq, MAX_ROTARY_DIMS};
///
/// // Moonshine: theta 10000, 32 rotary dims of 52.
/// const MOONSHINE: [f32; MAX_ROTARY_DIMS / 2] = inv_freq(10000.0, 32);
/// assert_eq!(MOONSHINE[0], 1.0);
/// assert_eq!(MOONSHINE[8], 0.01); // 10000^(-1/2), correctly rounded
/// assert_eq!(MOONSHINE[16], 0.0);
/// ```
///
/// `theta` must be positive and finite and `rotary_dims <= MAX_ROTARY_DIMS` (the table is
/// filled up to `min(rotary_dims, MAX_ROTARY_DIMS) / 2`; an invalid `theta` gives a
/// meaningless table). The operator [`crate::ops::rotary::Rotary`] validates both.
pub const fn inv_freq(theta: f32, rotary_dims: usize) -> [f32; MAX_ROTARY_DIMS / 2] {
    let mut table = [0.0f32; MAX_ROTARY_DIMS / 2];
    let d = if rotary_dims < MAX_ROTARY_DIMS { rotary_dims } else { MAX_ROTARY_DIMS };
    if !(theta > 0.0 && theta < f32::INFINITY) || d < 2 {
        return table;
    }
    let ln_theta = crate::constmath::ln(theta as f64);
    let mut i = 0;
    while i < d / 2 {
        table[i] = crate::constmath::exp(-((2 * i) as f64 / rotary_dims as f64) * ln_theta) as f32;
        i += 1;
    }
    table
}

/// High part of `pi/2`: its 28 leading significant bits (`0x1.921fb54p+0`), so that
/// `k * PIO2_HI` is exact for `|k| < 2^25`.
const PIO2_HI: f64 = f64::from_bits(0x3FF9_21FB_5400_0000);
/// `pi/2 - PIO2_HI` rounded to f64 (`0x1.10b4611a62633p-30`; the two parts together are
/// within 1.6e-26 of `pi/2`).
const PIO2_LO: f64 = f64::from_bits(0x3E11_0B46_11A6_2633);

/// `c[0] + c[1] y + .. + c[N - 1] y^(N - 1)` by Horner's rule, from the last coefficient.
#[inline(always)]
fn horner<const N: usize>(y: f64, c: &[f64; N]) -> f64 {
    let mut p = c[N - 1];
    for &ci in c[..N - 1].iter().rev() {
        p = p * y + ci;
    }
    p
}

/// `sin x` on `|x| <= pi/4 + 1e-9`: Taylor to `x^15` (truncation below 5e-17).
#[inline(always)]
fn sin_poly(x: f64) -> f64 {
    const S: [f64; 7] = [
        -1.0 / 6.0,
        1.0 / 120.0,
        -1.0 / 5040.0,
        1.0 / 362_880.0,
        -1.0 / 39_916_800.0,
        1.0 / 6_227_020_800.0,
        -1.0 / 1_307_674_368_000.0,
    ];
    let x2 = x * x;
    x + x * x2 * horner(x2, &S)
}

/// `cos x` on `|x| <= pi/4 + 1e-9`: Taylor to `x^16` (truncation below 3e-18).
#[inline(always)]
fn cos_poly(x: f64) -> f64 {
    const C: [f64; 8] = [
        -1.0 / 2.0,
        1.0 / 24.0,
        -1.0 / 720.0,
        1.0 / 40_320.0,
        -1.0 / 3_628_800.0,
        1.0 / 479_001_600.0,
        -1.0 / 87_178_291_200.0,
        1.0 / 20_922_789_888_000.0,
    ];
    let x2 = x * x;
    1.0 + x2 * horner(x2, &C)
}

/// `(sin t, cos t)` of an f32 angle, evaluated in f64 and rounded to f32: what the kernels
/// multiply with.
///
/// `t = k pi/2 + r` with `k = round(t 2/pi)` and `r = (t - k PIO2_HI) - k PIO2_LO` (the
/// first product and difference exact for `|t| < 2^25`, Sterbenz), then degree-15 / 16
/// Taylor polynomials of `r` and the quadrant `k mod 4`. Absolute error before the f32
/// rounding below 3e-16 for `|t| < 2^25` (beyond, the reduction loses accuracy gradually;
/// the kernels never get there: positions are at most 2^24 and `inv_freq <= 1` for
/// `theta >= 1`). Branch-free (selects), so loops over it vectorise.
#[inline(always)]
pub fn sin_cos(t: f32) -> (f32, f32) {
    let t = t as f64;
    let y = t * core::f64::consts::FRAC_2_PI;
    let k = if y >= 0.0 { (y + 0.5) as i64 } else { (y - 0.5) as i64 };
    let kf = k as f64;
    let r = (t - kf * PIO2_HI) - kf * PIO2_LO;
    let (s, c) = (sin_poly(r), cos_poly(r));
    // Quadrant: k = 0: (s, c); 1: (c, -s); 2: (-s, -c); 3: (-c, s).
    let (s, c) = if k & 1 != 0 { (c, s) } else { (s, c) };
    let s = if k & 2 != 0 { -s } else { s };
    let c = if k.wrapping_add(1) & 2 != 0 { -c } else { c };
    (s as f32, c as f32)
}

/// Pairs per head at most: the length of the [`SinCos`] tables.
const HALF_MAX: usize = MAX_ROTARY_DIMS / 2;

impl RotaryKernels for Portable {}

impl<I: X86Isa> RotaryKernels for X86<I> {}
