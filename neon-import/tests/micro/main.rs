//! neon-import's microWakeWord tests, one test binary (each binary costs a link on the host
//! and another for aarch64 in CI): `cargo test -p neon-import --test micro [MODULE::]`.
//!
//! - `tflite`: `tflite::parse_stream` on the 7 models (FACTS.md section 3) and crafted faults;
//! - `ops`: the int8 kernels against TFLite's per-op and clip goldens, through the naive
//!   reference interpreter `stream_ref`;
//! - `plan`: the stream plans against the clip goldens, allocation-free;
//! - `mutate` (host only): single-byte mutants of the 7 models are refused or consistent.
//!
//! The binary's global allocator counts allocations per thread (tests/tests/common), for
//! `plan`'s allocation-free runs; the other modules do not read it.

#[path = "../../../tests/tests/common/mod.rs"]
mod common;
mod support;

mod ops;
mod plan;
mod stream_ref;
mod tflite;

// The reader is the same portable code on every architecture; under qemu-aarch64 this
// module alone cost 30 s of CI's budget.
#[cfg(not(target_arch = "aarch64"))]
mod mutate;
