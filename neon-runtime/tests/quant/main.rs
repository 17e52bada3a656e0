//! Int8-weight kernels and operators against an f64 reference on the dequantised weights
//! (`f64(q) * scale + offset`, or `f64(q) * scale[j, k / 32]`): every tail of m, n and k
//! (1..=33, sampled), odd shapes, 416 -> 1664 and 1664 -> 416, `k` across the GEMM's
//! conversion block and `m` across its row block, strides, bias / no bias, Moonshine-like
//! scales and offsets, each backend against portable on the same inputs; the
//! int8-activation (`dot`) GEMV; packing layouts; the operators' results, shape rule and
//! errors. Every suite is a generic body run for each backend (`backend_tests!`): Portable,
//! `X86<Avx2>` and `X86<Avx512>` where the CPU has them, Neon (aarch64, under qemu: with
//! qemu's default CPU `max` the `dot` GEMV runs `sdot`, with `QEMU_CPU=cortex-a72` its
//! portable fallback).

#[path = "../common/mod.rs"]
mod common;
mod dot;
mod kernels;
#[cfg(feature = "alloc")]
mod operators;
mod problem;

use neon_runtime::kernels::gemm::PACK_NR;
use neon_runtime::kernels::quant::{
    pack_block_scales, pack_block_scales_transposed, pack_i8, pack_i8_transposed,
    packed_block_scales_len, packed_i8_len, QuantFormat, QuantKernels, BLOCK_K, QUANT_KR,
};
use neon_runtime::Portable;
use problem::{dims, wts};

#[test]
fn pack_layouts() {
    let (n, k) = (19, 6);
    let q: Vec<i8> = (0..n * k).map(|v| (v % 251) as i8).collect();
    let mut p = vec![99i8; packed_i8_len(n, k)];
    pack_i8(&q, n, k, &mut p);
    let kp = 8; // k rounded up to a whole group of 4
    assert_eq!(p.len(), 2 * PACK_NR * kp);
    for panel in 0..2 {
        for g in 0..kp / QUANT_KR {
            for j in 0..PACK_NR {
                for kk in 0..QUANT_KR {
                    let (col, kx) = (panel * PACK_NR + j, g * QUANT_KR + kk);
                    let want = if col < n && kx < k { q[col * k + kx] } else { 0 };
                    let at = panel * PACK_NR * kp + g * PACK_NR * QUANT_KR + j * QUANT_KR + kk;
                    assert_eq!(p[at], want, "panel {panel} group {g} output {j} k {kk}");
                }
            }
        }
    }
    // [k, n] input packs to the same bytes as its transpose.
    let qt: Vec<i8> = (0..k * n).map(|i| q[(i % n) * k + i / n]).collect();
    let mut pt = vec![99i8; packed_i8_len(n, k)];
    pack_i8_transposed(&qt, n, k, &mut pt);
    assert_eq!(p, pt);

    let (n, k) = (19, 64);
    let nb = k / BLOCK_K;
    let s: Vec<f32> = (0..n * nb).map(|v| v as f32).collect();
    let mut ps = vec![f32::NAN; packed_block_scales_len(n, k)];
    pack_block_scales(&s, n, k, &mut ps);
    common::assert_panels(&ps, &s, n, nb, PACK_NR, 2);
    let st: Vec<f32> = (0..nb * n).map(|i| s[(i % n) * nb + i / n]).collect();
    let mut pst = vec![f32::NAN; packed_block_scales_len(n, k)];
    pack_block_scales_transposed(&st, n, k, &mut pst);
    assert_eq!(ps, pst);
}

#[test]
#[should_panic(expected = "k not a multiple of 32")]
fn contract_block_k() {
    let mut y = [0.0; 4];
    let format = QuantFormat::Block(&[0.0; PACK_NR * 2]);
    Portable::gemv_i8(4, 40, &[0.0; 40], wts(&[0; PACK_NR * 40], format, None), &mut y);
}

#[test]
#[should_panic(expected = "packed scales too short")]
fn contract_block_scales() {
    let mut c = [0.0; 8];
    let format = QuantFormat::Block(&[0.0; 31]);
    Portable::gemm_i8(
        dims(2, 4, 64, 64, 4),
        &[0.0; 128],
        wts(&[0; PACK_NR * 64], format, None),
        &mut c,
    );
}

#[test]
#[should_panic(expected = "packed b too short")]
fn contract_b_len() {
    let mut y = [0.0; 4];
    let format = QuantFormat::PerTensor { scale: 1.0, offset: 0.0 };
    Portable::gemv_i8(4, 5, &[0.0; 5], wts(&[0; PACK_NR * 5], format, None), &mut y);
}

#[test]
#[should_panic(expected = "lda < k")]
fn contract_lda() {
    let mut c = [0.0; 8];
    let format = QuantFormat::PerTensor { scale: 1.0, offset: 0.0 };
    Portable::gemm_i8(dims(2, 4, 4, 3, 4), &[0.0; 8], wts(&[0; PACK_NR * 4], format, None), &mut c);
}

#[cfg(all(target_arch = "aarch64", feature = "neon"))]
#[test]
#[should_panic(expected = "x length")]
fn contract_neon_x_len() {
    let mut y = [0.0; 4];
    let format = QuantFormat::PerTensor { scale: 1.0, offset: 0.0 };
    neon_runtime::Neon::gemv_i8(4, 4, &[0.0; 3], wts(&[0; PACK_NR * 4], format, None), &mut y);
}
