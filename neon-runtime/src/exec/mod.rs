//! Dynamic execution plan (feature `alloc`): [`ExecutionPlan`], the run-time twin of
//! `neon_plan!`, for graphs whose operators and sizes are known only at run time (models
//! loaded from files).
//!
//! A plan is a straight-line list of steps, each a prepared operator ([`Op`]) applied to
//! earlier values. It is checked and laid out with the same code as a compiled plan: every
//! step's [`ShapeRule`] (the operators' own shape rules and layout facts) and the static
//! planner of [`crate::plan`] (liveness, in-place reuse, best-fit offsets in one
//! workspace). What the macro does once at compile time, the plan does at the first run
//! with a given set of input shapes, and again only when those shapes change:
//!
//! 1. **Validation**: the input count, then shape and layout inference over every step,
//!    in order; the first violated rule is returned before any kernel runs, and the plan
//!    (its cached layout included) stays as it was.
//! 2. **Planning**: one [`plan::Schedule`] of the values (sizes in bytes at these shapes)
//!    and steps goes to [`plan::plan`]; the workspace `Vec` grows when the result is larger
//!    than any before (it never shrinks).
//! 3. **Dispatch**: one operator call per step, on slices of the workspace carved at the
//!    planner's offsets ([`crate::workspace::carve`]).
//!
//! The plan for the last input shapes is cached, so a run at the shapes of the previous
//! run allocates nothing: it compares the shapes, then dispatches.
//!
//! ## Values and storage
//! Plan inputs are borrowed read-only for the run and never written (no step runs in place
//! on them); every step result lives in the plan's workspace, one 16-byte aligned buffer.
//! A value is overwritten once its last reader has run, unless it is the output or
//! [`retain`](ExecutionPlan::retain)ed: the schedule the planner sees ends with a
//! keep-alive step that reads those, so they stay readable until the next run. An
//! elementwise step (activation, Add, Mul) or a reshape whose first input is a workspace
//! value read for the last time writes over that input, as in a compiled plan.
//!
//! ## Layouts
//! Each value carries the layout of the view it came from (a plan input) or of the step
//! that wrote it ([`ShapeRule::writes_layout`], else its first input's). A step whose
//! operator needs a layout ([`ShapeRule::reads_layout`]) must get it, and the inputs of an
//! operator that reads any layout must share the first input's: otherwise
//! [`Error::Layout`] before dispatch. Rank-1 tensors have no layout to speak of and are
//! read in any. The output is returned in the layout given to
//! [`set_output`](ExecutionPlan::set_output): a rank-2 output in the other layout gets a
//! final [`Transpose`] step (an operator that can write the requested layout itself, such
//! as a [`Conv1d`](crate::ops::conv::Conv1d) built with a frame-major output, needs none).
//!
//! ## Threads
//! With feature `std` the plan owns a worker [`Team`](crate::team::Team):
//! [`set_threads`](ExecutionPlan::set_threads) sets its size and the next run replaces the
//! team (after validation, before dispatch) when the size changed. Linear, conv,
//! activation and block steps split their work over it (the others run on the calling thread);
//! results are bitwise the same for any count.
//!
//! ```
//! use neon_runtime::exec::ExecutionPlan;
//! use neon_runtime::ops::conv::{Conv1d, Conv1dGeometry};
//! use neon_runtime::{Layout, Portable, TensorView};
//!
//! // An identity conv1d: 2 channels in, 2 out, kernel 1, writing frame-major output.
//! let geometry = Conv1dGeometry::new(2, 2, 1).output_layout(Layout::FrameMajor);
//! let conv = Conv1d::new(geometry, vec![1.0, 0.0, 0.0, 1.0], None)?;
//! let mut plan = ExecutionPlan::new();
//! let x = plan.input();
//! let y = plan.add(conv, &[x])?;
//! plan.set_output(y, Layout::FrameMajor)?;
//! let input = TensorView::new(&[1.0, 2.0, 3.0, 4.0], &[2, 2], Layout::ChannelFirst)?;
//! let out = plan.run::<Portable>(&[input])?;
//! assert_eq!(out.data(), &[1.0, 3.0, 2.0, 4.0]);
//! assert_eq!(out.dims(), &[2, 2]);
//! # Ok::<(), neon_runtime::Error>(())
//! ```

mod op;
pub mod stream;
#[cfg(test)]
mod tests;

pub use op::Op;

use alloc::vec;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicU32, Ordering};

use crate::error::{Error, ShapeError};
use crate::kernels::{Backend, Parallel, Serial};
use crate::ops::layout::Transpose;
use crate::ops::{layout_name, RunOptions, ShapeRule, SAME_LAYOUT};
use crate::plan::{self, Location, MemoryPlan, PlanError, Schedule, Step};
use crate::tensor::{Layout, Shape, TensorView, TensorViewMut};
use crate::workspace::carve;

/// Bytes per element (f32).
const ELEM: usize = core::mem::size_of::<f32>();

/// Elements of slack in the workspace buffer, so that the workspace proper can start on an
/// [`plan::ALIGN`]-byte boundary.
const SLACK: usize = plan::ALIGN / ELEM - 1;

/// Where the workspace proper starts in `buffer`: the first element on an
/// [`plan::ALIGN`]-byte boundary (alignment only helps speed, so should the address ever
/// not say, the last slack element).
fn workspace_start(buffer: &[f32]) -> usize {
    buffer.as_ptr().align_offset(plan::ALIGN).min(SLACK)
}

/// Inputs of the widest operator an [`Op`] holds (Add, Mul).
const MAX_ARITY: usize = 2;

/// Source of plan ids, so a [`Value`] of one plan is refused by another.
static NEXT_PLAN: AtomicU32 = AtomicU32::new(0);

/// A value of an [`ExecutionPlan`]: a plan input or a step's result. A small `Copy` handle,
/// valid only in the plan that returned it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Value {
    plan: u32,
    index: usize,
}

/// One step as added: the operator, its input values and its output value.
struct Node {
    op: Op,
    inputs: Vec<usize>,
    output: usize,
}

/// How one step runs at the planned shapes.
#[derive(Clone, Copy, Debug)]
struct Planned {
    /// The output takes the first input's buffer (the planner merged them).
    in_place: bool,
    /// `(offset, len)` of the step's scratch in the workspace, in elements.
    scratch: Option<(usize, usize)>,
    /// Layout tag of each input view.
    arg_layouts: [Layout; MAX_ARITY],
    /// Layout tag of the output view.
    out_layout: Layout,
}

/// Everything a run needs for one set of input shapes, computed once.
struct Prepared {
    /// The input shapes and layouts this was planned for.
    key: Vec<(Shape, Layout)>,
    /// Shape of every value, then of the transposed output when there is one.
    shapes: Vec<Shape>,
    /// Layout of every value (as stored), likewise.
    layouts: Vec<Layout>,
    /// Workspace offset of every value in elements (`None` for plan inputs), likewise.
    offsets: Vec<Option<usize>>,
    /// One entry per node, then one for the final transpose when there is one.
    steps: Vec<Planned>,
    /// The final transpose: its operator, input and output value.
    transpose: Option<(Op, [usize; 1], usize)>,
    /// The value returned by `run` and its layout tag.
    output: (usize, Layout),
    /// The planner's result.
    memory: MemoryPlan,
}

/// A dynamic execution plan: the run-time twin of a `neon_plan!` block (see the
/// [module docs](self)).
///
/// Build it with [`input`](Self::input), [`add`](Self::add) and
/// [`set_output`](Self::set_output), then [`run`](Self::run) it any number of times, with
/// any input shapes the operators accept. A plan is used serially (`run` takes
/// `&mut self`); several plans may share their operators ([`Op`] holds them by `Arc`).
pub struct ExecutionPlan {
    id: u32,
    /// Value index of each plan input, in declaration order.
    inputs: Vec<usize>,
    /// For each value: `Some(k)` when it is plan input `k`.
    input_of: Vec<Option<usize>>,
    nodes: Vec<Node>,
    output: Option<(usize, Layout)>,
    retained: Vec<usize>,
    prepared: Option<Prepared>,
    workspace: Vec<f32>,
    /// The last run succeeded and nothing changed since: views are valid.
    ran: bool,
    #[cfg(feature = "std")]
    threads: usize,
    #[cfg(feature = "std")]
    team: Option<crate::team::Team>,
}

impl core::fmt::Debug for ExecutionPlan {
    /// A summary: the counts and the workspace size, not the operators' weights.
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("ExecutionPlan")
            .field("inputs", &self.inputs.len())
            .field("steps", &self.nodes.len())
            .field("output", &self.output)
            .field("retained", &self.retained)
            .field("workspace_bytes", &self.workspace_bytes())
            .finish_non_exhaustive()
    }
}

impl Default for ExecutionPlan {
    fn default() -> Self {
        Self::new()
    }
}

impl ExecutionPlan {
    /// An empty plan (no inputs, no steps, no output; it allocates nothing yet), running on
    /// the calling thread.
    pub fn new() -> Self {
        Self {
            id: NEXT_PLAN.fetch_add(1, Ordering::Relaxed),
            inputs: Vec::new(),
            input_of: Vec::new(),
            nodes: Vec::new(),
            output: None,
            retained: Vec::new(),
            prepared: None,
            workspace: Vec::new(),
            ran: false,
            #[cfg(feature = "std")]
            threads: 1,
            #[cfg(feature = "std")]
            team: None,
        }
    }

    /// Declares the next plan input (`run` takes the inputs in declaration order). Its
    /// shape and layout are the view's, given at run time.
    pub fn input(&mut self) -> Value {
        self.changed();
        let index = self.input_of.len();
        self.input_of.push(Some(self.inputs.len()));
        self.inputs.push(index);
        Value { plan: self.id, index }
    }

    /// Appends a step: `op` applied to `inputs` (in the operator's argument order), and
    /// returns its result. Takes any prepared operator that converts into an [`Op`]: an
    /// `Arc` of one (shared with other plans) or the operator itself.
    ///
    /// Shapes are checked at run time, when they are known.
    ///
    /// # Errors
    /// [`Error::Plan`] when an input is not a value of this plan; [`Error::Shape`]
    /// ([`ShapeError::Geometry`]) when the number of inputs is not the operator's arity.
    /// The plan is unchanged on error.
    pub fn add(&mut self, op: impl Into<Op>, inputs: &[Value]) -> Result<Value, Error> {
        let op = op.into();
        let ids = inputs.iter().map(|&v| self.index(v)).collect::<Result<Vec<_>, _>>()?;
        if ids.len() != op.arity() {
            let reason = match op.arity() {
                1 => "expects exactly 1 input",
                _ => "expects exactly 2 inputs",
            };
            return Err(ShapeError::Geometry { op: op.name(), reason }.into());
        }
        self.changed();
        let output = self.input_of.len();
        self.input_of.push(None);
        self.nodes.push(Node { op, inputs: ids, output });
        Ok(Value { plan: self.id, index: output })
    }

    /// Makes `value` the tensor [`run`](Self::run) returns, in `layout` (replacing an
    /// earlier choice). A rank-2 result in the other layout is transposed by a final step;
    /// a rank-1 result is the same in both.
    ///
    /// # Errors
    /// [`Error::Plan`] when `value` is not a value of this plan or is a plan input (the
    /// caller has that already).
    pub fn set_output(&mut self, value: Value, layout: Layout) -> Result<(), Error> {
        let v = self.step_result(value)?;
        self.changed();
        self.output = Some((v, layout));
        Ok(())
    }

    /// Keeps `value` readable after each run ([`view`](Self::view)): the planner does not
    /// reuse its storage for later steps.
    ///
    /// # Errors
    /// [`Error::Plan`] when `value` is not a value of this plan or is a plan input.
    pub fn retain(&mut self, value: Value) -> Result<(), Error> {
        let v = self.step_result(value)?;
        if !self.retained.contains(&v) {
            self.changed();
            self.retained.push(v);
        }
        Ok(())
    }

    /// A read-only view of a retained value, or of the output, as the last run left it.
    /// The output's view is what `run` returned (in the [`set_output`](Self::set_output)
    /// layout), unless the output value is also retained: then it is the value as its step
    /// wrote it.
    ///
    /// # Errors
    /// [`Error::Plan`] when `value` is not a value of this plan or is neither retained nor
    /// the output, when the plan has not run, or when its last run failed or it changed
    /// since.
    pub fn view(&self, value: Value) -> Result<TensorView<'_>, Error> {
        let v = self.index(value)?;
        let (Some(p), true) = (&self.prepared, self.ran) else {
            return Err(Error::Plan { reason: "no successful run since the plan changed" });
        };
        if self.retained.contains(&v) {
            self.value_view(p, v, p.layouts[v])
        } else if self.output.is_some_and(|(o, _)| o == v) {
            self.value_view(p, p.output.0, p.output.1)
        } else {
            Err(Error::Plan { reason: "the value is neither retained nor the output" })
        }
    }

    /// Runs the plan with backend `B` on `inputs` (one view per [`input`](Self::input), in
    /// order) and returns the output, which the plan owns until its next run.
    ///
    /// New input shapes or layouts (against the previous run) re-plan the workspace first;
    /// the same shapes allocate nothing.
    ///
    /// # Errors
    /// Before any kernel runs, leaving the plan usable: [`Error::Backend`] when `B` cannot
    /// run here ([`BackendKind::availability`](crate::BackendKind::availability); e.g. an
    /// `X86` level in a build without feature `std` and without its target features);
    /// [`Error::Plan`] when no output was set; [`Error::Length`] (`"plan inputs"`) for the
    /// wrong number of inputs; [`Error::Shape`] for the first step whose shape rule the
    /// inferred shapes break; [`Error::Layout`] for an input of a step in a layout it does
    /// not read (see the [module docs](self)); [`Error::BadShape`] when the workspace size overflows `usize`.
    /// With feature `std`, [`Error::Team`] when a new team cannot start (before dispatch)
    /// or a task panicked (during it; the next run starts afresh).
    pub fn run<B: Backend>(&mut self, inputs: &[TensorView<'_>]) -> Result<TensorView<'_>, Error> {
        self.ran = false;
        B::KIND.availability()?;
        self.prepare(inputs)?;
        #[cfg(feature = "std")]
        self.replace_team()?;
        let Some(p) = &self.prepared else {
            return Err(Error::Plan { reason: "no plan for these inputs" });
        };
        #[cfg(feature = "std")]
        let par: &dyn Parallel = match &self.team {
            Some(team) => team,
            None => &Serial,
        };
        #[cfg(not(feature = "std"))]
        let par: &dyn Parallel = &Serial;
        let start = workspace_start(&self.workspace);
        let ws = self.workspace.get_mut(start..).unwrap_or_default();
        execute::<B>((&self.nodes, &self.input_of), p, ws, inputs, par)?;
        self.ran = true;
        let (v, layout) = p.output;
        self.value_view(p, v, layout)
    }

    /// Workspace bytes the plan for the last validated input shapes uses (0 before the
    /// first run): [`MemoryPlan::workspace_bytes`]. The workspace buffer itself is as large
    /// as the largest plan so far, plus up to 12 bytes to start on a 16-byte boundary.
    pub fn workspace_bytes(&self) -> usize {
        self.prepared.as_ref().map_or(0, |p| p.memory.workspace_bytes)
    }

    /// The planner's result for the last validated input shapes (offsets in bytes, live
    /// steps, lower bound), indexed by value in creation order, then the transposed output
    /// (when the output layout needs one), the steps' scratch buffers and an empty value
    /// written by the keep-alive step (see the [module docs](self)); `None` before the
    /// first run.
    pub fn memory_plan(&self) -> Option<&MemoryPlan> {
        self.prepared.as_ref().map(|p| &p.memory)
    }

    /// Steps added so far (a final transpose for the output layout not included).
    pub fn steps(&self) -> usize {
        self.nodes.len()
    }

    /// The index of `value` in this plan.
    fn index(&self, value: Value) -> Result<usize, Error> {
        if value.plan == self.id && value.index < self.input_of.len() {
            Ok(value.index)
        } else {
            Err(Error::Plan { reason: "the value belongs to another plan" })
        }
    }

    /// The index of `value`, which must be a step's result.
    fn step_result(&self, value: Value) -> Result<usize, Error> {
        let v = self.index(value)?;
        match self.input_of[v] {
            None => Ok(v),
            Some(_) => Err(Error::Plan { reason: "a plan input is the caller's, not a result" }),
        }
    }

    /// The structure changed: the cached plan and the last run's views are stale.
    fn changed(&mut self) {
        self.prepared = None;
        self.ran = false;
    }

    /// A view of value `v` in the workspace, tagged `layout`.
    fn value_view(&self, p: &Prepared, v: usize, layout: Layout) -> Result<TensorView<'_>, Error> {
        let shape = &p.shapes[v];
        let off =
            p.offsets[v].ok_or(Error::Plan { reason: "the value is not in the workspace" })?;
        let (start, len) = (workspace_start(&self.workspace) + off, shape.numel());
        let data = self.workspace.get(start..start + len).ok_or(Error::Length {
            what: "workspace",
            expected: start + len,
            got: self.workspace.len(),
        })?;
        TensorView::new(data, shape.dims(), layout)
    }

    /// Validates `inputs` and, for shapes other than the cached plan's, infers every shape
    /// and layout, plans the workspace and grows it. Nothing changes on error.
    fn prepare(&mut self, inputs: &[TensorView<'_>]) -> Result<(), Error> {
        let Some(output) = self.output else {
            return Err(Error::Plan { reason: "no output was set (set_output)" });
        };
        if inputs.len() != self.inputs.len() {
            let (expected, got) = (self.inputs.len(), inputs.len());
            return Err(Error::Length { what: "plan inputs", expected, got });
        }
        if let Some(p) = &self.prepared {
            let same =
                |(k, x): (&(Shape, Layout), &TensorView)| k.0 == *x.shape() && k.1 == x.layout();
            if p.key.iter().zip(inputs).all(same) {
                return Ok(());
            }
        }
        let p = self.infer(inputs, output)?;
        let need = p.memory.workspace_bytes / ELEM + SLACK;
        if self.workspace.len() < need {
            self.workspace.resize(need, 0.0);
        }
        self.prepared = Some(p);
        Ok(())
    }

    /// Shape and layout inference over every step, then the planner.
    fn infer(&self, inputs: &[TensorView<'_>], output: (usize, Layout)) -> Result<Prepared, Error> {
        let n = self.input_of.len();
        let unit = Shape::new(&[1])?;
        let mut shapes = vec![unit; n];
        let mut layouts = vec![Layout::ChannelFirst; n];
        for (&v, x) in self.inputs.iter().zip(inputs) {
            shapes[v] = *x.shape();
            layouts[v] = x.layout();
        }
        let mut steps = Vec::with_capacity(self.nodes.len() + 1);
        for node in &self.nodes {
            let args: Vec<Shape> = node.inputs.iter().map(|&v| shapes[v]).collect();
            let out = node.op.output_shape(&args)?;
            let (arg_layouts, out_layout) =
                step_layouts(&node.op, &node.inputs, &shapes, &layouts)?;
            shapes[node.output] = out;
            layouts[node.output] = out_layout;
            steps.push(Planned { in_place: false, scratch: None, arg_layouts, out_layout });
        }
        // The output layout: a transpose when a rank-2 result is in the other one.
        let (result, want) = output;
        let transpose = if layouts[result] != want && shapes[result].rank() > 1 {
            let op = Op::Transpose(Transpose::new(want));
            let args = [result];
            let out = op.output_shape(&[shapes[result]])?;
            let (arg_layouts, out_layout) = step_layouts(&op, &args, &shapes, &layouts)?;
            shapes.push(out);
            layouts.push(out_layout);
            steps.push(Planned { in_place: false, scratch: None, arg_layouts, out_layout });
            Some((op, args, n))
        } else {
            None
        };
        let returned = transpose.as_ref().map_or(result, |t| t.2);
        let schedule = self.schedule(&shapes, transpose.as_ref(), returned)?;
        let memory = plan::plan(&schedule).map_err(|e| match e {
            PlanError::Overflow => Error::BadShape { reason: "workspace size overflows usize" },
            _ => Error::Plan { reason: "the schedule is malformed" },
        })?;
        // Scratch values follow the tensor values in the schedule, one per step needing one.
        let mut temp = shapes.len();
        for (s, planned) in steps.iter_mut().enumerate() {
            let (op, args, out) = match (self.nodes.get(s), &transpose) {
                (Some(node), _) => (&node.op, &node.inputs[..], node.output),
                (None, Some((op, args, out))) => (op, &args[..], *out),
                (None, None) => break,
            };
            let pl = &memory.placements;
            let root = |v: usize| pl[v].aliases.unwrap_or(v);
            planned.in_place = pl[out].aliases.is_some() && root(out) == root(args[0]);
            let len = op.scratch_len(&shapes[args[0]]);
            if len > 0 {
                planned.scratch = pl[temp].offset.map(|o| (o / ELEM, len));
                temp += 1;
            }
        }
        let offsets = (0..shapes.len()).map(|v| memory.placements[v].offset.map(|o| o / ELEM));
        Ok(Prepared {
            key: inputs.iter().map(|x| (*x.shape(), x.layout())).collect(),
            offsets: offsets.collect(),
            shapes,
            layouts,
            steps,
            transpose,
            output: (returned, want),
            memory,
        })
    }

    /// The planner's input at these shapes: every value (plan inputs external, the rest in
    /// the workspace), then the steps' scratch values and a final step that reads the
    /// returned and the retained values, so that nothing reuses their storage.
    fn schedule(
        &self,
        shapes: &[Shape],
        transpose: Option<&(Op, [usize; 1], usize)>,
        returned: usize,
    ) -> Result<Schedule, Error> {
        let overflow = Error::BadShape { reason: "tensor size in bytes overflows usize" };
        let mut values = Vec::with_capacity(shapes.len() + 2);
        for (v, shape) in shapes.iter().enumerate() {
            let bytes = shape.numel().checked_mul(ELEM).ok_or(overflow.clone())?;
            let external = self.input_of.get(v).is_some_and(Option::is_some);
            let location = if external { Location::External } else { Location::Workspace };
            values.push(plan::Value { bytes, location });
        }
        let mut steps = Vec::with_capacity(self.nodes.len() + 2);
        let calls = self.nodes.iter().map(|n| (&n.op, &n.inputs[..], n.output));
        let last = transpose.map(|(op, args, out)| (op, &args[..], *out));
        for (op, args, output) in calls.chain(last) {
            let mut temps = Vec::new();
            let len = op.scratch_len(&shapes[args[0]]);
            if len > 0 {
                temps.push(values.len());
                let bytes = len.checked_mul(ELEM).ok_or(overflow.clone())?;
                values.push(plan::Value { bytes, location: Location::Workspace });
            }
            let in_place = op.in_place().possible();
            steps.push(Step { inputs: args.to_vec(), output, in_place, temps });
        }
        let sink = values.len();
        values.push(plan::Value { bytes: 0, location: Location::External });
        let mut keep = self.retained.clone();
        keep.push(returned);
        steps.push(Step { inputs: keep, output: sink, in_place: false, temps: Vec::new() });
        Ok(Schedule { values, steps })
    }
}

#[cfg(feature = "std")]
impl ExecutionPlan {
    /// Runs the next runs on `threads` threads (the calling thread and `threads - 1`
    /// workers; 1, the default, runs everything on the calling thread). The team is started
    /// by the next run that passes validation, replacing the previous one; results are
    /// bitwise the same for any count.
    ///
    /// # Errors
    /// [`Error::Team`] ([`TeamError::NoThreads`](crate::TeamError::NoThreads)) for 0.
    pub fn set_threads(&mut self, threads: usize) -> Result<(), Error> {
        if threads == 0 {
            return Err(Error::Team(crate::TeamError::NoThreads));
        }
        self.threads = threads;
        Ok(())
    }

    /// Threads the next run uses.
    pub fn threads(&self) -> usize {
        self.threads
    }

    /// Replaces the team when its size is not the requested one.
    fn replace_team(&mut self) -> Result<(), Error> {
        let have = self.team.as_ref().map_or(1, crate::team::Team::threads);
        if have != self.threads {
            // Drop (join) the old team before starting the new one.
            self.team = None;
            if self.threads > 1 {
                self.team = Some(crate::team::Team::new(self.threads)?);
            }
        }
        Ok(())
    }
}

/// The layout tags of a step's input views and of its output, checking the inputs'
/// layouts against the operator's facts (rank-1 tensors pass in any layout).
fn step_layouts(
    op: &Op,
    args: &[usize],
    shapes: &[Shape],
    layouts: &[Layout],
) -> Result<([Layout; MAX_ARITY], Layout), Error> {
    let first = op.reads_layout(0).unwrap_or(layouts[args[0]]);
    let mut tags = [first; MAX_ARITY];
    for (k, &v) in args.iter().enumerate() {
        let want = op.reads_layout(k);
        let tag = want.unwrap_or(first);
        if shapes[v].rank() > 1 && layouts[v] != tag {
            let expected = want.map_or(SAME_LAYOUT, layout_name);
            return Err(Error::Layout { op: op.name(), expected });
        }
        if let Some(t) = tags.get_mut(k) {
            *t = tag;
        }
    }
    Ok((tags, op.writes_layout().unwrap_or(first)))
}

/// One element, for the unused slots of a step's input views.
static UNUSED: [f32; 1] = [0.0];

/// Runs every step of `p` on `ws` (`graph`: the plan's nodes and, for each value, the plan
/// input it is). Allocates nothing.
fn execute<B: Backend>(
    (nodes, input_of): (&[Node], &[Option<usize>]),
    p: &Prepared,
    ws: &mut [f32],
    inputs: &[TensorView<'_>],
    par: &dyn Parallel,
) -> Result<(), Error> {
    let options = RunOptions::new().with_parallel(par);
    let calls = nodes.iter().map(|n| (&n.op, &n.inputs[..], n.output));
    let last = p.transpose.as_ref().map(|(op, args, out)| (op, &args[..], *out));
    for ((op, args, out), planned) in calls.chain(last).zip(&p.steps) {
        // Regions of the workspace: the inputs read from it (not a plan input, not the one
        // the output overwrites), the output, the scratch. Unused slots are empty regions
        // at the end, which overlap nothing.
        let end = ws.len();
        let skip = usize::from(planned.in_place);
        let mut reads = [(end, 0); MAX_ARITY];
        for (k, &v) in args.iter().enumerate().skip(skip) {
            if let Some(off) = p.offsets[v] {
                reads[k - skip] = (off, p.shapes[v].numel());
            }
        }
        let out_off = p.offsets[out].ok_or(Error::Plan { reason: "a result is not placed" })?;
        let writes = [(out_off, p.shapes[out].numel()), planned.scratch.unwrap_or((end, 0))];
        let (read, [out_data, scratch]) = carve(ws, reads, writes)?;
        let mut views = [TensorView::new(&UNUSED, &[1], Layout::ChannelFirst)?; MAX_ARITY];
        for (k, &v) in args.iter().enumerate().skip(skip) {
            let data = match (p.offsets[v], input_of.get(v).copied().flatten()) {
                (Some(_), _) => read[k - skip],
                (None, Some(i)) => inputs[i].data(),
                (None, None) => return Err(Error::Plan { reason: "a value is not placed" }),
            };
            views[k - skip] = TensorView::new(data, p.shapes[v].dims(), planned.arg_layouts[k])?;
        }
        let mut y = TensorViewMut::new(out_data, p.shapes[out].dims(), planned.out_layout)?;
        let n_args = args.len() - skip;
        op.run::<B>(&views[..n_args], &mut y, scratch, planned.in_place, options)?;
    }
    Ok(())
}
