//! Plan workspaces: slicing one for the steps of a generated plan (no allocation, no
//! `unsafe`) and, with feature `alloc`, allocating one on the heap.
//!
//! A plan's intermediates live in one caller-provided workspace at offsets fixed by the
//! planner. At each step the generated code needs read-only slices of the step's inputs
//! and one writable slice for its output, all from the same buffer; [`carve`] splits the
//! workspace accordingly with `split_at_mut`, so the borrow checker sees disjoint borrows.
//! A caller that keeps a large workspace on the heap gets it zeroed from `boxed_zeroed`
//! (feature `alloc`).

use crate::error::Error;

/// A zeroed `T` allocated directly on the heap (a plan workspace can be tens of megabytes:
/// building it on the stack first would overflow it).
///
/// # Safety
/// All-zero bytes must be a valid `T` (true of every `neon_plan!` workspace: an aligned
/// wrapper around `[f32; N]`).
#[cfg(feature = "alloc")]
pub unsafe fn boxed_zeroed<T>() -> alloc::boxed::Box<T> {
    // SAFETY: the caller guarantees all-zero bytes are a valid `T`.
    unsafe { alloc::boxed::Box::<T>::new_zeroed().assume_init() }
}

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

/// Splits `ws` (of any element type: f32 for the plans of `neon_plan!` and the dynamic
/// `exec::ExecutionPlan`, bytes for an `exec::stream::StreamPlan`) into `R` read-only regions and `W`
/// writable regions, each given as `(offset, len)` in elements. Writable regions must not overlap each other or any read
/// region; read regions may overlap each other.
///
/// # Errors
/// [`Error::Length`] when a region does not fit in `ws`, and [`Error::BadShape`] when
/// regions overlap as described above (the planner never produces either; generated code
/// propagates the error instead of panicking).
#[allow(clippy::type_complexity)]
pub fn carve<'a, T, const R: usize, const W: usize>(
    ws: &'a mut [T],
    reads: [(usize, usize); R],
    writes: [(usize, usize); W],
) -> Result<([&'a [T]; R], [&'a mut [T]; W]), Error> {
    let total = ws.len();
    let end_of = |(o, l): (usize, usize)| {
        o.checked_add(l).filter(|&e| e <= total).ok_or(Error::Length {
            what: "workspace",
            expected: o.saturating_add(l),
            got: total,
        })
    };
    for &w in &writes {
        end_of(w)?;
    }
    for &r in &reads {
        end_of(r)?;
    }
    // Visit the write regions by offset; the gaps between them are read-only pieces.
    let mut order: [usize; W] = core::array::from_fn(|i| i);
    order.sort_unstable_by_key(|&i| writes[i].0);
    let mut outs: [Option<&'a mut [T]>; W] = core::array::from_fn(|_| None);
    let mut ins: [&'a [T]; R] = [&[]; R];
    let mut found = [false; R];
    let mut rest: &'a mut [T] = ws;
    let mut base = 0usize;
    let mut take_reads = |gap: &'a [T], gap_base: usize, found: &mut [bool; R]| {
        for (i, &(o, l)) in reads.iter().enumerate() {
            if !found[i] && o >= gap_base && o + l <= gap_base + gap.len() {
                ins[i] = &gap[o - gap_base..o - gap_base + l];
                found[i] = true;
            }
        }
    };
    for &i in &order {
        let (o, l) = writes[i];
        if o < base {
            return Err(Error::BadShape { reason: "workspace write regions overlap" });
        }
        let (gap, tail) = core::mem::take(&mut rest).split_at_mut(o - base);
        let (w, tail) = tail.split_at_mut(l);
        take_reads(gap, base, &mut found);
        outs[i] = Some(w);
        rest = tail;
        base = o + l;
    }
    take_reads(rest, base, &mut found);
    if found.iter().any(|f| !f) {
        return Err(Error::BadShape { reason: "workspace read overlaps a write region" });
    }
    let mut it = outs.into_iter();
    let outs: [&'a mut [T]; W] = core::array::from_fn(|_| it.next().flatten().unwrap_or_default());
    Ok((ins, outs))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn carve_disjoint_regions() {
        let mut ws: [f32; 16] = core::array::from_fn(|i| i as f32);
        let ([a, b], [w]) = carve(&mut ws, [(0, 4), (12, 4)], [(4, 8)]).unwrap();
        assert_eq!(a, &[0.0, 1.0, 2.0, 3.0]);
        assert_eq!(b, &[12.0, 13.0, 14.0, 15.0]);
        w.fill(-1.0);
        assert_eq!(ws[4..12], [-1.0; 8]);
    }

    #[test]
    fn carve_rejects_overlap_and_out_of_bounds() {
        let mut ws = [0.0f32; 16];
        assert!(carve(&mut ws, [(2, 4)], [(4, 4)]).is_err());
        assert!(carve(&mut ws, [(0, 4)], [(14, 4)]).is_err());
        assert!(carve(&mut ws, [(15, 2)], [(0, 4)]).is_err());
        assert!(carve(&mut ws, [(0, 4)], [(4, 4), (6, 4)]).is_err());
        assert!(carve(&mut ws, [], [(0, 16)]).is_ok());
    }

    #[test]
    fn carve_several_writes_in_any_order() {
        let mut ws: [f32; 16] = core::array::from_fn(|i| i as f32);
        let ([a, b], [w1, w0]) = carve(&mut ws, [(4, 2), (5, 3)], [(12, 4), (0, 4)]).unwrap();
        assert_eq!(a, &[4.0, 5.0]);
        assert_eq!(b, &[5.0, 6.0, 7.0]);
        assert_eq!((w0.len(), w0[0], w1.len(), w1[0]), (4, 0.0, 4, 12.0));
    }
}
