//! Reading literal values out of the syntax tree (shared by the shape checks and the
//! option reader).

use syn::{Expr, Lit};

/// An integer literal, possibly negated or parenthesised (`2`, `-1`, `(3)`).
pub fn lit_int(e: &Expr) -> Option<i64> {
    match e {
        Expr::Lit(l) => match &l.lit {
            Lit::Int(i) => i.base10_parse().ok(),
            _ => None,
        },
        Expr::Unary(u) if matches!(u.op, syn::UnOp::Neg(_)) => lit_int(&u.expr).map(|v| -v),
        Expr::Paren(p) => lit_int(&p.expr),
        _ => None,
    }
}

/// A number literal, integer or float, possibly negated (`0.5`, `-0.4`, `1`).
pub fn lit_float(e: &Expr) -> Option<f64> {
    match e {
        Expr::Lit(l) => match &l.lit {
            Lit::Float(f) => f.base10_parse().ok(),
            Lit::Int(i) => i.base10_parse::<i64>().ok().map(|v| v as f64),
            _ => None,
        },
        Expr::Unary(u) if matches!(u.op, syn::UnOp::Neg(_)) => lit_float(&u.expr).map(|v| -v),
        _ => None,
    }
}

/// The name of a bare identifier expression (`frame_major`, `same`).
pub fn path_ident(e: &Expr) -> Option<String> {
    match e {
        Expr::Path(p) => p.path.get_ident().map(|i| i.to_string()),
        _ => None,
    }
}
