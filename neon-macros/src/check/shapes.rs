//! Shape expressions and shape-rule messages.

use neon_runtime::{Dim, Shape, ShapeError};
use proc_macro2::Span;
use syn::spanned::Spanned;
use syn::{BinOp, Expr, Ident};

use super::Checker;
use crate::ir::DimInfo;
use crate::literals::lit_int;
use crate::signatures;
use crate::sym::SymDim;

/// Largest tensor the workspace may hold, in f32 elements (2^40: 4 TiB).
pub(super) const MAX_ELEMS: usize = 1 << 40;

/// Elements at the upper bounds, saturating (sizes past [`MAX_ELEMS`] are reported).
pub(super) fn max_elems(shape: &[SymDim]) -> usize {
    shape.iter().fold(1usize, |acc, d| acc.saturating_mul(d.range().1.max(0) as usize))
}

/// `[a, b, ..]` as the user would write it.
pub(super) fn shape_text(s: &[SymDim]) -> String {
    let parts: Vec<String> = s.iter().map(|d| d.to_string()).collect();
    format!("[{}]", parts.join(", "))
}

/// ` for n in 1..=8, m in ..` naming the ranges of the dims `d` mentions.
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

impl Checker<'_> {
    /// Rule: a shape expression uses integers >= 0, declared dims, `+ - *`, and floor
    /// division by a positive constant.
    fn sym_expr(&self, e: &Expr) -> Option<SymDim> {
        let cx = self.cx;
        match e {
            Expr::Lit(_) => match lit_int(e) {
                Some(v) if v >= 0 => Some(SymDim::constant_in(v, self.bounds.clone())),
                _ => {
                    cx.error(e.span(), "dimensions are integers >= 0 or declared dims");
                    None
                }
            },
            Expr::Path(p) => {
                let Some(id) = p.path.get_ident() else {
                    cx.error(e.span(), "expected a dimension name");
                    return None;
                };
                if self.dims.iter().any(|d| d.name == *id) {
                    Some(SymDim::symbol(&id.to_string(), self.bounds.clone()))
                } else {
                    let msg =
                        format!("unknown dimension `{id}`: declare it with `dim {id} in 1..=N;`");
                    cx.error(id.span(), msg);
                    None
                }
            }
            Expr::Paren(p) => self.sym_expr(&p.expr),
            Expr::Binary(b) => {
                let l = self.sym_expr(&b.left);
                if let BinOp::Div(_) = b.op {
                    return match (l, lit_int(&b.right)) {
                        (Some(l), Some(d)) if d >= 1 => Some(l.div_floor_const(d as usize)),
                        (_, Some(d)) if d >= 1 => None,
                        _ => {
                            cx.error(b.right.span(), "divide only by a positive integer constant");
                            None
                        }
                    };
                }
                let r = self.sym_expr(&b.right);
                let (l, r) = (l?, r?);
                match b.op {
                    BinOp::Add(_) => Some(l.add(&r)),
                    BinOp::Sub(_) => Some(l.sub(&r)),
                    BinOp::Mul(_) => Some(l.mul(&r)),
                    _ => {
                        cx.error(b.op.span(), "shape expressions use + - * and / only");
                        None
                    }
                }
            }
            _ => {
                cx.error(e.span(), "expected a shape expression");
                None
            }
        }
    }

    /// Rule: a tensor has 1 to 4 dimensions, each >= 1 over the whole range of its dims.
    pub(super) fn shape_exprs(&self, exprs: &[Expr], span: Span) -> Option<Vec<SymDim>> {
        if exprs.is_empty() || exprs.len() > neon_runtime::MAX_RANK {
            self.cx.error(span, "tensors have 1 to 4 dimensions");
            return None;
        }
        let mut out = Vec::new();
        let mut ok = true;
        for e in exprs {
            match self.sym_expr(e) {
                Some(d) => {
                    if !d.at_least(1) {
                        let range = range_text(&d, &self.dims);
                        self.cx.error(
                            e.span(),
                            format!("dimension `{d}` can be smaller than 1{range}"),
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

    /// Rule: a size the call's weight `w` declares (its input channels or features, see
    /// [`signatures::weight_fixes`]) that the input does not have is reported at the
    /// weight's declaration, naming the weight and the input with its shape. Returns
    /// whether `e` was such a mismatch (and reported).
    pub(super) fn report_weight_culprit(
        &self,
        e: &ShapeError<SymDim>,
        callee: &Ident,
        w: Option<usize>,
        args: &[&Ident],
        shapes: &[Shape<SymDim>],
    ) -> bool {
        let ShapeError::Dim { arg: 0, what, expected, got, .. } = e else { return false };
        let (Some(w), Some(x), Some(shape)) = (w, args.first(), shapes.first()) else {
            return false;
        };
        if !signatures::weight_fixes(&callee.to_string(), what) {
            return false;
        }
        let w = &self.weights[w];
        let msg = format!(
            "{callee}: weight `{}` is declared {:?}, which takes {expected} {what}, but `{x}` has {got} (`{x}`: {})",
            w.name,
            w.shape,
            shape_text(shape.dims())
        );
        self.cx.error(w.decl, msg);
        true
    }

    /// Reports a shape-rule error with the user's argument names, spanned on the argument
    /// (on the call when the rule names no argument).
    pub(super) fn report_shape_error(&self, e: &ShapeError<SymDim>, args: &[&Ident], call: Span) {
        let arg = |i: usize| {
            args.get(i)
                .map(|a| (a.span(), format!("`{a}`")))
                .unwrap_or((call, format!("argument {i}")))
        };
        let (span, msg) = match e {
            ShapeError::Rank { op, arg: i, expected, got } => {
                let (span, name) = arg(*i);
                (span, format!("{op} expects a rank-{expected} tensor, {name} has rank {got}"))
            }
            ShapeError::Dim { op, arg: i, what, expected, got, .. } => {
                let (span, name) = arg(*i);
                (span, format!("{op} expects {expected} {what}, {name} has {got}"))
            }
            ShapeError::TooSmall { op, what, value, min } => {
                let range = range_text(value, &self.dims);
                (call, format!("{op}: {what} = {value} can be smaller than {min}{range}"))
            }
            ShapeError::Indivisible { op, arg: i, what, divisor, divisor_what, got, .. } => {
                let (span, name) = arg(*i);
                let msg = format!(
                    "{op} expects {what} divisible by {divisor} {divisor_what}, {name} has {got}"
                );
                (span, msg)
            }
            ShapeError::Geometry { op, reason } => (call, format!("{op}: {reason}")),
        };
        self.cx.error(span, msg);
    }
}
