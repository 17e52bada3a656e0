//! Caller-owned state written in place at a run-time position (a KV-cache append), the
//! `crate = path` override, and validation of run-time scalars before the first kernel.

mod common;

use neon_macros::neon_plan;
use neon_runtime::ops::conv::Conv1d;
use neon_runtime::{Error, Portable};

/// The runtime under another path, as a crate that re-exports it would name it.
mod rt {
    pub use neon_runtime::*;
}

neon_plan! {
    /// Projects a chunk and appends it to a cache at position `pos`, then reads the cache.
    pub plan Append {
        crate = crate::rt;
        dim frames in 1..=16;
        scalar pos: usize;
        weight w: f32[4, 4, 1];
        input x: [4, frames];
        state cache: [4, 16];
        output y: [4, 16];

        let h = conv1d(x, w);
        cache = write_frames(cache, h, at = pos);
        y = relu(cache);
    }
}

fn weights() -> AppendWeights<Vec<f32>> {
    // Identity projection.
    let w = (0..16).map(|i| if i / 4 == i % 4 { 1.0 } else { 0.0 }).collect();
    AppendWeights { w: Conv1d::new(Append::W, w, None).unwrap() }
}

#[test]
fn appends_at_position_and_validates_first() {
    let w = weights();
    let mut ws = AppendWorkspace::new();
    let mut cache = vec![0.0f32; 64];
    let mut y = vec![0.0f32; 64];
    let x: Vec<f32> = (0..4 * 3).map(|i| i as f32 - 5.0).collect(); // [4, 3]
    Append::run::<Portable, _>(&w, &x, &mut y, &mut cache, 3, 2, &mut ws).unwrap();
    for c in 0..4 {
        assert_eq!(&cache[c * 16 + 2..c * 16 + 5], &x[c * 3..c * 3 + 3]);
        assert_eq!(cache[c * 16 + 1], 0.0);
    }
    assert!(y.iter().zip(&cache).all(|(a, b)| *a == b.max(0.0)));

    // pos + frames past the capacity: an error naming the scalar, nothing written.
    let before = (cache.clone(), y.clone());
    let (r, allocations) = common::count_allocations(|| {
        Append::run::<Portable, _>(&w, &x, &mut y, &mut cache, 3, 14, &mut ws)
    });
    assert_eq!(r, Err(Error::OutOfRange { name: "pos", value: 14, min: 0, max: 13 }));
    assert_eq!(allocations, 0);
    assert_eq!((cache.clone(), y.clone()), before);
    // The last valid position still works.
    Append::run::<Portable, _>(&w, &x, &mut y, &mut cache, 3, 13, &mut ws).unwrap();
    assert_eq!(cache[15], x[2]);
}

/// The workspace type is `const`-constructible, so it can live in a `static`.
static WORKSPACE: std::sync::Mutex<AppendWorkspace> = std::sync::Mutex::new(AppendWorkspace::new());

#[test]
fn workspace_in_a_static() {
    let w = weights();
    let mut cache = vec![0.0f32; 64];
    let mut y = vec![0.0f32; 64];
    let x = vec![1.0f32; 4];
    let mut ws = WORKSPACE.lock().unwrap();
    Append::run::<Portable, _>(&w, &x, &mut y, &mut cache, 1, 0, &mut ws).unwrap();
    assert_eq!(y[0], 1.0);
    assert_eq!(core::mem::align_of::<AppendWorkspace>(), 16);
    assert_eq!(core::mem::size_of::<AppendWorkspace>(), Append::WORKSPACE_BYTES);
    common::print_memory("Append", Append::WORKSPACE_BYTES, Append::LOWER_BOUND_BYTES);
}
