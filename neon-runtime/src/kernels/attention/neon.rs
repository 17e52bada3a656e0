//! The NEON attention: 4 query rows at once (and single rows for the remainder, as in a
//! decoder step) against blocks of 4 keys: the 16 dot products of a 4 x 4 block share
//! every `q` and `k` load (an `asm!` loop over 8 values per step: 8 `ldp` with
//! post-increment, 32 `fmla`), and each `v` row is loaded once per block for the 4
//! queries, the probabilities entering as lanes (`asm!` loop over 16 values per step: 4
//! `ld1` of the value rows and, per query, `ld1`, 16 `fmla` by element, `st1`). Written
//! with intrinsics, LLVM spent one address addition per pointer and step (82.9 M
//! instructions for Moonshine's encoder layer instead of 69.2 M). Steps of 4 values and a
//! scalar tail cover any `head_dim` (Moonshine's is 52). Keys past `n_i` in the last
//! blocks are masked to `-inf` (probability exactly 0) and read the last valid row, so
//! rows past `len` are never touched (they may hold anything, NaN included).

use super::{AttentionGeometry, AttentionKernels};
use crate::kernels::activation::neon::exp;
use crate::kernels::activation::scalar;
use crate::kernels::{Neon, StridedMut};
use core::arch::aarch64::*;
use core::arch::asm;
use core::array::from_fn;
use core::ops::Range;

/// `a + p[0] v[0] + p[1] v[1] + p[2] v[2] + p[3] v[3]` (`fmla` by element).
#[inline(always)]
fn fma4(a: float32x4_t, v: [float32x4_t; 4], p: float32x4_t) -> float32x4_t {
    // SAFETY: register-only NEON arithmetic; NEON is statically enabled (compile_error!
    // in kernels/mod.rs).
    unsafe {
        let a = vfmaq_laneq_f32::<0>(a, v[0], p);
        let a = vfmaq_laneq_f32::<1>(a, v[1], p);
        let a = vfmaq_laneq_f32::<2>(a, v[2], p);
        vfmaq_laneq_f32::<3>(a, v[3], p)
    }
}

/// `asm!` text zeroing the vector registers `v$r` (`movi`).
macro_rules! zero_regs {
    ($($r:literal),*) => {
        concat!($("movi v", $r, ".16b, #0\n"),*)
    };
}

/// `asm!` of a counted loop, the frame of the four loops below written once: `$pre`
/// once, `$body` `$n` times (`cbz` skips it for `$n = 0`, `subs` / `b.ne` close each
/// step), `$post` once. `{ $p: $ptr }` are the pointers the body advances (`inout`
/// registers named `$p`); the other operands follow as written.
macro_rules! counted_loop {
    (
        [$($pre:expr),* $(,)?],
        [$($body:expr),* $(,)?],
        [$($post:expr),* $(,)?],
        $n:expr, { $($p:ident: $ptr:expr),* $(,)? },
        $($operands:tt)*
    ) => {
        asm!(
            $($pre,)*
            "cbz {n}, 3f",
            "2:",
            $($body,)*
            "subs {n}, {n}, #1",
            "b.ne 2b",
            "3:",
            $($post,)*
            $($p = inout(reg) $ptr,)*
            n = inout(reg) $n => _,
            $($operands)*
        )
    };
}

/// 4 query rows against 4 keys over `n8 * 8` values (`asm!` loop: per 8 values 8 `ldp`
/// with post-increment and 32 `fmla`): the partial sums `acc[r][t]` (4 lanes each); the
/// pointers advance past the values read.
///
/// # Safety
/// Every `q[r]` and `k[t]` points at `8 * n8` readable f32 values.
#[inline(always)]
unsafe fn dots4_loop(
    q: &mut [*const f32; 4],
    k: &mut [*const f32; 4],
    n8: usize,
) -> [[float32x4_t; 4]; 4] {
    let (a0, a1, a2, a3, a4, a5, a6, a7);
    let (a8, a9, a10, a11, a12, a13, a14, a15);
    // SAFETY: the loop runs `n8` times and each pointer reads 8 values per step (the
    // caller vouches for `8 n8`); only the named registers are written; no stack, no
    // stores.
    unsafe {
        counted_loop!(
            [zero_regs!(16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31)],
            [
                "ldp q0, q1, [{qp0}], #32",
                "ldp q2, q3, [{qp1}], #32",
                "ldp q4, q5, [{qp2}], #32",
                "ldp q6, q7, [{qp3}], #32",
                "ldp q8, q9, [{kp0}], #32",
                "fmla v16.4s, v0.4s, v8.4s",
                "fmla v20.4s, v2.4s, v8.4s",
                "fmla v24.4s, v4.4s, v8.4s",
                "fmla v28.4s, v6.4s, v8.4s",
                "fmla v16.4s, v1.4s, v9.4s",
                "fmla v20.4s, v3.4s, v9.4s",
                "fmla v24.4s, v5.4s, v9.4s",
                "fmla v28.4s, v7.4s, v9.4s",
                "ldp q10, q11, [{kp1}], #32",
                "fmla v17.4s, v0.4s, v10.4s",
                "fmla v21.4s, v2.4s, v10.4s",
                "fmla v25.4s, v4.4s, v10.4s",
                "fmla v29.4s, v6.4s, v10.4s",
                "fmla v17.4s, v1.4s, v11.4s",
                "fmla v21.4s, v3.4s, v11.4s",
                "fmla v25.4s, v5.4s, v11.4s",
                "fmla v29.4s, v7.4s, v11.4s",
                "ldp q12, q13, [{kp2}], #32",
                "fmla v18.4s, v0.4s, v12.4s",
                "fmla v22.4s, v2.4s, v12.4s",
                "fmla v26.4s, v4.4s, v12.4s",
                "fmla v30.4s, v6.4s, v12.4s",
                "fmla v18.4s, v1.4s, v13.4s",
                "fmla v22.4s, v3.4s, v13.4s",
                "fmla v26.4s, v5.4s, v13.4s",
                "fmla v30.4s, v7.4s, v13.4s",
                "ldp q14, q15, [{kp3}], #32",
                "fmla v19.4s, v0.4s, v14.4s",
                "fmla v23.4s, v2.4s, v14.4s",
                "fmla v27.4s, v4.4s, v14.4s",
                "fmla v31.4s, v6.4s, v14.4s",
                "fmla v19.4s, v1.4s, v15.4s",
                "fmla v23.4s, v3.4s, v15.4s",
                "fmla v27.4s, v5.4s, v15.4s",
                "fmla v31.4s, v7.4s, v15.4s",
            ],
            [],
            n8, { qp0: q[0], qp1: q[1], qp2: q[2], qp3: q[3], kp0: k[0], kp1: k[1], kp2: k[2], kp3: k[3] },
            out("v16") a0, out("v17") a1, out("v18") a2, out("v19") a3,
            out("v20") a4, out("v21") a5, out("v22") a6, out("v23") a7,
            out("v24") a8, out("v25") a9, out("v26") a10, out("v27") a11,
            out("v28") a12, out("v29") a13, out("v30") a14, out("v31") a15,
            out("v0") _, out("v1") _, out("v2") _, out("v3") _, out("v4") _, out("v5") _, out("v6") _, out("v7") _,
            out("v8") _, out("v9") _, out("v10") _, out("v11") _, out("v12") _, out("v13") _, out("v14") _, out("v15") _,
            options(nostack, readonly),
        );
    }
    let a = [a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15];
    from_fn(|r| from_fn(|t| a[4 * r + t]))
}

/// 1 query row against 4 keys over `n16 * 16` values (`asm!` loop: per 16 values 5
/// `ld1` of 4 registers with post-increment and 16 `fmla`, two accumulators per key):
/// the partial sums per key; the pointers advance past the values read.
///
/// # Safety
/// `q` and every `k[t]` point at `16 * n16` readable f32 values.
#[inline(always)]
unsafe fn dots1_loop(q: &mut *const f32, k: &mut [*const f32; 4], n16: usize) -> [float32x4_t; 4] {
    let (a0, a1, a2, a3);
    // SAFETY: as in `dots4_loop`, 16 values per pointer and step.
    unsafe {
        counted_loop!(
            [zero_regs!(16, 17, 18, 19, 20, 21, 22, 23)],
            [
                "ld1 {{v0.4s, v1.4s, v2.4s, v3.4s}}, [{qp0}], #64",
                "ld1 {{v4.4s, v5.4s, v6.4s, v7.4s}}, [{kp0}], #64",
                "fmla v16.4s, v0.4s, v4.4s",
                "fmla v20.4s, v1.4s, v5.4s",
                "fmla v16.4s, v2.4s, v6.4s",
                "fmla v20.4s, v3.4s, v7.4s",
                "ld1 {{v8.4s, v9.4s, v10.4s, v11.4s}}, [{kp1}], #64",
                "fmla v17.4s, v0.4s, v8.4s",
                "fmla v21.4s, v1.4s, v9.4s",
                "fmla v17.4s, v2.4s, v10.4s",
                "fmla v21.4s, v3.4s, v11.4s",
                "ld1 {{v4.4s, v5.4s, v6.4s, v7.4s}}, [{kp2}], #64",
                "fmla v18.4s, v0.4s, v4.4s",
                "fmla v22.4s, v1.4s, v5.4s",
                "fmla v18.4s, v2.4s, v6.4s",
                "fmla v22.4s, v3.4s, v7.4s",
                "ld1 {{v8.4s, v9.4s, v10.4s, v11.4s}}, [{kp3}], #64",
                "fmla v19.4s, v0.4s, v8.4s",
                "fmla v23.4s, v1.4s, v9.4s",
                "fmla v19.4s, v2.4s, v10.4s",
                "fmla v23.4s, v3.4s, v11.4s",
            ],
            [
                "fadd v16.4s, v16.4s, v20.4s",
                "fadd v17.4s, v17.4s, v21.4s",
                "fadd v18.4s, v18.4s, v22.4s",
                "fadd v19.4s, v19.4s, v23.4s",
            ],
            n16, { qp0: *q, kp0: k[0], kp1: k[1], kp2: k[2], kp3: k[3] },
            out("v16") a0, out("v17") a1, out("v18") a2, out("v19") a3,
            out("v0") _, out("v1") _, out("v2") _, out("v3") _, out("v4") _, out("v5") _, out("v6") _, out("v7") _, out("v8") _, out("v9") _, out("v10") _, out("v11") _,
            out("v20") _, out("v21") _, out("v22") _, out("v23") _,
            options(nostack, readonly),
        );
    }
    [a0, a1, a2, a3]
}

/// The 4 value rows of one step of [`acc4_loop`] / [`acc1_loop`] as `asm!` text: 16
/// values each into `v16..v19`, `v20..v23`, `v24..v27`, `v28..v31` (`ld1` with
/// post-increment of `vp0..vp3`).
macro_rules! load_values {
    () => {
        concat!(
            "ld1 {{v16.4s, v17.4s, v18.4s, v19.4s}}, [{vp0}], #64\n",
            "ld1 {{v20.4s, v21.4s, v22.4s, v23.4s}}, [{vp1}], #64\n",
            "ld1 {{v24.4s, v25.4s, v26.4s, v27.4s}}, [{vp2}], #64\n",
            "ld1 {{v28.4s, v29.4s, v30.4s, v31.4s}}, [{vp3}], #64",
        )
    };
}

/// One output row of [`acc4_loop`] / [`acc1_loop`] as `asm!` text: `o += p[0] v_0 + .. +
/// p[3] v_3` over 16 values (`ld1` of the row into `v$a..v$d`, 16 `fmla` by element with
/// the probabilities in `v$p` and the value rows in `v16..v31`, `st1` with
/// post-increment of the pointer operand `$op`).
macro_rules! acc_row {
    ($a:literal, $b:literal, $c:literal, $d:literal, $p:literal, $op:literal) => {
        concat!(
            "ld1 {{v", $a, ".4s, v", $b, ".4s, v", $c, ".4s, v", $d, ".4s}}, [{", $op, "}]\n",
            acc_row!(@col $a, $p, "16", "20", "24", "28"),
            acc_row!(@col $b, $p, "17", "21", "25", "29"),
            acc_row!(@col $c, $p, "18", "22", "26", "30"),
            acc_row!(@col $d, $p, "19", "23", "27", "31"),
            "st1 {{v", $a, ".4s, v", $b, ".4s, v", $c, ".4s, v", $d, ".4s}}, [{", $op, "}], #64",
        )
    };
    // `v$o += p[0] v$v0 + .. + p[3] v$v3` (4 values of the output row).
    (@col $o:literal, $p:literal, $v0:literal, $v1:literal, $v2:literal, $v3:literal) => {
        concat!(
            acc_row!(@fmla $o, $v0, $p, "0"),
            acc_row!(@fmla $o, $v1, $p, "1"),
            acc_row!(@fmla $o, $v2, $p, "2"),
            acc_row!(@fmla $o, $v3, $p, "3"),
        )
    };
    (@fmla $o:literal, $v:literal, $p:literal, $lane:literal) => {
        concat!("fmla v", $o, ".4s, v", $v, ".4s, v", $p, ".s[", $lane, "]\n")
    };
}

/// `o_r += sum_t p[r][t] v_t` for 4 rows over `n16 * 16` values (`asm!` loop: per 16
/// values 4 `ld1` of the value rows, and per output row `ld1`, 16 `fmla` by element
/// and `st1` with post-increment); the pointers advance past the values done.
///
/// # Safety
/// Every `o[r]` points at `16 * n16` writable f32 values not aliased by anything else
/// in use, every `v[t]` at `16 * n16` readable ones.
#[inline(always)]
unsafe fn acc4_loop(
    o: &mut [*mut f32; 4],
    v: &mut [*const f32; 4],
    p: &[float32x4_t; 4],
    n16: usize,
) {
    // SAFETY: the loop runs `n16` times and each pointer reads (and for `o` writes)
    // 16 values per step, inside what the caller vouches for; only the named registers
    // are written.
    unsafe {
        counted_loop!(
            [],
            [
                load_values!(),
                acc_row!("4", "5", "6", "7", "0", "op0"),
                acc_row!("8", "9", "10", "11", "1", "op1"),
                acc_row!("4", "5", "6", "7", "2", "op2"),
                acc_row!("8", "9", "10", "11", "3", "op3"),
            ],
            [],
            n16, { vp0: v[0], vp1: v[1], vp2: v[2], vp3: v[3], op0: o[0], op1: o[1], op2: o[2], op3: o[3] },
            in("v0") p[0], in("v1") p[1], in("v2") p[2], in("v3") p[3],
            out("v4") _, out("v5") _, out("v6") _, out("v7") _, out("v8") _, out("v9") _, out("v10") _, out("v11") _,
            out("v16") _, out("v17") _, out("v18") _, out("v19") _, out("v20") _, out("v21") _, out("v22") _, out("v23") _,
            out("v24") _, out("v25") _, out("v26") _, out("v27") _, out("v28") _, out("v29") _, out("v30") _, out("v31") _,
            options(nostack),
        );
    }
}

/// `o += sum_t p[t] v_t` for 1 row over `n16 * 16` values (`asm!` loop: per 16 values 5
/// `ld1`, 16 `fmla` by element and 1 `st1`, with post-increment).
///
/// # Safety
/// As [`acc4_loop`] for one output row.
#[inline(always)]
unsafe fn acc1_loop(o: &mut *mut f32, v: &mut [*const f32; 4], p: float32x4_t, n16: usize) {
    // SAFETY: as in `acc4_loop`.
    unsafe {
        counted_loop!(
            [],
            [load_values!(), acc_row!("4", "5", "6", "7", "0", "op0")],
            [],
            n16, { vp0: v[0], vp1: v[1], vp2: v[2], vp3: v[3], op0: *o },
            in("v0") p,
            out("v4") _, out("v5") _, out("v6") _, out("v7") _,
            out("v16") _, out("v17") _, out("v18") _, out("v19") _, out("v20") _, out("v21") _, out("v22") _, out("v23") _,
            out("v24") _, out("v25") _, out("v26") _, out("v27") _, out("v28") _, out("v29") _, out("v30") _, out("v31") _,
            options(nostack),
        );
    }
}

/// Unscaled scores of `NQ` (1 or 4) query rows against 4 key rows: lane `t` of `s[r]`
/// is `q_r . k_t` over `hd` values. The bulk runs in [`dots4_loop`] / [`dots1_loop`],
/// then steps of 4 values and a scalar tail.
///
/// # Safety
/// Every `q[r]` and `k[t]` points at `hd` readable f32 values.
#[inline(always)]
unsafe fn dots<const NQ: usize>(
    mut q: [*const f32; NQ],
    mut k: [*const f32; 4],
    hd: usize,
) -> [float32x4_t; NQ] {
    // SAFETY (whole body): `rest` counts the values left in every row; the loops read
    // at most `rest` values from the current pointers, which advance by as many.
    unsafe {
        let z = vdupq_n_f32(0.0);
        let mut acc = [[z; 4]; NQ];
        let mut rest = hd;
        if NQ == 4 {
            let mut q4: [*const f32; 4] = from_fn(|r| q[r.min(NQ - 1)]);
            let a = dots4_loop(&mut q4, &mut k, rest / 8);
            for r in 0..NQ {
                (acc[r], q[r]) = (a[r], q4[r]);
            }
            rest %= 8;
        } else {
            acc[0] = dots1_loop(&mut q[0], &mut k, rest / 16);
            rest %= 16;
        }
        while rest >= 4 {
            let kv: [float32x4_t; 4] = from_fn(|t| vld1q_f32(k[t]));
            for kt in &mut k {
                *kt = kt.add(4);
            }
            for r in 0..NQ {
                let qv = vld1q_f32(q[r]);
                q[r] = q[r].add(4);
                for t in 0..4 {
                    acc[r][t] = vfmaq_f32(acc[r][t], qv, kv[t]);
                }
            }
            rest -= 4;
        }
        // Horizontal sums: s[r] = [sum acc[r][0], .., sum acc[r][3]].
        let mut s: [float32x4_t; NQ] = from_fn(|r| {
            let a = &acc[r];
            vpaddq_f32(vpaddq_f32(a[0], a[1]), vpaddq_f32(a[2], a[3]))
        });
        for d in 0..rest {
            let kd: [f32; 4] = from_fn(|t| *k[t].add(d));
            let kv = vld1q_f32(kd.as_ptr());
            for r in 0..NQ {
                s[r] = vfmaq_n_f32(s[r], kv, *q[r].add(d));
            }
        }
        s
    }
}

/// `o_r += sum_t p[r][t] v_t` for `NQ` (1 or 4) output rows and 4 value rows of `hd`
/// values: [`acc4_loop`] / [`acc1_loop`] for blocks of 16 values, then steps of 4 and
/// a scalar tail.
///
/// # Safety
/// Every `o[r]` points at `hd` writable f32 values not aliased by anything else in use,
/// every `v[t]` at `hd` readable ones.
#[inline(always)]
unsafe fn accumulate<const NQ: usize>(
    mut o: [*mut f32; NQ],
    mut v: [*const f32; 4],
    p: &[float32x4_t; NQ],
    hd: usize,
) {
    // SAFETY (whole body): as in `dots`, every access stays within the `rest` values
    // left in the current rows.
    unsafe {
        let mut rest = hd;
        if NQ == 4 {
            let mut o4: [*mut f32; 4] = from_fn(|r| o[r.min(NQ - 1)]);
            let p4: [float32x4_t; 4] = from_fn(|r| p[r.min(NQ - 1)]);
            acc4_loop(&mut o4, &mut v, &p4, rest / 16);
            o.copy_from_slice(&o4[..NQ]);
        } else {
            acc1_loop(&mut o[0], &mut v, p[0], rest / 16);
        }
        rest %= 16;
        while rest >= 4 {
            let vv: [float32x4_t; 4] = from_fn(|t| vld1q_f32(v[t]));
            for vt in &mut v {
                *vt = vt.add(4);
            }
            for r in 0..NQ {
                vst1q_f32(o[r], fma4(vld1q_f32(o[r]), vv, p[r]));
                o[r] = o[r].add(4);
            }
            rest -= 4;
        }
        for d in 0..rest {
            let vd: [f32; 4] = from_fn(|t| *v[t].add(d));
            let vv = vld1q_f32(vd.as_ptr());
            for r in 0..NQ {
                *o[r].add(d) += vaddvq_f32(vmulq_f32(p[r], vv));
            }
        }
    }
}

/// `o[..hd] *= a`.
///
/// # Safety
/// `o` points at `hd` writable f32 values not aliased by anything else in use.
#[inline(always)]
unsafe fn scale_row(o: *mut f32, hd: usize, a: f32) {
    // SAFETY: every access is `o + d ..` with `d + width <= hd`.
    unsafe {
        let mut d = 0;
        while d + 4 <= hd {
            vst1q_f32(o.add(d), vmulq_n_f32(vld1q_f32(o.add(d)), a));
            d += 4;
        }
        while d < hd {
            *o.add(d) *= a;
            d += 1;
        }
    }
}

/// The running maximum of a row grows from `m` to `mb`: rescales the accumulator row
/// (nothing to rescale while `m = -inf`, before the first key) and returns the factor
/// `exp(m - mb)` for the running sum. Rare after the first block, hence out of line.
///
/// # Safety
/// As [`scale_row`].
#[cold]
#[inline(never)]
unsafe fn raise_max(o: *mut f32, hd: usize, m: f32, mb: f32) -> f32 {
    if m == f32::NEG_INFINITY {
        return 0.0;
    }
    let alpha = scalar::exp(m - mb);
    // SAFETY: forwarded from the caller.
    unsafe { scale_row(o, hd, alpha) };
    alpha
}

/// One block of 4 keys for `NQ` query rows: scores, running maximum and sum,
/// accumulation. With `MASK`, lane `t` of row `r` counts only when `t < valid[r]`.
///
/// # Safety
/// As [`dots`] and [`accumulate`].
#[inline(always)]
unsafe fn block<const NQ: usize, const MASK: bool>(
    (q, o): ([*const f32; NQ], [*mut f32; NQ]),
    (k, v): ([*const f32; 4], [*const f32; 4]),
    (m, l): (&mut [f32; NQ], &mut [float32x4_t; NQ]),
    valid: [usize; NQ],
    hd: usize,
    scale: f32,
) {
    // SAFETY: forwarded from the caller; the rest is register arithmetic.
    unsafe {
        let s = dots::<NQ>(q, k, hd);
        let mut p = [vdupq_n_f32(0.0); NQ];
        for r in 0..NQ {
            let mut sr = vmulq_n_f32(s[r], scale);
            if MASK {
                let lanes = vld1q_u32([0u32, 1, 2, 3].as_ptr());
                let keep = vcltq_u32(lanes, vdupq_n_u32(valid[r] as u32));
                sr = vbslq_f32(keep, sr, vdupq_n_f32(f32::NEG_INFINITY));
            }
            let mb = vmaxvq_f32(sr);
            if mb > m[r] {
                l[r] = vmulq_n_f32(l[r], raise_max(o[r], hd, m[r], mb));
                m[r] = mb;
            }
            p[r] = exp(vsubq_f32(sr, vdupq_n_f32(m[r])));
            l[r] = vaddq_f32(l[r], p[r]);
        }
        accumulate::<NQ>(o, v, &p, hd);
    }
}

/// Query rows `i0 .. i0 + NQ` of head `h`: the online softmax over their keys.
///
/// # Safety
/// The pointers are the kernel's operands after the entry point's check (so `q` holds
/// `q_frames * c` values, `k` and `v` at least `len * c`, `c = g.channels()`), `out + i *
/// c + h * hd .. + hd` is writable and not aliased for every row `i < q_frames` (the
/// hook's block), `i0 + NQ <= q_frames`, and `h < heads`.
#[inline(always)]
unsafe fn rows<const NQ: usize>(
    (q, k, v, out): (*const f32, *const f32, *const f32, *mut f32),
    g: AttentionGeometry,
    i0: usize,
    h: usize,
) {
    const { assert!(NQ == 1 || NQ == 4, "row blocks of 1 or 4 queries") };
    let (c, hd, off) = (g.channels(), g.head_dim, h * g.head_dim);
    // SAFETY (whole body): query and output rows are `< q_frames`, key and value rows
    // `< kmax <= len` (full blocks end at `full <= kmin`, the last keys are clamped to
    // `kmax - 1`), and every row is read at `off .. off + hd <= c`; so each pointer
    // handed to `block` and `scale_row` points at `hd` values inside its slice, and the
    // NQ output rows are distinct.
    unsafe {
        let qp: [*const f32; NQ] = from_fn(|r| q.add((i0 + r) * c + off));
        let op: [*mut f32; NQ] = from_fn(|r| out.add((i0 + r) * c + off));
        let limit: [usize; NQ] = from_fn(|r| g.visible(i0 + r));
        let (kmin, kmax) = (limit[0], limit[NQ - 1]);
        for &o in &op {
            for d in 0..hd {
                *o.add(d) = 0.0;
            }
        }
        let mut m = [f32::NEG_INFINITY; NQ];
        let mut l = [vdupq_n_f32(0.0); NQ];
        // Blocks every row sees entirely: no masking, pointers advance by 4 rows.
        let full = kmin / 4 * 4;
        let (mut kb, mut vb) = (k.add(off), v.add(off));
        let mut j = 0;
        while j < full {
            let kp = [kb, kb.add(c), kb.add(2 * c), kb.add(3 * c)];
            let vp = [vb, vb.add(c), vb.add(2 * c), vb.add(3 * c)];
            block::<NQ, false>((qp, op), (kp, vp), (&mut m, &mut l), limit, hd, g.scale);
            (kb, vb) = (kb.add(4 * c), vb.add(4 * c));
            j += 4;
        }
        // The rest (at most 2 blocks for NQ = 4): masked, keys clamped to `kmax - 1`.
        while j < kmax {
            let kp = from_fn(|t| k.add((j + t).min(kmax - 1) * c + off));
            let vp = from_fn(|t| v.add((j + t).min(kmax - 1) * c + off));
            let valid = from_fn(|r| limit[r].saturating_sub(j).min(4));
            block::<NQ, true>((qp, op), (kp, vp), (&mut m, &mut l), valid, hd, g.scale);
            j += 4;
        }
        for r in 0..NQ {
            scale_row(op[r], hd, 1.0 / vaddvq_f32(l[r]));
        }
    }
}

impl AttentionKernels for Neon {
    const ATTENTION_ROW_TILE: usize = 4;

    unsafe fn attention_unchecked(
        q: &[f32],
        k: &[f32],
        v: &[f32],
        mut out: StridedMut<'_>,
        g: AttentionGeometry,
        heads: Range<usize>,
    ) {
        // Output row i of head h at `o + i * c + h * hd`: `out` starts at head
        // `heads.start` of row 0 (wrapping: `o` itself may lie before the block).
        let o = out.as_mut_ptr().wrapping_sub(heads.start * g.head_dim);
        let ptrs = (q.as_ptr(), k.as_ptr(), v.as_ptr(), o);
        for h in heads {
            let mut i = 0;
            while i + 4 <= g.q_frames {
                // SAFETY: the entry point checked the slice lengths, `i + 4 <= q_frames`,
                // `h` is one of the block's heads, which `out` owns in every row.
                unsafe { rows::<4>(ptrs, g, i, h) };
                i += 4;
            }
            while i < g.q_frames {
                // SAFETY: as above with `i < q_frames`.
                unsafe { rows::<1>(ptrs, g, i, h) };
                i += 1;
            }
        }
    }
}
