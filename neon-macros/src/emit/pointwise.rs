//! Calls of the activations and elementwise operators: `relu` .. `exp`, `add`,
//! `mul`, `softmax`, `complex_magnitude`, scalar `scale_shift`.

use proc_macro2::TokenStream;
use quote::quote;

use super::operands::Step;
use crate::ir::Op;

/// The call of an activation or elementwise step; and whether it passes `options` on.
pub(super) fn call(st: &Step) -> (TokenStream, bool) {
    let out_view = &st.out_view;
    let unit = st.unit();
    match &st.s.op {
        Op::Act(_) => {
            if st.in_place {
                (quote!(#unit.run_in_place_with::<B>(#out_view, options)?;), true)
            } else {
                let x = st.view(0);
                (quote!(#unit.run_with::<B>(#x, #out_view, options)?;), true)
            }
        }
        Op::Add(_) | Op::Mul(_) => {
            let rest: Vec<TokenStream> = (1..st.s.inputs.len()).map(|k| st.view(k)).collect();
            if st.in_place {
                (quote!(#unit.run_in_place_with::<B>(#out_view #(, #rest)*, options)?;), true)
            } else {
                let x = st.view(0);
                (quote!(#unit.run_with::<B>(#x #(, #rest)*, #out_view, options)?;), true)
            }
        }
        Op::ScaleShift(_) if st.in_place => (quote!(#unit.run_in_place::<B>(#out_view)?;), false),
        Op::ScaleShift(_) => {
            let x = st.view(0);
            (quote!(#unit.run::<B>(#x, #out_view)?;), false)
        }
        Op::Softmax(_) => {
            let rest: Vec<TokenStream> = (1..st.s.inputs.len()).map(|k| st.view(k)).collect();
            if st.in_place {
                (quote!(#unit.run_in_place::<B>(#out_view #(, #rest)*)?;), false)
            } else {
                let x = st.view(0);
                (quote!(#unit.run::<B>(#x #(, #rest)*, #out_view)?;), false)
            }
        }
        Op::ComplexMagnitude(_) => {
            let x = st.view(0);
            (quote!(#unit.run::<B>(#x, #out_view)?;), false)
        }
        _ => unreachable!("dispatched by operator group"),
    }
}
