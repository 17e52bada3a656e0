//! The x86-64 attention (`X86<I>`): AVX-512F (16 lanes, `X86<Avx512>`) and AVX2 + FMA (8
//! lanes, `X86<Avx2>`) kernels. The hook override checks the level
//! ([`X86::require`]) and runs the level's kernel; off x86-64 (and under Miri) `X86<I>`
//! runs the portable kernel.
//!
//! Both levels run the same algorithm, the online softmax of [`super`] with `L` lanes (16
//! or 8): one body (`blocks.rs`, `single.rs`) generic over [`Simd`](kernel::Simd), a handful of
//! primitives on a level's vectors that the tokens of `kernels/x86_simd` implement (the
//! GELU kernel uses them too). Every
//! primitive and every function of the body is `#[inline(always)]`, so each level's
//! `#[target_feature]` entry point (`avx512::attention`, `avx2::attention`) compiles into
//! one function with the level's instructions, as if written for it. The body calls no
//! closure that uses the vectors (nor `array::from_fn` with one): a closure that LLVM does
//! not inline is compiled without the level's target features and calls every intrinsic
//! out of line, several times slower (`BENCHMARKS.md`, "Host: attention on Moonshine's
//! shapes (x86-64)").
//!
//! The kernels:
//!
//! - **Several queries: one query per lane.** A block of `QV` vectors of `L` query rows
//!   of one head (AVX-512: 1 x 16; AVX2: 2 x 8) is transposed once into a
//!   `[head_dim, QV * L]` tile on the stack (scaled by `scale`), so `QV` vector loads give
//!   value `d` of the block's queries. Per block of `KB` keys (AVX-512: 8; AVX2: 6), the scores of the
//!   queries with key `t` are `sum_d qT[d] * k_t[d]`: one vector accumulator per key and
//!   query vector, one fused multiply-add per value and query vector with `k_t[d]`
//!   broadcast once from the frame-major key row (AVX-512: an embedded broadcast
//!   operand). Per query vector, the block's maximum is a vertical `max` of the `KB`
//!   score vectors, its probabilities `KB` vector exponentials, and when the maximum of
//!   some lanes grows every vector is rescaled with a factor exactly 1 in the other
//!   lanes (so a lane's bits depend on its own query only, for any `QV`: a last block of
//!   at most `L` queries runs with one vector). The output accumulates in a transposed
//!   tile, `oT[d] += p_t * v_t[d]` (the probabilities as vectors over the queries, `v_t[d]`
//!   broadcast once for every query vector; even and odd keys in two sums), each tile
//!   row loaded and stored once per block; at the end it is divided by the running sums
//!   and transposed into the output rows. Transposing the queries once per block of
//!   queries (rather than the keys once per block of keys and queries) makes every key
//!   and value access a broadcast straight from the frame-major rows, for any `head_dim`
//!   (no tail). Rows of the last block past `q_frames` repeat its last query and are not
//!   stored. Used for 5 rows (`MIN_ROWS`) or more and `head_dim <= 128` (the two tiles:
//!   8 KiB each). File `blocks.rs`.
//!
//!   The AVX2 block (2 x 8 queries x 6 keys: 12 score accumulators, 2 query vectors and a
//!   broadcast in the 16 `ymm` registers) takes a load per 1.5 fused multiply-adds where
//!   one vector of 8 queries x 8 keys takes 9 loads per 8, and has enough independent sums
//!   to cover the multiply-add latency: the fastest tile of those tried (`BENCHMARKS.md`,
//!   "Host: attention on Moonshine's shapes (x86-64)"). 3 x 8 x 4 needs 16 registers and
//!   spills; computing the next block's scores before the current softmax (software
//!   pipelining in the source) spills the scores.
//! - **One query (a decoder step; fewer than 5 rows; `head_dim > 128`): one key
//!   per lane**, in chunks of up to 256 keys, each in four loops that wait for nothing
//!   but the previous loop: (1) per block of `L` keys, `L` accumulators of `q * k_t` over
//!   `head_dim` in `L`-value chunks (the last one under a lane mask: Moonshine's 52 = 3 x
//!   16 + 4), reduced to one vector of `L` scores by a transposing add tree (AVX-512:
//!   `vunpck{l,h}ps`, `vunpck{l,h}pd`, two rounds of `vshuff64x2`; AVX2: `vhaddps`,
//!   `vperm2f128`) and stored in a buffer on the stack; (2) their maximum (the output row
//!   is rescaled when it grows); (3) the exponentials, in place; (4) the output row
//!   accumulated over the chunk's keys, up to 64 values (AVX2: 32) in registers at a
//!   time, each probability broadcast from the buffer, even and odd keys in two sums.
//!   Running the chain from scores to output block by block instead (maximum,
//!   exponentials and accumulation per 16 keys, the output row loaded and stored per
//!   block) is slower (`BENCHMARKS.md`, "Host: attention on Moonshine's shapes (x86-64)").
//!   File `single.rs`.
//!
//! Keys past a row's visible count (causal, or past `len` in the last block) get the
//! score `-inf` (probability exactly 0) and read the last visible row, so rows past `len`
//! are never touched, as in the other kernels.
//!
//! The exponential is the runtime's (`kernels/activation.rs`: the same reduction,
//! polynomial and constants, in fused multiply-adds as in the NEON form), written once
//! over [`Simd`](kernel::Simd) ([`exp`](kernel::exp)).
//!
//! # Accuracy
//!
//! Within the bound of [`super`]: each score is a sum of `head_dim` products of `q_d
//! scale` (rounded) and `k_d`, in some order (`gamma_(head_dim + 1)` covers the scaling);
//! the sums of `p_j v_j` and of `p_j` are f32 sums of the `n` terms in some order, with at
//! most one rescaling per block of keys.
//!
//! # Measured
//!
//! See the module documentation of [`super`] (host timings per level).

// Accumulator arrays are indexed by constant loop counters on purpose: fully unrolled,
// every element stays in its own register.
#![allow(clippy::needless_range_loop)]

use super::AttentionKernels;
use crate::kernels::{X86Isa, X86};

impl<I: X86Isa> AttentionKernels for X86<I> {
    /// The multi-query kernel's block of rows: the level's lanes (AVX2: two vectors).
    #[cfg(neon_x86)]
    const ATTENTION_ROW_TILE: usize = match I::LEVEL {
        crate::kernels::cpu::X86Level::Avx2 => 16,
        crate::kernels::cpu::X86Level::Avx512 => 16,
    };

    #[cfg(neon_x86)]
    unsafe fn attention_unchecked(
        q: &[f32],
        k: &[f32],
        v: &[f32],
        mut out: crate::kernels::StridedMut<'_>,
        g: super::AttentionGeometry,
        heads: core::ops::Range<usize>,
    ) {
        use crate::kernels::cpu::X86Level;
        Self::require();
        // Output row i of head h at `out + i * c + h * hd`: the block starts at head
        // `heads.start` of row 0 (wrapping: the pointer itself may lie before the block).
        let out = out.as_mut_ptr().wrapping_sub(heads.start * g.head_dim);
        let (q, k, v) = (q.as_ptr(), k.as_ptr(), v.as_ptr());
        let p = kernel::Ptrs { q, k, v, out, heads: (heads.start, heads.end) };
        // SAFETY: the entry point checked the geometry and the slice lengths (`q`: `q_frames
        // * c`, `k`, `v`: at least `len * c`), the block `out` owns the values of the heads
        // `heads` of every output row, and the CPU implements the level (`require`).
        unsafe {
            match I::LEVEL {
                X86Level::Avx2 => avx2::attention(p, g),
                X86Level::Avx512 => avx512::attention(p, g),
            }
        }
    }
}

x86_simd_items! {
    mod avx2;
    mod avx512;
    mod blocks;
    mod driver;
    mod kernel;
    mod single;
}
