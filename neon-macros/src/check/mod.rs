//! Phase 2: check a parsed plan. Resolves names, evaluates shape expressions to symbolic
//! dims, runs every operator's shape rule (the runtime's own, on [`SymDim`]s), reads the
//! runtime's in-place and layout facts, and builds the value graph the scheduler and the
//! emitter work on ([`Checked`]).
//!
//! The check is a list of small named checks, each stating its rule: the declarations
//! ([`decls`]: `declare_dims`, `declare_weights`, `declare_tensors`, `declare_scalars`),
//! one `check_stmt` per statement ([`stmt`]), then `check_unused` and
//! `check_has_statements`. Every error goes to the shared [`Ctxt`], spanned on the user's
//! token, so all of a block's errors are reported at once.
//!
//! [`SymDim`]: crate::sym::SymDim

mod decls;
mod shapes;
mod stmt;

use std::collections::HashMap;
use std::rc::Rc;

use proc_macro2::Span;

use crate::ctxt::Ctxt;
use crate::ir::{Checked, DimInfo, Home, Plan, Role, StepInfo, TensorInfo, Value, WeightInfo};
use crate::sym::Bounds;

/// Checks `plan`; `None` when an error was reported.
pub fn check(plan: &Plan, cx: &Ctxt) -> Option<Checked> {
    let errors_before = cx.error_count();
    let mut c = Checker::new(plan, cx);
    c.declare_dims();
    c.declare_weights();
    c.declare_tensors();
    c.declare_scalars();
    for stmt in &plan.stmts {
        c.check_stmt(stmt);
    }
    c.check_unused();
    c.check_has_statements();
    if let Some(path) = &plan.shared_weights {
        if plan.weights.is_empty() {
            cx.error_spanned_by(
                path,
                "`weights = ..` shares a weights struct, but this plan declares no weight",
            );
        }
    }
    (cx.error_count() == errors_before).then(|| c.finish())
}

/// The binding a name currently has.
#[derive(Clone, Copy)]
enum Binding {
    Value(usize),
    Weight(usize),
    Scalar,
    /// A declared output not written yet.
    Unwritten(usize),
    /// A name whose definition failed (already reported).
    Poisoned,
}

/// Whether `b` is a readable value (an input, a state or a `let`).
fn is_value(b: &Binding) -> bool {
    matches!(b, Binding::Value(_))
}

/// The state of the check: what is declared and bound so far.
struct Checker<'a> {
    cx: &'a Ctxt,
    plan: &'a Plan,
    /// Every declared name (dims, weights, tensors, scalars).
    names: HashMap<String, Span>,
    bounds: Rc<Bounds>,
    dims: Vec<DimInfo>,
    bind: HashMap<String, Binding>,
    weights: Vec<WeightInfo>,
    tensors: Vec<TensorInfo>,
    values: Vec<Value>,
    steps: Vec<StepInfo>,
    /// Reads per value.
    readers: Vec<usize>,
    /// `let`s per name so far (labels `h`, `h#2`, ...).
    let_count: HashMap<String, usize>,
    scalar_used: Vec<bool>,
    /// Whether a name was reported unknown with no close name to suggest: it may have
    /// meant any unused one, so none is reported "never used".
    unresolved: bool,
}

impl<'a> Checker<'a> {
    fn new(plan: &'a Plan, cx: &'a Ctxt) -> Self {
        Checker {
            cx,
            plan,
            names: HashMap::new(),
            bounds: Rc::new(Bounds::new()),
            dims: Vec::new(),
            bind: HashMap::new(),
            weights: Vec::new(),
            tensors: Vec::new(),
            values: Vec::new(),
            steps: Vec::new(),
            readers: Vec::new(),
            let_count: HashMap::new(),
            scalar_used: vec![false; plan.scalars.len()],
            unresolved: false,
        }
    }

    /// The names bound as `keep` accepts, sorted (the candidates of a "did you mean").
    fn names_of(&self, keep: impl Fn(&Binding) -> bool) -> Vec<&str> {
        let mut names: Vec<&str> =
            self.bind.iter().filter(|(_, b)| keep(b)).map(|(n, _)| n.as_str()).collect();
        names.sort_unstable();
        names
    }

    /// Rule: what is computed is used. Intermediates are read, outputs written, inputs,
    /// weights and scalars used (stable proc macros cannot warn, so these are errors).
    /// After an unknown name that suggested nothing, only unwritten outputs are reported.
    fn check_unused(&mut self) {
        self.readers.resize(self.values.len(), 0);
        let report = !self.unresolved;
        for (v, val) in self.values.iter().enumerate() {
            if report && val.home == Home::Temp && self.readers[v] == 0 {
                self.cx.error(val.span, format!("`{}` is computed but never used", val.name));
            }
        }
        for (ti, t) in self.tensors.iter().enumerate() {
            match t.role {
                Role::Output if !t.written => {
                    self.cx.error(t.name.span(), format!("output `{}` is never written", t.name))
                }
                Role::Input if report => {
                    let read = self
                        .values
                        .iter()
                        .enumerate()
                        .any(|(v, val)| val.home == Home::Tensor(ti) && self.readers[v] > 0);
                    if !read {
                        self.cx.error(t.name.span(), format!("input `{}` is never used", t.name));
                    }
                }
                _ => {}
            }
        }
        for w in &self.weights {
            if report && w.used.is_none() {
                self.cx.error(w.name.span(), format!("weight `{}` is never used", w.name));
            }
        }
        for (s, used) in self.plan.scalars.iter().zip(&self.scalar_used) {
            if report && !used {
                self.cx.error(s.span(), format!("scalar `{s}` is never used"));
            }
        }
    }

    /// Rule: a plan calls at least one operator.
    fn check_has_statements(&self) {
        if self.plan.stmts.is_empty() {
            self.cx.error(self.plan.name.span(), "a plan needs at least one operator call");
        }
    }

    fn finish(self) -> Checked {
        let plan = self.plan;
        Checked {
            attrs: plan.attrs.clone(),
            vis: plan.vis.clone(),
            name: plan.name.clone(),
            krate: plan.krate.clone(),
            dims: self.dims,
            weights: self.weights,
            tensors: self.tensors,
            scalars: plan.scalars.clone(),
            workers: plan.workers.map(|(n, _)| n as usize),
            shared_weights: plan.shared_weights.clone(),
            values: self.values,
            steps: self.steps,
        }
    }
}
