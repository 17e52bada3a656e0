//! A keyword-spotting network ported with `neon_plan!`, in a crate of its own: the example
//! the guide (`docs/neon-plan.md`, "Writing a model with `neon_plan!`") walks through.
//!
//! - [`model`]: the network as one plan (shapes checked at compile time, workspace sized at
//!   compile time).
//! - [`weights`]: the weights in PyTorch's layouts, BatchNorm folded, packed for the plan.
//!
//! The weights are deterministic pseudo-random values, not a trained network: the example
//! shows the port (layouts, folding, backends, memory), and `tests/tests/kws_example.rs` in
//! the neon repository checks the plan against an f64 forward pass written from the layer
//! definitions.

pub mod model;
pub mod weights;
