//! Phase 1: parse a `neon_plan!` block into the spanned syntax tree [`ir::Plan`].
//!
//! Errors go to the shared [`Ctxt`]. A malformed item is reported and skipped up to its
//! `;`, so every syntax error of a block is reported at once; the checks then run only on
//! a block that parsed (a skipped item would make them report noise).
//!
//! ```text
//! plan      := attr* vis? "plan" Ident "{" item* "}"
//! item      := "crate" "=" Path ";"
//!            | "weights" "=" Path ";"                      (another plan's weights struct)
//!            | "dim" Ident "in" Int "..=" Int ";"
//!            | "weight" Ident ":" Ident "[" dims "]" ";"      (storage type, e.g. f32,
//!                                                           or a block: convnext, ...)
//!            | ("input" | "output" | "state") Ident ":" "[" dims "]" ";"
//!            | "scalar" Ident ":" "usize" ";"
//!            | "workers" Int ";"                               (largest team run_with takes)
//!            | "let" Ident "=" call ";"
//!            | Ident "=" call ";"                      (writes an output or a state)
//! call      := Ident "(" (arg ("," arg)*)? ")"
//! arg       := Ident | Ident "=" value       (a bare Ident after an option is a flag)
//! value     := ["-"] Lit | Ident | "(" Lit ("," Lit)* ")"     (read by the operator table)
//! dims      := expr ("," expr)*      expr over + - * / (floor, by constants), ints, dims
//! ```

use proc_macro2::{Span, TokenStream, TokenTree};
use syn::parse::{ParseStream, Parser};
use syn::punctuated::Punctuated;
use syn::{braced, bracketed, parenthesized, Attribute, Expr, Ident, Token, Visibility};

use crate::ctxt::Ctxt;
use crate::ir::{self, DimDecl, Role, Stmt, TensorDecl, WeightDecl};
use crate::suggest;

mod kw {
    syn::custom_keyword!(plan);
    syn::custom_keyword!(dim);
    syn::custom_keyword!(weight);
    syn::custom_keyword!(input);
    syn::custom_keyword!(output);
    syn::custom_keyword!(state);
    syn::custom_keyword!(scalar);
    syn::custom_keyword!(workers);
    syn::custom_keyword!(weights);
}

/// Parses `input`; `None` when the block's header is malformed (reported) . Items that
/// fail are reported and left out.
pub fn parse(input: TokenStream, cx: &Ctxt) -> Option<ir::Plan> {
    let parser = |input: ParseStream| parse_plan(input, cx);
    match parser.parse2(input) {
        Ok(plan) => Some(plan),
        Err(e) => {
            cx.syn_error(e);
            None
        }
    }
}

fn parse_plan(input: ParseStream, cx: &Ctxt) -> syn::Result<ir::Plan> {
    let attrs = input.call(Attribute::parse_outer)?;
    let vis: Visibility = input.parse()?;
    input.parse::<kw::plan>()?;
    let name: Ident = input.parse()?;
    let body;
    braced!(body in input);
    let mut plan = ir::Plan {
        attrs,
        vis,
        name,
        krate: None,
        dims: Vec::new(),
        weights: Vec::new(),
        tensors: Vec::new(),
        scalars: Vec::new(),
        workers: None,
        shared_weights: None,
        stmts: Vec::new(),
    };
    while !body.is_empty() {
        if let Err(e) = parse_item(&body, &mut plan) {
            cx.syn_error(e);
            skip_item(&body);
        }
    }
    Ok(plan)
}

/// Skips the rest of a malformed item, up to and including its `;`.
fn skip_item(input: ParseStream) {
    let _ = input.step(|cursor| {
        let mut rest = *cursor;
        while let Some((tt, next)) = rest.token_tree() {
            rest = next;
            if matches!(&tt, TokenTree::Punct(p) if p.as_char() == ';') {
                break;
            }
        }
        Ok(((), rest))
    });
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

/// The keywords that start an item (a statement starts with `let` or a name and `=`).
const ITEMS: &[&str] =
    &["dim", "weight", "input", "output", "state", "scalar", "workers", "weights", "crate", "let"];

fn parse_item(input: ParseStream, plan: &mut ir::Plan) -> syn::Result<()> {
    let la = input.lookahead1();
    if la.peek(Token![crate]) {
        input.parse::<Token![crate]>()?;
        input.parse::<Token![=]>()?;
        plan.krate = Some(input.parse()?);
    } else if input.peek(kw::weights) && input.peek2(Token![=]) {
        let kw = input.parse::<kw::weights>()?;
        input.parse::<Token![=]>()?;
        if plan.shared_weights.is_some() {
            return Err(syn::Error::new(kw.span, "`weights` is declared twice"));
        }
        plan.shared_weights = Some(input.parse()?);
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
    } else if input.peek(kw::workers) && !input.peek2(Token![=]) {
        let kw = input.parse::<kw::workers>()?;
        let n = parse_int(input)?;
        if plan.workers.is_some() {
            return Err(syn::Error::new(kw.span, "`workers` is declared twice"));
        }
        if n.0 < 1 {
            return Err(syn::Error::new(n.1, "a plan needs at least 1 worker"));
        }
        plan.workers = Some(n);
    } else if la.peek(kw::scalar) {
        input.parse::<kw::scalar>()?;
        let name: Ident = input.parse()?;
        input.parse::<Token![:]>()?;
        let ty: Ident = input.parse()?;
        if ty != "usize" {
            return Err(syn::Error::new(ty.span(), "run-time scalars are `usize`"));
        }
        plan.scalars.push(name);
    } else if la.peek(Ident) && input.peek2(syn::token::Paren) {
        // Rule: a call defines a value, so a statement names its target.
        let callee: Ident = input.parse()?;
        let msg = format!(
            "a call needs a target: `let NAME = {callee}(..);` or `OUTPUT = {callee}(..);`"
        );
        return Err(syn::Error::new(callee.span(), msg));
    } else if la.peek(Ident) && !input.peek2(Token![=]) {
        // Rule: a name not followed by `=` or `(` starts no item: a misspelt item keyword.
        let word: Ident = input.parse()?;
        let hint = suggest::hint(&word.to_string(), ITEMS, "items");
        return Err(syn::Error::new(word.span(), format!("unknown item `{word}`{hint}")));
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
