//! microWakeWord tests of neon-models, one test binary (`cargo test -p neon-models --test mww`):
//! the frontend against pymicro-features ([`frontend`]), the model files and JSON
//! ([`models`]), the detector's arithmetic ([`detector`]), hostile files and audio
//! ([`hostile`]) and the detector end to end from audio ([`session`]).
//!
//! References: `models/microwakeword/goldens/` (tools/microwakeword/goldens.py and
//! goldens_crafted.py).

#[path = "../common/mod.rs"]
mod common;
#[path = "../../../tests/tests/common/mod.rs"]
mod thread_alloc;

mod detector;
mod frontend;
mod hostile;
mod models;
mod session;

use std::path::PathBuf;

/// The repository's root joined with `rel` (the goldens name their clips and JSON relative to
/// it).
fn repo(rel: &str) -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/..")).join(rel)
}

/// The clip goldens `models/microwakeword/goldens/<clip>.safetensors`, sorted: not the
/// per-op dumps `ops_*` nor the crafted models' `crafted_*`.
fn clip_goldens() -> Vec<PathBuf> {
    common::files_with_extension(&repo("models/microwakeword/goldens"), "safetensors", "goldens")
        .into_iter()
        .filter(|p| {
            let name = p.file_name().unwrap().to_string_lossy();
            !name.starts_with("ops_") && !name.starts_with("crafted_")
        })
        .collect()
}
