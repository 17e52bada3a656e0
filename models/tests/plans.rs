//! The plan registry (`neon_models::plans`): complete, and every registered plan's memory
//! map is sound and its workspace within 2% of the lower bound (DESIGN.md's target).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use neon_models::plans::{find, PlanInfo, PLANS};
use neon_runtime::plan::{align_up, ALIGN};
use neon_runtime::workspace::MemoryRegion;

/// Largest total of aligned workspace bytes live at one step, read from the memory map
/// alone. Regions at the same offset live at the same step are one buffer (an in-place
/// hand-over) and count once, at the larger size.
fn map_peak(plan: &PlanInfo) -> usize {
    (0..plan.steps.max(1))
        .map(|s| {
            let mut at: BTreeMap<usize, usize> = BTreeMap::new();
            for r in plan.memory_map {
                if let Some(o) = r.offset {
                    if r.first_step <= s && s <= r.last_step {
                        let b = align_up(r.bytes).unwrap();
                        let e = at.entry(o).or_default();
                        *e = (*e).max(b);
                    }
                }
            }
            at.values().sum::<usize>()
        })
        .max()
        .unwrap_or(0)
}

#[test]
fn every_plan_is_within_two_percent_of_its_lower_bound() {
    for p in PLANS {
        assert!(p.lower_bound_bytes <= p.workspace_bytes, "{}", p.name);
        assert!(
            p.workspace_bytes * 100 <= p.lower_bound_bytes * 102,
            "{}: workspace {} bytes, lower bound {} ({:.4})",
            p.name,
            p.workspace_bytes,
            p.lower_bound_bytes,
            p.ratio()
        );
        // The bound the plan reports is not below what its own map shows live at once
        // (else the ratio above would flatter the planner).
        assert!(map_peak(p) <= p.lower_bound_bytes, "{}: map peak {}", p.name, map_peak(p));
        assert_eq!(p.workspace_bytes % ALIGN, 0, "{}", p.name);
    }
}

#[test]
fn every_region_lies_in_the_workspace_and_in_the_schedule() {
    for p in PLANS {
        assert!(!p.memory_map.is_empty(), "{}", p.name);
        for r in p.memory_map {
            assert!(r.first_step <= r.last_step && r.last_step < p.steps, "{}: {r:?}", p.name);
            if let Some(o) = r.offset {
                assert_eq!(o % ALIGN, 0, "{}: {r:?}", p.name);
                assert!(o + r.bytes <= p.workspace_bytes, "{}: {r:?}", p.name);
            }
        }
    }
}

/// Two workspace values live at a common step never share a byte, except an in-place
/// hand-over: an elementwise step writing its output over its input, at the same offset,
/// at the input's last step and the output's first. (The map does not record aliases, so
/// any such pair passes; the planner's own tests check aliases exactly.)
#[test]
fn values_live_together_never_overlap_in_memory() {
    for p in PLANS {
        let placed: Vec<(&MemoryRegion, usize)> =
            p.memory_map.iter().filter_map(|r| r.offset.map(|o| (r, o))).collect();
        for (i, &(a, oa)) in placed.iter().enumerate() {
            for &(b, ob) in &placed[i + 1..] {
                let time = a.first_step <= b.last_step && b.first_step <= a.last_step;
                let space = oa < ob + b.bytes && ob < oa + a.bytes;
                let hand_over =
                    oa == ob && (a.last_step == b.first_step || b.last_step == a.first_step);
                assert!(
                    !(time && space) || hand_over,
                    "{}: {} and {} overlap in time and memory",
                    p.name,
                    a.name,
                    b.name
                );
            }
        }
    }
}

#[test]
fn names_are_unique_dotted_lowercase_and_found() {
    for (i, p) in PLANS.iter().enumerate() {
        assert!(PLANS[..i].iter().all(|q| q.name != p.name), "{} twice", p.name);
        assert!(
            p.name.contains('.')
                && p.name.split('.').all(|part| !part.is_empty()
                    && part
                        .chars()
                        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')),
            "{}",
            p.name
        );
        let family = p.name.split('.').next().unwrap_or("");
        let families = ["openwakeword", "moonshine", "sanotts", "silero_vad"];
        assert!(families.contains(&family), "{}", p.name);
        assert!(!p.description.is_empty() && !p.description.contains('\n'), "{}", p.name);
        assert_eq!(find(p.name), Some(p));
    }
    assert_eq!(find("openwakeword"), None);
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// Every plan compiled in `models/src` is registered: as many entries as `plan Name {`
/// headers with a literal name, plus the invocations of `layer_norm_head!` (whose one
/// header `plan $name {` expands once per head). A new plan-generating macro must be
/// counted here too.
#[test]
fn the_registry_lists_every_plan_in_the_crate() {
    let mut files = Vec::new();
    rust_files(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"), &mut files);
    let mut plans = 0;
    for f in &files {
        for l in std::fs::read_to_string(f).unwrap().lines() {
            // Only head.rs's invocations at item level (load.rs has a macro of the same
            // name inside a function).
            if l.starts_with("layer_norm_head!(") {
                plans += 1;
                continue;
            }
            let l = l.trim();
            let l = l.strip_prefix("pub(crate) ").or_else(|| l.strip_prefix("pub ")).unwrap_or(l);
            let Some(rest) = l.strip_prefix("plan ") else { continue };
            let Some(name) = rest.strip_suffix(" {") else { continue };
            if !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                plans += 1;
            }
        }
    }
    assert_eq!(PLANS.len(), plans, "plans in models/src vs neon_models::plans::PLANS");
}
