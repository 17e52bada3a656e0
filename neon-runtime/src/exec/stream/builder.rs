//! [`StreamPlanBuilder`]: a stream plan's values, state variables and steps, each checked
//! as it is added, then placed once by [`crate::plan`].

use alloc::boxed::Box;
use alloc::sync::Arc;
use alloc::vec;
use alloc::vec::Vec;
use core::sync::atomic::Ordering;

use super::elem::{bytes, Elem, ElemType};
use super::fixed::Rows;
use super::resolve::{self, Fusion, Places};
use super::step::{rule, StreamOp};
use super::{Action, Node, StreamPlan, StreamValue, StreamVar};
use crate::error::Error;
use crate::plan::{self, Location, PlanError, Schedule, Step};
use crate::tensor::Shape;

/// A value as declared: its element type and shape.
#[derive(Clone, Copy, Debug)]
pub(super) struct Declared {
    pub(super) ty: ElemType,
    pub(super) shape: Shape,
}

impl Declared {
    /// Its size in bytes.
    pub(super) fn bytes(&self) -> usize {
        self.shape.numel() * self.ty.size()
    }
}

/// Builds a [`StreamPlan`]: declare the input ([`input`](Self::input)) and the state
/// variables ([`variable`](Self::variable)), add steps in execution order, then
/// [`build`](Self::build) with the output. Every call checks its step (element types, the
/// operator's shape rule, the copy's sizes) and returns an error, leaving the builder as it
/// was; nothing panics.
#[derive(Debug)]
pub struct StreamPlanBuilder {
    id: u32,
    pub(super) values: Vec<Declared>,
    /// Index of the plan input, once declared.
    input: Option<usize>,
    vars: Vec<(Declared, usize)>,
    /// Initial values of the variables, each at its 16-byte aligned offset.
    init: Vec<u8>,
    pub(super) nodes: Vec<Node>,
}

impl Default for StreamPlanBuilder {
    fn default() -> Self {
        Self::new()
    }
}

impl StreamPlanBuilder {
    /// An empty builder.
    pub fn new() -> Self {
        StreamPlanBuilder {
            id: super::super::NEXT_PLAN.fetch_add(1, Ordering::Relaxed),
            values: Vec::new(),
            input: None,
            vars: Vec::new(),
            init: Vec::new(),
            nodes: Vec::new(),
        }
    }

    /// Declares the plan input (one per plan): `ty` elements of shape `dims`, given to
    /// [`StreamPlan::run`] as a slice of `dims`' product.
    ///
    /// # Errors
    /// [`Error::Plan`] for a second input; [`Error::BadShape`] for a bad shape (rank 0 or
    /// above 4, a zero dimension).
    pub fn input(&mut self, ty: ElemType, dims: &[usize]) -> Result<StreamValue, Error> {
        if self.input.is_some() {
            return Err(Error::Plan { reason: "a stream plan has one input" });
        }
        let v = self.value(Declared { ty, shape: shape(dims)? })?;
        self.input = Some(v.index);
        Ok(v)
    }

    /// Declares a state variable of shape `dims` with initial values `init` (TFLite's
    /// VAR_HANDLE, initialised by the init subgraph's ASSIGN_VARIABLE).
    ///
    /// # Errors
    /// [`Error::BadShape`] for a bad shape; [`Error::Length`] when `init` does not hold
    /// `dims`' product.
    pub fn variable<T: Elem>(&mut self, dims: &[usize], init: &[T]) -> Result<StreamVar, Error> {
        let d = Declared { ty: T::TYPE, shape: shape(dims)? };
        let (expected, got) = (d.shape.numel(), init.len());
        if expected != got {
            return Err(Error::Length { what: "state variable initial values", expected, got });
        }
        let offset = self.init.len();
        self.init.extend_from_slice(bytes(init));
        self.init.resize(plan::align_up(self.init.len()).ok_or(OVERFLOW)?, 0);
        self.vars.push((d, offset));
        Ok(StreamVar { plan: self.id, index: self.vars.len() - 1 })
    }

    /// READ_VARIABLE: a copy of `var`'s value at this point of the step order (the initial
    /// value, or what the last earlier [`assign`](Self::assign) wrote in this run, or what the
    /// previous run left).
    ///
    /// # Errors
    /// [`Error::Plan`] for a variable of another builder.
    pub fn read(&mut self, var: StreamVar) -> Result<StreamValue, Error> {
        let k = self.var(var)?;
        let d = self.vars[k].0;
        self.push(Action::Read(k), &[], d)
    }

    /// ASSIGN_VARIABLE: writes `value` into `var` at this point of the step order.
    ///
    /// # Errors
    /// [`Error::Plan`] for a handle of another builder; [`Error::Shape`]
    /// (`"assign_variable"`) when the value's type or shape is not the variable's.
    pub fn assign(&mut self, var: StreamVar, value: StreamValue) -> Result<(), Error> {
        let k = self.var(var)?;
        let v = self.index(value)?;
        let (want, got) = (self.vars[k].0, self.values[v]);
        if want.ty != got.ty || want.shape != got.shape {
            return Err(rule("assign_variable", "the value's type or shape is not the variable's"));
        }
        self.nodes.push(Node { action: Action::Assign(k), inputs: vec![v], output: None });
        Ok(())
    }

    /// An operator step on `x`.
    ///
    /// # Errors
    /// [`Error::Plan`] for a value of another builder; [`Error::Shape`] when `x`'s element
    /// type is not the operator's input type or its shape breaks the operator's rule.
    pub fn op(&mut self, op: StreamOp, x: StreamValue) -> Result<StreamValue, Error> {
        let v = self.index(x)?;
        let (ty_in, ty_out) = op.types();
        if self.values[v].ty != ty_in {
            return Err(rule(op.name(), "the input's element type is not the operator's"));
        }
        let shape = op.output_shape(&self.values[v].shape)?;
        self.push(Action::Op(Box::new(op)), &[v], Declared { ty: ty_out, shape })
    }

    /// CONCATENATION of `parts` along `axis` (every other dimension and the element type
    /// equal; TFLite's copy form, all inputs quantised as the output).
    ///
    /// # Errors
    /// [`Error::Plan`] for a value of another builder; [`Error::Shape`] (`"concat"`) for no
    /// parts, an axis past the rank, or parts that differ elsewhere.
    pub fn concat(&mut self, parts: &[StreamValue], axis: usize) -> Result<StreamValue, Error> {
        let ids = parts.iter().map(|&p| self.index(p)).collect::<Result<Vec<_>, _>>()?;
        let Some(&first) = ids.first() else {
            return Err(rule("concat", "no inputs"));
        };
        let d0 = self.values[first];
        if axis >= d0.shape.rank() {
            return Err(rule("concat", "axis past the rank"));
        }
        let mut total = 0usize;
        for &v in &ids {
            let d = self.values[v];
            let same = d.ty == d0.ty
                && d.shape.rank() == d0.shape.rank()
                && (0..d0.shape.rank()).all(|a| a == axis || d.shape.dim(a) == d0.shape.dim(a));
            if !same {
                return Err(rule("concat", "inputs differ in type or off the axis"));
            }
            total = total.checked_add(d.shape.dims()[axis]).ok_or(OVERFLOW)?;
        }
        let mut dims = d0.shape.dims().to_vec();
        dims[axis] = total;
        let out = Declared { ty: d0.ty, shape: shape(&dims)? };
        let mut rows = Vec::with_capacity(ids.len());
        let mut at = 0;
        for &v in &ids {
            let d = self.values[v].shape;
            let len = d.dims()[axis];
            rows.push(Rows::along(d.dims(), d0.ty.size(), axis, [0, len], [at, total]));
            at += len;
        }
        self.push(Action::Copy(rows), &ids, out)
    }

    /// Indices `start..start + len` of `x` along `axis` (STRIDED_SLICE with stride 1, one
    /// part of SPLIT_V).
    ///
    /// # Errors
    /// [`Error::Plan`] for a value of another builder; [`Error::Shape`] (`"slice"`) for an
    /// axis past the rank, an empty slice or one past the end.
    pub fn slice(
        &mut self,
        x: StreamValue,
        axis: usize,
        start: usize,
        len: usize,
    ) -> Result<StreamValue, Error> {
        let v = self.index(x)?;
        let d = self.values[v];
        let Some(&size) = d.shape.dim(axis) else {
            return Err(rule("slice", "axis past the rank"));
        };
        if len == 0 || start.checked_add(len).is_none_or(|end| end > size) {
            return Err(rule("slice", "empty or past the end of the axis"));
        }
        let mut dims = d.shape.dims().to_vec();
        dims[axis] = len;
        let rows = Rows::along(d.shape.dims(), d.ty.size(), axis, [start, len], [0, len]);
        let out = Declared { ty: d.ty, shape: shape(&dims)? };
        self.push(Action::Copy(vec![rows]), &[v], out)
    }

    /// The last `len` indices of `x` along `axis` (the streaming models' STRIDED_SLICE of the
    /// newest rows).
    ///
    /// # Errors
    /// As [`slice`](Self::slice).
    pub fn slice_last(
        &mut self,
        x: StreamValue,
        axis: usize,
        len: usize,
    ) -> Result<StreamValue, Error> {
        let v = self.index(x)?;
        let size = self.values[v].shape.dim(axis).copied().unwrap_or(0);
        let start = size.checked_sub(len).ok_or(rule("slice", "longer than the axis"))?;
        self.slice(x, axis, start, len)
    }

    /// SPLIT_V: `x` cut along `axis` into consecutive parts of `sizes` (which must add up to
    /// the axis), one slice step per part.
    ///
    /// # Errors
    /// [`Error::Shape`] (`"split"`) when the sizes do not add up to the axis; as
    /// [`slice`](Self::slice) otherwise. The builder is unchanged on error.
    pub fn split(
        &mut self,
        x: StreamValue,
        axis: usize,
        sizes: &[usize],
    ) -> Result<Vec<StreamValue>, Error> {
        let v = self.index(x)?;
        let size = self.values[v].shape.dim(axis).copied();
        if size != sizes.iter().try_fold(0usize, |a, &b| a.checked_add(b)) {
            return Err(rule("split", "the sizes do not add up to the axis"));
        }
        let (n_values, n_nodes) = (self.values.len(), self.nodes.len());
        let mut out = Vec::with_capacity(sizes.len());
        let mut start = 0;
        for &len in sizes {
            match self.slice(x, axis, start, len) {
                Ok(part) => out.push(part),
                Err(e) => {
                    self.values.truncate(n_values);
                    self.nodes.truncate(n_nodes);
                    return Err(e);
                }
            }
            start += len;
        }
        Ok(out)
    }

    /// RESHAPE: `x` with shape `dims` (the same element count). The planner may give the
    /// result `x`'s own buffer when this is `x`'s last use; the step then copies nothing.
    ///
    /// # Errors
    /// [`Error::Plan`] for a value of another builder; [`Error::BadShape`] for a bad shape;
    /// [`Error::Shape`] (`"reshape"`) for another element count.
    pub fn reshape(&mut self, x: StreamValue, dims: &[usize]) -> Result<StreamValue, Error> {
        let v = self.index(x)?;
        let d = self.values[v];
        let out = Declared { ty: d.ty, shape: shape(dims)? };
        if out.shape.numel() != d.shape.numel() {
            return Err(rule("reshape", "the element count changes"));
        }
        self.push(Action::Reshape(d.bytes()), &[v], out)
    }

    /// The element type and dimensions of `value`.
    ///
    /// # Errors
    /// [`Error::Plan`] for a value of another builder.
    pub fn describe(&self, value: StreamValue) -> Result<(ElemType, &[usize]), Error> {
        let d = &self.values[self.index(value)?];
        Ok((d.ty, d.shape.dims()))
    }

    /// The plan: `output` is what [`StreamPlan::run`] returns. The planner places every
    /// intermediate once, in one workspace; `output` stays readable after the run.
    ///
    /// # Errors
    /// [`Error::Plan`] when no input was declared or `output` is the input or of another
    /// builder; [`Error::BadShape`] when the workspace size overflows.
    pub fn build(self, output: StreamValue) -> Result<StreamPlan, Error> {
        let out = self.index(output)?;
        let Some(input) = self.input else {
            return Err(Error::Plan { reason: "no input was declared" });
        };
        if out == input {
            return Err(Error::Plan { reason: "the output is the input" });
        }
        let fusion = Fusion::new(&self.nodes, self.values.len(), out);
        let memory = plan::plan(&self.schedule(input, out, &fusion)).map_err(|e| match e {
            PlanError::Overflow => OVERFLOW,
            _ => Error::Plan { reason: "the schedule is malformed" },
        })?;
        let vars: Vec<(usize, usize)> =
            self.vars.iter().map(|&(d, offset)| (offset, d.bytes())).collect();
        let places =
            Places { values: &self.values, input, memory: &memory, vars: &vars, fusion: &fusion };
        let output_at = places.region(out)?;
        let (x, y) = (self.values[input], self.values[out]);
        let exec = resolve::steps(self.nodes, &places)?;
        let mut words = vec![0u128; self.init.len() / 16];
        super::elem::words_bytes_mut(&mut words).copy_from_slice(&self.init);
        Ok(StreamPlan {
            id: self.id,
            input: x,
            output: y,
            output_at,
            exec,
            vars,
            init: Arc::from(words),
            memory,
        })
    }

    /// The planner's input: the values (the input and those `fusion` leaves unplaced
    /// external, the rest in the workspace), one step per node (an assignment writes an
    /// empty external value), then a keep-alive step reading the output.
    fn schedule(&self, input: usize, output: usize, fusion: &Fusion) -> Schedule {
        let mut values: Vec<plan::Value> = self
            .values
            .iter()
            .enumerate()
            .map(|(v, d)| {
                let external = v == input || fusion.unplaced(v);
                let location = if external { Location::External } else { Location::Workspace };
                plan::Value { bytes: d.bytes(), location }
            })
            .collect();
        let mut sink = || {
            values.push(plan::Value { bytes: 0, location: Location::External });
            values.len() - 1
        };
        let mut steps = Vec::with_capacity(self.nodes.len() + 1);
        for (i, node) in self.nodes.iter().enumerate() {
            let in_place = matches!(node.action, Action::Reshape(_));
            let output = node.output.unwrap_or_else(&mut sink);
            let inputs = fusion.reads(&self.nodes, i).to_vec();
            steps.push(Step { inputs, output, in_place, temps: Vec::new() });
        }
        let end = sink();
        steps.push(Step { inputs: vec![output], output: end, in_place: false, temps: Vec::new() });
        Schedule { values, steps }
    }

    /// Appends a node reading `inputs` and writing a new value `out`.
    fn push(
        &mut self,
        action: Action,
        inputs: &[usize],
        out: Declared,
    ) -> Result<StreamValue, Error> {
        let v = self.value(out)?;
        self.nodes.push(Node { action, inputs: inputs.to_vec(), output: Some(v.index) });
        Ok(v)
    }

    /// A new value; its byte size must fit in `isize` (`Shape::numel` saturates, so the
    /// product is checked here, before any copy step computes offsets from the dimensions).
    fn value(&mut self, d: Declared) -> Result<StreamValue, Error> {
        let dims = d.shape.dims();
        let size = dims.iter().try_fold(d.ty.size(), |a, &n| a.checked_mul(n)).ok_or(OVERFLOW)?;
        if size > isize::MAX as usize {
            return Err(OVERFLOW);
        }
        self.values.push(d);
        Ok(StreamValue { plan: self.id, index: self.values.len() - 1 })
    }

    /// The index of `value` in this builder.
    fn index(&self, value: StreamValue) -> Result<usize, Error> {
        if value.plan == self.id && value.index < self.values.len() {
            Ok(value.index)
        } else {
            Err(Error::Plan { reason: "the value belongs to another stream plan" })
        }
    }

    /// The index of `var` in this builder.
    fn var(&self, var: StreamVar) -> Result<usize, Error> {
        if var.plan == self.id && var.index < self.vars.len() {
            Ok(var.index)
        } else {
            Err(Error::Plan { reason: "the variable belongs to another stream plan" })
        }
    }
}

/// The error of a size that overflows.
const OVERFLOW: Error = Error::BadShape { reason: "stream plan size overflows usize" };

/// A shape from `dims`.
fn shape(dims: &[usize]) -> Result<Shape, Error> {
    let s = Shape::new(dims)?;
    if dims.contains(&0) {
        return Err(Error::BadShape { reason: "zero dimension" });
    }
    Ok(s)
}
