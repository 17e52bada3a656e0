//! Phase 1: parse a `neon_plan!` block into a spanned syntax tree.
//!
//! ```text
//! plan      := attr* vis? "plan" Ident "{" item* "}"
//! item      := "crate" "=" Path ";"
//!            | "dim" Ident "in" Int "..=" Int ";"
//!            | "weight" Ident ":" Ident "[" dims "]" ";"      (storage type, e.g. f32)
//!            | ("input" | "output" | "state") Ident ":" "[" dims "]" ";"
//!            | "scalar" Ident ":" "usize" ";"
//!            | "let" Ident "=" call ";"
//!            | Ident "=" call ";"                      (writes an output or a state)
//! call      := Ident "(" (arg ("," arg)*)? ")"
//! arg       := Ident | Ident "=" value       (a bare Ident after an option is a flag)
//! value     := ["-"] Lit | Ident | "(" Lit ("," Lit)* ")"     (read by the operator table)
//! dims      := expr ("," expr)*      expr over + - * / (floor, by constants), ints, dims
//! ```

use proc_macro2::Span;
use syn::parse::{Parse, ParseStream};
use syn::punctuated::Punctuated;
use syn::{braced, bracketed, parenthesized, Attribute, Expr, Ident, Lit, Path, Token, Visibility};

mod kw {
    syn::custom_keyword!(plan);
    syn::custom_keyword!(dim);
    syn::custom_keyword!(weight);
    syn::custom_keyword!(input);
    syn::custom_keyword!(output);
    syn::custom_keyword!(state);
    syn::custom_keyword!(scalar);
}

/// A whole plan.
pub struct Plan {
    pub attrs: Vec<Attribute>,
    pub vis: Visibility,
    pub name: Ident,
    pub krate: Option<Path>,
    pub dims: Vec<DimDecl>,
    pub weights: Vec<WeightDecl>,
    pub tensors: Vec<TensorDecl>,
    pub scalars: Vec<Ident>,
    pub stmts: Vec<Stmt>,
}

/// `dim frames in 1..=3000;`
pub struct DimDecl {
    pub name: Ident,
    pub lo: (i64, Span),
    pub hi: Option<(i64, Span)>,
}

/// `weight up: f32[256, 64, 1];`
pub struct WeightDecl {
    pub name: Ident,
    pub storage: Ident,
    pub shape: Vec<Expr>,
    pub shape_span: Span,
}

/// Role of a caller-owned tensor.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Role {
    Input,
    Output,
    State,
}

/// `input x: [64, frames];`
pub struct TensorDecl {
    pub role: Role,
    pub name: Ident,
    pub shape: Vec<Expr>,
    pub shape_span: Span,
}

/// `let h = up(x);` or `y = add(h, x);`
pub struct Stmt {
    pub is_let: bool,
    pub target: Ident,
    pub callee: Ident,
    pub args: Vec<Ident>,
    pub options: Vec<(Ident, Expr)>,
    pub call_span: Span,
}

impl Parse for Plan {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        let attrs = input.call(Attribute::parse_outer)?;
        let vis: Visibility = input.parse()?;
        input.parse::<kw::plan>()?;
        let name: Ident = input.parse()?;
        let body;
        braced!(body in input);
        let mut plan = Plan {
            attrs,
            vis,
            name,
            krate: None,
            dims: Vec::new(),
            weights: Vec::new(),
            tensors: Vec::new(),
            scalars: Vec::new(),
            stmts: Vec::new(),
        };
        while !body.is_empty() {
            parse_item(&body, &mut plan)?;
        }
        Ok(plan)
    }
}

fn parse_int(input: ParseStream) -> syn::Result<(i64, Span)> {
    let neg = input.parse::<Option<Token![-]>>()?.is_some();
    let lit: syn::LitInt = input.parse()?;
    let v: i64 = lit.base10_parse()?;
    Ok((if neg { -v } else { v }, lit.span()))
}

fn parse_shape(input: ParseStream) -> syn::Result<(Vec<Expr>, Span)> {
    let content;
    let bracket = bracketed!(content in input);
    let dims = Punctuated::<Expr, Token![,]>::parse_terminated(&content)?;
    Ok((dims.into_iter().collect(), bracket.span.join()))
}

fn parse_item(input: ParseStream, plan: &mut Plan) -> syn::Result<()> {
    let la = input.lookahead1();
    if la.peek(Token![crate]) {
        input.parse::<Token![crate]>()?;
        input.parse::<Token![=]>()?;
        plan.krate = Some(input.parse()?);
    } else if la.peek(kw::dim) {
        input.parse::<kw::dim>()?;
        let name: Ident = input.parse()?;
        input.parse::<Token![in]>()?;
        let lo = parse_int(input)?;
        let hi = if input.peek(Token![..=]) {
            input.parse::<Token![..=]>()?;
            Some(parse_int(input)?)
        } else {
            // `dim n in 1..` : unbounded, rejected by the check with a spanned error.
            input.parse::<Token![..]>()?;
            None
        };
        plan.dims.push(DimDecl { name, lo, hi });
    } else if la.peek(kw::weight) {
        input.parse::<kw::weight>()?;
        let name: Ident = input.parse()?;
        input.parse::<Token![:]>()?;
        let storage: Ident = input.parse()?;
        let (shape, shape_span) = parse_shape(input)?;
        plan.weights.push(WeightDecl { name, storage, shape, shape_span });
    } else if la.peek(kw::input) || la.peek(kw::output) || la.peek(kw::state) {
        let role = if input.parse::<Option<kw::input>>()?.is_some() {
            Role::Input
        } else if input.parse::<Option<kw::output>>()?.is_some() {
            Role::Output
        } else {
            input.parse::<kw::state>()?;
            Role::State
        };
        let name: Ident = input.parse()?;
        input.parse::<Token![:]>()?;
        let (shape, shape_span) = parse_shape(input)?;
        plan.tensors.push(TensorDecl { role, name, shape, shape_span });
    } else if la.peek(kw::scalar) {
        input.parse::<kw::scalar>()?;
        let name: Ident = input.parse()?;
        input.parse::<Token![:]>()?;
        let ty: Ident = input.parse()?;
        if ty != "usize" {
            return Err(syn::Error::new(ty.span(), "run-time scalars are `usize`"));
        }
        plan.scalars.push(name);
    } else if la.peek(Token![let]) || la.peek(Ident) {
        let is_let = input.parse::<Option<Token![let]>>()?.is_some();
        let target: Ident = input.parse()?;
        input.parse::<Token![=]>()?;
        let callee: Ident = input.parse()?;
        let content;
        let paren = parenthesized!(content in input);
        let mut args = Vec::new();
        let mut options = Vec::new();
        while !content.is_empty() {
            let id: Ident = content.parse()?;
            if content.peek(Token![=]) {
                content.parse::<Token![=]>()?;
                let value: Expr = content.parse()?;
                options.push((id, value));
            } else if !options.is_empty() {
                // A bare name after an option is a flag: `causal` means `causal = true`.
                let value = syn::LitBool::new(true, id.span());
                options
                    .push((id, Expr::Lit(syn::ExprLit { attrs: Vec::new(), lit: value.into() })));
            } else {
                args.push(id);
            }
            if !content.is_empty() {
                content.parse::<Token![,]>()?;
            }
        }
        let call_span = callee.span().join(paren.span.close()).unwrap_or(callee.span());
        plan.stmts.push(Stmt { is_let, target, callee, args, options, call_span });
    } else {
        return Err(la.error());
    }
    input.parse::<Token![;]>()?;
    Ok(())
}

/// An integer literal option value, e.g. `stride: 2`.
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
