//! `neon_plan!`: compile-time shape checking, static memory planning and straight-line
//! code generation over `neon-runtime` kernels.
//!
//! Not implemented yet: this crate is a placeholder in the workspace layout until the
//! `neon_plan!` work lands.

// The symbolic Dim the shape check will run the runtime's shape rules with (issue: neon_plan!).
#[allow(dead_code)]
mod sym;
