//! [`StridedMut`]: the output operand of the blocked GEMM kernels, a mutable block of a
//! row-major f32 matrix whose rows are `ld` values apart.
//!
//! A block of whole rows is an ordinary slice, but a block of *columns* (rows `r0..r1`,
//! columns `c0..c1` of a wider matrix) is not: the values between its rows belong to
//! other blocks, which other tasks of the same dispatch write at the same time, so no
//! `&mut [f32]` may cover the block's span. A `StridedMut` owns exactly its `rows x cols`
//! values: safe code reaches them one row at a time ([`StridedMut::row`]) or as a smaller
//! block ([`StridedMut::block`]); kernels take [`StridedMut::as_mut_ptr`] and write only
//! inside the block (their `// SAFETY:` comments say why). The drivers of
//! [`parallel`](super::parallel) hand out disjoint blocks of one output to the tasks of a
//! dispatch; everywhere else a block comes from a slice ([`StridedMut::new`]).

use core::marker::PhantomData;
use core::ops::Range;
use core::ptr::NonNull;

/// A mutable `rows x cols` block of a row-major f32 matrix: row `i` is the `cols` values
/// from `i * ld` on (relative to the block's first value). The values between rows
/// (columns `cols..ld`) are not part of the block.
#[derive(Debug)]
pub struct StridedMut<'a> {
    ptr: NonNull<f32>,
    rows: usize,
    cols: usize,
    ld: usize,
    _borrow: PhantomData<&'a mut [f32]>,
}

// SAFETY: a `StridedMut` is a set of `&mut f32` it borrows exclusively (no other live
// reference or block reaches its values), so moving it to another thread is moving those
// mutable borrows, which is sound for `f32`.
unsafe impl Send for StridedMut<'_> {}

impl<'a> StridedMut<'a> {
    /// Rows `0..rows` of `data`, `ld` apart, `cols` values each.
    ///
    /// # Panics
    /// When `rows > 1` and `cols > ld`, or `data` is shorter than `(rows - 1) * ld + cols`
    /// (for `rows, cols >= 1`).
    pub fn new(data: &'a mut [f32], rows: usize, cols: usize, ld: usize) -> Self {
        assert!(rows <= 1 || cols <= ld, "StridedMut: cols > ld");
        let need = span(rows, cols, ld).expect("StridedMut: span overflows");
        assert!(data.len() >= need, "StridedMut: data too short");
        // `as_mut_ptr` of a slice is never null (dangling but aligned when empty).
        let ptr = NonNull::new(data.as_mut_ptr()).expect("slice pointer");
        Self { ptr, rows, cols, ld, _borrow: PhantomData }
    }

    /// A block at `ptr` (see the type's docs).
    ///
    /// # Safety
    /// `ptr` is non-null and aligned, and for the lifetime `'a` the `rows x cols` values
    /// `ptr + i * ld + j` (`i < rows`, `j < cols`) are valid for reads and writes and
    /// reached by nothing else (rows do not overlap: `cols <= ld` when `rows > 1`).
    pub(crate) unsafe fn from_raw_parts(
        ptr: *mut f32,
        rows: usize,
        cols: usize,
        ld: usize,
    ) -> Self {
        debug_assert!(rows <= 1 || cols <= ld);
        // SAFETY: non-null (the caller's contract).
        let ptr = unsafe { NonNull::new_unchecked(ptr) };
        Self { ptr, rows, cols, ld, _borrow: PhantomData }
    }

    /// Rows of the block.
    #[inline(always)]
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// Values per row.
    #[inline(always)]
    pub fn cols(&self) -> usize {
        self.cols
    }

    /// Distance (values) between the starts of consecutive rows.
    #[inline(always)]
    pub fn ld(&self) -> usize {
        self.ld
    }

    /// Row `i`: its `cols` values.
    ///
    /// # Panics
    /// When `i >= rows`.
    #[inline(always)]
    pub fn row(&mut self, i: usize) -> &mut [f32] {
        assert!(i < self.rows, "StridedMut: row {i} of {}", self.rows);
        // SAFETY: row i < rows of the block: `cols` values owned by it (the type's
        // invariant), borrowed through `&mut self` for the slice's lifetime.
        unsafe { core::slice::from_raw_parts_mut(self.ptr.as_ptr().add(i * self.ld), self.cols) }
    }

    /// Rows `rows` and columns `cols` of the block, as a block of its own (borrowing this
    /// one).
    ///
    /// # Panics
    /// When a range is decreasing or ends past the block.
    #[inline]
    pub fn block(&mut self, rows: Range<usize>, cols: Range<usize>) -> StridedMut<'_> {
        assert!(rows.start <= rows.end && rows.end <= self.rows, "StridedMut: block rows");
        assert!(cols.start <= cols.end && cols.end <= self.cols, "StridedMut: block columns");
        let start =
            if rows.is_empty() || cols.is_empty() { 0 } else { rows.start * self.ld + cols.start };
        // SAFETY: the sub-block's values are values of this block (ranges checked), and
        // `&mut self` keeps them from every other use while it lives; `start` is the offset
        // of one of them (0 when the block is empty: the block's own pointer).
        unsafe {
            StridedMut::from_raw_parts(
                self.ptr.as_ptr().add(start),
                rows.len(),
                cols.len(),
                self.ld,
            )
        }
    }

    /// The block's first value (row 0, column 0), for kernels: value `(i, j)` is at
    /// `as_mut_ptr() + i * ld + j`. Writing elsewhere (between rows, past the block) is
    /// undefined behaviour: other blocks may own those values.
    #[inline(always)]
    pub fn as_mut_ptr(&mut self) -> *mut f32 {
        self.ptr.as_ptr()
    }
}

/// Values from the first of a block's to its last: `(rows - 1) * ld + cols` (0 when empty).
const fn span(rows: usize, cols: usize, ld: usize) -> Option<usize> {
    if rows == 0 || cols == 0 {
        return Some(0);
    }
    match (rows - 1).checked_mul(ld) {
        Some(v) => v.checked_add(cols),
        None => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_and_blocks_reach_their_values_only() {
        let mut data = [0.0f32; 5 * 7];
        let mut m = StridedMut::new(&mut data, 5, 6, 7);
        assert_eq!((m.rows(), m.cols(), m.ld()), (5, 6, 7));
        let mut b = m.block(1..4, 2..5);
        for i in 0..3 {
            for (j, v) in b.row(i).iter_mut().enumerate() {
                *v = (10 * i + j + 1) as f32;
            }
        }
        let mut e = m.block(2..2, 0..3);
        assert_eq!((e.rows(), e.cols()), (0, 3));
        let _ = e.as_mut_ptr();
        for (r, row) in data.chunks(7).enumerate() {
            for (c, &v) in row.iter().enumerate() {
                let inside = (1..4).contains(&r) && (2..5).contains(&c);
                let want = if inside { (10 * (r - 1) + (c - 2) + 1) as f32 } else { 0.0 };
                assert_eq!(v, want, "({r}, {c})");
            }
        }
    }

    #[test]
    #[should_panic(expected = "data too short")]
    fn short_data_panics() {
        let mut data = [0.0f32; 10];
        let _ = StridedMut::new(&mut data, 3, 4, 4);
    }

    #[test]
    #[should_panic(expected = "block columns")]
    fn block_out_of_range_panics() {
        let mut data = [0.0f32; 12];
        let mut m = StridedMut::new(&mut data, 3, 4, 4);
        let _ = m.block(0..1, 2..5);
    }
}
