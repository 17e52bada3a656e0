extern crate std;

use alloc::vec;
use alloc::vec::Vec;

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use super::*;

fn ws(bytes: usize) -> Value {
    Value { bytes, location: Location::Workspace }
}
fn ext(bytes: usize) -> Value {
    Value { bytes, location: Location::External }
}
fn step(inputs: &[ValueId], output: ValueId, in_place: bool) -> Step {
    Step { inputs: inputs.to_vec(), output, in_place, temps: Vec::new() }
}

/// Checks the invariants every plan must satisfy: workspace values have offsets inside the
/// workspace, two values live at the same step never overlap unless one aliases the other
/// through an in-place chain, and the workspace is not below the lower bound.
fn check_invariants(s: &Schedule, p: &MemoryPlan) {
    let n = s.values.len();
    for v in 0..n {
        let pl = p.placements[v];
        match s.values[v].location {
            Location::External => assert_eq!(pl.offset, None),
            Location::Workspace => {
                let off = pl.offset.expect("workspace value placed");
                assert_eq!(off % ALIGN, 0);
                assert!(off + s.values[v].bytes <= p.workspace_bytes);
            }
        }
    }
    let root = |v: ValueId| p.placements[v].aliases.unwrap_or(v);
    for a in 0..n {
        for b in (a + 1)..n {
            let (pa, pb) = (p.placements[a], p.placements[b]);
            let (Some(oa), Some(ob)) = (pa.offset, pb.offset) else { continue };
            if root(a) == root(b) {
                continue;
            }
            let time = pa.first <= pb.last && pb.first <= pa.last;
            let space = oa < ob + s.values[b].bytes && ob < oa + s.values[a].bytes;
            assert!(!(time && space), "values {a} and {b} overlap in time and memory: {p:?}");
        }
    }
    assert!(p.workspace_bytes >= p.lower_bound_bytes);
    assert_eq!(p.workspace_bytes % ALIGN, 0);
}

/// `x(ext, 64 bytes) -> a -> b -> c -> y(ext, 64 bytes)`, the three inner values of `bytes`
/// each; step `i` (reading value `i`, writing `i + 1`) runs in place when `in_place[i]`.
fn chain(bytes: usize, in_place: [bool; 4]) -> Schedule {
    Schedule {
        values: vec![ext(64), ws(bytes), ws(bytes), ws(bytes), ext(64)],
        steps: (0..4).map(|i| step(&[i], i + 1, in_place[i])).collect(),
    }
}

#[test]
fn chain_reuses_two_buffers() {
    // x(ext) -> a -> b -> c -> y(ext): a and c can share, b sits beside them.
    let s = chain(100, [false; 4]);
    let p = plan(&s).unwrap();
    check_invariants(&s, &p);
    assert_eq!(p.lower_bound_bytes, 224);
    assert_eq!(p.workspace_bytes, 224);
    assert_eq!(p.placements[1].offset, p.placements[3].offset);
}

#[test]
fn in_place_chain_uses_one_buffer() {
    let s = chain(64, [false, true, true, false]);
    let p = plan(&s).unwrap();
    check_invariants(&s, &p);
    assert_eq!(p.workspace_bytes, 64);
    assert_eq!(p.placements[3].aliases, Some(1));
}

#[test]
fn in_place_refused_when_input_still_needed() {
    // b = relu(a) in place, but a is read again later (a residual): no aliasing.
    let s = Schedule {
        values: vec![ext(32), ws(32), ws(32), ws(32)],
        steps: vec![step(&[0], 1, false), step(&[1], 2, true), step(&[2, 1], 3, false)],
    };
    let live = Liveness::analyse(&s).unwrap();
    assert_eq!(live.buffer_of[2], 2);
    let p = plan(&s).unwrap();
    check_invariants(&s, &p);
}

#[test]
fn in_place_never_writes_inputs_or_same_operand_twice() {
    // An external input is never overwritten; add(x, x) in place keeps its own buffer.
    let s = Schedule {
        values: vec![ext(32), ws(32), ws(32)],
        steps: vec![step(&[0], 1, true), step(&[1, 1], 2, true)],
    };
    let live = Liveness::analyse(&s).unwrap();
    assert_eq!(live.buffer_of, vec![0, 1, 2]);
}

#[test]
fn malformed_schedules_are_errors() {
    let s = Schedule { values: vec![ws(4)], steps: vec![step(&[0], 0, false)] };
    assert_eq!(plan(&s), Err(PlanError::ReadBeforeWrite { step: 0, value: 0 }));
    let s = Schedule { values: vec![ext(4)], steps: vec![step(&[3], 0, false)] };
    assert_eq!(plan(&s), Err(PlanError::UnknownValue { step: 0, value: 3 }));
    let s = Schedule {
        values: vec![ext(4), ws(4)],
        steps: vec![step(&[0], 1, false), step(&[0], 1, false)],
    };
    assert_eq!(plan(&s), Err(PlanError::WrittenTwice { step: 1, value: 1 }));
    let s = Schedule { values: vec![ext(4), ws(usize::MAX)], steps: vec![step(&[0], 1, false)] };
    assert_eq!(plan(&s), Err(PlanError::Overflow));
}

#[test]
fn scratch_lives_one_step() {
    // x -> a (with scratch t) -> b: t may share memory with b but not with a.
    let s = Schedule {
        values: vec![ext(64), ws(64), ws(256), ws(64), ext(64)],
        steps: vec![
            Step { inputs: vec![0], output: 1, in_place: false, temps: vec![2] },
            step(&[1], 3, false),
            step(&[3], 4, false),
        ],
    };
    let p = plan(&s).unwrap();
    check_invariants(&s, &p);
    assert_eq!((p.placements[2].first, p.placements[2].last), (0, 0));
    assert_eq!(p.workspace_bytes, 320);
}

#[test]
fn empty_schedule() {
    let p = plan(&Schedule::default()).unwrap();
    assert_eq!((p.workspace_bytes, p.lower_bound_bytes), (0, 0));
}

/// A random DAG: each step reads 1..=3 earlier values (biased towards recent ones, like
/// real networks with skip connections), some steps are elementwise/in place.
fn random_schedule(rng: &mut SmallRng) -> Schedule {
    let inputs = rng.gen_range(1..=2);
    let steps = rng.gen_range(1..=40);
    let mut values: Vec<Value> = (0..inputs).map(|_| ext(rng.gen_range(1..=4096))).collect();
    let mut out_steps = Vec::new();
    for s in 0..steps {
        let avail = values.len();
        let arity = rng.gen_range(1..=3usize.min(avail));
        let mut ins = Vec::new();
        for _ in 0..arity {
            let back = rng.gen_range(0..avail.min(6));
            ins.push(avail - 1 - back);
        }
        let last = s + 1 == steps;
        let bytes = if rng.gen_bool(0.4) { values[ins[0]].bytes } else { rng.gen_range(1..=4096) };
        values.push(if last { ext(bytes) } else { ws(bytes) });
        let mut temps = Vec::new();
        if !last && rng.gen_bool(0.2) {
            values.push(ws(rng.gen_range(1..=8192)));
            temps.push(values.len() - 1);
        }
        out_steps.push(Step { inputs: ins, output: avail, in_place: rng.gen_bool(0.4), temps });
    }
    Schedule { values, steps: out_steps }
}

#[test]
fn random_dags_never_overlap_and_stay_near_the_lower_bound() {
    let mut rng = SmallRng::seed_from_u64(0x5eed);
    let (mut total_ws, mut total_lb) = (0usize, 0usize);
    for _ in 0..2000 {
        let s = random_schedule(&mut rng);
        let p = plan(&s).unwrap();
        check_invariants(&s, &p);
        total_ws += p.workspace_bytes;
        total_lb += p.lower_bound_bytes;
    }
    // Greedy best fit is not optimal, and on random DAGs the lower bound is often not
    // reachable at all; measured 1.023 in aggregate with the four orders (earlier figures:
    // BENCHMARKS.md, "Moonshine base-en memory"). The bound guards regressions; model plans
    // aim at <= 1.02.
    let ratio = total_ws as f64 / total_lb as f64;
    std::println!("aggregate workspace / lower bound over 2000 random DAGs: {ratio:.4}");
    assert!(ratio < 1.10, "aggregate workspace / lower bound = {ratio}");
}
