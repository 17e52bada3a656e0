//! Benchmarks of neon: criterion benches in `benches/benches/`, aarch64 instruction-count
//! bench binaries in `benches/src/bin/`.
