//! Calls of the convolutions and pooling: `conv1d`, `depthwise_conv1d`, `conv2d`,
//! `max_pool2d`, `avg_pool1d`, `max_pool1d`, `global_avg_pool`, `global_max_pool`.

use proc_macro2::TokenStream;
use quote::quote;

use super::operands::Step;
use crate::ir::Op;

/// The call of a conv or pooling step; and whether it passes `options` on.
pub(super) fn call(st: &Step) -> (TokenStream, bool) {
    let out_view = &st.out_view;
    match &st.s.op {
        Op::Conv1d(_) | Op::Conv2d(_) => {
            let f = st.field();
            let x = st.view(0);
            let scr = st.scratch();
            (quote!(weights.#f.run_with::<B>(#x, #out_view, #scr, options)?;), true)
        }
        Op::DepthwiseConv1d(_) => st.run_prepared(),
        Op::MaxPool2d(_) | Op::Pool1d(_) | Op::GlobalPool(_) => {
            let unit = st.unit();
            let x = st.view(0);
            (quote!(#unit.run::<B>(#x, #out_view)?;), false)
        }
        _ => unreachable!("dispatched by operator group"),
    }
}
