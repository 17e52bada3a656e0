//! Element types of a stream plan's values and the typed views of their bytes.
//!
//! Every value lives in a byte buffer (the workspace, the state, the caller's input) at an
//! offset that is a multiple of [`plan::ALIGN`](crate::plan::ALIGN) = 16 bytes from a base
//! that is itself 16-byte aligned (a `u128` buffer), so an `i32` or `f32` view of it is
//! aligned. The views are made by [`slice::align_to`], and a region that is not exactly a
//! whole number of aligned elements is refused ([`Error::BadShape`]) rather than
//! reinterpreted; the four types have no padding and every bit pattern is a valid value.

use crate::error::Error;

/// The element type of a value.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ElemType {
    /// `i8` (TFLite INT8).
    I8,
    /// `u8` (TFLite UINT8).
    U8,
    /// `i32` (TFLite INT32).
    I32,
    /// `f32` (TFLite FLOAT32).
    F32,
}

impl ElemType {
    /// Bytes per element.
    pub const fn size(self) -> usize {
        match self {
            ElemType::I8 | ElemType::U8 => 1,
            ElemType::I32 | ElemType::F32 => 4,
        }
    }

    /// The type's name (`"i8"`, ...).
    pub const fn name(self) -> &'static str {
        match self {
            ElemType::I8 => "i8",
            ElemType::U8 => "u8",
            ElemType::I32 => "i32",
            ElemType::F32 => "f32",
        }
    }
}

mod sealed {
    /// Plain numbers: no padding, every bit pattern valid.
    ///
    /// # Safety
    /// Implement only for such types.
    pub unsafe trait Plain: Copy {}
    // SAFETY: primitive numbers.
    unsafe impl Plain for i8 {}
    // SAFETY: as above.
    unsafe impl Plain for u8 {}
    // SAFETY: as above.
    unsafe impl Plain for i32 {}
    // SAFETY: as above.
    unsafe impl Plain for f32 {}
    // SAFETY: as above.
    unsafe impl Plain for u128 {}
}

/// A Rust type of an [`ElemType`]: `i8`, `u8`, `i32` or `f32` (sealed: only plain numbers
/// without padding, for which every bit pattern is a valid value, so aligned bytes may be
/// viewed as them and back).
pub trait Elem: sealed::Plain + Default + 'static {
    /// Its [`ElemType`].
    const TYPE: ElemType;
}

impl Elem for i8 {
    const TYPE: ElemType = ElemType::I8;
}
impl Elem for u8 {
    const TYPE: ElemType = ElemType::U8;
}
impl Elem for i32 {
    const TYPE: ElemType = ElemType::I32;
}
impl Elem for f32 {
    const TYPE: ElemType = ElemType::F32;
}

/// The error of a region that is not a whole number of aligned elements.
const MISALIGNED: Error = Error::BadShape { reason: "value bytes misaligned for their type" };

/// `bytes` viewed as `T`.
///
/// # Errors
/// [`Error::BadShape`] unless `bytes` starts on `T`'s alignment and holds a whole number of
/// `T`.
pub fn view<T: Elem>(bytes: &[u8]) -> Result<&[T], Error> {
    // SAFETY: `T: Elem` is plain (no padding, every bit pattern valid); `align_to` respects
    // alignment, and the prefix and suffix checks keep every byte accounted for.
    let (pre, mid, post) = unsafe { bytes.align_to::<T>() };
    if pre.is_empty() && post.is_empty() {
        Ok(mid)
    } else {
        Err(MISALIGNED)
    }
}

/// `bytes` viewed mutably as `T`.
///
/// # Errors
/// As [`view`].
pub fn view_mut<T: Elem>(bytes: &mut [u8]) -> Result<&mut [T], Error> {
    // SAFETY: as in `view`; a `T` written through the view is plain bytes, valid `u8`s.
    let (pre, mid, post) = unsafe { bytes.align_to_mut::<T>() };
    if pre.is_empty() && post.is_empty() {
        Ok(mid)
    } else {
        Err(MISALIGNED)
    }
}

/// The bytes of `x`.
pub fn bytes<T: Elem>(x: &[T]) -> &[u8] {
    plain_bytes(x)
}

/// The bytes of a 16-byte aligned buffer (a workspace or a state).
pub(super) fn words_bytes(x: &[u128]) -> &[u8] {
    plain_bytes(x)
}

/// The bytes of a 16-byte aligned buffer, writable.
pub(super) fn words_bytes_mut(x: &mut [u128]) -> &mut [u8] {
    // SAFETY: `u128` has no padding and accepts every bit pattern, so bytes written through
    // the view leave valid words; `u8` has alignment 1; the slice borrows `x` mutably.
    unsafe {
        core::slice::from_raw_parts_mut(x.as_mut_ptr().cast::<u8>(), core::mem::size_of_val(x))
    }
}

/// The bytes of a slice of plain numbers.
fn plain_bytes<T: sealed::Plain>(x: &[T]) -> &[u8] {
    // SAFETY: `T: Plain` has no padding, so its `size_of_val(x)` bytes are initialised, and
    // `u8` has alignment 1; the slice borrows `x` for its lifetime.
    unsafe { core::slice::from_raw_parts(x.as_ptr().cast::<u8>(), core::mem::size_of_val(x)) }
}
