//! The attention kernel at AVX-512F ([`Zmm`]: 16 lanes in `zmm` registers).

use super::super::AttentionGeometry;
use super::driver;
use super::kernel::Ptrs;
use crate::kernels::x86_simd::Zmm;

/// The kernel at AVX-512F.
///
/// # Safety
/// The CPU implements AVX-512F; `p` and `g` describe a geometry the entry point accepted
/// (`q_frames >= 1`) and the values of the heads `p.heads` of every output row are
/// writable through `p.out` and not aliased.
#[target_feature(enable = "avx512f")]
pub(super) unsafe fn attention(p: Ptrs, g: AttentionGeometry) {
    // SAFETY: the CPU implements AVX-512F (contract), so the token may exist; the rest is
    // the caller's contract.
    // Blocks of 16 queries x 8 keys: 16 keys (16 rows in flight) are no faster in cache and
    // slower streaming the keys from the last-level cache (BENCHMARKS.md, "Host: attention
    // on Moonshine's shapes (x86-64)").
    unsafe { driver::attention::<16, 1, 8, Zmm>(Zmm::new(), p, g) }
}
