//! Backend types, their sum [`Backend`], and the choice of one at run time.
//!
//! A backend is a zero-sized type that implements every kernel family's trait. Plans,
//! operators and model components are generic over `B: Backend` and monomorphised, so a
//! kernel call costs no dispatch and one binary can hold (and compare) several backends:
//! - [`Portable`]: plain Rust that LLVM vectorises for the build's baseline, on every
//!   target. It is the reference path: the same source on every machine, no run-time
//!   choice inside.
//! - `Neon`: `core::arch::aarch64` intrinsics and `asm!` (aarch64 with feature `neon`).
//!   Optional extensions (dotprod) are asked of [`cpu`](super::cpu) where a kernel has a
//!   path for them.
//! - [`X86<I>`](X86): x86-64 AVX2 + FMA (`X86<Avx2>`) or AVX-512F (`X86<Avx512>`) kernels.
//!   The level is part of the type, so it is chosen once, where a component is built
//!   ([`BackendKind::best`] and [`BackendKind::with`]), and tests can run both levels side by
//!   side. Families without x86 kernels of their own use the portable code.
//!
//! Each family trait provides the portable implementation as default methods, so a backend
//! overrides only what it speeds up.

use super::cpu::X86Level;
use super::{
    ActivationKernels, AttentionKernels, Conv2dKernels, ConvKernels, ElementwiseKernels,
    FftKernels, GemmKernels, Int8Kernels, LayoutKernels, NormKernels, PoolKernels, QuantKernels,
    RotaryKernels, SoftmaxKernels, TrigKernels,
};
use core::fmt;
use core::marker::PhantomData;

// The NEON kernels assume Advanced SIMD is enabled at compile time (it is on every
// aarch64 Linux and the default bare-metal target); a soft-float target would be unsound.
#[cfg(all(target_arch = "aarch64", feature = "neon", not(target_feature = "neon")))]
compile_error!("feature `neon` needs a target with NEON enabled (not a soft-float target)");

/// What every backend type is: a zero-sized marker with a name. Every kernel family trait
/// has it as a supertrait, so generic code and tests can name the backend they run.
pub trait BackendType: Copy + Default + Send + Sync + fmt::Debug + 'static {
    /// Unique name: `"portable"`, `"neon"`, `"x86-avx2"`, `"x86-avx512"`.
    const NAME: &'static str;
    /// The implementation's name in session options (`"portable"`, `"neon"`, `"x86"`).
    const IMPL: &'static str;
    /// The same backend as a run-time value.
    const KIND: BackendKind;
}

/// The portable backend: plain Rust, auto-vectorised by LLVM. Available everywhere.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Portable;

impl BackendType for Portable {
    const NAME: &'static str = "portable";
    const IMPL: &'static str = "portable";
    const KIND: BackendKind = BackendKind::Portable;
}

/// The NEON backend: `core::arch::aarch64` intrinsics (aarch64 with feature `neon`).
///
/// NEON (Advanced SIMD) is mandatory on ARMv8-A, so this backend needs no run-time
/// detection; optional extensions (dotprod, i8mm) are detected by [`cpu`](super::cpu).
#[cfg(all(target_arch = "aarch64", feature = "neon"))]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Neon;

#[cfg(all(target_arch = "aarch64", feature = "neon"))]
impl BackendType for Neon {
    const NAME: &'static str = "neon";
    const IMPL: &'static str = "neon";
    const KIND: BackendKind = BackendKind::Neon;
}

mod sealed {
    pub trait Sealed {}
}

/// An x86-64 instruction-set level as a type: [`Avx2`] or [`Avx512`] (sealed).
pub trait X86Isa: sealed::Sealed + Copy + Default + Send + Sync + fmt::Debug + 'static {
    /// The level's value.
    const LEVEL: X86Level;
    /// The [`BackendType::NAME`] of `X86<Self>`.
    const BACKEND_NAME: &'static str;
}

/// The AVX2 + FMA level of [`X86`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Avx2;

/// The AVX-512F level of [`X86`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Avx512;

impl sealed::Sealed for Avx2 {}
impl sealed::Sealed for Avx512 {}
impl X86Isa for Avx2 {
    const LEVEL: X86Level = X86Level::Avx2;
    const BACKEND_NAME: &'static str = "x86-avx2";
}
impl X86Isa for Avx512 {
    const LEVEL: X86Level = X86Level::Avx512;
    const BACKEND_NAME: &'static str = "x86-avx512";
}

/// The x86-64 backend at level `I` ([`Avx2`] or [`Avx512`]): hand-vectorised kernels over
/// the same packed layouts as every other backend, with fused multiply-adds.
///
/// The type exists on every target so that generic code can name it; its kernels run only
/// where [`X86Level::supported`] says so. With feature `std` that is a run-time question
/// about the CPU; without `std` there is no run-time detection, so a level is usable only
/// when its target features are enabled at compile time (`-C target-feature=+avx2,+fma`,
/// `+avx512f`, or a `-C target-cpu` that has them), even on a CPU that has them.
///
/// Calling a kernel (or an operator's own `run`) of a level that is not supported is a
/// contract violation and panics (it never executes an unsupported instruction): choose
/// the level with [`BackendKind::best`] or check [`BackendKind::availability`] first.
/// `neon_plan!` plans and `exec::ExecutionPlan::run` (feature `alloc`) do that check
/// themselves and return [`Error::Backend`](crate::Error::Backend) instead.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct X86<I: X86Isa>(PhantomData<I>);

impl<I: X86Isa> X86<I> {
    /// Panics unless the CPU implements level `I`: the guard every x86 kernel runs before
    /// executing an instruction of the level (a cached load with feature `std`, a constant
    /// without it).
    ///
    /// # Panics
    /// When [`X86Level::supported`] is false for `I::LEVEL`.
    #[inline]
    pub fn require() {
        assert!(
            I::LEVEL.supported(),
            "backend {} used on a CPU (or build) without {}",
            <Self as BackendType>::NAME,
            I::LEVEL.requirement()
        );
    }
}

impl<I: X86Isa> BackendType for X86<I> {
    const NAME: &'static str = I::BACKEND_NAME;
    const IMPL: &'static str = "x86";
    const KIND: BackendKind = BackendKind::X86(I::LEVEL);
}

/// `pub trait Backend: BackendType + <every family> {}` and its blanket impl, from one
/// list of the family traits.
macro_rules! backend_of_families {
    ($($family:ident),+ $(,)?) => {
        /// A complete kernel backend: every kernel family. Implemented for every type that
        /// implements all of them.
        pub trait Backend: BackendType $(+ $family)+ {}

        impl<T> Backend for T where T: BackendType $(+ $family)+ {}
    };
}

backend_of_families!(
    GemmKernels,
    QuantKernels,
    Int8Kernels,
    ConvKernels,
    Conv2dKernels,
    PoolKernels,
    ElementwiseKernels,
    ActivationKernels,
    SoftmaxKernels,
    NormKernels,
    LayoutKernels,
    FftKernels,
    RotaryKernels,
    AttentionKernels,
    TrigKernels,
);

/// The fastest backend this build can name as a type: `Neon` on aarch64 with feature
/// `neon`; on x86-64, [`X86<Avx512>`](X86) when the build enables AVX-512F, [`X86<Avx2>`](X86)
/// when it enables AVX2 and FMA (`-C target-cpu=...`); else [`Portable`]. A default
/// x86-64 build enables neither: pick the level at run time with [`BackendKind::best`].
#[cfg(all(target_arch = "aarch64", feature = "neon"))]
pub type FastBackend = Neon;
/// The fastest backend this build can name as a type (see the aarch64 build's docs).
#[cfg(all(target_arch = "x86_64", target_feature = "avx512f"))]
pub type FastBackend = X86<Avx512>;
/// The fastest backend this build can name as a type (see the aarch64 build's docs).
#[cfg(all(
    target_arch = "x86_64",
    not(target_feature = "avx512f"),
    target_feature = "avx2",
    target_feature = "fma"
))]
pub type FastBackend = X86<Avx2>;
/// The fastest backend this build can name as a type: [`Portable`] here (no NEON build,
/// no AVX2 + FMA target features). Pick an x86 level at run time with [`BackendKind::best`].
#[cfg(not(any(
    all(target_arch = "aarch64", feature = "neon"),
    all(target_arch = "x86_64", target_feature = "avx512f"),
    all(target_arch = "x86_64", target_feature = "avx2", target_feature = "fma")
)))]
pub type FastBackend = Portable;

/// A backend as a run-time value: what a component is built with, chosen once.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BackendKind {
    /// [`Portable`].
    Portable,
    /// `Neon`.
    Neon,
    /// [`X86`] at a level.
    X86(X86Level),
}

/// Why a [`BackendKind`] cannot run here: the missing build option or CPU feature.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Unavailable {
    /// The backend asked for.
    pub kind: BackendKind,
    /// What is missing, e.g. `"this build was made without feature `neon`"`.
    pub reason: &'static str,
}

impl fmt::Display for Unavailable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "backend {} is not available: {}", self.kind.name(), self.reason)
    }
}

impl core::error::Error for Unavailable {}

/// Why `level` is not supported: with feature `std` the CPU lacks it; without `std` there
/// is no run-time detection, so the build lacks its target features (and the fix says so).
fn x86_missing(level: X86Level) -> &'static str {
    match (level, cfg!(feature = "std")) {
        (X86Level::Avx2, true) => "this CPU lacks AVX2 and FMA",
        (X86Level::Avx512, true) => "this CPU lacks AVX-512F",
        (X86Level::Avx2, false) => {
            "built without feature `std` (no run-time CPU detection) and without the AVX2+FMA \
             target features: enable `neon-runtime/std` or compile with \
             `-C target-feature=+avx2,+fma`"
        }
        (X86Level::Avx512, false) => {
            "built without feature `std` (no run-time CPU detection) and without the AVX-512F \
             target feature: enable `neon-runtime/std` or compile with \
             `-C target-feature=+avx512f`"
        }
    }
}

/// Code generic over the backend, run by [`BackendKind::with`] with the type the value
/// names: the one place a run-time choice becomes a monomorphised call.
pub trait WithBackend {
    /// What the code returns.
    type Output;
    /// Runs the code with backend `B`.
    fn run<B: Backend>(self) -> Self::Output;
}

impl BackendKind {
    /// Every backend kind, in order of preference from the slowest.
    pub const ALL: [BackendKind; 4] = [
        BackendKind::Portable,
        BackendKind::Neon,
        BackendKind::X86(X86Level::Avx2),
        BackendKind::X86(X86Level::Avx512),
    ];

    /// The kind's [`BackendType::NAME`].
    pub const fn name(self) -> &'static str {
        match self {
            BackendKind::Portable => "portable",
            BackendKind::Neon => "neon",
            BackendKind::X86(X86Level::Avx2) => "x86-avx2",
            BackendKind::X86(X86Level::Avx512) => "x86-avx512",
        }
    }

    /// The kind's [`BackendType::IMPL`] (`"portable"`, `"neon"`, `"x86"`).
    pub const fn impl_name(self) -> &'static str {
        match self {
            BackendKind::Portable => "portable",
            BackendKind::Neon => "neon",
            BackendKind::X86(_) => "x86",
        }
    }

    /// `Ok` when this backend can run here, else what is missing (the build option, the
    /// CPU architecture or the CPU feature).
    pub fn availability(self) -> Result<(), Unavailable> {
        let fail = |reason| Err(Unavailable { kind: self, reason });
        match self {
            BackendKind::Portable => Ok(()),
            BackendKind::Neon => {
                if !cfg!(target_arch = "aarch64") {
                    fail("it needs an aarch64 CPU")
                } else if !cfg!(feature = "neon") {
                    fail("this build was made without feature `neon`")
                } else {
                    Ok(())
                }
            }
            BackendKind::X86(level) => {
                if !cfg!(target_arch = "x86_64") {
                    fail("it needs an x86-64 CPU")
                } else if level.supported() {
                    Ok(())
                } else {
                    fail(x86_missing(level))
                }
            }
        }
    }

    /// The kinds that can run here, [`Portable`] first: what tests run and benches time.
    pub fn available() -> impl Iterator<Item = BackendKind> {
        Self::ALL.into_iter().filter(|k| k.availability().is_ok())
    }

    /// The default choice: `Neon` on aarch64 with feature `neon`, the best supported
    /// [`X86`] level on x86-64, else [`Portable`].
    pub fn best() -> BackendKind {
        if BackendKind::Neon.availability().is_ok() {
            return BackendKind::Neon;
        }
        X86Level::best().map_or(BackendKind::Portable, BackendKind::X86)
    }

    /// Runs `code` monomorphised for this backend.
    ///
    /// # Errors
    /// [`Unavailable`] when the backend cannot run here; `code` does not run.
    pub fn with<W: WithBackend>(self, code: W) -> Result<W::Output, Unavailable> {
        self.availability()?;
        Ok(match self {
            BackendKind::Portable => code.run::<Portable>(),
            #[cfg(all(target_arch = "aarch64", feature = "neon"))]
            BackendKind::Neon => code.run::<Neon>(),
            #[cfg(not(all(target_arch = "aarch64", feature = "neon")))]
            BackendKind::Neon => unreachable!("availability() refused it"),
            BackendKind::X86(X86Level::Avx2) => code.run::<X86<Avx2>>(),
            BackendKind::X86(X86Level::Avx512) => code.run::<X86<Avx512>>(),
        })
    }
}

/// Evaluates `$body` with the type alias `$B` naming the backend `$kind` (a
/// [`BackendKind`]) is: `Ok(body)`, or `Err(`[`Unavailable`]`)` without running it when the
/// backend cannot run here. The inline form of [`BackendKind::with`], for a component that
/// stores its backend as a value and dispatches once per call (never per kernel):
///
/// ```
/// use neon_runtime::{dispatch, BackendKind, BackendType};
/// fn name<B: BackendType>() -> &'static str { B::NAME }
/// assert_eq!(dispatch!(BackendKind::Portable, B => name::<B>()), Ok("portable"));
/// ```
#[macro_export]
macro_rules! dispatch {
    ($kind:expr, $B:ident => $body:expr) => {{
        let kind: $crate::BackendKind = $kind;
        match kind.availability() {
            ::core::result::Result::Err(e) => ::core::result::Result::Err(e),
            ::core::result::Result::Ok(()) => ::core::result::Result::Ok(match kind {
                $crate::BackendKind::Portable => {
                    type $B = $crate::Portable;
                    $body
                }
                $crate::BackendKind::Neon => $crate::__dispatch_neon!($B => $body),
                $crate::BackendKind::X86($crate::kernels::cpu::X86Level::Avx2) => {
                    type $B = $crate::X86<$crate::Avx2>;
                    $body
                }
                $crate::BackendKind::X86($crate::kernels::cpu::X86Level::Avx512) => {
                    type $B = $crate::X86<$crate::Avx512>;
                    $body
                }
            }),
        }
    }};
}

/// The NEON arm of [`dispatch!`] (a build with the NEON backend).
#[doc(hidden)]
#[cfg(all(target_arch = "aarch64", feature = "neon"))]
#[macro_export]
macro_rules! __dispatch_neon {
    ($B:ident => $body:expr) => {{
        type $B = $crate::Neon;
        $body
    }};
}

/// The NEON arm of [`dispatch!`] in a build without it: `availability` refused the kind.
#[doc(hidden)]
#[cfg(not(all(target_arch = "aarch64", feature = "neon")))]
#[macro_export]
macro_rules! __dispatch_neon {
    ($B:ident => $body:expr) => {
        ::core::unreachable!("BackendKind::availability refused Neon")
    };
}

/// Instantiates generic test bodies once per backend this build has: one test module per
/// backend (`portable`, `neon` on aarch64 with feature `neon`, `x86_avx2` and `x86_avx512`
/// on x86-64), each with one `#[test]` per body, named after it. A body is a generic
/// function `fn name<B: ...>()`; an x86 level the CPU lacks passes with a note on stderr
/// instead of running. This is how every kernel suite runs the same cases on every
/// implementation (`cargo test x86_avx2::` runs one level).
///
/// ```ignore
/// fn matches_reference<B: neon_runtime::kernels::LayoutKernels>() { /* ... */ }
/// neon_runtime::backend_tests!(matches_reference);
/// ```
#[macro_export]
macro_rules! backend_tests {
    ($($body:ident),+ $(,)?) => {
        mod portable {
            $(#[test]
            fn $body() {
                super::$body::<$crate::Portable>()
            })+
        }
        $crate::__with_neon! {
            mod neon {
                $(#[test]
                fn $body() {
                    super::$body::<$crate::kernels::Neon>()
                })+
            }
        }
        #[cfg(target_arch = "x86_64")]
        $crate::backend_tests!(@x86 x86_avx2, Avx2; $($body),+);
        #[cfg(target_arch = "x86_64")]
        $crate::backend_tests!(@x86 x86_avx512, Avx512; $($body),+);
    };
    // The module of one x86 level (`X86Level::$level`, backend `X86<$level>`).
    (@x86 $module:ident, $level:ident; $($body:ident),+) => {
        mod $module {
            $(#[test]
            fn $body() {
                let level = $crate::kernels::cpu::X86Level::$level;
                if !level.supported() {
                    ::std::eprintln!("skipped: this CPU (or build) lacks {}", level.requirement());
                    return;
                }
                super::$body::<$crate::X86<$crate::$level>>()
            })+
        }
    };
}

/// For [`backend_tests!`]: expands its input where this build of the runtime has the
/// [`Neon`] backend (aarch64 with feature `neon`), to nothing elsewhere, so the choice is made
/// by the runtime's features and not by the features of the crate that calls the macro.
#[cfg(all(target_arch = "aarch64", feature = "neon"))]
#[doc(hidden)]
#[macro_export]
macro_rules! __with_neon {
    ($($item:tt)*) => { $($item)* };
}

/// For [`backend_tests!`]: expands its input where this build of the runtime has the
/// `Neon` backend (aarch64 with feature `neon`), to nothing elsewhere.
#[cfg(not(all(target_arch = "aarch64", feature = "neon")))]
#[doc(hidden)]
#[macro_export]
macro_rules! __with_neon {
    ($($item:tt)*) => {};
}
