//! `include/neon.h` is what cbindgen generates from `src/lib.rs` (and the modules it
//! declares, which cbindgen follows) with `cbindgen.toml`.
//! `NEON_UPDATE_HEADER=1 cargo test -p neon-capi --test header` rewrites it.
#![cfg(not(target_arch = "aarch64"))] // cbindgen is a host-only dev-dependency

use std::path::Path;

#[test]
fn committed_header_is_current() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let config = cbindgen::Config::from_file(dir.join("cbindgen.toml")).expect("cbindgen.toml");
    let bindings = cbindgen::Builder::new()
        .with_config(config)
        .with_src(dir.join("src/lib.rs"))
        .generate()
        .expect("cbindgen failed on src/lib.rs");
    let mut generated = Vec::new();
    bindings.write(&mut generated);
    let generated = String::from_utf8(generated).expect("header is UTF-8");
    let path = dir.join("include/neon.h");
    if std::env::var_os("NEON_UPDATE_HEADER").is_some_and(|v| v == "1") {
        std::fs::write(&path, &generated).expect("write include/neon.h");
        return;
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == generated,
        "neon-capi/include/neon.h is out of date: run \
         `NEON_UPDATE_HEADER=1 cargo test -p neon-capi --test header` and commit it"
    );
}
