//! CPU features: the one place that detects them.
//!
//! Every kernel family, test and benchmark asks here which instruction-set extensions the
//! machine has; nothing else calls `is_x86_feature_detected!` or
//! `is_aarch64_feature_detected!`. The answers combine two sources:
//! - **compile time**: the build's target features (`-C target-cpu=...`,
//!   `-C target-feature=+avx512f`, `+dotprod`). This is the only source without feature
//!   `std` (bare metal), so a `no_std` build uses exactly the extensions it was compiled for:
//!   there `X86<Avx2>` is unsupported even on an AVX2 CPU unless the build enables `avx2`
//!   and `fma` ([`BackendKind::availability`](super::BackendKind::availability) says so, and
//!   plans return [`Error::Backend`](crate::Error::Backend) for it);
//! - **run time**, with feature `std`: the standard library's detection (cached by `std`,
//!   so a query costs an atomic load).
//!
//! Under Miri no SIMD extension is reported (Miri cannot run the intrinsics), so every
//! backend choice falls back to [`Portable`](super::Portable).
//!
//! The API has no `cfg` of its own: on another architecture every query answers `false`,
//! so tests and benchmarks can list levels without conditional compilation.

/// Whether the target features `$feature` are all there: enabled at compile time, or, with
/// feature `std`, all reported at run time by `std::arch::$detect!`.
#[cfg(any(neon_x86, all(target_arch = "aarch64", not(miri))))]
macro_rules! detected {
    ($detect:ident: $($feature:tt),+) => {{
        if cfg!(all($(target_feature = $feature),+)) {
            true
        } else {
            #[cfg(feature = "std")]
            {
                $(std::arch::$detect!($feature))&&+
            }
            #[cfg(not(feature = "std"))]
            {
                false
            }
        }
    }};
}

/// An instruction-set level of the x86-64 kernels ([`X86`](super::X86) backend), slowest
/// first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum X86Level {
    /// AVX2 with FMA (Haswell, Zen 1 and later): 8-wide, 16 `ymm` registers.
    Avx2,
    /// AVX-512F (Skylake-SP, Ice Lake, Zen 4 and later): 16-wide, 32 `zmm` registers.
    Avx512,
}

impl X86Level {
    /// Every level, slowest first.
    pub const ALL: [X86Level; 2] = [X86Level::Avx2, X86Level::Avx512];

    /// Short name: `"avx2"`, `"avx512"`.
    pub const fn name(self) -> &'static str {
        match self {
            X86Level::Avx2 => "avx2",
            X86Level::Avx512 => "avx512",
        }
    }

    /// What the level needs, for error messages: `"AVX2 and FMA"`, `"AVX-512F"`.
    pub const fn requirement(self) -> &'static str {
        match self {
            X86Level::Avx2 => "AVX2 and FMA",
            X86Level::Avx512 => "AVX-512F",
        }
    }

    /// Whether this level may run here: an x86-64 hard-float target (not Miri) whose build
    /// enables the extensions, or, with feature `std`, whose CPU reports them at run time.
    /// Always `false` on other architectures.
    #[inline]
    pub fn supported(self) -> bool {
        #[cfg(neon_x86)]
        {
            match self {
                X86Level::Avx2 => detected!(is_x86_feature_detected: "avx2", "fma"),
                X86Level::Avx512 => detected!(is_x86_feature_detected: "avx512f"),
            }
        }
        #[cfg(not(neon_x86))]
        {
            let _ = self;
            false
        }
    }

    /// The fastest supported level, `None` when there is none (no AVX2 + FMA, another
    /// architecture, Miri).
    pub fn best() -> Option<X86Level> {
        Self::ALL.into_iter().rev().find(|l| l.supported())
    }

    /// The supported levels, slowest first: what tests run and benchmarks time.
    pub fn available() -> impl Iterator<Item = X86Level> {
        Self::ALL.into_iter().filter(|l| l.supported())
    }
}

/// An optional x86-64 extension that kernels use beyond their [`X86Level`] (the int8
/// kernels' dot products): asked as [`X86Level::supported`] is, at compile time and, with
/// feature `std`, at run time.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum X86Extension {
    /// AVX-512BW with AVX-512VL: byte and word lanes in `zmm`, masked byte loads.
    Avx512Bw,
    /// AVX-512 VNNI (with BW and VL): `vpdpbusd` on `zmm`, u8 x i8 dot products of 4.
    Avx512Vnni,
    /// AVX-VNNI (Alder Lake, Zen 5): the VEX-encoded `vpdpbusd` on `ymm`.
    AvxVnni,
}

impl X86Extension {
    /// Whether the extension may run here (always `false` off x86-64 and under Miri).
    #[inline]
    pub fn supported(self) -> bool {
        #[cfg(neon_x86)]
        {
            match self {
                X86Extension::Avx512Bw => {
                    detected!(is_x86_feature_detected: "avx512f", "avx512bw", "avx512vl")
                }
                X86Extension::Avx512Vnni => detected!(
                    is_x86_feature_detected: "avx512f", "avx512bw", "avx512vl", "avx512vnni"
                ),
                X86Extension::AvxVnni => detected!(is_x86_feature_detected: "avx2", "avxvnni"),
            }
        }
        #[cfg(not(neon_x86))]
        {
            let _ = self;
            false
        }
    }
}

/// Whether the CPU has the aarch64 dot-product extension (FEAT_DotProd: `sdot`, `udot`):
/// at compile time from `target_feature = "dotprod"`, with feature `std` also by run-time
/// detection. `false` on other architectures and under Miri.
#[inline]
pub fn aarch64_dotprod() -> bool {
    #[cfg(all(target_arch = "aarch64", not(miri)))]
    {
        detected!(is_aarch64_feature_detected: "dotprod")
    }
    #[cfg(not(all(target_arch = "aarch64", not(miri))))]
    {
        false
    }
}

/// Whether the CPU has the aarch64 int8 matrix-multiply extension (FEAT_I8MM: `smmla`,
/// `usdot`), as [`aarch64_dotprod`] decides. No kernel uses it yet; tests list it.
#[inline]
pub fn aarch64_i8mm() -> bool {
    #[cfg(all(target_arch = "aarch64", not(miri)))]
    {
        detected!(is_aarch64_feature_detected: "i8mm")
    }
    #[cfg(not(all(target_arch = "aarch64", not(miri))))]
    {
        false
    }
}
