//! The guide (`docs/neon-plan.md`) shows the grammar and the operator table of the crate
//! documentation: this test keeps its copies, between `<!-- grammar:begin -->` /
//! `<!-- grammar:end -->` and `<!-- operators:begin -->` / `<!-- operators:end -->`, equal to
//! `docs/grammar.md` and to the rendering of the operator table (`NEON_BLESS=1` rewrites
//! them).

use crate::signatures::table;

const GUIDE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/neon-plan.md");

/// `text` with the block between the `marker` comments replaced by `content`.
fn with_block(text: &str, marker: &str, content: &str) -> String {
    let (begin, end) = (format!("<!-- {marker}:begin -->\n"), format!("<!-- {marker}:end -->"));
    let start =
        text.find(&begin).unwrap_or_else(|| panic!("no {begin} in the guide")) + begin.len();
    let stop = text[start..].find(&end).unwrap_or_else(|| panic!("no {end} in the guide")) + start;
    format!("{}{content}{}", &text[..start], &text[stop..])
}

#[test]
fn guide_blocks_are_current() {
    let guide = std::fs::read_to_string(GUIDE).expect("read docs/neon-plan.md");
    let grammar = include_str!("../docs/grammar.md");
    let want = with_block(&guide, "grammar", grammar);
    let want = with_block(&want, "operators", &table::markdown());
    if std::env::var_os("NEON_BLESS").is_some() {
        std::fs::write(GUIDE, &want).expect("write docs/neon-plan.md");
        return;
    }
    assert!(
        guide == want,
        "docs/neon-plan.md's grammar or operator table differs from neon-macros/docs/grammar.md \
         or signatures/table.rs: rerun with NEON_BLESS=1 and review the diff"
    );
}
