//! A dispatch allocates nothing, on any thread, and neither do the kernels that split their
//! output over a team (row, column and grid blocks): a process-wide counting allocator
//! (`tests/support/process_alloc.rs`; this test binary holds these tests and no test
//! harness: `harness = false` in Cargo.toml, so no other thread allocates meanwhile).

#[path = "../../tests/support/process_alloc.rs"]
mod process_alloc;

use neon_runtime::kernels::attention::AttentionGeometry;
use neon_runtime::kernels::conv2d::{im2col_gemm_in, PackedConv, Window2d};
use neon_runtime::kernels::gemm::{pack_a, pack_b, packed_a_len, packed_b_len, GemmA, GemmB};
use neon_runtime::kernels::quant::{
    pack_block_scales, pack_i8, packed_block_scales_len, packed_i8_len, QuantFormat, QuantGemm,
    QuantPath, QuantWeights,
};
use neon_runtime::kernels::{AttentionKernels, Conv2dKernels, GemmKernels, QuantKernels};
use neon_runtime::{FastBackend, Portable, Team, TeamOptions};
use std::sync::atomic::{AtomicUsize, Ordering};

fn dispatches_allocate_nothing_on_any_thread() {
    for spin in [true, false] {
        let team = Team::with_options(4, TeamOptions { spin }).unwrap();
        let sum = AtomicUsize::new(0);
        let work = |task: usize, worker: usize| {
            sum.fetch_add(task + worker, Ordering::Relaxed);
        };
        // Warm-up: the worker threads have started and parked at least once.
        for _ in 0..10 {
            team.run(8, &work).unwrap();
        }
        let before = process_alloc::allocated();
        for tasks in (0..500).map(|i| 1 + i % 11) {
            team.run(tasks, &work).unwrap();
        }
        let after = process_alloc::allocated();
        assert_eq!(after - before, 0, "allocations during 500 dispatches (spin: {spin})");
    }
}

/// The split kernels on a team of 4 (int8 GEMM of both formats, packed-A and packed-B f32
/// GEMMs, shapes that split by columns, by rows and both, conv2d's im2col + GEMM, a single
/// query's attention split over its heads) allocate nothing on any thread.
fn split_kernels_allocate_nothing<B>()
where
    B: GemmKernels + QuantKernels + Conv2dKernels + AttentionKernels,
{
    let team = Team::with_options(4, TeamOptions { spin: false }).unwrap();
    let (m, n, k) = (82, 416, 416);
    let a: Vec<f32> = (0..m * k).map(|i| (i % 7) as f32 * 0.1 - 0.3).collect();
    let mut q = vec![0i8; packed_i8_len(n, k)];
    let codes: Vec<i8> = (0..n * k).map(|i| (i % 255) as i8).collect();
    pack_i8(&codes, n, k, &mut q);
    let mut scales = vec![0.0; packed_block_scales_len(n, k)];
    pack_block_scales(&vec![0.01; n * k / 32], n, k, &mut scales);
    let w: Vec<f32> = (0..n * k).map(|i| (i % 5) as f32 * 0.1).collect();
    let mut pb = vec![0.0; packed_b_len(n, k)];
    pack_b(&w, n, k, &mut pb);
    let mut pa = vec![0.0; packed_a_len(24, 72)];
    pack_a(&w[..24 * 72], 24, 72, &mut pa);
    let bias = vec![0.5; n];
    let mut c = vec![0.0; m * n];
    let mut conv_out = vec![0.0; 24 * 2368];
    let b_conv = vec![0.25; 72 * 2368];
    let image = vec![0.5; 24 * 76 * 32];
    let mut col = vec![0.0; 72 * 2368];
    // openWakeWord's second conv: 1x3 "same", 24 -> 24 channels on 76 x 32.
    let window = Window2d {
        channels: 24,
        height: 76,
        width: 32,
        kernel_h: 1,
        kernel_w: 3,
        stride_h: 1,
        stride_w: 1,
        dilation_h: 1,
        dilation_w: 1,
        pad_top: 0,
        pad_left: 1,
        out_height: 76,
        out_width: 32,
    };
    let conv = PackedConv { packed: &pa, m: 24, bias: Some(&bias), epilogue: None };
    let scale = 0.125;
    let step =
        AttentionGeometry { q_frames: 1, len: 413, heads: 8, head_dim: 52, scale, causal: false };
    let mut att = vec![0.0; n];
    let kv: Vec<f32> = (0..413 * n).map(|i| (i % 11) as f32 * 0.05).collect();
    let mut run = |c: &mut [f32], conv_out: &mut [f32]| {
        for format in
            [QuantFormat::PerTensor { scale: 0.01, offset: 0.1 }, QuantFormat::Block(&scales)]
        {
            let w = QuantWeights { packed: &q, format, bias: Some(&bias) };
            for (rows, cols) in [(m, n), (3, n), (m, 32)] {
                let g = QuantGemm { m: rows, n: cols, k, lda: k, ldc: n };
                B::gemm_i8_in(&team, QuantPath::Widening, g, &a, w, c).unwrap();
                B::gemm_i8_in(&team, QuantPath::Dot, g, &a, w, c).unwrap();
            }
        }
        B::gemm_packed_b_in(&team, GemmB::contiguous(m, n, k), &a, &pb, Some(&bias), c).unwrap();
        let g = GemmA::contiguous(24, 2368, 72, 2368, 2368);
        B::gemm_packed_a_in(&team, g, &pa, &b_conv, Some(&bias), conv_out).unwrap();
        let out = (&mut conv_out[..24 * 2368], 2368);
        im2col_gemm_in::<B>(&team, (&image, window), (0, 2368), conv, &mut col, out).unwrap();
        B::attention_in(&team, (&a[..n], &kv, &kv), &mut att, step).unwrap();
    };
    // Warm-up: the worker threads have started and parked at least once.
    run(&mut c, &mut conv_out);
    let before = process_alloc::allocated();
    for _ in 0..3 {
        run(&mut c, &mut conv_out);
    }
    let after = process_alloc::allocated();
    assert_eq!(after - before, 0, "allocations during split kernel calls");
}

/// `harness = false` (Cargo.toml): the tests run on the main thread with no libtest threads
/// beside them (they allocate at moments of their own, which a process-wide counter would
/// see under load). The last line has `cargo test`'s form for `scripts/qemu_tests.py`.
fn main() {
    dispatches_allocate_nothing_on_any_thread();
    split_kernels_allocate_nothing::<Portable>();
    split_kernels_allocate_nothing::<FastBackend>();
    println!("test result: ok. 2 passed; 0 failed");
}
