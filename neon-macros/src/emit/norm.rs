//! Calls of the norms and per-channel operators: `layer_norm`, `rms_norm`,
//! `group_norm`, `layer_scale`, `bias_add`.

use proc_macro2::TokenStream;
use quote::quote;

use super::operands::Step;
use crate::ir::Op;

/// The call of a norm or per-channel step; and whether it passes `options` on.
pub(super) fn call(st: &Step) -> (TokenStream, bool) {
    let out_view = &st.out_view;
    let f = st.field();
    match &st.s.op {
        Op::LayerNorm(_) | Op::RmsNorm(_) | Op::GroupNorm(_) => st.run_prepared(),
        Op::PerChannel(_) if st.in_place => {
            (quote!(weights.#f.run_in_place::<B>(#out_view)?;), false)
        }
        Op::PerChannel(_) => {
            let x = st.view(0);
            (quote!(weights.#f.run::<B>(#x, #out_view)?;), false)
        }
        _ => unreachable!("dispatched by operator group"),
    }
}
