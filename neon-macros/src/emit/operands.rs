//! The operands of one step as its operator group's emitter sees them: input views, the
//! output view, the scratch slice and the prepared operator's field.

use neon_runtime::Layout;
use proc_macro2::TokenStream;
use quote::quote;
use syn::Ident;

use super::dims_ident;
use super::tokens::{layout_tokens, unit_tokens};
use crate::ir::{Checked, StepInfo};

/// A step as its operator's call sees it: its input views, output view and scratch.
pub(super) struct Step<'a> {
    pub c: &'a Checked,
    pub s: &'a StepInfo,
    pub krate: &'a TokenStream,
    /// The step writes its first input in place (the output view is that input).
    pub in_place: bool,
    pub(super) in_layouts: Vec<Layout>,
    pub(super) input_exprs: Vec<TokenStream>,
    pub(super) scratch_expr: Option<TokenStream>,
    /// `&mut TensorViewMut` of the output.
    pub out_view: TokenStream,
}

impl Step<'_> {
    /// `&TensorView` of input `k`.
    pub fn view(&self, k: usize) -> TokenStream {
        let krate = self.krate;
        let e = &self.input_exprs[k];
        let dims = dims_ident(self.c, self.s.inputs[k]);
        let l = layout_tokens(krate, self.in_layouts[k]);
        quote!(&#krate::TensorView::new(#e, &#dims, #l)?)
    }

    /// The weights struct field of the step's prepared operator.
    pub fn field(&self) -> &Ident {
        &self.c.weights[self.s.weight.unwrap_or(0)].name
    }

    /// The call of the step's prepared operator on input 0 with `options`, without scratch
    /// (`weights.<field>.run_with::<B>(x, out, options)`); it passes `options` on.
    pub fn run_prepared(&self) -> (TokenStream, bool) {
        let f = self.field();
        let x = self.view(0);
        let out_view = &self.out_view;
        (quote!(weights.#f.run_with::<B>(#x, #out_view, options)?;), true)
    }

    /// The step's scratch slice (empty without one).
    pub fn scratch(&self) -> TokenStream {
        self.scratch_expr.clone().unwrap_or_else(|| quote!(&mut []))
    }

    /// The operator's unit value (an operator without weights).
    pub fn unit(&self) -> TokenStream {
        unit_tokens(&self.s.op, self.krate).unwrap_or_default()
    }
}
