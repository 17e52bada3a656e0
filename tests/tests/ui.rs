//! Compile-fail cases of `neon_plan!`: every error kind, each with a `.stderr` snapshot
//! that must point at the user's token. Host only (trybuild runs cargo).

#[test]
#[cfg_attr(target_arch = "aarch64", ignore = "trybuild compiles on the host only")]
fn compile_fail() {
    let t = trybuild::TestCases::new();
    t.compile_fail("ui/*.rs");
}
