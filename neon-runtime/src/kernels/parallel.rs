//! Execution contexts: how the independent blocks of one kernel call run.
//!
//! A kernel entry point with an `_in` suffix (e.g.
//! [`GemmKernels::gemm_packed_b_in`](super::GemmKernels::gemm_packed_b_in)) takes a
//! `&dyn` [`Parallel`]: [`Serial`] runs everything on the calling thread (the only context
//! of `no_std` builds, and what the entry points without the suffix do); a
//! `Team` (feature `std`) spreads the blocks over its members.
//!
//! **Same bits for any thread count.** The drivers split an output into blocks of whole
//! micro-kernel tiles of the serial tiling (output rows, columns, or a grid of both, never
//! a reduction), so every output value is computed by the same tile, with the same
//! accumulation order, as in a serial call. The split is static: block `t` of `T` covers
//! tiles `t * tiles / T .. (t + 1) * tiles / T` (per dimension for a grid); only the
//! count `T` depends on the context.
//!
//! **Output blocks.** A block of whole rows is a `&mut` slice of its own; a block of
//! columns is a [`StridedMut`] (its rows' values only: the values between them belong to
//! other blocks), so kernels write blocks of columns without two tasks holding
//! overlapping slices.

use core::marker::PhantomData;
use core::ops::Range;

use super::strided::StridedMut;
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

impl<'a> Disjoint<'a, f32> {
    /// Rows `rows` and columns `cols` of the borrowed slice read as a matrix with rows
    /// `ld` values apart, as a [`StridedMut`] block.
    ///
    /// # Safety
    /// No other piece or block in use at the same time shares a value with this block
    /// (blocks of a grid over one matrix whose row or column ranges do not overlap).
    ///
    /// # Panics
    /// When the block is not within the slice, or `cols` ends past `ld` (for more than
    /// one row).
    pub(crate) unsafe fn block(
        &self,
        rows: Range<usize>,
        cols: Range<usize>,
        ld: usize,
    ) -> StridedMut<'a> {
        assert!(rows.start <= rows.end && cols.start <= cols.end, "Disjoint: block ranges");
        assert!(rows.len() <= 1 || cols.end <= ld, "Disjoint: block columns past ld");
        if rows.is_empty() || cols.is_empty() {
            // SAFETY: an empty block reaches no value; the slice's pointer is non-null.
            return unsafe { StridedMut::from_raw_parts(self.ptr, 0, 0, ld) };
        }
        let first = rows.start * ld + cols.start;
        let last = (rows.end - 1) * ld + cols.end;
        assert!(last <= self.len, "Disjoint: block out of range");
        // SAFETY: every value of the block lies in the exclusively borrowed slice (its last
        // one asserted in range), rows do not overlap (`cols.end <= ld`), and no other
        // block in use shares a value with it (the caller's contract).
        unsafe { StridedMut::from_raw_parts(self.ptr.add(first), rows.len(), cols.len(), ld) }
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

/// How [`grid_blocks`] splits an output into a grid of rectangular blocks.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Grid {
    /// `(m, n, ldc)`: `m` rows of `n` values, row `i` at `c[i * ldc .. i * ldc + n]`.
    pub(crate) shape: (usize, usize, usize),
    /// `(rows, columns)` per tile of the serial tiling: blocks start on a multiple of
    /// each (a partial last tile is a tile of its own, but see `join_tail`).
    pub(crate) tile: (usize, usize),
    /// Whether a partial last row tile joins the block before it (as in [`Rows`]).
    pub(crate) join_tail: bool,
    /// Multiply-adds per output value (sizes the task count, [`MIN_TASK_WORK`]).
    pub(crate) work_per_value: usize,
    /// The cost of a block that does not depend on its rows, in rows of its columns: e.g.
    /// a block converts the weights of its columns once, whatever its row count, which
    /// costs about what `fixed_rows` rows of multiply-adds on them do. Blocks that split
    /// rows repeat it, so a larger value favours splitting columns.
    pub(crate) fixed_rows: usize,
}

impl Grid {
    /// The task grid `(row_blocks, col_blocks)` for `tasks` tasks at most: the one with
    /// the smallest estimated cost of its largest block,
    /// `cols(block) * (fixed_rows + rows(block))`, the fewest row blocks on a tie. A pure
    /// function of the shape and `tasks`.
    fn split(&self, tasks: usize) -> (usize, usize) {
        let (m, n, _) = self.shape;
        let (tr, tc) = (self.tile.0.max(1), self.tile.1.max(1));
        let (row_tiles, col_tiles) = self.tiles();
        let mut best = (1, 1);
        let mut best_cost = usize::MAX;
        for r in 1..=tasks.min(row_tiles) {
            let c = (tasks / r).min(col_tiles);
            let rows = (row_tiles.div_ceil(r) * tr + if self.join_tail { tr } else { 0 }).min(m);
            let cols = (col_tiles.div_ceil(c) * tc).min(n);
            let cost = cols.saturating_mul(rows.saturating_add(self.fixed_rows));
            if cost < best_cost {
                (best, best_cost) = ((r, c), cost);
            }
        }
        best
    }

    /// Row and column tiles (at least one row tile with `join_tail`).
    fn tiles(&self) -> (usize, usize) {
        let (m, n, _) = self.shape;
        let (tr, tc) = (self.tile.0.max(1), self.tile.1.max(1));
        let rows = if self.join_tail { (m / tr).max(1) } else { m.div_ceil(tr) };
        (rows, n.div_ceil(tc))
    }
}

/// Splits an output (`grid.shape`) into a grid of blocks of whole tiles (rows and columns)
/// and runs `f(rows, cols, block)` for each, `block` holding rows `rows` and columns
/// `cols` of `c` ([`StridedMut`]: blocks of different tasks share no value). One block
/// (the whole output) when `par` has one worker or the work is small: `f(0..m, 0..n, c)`
/// on the calling thread.
///
/// # Errors
/// The context's ([`Parallel::dispatch`]).
///
/// # Panics
/// When `c` is shorter than `(m - 1) * ldc + n` or `n > ldc` (before any task runs).
pub(crate) fn grid_blocks<F>(
    par: &dyn Parallel,
    grid: Grid,
    c: &mut [f32],
    f: F,
) -> Result<(), Error>
where
    F: Fn(Range<usize>, Range<usize>, StridedMut<'_>) + Sync,
{
    let (m, n, ldc) = grid.shape;
    let (tr, tc) = (grid.tile.0.max(1), grid.tile.1.max(1));
    let (row_tiles, col_tiles) = grid.tiles();
    let tiles = row_tiles.saturating_mul(col_tiles);
    let work_per_tile = grid.work_per_value.saturating_mul(tr).saturating_mul(tc);
    let tasks = task_count(par, tiles, work_per_tile);
    let whole = StridedMut::new(c, m, n, ldc);
    if tasks <= 1 {
        f(0..m, 0..n, whole);
        return Ok(());
    }
    let (rb, cb) = grid.split(tasks);
    let out = Disjoint::new(c);
    par.dispatch(rb * cb, &|task, _| {
        let (r, q) = (block(row_tiles, rb, task / cb), block(col_tiles, cb, task % cb));
        let end = if r.end == row_tiles { m } else { r.end * tr };
        let rows = (r.start * tr).min(m)..end.min(m);
        let cols = (q.start * tc).min(n)..(q.end * tc).min(n);
        if rows.is_empty() || cols.is_empty() {
            return;
        }
        // SAFETY: the blocks of different tasks cover different cells of one grid of the
        // `m x n` values (rows `ldc >= n` apart, checked by `StridedMut::new` above), so
        // they share no value.
        let c = unsafe { out.block(rows.clone(), cols.clone(), ldc) };
        f(rows, cols, c);
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

    /// Runs tasks in order on the calling thread but claims `.0` workers: a context for
    /// checking splits.
    struct Pretend(usize);

    impl Parallel for Pretend {
        fn workers(&self) -> usize {
            self.0
        }

        fn dispatch(&self, tasks: usize, f: &(dyn Fn(usize, usize) + Sync)) -> Result<(), Error> {
            for task in 0..tasks {
                f(task, task % self.0);
            }
            Ok(())
        }
    }

    #[cfg(feature = "alloc")]
    #[test]
    fn grid_blocks_cover_every_value_once_on_whole_tiles() {
        use alloc::vec;
        use core::sync::atomic::{AtomicUsize, Ordering};
        for (m, n, pad) in [(1, 1, 0), (7, 100, 3), (100, 7, 0), (82, 416, 1), (413, 1664, 0)] {
            for tile in [(1, 1), (5, 16), (8, 32), (80, 16), (8, 48)] {
                for (fixed_rows, join_tail) in [(0, false), (4, false), (0, true)] {
                    for workers in 1..9 {
                        let ldc = n + pad;
                        let mut c = vec![0.0f32; (m - 1) * ldc + n + pad];
                        let grid = Grid {
                            shape: (m, n, ldc),
                            tile,
                            work_per_value: 1 << 12,
                            fixed_rows,
                            join_tail,
                        };
                        let blocks = AtomicUsize::new(0);
                        grid_blocks(&Pretend(workers), grid, &mut c, |rows, cols, mut b| {
                            blocks.fetch_add(1, Ordering::Relaxed);
                            assert!(rows.start % tile.0 == 0 && cols.start % tile.1 == 0);
                            assert!(rows.end == m || rows.end % tile.0 == 0);
                            // A joined tail: no block of fewer rows than a tile but the
                            // whole output.
                            assert!(!join_tail || rows.len() >= tile.0.min(m));
                            assert!(cols.end == n || cols.end % tile.1 == 0);
                            assert_eq!((b.rows(), b.cols(), b.ld()), (rows.len(), cols.len(), ldc));
                            for i in 0..b.rows() {
                                b.row(i).iter_mut().for_each(|v| *v += 1.0);
                            }
                        })
                        .unwrap();
                        let row_tiles =
                            if join_tail { (m / tile.0).max(1) } else { m.div_ceil(tile.0) };
                        let tiles = row_tiles * n.div_ceil(tile.1);
                        assert!(blocks.into_inner() <= workers.min(tiles));
                        for (i, &v) in c.iter().enumerate() {
                            let inside = i / ldc < m && i % ldc < n;
                            assert_eq!(
                                v,
                                if inside { 1.0 } else { 0.0 },
                                "{m}x{n} {tile:?} {workers}: {i}"
                            );
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn grid_prefers_columns_when_blocks_convert_weights() {
        // (shape, tile, work per value, fixed rows, threads) -> (row blocks, column blocks).
        for (shape, tile, work_per_value, fixed_rows, threads, want) in [
            // Moonshine's 416 outputs, 82 frames: 13 pairs of panels on 4 threads.
            ((82, 416, 416), (8, 32), 416, 4, 4, (1, 4)),
            // Few columns, many rows: rows too.
            ((413, 32, 32), (8, 16), 416, 4, 4, (2, 2)),
            // openWakeWord's 24 output channels (3 panels) over 2368 pixels, 2 threads.
            ((24, 2368, 2368), (8, 12), 72, 0, 2, (1, 2)),
        ] {
            let grid = Grid { shape, tile, work_per_value, fixed_rows, join_tail: false };
            assert_eq!(grid.split(threads), want, "{grid:?}");
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
