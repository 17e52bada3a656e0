//! Calls of the layout, sequence and attention operators: `transpose`, `reshape`,
//! `concat_frames`, `last_frames`, `write_frames`, `reflect_pad`, `rotary`, `attention`.

use neon_runtime::ops::layout::ReshapeTo;
use proc_macro2::TokenStream;
use quote::quote;

use super::dims_ident;
use super::operands::Step;
use super::tokens::layout_tokens;
use crate::ir::Op;

/// The call of a layout, sequence or attention step; and whether it passes `options` on.
pub(super) fn call(st: &Step) -> (TokenStream, bool) {
    let krate = st.krate;
    let out_view = &st.out_view;
    match &st.s.op {
        Op::Transpose(t) => {
            let to = layout_tokens(krate, t.to);
            let x = st.view(0);
            (quote!(#krate::ops::layout::Transpose { to: #to }.run::<B>(#x, #out_view)?;), false)
        }
        // Aliased by the planner: the output is the input's storage, nothing to run; the
        // view still checks the output's length.
        Op::Reshape(_) if st.in_place => (quote!(let _ = #out_view;), false),
        Op::Reshape(r) => {
            let l = layout_tokens(krate, r.layout);
            let dims = match r.to {
                ReshapeTo::Dims(s) => s.dims().to_vec(),
                ReshapeTo::Flatten { .. } => unreachable!("neon_plan! reshapes to dims"),
            };
            let x = st.view(0);
            (
                quote!(#krate::ops::layout::Reshape::to_dims(&[#(#dims),*], #l)?.run(#x, #out_view)?;),
                false,
            )
        }
        Op::ConcatFrames(g) => {
            let l = layout_tokens(krate, g.layout);
            let (a, b) = (st.view(0), st.view(1));
            (
                quote!(#krate::ops::sequence::ConcatFrames { layout: #l }.run(#a, #b, #out_view)?;),
                false,
            )
        }
        Op::LastFrames(g) => {
            let l = layout_tokens(krate, g.layout);
            let fr = g.frames;
            let x = st.view(0);
            (
                quote!(#krate::ops::sequence::LastFrames { frames: #fr, layout: #l }.run(#x, #out_view)?;),
                false,
            )
        }
        Op::WriteFrames(g, at) => {
            let l = layout_tokens(krate, g.layout);
            let x = st.view(1);
            (
                quote!(#krate::ops::sequence::WriteFrames { layout: #l }.run(#out_view, #x, #at)?;),
                false,
            )
        }
        Op::ReflectPad(_) => {
            let unit = st.unit();
            let x = st.view(0);
            (quote!(#unit.run(#x, #out_view)?;), false)
        }
        Op::Rotary(_, at) => (rotary(st, at.as_ref()), true),
        Op::Attention(_, len) => {
            let unit = st.unit();
            let (q, k, v) = (st.view(0), st.view(1), st.view(2));
            let kd = dims_ident(st.c, st.s.inputs[1]);
            let len = len.as_ref().map_or_else(|| quote!(#kd[0]), |n| quote!(#n));
            (quote!(#unit.run_with::<B>((#q, #k, #v), #out_view, #len, options)?;), true)
        }
        _ => unreachable!("dispatched by operator group"),
    }
}

/// The call of a `rotary` step at position `at` (0 without one).
fn rotary(st: &Step, at: Option<&syn::Ident>) -> TokenStream {
    let krate = st.krate;
    let out_view = &st.out_view;
    let geom = st.unit();
    let at = at.map_or_else(|| quote!(0), |a| quote!(#a));
    let rope = quote!(#krate::ops::rotary::Rotary);
    if st.in_place {
        quote! {
            const ROTARY: #rope = #rope::new(#geom);
            ROTARY.run_in_place_with::<B>(#out_view, #at, options)?;
        }
    } else {
        let x = st.view(0);
        quote! {
            const ROTARY: #rope = #rope::new(#geom);
            ROTARY.run_with::<B>(#x, #out_view, #at, options)?;
        }
    }
}
