//! Static memory planner (feature `alloc`): liveness over a straight-line schedule,
//! in-place reuse, and an offset for every intermediate value inside one workspace.
//!
//! The same code runs inside the `neon_plan!` macro at compile time (sizes at the upper
//! bounds of symbolic dims); its input is a plain list of values and steps, so code that
//! builds a schedule at run time can call it as well.
//!
//! Model: a schedule is a list of steps; step `s` reads some values and writes one.
//! A value is *live* from the step that writes it to the last step that reads it,
//! inclusive, so a step's inputs and its output never share memory unless the step is
//! marked in-place ([`Step::in_place`]): an elementwise operator may then write its output
//! over its first input when that input lives in the workspace and this step is its last
//! use. Values the caller owns (plan inputs, outputs, state tensors) are
//! [`Location::External`] and take no workspace.
//!
//! Placement is greedy with best fit: buffers (in-place chains merged) are placed one at a
//! time, each in the smallest gap left by the already placed buffers whose lifetimes
//! overlap it, or above them all. Four orders are tried and the smallest workspace kept:
//! largest first (the baseline of TensorFlow Lite Micro's greedy planner and TVM USMP's
//! `greedy_by_size`), most conflicting bytes first (USMP's `greedy_by_conflicts`),
//! longest-lived first, and earliest first. Every offset and size is a
//! multiple of [`ALIGN`] bytes. The result reports the lower bound (the largest total of
//! simultaneously live bytes over all steps): no placement can use less.

mod liveness;
mod placement;

use alloc::vec::Vec;

pub use liveness::Liveness;

/// Alignment of every workspace offset and size, in bytes (one 128-bit NEON register).
pub const ALIGN: usize = 16;

/// Index of a value in a [`Schedule`].
pub type ValueId = usize;

/// Where a value lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Location {
    /// An intermediate placed in the workspace by the planner.
    Workspace,
    /// Owned by the caller (input, output, state); not placed.
    External,
}

/// A value of the schedule.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Value {
    /// Size in bytes (at the upper bound of every symbolic dimension).
    pub bytes: usize,
    /// Where it lives.
    pub location: Location,
}

/// One operator call: reads `inputs`, writes `output`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Step {
    /// Values read, in argument order.
    pub inputs: Vec<ValueId>,
    /// The value written.
    pub output: ValueId,
    /// The operator may write `output` over `inputs[0]` (elementwise operators).
    pub in_place: bool,
    /// Scratch values the step writes and needs only while it runs (e.g. an im2col
    /// buffer): live at this step alone.
    pub temps: Vec<ValueId>,
}

/// A straight-line schedule: values and the steps that read and write them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Schedule {
    /// All values, indexed by [`ValueId`].
    pub values: Vec<Value>,
    /// Steps in execution order.
    pub steps: Vec<Step>,
}

/// Why a schedule cannot be planned.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PlanError {
    /// A step names a value id that does not exist.
    UnknownValue {
        /// The step.
        step: usize,
        /// The id.
        value: ValueId,
    },
    /// A workspace value is read before any step writes it.
    ReadBeforeWrite {
        /// The reading step.
        step: usize,
        /// The value.
        value: ValueId,
    },
    /// A value is written by two steps (schedules are single assignment).
    WrittenTwice {
        /// The second writer.
        step: usize,
        /// The value.
        value: ValueId,
    },
    /// The workspace size overflows `usize`.
    Overflow,
}

impl core::fmt::Display for PlanError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            PlanError::UnknownValue { step, value } => {
                write!(f, "step {step} names unknown value {value}")
            }
            PlanError::ReadBeforeWrite { step, value } => {
                write!(f, "step {step} reads value {value} before it is written")
            }
            PlanError::WrittenTwice { step, value } => {
                write!(f, "step {step} writes value {value}, which an earlier step wrote")
            }
            PlanError::Overflow => write!(f, "workspace size overflows usize"),
        }
    }
}

/// Placement of one value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Placement {
    /// Byte offset in the workspace (`None` for external values).
    pub offset: Option<usize>,
    /// First step at which the value is live (the step writing it; 0 for external inputs).
    pub first: usize,
    /// Last step at which the value is live (its last reader).
    pub last: usize,
    /// The value shares its buffer with this earlier value (in-place chain), if any.
    pub aliases: Option<ValueId>,
}

/// The planner's result.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MemoryPlan {
    /// One entry per value, indexed by [`ValueId`].
    pub placements: Vec<Placement>,
    /// Workspace size in bytes (a multiple of [`ALIGN`]).
    pub workspace_bytes: usize,
    /// Lower bound in bytes: the largest total of live workspace buffers at any step.
    pub lower_bound_bytes: usize,
}

/// Rounds `bytes` up to a multiple of [`ALIGN`]; `None` on overflow.
pub fn align_up(bytes: usize) -> Option<usize> {
    bytes.checked_add(ALIGN - 1).map(|b| b & !(ALIGN - 1))
}

/// Plans `schedule`: liveness, in-place merging, then best-fit placement.
///
/// # Errors
/// [`PlanError`] for a malformed schedule (unknown ids, reads before writes, double
/// writes) or sizes that overflow.
pub fn plan(schedule: &Schedule) -> Result<MemoryPlan, PlanError> {
    let live = Liveness::analyse(schedule)?;
    placement::place(schedule, &live)
}

#[cfg(test)]
mod tests;
