//! The x86-64 activation kernels (`X86<I>`): GELU (erf form) and tanh, 16 lanes at a time
//! with AVX-512F, 8 with AVX2 and FMA: one body generic over the level's vectors
//! ([`Simd`](crate::kernels::x86_simd::Simd), the layer the attention kernel uses too).
//! Every other function runs the portable code.
//!
//! The algorithm and the constants are the portable ones (see the [family docs](super));
//! as on NEON, the multiply-adds are fused (one rounding), so the results differ from the
//! portable ones by a few ulps at most (the family's accuracy table holds for every
//! backend, and the tests check each level against the f64 references). Every lane runs
//! the same operations at both levels, so they give the same bits; each element is
//! computed by the same instructions wherever it sits in the slice (full vectors and the
//! masked last one alike), so any split of a slice gives the same bits.
//!
//! The AVX-512 level runs 16 lanes rather than the AVX2 body, even on cores whose `zmm`
//! operations take two halves (Zen 4): the polynomials are chains of dependent FMAs, bound
//! by latency, so the wider vector halves the chains for the same work, which unrolling
//! more `ymm` vectors does not (`BENCHMARKS.md`, "Host: threads (x86-64)", GELU).
//!
//! Why these two: they are the transcendental activations on hot paths of the host models.
//! GELU: the sanoTTS decoder's ConvNeXt blocks (48,000 values per second of audio per
//! block), whose portable form, vectorised by LLVM for the SSE2 baseline (4 lanes, no FMA,
//! selects as and/andnot/or), is a sizeable part of the decoder's time (`BENCHMARKS.md`,
//! "Host: sanoTTS decoder (x86-64)"); and Moonshine's MLPs and stem. Tanh: Moonshine's
//! first conv (416 x 2489 values for 10 s of audio; "Host: threads (x86-64)").

use super::ActivationKernels;
#[cfg(neon_x86)]
use super::{Activation, MapArgs};
use crate::kernels::{X86Isa, X86};

impl<I: X86Isa> ActivationKernels for X86<I> {
    #[cfg(neon_x86)]
    fn activate_unchecked(f: Activation, io: MapArgs<'_>) {
        use crate::kernels::cpu::X86Level;
        Self::require();
        let form = match f {
            Activation::GeluErf => forms::GELU_ERF,
            Activation::Tanh => forms::TANH,
            _ => return super::portable::activate(f, io),
        };
        // The hook is a safe method: the raw-pointer loops below write as many values as
        // they read, so a mismatch stops here (the entry points check it before).
        if let MapArgs::To(x, y) = &io {
            assert_eq!(x.len(), y.len(), "activation: input and output lengths differ");
        }
        // SAFETY: the CPU implements the level (`require`); `To` slices have equal lengths
        // (asserted above).
        unsafe {
            match I::LEVEL {
                X86Level::Avx2 => forms::map_avx2(form, io),
                X86Level::Avx512 => forms::map_avx512(form, io),
            }
        }
    }
}

#[cfg(neon_x86)]
mod forms {
    use super::super::consts::*;
    use super::MapArgs;
    use crate::kernels::x86_simd::{Simd, Ymm, Zmm};

    /// `r + r^2 P(r)` (`portable::expm1_poly`).
    #[inline(always)]
    fn expm1_poly<const L: usize, S: Simd<L>>(s: S, r: S::V) -> S::V {
        let mut p = s.splat(EXPM1_P[4]);
        for &c in EXPM1_P[..4].iter().rev() {
            p = s.fma(p, r, s.splat(c));
        }
        s.fma(s.mul(r, r), p, r)
    }

    /// `(t, p)`: `t = 2^n`, `p = expm1(r)`, `x = n ln2 + r` (`portable::exp_parts`).
    #[inline(always)]
    fn exp_parts<const L: usize, S: Simd<L>>(s: S, x: S::V) -> (S::V, S::V) {
        let magic = s.splat(ROUND_MAGIC);
        let v = s.fma(x, s.splat(LOG2E), magic);
        let n = s.sub(v, magic);
        let r = s.fnma(n, s.splat(LN2_HI), x);
        let r = s.fnma(n, s.splat(LN2_LO), r);
        // 2^n from the exponent bits: bits(1.0) + (bits(v) << 23), as n << 23 == bits(v) << 23.
        (s.scale_pow2(s.splat(1.0), v), expm1_poly(s, r))
    }

    /// GELU, erf form (`portable::gelu_erf`): `(x/2) e` for `x < 0`, `x - (x/2) e` for
    /// `x >= 0`, `e = exp(-a H(a)) = erfc(a)`, `a = |x| / sqrt 2`.
    #[inline(always)]
    fn gelu_erf<const L: usize, S: Simd<L>>(s: S, x: S::V) -> S::V {
        let a = s.mul(s.abs(x), s.splat(FRAC_1_SQRT_2));
        let mut h = s.splat(ERF_H[10]);
        for &c in ERF_H[..10].iter().rev() {
            h = s.fma(h, a, s.splat(c));
        }
        // -a H(a): the product with its sign flipped (exact).
        let (t, p) = exp_parts(s, s.neg(s.mul(a, h)));
        let e = s.fma(t, p, t);
        // NaN `a` fails the (ordered) compare: `e` keeps its NaN, as in the portable select.
        let e = s.select(s.le(s.splat(ERF_SAT), a), s.zero(), e);
        // Clamp of the x / 2 factor, NaN kept: `vmaxps` / `vminps` return their second
        // operand when either is NaN, so `x` goes second.
        let xc = s.max(s.splat(-GELU_ERF_XMAX), x);
        let xc = s.min(s.splat(GELU_ERF_XMAX), xc);
        let hx = s.mul(xc, s.splat(0.5));
        let neg = s.mul(hx, e);
        let pos = s.fnma(hx, e, x);
        // x < 0 (ordered: NaN takes `pos`, which is NaN, as the portable `else` branch).
        s.select(s.lt(x, s.zero()), neg, pos)
    }

    /// `tanh(x)` (`portable::tanh`): `e / (e + 2)` with `e = expm1(2|x|)`, the sign of `x`.
    #[inline(always)]
    fn tanh<const L: usize, S: Simd<L>>(s: S, x: S::V) -> S::V {
        let a = s.abs(x);
        // `vminps` returns its second operand when either is NaN: NaN stays NaN.
        let z = s.min(s.splat(TANH_ZMAX), s.add(a, a));
        let (t, p) = exp_parts(s, z);
        let e = s.fma(t, p, s.sub(t, s.splat(1.0)));
        s.copysign(s.div(e, s.add(e, s.splat(2.0))), x)
    }

    /// [`gelu_erf`], the form of a [`map`] (a constant, so that each form's loop is its own
    /// code).
    pub(super) const GELU_ERF: u8 = 0;
    /// [`tanh`].
    pub(super) const TANH: u8 = 1;

    /// Form `F` of one vector.
    #[inline(always)]
    fn form<const L: usize, S: Simd<L>, const F: u8>(s: S, x: S::V) -> S::V {
        match F {
            TANH => tanh(s, x),
            _ => gelu_erf(s, x),
        }
    }

    /// `y[i] = f(x[i])` for `i < n`, `f` form `F`: 4 vectors per step (independent chains),
    /// then single vectors, then one masked vector (masked loads and stores touch no memory
    /// outside the mask).
    ///
    /// # Safety
    /// `x` readable and `y` writable for `n` values (they may be equal).
    #[inline(always)]
    unsafe fn map_n<const L: usize, S: Simd<L>, const F: u8>(
        s: S,
        x: *const f32,
        y: *mut f32,
        n: usize,
    ) {
        let mut i = 0;
        // SAFETY (the three loops): every access is at an index < n, per the contract.
        unsafe {
            while i + 4 * L <= n {
                let (x, y) = (x.add(i), y.add(i));
                let v0 = form::<L, S, F>(s, s.load(x));
                let v1 = form::<L, S, F>(s, s.load(x.add(L)));
                let v2 = form::<L, S, F>(s, s.load(x.add(2 * L)));
                let v3 = form::<L, S, F>(s, s.load(x.add(3 * L)));
                s.store(y, v0);
                s.store(y.add(L), v1);
                s.store(y.add(2 * L), v2);
                s.store(y.add(3 * L), v3);
                i += 4 * L;
            }
            while i + L <= n {
                s.store(y.add(i), form::<L, S, F>(s, s.load(x.add(i))));
                i += L;
            }
            if i < n {
                let r = form::<L, S, F>(s, s.load_n(x.add(i), n - i));
                s.store_n(y.add(i), r, n - i);
            }
        }
    }

    /// Form `F` over `io` at level `S`.
    ///
    /// # Safety
    /// The slices hold the values read and written (equal lengths for `To`, checked by the
    /// entry point).
    #[inline(always)]
    unsafe fn map_io<const L: usize, S: Simd<L>, const F: u8>(s: S, io: MapArgs<'_>) {
        // SAFETY: the contract.
        unsafe {
            match io {
                MapArgs::InPlace(x) => {
                    let p = x.as_mut_ptr();
                    map_n::<L, S, F>(s, p, p, x.len())
                }
                MapArgs::To(x, y) => map_n::<L, S, F>(s, x.as_ptr(), y.as_mut_ptr(), x.len()),
            }
        }
    }

    /// Form `form` ([`GELU_ERF`] or [`TANH`]) over `io` at level `S`.
    ///
    /// # Safety
    /// As [`map_io`].
    #[inline(always)]
    unsafe fn map<const L: usize, S: Simd<L>>(s: S, form: u8, io: MapArgs<'_>) {
        // SAFETY: the contract.
        unsafe {
            match form {
                TANH => map_io::<L, S, TANH>(s, io),
                _ => map_io::<L, S, GELU_ERF>(s, io),
            }
        }
    }

    /// Form `form` over `io`, 8 lanes.
    ///
    /// # Safety
    /// AVX2 + FMA; the slices as for [`map_io`].
    #[target_feature(enable = "avx2,fma")]
    pub(super) unsafe fn map_avx2(form: u8, io: MapArgs<'_>) {
        // SAFETY: the CPU implements AVX2 and FMA (contract); the rest is the caller's.
        unsafe { map(Ymm::new(), form, io) }
    }

    /// Form `form` over `io`, 16 lanes.
    ///
    /// # Safety
    /// AVX-512F; the slices as for [`map_io`].
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn map_avx512(form: u8, io: MapArgs<'_>) {
        // SAFETY: the CPU implements AVX-512F (contract); the rest is the caller's.
        unsafe { map(Zmm::new(), form, io) }
    }
}
