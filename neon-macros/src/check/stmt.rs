//! The statement checks: one call, from its operator to the value it defines.

use neon_runtime::ops::InPlace;
use neon_runtime::Shape;
use syn::Ident;

use super::shapes::{max_elems, shape_text};
use super::{is_value, Binding, Checker};
use crate::ir::{Home, Op, Role, StepInfo, Stmt, Value};
use crate::options::Options;
use crate::signatures::{self, Slot, TensorArg, WeightArg};
use crate::suggest;
use crate::sym::SymDim;

/// The resolved arguments of a call.
struct Args<'s> {
    /// Tensor arguments: value indices and the user's names.
    inputs: Vec<usize>,
    input_names: Vec<&'s Ident>,
    /// Weight arguments: weight indices and the user's names (main weight, then bias).
    weights: Vec<usize>,
    weight_names: Vec<&'s Ident>,
}

impl Checker<'_> {
    /// Checks one statement and records its step. A statement that fails defines nothing:
    /// its arguments count as used and its target as defined (`Poisoned` for a `let`), so
    /// its error is not followed by "never used" / "undefined" noise.
    pub(super) fn check_stmt(&mut self, stmt: &Stmt) {
        let step = if self.reads_poisoned(stmt) {
            self.check_names(stmt);
            None
        } else {
            self.check_call(stmt)
        };
        match step {
            Some(step) => {
                self.readers.resize(self.values.len(), 0);
                for &v in &step.inputs {
                    self.readers[v] += 1;
                }
                self.steps.push(step);
            }
            None => self.absorb_failed(stmt),
        }
    }

    /// Rule: an argument whose own definition failed (already reported) silences the
    /// statement.
    fn reads_poisoned(&self, stmt: &Stmt) -> bool {
        stmt.args.iter().any(|a| matches!(self.bind.get(&a.to_string()), Some(Binding::Poisoned)))
    }

    /// A statement silenced by a poisoned argument still reports the mistakes that do not
    /// depend on shapes: an unknown operator, an option the operator does not have, an
    /// option given twice.
    fn check_names(&self, stmt: &Stmt) {
        if self.operator(&stmt.callee).is_some() {
            let spec = signatures::lookup(&stmt.callee.to_string()).expect("a known operator");
            Options::new(&stmt.options, spec, self.cx).finish(false);
        }
    }

    fn check_call(&mut self, stmt: &Stmt) -> Option<StepInfo> {
        self.readers.resize(self.values.len(), 0);
        let callee = &stmt.callee;
        let sig = self.operator(callee)?;
        let (args, options) = self.split_flags(stmt, sig);
        self.check_arity(stmt, sig, args)?;
        let bound = self.bind_args(callee, sig, args)?;
        let wargs: Vec<WeightArg> = bound
            .weights
            .iter()
            .zip(&bound.weight_names)
            .map(|(&w, name)| WeightArg {
                name,
                shape: &self.weights[w].shape,
                storage: self.weights[w].storage,
            })
            .collect();
        let in_shapes: Vec<Shape<SymDim>> = bound
            .inputs
            .iter()
            .map(|&v| {
                Shape::new(&self.values[v].shape)
                    .expect("declared shapes have rank 1..=4 and dims >= 1")
            })
            .collect();
        let targs: Vec<TensorArg> = bound
            .input_names
            .iter()
            .zip(&in_shapes)
            .map(|(name, shape)| TensorArg { name, shape })
            .collect();
        // Rule: a call whose options failed defines nothing (its output is poisoned), so a
        // misspelt or malformed option is not followed by a shape error from its default.
        let before = self.cx.error_count();
        let spec = signatures::lookup(&callee.to_string()).expect("the callee has a signature");
        let mut opts = Options::new(&options, spec, self.cx);
        let op = signatures::resolve(callee, &wargs, &targs, &mut opts, self.cx);
        opts.finish(op.is_some());
        if self.cx.error_count() > before {
            return None;
        }
        let op = op?;
        self.use_scalar(&op)?;
        let out_dims = match op.output_shape(&in_shapes) {
            Ok(s) => s.dims().to_vec(),
            Err(e) => {
                let w = bound.weights.first().copied();
                if !self.report_weight_culprit(&e, callee, w, &bound.input_names, &in_shapes) {
                    self.report_shape_error(&e, &bound.input_names, stmt.call_span);
                }
                return None;
            }
        };
        self.check_in_place_target(stmt, &op, bound.inputs[0])?;
        // A failed claim defines nothing (the target is poisoned, its inputs count as read).
        if !self.claim_weights(&bound) {
            return None;
        }
        let output = self.bind_target(stmt, &op, &bound, args, out_dims)?;
        let max_in: Vec<usize> = in_shapes
            .first()
            .map(|s| s.dims().iter().map(|d| d.range().1.max(1) as usize).collect())
            .unwrap_or_default();
        let scratch = self.plan_scratch(callee, &op, &max_in);
        Some(StepInfo {
            in_place: op.in_place().possible(),
            op,
            callee: callee.clone(),
            inputs: bound.inputs,
            output,
            scratch,
            weight: bound.weights.first().copied(),
            bias: bound.weights.get(1).copied(),
        })
    }

    /// Rule: the callee is a builtin operator (a hint when it names a value or weight).
    fn operator(&self, callee: &Ident) -> Option<&'static [Slot]> {
        let sig = signatures::signature(&callee.to_string());
        if sig.is_none() {
            let hint = if self.bind.contains_key(&callee.to_string()) {
                format!(
                    " (`{callee}` is not an operator; pass it to one, e.g. `conv1d(x, {callee})`)"
                )
            } else {
                suggest::hint(&callee.to_string(), &signatures::operator_names(), "operators")
            };
            self.cx.error(callee.span(), format!("unknown operator `{callee}`{hint}"));
        }
        sig
    }

    /// Rule: trailing names beyond the required arguments that are flags of the operator
    /// and not declared names are flags written bare after the tensors
    /// (`attention(q, k, v, causal)`, `conv1d(x, w, causal)`).
    fn split_flags<'s>(
        &self,
        stmt: &'s Stmt,
        sig: &[Slot],
    ) -> (&'s [Ident], Vec<(Ident, syn::Expr)>) {
        let mut args: &[Ident] = &stmt.args;
        let mut options = stmt.options.clone();
        let required = sig.iter().filter(|s| **s != Slot::OptionalWeight).count();
        while args.len() > required {
            let Some((last, rest)) = args.split_last() else { break };
            let name = last.to_string();
            if !signatures::is_flag(&stmt.callee.to_string(), &name)
                || self.bind.contains_key(&name)
            {
                break;
            }
            let value = syn::LitBool::new(true, last.span());
            let value = syn::Expr::Lit(syn::ExprLit { attrs: Vec::new(), lit: value.into() });
            options.insert(0, (last.clone(), value));
            args = rest;
        }
        (args, options)
    }

    /// Rule: a call has as many arguments as its signature (optional weights may be left
    /// out).
    fn check_arity(&self, stmt: &Stmt, sig: &[Slot], args: &[Ident]) -> Option<()> {
        let max = sig.len();
        let min = sig.iter().filter(|s| **s != Slot::OptionalWeight).count();
        if (min..=max).contains(&args.len()) {
            return Some(());
        }
        let takes = if min == max { min.to_string() } else { format!("{min} or {max}") };
        let msg = format!("{} takes {takes} arguments, {} given", stmt.callee, args.len());
        // A misspelt flag written bare is one argument too many: point at it.
        let flag = args.last().filter(|_| args.len() > max).and_then(|last| {
            let flag =
                suggest::closest(&last.to_string(), &signatures::flags(&stmt.callee.to_string()))?;
            Some((last.span(), flag))
        });
        match flag {
            Some((span, flag)) => {
                self.cx.error(span, format!("{msg}: did you mean the flag `{flag}`?"))
            }
            None => self.cx.error(stmt.call_span, msg),
        }
        None
    }

    /// Rule: a tensor slot takes a defined value (not a weight, not an unwritten output),
    /// a weight slot a declared weight. Every argument is checked before giving up.
    fn bind_args<'s>(
        &mut self,
        callee: &Ident,
        sig: &[Slot],
        args: &'s [Ident],
    ) -> Option<Args<'s>> {
        let cx = self.cx;
        let mut ok = true;
        let mut out = Args {
            inputs: Vec::new(),
            input_names: Vec::new(),
            weights: Vec::new(),
            weight_names: Vec::new(),
        };
        for (arg, slot) in args.iter().zip(sig) {
            match (slot, self.bind.get(&arg.to_string()).copied()) {
                (Slot::Tensor, Some(Binding::Value(v))) => {
                    out.inputs.push(v);
                    out.input_names.push(arg);
                }
                (Slot::Tensor, Some(Binding::Weight(_))) => {
                    cx.error(
                        arg.span(),
                        format!("`{arg}` is a weight; {callee} expects a tensor here"),
                    );
                    ok = false;
                }
                (Slot::Tensor, Some(Binding::Unwritten(_))) => {
                    cx.error(arg.span(), format!("output `{arg}` is read before it is written"));
                    ok = false;
                }
                (Slot::Tensor, _) => {
                    let msg = match self.suggest_binding(arg, is_value) {
                        Some(v) => format!("use of undefined value `{arg}`: did you mean `{v}`?"),
                        None => format!("use of undefined value `{arg}`"),
                    };
                    cx.error(arg.span(), msg);
                    ok = false;
                }
                (_, Some(Binding::Weight(w))) => {
                    out.weights.push(w);
                    out.weight_names.push(arg);
                }
                (_, Some(_)) => {
                    cx.error(
                        arg.span(),
                        format!("`{arg}` is not a weight; {callee} expects a weight here"),
                    );
                    ok = false;
                }
                (_, None) => {
                    let flags = signatures::flags(&callee.to_string());
                    let flag = suggest::closest(&arg.to_string(), &flags)
                        .filter(|_| *slot == Slot::OptionalWeight);
                    let msg = match flag {
                        // A misspelt flag written bare lands in an optional weight's slot.
                        Some(f) => format!("unknown weight `{arg}`: did you mean the flag `{f}`?"),
                        None => {
                            match self.suggest_binding(arg, |b| matches!(b, Binding::Weight(_))) {
                                Some(w) => format!("unknown weight `{arg}`: did you mean `{w}`?"),
                                None => format!(
                            "unknown weight `{arg}`: declare it with `weight {arg}: f32[..];`"
                        ),
                            }
                        }
                    };
                    cx.error(arg.span(), msg);
                    ok = false;
                }
            }
        }
        ok.then_some(out)
    }

    /// The bound name (of the kind `keep` accepts) closest to the unknown `arg`, if one is
    /// close. The suggested value counts as read and the suggested weight as claimed, so
    /// the misspelling is not followed by "never used" for the name meant; with no
    /// suggestion, no name is reported "never used" (see `check_unused`).
    fn suggest_binding(&mut self, arg: &Ident, keep: impl Fn(&Binding) -> bool) -> Option<String> {
        let near = suggest::closest(&arg.to_string(), &self.names_of(keep)).map(str::to_string);
        self.unresolved |= near.is_none();
        let near = near?;
        match self.bind.get(&near).copied() {
            Some(Binding::Value(v)) => self.readers[v] += 1,
            Some(Binding::Weight(w)) if self.weights[w].used.is_none() => {
                self.weights[w].used = Some((usize::MAX, false))
            }
            _ => {}
        }
        Some(near)
    }

    /// Rule: the scalar a call reads (`at`, `len`) is declared.
    fn use_scalar(&mut self, op: &Op) -> Option<()> {
        let Some(at) = op.scalar() else { return Some(()) };
        match self.plan.scalars.iter().position(|s| s == at) {
            Some(i) => {
                self.scalar_used[i] = true;
                Some(())
            }
            None => {
                let scalars = self.names_of(|b| matches!(b, Binding::Scalar));
                let near = suggest::closest(&at.to_string(), &scalars).map(str::to_string);
                let msg = match near {
                    Some(s) => {
                        // The scalar meant counts as used (no "never used" to follow).
                        let i = self.plan.scalars.iter().position(|d| *d == s);
                        self.scalar_used[i.expect("a bound scalar is declared")] = true;
                        format!("`{at}` is not a declared scalar: did you mean `{s}`?")
                    }
                    None => {
                        self.unresolved = true;
                        format!("`{at}` is not a declared scalar (`scalar {at}: usize;`)")
                    }
                };
                self.cx.error(at.span(), msg);
                None
            }
        }
    }

    /// Rule: a weight belongs to one call (its prepared operator is built for that call's
    /// geometry). Returns whether every weight could be claimed.
    fn claim_weights(&mut self, bound: &Args) -> bool {
        let step = self.steps.len();
        let mut ok = true;
        for (k, (&w, name)) in bound.weights.iter().zip(&bound.weight_names).enumerate() {
            match self.weights[w].used {
                // Claimed by a statement that failed: already reported.
                Some((usize::MAX, _)) => ok = false,
                Some((s, _)) => {
                    let (by, out) =
                        (&self.steps[s].callee, &self.values[self.steps[s].output].name);
                    self.cx.error(
                        name.span(),
                        format!(
                            "weight `{}` is already used by the {by} that defines `{out}`: a \
                             weight belongs to one statement (it is packed for that statement's \
                             geometry); declare a separate weight",
                            self.weights[w].name
                        ),
                    );
                    ok = false;
                }
                None => self.weights[w].used = Some((step, k == 0)),
            }
        }
        if !ok {
            // The step is not created: the weights it claimed are marked claimed by a
            // failed statement, so a later use reports nothing more.
            for &w in &bound.weights {
                if self.weights[w].used.is_some_and(|(s, _)| s == step) {
                    self.weights[w].used = Some((usize::MAX, false));
                }
            }
        }
        ok
    }

    /// Rule: `let` defines a new intermediate (it may shadow one, never a declared name);
    /// `name = ..` writes a declared output once, or a state with its declared shape.
    /// Returns the value the call defines.
    fn bind_target(
        &mut self,
        stmt: &Stmt,
        op: &Op,
        bound: &Args,
        args: &[Ident],
        out_dims: Vec<SymDim>,
    ) -> Option<usize> {
        let (cx, target, callee) = (self.cx, &stmt.target, &stmt.callee);
        let tname = target.to_string();
        if stmt.is_let {
            match self.bind.get(&tname).copied() {
                Some(Binding::Value(v)) if self.values[v].home != Home::Temp => {
                    let what = match self.values[v].home {
                        Home::Tensor(t) if self.tensors[t].role == Role::Input => "an input",
                        _ => "a state",
                    };
                    cx.error(
                        target.span(),
                        format!("cannot redefine `{target}`: it is {what} of the plan"),
                    );
                    return None;
                }
                Some(Binding::Weight(_) | Binding::Scalar | Binding::Unwritten(_)) => {
                    let msg =
                        format!("cannot redefine `{target}`: the name is declared by the plan");
                    cx.error(target.span(), msg);
                    return None;
                }
                _ => {}
            }
            let n = self.let_count.entry(tname.clone()).or_insert(0);
            *n += 1;
            let label = if *n == 1 { tname.clone() } else { format!("{tname}#{n}") };
            return Some(self.define(&tname, label, target, out_dims, Home::Temp));
        }
        match self.bind.get(&tname).copied() {
            Some(Binding::Unwritten(t)) => {
                self.check_declared_shape(stmt, "output", &out_dims, t)?;
                self.tensors[t].written = true;
                Some(self.define(&tname, tname.clone(), target, out_dims, Home::Tensor(t)))
            }
            Some(Binding::Value(v)) => {
                match self.values[v].home {
                    Home::Tensor(t) if self.tensors[t].role == Role::State => {
                        self.check_declared_shape(stmt, "state", &out_dims, t)?;
                        // Rule: a call writes the state it reads only in place, over its first
                        // input (the runtime's in-place fact).
                        let uses: Vec<usize> =
                            (0..bound.inputs.len()).filter(|&p| bound.inputs[p] == v).collect();
                        if let Some(&pos) = uses.iter().find(|&&p| p != 0).or(uses.first()) {
                            if pos != 0 || !op.in_place().possible() {
                                cx.error(
                                args[pos].span(),
                                format!("`{target}` is read and written by this {callee}: compute into a `let` first"),
                            );
                                return None;
                            }
                        }
                        self.tensors[t].written = true;
                        let label = format!("{tname}'");
                        Some(self.define(&tname, label, target, out_dims, Home::Tensor(t)))
                    }
                    Home::Tensor(t) if self.tensors[t].role == Role::Input => {
                        let msg = format!("cannot write to input `{target}`: inputs are read-only");
                        cx.error(target.span(), msg);
                        None
                    }
                    Home::Tensor(_) => {
                        cx.error(target.span(), format!("output `{target}` is written twice"));
                        None
                    }
                    _ => {
                        cx.error(target.span(), format!("cannot assign to `{target}`: use `let {target} = ...` for a new value"));
                        None
                    }
                }
            }
            Some(Binding::Poisoned) => None,
            Some(_) => {
                cx.error(target.span(), format!("cannot assign to `{target}`"));
                None
            }
            None => {
                let msg =
                    format!("cannot assign to undeclared `{target}`: use `let {target} = ...`");
                cx.error(target.span(), msg);
                None
            }
        }
    }

    /// Adds the value a statement defines and binds `name` to it.
    /// Rule: a call writing declared tensor `t` (an output or a state: `what`) produces its
    /// declared shape.
    fn check_declared_shape(
        &self,
        stmt: &Stmt,
        what: &str,
        out_dims: &[SymDim],
        t: usize,
    ) -> Option<()> {
        let declared = &self.tensors[t].shape;
        if out_dims == declared.as_slice() {
            return Some(());
        }
        let (callee, target) = (&stmt.callee, &stmt.target);
        let (got, want) = (shape_text(out_dims), shape_text(declared));
        let msg = format!("{callee} produces {got}, {what} `{target}` is declared {want}");
        self.cx.error(stmt.call_span, msg);
        None
    }

    fn define(
        &mut self,
        name: &str,
        label: String,
        target: &Ident,
        shape: Vec<SymDim>,
        home: Home,
    ) -> usize {
        self.values.push(Value {
            label,
            name: name.to_string(),
            span: target.span(),
            max_elems: max_elems(&shape),
            shape,
            home,
        });
        let v = self.values.len() - 1;
        self.bind.insert(name.to_string(), Binding::Value(v));
        v
    }

    /// Rule: an operator that always updates its first input ([`InPlace::Always`]) is
    /// assigned to the state it reads: `s = write_frames(s, x, at = pos)`. Checked before
    /// the target is bound, so a failed call defines nothing (no "never used" to follow).
    fn check_in_place_target(&self, stmt: &Stmt, op: &Op, first: usize) -> Option<()> {
        if op.in_place() != InPlace::Always {
            return Some(());
        }
        let target = self.bind.get(&stmt.target.to_string()).copied();
        let same_state = match (stmt.is_let, self.values[first].home, target) {
            (false, Home::Tensor(a), Some(Binding::Value(v))) => {
                self.values[v].home == Home::Tensor(a) && self.tensors[a].role == Role::State
            }
            _ => false,
        };
        if same_state {
            return Some(());
        }
        let callee = &stmt.callee;
        let example = signatures::in_place_example(&callee.to_string());
        self.cx.error(
            stmt.call_span,
            format!("{callee} writes in place: assign it to the state it reads, `{example}`"),
        );
        None
    }

    /// The scratch value of a step whose operator needs one (sized at the bounds).
    fn plan_scratch(&mut self, callee: &Ident, op: &Op, max_in: &[usize]) -> Option<usize> {
        let len = op.scratch_len(max_in);
        (len > 0).then(|| {
            self.values.push(Value {
                label: format!("{}#scratch{}", callee, self.steps.len()),
                name: format!("{callee}'s scratch"),
                span: callee.span(),
                shape: Vec::new(),
                home: Home::Scratch,
                max_elems: len,
            });
            self.values.len() - 1
        })
    }

    /// After a failed statement: its arguments count as read, its weights as claimed and
    /// its target as defined, so nothing downstream reports the same mistake again.
    fn absorb_failed(&mut self, stmt: &Stmt) {
        self.readers.resize(self.values.len(), 0);
        for a in &stmt.args {
            match self.bind.get(&a.to_string()).copied() {
                Some(Binding::Value(v)) => self.readers[v] += 1,
                Some(Binding::Weight(w)) if self.weights[w].used.is_none() => {
                    self.weights[w].used = Some((usize::MAX, false))
                }
                _ => {}
            }
        }
        match self.bind.get(&stmt.target.to_string()).copied() {
            Some(Binding::Unwritten(t)) => self.tensors[t].written = true,
            _ if stmt.is_let => {
                self.bind.insert(stmt.target.to_string(), Binding::Poisoned);
            }
            _ => {}
        }
    }
}
