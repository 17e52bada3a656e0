//! Build-time configuration of `neon-runtime`: one `cfg` alias, no dependencies.
//!
//! `neon_x86` is set when the x86-64 SIMD kernels are compiled, that is exactly when
//!
//! ```text
//! all(target_arch = "x86_64", target_feature = "sse2", not(miri))
//! ```
//!
//! holds for the crate being built: an x86-64 target with hard-float SSE2 (the x86-64
//! baseline; a soft-float target such as `x86_64-unknown-none` lacks it and has no vector
//! registers to use), and not Miri (which interprets no `core::arch` intrinsics). Under it
//! live the `kernels::x86_simd` layer, the `X86<I>` hook overrides (GEMM, conv2d, pooling,
//! activations, attention, quantised kernels, FFT magnitudes) and the CPU level check in
//! `kernels::cpu`; elsewhere `X86<I>` falls back to the provided portable hooks and reports
//! no level as supported. The sources say `#[cfg(neon_x86)]` / `#[cfg(not(neon_x86))]`.
//!
//! Cargo describes the target to build scripts through `CARGO_CFG_*` variables, from the
//! same `rustc --print cfg` (with the target's `RUSTFLAGS`, so `-C target-feature=-sse2`
//! counts) that the crate's own `cfg` evaluates; `cargo miri` sets `CARGO_CFG_MIRI`.

use std::env;

fn main() {
    println!("cargo::rerun-if-changed=build.rs");
    println!("cargo::rustc-check-cfg=cfg(neon_x86)");

    let arch = env::var("CARGO_CFG_TARGET_ARCH").unwrap_or_default();
    let features = env::var("CARGO_CFG_TARGET_FEATURE").unwrap_or_default();
    let sse2 = features.split(',').any(|f| f == "sse2");
    let miri = env::var_os("CARGO_CFG_MIRI").is_some();

    if arch == "x86_64" && sse2 && !miri {
        println!("cargo::rustc-cfg=neon_x86");
    }
}
