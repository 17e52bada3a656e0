//! Tensor contracts: [`Shape`] (rank <= 4, stored inline), [`Layout`], f32 views
//! ([`TensorView`], [`TensorViewMut`]) and i32 index views ([`IndexView`]).
//!
//! Views borrow contiguous row-major data: dimensions are listed outermost first and the
//! last one is contiguous. Constructors check that the data length equals the product of
//! the dimensions and return [`Error`] otherwise; they never panic.

use crate::dim::Dim;
use crate::error::Error;

/// Largest rank a [`Shape`] stores.
pub const MAX_RANK: usize = 4;

/// A tensor shape of rank 1..=[`MAX_RANK`], stored inline (no allocation).
///
/// Generic over [`Dim`]: `Shape<usize>` at run time, symbolic inside `neon_plan!`.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Shape<D = usize> {
    dims: [D; MAX_RANK],
    rank: u8,
}

impl<D: Dim> Shape<D> {
    /// A shape from its dimensions, outermost first.
    ///
    /// # Errors
    /// [`Error::BadShape`] when `dims` is empty, longer than [`MAX_RANK`], or has a
    /// dimension that can be 0.
    pub fn new(dims: &[D]) -> Result<Self, Error> {
        if dims.is_empty() || dims.len() > MAX_RANK {
            return Err(Error::BadShape { reason: "rank must be 1..=4" });
        }
        if dims.iter().any(|d| !d.at_least(1)) {
            return Err(Error::BadShape { reason: "every dimension must be >= 1" });
        }
        Ok(Self {
            dims: core::array::from_fn(|i| dims.get(i).cloned().unwrap_or_else(|| D::constant(1))),
            rank: dims.len() as u8,
        })
    }

    /// Number of dimensions (1..=4).
    pub fn rank(&self) -> usize {
        self.rank as usize
    }

    /// The dimensions, outermost first.
    pub fn dims(&self) -> &[D] {
        &self.dims[..self.rank as usize]
    }

    /// Dimension `axis` (outermost = 0), or `None` past the rank.
    pub fn dim(&self, axis: usize) -> Option<&D> {
        self.dims().get(axis)
    }

    /// Product of the dimensions.
    pub fn numel(&self) -> D {
        self.dims().iter().skip(1).fold(self.dims[0].clone(), |acc, d| acc.mul(d))
    }
}

/// What the axes of a sequence or image mean.
///
/// `ChannelFirst`: channels are the outermost axis (`[channels, frames]`,
/// `[channels, height, width]`). `FrameMajor`: channels are the innermost, contiguous axis
/// (`[frames, channels]`, the layout of transformer activations and of `Linear`).
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub enum Layout {
    /// `[channels, frames]` (the default for sequences).
    #[default]
    ChannelFirst,
    /// `[frames, channels]`.
    FrameMajor,
}

fn check_len(len: usize, shape: &Shape) -> Result<(), Error> {
    let expected = shape
        .dims()
        .iter()
        .try_fold(1usize, |a, &d| a.checked_mul(d))
        .ok_or(Error::BadShape { reason: "element count overflows usize" })?;
    if expected != len {
        return Err(Error::Length { what: "tensor data", expected, got: len });
    }
    Ok(())
}

/// Read-only f32 tensor: contiguous row-major data, a shape and a layout tag.
#[derive(Clone, Copy, Debug)]
pub struct TensorView<'a> {
    data: &'a [f32],
    shape: Shape,
    layout: Layout,
}

/// Writable f32 tensor: contiguous row-major data, a shape and a layout tag.
#[derive(Debug)]
pub struct TensorViewMut<'a> {
    data: &'a mut [f32],
    shape: Shape,
    layout: Layout,
}

macro_rules! view_accessors {
    () => {
        /// The shape.
        pub fn shape(&self) -> &Shape {
            &self.shape
        }
        /// The dimensions, outermost first.
        pub fn dims(&self) -> &[usize] {
            self.shape.dims()
        }
        /// The layout tag.
        pub fn layout(&self) -> Layout {
            self.layout
        }
        /// The data, row-major.
        pub fn data(&self) -> &[f32] {
            self.data
        }
        /// Channels of a rank-2 sequence (axis 0 channel-first, axis 1 frame-major).
        pub fn channels(&self) -> Option<usize> {
            self.seq_axes().map(|(c, _)| c)
        }
        /// Frames of a rank-2 sequence.
        pub fn frames(&self) -> Option<usize> {
            self.seq_axes().map(|(_, t)| t)
        }
        fn seq_axes(&self) -> Option<(usize, usize)> {
            match (self.dims(), self.layout) {
                (&[c, t], Layout::ChannelFirst) | (&[t, c], Layout::FrameMajor) => Some((c, t)),
                _ => None,
            }
        }
    };
}

impl<'a> TensorView<'a> {
    /// A view of `data` with dimensions `dims` (outermost first) and `layout`.
    ///
    /// # Errors
    /// [`Error::BadShape`] for a rank outside 1..=4 or a zero dimension;
    /// [`Error::Length`] when `data.len()` is not the product of the dimensions.
    pub fn new(data: &'a [f32], dims: &[usize], layout: Layout) -> Result<Self, Error> {
        let shape = Shape::new(dims)?;
        check_len(data.len(), &shape)?;
        Ok(Self { data, shape, layout })
    }
    view_accessors!();
}

impl<'a> TensorViewMut<'a> {
    /// A writable view of `data` with dimensions `dims` (outermost first) and `layout`.
    ///
    /// # Errors
    /// [`Error::BadShape`] for a rank outside 1..=4 or a zero dimension;
    /// [`Error::Length`] when `data.len()` is not the product of the dimensions.
    pub fn new(data: &'a mut [f32], dims: &[usize], layout: Layout) -> Result<Self, Error> {
        let shape = Shape::new(dims)?;
        check_len(data.len(), &shape)?;
        Ok(Self { data, shape, layout })
    }
    view_accessors!();
    /// The data, row-major, writable.
    pub fn data_mut(&mut self) -> &mut [f32] {
        self.data
    }
    /// A read-only view of the same tensor.
    pub fn as_view(&self) -> TensorView<'_> {
        TensorView { data: self.data, shape: self.shape, layout: self.layout }
    }
}

/// Read-only i32 tensor of indices (token ids for embedding lookups).
#[derive(Clone, Copy, Debug)]
pub struct IndexView<'a> {
    data: &'a [i32],
    shape: Shape,
}

impl<'a> IndexView<'a> {
    /// A view of `data` with dimensions `dims` (outermost first).
    ///
    /// # Errors
    /// [`Error::BadShape`] for a rank outside 1..=4 or a zero dimension;
    /// [`Error::Length`] when `data.len()` is not the product of the dimensions.
    pub fn new(data: &'a [i32], dims: &[usize]) -> Result<Self, Error> {
        let shape = Shape::new(dims)?;
        check_len(data.len(), &shape)?;
        Ok(Self { data, shape })
    }
    /// The shape.
    pub fn shape(&self) -> &Shape {
        &self.shape
    }
    /// The indices, row-major.
    pub fn data(&self) -> &[i32] {
        self.data
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shape_rank_bounds() {
        assert!(Shape::new(&[] as &[usize]).is_err());
        assert!(Shape::new(&[1usize, 2, 3, 4, 5]).is_err());
        assert!(Shape::new(&[3usize, 0]).is_err());
        let s = Shape::new(&[3usize, 5]).unwrap();
        assert_eq!(s.rank(), 2);
        assert_eq!(s.dims(), &[3, 5]);
        assert_eq!(s.numel(), 15);
        assert_eq!(s.dim(2), None);
    }

    #[test]
    fn view_length_checked() {
        let d = [0.0f32; 6];
        assert!(TensorView::new(&d[..5], &[2, 3], Layout::ChannelFirst).is_err());
        let v = TensorView::new(&d, &[2, 3], Layout::FrameMajor).unwrap();
        assert_eq!(v.frames(), Some(2));
        assert_eq!(v.channels(), Some(3));
        let idx = [1i32, 2];
        assert!(IndexView::new(&idx, &[3]).is_err());
    }

    #[test]
    fn numel_overflow_is_error() {
        let d = [0.0f32; 1];
        assert!(matches!(
            TensorView::new(&d, &[usize::MAX, 2], Layout::ChannelFirst),
            Err(Error::BadShape { .. })
        ));
    }
}
