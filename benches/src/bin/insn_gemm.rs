//! Instruction-count workloads for the packed GEMM / GEMV kernels and matrixmultiply.
//!
//! Run under `benches/insn-count.sh` (qemu-aarch64 with the insn-count plugin, `--region`):
//! the measured call is bracketed by the plugin's marker system calls, so input setup,
//! weight packing done at prepare time and the process start-up are not counted.
//!
//! Usage: `insn_gemm WORKLOAD` with WORKLOAD one of
//! - `gemm-b`: `GemmKernels::gemm_packed_b`, 256x256x256, weights packed beforehand;
//! - `gemm-b-pack`: `pack_b` + `gemm_packed_b` in the region (packing counted);
//! - `gemm-a`: `GemmKernels::gemm_packed_a`, 256x256x256, weights packed beforehand;
//! - `gemv`: `GemmKernels::gemv_packed_b`, 1024x1024;
//! - `mm-gemm`: `matrixmultiply::sgemm`, 256x256x256 (it packs both operands per call);
//! - `mm-gemv`: `matrixmultiply::sgemm` with m = 1, 1024x1024;
//! - `portable-gemm-b`, `portable-gemm-a`, `portable-gemv`: the portable backend on the same problems.
//!
//! On aarch64 the backend is `Neon` (the crate enables `neon-runtime/neon` there); elsewhere
//! the binary builds (so the workspace builds everywhere) and runs without markers.

use neon_benches::{data, region_start, region_stop};
use neon_runtime::kernels::gemm::{pack_a, pack_b, packed_a_len, packed_b_len, GemmA, GemmB};
use neon_runtime::kernels::GemmKernels;
use neon_runtime::Portable;

#[cfg(target_arch = "aarch64")]
type Fast = neon_runtime::Neon;
#[cfg(not(target_arch = "aarch64"))]
type Fast = Portable;

fn gemm_b<B: GemmKernels>(s: usize, pack_in_region: bool) -> f32 {
    let (a, w, bias) = (data(s * s, 1), data(s * s, 2), data(s, 3));
    let mut packed = vec![0.0; packed_b_len(s, s)];
    let mut c = vec![0.0; s * s];
    if !pack_in_region {
        pack_b(&w, s, s, &mut packed);
    }
    region_start(1);
    if pack_in_region {
        pack_b(&w, s, s, &mut packed);
    }
    B::gemm_packed_b(GemmB::contiguous(s, s, s), &a, &packed, Some(&bias), &mut c);
    region_stop(1);
    c.iter().sum()
}

fn gemm_a<B: GemmKernels>(s: usize) -> f32 {
    let (w, b, bias) = (data(s * s, 1), data(s * s, 2), data(s, 3));
    let mut packed = vec![0.0; packed_a_len(s, s)];
    pack_a(&w, s, s, &mut packed);
    let mut c = vec![0.0; s * s];
    region_start(1);
    B::gemm_packed_a(GemmA::contiguous(s, s, s, s, s), &packed, &b, Some(&bias), &mut c);
    region_stop(1);
    c.iter().sum()
}

fn gemv<B: GemmKernels>(s: usize) -> f32 {
    let (x, w, bias) = (data(s, 1), data(s * s, 2), data(s, 3));
    let mut packed = vec![0.0; packed_b_len(s, s)];
    pack_b(&w, s, s, &mut packed);
    let mut y = vec![0.0; s];
    region_start(1);
    B::gemv_packed_b(s, s, &x, &packed, Some(&bias), &mut y);
    region_stop(1);
    y.iter().sum()
}

/// matrixmultiply's `C = A · W^T` (`W` read transposed through its strides), `m` rows.
fn mm(m: usize, s: usize) -> f32 {
    let (a, w) = (data(m * s, 1), data(s * s, 2));
    let mut c = vec![0.0; m * s];
    region_start(1);
    // SAFETY: a is m x s (row stride s), w^T is s x s read with row stride 1 and column
    // stride s, c is m x s; all pointers cover those extents.
    unsafe {
        matrixmultiply::sgemm(
            m,
            s,
            s,
            1.0,
            a.as_ptr(),
            s as isize,
            1,
            w.as_ptr(),
            1,
            s as isize,
            0.0,
            c.as_mut_ptr(),
            s as isize,
            1,
        );
    }
    region_stop(1);
    c.iter().sum()
}

fn main() {
    let workload = std::env::args().nth(1).unwrap_or_default();
    let checksum = match workload.as_str() {
        "gemm-b" => gemm_b::<Fast>(256, false),
        "gemm-b-pack" => gemm_b::<Fast>(256, true),
        "gemm-a" => gemm_a::<Fast>(256),
        "gemv" => gemv::<Fast>(1024),
        "mm-gemm" => mm(256, 256),
        "mm-gemv" => mm(1, 1024),
        "portable-gemm-b" => gemm_b::<Portable>(256, false),
        "portable-gemm-a" => gemm_a::<Portable>(256),
        "portable-gemv" => gemv::<Portable>(1024),
        _ => {
            eprintln!(
                "usage: insn_gemm gemm-b|gemm-b-pack|gemm-a|gemv|mm-gemm|mm-gemv|\
                 portable-gemm-b|portable-gemm-a|portable-gemv"
            );
            std::process::exit(2);
        }
    };
    // Printing the checksum keeps the computation observable.
    println!("{workload}: checksum {checksum}");
}
