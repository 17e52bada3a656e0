//! Phase 2: check a parsed plan. Resolves names, evaluates shape expressions to symbolic
//! dims, runs every operator's shape rule (the runtime's own, on [`SymDim`]s), and builds
//! the value graph the scheduler and the emitter work on. Errors accumulate: every error
//! found is reported, each spanned on the user's token.

use std::collections::HashMap;
use std::rc::Rc;

use neon_runtime::{Dim, Shape, ShapeError};
use proc_macro2::Span;
use syn::{BinOp, Expr, Ident};

use crate::ops::{self, Op, Options, Slot, WeightArg};
use crate::parse::{lit_int, Plan, Role};
use crate::sym::{Bounds, SymDim};

/// A declared symbolic dimension.
pub struct DimInfo {
    pub name: Ident,
    pub lo: i64,
    pub hi: i64,
}

/// How a weight tensor is stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Storage {
    /// f32 values.
    F32,
    /// int8 with one scale and one offset per tensor: `w = scale * q + offset`.
    I8,
    /// Block-int8: 32 consecutive weights of a row share one f32 scale.
    I8Block32,
}

impl std::fmt::Display for Storage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Storage::F32 => "f32",
            Storage::I8 => "i8",
            Storage::I8Block32 => "i8_block32",
        })
    }
}

/// A declared weight tensor.
pub struct WeightInfo {
    pub name: Ident,
    pub storage: Storage,
    pub shape: Vec<usize>,
    /// The step whose prepared operator holds it, and whether it is that operator's
    /// main weight (the field of the weights struct) or its bias.
    pub used: Option<(usize, bool)>,
}

/// Where a value lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Home {
    /// Caller-owned tensor `tensors[i]`.
    Tensor(usize),
    /// Workspace intermediate (a `let`).
    Temp,
    /// Workspace scratch of one step.
    Scratch,
}

/// A value of the graph.
pub struct Value {
    /// Name in the memory map (`h`, `h#2` for a second `let h`).
    pub label: String,
    pub span: Span,
    pub shape: Vec<SymDim>,
    pub home: Home,
    /// Elements at the upper bounds (scratch: its length).
    pub max_elems: usize,
}

/// A caller-owned tensor.
pub struct TensorInfo {
    pub role: Role,
    pub name: Ident,
    pub shape: Vec<SymDim>,
    pub written: bool,
}

/// One operator call.
pub struct StepInfo {
    pub op: Op,
    pub callee: Ident,
    pub inputs: Vec<usize>,
    pub output: usize,
    pub scratch: Option<usize>,
    /// The weight (index in `weights`) whose prepared operator runs this step, and its bias.
    pub weight: Option<usize>,
    pub bias: Option<usize>,
    pub in_place: bool,
}

/// The checked plan.
pub struct Checked {
    pub dims: Vec<DimInfo>,
    pub weights: Vec<WeightInfo>,
    pub tensors: Vec<TensorInfo>,
    pub scalars: Vec<Ident>,
    pub values: Vec<Value>,
    pub steps: Vec<StepInfo>,
}

struct Ctx {
    errors: Vec<syn::Error>,
    bounds: Rc<Bounds>,
}

impl Ctx {
    fn err(&mut self, span: Span, msg: impl std::fmt::Display) {
        self.errors.push(syn::Error::new(span, msg));
    }
}

fn range_text(d: &SymDim, dims: &[DimInfo]) -> String {
    let syms = d.symbols();
    let parts: Vec<String> = dims
        .iter()
        .filter(|i| syms.contains(&i.name.to_string()))
        .map(|i| format!("{} in {}..={}", i.name, i.lo, i.hi))
        .collect();
    if parts.is_empty() {
        String::new()
    } else {
        format!(" for {}", parts.join(", "))
    }
}

/// Evaluates a shape expression: integers, declared dims, `+ - *`, and floor division by a
/// positive constant.
fn sym_expr(e: &Expr, ctx: &mut Ctx, dims: &[DimInfo]) -> Option<SymDim> {
    match e {
        Expr::Lit(_) => match lit_int(e) {
            Some(v) if v >= 0 => Some(SymDim::constant_in(v, ctx.bounds.clone())),
            _ => {
                ctx.err(
                    syn::spanned::Spanned::span(e),
                    "dimensions are integers >= 0 or declared dims",
                );
                None
            }
        },
        Expr::Path(p) => {
            let Some(id) = p.path.get_ident() else {
                ctx.err(syn::spanned::Spanned::span(e), "expected a dimension name");
                return None;
            };
            if dims.iter().any(|d| d.name == *id) {
                Some(SymDim::symbol(&id.to_string(), ctx.bounds.clone()))
            } else {
                ctx.err(
                    id.span(),
                    format!("unknown dimension `{id}`: declare it with `dim {id} in 1..=N;`"),
                );
                None
            }
        }
        Expr::Paren(p) => sym_expr(&p.expr, ctx, dims),
        Expr::Binary(b) => {
            let l = sym_expr(&b.left, ctx, dims);
            if let BinOp::Div(_) = b.op {
                let d = lit_int(&b.right);
                return match (l, d) {
                    (Some(l), Some(d)) if d >= 1 => Some(l.div_floor_const(d as usize)),
                    (_, None) | (_, Some(_)) if !matches!(d, Some(d) if d >= 1) => {
                        ctx.err(
                            syn::spanned::Spanned::span(&b.right),
                            "divide only by a positive integer constant",
                        );
                        None
                    }
                    _ => None,
                };
            }
            let r = sym_expr(&b.right, ctx, dims);
            let (l, r) = (l?, r?);
            match b.op {
                BinOp::Add(_) => Some(l.add(&r)),
                BinOp::Sub(_) => Some(l.sub(&r)),
                BinOp::Mul(_) => Some(l.mul(&r)),
                _ => {
                    ctx.err(
                        syn::spanned::Spanned::span(&b.op),
                        "shape expressions use + - * and / only",
                    );
                    None
                }
            }
        }
        _ => {
            ctx.err(syn::spanned::Spanned::span(e), "expected a shape expression");
            None
        }
    }
}

fn shape_exprs(exprs: &[Expr], span: Span, ctx: &mut Ctx, dims: &[DimInfo]) -> Option<Vec<SymDim>> {
    if exprs.is_empty() || exprs.len() > neon_runtime::MAX_RANK {
        ctx.err(span, "tensors have 1 to 4 dimensions");
        return None;
    }
    let mut out = Vec::new();
    let mut ok = true;
    for e in exprs {
        match sym_expr(e, ctx, dims) {
            Some(d) => {
                if !d.at_least(1) {
                    ctx.err(
                        syn::spanned::Spanned::span(e),
                        format!("dimension `{d}` can be smaller than 1{}", range_text(&d, dims)),
                    );
                    ok = false;
                }
                out.push(d);
            }
            None => ok = false,
        }
    }
    ok.then_some(out)
}

/// Elements at the upper bounds, saturating (sizes past [`MAX_ELEMS`] are reported).
fn max_elems(shape: &[SymDim]) -> usize {
    shape.iter().fold(1usize, |acc, d| acc.saturating_mul(d.range().1.max(0) as usize))
}

/// Largest tensor the workspace may hold, in f32 elements (2^40: 4 TiB).
const MAX_ELEMS: usize = 1 << 40;

fn shape_text(s: &[SymDim]) -> String {
    let parts: Vec<String> = s.iter().map(|d| d.to_string()).collect();
    format!("[{}]", parts.join(", "))
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

pub fn check(plan: &Plan) -> Result<Checked, Vec<syn::Error>> {
    let mut ctx = Ctx { errors: Vec::new(), bounds: Rc::new(Bounds::new()) };
    let mut names: HashMap<String, Span> = HashMap::new();
    let mut declare = |ctx: &mut Ctx, id: &Ident| {
        let n = id.to_string();
        if n == "weights" || n == "workspace" || n.starts_with("__") {
            ctx.err(
                id.span(),
                format!("`{id}` is reserved by the generated code; choose another name"),
            );
        }
        if let Some(_prev) = names.insert(id.to_string(), id.span()) {
            ctx.err(id.span(), format!("`{id}` is declared twice"));
        }
    };

    // Dims.
    let mut dims = Vec::new();
    let mut bounds = Bounds::new();
    for d in &plan.dims {
        declare(&mut ctx, &d.name);
        let Some((hi, _)) = d.hi else {
            ctx.err(
                d.name.span(),
                format!("symbolic dim `{}` needs an upper bound (`{} in {}..=N`): the workspace is sized for it", d.name, d.name, d.lo.0),
            );
            // Keep the name resolvable so its uses do not report cascading errors.
            let lo = d.lo.0.max(1);
            bounds.insert(d.name.to_string(), (lo, lo));
            dims.push(DimInfo { name: d.name.clone(), lo, hi: lo });
            continue;
        };
        if d.lo.0 < 1 {
            ctx.err(d.lo.1, format!("dim `{}` must be at least 1", d.name));
            continue;
        }
        if hi < d.lo.0 {
            ctx.err(d.name.span(), format!("dim `{}` has an empty range", d.name));
            continue;
        }
        bounds.insert(d.name.to_string(), (d.lo.0, hi));
        dims.push(DimInfo { name: d.name.clone(), lo: d.lo.0, hi });
    }
    ctx.bounds = Rc::new(bounds);

    // Weights, caller-owned tensors, scalars.
    let mut bind: HashMap<String, Binding> = HashMap::new();
    let mut weights = Vec::new();
    for w in &plan.weights {
        declare(&mut ctx, &w.name);
        let storage = match w.storage.to_string().as_str() {
            "f32" => Storage::F32,
            "i8" => Storage::I8,
            "i8_block32" => Storage::I8Block32,
            other => {
                ctx.err(
                    w.storage.span(),
                    format!("unknown weight storage `{other}`: f32, i8 (per-tensor scale and offset) or i8_block32 (32 weights per scale)"),
                );
                bind.insert(w.name.to_string(), Binding::Poisoned);
                continue;
            }
        };
        let Some(shape) = shape_exprs(&w.shape, w.shape_span, &mut ctx, &dims) else { continue };
        let Some(shape) = shape.iter().map(|d| d.as_constant()).collect::<Option<Vec<usize>>>()
        else {
            ctx.err(w.shape_span, format!("weight `{}` must have a constant shape", w.name));
            continue;
        };
        bind.insert(w.name.to_string(), Binding::Weight(weights.len()));
        weights.push(WeightInfo { name: w.name.clone(), storage, shape, used: None });
    }
    let mut values: Vec<Value> = Vec::new();
    let mut tensors = Vec::new();
    for t in &plan.tensors {
        declare(&mut ctx, &t.name);
        let Some(shape) = shape_exprs(&t.shape, t.shape_span, &mut ctx, &dims) else {
            bind.insert(t.name.to_string(), Binding::Poisoned);
            continue;
        };
        if max_elems(&shape) > MAX_ELEMS {
            ctx.err(
                t.shape_span,
                format!("`{}` can hold more than 2^40 elements; lower the dims' bounds", t.name),
            );
            bind.insert(t.name.to_string(), Binding::Poisoned);
            continue;
        }
        let ti = tensors.len();
        tensors.push(TensorInfo {
            role: t.role,
            name: t.name.clone(),
            shape: shape.clone(),
            written: false,
        });
        if t.role == Role::Output {
            bind.insert(t.name.to_string(), Binding::Unwritten(ti));
        } else {
            values.push(Value {
                label: t.name.to_string(),
                span: t.name.span(),
                max_elems: max_elems(&shape),
                shape,
                home: Home::Tensor(ti),
            });
            bind.insert(t.name.to_string(), Binding::Value(values.len() - 1));
        }
    }
    for s in &plan.scalars {
        declare(&mut ctx, s);
        bind.insert(s.to_string(), Binding::Scalar);
    }

    // Statements.
    let mut steps: Vec<StepInfo> = Vec::new();
    let mut readers: Vec<usize> = Vec::new(); // reads per value
    let mut let_count: HashMap<String, usize> = HashMap::new();
    let mut scalar_used: Vec<bool> = vec![false; plan.scalars.len()];
    for stmt in &plan.stmts {
        let steps_before = steps.len();
        // An argument whose own definition failed: skip the statement without a second,
        // cascading error.
        let poisoned =
            stmt.args.iter().any(|a| matches!(bind.get(&a.to_string()), Some(Binding::Poisoned)));
        'body: {
            if poisoned {
                break 'body;
            }
            readers.resize(values.len(), 0);
            let callee = &stmt.callee;
            let Some(sig) = ops::signature(&callee.to_string()) else {
                let hint = if bind.contains_key(&callee.to_string()) {
                    format!(
                        " (`{callee}` is not an operator; pass it to one, e.g. `conv1d(x, {callee})`)"
                    )
                } else {
                    String::new()
                };
                ctx.err(callee.span(), format!("unknown operator `{callee}`{hint}"));
                break 'body;
            };
            let max_args = sig.len();
            let min_args = sig.iter().filter(|s| **s != Slot::OptionalWeight).count();
            // Flags written bare after the tensors (`attention(q, k, v, causal)`): trailing
            // names beyond the signature that are flags of the operator and not values.
            let mut args: &[Ident] = &stmt.args;
            let mut options = stmt.options.clone();
            while args.len() > max_args {
                let Some((last, rest)) = args.split_last() else { break };
                let name = last.to_string();
                if !ops::is_flag(&callee.to_string(), &name) || bind.contains_key(&name) {
                    break;
                }
                let value = syn::LitBool::new(true, last.span());
                let value = syn::Expr::Lit(syn::ExprLit { attrs: Vec::new(), lit: value.into() });
                options.insert(0, (last.clone(), value));
                args = rest;
            }
            if args.len() < min_args || args.len() > max_args {
                ctx.err(
                    stmt.call_span,
                    format!(
                        "{callee} takes {} arguments, {} given",
                        if min_args == max_args {
                            min_args.to_string()
                        } else {
                            format!("{min_args} or {max_args}")
                        },
                        args.len()
                    ),
                );
                break 'body;
            }
            let mut ok = true;
            let mut inputs: Vec<usize> = Vec::new();
            let mut input_idents: Vec<&Ident> = Vec::new();
            let mut warg: Vec<usize> = Vec::new();
            let mut warg_ids: Vec<&Ident> = Vec::new();
            for (arg, slot) in args.iter().zip(sig) {
                let b = bind.get(&arg.to_string()).copied();
                match (slot, b) {
                    (Slot::Tensor, Some(Binding::Value(v))) => {
                        inputs.push(v);
                        input_idents.push(arg);
                    }
                    (Slot::Tensor, Some(Binding::Weight(_))) => {
                        ctx.err(
                            arg.span(),
                            format!("`{arg}` is a weight; {callee} expects a tensor here"),
                        );
                        ok = false;
                    }
                    (Slot::Tensor, Some(Binding::Unwritten(_))) => {
                        ctx.err(arg.span(), format!("output `{arg}` is read before it is written"));
                        ok = false;
                    }
                    (Slot::Tensor, _) => {
                        ctx.err(arg.span(), format!("use of undefined value `{arg}`"));
                        ok = false;
                    }
                    (_, Some(Binding::Weight(w))) => {
                        warg.push(w);
                        warg_ids.push(arg);
                    }
                    (_, Some(_)) => {
                        ctx.err(
                            arg.span(),
                            format!("`{arg}` is not a weight; {callee} expects a weight here"),
                        );
                        ok = false;
                    }
                    (_, None) => {
                        ctx.err(
                            arg.span(),
                            format!(
                                "unknown weight `{arg}`: declare it with `weight {arg}: f32[..];`"
                            ),
                        );
                        ok = false;
                    }
                }
            }
            let mut opts = Options::new(&options);
            if !ok {
                break 'body;
            }
            let wargs: Vec<WeightArg> = warg
                .iter()
                .zip(&warg_ids)
                .map(|(&w, id)| WeightArg {
                    name: id,
                    shape: &weights[w].shape,
                    storage: weights[w].storage,
                })
                .collect();
            let op = match ops::resolve(callee, &wargs, &mut opts) {
                Ok(op) => op,
                Err(e) => {
                    ctx.errors.push(e);
                    ctx.errors.extend(opts.finish(&callee.to_string()));
                    break 'body;
                }
            };
            ctx.errors.extend(opts.finish(&callee.to_string()));
            if let Some(at) = op.scalar() {
                match plan.scalars.iter().position(|s| s == at) {
                    Some(i) => scalar_used[i] = true,
                    None => {
                        ctx.err(
                            at.span(),
                            format!("`{at}` is not a declared scalar (`scalar {at}: usize;`)"),
                        );
                        break 'body;
                    }
                }
            }
            // Shape rule.
            let in_shapes: Vec<Shape<SymDim>> = inputs
                .iter()
                .map(|&v| {
                    Shape::new(&values[v].shape)
                        .expect("declared shapes have rank 1..=4 and dims >= 1")
                })
                .collect();
            let out_shape = match op.output_shape(&in_shapes) {
                Ok(s) => s,
                Err(e) => {
                    let (span, msg) = shape_message(&e, &input_idents, stmt.call_span, &dims);
                    ctx.err(span, msg);
                    break 'body;
                }
            };
            let out_dims: Vec<SymDim> = out_shape.dims().to_vec();
            // Weights: each belongs to one call.
            let step_index = steps.len();
            for (k, &w) in warg.iter().enumerate() {
                if let Some((s, _)) = weights[w].used {
                    if s == usize::MAX {
                        ok = false;
                        continue;
                    }
                    ctx.err(
                        warg_ids[k].span(),
                        format!("weight shape conflict: `{}` is already used by step {s} ({}); declare a separate weight", weights[w].name, steps[s].callee),
                    );
                    ok = false;
                } else {
                    weights[w].used = Some((step_index, k == 0));
                }
            }
            // Target.
            let target = &stmt.target;
            let tname = target.to_string();
            let output = if stmt.is_let {
                match bind.get(&tname) {
                    Some(Binding::Value(v)) if values[*v].home != Home::Temp => {
                        let what = match values[*v].home {
                            Home::Tensor(t) if tensors[t].role == Role::Input => "an input",
                            _ => "a state",
                        };
                        ctx.err(
                            target.span(),
                            format!("cannot redefine `{target}`: it is {what} of the plan"),
                        );
                        break 'body;
                    }
                    Some(Binding::Weight(_))
                    | Some(Binding::Scalar)
                    | Some(Binding::Unwritten(_)) => {
                        ctx.err(
                            target.span(),
                            format!("cannot redefine `{target}`: the name is declared by the plan"),
                        );
                        break 'body;
                    }
                    _ => {}
                }
                let n = let_count.entry(tname.clone()).or_insert(0);
                *n += 1;
                let label = if *n == 1 { tname.clone() } else { format!("{tname}#{n}") };
                values.push(Value {
                    label,
                    span: target.span(),
                    max_elems: max_elems(&out_dims),
                    shape: out_dims.clone(),
                    home: Home::Temp,
                });
                bind.insert(tname.clone(), Binding::Value(values.len() - 1));
                values.len() - 1
            } else {
                match bind.get(&tname).copied() {
                    Some(Binding::Unwritten(t)) => {
                        if out_dims != tensors[t].shape {
                            ctx.err(
                                stmt.call_span,
                                format!(
                                    "{callee} produces {}, output `{target}` is declared {}",
                                    shape_text(&out_dims),
                                    shape_text(&tensors[t].shape)
                                ),
                            );
                            break 'body;
                        }
                        tensors[t].written = true;
                        values.push(Value {
                            label: tname.clone(),
                            span: target.span(),
                            max_elems: max_elems(&out_dims),
                            shape: out_dims.clone(),
                            home: Home::Tensor(t),
                        });
                        bind.insert(tname.clone(), Binding::Value(values.len() - 1));
                        values.len() - 1
                    }
                    Some(Binding::Value(v)) => match values[v].home {
                        Home::Tensor(t) if tensors[t].role == Role::State => {
                            if out_dims != tensors[t].shape {
                                ctx.err(
                                    stmt.call_span,
                                    format!(
                                        "{callee} produces {}, state `{target}` is declared {}",
                                        shape_text(&out_dims),
                                        shape_text(&tensors[t].shape)
                                    ),
                                );
                                break 'body;
                            }
                            let uses: Vec<usize> =
                                (0..inputs.len()).filter(|&p| inputs[p] == v).collect();
                            if let Some(&pos) = uses.iter().find(|&&p| p != 0).or(uses.first()) {
                                if pos != 0 || !op.in_place() {
                                    ctx.err(
                                        args[pos].span(),
                                        format!("`{target}` is read and written by this {callee}: compute into a `let` first"),
                                    );
                                    break 'body;
                                }
                            }
                            tensors[t].written = true;
                            values.push(Value {
                                label: format!("{tname}'"),
                                span: target.span(),
                                max_elems: max_elems(&out_dims),
                                shape: out_dims.clone(),
                                home: Home::Tensor(t),
                            });
                            bind.insert(tname.clone(), Binding::Value(values.len() - 1));
                            values.len() - 1
                        }
                        Home::Tensor(t) if tensors[t].role == Role::Input => {
                            ctx.err(
                                target.span(),
                                format!("cannot write to input `{target}`: inputs are read-only"),
                            );
                            break 'body;
                        }
                        Home::Tensor(_) => {
                            ctx.err(target.span(), format!("output `{target}` is written twice"));
                            break 'body;
                        }
                        _ => {
                            ctx.err(target.span(), format!("cannot assign to `{target}`: use `let {target} = ...` for a new value"));
                            break 'body;
                        }
                    },
                    Some(Binding::Poisoned) => break 'body,
                    Some(_) => {
                        ctx.err(target.span(), format!("cannot assign to `{target}`"));
                        break 'body;
                    }
                    None => {
                        ctx.err(
                            target.span(),
                            format!(
                                "cannot assign to undeclared `{target}`: use `let {target} = ...`"
                            ),
                        );
                        break 'body;
                    }
                }
            };
            if matches!(op, Op::WriteFrames(..)) {
                let state_in = inputs[0];
                let is_same_state = matches!((values[state_in].home, values[output].home), (Home::Tensor(a), Home::Tensor(b)) if a == b && tensors[a].role == Role::State);
                if !is_same_state {
                    ctx.err(stmt.call_span, "write_frames writes in place: assign it to the state it reads, `s = write_frames(s, x, at = pos)`");
                    break 'body;
                }
            }
            if !ok {
                break 'body;
            }
            let max_in: Vec<usize> = in_shapes
                .first()
                .map(|s| s.dims().iter().map(|d| d.range().1.max(1) as usize).collect())
                .unwrap_or_default();
            let scratch_len = op.scratch_len(&max_in);
            let scratch = (scratch_len > 0).then(|| {
                values.push(Value {
                    label: format!("{}#scratch{}", callee, step_index),
                    span: callee.span(),
                    shape: Vec::new(),
                    home: Home::Scratch,
                    max_elems: scratch_len,
                });
                values.len() - 1
            });
            readers.resize(values.len(), 0);
            for &v in &inputs {
                readers[v] += 1;
            }
            let (weight, bias) = (warg.first().copied(), warg.get(1).copied());
            let in_place = op.in_place();
            steps.push(StepInfo {
                op,
                callee: callee.clone(),
                inputs,
                output,
                scratch,
                weight,
                bias,
                in_place,
            });
        }
        if steps.len() == steps_before {
            // The statement failed: count its arguments as used and its target as defined,
            // so the error is not followed by "never used" / "never written" noise.
            readers.resize(values.len(), 0);
            for a in &stmt.args {
                match bind.get(&a.to_string()).copied() {
                    Some(Binding::Value(v)) => readers[v] += 1,
                    Some(Binding::Weight(w)) if weights[w].used.is_none() => {
                        weights[w].used = Some((usize::MAX, false))
                    }
                    _ => {}
                }
            }
            match bind.get(&stmt.target.to_string()).copied() {
                Some(Binding::Unwritten(t)) => tensors[t].written = true,
                _ if stmt.is_let => {
                    bind.insert(stmt.target.to_string(), Binding::Poisoned);
                }
                _ => {}
            }
        }
    }
    readers.resize(values.len(), 0);

    // Values that are computed and never used, outputs never written, unused declarations.
    for (v, val) in values.iter().enumerate() {
        if val.home == Home::Temp && readers[v] == 0 {
            ctx.err(val.span, format!("`{}` is computed but never used", val.label));
        }
    }
    for t in &tensors {
        match t.role {
            Role::Output if !t.written => {
                ctx.err(t.name.span(), format!("output `{}` is never written", t.name))
            }
            Role::Input => {
                let used = values.iter().enumerate().any(|(v, val)| {
                    val.home
                        == Home::Tensor(
                            tensors.iter().position(|x| x.name == t.name).unwrap_or(usize::MAX),
                        )
                        && readers[v] > 0
                });
                if !used {
                    ctx.err(t.name.span(), format!("input `{}` is never used", t.name));
                }
            }
            _ => {}
        }
    }
    for w in &weights {
        if w.used.is_none() {
            ctx.err(w.name.span(), format!("weight `{}` is never used", w.name));
        }
    }
    for (s, used) in plan.scalars.iter().zip(&scalar_used) {
        if !used {
            ctx.err(s.span(), format!("scalar `{s}` is never used"));
        }
    }
    if plan.stmts.is_empty() {
        ctx.err(plan.name.span(), "a plan needs at least one operator call");
    }

    if ctx.errors.is_empty() {
        Ok(Checked { dims, weights, tensors, scalars: plan.scalars.clone(), values, steps })
    } else {
        Err(ctx.errors)
    }
}

/// Formats a shape-rule error with the user's argument names, spanned on the argument.
fn shape_message(
    e: &ShapeError<SymDim>,
    args: &[&Ident],
    call: Span,
    dims: &[DimInfo],
) -> (Span, String) {
    let arg = |i: usize| args.get(i).map(|a| (a.span(), format!("`{a}`")));
    match e {
        ShapeError::Rank { op, arg: i, expected, got } => {
            let (span, name) = arg(*i).unwrap_or((call, format!("argument {i}")));
            (span, format!("{op} expects a rank-{expected} tensor, {name} has rank {got}"))
        }
        ShapeError::Dim { op, arg: i, what, expected, got, .. } => {
            let (span, name) = arg(*i).unwrap_or((call, format!("argument {i}")));
            (span, format!("{op} expects {expected} {what}, {name} has {got}"))
        }
        ShapeError::TooSmall { op, what, value, min } => {
            let (span, _) = arg(0).unwrap_or((call, String::new()));
            let _ = span;
            (
                call,
                format!(
                    "{op}: {what} = {value} can be smaller than {min}{}",
                    range_text(value, dims)
                ),
            )
        }
        ShapeError::Indivisible { op, arg: i, what, divisor, divisor_what, got, .. } => {
            let (span, name) = arg(*i).unwrap_or((call, format!("argument {i}")));
            (
                span,
                format!(
                    "{op} expects {what} divisible by {divisor} {divisor_what}, {name} has {got}"
                ),
            )
        }
        ShapeError::Geometry { op, reason } => (call, format!("{op}: {reason}")),
    }
}
