//! NEON: the `smmla` path of the int8-activation GEMM ([`QuantPath::Mmla`](super::QuantPath::Mmla),
//! cores with the int8 matrix-multiply extension, FEAT_I8MM): the arithmetic of the `sdot`
//! GEMM (`dot_gemm.rs`) with the 2 x 8 by 8 x 2 products of `smmla`.
//!
//! [`Neon`](crate::kernels::Neon) runs it where
//! [`cpu::aarch64_i8mm`](crate::kernels::cpu::aarch64_i8mm) says so and the `sdot` GEMM (or, without
//! dotprod, the plain NEON evaluation of `dot_widen.rs`) elsewhere: the same bits on every CPU.
//!
//! `smmla vd.4s, vn.16b, vm.16b` adds to the 2 x 2 i32 tile `vd` (lanes: row 0 column 0,
//! row 0 column 1, row 1 column 0, row 1 column 1) the products of the two rows of 8 codes
//! in `vn` with the two columns of 8 codes in `vm`. The packed weights hold 4 `k` per output
//! and group (`mod.rs`, "Packed layout"), so each 8 `k` of a quarter panel (4 outputs) are
//! two 16-byte loads, 64 bytes apart, and one `zip1` / `zip2` of their 32-bit lanes gives
//! the 8 codes of outputs 0, 1 and of outputs 2, 3: no second packed copy of the weights.
//! (One in an 8-`k` layout, packed at prepare time, would save the 8 zips of a block, 10%
//! of its instructions, for the memory of those weights once more, as the widening and
//! `sdot` paths read the 4-`k` layout: 19.4 MB for Moonshine base-en's encoder, its 48
//! GEMMs and the 16 cross-attention key and value projections.)
//!
//! Each row of `A` is quantised once per call and chunk of [`DOT_KC`] values, as the
//! `sdot` GEMM does (the GEMV's `quantize`), eight rows at a time, the codes laid out for
//! `smmla`: per block of 32, per 8 `k`, per pair of rows the pair's two rows of 8 codes
//! (`[block][8 k][pair][2][8]`), then the block's `d` per pair as `[d0, d0, d1, d1]` (the
//! lanes of the tile). The micro-kernel computes 8 rows x 4 outputs (a quarter panel): per
//! 8 `k`, one 64-byte load of the codes, two loads and two zips of weights and 8 `smmla`
//! into 8 i32 tiles; per block of 32 `k`, the tiles converted (`scvtf`) and added times
//! `d` (`fmla`; block-int8: times `scale * d`, as the GEMV) to 8 f32 tiles held in
//! registers. Per block: 32 `smmla`, 8 loads and 8 zips of weights, 5 loads of
//! activations, 8 `movi`, 8 `scvtf`, 8 `fmla` (block-int8: 2 loads, 8 `fmul` more), the
//! loop: 79 instructions for the 32 x 32 multiply-adds the `sdot` 4 x 8 tile does in 101
//! (measured: BENCHMARKS.md, "Moonshine encoder on the int8-activation path"). Whole tiles
//! (8 rows, a whole panel) are read and written in `C` directly, tails through a staging
//! block.
//!
//! Every output gets the `sdot` GEMM's operations in its order (per block `scvtf`, then one
//! fused multiply-add by `d`, or by `scale * d` rounded once), so the bits are those of
//! [`QuantKernels::gemv_i8_dot`](super::QuantKernels::gemv_i8_dot) on each row: a row tail
//! is padded with zero rows, a column tail computed in full and not stored.

use super::dot::quantize;
use super::{
    finish, k_padded, QuantFormat, QuantGemm, QuantWeights, BLOCK_K, DOT_KC, PACK_NR, QUANT_KR,
};
use crate::kernels::StridedMut;
use core::arch::aarch64::*;

/// Rows of `A` per micro-tile.
const MR: usize = 8;
/// Outputs per micro-tile: a quarter panel.
const NR: usize = PACK_NR / 4;
/// Pairs of rows (`smmla` row operands) per micro-tile.
const PAIRS: usize = MR / 2;
/// `k` per `smmla`.
const MK: usize = 8;
/// Bytes of one packed block (32 `k`) of one panel.
const PANEL_BLOCK: usize = BLOCK_K * PACK_NR;
/// Values of one block's `d` vectors (`[d0, d0, d1, d1]` per pair).
const BLOCK_D: usize = 4 * PAIRS;

/// Lines of 8 `k`: the four pairs' codes (64 bytes, `{xq}`) into v16..v19, the quarter
/// panel's two groups (`{w}` and `{w} + 64`, `{w}` advanced by two groups) into v24, v25,
/// zipped into outputs 0, 1 (v26) and 2, 3 (v24), then per pair `p` two `smmla` into the
/// i32 tiles v8 + 2p (outputs 0, 1) and v9 + 2p (outputs 2, 3).
macro_rules! step_8x4 {
    () => {
        concat!(
            "ld1 {{v16.16b, v17.16b, v18.16b, v19.16b}}, [{xq}], #64\n",
            "ldr q25, [{w}, #64]\n",
            "ldr q24, [{w}], #128\n",
            "zip1 v26.4s, v24.4s, v25.4s\n",
            "zip2 v24.4s, v24.4s, v25.4s\n",
            "smmla v8.4s, v16.16b, v26.16b\n smmla v9.4s, v16.16b, v24.16b\n",
            "smmla v10.4s, v17.16b, v26.16b\n smmla v11.4s, v17.16b, v24.16b\n",
            "smmla v12.4s, v18.16b, v26.16b\n smmla v13.4s, v18.16b, v24.16b\n",
            "smmla v14.4s, v19.16b, v26.16b\n smmla v15.4s, v19.16b, v24.16b\n",
        )
    };
}

/// Lines of one block of 32 `k`: the i32 tiles zeroed, 4 steps of 8 `k`, the tiles
/// converted to f32, the block's four `d` vectors into v20..v23 (`{xd}`).
macro_rules! block_8x4 {
    () => {
        concat!(
            "movi v8.4s, #0\n movi v9.4s, #0\n movi v10.4s, #0\n movi v11.4s, #0\n",
            "movi v12.4s, #0\n movi v13.4s, #0\n movi v14.4s, #0\n movi v15.4s, #0\n",
            step_8x4!(),
            step_8x4!(),
            step_8x4!(),
            step_8x4!(),
            "scvtf v8.4s, v8.4s\n scvtf v9.4s, v9.4s\n scvtf v10.4s, v10.4s\n",
            "scvtf v11.4s, v11.4s\n scvtf v12.4s, v12.4s\n scvtf v13.4s, v13.4s\n",
            "scvtf v14.4s, v14.4s\n scvtf v15.4s, v15.4s\n",
            "ld1 {{v20.4s, v21.4s, v22.4s, v23.4s}}, [{xd}], #64\n",
        )
    };
}

/// Per tensor: pair `p`'s f32 tiles v2p, v2p+1 += sums times its `d` vector (v20 + p).
macro_rules! scale_tensor_8x4 {
    () => {
        concat!(
            "fmla v0.4s, v8.4s, v20.4s\n fmla v1.4s, v9.4s, v20.4s\n",
            "fmla v2.4s, v10.4s, v21.4s\n fmla v3.4s, v11.4s, v21.4s\n",
            "fmla v4.4s, v12.4s, v22.4s\n fmla v5.4s, v13.4s, v22.4s\n",
            "fmla v6.4s, v14.4s, v23.4s\n fmla v7.4s, v15.4s, v23.4s\n",
        )
    };
}

/// Block-int8: the quarter panel's 4 weight scales of the block as `[s0, s1, s0, s1]`
/// (v27) and `[s2, s3, s2, s3]` (v28) (`{s}` advanced by the panel's 16), then per pair
/// `scale * d` (v29, v30) and the `fmla`.
macro_rules! scale_block_8x4 {
    () => {
        concat!(
            "ld1r {{v27.2d}}, [{s}], #8\n",
            "ld1r {{v28.2d}}, [{s}], {sstep}\n",
            scale_block_8x4!(@pair "v0", "v1", "v8", "v9", "v20"),
            scale_block_8x4!(@pair "v2", "v3", "v10", "v11", "v21"),
            scale_block_8x4!(@pair "v4", "v5", "v12", "v13", "v22"),
            scale_block_8x4!(@pair "v6", "v7", "v14", "v15", "v23"),
        )
    };
    (@pair $a:literal, $b:literal, $ia:literal, $ib:literal, $d:literal) => {
        concat!(
            "fmul v29.4s, v27.4s, ", $d, ".4s\n",
            "fmul v30.4s, v28.4s, ", $d, ".4s\n",
            "fmla ", $a, ".4s, ", $ia, ".4s, v29.4s\n",
            "fmla ", $b, ".4s, ", $ib, ".4s, v30.4s\n",
        )
    };
}

/// The 8 x 4 tile over `blocks` blocks of 32 `k` (`blocks >= 1`): `acc[2p + h]` is the
/// f32 2 x 2 tile of rows `2p, 2p + 1` and outputs `2h, 2h + 1` (lanes as `smmla`'s).
/// `w`: the quarter panel's first group (groups 64 bytes apart); `ws`: its block-int8
/// scales from the first block (blocks 16 values apart), `None` per tensor.
///
/// # Safety
/// The CPU implements i8mm; `xq` readable for `256 * blocks` bytes, `xd` for
/// `16 * blocks` values, `w` for `512 * blocks - 48` bytes, `ws` for `16 * blocks - 12`
/// values.
#[target_feature(enable = "i8mm")]
unsafe fn smmla_8x4(
    acc: &mut [float32x4_t; MR],
    xq: *const i8,
    xd: *const f32,
    w: *const i8,
    ws: Option<*const f32>,
    blocks: usize,
) {
    // The scales' post-increment after the first 8 bytes: to the next block's.
    let sstep = 4 * PACK_NR - 8;
    // The block loop with the lines scaling a block's sums and the pointers of the format.
    macro_rules! tile {
        ($scale:expr $(, $s:ident, $sstep:ident)?) => {
            core::arch::asm!(
                "2:",
                block_8x4!(),
                $scale,
                "subs {n}, {n}, #1",
                "b.ne 2b",
                xq = inout(reg) xq => _,
                xd = inout(reg) xd => _,
                w = inout(reg) w => _,
                $($s = inout(reg) $s => _, $sstep = in(reg) $sstep,)?
                n = inout(reg) blocks => _,
                inout("v0") acc[0], inout("v1") acc[1], inout("v2") acc[2], inout("v3") acc[3],
                inout("v4") acc[4], inout("v5") acc[5], inout("v6") acc[6], inout("v7") acc[7],
                out("v8") _, out("v9") _, out("v10") _, out("v11") _,
                out("v12") _, out("v13") _, out("v14") _, out("v15") _,
                out("v16") _, out("v17") _, out("v18") _, out("v19") _,
                out("v20") _, out("v21") _, out("v22") _, out("v23") _,
                out("v24") _, out("v25") _, out("v26") _, out("v27") _,
                out("v28") _, out("v29") _, out("v30") _,
                options(nostack, readonly),
            )
        };
    }
    // SAFETY: reads stay within the extents of this function's contract; only the
    // declared registers are written.
    unsafe {
        match ws {
            None => tile!(scale_tensor_8x4!()),
            Some(s) => tile!(scale_block_8x4!(), s, sstep),
        }
    }
}

/// The 64-bit transpose of `a`, `b` (`[a0, a1, b0, b1]`, `[a2, a3, b2, b3]`): two rows'
/// 4 outputs into the 2 x 2 tiles of `smmla`'s lanes, and back.
#[inline]
#[target_feature(enable = "neon")]
fn trn(a: float32x4_t, b: float32x4_t) -> [float32x4_t; 2] {
    let (a, b) = (vreinterpretq_f64_f32(a), vreinterpretq_f64_f32(b));
    [vreinterpretq_f32_f64(vtrn1q_f64(a, b)), vreinterpretq_f32_f64(vtrn2q_f64(a, b))]
}

/// The codes of up to eight rows laid out for [`smmla_8x4`]: row `r`'s code `kk` of block
/// `b` at `codes[b * 256 + (kk / 8) * 64 + (r / 2) * 16 + (r % 2) * 8 + kk % 8]`, the
/// block's `d` of row `r` at `scales[b * 16 + (r / 2) * 4 + (r % 2) * 2..][..2]`. Rows past
/// the tile's are zero (`d = 0`).
struct Rows8 {
    codes: [i8; MR * DOT_KC],
    scales: [f32; BLOCK_D * DOT_KC / BLOCK_K],
}

impl Rows8 {
    /// Quantises `rows` (at most eight slices of the same length `kc <= DOT_KC`).
    fn quantize<'a>(&mut self, rows: impl Iterator<Item = &'a [f32]>, kc: usize) {
        let blocks = kc.div_ceil(BLOCK_K);
        let mut xq = [0i8; DOT_KC];
        let mut xd = [0.0f32; DOT_KC / BLOCK_K];
        let mut filled = 0;
        for (r, x) in rows.enumerate() {
            quantize(x, &mut xq, &mut xd);
            self.store(r, blocks, &xq, &xd);
            filled = r + 1;
        }
        for r in filled..MR {
            self.store(r, blocks, &[0; DOT_KC], &[0.0; DOT_KC / BLOCK_K]);
        }
    }

    /// Row `r`'s codes and `d` of the first `blocks` blocks into their places.
    fn store(&mut self, r: usize, blocks: usize, xq: &[i8; DOT_KC], xd: &[f32]) {
        let row = (r / 2) * 2 * MK + (r % 2) * MK;
        for b in 0..blocks {
            for s in 0..BLOCK_K / MK {
                let dst = &mut self.codes[b * MR * BLOCK_K + s * MR * MK + row..][..MK];
                dst.copy_from_slice(&xq[b * BLOCK_K + s * MK..][..MK]);
            }
            let d = b * BLOCK_D + (r / 2) * 4 + (r % 2) * 2;
            self.scales[d..d + 2].fill(xd[b]);
        }
    }
}

/// The `smmla` GEMM of both formats into the `m x n` block `c`.
///
/// # Safety
/// The CPU implements i8mm; the contract of
/// [`QuantKernels::gemm_i8_dot`](super::QuantKernels::gemm_i8_dot) holds (checked by the
/// entry point), `m, n, k >= 1`.
#[target_feature(enable = "i8mm")]
pub(super) unsafe fn gemm(g: QuantGemm, a: &[f32], w: QuantWeights<'_>, mut c: StridedMut<'_>) {
    let QuantGemm { m, n, k, lda, .. } = g;
    let QuantWeights { packed: b, format, bias } = w;
    let stride = PACK_NR * k_padded(k);
    let nb = k / BLOCK_K;
    let panels = n.div_ceil(PACK_NR);
    let mut x = Rows8 { codes: [0; MR * DOT_KC], scales: [0.0; BLOCK_D * DOT_KC / BLOCK_K] };
    let row = |i: usize| &a[i * lda..i * lda + k];
    // The staging rows of a tile with fewer than MR rows or PACK_NR outputs (whole tiles
    // are read and written in `c` directly), and a partial last block of weights, zero
    // padded to a whole block (only the last chunk has one: the same bytes every time).
    let mut t = [[0.0f32; PACK_NR]; MR];
    let mut tail = [0i8; PANEL_BLOCK];
    let (cp, ldc) = (c.as_mut_ptr(), c.ld());
    for i0 in (0..m).step_by(MR) {
        let mr = (m - i0).min(MR);
        for c0 in (0..k).step_by(DOT_KC) {
            let kc = (k - c0).min(DOT_KC);
            x.quantize((i0..i0 + mr).map(|i| &row(i)[c0..c0 + kc]), kc);
            let full = kc / BLOCK_K;
            for p in 0..panels {
                let col0 = p * PACK_NR;
                let cols = (n - col0).min(PACK_NR);
                let direct = mr == MR && cols == PACK_NR;
                // The rows of the tile: in `c`, or staged in `t` with the partial sums of
                // earlier chunks.
                let rows: [*mut f32; MR] = if direct {
                    // SAFETY: rows i0..i0 + MR < m and outputs col0..col0 + 16 <= n are
                    // within the block `c` (its contract: `ldc` apart).
                    core::array::from_fn(|r| unsafe { cp.add((i0 + r) * ldc + col0) })
                } else {
                    if c0 > 0 {
                        for (r, t) in t.iter_mut().enumerate().take(mr) {
                            t[..cols].copy_from_slice(&c.row(i0 + r)[col0..col0 + cols]);
                        }
                    }
                    core::array::from_fn(|r| t[r].as_mut_ptr())
                };
                // The panel's chunk (groups from c0 / 4 on).
                // SAFETY: panel p exists (p < panels) and holds k_padded(k) >= c0 + kc
                // values of k, 16 bytes each.
                let wp = unsafe { b.as_ptr().add(p * stride + c0 * PACK_NR) };
                if !kc.is_multiple_of(BLOCK_K) {
                    let bytes = (k_padded(kc) - full * BLOCK_K) * PACK_NR;
                    // SAFETY: the partial block's groups are within the panel (above);
                    // `tail` holds a whole block.
                    unsafe {
                        core::ptr::copy_nonoverlapping(
                            wp.add(full * PANEL_BLOCK),
                            tail.as_mut_ptr(),
                            bytes,
                        )
                    };
                }
                for h in 0..PACK_NR / NR {
                    if h * NR >= cols {
                        break;
                    }
                    // Tile 2j + q: rows 2j, 2j + 1, outputs 4h + 2q, 4h + 2q + 1; from and to
                    // the rows' 4 outputs by 64-bit transposes (`trn1`, `trn2` of `.2d`).
                    let mut acc = [vdupq_n_f32(0.0); MR];
                    if c0 > 0 {
                        for j in 0..PAIRS {
                            // SAFETY: each row of `rows` holds 16 values (a row of `c` from
                            // col0, or of `t`), 4 from 4h.
                            let (r0, r1) = unsafe {
                                let r0 = vld1q_f32(rows[2 * j].add(h * NR));
                                (r0, vld1q_f32(rows[2 * j + 1].add(h * NR)))
                            };
                            [acc[2 * j], acc[2 * j + 1]] = trn(r0, r1);
                        }
                    }
                    // SAFETY: the codes hold the chunk's blocks; the quarter panel's full
                    // blocks are within the panel and the partial one in `tail`; block
                    // scales exist for blocks (k a multiple of 32, no partial block), the
                    // panel's from (p * nb + c0 / 32) * 16 on.
                    unsafe {
                        let ws = match format {
                            QuantFormat::Block(s) => {
                                Some(s.as_ptr().add((p * nb + c0 / BLOCK_K) * PACK_NR + h * NR))
                            }
                            QuantFormat::PerTensor { .. } => None,
                        };
                        let (xq, xd) = (x.codes.as_ptr(), x.scales.as_ptr());
                        if full > 0 {
                            smmla_8x4(&mut acc, xq, xd, wp.add(h * NR * QUANT_KR), ws, full);
                        }
                        if full * BLOCK_K < kc {
                            let (xq, xd) = (xq.add(full * MR * BLOCK_K), xd.add(full * BLOCK_D));
                            let tp = tail.as_ptr().add(h * NR * QUANT_KR);
                            smmla_8x4(&mut acc, xq, xd, tp, None, 1);
                        }
                    }
                    for j in 0..PAIRS {
                        let [r0, r1] = trn(acc[2 * j], acc[2 * j + 1]);
                        // SAFETY: as the loads above.
                        unsafe {
                            vst1q_f32(rows[2 * j].add(h * NR), r0);
                            vst1q_f32(rows[2 * j + 1].add(h * NR), r1);
                        }
                    }
                }
                if !direct {
                    for (r, t) in t.iter().enumerate().take(mr) {
                        c.row(i0 + r)[col0..col0 + cols].copy_from_slice(&t[..cols]);
                    }
                }
            }
        }
        for i in i0..i0 + mr {
            let shift = format.scale_shift(row(i)).1;
            finish(&mut c.row(i)[..n], format, shift, bias.map(|b| &b[..n]));
        }
    }
}
