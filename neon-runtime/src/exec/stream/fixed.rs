//! The steps of every stream plan (no `alloc`): the copy geometry of concatenation, slicing,
//! splitting, reshaping and the variables' reads and writes ([`Rows`]), and the steps over a
//! workspace and a state held as `u128` words ([`copy`], [`copy_input`], [`read`],
//! [`assign`], [`assign_input`], [`op`], [`op_input`], [`output`]).
//!
//! The run-time `StreamPlan` (feature `alloc`) makes these calls at the byte offsets it
//! resolved when it was built. A plan compiled to Rust (`StreamPlan::to_rust`, on the host)
//! is the same calls written out with the constant offsets: its workspace and its
//! state are `[u128; N]` arrays (16-byte aligned), each value a `(offset, bytes)` region of
//! them, typed through [`view`] / [`view_mut`] (refusing a misaligned or ragged region). The
//! operators run over two disjoint regions of one workspace, split by
//! [`carve`]. So the generated code holds no `unsafe`, and every
//! error is returned, not panicked.

use super::elem::{bytes, view, view_mut, words_bytes, words_bytes_mut, Elem};
use crate::error::Error;
use crate::workspace::carve;

/// A copy of `outer` blocks of `chunk` bytes: block `i` is read at
/// `src_start + i * src_stride` and written at `dst_start + i * dst_stride` (offsets in bytes
/// within the source and destination values). Concatenation is one `Rows` per input,
/// slicing and splitting one per part, a reshape or a variable's read or write one
/// contiguous block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rows {
    /// Blocks (the product of the dimensions before the axis).
    pub outer: usize,
    /// Bytes per block.
    pub chunk: usize,
    /// First source byte.
    pub src_start: usize,
    /// Source bytes between blocks.
    pub src_stride: usize,
    /// First destination byte.
    pub dst_start: usize,
    /// Destination bytes between blocks.
    pub dst_stride: usize,
}

impl Rows {
    /// One contiguous block of `bytes`.
    pub const fn whole(bytes: usize) -> Self {
        Rows { outer: 1, chunk: bytes, src_start: 0, src_stride: 0, dst_start: 0, dst_stride: 0 }
    }

    /// Along `axis` of a tensor of `dims` with `elem` bytes per element: the blocks holding
    /// indices `start..start + len` of the axis, written at index `dst_index` of an axis of
    /// `dst_len` (the same sizes elsewhere).
    #[cfg_attr(not(feature = "alloc"), allow(dead_code))]
    pub(super) fn along(
        dims: &[usize],
        elem: usize,
        axis: usize,
        [start, len]: [usize; 2],
        [dst_index, dst_len]: [usize; 2],
    ) -> Self {
        let outer: usize = dims[..axis].iter().product();
        let inner: usize = dims[axis + 1..].iter().product::<usize>() * elem;
        Rows {
            outer,
            chunk: len * inner,
            src_start: start * inner,
            src_stride: dims[axis] * inner,
            dst_start: dst_index * inner,
            dst_stride: dst_len * inner,
        }
    }

    /// Copies between two distinct buffers, `src` and `dst` being the whole values.
    ///
    /// # Errors
    /// [`Error::Length`] when a block falls outside either value (build-time checks make
    /// this unreachable).
    pub(super) fn copy(&self, src: &[u8], dst: &mut [u8]) -> Result<(), Error> {
        for i in 0..self.outer {
            let (s, d) =
                (self.src_start + i * self.src_stride, self.dst_start + i * self.dst_stride);
            let from = src.get(s..s + self.chunk).ok_or(outside(s + self.chunk, src.len()))?;
            let dst_len = dst.len();
            let to = dst.get_mut(d..d + self.chunk).ok_or(outside(d + self.chunk, dst_len))?;
            to.copy_from_slice(from);
        }
        Ok(())
    }

    /// Copies within one buffer: the source value at byte `src` of `ws`, the destination at
    /// byte `dst` (a block that is already in place is skipped).
    ///
    /// # Errors
    /// As [`copy`](Self::copy).
    pub(super) fn copy_within(&self, ws: &mut [u8], src: usize, dst: usize) -> Result<(), Error> {
        for i in 0..self.outer {
            let s = src + self.src_start + i * self.src_stride;
            let d = dst + self.dst_start + i * self.dst_stride;
            let end = s.max(d) + self.chunk;
            if end > ws.len() {
                return Err(outside(end, ws.len()));
            }
            if s != d {
                ws.copy_within(s..s + self.chunk, d);
            }
        }
        Ok(())
    }
}

/// The error of a copy reaching byte `end` of a buffer of `len` bytes.
fn outside(end: usize, len: usize) -> Error {
    Error::Length { what: "stream plan copy", expected: end, got: len }
}

/// The error of a value outside its buffer (a plan the builder placed never gives one).
pub(super) const UNPLACED: Error = Error::Plan { reason: "a value lies outside its buffer" };

/// Bytes `at..at + len` of `buf`.
fn region(buf: &[u8], (at, len): (usize, usize)) -> Result<&[u8], Error> {
    buf.get(at..at + len).ok_or(UNPLACED)
}

/// Bytes `at..at + len` of `buf`, writable.
pub(super) fn region_mut(buf: &mut [u8], (at, len): (usize, usize)) -> Result<&mut [u8], Error> {
    buf.get_mut(at..at + len).ok_or(UNPLACED)
}

/// Copies by `rows` within the workspace `ws`: from the value at byte `src` to the value at
/// byte `dst` (concatenation, slicing, reshaping between workspace values).
///
/// # Errors
/// [`Error::Length`] when a block falls outside `ws`.
pub fn copy(ws: &mut [u128], rows: &Rows, src: usize, dst: usize) -> Result<(), Error> {
    rows.copy_within(words_bytes_mut(ws), src, dst)
}

/// Copies by `rows` from the plan input `x` into the workspace value `dst` (`(offset,
/// bytes)`).
///
/// # Errors
/// [`Error::Length`] / [`Error::Plan`] when a block or `dst` falls outside its buffer.
pub fn copy_input<T: Elem>(
    x: &[T],
    rows: &Rows,
    ws: &mut [u128],
    dst: (usize, usize),
) -> Result<(), Error> {
    rows.copy(bytes(x), region_mut(words_bytes_mut(ws), dst)?)
}

/// READ_VARIABLE: the variable at `var` (`(offset, bytes)` in `state`) copied by `rows`
/// into the workspace value `dst` (`(offset, bytes)`): the whole variable
/// ([`Rows::whole`]), or its part of a concatenation that reads the state in place.
///
/// # Errors
/// [`Error::Length`] / [`Error::Plan`] when a block or a region falls outside its buffer.
pub fn read(
    state: &[u128],
    var: (usize, usize),
    rows: &Rows,
    ws: &mut [u128],
    dst: (usize, usize),
) -> Result<(), Error> {
    rows.copy(region(words_bytes(state), var)?, region_mut(words_bytes_mut(ws), dst)?)
}

/// ASSIGN_VARIABLE: the workspace value `src` (`(offset, bytes)`) copied by `rows` into the
/// variable at `var`: the whole value ([`Rows::whole`]), or the slice of it that the
/// variable keeps (a slice fused into its assignment).
///
/// # Errors
/// As [`read`].
pub fn assign(
    ws: &[u128],
    src: (usize, usize),
    rows: &Rows,
    state: &mut [u128],
    var: (usize, usize),
) -> Result<(), Error> {
    rows.copy(region(words_bytes(ws), src)?, region_mut(words_bytes_mut(state), var)?)
}

/// ASSIGN_VARIABLE from the plan input `x`, copied by `rows`.
///
/// # Errors
/// As [`read`].
pub fn assign_input<T: Elem>(
    x: &[T],
    rows: &Rows,
    state: &mut [u128],
    var: (usize, usize),
) -> Result<(), Error> {
    rows.copy(bytes(x), region_mut(words_bytes_mut(state), var)?)
}

/// An operator `f` from the workspace value `src` (viewed as `T`) to the disjoint workspace
/// value `dst` (viewed as `U`), each `(offset, bytes)`.
///
/// # Errors
/// [`carve`]'s errors for regions outside `ws` or overlapping, [`Error::BadShape`] for a
/// misaligned or ragged region, `f`'s own.
pub fn op<T: Elem, U: Elem>(
    ws: &mut [u128],
    src: (usize, usize),
    dst: (usize, usize),
    f: impl FnOnce(&[T], &mut [U]) -> Result<(), Error>,
) -> Result<(), Error> {
    let ([x], [y]) = carve(words_bytes_mut(ws), [src], [dst])?;
    f(view(x)?, view_mut(y)?)
}

/// An operator `f` from the plan input `x` to the workspace value `dst`.
///
/// # Errors
/// As [`op`].
pub fn op_input<T: Elem, U: Elem>(
    x: &[T],
    ws: &mut [u128],
    dst: (usize, usize),
    f: impl FnOnce(&[T], &mut [U]) -> Result<(), Error>,
) -> Result<(), Error> {
    f(x, view_mut(region_mut(words_bytes_mut(ws), dst)?)?)
}

/// The workspace value at `at` (`(offset, bytes)`) viewed as `T` (the plan's output).
///
/// # Errors
/// [`Error::Plan`] outside `ws`, [`Error::BadShape`] misaligned or ragged.
pub fn output<T: Elem>(ws: &[u128], at: (usize, usize)) -> Result<&[T], Error> {
    view(region(words_bytes(ws), at)?)
}
