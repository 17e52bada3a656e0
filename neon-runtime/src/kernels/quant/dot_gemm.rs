//! NEON: the `sdot` path of [`QuantKernels::gemm_i8_dot`](super::QuantKernels::gemm_i8_dot)
//! (cores with the dot-product extension, FEAT_DotProd), the GEMM of the int8-activation
//! arithmetic of the `sdot` GEMV (`dot.rs`).
//!
//! Opt-in like the GEMV ([`QuantPath::Dot`](super::QuantPath::Dot)); [`Neon`](crate::kernels::Neon)
//! runs it where [`cpu::aarch64_dotprod`](crate::kernels::cpu::aarch64_dotprod) says so and
//! the plain NEON GEMV of the same arithmetic row by row elsewhere (`dot_widen.rs`). The
//! `smmla` (FEAT_I8MM) GEMM of the same arithmetic is `mmla_gemm.rs`
//! ([`QuantPath::Mmla`](super::QuantPath::Mmla)).
//!
//! Each row of `A` is quantised once per call and chunk of [`DOT_KC`] values (per block of
//! 32, `d = max|x| / 127`, ties to even: the GEMV's `quantize`), four rows at a time, their
//! codes interleaved per block (`[block][row][32]`, then the block's four `d`). The
//! micro-kernel computes 4 rows x 8 outputs (half a packed panel): per group of 4 `k`, one
//! 32-byte load of the half panel and 8 `sdot` by lane into i32 accumulators; per block of
//! 32 `k`, the 8 i32 vectors converted (`scvtf`) and added times the row's `d` (`fmla` by
//! element; block-int8: times `scale * d`, as the GEMV) to 8 f32 accumulators held in
//! registers. Per block: 64 `sdot`, 8 loads of weights, 3 of activations, 8 `movi`, 8
//! `scvtf`, 8 `fmla` (block-int8: 16 more) and the loop: about 0.1 instructions per
//! multiply-add, against about 0.29 for the widening GEMM's f32 micro-kernel (measured:
//! BENCHMARKS.md, "Moonshine encoder on the int8-activation path").
//!
//! Each output gets the GEMV's operations in the GEMV's order (block by block, the same
//! roundings, the same epilogue), so row `i` of the product has the bits of
//! [`QuantKernels::gemv_i8_dot`](super::QuantKernels::gemv_i8_dot) on row `i`, whatever
//! rows and columns are computed together: a row tail is padded with zero rows, a column
//! tail computed in full and not stored.

use super::dot::quantize;
use super::{
    finish, k_padded, QuantFormat, QuantGemm, QuantWeights, BLOCK_K, DOT_KC, PACK_NR, QUANT_KR,
};
use crate::kernels::StridedMut;
use core::arch::aarch64::*;

/// Rows of `A` per micro-tile.
const MR: usize = 4;
/// Outputs per micro-tile: half a panel.
const NR: usize = PACK_NR / 2;
/// Bytes of one packed block (32 `k`) of one panel.
const PANEL_BLOCK: usize = BLOCK_K * PACK_NR;

/// Lines of one group (4 `k`) of the 4 x 8 tile: the group's 32 bytes of the half panel
/// (`{w}` advanced by a whole group, `{step}` = 64) into v24, v25, then per row `r` two
/// `sdot` by lane `$l` of that row's codes (`$x0..$x3`) into the i32 accumulators
/// v8 + 2r, v9 + 2r.
macro_rules! group_4x8 {
    ($x0:literal, $x1:literal, $x2:literal, $x3:literal, $l:literal) => {
        concat!(
            "ld1 {{v24.16b, v25.16b}}, [{w}], {step}\n",
            group_4x8!(@row "v8", "v9", $x0, $l),
            group_4x8!(@row "v10", "v11", $x1, $l),
            group_4x8!(@row "v12", "v13", $x2, $l),
            group_4x8!(@row "v14", "v15", $x3, $l),
        )
    };
    (@row $a:literal, $b:literal, $x:literal, $l:literal) => {
        concat!(
            "sdot ", $a, ".4s, v24.16b, ", $x, ".4b[", $l, "]\n",
            "sdot ", $b, ".4s, v25.16b, ", $x, ".4b[", $l, "]\n",
        )
    };
}

/// Lines of one block of 32 `k`: the four rows' codes (128 bytes, `{xq}`) into v16..v23
/// (row `r`: v16 + 2r for `k` 0..16, v17 + 2r for 16..32), their four `d` into v26
/// (`{xd}`), the i32 accumulators zeroed, 8 groups of `sdot`, the sums converted to f32.
macro_rules! block_4x8 {
    () => {
        concat!(
            "ld1 {{v16.16b, v17.16b, v18.16b, v19.16b}}, [{xq}], #64\n",
            "ld1 {{v20.16b, v21.16b, v22.16b, v23.16b}}, [{xq}], #64\n",
            "ld1 {{v26.4s}}, [{xd}], #16\n",
            "movi v8.4s, #0\n movi v9.4s, #0\n movi v10.4s, #0\n movi v11.4s, #0\n",
            "movi v12.4s, #0\n movi v13.4s, #0\n movi v14.4s, #0\n movi v15.4s, #0\n",
            group_4x8!("v16", "v18", "v20", "v22", "0"),
            group_4x8!("v16", "v18", "v20", "v22", "1"),
            group_4x8!("v16", "v18", "v20", "v22", "2"),
            group_4x8!("v16", "v18", "v20", "v22", "3"),
            group_4x8!("v17", "v19", "v21", "v23", "0"),
            group_4x8!("v17", "v19", "v21", "v23", "1"),
            group_4x8!("v17", "v19", "v21", "v23", "2"),
            group_4x8!("v17", "v19", "v21", "v23", "3"),
            "scvtf v8.4s, v8.4s\n scvtf v9.4s, v9.4s\n scvtf v10.4s, v10.4s\n",
            "scvtf v11.4s, v11.4s\n scvtf v12.4s, v12.4s\n scvtf v13.4s, v13.4s\n",
            "scvtf v14.4s, v14.4s\n scvtf v15.4s, v15.4s\n",
        )
    };
}

/// Per tensor: row `r`'s f32 accumulators v2r, v2r+1 += sums times `d` (lane `r` of v26).
macro_rules! scale_tensor_4x8 {
    () => {
        concat!(
            "fmla v0.4s, v8.4s, v26.s[0]\n fmla v1.4s, v9.4s, v26.s[0]\n",
            "fmla v2.4s, v10.4s, v26.s[1]\n fmla v3.4s, v11.4s, v26.s[1]\n",
            "fmla v4.4s, v12.4s, v26.s[2]\n fmla v5.4s, v13.4s, v26.s[2]\n",
            "fmla v6.4s, v14.4s, v26.s[3]\n fmla v7.4s, v15.4s, v26.s[3]\n",
        )
    };
}

/// Block-int8: the half panel's 8 weight scales of the block into v27, v28 (`{s}`
/// advanced by the panel's 16), then per row `scale * d` (v29, v30) and the `fmla`.
macro_rules! scale_block_4x8 {
    () => {
        concat!(
            "ld1 {{v27.4s, v28.4s}}, [{s}], {step}\n",
            scale_block_4x8!(@row "v0", "v1", "v8", "v9", "0"),
            scale_block_4x8!(@row "v2", "v3", "v10", "v11", "1"),
            scale_block_4x8!(@row "v4", "v5", "v12", "v13", "2"),
            scale_block_4x8!(@row "v6", "v7", "v14", "v15", "3"),
        )
    };
    (@row $a:literal, $b:literal, $ia:literal, $ib:literal, $r:literal) => {
        concat!(
            "fmul v29.4s, v27.4s, v26.s[", $r, "]\n",
            "fmul v30.4s, v28.4s, v26.s[", $r, "]\n",
            "fmla ", $a, ".4s, ", $ia, ".4s, v29.4s\n",
            "fmla ", $b, ".4s, ", $ib, ".4s, v30.4s\n",
        )
    };
}

/// The 4 x 8 tile over `blocks` blocks of 32 `k` (`blocks >= 1`): `acc[2r + h]` holds
/// outputs `4h..4h + 4` of row `r` in f32. `w`: the half panel's first group (groups 64
/// bytes apart); `ws`: its block-int8 scales from the first block (blocks 16 values
/// apart), `None` per tensor.
///
/// # Safety
/// The CPU implements dotprod; `xq` readable for `128 * blocks` bytes, `xd` for
/// `4 * blocks` values, `w` for `512 * blocks - 32` bytes, `ws` for `16 * blocks - 8`
/// values.
#[target_feature(enable = "dotprod")]
unsafe fn sdot_4x8(
    acc: &mut [float32x4_t; 2 * MR],
    xq: *const i8,
    xd: *const f32,
    w: *const i8,
    ws: Option<*const f32>,
    blocks: usize,
) {
    let step = 64usize;
    // The block loop with the lines scaling a block's sums and the pointers of the format.
    macro_rules! tile {
        ($scale:expr $(, $s:ident)*) => {
            core::arch::asm!(
                "2:",
                block_4x8!(),
                $scale,
                "subs {n}, {n}, #1",
                "b.ne 2b",
                xq = inout(reg) xq => _,
                xd = inout(reg) xd => _,
                w = inout(reg) w => _,
                $($s = inout(reg) $s => _,)*
                step = in(reg) step,
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
            None => tile!(scale_tensor_4x8!()),
            Some(s) => tile!(scale_block_4x8!(), s),
        }
    }
}

/// The codes of up to four rows, interleaved per block for [`sdot_4x8`]: block `b` at
/// `codes[b * 128..]` (row `r` at `+ 32 r`), its four `d` at `scales[4 b..]`. Rows past
/// the tile's are zero (`d = 0`).
struct Rows4 {
    codes: [i8; MR * DOT_KC],
    scales: [f32; MR * DOT_KC / BLOCK_K],
}

impl Rows4 {
    /// Quantises `rows` (at most four slices of the same length `kc <= DOT_KC`).
    fn quantize<'a>(&mut self, rows: impl Iterator<Item = &'a [f32]>, kc: usize) {
        let blocks = kc.div_ceil(BLOCK_K);
        let mut xq = [0i8; DOT_KC];
        let mut xd = [0.0f32; DOT_KC / BLOCK_K];
        let mut filled = 0;
        for (r, x) in rows.enumerate() {
            quantize(x, &mut xq, &mut xd);
            for b in 0..blocks {
                let dst = &mut self.codes[(b * MR + r) * BLOCK_K..][..BLOCK_K];
                dst.copy_from_slice(&xq[b * BLOCK_K..][..BLOCK_K]);
                self.scales[b * MR + r] = xd[b];
            }
            filled = r + 1;
        }
        for r in filled..MR {
            for b in 0..blocks {
                self.codes[(b * MR + r) * BLOCK_K..][..BLOCK_K].fill(0);
                self.scales[b * MR + r] = 0.0;
            }
        }
    }
}

/// The `sdot` GEMM of both formats into the `m x n` block `c`.
///
/// # Safety
/// The CPU implements dotprod; the contract of
/// [`QuantKernels::gemm_i8_dot`](super::QuantKernels::gemm_i8_dot) holds (checked by the
/// entry point), `m, n, k >= 1`.
#[target_feature(enable = "dotprod")]
pub(super) unsafe fn gemm(g: QuantGemm, a: &[f32], w: QuantWeights<'_>, mut c: StridedMut<'_>) {
    let QuantGemm { m, n, k, lda, .. } = g;
    let QuantWeights { packed: b, format, bias } = w;
    let stride = PACK_NR * k_padded(k);
    let nb = k / BLOCK_K;
    let panels = n.div_ceil(PACK_NR);
    let mut x = Rows4 { codes: [0; MR * DOT_KC], scales: [0.0; MR * DOT_KC / BLOCK_K] };
    let row = |i: usize| &a[i * lda..i * lda + k];
    for i0 in (0..m).step_by(MR) {
        let mr = (m - i0).min(MR);
        for c0 in (0..k).step_by(DOT_KC) {
            let kc = (k - c0).min(DOT_KC);
            x.quantize((i0..i0 + mr).map(|i| &row(i)[c0..c0 + kc]), kc);
            let full = kc / BLOCK_K;
            for p in 0..panels {
                let col0 = p * PACK_NR;
                let cols = (n - col0).min(PACK_NR);
                // The partial sums of earlier chunks (zero before the first).
                let mut t = [[0.0f32; PACK_NR]; MR];
                if c0 > 0 {
                    for (r, t) in t.iter_mut().enumerate().take(mr) {
                        t[..cols].copy_from_slice(&c.row(i0 + r)[col0..col0 + cols]);
                    }
                }
                // The panel's chunk (groups from c0 / 4 on) and its partial last block,
                // zero padded to a whole block (the packed panel ends at the next group).
                // SAFETY: panel p exists (p < panels) and holds k_padded(k) >= c0 + kc
                // values of k, 16 bytes each.
                let wp = unsafe { b.as_ptr().add(p * stride + c0 * PACK_NR) };
                let mut tail = [0i8; PANEL_BLOCK];
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
                for h in 0..2 {
                    if h * NR >= cols {
                        break;
                    }
                    let mut acc: [float32x4_t; 2 * MR] = core::array::from_fn(|i| {
                        // SAFETY: row i / 2 of `t` holds 16 values, 4 from 8h + 4 (i % 2).
                        unsafe { vld1q_f32(t[i / 2].as_ptr().add(h * NR + 4 * (i % 2))) }
                    });
                    // SAFETY: the codes hold the chunk's blocks; the half panel's full
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
                            sdot_4x8(&mut acc, xq, xd, wp.add(h * NR * QUANT_KR), ws, full);
                        }
                        if full * BLOCK_K < kc {
                            let (xq, xd) = (xq.add(full * MR * BLOCK_K), xd.add(full * MR));
                            let tp = tail.as_ptr().add(h * NR * QUANT_KR);
                            sdot_4x8(&mut acc, xq, xd, tp, None, 1);
                        }
                    }
                    for (i, &v) in acc.iter().enumerate() {
                        // SAFETY: as the loads above.
                        unsafe { vst1q_f32(t[i / 2].as_mut_ptr().add(h * NR + 4 * (i % 2)), v) };
                    }
                }
                for (r, t) in t.iter().enumerate().take(mr) {
                    c.row(i0 + r)[col0..col0 + cols].copy_from_slice(&t[..cols]);
                }
            }
        }
        for i in i0..i0 + mr {
            let shift = format.scale_shift(row(i)).1;
            finish(&mut c.row(i)[..n], format, shift, bias.map(|b| &b[..n]));
        }
    }
}
