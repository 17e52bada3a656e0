//! Phase 3: schedule. The checked plan is already in execution order (straight-line
//! code); this phase hands its values and steps to the runtime's planner
//! (`neon_runtime::plan`: the macro links the runtime and runs its planner at compile time)
//! for liveness, in-place reuse and workspace offsets.

use neon_runtime::plan::{self, Location, MemoryPlan, Schedule, Step, Value};

use crate::ir::{Checked, Home};

/// Bytes per element (f32).
pub const ELEM: usize = 4;

pub fn schedule(c: &Checked) -> Result<MemoryPlan, String> {
    let values = c
        .values
        .iter()
        .map(|v| Value {
            bytes: v.max_elems * ELEM,
            location: match v.home {
                Home::Tensor(_) => Location::External,
                Home::Temp | Home::Scratch => Location::Workspace,
            },
        })
        .collect();
    let steps = c
        .steps
        .iter()
        .map(|s| Step {
            inputs: s.inputs.clone(),
            output: s.output,
            in_place: s.in_place,
            temps: s.scratch.into_iter().collect(),
        })
        .collect();
    plan::plan(&Schedule { values, steps }).map_err(|e| e.to_string())
}
