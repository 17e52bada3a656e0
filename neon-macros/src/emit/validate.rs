//! Run-time validation: the length functions and checks of the caller's tensors, the dim
//! bounds, the run-time dims of every value and the range checks of index scalars.

use neon_runtime::Layout;
use proc_macro2::TokenStream;
use quote::{format_ident, quote};

use super::{dims_array, dims_ident, dims_used};
use crate::ir::{Checked, Home, Op, Role};

/// The `NAME_len` function of every caller tensor, and the check of its length.
pub(super) fn lengths(c: &Checked, krate: &TokenStream) -> (Vec<TokenStream>, Vec<TokenStream>) {
    let mut len_fns = Vec::new();
    let mut len_checks = Vec::new();
    for t in &c.tensors {
        let f = format_ident!("{}_len", t.name);
        let used = dims_used(c, &t.shape);
        let numel = t
            .shape
            .iter()
            .map(|d| {
                let e = d.to_tokens();
                quote!((#e))
            })
            .reduce(|a, b| quote!(#a * #b));
        let role = match t.role {
            Role::Input => "input",
            Role::Output => "output",
            Role::State => "state",
        };
        let shape_doc: Vec<String> = t.shape.iter().map(|d| d.to_string()).collect();
        let doc = format!(" Elements of {role} `{}`, shape `[{}]`.", t.name, shape_doc.join(", "));
        len_fns.push(quote! {
            #[doc = #doc]
            #[allow(clippy::identity_op, clippy::erasing_op, clippy::manual_div_ceil, unused_parens)]
            pub const fn #f(#(#used: usize),*) -> usize { #numel }
        });
        let n = &t.name;
        let what = format!("{role} `{}`", t.name);
        len_checks.push(quote! {
            if #n.len() != Self::#f(#(#used),*) {
                return Err(#krate::Error::Length { what: #what, expected: Self::#f(#(#used),*), got: #n.len() });
            }
        });
    }
    (len_fns, len_checks)
}

/// The bound checks of the dims.
pub(super) fn dim_checks(c: &Checked, krate: &TokenStream) -> Vec<TokenStream> {
    c.dims.iter().map(|d| {
        let n = &d.name;
        let (lo, hi) = (d.lo as usize, d.hi as usize);
        let s = n.to_string();
        quote! {
            if !(#lo..=#hi).contains(&#n) {
                return Err(#krate::Error::OutOfRange { name: #s, value: #n, min: #lo, max: #hi });
            }
        }
    }).collect()
}

/// Run-time dims of every tensor value, computed once after validation.
pub(super) fn dim_lets(c: &Checked) -> Vec<TokenStream> {
    c.values
        .iter()
        .enumerate()
        .filter(|(_, v)| v.home != Home::Scratch)
        .map(|(i, v)| {
            let id = dims_ident(c, i);
            let arr = dims_array(&v.shape);
            let r = v.shape.len();
            quote!(let #id: [usize; #r] = #arr;)
        })
        .collect()
}

/// Scalars that index into states (write_frames' `at`) are range-checked up front too.
pub(super) fn scalar_checks(c: &Checked, krate: &TokenStream) -> Vec<TokenStream> {
    c
        .steps
        .iter()
        .filter_map(|s| match &s.op {
            Op::WriteFrames(g, at) => {
                let axis = usize::from(g.layout == Layout::ChannelFirst);
                let cap = dims_ident(c, s.inputs[0]);
                let x = dims_ident(c, s.inputs[1]);
                let name = at.to_string();
                Some(quote! {
                    if #x[#axis] > #cap[#axis] || #at > #cap[#axis] - #x[#axis] {
                        return Err(#krate::Error::OutOfRange {
                            name: #name,
                            value: #at,
                            min: 0,
                            max: #cap[#axis].saturating_sub(#x[#axis]),
                        });
                    }
                })
            }
            Op::Rotary(_, Some(at)) => {
                // Frame-major input: frames on axis 0; positions up to MAX_POSITION.
                let x = dims_ident(c, s.inputs[0]);
                let name = at.to_string();
                Some(quote! {
                    {
                        let max = (#krate::kernels::rotary::MAX_POSITION + 1).saturating_sub(#x[0]);
                        if #at > max {
                            return Err(#krate::Error::OutOfRange { name: #name, value: #at, min: 0, max });
                        }
                    }
                })
            }
            Op::Attention(a, len) if len.is_some() || a.causal => {
                // 1 <= len <= kv frames; causal: q frames <= len.
                let q = dims_ident(c, s.inputs[0]);
                let k = dims_ident(c, s.inputs[1]);
                let (value, name) = match len {
                    Some(n) => (quote!(#n), n.to_string()),
                    None => (quote!(#k[0]), "len".to_string()),
                };
                let min = if a.causal { quote!(#q[0]) } else { quote!(1usize) };
                Some(quote! {
                    if #value < #min || #value > #k[0] {
                        return Err(#krate::Error::OutOfRange { name: #name, value: #value, min: #min, max: #k[0] });
                    }
                })
            }
            _ => None,
        })
        .collect()
}
