//! The x86-64 vector layer shared by the kernels written once for both levels (attention,
//! GELU, tanh): a trait of primitives on a level's vectors ([`Simd`]) and one zero-sized token
//! per level that implements it, [`Zmm`] (AVX-512F, 16 lanes) and [`Ymm`] (AVX2 + FMA, 8
//! lanes). A kernel body generic over `S: Simd<L>` and marked `#[inline(always)]` throughout
//! compiles, inside a level's `#[target_feature]` entry point, into one function with that
//! level's instructions. The body must call no closure that uses the vectors (nor
//! `array::from_fn` with one): a closure that LLVM does not inline is compiled without the
//! level's target features and calls every intrinsic out of line.

mod avx2;
mod avx512;

pub(crate) use avx2::Ymm;
pub(crate) use avx512::Zmm;

/// A level's vectors of `L` f32 lanes and the primitives the kernels need on them.
/// Implemented by a zero-sized token ([`Zmm`], [`Ymm`]) that exists only where the CPU
/// implements the level (its constructor is `unsafe`), so the arithmetic is safe to call;
/// every method is `#[inline(always)]`, compiled inside the level's `#[target_feature]`
/// entry point.
pub(crate) trait Simd<const L: usize>: Copy {
    /// `L` f32 lanes.
    type V: Copy;
    /// One bit or lane per lane, from a comparison.
    type Mask: Copy;
    /// `L` i32 lanes: the visible-key counts of a block of queries.
    type Lim: Copy;

    /// `x` in every lane.
    fn splat(self, x: f32) -> Self::V;
    /// Zeros.
    fn zero(self) -> Self::V;
    /// `a + b`.
    fn add(self, a: Self::V, b: Self::V) -> Self::V;
    /// `a - b`.
    fn sub(self, a: Self::V, b: Self::V) -> Self::V;
    /// `a * b`.
    fn mul(self, a: Self::V, b: Self::V) -> Self::V;
    /// `a / b`.
    fn div(self, a: Self::V, b: Self::V) -> Self::V;
    /// `a * b + c`, fused.
    fn fma(self, a: Self::V, b: Self::V, c: Self::V) -> Self::V;
    /// `c - a * b`, fused.
    fn fnma(self, a: Self::V, b: Self::V, c: Self::V) -> Self::V;
    /// `vmaxps`: `b` when either is NaN.
    fn max(self, a: Self::V, b: Self::V) -> Self::V;
    /// `vminps`: `b` when either is NaN.
    fn min(self, a: Self::V, b: Self::V) -> Self::V;
    /// `|a|`: the sign bit cleared (NaN stays NaN).
    fn abs(self, a: Self::V) -> Self::V;
    /// `-a`: the sign bit flipped (exact).
    fn neg(self, a: Self::V) -> Self::V;
    /// The magnitude of `a` with the sign bit of `b`.
    fn copysign(self, a: Self::V, b: Self::V) -> Self::V;
    /// `a < b` (ordered: false on NaN).
    fn lt(self, a: Self::V, b: Self::V) -> Self::Mask;
    /// `a <= b` (ordered).
    fn le(self, a: Self::V, b: Self::V) -> Self::Mask;
    /// `a > b` (ordered).
    fn gt(self, a: Self::V, b: Self::V) -> Self::Mask;
    /// `a == b` (ordered).
    fn eq(self, a: Self::V, b: Self::V) -> Self::Mask;
    /// Whether any lane of `m` is set.
    fn any(self, m: Self::Mask) -> bool;
    /// `t` where `m` is set, `f` elsewhere.
    fn select(self, m: Self::Mask, t: Self::V, f: Self::V) -> Self::V;
    /// The first `n` (`<= L`) lanes.
    fn first(self, n: usize) -> Self::Mask;
    /// `q * 2^n` for `n` in the low bits of `v`'s lanes (the exponent's round-to-
    /// integer magic sum): `bits(q) + (bits(v) << 23)`.
    fn scale_pow2(self, q: Self::V, v: Self::V) -> Self::V;
    /// The lanes of `l`.
    fn limits(self, l: &[i32; L]) -> Self::Lim;
    /// The lanes where `j < lim`.
    fn below(self, lim: Self::Lim, j: i32) -> Self::Mask;
    /// The maximum lane.
    fn hmax(self, x: Self::V) -> f32;
    /// The sum of the lanes.
    fn hsum(self, x: Self::V) -> f32;
    /// Lane `t` of the result: the sum of the lanes of `a[t]` (a transposing add tree).
    fn hsum_rows(self, a: &[Self::V; L]) -> Self::V;
    /// The lanes as an array.
    #[inline(always)]
    fn to_array(self, x: Self::V) -> [f32; L] {
        let mut a = [0.0; L];
        // SAFETY: `L` values into an `L`-value array.
        unsafe { self.store(a.as_mut_ptr(), x) };
        a
    }
    /// The `L` values at `p`.
    ///
    /// # Safety
    /// `p` readable for `L` values.
    unsafe fn load(self, p: *const f32) -> Self::V;
    /// The first `n` (`<= L`) values at `p`, zeros after (nothing else is read).
    ///
    /// # Safety
    /// `p` readable for `n` values.
    unsafe fn load_n(self, p: *const f32, n: usize) -> Self::V;
    /// The lanes in `m` of the `L` values at `p`, zeros elsewhere (nothing else is read).
    ///
    /// # Safety
    /// `p.add(l)` readable for every lane `l` in `m`.
    unsafe fn load_masked(self, p: *const f32, m: Self::Mask) -> Self::V;
    /// `x` to the `L` values at `p`.
    ///
    /// # Safety
    /// `p` writable for `L` values.
    unsafe fn store(self, p: *mut f32, x: Self::V);
    /// The first `n` (`<= L`) lanes of `x` to `p` (nothing else is written).
    ///
    /// # Safety
    /// `p` writable for `n` values.
    unsafe fn store_n(self, p: *mut f32, x: Self::V, n: usize);
    /// The lanes in `m` of `x` to `p` (nothing else is written).
    ///
    /// # Safety
    /// `p.add(l)` writable for every lane `l` in `m`.
    unsafe fn store_masked(self, p: *mut f32, x: Self::V, m: Self::Mask);
    /// `*p` in every lane.
    ///
    /// # Safety
    /// `p` readable.
    unsafe fn bcast(self, p: *const f32) -> Self::V;
}

/// [`Simd`] methods whose body is one expression of intrinsics, for a level's impl:
/// `fn name(a: T, ..) -> R => expression;`.
macro_rules! intrinsics {
    ($(fn $name:ident($($arg:ident: $ty:ty),*) -> $ret:ty => $body:expr;)+) => {
        $(
            #[inline(always)]
            fn $name(self, $($arg: $ty),*) -> $ret {
                // SAFETY: the token exists only where the CPU implements the level.
                unsafe { $body }
            }
        )+
    };
}
use intrinsics;

/// [`Simd`] methods that access memory under the caller's contract (see each method's
/// `# Safety`) and whose body is one expression of intrinsics, for a level's impl:
/// `unsafe fn name(a: T, ..) -> R => expression;`, doc comments allowed.
macro_rules! memory_intrinsics {
    ($(
        $(#[$m:meta])*
        unsafe fn $name:ident($($arg:ident: $ty:ty),*) $(-> $ret:ty)? => $body:expr;
    )+) => {
        $(
            $(#[$m])*
            #[inline(always)]
            unsafe fn $name(self, $($arg: $ty),*) $(-> $ret)? {
                // SAFETY: the caller's contract (masked-off lanes are not accessed); the
                // token exists only where the CPU implements the level.
                unsafe { $body }
            }
        )+
    };
}
use memory_intrinsics;

/// Portable code compiled for an x86 level: `at_level! { $(#[doc])* vis fn name<const N:
/// usize, ..>(arg: T, ..) { body } }` defines `name::<I: X86Isa, N, ..>(args)`, which asserts
/// that the CPU has level `I` ([`X86::require`](crate::kernels::X86::require)) and runs `body`
/// compiled with that level's target features (`avx512f`; `avx2,fma`). The body calls the
/// portable kernel, whose `#[inline(always)]` loops LLVM then vectorises with the level's
/// 16- or 8-lane registers instead of the SSE2 baseline's 4 lanes. Same bits as the portable
/// code: Rust neither fuses a multiply and an add nor reorders floating-point operations,
/// whatever the target features, so only the vector width changes. For the kernels that are
/// plain loops and whose hand-written form would repeat the portable algorithm.
macro_rules! at_level {
    (
        $(#[$m:meta])*
        $vis:vis fn $name:ident $(<$(const $g:ident: $gt:ty),+>)?
            ($($arg:ident: $ty:ty),* $(,)?) $(-> $ret:ty)? $body:block
    ) => {
        $(#[$m])*
        #[inline]
        $vis fn $name<I: crate::kernels::X86Isa $($(, const $g: $gt)+)?>(
            $($arg: $ty),*
        ) $(-> $ret)? {
            #[target_feature(enable = "avx512f")]
            fn avx512 $(<$(const $g: $gt),+>)? ($($arg: $ty),*) $(-> $ret)? $body
            #[target_feature(enable = "avx2,fma")]
            fn avx2 $(<$(const $g: $gt),+>)? ($($arg: $ty),*) $(-> $ret)? $body
            crate::kernels::X86::<I>::require();
            // SAFETY: `require` asserted that the CPU implements level I, whose target
            // features the chosen function is compiled with.
            unsafe {
                match I::LEVEL {
                    crate::kernels::cpu::X86Level::Avx2 => avx2 $(::<$($g),+>)? ($($arg),*),
                    crate::kernels::cpu::X86Level::Avx512 => avx512 $(::<$($g),+>)? ($($arg),*),
                }
            }
        }
    };
}
pub(crate) use at_level;
