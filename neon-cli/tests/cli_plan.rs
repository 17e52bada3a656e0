//! `neon plan` as a user runs it: `--list`, the text report, `--json` against the registry,
//! `--svg` (a well-formed picture with one bar per value) and a one-line error for an
//! unknown name.
//!
//! Host only: under qemu-user the test process could not start the aarch64 `neon` binary
//! without a binfmt handler. The registry itself is tested on aarch64 too (`plans.rs`).
#![cfg(not(target_arch = "aarch64"))]

use std::process::{Command, Output};

use neon_models::plans::{PlanInfo, PLANS};
use serde_json::Value;

fn neon(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_neon")).args(args).output().unwrap()
}

fn stdout(o: &Output) -> String {
    assert!(o.status.success(), "neon failed: {}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8(o.stdout.clone()).unwrap()
}

fn plan(name: &str) -> &'static PlanInfo {
    PLANS.iter().find(|p| p.name == name).unwrap()
}

#[test]
fn list_prints_every_name_in_the_first_column() {
    let out = stdout(&neon(&["plan", "--list"]));
    let names: Vec<&str> = out.lines().map(|l| l.split_whitespace().next().unwrap()).collect();
    let want: Vec<&str> = PLANS.iter().map(|p| p.name).collect();
    assert_eq!(names, want);
    for name in [
        "openwakeword.embedding",
        "openwakeword.embedding_step",
        "openwakeword.head.layer_norm_128",
        "openwakeword.head.relu_128",
        "moonshine.encoder_stem",
        "moonshine.encoder_layer",
        "moonshine.encoder_norm",
        "moonshine.cross_kv",
        "moonshine.decoder_layer",
        "moonshine.decoder_head",
        "sanotts.decoder",
    ] {
        assert!(names.contains(&name), "{name} missing from {names:?}");
    }
}

/// `1234567` as the report prints it: `1,234,567`.
fn grouped(n: usize) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[test]
fn text_report_has_the_figures_and_one_bar_per_value() {
    for p in PLANS {
        let out = stdout(&neon(&["plan", p.name]));
        let field = |label: &str| {
            out.lines()
                .find_map(|l| l.strip_prefix(label))
                .unwrap_or_else(|| panic!("{}: no `{label}` in\n{out}", p.name))
                .trim()
                .to_string()
        };
        assert_eq!(field("plan"), p.name);
        assert_eq!(out.lines().nth(1).unwrap().trim(), p.description);
        assert_eq!(field("steps"), p.steps.to_string());
        assert_eq!(field("workspace bytes"), grouped(p.workspace_bytes));
        assert_eq!(field("lower bound bytes"), grouped(p.lower_bound_bytes));
        assert!(field("workspace / bound").starts_with(&format!("{:.4}", p.ratio())));
        assert!(!field("max workers").is_empty());
        // One row per value: name, offset or `caller`, bytes, then a bar with `#` exactly at
        // the live steps.
        for r in p.memory_map {
            let offset = r.offset.map_or("caller".to_string(), grouped);
            let row = out
                .lines()
                .find(|l| {
                    let f: Vec<&str> = l.split_whitespace().collect();
                    f.len() == 4 && f[0] == r.name && f[1] == offset && f[2] == grouped(r.bytes)
                })
                .unwrap_or_else(|| panic!("{}: no row for {r:?} in\n{out}", p.name));
            let bar = row.split_whitespace().nth(3).unwrap();
            assert_eq!(bar.len(), p.steps, "{row}");
            for (s, c) in bar.chars().enumerate() {
                let live = (r.first_step..=r.last_step).contains(&s);
                assert_eq!(c, if live { '#' } else { '.' }, "{}: {row}", p.name);
            }
        }
    }
}

#[test]
fn json_matches_the_registry() {
    for p in PLANS {
        let out = stdout(&neon(&["plan", p.name, "--json"]));
        assert_eq!(out.lines().count(), 1, "{out}");
        let v: Value = serde_json::from_str(&out).unwrap();
        let keys: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
        for k in ["name", "steps", "workspace_bytes", "lower_bound_bytes", "values"] {
            assert!(keys.contains(&k), "{k} missing: {keys:?}");
        }
        assert!(keys.len() <= 7, "{keys:?}");
        assert_eq!(v["name"], p.name);
        assert_eq!(v["description"], p.description);
        assert_eq!(v["steps"], p.steps);
        assert_eq!(v["workspace_bytes"], p.workspace_bytes);
        assert_eq!(v["lower_bound_bytes"], p.lower_bound_bytes);
        let values = v["values"].as_array().unwrap();
        assert_eq!(values.len(), p.memory_map.len());
        for (j, r) in values.iter().zip(p.memory_map) {
            assert_eq!(j.as_object().unwrap().len(), 5, "{j}");
            assert_eq!(j["name"], r.name);
            match r.offset {
                Some(o) => assert_eq!(j["offset"], o),
                None => assert!(j["offset"].is_null(), "{j}"),
            }
            assert_eq!(j["bytes"], r.bytes);
            assert_eq!(j["first_step"], r.first_step);
            assert_eq!(j["last_step"], r.last_step);
        }
    }
    // Caller-owned tensors are there, as null offsets.
    let v: Value =
        serde_json::from_str(&stdout(&neon(&["plan", "moonshine.decoder_layer", "--json"])))
            .unwrap();
    let k_cache = v["values"].as_array().unwrap().iter().find(|r| r["name"] == "k_cache").unwrap();
    assert!(k_cache["offset"].is_null());
}

/// Checks that `svg` is one balanced tree of tags rooted at `<svg>` (the `<?xml ?>`
/// declaration aside) with no stray `<` or `&` in text; returns the element names in order.
fn xml_elements(svg: &str) -> Vec<String> {
    let mut stack: Vec<String> = Vec::new();
    let mut names = Vec::new();
    let mut rest = svg.trim();
    if let Some(decl) = rest.strip_prefix("<?xml") {
        rest = &decl[decl.find("?>").expect("closed declaration") + 2..];
    }
    loop {
        let text_end = rest.find('<').unwrap_or(rest.len());
        let text = &rest[..text_end];
        for (i, _) in text.match_indices('&') {
            let entity = &text[i..];
            let end = entity.find(';').expect("entity ends with ;");
            assert!(end > 1 && !entity[1..end].contains(' '), "bad entity in {text:?}");
        }
        if stack.is_empty() && !names.is_empty() {
            assert!(text.trim().is_empty(), "text after the root: {text:?}");
        }
        rest = &rest[text_end..];
        if rest.is_empty() {
            break;
        }
        let end = rest.find('>').expect("tag closed");
        let tag = &rest[1..end];
        rest = &rest[end + 1..];
        assert!(!tag.contains('<'), "`<` inside tag {tag:?}");
        if let Some(name) = tag.strip_prefix('/') {
            assert_eq!(stack.pop().as_deref(), Some(name.trim()), "unbalanced </{name}>");
        } else {
            let self_closing = tag.ends_with('/');
            let name = tag.trim_end_matches('/').split_whitespace().next().unwrap().to_string();
            assert_eq!(tag.matches('"').count() % 2, 0, "unbalanced quotes in {tag:?}");
            if names.is_empty() {
                assert_eq!(name, "svg", "root element");
            } else {
                assert!(!stack.is_empty(), "second root element {name}");
            }
            names.push(name.clone());
            if !self_closing {
                stack.push(name);
            }
        }
    }
    assert!(stack.is_empty(), "unclosed {stack:?}");
    names
}

#[test]
fn svg_is_well_formed_with_one_bar_per_value() {
    let dir = tempfile::tempdir().unwrap();
    for p in PLANS {
        let path = dir.path().join(format!("{}.svg", p.name));
        let out = stdout(&neon(&["plan", p.name, "--svg", path.to_str().unwrap()]));
        assert!(out.starts_with("plan ") && out.contains(p.name), "the report still prints: {out}");
        let svg = std::fs::read_to_string(&path).unwrap();
        assert!(svg.starts_with("<?xml") || svg.starts_with("<svg"), "{}", &svg[..40]);
        let elements = xml_elements(&svg);
        // One rectangle per value (each with a tooltip), plus the background.
        assert_eq!(svg.matches("</rect>").count(), p.memory_map.len(), "{}", p.name);
        assert_eq!(elements.iter().filter(|e| *e == "rect").count(), p.memory_map.len() + 1);
        for r in p.memory_map {
            assert!(svg.contains(&format!(">{}</text>", r.name.replace('\'', "&apos;"))));
        }
    }
    // --svg and --json together: the file and the JSON.
    let path = dir.path().join("both.svg");
    let out = stdout(&neon(&[
        "plan",
        "openwakeword.head.relu_128",
        "--json",
        "--svg",
        path.to_str().unwrap(),
    ]));
    assert!(serde_json::from_str::<Value>(&out).is_ok() && path.is_file());
}

#[test]
fn unknown_names_and_unwritable_paths_are_one_line_errors() {
    let o = neon(&["plan", "moonshine.nope"]);
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("moonshine.nope") && err.contains("openwakeword.embedding"), "{err}");
    assert!(o.stdout.is_empty());

    let o = neon(&["plan", "moonshine.decoder_head", "--svg", "/nonexistent-dir/x.svg"]);
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("/nonexistent-dir/x.svg"), "{err}");

    // No name and no --list: clap's usage error.
    assert!(!neon(&["plan"]).status.success());
    assert!(!neon(&["plan", "--list", "moonshine.cross_kv"]).status.success());
}

#[test]
fn report_is_readable_for_the_longest_plan() {
    // openwakeword.embedding_step has 45 steps: its table rows stay under 100 columns.
    let p = plan("openwakeword.embedding_step");
    assert!(p.steps >= 40);
    let out = stdout(&neon(&["plan", p.name]));
    let rows: Vec<&str> = out.lines().filter(|l| l.ends_with('#') || l.ends_with('.')).collect();
    assert_eq!(rows.len(), p.memory_map.len(), "{out}");
    assert!(rows.iter().all(|l| l.chars().count() <= 100), "{out}");
    assert!(out.lines().any(|l| l.trim_start().starts_with("0         10        20")), "{out}");
}
