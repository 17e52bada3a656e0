//! Execution contexts: how the independent blocks of one kernel call run.
//!
//! A kernel entry point with an `_in` suffix (e.g.
//! [`GemmKernels::gemm_packed_b_in`](super::GemmKernels::gemm_packed_b_in)) takes a
//! `&dyn` [`Parallel`]: [`Serial`] runs everything on the calling thread (the only context
//! of `no_std` builds, and what the entry points without the suffix do); a
//! `Team` (feature `std`) spreads the blocks over its members.
//!
//! **Same bits for any thread count.** The drivers split an output into blocks of whole
//! micro-kernel tiles of the serial tiling (output rows or columns, never a reduction), so
//! every output value is computed by the same tile, with the same accumulation order, as
//! in a serial call. The split is static: block `t` of `T` covers tiles
//! `t * tiles / T .. (t + 1) * tiles / T`; only the count `T` depends on the context.

use core::marker::PhantomData;
use core::ops::Range;

use crate::error::Error;

/// Runs the tasks of one kernel call.
///
/// Implementations must call `f(task, worker)` exactly once for every `task < tasks`, with
/// `worker < workers()` (the index of the member running it, for per-worker scratch), and
/// return only when every call has returned.
pub trait Parallel: Sync {
    /// Members that run tasks at the same time (at least 1).
    fn workers(&self) -> usize;

    /// Runs `f(task, worker)` for every `task < tasks`, possibly concurrently.
    ///
    /// # Errors
    /// The context's own: a `Team` (feature `std`) returns
    /// [`Error::Team`] when a task panicked or the call is nested in one of its tasks.
    fn dispatch(&self, tasks: usize, f: &(dyn Fn(usize, usize) + Sync)) -> Result<(), Error>;
}

/// The calling thread alone: tasks run in order, `worker` is always 0, never an error.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Serial;

impl Parallel for Serial {
    fn workers(&self) -> usize {
        1
    }

    fn dispatch(&self, tasks: usize, f: &(dyn Fn(usize, usize) + Sync)) -> Result<(), Error> {
        for task in 0..tasks {
            f(task, 0);
        }
        Ok(())
    }
}

/// Multiply-adds below which a block is not worth a task of its own (a dispatch costs a
/// few microseconds when the members are parked: ~65k multiply-adds take about as long on
/// one Cortex-A72 core).
pub(crate) const MIN_TASK_WORK: usize = 1 << 16;

/// Tasks for `tiles` tiles of `work_per_tile` multiply-adds each on `par`: at most one
/// per worker and per tile, and none smaller than [`MIN_TASK_WORK`] (at least 1).
pub(crate) fn task_count(par: &dyn Parallel, tiles: usize, work_per_tile: usize) -> usize {
    let by_work = tiles.saturating_mul(work_per_tile) / MIN_TASK_WORK;
    par.workers().min(tiles).min(by_work).max(1)
}

/// The tiles of block `task` of `tasks` over `tiles` tiles (the static split of the
/// module docs).
pub(crate) fn block(tiles: usize, tasks: usize, task: usize) -> Range<usize> {
    (task * tiles / tasks)..((task + 1) * tiles / tasks)
}

/// A mutable slice handed out in disjoint pieces to the tasks of one dispatch.
pub(crate) struct Disjoint<'a, T> {
    ptr: *mut T,
    len: usize,
    _borrow: PhantomData<&'a mut [T]>,
}

// SAFETY: a `Disjoint` only hands out `&mut` pieces of a slice it borrows exclusively; the
// callers of `piece` guarantee the pieces of concurrent tasks do not overlap, so sharing it
// between threads is sharing `&mut [T]` pieces, which is sound for `T: Send`.
unsafe impl<T: Send> Sync for Disjoint<'_, T> {}

impl<'a, T> Disjoint<'a, T> {
    /// Borrows `s` for the dispatch.
    pub(crate) fn new(s: &'a mut [T]) -> Self {
        Self { ptr: s.as_mut_ptr(), len: s.len(), _borrow: PhantomData }
    }

    /// `s[range]`.
    ///
    /// # Safety
    /// No other piece in use at the same time overlaps `range`.
    ///
    /// # Panics
    /// When `range` is not within the slice.
    #[allow(clippy::mut_from_ref)]
    pub(crate) unsafe fn piece(&self, range: Range<usize>) -> &'a mut [T] {
        assert!(range.start <= range.end && range.end <= self.len, "Disjoint: out of range");
        // SAFETY: in bounds (asserted) of the exclusively borrowed slice; not aliased by
        // any other live piece (the caller's contract).
        unsafe { core::slice::from_raw_parts_mut(self.ptr.add(range.start), range.len()) }
    }
}

/// How [`row_blocks`] splits the rows of an output.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Rows {
    /// `(m, n, ldc)`: `m` rows of `n` values, row `i` at `c[i * ldc .. i * ldc + n]`.
    pub(crate) shape: (usize, usize, usize),
    /// Rows per tile of the serial tiling: blocks start on a multiple of it.
    pub(crate) tile: usize,
    /// Whether a partial last tile joins the block before it (for kernels that pick
    /// another code path for a call with fewer rows than a tile) instead of being a tile
    /// of its own.
    pub(crate) join_tail: bool,
    /// Multiply-adds per row (sizes the task count, [`MIN_TASK_WORK`]).
    pub(crate) work_per_row: usize,
}

/// Splits the rows of an output (`rows.shape`) into blocks of whole tiles and runs
/// `f(rows, c_rows)` for each, `c_rows` starting at row `rows.start` and ending with the
/// last row's `n` values, so blocks never overlap. One block (the whole output) when `par`
/// has one worker or the work is small: `f(0..m, c)` on the calling thread.
///
/// # Errors
/// The context's ([`Parallel::dispatch`]).
pub(crate) fn row_blocks<F>(
    par: &dyn Parallel,
    rows: Rows,
    c: &mut [f32],
    f: F,
) -> Result<(), Error>
where
    F: Fn(Range<usize>, &mut [f32]) + Sync,
{
    let (m, n, ldc) = rows.shape;
    let tile = rows.tile.max(1);
    let tiles = if rows.join_tail { (m / tile).max(1) } else { m.div_ceil(tile) };
    let tasks = task_count(par, tiles, rows.work_per_row.saturating_mul(tile));
    if tasks <= 1 {
        f(0..m, c);
        return Ok(());
    }
    let out = Disjoint::new(c);
    par.dispatch(tasks, &|task, _| {
        let b = block(tiles, tasks, task);
        let end = if b.end == tiles { m } else { b.end * tile };
        let r = (b.start * tile)..end;
        if r.is_empty() {
            return;
        }
        let span = r.start * ldc..(r.end - 1) * ldc + n;
        // SAFETY: blocks of different tasks cover disjoint row ranges, and a block's span
        // ends with its last row's `n <= ldc` values, before the next block's first row.
        let c_rows = unsafe { out.piece(span) };
        f(r, c_rows);
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_cover_every_tile_once() {
        for tiles in 0..40 {
            for tasks in 1..9 {
                let mut next = 0;
                for t in 0..tasks {
                    let r = block(tiles, tasks, t);
                    assert_eq!(r.start, next);
                    next = r.end;
                }
                assert_eq!(next, tiles);
            }
        }
    }

    #[test]
    fn serial_runs_tasks_in_order() {
        use core::sync::atomic::{AtomicUsize, Ordering};
        let next = AtomicUsize::new(0);
        Serial
            .dispatch(5, &|t, w| {
                assert_eq!(w, 0);
                assert_eq!(next.fetch_add(1, Ordering::Relaxed), t);
            })
            .unwrap();
        assert_eq!(next.into_inner(), 5);
    }
}
