//! # neon-runtime
//!
//! The `no_std`, dependency-free core of neon: tensor views and layouts
//! ([`tensor`]), kernel backends ([`kernels`]: [`Portable`] everywhere, `Neon` on
//! aarch64 with feature `neon`, [`X86<Avx2>`](X86) and [`X86<Avx512>`](X86) on x86-64;
//! [`BackendKind`] picks one at run time), prepared operators ([`ops`]) that own immutable,
//! kernel-ready weights, blocks composed of them ([`blocks`]: ResidualConv, ConvNeXt), the
//! static memory planner (`plan`, feature `alloc`), the
//! workspace slicing that generated plans use ([`workspace`]) and the dynamic execution
//! plan built on both (`exec`, feature `alloc`).
//!
//! Model components are usually written as `neon_plan!` blocks (crate `neon-macros`),
//! which check shapes with the operators' own [`ops::ShapeRule`]s at compile time, lay out
//! one workspace with the `plan` module's planner and expand to straight-line calls of these
//! operators.
//!
//! ## Conventions
//! - Sequences are channel-first `[channels, frames]` unless a view says
//!   [`Layout::FrameMajor`] (`[frames, channels]`). Dimensions are listed outermost first
//!   (row-major); the last dimension is contiguous.
//! - Kernels are free functions over slices with explicit geometry. They check their
//!   geometry contract with `assert!` (the NEON paths rely on it for memory safety) and
//!   therefore panic on a violated contract; the operators in [`ops`] validate every shape
//!   first and return an [`Error`] instead, so user-facing code never reaches those asserts.
//! - Operators never allocate in `run`; scratch memory comes from the caller.
//!
//! ## Features
//! - `alloc`: operator constructors that pack weights into owned `Vec`s, the planner
//!   (`plan`), the dynamic `exec::ExecutionPlan`, the stream plans (`exec::stream`; without
//!   `alloc` only `exec::stream::fixed`, which compiled stream plans call).
//! - `std` (implies `alloc`): run-time CPU feature detection, the worker team (`team`).
//! - `neon`: the NEON backend; it only exists on `target_arch = "aarch64"`.
#![no_std]
#![warn(missing_docs)]

#[cfg(feature = "alloc")]
extern crate alloc;
#[cfg(feature = "std")]
extern crate std;

pub mod blocks;
pub mod constmath;
pub mod dim;
pub mod error;
#[cfg(feature = "alloc")]
pub mod exec;
/// Without feature `alloc`, only what compiled stream plans call: `exec::stream::fixed` and
/// the element views (the full module with `alloc`).
#[cfg(not(feature = "alloc"))]
pub mod exec {
    /// Streaming int8 plans: without `alloc`, the helpers of compiled plans only.
    pub mod stream {
        mod elem;
        pub mod fixed;
        pub use elem::{bytes, view, view_mut, Elem, ElemType};
    }
}
pub mod kernels;
pub mod ops;
#[cfg(feature = "alloc")]
pub mod plan;
#[cfg(feature = "std")]
pub mod team;
pub mod tensor;
pub mod workspace;

pub use dim::Dim;
pub use error::{Error, ShapeError, TeamError};
/// The x86 levels a [`BackendKind::X86`] names.
pub use kernels::cpu::X86Level;
#[cfg(all(target_arch = "aarch64", feature = "neon"))]
pub use kernels::Neon;
pub use kernels::{
    Avx2, Avx512, Backend, BackendKind, BackendType, FastBackend, Parallel, Portable, Serial,
    Unavailable, WithBackend, X86Isa, X86,
};
pub use ops::RunOptions;
#[cfg(feature = "std")]
pub use team::{Team, TeamOptions};
pub use tensor::{IndexView, Layout, Shape, TensorView, TensorViewMut, MAX_RANK};
