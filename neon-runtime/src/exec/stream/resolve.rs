//! From the builder's steps to the plan's ([`Exec`]): which copies of the state variables
//! are skipped ([`Fusion`], decided before the planner places the values) and every region
//! resolved to its byte offsets once, when the plan is built ([`steps`]).
//!
//! TFLite's streaming graphs keep each layer's history in a variable: READ_VARIABLE copies
//! it out, CONCATENATION appends the new frames, STRIDED_SLICE takes the newest rows and
//! ASSIGN_VARIABLE copies them back. Two of those four copies are skipped, with the same
//! bytes in the same order:
//! - a read whose every reader is a copy (the concatenation), with no assignment of the
//!   variable from the read up to its last reader, is not copied: its readers copy from the
//!   state ([`fixed::read`](super::fixed::read) by their rows) and it takes no workspace;
//! - a slice (one copy of one source) read only by an assignment (not the plan output, not
//!   of a value read in place) is not copied: the assignment copies the slice's rows of its
//!   source straight into the variable, and the source stays live until then.

use alloc::vec;
use alloc::vec::Vec;

use super::fixed::{Rows, UNPLACED};
use super::{Action, Declared, Exec, Node, Src};
use crate::error::Error;
use crate::plan::MemoryPlan;

/// The copies a plan skips (see the [module docs](self)).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Fusion {
    /// Per value: the variable it is read from in place (a READ_VARIABLE not copied).
    in_state: Vec<Option<usize>>,
    /// Per step: the slice step whose copy this assignment makes itself.
    slice_of: Vec<Option<usize>>,
    /// Per value: written by a slice that its assignment makes (so never materialised).
    sliced: Vec<bool>,
}

impl Fusion {
    /// The fusions of `nodes` over `values` values, `output` being the plan output.
    pub(super) fn new(nodes: &[Node], values: usize, output: usize) -> Self {
        let mut readers: Vec<Vec<usize>> = vec![Vec::new(); values];
        let mut writer: Vec<Option<usize>> = vec![None; values];
        for (j, node) in nodes.iter().enumerate() {
            for &v in &node.inputs {
                readers[v].push(j);
            }
            if let Some(v) = node.output {
                writer[v] = Some(j);
            }
        }
        let mut in_state = vec![None; values];
        for (i, node) in nodes.iter().enumerate() {
            let (&Action::Read(k), Some(r)) = (&node.action, node.output) else { continue };
            let Some(&last) = readers[r].last() else { continue };
            let copies = readers[r].iter().all(|&j| matches!(nodes[j].action, Action::Copy(_)));
            let kept = !nodes[i..=last].iter().any(|n| n.action == Action::Assign(k));
            if r != output && copies && kept {
                in_state[r] = Some(k);
            }
        }
        let mut slice_of = vec![None; nodes.len()];
        let mut sliced = vec![false; values];
        for (a, node) in nodes.iter().enumerate() {
            let (Action::Assign(_), &[s]) = (&node.action, &node.inputs[..]) else { continue };
            let Some(n) = writer[s] else { continue };
            let from = &nodes[n];
            let one = matches!(&from.action, Action::Copy(rows) if rows.len() == 1);
            if one && s != output && readers[s] == [a] && in_state[from.inputs[0]].is_none() {
                slice_of[a] = Some(n);
                sliced[s] = true;
            }
        }
        Fusion { in_state, slice_of, sliced }
    }

    /// Whether value `v` takes no workspace (read in place, or a slice never made).
    pub(super) fn unplaced(&self, v: usize) -> bool {
        self.in_state[v].is_some() || self.sliced[v]
    }

    /// The values step `i` of `nodes` reads, as the planner must see them: an assignment
    /// that makes its slice reads the slice's source.
    pub(super) fn reads<'n>(&self, nodes: &'n [Node], i: usize) -> &'n [usize] {
        match self.slice_of[i] {
            Some(n) => &nodes[n].inputs,
            None => &nodes[i].inputs,
        }
    }
}

/// Where the values are: the builder's values, the plan input, the planner's placements,
/// the variables' `(offset, bytes)`.
pub(super) struct Places<'a> {
    pub(super) values: &'a [Declared],
    pub(super) input: usize,
    pub(super) memory: &'a MemoryPlan,
    pub(super) vars: &'a [(usize, usize)],
    pub(super) fusion: &'a Fusion,
}

impl Places<'_> {
    /// `(offset, bytes)` of workspace value `v`.
    pub(super) fn region(&self, v: usize) -> Result<(usize, usize), Error> {
        let offset = self.memory.placements.get(v).and_then(|p| p.offset).ok_or(UNPLACED)?;
        Ok((offset, self.values[v].bytes()))
    }

    /// Where value `v` is read from.
    fn source(&self, v: usize) -> Result<Src, Error> {
        if v == self.input {
            return Ok(Src::Input);
        }
        match self.fusion.in_state[v] {
            Some(k) => Ok(Src::Var(self.vars[k])),
            None => self.region(v).map(Src::Ws),
        }
    }

    /// Input `k` of a step reading `inputs`, resolved.
    fn input(&self, inputs: &[usize], k: usize) -> Result<Src, Error> {
        let &v = inputs.get(k).ok_or(Error::Plan { reason: "a step lacks an input" })?;
        self.source(v)
    }

    /// The workspace region of a step's `output`.
    fn output(&self, output: Option<usize>) -> Result<(usize, usize), Error> {
        self.region(output.ok_or(MISMATCH)?)
    }
}

/// The error of a step and its output that do not match (the builder makes none).
const MISMATCH: Error = Error::Plan { reason: "a step and its output do not match" };

/// The plan's steps from the builder's `nodes`, one each, every region resolved.
///
/// # Errors
/// [`Error::Plan`] for a value the planner did not place (none after a successful plan).
pub(super) fn steps(nodes: Vec<Node>, at: &Places) -> Result<Vec<Exec>, Error> {
    let fusion = at.fusion;
    // What each assignment that makes its slice copies: the slice's source and rows.
    let mut made = vec![None; nodes.len()];
    for (i, n) in fusion.slice_of.iter().enumerate() {
        if let Some(n) = *n {
            let Action::Copy(rows) = &nodes[n].action else { return Err(MISMATCH) };
            made[i] = Some((at.input(&nodes[n].inputs, 0)?, *rows.first().ok_or(MISMATCH)?));
        }
    }
    let mut out = Vec::with_capacity(nodes.len());
    for (Node { action, inputs, output }, made) in nodes.into_iter().zip(made) {
        let fused = output.is_some_and(|v| fusion.unplaced(v));
        let step = match action {
            _ if fused => Exec::Skip,
            Action::Copy(rows) => {
                let parts = (0..rows.len()).map(|k| at.input(&inputs, k));
                let parts = parts.zip(&rows).map(|(s, &r)| s.map(|s| (s, r)));
                Exec::Copy { parts: parts.collect::<Result<_, _>>()?, dst: at.output(output)? }
            }
            Action::Reshape(len) => match (at.input(&inputs, 0)?, at.output(output)?) {
                (Src::Ws((i, _)), (o, _)) if i == o => Exec::Skip,
                (src, dst) => Exec::Copy { parts: vec![(src, Rows::whole(len))], dst },
            },
            Action::Read(k) => {
                let (var, dst) = (at.vars[k], at.output(output)?);
                Exec::Copy { parts: vec![(Src::Var(var), Rows::whole(var.1))], dst }
            }
            Action::Assign(k) => {
                let var = at.vars[k];
                let (src, rows) = match made {
                    Some(m) => m,
                    None => (at.input(&inputs, 0)?, Rows::whole(var.1)),
                };
                Exec::Assign { src, rows, var }
            }
            Action::Op(op) => {
                let (src, dst) = (at.input(&inputs, 0)?, at.output(output)?);
                Exec::Op { op, src, dst }
            }
        };
        out.push(step);
    }
    Ok(out)
}
