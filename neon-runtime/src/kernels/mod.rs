//! Kernel backends.
//!
//! A backend is a zero-sized type implementing one trait per kernel family; [`Backend`]
//! is their sum. Plans and operators are generic over `B: Backend` and monomorphised, so
//! there is no dynamic dispatch, and one binary can run and compare both backends.
//!
//! - [`Portable`]: plain Rust written so LLVM vectorises it; every target.
//! - `Neon`: `core::arch::aarch64` intrinsics; only with `target_arch = "aarch64"` and
//!   feature `neon`.
//!
//! Both backends implement the same signatures and agree to within the tolerances each
//! family documents (tests compare them on the same inputs under qemu-aarch64).
//!
//! One file per family: [`gemm`] (packed GEMM, GEMV), [`quant`] (int8-weight GEMV and
//! GEMM), [`int8`] (int8-activation kernels with TFLite's requantisation), [`conv`] (conv1d, depthwise), [`conv2d`] (im2col of 2-D windows), [`pool`] (max
//! pooling), [`elementwise`], [`activation`], [`softmax`], [`norm`], [`layout`], [`fft`] (real
//! FFT and its inverse, power and magnitude spectra), [`trig`] (sine, cosine, log-polar to Cartesian),
//! [`rotary`] (rotary position embedding), [`attention`] (multi-head
//! attention over a KV cache). [`lstm`] has no trait of its own: its driver runs one LSTM
//! cell step over the backends' GEMV, activation and elementwise kernels. [`parallel`]
//! holds the execution contexts and the split of an output into blocks for a worker team,
//! [`strided`] the output blocks of columns ([`StridedMut`]).

/// Compiles the module-level items inside only where the x86-64 SIMD kernels are
/// (`cfg(neon_x86)`, set by the crate's `build.rs`): the condition stated once for a group of
/// `mod` and `use` items instead of once per item. Defined before the kernel modules so that
/// all of them can use it.
macro_rules! x86_simd_items {
    ($($item:item)*) => {
        $(
            #[cfg(neon_x86)]
            $item
        )*
    };
}

pub mod activation;
pub mod attention;
pub mod backend;
pub mod conv;
pub mod conv2d;
pub mod cpu;
pub mod elementwise;
pub mod fft;
pub mod gemm;
pub mod int8;
pub mod layout;
pub mod lstm;
pub mod norm;
pub mod parallel;
pub mod pool;
pub mod quant;
pub mod rotary;
pub mod softmax;
pub mod strided;
pub mod trig;
#[cfg(neon_x86)]
mod x86_simd;

pub use activation::ActivationKernels;
pub use attention::AttentionKernels;
pub use conv::ConvKernels;
pub use conv2d::Conv2dKernels;
pub use elementwise::ElementwiseKernels;
pub use fft::FftKernels;
pub use gemm::GemmKernels;
pub use int8::Int8Kernels;
pub use layout::LayoutKernels;
pub use norm::NormKernels;
pub use parallel::{Parallel, Serial};
pub use pool::PoolKernels;
pub use quant::QuantKernels;
pub use rotary::RotaryKernels;
pub use softmax::SoftmaxKernels;
pub use strided::StridedMut;
pub use trig::TrigKernels;

#[cfg(all(target_arch = "aarch64", feature = "neon"))]
pub use backend::Neon;
pub use backend::{
    Avx2, Avx512, Backend, BackendKind, BackendType, FastBackend, Portable, Unavailable,
    WithBackend, X86Isa, X86,
};
