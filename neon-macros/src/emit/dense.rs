//! Calls of the dense layers: `linear` (f32, i8 or i8_block32 weights) and `lstm_cell`.

use proc_macro2::TokenStream;
use quote::quote;

use super::operands::Step;
use crate::ir::Op;

/// The call of a linear or LSTM step; and whether it passes `options` on.
pub(super) fn call(st: &Step) -> (TokenStream, bool) {
    let out_view = &st.out_view;
    let f = st.field();
    match &st.s.op {
        Op::Linear(_) | Op::QuantLinear(_) | Op::BlockQ8Linear(_) => st.run_prepared(),
        Op::LstmCell(_) => {
            // The state is the output view (updated in place); `x` is input 1.
            let x = st.view(1);
            let scr = st.scratch();
            (quote!(weights.#f.run_with::<B>(#out_view, #x, #scr, options)?;), true)
        }
        _ => unreachable!("dispatched by operator group"),
    }
}
