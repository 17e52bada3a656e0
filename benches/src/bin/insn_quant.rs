//! Instruction-count workloads for the int8-weight kernels, next to the f32 kernels on the
//! same shapes (Moonshine base: d_model 416, MLP 1664, 413 encoder frames).
//!
//! Run under qemu-aarch64 with the insn-count plugin and `--region`, e.g.
//! `count-insns.sh --region --quiet --cpu neoverse-n1 target/.../insn_quant gemv-i8 416 1664`:
//! the measured call is bracketed by the plugin's marker system calls, so input setup,
//! weight packing and process start-up are not counted.
//!
//! Usage: `insn_quant WORKLOAD M K N` (`M` rows; GEMV workloads ignore it) with WORKLOAD
//! one of `gemv-f32`, `gemv-i8`, `gemv-i8-block`, `gemm-f32`, `gemm-i8`, `gemm-i8-block`,
//! `gemv-i8-dot`, `gemv-i8-block-dot` (the int8-activation GEMV: on aarch64 the `sdot` path,
//! which needs a CPU with dotprod), the same prefixed with `portable-` for the portable
//! backend. `gemv-i8` is the widening path.

use neon_benches::{data, region_start, region_stop};
use neon_runtime::kernels::cpu;
use neon_runtime::kernels::gemm::{pack_b, packed_b_len, GemmB};
use neon_runtime::kernels::quant::{
    pack_block_scales, pack_i8, packed_block_scales_len, packed_i8_len, QuantFormat, QuantGemm,
    QuantWeights, BLOCK_K,
};
use neon_runtime::{Backend, Portable};

#[cfg(target_arch = "aarch64")]
type Fast = neon_runtime::Neon;
#[cfg(not(target_arch = "aarch64"))]
type Fast = Portable;

fn int8(n: usize, seed: u32) -> Vec<i8> {
    data(n, seed).iter().map(|&v| (v * 127.0) as i8).collect()
}

fn run<B: Backend>(workload: &str, m: usize, k: usize, n: usize) -> f32 {
    let rows = if workload.starts_with("gemv") { 1 } else { m };
    let (a, bias) = (data(rows * k, 1), data(n, 3));
    let mut c = vec![0.0; rows * n];
    if workload == "gemv-f32" || workload == "gemm-f32" {
        let mut packed = vec![0.0; packed_b_len(n, k)];
        pack_b(&data(n * k, 2), n, k, &mut packed);
        region_start(1);
        if rows == 1 {
            B::gemv_packed_b(n, k, &a, &packed, Some(&bias), &mut c);
        } else {
            B::gemm_packed_b(GemmB::contiguous(m, n, k), &a, &packed, Some(&bias), &mut c);
        }
        region_stop(1);
        return c.iter().sum();
    }
    let (base, dot) = match workload.strip_suffix("-dot") {
        Some(base) => (base, true),
        None => (workload, false),
    };
    if !matches!(base, "gemv-i8" | "gemm-i8" | "gemv-i8-block" | "gemm-i8-block")
        || (dot && rows > 1)
    {
        eprintln!("unknown workload {workload}");
        std::process::exit(2);
    }
    if dot && B::NAME == "neon" {
        // The workload measures `sdot` (this also answers the detection before the region).
        assert!(cpu::aarch64_dotprod(), "no dotprod");
    }
    let mut packed = vec![0; packed_i8_len(n, k)];
    pack_i8(&int8(n * k, 2), n, k, &mut packed);
    let mut packed_scales = vec![0.0; packed_block_scales_len(n, k)];
    let format = if base.ends_with("-block") {
        let scales: Vec<f32> = data(n * k / BLOCK_K, 4).iter().map(|v| 1e-3 * (v + 2.0)).collect();
        pack_block_scales(&scales, n, k, &mut packed_scales);
        QuantFormat::Block(&packed_scales)
    } else {
        QuantFormat::PerTensor { scale: 3e-3, offset: -0.04 }
    };
    let w = QuantWeights { packed: &packed, format, bias: Some(&bias) };
    region_start(1);
    if dot {
        B::gemv_i8_dot(n, k, &a, w, &mut c);
    } else if rows == 1 {
        B::gemv_i8(n, k, &a, w, &mut c);
    } else {
        B::gemm_i8(QuantGemm::contiguous(m, n, k), &a, w, &mut c);
    }
    region_stop(1);
    c.iter().sum()
}

fn main() {
    neon_benches::sized_main(
        "usage: insn_quant [portable-]gemv-f32|gemv-i8|gemv-i8-block|gemv-i8-dot|gemv-i8-block-dot|gemm-f32|gemm-i8|gemm-i8-block M K N",
        "x",
        |w, [m, k, n]| run::<Portable>(w, m, k, n),
        |w, [m, k, n]| run::<Fast>(w, m, k, n),
    );
}
