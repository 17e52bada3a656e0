//! The stream plans of the 7 microWakeWord models (`tflite::stream_plan`) against TFLite:
//! run step by step from a fresh state on the clip goldens
//! `models/microwakeword/goldens/<clip>.safetensors`, every step's u8 output must equal
//! `output.<model>`; after `reset()` a second pass gives the same outputs; a run allocates
//! nothing (the binary's per-thread counting allocator, tests/tests/common). The host runs every
//! model/clip pair with the portable kernels and every model on one clip with each x86 level
//! it has; aarch64 (qemu in CI) runs 2 models on one clip with the NEON kernels (build with
//! `--features neon-runtime/neon`).
//!
//! The crafted models (models/tests/data/microwakeword/crafted/, tools/microwakeword/
//! crafted.py: hey_luna's f32 state with DEQUANTIZE / f32 CONCATENATION / QUANTIZE f32 →
//! int8, hey_morgan's N = 2) against their goldens `goldens/crafted_<model>.safetensors`
//! (goldens_crafted.py): every step's output and every variable after each clip (the f32
//! ones are DEQUANTIZE outputs, bit for bit), `reset` back to the initial values.

use neon_import::tflite::{load_stream_plan, stream_plan, DType, StreamOp};
use neon_runtime::exec::stream::{StreamPlan, StreamScratch, StreamState};
use neon_runtime::kernels::Int8Kernels;
use safetensors::SafeTensors;

use crate::common;
use crate::support::{as_i8, goldens_dir, graph, model_bytes, read, LIMITS, MODELS};

/// The crafted models' directory under `models/`.
const CRAFTED_DIR: &str = "tests/data/microwakeword/crafted";

/// The crafted models: name and whether its variables are f32 (else int8).
const CRAFTED: [(&str, bool); 2] = [("okay_nabu_f32_state", true), ("okay_nabu_n2", false)];

/// The clips of the crafted goldens: key and recording (goldens_crafted.py `CLIPS`).
const CRAFTED_CLIPS: [(&str, &str); 2] = [("a", "okay_nabu"), ("b", "hey_jarvis")];

/// Runs `plan` with backend `B` on `input` (`want.len()` steps, allocating nothing) and
/// returns the first step whose u8 output differs from `want`, if any.
fn first_difference<B: Int8Kernels>(
    plan: &StreamPlan,
    state: &mut StreamState,
    scratch: &mut StreamScratch,
    input: &[i8],
    want: &[u8],
) -> Option<usize> {
    let mut got = Vec::with_capacity(want.len());
    common::allocation_free(|| {
        for x in input.chunks(input.len() / want.len().max(1)) {
            let y: &[u8] = plan.run::<B, i8, u8>(state, scratch, x).unwrap();
            got.push(y[0]);
        }
    });
    assert_eq!(got.len(), want.len(), "steps");
    got.iter().zip(want).position(|(g, w)| g != w)
}

/// Runs each of `models` (name, directory) with backend `B` on every clip of `clips` that
/// has goldens for it: two passes (fresh state, then after `reset`), each step compared; returns the
/// pairs and steps compared.
fn check_clips<B: Int8Kernels>(models: &[(&str, &str)], clips: &[String]) -> (usize, usize) {
    let (mut pairs, mut steps) = (0, 0);
    for &(name, dir) in models {
        let plan = stream_plan(&graph(name, dir)).unwrap_or_else(|e| panic!("{name}: {e}"));
        let n = plan.input().1.iter().product::<usize>();
        for file in clips {
            let bytes = read(&goldens_dir().join(file));
            let st = SafeTensors::deserialize(&bytes).unwrap();
            let Ok(input) = st.tensor(&format!("input.{name}")) else { continue };
            let want = st.tensor(&format!("output.{name}")).unwrap().data().to_vec();
            let input = as_i8(input.data());
            assert_eq!(input.len(), want.len() * n, "{file} {name}");
            let (mut state, mut scratch) = (plan.state(), plan.scratch());
            for pass in 0..2 {
                let first = first_difference::<B>(&plan, &mut state, &mut scratch, &input, &want);
                assert_eq!(first, None, "{file} {name} pass {pass}: first differing step");
                state.reset();
            }
            pairs += 1;
            steps += want.len();
        }
    }
    (pairs, steps)
}

/// Every model/clip pair of the clip goldens, portable kernels (host).
#[cfg(not(target_arch = "aarch64"))]
#[test]
fn every_clip_step_equals_tflite() {
    let (pairs, steps) =
        check_clips::<neon_runtime::Portable>(&MODELS, &crate::support::clip_files());
    println!("stream plans: {pairs} model/clip pairs, {steps} steps × 2 passes, all equal");
    // As micro_ops.rs: 12 clip files × the 4 official models, each community model on the
    // 3 community recordings (goldens/SUMMARY.md).
    assert_eq!(pairs, 12 * 4 + 3 * 3, "model/clip pairs");
}

/// NEON kernels under qemu: 2 models (hey_jarvis has the depthwise tail channels) on one
/// clip, kept short for CI.
#[cfg(target_arch = "aarch64")]
#[test]
fn neon_clip_steps_equal_tflite() {
    let models = [MODELS[1], MODELS[3]];
    let (pairs, steps) =
        check_clips::<neon_runtime::Neon>(&models, &["hey_jarvis.safetensors".to_string()]);
    println!("stream plans (NEON): {pairs} pairs, {steps} steps × 2 passes, all equal");
    assert_eq!(pairs, 2);
}

/// x86 kernels, each level the CPU has (the others are skipped with a note): the model/clip
/// pairs of two clips (hey_jarvis: the 4 official models; okay_computer: all 7),
/// with the dot path [`DotPath::detect`](neon_runtime::kernels::int8::DotPath::detect)
/// picks (VNNI where the CPU has it); `int8.rs` of neon-runtime forces each path.
#[cfg(target_arch = "x86_64")]
#[test]
fn x86_clip_steps_equal_tflite() {
    use neon_runtime::kernels::cpu::X86Level;
    use neon_runtime::{Avx2, Avx512, X86};
    let clips = ["hey_jarvis.safetensors".to_string(), "okay_computer.safetensors".to_string()];
    for level in X86Level::ALL {
        if !level.supported() {
            eprintln!("skipped: this CPU (or build) lacks {}", level.requirement());
            continue;
        }
        let (pairs, steps) = match level {
            X86Level::Avx2 => check_clips::<X86<Avx2>>(&MODELS, &clips),
            X86Level::Avx512 => check_clips::<X86<Avx512>>(&MODELS, &clips),
        };
        println!(
            "stream plans ({}): {pairs} pairs, {steps} steps × 2 passes, all equal",
            level.name()
        );
        assert_eq!(pairs, 4 + 7, "{level:?}");
    }
}

/// Runs the crafted models with backend `B` on `clips` (keys of [`CRAFTED_CLIPS`]): every
/// step's output and every variable after the clip equal the goldens, no allocation per
/// step, and `reset` restores the initial bytes. Returns the steps compared.
fn check_crafted<B: Int8Kernels>(clips: &[&str]) -> usize {
    let mut steps = 0;
    for (name, f32_state) in CRAFTED {
        let g = graph(name, CRAFTED_DIR);
        let want_type = if f32_state { DType::F32 } else { DType::I8 };
        assert_eq!(g.vars.len(), 6, "{name}");
        assert!(g.vars.iter().all(|v| v.dtype == want_type), "{name}: variable types");
        let plan = stream_plan(&g).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(plan.variables(), g.vars.len(), "{name}");
        let n = plan.input().1.iter().product::<usize>();
        let bytes = read(&goldens_dir().join(format!("crafted_{name}.safetensors")));
        let st = SafeTensors::deserialize(&bytes).unwrap();
        let (mut state, mut scratch) = (plan.state(), plan.scratch());
        for (clip, wav) in CRAFTED_CLIPS.into_iter().filter(|(c, _)| clips.contains(c)) {
            let clip_bytes; // for N = 3 the inputs are the clip goldens' input.okay_nabu
            let input = match st.tensor(&format!("{clip}.input")) {
                Ok(t) => as_i8(t.data()),
                Err(_) => {
                    clip_bytes = read(&goldens_dir().join(format!("{wav}.safetensors")));
                    let c = SafeTensors::deserialize(&clip_bytes).unwrap();
                    as_i8(c.tensor("input.okay_nabu").unwrap().data())
                }
            };
            let want = st.tensor(&format!("{clip}.output")).unwrap().data().to_vec();
            assert_eq!(input.len(), want.len() * n, "{name} {clip}");
            let first = first_difference::<B>(&plan, &mut state, &mut scratch, &input, &want);
            assert_eq!(first, None, "{name} {clip}: first differing step");
            for (k, v) in g.vars.iter().enumerate() {
                let key = format!("{clip}.after.{}", v.shared_name.replace('/', "."));
                let want = st.tensor(&key).unwrap_or_else(|e| panic!("{key}: {e}"));
                let got = plan.variable(&state, k).unwrap();
                // The golden and the file are little endian; the state is in machine order.
                let got: Vec<u8> = if f32_state {
                    got.chunks_exact(4)
                        .flat_map(|w| f32::from_ne_bytes([w[0], w[1], w[2], w[3]]).to_le_bytes())
                        .collect()
                } else {
                    got.to_vec()
                };
                let first = got.iter().zip(want.data()).position(|(g, w)| g != w);
                assert_eq!((got.len(), first), (want.data().len(), None), "{name} {key}");
            }
            state.reset();
            for (k, v) in g.vars.iter().enumerate() {
                let init = plan.variable(&state, k).unwrap();
                assert_eq!(init.len(), v.init.len(), "{name} {}", v.shared_name);
                assert!(cfg!(target_endian = "little") && init == &v.init[..], "{name} reset");
            }
            steps += want.len();
        }
    }
    steps
}

/// The crafted models on both clips, portable kernels (host).
#[cfg(not(target_arch = "aarch64"))]
#[test]
fn crafted_models_equal_tflite() {
    let steps = check_crafted::<neon_runtime::Portable>(&["a", "b"]);
    println!("crafted models: {steps} steps equal, variables equal after each clip");
    assert_eq!(steps, 156 + 99 + 235 + 149, "steps (goldens_crafted.py)");
}

/// The crafted models with the NEON kernels under qemu, one clip.
#[cfg(target_arch = "aarch64")]
#[test]
fn neon_crafted_models_equal_tflite() {
    let steps = check_crafted::<neon_runtime::Neon>(&["a"]);
    println!("crafted models (NEON): {steps} steps equal");
    assert_eq!(steps, 156 + 235);
}

/// The memory of each plan: workspace, the planner's lower bound, the state (variables),
/// and the convenience loader gives the same plan layout.
#[test]
fn plan_memory() {
    for (name, dir) in MODELS {
        let plan = stream_plan(&graph(name, dir)).unwrap();
        let loaded = load_stream_plan(&model_bytes(name, dir), &LIMITS).unwrap();
        assert_eq!(loaded.workspace_bytes(), plan.workspace_bytes(), "{name}");
        assert_eq!(loaded.steps(), plan.steps(), "{name}");
        assert!(plan.lower_bound() <= plan.workspace_bytes(), "{name}");
        println!(
            "{name}: {} steps, workspace {} B, lower bound {} B, state {} B",
            plan.steps(),
            plan.workspace_bytes(),
            plan.lower_bound(),
            plan.state().bytes()
        );
    }
}

/// An operator the runtime has no step for is refused in one line naming its index and
/// kind: alexa's output QUANTIZE retargeted to int32.
#[test]
fn unsupported_operator_is_named() {
    let mut g = graph("alexa", "microwakeword");
    let (k, output) = g
        .ops
        .iter_mut()
        .enumerate()
        .find_map(|(k, op)| match op {
            StreamOp::Quantize { output, .. } => Some((k, output)),
            _ => None,
        })
        .expect("alexa has a QUANTIZE");
    output.dtype = DType::I32;
    let e = stream_plan(&g).unwrap_err().to_string();
    assert_eq!(e, format!("main operator #{k} QUANTIZE: I8 → I32 is not supported"));
    assert!(!e.contains('\n'));
}
