//! Workspace slicing for generated plans (no allocation, no `unsafe`).
//!
//! A plan's intermediates live in one caller-provided workspace at offsets fixed by the
//! planner. At each step the generated code needs read-only slices of the step's inputs
//! and one writable slice for its output, all from the same buffer; [`carve`] splits the
//! workspace accordingly with `split_at_mut`, so the borrow checker sees disjoint borrows.

use crate::error::Error;

/// One entry of a plan's memory map: where a value lives and when.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemoryRegion {
    /// The value's name in the plan (`"h"`, `"h#2"` for a shadowed `let`).
    pub name: &'static str,
    /// Byte offset in the workspace; `None` for caller-owned tensors.
    pub offset: Option<usize>,
    /// Size in bytes at the upper bound of every symbolic dimension.
    pub bytes: usize,
    /// First step (0-based) at which the value is live.
    pub first_step: usize,
    /// Last step at which the value is live.
    pub last_step: usize,
}

/// Splits `ws` into `N` read-only regions and one writable region, each given as
/// `(offset, len)` in elements.
///
/// # Errors
/// [`Error::Length`] when a region does not fit in `ws`, and [`Error::BadShape`] when a
/// read region overlaps the write region (the planner never produces either; generated
/// code propagates the error instead of panicking).
#[allow(clippy::type_complexity)]
pub fn carve<'a, const N: usize>(
    ws: &'a mut [f32],
    reads: [(usize, usize); N],
    write: (usize, usize),
) -> Result<([&'a [f32]; N], &'a mut [f32]), Error> {
    let total = ws.len();
    let (wo, wl) = write;
    let wend = wo.checked_add(wl).filter(|&e| e <= total);
    let Some(wend) = wend else {
        return Err(Error::Length {
            what: "workspace",
            expected: wo.saturating_add(wl),
            got: total,
        });
    };
    let (lo, rest) = ws.split_at_mut(wo);
    let (w, hi) = rest.split_at_mut(wl);
    let (lo, hi): (&'a [f32], &'a [f32]) = (lo, hi);
    let mut out: [&'a [f32]; N] = [&[]; N];
    for (slot, &(o, l)) in out.iter_mut().zip(reads.iter()) {
        let end = o.checked_add(l).filter(|&e| e <= total);
        let Some(end) = end else {
            return Err(Error::Length {
                what: "workspace",
                expected: o.saturating_add(l),
                got: total,
            });
        };
        *slot = if end <= wo {
            &lo[o..end]
        } else if o >= wend {
            &hi[o - wend..end - wend]
        } else {
            return Err(Error::BadShape { reason: "workspace read overlaps the write region" });
        };
    }
    Ok((out, w))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn carve_disjoint_regions() {
        let mut ws: [f32; 16] = core::array::from_fn(|i| i as f32);
        let ([a, b], w) = carve(&mut ws, [(0, 4), (12, 4)], (4, 8)).unwrap();
        assert_eq!(a, &[0.0, 1.0, 2.0, 3.0]);
        assert_eq!(b, &[12.0, 13.0, 14.0, 15.0]);
        w.fill(-1.0);
        assert_eq!(ws[4..12], [-1.0; 8]);
    }

    #[test]
    fn carve_rejects_overlap_and_out_of_bounds() {
        let mut ws = [0.0f32; 16];
        assert!(carve(&mut ws, [(2, 4)], (4, 4)).is_err());
        assert!(carve(&mut ws, [(0, 4)], (14, 4)).is_err());
        assert!(carve(&mut ws, [(15, 2)], (0, 4)).is_err());
        assert!(carve(&mut ws, [], (0, 16)).is_ok());
    }
}
