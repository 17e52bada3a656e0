//! `neon_plan!`: compile-time shape checking, static memory planning and straight-line
//! code generation over `neon-runtime` kernels.
//!
//! Phases, one module each: [`parse`] (syntax) -> [`check`] (names, symbolic shapes, the
//! runtime's own shape rules) -> [`schedule`] (the runtime's planner: liveness, in-place,
//! offsets) -> [`emit`] (straight-line Rust).

mod check;
mod emit;
mod ops;
mod parse;
mod schedule;
mod sym;

use proc_macro::TokenStream;

/// Compiles a plan: see the crate documentation.
#[proc_macro]
pub fn neon_plan(input: TokenStream) -> TokenStream {
    let plan = syn::parse_macro_input!(input as parse::Plan);
    let checked = match check::check(&plan) {
        Ok(c) => c,
        Err(errors) => {
            return errors
                .into_iter()
                .map(|e| e.to_compile_error())
                .collect::<proc_macro2::TokenStream>()
                .into()
        }
    };
    match schedule::schedule(&checked) {
        Ok(mp) => emit::emit(&plan, &checked, &mp).into(),
        Err(e) => syn::Error::new(plan.name.span(), format!("memory planning failed: {e}"))
            .to_compile_error()
            .into(),
    }
}
