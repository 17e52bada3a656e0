//! Arguments from C: pointer checks (NULL, alignment, length), input slices, results stored
//! through pointers, caller-owned output buffers with a capacity, strings and session options.

use std::ffi::{c_char, CStr};

use neon_models::exec_plan::Family;
use neon_models::session::SessionOptions;

use crate::status::{Failure, NeonStatus, Result};

/// Checks that `p` is non-NULL and aligned for `T`.
pub(crate) fn check_ptr<T>(p: *const T, what: &str) -> Result<()> {
    if p.is_null() {
        return Err(Failure::new(NeonStatus::NullPointer, format!("{what} is NULL")));
    }
    if !p.is_aligned() {
        return Err(Failure::new(
            NeonStatus::MisalignedPointer,
            format!(
                "{what} ({p:p}) is not aligned to {} bytes for its type",
                std::mem::align_of::<T>()
            ),
        ));
    }
    Ok(())
}

/// Checks that `n` values of `T` fit in an allocation (Rust slices are at most `isize::MAX`
/// bytes).
pub(crate) fn check_len<T>(n: usize, what: &str) -> Result<()> {
    if n.checked_mul(std::mem::size_of::<T>()).is_none_or(|b| b > isize::MAX as usize) {
        return Err(Failure::new(
            NeonStatus::InvalidArgument,
            format!("{what}: length {n} is larger than any buffer"),
        ));
    }
    Ok(())
}

/// `n` values at `p` as a slice, after checking the pointer and the length.
///
/// # Safety
/// When `p` is non-NULL and aligned, it must point to `n` initialised values that stay valid
/// and unmodified for `'a`.
pub(crate) unsafe fn input<'a, T>(p: *const T, n: usize, what: &str) -> Result<&'a [T]> {
    check_ptr(p, what)?;
    check_len::<T>(n, what)?;
    // SAFETY: `p` is non-NULL and aligned (checked), `n * size_of::<T>()` fits in `isize`
    // (checked) and the caller guarantees `n` valid values for `'a`.
    Ok(unsafe { std::slice::from_raw_parts(p, n) })
}

/// Checks that every sample is finite; the error names the first that is not, its value,
/// then `consequence` (e.g. `": nothing was pushed"`, or `""`).
pub(crate) fn check_finite(samples: &[f32], consequence: &str) -> Result<()> {
    match samples.iter().position(|x| !x.is_finite()) {
        None => Ok(()),
        Some(i) => Err(Failure::new(
            NeonStatus::InvalidArgument,
            format!("samples[{i}] is not finite ({}){consequence}", samples[i]),
        )),
    }
}

/// Stores `v` through `p` after checking the pointer.
///
/// # Safety
/// When `p` is non-NULL and aligned, it must be valid for a write of `T`.
pub(crate) unsafe fn store<T>(p: *mut T, v: T, what: &str) -> Result<()> {
    check_ptr(p, what)?;
    // SAFETY: non-NULL and aligned (checked); the caller guarantees it is writable.
    unsafe { p.write(v) };
    Ok(())
}

/// Checks the count pointer `n` and the caller-owned buffer `out` of `cap` values of `T`
/// (which may be NULL when `cap` is 0), named `n_what` and `out_what` in errors.
pub(crate) fn check_buffer<T>(
    out: *const T,
    cap: usize,
    n: *const usize,
    out_what: &str,
    n_what: &str,
) -> Result<()> {
    check_ptr(n, n_what)?;
    if !(out.is_null() && cap == 0) {
        check_ptr(out, out_what)?;
        check_len::<T>(cap, out_what)?;
    }
    Ok(())
}

/// Copies `values` to `out` (capacity `cap`) and stores their count in `*n`; a too small
/// buffer is [`NeonStatus::BufferTooSmall`] (with `*n` still set). `out` may be NULL when
/// `cap` is 0.
///
/// # Safety
/// `n` as for [`store`]; a non-NULL aligned `out` must be valid for `cap` writes of `T`.
pub(crate) unsafe fn output<T: Copy>(
    values: &[T],
    out: *mut T,
    cap: usize,
    n: *mut usize,
) -> Result<()> {
    check_buffer(out, cap, n, "the output buffer", "the count pointer")?;
    // SAFETY: `n` is non-NULL and aligned (checked), writable by the caller's contract.
    unsafe { n.write(values.len()) };
    if cap < values.len() {
        return Err(Failure::new(
            NeonStatus::BufferTooSmall,
            format!("the output buffer holds {cap} values, {} are needed", values.len()),
        ));
    }
    if !values.is_empty() {
        // SAFETY: `out` is non-NULL (cap >= len > 0 excludes the NULL case) and aligned
        // (checked), valid for `cap >= values.len()` writes by the caller's contract, and
        // cannot overlap `values`, which the library owns.
        unsafe { std::ptr::copy_nonoverlapping(values.as_ptr(), out, values.len()) };
    }
    Ok(())
}

/// The `n` strings at `p` (which may be NULL when `n` is 0).
///
/// # Safety
/// A non-NULL aligned `p` must point to `n` pointers, each NULL or a NUL-terminated string.
pub(crate) unsafe fn strings(p: *const *const c_char, n: usize, what: &str) -> Result<Vec<String>> {
    if n == 0 {
        return Ok(Vec::new());
    }
    // SAFETY: the caller guarantees `n` readable pointers at `p` (when non-NULL and aligned,
    // which `input` checks).
    let ptrs = unsafe { input(p, n, what)? };
    ptrs.iter()
        .enumerate()
        .map(|(i, &s)| {
            if s.is_null() {
                return Err(Failure::new(NeonStatus::NullPointer, format!("{what}[{i}] is NULL")));
            }
            // SAFETY: non-NULL; the caller guarantees a NUL-terminated string.
            let s = unsafe { CStr::from_ptr(s) };
            s.to_str().map(str::to_string).map_err(|_| {
                Failure::new(NeonStatus::InvalidArgument, format!("{what}[{i}] is not UTF-8"))
            })
        })
        .collect()
}

/// Session options from `KEY=VALUE` strings for a handle that runs the models of
/// `families`: an option of another family is refused (as the CLI refuses it), since it
/// would be silently ignored.
///
/// # Safety
/// As [`strings`].
pub(crate) unsafe fn parse_options(
    p: *const *const c_char,
    n: usize,
    families: &[Family],
) -> Result<SessionOptions> {
    // SAFETY: forwarded contract.
    let pairs = unsafe { strings(p, n, "session_options")? };
    for pair in &pairs {
        let Some(key) = SessionOptions::pair_key(pair) else { continue };
        let family = key.split_once('.').map_or(key, |(f, _)| f);
        if let Some(f) = Family::from_name(family).filter(|f| !families.contains(f)) {
            let runs: Vec<&str> = families.iter().map(|f| f.name()).collect();
            return Err(Failure::new(
                NeonStatus::InvalidArgument,
                format!(
                    "session option `{key}`: this handle does not run {} (it runs {})",
                    f.name(),
                    runs.join(", ")
                ),
            ));
        }
    }
    Ok(SessionOptions::from_pairs(pairs)?)
}
