#!/usr/bin/env bash
# The project's test command (CI runs exactly this). On a fresh Debian machine it installs what
# it needs (scripts/setup.sh), then runs: formatting, clippy on the host and for aarch64 with
# NEON, the no_std bare-metal build and the bare-metal openWakeWord and microWakeWord programs
# under qemu-system-aarch64 (checked against the goldens), the openWakeWord converter check (the
# committed weights and goldens regenerate from the official model files), the microWakeWord
# golden check (the official Python pipeline reproduces them bit for bit), the Moonshine fetch
# and converter check (downloads and converts the official model once into models/moonshine:
# the Moonshine tests and the models tarball need it), the aarch64 release tarballs
# (scripts/release.sh: glibc and static musl builds and the models tarball, the static binary
# smoke-tested under qemu-aarch64 with the extracted models), the host test suite, the
# aarch64 suite under qemu-aarch64 (default emulated CPU "max": dotprod, i8mm) and the kernel tests
# that reach a dotprod-dependent kernel again on a Cortex-A72 model (no dotprod) so the fallback
# paths run. The aarch64 suites cannot be skipped: a missing qemu
# or a run that executes no test fails the script.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TERM_COLOR=never
# Incremental caches only help repeated local builds; on a fresh CI machine they just fill the
# disk (several GB across the host and aarch64 profiles).
export CARGO_INCREMENTAL=0

# Each step prints the minutes:seconds elapsed since the script started, so a CI log shows
# where the time goes (the whole run must stay under 60 min on a 2-core machine).
step() { printf '\n=== [%d:%02d] %s\n' $((SECONDS / 60)) $((SECONDS % 60)) "$*"; }

step setup
scripts/setup.sh
echo "disk: $(df -h . | awk 'NR==2 {print $4 " free of " $2}')"

step "cargo fmt --check"
cargo fmt --all --check

step "crate dependencies: an app loading models from files (neon-models, features std) and the C API pull no command-line, audio-decoding or server crate"
for spec in "-p neon-models --no-default-features --features std" "-p neon-capi"; do
  # shellcheck disable=SC2086
  if cargo tree -e normal $spec --prefix none | grep -E '^(clap|indicatif|signal-hook|symphonia|rubato|hound) '; then
    echo "cargo tree -e normal $spec: lists an application crate (above)" >&2
    exit 1
  fi
done

step "clippy (host)"
cargo clippy --workspace --all-targets -- -D warnings

step "clippy (aarch64, neon)"
cargo clippy --workspace --all-targets --target aarch64-unknown-linux-gnu \
  --features neon-runtime/neon -- -D warnings

step "docs (warnings are errors)"
RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps --quiet

step "no_std build (aarch64-unknown-none, neon)"
cargo build -p neon-runtime --no-default-features --features neon --target aarch64-unknown-none

# models/bare-metal is its own workspace that builds only for aarch64-unknown-none (its
# .cargo/config.toml sets the target and the qemu-system-aarch64 runner). Its two programs check
# against the goldens (openWakeWord: every embedding and score; microWakeWord: every feature
# frame and every step's output, probability and decision of the four official models, whose
# stream plans build.rs compiles to Rust with static memory) and exit non-zero on a mismatch, an
# error, a panic or an exception; the timeouts catch a hang.
step "bare metal: openWakeWord and microWakeWord on aarch64-unknown-none under qemu-system-aarch64 (cortex-a72)"
(
  cd models/bare-metal
  cargo fmt --check
  cargo clippy --release -- -D warnings
  timeout 900 cargo run --release --bin oww-bare-metal
  timeout 300 cargo run --release --bin mww-bare-metal
)

step "openWakeWord converter: committed weights and goldens reproduce from the official files"
tools/openwakeword/check.sh

step "microWakeWord: goldens of the pymicro-wakeword/pymicro-features pipeline reproduce bit for bit and the frontend tables and per-op tensors regenerate (tools/microwakeword/check.sh, ~15 s warm, ~45 s from no venv)"
tools/microwakeword/check.sh

step "Moonshine: converter check (fetches and converts the official model once, then regenerates and compares)"
tools/moonshine/check.sh

# After the Moonshine check, which fetched the model: release.sh's own fetch.sh call then only
# checks the sha256s. Measured: 1 min 46 s with the aarch64 release dependencies already built
# (~2 min more when the musl target builds them), of which the models tarball ~3 s and the
# transcribe smoke test under qemu 11 s to 30 s (2-core VM, idle to busy).
step "release: aarch64 glibc and static musl tarballs and the models tarball (scripts/release.sh), the static binary under qemu"
scripts/release.sh

step "Silero VAD: converted weights and goldens reproduce from the silero-vad wheel (tools/silero_vad/check.sh, ~5 s warm, ~25 s from no venv)"
tools/silero_vad/check.sh

step "sanoTTS: the ONNX Runtime peer and the numpy f64 reference reproduce the committed goldens (tools/sanotts/check.sh, ~1 min from no venv)"
tools/sanotts/check.sh

# The host suite: what `cargo test --workspace` and `cargo test --workspace --lib` run, built
# by them and run by scripts/qemu_tests.py --host two executables at a time (one after
# another, as `cargo test` runs them, a core idles through the long single tests: 378 s of
# executables took 6.5 min), then the doc tests. `--lib` adds neon-models' and
# neon-wyoming's unit tests (`test = false` in their Cargo.toml, so the aarch64 build skips
# them); the runner runs each executable once. It fails on a failing executable or if no
# test ran.
host_json=$(mktemp)
step "host tests: build (cargo test --no-run, with --lib)"
cargo test --workspace --no-run --message-format=json-render-diagnostics >"$host_json"
cargo test --workspace --lib --no-run --message-format=json-render-diagnostics >>"$host_json"

step "host tests: two executables at a time (scripts/qemu_tests.py --host), then the doc tests"
python3 scripts/qemu_tests.py --host --jobs 2 <"$host_json"
cargo test --workspace --doc

step "neon serve soak test: 16 mixed clients for 75 s, RSS sampled (neon-cli/tests/serve_soak.rs, ~2 min)"
# The host build's own executable (`cargo test -p neon-cli` would build neon-cli's tree again
# under -p's narrower feature set: 1 min 24 s in CI).
NEON_SOAK_SECONDS=75 python3 scripts/qemu_tests.py --host --exe serve_soak --ignored <"$host_json"
rm -f "$host_json"

# Both Wyoming steps drive the `neon` the host tests built (without NEON they build it with
# `cargo test -p neon-cli`, which rebuilds the tree as above).
step "Wyoming: neon serve driven by the wyoming client library (tools/wyoming/test.sh, < 1 min)"
NEON=target/debug/neon tools/wyoming/test.sh

step "Wyoming: wyoming-bench stt against neon serve, 10 real clips, both modes; default and --vad-endpointing 0.7 checked, --vad off recorded (tools/wyoming_bench/stt.sh, < 2 min: ~20 s from no venv, ~11 s warm)"
NEON=target/debug/neon tools/wyoming_bench/stt.sh

# Budget: ~2.5 min for the instrumented build plus 7 s per target (10 targets).
step "fuzzing: every parser of untrusted input, 7 s each (fuzz/, cargo fuzz, libFuzzer)"
scripts/fuzz.sh 7

# The aarch64 suite: built once, then run by scripts/qemu_tests.py two executables at a time
# under qemu-aarch64 (most of them hold one or two long tests; run one after another, as
# `cargo test` does, a core stays idle). It fails on a failing executable or if no test ran.
# Budget: ~11 min build, ~10.5 min under qemu (624 s measured), ~50 s for the Cortex-A72 rerun.
aarch64_json=$(mktemp)
step "aarch64 tests: build (cargo test --no-run, neon)"
cargo test --workspace --target aarch64-unknown-linux-gnu --features neon-runtime/neon \
  --no-run --message-format=json-render-diagnostics >"$aarch64_json"

step "aarch64 tests under qemu-aarch64 (cpu max: dotprod, i8mm)"
python3 scripts/qemu_tests.py --jobs 2 <"$aarch64_json"

# The same build's runtime executables that reach a kernel chosen by the CPU's features
# (dotprod: the int8 GEMV's `dot` path, the int8 kernels' DotPath) again on a Cortex-A72
# model, so the fallbacks run: no second build. They are the runtime's unit tests (CPU
# detection) and the executables that use an int8 kernel or operator (grep Quant, quant, I8,
# i8_ in neon-runtime/tests), of parallel only quant_same_bits; every other kernel runs the
# same instructions on both CPUs (206 s of qemu time for all of them, ~85 s here).
step "aarch64 kernel tests under qemu-aarch64 (cpu cortex-a72, no dotprod)"
QEMU_CPU=cortex-a72 python3 scripts/qemu_tests.py --jobs 2 --package neon-runtime \
  --exe neon_runtime --exe quant --exe int8 --exe stream_plan --exe stream_hostile \
  --exe team_alloc --exe ops_facts --exe parallel:quant_same_bits <"$aarch64_json"
rm -f "$aarch64_json"

# The guide's example (docs/neon-plan.md) as a porter's crate outside the workspace, on path
# dependencies: it must build and run from its own manifest with the pools, scale_shift and
# reshape; without feature `std` an x86 level the build cannot run must be Error::Backend,
# not a panic. Budget: ~1 min (its own target directory: syn and the runtime build again).
step "neon_plan! from an outside crate: examples/kws (cargo run, tests with and without std)"
(
  cd examples/kws
  cargo fmt --check
  cargo clippy --all-targets -- -D warnings
  cargo run
  cargo test
  cargo test --no-default-features
)

step "C API example (host: static library, cc)"
examples/c/run.sh

step "C API example (aarch64: cross-built static library, qemu-aarch64)"
examples/c/run.sh --aarch64

step "all test suites passed"
echo "disk: $(df -h . | awk 'NR==2 {print $4 " free of " $2}'), target $(du -sh target | cut -f1)"
