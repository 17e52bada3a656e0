//! Packed f32 GEMM and GEMV.
//!
//! Two packed forms, both packed once when an operator is prepared:
//! - **packed B** (`Linear`, frame-major conv output): weights `W[n, k]` (`[out, in]`,
//!   PyTorch's layout) packed into column panels of [`PACK_NR`] outputs: panel `p` holds,
//!   for each `k`, the `PACK_NR` values `W[p*NR + j, k]` (zero padded past `n`).
//!   `C[m, n] = A[m, k] · W^T + bias[n]` with `A` row-major (activations, frame-major).
//! - **packed A** (channel-first conv): weights `W[m, k]` packed into row panels of
//!   [`PACK_MR`] outputs: panel `p` holds, for each `k`, the `PACK_MR` values
//!   `W[p*MR + i, k]` (zero padded past `m`). `C[m, n] = W · B[k, n] + bias[m]` with `B`
//!   row-major (channel-first activations `[channels, frames]`).
//!
//! # Micro-kernels
//!
//! Both backends block the output in registers and stream the packed weights once per
//! tile; only the activations are read unpacked, straight from the caller's rows.
//!
//! **NEON, packed B: 5x16.** One tile is 5 rows of `C` by one 16-wide panel: 20
//! `float32x4_t` accumulators. Per step of 4 `k` values the kernel loads one 4-value
//! vector from each of the 5 `A` rows (`A[i, k..k+4]`, unpacked frame-major activations)
//! and, for each of the 4 `k`, the panel's 16 weights with one `ld1 {4 regs}`; the 80
//! multiply-adds are `fmla v.4s, v.4s, v.s[lane]` taking `A[i, k+l]` from lane `l`.
//! Registers: 20 accumulators + 5 `A` vectors + 4 `B` vectors = 29 of 32, no spills.
//! The 8x12 shape (the usual choice when `A` is packed too) needs 24 + 8 + 3 = 35
//! registers here, because each unpacked `A` row occupies a whole register for the 4 `k`
//! values it supplies; 8x12 with the `B` rows loaded twice fits but executes ~17% more
//! instructions per FLOP. Ideal count per 4 `k`: 80 `fmla`, 5 + 4 loads and 2 loop
//! instructions, 91 for 640 FLOPs, i.e. 7.03 FLOPs per instruction.
//! The inner loop is `asm!`: written with intrinsics, LLVM spends 5 more integer
//! instructions per step on the 6 pointers and the counter (6.14 FLOPs per instruction
//! instead of 6.90), and a `vst1q_f32_x4` of the accumulators makes it allocate each row
//! as a register tuple and spill (3.0). Rows that do not fill a tile (`m % 5`) run the
//! same steps in intrinsics with 1..=4 rows; a partial last panel (`n % 16`) is computed
//! whole (its padding is zero) and only its valid columns are stored; `k % 4` trailing
//! values use `fmla` by a broadcast scalar.
//!
//! **NEON, packed A: 8x12.** One tile is an 8-row weight panel by 12 columns of `B`:
//! 24 accumulators. Per `k` the kernel loads the panel's 8 weights (2 vectors, the lane
//! sources, one `ld1`) and 12 values of row `k` of `B` (3 vectors, one `ld1`
//! post-incremented by `ldb`): 24 `fmla` by element; 29 registers. The whole tile is one
//! `asm!` block: accumulators set from the bias (`dup` by lane), the pairs of `k` of each
//! `B` segment ([`BRows`]) in a loop, the odd step, the optional [`Epilogue`] (3
//! instructions per accumulator) and 8 `st1` of 3 registers. Written with intrinsics
//! around an assembly loop, LLVM moved the 24 accumulators into the loop's registers,
//! spilled loop invariants around the epilogue and stored row by row with bounds checks:
//! about 270 instructions of set-up, epilogue and stores per tile instead of about 110
//! (openWakeWord's embedding, k = 9..288: 12.88 M instructions instead of 13.22 M).
//! Columns are covered by 12-wide tiles, then 8- and 4-wide tiles in intrinsics, and a
//! column-wise tail for the last 1..=3 columns (per column two accumulators and a `B`
//! value broadcast with `ld1r`: `B` rows are not padded, so nothing is read past them);
//! rows past `m` in the last panel are computed on zero weights and not stored (a 12-wide
//! tile then goes through an 8x12 buffer).
//!
//! [`GemmKernels::gemm_packed_a_rows`] is the general form behind conv2d: `B` rows placed
//! by a [`BRows`] map (several segments let a `kh x 1` conv read its input directly) and
//! a fused [`Epilogue`] `max(x, slope x, min)` (leaky ReLU then clamp) applied to the
//! accumulators before they are stored.
//!
//! **NEON, GEMV (packed B, `m = 1`).** Two panels (32 outputs) at a time: 8 accumulators,
//! one `x` vector of 4 `k` values as the lane source and 8 `ld1 {4 regs}` per 4 `k`
//! (`asm!` inner loop; 43 instructions per 256 FLOPs).
//!
//! Measured with the qemu instruction counter (`BENCHMARKS.md`, `--cpu neoverse-n1`;
//! cortex-a53 gives the same counts; FLOPs = `2·M·N·K` over the instructions executed in
//! the call, weights packed beforehand): sgemm 256³ packed B **6.90**, packed A **7.01**,
//! packing included (`pack_b` + `gemm_packed_b`) **6.44**; GEMV 1024×1024 **5.88**.
//! matrixmultiply 0.3.11 on the same sgemm: 5.88 (GEMV, as a 1-row sgemm: 0.37).
//!
//! **Portable.** The same idea in plain Rust over fixed-size accumulator arrays that LLVM
//! keeps in vector registers: packed B uses 2 rows x 16 columns on x86-64 (its baseline
//! SSE2 has 16 vector registers; 4 x 16 spills there) and 4 x 16 on aarch64; packed A
//! uses 8 rows x 4 columns, vectorised along the packed weights with `B[k, j]` broadcast.
//! Portable code is compiled without FMA contraction (a multiply-add is two
//! instructions: ~2 FLOPs per instruction on aarch64), so the backends differ by rounding.
//! On x86-64 this plain-Rust code is the fallback of the kernels below.
//!
//! # x86-64: AVX-512F and AVX2 + FMA
//!
//! On x86-64 the `Portable` backend runs hand-vectorised kernels (module `x86`, file
//! `gemm_x86.rs`) over the same packed layouts when the CPU has the extensions, so host
//! benchmarks against peers compare like with like. The level (AVX-512F, else AVX2 + FMA,
//! else the plain-Rust code above) is chosen once by `x86::detected()`: with feature `std`
//! by run-time detection (cached in an atomic), without it from the build's target
//! features (`-C target-cpu=native`); under Miri and on soft-float targets the plain-Rust
//! code always runs. The
//! functions of `x86` run one level explicitly: the tests check each against the f64
//! reference and the benchmarks time each. Every level uses fused multiply-adds, so they
//! differ from the baseline (and from each other, where the summation order differs) by
//! rounding only. Per-register budgets (FMA latency 4 cycles at 2 per cycle needs at
//! least 8 independent accumulators):
//!
//! - **AVX-512, packed A: 8x48.** 24 `zmm` accumulators (8 panel rows by 3 vectors of 16
//!   columns); per `k`: 3 loads of row `k` of `B`, 8 `vbroadcastss` of the panel's
//!   weights, 24 FMAs (11 loads per 24 FMAs; 24 + 3 + 2 of 32 registers). Column blocks
//!   of 48 are the outer loop and every panel passes over a block while it is cached
//!   (`k x 192` bytes: 13.5 KiB at `k = 72`, in L1; 54 KiB at `k = 288`, L1 and L2). Tails: 32- and 16-wide
//!   tiles, and a last vector loaded and stored under a lane mask (masked `vmovups`
//!   touches no memory outside the mask, so `B` and `C` rows need no padding).
//! - **AVX-512, packed B: 8x32** (two panels): 16 accumulators; per `k`: 2 panel loads,
//!   8 broadcasts of `A[i, k]`, 16 FMAs. Blocks of 80 rows of `A` (L2) by pairs of panels
//!   (`32 * k` values, L1). Rows past a multiple of 8 use 1..=7-row tiles; when a tile has
//!   fewer than 8 accumulators, consecutive `k` go to 2-4 accumulator sets added at the
//!   end. A partial last panel is computed whole (zero padding) and stored under a mask.
//! - **AVX-512, GEMV:** two panels at a time, 4 accumulators per panel taking the `k`
//!   values in turn (8 FMA chains); x broadcast from memory. Bandwidth-bound.
//! - **AVX2, packed A: 4x24** (half a panel by 3 vectors of 8): 12 accumulators + 3 `B`
//!   vectors + 1 broadcast fill the 16 `ymm` registers exactly; the inner loop is `asm!`
//!   because LLVM's allocation of the same code spills an accumulator every step (the
//!   store-to-load round trip on its chain made it 2x slower). Each `B` row is loaded
//!   once per half panel (from L1). Tails: 16- and 8-wide tiles and `vmaskmovps`.
//! - **AVX2, packed B: 6x16:** 12 accumulators + 2 panel vectors + 1 broadcast; fewer
//!   rows use accumulator sets over `k` as above. **AVX2, GEMV:** one panel, 4 sets.
//! - **`gemm_packed_a_rows`** (conv2d) runs the same packed-A tiles at both levels: the
//!   `k` loop is one loop per [`BRows`] segment (AVX2: the assembly loop once per
//!   segment, the accumulators staying in registers), so a segmented operand costs what a
//!   contiguous one does and gives the same bits. The [`Epilogue`] is applied to the
//!   accumulators before the stores, as `max(min, max(x, slope * x))` with `vmaxps` (3
//!   instructions per accumulator, as on NEON): `vmaxps` returns its second operand on a
//!   tie or a NaN, which with `x` first and `slope * x` second, then `min` first, is IEEE
//!   `maximum` bit for bit whenever `slope` is not NaN with its sign bit clear and `min`
//!   is not NaN (a clamp at exactly `+0` adds a compare and a masked move for `-0`). Other
//!   epilogues (a `-0` or NaN slope, a NaN bound; conv2d rejects them) are applied by a
//!   scalar pass after the kernel. (Segmented operands, i.e. every direct `kh x 1` conv,
//!   used to run the plain-Rust kernel here: openWakeWord's embedding took 4.9 ms on this
//!   host, 1.6 ms with these tiles, 0.40 ms with the x86 max pooling too, 0.36 ms with
//!   `conv_rows` (below); see the host section of `BENCHMARKS.md`.)
//! - **`conv_rows`** (AVX-512 only): the same 8x48 tile for convs "valid" along the height
//!   and "same" along the width (openWakeWord's 1x3 convs and its first 3x3 conv), reading
//!   `B` straight from the input image: tap `(i, j)` of pixel `p` is `x[i * width + p + j -
//!   pad_left]` of each channel plane, loaded under a lane mask that zeroes the columns
//!   outside the image row (masks per 48-column block and tap, from a bit pattern of the
//!   image width). No im2col; the same bits as im2col + `gemm_packed_a_rows`.
//!
//! Measured with criterion (`cargo bench -p neon-benches --bench gemm`; one core of a
//! shared AMD EPYC (Zen 5) VM, AVX-512 with full-width FMAs; medians, GFLOP/s =
//! `2·M·N·K` / time; an FMA loop peaks at ~265 GFLOP/s on `zmm`, ~132 on `ymm`):
//!
//! | workload | AVX-512 | AVX2 | baseline | matrixmultiply 0.3.11 (AVX-512) |
//! |---|---:|---:|---:|---:|
//! | sgemm 256³, packed B | 244 | 117-120 | 50 | 192 |
//! | sgemm 256³, packed A | 240 | 108-129 | 37 | 192 |
//! | GEMV 1024² (4 MiB from L3) | 44 | 40-46 | 39 | 3.3 |
//! | packed A 24x2368x72 (CNN, 1x3 conv 24 -> 24) | 236 | 108-111 | 40 | 124 |
//! | packed A 48x512x144 | 241 | 97-118 | 40 | 145 |
//! | packed A 72x224x216 | 206-245 | 121-123 | 46 | 149-183 |
//! | packed A 96x40x288 | 209-212 | 112-123 | 42 | 99-110 |
//! | packed A 24x2368x9 (first conv, 3x3 1 -> 24) | 165-191 | 110-112 | 31 | 78-86 |
//!
//! (GFLOP/s; ranges span two runs.) A 14x16 packed-B tile (one panel, as on NEON) measured
//! 222-243 on sgemm 256³ against 8x32's ~265 in a separate timing loop: 8 broadcasts feed 16 FMAs
//! instead of 14 feeding 14. The GEMV is bandwidth-bound (weights in L2: ~105 GFLOP/s).

use super::{BackendType, Portable, X86Isa, X86};

/// Width (outputs) of a packed-B column panel.
pub const PACK_NR: usize = 16;
/// Height (outputs) of a packed-A row panel.
pub const PACK_MR: usize = 8;

/// Elements of the packed-B buffer for `n` outputs and `k` inputs.
pub const fn packed_b_len(n: usize, k: usize) -> usize {
    n.div_ceil(PACK_NR) * PACK_NR * k
}

/// Elements of the packed-A buffer for `m` outputs and `k` inputs.
pub const fn packed_a_len(m: usize, k: usize) -> usize {
    m.div_ceil(PACK_MR) * PACK_MR * k
}

/// Packs `w` (`[n, k]` row-major) into the packed-B layout.
///
/// # Panics
/// When `w.len() != n * k` or `out.len() != packed_b_len(n, k)`.
pub fn pack_b(w: &[f32], n: usize, k: usize, out: &mut [f32]) {
    assert_eq!(w.len(), n * k, "pack_b: weight length");
    assert_eq!(out.len(), packed_b_len(n, k), "pack_b: output length");
    if k == 0 {
        return;
    }
    for (p, panel) in out.chunks_exact_mut(PACK_NR * k).enumerate() {
        if (p + 1) * PACK_NR <= n {
            // Full panel: write each packed row of 16 contiguously (a transpose).
            let rows = &w[p * PACK_NR * k..(p + 1) * PACK_NR * k];
            for (kk, dst) in panel.chunks_exact_mut(PACK_NR).enumerate() {
                for (j, d) in dst.iter_mut().enumerate() {
                    *d = rows[j * k + kk];
                }
            }
            continue;
        }
        for j in 0..PACK_NR {
            let col = p * PACK_NR + j;
            if col < n {
                let row = &w[col * k..col * k + k];
                for (dst, &v) in panel.iter_mut().skip(j).step_by(PACK_NR).zip(row) {
                    *dst = v;
                }
            } else {
                panel.iter_mut().skip(j).step_by(PACK_NR).for_each(|d| *d = 0.0);
            }
        }
    }
}

/// Packs `w` (`[m, k]` row-major) into the packed-A layout.
///
/// # Panics
/// When `w.len() != m * k` or `out.len() != packed_a_len(m, k)`.
pub fn pack_a(w: &[f32], m: usize, k: usize, out: &mut [f32]) {
    assert_eq!(w.len(), m * k, "pack_a: weight length");
    assert_eq!(out.len(), packed_a_len(m, k), "pack_a: output length");
    if k == 0 {
        return;
    }
    for (p, panel) in out.chunks_exact_mut(PACK_MR * k).enumerate() {
        for i in 0..PACK_MR {
            let row = p * PACK_MR + i;
            if row < m {
                let src = &w[row * k..row * k + k];
                for (dst, &v) in panel.iter_mut().skip(i).step_by(PACK_MR).zip(src) {
                    *dst = v;
                }
            } else {
                panel.iter_mut().skip(i).step_by(PACK_MR).for_each(|d| *d = 0.0);
            }
        }
    }
}

/// Where the rows of the `B` operand of [`GemmKernels::gemm_packed_a_rows`] are: the
/// reduction runs over `segments` blocks of `rows` rows, and row `r = s * rows + q`
/// (segment `s`, row `q` of it) starts at `s * segment_stride + q * ldb`.
///
/// One segment (`BRows::contiguous`) is an ordinary row-major `B` with leading dimension
/// `ldb`. Several segments let a convolution read its input directly, without im2col: a
/// `kh x 1` conv2d (stride 1, no padding) over `x[c, h, w]` (`[channels, height, width]`)
/// has, for output pixel `p = h * width + w` and tap `i`, `B[(i, c), p] = x[c * height *
/// width + i * width + p]`: segment `i` is the input shifted by `i` image rows
/// (`segment_stride = width`), its rows are the channels (`ldb = height * width`).
/// Rows may overlap: the GEMM only reads `B`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BRows {
    /// Rows per segment.
    pub rows: usize,
    /// Distance (elements) between consecutive rows of a segment.
    pub ldb: usize,
    /// Number of segments (`>= 1`).
    pub segments: usize,
    /// Distance (elements) between the first rows of consecutive segments.
    pub segment_stride: usize,
}

impl BRows {
    /// An ordinary `[k, n]` operand, rows `ldb` apart.
    pub const fn contiguous(k: usize, ldb: usize) -> Self {
        Self { rows: k, ldb, segments: 1, segment_stride: 0 }
    }

    /// The reduction length `rows * segments`, `None` on overflow.
    pub const fn k(&self) -> Option<usize> {
        self.rows.checked_mul(self.segments)
    }

    /// Elements of `B` that `n` columns reach: `(segments - 1) * segment_stride + (rows - 1)
    /// * ldb + n` (0 when there is nothing to read), `None` on overflow.
    pub fn span(&self, n: usize) -> Option<usize> {
        if self.rows == 0 || self.segments == 0 || n == 0 {
            return Some(0);
        }
        (self.segments - 1)
            .checked_mul(self.segment_stride)?
            .checked_add((self.rows - 1).checked_mul(self.ldb)?)?
            .checked_add(n)
    }
}

/// An output stage fused into [`GemmKernels::gemm_packed_a_rows`]: every result `x` is
/// stored as `max(x, slope * x, min)`, while it is still in registers.
///
/// With `0 <= slope <= 1` this is a leaky ReLU (`x` for `x >= 0`, `slope * x` below; PyTorch's
/// `LeakyReLU(negative_slope)`) followed by a clamp from below at `min`; `slope = 1` leaves
/// `x` as is, `min = -inf` clamps nothing. openWakeWord's embedding applies
/// `Epilogue { slope: 0.2, min: -0.4 }` after every conv but the last. The maximum is IEEE
/// `maximum` (NEON `fmax`): a NaN propagates, `max(-0, +0) = +0`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Epilogue {
    /// Multiplier of the second candidate (`slope * x`).
    pub slope: f32,
    /// Lower bound of the result.
    pub min: f32,
}

impl Epilogue {
    /// Leaky ReLU with `slope` (in `[0, 1]`), no clamp.
    pub const fn leaky_relu(slope: f32) -> Self {
        Self { slope, min: f32::NEG_INFINITY }
    }

    /// Clamp from below at `min` only.
    pub const fn clamp_min(min: f32) -> Self {
        Self { slope: 1.0, min }
    }

    /// The stage on one value (what both backends compute, bit for bit).
    #[inline(always)]
    pub fn apply(&self, x: f32) -> f32 {
        fmax(fmax(x, self.slope * x), self.min)
    }
}

/// IEEE `maximum` as NEON's `fmax` computes it: a NaN operand gives NaN, and of two equal
/// values (`-0` and `+0`) the positive one (the AND of the sign bits).
#[inline(always)]
pub(crate) fn fmax(a: f32, b: f32) -> f32 {
    if a > b || a.is_nan() {
        a
    } else if b > a || b.is_nan() {
        b
    } else {
        f32::from_bits(a.to_bits() & b.to_bits())
    }
}

/// GEMM and GEMV over packed weights. All products overwrite `c` / `y` (no accumulation).
pub trait GemmKernels: BackendType {
    /// `C[i, j] = sum_k A[i, k] * W[j, k] + bias[j]` for `i < m`, `j < n`.
    ///
    /// `a`: row `i` at `a[i*lda .. i*lda + k]`; `b`: [`pack_b`] of `W[n, k]`;
    /// `bias`: `n` values or `None`; `c`: row `i` at `c[i*ldc .. i*ldc + n]`. Columns
    /// `n..ldc` of `c` are left untouched. With `k = 0` the result is the bias (or 0).
    ///
    /// # Panics
    /// When a slice is too short for the geometry (`a` shorter than `(m-1)*lda + k`,
    /// `b` than [`packed_b_len`], `bias` than `n`, `c` than `(m-1)*ldc + n`), or
    /// `lda < k`, `ldc < n`.
    fn gemm_packed_b(
        m: usize,
        n: usize,
        k: usize,
        a: &[f32],
        lda: usize,
        b: &[f32],
        bias: Option<&[f32]>,
        c: &mut [f32],
        ldc: usize,
    ) {
        check_packed_b(m, n, k, a, lda, b, bias, c, ldc);
        if m == 0 || n == 0 || k == 0 {
            return bias_only_b(m, n, bias, c, ldc);
        }
        #[cfg(all(target_arch = "x86_64", target_feature = "sse2", not(miri)))]
        // SAFETY: the geometry was checked above; `detected()` only returns a level whose
        // extensions the CPU (or the build's target) has.
        unsafe {
            match x86::detected() {
                x86::Level::Avx512 => {
                    return x86::avx512::gemm_packed_b(m, n, k, a, lda, b, bias, c, ldc)
                }
                x86::Level::Avx2 => {
                    return x86::avx2::gemm_packed_b(m, n, k, a, lda, b, bias, c, ldc)
                }
                x86::Level::Baseline => {}
            }
        }
        baseline::gemm_packed_b(m, n, k, a, lda, b, bias, c, ldc)
    }

    /// `C[i, j] = sum_k W[i, k] * B[k, j] + bias[i]` for `i < m`, `j < n`.
    ///
    /// `a`: [`pack_a`] of `W[m, k]`; `b`: row `k` at `b[k*ldb .. k*ldb + n]`;
    /// `bias`: `m` values or `None`; `c`: row `i` at `c[i*ldc .. i*ldc + n]`. Columns
    /// `n..ldc` of `c` are left untouched. With `k = 0` the result is the bias (or 0).
    ///
    /// # Panics
    /// When a slice is too short for the geometry (`a` shorter than [`packed_a_len`],
    /// `b` than `(k-1)*ldb + n`, `bias` than `m`, `c` than `(m-1)*ldc + n`), or
    /// `ldb < n`, `ldc < n`.
    fn gemm_packed_a(
        m: usize,
        n: usize,
        k: usize,
        a: &[f32],
        b: &[f32],
        ldb: usize,
        bias: Option<&[f32]>,
        c: &mut [f32],
        ldc: usize,
    ) {
        check_packed_a(m, n, k, a, b, ldb, bias, c, ldc);
        // A contiguous operand is the one-segment case (same kernels, same bits).
        Self::gemm_packed_a_rows(m, n, a, b, BRows::contiguous(k, ldb), bias, None, c, ldc)
    }

    /// The general packed-A product behind conv2d: `C[i, j] = e(sum_r W[i, r] * B[r, j] +
    /// bias[i])` for `i < m`, `j < n`, with the reduction `r < k = rows.rows *
    /// rows.segments` over the rows of `B` that `rows` places ([`BRows`]: row `r` at
    /// `b[offset(r) .. offset(r) + n]`) and `e` the `epilogue` (identity when `None`).
    ///
    /// `a`: [`pack_a`] of `W[m, k]` (its reduction order is `B`'s row order); `bias`: `m`
    /// values or `None`; `c`: row `i` at `c[i*ldc .. i*ldc + n]`, columns `n..ldc`
    /// untouched. With `k = 0` the result is `e(bias)` (or `e(0)`).
    /// `gemm_packed_a(m, n, k, a, b, ldb, ..)` is this with `BRows::contiguous(k, ldb)`
    /// and no epilogue.
    ///
    /// # Panics
    /// When a slice is too short for the geometry (`a` shorter than [`packed_a_len`]`(m,
    /// k)`, `b` than [`BRows::span`]`(n)`, `bias` than `m`, `c` than `(m-1)*ldc + n`),
    /// `ldc < n`, or `k` or the span overflows `usize`.
    fn gemm_packed_a_rows(
        m: usize,
        n: usize,
        a: &[f32],
        b: &[f32],
        rows: BRows,
        bias: Option<&[f32]>,
        epilogue: Option<Epilogue>,
        c: &mut [f32],
        ldc: usize,
    ) {
        let k = check_packed_a_rows(m, n, a, b, rows, bias, c, ldc);
        if m == 0 || n == 0 || k == 0 {
            return bias_only_a(m, n, bias, epilogue, c, ldc);
        }
        // x86-64: the level's kernel, the output stage fused (the baseline level is the
        // plain-Rust kernel below).
        #[cfg(all(target_arch = "x86_64", target_feature = "sse2", not(miri)))]
        // SAFETY: the geometry was checked above; `detected()` only returns a level whose
        // extensions the CPU (or the build's target) has.
        unsafe {
            x86::rows_at(x86::detected(), m, n, a, b, rows, bias, epilogue, c, ldc)
        }
        #[cfg(not(all(target_arch = "x86_64", target_feature = "sse2", not(miri))))]
        baseline::gemm_packed_a_rows(m, n, a, b, rows, bias, epilogue, c, ldc)
    }

    /// GEMV (M = 1): `y[j] = sum_k x[k] * W[j, k] + bias[j]` with `b` = [`pack_b`] of
    /// `W[n, k]`; `x`: `k` values, `y`: `n` values.
    ///
    /// # Panics
    /// When a slice length does not match the geometry: `x.len() != k`, `y.len() != n`,
    /// `bias.len() != n`, or `b` shorter than [`packed_b_len`].
    fn gemv_packed_b(
        n: usize,
        k: usize,
        x: &[f32],
        b: &[f32],
        bias: Option<&[f32]>,
        y: &mut [f32],
    ) {
        check_gemv(n, k, x, b, bias, y);
        #[cfg(all(target_arch = "x86_64", target_feature = "sse2", not(miri)))]
        // SAFETY: as in `gemm_packed_b`.
        unsafe {
            match x86::detected() {
                x86::Level::Avx512 => return x86::avx512::gemv_packed_b(n, k, x, b, bias, y),
                x86::Level::Avx2 => return x86::avx2::gemv_packed_b(n, k, x, b, bias, y),
                x86::Level::Baseline => {}
            }
        }
        baseline::gemv_packed_b(n, k, x, b, bias, y)
    }
}

/// Minimum length of a strided matrix with `rows` rows of `cols` values, `ld` apart.
const fn strided_len(rows: usize, cols: usize, ld: usize) -> usize {
    if rows == 0 {
        0
    } else {
        (rows - 1) * ld + cols
    }
}

/// The geometry contract of [`GemmKernels::gemm_packed_b`] (the NEON path relies on it).
#[allow(clippy::too_many_arguments)]
fn check_packed_b(
    m: usize,
    n: usize,
    k: usize,
    a: &[f32],
    lda: usize,
    b: &[f32],
    bias: Option<&[f32]>,
    c: &[f32],
    ldc: usize,
) {
    assert!(lda >= k, "gemm_packed_b: lda < k");
    assert!(ldc >= n, "gemm_packed_b: ldc < n");
    assert!(a.len() >= strided_len(m, k, lda), "gemm_packed_b: a too short");
    assert!(b.len() >= packed_b_len(n, k), "gemm_packed_b: packed b too short");
    assert!(c.len() >= strided_len(m, n, ldc), "gemm_packed_b: c too short");
    if let Some(bias) = bias {
        assert!(bias.len() >= n, "gemm_packed_b: bias too short");
    }
}

/// The geometry contract of [`GemmKernels::gemm_packed_a`] (the NEON path relies on it).
#[allow(clippy::too_many_arguments)]
fn check_packed_a(
    m: usize,
    n: usize,
    k: usize,
    a: &[f32],
    b: &[f32],
    ldb: usize,
    bias: Option<&[f32]>,
    c: &[f32],
    ldc: usize,
) {
    assert!(ldb >= n, "gemm_packed_a: ldb < n");
    assert!(ldc >= n, "gemm_packed_a: ldc < n");
    assert!(a.len() >= packed_a_len(m, k), "gemm_packed_a: packed a too short");
    assert!(b.len() >= strided_len(k, n, ldb), "gemm_packed_a: b too short");
    assert!(c.len() >= strided_len(m, n, ldc), "gemm_packed_a: c too short");
    if let Some(bias) = bias {
        assert!(bias.len() >= m, "gemm_packed_a: bias too short");
    }
}

/// The geometry contract of [`GemmKernels::gemm_packed_a_rows`]; returns `k`.
#[allow(clippy::too_many_arguments)]
fn check_packed_a_rows(
    m: usize,
    n: usize,
    a: &[f32],
    b: &[f32],
    rows: BRows,
    bias: Option<&[f32]>,
    c: &[f32],
    ldc: usize,
) -> usize {
    let k = rows.k().expect("gemm_packed_a_rows: k overflows");
    let span = rows.span(n).expect("gemm_packed_a_rows: b span overflows");
    assert!(ldc >= n, "gemm_packed_a_rows: ldc < n");
    assert!(a.len() >= packed_a_len(m, k), "gemm_packed_a_rows: packed a too short");
    assert!(b.len() >= span, "gemm_packed_a_rows: b too short");
    assert!(c.len() >= strided_len(m, n, ldc), "gemm_packed_a_rows: c too short");
    if let Some(bias) = bias {
        assert!(bias.len() >= m, "gemm_packed_a_rows: bias too short");
    }
    k
}

/// The geometry contract of [`GemmKernels::gemv_packed_b`].
fn check_gemv(n: usize, k: usize, x: &[f32], b: &[f32], bias: Option<&[f32]>, y: &[f32]) {
    assert_eq!(x.len(), k, "gemv_packed_b: x length");
    assert_eq!(y.len(), n, "gemv_packed_b: y length");
    assert!(b.len() >= packed_b_len(n, k), "gemv_packed_b: packed b too short");
    if let Some(bias) = bias {
        assert_eq!(bias.len(), n, "gemv_packed_b: bias length");
    }
}

/// `C[i, j] = bias[j]` (or 0): the packed-B product when `k = 0` (or nothing to do).
fn bias_only_b(m: usize, n: usize, bias: Option<&[f32]>, c: &mut [f32], ldc: usize) {
    for i in 0..m {
        let row = &mut c[i * ldc..i * ldc + n];
        match bias {
            Some(bias) => row.copy_from_slice(&bias[..n]),
            None => row.fill(0.0),
        }
    }
}

/// `C[i, j] = e(bias[i])` (or `e(0)`): the packed-A product when `k = 0` (or nothing to do).
fn bias_only_a(
    m: usize,
    n: usize,
    bias: Option<&[f32]>,
    epilogue: Option<Epilogue>,
    c: &mut [f32],
    ldc: usize,
) {
    for i in 0..m {
        let v = bias.map_or(0.0, |b| b[i]);
        c[i * ldc..i * ldc + n].fill(epilogue.map_or(v, |e| e.apply(v)));
    }
}

/// `bias[from..from + len]` zero padded to `N` values (`0` everywhere without bias).
#[inline(always)]
fn padded<const N: usize>(bias: Option<&[f32]>, from: usize, len: usize) -> [f32; N] {
    let mut out = [0.0; N];
    if let Some(bias) = bias {
        out[..len].copy_from_slice(&bias[from..from + len]);
    }
    out
}

/// Rows of `A` per block of the packed-B drivers: the block (`MC_B * k` values) is reused
/// from cache by every panel, while each panel (`PACK_NR * k`) is reused by every tile.
const MC_B: usize = 80;

// ------------------------------------------------------------------------------------
// Portable
// ------------------------------------------------------------------------------------

/// Rows of the portable packed-B tile (by 16 columns): 2 x 16 accumulators are 8 SSE
/// registers of x86-64's 16 (4 x 16 spills there: 2x slower); aarch64 has 32.
#[cfg(target_arch = "aarch64")]
const P_MR_B: usize = 4;
#[cfg(not(target_arch = "aarch64"))]
const P_MR_B: usize = 2;
/// Columns of the portable packed-A tile (by 8 rows, vectorised along the rows): 4
/// columns are 8 accumulator registers on x86-64 (16 SSE registers) and aarch64 alike;
/// 8 columns make LLVM's vectoriser shuffle (1.0 instead of 2.1 FLOPs per instruction on
/// aarch64) and spill on x86-64.
const P_NC_A: usize = 4;

/// Portable packed-B tile: `R` rows of `a` (`lda` apart) times one panel, stored into
/// `cols` columns of `c` (rows `ldc` apart).
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn p_tile_b<const R: usize>(
    k: usize,
    a: &[f32],
    lda: usize,
    panel: &[f32],
    init: &[f32; PACK_NR],
    c: &mut [f32],
    ldc: usize,
    cols: usize,
) {
    let mut acc = [*init; R];
    let rows: [&[f32]; R] = core::array::from_fn(|r| &a[r * lda..r * lda + k]);
    for (kk, brow) in panel[..k * PACK_NR].chunks_exact(PACK_NR).enumerate() {
        let brow: &[f32; PACK_NR] = brow.try_into().unwrap();
        for r in 0..R {
            let av = rows[r][kk];
            for (acc, &bv) in acc[r].iter_mut().zip(brow) {
                *acc += av * bv;
            }
        }
    }
    for (r, acc) in acc.iter().enumerate() {
        c[r * ldc..r * ldc + cols].copy_from_slice(&acc[..cols]);
    }
}

/// Portable packed-A tile: the 8-row panel times `NC` columns of `b` (rows placed by
/// `br`, relative to `b[0]`), `cols <= NC` of them valid, stored into `rows` rows of `c`
/// after the epilogue.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn p_tile_a<const NC: usize>(
    panel: &[f32],
    b: &[f32],
    br: BRows,
    init: &[f32; PACK_MR],
    epilogue: Option<Epilogue>,
    c: &mut [f32],
    ldc: usize,
    rows: usize,
    cols: usize,
) {
    // acc[j] holds column j for the 8 rows: the vectors run along the packed weights
    // (contiguous) and B[k, j] is broadcast; this keeps LLVM's vectoriser off shuffles.
    let mut acc: [[f32; PACK_MR]; NC] = [*init; NC];
    #[inline(always)]
    fn step<const NC: usize>(acc: &mut [[f32; PACK_MR]; NC], w: &[f32], brow: &[f32; NC]) {
        let w: &[f32; PACK_MR] = w.try_into().unwrap();
        for (acc, &bv) in acc.iter_mut().zip(brow) {
            for (acc, &wv) in acc.iter_mut().zip(w) {
                *acc += wv * bv;
            }
        }
    }
    let (k, ldb) = (br.rows, br.ldb);
    for s in 0..br.segments {
        let panel = &panel[s * k * PACK_MR..(s + 1) * k * PACK_MR];
        let b = &b[s * br.segment_stride..];
        if cols == NC {
            for (kk, w) in panel.chunks_exact(PACK_MR).enumerate() {
                step(&mut acc, w, b[kk * ldb..kk * ldb + NC].try_into().unwrap());
            }
        } else {
            for (kk, w) in panel.chunks_exact(PACK_MR).enumerate() {
                let mut t = [0.0; NC];
                t[..cols].copy_from_slice(&b[kk * ldb..kk * ldb + cols]);
                step(&mut acc, w, &t);
            }
        }
    }
    for r in 0..rows {
        for (j, dst) in c[r * ldc..r * ldc + cols].iter_mut().enumerate() {
            *dst = epilogue.map_or(acc[j][r], |e| e.apply(acc[j][r]));
        }
    }
}

/// The portable packed-A driver (contract checked by the caller, `m, n, k >= 1`).
#[allow(clippy::too_many_arguments)]
fn p_gemm_packed_a(
    m: usize,
    n: usize,
    a: &[f32],
    b: &[f32],
    br: BRows,
    bias: Option<&[f32]>,
    epilogue: Option<Epilogue>,
    c: &mut [f32],
    ldc: usize,
) {
    let k = br.rows * br.segments;
    for p in 0..m.div_ceil(PACK_MR) {
        let row0 = p * PACK_MR;
        let rows = (m - row0).min(PACK_MR);
        let init = padded::<PACK_MR>(bias, row0, rows);
        let panel = &a[p * PACK_MR * k..(p + 1) * PACK_MR * k];
        for j in (0..n).step_by(P_NC_A) {
            let cols = (n - j).min(P_NC_A);
            let c = &mut c[row0 * ldc + j..];
            p_tile_a::<P_NC_A>(panel, &b[j..], br, &init, epilogue, c, ldc, rows, cols);
        }
    }
}

impl GemmKernels for Portable {}

impl<I: X86Isa> GemmKernels for X86<I> {}

/// The plain-Rust bodies of the portable backend (the only path off x86-64 and under
/// Miri). Contracts as the trait methods, already checked, with `m, n, k >= 1` (GEMV:
/// any `k`).
mod baseline {
    use super::*;

    #[allow(clippy::too_many_arguments)]
    pub(super) fn gemm_packed_b(
        m: usize,
        n: usize,
        k: usize,
        a: &[f32],
        lda: usize,
        b: &[f32],
        bias: Option<&[f32]>,
        c: &mut [f32],
        ldc: usize,
    ) {
        let panels = n.div_ceil(PACK_NR);
        for i0 in (0..m).step_by(MC_B) {
            let mc = (m - i0).min(MC_B);
            for p in 0..panels {
                let col0 = p * PACK_NR;
                let cols = (n - col0).min(PACK_NR);
                let init = padded::<PACK_NR>(bias, col0, cols);
                let panel = &b[p * PACK_NR * k..(p + 1) * PACK_NR * k];
                let mut i = i0;
                while i < i0 + mc {
                    let rows = (i0 + mc - i).min(P_MR_B);
                    let (a, c) = (&a[i * lda..], &mut c[i * ldc + col0..]);
                    match rows {
                        4 => p_tile_b::<4>(k, a, lda, panel, &init, c, ldc, cols),
                        3 => p_tile_b::<3>(k, a, lda, panel, &init, c, ldc, cols),
                        2 => p_tile_b::<2>(k, a, lda, panel, &init, c, ldc, cols),
                        _ => p_tile_b::<1>(k, a, lda, panel, &init, c, ldc, cols),
                    }
                    i += rows;
                }
            }
        }
    }

    #[allow(clippy::too_many_arguments)]
    pub(super) fn gemm_packed_a_rows(
        m: usize,
        n: usize,
        a: &[f32],
        b: &[f32],
        rows: BRows,
        bias: Option<&[f32]>,
        epilogue: Option<Epilogue>,
        c: &mut [f32],
        ldc: usize,
    ) {
        p_gemm_packed_a(m, n, a, b, rows, bias, epilogue, c, ldc);
    }

    pub(super) fn gemv_packed_b(
        n: usize,
        k: usize,
        x: &[f32],
        b: &[f32],
        bias: Option<&[f32]>,
        y: &mut [f32],
    ) {
        debug_assert_eq!(y.len(), n);
        for (p, y) in y.chunks_mut(PACK_NR).enumerate() {
            let col0 = p * PACK_NR;
            let mut acc = padded::<PACK_NR>(bias, col0, y.len());
            let panel = &b[p * PACK_NR * k..(p + 1) * PACK_NR * k];
            for (&xv, brow) in x.iter().zip(panel.chunks_exact(PACK_NR)) {
                for (acc, &bv) in acc.iter_mut().zip(brow) {
                    *acc += xv * bv;
                }
            }
            let len = y.len();
            y.copy_from_slice(&acc[..len]);
        }
    }
}

// ------------------------------------------------------------------------------------
// x86-64: AVX-512F and AVX2 + FMA
// ------------------------------------------------------------------------------------

// Hard-float targets only: a soft-float target (`x86_64-unknown-none`, no SSE2) keeps the
// plain-Rust kernels; Miri cannot run the vector intrinsics.
#[cfg(all(target_arch = "x86_64", target_feature = "sse2", not(miri)))]
#[path = "gemm_x86.rs"]
pub mod x86;

// ------------------------------------------------------------------------------------
// NEON
// ------------------------------------------------------------------------------------

#[cfg(all(target_arch = "aarch64", feature = "neon"))]
mod neon {
    use super::{padded, BRows, Epilogue, PACK_MR, PACK_NR};
    use core::arch::aarch64::*;

    /// Rows of the NEON packed-B tile.
    pub(super) const MR_B: usize = 5;

    /// One `k` step of a packed-B tile: `acc[r] += A[r, k + L] * b` for every row `r`,
    /// `A[r, k + L]` being lane `L` of `av[r]`.
    #[inline(always)]
    fn step_b<const L: i32, const R: usize>(
        acc: &mut [[float32x4_t; 4]; R],
        av: &[float32x4_t; R],
        b: &[float32x4_t; 4],
    ) {
        for (acc, &av) in acc.iter_mut().zip(av) {
            for (acc, &b) in acc.iter_mut().zip(b) {
                // SAFETY: NEON is part of the aarch64 baseline this module is compiled for.
                *acc = unsafe { vfmaq_laneq_f32::<L>(*acc, b, av) };
            }
        }
    }

    /// 16 values as 4 independent vectors.
    ///
    /// # Safety
    /// `p` must be readable for 16 values.
    #[inline(always)]
    unsafe fn ld4(p: *const f32) -> [float32x4_t; 4] {
        [vld1q_f32(p), vld1q_f32(p.add(4)), vld1q_f32(p.add(8)), vld1q_f32(p.add(12))]
    }

    /// Stores 4 vectors (16 values) at `p`.
    ///
    /// # Safety
    /// `p` must be writable for 16 values.
    #[inline(always)]
    unsafe fn st4(p: *mut f32, v: &[float32x4_t; 4]) {
        vst1q_f32(p, v[0]);
        vst1q_f32(p.add(4), v[1]);
        vst1q_f32(p.add(8), v[2]);
        vst1q_f32(p.add(12), v[3]);
    }

    /// Lines of the 5x16 inner loop for lane `$l`: load the panel row (16 weights) into
    /// v25..v28, then `acc[r][j] += B[j] * A[r].s[$l]` with `acc[r][j]` in `v(4r+j)` and
    /// `A[r]` in `v(20+r)`.
    macro_rules! asm_k_step {
        ($l:literal) => {
            concat!(
                "ld1 {{v25.4s, v26.4s, v27.4s, v28.4s}}, [{b}], #64\n",
                asm_k_step!(@row $l, "v0", "v1", "v2", "v3", "v20"),
                asm_k_step!(@row $l, "v4", "v5", "v6", "v7", "v21"),
                asm_k_step!(@row $l, "v8", "v9", "v10", "v11", "v22"),
                asm_k_step!(@row $l, "v12", "v13", "v14", "v15", "v23"),
                asm_k_step!(@row $l, "v16", "v17", "v18", "v19", "v24"),
            )
        };
        (@row $l:literal, $c0:literal, $c1:literal, $c2:literal, $c3:literal, $a:literal) => {
            concat!(
                "fmla ", $c0, ".4s, v25.4s, ", $a, ".s[", $l, "]\n",
                "fmla ", $c1, ".4s, v26.4s, ", $a, ".s[", $l, "]\n",
                "fmla ", $c2, ".4s, v27.4s, ", $a, ".s[", $l, "]\n",
                "fmla ", $c3, ".4s, v28.4s, ", $a, ".s[", $l, "]\n",
            )
        };
    }

    /// The 5x16 inner loop over `blocks` steps of 4 `k` values (`blocks >= 1`), written in
    /// assembly because LLVM spends 5 extra integer instructions per step on the 6
    /// pointers and the counter; here each load post-increments its own pointer.
    ///
    /// # Safety
    /// `a[r]` readable for `4 * blocks` values, `panel` for `64 * blocks` values.
    #[inline(always)]
    unsafe fn kernel_5x16(
        acc: &mut [[float32x4_t; 4]; 5],
        a: [*const f32; 5],
        panel: *const f32,
        blocks: usize,
    ) {
        let [r0, r1, r2, r3, r4] = acc;
        core::arch::asm!(
            "2:",
            "ldr q20, [{a0}], #16",
            "ldr q21, [{a1}], #16",
            "ldr q22, [{a2}], #16",
            "ldr q23, [{a3}], #16",
            "ldr q24, [{a4}], #16",
            asm_k_step!(0),
            asm_k_step!(1),
            asm_k_step!(2),
            asm_k_step!(3),
            "subs {n}, {n}, #1",
            "b.ne 2b",
            a0 = inout(reg) a[0] => _,
            a1 = inout(reg) a[1] => _,
            a2 = inout(reg) a[2] => _,
            a3 = inout(reg) a[3] => _,
            a4 = inout(reg) a[4] => _,
            b = inout(reg) panel => _,
            n = inout(reg) blocks => _,
            inout("v0") r0[0], inout("v1") r0[1], inout("v2") r0[2], inout("v3") r0[3],
            inout("v4") r1[0], inout("v5") r1[1], inout("v6") r1[2], inout("v7") r1[3],
            inout("v8") r2[0], inout("v9") r2[1], inout("v10") r2[2], inout("v11") r2[3],
            inout("v12") r3[0], inout("v13") r3[1], inout("v14") r3[2], inout("v15") r3[3],
            inout("v16") r4[0], inout("v17") r4[1], inout("v18") r4[2], inout("v19") r4[3],
            out("v20") _, out("v21") _, out("v22") _, out("v23") _, out("v24") _,
            out("v25") _, out("v26") _, out("v27") _, out("v28") _,
            options(nostack, readonly),
        );
    }

    /// An assembly inner loop for `R` rows: `(accumulators, row pointers, panel, k / 4)`.
    type AsmKernel<const R: usize> =
        unsafe fn(&mut [[float32x4_t; 4]; R], [*const f32; R], *const f32, usize);

    /// A packed-B tile: `R` rows of `A` (row `r` at `a[r]`) times one 16-wide panel; the
    /// first `cols` columns are stored to `c` (rows `ldc` apart). `R = 5` runs the
    /// assembly inner loop, `R < 5` (the `m % 5` tail rows) the same steps in intrinsics.
    ///
    /// # Safety
    /// `a[r].add(kk)` must be readable for `r < R`, `kk < k`; `panel` must hold `16 * k`
    /// values; `c.add(r * ldc + j)` writable for `r < R`, `j < cols <= 16`.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    unsafe fn tile_b<const R: usize>(
        k: usize,
        a: [*const f32; R],
        panel: *const f32,
        init: &[float32x4_t; 4],
        c: *mut f32,
        ldc: usize,
        cols: usize,
        asm_rows: Option<AsmKernel<R>>,
    ) {
        let mut acc = [*init; R];
        let blocks = k / 4;
        if let (Some(kernel), true) = (asm_rows, blocks > 0) {
            kernel(&mut acc, a, panel, blocks);
        } else {
            for blk in 0..blocks {
                let (kk, bp) = (4 * blk, panel.add(64 * blk));
                let av: [float32x4_t; R] = core::array::from_fn(|r| vld1q_f32(a[r].add(kk)));
                step_b::<0, R>(&mut acc, &av, &ld4(bp));
                step_b::<1, R>(&mut acc, &av, &ld4(bp.add(16)));
                step_b::<2, R>(&mut acc, &av, &ld4(bp.add(32)));
                step_b::<3, R>(&mut acc, &av, &ld4(bp.add(48)));
            }
        }
        for kk in 4 * blocks..k {
            let av: [float32x4_t; R] = core::array::from_fn(|r| vld1q_dup_f32(a[r].add(kk)));
            step_b::<0, R>(&mut acc, &av, &ld4(panel.add(16 * kk)));
        }
        // Plain 1-register stores: `vst1q_f32_x4` would make each accumulator row a
        // consecutive register tuple, which the register allocator then spills whole.
        for (r, acc) in acc.iter().enumerate() {
            let dst = c.add(r * ldc);
            if cols == PACK_NR {
                st4(dst, acc);
            } else {
                let mut t = [0.0f32; PACK_NR];
                st4(t.as_mut_ptr(), acc);
                core::ptr::copy_nonoverlapping(t.as_ptr(), dst, cols);
            }
        }
    }

    /// Pointers to rows `i..i + R` of `a` (rows `lda` apart).
    ///
    /// # Safety
    /// Rows `i..i + R` must lie inside `a`'s allocation.
    #[inline(always)]
    unsafe fn row_ptrs<const R: usize>(a: *const f32, i: usize, lda: usize) -> [*const f32; R] {
        core::array::from_fn(|r| a.add((i + r) * lda))
    }

    #[allow(clippy::too_many_arguments)]
    pub(super) fn gemm_packed_b(
        m: usize,
        n: usize,
        k: usize,
        a: &[f32],
        lda: usize,
        b: &[f32],
        bias: Option<&[f32]>,
        c: &mut [f32],
        ldc: usize,
    ) {
        let panels = n.div_ceil(PACK_NR);
        let (ap, bp, cp) = (a.as_ptr(), b.as_ptr(), c.as_mut_ptr());
        for i0 in (0..m).step_by(super::MC_B) {
            let mc = (m - i0).min(super::MC_B);
            for p in 0..panels {
                let col0 = p * PACK_NR;
                let cols = (n - col0).min(PACK_NR);
                let bias = padded::<PACK_NR>(bias, col0, cols);
                // SAFETY: every pointer stays inside the slices checked by check_packed_b:
                // rows i < m of `a` hold k values from i*lda, panel p holds 16*k values,
                // rows i < m of `c` hold n >= col0 + cols values from i*ldc.
                unsafe {
                    let init = ld4(bias.as_ptr());
                    let panel = bp.add(p * PACK_NR * k);
                    let mut i = i0;
                    while i + MR_B <= i0 + mc {
                        let c = cp.add(i * ldc + col0);
                        tile_b::<5>(
                            k,
                            row_ptrs(ap, i, lda),
                            panel,
                            &init,
                            c,
                            ldc,
                            cols,
                            Some(kernel_5x16),
                        );
                        i += MR_B;
                    }
                    let c = cp.add(i * ldc + col0);
                    match i0 + mc - i {
                        4 => tile_b::<4>(k, row_ptrs(ap, i, lda), panel, &init, c, ldc, cols, None),
                        3 => tile_b::<3>(k, row_ptrs(ap, i, lda), panel, &init, c, ldc, cols, None),
                        2 => tile_b::<2>(k, row_ptrs(ap, i, lda), panel, &init, c, ldc, cols, None),
                        1 => tile_b::<1>(k, row_ptrs(ap, i, lda), panel, &init, c, ldc, cols, None),
                        _ => {}
                    }
                }
            }
        }
    }

    /// One `k` step of the packed-A tile: `acc[i] += W[i, k] * B[k, ..]`, `W[i, k]` being
    /// lane `i % 4` of `w.(i / 4)`.
    #[inline(always)]
    fn step_a<const NV: usize>(
        acc: &mut [[float32x4_t; NV]; PACK_MR],
        w: float32x4x2_t,
        bv: &[float32x4_t; NV],
    ) {
        for v in 0..NV {
            // SAFETY: NEON is part of the aarch64 baseline this module is compiled for.
            unsafe {
                acc[0][v] = vfmaq_laneq_f32::<0>(acc[0][v], bv[v], w.0);
                acc[1][v] = vfmaq_laneq_f32::<1>(acc[1][v], bv[v], w.0);
                acc[2][v] = vfmaq_laneq_f32::<2>(acc[2][v], bv[v], w.0);
                acc[3][v] = vfmaq_laneq_f32::<3>(acc[3][v], bv[v], w.0);
                acc[4][v] = vfmaq_laneq_f32::<0>(acc[4][v], bv[v], w.1);
                acc[5][v] = vfmaq_laneq_f32::<1>(acc[5][v], bv[v], w.1);
                acc[6][v] = vfmaq_laneq_f32::<2>(acc[6][v], bv[v], w.1);
                acc[7][v] = vfmaq_laneq_f32::<3>(acc[7][v], bv[v], w.1);
            }
        }
    }

    /// Stores the first `rows` rows of a packed-A tile (`4 * NV` columns) to `c`.
    ///
    /// # Safety
    /// `c.add(r * ldc + j)` writable for `r < rows`, `j < 4 * NV`.
    #[inline(always)]
    unsafe fn store_a<const NV: usize>(
        acc: &[[float32x4_t; NV]; PACK_MR],
        rows: usize,
        c: *mut f32,
        ldc: usize,
    ) {
        for (r, acc) in acc.iter().enumerate().take(rows) {
            for (v, &acc) in acc.iter().enumerate() {
                vst1q_f32(c.add(r * ldc + 4 * v), acc);
            }
        }
    }

    /// Lines of the 8x12 inner loop for one `k`: the panel's 8 weights into v24, v25 and
    /// 12 values of row `k` of `B` into v26..v28 (post-incremented by `ldb`), then
    /// `acc[i][v] += B[v] * W[i]` with `acc[i][v]` in `v(3i+v)`.
    macro_rules! asm_a_step {
        () => {
            concat!(
                "ld1 {{v24.4s, v25.4s}}, [{w}], #32\n",
                "ld1 {{v26.4s, v27.4s, v28.4s}}, [{b}], {ldb}\n",
                asm_a_step!(@row "v0", "v1", "v2", "v24", "0"),
                asm_a_step!(@row "v3", "v4", "v5", "v24", "1"),
                asm_a_step!(@row "v6", "v7", "v8", "v24", "2"),
                asm_a_step!(@row "v9", "v10", "v11", "v24", "3"),
                asm_a_step!(@row "v12", "v13", "v14", "v25", "0"),
                asm_a_step!(@row "v15", "v16", "v17", "v25", "1"),
                asm_a_step!(@row "v18", "v19", "v20", "v25", "2"),
                asm_a_step!(@row "v21", "v22", "v23", "v25", "3"),
            )
        };
        (@row $c0:literal, $c1:literal, $c2:literal, $w:literal, $l:literal) => {
            concat!(
                "fmla ", $c0, ".4s, v26.4s, ", $w, ".s[", $l, "]\n",
                "fmla ", $c1, ".4s, v27.4s, ", $w, ".s[", $l, "]\n",
                "fmla ", $c2, ".4s, v28.4s, ", $w, ".s[", $l, "]\n",
            )
        };
    }

    /// Lines of the 8x12 epilogue for one row of accumulators: `v = max(max(v, v * s), lo)`
    /// with `s` in v24 and `lo` in v25 (v26 a temporary).
    macro_rules! asm_epilogue_row {
        ($c0:literal, $c1:literal, $c2:literal) => {
            concat!(
                asm_epilogue_row!(@v $c0),
                asm_epilogue_row!(@v $c1),
                asm_epilogue_row!(@v $c2),
            )
        };
        (@v $c:literal) => {
            concat!(
                "fmul v26.4s, ", $c, ".4s, v24.4s\n",
                "fmax ", $c, ".4s, ", $c, ".4s, v26.4s\n",
                "fmax ", $c, ".4s, ", $c, ".4s, v25.4s\n",
            )
        };
    }

    /// A whole 8x12 tile in assembly: accumulators set to the bias, every segment of `br`
    /// (pairs of `k` in a loop of two steps, then the odd step), the epilogue, and 8 rows
    /// of 12 results stored with one `st1` of 3 registers each.
    ///
    /// Everything between the loads of the bias and the stores stays in v0..v28, so LLVM
    /// neither moves the 24 accumulators into place nor spills loop invariants around the
    /// loop (as an intrinsics tile around an assembly loop does: ~270 instructions of
    /// set-up, epilogue and stores per tile instead of ~110 here).
    ///
    /// # Safety
    /// `panel` readable for `8 * k` values (`k = br.rows * br.segments >= 1`), every row of
    /// `B` under `br` readable for 12 values from `b`, `bias` for 8 values, `epilogue` (if
    /// not null) for 2 values (`slope`, `min`), and `c.add(r * ldc + j)` writable for
    /// `r < 8`, `j < 12`.
    #[inline(always)]
    unsafe fn asm_tile_8x12(
        panel: *const f32,
        b: *const f32,
        br: BRows,
        bias: *const f32,
        epilogue: *const f32,
        c: *mut f32,
        ldc: usize,
    ) {
        // SAFETY: reads exactly the panel, the rows of B (12 values each), the bias and
        // the epilogue constants, and writes 8 rows of 12 values of `c`, all covered by this
        // function's contract; only the declared registers are written.
        unsafe {
            core::arch::asm!(
                "ld1 {{v24.4s, v25.4s}}, [{bias}]",
                "dup v0.4s, v24.s[0]", "dup v1.4s, v24.s[0]", "dup v2.4s, v24.s[0]",
                "dup v3.4s, v24.s[1]", "dup v4.4s, v24.s[1]", "dup v5.4s, v24.s[1]",
                "dup v6.4s, v24.s[2]", "dup v7.4s, v24.s[2]", "dup v8.4s, v24.s[2]",
                "dup v9.4s, v24.s[3]", "dup v10.4s, v24.s[3]", "dup v11.4s, v24.s[3]",
                "dup v12.4s, v25.s[0]", "dup v13.4s, v25.s[0]", "dup v14.4s, v25.s[0]",
                "dup v15.4s, v25.s[1]", "dup v16.4s, v25.s[1]", "dup v17.4s, v25.s[1]",
                "dup v18.4s, v25.s[2]", "dup v19.4s, v25.s[2]", "dup v20.4s, v25.s[2]",
                "dup v21.4s, v25.s[3]", "dup v22.4s, v25.s[3]", "dup v23.4s, v25.s[3]",
                // Segments: rows / 2 pairs of steps, then the odd step.
                "3:",
                "mov {b}, {bseg}",
                "lsr {n}, {rows}, #1",
                "cbz {n}, 5f",
                "2:",
                asm_a_step!(),
                asm_a_step!(),
                "subs {n}, {n}, #1",
                "b.ne 2b",
                "5:",
                "tbz {rows}, #0, 6f",
                asm_a_step!(),
                "6:",
                "add {bseg}, {bseg}, {sstride}",
                "subs {segs}, {segs}, #1",
                "b.ne 3b",
                // Epilogue.
                "cbz {ep}, 7f",
                "ld1r {{v24.4s}}, [{ep}], #4",
                "ld1r {{v25.4s}}, [{ep}]",
                asm_epilogue_row!("v0", "v1", "v2"),
                asm_epilogue_row!("v3", "v4", "v5"),
                asm_epilogue_row!("v6", "v7", "v8"),
                asm_epilogue_row!("v9", "v10", "v11"),
                asm_epilogue_row!("v12", "v13", "v14"),
                asm_epilogue_row!("v15", "v16", "v17"),
                asm_epilogue_row!("v18", "v19", "v20"),
                asm_epilogue_row!("v21", "v22", "v23"),
                "7:",
                "st1 {{v0.4s, v1.4s, v2.4s}}, [{c}], {ldc}",
                "st1 {{v3.4s, v4.4s, v5.4s}}, [{c}], {ldc}",
                "st1 {{v6.4s, v7.4s, v8.4s}}, [{c}], {ldc}",
                "st1 {{v9.4s, v10.4s, v11.4s}}, [{c}], {ldc}",
                "st1 {{v12.4s, v13.4s, v14.4s}}, [{c}], {ldc}",
                "st1 {{v15.4s, v16.4s, v17.4s}}, [{c}], {ldc}",
                "st1 {{v18.4s, v19.4s, v20.4s}}, [{c}], {ldc}",
                "st1 {{v21.4s, v22.4s, v23.4s}}, [{c}], {ldc}",
                bias = in(reg) bias,
                w = inout(reg) panel => _,
                b = out(reg) _,
                bseg = inout(reg) b => _,
                ldb = in(reg) br.ldb * 4,
                rows = in(reg) br.rows,
                segs = inout(reg) br.segments => _,
                sstride = in(reg) br.segment_stride * 4,
                n = out(reg) _,
                ep = inout(reg) epilogue => _,
                c = inout(reg) c => _,
                ldc = in(reg) ldc * 4,
                out("v0") _, out("v1") _, out("v2") _, out("v3") _, out("v4") _,
                out("v5") _, out("v6") _, out("v7") _, out("v8") _, out("v9") _,
                out("v10") _, out("v11") _, out("v12") _, out("v13") _, out("v14") _,
                out("v15") _, out("v16") _, out("v17") _, out("v18") _, out("v19") _,
                out("v20") _, out("v21") _, out("v22") _, out("v23") _, out("v24") _,
                out("v25") _, out("v26") _, out("v27") _, out("v28") _,
                options(nostack),
            );
        }
    }

    /// Applies the epilogue to every accumulator: `max(max(x, slope * x), min)` (`fmax`).
    #[inline(always)]
    fn apply_epilogue<const NV: usize>(acc: &mut [[float32x4_t; NV]; PACK_MR], e: Epilogue) {
        // SAFETY: register-only NEON arithmetic (NEON is part of the aarch64 baseline).
        unsafe {
            let lo = vdupq_n_f32(e.min);
            for row in acc.iter_mut() {
                for v in row.iter_mut() {
                    let t = vmulq_n_f32(*v, e.slope);
                    *v = vmaxq_f32(vmaxq_f32(*v, t), lo);
                }
            }
        }
    }

    /// `k` steps of the packed-A micro-kernel over one segment: `acc += W[.., ..k] · B`,
    /// `B` row `kk` at `b + kk * ldb`.
    ///
    /// # Safety
    /// `panel` readable for `8 * k` values, `b.add(kk * ldb + j)` for `kk < k`, `j < 4 * NV`.
    #[inline(always)]
    unsafe fn segment_a<const NV: usize>(
        acc: &mut [[float32x4_t; NV]; PACK_MR],
        panel: *const f32,
        b: *const f32,
        k: usize,
        ldb: usize,
    ) {
        let mut kk = 0;
        while kk + 2 <= k {
            let (w, row) = (panel.add(kk * PACK_MR), b.add(kk * ldb));
            let bv: [float32x4_t; NV] = core::array::from_fn(|v| vld1q_f32(row.add(4 * v)));
            step_a::<NV>(acc, vld1q_f32_x2(w), &bv);
            let row = row.add(ldb);
            let bv: [float32x4_t; NV] = core::array::from_fn(|v| vld1q_f32(row.add(4 * v)));
            step_a::<NV>(acc, vld1q_f32_x2(w.add(PACK_MR)), &bv);
            kk += 2;
        }
        if kk < k {
            let (w, row) = (panel.add(kk * PACK_MR), b.add(kk * ldb));
            let bv: [float32x4_t; NV] = core::array::from_fn(|v| vld1q_f32(row.add(4 * v)));
            step_a::<NV>(acc, vld1q_f32_x2(w), &bv);
        }
    }

    /// The packed-A micro-kernel in intrinsics for 8 or 4 columns (`NV = 2, 1`): the
    /// 8-row weight panel times `4 * NV` columns of `B` (rows placed by `br` from `b`),
    /// then the epilogue, then `rows` rows stored. (12 columns: [`asm_tile_8x12`].)
    ///
    /// # Safety
    /// `panel` must hold `8 * k` values (`k = br.rows * br.segments`); `b.add(offset(r) + j)`
    /// readable for every row `r < k` and `j < 4 * NV`; `c.add(r * ldc + j)` writable for
    /// `r < rows`, `j < 4 * NV`.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    unsafe fn tile_a<const NV: usize>(
        panel: *const f32,
        b: *const f32,
        br: BRows,
        bias: &[f32; PACK_MR],
        epilogue: Option<Epilogue>,
        c: *mut f32,
        ldc: usize,
        rows: usize,
    ) {
        let mut acc: [[float32x4_t; NV]; PACK_MR] =
            core::array::from_fn(|i| [vdupq_n_f32(bias[i]); NV]);
        for s in 0..br.segments {
            let panel = panel.add(s * br.rows * PACK_MR);
            let b = b.add(s * br.segment_stride);
            segment_a(&mut acc, panel, b, br.rows, br.ldb);
        }
        if let Some(e) = epilogue {
            apply_epilogue(&mut acc, e);
        }
        store_a(&acc, rows, c, ldc);
    }

    /// The packed-A tail for the last `cols < 4` columns, one column at a time: the 8
    /// rows of column `j` are two vectors, updated per `k` by the panel's 8 weights times
    /// `B[k, j]` broadcast (`ld1r`), so nothing past a row's end is read and no lane is
    /// wasted (`n = 1` is a GEMV: 1 load of weights, 1 broadcast, 2 `fmla` per `k`).
    ///
    /// # Safety
    /// As [`tile_a`] with `cols` in place of `4 * NV`.
    #[inline(never)]
    #[allow(clippy::too_many_arguments)]
    unsafe fn tile_a_tail(
        panel: *const f32,
        b: *const f32,
        br: BRows,
        bias: &[f32; PACK_MR],
        epilogue: Option<Epilogue>,
        c: *mut f32,
        ldc: usize,
        rows: usize,
        cols: usize,
    ) {
        match cols {
            1 => tail_cols::<1>(panel, b, br, bias, epilogue, c, ldc, rows),
            2 => tail_cols::<2>(panel, b, br, bias, epilogue, c, ldc, rows),
            _ => tail_cols::<3>(panel, b, br, bias, epilogue, c, ldc, rows),
        }
    }

    /// [`tile_a_tail`] for `C` columns.
    ///
    /// # Safety
    /// As [`tile_a`] with `C` in place of `4 * NV`.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    unsafe fn tail_cols<const C: usize>(
        panel: *const f32,
        b: *const f32,
        br: BRows,
        bias: &[f32; PACK_MR],
        epilogue: Option<Epilogue>,
        c: *mut f32,
        ldc: usize,
        rows: usize,
    ) {
        let init = vld1q_f32_x2(bias.as_ptr());
        // acc[j] = rows 0..4 and 4..8 of column j.
        let mut acc = [[init.0, init.1]; C];
        let k = br.rows;
        for s in 0..br.segments {
            let panel = panel.add(s * k * PACK_MR);
            let b = b.add(s * br.segment_stride);
            for kk in 0..k {
                let w = vld1q_f32_x2(panel.add(kk * PACK_MR));
                let row = b.add(kk * br.ldb);
                for (j, acc) in acc.iter_mut().enumerate() {
                    let v = vld1q_dup_f32(row.add(j));
                    acc[0] = vfmaq_f32(acc[0], w.0, v);
                    acc[1] = vfmaq_f32(acc[1], w.1, v);
                }
            }
        }
        if let Some(e) = epilogue {
            let lo = vdupq_n_f32(e.min);
            for v in acc.iter_mut().flatten() {
                *v = vmaxq_f32(vmaxq_f32(*v, vmulq_n_f32(*v, e.slope)), lo);
            }
        }
        for (j, acc) in acc.iter().enumerate() {
            let mut t = [0.0f32; PACK_MR];
            vst1q_f32_x2(t.as_mut_ptr(), float32x4x2_t(acc[0], acc[1]));
            for (r, &v) in t.iter().enumerate().take(rows) {
                *c.add(r * ldc + j) = v;
            }
        }
    }

    /// The NEON packed-A driver: for each 8-row panel, 12-, 8- and 4-column tiles and the
    /// lane-loaded tail (contract checked by the caller, `m, n, k >= 1`).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn gemm_packed_a(
        m: usize,
        n: usize,
        a: &[f32],
        b: &[f32],
        br: BRows,
        bias: Option<&[f32]>,
        epilogue: Option<Epilogue>,
        c: &mut [f32],
        ldc: usize,
    ) {
        let k = br.rows * br.segments;
        let (ap, bp, cp) = (a.as_ptr(), b.as_ptr(), c.as_mut_ptr());
        // The epilogue constants for the assembly tile (a null pointer: none).
        let ep_consts = epilogue.map(|e| [e.slope, e.min]);
        let ep: *const f32 = ep_consts.as_ref().map_or(core::ptr::null(), |e| e.as_ptr());
        for p in 0..m.div_ceil(PACK_MR) {
            let row0 = p * PACK_MR;
            let rows = (m - row0).min(PACK_MR);
            let bias = padded::<PACK_MR>(bias, row0, rows);
            // SAFETY: every pointer stays inside the slices checked by check_packed_a(_rows):
            // panel p holds 8*k values, every row r < k of `b` holds n values from its
            // offset (`BRows::span(n) <= b.len()`) and the tiles read columns j..j+width <=
            // n; rows < m of `c` hold n values.
            unsafe {
                let panel = ap.add(p * PACK_MR * k);
                let c = cp.add(row0 * ldc);
                let mut j = 0;
                while j + 12 <= n {
                    let (b, c) = (bp.add(j), c.add(j));
                    if rows == PACK_MR {
                        asm_tile_8x12(panel, b, br, bias.as_ptr(), ep, c, ldc);
                    } else {
                        // A partial last panel: the tile goes to a buffer, `rows` rows out.
                        let mut t = [0.0f32; PACK_MR * 12];
                        let tp = t.as_mut_ptr();
                        asm_tile_8x12(panel, b, br, bias.as_ptr(), ep, tp, 12);
                        for r in 0..rows {
                            core::ptr::copy_nonoverlapping(tp.add(12 * r), c.add(r * ldc), 12);
                        }
                    }
                    j += 12;
                }
                if n - j >= 8 {
                    let (b, c) = (bp.add(j), c.add(j));
                    tile_a::<2>(panel, b, br, &bias, epilogue, c, ldc, rows);
                    j += 8;
                }
                if n - j >= 4 {
                    let (b, c) = (bp.add(j), c.add(j));
                    tile_a::<1>(panel, b, br, &bias, epilogue, c, ldc, rows);
                    j += 4;
                }
                if j < n {
                    let (b, c) = (bp.add(j), c.add(j));
                    tile_a_tail(panel, b, br, &bias, epilogue, c, ldc, rows, n - j);
                }
            }
        }
    }

    /// Lines of the GEMV inner loop for lane `$l`: 16 weights of each of the two panels
    /// into v20..v23 and v24..v27, then 8 `fmla` by lane `$l` of `x` (v16).
    macro_rules! asm_gemv_step {
        ($l:literal) => {
            concat!(
                "ld1 {{v20.4s, v21.4s, v22.4s, v23.4s}}, [{p0}], #64\n",
                "ld1 {{v24.4s, v25.4s, v26.4s, v27.4s}}, [{p1}], #64\n",
                "fmla v0.4s, v20.4s, v16.s[",
                $l,
                "]\n",
                "fmla v1.4s, v21.4s, v16.s[",
                $l,
                "]\n",
                "fmla v2.4s, v22.4s, v16.s[",
                $l,
                "]\n",
                "fmla v3.4s, v23.4s, v16.s[",
                $l,
                "]\n",
                "fmla v4.4s, v24.4s, v16.s[",
                $l,
                "]\n",
                "fmla v5.4s, v25.4s, v16.s[",
                $l,
                "]\n",
                "fmla v6.4s, v26.4s, v16.s[",
                $l,
                "]\n",
                "fmla v7.4s, v27.4s, v16.s[",
                $l,
                "]\n",
            )
        };
    }

    /// The two-panel GEMV inner loop over `blocks` steps of 4 `k` (`blocks >= 1`), in
    /// assembly for the post-incremented 4-register loads (LLVM splits them into `ldp`
    /// pairs and adds pointer arithmetic: 4.6 FLOPs per instruction instead of 5.9).
    ///
    /// # Safety
    /// `x` readable for `4 * blocks` values, `p0` and `p1` for `64 * blocks` each.
    #[inline(always)]
    unsafe fn gemv_asm_2x16(
        acc0: &mut float32x4x4_t,
        acc1: &mut float32x4x4_t,
        x: *const f32,
        p0: *const f32,
        p1: *const f32,
        blocks: usize,
    ) {
        core::arch::asm!(
            "2:",
            "ldr q16, [{x}], #16",
            asm_gemv_step!("0"),
            asm_gemv_step!("1"),
            asm_gemv_step!("2"),
            asm_gemv_step!("3"),
            "subs {n}, {n}, #1",
            "b.ne 2b",
            x = inout(reg) x => _,
            p0 = inout(reg) p0 => _,
            p1 = inout(reg) p1 => _,
            n = inout(reg) blocks => _,
            inout("v0") acc0.0, inout("v1") acc0.1, inout("v2") acc0.2, inout("v3") acc0.3,
            inout("v4") acc1.0, inout("v5") acc1.1, inout("v6") acc1.2, inout("v7") acc1.3,
            out("v16") _, out("v20") _, out("v21") _, out("v22") _, out("v23") _,
            out("v24") _, out("v25") _, out("v26") _, out("v27") _,
            options(nostack, readonly),
        );
    }

    /// GEMV over `P` consecutive panels (`16 * P` outputs, `cols` of them valid).
    ///
    /// # Safety
    /// `panels` must hold `16 * P * k` values, `x` `k` values, `y` `cols` writable values.
    #[inline(always)]
    unsafe fn gemv_panels<const P: usize>(
        k: usize,
        x: *const f32,
        panels: *const f32,
        init: &[f32; 32],
        y: *mut f32,
        cols: usize,
    ) {
        let mut acc: [float32x4x4_t; P] =
            core::array::from_fn(|q| vld1q_f32_x4(init.as_ptr().add(16 * q)));
        let bp: [*const f32; P] = core::array::from_fn(|q| panels.add(q * PACK_NR * k));
        let mut kk = 0;
        macro_rules! lane_step {
            ($lane:literal, $xv:expr) => {
                for q in 0..P {
                    let b = vld1q_f32_x4(bp[q].add(PACK_NR * (kk + $lane)));
                    acc[q].0 = vfmaq_laneq_f32::<$lane>(acc[q].0, b.0, $xv);
                    acc[q].1 = vfmaq_laneq_f32::<$lane>(acc[q].1, b.1, $xv);
                    acc[q].2 = vfmaq_laneq_f32::<$lane>(acc[q].2, b.2, $xv);
                    acc[q].3 = vfmaq_laneq_f32::<$lane>(acc[q].3, b.3, $xv);
                }
            };
        }
        if P == 2 && k >= 4 {
            let [p0, p1] = [bp[0], bp[P - 1]];
            let (a0, a1) = acc.split_at_mut(1);
            gemv_asm_2x16(&mut a0[0], &mut a1[0], x, p0, p1, k / 4);
            kk = k / 4 * 4;
        }
        while kk + 4 <= k {
            let xv = vld1q_f32(x.add(kk));
            lane_step!(0, xv);
            lane_step!(1, xv);
            lane_step!(2, xv);
            lane_step!(3, xv);
            kk += 4;
        }
        while kk < k {
            let xv = vld1q_dup_f32(x.add(kk));
            lane_step!(0, xv);
            kk += 1;
        }
        let mut t = [0.0f32; 32];
        for (q, acc) in acc.iter().enumerate() {
            vst1q_f32_x4(t.as_mut_ptr().add(16 * q), *acc);
        }
        core::ptr::copy_nonoverlapping(t.as_ptr(), y, cols);
    }

    pub(super) fn gemv_packed_b(
        n: usize,
        k: usize,
        x: &[f32],
        b: &[f32],
        bias: Option<&[f32]>,
        y: &mut [f32],
    ) {
        let panels = n.div_ceil(PACK_NR);
        let (xp, bp, yp) = (x.as_ptr(), b.as_ptr(), y.as_mut_ptr());
        let mut p = 0;
        while p < panels {
            let col0 = p * PACK_NR;
            let cols = (n - col0).min(2 * PACK_NR);
            let init = padded::<32>(bias, col0, cols);
            // SAFETY: check_gemv: x holds k values, y n >= col0 + cols values, and b the
            // `panels` panels of 16*k values, of which p and (when used) p + 1 exist.
            unsafe {
                let panel = bp.add(col0 * k);
                if p + 2 <= panels {
                    gemv_panels::<2>(k, xp, panel, &init, yp.add(col0), cols);
                } else {
                    gemv_panels::<1>(k, xp, panel, &init, yp.add(col0), cols);
                }
            }
            p += 2;
        }
    }
}

#[cfg(all(target_arch = "aarch64", feature = "neon"))]
impl GemmKernels for super::Neon {
    fn gemm_packed_b(
        m: usize,
        n: usize,
        k: usize,
        a: &[f32],
        lda: usize,
        b: &[f32],
        bias: Option<&[f32]>,
        c: &mut [f32],
        ldc: usize,
    ) {
        check_packed_b(m, n, k, a, lda, b, bias, c, ldc);
        if m == 0 || n == 0 || k == 0 {
            return bias_only_b(m, n, bias, c, ldc);
        }
        neon::gemm_packed_b(m, n, k, a, lda, b, bias, c, ldc)
    }
    fn gemm_packed_a(
        m: usize,
        n: usize,
        k: usize,
        a: &[f32],
        b: &[f32],
        ldb: usize,
        bias: Option<&[f32]>,
        c: &mut [f32],
        ldc: usize,
    ) {
        check_packed_a(m, n, k, a, b, ldb, bias, c, ldc);
        if m == 0 || n == 0 || k == 0 {
            return bias_only_a(m, n, bias, None, c, ldc);
        }
        neon::gemm_packed_a(m, n, a, b, BRows::contiguous(k, ldb), bias, None, c, ldc)
    }
    fn gemm_packed_a_rows(
        m: usize,
        n: usize,
        a: &[f32],
        b: &[f32],
        rows: BRows,
        bias: Option<&[f32]>,
        epilogue: Option<Epilogue>,
        c: &mut [f32],
        ldc: usize,
    ) {
        let k = check_packed_a_rows(m, n, a, b, rows, bias, c, ldc);
        if m == 0 || n == 0 || k == 0 {
            return bias_only_a(m, n, bias, epilogue, c, ldc);
        }
        neon::gemm_packed_a(m, n, a, b, rows, bias, epilogue, c, ldc)
    }
    fn gemv_packed_b(
        n: usize,
        k: usize,
        x: &[f32],
        b: &[f32],
        bias: Option<&[f32]>,
        y: &mut [f32],
    ) {
        check_gemv(n, k, x, b, bias, y);
        neon::gemv_packed_b(n, k, x, b, bias, y)
    }
}
