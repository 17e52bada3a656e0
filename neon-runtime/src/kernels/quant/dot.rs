//! NEON: the `sdot` path of [`QuantKernels::gemv_i8_dot`](super::QuantKernels::gemv_i8_dot)
//! (cores with the dot-product extension, FEAT_DotProd).
//!
//! The int8-activation GEMV is opt-in (the backend's default is the widening path, so
//! results do not depend on the CPU); [`Neon`](crate::kernels::Neon) runs this `sdot`
//! implementation where [`cpu::aarch64_dotprod`](crate::kernels::cpu::aarch64_dotprod) says
//! so (the build targets dotprod, or feature `std` detects it at run time) and the plain
//! NEON evaluation of the same arithmetic elsewhere (`dot_widen.rs`, on this file's driver,
//! `dot_gemv!`: the same bits). This trades accuracy for instructions: the
//! result moves by up to `max|x_block| / 254` per activation (measured errors: see
//! BENCHMARKS.md, "Kernel design measurements (GEMM and int8)"). `sdot` has no stable
//! intrinsic in Rust 1.95, so it is `asm!` inside `#[target_feature(enable = "dotprod")]`
//! functions. The GEMM of the same arithmetic is `dot_gemm.rs` (it quantises with
//! [`quantize`]).
//!
//! The activations are quantised to int8 in blocks of 32 (`d = max|x| / 127` per block,
//! `x_i = round(x / d)`, ties to even; the last block zero padded), then
//! `sdot v.4s, w.16b, x.4b[lane]` multiplies 4 weights of 4 outputs by 4 activations and
//! accumulates in i32, exactly. Per block, the i32 sums are converted (`scvtf`) and added
//! times `d` (times the 16 weight block scales in block-int8) to f32 accumulators. Two
//! panels per pass: per block of 32 `k`, 16 64-byte loads, 64 `sdot`, 8 `scvtf`, 8 `fmla`
//! and 12 other instructions, ~0.11 instructions per multiply-add, a fraction of the
//! widening path's or the f32 GEMV's (measured: see BENCHMARKS.md, "Kernel design
//! measurements (GEMM and int8)").
//!
//! Accuracy: quantising the activations changes the result by at most
//! `|scale| * sum_b d_b / 2 * sum_{k in b} |q[j, k]|` (per-tensor; block-int8: times the
//! block scale), about `max|x| / 254` per activation: the usual cost of int8 activations
//! (the same scheme as the `Q8_0` activations of llama.cpp; ONNX Runtime's dynamic
//! quantisation uses one scale per tensor). `offset * sum(x)` uses the f32 activations,
//! so Moonshine's large offsets (`|offset / scale|` up to 65) add no quantisation error.
//! Quantised activations are held on the stack, [`DOT_KC`] at a time (2 KiB + 256 B).

use super::{k_padded, Gemv, BLOCK_K, DOT_KC, PACK_NR};
use core::arch::aarch64::*;

/// Quantises `x` (at most [`DOT_KC`] values) in blocks of 32: `xq` gets
/// `round(x / d)` (ties to even; zero past `x.len()` up to the block end), `xd[b]` the
/// block's `d = max|x| / 127`. An all-zero block has `d = 0`; a block holding a NaN or
/// an infinity gets `d = NaN` or `inf` and zero codes, so its outputs become NaN.
pub(super) fn quantize(x: &[f32], xq: &mut [i8; DOT_KC], xd: &mut [f32; DOT_KC / BLOCK_K]) {
    for (blk, xb) in x.chunks(BLOCK_K).enumerate() {
        let mut t = [0.0f32; BLOCK_K];
        t[..xb.len()].copy_from_slice(xb);
        // SAFETY: `t` holds 32 values; block `blk` < DOT_KC / 32 of `xq` 32 bytes.
        unsafe {
            let v: [float32x4_t; 8] = core::array::from_fn(|i| vld1q_f32(t.as_ptr().add(4 * i)));
            let m = v.iter().fold(vdupq_n_f32(0.0), |m, &v| vmaxq_f32(m, vabsq_f32(v)));
            let amax = vmaxvq_f32(m);
            // x / d, not x * (127 / amax): no overflow for tiny blocks, |x / d| <= 127.
            let (d, live) =
                if amax > 0.0 && amax.is_finite() { (amax / 127.0, true) } else { (amax, false) };
            xd[blk] = d;
            let dv = vdupq_n_f32(d);
            let i: [int32x4_t; 8] = core::array::from_fn(|j| {
                if live {
                    vcvtnq_s32_f32(vdivq_f32(v[j], dv))
                } else {
                    vdupq_n_s32(0)
                }
            });
            let h: [int16x8_t; 4] = core::array::from_fn(|j| {
                vcombine_s16(vqmovn_s32(i[2 * j]), vqmovn_s32(i[2 * j + 1]))
            });
            let dst = xq.as_mut_ptr().add(blk * BLOCK_K);
            vst1q_s8(dst, vcombine_s8(vqmovn_s16(h[0]), vqmovn_s16(h[1])));
            vst1q_s8(dst.add(16), vcombine_s8(vqmovn_s16(h[2]), vqmovn_s16(h[3])));
        }
    }
}

/// Lines of one group (4 `k`) on the `sdot` path: 64 bytes of each panel (`$p` = 2:
/// v21..v28, 1: v21..v24), then one `sdot` per 4 outputs by lane `$l` of `$x` (the 4
/// quantised activations of the group) into the i32 accumulators v0..v7 (v0..v3).
macro_rules! sdot_group {
    (2, $x:literal, $l:literal) => {
        concat!(
            "ld1 {{v21.16b, v22.16b, v23.16b, v24.16b}}, [{p0}], #64\n",
            "ld1 {{v25.16b, v26.16b, v27.16b, v28.16b}}, [{p1}], #64\n",
            sdot_group!(@sdot "v0", "v21", $x, $l),
            sdot_group!(@sdot "v1", "v22", $x, $l),
            sdot_group!(@sdot "v2", "v23", $x, $l),
            sdot_group!(@sdot "v3", "v24", $x, $l),
            sdot_group!(@sdot "v4", "v25", $x, $l),
            sdot_group!(@sdot "v5", "v26", $x, $l),
            sdot_group!(@sdot "v6", "v27", $x, $l),
            sdot_group!(@sdot "v7", "v28", $x, $l),
        )
    };
    (1, $x:literal, $l:literal) => {
        concat!(
            "ld1 {{v21.16b, v22.16b, v23.16b, v24.16b}}, [{p0}], #64\n",
            sdot_group!(@sdot "v0", "v21", $x, $l),
            sdot_group!(@sdot "v1", "v22", $x, $l),
            sdot_group!(@sdot "v2", "v23", $x, $l),
            sdot_group!(@sdot "v3", "v24", $x, $l),
        )
    };
    (@sdot $acc:literal, $w:literal, $x:literal, $l:literal) => {
        concat!("sdot ", $acc, ".4s, ", $w, ".16b, ", $x, ".4b[", $l, "]\n")
    };
}

/// Lines of the 8 groups of one block of 32 `k`: the block's 32 codes into v16, v17
/// (`{xq}` post-incremented), its `d` broadcast into v18 (`{xd}`), the i32
/// accumulators zeroed, 8 groups of `sdot`, and the accumulators converted to f32.
macro_rules! sdot_block {
    ($p:tt, $($acc:literal),*) => {
        concat!(
            "ld1 {{v16.16b, v17.16b}}, [{xq}], #32\n",
            "ld1r {{v18.4s}}, [{xd}], #4\n",
            $("movi ", $acc, ".4s, #0\n",)*
            sdot_group!($p, "v16", "0"),
            sdot_group!($p, "v16", "1"),
            sdot_group!($p, "v16", "2"),
            sdot_group!($p, "v16", "3"),
            sdot_group!($p, "v17", "0"),
            sdot_group!($p, "v17", "1"),
            sdot_group!($p, "v17", "2"),
            sdot_group!($p, "v17", "3"),
            $("scvtf ", $acc, ".4s, ", $acc, ".4s\n",)*
        )
    };
}

/// `acc += f32(i32 sums) * d` (per-tensor): `fmla` by the broadcast `d` (v18).
macro_rules! scale_tensor {
    ($(($f:literal, $acc:literal)),*) => {
        concat!($("fmla ", $acc, ".4s, ", $f, ".4s, v18.4s\n",)*)
    };
}

/// `acc += f32(i32 sums) * (weight block scales * d)` (block-int8): the 16 scales of
/// each panel's block into v21.. (`{s0}`, `{s1}` post-incremented), times `d`, then
/// `fmla` by vector.
macro_rules! scale_block {
    (2) => {
        concat!(
            "ld1 {{v21.4s, v22.4s, v23.4s, v24.4s}}, [{s0}], #64\n",
            "ld1 {{v25.4s, v26.4s, v27.4s, v28.4s}}, [{s1}], #64\n",
            scale_block!(@one "v0", "v21", "v8"),
            scale_block!(@one "v1", "v22", "v9"),
            scale_block!(@one "v2", "v23", "v10"),
            scale_block!(@one "v3", "v24", "v11"),
            scale_block!(@one "v4", "v25", "v12"),
            scale_block!(@one "v5", "v26", "v13"),
            scale_block!(@one "v6", "v27", "v14"),
            scale_block!(@one "v7", "v28", "v15"),
        )
    };
    (1) => {
        concat!(
            "ld1 {{v21.4s, v22.4s, v23.4s, v24.4s}}, [{s0}], #64\n",
            scale_block!(@one "v0", "v21", "v8"),
            scale_block!(@one "v1", "v22", "v9"),
            scale_block!(@one "v2", "v23", "v10"),
            scale_block!(@one "v3", "v24", "v11"),
        )
    };
    (@one $f:literal, $s:literal, $acc:literal) => {
        concat!(
            "fmul ", $s, ".4s, ", $s, ".4s, v18.4s\n",
            "fmla ", $acc, ".4s, ", $f, ".4s, ", $s, ".4s\n",
        )
    };
}

/// The `sdot` loop over `{n}` blocks of 32 `k` (`n >= 1`) for `$p` panels: per block
/// [`sdot_block!`] into the i32 accumulators `$i`, then `$scale` adds them to the f32
/// accumulators. `[$ptr]` are the pointers the loop advances (`inout` registers of the
/// same names); the accumulator operands follow, then the clobbers beyond those every
/// kernel has (`$i`, v16..v18 and v21..v24).
macro_rules! sdot_loop {
    ($p:tt, [$($i:tt),*], $scale:expr, $n:expr, [$($ptr:ident),*], $($operands:tt)*) => {
        core::arch::asm!(
            "2:",
            sdot_block!($p, $($i),*),
            $scale,
            "subs {n}, {n}, #1",
            "b.ne 2b",
            $($ptr = inout(reg) $ptr => _,)*
            n = inout(reg) $n => _,
            $($operands)*
            $(out($i) _,)*
            out("v16") _, out("v17") _, out("v18") _,
            out("v21") _, out("v22") _, out("v23") _, out("v24") _,
            options(nostack, readonly),
        )
    };
}

/// Two panels (32 outputs) over `blocks` blocks of 32 `k` (`blocks >= 1`): `acc[q][i]`
/// accumulates outputs `4i..4i + 4` of panel `q` in f32. `ws`: the block-int8 weight
/// scales of the two panels from the first block on, `None` per tensor.
///
/// # Safety
/// The CPU implements dotprod; `xq` readable for `32 * blocks` bytes, `xd` for
/// `blocks` values, `p0` and `p1` for `512 * blocks` bytes, `ws` pointers for
/// `16 * blocks` values each.
#[target_feature(enable = "dotprod")]
unsafe fn sdot_2x16(
    acc: &mut [[float32x4_t; 4]; 2],
    xq: *const i8,
    xd: *const f32,
    [p0, p1]: [*const i8; 2],
    ws: Option<[*const f32; 2]>,
    blocks: usize,
) {
    // The loop with the lines scaling a block's sums and the pointers of the format.
    macro_rules! two_panels {
        ($scale:expr $(, $s:ident)*) => {
            sdot_loop!(
                2, ["v0", "v1", "v2", "v3", "v4", "v5", "v6", "v7"], $scale, blocks,
                [xq, xd, p0, p1 $(, $s)*],
                inout("v8") acc[0][0], inout("v9") acc[0][1], inout("v10") acc[0][2], inout("v11") acc[0][3],
                inout("v12") acc[1][0], inout("v13") acc[1][1], inout("v14") acc[1][2], inout("v15") acc[1][3],
                out("v25") _, out("v26") _, out("v27") _, out("v28") _,
            )
        };
    }
    // SAFETY: reads stay within the extents of this function's contract; only the
    // declared registers are written.
    unsafe {
        match ws {
            None => two_panels!(scale_tensor!(
                ("v0", "v8"),
                ("v1", "v9"),
                ("v2", "v10"),
                ("v3", "v11"),
                ("v4", "v12"),
                ("v5", "v13"),
                ("v6", "v14"),
                ("v7", "v15")
            )),
            Some([s0, s1]) => two_panels!(scale_block!(2), s0, s1),
        }
    }
}

/// One panel (16 outputs): as [`sdot_2x16`] for one panel.
///
/// # Safety
/// As [`sdot_2x16`] for one panel.
#[target_feature(enable = "dotprod")]
unsafe fn sdot_1x16(
    acc: &mut [[float32x4_t; 4]; 1],
    xq: *const i8,
    xd: *const f32,
    [p0]: [*const i8; 1],
    ws: Option<[*const f32; 1]>,
    blocks: usize,
) {
    // As in `sdot_2x16`, for one panel.
    macro_rules! one_panel {
        ($scale:expr $(, $s:ident)*) => {
            sdot_loop!(
                1, ["v0", "v1", "v2", "v3"], $scale, blocks, [xq, xd, p0 $(, $s)*],
                inout("v8") acc[0][0], inout("v9") acc[0][1], inout("v10") acc[0][2], inout("v11") acc[0][3],
            )
        };
    }
    // SAFETY: as in `sdot_2x16`.
    unsafe {
        match ws {
            None => {
                one_panel!(scale_tensor!(("v0", "v8"), ("v1", "v9"), ("v2", "v10"), ("v3", "v11")))
            }
            Some([s0]) => one_panel!(scale_block!(1), s0),
        }
    }
}

/// An inner loop over `P` panels: `(accumulators, codes, block scales of the
/// activations, panels, weight block scales, blocks)`: [`sdot_2x16`] / [`sdot_1x16`], or
/// the kernels of `dot_widen.rs` (cores without dotprod).
pub(super) type DotKernel<const P: usize> = unsafe fn(
    &mut [[float32x4_t; 4]; P],
    *const i8,
    *const f32,
    [*const i8; P],
    Option<[*const f32; P]>,
    usize,
);

/// `P` panels (`16 * P` outputs) over the quantised chunk: the full blocks straight
/// from the packed weights, a partial last block (the packed panels end at the next
/// group, not the next block) from a zero-padded copy of its groups.
///
/// # Safety
/// The CPU implements what `kernel` needs; `panels[q]` readable for the chunk's packed
/// groups (`16 * k_padded(kc)` bytes), `ws[q]` for its `16 * kc.div_ceil(32)` scales;
/// `xq` / `xd` hold the chunk's `kc.div_ceil(32)` blocks.
#[inline(always)]
pub(super) unsafe fn dot_panels<const P: usize>(
    kc: usize,
    xq: &[i8; DOT_KC],
    xd: &[f32; DOT_KC / BLOCK_K],
    panels: [*const i8; P],
    ws: Option<[*const f32; P]>,
    acc: &mut [[float32x4_t; 4]; P],
    kernel: DotKernel<P>,
) {
    let full = kc / BLOCK_K;
    // SAFETY: per this function's contract.
    unsafe {
        if full > 0 {
            kernel(acc, xq.as_ptr(), xd.as_ptr(), panels, ws, full);
        }
        if !kc.is_multiple_of(BLOCK_K) {
            let bytes = (k_padded(kc) - full * BLOCK_K) * PACK_NR;
            let mut tail = [[0i8; BLOCK_K * PACK_NR]; P];
            for (t, &p) in tail.iter_mut().zip(&panels) {
                core::ptr::copy_nonoverlapping(
                    p.add(full * BLOCK_K * PACK_NR),
                    t.as_mut_ptr(),
                    bytes,
                );
            }
            let tp: [*const i8; P] = core::array::from_fn(|q| tail[q].as_ptr());
            let ws = ws.map(|w| w.map(|w| w.add(full * PACK_NR)));
            let (xq, xd) = (xq.as_ptr().add(full * BLOCK_K), xd.as_ptr().add(full));
            kernel(acc, xq, xd, tp, ws, 1);
        }
    }
}

/// The `sdot` GEMV of both formats.
///
/// # Safety
/// The CPU implements dotprod; the contract of
/// [`QuantKernels::gemv_i8_dot`](super::QuantKernels::gemv_i8_dot) holds (checked by the
/// entry point), `n, k >= 1`.
#[target_feature(enable = "dotprod")]
pub(super) unsafe fn gemv(g: Gemv<'_>, y: &mut [f32]) {
    // The body's unsafe blocks rely on this function's contract; the CPU implements
    // dotprod, which the `sdot` kernels need.
    dot_gemv!(g, y, sdot_2x16, sdot_1x16)
}

/// The body of a GEMV of both formats (`$g: Gemv`, `$y: &mut [f32]`) on the inner loops
/// `$kernel2` (two panels) and `$kernel1` (one panel), [`DotKernel`]s: the activations
/// quantised a chunk at a time, the panels walked in pairs, the epilogue. A macro, so that
/// the body (and its closures) gets the target features of the function it is expanded in
/// (`sdot` kernels inlined into [`gemv`]); to be expanded in an `unsafe fn` whose contract
/// is [`QuantKernels::gemv_i8_dot`](super::QuantKernels::gemv_i8_dot)'s (checked by the
/// entry point, `n, k >= 1`) on a CPU that implements what the kernels need.
macro_rules! dot_gemv {
    ($g:expr, $y:expr, $kernel2:expr, $kernel1:expr) => {{
        use core::arch::aarch64::*;
        use $crate::kernels::quant::dot::{dot_panels, quantize, DotKernel};
        use $crate::kernels::quant::{
            finish, k_padded, panel_pairs, Gemv, QuantFormat, QuantWeights, BLOCK_K, DOT_KC,
            PACK_NR,
        };
        let (kernel2, kernel1): (DotKernel<2>, DotKernel<1>) = ($kernel2, $kernel1);
        let y: &mut [f32] = $y;
        let Gemv { n, k, x, w: QuantWeights { packed: b, format, bias } } = $g;
        let stride = PACK_NR * k_padded(k);
        let nb = k.div_ceil(BLOCK_K);
        let mut xq = [0i8; DOT_KC];
        let mut xd = [0.0f32; DOT_KC / BLOCK_K];
        y.fill(0.0);
        for c0 in (0..k).step_by(DOT_KC) {
            let kc = (k - c0).min(DOT_KC);
            quantize(&x[c0..c0 + kc], &mut xq, &mut xd);
            panel_pairs(n, |p, cols, two| {
                let col0 = p * PACK_NR;
                // The partial sums of earlier chunks (y is zero before the first).
                let mut t = [0.0f32; 2 * PACK_NR];
                t[..cols].copy_from_slice(&y[col0..col0 + cols]);
                // SAFETY: the contract: b holds the packed panels (stride bytes each), of
                // which p and, when `two`, p + 1 exist; the chunk's groups start at byte
                // c0 * 16 of each (c0 is a multiple of 32) and end within it. For blocks
                // (k a multiple of 32, nb = k / 32), the panels' scales follow from
                // (p * nb + c0 / 32) * 16. `t` holds 32 values.
                unsafe {
                    let w = b.as_ptr().add(p * stride + c0 * PACK_NR);
                    let ws = match format {
                        QuantFormat::Block(s) => {
                            Some(s.as_ptr().add((p * nb + c0 / BLOCK_K) * PACK_NR))
                        }
                        QuantFormat::PerTensor { .. } => None,
                    };
                    let tp = t.as_mut_ptr();
                    if two {
                        let mut acc: [[float32x4_t; 4]; 2] = core::array::from_fn(|q| {
                            let v = vld1q_f32_x4(tp.add(16 * q));
                            [v.0, v.1, v.2, v.3]
                        });
                        let ws = ws.map(|s| [s, s.add(nb * PACK_NR)]);
                        dot_panels::<2>(kc, &xq, &xd, [w, w.add(stride)], ws, &mut acc, kernel2);
                        for (q, a) in acc.iter().enumerate() {
                            vst1q_f32_x4(tp.add(16 * q), float32x4x4_t(a[0], a[1], a[2], a[3]));
                        }
                    } else {
                        let v = vld1q_f32_x4(tp);
                        let mut acc = [[v.0, v.1, v.2, v.3]];
                        dot_panels::<1>(kc, &xq, &xd, [w], ws.map(|s| [s]), &mut acc, kernel1);
                        let a = acc[0];
                        vst1q_f32_x4(tp, float32x4x4_t(a[0], a[1], a[2], a[3]));
                    }
                }
                y[col0..col0 + cols].copy_from_slice(&t[..cols]);
            });
        }
        finish(y, format, format.scale_shift(x).1, bias);
    }};
}
pub(super) use dot_gemv;
