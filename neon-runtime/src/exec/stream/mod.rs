//! Streaming int8 plans (feature `alloc`): [`StreamPlan`], the run-time plan of a graph with
//! typed values (i8, u8, i32, f32) and state variables, such as a microWakeWord model
//! (TFLite's streaming int8 graphs: variables read, concatenated with new frames along
//! time, convolved, their newest rows sliced off and assigned back).
//!
//! [`ExecutionPlan`](super::ExecutionPlan) is f32 throughout and re-plans for new input
//! shapes; a stream plan has static shapes, so it is checked and placed once, when
//! [`StreamPlanBuilder::build`] runs, and is immutable afterwards. It shares the memory
//! planner of [`crate::plan`] (liveness, in-place reuse, best-fit offsets) with every other
//! plan, and the operators of [`crate::ops::int8`] (their shape rules included).
//!
//! ## Values, state and memory
//! - **Steps** ([`StreamPlanBuilder`]): an int8 operator ([`StreamOp`]), concatenation,
//!   slicing (one or the last rows along an axis), splitting (one slice per part), reshape,
//!   and a state variable's read (READ_VARIABLE: a copy into the workspace) or assignment
//!   (ASSIGN_VARIABLE: a copy out of it). Each is checked when added: element types, the
//!   operator's [`ShapeRule`](crate::ops::ShapeRule), the copy's sizes.
//! - **Variables** follow TFLite's order: a read sees the value as the steps before it left
//!   it (so a read after an assignment of the same variable in one run sees the new value);
//!   nothing is refused.
//! - **Copies skipped**: a read that only copies use (the concatenation with the new frames)
//!   is read by them from the state in place, and a slice that only an assignment uses (the
//!   newest rows) is copied by the assignment from its source straight into the variable;
//!   neither takes workspace (`resolve`: the same bytes, in the same order).
//! - **Resolved once**: [`StreamPlanBuilder::build`] turns every step into calls of
//!   [`fixed`] at constant byte offsets, the same calls [`StreamPlan::to_rust`] writes for a
//!   compiled plan; [`run`](StreamPlan::run) makes them in order.
//! - **Memory**: every intermediate lives in one workspace of bytes at an offset from the
//!   planner (a multiple of 16). The workspace ([`StreamScratch`]) and the variables
//!   ([`StreamState`]) are `u128` buffers, so each value starts 16-byte aligned; typed access
//!   goes through [`view`] / [`view_mut`] (`align_to`, refusing a misaligned or ragged
//!   region), which never reinterprets anything but plain numbers. The plan input is the
//!   caller's slice and takes no workspace; the output stays readable until the next run
//!   (the planner sees a last step that reads it).
//! - **Sharing**: the plan holds weights and layout only; each stream has its own
//!   [`StreamState`] (its variables, with the plan's initial values shared by `Arc` for
//!   [`StreamState::reset`]) and [`StreamScratch`], so one `Arc<StreamPlan>` serves any
//!   number of detectors. [`run`](StreamPlan::run) allocates nothing.
//!
//! ## In the architecture
//! **Streaming int8 plans** (`neon_runtime::exec::stream::StreamPlan`, feature `alloc`): the
//! run-time plan of TFLite's streaming int8 graphs (microWakeWord). Values are typed (i8, u8,
//! i32, f32) with static shapes; steps are the int8 operators of `ops::int8` (conv2d,
//! depthwise, fully connected, LOGISTIC table, QUANTIZE/DEQUANTIZE) and copies
//! (concatenation, slice, split, reshape, a state variable's read and assignment), each
//! checked by `StreamPlanBuilder` as it is added (element types, the operator's `ShapeRule`,
//! copy sizes). `build` places every intermediate once with the shared planner
//! (`plan::plan`) in one 16-byte aligned byte workspace (`workspace_bytes()`,
//! `lower_bound()`); the plan is then immutable, so one `Arc<StreamPlan>` serves many
//! streams, each with a `StreamState` (its variables, reset to the plan's shared initial
//! values) and a `StreamScratch`. `run::<B, I, O>` checks the input's type and length and
//! allocates nothing. `ExecutionPlan` stays f32.
//!
//! ```
//! use neon_runtime::exec::stream::{ElemType, StreamOp, StreamPlanBuilder};
//! use neon_runtime::kernels::int8::{OutputStage, QuantizedMultiplier, Rounding};
//! use neon_runtime::ops::int8::RequantizeI8U8;
//! use neon_runtime::Portable;
//!
//! // A 2-frame history of 3 features: out = the newest 3 frames, as u8 (x + 128).
//! let mut b = StreamPlanBuilder::new();
//! let x = b.input(ElemType::I8, &[1, 3])?;
//! let s = b.variable::<i8>(&[2, 3], &[0; 6])?;
//! let h = b.read(s)?;
//! let c = b.concat(&[h, x], 0)?;
//! let newest = b.slice_last(c, 0, 2)?;
//! b.assign(s, newest)?;
//! let m = QuantizedMultiplier::from_real(1.0)?;
//! let q = RequantizeI8U8::new(-128, m, OutputStage { zero_point: 0, act_min: 0, act_max: 255, rounding: Rounding::AwayFromZero })?;
//! let y = b.op(StreamOp::RequantizeU8(q), c)?;
//! let plan = b.build(y)?;
//! let (mut state, mut scratch) = (plan.state(), plan.scratch());
//! let out: &[u8] = plan.run::<Portable, i8, u8>(&mut state, &mut scratch, &[1, 2, 3])?;
//! assert_eq!(out, &[128, 128, 128, 128, 128, 128, 129, 130, 131]);
//! # Ok::<(), neon_runtime::Error>(())
//! ```

mod builder;
mod elem;
mod emit;
pub mod fixed;
mod resolve;
mod state;
mod step;

use builder::Declared;
pub use builder::StreamPlanBuilder;
pub use elem::{bytes, view, view_mut, Elem, ElemType};
pub use state::{StreamScratch, StreamState};
pub use step::StreamOp;

use fixed::Rows;

use alloc::boxed::Box;
use alloc::sync::Arc;
use alloc::vec::Vec;

use crate::error::Error;
use crate::kernels::int8::Int8Kernels;
use crate::plan::MemoryPlan;

/// A value of a stream plan under construction (a small `Copy` handle, valid only in the
/// builder that returned it).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct StreamValue {
    plan: u32,
    index: usize,
}

/// A state variable of a stream plan under construction (a `Copy` handle, valid only in the
/// builder that returned it).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct StreamVar {
    plan: u32,
    index: usize,
}

/// What a step of the builder does.
#[derive(Clone, Debug, PartialEq)]
enum Action {
    /// An operator on the step's one input (boxed: a LOGISTIC table is 256 bytes).
    Op(Box<StreamOp>),
    /// Input `k` copied into the output by `rows[k]` (concatenation, slice).
    Copy(Vec<Rows>),
    /// The input's bytes as the output (none copied when the planner gave both one buffer).
    Reshape(usize),
    /// Variable `k` copied into the output.
    Read(usize),
    /// The input copied into variable `k`.
    Assign(usize),
}

/// One step of the builder: its action, the values it reads and the value it writes (none
/// for an assignment).
#[derive(Clone, Debug, PartialEq)]
struct Node {
    action: Action,
    inputs: Vec<usize>,
    output: Option<usize>,
}

/// Where a step reads, resolved when the plan is built.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Src {
    /// The plan input (the caller's slice).
    Input,
    /// The workspace region `(offset, bytes)`.
    Ws((usize, usize)),
    /// The state variable at `(offset, bytes)` of a state, read in place.
    Var((usize, usize)),
}

/// A step as it runs: every region resolved to constant byte offsets by
/// [`StreamPlanBuilder::build`], each variant one or a few calls of [`fixed`] (the calls
/// [`StreamPlan::to_rust`] writes for it).
#[derive(Clone, Debug, PartialEq)]
enum Exec {
    /// An operator from `src` (the input or the workspace) into the workspace region `dst`
    /// ([`fixed::op`], [`fixed::op_input`]).
    Op { op: Box<StreamOp>, src: Src, dst: (usize, usize) },
    /// Copies into the workspace region `dst`, one per source ([`fixed::copy`],
    /// [`fixed::copy_input`], [`fixed::read`]): a concatenation, a slice, a reshape, a
    /// variable's read.
    Copy { parts: Vec<(Src, Rows)>, dst: (usize, usize) },
    /// A copy by `rows` from `src` (the input or the workspace) into the variable at `var`
    /// ([`fixed::assign`], [`fixed::assign_input`]).
    Assign { src: Src, rows: Rows, var: (usize, usize) },
    /// Nothing: a reshape in place, or a read or slice that the steps using it copy
    /// themselves (see [`resolve`]).
    Skip,
}

/// The error of a step whose source the builder never resolves so.
const NO_SUCH_SOURCE: Error = Error::Plan { reason: "a step reads from where it cannot" };

impl Exec {
    /// Runs the step with backend `B` on the workspace `ws`, the state's words and the
    /// input's bytes `x`.
    fn run<B: Int8Kernels>(
        &self,
        ws: &mut [u128],
        state: &mut [u128],
        x: &[u8],
    ) -> Result<(), Error> {
        match self {
            Exec::Op { op, src, dst } => {
                let f = |x: &[u8], y: &mut [u8]| op.run::<B>(x, y);
                match *src {
                    Src::Input => fixed::op_input(x, ws, *dst, f),
                    Src::Ws(r) => fixed::op(ws, r, *dst, f),
                    Src::Var(_) => Err(NO_SUCH_SOURCE),
                }
            }
            Exec::Copy { parts, dst } => {
                for (src, rows) in parts {
                    match *src {
                        Src::Input => fixed::copy_input(x, rows, ws, *dst)?,
                        Src::Ws((at, _)) => fixed::copy(ws, rows, at, dst.0)?,
                        Src::Var(var) => fixed::read(state, var, rows, ws, *dst)?,
                    }
                }
                Ok(())
            }
            Exec::Assign { src, rows, var } => match *src {
                Src::Input => fixed::assign_input(x, rows, state, *var),
                Src::Ws(r) => fixed::assign(ws, r, rows, state, *var),
                Src::Var(_) => Err(NO_SUCH_SOURCE),
            },
            Exec::Skip => Ok(()),
        }
    }
}

/// A checked, placed, immutable streaming int8 plan (see the [module docs](self)); built by
/// [`StreamPlanBuilder`], run by [`run`](Self::run) with a [`StreamState`] and a
/// [`StreamScratch`] per stream.
#[derive(Clone, Debug)]
pub struct StreamPlan {
    id: u32,
    /// The input's and the output's element type and shape.
    input: Declared,
    output: Declared,
    /// The output's `(offset, bytes)` in the workspace.
    output_at: (usize, usize),
    /// The steps, in execution order.
    exec: Vec<Exec>,
    /// `(offset, bytes)` of every variable in a state.
    vars: Vec<(usize, usize)>,
    /// Initial values of the variables, laid out as in a state.
    init: Arc<[u128]>,
    memory: MemoryPlan,
}

impl StreamPlan {
    /// A new state at the initial values.
    pub fn state(&self) -> StreamState {
        StreamState::new(self.id, Arc::clone(&self.init))
    }

    /// A new workspace of [`workspace_bytes`](Self::workspace_bytes).
    pub fn scratch(&self) -> StreamScratch {
        StreamScratch::new(self.workspace_bytes())
    }

    /// Workspace bytes ([`MemoryPlan::workspace_bytes`]).
    pub fn workspace_bytes(&self) -> usize {
        self.memory.workspace_bytes
    }

    /// The planner's lower bound: the most bytes live at once ([`MemoryPlan`]).
    pub fn lower_bound(&self) -> usize {
        self.memory.lower_bound_bytes
    }

    /// The planner's result (byte offsets, live ranges), indexed by value in creation order,
    /// then one empty external value per assignment and one for the final keep-alive step.
    pub fn memory_plan(&self) -> &MemoryPlan {
        &self.memory
    }

    /// Steps, in execution order.
    pub fn steps(&self) -> usize {
        self.exec.len()
    }

    /// Number of state variables (in the builder's declaration order).
    pub fn variables(&self) -> usize {
        self.vars.len()
    }

    /// The current bytes of variable `k` (declaration order) in `state`, in the machine's
    /// byte order (for tests and inspection: the state after a run).
    ///
    /// # Errors
    /// [`Error::Plan`] for a state of another plan or no variable `k`.
    pub fn variable<'s>(&self, state: &'s StreamState, k: usize) -> Result<&'s [u8], Error> {
        state.check(self.id)?;
        let &(offset, bytes) =
            self.vars.get(k).ok_or(Error::Plan { reason: "no such stream variable" })?;
        Ok(&state.as_bytes()[offset..offset + bytes])
    }

    /// The input's element type and dimensions.
    pub fn input(&self) -> (ElemType, &[usize]) {
        (self.input.ty, self.input.shape.dims())
    }

    /// The output's element type and dimensions.
    pub fn output(&self) -> (ElemType, &[usize]) {
        (self.output.ty, self.output.shape.dims())
    }

    /// Runs every step once with backend `B`: `input` (element type `I`, the input's
    /// element count) in, the output (element type `O`) out, borrowed from `scratch` until
    /// its next use. `state`'s variables are read and written in step order. Allocates
    /// nothing.
    ///
    /// # Errors
    /// Before any step runs: [`Error::Backend`] when `B` cannot run here; [`Error::Plan`]
    /// for a state of another plan or `I` / `O` not the input's / output's type;
    /// [`Error::Length`] for an input of another length or a scratch smaller than
    /// [`workspace_bytes`](Self::workspace_bytes). A step's error (none after a successful
    /// build) stops the run and leaves the state partly updated.
    pub fn run<'s, B: Int8Kernels, I: Elem, O: Elem>(
        &self,
        state: &mut StreamState,
        scratch: &'s mut StreamScratch,
        input: &[I],
    ) -> Result<&'s [O], Error> {
        B::KIND.availability()?;
        state.check(self.id)?;
        if I::TYPE != self.input.ty || O::TYPE != self.output.ty {
            return Err(Error::Plan { reason: "input or output element type is not the plan's" });
        }
        let (expected, got) = (self.input.shape.numel(), input.len());
        if expected != got {
            return Err(Error::Length { what: "stream plan input", expected, got });
        }
        let ws = scratch.words(self.memory.workspace_bytes)?;
        let x = bytes(input);
        for step in &self.exec {
            step.run::<B>(ws, &mut state.words, x)?;
        }
        let ws: &'s [u128] = ws;
        fixed::output(ws, self.output_at)
    }
}
