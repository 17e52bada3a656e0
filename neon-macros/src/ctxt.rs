//! The error context shared by every phase of `neon_plan!`.
//!
//! Each phase reports into one [`Ctxt`] instead of returning at its first error, so a
//! plan with several mistakes gets all of them in one compile. The context must be
//! checked ([`Ctxt::check`]) before it is dropped: dropping it unchecked is a bug in the
//! macro (errors would be lost) and panics.

use std::cell::RefCell;
use std::fmt::Display;

use proc_macro2::{Span, TokenStream};

/// Collects the errors of every phase, each spanned on the user's token.
pub struct Ctxt {
    /// `None` once checked.
    errors: RefCell<Option<Vec<syn::Error>>>,
}

impl Ctxt {
    /// An empty context.
    pub fn new() -> Self {
        Ctxt { errors: RefCell::new(Some(Vec::new())) }
    }

    /// Reports `msg` at `span`.
    pub fn error(&self, span: Span, msg: impl Display) {
        self.syn_error(syn::Error::new(span, msg));
    }

    /// Reports `msg` spanned over every token of `tokens` (e.g. a whole option value).
    pub fn error_spanned_by(&self, tokens: impl quote::ToTokens, msg: impl Display) {
        self.syn_error(syn::Error::new_spanned(tokens, msg));
    }

    /// Reports an error syn produced.
    pub fn syn_error(&self, err: syn::Error) {
        self.errors
            .borrow_mut()
            .as_mut()
            .expect("the context is checked once, at the end")
            .push(err);
    }

    /// Errors reported so far (a phase compares counts to see whether a part failed).
    pub fn error_count(&self) -> usize {
        self.errors.borrow().as_ref().map_or(0, Vec::len)
    }

    /// Consumes the context: `Ok` when nothing was reported, else every error as one
    /// `compile_error!` token stream, in the order reported.
    pub fn check(self) -> Result<(), TokenStream> {
        let errors = self.errors.borrow_mut().take().expect("the context is checked once");
        if errors.is_empty() {
            Ok(())
        } else {
            Err(errors.iter().map(syn::Error::to_compile_error).collect())
        }
    }
}

impl Drop for Ctxt {
    fn drop(&mut self) {
        if !std::thread::panicking() && self.errors.borrow().is_some() {
            panic!("neon_plan!: an error context was dropped without being checked");
        }
    }
}
