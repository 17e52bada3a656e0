//! NEON: the widening path (every ARMv8-A core), and the [`Neon`] implementation of
//! [`QuantKernels`].
//!
//! One `tbl` with a constant index vector picks, from 16 packed bytes (4 outputs x 4 `k`),
//! the 4 weights of one `k` and puts each in the top byte of a 32-bit lane (the other
//! bytes come out zero: out-of-range indices), so the lane holds `q * 2^24`;
//! `scvtf v.4s, v.4s, #24` (fixed-point conversion) then yields `f32(q)` exactly. Two
//! instructions per 4 weights, where `sxtl`/`sxtl2` to i16, again to i32, then `scvtf`
//! take 10 per 16. The converted weights meet `x[k]` from a lane of the activation vector
//! (`fmla v.4s, v.4s, v.s[lane]`), accumulating `x · q` in f32.
//!
//! - **GEMV** (`m = 1`, the decoder step): two panels (32 outputs) at a time; per group of
//!   4 `k`: one `ldr` of `x`, two 64-byte `ld1`, 32 `tbl`, 32 `scvtf`, 32 `fmla`. The inner
//!   loop is `asm!` (LLVM's version keeps 8 accumulators, 4 indices and 8 packed vectors
//!   live and spills every group; measured: see BENCHMARKS.md, "Kernel design measurements
//!   (GEMM and int8)"). Three instructions per 4 multiply-adds is more than the f32 GEMV's
//!   one (plus loads), but a quarter of the bytes: a decoder step is bound by memory
//!   bandwidth on real cores, and there int8 wins.
//! - **GEMM** (`m > 1`, the encoder): each panel is converted once, [`KC`] = 256 `k` values
//!   at a time, into an f32 buffer on the stack in the f32 packed-B layout, and the f32
//!   packed GEMM
//!   ([`GemmKernels::gemm_packed_b`](crate::kernels::gemm::GemmKernels::gemm_packed_b), the
//!   NEON 5x16 micro-kernel) runs on it for every row, [`MC`](super::MC) = 80 rows per call
//!   ([`gemm_converted`]). Per tensor the conversion dequantises each weight (`fmla`:
//!   `q * scale + offset`); the bias goes into the first call and partial sums of later `k`
//!   blocks are added into the output. Stack: 16 KiB (buffer) + 5 KiB (partial products).
//!   The conversion is amortised over the rows: on the encoder's shapes the int8 GEMM costs
//!   a few percent more instructions than the f32 one (measured: see BENCHMARKS.md, "Kernel
//!   design measurements (GEMM and int8)").
//!
//! Block-int8 uses the same steps: the GEMV keeps per-block accumulators and adds them
//! times the 16 block scales (`fmla` by vector) every 32 `k`; the GEMM multiplies the
//! converted weights by their block scale while converting (one rounding per weight, as
//! dequantising to f32 would) and passes the bias to the f32 GEMM.
//!
//! The widening path is the backend's default ([`QuantKernels::gemv_i8`]): exact products,
//! results independent of the CPU. The `sdot` path (`dot.rs`) is opt-in
//! ([`QuantKernels::gemv_i8_dot`]), since it quantises the activations.

use super::{
    finish, gemm_converted, k_padded, panel_pairs, Dequant, Gemv, QuantFormat, QuantGemm,
    QuantKernels, QuantWeights, BLOCK_K, GROUP, KC, PACK_NR, QUANT_KR,
};
use crate::kernels::{cpu, Neon, StridedMut};
use core::arch::aarch64::*;

/// `tbl` indices taking byte `kk` of each 4-byte lane into that lane's top byte (the
/// three other bytes get index 0xFF, out of range, hence zero): `q[4w + kk] << 24` in
/// lane `w`.
const fn widen_index(kk: u8) -> [u8; 16] {
    let mut t = [0xFF; 16];
    let mut w = 0;
    while w < 4 {
        t[4 * w + 3] = 4 * w as u8 + kk;
        w += 1;
    }
    t
}

const WIDEN: [[u8; 16]; 4] = [widen_index(0), widen_index(1), widen_index(2), widen_index(3)];

/// The 4 `tbl` index vectors.
#[inline(always)]
fn widen_indices() -> [uint8x16_t; 4] {
    // SAFETY: each `WIDEN` row is 16 readable bytes.
    core::array::from_fn(|kk| unsafe { vld1q_u8(WIDEN[kk].as_ptr()) })
}

/// `f32(q)` of the 4 weights selected by `idx` from `r` (exact: `scvtf` of `q * 2^24`
/// with 24 fraction bits).
#[inline(always)]
fn widen(r: int8x16_t, idx: uint8x16_t) -> float32x4_t {
    // SAFETY: NEON is part of the aarch64 baseline this module is compiled for.
    unsafe { vcvtq_n_f32_s32::<24>(vreinterpretq_s32_s8(vqtbl1q_s8(r, idx))) }
}

/// One group (4 `k`) of `P` panels: `acc[q][i] += f32(q[4i..4i+4, k + l]) * x[l]` for
/// `l < 4`, `x` holding the group's 4 activations.
///
/// # Safety
/// `w.add(q * stride)` readable for 64 bytes for `q < P`.
#[inline(always)]
unsafe fn group<const P: usize>(
    acc: &mut [[float32x4_t; 4]; P],
    x: float32x4_t,
    w: *const i8,
    stride: usize,
    idx: &[uint8x16_t; 4],
) {
    for (q, acc) in acc.iter_mut().enumerate() {
        let r = vld1q_s8_x4(w.add(q * stride));
        let r = [r.0, r.1, r.2, r.3];
        macro_rules! lane {
            ($l:literal) => {
                for i in 0..4 {
                    acc[i] = vfmaq_laneq_f32::<$l>(acc[i], widen(r[i], idx[$l]), x);
                }
            };
        }
        lane!(0);
        lane!(1);
        lane!(2);
        lane!(3);
    }
}

/// Lines converting and accumulating one chunk of weight vectors for lane `$l` of the
/// activations (v16), the `tbl` index of that lane being `$idx`: for each
/// `(accumulator, packed bytes, temporary)`, `tbl` (the lane's byte of each output
/// into the top byte of a 32-bit lane), `scvtf #24` (exact `f32(q)`), `fmla` by lane.
/// All `tbl` first, then all `scvtf`, then all `fmla`, so dependent instructions are
/// four apart (in-order cores such as the Cortex-A53 stall otherwise).
macro_rules! widen_chunk {
    ($l:literal, $idx:literal; $(($acc:literal, $raw:literal, $t:literal)),*) => {
        concat!(
            $("tbl ", $t, ".16b, {{", $raw, ".16b}}, ", $idx, ".16b\n",)*
            $("scvtf ", $t, ".4s, ", $t, ".4s, #24\n",)*
            $("fmla ", $acc, ".4s, ", $t, ".4s, v16.s[", $l, "]\n",)*
        )
    };
}

/// Lines of one group (4 `k`) of the two-panel GEMV: the 4 activations into v16
/// (`{x}` post-incremented), 64 bytes of each panel into v21..v24 and v25..v28, then
/// for each lane 8 `tbl` / `scvtf` / `fmla` into the accumulators v0..v7 (`tbl`
/// indices in v17..v20, temporaries v8..v15).
macro_rules! gemv_group {
    () => {
        concat!(
            "ldr q16, [{x}], #16\n",
            "ld1 {{v21.16b, v22.16b, v23.16b, v24.16b}}, [{p0}], #64\n",
            "ld1 {{v25.16b, v26.16b, v27.16b, v28.16b}}, [{p1}], #64\n",
            gemv_group!(@lane "0", "v17"),
            gemv_group!(@lane "1", "v18"),
            gemv_group!(@lane "2", "v19"),
            gemv_group!(@lane "3", "v20"),
        )
    };
    (@lane $l:literal, $idx:literal) => {
        concat!(
            widen_chunk!($l, $idx;
                ("v0", "v21", "v8"), ("v1", "v22", "v9"),
                ("v2", "v23", "v10"), ("v3", "v24", "v11")),
            widen_chunk!($l, $idx;
                ("v4", "v25", "v12"), ("v5", "v26", "v13"),
                ("v6", "v27", "v14"), ("v7", "v28", "v15")),
        )
    };
}

/// The two-panel per-tensor GEMV inner loop over `pairs` pairs of groups
/// (`pairs >= 1`): `acc[4q + i]` accumulates outputs `4i..4i + 4` of panel `q`. In
/// assembly because LLVM's version of the same loop keeps too many values live
/// (accumulators, indices, 8 packed vectors) and spills and reloads every group.
///
/// # Safety
/// `x` readable for `8 * pairs` values, `p0` and `p1` for `128 * pairs` bytes.
#[inline(always)]
unsafe fn gemv_2x16(
    acc: &mut [float32x4_t; 8],
    x: *const f32,
    p0: *const i8,
    p1: *const i8,
    pairs: usize,
    idx: &[uint8x16_t; 4],
) {
    core::arch::asm!(
        "2:",
        gemv_group!(),
        gemv_group!(),
        "subs {n}, {n}, #1",
        "b.ne 2b",
        x = inout(reg) x => _,
        p0 = inout(reg) p0 => _,
        p1 = inout(reg) p1 => _,
        n = inout(reg) pairs => _,
        inout("v0") acc[0], inout("v1") acc[1], inout("v2") acc[2], inout("v3") acc[3],
        inout("v4") acc[4], inout("v5") acc[5], inout("v6") acc[6], inout("v7") acc[7],
        in("v17") idx[0], in("v18") idx[1], in("v19") idx[2], in("v20") idx[3],
        out("v8") _, out("v9") _, out("v10") _, out("v11") _,
        out("v12") _, out("v13") _, out("v14") _, out("v15") _, out("v16") _,
        out("v21") _, out("v22") _, out("v23") _, out("v24") _,
        out("v25") _, out("v26") _, out("v27") _, out("v28") _,
        options(nostack, readonly),
    );
}

/// The two-panel block-int8 GEMV over `blocks` blocks of 32 `k` (`blocks >= 1`): per
/// block, the partial sums in v0..v7 start at zero, run 8 groups, then
/// `acc += part * scales` with the block's 16 scales of each panel (`{s0}`, `{s1}`,
/// post-incremented). `acc` (32 values: panel 0 then panel 1) stays in memory, as the
/// group steps use every other register; that costs 6 loads and stores per block of
/// ~800 instructions.
///
/// # Safety
/// `x` readable for `32 * blocks` values, `p0` and `p1` for `512 * blocks` bytes,
/// `s0` and `s1` for `16 * blocks` values; `acc` points to 32 writable values.
#[inline(always)]
unsafe fn gemv_block_2x16(
    acc: *mut f32,
    x: *const f32,
    [p0, p1]: [*const i8; 2],
    [s0, s1]: [*const f32; 2],
    blocks: usize,
    idx: &[uint8x16_t; 4],
) {
    core::arch::asm!(
        "2:",
        "movi v0.4s, #0",
        "movi v1.4s, #0",
        "movi v2.4s, #0",
        "movi v3.4s, #0",
        "movi v4.4s, #0",
        "movi v5.4s, #0",
        "movi v6.4s, #0",
        "movi v7.4s, #0",
        "mov {g}, #4",
        "3:",
        gemv_group!(),
        gemv_group!(),
        "subs {g}, {g}, #1",
        "b.ne 3b",
        "ld1 {{v21.4s, v22.4s, v23.4s, v24.4s}}, [{s0}], #64",
        "ld1 {{v25.4s, v26.4s, v27.4s, v28.4s}}, [{s1}], #64",
        "ld1 {{v8.4s, v9.4s, v10.4s, v11.4s}}, [{a0}]",
        "ld1 {{v12.4s, v13.4s, v14.4s, v15.4s}}, [{a1}]",
        "fmla v8.4s, v0.4s, v21.4s",
        "fmla v9.4s, v1.4s, v22.4s",
        "fmla v10.4s, v2.4s, v23.4s",
        "fmla v11.4s, v3.4s, v24.4s",
        "fmla v12.4s, v4.4s, v25.4s",
        "fmla v13.4s, v5.4s, v26.4s",
        "fmla v14.4s, v6.4s, v27.4s",
        "fmla v15.4s, v7.4s, v28.4s",
        "st1 {{v8.4s, v9.4s, v10.4s, v11.4s}}, [{a0}]",
        "st1 {{v12.4s, v13.4s, v14.4s, v15.4s}}, [{a1}]",
        "subs {n}, {n}, #1",
        "b.ne 2b",
        x = inout(reg) x => _,
        p0 = inout(reg) p0 => _,
        p1 = inout(reg) p1 => _,
        s0 = inout(reg) s0 => _,
        s1 = inout(reg) s1 => _,
        a0 = in(reg) acc,
        a1 = in(reg) acc.add(PACK_NR),
        n = inout(reg) blocks => _,
        g = out(reg) _,
        in("v17") idx[0], in("v18") idx[1], in("v19") idx[2], in("v20") idx[3],
        out("v0") _, out("v1") _, out("v2") _, out("v3") _,
        out("v4") _, out("v5") _, out("v6") _, out("v7") _,
        out("v8") _, out("v9") _, out("v10") _, out("v11") _,
        out("v12") _, out("v13") _, out("v14") _, out("v15") _, out("v16") _,
        out("v21") _, out("v22") _, out("v23") _, out("v24") _,
        out("v25") _, out("v26") _, out("v27") _, out("v28") _,
        options(nostack),
    );
}

/// `x · q_j` for the `16 * P` outputs of `P` consecutive panels (per-tensor format),
/// stored to `out[..16 * P]`. Two panels run the assembly loop over pairs of groups;
/// an odd last group, the `k % 4` tail (activations zero padded; the packed weights are
/// zero there) and a single panel run the same steps in intrinsics.
///
/// # Safety
/// `x` readable for `k` values; `panels` for `P * stride` bytes, `stride` being the
/// packed panel length `16 * k_padded(k)`.
#[inline(always)]
unsafe fn dot_tensor<const P: usize>(
    k: usize,
    x: *const f32,
    panels: *const i8,
    stride: usize,
    out: &mut [f32; 32],
) {
    let idx = widen_indices();
    let mut acc = [[vdupq_n_f32(0.0); 4]; P];
    let full = k / QUANT_KR;
    let mut g = 0;
    if P == 2 && full >= 2 {
        let mut a = [vdupq_n_f32(0.0); 8];
        gemv_2x16(&mut a, x, panels, panels.add(stride), full / 2, &idx);
        acc[0] = [a[0], a[1], a[2], a[3]];
        acc[P - 1] = [a[4], a[5], a[6], a[7]];
        g = full / 2 * 2;
    }
    while g < full {
        let xv = vld1q_f32(x.add(QUANT_KR * g));
        group::<P>(&mut acc, xv, panels.add(GROUP * g), stride, &idx);
        g += 1;
    }
    if !k.is_multiple_of(QUANT_KR) {
        let mut t = [0.0f32; QUANT_KR];
        core::ptr::copy_nonoverlapping(x.add(QUANT_KR * full), t.as_mut_ptr(), k % QUANT_KR);
        group::<P>(&mut acc, vld1q_f32(t.as_ptr()), panels.add(GROUP * full), stride, &idx);
    }
    for (q, acc) in acc.iter().enumerate() {
        vst1q_f32_x4(
            out.as_mut_ptr().add(q * PACK_NR),
            float32x4x4_t(acc[0], acc[1], acc[2], acc[3]),
        );
    }
}

/// `sum_k x[k] q[j, k] scale[j, k / 32]` for the outputs of `P` consecutive panels
/// (block format; `k` a multiple of 32), stored to `out[..16 * P]`.
///
/// # Safety
/// As [`dot_tensor`]; `scales` readable for the `P` panels' packed scales
/// (`16 * k / 32` values each).
#[inline(always)]
unsafe fn dot_block<const P: usize>(
    k: usize,
    x: *const f32,
    panels: *const i8,
    stride: usize,
    scales: *const f32,
    out: &mut [f32; 32],
) {
    let idx = widen_indices();
    let nb = k / BLOCK_K;
    *out = [0.0; 32];
    if P == 2 && nb > 0 {
        let (p1, s1) = (panels.add(stride), scales.add(nb * PACK_NR));
        return gemv_block_2x16(out.as_mut_ptr(), x, [panels, p1], [scales, s1], nb, &idx);
    }
    let mut acc = [[vdupq_n_f32(0.0); 4]; P];
    for blk in 0..nb {
        let mut part = [[vdupq_n_f32(0.0); 4]; P];
        for g in 0..BLOCK_K / QUANT_KR {
            let kk = blk * BLOCK_K + g * QUANT_KR;
            group::<P>(&mut part, vld1q_f32(x.add(kk)), panels.add(kk * PACK_NR), stride, &idx);
        }
        for q in 0..P {
            let s = vld1q_f32_x4(scales.add((q * nb + blk) * PACK_NR));
            acc[q][0] = vfmaq_f32(acc[q][0], part[q][0], s.0);
            acc[q][1] = vfmaq_f32(acc[q][1], part[q][1], s.1);
            acc[q][2] = vfmaq_f32(acc[q][2], part[q][2], s.2);
            acc[q][3] = vfmaq_f32(acc[q][3], part[q][3], s.3);
        }
    }
    for (q, acc) in acc.iter().enumerate() {
        vst1q_f32_x4(
            out.as_mut_ptr().add(q * PACK_NR),
            float32x4x4_t(acc[0], acc[1], acc[2], acc[3]),
        );
    }
}

/// The NEON GEMV of both formats.
///
/// # Safety
/// The contract of [`QuantKernels::gemv_i8`] holds (checked by the entry point),
/// `n, k >= 1`.
pub(super) unsafe fn gemv(g: Gemv<'_>, y: &mut [f32]) {
    let Gemv { n, k, x, w: QuantWeights { packed: b, format, bias } } = g;
    let stride = PACK_NR * k_padded(k);
    let nb = k / BLOCK_K;
    let shift = format.scale_shift(x).1;
    panel_pairs(n, |p, cols, two| {
        let col0 = p * PACK_NR;
        let mut t = [0.0f32; 2 * PACK_NR];
        // SAFETY: the contract: x holds k values, b the packed panels (stride bytes each) of
        // which p and, when `two`, p + 1 exist; for blocks, the scales of those panels
        // (16 * nb each) follow from p * nb * 16.
        unsafe {
            let (xp, w) = (x.as_ptr(), b.as_ptr().add(p * stride));
            match (format, two) {
                (QuantFormat::PerTensor { .. }, true) => dot_tensor::<2>(k, xp, w, stride, &mut t),
                (QuantFormat::PerTensor { .. }, false) => dot_tensor::<1>(k, xp, w, stride, &mut t),
                (QuantFormat::Block(s), true) => {
                    let s = s.as_ptr().add(p * nb * PACK_NR);
                    dot_block::<2>(k, xp, w, stride, s, &mut t)
                }
                (QuantFormat::Block(s), false) => {
                    let s = s.as_ptr().add(p * nb * PACK_NR);
                    dot_block::<1>(k, xp, w, stride, s, &mut t)
                }
            }
        }
        let y = &mut y[col0..col0 + cols];
        y.copy_from_slice(&t[..cols]);
        finish(y, format, shift, bias.map(|b| &b[col0..col0 + cols]));
    });
}

/// The NEON conversion of [`gemm_converted`]: per group, one 64-byte load, 16 `tbl`, 16
/// `scvtf`, 16 `fmul` by the block scales or 16 `fmla` (per tensor: `q * scale + offset`,
/// one rounding), 4 stores of 16 values.
pub(super) fn convert(src: &[i8], rows: usize, dequant: Dequant<'_>, dst: &mut [f32]) {
    assert!(src.len() >= k_padded(rows) * PACK_NR && dst.len() >= rows * PACK_NR);
    if let Dequant::Block(s) = dequant {
        assert!(s.len() >= rows.div_ceil(BLOCK_K) * PACK_NR);
    }
    let idx = widen_indices();
    let groups = rows.div_ceil(QUANT_KR);
    for g in 0..groups {
        // SAFETY: group g < k_padded(rows) / 4 lies inside `src` (64 bytes); the
        // scales of block g * 4 / 32 < rows.div_ceil(32) inside `s` (asserted above).
        let f: [float32x4x4_t; QUANT_KR] = unsafe {
            let r = vld1q_s8_x4(src.as_ptr().add(g * GROUP));
            let r = [r.0, r.1, r.2, r.3];
            let mut f: [float32x4x4_t; QUANT_KR] = core::array::from_fn(|kk| {
                float32x4x4_t(
                    widen(r[0], idx[kk]),
                    widen(r[1], idx[kk]),
                    widen(r[2], idx[kk]),
                    widen(r[3], idx[kk]),
                )
            });
            match dequant {
                Dequant::Block(s) => {
                    let s = vld1q_f32_x4(s.as_ptr().add((g * QUANT_KR / BLOCK_K) * PACK_NR));
                    for f in &mut f {
                        *f = float32x4x4_t(
                            vmulq_f32(f.0, s.0),
                            vmulq_f32(f.1, s.1),
                            vmulq_f32(f.2, s.2),
                            vmulq_f32(f.3, s.3),
                        );
                    }
                }
                Dequant::Affine { scale, offset } => {
                    let (s, o) = (vdupq_n_f32(scale), vdupq_n_f32(offset));
                    for f in &mut f {
                        *f = float32x4x4_t(
                            vfmaq_f32(o, f.0, s),
                            vfmaq_f32(o, f.1, s),
                            vfmaq_f32(o, f.2, s),
                            vfmaq_f32(o, f.3, s),
                        );
                    }
                }
            }
            f
        };
        let valid = (rows - g * QUANT_KR).min(QUANT_KR);
        for (kk, f) in f.iter().enumerate().take(valid) {
            // SAFETY: row g * 4 + kk < rows: 16 values inside `dst` (asserted above).
            unsafe { vst1q_f32_x4(dst.as_mut_ptr().add((g * QUANT_KR + kk) * PACK_NR), *f) };
        }
    }
}

impl QuantKernels for Neon {
    unsafe fn gemv_i8_unchecked(x: &[f32], w: QuantWeights<'_>, y: &mut [f32]) {
        // SAFETY: forwarded contract (checked by the entry point, n, k >= 1).
        unsafe { gemv(Gemv::new(x, w, y), y) }
    }

    unsafe fn gemm_i8_unchecked(g: QuantGemm, a: &[f32], w: QuantWeights<'_>, c: StridedMut<'_>) {
        gemm_converted::<Self, 1, KC>(g, a, w, c, convert)
    }

    unsafe fn gemm_i8_dot_unchecked(
        g: QuantGemm,
        a: &[f32],
        w: QuantWeights<'_>,
        c: StridedMut<'_>,
    ) {
        if cpu::aarch64_dotprod() {
            // SAFETY: the CPU implements dotprod (checked just above); the entry point
            // checked the contract, m, n, k >= 1.
            unsafe { super::dot_gemm::gemm(g, a, w, c) }
        } else {
            // SAFETY: forwarded contract (checked by the entry point, m, n, k >= 1).
            unsafe { super::dot_widen::gemm(g, a, w, c) }
        }
    }

    unsafe fn gemm_i8_mmla_unchecked(
        g: QuantGemm,
        a: &[f32],
        w: QuantWeights<'_>,
        c: StridedMut<'_>,
    ) {
        if cpu::aarch64_i8mm() {
            // SAFETY: the CPU implements i8mm (checked just above); the entry point
            // checked the contract, m, n, k >= 1.
            unsafe { super::mmla_gemm::gemm(g, a, w, c) }
        } else {
            // SAFETY: forwarded contract.
            unsafe { Self::gemm_i8_dot_unchecked(g, a, w, c) }
        }
    }

    unsafe fn gemv_i8_dot_unchecked(x: &[f32], w: QuantWeights<'_>, y: &mut [f32]) {
        if cpu::aarch64_dotprod() {
            // SAFETY: the CPU implements dotprod (checked just above); the entry point
            // checked the contract, n, k >= 1.
            unsafe { super::dot::gemv(Gemv::new(x, w, y), y) }
        } else {
            // SAFETY: forwarded contract (checked by the entry point, n, k >= 1).
            unsafe { super::dot_widen::gemv(Gemv::new(x, w, y), y) }
        }
    }
}
