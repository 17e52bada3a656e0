//! Quick start: a ConvNeXt block as one `neon_plan!` statement, run on 10 s of 16 kHz audio
//! features (1000 frames of 64 channels at a 10 ms hop) with the portable backend and, on
//! aarch64, the NEON backend. Prints the compiled memory map (the block's scratch is a
//! workspace value like any other) and the time per run.
//!
//!     cargo run --release -p neon-macros --example convnext_block

use std::time::Instant;

use neon_macros::neon_plan;
use neon_runtime::blocks::{ConvNeXt, ConvNeXtWeights};
use neon_runtime::{Backend, Portable};

neon_plan! {
    /// ConvNeXt block over `[64, frames]`: depthwise k=7, LayerNorm over channels,
    /// pointwise up x4, GELU, pointwise down, layer scale, residual.
    pub plan Block {
        dim frames in 1..=1000;
        weight blk: convnext[64, 256, 7];
        input x: [64, frames];
        output y: [64, frames];

        y = convnext(x, blk, eps = 1e-6);
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
    // The block's weights in PyTorch's layouts, packed once by the constructor with the
    // geometry the plan was compiled for.
    let blk = ConvNeXtWeights {
        dw_weight: values(64 * 7, 1, 0.3),
        dw_bias: values(64, 2, 0.1),
        norm_weight: vec![1.0; 64],
        norm_bias: vec![0.0; 64],
        pw1_weight: values(256 * 64, 3, 0.125),
        pw1_bias: values(256, 4, 0.1),
        pw2_weight: values(64 * 256, 5, 0.06),
        pw2_bias: values(64, 6, 0.1),
        gamma: vec![0.1; 64],
    };
    let weights = BlockWeights { blk: ConvNeXt::new(Block::BLK, blk)? };
    println!(
        "plan Block: {} steps, workspace {} bytes (lower bound {} bytes)",
        Block::STEPS,
        Block::WORKSPACE_BYTES,
        Block::LOWER_BOUND_BYTES
    );
    println!("{:<20} {:>10} {:>10} {:>6}", "value", "offset", "bytes", "steps");
    for r in Block::MEMORY_MAP {
        let off = r.offset.map_or("caller".to_string(), |o| o.to_string());
        println!("{:<20} {:>10} {:>10} {:>3}..{}", r.name, off, r.bytes, r.first_step, r.last_step);
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
