#!/usr/bin/env bash
# Cross-builds the `neon` program (and the C library, when the workspace has `neon-capi`)
# for 64-bit ARM Linux and packs each build in a tarball with the README, the licences and
# sha256 sums, in dist/:
#
#   neon-VERSION-aarch64-linux-gnu.tar.gz    glibc, dynamically linked; needs glibc <= 2.36
#                                            (Raspberry Pi OS / Debian bookworm; checked below)
#   neon-VERSION-aarch64-linux-musl.tar.gz   static (musl, linked by rust-lld with Rust's
#                                            self-contained musl): any aarch64 Linux
#
# Then it runs the static binary under qemu-aarch64 on a committed clip (`neon wake`) as a
# smoke test. Needs what scripts/setup.sh installs (gcc-aarch64-linux-gnu with its binutils,
# qemu-user, the rustup targets). Usage: scripts/release.sh [--no-smoke]
set -euo pipefail
cd "$(dirname "$0")/.."

smoke=1
[ "${1:-}" = "--no-smoke" ] && smoke=0

# The binaries are stripped: no debug info to generate (the workspace's release profile keeps
# some for profiling on the host).
export CARGO_PROFILE_RELEASE_DEBUG=false

version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)

build() { # target
  local target=$1
  echo "== cargo build --release --target $target (neon, and the C library if present)"
  cargo build --release --locked --target "$target" -p neon-models --bin neon
  if [ -d neon-capi ]; then
    cargo build --release --locked --target "$target" -p neon-capi --lib
  fi
}

# glibc build: Debian's cross gcc links against its aarch64 glibc (bookworm's 2.36).
build aarch64-unknown-linux-gnu
# Static musl build: rust-lld with the target's self-contained crt and libc, no C toolchain.
CARGO_TARGET_AARCH64_UNKNOWN_LINUX_MUSL_LINKER=rust-lld \
  CARGO_TARGET_AARCH64_UNKNOWN_LINUX_MUSL_RUSTFLAGS="-C link-self-contained=yes -C target-feature=+crt-static" \
  build aarch64-unknown-linux-musl

mkdir -p dist
for libc in gnu musl; do
  target=aarch64-unknown-linux-$libc
  name=neon-$version-aarch64-linux-$libc
  stage=dist/$name
  rm -rf "$stage"
  mkdir -p "$stage/licenses"
  cp "target/$target/release/neon" "$stage/"
  aarch64-linux-gnu-strip "$stage/neon"
  if [ -d neon-capi ]; then
    mkdir -p "$stage/lib" "$stage/include"
    cp "target/$target/release/libneon_capi.a" "$stage/lib/"
    aarch64-linux-gnu-strip --strip-debug "$stage/lib/libneon_capi.a"
    if [ -f "target/$target/release/libneon_capi.so" ]; then
      cp "target/$target/release/libneon_capi.so" "$stage/lib/"
      aarch64-linux-gnu-strip "$stage/lib/libneon_capi.so"
    fi
    cp neon-capi/include/neon.h "$stage/include/"
  fi
  cp README.md "$stage/"
  cp LICENSE "$stage/licenses/LICENSE"
  cp models/openwakeword/LICENSE.md "$stage/licenses/openwakeword-models.md"
  (cd "$stage" && find . -type f ! -name SHA256SUMS -print0 | sort -z | xargs -0 sha256sum > SHA256SUMS)
  tar -C dist -czf "dist/$name.tar.gz" "$name"
  (cd dist && sha256sum "$name.tar.gz" > "$name.tar.gz.sha256")
  echo "dist/$name.tar.gz: $(du -h "dist/$name.tar.gz" | cut -f1), neon $(du -h "$stage/neon" | cut -f1)"
done

# The glibc build must run on bookworm: no symbol newer than glibc 2.36.
newest=$(aarch64-linux-gnu-objdump -T "dist/neon-$version-aarch64-linux-gnu/neon" |
  sed -n 's/.*GLIBC_\([0-9.]*\).*/\1/p' | sort -V | tail -1)
echo "glibc build: newest symbol version GLIBC_$newest"
if [ "$(printf '%s\n2.36\n' "$newest" | sort -V | tail -1)" != "2.36" ]; then
  echo "the glibc build needs glibc $newest, newer than bookworm's 2.36" >&2
  exit 1
fi
# The musl build must be static.
if aarch64-linux-gnu-readelf -l "dist/neon-$version-aarch64-linux-musl/neon" | grep -q INTERP; then
  echo "the musl build is not static" >&2
  exit 1
fi

if [ "$smoke" = 1 ]; then
  echo "== smoke test: the static binary under qemu-aarch64 on a committed clip"
  out=$(qemu-aarch64 "dist/neon-$version-aarch64-linux-musl/neon" wake \
    models/openwakeword/clips/hey_jarvis.wav --model hey_jarvis)
  echo "$out"
  grep -q "hey_jarvis_v0.1" <<<"$out" || { echo "smoke test: no detection" >&2; exit 1; }
fi
