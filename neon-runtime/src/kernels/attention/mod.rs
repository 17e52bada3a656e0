//! Scaled dot-product attention over a KV cache, multi-head, frame-major, in one pass over
//! the keys with a running maximum (online softmax).
//!
//! Tensors, all frame-major with `channels = heads * head_dim` values per frame (head `h`
//! owns values `h * head_dim .. (h + 1) * head_dim` of a row):
//! - `q`: `[q_frames, channels]`;
//! - `k`, `v`: `[kv_frames, channels]` of which only the first `len` rows are read (a KV
//!   cache of capacity `kv_frames` holding `len` valid frames);
//! - `out`: `[q_frames, channels]`.
//!
//! Per head (Vaswani et al. 2017, "Attention Is All You Need", arXiv:1706.03762):
//! `out_i = sum_j w_ij v_j`, `w_ij = softmax_j(scale * q_i . k_j)` over the keys
//! `j < n_i`: `n_i = len`, or with `causal` `n_i = len - q_frames + i + 1` (the queries are
//! the last `q_frames` positions of the sequence and see no later key).
//!
//! # Algorithm
//! One pass over the keys per query with a running maximum `m` and a running sum `l`
//! (online softmax: Milakov & Gimelshein 2018, "Online normalizer calculation for
//! softmax", arXiv:1805.02867): keys are taken in blocks (4 on NEON, 8 portable); for each
//! block the scores are computed, and when the block's maximum exceeds `m`, the output
//! accumulator and `l` are rescaled by `exp(m_old - m_new)` (rare after the first blocks:
//! only when the maximum grows). Then `p_j = exp(s_j - m)`, `l += p_j` and
//! `acc += p_j v_j`; at the end `out = acc / l`. No score matrix is stored and nothing is
//! allocated: the accumulator is the output row itself, everything else is in registers
//! or on the stack. All sums are f32. The exponential is the runtime's vectorised
//! approximation ([`super::activation`], max relative error 8.3e-8).
//!
//! Keys past `n_i` in the last blocks are masked to `-inf` (probability exactly 0) and
//! read the last valid row, so rows past `len` are never touched (they may hold anything,
//! NaN included).
//!
//! # Backends
//! Each overrides the hook [`AttentionKernels::attention_unchecked`]:
//! - `Portable` (`attention/portable.rs`): one query row at a time against blocks of 8
//!   keys, 8-lane partial sums, plain Rust;
//! - `Neon` (`attention/neon.rs`): 4 query rows at once (single rows for the remainder, as
//!   in a decoder step) against blocks of 4 keys, `asm!` inner loops;
//! - `X86<Avx512>` and `X86<Avx2>` (`attention/x86/`): blocks of 16 queries, one per
//!   lane (AVX2: two vectors of 8), against blocks of 8 (AVX2: 6) keys, the queries transposed once per block so
//!   that keys and values are broadcast from their rows; single queries (a decoder step)
//!   take 16 (8) keys per lane vector. One body for both levels, over a small vector
//!   abstraction.
//!
//! # Cost
//! `4 q k C` FLOPs for `q` queries, `k` keys and `C` channels. Several queries reuse each
//! key and value row across a block of queries, so arithmetic bounds them; a decoder step's
//! single query uses each `k` and `v` value once, so loads bound it (on x86-64, reading `k`
//! and `v` from the last-level cache: both levels run it at about the same speed).
//! Instruction counts on aarch64 and host timings on Moonshine's shapes: `BENCHMARKS.md`,
//! "Attention and rotary (Moonshine shapes)" and "Host: attention on Moonshine's shapes
//! (x86-64)".
//!
//! # Accuracy
//! With `u = 2^-24`, `gamma_n = n u / (1 - n u)`, exact scaled scores `s_j` and weights
//! `w_j`: each computed score is within `D_j = gamma_(head_dim + 1) scale sum_d |q_d k_jd|`
//! (any summation order, plus the scaling); each probability `p_j` therefore carries a
//! relative error of at most `r_j = D_j + u |s_j - m| + 2 eps` (the shift by the common
//! maximum `m` cancels in the normalisation except for its rounding; `2 eps` bounds the
//! exponential); the sums of `p_j v_j` and of `p_j` are f32 sums of `n + n/4 + 2` terms
//! and rescalings at most. So per output value
//! `|error| <= (2 max_j r_j + 2 gamma_(n + n/4 + 2) + 3 u) sum_j w_j |v_j|`. The tests
//! (`tests/attention.rs`) assert this bound against an f64 reference for every backend;
//! over their cases the measured errors stay below 10% of it (worst absolute error 1.5e-6
//! `Portable` and `Neon`, 1.9e-6 `X86<Avx2>` and `X86<Avx512>`, with values in `[-1, 1]`
//! and scores up to about 100; `--ignored measure` prints them): the bound is worst-case,
//! rounding errors are random.
//!
//! # Special values
//! Inputs are expected finite. NaN in a score (from NaN or infinite `q`, `k`) gives NaN
//! in that query's output for that head; rows of `k` and `v` past `len` are never read.

#[cfg(all(target_arch = "aarch64", feature = "neon"))]
mod neon;
mod portable;
mod x86;

use super::parallel::{grid_blocks, Grid, Parallel};
use super::strided::StridedMut;
use super::{BackendType, Portable};
use crate::error::Error;
use core::ops::Range;

/// The geometry and parameters of an attention call: `q` and `out` are `[q_frames,
/// heads * head_dim]`, `k` and `v` hold at least `len` such rows (the valid frames of the
/// KV cache); `scale` multiplies the dot products (usually `1 / sqrt(head_dim)`), `causal`
/// hides later keys from each query (see the [module docs](self)).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AttentionGeometry {
    /// Query (and output) rows.
    pub q_frames: usize,
    /// Valid key and value rows.
    pub len: usize,
    /// Heads per row.
    pub heads: usize,
    /// Values per head.
    pub head_dim: usize,
    /// Factor of the dot products.
    pub scale: f32,
    /// Query `i` sees keys `j < len - q_frames + i + 1` only.
    pub causal: bool,
}

impl AttentionGeometry {
    /// Values per row: `heads * head_dim`.
    #[inline(always)]
    pub const fn channels(&self) -> usize {
        self.heads * self.head_dim
    }

    /// Keys visible to query row `i < q_frames`: `len`, or with `causal` `len - q_frames +
    /// i + 1`.
    #[inline(always)]
    pub const fn visible(&self, i: usize) -> usize {
        if self.causal {
            self.len - self.q_frames + i + 1
        } else {
            self.len
        }
    }
}

/// Attention kernels.
///
/// Callers use the entry point [`attention`](AttentionKernels::attention); backends
/// override only the hook [`attention_unchecked`](AttentionKernels::attention_unchecked),
/// never the entry point.
pub trait AttentionKernels: BackendType {
    /// Query rows this backend's kernel takes at once: the unit of the row blocks of
    /// [`attention_in`](Self::attention_in).
    const ATTENTION_ROW_TILE: usize = 1;

    /// Multi-head attention of `q` over the first `g.len` rows of `k` and `v` into `out`
    /// (layouts, masking and numerics: see the [module docs](self)).
    ///
    /// # Panics
    /// When `heads`, `head_dim` or `len` is 0, `q.len()` or `out.len()` is not
    /// `q_frames * channels`, `k.len()` or `v.len()` is below `len * channels`, or
    /// `causal` with `len < q_frames`.
    fn attention(q: &[f32], k: &[f32], v: &[f32], out: &mut [f32], g: AttentionGeometry) {
        check((q.len(), k.len(), v.len(), out.len()), &g);
        if g.q_frames == 0 {
            return;
        }
        let out = StridedMut::new(out, g.q_frames, g.channels(), g.channels());
        // SAFETY: `check` accepted the geometry and the slice lengths; `q_frames >= 1`;
        // `out` is the whole output, every head.
        unsafe { Self::attention_unchecked(q, k, v, out, g, 0..g.heads) }
    }

    /// [`attention`](AttentionKernels::attention) on `par`: a grid of blocks of whole
    /// [`ATTENTION_ROW_TILE`](Self::ATTENTION_ROW_TILE) query rows (a partial last tile
    /// joins the block before it) by whole heads, so a single query (a decoder step) splits
    /// over its heads; the same bits for any context (each head of a query row is computed
    /// by the same code on the same values). With `causal`, a block of rows `r0..r1` sees
    /// the keys its rows see in the whole call (its `len` is `len - (q_frames - r1)`).
    ///
    /// # Errors
    /// The context's ([`Parallel::dispatch`]); `out` is then partly written.
    ///
    /// # Panics
    /// As [`attention`](AttentionKernels::attention), before any task runs.
    fn attention_in(
        par: &dyn Parallel,
        (q, k, v): (&[f32], &[f32], &[f32]),
        out: &mut [f32],
        g: AttentionGeometry,
    ) -> Result<(), Error> {
        check((q.len(), k.len(), v.len(), out.len()), &g);
        if g.q_frames == 0 {
            return Ok(());
        }
        let (c, hd) = (g.channels(), g.head_dim);
        let grid = Grid {
            shape: (g.q_frames, c, c),
            tile: (Self::ATTENTION_ROW_TILE, hd),
            join_tail: true,
            work_per_value: 2 * g.len,
            fixed_rows: 0,
        };
        grid_blocks(par, grid, out, |rows, cols, out| {
            let len = if g.causal { g.len - (g.q_frames - rows.end) } else { g.len };
            let gs = AttentionGeometry { q_frames: rows.len(), len, ..g };
            let qs = &q[rows.start * c..rows.end * c];
            // SAFETY: `check` accepted the whole call; rows `rows` of `q` with `len` keys
            // are a call of the same contract (causal: `len >= rows.len()` because `g.len
            // >= g.q_frames`), and `out` is the block of those rows and of the heads
            // `cols / hd` (the columns are whole heads).
            unsafe { Self::attention_unchecked(qs, k, v, out, gs, cols.start / hd..cols.end / hd) }
        })
    }

    /// The hook of [`attention`](AttentionKernels::attention), called only by it and by
    /// the blocks of [`attention_in`](Self::attention_in): the heads `heads` of every query
    /// row, into `out`, the block of those heads' values of the `q_frames` output rows
    /// (`q_frames x heads.len() * head_dim`, rows `channels` apart); the contract is
    /// checked and every size is >= 1. The provided body is the portable kernel.
    ///
    /// # Safety
    /// `g` satisfies the entry point's contract with `q_frames >= 1`: `q.len() = q_frames *
    /// channels`, `k.len()` and `v.len()` at least `len * channels`, `heads`, `head_dim`
    /// and `len` at least 1, `len >= q_frames` when causal; `heads` is a non-empty range of
    /// `0..g.heads` and `out` is `q_frames x heads.len() * head_dim` with `ld = channels`.
    unsafe fn attention_unchecked(
        q: &[f32],
        k: &[f32],
        v: &[f32],
        out: StridedMut<'_>,
        g: AttentionGeometry,
        heads: Range<usize>,
    ) {
        portable::attention(q, (k, v), out, g, heads);
    }
}

/// Checks the kernel contract.
fn check((q_len, k_len, v_len, out_len): (usize, usize, usize, usize), g: &AttentionGeometry) {
    assert!(g.heads > 0 && g.head_dim > 0, "attention: heads and head_dim must be >= 1");
    assert!(g.len > 0, "attention: len must be >= 1");
    let c = g.heads.checked_mul(g.head_dim).expect("attention: channels overflow");
    let qn = g.q_frames.checked_mul(c);
    assert_eq!(qn, Some(q_len), "attention: q length is not q_frames * channels");
    assert_eq!(qn, Some(out_len), "attention: out length is not q_frames * channels");
    let kn = g.len.checked_mul(c).expect("attention: len * channels overflows");
    assert!(k_len >= kn && v_len >= kn, "attention: k or v holds fewer than len rows");
    assert!(!g.causal || g.len >= g.q_frames, "attention: causal needs len >= q_frames");
}

impl AttentionKernels for Portable {}
