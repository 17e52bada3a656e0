//! Portable elementwise drivers: fixed-width chunks of `LANES` values (vectorised by LLVM),
//! then the scalar tail. Lengths are checked by the entry points.

use super::ZipArgs;

/// Width of the fixed inner loops of the portable code (as in the activation kernels).
const LANES: usize = 8;

/// `out[i] = f(a[i], b[i])`, LANES-wide chunks then the scalar tail.
#[inline(always)]
fn zip(a: &[f32], b: &[f32], out: &mut [f32], f: impl Fn(f32, f32) -> f32) {
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
pub(super) fn zip_assign(acc: &mut [f32], b: &[f32], f: impl Fn(f32, f32) -> f32) {
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

/// [`zip`] or [`zip_assign`], as `io` says.
#[inline(always)]
pub(super) fn zip_args(io: ZipArgs<'_>, f: impl Fn(f32, f32) -> f32) {
    match io {
        ZipArgs::Assign(acc, b) => zip_assign(acc, b, f),
        ZipArgs::To(a, b, out) => zip(a, b, out, f),
    }
}

/// `acc[i] = f(acc[i], x[i], s[i])` (three inputs, one of them updated), LANES-wide chunks
/// then the scalar tail.
#[inline(always)]
fn zip3_assign(acc: &mut [f32], x: &[f32], s: &[f32], f: impl Fn(f32, f32, f32) -> f32) {
    let mut ac = acc.chunks_exact_mut(LANES);
    let mut xc = x.chunks_exact(LANES);
    let mut sc = s.chunks_exact(LANES);
    for ((a, v), s) in (&mut ac).zip(&mut xc).zip(&mut sc) {
        for i in 0..LANES {
            a[i] = f(a[i], v[i], s[i]);
        }
    }
    let rest = ac.into_remainder().iter_mut().zip(xc.remainder()).zip(sc.remainder());
    for ((a, v), s) in rest {
        *a = f(*a, *v, *s);
    }
}

/// `acc[i] += s[i] * x[i]`.
pub(super) fn add_mul(acc: &mut [f32], x: &[f32], s: &[f32]) {
    zip3_assign(acc, x, s, |a, v, s| a + s * v)
}

/// `x[i] = x[i] * s[i] + b[i]`.
pub(super) fn mul_add(x: &mut [f32], s: &[f32], b: &[f32]) {
    zip3_assign(x, s, b, |v, s, b| v * s + b)
}
