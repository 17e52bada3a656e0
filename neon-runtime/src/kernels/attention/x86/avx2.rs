//! The attention kernel at AVX2 + FMA ([`Ymm`]: 8 lanes in `ymm` registers).

use super::super::AttentionGeometry;
use super::driver;
use super::kernel::Ptrs;
use crate::kernels::x86_simd::Ymm;

/// The kernel at AVX2 + FMA.
///
/// # Safety
/// The CPU implements AVX2 and FMA; `p` and `g` describe a geometry the entry point
/// accepted (`q_frames >= 1`) and the values of the heads `p.heads` of every output row
/// are writable through `p.out` and not aliased.
#[target_feature(enable = "avx2,fma")]
pub(super) unsafe fn attention(p: Ptrs, g: AttentionGeometry) {
    // SAFETY: the CPU implements AVX2 and FMA (contract), so the token may exist; the
    // rest is the caller's contract.
    // Blocks of 2 x 8 queries x 6 keys: the fastest tile of those tried (module docs;
    // BENCHMARKS.md, "Host: attention on Moonshine's shapes (x86-64)").
    unsafe { driver::attention::<8, 2, 6, Ymm>(Ymm::new(), p, g) }
}
