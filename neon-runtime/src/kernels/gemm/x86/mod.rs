//! The x86-64 backend's GEMM and GEMV: `impl<I: X86Isa> GemmKernels for X86<I>` over the
//! AVX-512F (16-wide, `avx512.rs`) and AVX2 + FMA (8-wide, `avx2.rs`) kernels, on the same
//! packed layouts as every other backend; the packed-A tile (`tile.rs`) is written once over
//! both levels' vectors.
//!
//! The impl exists on every target (generic code names `X86<I>` everywhere); its hook overrides are
//! compiled for x86-64 hard-float targets outside Miri only (`cfg(neon_x86)`, set by the crate's
//! `build.rs`), elsewhere the provided (portable) hooks run. Each override first asserts that the
//! CPU has level `I` ([`X86::require`]), then runs that level's kernel (`I::LEVEL` is a constant:
//! the match folds). The packed-A product (segmented `B` in [`super::BRows`], the
//! [`super::Epilogue`] fused into the tile's registers in the `vmaxps` form of `VecEpilogue`) runs
//! one set of tiles per level for contiguous and segmented operands alike, so both give the same
//! bits on the same level. The packed-B product, the GEMV and the AVX-512 packed-A product
//! run the shared drivers of [`gemm`](super) over this level's micro-kernels; the AVX2
//! packed-A product keeps a driver of its own (`avx2.rs`), as its long reductions run
//! blocked over copies of `B`. Tile shapes and register budgets below.
//!
//! The [`X86`] backend runs hand-vectorised kernels (`x86/avx512.rs`,
//! `x86/avx2.rs`) over the same packed layouts, so host benchmarks against peers compare
//! like with like. The level is part of the type, `X86<Avx512>` or `X86<Avx2>`, chosen
//! once where a component is built ([`BackendKind::best`](crate::BackendKind::best): with
//! feature `std` by run-time detection, without it from the build's target features,
//! `-C target-cpu=native`); under Miri and on soft-float targets its hooks are the
//! plain-Rust ones. The tests check each level against the f64 reference and the
//! benchmarks time each. Every level uses fused multiply-adds, so they differ from the
//! portable code (and from each other, where the summation order differs) by rounding
//! only. Per-register budgets (FMA latency 4 cycles at 2 per cycle needs at
//! least 8 independent accumulators):
//!
//! - **AVX-512, packed A: 8x48.** 24 `zmm` accumulators (8 panel rows by 3 vectors of 16
//!   columns); per `k`: 3 loads of row `k` of `B`, 8 `vbroadcastss` of the panel's
//!   weights, 24 FMAs (11 loads per 24 FMAs; 24 + 3 + 2 of 32 registers). Column blocks
//!   of 48 are the outer loop and every panel passes over a block while it is cached
//!   (`k x 192` bytes: 13.5 KiB at `k = 72`, in L1; 54 KiB at `k = 288`, L1 and L2).
//!   Tails: 32- and 16-wide tiles, and a last vector loaded and stored under a lane mask (masked `vmovups`
//!   touches no memory outside the mask, so `B` and `C` rows need no padding).
//!   Reductions longer than 256 run blocked as at AVX2 (`packed_a_blocked`: per 192
//!   columns and 256 steps, `B` copied into 48-column strips, 192 KiB on the stack):
//!   Moonshine's stem convs (`k` = 2,912 and 2,496) read each tile's strided `k x 48`
//!   block of `B` from beyond L2 otherwise, as the 9.7 MB of conv2's weights stream
//!   through; blocked, the encoder took 0.8x the time (BENCHMARKS.md, "Host: Moonshine
//!   base-en vs ONNX Runtime"). The same bits either way.
//! - **AVX-512, packed B: 12x32** (two panels): 24 accumulators; per `k`: 2 panel loads,
//!   12 broadcasts of `A[i, k]`, 24 FMAs (14 loads per 24 FMAs; 24 + 2 + 1 of 32
//!   registers). Up to 256 steps: blocks of 96 rows of `A` (L2) by pairs of panels
//!   (`32 * k` values, L1). Longer reductions run blocked: `k` in equal blocks of at most
//!   256 steps, each block over 432 rows of `A` (432 KiB, L2) by pairs of panels (32 KiB,
//!   L1) by tiles; later blocks continue from the sums stored in `C`, so each output keeps
//!   its one chain of FMAs and the bits of one pass. Moonshine's int8 linears call this
//!   product on converted blocks of 80 rows by 2 panels by up to 512 steps
//!   (`quant::converted`): unblocked, such a pair of panels (53-64 KiB at `k` = 416-512)
//!   does not fit the 48 KiB L1. With the 12x32 tile, blocked, the encoder network took
//!   about 0.8x the time of the 8x32 tile unblocked (BENCHMARKS.md, "Host: Moonshine
//!   base-en vs ONNX Runtime"), and the f32 product on the linears' whole shapes (413
//!   rows, 416 -> 416 / 1,248 / 1,664 and 1,664 -> 416) ran 1.12-1.21x as fast. Rows past
//!   a multiple of 12 use 1..=11-row tiles; when a tile of two panels would have fewer
//!   than 8 accumulators (1..=3 rows), consecutive `k` go to 2-4 accumulator sets added at
//!   the end (such a tile runs unblocked). The set count depends on the rows only, so a
//!   lone last panel (or the first panel of a team's column block) gets the bits it would
//!   get paired, and a team may split columns at any panel. A partial last panel is
//!   computed whole (zero padding) and stored under a mask.
//! - **AVX-512, GEMV:** two panels at a time, 4 accumulators per panel taking the `k`
//!   values in turn (8 FMA chains); x broadcast from memory. Bandwidth-bound.
//! - **AVX2, packed A: 4x24** (half a panel by 3 vectors of 8): 12 accumulators + 3 `B`
//!   vectors + 1 broadcast fill the 16 `ymm` registers exactly; the inner loop is `asm!`
//!   because LLVM's allocation of the same code spills an accumulator every step (the
//!   store-to-load round trip on its chain is on the critical path). Each `B` row is loaded
//!   once per half panel (from L1). Tails: 16-wide tiles by half panels, and the last 1..=8
//!   columns by whole panels (8 accumulators: by half panels, 4 FMA chains wait on the FMA
//!   latency), lanes past `n` through `vmaskmovps`. Reductions longer than 256 run blocked:
//!   per 192 columns and 256 steps, the rows of `B` (wherever [`super::BRows`] places them)
//!   are first copied into contiguous 24-column strips on the stack (192 KiB), the tiles of
//!   every panel then read the strips, and later blocks continue from the partial sums in
//!   `C` (the bias on the first block, the epilogue on the last): each output keeps its one
//!   FMA chain, so the bits are those of one pass. The copy is there because `k` rows of
//!   `B` read one `ldb` apart in every tile stay in no cache level between panels; the
//!   block sizes (192 columns, 256 steps) were the fastest measured on conv2 of Moonshine's
//!   stem (see BENCHMARKS.md, "Kernel design measurements (GEMM and int8)").
//! - **AVX2, packed B: 6x16:** 12 accumulators + 2 panel vectors + 1 broadcast; fewer
//!   rows use accumulator sets over `k` as above. **AVX2, GEMV:** one panel, 4 sets.
//! - **Segmented `B` and the epilogue** ([`super::GemmA`], conv2d) run the same
//!   packed-A tiles at both levels: the `k` loop is one loop per [`super::BRows`]
//!   segment (AVX2: the assembly loop once per segment, the accumulators staying in
//!   registers), so a segmented operand costs what a contiguous one does and gives the
//!   same bits. The [`super::Epilogue`] is applied to the accumulators before
//!   the stores, as `max(min, max(x, slope * x))` with `vmaxps` (3 instructions per
//!   accumulator, as on NEON): `vmaxps` returns its second operand on a
//!   tie or a NaN, which with `x` first and `slope * x` second, then `min` first, is IEEE
//!   `maximum` bit for bit whenever `slope` is not NaN with its sign bit clear and `min`
//!   is not NaN (a clamp at exactly `+0` adds a compare and a masked move for `-0`). Other
//!   epilogues (a `-0` or NaN slope, a NaN bound; conv2d rejects them) are applied by a
//!   scalar pass after the kernel.
//! - **`conv_rows`** (AVX-512 only; `Conv2dKernels::conv_rows` of `X86<Avx512>`, in
//!   `conv2d/x86.rs`): the same 8x48 tile for convs "valid" along the height
//!   and "same" along the width (openWakeWord's 1x3 convs and its first 3x3 conv), reading
//!   `B` straight from the input image: tap `(i, j)` of pixel `p` is `x[i * width + p + j -
//!   pad_left]` of each channel plane, loaded under a lane mask that zeroes the columns
//!   outside the image row (masks per 48-column block and tap, from a bit pattern of the
//!   image width). No im2col; the same bits as im2col + `gemm_packed_a`.
//!
//! The AVX-512 packed-B tile is 12x32 rather than one panel high (14x16, as on NEON): 12
//! broadcasts feed 24 FMAs instead of 14 feeding 14 (and 8x32 before it: 8 feeding 16). The GEMV is bandwidth-bound. Speeds
//! of every level on the host, against the portable kernels and matrixmultiply, and the
//! variants measured: see BENCHMARKS.md, "Kernel design measurements (GEMM and int8)".

use super::GemmKernels;
use crate::kernels::{X86Isa, X86};

x86_simd_items! {
    pub(crate) mod avx2;
    pub(crate) mod avx512;
    mod tile;

    use super::{BRows, Epilogue, GemmA, GemmB, Operands, PACK_MR};
    use crate::kernels::cpu::X86Level;
    use crate::kernels::StridedMut;
}

impl<I: X86Isa> GemmKernels for X86<I> {
    #[cfg(neon_x86)]
    const GEMM_B_ROW_TILE: usize = match I::LEVEL {
        X86Level::Avx2 => avx2::MR_B,
        X86Level::Avx512 => avx512::MR_B,
    };

    #[cfg(neon_x86)]
    const GEMM_A_COL_TILE: usize = match I::LEVEL {
        X86Level::Avx2 => avx2::NR_A,
        X86Level::Avx512 => avx512::NR_A,
    };

    #[cfg(neon_x86)]
    unsafe fn gemm_packed_b_unchecked(g: GemmB, (a, b, bias): Operands<'_>, mut c: StridedMut<'_>) {
        Self::require();
        // SAFETY: the caller checked the contract (sizes >= 1); `require` asserted level I.
        unsafe {
            match I::LEVEL {
                X86Level::Avx2 => avx2::gemm_packed_b(g, a, b, bias, &mut c),
                X86Level::Avx512 => avx512::gemm_packed_b(g, a, b, bias, &mut c),
            }
        }
    }

    #[cfg(neon_x86)]
    unsafe fn gemm_packed_a_unchecked(g: GemmA, (a, b, bias): Operands<'_>, mut c: StridedMut<'_>) {
        Self::require();
        with_vec_epilogue(g.epilogue, &mut c, |ep, c| {
            // SAFETY: the caller checked the contract (sizes >= 1); `require` asserted
            // level I.
            unsafe {
                match I::LEVEL {
                    X86Level::Avx2 => avx2::gemm_packed_a(g, ep, a, b, bias, c),
                    X86Level::Avx512 => avx512::gemm_packed_a(g, ep, a, b, bias, c),
                }
            }
        })
    }

    #[cfg(neon_x86)]
    unsafe fn gemv_packed_b_unchecked(x: &[f32], b: &[f32], bias: Option<&[f32]>, y: &mut [f32]) {
        Self::require();
        // SAFETY: the caller checked the contract (sizes >= 1); `require` asserted level I.
        unsafe {
            match I::LEVEL {
                X86Level::Avx2 => avx2::gemv_packed_b(x, b, bias, y),
                X86Level::Avx512 => avx512::gemv_packed_b(x, b, bias, y),
            }
        }
    }
}

/// An [`Epilogue`] in the form the vector kernels apply to their accumulators:
/// `max(min, max(x, slope * x))` with `vmaxps`, which returns its second operand when the
/// operands are equal or either is NaN. That is [`Epilogue::apply`] (IEEE `maximum`, NaN
/// propagating, `max(-0, +0) = +0`) bit for bit when `slope` is not NaN and has its sign
/// bit clear and `min` is not NaN: `slope * x` is NaN exactly when `x` is (it carries `x`'s
/// payload) or when it is `0 * inf` (then the maximum is that NaN, as `apply` gives), and
/// `x`, `slope * x` are never zeros of opposite signs. The second maximum
/// returns `v = max(x, slope * x)` on a tie, which differs from `apply` only for `v = -0`,
/// `min = +0`: `zero_fix` then selects `min` where `v == min`. Other epilogues (a negative
/// or NaN slope, a NaN bound) are applied by a scalar pass after the kernel
/// ([`with_vec_epilogue`]).
#[cfg(neon_x86)]
#[derive(Clone, Copy, Debug)]
pub(crate) struct VecEpilogue {
    pub(crate) slope: f32,
    pub(crate) min: f32,
    pub(crate) zero_fix: bool,
}

#[cfg(neon_x86)]
impl VecEpilogue {
    /// The vector form of `e`, `None` when the vector form would differ from
    /// [`Epilogue::apply`].
    pub(crate) fn new(e: Epilogue) -> Option<Self> {
        let ok = !e.slope.is_nan() && e.slope.is_sign_positive() && !e.min.is_nan();
        ok.then_some(Self { slope: e.slope, min: e.min, zero_fix: e.min.to_bits() == 0 })
    }
}

/// Runs a vector kernel writing the block `c` with the output stage `epilogue`: fused
/// into the kernel's registers (`kernel(Some(..), c)`) when [`VecEpilogue::new`] accepts
/// it, else `kernel(None, c)` followed by a scalar pass of [`Epilogue::apply`]. Shared by
/// the packed-A product and conv2d's direct kernel.
#[cfg(neon_x86)]
pub(crate) fn with_vec_epilogue(
    epilogue: Option<Epilogue>,
    c: &mut StridedMut<'_>,
    kernel: impl FnOnce(Option<VecEpilogue>, &mut StridedMut<'_>),
) {
    let fused = epilogue.map(VecEpilogue::new);
    kernel(fused.flatten(), c);
    if let (Some(e), Some(None)) = (epilogue, fused) {
        for i in 0..c.rows() {
            c.row(i).iter_mut().for_each(|v| *v = e.apply(*v));
        }
    }
}

/// What every packed-A tile of one x86 product shares: the rows of `B`, the output stage
/// in vector form (if fused) and the distance between rows of `C`.
#[cfg(neon_x86)]
#[derive(Clone, Copy, Debug)]
pub(crate) struct TileA {
    pub(crate) br: BRows,
    pub(crate) ep: Option<VecEpilogue>,
    pub(crate) ldc: usize,
    /// The tiles start from the values already in `C` (a later block of a blocked
    /// reduction) instead of the bias (AVX2 only; the AVX-512 tiles never block).
    pub(crate) accumulate: bool,
}

/// The geometry a level's packed-A column loop runs over (`columns` of
/// [`packed_a_blocked`]): `m` rows (panels of 8 weights per step, `panel_stride` values
/// apart) by `n` columns of `B`, whose column strip `j` (a multiple of the level's tile
/// width `NR`) starts `j / NR * strip_stride` values into `B` (`NR`: the rows of `B` as
/// `TileA::br` places them; `KC * NR`: the strips of the blocked path's buffer).
#[cfg(neon_x86)]
#[derive(Clone, Copy, Debug)]
pub(crate) struct ABlock {
    pub(crate) m: usize,
    pub(crate) n: usize,
    pub(crate) panel_stride: usize,
    pub(crate) strip_stride: usize,
}

/// The packed-A driver of both levels (`gemm_packed_a` with its contract checked, `m, n, k
/// >= 1`; `t` the tiles' `B` rows, output stage in vector form and `C` stride, not
/// accumulating), over the level's column loop `columns(t, block, a, b, c)`, which runs
/// every panel's tiles over column strips `NR` wide ([`ABlock`]).
///
/// Up to `KC` reduction steps, the tiles read `B` where it is (one call, strips `NR`
/// apart). A longer reduction runs blocked, as GotoBLAS-style GEMMs do: per block of `NC`
/// columns and `KC` steps, the rows of `B` (wherever `g.rows` places them, strided `ldb`
/// apart) are first copied into a contiguous buffer of `NR`-column strips (`KC * NC`
/// values on the stack), then every panel runs over it, the first block starting from the
/// bias, later ones from the partial sums in `C` (`TileA::accumulate`), the output stage
/// on the last. Without it each tile read `k` rows of `B` one `ldb` stride apart (a
/// strided walk of `NR x k` values, 280 KiB at `NR = 24` for conv2 of Moonshine's stem),
/// which no cache level kept between panels while the weights streamed through. Every
/// output keeps its one chain of FMAs over `kk = 0..k` in order, so both paths, and any
/// column split a team makes, give the same bits.
///
/// # Safety
/// The hook's contract (checked, `m, n, k >= 1`) for `g`, `a`, `b` and the block `c`;
/// `columns` may be called with any [`ABlock`] of `m` rows and up to `NC` columns whose
/// strips hold the `t.br` rows it is given, `c` pointing at the block's first column.
#[cfg(neon_x86)]
#[inline(always)]
pub(crate) unsafe fn packed_a_blocked<const NR: usize, const KC: usize, const NC: usize>(
    g: GemmA,
    t: TileA,
    a: &[f32],
    b: &[f32],
    c: &mut StridedMut<'_>,
    columns: impl Fn(&TileA, &ABlock, *const f32, *const f32, *mut f32),
) {
    let GemmA { m, n, rows: br, ldc, .. } = g;
    let k = br.rows * br.segments;
    let (ap, bp, cp) = (a.as_ptr(), b.as_ptr(), c.as_mut_ptr());
    if k <= KC {
        columns(&t, &ABlock { m, n, panel_stride: PACK_MR * k, strip_stride: NR }, ap, bp, cp);
        return;
    }
    // Uninitialised: the tiles read only the values copied in for their block.
    let mut packed = core::mem::MaybeUninit::<[[f32; KC]; NC]>::uninit();
    let pp = packed.as_mut_ptr().cast::<f32>();
    for j0 in (0..n).step_by(NC) {
        let nb = NC.min(n - j0);
        for k0 in (0..k).step_by(KC) {
            let kc = KC.min(k - k0);
            for kk in 0..kc {
                let (s, q) = ((k0 + kk) / br.rows, (k0 + kk) % br.rows);
                // SAFETY: row `k0 + kk` of `B` holds n >= j0 + nb values (the contract).
                let row = unsafe { bp.add(s * br.segment_stride + q * br.ldb + j0) };
                for strip in 0..nb.div_ceil(NR) {
                    let w = NR.min(nb - strip * NR);
                    // SAFETY: the row holds the strip's w values (above); strip `strip` of
                    // the buffer holds kc <= KC rows of NR values, and strip * KC * NR +
                    // kk * NR + w <= the buffer's KC * NC values; the two do not overlap.
                    unsafe {
                        let dst = pp.add(strip * KC * NR + kk * NR);
                        core::ptr::copy_nonoverlapping(row.add(strip * NR), dst, w);
                    }
                }
            }
            let last = k0 + kc == k;
            let t = TileA {
                br: BRows::contiguous(kc, NR),
                ep: if last { t.ep } else { None },
                ldc,
                accumulate: k0 > 0,
            };
            let blk = ABlock { m, n: nb, panel_stride: PACK_MR * k, strip_stride: KC * NR };
            // SAFETY: panel p's steps k0..k0 + kc are the 8 * kc weights from
            // p * 8 * k + k0 * 8 (the contract); columns j0..j0 + nb of the m rows of `c`
            // are in the block the contract gives.
            let (ak, cj) = unsafe { (ap.add(k0 * PACK_MR), cp.add(j0)) };
            columns(&t, &blk, ak, pp, cj);
        }
    }
}

/// A level's `#[target_feature]` entry points: `shared_drivers!(Kernel, packed_a,
/// "feature,list", "what the CPU needs")` in the level's module (which imports `driver`,
/// `GemmA`, `GemmB`, `TileA`, `VecEpilogue` and `StridedMut`) defines `gemm_packed_a` over
/// the packed-A driver `packed_a` (the shared [`super::driver::packed_a`] over `Kernel`, or the
/// level's own), and `gemm_packed_b` and `gemv_packed_b` over the shared drivers and
/// `Kernel`; `shared_drivers!(Kernel, packed_a, packed_b, ...)` runs the level's own
/// packed-B driver `packed_b` instead.
#[cfg(neon_x86)]
macro_rules! shared_drivers {
    ($kernel:ty, $packed_a:expr, $features:literal, $needs:literal) => {
        super::shared_drivers!($kernel, $packed_a, driver::packed_b::<$kernel>, $features, $needs);
    };
    ($kernel:ty, $packed_a:expr, $packed_b:expr, $features:literal, $needs:literal) => {
        /// The packed-A product, with the output stage in vector form, `ep`, instead of
        /// `g.epilogue`.
        ///
        /// # Safety
        #[doc = concat!($needs, "; the hook's contract (checked, `m, n, k >= 1`).")]
        #[target_feature(enable = $features)]
        pub(crate) unsafe fn gemm_packed_a(
            g: GemmA,
            ep: Option<VecEpilogue>,
            a: &[f32],
            b: &[f32],
            bias: Option<&[f32]>,
            c: &mut StridedMut<'_>,
        ) {
            let t = TileA { br: g.rows, ep, ldc: g.ldc, accumulate: false };
            // SAFETY: forwarded contract.
            unsafe { $packed_a(g, t, a, b, bias, c) }
        }

        #[doc = concat!("The packed-B product (`", stringify!($packed_b), "`).")]
        ///
        /// # Safety
        #[doc = concat!($needs, "; the hook's contract (checked, `m, n, k >= 1`).")]
        #[target_feature(enable = $features)]
        pub(crate) unsafe fn gemm_packed_b(
            g: GemmB,
            a: &[f32],
            b: &[f32],
            bias: Option<&[f32]>,
            c: &mut StridedMut<'_>,
        ) {
            // SAFETY: forwarded contract.
            unsafe { $packed_b(g, a, b, bias, c) }
        }

        /// The GEMV ([`driver::gemv`] over the level's kernel; `k = x.len()`, `n = y.len()`).
        ///
        /// # Safety
        #[doc = concat!($needs, "; the hook's contract (checked, `n, k >= 1`).")]
        #[target_feature(enable = $features)]
        pub(crate) unsafe fn gemv_packed_b(
            x: &[f32],
            b: &[f32],
            bias: Option<&[f32]>,
            y: &mut [f32],
        ) {
            // SAFETY: forwarded contract.
            unsafe { driver::gemv::<$kernel>(x, b, bias, y) }
        }
    };
}
#[cfg(neon_x86)]
use shared_drivers;

/// `match $rows { 1 => { const R: usize = 1; $body } ... }` over the listed row counts, the
/// last for any other value: a packed-B tile's row count as a constant.
#[cfg(neon_x86)]
macro_rules! seq_rows {
    ($rows:expr, $r:ident => $body:expr; $($n:literal)*; $last:literal) => {
        match $rows {
            $($n => {
                const $r: usize = $n;
                $body
            })*
            _ => {
                const $r: usize = $last;
                $body
            }
        }
    };
}
#[cfg(neon_x86)]
use seq_rows;
