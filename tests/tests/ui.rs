//! Compile-fail cases of `neon_plan!`: every error kind, each with a `.stderr` snapshot
//! that must point at the user's token. Host only (trybuild runs cargo; on aarch64 the file is
//! empty and trybuild is not a dependency).
#![cfg(not(target_arch = "aarch64"))]

#[test]
fn compile_fail() {
    let t = trybuild::TestCases::new();
    t.compile_fail("ui/*.rs");
}

/// The compiler output the docs show (the `error:` blocks of the guide, docs/neon-plan.md, and
/// of neon-macros' crate docs) is part of a compile-fail snapshot: the docs cannot drift from
/// what the macro prints.
#[test]
fn documented_errors_are_snapshots() {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/..");
    let read = |path: &str| {
        std::fs::read_to_string(format!("{root}/{path}")).unwrap_or_else(|e| panic!("{path}: {e}"))
    };
    let mut snapshots = Vec::new();
    for entry in std::fs::read_dir(format!("{root}/tests/ui")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "stderr") {
            snapshots.push(std::fs::read_to_string(path).unwrap());
        }
    }
    let crate_docs: String = read("neon-macros/src/lib.rs")
        .lines()
        .filter_map(|l| l.strip_prefix("//!").map(|d| d.strip_prefix(' ').unwrap_or(d)))
        .map(|l| format!("{l}\n"))
        .collect();
    for (name, text) in
        [("docs/neon-plan.md", read("docs/neon-plan.md")), ("neon-macros docs", crate_docs)]
    {
        let blocks: Vec<&str> = text
            .split("```text\n")
            .skip(1)
            .filter_map(|b| b.split("```").next())
            .filter(|b| b.starts_with("error:"))
            .collect();
        assert!(blocks.len() >= 2, "{name}: only {} error blocks found", blocks.len());
        for block in blocks {
            assert!(
                snapshots.iter().any(|s| s.contains(block.trim_end())),
                "{name}: this error block is in no tests/ui/*.stderr snapshot:\n{block}"
            );
        }
    }
}
