//! Calls of the blocks and the spectrogram: `residual_conv`, `convnext`,
//! `stft_magnitude`.

use proc_macro2::TokenStream;
use quote::quote;

use super::operands::Step;
use crate::ir::Op;

/// The call of a block or spectrogram step; and whether it passes `options` on.
pub(super) fn call(st: &Step) -> (TokenStream, bool) {
    let out_view = &st.out_view;
    let f = st.field();
    let x = st.view(0);
    let scr = st.scratch();
    match &st.s.op {
        Op::ResidualConv(_) | Op::ConvNeXt(_) => {
            (quote!(weights.#f.run_with::<B>(#x, #out_view, #scr, options)?;), true)
        }
        Op::StftMagnitude(_) => (quote!(weights.#f.run::<B>(#x, #out_view, #scr)?;), false),
        _ => unreachable!("dispatched by operator group"),
    }
}
