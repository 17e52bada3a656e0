//! Runs the keyword-spotting plan once on the fastest backend this machine and build can
//! run, prints its memory map and the class probabilities, and shows a bad call returning an
//! error.
//!
//!     cargo run --manifest-path examples/kws/Cargo.toml

use neon_kws_example::model::{Kws, KwsWorkspace};
use neon_kws_example::weights::{example_features, RawWeights};
use neon_runtime::{dispatch, BackendKind, Portable};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let weights = RawWeights::example().prepare()?;
    println!(
        "plan Kws: {} steps, workspace {} bytes (lower bound {} bytes)",
        Kws::STEPS,
        Kws::WORKSPACE_BYTES,
        Kws::LOWER_BOUND_BYTES
    );
    println!("{:<16} {:>8} {:>8}  steps", "value", "offset", "bytes");
    for r in Kws::MEMORY_MAP {
        let offset = r.offset.map_or("caller".to_string(), |o| o.to_string());
        println!("{:<16} {:>8} {:>8}  {}..={}", r.name, offset, r.bytes, r.first_step, r.last_step);
    }

    // 98 frames: one second of audio at a 10 ms hop with a 25 ms window.
    let frames = 98;
    let x = example_features(frames);
    let mut y = [0.0f32; 12];
    // The workspace is a plain struct of a size known at compile time: a `static`, the stack
    // or, as here, a box.
    let mut ws = Box::new(KwsWorkspace::new());
    let kind = BackendKind::best();
    dispatch!(kind, B => Kws::run::<B, _>(&weights, &x, &mut y, frames, &mut ws))??;
    let best = (0..12).max_by(|&a, &b| y[a].total_cmp(&y[b])).unwrap_or(0);
    println!("backend {}: class {best}, p = {:.4}", kind.name(), y[best]);
    println!("probabilities: {y:.4?}");

    // A wrong frame count is an error before any kernel runs, and the plan stays usable.
    let err = Kws::run::<Portable, _>(&weights, &x, &mut y, 101, &mut ws).unwrap_err();
    println!("frames = 101 -> {err}");
    Ok(())
}
