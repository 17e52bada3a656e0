//! NEON without the dot-product extension: the int8-activation GEMV and GEMM
//! ([`QuantKernels::gemv_i8_dot`](super::QuantKernels::gemv_i8_dot),
//! [`gemm_i8_dot`](super::QuantKernels::gemm_i8_dot)) on plain ARMv8.0 NEON (Cortex-A53,
//! Cortex-A72), the arithmetic of the `sdot` path (`dot.rs`) with its bits.
//!
//! [`Neon`](crate::kernels::Neon) runs these where
//! [`cpu::aarch64_dotprod`](crate::kernels::cpu::aarch64_dotprod) says the core has no
//! dotprod. The activations are quantised as on the `sdot` path (`dot.rs`, `quantize`:
//! blocks of 32, codes in `[-127, 127]`), the panels walked by the same driver
//! (`dot.rs`'s `dot_gemv!`); only the inner loop differs. Per two groups (8 `k`) of a weight
//! vector (4 outputs x 4 `k` of a packed group), with the groups' 4 codes replicated over
//! the vector (`ld1r .4s`):
//! - `smull` / `smull2` multiply the first group's 16 weights by the codes into 16 i16
//!   products, `smlal` / `smlal2` add the second group's: each i16 lane holds two
//!   products, at most `2 * 127 * 128 = 32512` in magnitude (the codes are never -128), so
//!   it cannot overflow;
//! - `saddlp` (first pair of a block) or `sadalp` add adjacent i16 lanes into i32
//!   accumulators, two per output;
//! - per block of 32 `k`, `addp` joins each output's two i32 lanes: the exact integer sum
//!   `sdot` forms, then the same `scvtf` and `fmla` (block-int8: `fmul` of the weight
//!   scales by `d` first) in the same order, so every output has the `sdot` path's bits.
//!
//! Per panel (16 outputs) and block: 8 64-byte loads of weights, 8 `ld1r` of codes, 64
//! multiplies, 32 pairwise adds, 4 `addp`, 4 `scvtf`, 4 `fmla`, the `d` load and the loop:
//! 127 instructions for 512 multiply-adds, 0.25 per multiply-add (6 per 32 in the
//! multiplies and pairwise adds, a floor without `sdot`), against about 0.11 with `sdot`
//! and 0.29 for the widening path's f32 GEMM (measured: BENCHMARKS.md, "Moonshine decoder:
//! the dot path", "Moonshine encoder on the int8-activation path").
//!
//! The GEMM runs the GEMV row by row (so row `i` has the GEMV's bits on row `i`, the
//! contract): a tile of several rows would share the weight loads (8 per block and panel)
//! but needs the codes of each row replicated per group (`ld1r` or `dup`, 8 per block and
//! row) and two i32 accumulators per output and row, so 4 rows x 8 outputs leave no
//! register for the f32 sums; the saving is at most the weight loads, about 6%.
//!
//! The plain ARMv8.0 multiplies are 8 products per instruction against `sdot`'s 16 with the
//! sum included, so this path costs about 2.3 times the `sdot` path's instructions in the
//! kernel, a third of the widening GEMV's (about 0.8 per multiply-add in the decoder step:
//! 93% of its 32.9 M instructions for 38.6 M multiply-adds).

use super::dot::dot_gemv;
use super::{Gemv, QuantGemm, QuantWeights};
use crate::kernels::StridedMut;
use core::arch::aarch64::*;

/// Lines of one pair of groups (8 `k`) of one panel: the two groups' 128 bytes
/// (`{p}` post-incremented) into v16..v23, their codes replicated into v24, v25
/// (`{xq}` post-incremented), then per weight vector `smull`, `smull2`, `smlal`,
/// `smlal2` into two i16 temporaries and `$acc` (`saddlp` for the block's first pair,
/// `sadalp` after) into its two i32 accumulators: vector `v` (outputs `4v..4v + 4`) into
/// v(2v) (outputs `4v`, `4v + 1`) and v(2v + 1) (`4v + 2`, `4v + 3`), two lanes per output.
macro_rules! widen_pair {
    ($acc:literal) => {
        concat!(
            "ld1 {{v16.16b, v17.16b, v18.16b, v19.16b}}, [{p}], #64\n",
            "ld1 {{v20.16b, v21.16b, v22.16b, v23.16b}}, [{p}], #64\n",
            "ld1r {{v24.4s}}, [{xq}], #4\n",
            "ld1r {{v25.4s}}, [{xq}], #4\n",
            widen_pair!(@vec $acc, "v16", "v20", "v26", "v27", "v0", "v1"),
            widen_pair!(@vec $acc, "v17", "v21", "v28", "v29", "v2", "v3"),
            widen_pair!(@vec $acc, "v18", "v22", "v26", "v27", "v4", "v5"),
            widen_pair!(@vec $acc, "v19", "v23", "v28", "v29", "v6", "v7"),
        )
    };
    (@vec $acc:literal, $w0:literal, $w1:literal, $t0:literal, $t1:literal, $a0:literal, $a1:literal) => {
        concat!(
            "smull ", $t0, ".8h, ", $w0, ".8b, v24.8b\n",
            "smull2 ", $t1, ".8h, ", $w0, ".16b, v24.16b\n",
            "smlal ", $t0, ".8h, ", $w1, ".8b, v25.8b\n",
            "smlal2 ", $t1, ".8h, ", $w1, ".16b, v25.16b\n",
            $acc, " ", $a0, ".4s, ", $t0, ".8h\n",
            $acc, " ", $a1, ".4s, ", $t1, ".8h\n",
        )
    };
}

/// Lines of one block of 32 `k` of one panel: 4 pairs of groups, then the block's exact
/// i32 sums, outputs `4v..4v + 4` in v(2v) (`addp`), converted to f32 (`scvtf`), and the
/// block's `d` broadcast into v30 (`{xd}` post-incremented).
macro_rules! widen_block {
    () => {
        concat!(
            widen_pair!("saddlp"),
            widen_pair!("sadalp"),
            widen_pair!("sadalp"),
            widen_pair!("sadalp"),
            "addp v0.4s, v0.4s, v1.4s\n addp v2.4s, v2.4s, v3.4s\n",
            "addp v4.4s, v4.4s, v5.4s\n addp v6.4s, v6.4s, v7.4s\n",
            "scvtf v0.4s, v0.4s\n scvtf v2.4s, v2.4s\n",
            "scvtf v4.4s, v4.4s\n scvtf v6.4s, v6.4s\n",
            "ld1r {{v30.4s}}, [{xd}], #4\n",
        )
    };
}

/// Per tensor: `acc += f32(sums) * d`, as `dot.rs`'s `scale_tensor!`.
macro_rules! widen_tensor {
    () => {
        concat!(
            "fmla v8.4s, v0.4s, v30.4s\n fmla v9.4s, v2.4s, v30.4s\n",
            "fmla v10.4s, v4.4s, v30.4s\n fmla v11.4s, v6.4s, v30.4s\n",
        )
    };
}

/// Block-int8: the panel's 16 weight scales of the block (`{s}` post-incremented) times
/// `d`, then `acc += f32(sums) * (scale * d)`, as `dot.rs`'s `scale_block!`.
macro_rules! widen_scaled {
    () => {
        concat!(
            "ld1 {{v16.4s, v17.4s, v18.4s, v19.4s}}, [{s}], #64\n",
            "fmul v16.4s, v16.4s, v30.4s\n fmul v17.4s, v17.4s, v30.4s\n",
            "fmul v18.4s, v18.4s, v30.4s\n fmul v19.4s, v19.4s, v30.4s\n",
            "fmla v8.4s, v0.4s, v16.4s\n fmla v9.4s, v2.4s, v17.4s\n",
            "fmla v10.4s, v4.4s, v18.4s\n fmla v11.4s, v6.4s, v19.4s\n",
        )
    };
}

/// One panel (16 outputs) over `blocks` blocks of 32 `k` (`blocks >= 1`): the
/// `DotKernel` of `dot.rs`'s `sdot_1x16` on plain NEON, the same arguments and bits.
///
/// # Safety
/// `xq` readable for `32 * blocks` bytes, `xd` for `blocks` values, `p0` for
/// `512 * blocks` bytes, `ws` for `16 * blocks` values; the codes in `[-127, 127]`
/// (`dot.rs`'s `quantize` gives no -128: an i16 lane holds two products).
unsafe fn widen_1x16(
    acc: &mut [[float32x4_t; 4]; 1],
    xq: *const i8,
    xd: *const f32,
    [p]: [*const i8; 1],
    ws: Option<[*const f32; 1]>,
    blocks: usize,
) {
    // The block loop with the lines scaling a block's sums and the pointers of the format.
    macro_rules! panel {
        ($scale:expr $(, $s:ident)*) => {
            core::arch::asm!(
                "2:",
                widen_block!(),
                $scale,
                "subs {n}, {n}, #1",
                "b.ne 2b",
                xq = inout(reg) xq => _,
                xd = inout(reg) xd => _,
                p = inout(reg) p => _,
                $($s = inout(reg) $s => _,)*
                n = inout(reg) blocks => _,
                inout("v8") acc[0][0], inout("v9") acc[0][1],
                inout("v10") acc[0][2], inout("v11") acc[0][3],
                out("v0") _, out("v1") _, out("v2") _, out("v3") _,
                out("v4") _, out("v5") _, out("v6") _, out("v7") _,
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
            None => panel!(widen_tensor!()),
            Some([s]) => panel!(widen_scaled!(), s),
        }
    }
}

/// Two panels: [`widen_1x16`] on each (the outputs are independent, each gets the same
/// operations in the same order; the 32 i32 and f32 accumulators of two panels at once
/// would not fit the 32 registers).
///
/// # Safety
/// As [`widen_1x16`] for each panel.
unsafe fn widen_2x16(
    acc: &mut [[float32x4_t; 4]; 2],
    xq: *const i8,
    xd: *const f32,
    panels: [*const i8; 2],
    ws: Option<[*const f32; 2]>,
    blocks: usize,
) {
    for (q, acc) in acc.iter_mut().enumerate() {
        let mut one = [*acc];
        // SAFETY: forwarded, panel q of the contract.
        unsafe { widen_1x16(&mut one, xq, xd, [panels[q]], ws.map(|w| [w[q]]), blocks) };
        *acc = one[0];
    }
}

/// The GEMV of both formats on plain NEON: `dot.rs`'s driver on [`widen_2x16`] and
/// [`widen_1x16`].
///
/// # Safety
/// The contract of [`QuantKernels::gemv_i8_dot`](super::QuantKernels::gemv_i8_dot) holds
/// (checked by the entry point), `n, k >= 1`.
pub(super) unsafe fn gemv(g: Gemv<'_>, y: &mut [f32]) {
    // The body's unsafe blocks rely on this function's contract; the kernels need plain
    // NEON only.
    dot_gemv!(g, y, widen_2x16, widen_1x16)
}

/// The GEMM of both formats on plain NEON: [`gemv`] on every row (each row quantised once,
/// with the GEMV's bits).
///
/// # Safety
/// The contract of [`QuantKernels::gemm_i8_dot`](super::QuantKernels::gemm_i8_dot) holds
/// (checked by the entry point), `m, n, k >= 1`.
pub(super) unsafe fn gemm(g: QuantGemm, a: &[f32], w: QuantWeights<'_>, mut c: StridedMut<'_>) {
    for i in 0..g.m {
        let (x, y) = (&a[i * g.lda..i * g.lda + g.k], c.row(i));
        // SAFETY: row i of a checked GEMM is a GEMV of the same contract.
        unsafe { gemv(Gemv::new(x, w, y), y) };
    }
}

#[cfg(test)]
mod tests {
    //! The plain NEON kernels against a scalar model of the `sdot` path's arithmetic (exact
    //! i32 block sums, one fused multiply-add per block and output), bit for bit, on every
    //! CPU; the `sdot` kernels against the same model where the CPU has dotprod.
    extern crate std;
    use super::super::dot::quantize;
    use super::super::{
        dot, dot_gemm, finish, pack_block_scales, pack_i8, packed_block_scales_len, packed_i8_len,
        portable, QuantFormat, BLOCK_K, DOT_KC,
    };
    use super::*;
    use crate::kernels::cpu;
    use std::vec::Vec;

    /// A small deterministic generator (64-bit LCG, the high bits).
    struct Lcg(u64);

    impl Lcg {
        fn next(&mut self) -> u32 {
            self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (self.0 >> 33) as u32
        }
        fn f32(&mut self) -> f32 {
            self.next() as f32 / (1u64 << 31) as f32 * 2.0 - 1.0
        }
    }

    /// One problem: `q[n, k]`, rows of `x` (`k` values each), per-tensor or block
    /// scales, optional bias.
    struct Case {
        n: usize,
        k: usize,
        q: Vec<i8>,
        x: Vec<f32>,
        scales: Option<Vec<f32>>,
        bias: Option<Vec<f32>>,
    }

    impl Case {
        fn new(r: &mut Lcg, (m, n, k): (usize, usize, usize), block: bool, extreme: bool) -> Self {
            // Codes of either extreme on every weight and +-127 activations (every block's
            // values of one magnitude): every i16 lane at its bound, 2 * 127 * 128.
            let q = (0..n * k)
                .map(|i| if extreme { [-128, 127][i % 2] } else { r.next() as u8 as i8 })
                .collect();
            let x = (0..m * k)
                .map(|i| {
                    if extreme {
                        [3.0, -3.0][(i / 3) % 2]
                    } else {
                        // Blocks of different magnitudes.
                        r.f32() * [1.0, 1e3, 1e-3, 7.0][(i / BLOCK_K) % 4]
                    }
                })
                .collect();
            let scales = block.then(|| (0..n * k / BLOCK_K).map(|_| r.f32() * 0.01).collect());
            let bias = (n % 2 == 0).then(|| (0..n).map(|_| r.f32()).collect());
            Case { n, k, q, x, scales, bias }
        }

        /// The packed codes and block scales.
        fn packed(&self) -> (Vec<i8>, Vec<f32>) {
            let mut b = std::vec![0; packed_i8_len(self.n, self.k)];
            pack_i8(&self.q, self.n, self.k, &mut b);
            let mut s = std::vec![0.0; packed_block_scales_len(self.n, self.k)];
            if let Some(scales) = &self.scales {
                pack_block_scales(scales, self.n, self.k, &mut s);
            }
            (b, s)
        }

        fn format<'a>(&self, s: &'a [f32]) -> QuantFormat<'a> {
            match self.scales {
                Some(_) => QuantFormat::Block(s),
                None => QuantFormat::PerTensor { scale: 0.0123, offset: -0.71 },
            }
        }

        /// The scalar model of row `i`.
        fn model(&self, i: usize, s: &[f32]) -> Vec<f32> {
            let (n, k) = (self.n, self.k);
            let x = &self.x[i * k..(i + 1) * k];
            let mut y = std::vec![0.0f32; n];
            let (mut xq, mut xd) = ([0i8; DOT_KC], [0.0f32; DOT_KC / BLOCK_K]);
            for (c, xc) in x.chunks(DOT_KC).enumerate() {
                quantize(xc, &mut xq, &mut xd);
                for (b, &d) in xd.iter().enumerate().take(xc.len().div_ceil(BLOCK_K)) {
                    let k0 = c * DOT_KC + b * BLOCK_K;
                    for (j, y) in y.iter_mut().enumerate() {
                        let sum: i32 = (k0..(k0 + BLOCK_K).min(k))
                            .map(|kk| {
                                i32::from(self.q[j * k + kk]) * i32::from(xq[kk - c * DOT_KC])
                            })
                            .sum();
                        let f = sum as f32;
                        *y = match &self.scales {
                            Some(sc) => f.mul_add(sc[j * (k / BLOCK_K) + k0 / BLOCK_K] * d, *y),
                            None => f.mul_add(d, *y),
                        };
                    }
                }
            }
            let format = self.format(s);
            finish(&mut y, format, format.scale_shift(x).1, self.bias.as_deref());
            y
        }
    }

    /// Shapes: every tail of n (panels, pairs of panels) and of k (groups, blocks), odd
    /// shapes, Moonshine's, k past one quantisation chunk with and without a partial block.
    fn shapes(block: bool) -> Vec<(usize, usize, usize)> {
        let mut v: Vec<_> = (1..=40).map(|t| (1 + t % 3, t, (t * 13) % 70 + 1)).collect();
        v.extend([(2, 416, 1664), (3, 1664, 416), (2, 13, DOT_KC + 52), (2, 33, 2 * DOT_KC + 37)]);
        v.extend([(5, 47, 1), (1, 1, 255), (4, 40, 300), (3, 3, 63)]);
        if block {
            for s in &mut v {
                s.2 = s.2.div_ceil(BLOCK_K) * BLOCK_K;
            }
        }
        v
    }

    /// Bitwise equality, with the first difference in the message.
    fn same_bits(label: &str, got: &[f32], want: &[f32]) {
        for (j, (g, w)) in got.iter().zip(want).enumerate() {
            assert_eq!(g.to_bits(), w.to_bits(), "{label}: output {j}: {g} against {w}");
        }
    }

    /// The plain NEON GEMV and GEMM (and, with dotprod, the `sdot` ones) have the model's
    /// bits, both formats, every tail; the `sdot` GEMM's row `i` the GEMV's.
    #[test]
    fn widen_has_the_sdot_bits() {
        let mut r = Lcg(41);
        let dotprod = cpu::aarch64_dotprod();
        let mut differ_portable = (0, 0);
        for block in [false, true] {
            for (idx, &(m, n, k)) in shapes(block).iter().enumerate() {
                for extreme in [false, true] {
                    let c = Case::new(&mut r, (m, n, k), block, extreme);
                    let (b, s) = c.packed();
                    let w =
                        QuantWeights { packed: &b, format: c.format(&s), bias: c.bias.as_deref() };
                    let label = std::format!("m {m} n {n} k {k} block {block} extreme {extreme}");
                    let want: Vec<f32> = (0..m).flat_map(|i| c.model(i, &s)).collect();
                    for i in 0..m {
                        let x = &c.x[i * k..(i + 1) * k];
                        let want = &want[i * n..(i + 1) * n];
                        let mut y = std::vec![f32::NAN; n];
                        // SAFETY: n, k >= 1, the lengths of a checked GEMV.
                        unsafe { gemv(Gemv::new(x, w, &y), &mut y) };
                        same_bits(&std::format!("{label} widen gemv row {i}"), &y, want);
                        if dotprod {
                            y.fill(f32::NAN);
                            // SAFETY: as above; the CPU has dotprod.
                            unsafe { dot::gemv(Gemv::new(x, w, &y), &mut y) };
                            same_bits(&std::format!("{label} sdot gemv row {i}"), &y, want);
                        }
                        portable::gemv_dot(Gemv::new(x, w, &y), &mut y);
                        let d = y.iter().zip(want).filter(|(a, b)| a.to_bits() != b.to_bits());
                        differ_portable = (differ_portable.0 + d.count(), differ_portable.1 + n);
                    }
                    // The GEMM, rows `lda = k + idx % 3` apart, `ldc = n + 1`.
                    let lda = k + idx % 3;
                    let mut a = std::vec![0.0f32; m * lda];
                    for i in 0..m {
                        a[i * lda..i * lda + k].copy_from_slice(&c.x[i * k..(i + 1) * k]);
                    }
                    let g = QuantGemm { m, n, k, lda, ldc: n + 1 };
                    let run =
                        |f: unsafe fn(QuantGemm, &[f32], QuantWeights<'_>, StridedMut<'_>),
                         name| {
                            let mut out = std::vec![f32::NAN; m * (n + 1)];
                            // SAFETY: m, n, k >= 1, the lengths of a checked GEMM.
                            unsafe { f(g, &a, w, StridedMut::new(&mut out, m, n, n + 1)) };
                            for i in 0..m {
                                let row = &out[i * (n + 1)..i * (n + 1) + n];
                                same_bits(
                                    &std::format!("{label} {name} gemm row {i}"),
                                    row,
                                    &want[i * n..(i + 1) * n],
                                );
                            }
                        };
                    run(gemm, "widen");
                    if dotprod {
                        run(dot_gemm::gemm, "sdot");
                    }
                }
            }
        }
        // Not asserted: the portable evaluation rounds `f32(sum) * d` before the add.
        std::println!(
            "portable evaluation: {} of {} outputs differ in bits",
            differ_portable.0,
            differ_portable.1
        );
    }
}
