#!/usr/bin/env bash
# Regenerates neon-macros/docs/expanded.md: the expansion of the crate docs' example plan,
# formatted, as `cargo expand` would show it. Needs a nightly toolchain (-Zunpretty).
set -euo pipefail
cd "$(dirname "$0")/.."
src=tests/tests/zz_expand_example.rs
trap 'rm -f "$src"' EXIT
cat > "$src" <<'PLAN'
use neon_macros::neon_plan;
neon_plan! {
    /// conv1d -> ReLU -> residual add, over any number of frames up to 1000.
    pub plan Block {
        dim frames in 1..=1000;
        weight w: f32[16, 16, 3];
        weight b: f32[16];
        input x: [16, frames];
        output y: [16, frames];

        let h = conv1d(x, w, b, padding = (1, 1));
        let h = relu(h);
        y = add(h, x);
    }
}
PLAN
out=$(mktemp)
(cd tests && cargo +nightly rustc --quiet --test zz_expand_example --profile test -- -Zunpretty=expanded) > "$out"
rustfmt +nightly --edition 2021 --config normalize_doc_attributes=true "$out"
{
  echo '```rust,ignore'
  sed -n '/^\/\/\/ conv1d -> ReLU/,/^#\[rustc_main\]/p' "$out" | sed '$d'
  echo '```'
} > neon-macros/docs/expanded.md
rm -f "$out"
echo "wrote neon-macros/docs/expanded.md"
