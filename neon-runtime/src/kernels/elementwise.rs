//! Elementwise kernels: sums and products of equal-length slices (residuals), scalar scale and
//! scale-and-shift, and per-channel broadcasts (bias add, layer scale, fused residual with
//! layer scale) over channel-first `[channels, frames]` or frame-major `[frames, channels]`
//! data.
//!
//! Results are those of IEEE f32 arithmetic, one rounding per operation, except where a
//! kernel computes `a * b + c`: NEON fuses it (`fmla`, one rounding) and the portable code
//! rounds twice, so those results may differ by 1 ulp between the backends
//! ([`ElementwiseKernels::scale_shift`], [`ElementwiseKernels::add_scaled_channels_channel_first`],
//! [`ElementwiseKernels::add_scaled_channels_frame_major`]). Everything else is bitwise
//! identical across backends.
//!
//! All kernels accept any length, including 0 (nothing to do) and lengths that are not a
//! multiple of the vector width.

use super::activation::portable_map;
use super::{BackendType, Portable, X86Isa, X86};

/// Elementwise kernels over flat `f32` slices.
///
/// Per-channel kernels take the geometry explicitly: `x` is `[channels, frames]` (channel
/// first, row `c` = channel `c`) or `[frames, channels]` (frame major, row `t` = frame `t`),
/// row-major, `x.len() == channels * frames`, and the per-channel vector has `channels`
/// elements.
pub trait ElementwiseKernels: BackendType {
    /// `out[i] = a[i] + b[i]`.
    ///
    /// # Panics
    /// When the three lengths differ.
    fn add(a: &[f32], b: &[f32], out: &mut [f32]) {
        portable_zip(a, b, out, |x, y| x + y)
    }
    /// `acc[i] += b[i]` (residual add in place).
    ///
    /// # Panics
    /// When the lengths differ.
    fn add_assign(acc: &mut [f32], b: &[f32]) {
        portable_zip_assign(acc, b, |x, y| x + y)
    }
    /// `out[i] = a[i] * b[i]`.
    ///
    /// # Panics
    /// When the three lengths differ.
    fn mul(a: &[f32], b: &[f32], out: &mut [f32]) {
        portable_zip(a, b, out, |x, y| x * y)
    }
    /// `acc[i] *= b[i]`.
    ///
    /// # Panics
    /// When the lengths differ.
    fn mul_assign(acc: &mut [f32], b: &[f32]) {
        portable_zip_assign(acc, b, |x, y| x * y)
    }

    /// `x[i] *= s`.
    fn scale(x: &mut [f32], s: f32) {
        portable_map(x, |v| v * s)
    }
    /// `y[i] = x[i] * s`.
    ///
    /// # Panics
    /// When `x.len() != y.len()`.
    fn scale_to(x: &[f32], y: &mut [f32], s: f32) {
        portable_map_to(x, y, |v| v * s)
    }
    /// `x[i] = x[i] * s + b` (fused on NEON).
    fn scale_shift(x: &mut [f32], s: f32, b: f32) {
        portable_map(x, |v| v * s + b)
    }
    /// `y[i] = x[i] * s + b` (fused on NEON).
    ///
    /// # Panics
    /// When `x.len() != y.len()`.
    fn scale_shift_to(x: &[f32], y: &mut [f32], s: f32, b: f32) {
        portable_map_to(x, y, |v| v * s + b)
    }

    /// Bias per channel, channel first: `x[c, t] += bias[c]` for `x` = `[channels, frames]`.
    ///
    /// # Panics
    /// When `x.len() != channels * frames` or `bias.len() != channels`.
    fn add_bias_channel_first(x: &mut [f32], bias: &[f32], channels: usize, frames: usize) {
        check_geometry("add_bias_channel_first", x.len(), channels, frames, bias.len(), channels);
        if frames == 0 {
            return;
        }
        for (row, &b) in x.chunks_exact_mut(frames).zip(bias) {
            portable_map(row, |v| v + b);
        }
    }
    /// Bias per channel, frame major: `x[t, c] += bias[c]` for `x` = `[frames, channels]`.
    ///
    /// # Panics
    /// When `x.len() != frames * channels` or `bias.len() != channels`.
    fn add_bias_frame_major(x: &mut [f32], bias: &[f32], frames: usize, channels: usize) {
        check_geometry("add_bias_frame_major", x.len(), frames, channels, bias.len(), channels);
        if channels == 0 {
            return;
        }
        for row in x.chunks_exact_mut(channels) {
            portable_zip_assign(row, bias, |v, b| v + b);
        }
    }
    /// Layer scale, channel first: `x[c, t] *= scale[c]` for `x` = `[channels, frames]`.
    ///
    /// # Panics
    /// When `x.len() != channels * frames` or `scale.len() != channels`.
    fn scale_channels_channel_first(x: &mut [f32], scale: &[f32], channels: usize, frames: usize) {
        check_geometry(
            "scale_channels_channel_first",
            x.len(),
            channels,
            frames,
            scale.len(),
            channels,
        );
        if frames == 0 {
            return;
        }
        for (row, &s) in x.chunks_exact_mut(frames).zip(scale) {
            portable_map(row, |v| v * s);
        }
    }
    /// Layer scale, frame major: `x[t, c] *= scale[c]` for `x` = `[frames, channels]`.
    ///
    /// # Panics
    /// When `x.len() != frames * channels` or `scale.len() != channels`.
    fn scale_channels_frame_major(x: &mut [f32], scale: &[f32], frames: usize, channels: usize) {
        check_geometry(
            "scale_channels_frame_major",
            x.len(),
            frames,
            channels,
            scale.len(),
            channels,
        );
        if channels == 0 {
            return;
        }
        for row in x.chunks_exact_mut(channels) {
            portable_zip_assign(row, scale, |v, s| v * s);
        }
    }
    /// Residual with layer scale, channel first: `acc[c, t] += scale[c] * x[c, t]`
    /// (`[channels, frames]`; fused on NEON).
    ///
    /// # Panics
    /// When `acc.len()` or `x.len()` is not `channels * frames`, or
    /// `scale.len() != channels`.
    fn add_scaled_channels_channel_first(
        acc: &mut [f32],
        x: &[f32],
        scale: &[f32],
        channels: usize,
        frames: usize,
    ) {
        let what = "add_scaled_channels_channel_first";
        check_geometry(what, acc.len(), channels, frames, scale.len(), channels);
        assert_eq!(x.len(), acc.len(), "{what}: x and acc lengths differ");
        if frames == 0 {
            return;
        }
        for ((a, xr), &s) in acc.chunks_exact_mut(frames).zip(x.chunks_exact(frames)).zip(scale) {
            portable_zip_assign(a, xr, |a, v| s * v + a);
        }
    }
    /// Residual with layer scale, frame major: `acc[t, c] += scale[c] * x[t, c]`
    /// (`[frames, channels]`; fused on NEON).
    ///
    /// # Panics
    /// When `acc.len()` or `x.len()` is not `frames * channels`, or
    /// `scale.len() != channels`.
    fn add_scaled_channels_frame_major(
        acc: &mut [f32],
        x: &[f32],
        scale: &[f32],
        frames: usize,
        channels: usize,
    ) {
        let what = "add_scaled_channels_frame_major";
        check_geometry(what, acc.len(), frames, channels, scale.len(), channels);
        assert_eq!(x.len(), acc.len(), "{what}: x and acc lengths differ");
        if channels == 0 {
            return;
        }
        for (a, xr) in acc.chunks_exact_mut(channels).zip(x.chunks_exact(channels)) {
            let mut ac = a.chunks_exact_mut(LANES);
            let mut xc = xr.chunks_exact(LANES);
            let mut sc = scale.chunks_exact(LANES);
            for ((a, v), s) in (&mut ac).zip(&mut xc).zip(&mut sc) {
                for i in 0..LANES {
                    a[i] += s[i] * v[i];
                }
            }
            let rest = ac.into_remainder().iter_mut().zip(xc.remainder()).zip(sc.remainder());
            for ((a, v), s) in rest {
                *a += s * v;
            }
        }
    }
}

/// Checks a `[rows, cols]` geometry against the data and per-row/per-column vector lengths.
fn check_geometry(what: &str, len: usize, rows: usize, cols: usize, vec_len: usize, per: usize) {
    assert_eq!(rows.checked_mul(cols), Some(len), "{what}: data length is not rows * cols");
    assert_eq!(vec_len, per, "{what}: per-channel vector length is not channels");
}

/// Width of the fixed inner loops of the portable code (see `activation.rs`).
const LANES: usize = 8;

/// `out[i] = f(a[i], b[i])`, LANES-wide chunks then the scalar tail.
#[inline(always)]
fn portable_zip(a: &[f32], b: &[f32], out: &mut [f32], f: impl Fn(f32, f32) -> f32) {
    assert!(a.len() == b.len() && a.len() == out.len(), "elementwise: lengths differ");
    let mut ac = a.chunks_exact(LANES);
    let mut bc = b.chunks_exact(LANES);
    let mut oc = out.chunks_exact_mut(LANES);
    for ((x, y), o) in (&mut ac).zip(&mut bc).zip(&mut oc) {
        for i in 0..LANES {
            o[i] = f(x[i], y[i]);
        }
    }
    for ((x, y), o) in ac.remainder().iter().zip(bc.remainder()).zip(oc.into_remainder()) {
        *o = f(*x, *y);
    }
}

/// `acc[i] = f(acc[i], b[i])`.
#[inline(always)]
fn portable_zip_assign(acc: &mut [f32], b: &[f32], f: impl Fn(f32, f32) -> f32) {
    assert_eq!(acc.len(), b.len(), "elementwise: lengths differ");
    let mut ac = acc.chunks_exact_mut(LANES);
    let mut bc = b.chunks_exact(LANES);
    for (x, y) in (&mut ac).zip(&mut bc) {
        for i in 0..LANES {
            x[i] = f(x[i], y[i]);
        }
    }
    for (x, y) in ac.into_remainder().iter_mut().zip(bc.remainder()) {
        *x = f(*x, *y);
    }
}

/// `y[i] = f(x[i])` (out of place map, portable).
#[inline(always)]
fn portable_map_to(x: &[f32], y: &mut [f32], f: impl Fn(f32) -> f32) {
    super::activation::portable_map_to(x, y, f)
}

impl ElementwiseKernels for Portable {}

impl<I: X86Isa> ElementwiseKernels for X86<I> {}

/// NEON drivers for two-input maps (16 floats per step, then vectors, then a partial vector
/// through a stack buffer).
#[cfg(all(target_arch = "aarch64", feature = "neon"))]
mod neon {
    use core::arch::aarch64::*;

    /// Loads `x.len() < 4` values into a zero-padded vector.
    #[inline(always)]
    fn load_partial(x: &[f32]) -> float32x4_t {
        debug_assert!(x.len() < 4);
        let mut buf = [0.0f32; 4];
        buf[..x.len()].copy_from_slice(x);
        // SAFETY: `buf` holds 4 f32; NEON is statically enabled (see activation.rs).
        unsafe { vld1q_f32(buf.as_ptr()) }
    }

    /// Stores the first `y.len() < 4` lanes of `v` into `y`.
    #[inline(always)]
    fn store_partial(y: &mut [f32], v: float32x4_t) {
        debug_assert!(y.len() < 4);
        let mut buf = [0.0f32; 4];
        // SAFETY: `buf` holds 4 f32; NEON is statically enabled.
        unsafe { vst1q_f32(buf.as_mut_ptr(), v) };
        let n = y.len();
        y.copy_from_slice(&buf[..n]);
    }

    /// `out[i] = f(a[i], b[i])`.
    #[inline(always)]
    pub(super) fn zip(
        a: &[f32],
        b: &[f32],
        out: &mut [f32],
        f: impl Fn(float32x4_t, float32x4_t) -> float32x4_t,
    ) {
        assert!(a.len() == b.len() && a.len() == out.len(), "elementwise: lengths differ");
        let mut a16 = a.chunks_exact(16);
        let mut b16 = b.chunks_exact(16);
        let mut o16 = out.chunks_exact_mut(16);
        for ((x, y), o) in (&mut a16).zip(&mut b16).zip(&mut o16) {
            // SAFETY: the three chunks have exactly 16 elements; NEON statically enabled.
            unsafe {
                let u = vld1q_f32_x4(x.as_ptr());
                let v = vld1q_f32_x4(y.as_ptr());
                let r = float32x4x4_t(f(u.0, v.0), f(u.1, v.1), f(u.2, v.2), f(u.3, v.3));
                vst1q_f32_x4(o.as_mut_ptr(), r);
            }
        }
        let mut a4 = a16.remainder().chunks_exact(4);
        let mut b4 = b16.remainder().chunks_exact(4);
        let mut o4 = o16.into_remainder().chunks_exact_mut(4);
        for ((x, y), o) in (&mut a4).zip(&mut b4).zip(&mut o4) {
            // SAFETY: the three chunks have exactly 4 elements; NEON statically enabled.
            unsafe { vst1q_f32(o.as_mut_ptr(), f(vld1q_f32(x.as_ptr()), vld1q_f32(y.as_ptr()))) };
        }
        let (ar, br, or) = (a4.remainder(), b4.remainder(), o4.into_remainder());
        if !ar.is_empty() {
            store_partial(or, f(load_partial(ar), load_partial(br)));
        }
    }

    /// `acc[i] = f(acc[i], b[i])`.
    #[inline(always)]
    pub(super) fn zip_assign(
        acc: &mut [f32],
        b: &[f32],
        f: impl Fn(float32x4_t, float32x4_t) -> float32x4_t,
    ) {
        assert_eq!(acc.len(), b.len(), "elementwise: lengths differ");
        let mut a16 = acc.chunks_exact_mut(16);
        let mut b16 = b.chunks_exact(16);
        for (x, y) in (&mut a16).zip(&mut b16) {
            // SAFETY: both chunks have exactly 16 elements; NEON statically enabled.
            unsafe {
                let u = vld1q_f32_x4(x.as_ptr());
                let v = vld1q_f32_x4(y.as_ptr());
                let r = float32x4x4_t(f(u.0, v.0), f(u.1, v.1), f(u.2, v.2), f(u.3, v.3));
                vst1q_f32_x4(x.as_mut_ptr(), r);
            }
        }
        let mut a4 = a16.into_remainder().chunks_exact_mut(4);
        let mut b4 = b16.remainder().chunks_exact(4);
        for (x, y) in (&mut a4).zip(&mut b4) {
            // SAFETY: both chunks have exactly 4 elements; NEON statically enabled.
            unsafe { vst1q_f32(x.as_mut_ptr(), f(vld1q_f32(x.as_ptr()), vld1q_f32(y.as_ptr()))) };
        }
        let (ar, br) = (a4.into_remainder(), b4.remainder());
        if !ar.is_empty() {
            let r = f(load_partial(ar), load_partial(br));
            store_partial(ar, r);
        }
    }

    /// `acc[i] = f(acc[i], x[i], s[i])` (three inputs, one of them updated).
    #[inline(always)]
    pub(super) fn zip3_assign(
        acc: &mut [f32],
        x: &[f32],
        s: &[f32],
        f: impl Fn(float32x4_t, float32x4_t, float32x4_t) -> float32x4_t,
    ) {
        assert!(acc.len() == x.len() && acc.len() == s.len(), "elementwise: lengths differ");
        let mut a16 = acc.chunks_exact_mut(16);
        let mut x16 = x.chunks_exact(16);
        let mut s16 = s.chunks_exact(16);
        for ((a, u), w) in (&mut a16).zip(&mut x16).zip(&mut s16) {
            // SAFETY: the three chunks have exactly 16 elements; NEON statically enabled.
            unsafe {
                let p = vld1q_f32_x4(a.as_ptr());
                let q = vld1q_f32_x4(u.as_ptr());
                let r = vld1q_f32_x4(w.as_ptr());
                let o = float32x4x4_t(
                    f(p.0, q.0, r.0),
                    f(p.1, q.1, r.1),
                    f(p.2, q.2, r.2),
                    f(p.3, q.3, r.3),
                );
                vst1q_f32_x4(a.as_mut_ptr(), o);
            }
        }
        let mut a4 = a16.into_remainder().chunks_exact_mut(4);
        let mut x4 = x16.remainder().chunks_exact(4);
        let mut s4 = s16.remainder().chunks_exact(4);
        for ((a, u), w) in (&mut a4).zip(&mut x4).zip(&mut s4) {
            // SAFETY: the three chunks have exactly 4 elements; NEON statically enabled.
            unsafe {
                let r = f(vld1q_f32(a.as_ptr()), vld1q_f32(u.as_ptr()), vld1q_f32(w.as_ptr()));
                vst1q_f32(a.as_mut_ptr(), r);
            }
        }
        let (ar, xr, sr) = (a4.into_remainder(), x4.remainder(), s4.remainder());
        if !ar.is_empty() {
            let r = f(load_partial(ar), load_partial(xr), load_partial(sr));
            store_partial(ar, r);
        }
    }
}

#[cfg(all(target_arch = "aarch64", feature = "neon"))]
mod neon_impl {
    use super::super::activation::neon::{map, map_to};
    use super::super::Neon;
    use super::neon::{zip, zip3_assign, zip_assign};
    use super::{check_geometry, ElementwiseKernels};
    use core::arch::aarch64::*;

    // Every closure below is register-only NEON arithmetic; NEON is statically enabled
    // (compile-time check in activation.rs), which is what the SAFETY comments refer to.

    impl ElementwiseKernels for Neon {
        fn add(a: &[f32], b: &[f32], out: &mut [f32]) {
            // SAFETY: register-only NEON arithmetic, NEON statically enabled.
            zip(a, b, out, |x, y| unsafe { vaddq_f32(x, y) })
        }
        fn add_assign(acc: &mut [f32], b: &[f32]) {
            // SAFETY: register-only NEON arithmetic, NEON statically enabled.
            zip_assign(acc, b, |x, y| unsafe { vaddq_f32(x, y) })
        }
        fn mul(a: &[f32], b: &[f32], out: &mut [f32]) {
            // SAFETY: register-only NEON arithmetic, NEON statically enabled.
            zip(a, b, out, |x, y| unsafe { vmulq_f32(x, y) })
        }
        fn mul_assign(acc: &mut [f32], b: &[f32]) {
            // SAFETY: register-only NEON arithmetic, NEON statically enabled.
            zip_assign(acc, b, |x, y| unsafe { vmulq_f32(x, y) })
        }
        fn scale(x: &mut [f32], s: f32) {
            // SAFETY: register-only NEON arithmetic, NEON statically enabled.
            map(x, |v| unsafe { vmulq_n_f32(v, s) })
        }
        fn scale_to(x: &[f32], y: &mut [f32], s: f32) {
            // SAFETY: register-only NEON arithmetic, NEON statically enabled.
            map_to(x, y, |v| unsafe { vmulq_n_f32(v, s) })
        }
        fn scale_shift(x: &mut [f32], s: f32, b: f32) {
            // SAFETY: register-only NEON arithmetic, NEON statically enabled.
            map(x, |v| unsafe { vfmaq_n_f32(vdupq_n_f32(b), v, s) })
        }
        fn scale_shift_to(x: &[f32], y: &mut [f32], s: f32, b: f32) {
            // SAFETY: register-only NEON arithmetic, NEON statically enabled.
            map_to(x, y, |v| unsafe { vfmaq_n_f32(vdupq_n_f32(b), v, s) })
        }
        fn add_bias_channel_first(x: &mut [f32], bias: &[f32], channels: usize, frames: usize) {
            check_geometry(
                "add_bias_channel_first",
                x.len(),
                channels,
                frames,
                bias.len(),
                channels,
            );
            if frames == 0 {
                return;
            }
            for (row, &b) in x.chunks_exact_mut(frames).zip(bias) {
                // SAFETY: register-only NEON arithmetic, NEON statically enabled.
                map(row, |v| unsafe { vaddq_f32(v, vdupq_n_f32(b)) });
            }
        }
        fn add_bias_frame_major(x: &mut [f32], bias: &[f32], frames: usize, channels: usize) {
            check_geometry("add_bias_frame_major", x.len(), frames, channels, bias.len(), channels);
            if channels == 0 {
                return;
            }
            for row in x.chunks_exact_mut(channels) {
                // SAFETY: register-only NEON arithmetic, NEON statically enabled.
                zip_assign(row, bias, |v, b| unsafe { vaddq_f32(v, b) });
            }
        }
        fn scale_channels_channel_first(
            x: &mut [f32],
            scale: &[f32],
            channels: usize,
            frames: usize,
        ) {
            let what = "scale_channels_channel_first";
            check_geometry(what, x.len(), channels, frames, scale.len(), channels);
            if frames == 0 {
                return;
            }
            for (row, &s) in x.chunks_exact_mut(frames).zip(scale) {
                // SAFETY: register-only NEON arithmetic, NEON statically enabled.
                map(row, |v| unsafe { vmulq_n_f32(v, s) });
            }
        }
        fn scale_channels_frame_major(
            x: &mut [f32],
            scale: &[f32],
            frames: usize,
            channels: usize,
        ) {
            let what = "scale_channels_frame_major";
            check_geometry(what, x.len(), frames, channels, scale.len(), channels);
            if channels == 0 {
                return;
            }
            for row in x.chunks_exact_mut(channels) {
                // SAFETY: register-only NEON arithmetic, NEON statically enabled.
                zip_assign(row, scale, |v, s| unsafe { vmulq_f32(v, s) });
            }
        }
        fn add_scaled_channels_channel_first(
            acc: &mut [f32],
            x: &[f32],
            scale: &[f32],
            channels: usize,
            frames: usize,
        ) {
            let what = "add_scaled_channels_channel_first";
            check_geometry(what, acc.len(), channels, frames, scale.len(), channels);
            assert_eq!(x.len(), acc.len(), "{what}: x and acc lengths differ");
            if frames == 0 {
                return;
            }
            let rows = acc.chunks_exact_mut(frames).zip(x.chunks_exact(frames)).zip(scale);
            for ((a, xr), &s) in rows {
                // SAFETY: register-only NEON arithmetic, NEON statically enabled.
                zip_assign(a, xr, |a, v| unsafe { vfmaq_n_f32(a, v, s) });
            }
        }
        fn add_scaled_channels_frame_major(
            acc: &mut [f32],
            x: &[f32],
            scale: &[f32],
            frames: usize,
            channels: usize,
        ) {
            let what = "add_scaled_channels_frame_major";
            check_geometry(what, acc.len(), frames, channels, scale.len(), channels);
            assert_eq!(x.len(), acc.len(), "{what}: x and acc lengths differ");
            if channels == 0 {
                return;
            }
            for (a, xr) in acc.chunks_exact_mut(channels).zip(x.chunks_exact(channels)) {
                // SAFETY: register-only NEON arithmetic, NEON statically enabled.
                zip3_assign(a, xr, scale, |a, v, s| unsafe { vfmaq_f32(a, v, s) });
            }
        }
    }
}
