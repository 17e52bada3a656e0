#!/usr/bin/env bash
# Installs everything the build and the tests need on a fresh Debian 12 x86_64 machine (root):
# the pinned Rust toolchain with its aarch64 targets, and Debian's aarch64 cross linker and
# qemu-user for running the aarch64 tests; qemu-system-arm (without its recommended GUI, block
# and network extras) for the bare-metal program; python3-venv, espeak-ng and sox for the
# openWakeWord converter check (tools/openwakeword/check.sh installs its own pinned Python
# packages in a venv under target/). Idempotent: a machine that has it all skips each step.
set -euo pipefail
cd "$(dirname "$0")/.."

# rust-toolchain.toml pins the toolchain; rustup installs it on first use. Targets explicitly,
# since an already-installed toolchain does not always gain the targets the file lists.
rustup show active-toolchain >/dev/null
rustup target add aarch64-unknown-linux-gnu aarch64-unknown-linux-musl aarch64-unknown-none >/dev/null

need=()
command -v qemu-aarch64 >/dev/null || need+=(qemu-user)
command -v aarch64-linux-gnu-gcc >/dev/null || need+=(gcc-aarch64-linux-gnu)
[ -e /usr/aarch64-linux-gnu/lib/libc.so.6 ] || need+=(libc6-dev-arm64-cross)
python3 -c 'import venv, ensurepip' 2>/dev/null || need+=(python3-venv)
command -v espeak-ng >/dev/null || need+=(espeak-ng)
command -v sox >/dev/null || need+=(sox)
# libFuzzer (built by the fuzz targets' libfuzzer-sys) is C++.
command -v g++ >/dev/null || need+=(g++)
lean=()
command -v qemu-system-aarch64 >/dev/null || lean+=(qemu-system-arm)
if [ $((${#need[@]} + ${#lean[@]})) -gt 0 ]; then
  if [ "$(id -u)" != 0 ]; then
    echo "setup: missing Debian packages: ${need[*]} ${lean[*]}" \
      "(run as root, or apt-get install them)" >&2
    exit 1
  fi
  apt-get update -qq
  if [ ${#need[@]} -gt 0 ]; then
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
  fi
  if [ ${#lean[@]} -gt 0 ]; then
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${lean[@]}" >/dev/null
  fi
fi
# cargo-fuzz runs the fuzz targets (fuzz/); from crates.io, pinned.
cargo fuzz --version >/dev/null 2>&1 || cargo install cargo-fuzz --locked --version 0.13.2 >/dev/null 2>&1
echo "setup: toolchain $(rustc --version | cut -d' ' -f2), $(qemu-aarch64 --version | head -1)," \
  "$(qemu-system-aarch64 --version | head -1)"
