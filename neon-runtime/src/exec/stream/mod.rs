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
mod state;
mod step;

pub use builder::StreamPlanBuilder;
pub use elem::{bytes, view, view_mut, Elem, ElemType};
pub use state::{StreamScratch, StreamState};
pub use step::StreamOp;

use fixed::{Rows, UNPLACED};

use alloc::boxed::Box;
use alloc::sync::Arc;
use alloc::vec::Vec;

use crate::error::Error;
use crate::kernels::int8::Int8Kernels;
use crate::plan::MemoryPlan;
use crate::tensor::Shape;
use crate::workspace::carve;

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

/// What a step does.
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

/// One step: its action, the values it reads and the value it writes (none for an
/// assignment).
#[derive(Clone, Debug, PartialEq)]
struct Node {
    action: Action,
    inputs: Vec<usize>,
    output: Option<usize>,
}

/// A value as placed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Slot {
    ty: ElemType,
    shape: Shape,
    /// Byte offset in the workspace (`None` for the plan input).
    offset: Option<usize>,
    bytes: usize,
}

/// A checked, placed, immutable streaming int8 plan (see the [module docs](self)); built by
/// [`StreamPlanBuilder`], run by [`run`](Self::run) with a [`StreamState`] and a
/// [`StreamScratch`] per stream.
#[derive(Clone, Debug)]
pub struct StreamPlan {
    id: u32,
    values: Vec<Slot>,
    input: usize,
    output: usize,
    nodes: Vec<Node>,
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
        self.nodes.len()
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
        let s = &self.values[self.input];
        (s.ty, s.shape.dims())
    }

    /// The output's element type and dimensions.
    pub fn output(&self) -> (ElemType, &[usize]) {
        let s = &self.values[self.output];
        (s.ty, s.shape.dims())
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
        let (x_slot, y_slot) = (&self.values[self.input], &self.values[self.output]);
        if I::TYPE != x_slot.ty || O::TYPE != y_slot.ty {
            return Err(Error::Plan { reason: "input or output element type is not the plan's" });
        }
        let (expected, got) = (x_slot.shape.numel(), input.len());
        if expected != got {
            return Err(Error::Length { what: "stream plan input", expected, got });
        }
        let ws = scratch.region(self.memory.workspace_bytes)?;
        let x = bytes(input);
        for node in &self.nodes {
            self.step::<B>(node, ws, x, state)?;
        }
        let ws: &'s [u8] = ws;
        let (off, len) = self.region(self.output)?;
        view(ws.get(off..off + len).ok_or(UNPLACED)?)
    }

    /// `(offset, bytes)` of workspace value `v`.
    fn region(&self, v: usize) -> Result<(usize, usize), Error> {
        let s = &self.values[v];
        let off = s.offset.ok_or(UNPLACED)?;
        Ok((off, s.bytes))
    }

    /// Where input `k` of `node` is: `None` for the plan input, else its workspace offset.
    fn source(&self, node: &Node, k: usize) -> Result<Option<usize>, Error> {
        match node.inputs.get(k) {
            Some(&v) if v == self.input => Ok(None),
            Some(&v) => self.region(v).map(|(o, _)| Some(o)),
            None => Err(Error::Plan { reason: "a step lacks an input" }),
        }
    }

    /// Runs one step on the workspace `ws`, the input's bytes `x` and the state.
    fn step<B: Int8Kernels>(
        &self,
        node: &Node,
        ws: &mut [u8],
        x: &[u8],
        state: &mut StreamState,
    ) -> Result<(), Error> {
        let src = |k: usize| self.source(node, k);
        let dst = match node.output {
            Some(v) => Some(self.region(v)?),
            None => None,
        };
        match (&node.action, dst) {
            (Action::Op(op), Some((o, n))) => match src(0)? {
                None => op.run::<B>(x, part(ws, o, n)?),
                Some(i) => {
                    let len = self.values[node.inputs[0]].bytes;
                    let ([xs], [ys]) = carve(ws, [(i, len)], [(o, n)])?;
                    op.run::<B>(xs, ys)
                }
            },
            (Action::Copy(rows), Some((o, n))) => {
                for (k, r) in rows.iter().enumerate() {
                    match src(k)? {
                        None => r.copy(x, part(ws, o, n)?)?,
                        Some(i) => r.copy_within(ws, i, o)?,
                    }
                }
                Ok(())
            }
            (&Action::Reshape(len), Some((o, n))) => match src(0)? {
                None => Rows::whole(len).copy(x, part(ws, o, n)?),
                Some(i) => Rows::whole(len).copy_within(ws, i, o),
            },
            (&Action::Read(k), Some((o, n))) => {
                let (at, len) = self.vars[k];
                Rows::whole(len)
                    .copy(state.as_bytes().get(at..at + len).ok_or(UNPLACED)?, part(ws, o, n)?)
            }
            (&Action::Assign(k), None) => {
                let (at, len) = self.vars[k];
                let var = part(state.as_bytes_mut(), at, len)?;
                match src(0)? {
                    None => Rows::whole(len).copy(x, var),
                    Some(i) => Rows::whole(len).copy(ws.get(i..i + len).ok_or(UNPLACED)?, var),
                }
            }
            _ => Err(Error::Plan { reason: "a step and its output do not match" }),
        }
    }
}

/// Bytes `o..o + n` of `buf`.
fn part(buf: &mut [u8], o: usize, n: usize) -> Result<&mut [u8], Error> {
    fixed::region_mut(buf, (o, n))
}
