//! The stream plans of the 7 microWakeWord models (`tflite::stream_plan`) against TFLite:
//! run step by step from a fresh state on the clip goldens
//! `models/microwakeword/goldens/<clip>.safetensors`, every step's u8 output must equal
//! `output.<model>`; after `reset()` a second pass gives the same outputs; a run allocates
//! nothing (a per-thread counting allocator, tests/tests/common). The host runs every
//! model/clip pair with the portable kernels; aarch64 (qemu in CI) runs 2 models on one
//! clip with the NEON kernels (build with `--features neon-runtime/neon`).

#[path = "../../tests/tests/common/mod.rs"]
mod common;
#[path = "support/micro.rs"]
mod micro;

use neon_import::tflite::{load_stream_plan, stream_plan, DType, StreamOp};
use neon_runtime::kernels::Int8Kernels;
use safetensors::SafeTensors;

use micro::{as_i8, goldens_dir, graph, model_bytes, read, LIMITS, MODELS};

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
                let mut got = Vec::with_capacity(want.len());
                common::allocation_free(|| {
                    for x in input.chunks(n) {
                        let y: &[u8] = plan.run::<B, i8, u8>(&mut state, &mut scratch, x).unwrap();
                        got.push(y[0]);
                    }
                });
                let first = got.iter().zip(&want).position(|(g, w)| g != w);
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
    let (pairs, steps) = check_clips::<neon_runtime::Portable>(&MODELS, &micro::clip_files());
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
