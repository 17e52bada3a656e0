//! Elementwise kernels: sums and products of equal-length slices (residuals), scalar scale and
//! scale-and-shift, and per-channel broadcasts (bias add, layer scale, scale and shift,
//! fused residual with layer scale) over channel-first `[channels, frames]` or frame-major
//! `[frames, channels]` data.
//!
//! Results are those of IEEE f32 arithmetic, one rounding per operation, except where a
//! kernel computes `a * b + c`: NEON fuses it (`fmla`, one rounding) and the portable code
//! rounds twice, so those results may differ by 1 ulp between the backends
//! ([`ElementwiseKernels::scale_shift`], the per-channel `scale_shift_channels_*`,
//! [`ElementwiseKernels::add_scaled_channels_channel_first`],
//! [`ElementwiseKernels::add_scaled_channels_frame_major`]). Everything else is bitwise
//! identical across backends. `X86<I>` runs the portable code.
//!
//! All kernels accept any length, including 0 (nothing to do) and lengths that are not a
//! multiple of the vector width.
//!
//! Files: this one holds the trait (entry points: checks, empty shapes, the walk over the
//! rows of the per-channel kernels) and its hooks; `portable.rs` and `neon.rs` the slice
//! drivers of each backend.

use super::activation::ACTIVATION_BLOCK;
use super::activation::{portable_map, portable_map_args, MapArgs};
use super::parallel::{row_blocks, Parallel, Rows};
use super::{BackendType, Portable, X86Isa, X86};
use crate::error::Error;

#[cfg(all(target_arch = "aarch64", feature = "neon"))]
mod neon;
mod portable;

/// The slices of a two-input elementwise kernel: `acc[i] = f(acc[i], b[i])` in place, or
/// `out[i] = f(a[i], b[i])` (equal lengths).
#[derive(Debug)]
pub enum ZipArgs<'a> {
    /// `acc[i] = f(acc[i], b[i])`: `(acc, b)`.
    Assign(&'a mut [f32], &'a [f32]),
    /// `out[i] = f(a[i], b[i])`: `(a, b, out)`.
    To(&'a [f32], &'a [f32], &'a mut [f32]),
}

/// Elementwise kernels over flat `f32` slices.
///
/// Per-channel kernels take the geometry explicitly: `x` is `[channels, frames]` (channel
/// first, row `c` = channel `c`) or `[frames, channels]` (frame major, row `t` = frame `t`),
/// row-major, `x.len() == channels * frames`, and the per-channel vector has `channels`
/// elements.
///
/// The named kernels are the entry points: they check the lengths, return at once when there
/// is nothing to do, walk the rows of the per-channel kernels, and call the hooks (the
/// `*_unchecked` methods: slice kernels over at least one element, lengths checked).
/// Backends override hooks only, never an entry point; the hooks' defaults are the portable
/// code.
pub trait ElementwiseKernels: BackendType {
    /// `out[i] = a[i] + b[i]`.
    ///
    /// # Panics
    /// When the three lengths differ.
    fn add(a: &[f32], b: &[f32], out: &mut [f32]) {
        zip_checked(ZipArgs::To(a, b, out), Self::add_unchecked)
    }
    /// `acc[i] += b[i]` (residual add in place).
    ///
    /// # Panics
    /// When the lengths differ.
    fn add_assign(acc: &mut [f32], b: &[f32]) {
        zip_checked(ZipArgs::Assign(acc, b), Self::add_unchecked)
    }
    /// `out[i] = a[i] * b[i]`.
    ///
    /// # Panics
    /// When the three lengths differ.
    fn mul(a: &[f32], b: &[f32], out: &mut [f32]) {
        zip_checked(ZipArgs::To(a, b, out), Self::mul_unchecked)
    }
    /// `acc[i] *= b[i]`.
    ///
    /// # Panics
    /// When the lengths differ.
    fn mul_assign(acc: &mut [f32], b: &[f32]) {
        zip_checked(ZipArgs::Assign(acc, b), Self::mul_unchecked)
    }

    /// [`add`](Self::add) on `par`, in blocks of [`ACTIVATION_BLOCK`] elements (each
    /// element alone: the same bits for any context).
    ///
    /// # Errors
    /// The context's ([`Parallel::dispatch`]); `out` is then partly written.
    ///
    /// # Panics
    /// When the three lengths differ, before any task runs.
    fn add_in(par: &dyn Parallel, a: &[f32], b: &[f32], out: &mut [f32]) -> Result<(), Error> {
        zip_to_in(par, (a, b, out), Self::add)
    }
    /// [`add_assign`](Self::add_assign) on `par`, split as [`add_in`](Self::add_in).
    ///
    /// # Errors
    /// The context's ([`Parallel::dispatch`]); `acc` is then partly updated.
    ///
    /// # Panics
    /// When the lengths differ, before any task runs.
    fn add_assign_in(par: &dyn Parallel, acc: &mut [f32], b: &[f32]) -> Result<(), Error> {
        zip_assign_in(par, (acc, b), Self::add_assign)
    }
    /// [`mul`](Self::mul) on `par`, split as [`add_in`](Self::add_in).
    ///
    /// # Errors
    /// The context's ([`Parallel::dispatch`]); `out` is then partly written.
    ///
    /// # Panics
    /// When the three lengths differ, before any task runs.
    fn mul_in(par: &dyn Parallel, a: &[f32], b: &[f32], out: &mut [f32]) -> Result<(), Error> {
        zip_to_in(par, (a, b, out), Self::mul)
    }
    /// [`mul_assign`](Self::mul_assign) on `par`, split as [`add_in`](Self::add_in).
    ///
    /// # Errors
    /// The context's ([`Parallel::dispatch`]); `acc` is then partly updated.
    ///
    /// # Panics
    /// When the lengths differ, before any task runs.
    fn mul_assign_in(par: &dyn Parallel, acc: &mut [f32], b: &[f32]) -> Result<(), Error> {
        zip_assign_in(par, (acc, b), Self::mul_assign)
    }

    /// `x[i] *= s`.
    fn scale(x: &mut [f32], s: f32) {
        if !x.is_empty() {
            Self::scale_unchecked(MapArgs::InPlace(x), s);
        }
    }
    /// `y[i] = x[i] * s`.
    ///
    /// # Panics
    /// When `x.len() != y.len()`.
    fn scale_to(x: &[f32], y: &mut [f32], s: f32) {
        check_zip(x.len(), x.len(), y.len());
        if !x.is_empty() {
            Self::scale_unchecked(MapArgs::To(x, y), s);
        }
    }
    /// `x[i] = x[i] * s + b` (fused on NEON).
    fn scale_shift(x: &mut [f32], s: f32, b: f32) {
        if !x.is_empty() {
            Self::scale_shift_unchecked(MapArgs::InPlace(x), s, b);
        }
    }
    /// `y[i] = x[i] * s + b` (fused on NEON).
    ///
    /// # Panics
    /// When `x.len() != y.len()`.
    fn scale_shift_to(x: &[f32], y: &mut [f32], s: f32, b: f32) {
        check_zip(x.len(), x.len(), y.len());
        if !x.is_empty() {
            Self::scale_shift_unchecked(MapArgs::To(x, y), s, b);
        }
    }

    /// Bias per channel, channel first: `x[c, t] += bias[c]` for `x` = `[channels, frames]`.
    ///
    /// # Panics
    /// When `x.len() != channels * frames` or `bias.len() != channels`.
    fn add_bias_channel_first(x: &mut [f32], bias: &[f32], channels: usize, frames: usize) {
        check_geometry("add_bias_channel_first", x.len(), channels, frames, bias.len(), channels);
        if !x.is_empty() {
            for (row, &b) in x.chunks_exact_mut(frames).zip(bias) {
                Self::add_scalar_unchecked(row, b);
            }
        }
    }
    /// Bias per channel, frame major: `x[t, c] += bias[c]` for `x` = `[frames, channels]`.
    ///
    /// # Panics
    /// When `x.len() != frames * channels` or `bias.len() != channels`.
    fn add_bias_frame_major(x: &mut [f32], bias: &[f32], frames: usize, channels: usize) {
        check_geometry("add_bias_frame_major", x.len(), frames, channels, bias.len(), channels);
        if !x.is_empty() {
            for row in x.chunks_exact_mut(channels) {
                Self::add_unchecked(ZipArgs::Assign(row, bias));
            }
        }
    }
    /// Layer scale, channel first: `x[c, t] *= scale[c]` for `x` = `[channels, frames]`.
    ///
    /// # Panics
    /// When `x.len() != channels * frames` or `scale.len() != channels`.
    fn scale_channels_channel_first(x: &mut [f32], scale: &[f32], channels: usize, frames: usize) {
        let what = "scale_channels_channel_first";
        check_geometry(what, x.len(), channels, frames, scale.len(), channels);
        if !x.is_empty() {
            for (row, &s) in x.chunks_exact_mut(frames).zip(scale) {
                Self::scale_unchecked(MapArgs::InPlace(row), s);
            }
        }
    }
    /// Layer scale, frame major: `x[t, c] *= scale[c]` for `x` = `[frames, channels]`.
    ///
    /// # Panics
    /// When `x.len() != frames * channels` or `scale.len() != channels`.
    fn scale_channels_frame_major(x: &mut [f32], scale: &[f32], frames: usize, channels: usize) {
        let what = "scale_channels_frame_major";
        check_geometry(what, x.len(), frames, channels, scale.len(), channels);
        if !x.is_empty() {
            for row in x.chunks_exact_mut(channels) {
                Self::mul_unchecked(ZipArgs::Assign(row, scale));
            }
        }
    }
    /// Per-channel scale and shift (a folded BatchNorm), channel first:
    /// `x[c, t] = x[c, t] * scale[c] + shift[c]` for `x` = `[channels, frames]` (fused on
    /// NEON).
    ///
    /// # Panics
    /// When `x.len() != channels * frames`, or `scale` or `shift` does not hold `channels`
    /// values.
    fn scale_shift_channels_channel_first(
        x: &mut [f32],
        (scale, shift): (&[f32], &[f32]),
        channels: usize,
        frames: usize,
    ) {
        let what = "scale_shift_channels_channel_first";
        check_geometry(what, x.len(), channels, frames, scale.len(), channels);
        check_geometry(what, x.len(), channels, frames, shift.len(), channels);
        if !x.is_empty() {
            for ((row, &s), &b) in x.chunks_exact_mut(frames).zip(scale).zip(shift) {
                Self::scale_shift_unchecked(MapArgs::InPlace(row), s, b);
            }
        }
    }
    /// Per-channel scale and shift (a folded BatchNorm), frame major:
    /// `x[t, c] = x[t, c] * scale[c] + shift[c]` for `x` = `[frames, channels]` (fused on
    /// NEON).
    ///
    /// # Panics
    /// When `x.len() != frames * channels`, or `scale` or `shift` does not hold `channels`
    /// values.
    fn scale_shift_channels_frame_major(
        x: &mut [f32],
        (scale, shift): (&[f32], &[f32]),
        frames: usize,
        channels: usize,
    ) {
        let what = "scale_shift_channels_frame_major";
        check_geometry(what, x.len(), frames, channels, scale.len(), channels);
        check_geometry(what, x.len(), frames, channels, shift.len(), channels);
        if !x.is_empty() {
            for row in x.chunks_exact_mut(channels) {
                Self::mul_add_unchecked(row, scale, shift);
            }
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
        if !acc.is_empty() {
            let rows = acc.chunks_exact_mut(frames).zip(x.chunks_exact(frames)).zip(scale);
            for ((a, xr), &s) in rows {
                Self::add_scaled_unchecked(a, xr, s);
            }
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
        if !acc.is_empty() {
            for (a, xr) in acc.chunks_exact_mut(channels).zip(x.chunks_exact(channels)) {
                Self::add_mul_unchecked(a, xr, scale);
            }
        }
    }

    /// Hook: `f(a, b) = a + b` over `io`. Called only by the entry points: lengths checked,
    /// at least one element. Default: the portable code.
    fn add_unchecked(io: ZipArgs<'_>) {
        portable::zip_args(io, |a, b| a + b)
    }
    /// Hook: `f(a, b) = a * b` over `io` (contract as [`add_unchecked`](Self::add_unchecked)).
    fn mul_unchecked(io: ZipArgs<'_>) {
        portable::zip_args(io, |a, b| a * b)
    }
    /// Hook: `f(x) = x * s` over `io` (contract as [`add_unchecked`](Self::add_unchecked)).
    fn scale_unchecked(io: MapArgs<'_>, s: f32) {
        portable_map_args(io, |v| v * s)
    }
    /// Hook: `f(x) = x * s + b` over `io`, fused where the backend fuses (contract as
    /// [`add_unchecked`](Self::add_unchecked)).
    fn scale_shift_unchecked(io: MapArgs<'_>, s: f32, b: f32) {
        portable_map_args(io, |v| v * s + b)
    }
    /// Hook: `x[i] += b` (contract as [`add_unchecked`](Self::add_unchecked)).
    fn add_scalar_unchecked(x: &mut [f32], b: f32) {
        portable_map(x, |v| v + b)
    }
    /// Hook: `acc[i] += s * x[i]`, fused where the backend fuses (contract as
    /// [`add_unchecked`](Self::add_unchecked)).
    fn add_scaled_unchecked(acc: &mut [f32], x: &[f32], s: f32) {
        portable::zip_assign(acc, x, |a, v| s * v + a)
    }
    /// Hook: `acc[i] += s[i] * x[i]`, fused where the backend fuses (contract as
    /// [`add_unchecked`](Self::add_unchecked)).
    fn add_mul_unchecked(acc: &mut [f32], x: &[f32], s: &[f32]) {
        portable::add_mul(acc, x, s)
    }
    /// Hook: `x[i] = x[i] * s[i] + b[i]`, fused where the backend fuses (contract as
    /// [`add_unchecked`](Self::add_unchecked); the three slices have one length).
    fn mul_add_unchecked(x: &mut [f32], s: &[f32], b: &[f32]) {
        portable::mul_add(x, s, b)
    }
}

/// The body of the two-input entry points: checks the lengths of `io` (panics when they
/// differ), then calls the hook unless the slices are empty.
#[inline(always)]
fn zip_checked(io: ZipArgs<'_>, hook: impl FnOnce(ZipArgs<'_>)) {
    let (a, b, out) = match &io {
        ZipArgs::Assign(acc, b) => (acc.len(), b.len(), acc.len()),
        ZipArgs::To(a, b, out) => (a.len(), b.len(), out.len()),
    };
    check_zip(a, b, out);
    if a != 0 {
        hook(io);
    }
}

/// `out[r] = f(a[r], b[r])` over the blocks of [`zip_blocks`], after the length check
/// (panics when the lengths differ, before any task runs).
fn zip_to_in<F>(
    par: &dyn Parallel,
    (a, b, out): (&[f32], &[f32], &mut [f32]),
    f: F,
) -> Result<(), Error>
where
    F: Fn(&[f32], &[f32], &mut [f32]) + Sync,
{
    check_zip(a.len(), b.len(), out.len());
    zip_blocks(par, out, |r, out| f(&a[r.clone()], &b[r], out))
}

/// `f(acc[r], b[r])` over the blocks of [`zip_blocks`], after the length check (panics
/// when the lengths differ, before any task runs).
fn zip_assign_in<F>(par: &dyn Parallel, (acc, b): (&mut [f32], &[f32]), f: F) -> Result<(), Error>
where
    F: Fn(&mut [f32], &[f32]) + Sync,
{
    check_zip(acc.len(), b.len(), acc.len());
    zip_blocks(par, acc, |r, acc| f(acc, &b[r]))
}

/// Runs `f(range, out[range])` over blocks of whole [`ACTIVATION_BLOCK`]s of `out` on `par`
/// (one block on the calling thread for one worker or a small `out`). An element costs
/// about what a multiply-add does (two loads and a store per vector).
fn zip_blocks<F>(par: &dyn Parallel, out: &mut [f32], f: F) -> Result<(), Error>
where
    F: Fn(core::ops::Range<usize>, &mut [f32]) + Sync,
{
    let split = Rows {
        shape: (out.len(), 1, 1),
        tile: ACTIVATION_BLOCK,
        join_tail: false,
        work_per_row: 1,
    };
    row_blocks(par, split, out, f)
}

/// Checks the lengths of a two-input kernel (panics).
fn check_zip(a: usize, b: usize, out: usize) {
    assert!(a == b && a == out, "elementwise: lengths differ");
}

/// Checks a `[rows, cols]` geometry against the data and per-row/per-column vector lengths.
fn check_geometry(what: &str, len: usize, rows: usize, cols: usize, vec_len: usize, per: usize) {
    assert_eq!(rows.checked_mul(cols), Some(len), "{what}: data length is not rows * cols");
    assert_eq!(vec_len, per, "{what}: per-channel vector length is not channels");
}

impl ElementwiseKernels for Portable {}

impl<I: X86Isa> ElementwiseKernels for X86<I> {}
