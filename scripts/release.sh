#!/usr/bin/env bash
# Cross-builds the `neon` program (and the C library, when the workspace has `neon-capi`)
# for 64-bit ARM Linux and packs each build in a tarball with the README, the documentation
# (docs/), the licences and sha256 sums, then the models in one more, in dist/ (each with a .sha256):
#
#   neon-VERSION-aarch64-linux-gnu.tar.gz    glibc, dynamically linked; needs glibc <= 2.36
#                                            (Raspberry Pi OS / Debian bookworm; checked below)
#   neon-VERSION-aarch64-linux-musl.tar.gz   static (musl, linked by rust-lld with Rust's
#                                            self-contained musl): any aarch64 Linux
#   neon-models-VERSION.tar.gz               what the program reads at run time, converted:
#                                            Moonshine base-en (weights, tokenizer, a demo
#                                            recording), the Silero VAD weights (also built
#                                            into the program) and their licences, so a
#                                            board needs no Python
#
# The Moonshine files come from tools/moonshine/fetch.sh, run first: it converts them when
# they are missing and otherwise only checks their pinned sha256s (under a second), so a
# release never packs a stale or edited model. Then the smoke tests (skipped with --no-smoke):
# the static binary under qemu-aarch64 on committed clips, `neon wake`, and `neon transcribe`
# with the model directory of the extracted models tarball. Needs what scripts/setup.sh
# installs (gcc-aarch64-linux-gnu with its binutils, qemu-user, the rustup targets, python3
# with venv; fetch.sh also needs the Python package index on its first run).
# Usage: scripts/release.sh [--no-smoke]
set -euo pipefail
cd "$(dirname "$0")/.."

smoke=1
[ "${1:-}" = "--no-smoke" ] && smoke=0

# The binaries are stripped: no debug info to generate (the workspace's release profile keeps
# some for profiling on the host).
export CARGO_PROFILE_RELEASE_DEBUG=false

version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)

# Before the builds, so a machine that cannot provide the model fails in seconds.
echo "== tools/moonshine/fetch.sh (Moonshine base-en for the models tarball)"
tools/moonshine/fetch.sh || {
  echo "release: tools/moonshine/fetch.sh failed; the models tarball needs" \
    "models/moonshine/base-en.safetensors and tokenizer.bin (fetch.sh needs python3 with" \
    "venv, and the Python package index on its first run)" >&2
  exit 1
}

build() { # target
  local target=$1
  echo "== cargo build --release --target $target (neon, and the C library if present)"
  cargo build --release --locked --target "$target" -p neon-cli --bin neon
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

# dist/NAME (staged) -> its SHA256SUMS, dist/NAME.tar.gz and dist/NAME.tar.gz.sha256.
pack() { # name
  local name=$1
  # SHA256SUMS is created by the redirection but left out of the list (-name SHA256SUMS).
  # shellcheck disable=SC2094
  (cd "dist/$name" && find . -type f ! -name SHA256SUMS -print0 | sort -z | xargs -0 sha256sum > SHA256SUMS)
  tar -C dist -czf "dist/$name.tar.gz" "$name"
  (cd dist && sha256sum "$name.tar.gz" > "$name.tar.gz.sha256")
}

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
  cp -R docs "$stage/docs"
  cp LICENSE "$stage/licenses/LICENSE"
  cp models/openwakeword/LICENSE.md "$stage/licenses/openwakeword-models.md"
  pack "$name"
  echo "dist/$name.tar.gz: $(du -h "dist/$name.tar.gz" | cut -f1), neon $(du -h "$stage/neon" | cut -f1)"
done

# The models tarball: what `neon transcribe`, `neon listen`, `neon bench` and
# `neon serve --model-dir` read, so a board needs no Python converter. The VAD weights are
# compiled into the program; the copy here is for reference (and other programs).
name=neon-models-$version
stage=dist/$name
rm -rf "$stage"
mkdir -p "$stage/moonshine" "$stage/vad" "$stage/licenses"
cp models/moonshine/base-en.safetensors models/moonshine/tokenizer.bin \
  models/moonshine/beckett.wav "$stage/moonshine/"
cp models/vad/silero_vad.safetensors "$stage/vad/"
cp models/moonshine/LICENSE.md "$stage/licenses/moonshine.md"
cp models/vad/LICENSE.md "$stage/licenses/silero-vad.md"
cat >"$stage/README.txt" <<README
neon models $version: the model files of neon $version, converted for the program, for 64-bit
ARM Linux boards (no Python needed). Use them with neon-$version-aarch64-linux-musl.tar.gz or
neon-$version-aarch64-linux-gnu.tar.gz.

  moonshine/base-en.safetensors  Moonshine base-en speech recognition (int8 weights)
  moonshine/tokenizer.bin        its tokenizer
  moonshine/beckett.wav          a recording from the same package, to try it (neon bench
                                 times it when it is in --model-dir)
  vad/silero_vad.safetensors     Silero VAD; the same weights are built into neon, which
                                 never reads this copy
  licenses/                      where each model comes from, and its licence (both MIT)
  SHA256SUMS                     \`sha256sum -c SHA256SUMS\` checks every file

Next to the extracted program tarball:

  tar xzf neon-models-$version.tar.gz
  (cd neon-models-$version && sha256sum -c SHA256SUMS)
  cd neon-$version-aarch64-linux-musl
  ./neon transcribe --model-dir ../neon-models-$version/moonshine ../neon-models-$version/moonshine/beckett.wav
  # Home Assistant (Wyoming): the built-in wake words and speech recognition on port 10300
  ./neon serve --uri tcp://0.0.0.0:10300 --model-dir ../neon-models-$version/moonshine

The program's docs/ say more (docs/deploying-on-a-pi.md, docs/serving.md).
README
pack "$name"
echo "dist/$name.tar.gz: $(du -h "dist/$name.tar.gz" | cut -f1)"

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

  # As on a board: the models tarball extracted elsewhere and checked, its directory given.
  # The shortest clip (2.1 s). Measured under qemu-aarch64 on a 2-core x86-64 VM: 11 s to 14 s
  # idle, 18 s to 30 s while other builds kept both cores busy.
  echo "== smoke test: neon transcribe under qemu-aarch64 with the extracted models tarball"
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  tar -C "$tmp" -xzf "dist/neon-models-$version.tar.gz"
  (cd "$tmp/neon-models-$version" && sha256sum --quiet -c SHA256SUMS)
  start=$SECONDS
  out=$(qemu-aarch64 "dist/neon-$version-aarch64-linux-musl/neon" transcribe \
    --model-dir "$tmp/neon-models-$version/moonshine" models/speech/clips/cmu_goforward.wav)
  echo "$out ($((SECONDS - start)) s under qemu)"
  grep -qi "forward" <<<"$out" || { echo "smoke test: no \"forward\" in the transcript" >&2; exit 1; }
fi
