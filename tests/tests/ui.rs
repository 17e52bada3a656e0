//! Compile-fail cases of `neon_plan!`: every error kind, each with a `.stderr` snapshot
//! that must point at the user's token. Host only (trybuild runs cargo; on aarch64 the file is
//! empty and trybuild is not a dependency).
#![cfg(not(target_arch = "aarch64"))]

#[test]
fn compile_fail() {
    let t = trybuild::TestCases::new();
    t.compile_fail("ui/*.rs");
}
