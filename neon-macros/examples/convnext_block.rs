//! Quick start: a ConvNeXt block written as a `neon_plan!`, run on 10 s of 16 kHz audio
//! features (1000 frames of 64 channels at a 10 ms hop) with the portable backend and, on
//! aarch64, the NEON backend. Prints the compiled memory map and the time per run.
//!
//!     cargo run --release -p neon-macros --example convnext_block

use std::time::Instant;

use neon_macros::neon_plan;
use neon_runtime::ops::conv::{Conv1d, DepthwiseConv1d};
use neon_runtime::ops::elementwise::LayerScale;
use neon_runtime::ops::norm::LayerNorm;
use neon_runtime::{Backend, Portable};

neon_plan! {
    /// ConvNeXt block over `[64, frames]`: depthwise k=7, LayerNorm over channels,
    /// pointwise up x4, GELU, pointwise down, layer scale, residual.
    pub plan Block {
        dim frames in 1..=1000;
        weight dw: f32[64, 1, 7];
        weight dw_b: f32[64];
        weight norm: f32[64];
        weight norm_b: f32[64];
        weight up: f32[256, 64, 1];
        weight up_b: f32[256];
        weight down: f32[64, 256, 1];
        weight down_b: f32[64];
        weight gamma: f32[64];
        input x: [64, frames];
        output y: [64, frames];

        let h = depthwise_conv1d(x, dw, dw_b, padding = (3, 3));
        let h = layer_norm(h, norm, norm_b, eps = 1e-6);
        let h = conv1d(h, up, up_b);
        let h = gelu(h);
        let h = conv1d(h, down, down_b);
        let h = layer_scale(h, gamma);
        y = add(h, x);
    }
}

/// Deterministic pseudo-random values in [-scale, scale).
fn values(n: usize, seed: u64, scale: f32) -> Vec<f32> {
    let mut s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            ((s >> 40) as f32 / (1u64 << 24) as f32 * 2.0 - 1.0) * scale
        })
        .collect()
}

fn run<B: Backend>(w: &BlockWeights<Vec<f32>>, x: &[f32], frames: usize) -> (Vec<f32>, f64) {
    let mut ws = Box::new(BlockWorkspace::new());
    let mut y = vec![0.0; Block::y_len(frames)];
    Block::run::<B, _>(w, x, &mut y, frames, &mut ws).expect("valid sizes");
    let reps = 20;
    let t = Instant::now();
    for _ in 0..reps {
        Block::run::<B, _>(w, x, &mut y, frames, &mut ws).expect("valid sizes");
    }
    (y, t.elapsed().as_secs_f64() * 1e3 / reps as f64)
}

fn main() -> Result<(), neon_runtime::Error> {
    let weights = BlockWeights {
        dw: DepthwiseConv1d::new(Block::DW, values(64 * 7, 1, 0.3), Some(values(64, 2, 0.1)))?,
        norm: LayerNorm::new(Block::NORM, vec![1.0; 64], Some(vec![0.0; 64]))?,
        up: Conv1d::new(Block::UP, values(256 * 64, 3, 0.125), Some(values(256, 4, 0.1)))?,
        down: Conv1d::new(Block::DOWN, values(64 * 256, 5, 0.06), Some(values(64, 6, 0.1)))?,
        gamma: LayerScale::new(Block::GAMMA, vec![0.1; 64])?,
    };
    println!(
        "plan Block: {} steps, workspace {} bytes (lower bound {} bytes)",
        Block::STEPS,
        Block::WORKSPACE_BYTES,
        Block::LOWER_BOUND_BYTES
    );
    println!("{:<16} {:>10} {:>10} {:>6}", "value", "offset", "bytes", "steps");
    for r in Block::MEMORY_MAP {
        let off = r.offset.map_or("caller".to_string(), |o| o.to_string());
        println!("{:<16} {:>10} {:>10} {:>3}..{}", r.name, off, r.bytes, r.first_step, r.last_step);
    }

    let frames = 1000;
    let x = values(Block::x_len(frames), 7, 1.0);
    let (y, ms) = run::<Portable>(&weights, &x, frames);
    println!("portable: {ms:.3} ms per run of {frames} frames, y[0..4] = {:?}", &y[..4]);
    #[cfg(target_arch = "aarch64")]
    {
        let (yn, ms) = run::<neon_runtime::Neon>(&weights, &x, frames);
        let diff = y.iter().zip(&yn).map(|(a, b)| (a - b).abs()).fold(0.0f32, f32::max);
        println!("neon:     {ms:.3} ms per run, max |neon - portable| = {diff:e}");
    }
    // A wrong size is an error, never a panic, and the plan stays usable.
    let err =
        Block::run::<Portable, _>(&weights, &x, &mut [0.0; 10], frames, &mut BlockWorkspace::new());
    println!("wrong output length -> {}", err.unwrap_err());
    Ok(())
}
