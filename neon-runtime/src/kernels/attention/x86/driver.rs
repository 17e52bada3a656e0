//! The kernel's driver over heads and query rows: blocks of queries through the
//! multi-query kernel ([`blocks`]), the rest one by one ([`single`]).

use super::super::AttentionGeometry;
use super::kernel::{Ptrs, Simd, HD_MAX};
use super::{blocks, single};

/// Fewest query rows for which a (padded) block of the multi-query kernel is used;
/// fewer go through the single-query kernel: at both levels a block costs about as much
/// as 5 single rows with the keys in cache, a little less streaming them from the
/// last-level cache (`BENCHMARKS.md`, "Host: attention on Moonshine's shapes (x86-64)").
const MIN_ROWS: usize = 5;

/// The whole kernel at level `S`: per head of `p.heads`, blocks of up to `QV * L` queries
/// against blocks of `KB` keys (even), then single queries. A last block of at
/// most `L` queries runs with one query vector (the same bits, see [`blocks::rows`]).
///
/// # Safety
/// `p` and `g` describe a geometry the entry point accepted (`q_frames >= 1`); the heads
/// `p.heads` are within `0..g.heads`, and their values of every output row (`out + i * c
/// + h * head_dim .. + head_dim`) are writable and not aliased.
#[inline(always)]
pub(super) unsafe fn attention<const L: usize, const QV: usize, const KB: usize, S: Simd<L>>(
    s: S,
    p: Ptrs,
    g: AttentionGeometry,
) {
    // Key indices are compared as i32 in the multi-query kernel.
    let blocks = g.head_dim <= HD_MAX && g.len < 1 << 30;
    for h in p.heads.0..p.heads.1 {
        let mut i = 0;
        while blocks && g.q_frames - i >= MIN_ROWS {
            let nq = (QV * L).min(g.q_frames - i);
            // SAFETY: `i + nq <= q_frames`, `h < heads`, `hd <= HD_MAX`, `len <
            // 2^30`; the rest is the caller's contract.
            unsafe {
                if nq > L {
                    blocks::rows::<L, QV, KB, S>(s, p, g, (i, nq), h)
                } else {
                    blocks::rows::<L, 1, KB, S>(s, p, g, (i, nq), h)
                }
            };
            i += nq;
        }
        while i < g.q_frames {
            // SAFETY: `i < q_frames`, `h < heads`; the caller's contract.
            unsafe { single::row(s, p, g, i, h) };
            i += 1;
        }
    }
}
