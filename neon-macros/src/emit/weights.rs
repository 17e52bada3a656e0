//! The weights struct: one prepared operator per main weight, its geometry constant and
//! its run-time geometry check.

use proc_macro2::TokenStream;
use quote::{format_ident, quote};

use super::tokens::{geometry_tokens, weight_type};
use crate::ir::{Checked, Op, Storage};

/// The weights struct's parts.
pub(super) struct Weights {
    /// The struct, one field per prepared operator (nothing with `weights = Path;`).
    pub strukt: TokenStream,
    /// The plan's geometry constants, one per field.
    pub consts: Vec<TokenStream>,
    /// Run-time checks of every field's geometry (and bias).
    pub checks: Vec<TokenStream>,
    /// Its storage type parameters (`S`, and `Q` for int8 data), declared and as arguments.
    pub params: TokenStream,
    pub args: TokenStream,
}

/// The weights struct of plan `c`.
pub(super) fn weights(c: &Checked, krate: &TokenStream) -> Weights {
    let name = &c.name;
    // Weights struct: one prepared operator per main weight.
    let mut fields = Vec::new();
    let mut consts = Vec::new();
    let mut checks = Vec::new();
    for s in &c.steps {
        let (Some(w), Some(ty), Some((geom, geom_ty))) =
            (s.weight, weight_type(&s.op, krate), geometry_tokens(&s.op, krate))
        else {
            continue;
        };
        let field = &c.weights[w].name;
        let cname = format_ident!("{}", field.to_string().to_uppercase());
        let doc = match c.weights[w].storage {
            Storage::Block(kind) => format!(
                " Geometry the prepared block `{field}` must have ({} declared `{kind}{:?}`).",
                s.callee, c.weights[w].shape
            ),
            _ => format!(
                " Geometry the prepared operator `{field}` must have ({} over weight shape {:?}{}).",
                s.callee,
                c.weights[w].shape,
                s.bias.map_or(String::new(), |b| format!(" with bias `{}`", c.weights[b].name))
            ),
        };
        let fdoc =
            format!(" `{}` ({}): build it with geometry [`{name}::{cname}`].", field, s.callee);
        let ty = if s.op.int8() { quote!(#ty<Q, S>) } else { quote!(#ty<S>) };
        fields.push(quote!(#[doc = #fdoc] pub #field: #ty,));
        consts.push(quote!(#[doc = #doc] pub const #cname: #geom_ty = #geom;));
        let fname = field.to_string();
        let has_bias = s.bias.is_some();
        let geom_check = quote!(weights.#field.geometry() != Self::#cname);
        let bias_check = match s.op {
            Op::Conv1d(_) | Op::DepthwiseConv1d(_) | Op::Conv2d(_) | Op::LstmCell(_)
                if has_bias =>
            {
                quote!(|| weights.#field.bias().is_none())
            }
            Op::Conv1d(_) | Op::DepthwiseConv1d(_) | Op::Conv2d(_) | Op::LstmCell(_) => {
                quote!(|| weights.#field.bias().is_some())
            }
            _ => quote!(),
        };
        checks.push(quote! {
            if #geom_check #bias_check {
                return Err(#krate::Error::Weight { name: #fname });
            }
        });
    }

    // Weight storage type parameters: `S` for f32 data, `Q` for int8 data when used.
    let has_int8 = c.steps.iter().any(|s| s.op.int8());
    let (params, args) = if fields.is_empty() {
        // A plan without weights: a unit weights struct, no storage parameter.
        (quote!(), quote!())
    } else if has_int8 {
        (quote!(S: AsRef<[f32]>, Q: AsRef<[i8]>), quote!(S, Q))
    } else {
        (quote!(S: AsRef<[f32]>), quote!(S))
    };
    let weights_doc = if has_int8 {
        format!(
            " Prepared operators of [`{name}`]; `S` is their f32 storage, `Q` their int8 storage."
        )
    } else {
        format!(" Prepared operators of [`{name}`]; `S` is their weight storage.")
    };
    let own_weights = format_ident!("{}Weights", name);
    let vis = &c.vis;
    let strukt = if c.shared_weights.is_some() {
        quote!()
    } else {
        quote! {
            #[doc = #weights_doc]
            #vis struct #own_weights<#params> {
                #(#fields)*
            }
        }
    };
    Weights { strukt, consts, checks, params, args }
}
