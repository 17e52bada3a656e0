//! Sequence bookkeeping along the frame axis: [`ConcatFrames`], [`LastFrames`] and
//! [`WriteFrames`]. These are copies (no arithmetic), used for streaming state: a causal
//! conv prepends its history to each chunk and keeps the last frames for the next one, and
//! a KV cache receives each step's keys and values at the decoding position.
//!
//! Every operator works on rank-2 sequences in either layout: channel-first
//! `[channels, frames]` (one contiguous row per channel) or frame-major
//! `[frames, channels]` (one contiguous row per frame). [`ConcatFrames`] and [`LastFrames`]
//! also take channel-first images `[channels, frames, width]` whose rows are frames (e.g.
//! the time rows of a spectrogram image in a streaming conv2d stack): each frame is then
//! `width` values per channel.

use crate::dim::Dim;
use crate::error::{Error, ShapeError};
use crate::ops::{
    expect_dim, expect_layout, expect_rank, expect_shape, layout_name, only_input, InPlace,
    ShapeRule,
};
use crate::tensor::{Layout, Shape, TensorView, TensorViewMut};

/// `(channels, frames)` of a rank-2 sequence (or the first two axes of a channel-first
/// image) in `layout`.
pub(crate) fn seq<D: Dim>(layout: Layout, shape: &Shape<D>) -> (D, D) {
    let d = shape.dims();
    match layout {
        Layout::ChannelFirst => (d[0].clone(), d[1].clone()),
        Layout::FrameMajor => (d[1].clone(), d[0].clone()),
    }
}

/// The shape of `frames` frames of `like` (a sequence or image in `layout`): `like` with
/// its frame axis replaced.
pub(crate) fn make<D: Dim>(
    op: &'static str,
    layout: Layout,
    like: &Shape<D>,
    frames: D,
) -> Result<Shape<D>, ShapeError<D>> {
    let mut dims = [D::constant(1), D::constant(1), D::constant(1)];
    let rank = like.rank();
    dims[..rank].clone_from_slice(like.dims());
    dims[frames_axis(layout)] = frames;
    Shape::new(&dims[..rank]).map_err(|_| ShapeError::Geometry { op, reason: "empty output" })
}

/// The ranks the rules of [`ConcatFrames`] and [`LastFrames`] accept in `layout` (and the
/// wording of the error).
fn ranks(layout: Layout) -> (&'static [usize], &'static str) {
    match layout {
        Layout::ChannelFirst => {
            (&[2, 3], "2 or 3 ([channels, frames] or [channels, frames, width])")
        }
        Layout::FrameMajor => (&[2], "2"),
    }
}

/// Values per channel and frame: the width of a channel-first image, else 1.
fn frame_width(dims: &[usize]) -> usize {
    dims.get(2).copied().unwrap_or(1)
}

fn frames_axis(layout: Layout) -> usize {
    match layout {
        Layout::ChannelFirst => 1,
        Layout::FrameMajor => 0,
    }
}

fn check_views(
    op: &'static str,
    layout: Layout,
    ins: &[&TensorView<'_>],
    out: &TensorViewMut<'_>,
    want: &Shape,
) -> Result<(), Error> {
    for v in ins {
        expect_layout(op, v.layout(), layout, layout_name(layout))?;
    }
    expect_layout(op, out.layout(), layout, layout_name(layout))?;
    expect_shape(op, ins.len(), out.shape(), want)?;
    Ok(())
}

/// The two inputs of a rule on two sequences in `layout`: both rank 2, the second with the
/// first's channel count (`missing`: the [`ShapeError::Geometry`] reason when there are not
/// exactly two).
fn two_sequences<'a, D: Dim>(
    op: &'static str,
    layout: Layout,
    inputs: &'a [Shape<D>],
    missing: &'static str,
) -> Result<(&'a Shape<D>, &'a Shape<D>), ShapeError<D>> {
    let [a, b] = inputs else {
        return Err(ShapeError::Geometry { op, reason: missing });
    };
    expect_rank(op, 0, a, &[2], "2")?;
    expect_rank(op, 1, b, &[2], "2")?;
    let (channels, _) = seq(layout, a);
    expect_dim(op, 1, b, 1 - frames_axis(layout), "channels", &channels)?;
    Ok((a, b))
}

/// The two inputs of [`ConcatFrames`]: sequences or images of a rank [`ranks`] allows,
/// equal in every dim but frames.
fn two_concatenable<'a, D: Dim>(
    op: &'static str,
    layout: Layout,
    inputs: &'a [Shape<D>],
) -> Result<(&'a Shape<D>, &'a Shape<D>), ShapeError<D>> {
    let [a, b] = inputs else {
        return Err(ShapeError::Geometry { op, reason: "concat_frames takes two inputs" });
    };
    let (allowed, wording) = ranks(layout);
    expect_rank(op, 0, a, allowed, wording)?;
    expect_rank(op, 1, b, &[a.rank()], wording)?;
    let (channels, _) = seq(layout, a);
    expect_dim(op, 1, b, 1 - frames_axis(layout), "channels", &channels)?;
    if a.rank() == 3 {
        expect_dim(op, 1, b, 2, "width", &a.dims()[2])?;
    }
    Ok((a, b))
}

/// Concatenation of two sequences along frames: `[C, Ta] ++ [C, Tb] -> [C, Ta + Tb]`
/// (channel-first) or `[Ta, C] ++ [Tb, C] -> [Ta + Tb, C]` (frame-major); of two
/// channel-first images along their rows: `[C, Ta, W] ++ [C, Tb, W] -> [C, Ta + Tb, W]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ConcatFrames {
    /// Layout of both inputs and the output.
    pub layout: Layout,
}

impl ShapeRule for ConcatFrames {
    fn name(&self) -> &'static str {
        "concat_frames"
    }
    fn arity(&self) -> usize {
        2
    }
    /// # Errors
    /// [`ShapeError::Rank`] unless two rank-2 inputs (or, channel-first, two rank-3
    /// images); [`ShapeError::Dim`] when their channel counts (or widths) differ.
    fn output_shape<D: Dim>(&self, inputs: &[Shape<D>]) -> Result<Shape<D>, ShapeError<D>> {
        let op = self.name();
        let (a, b) = two_concatenable(op, self.layout, inputs)?;
        let ((_, ta), (_, tb)) = (seq(self.layout, a), seq(self.layout, b));
        make(op, self.layout, a, ta.add(&tb))
    }
    layout_facts!(self.layout);
}

impl ConcatFrames {
    /// Writes `a` followed by `b` (along frames) into `out`.
    ///
    /// # Errors
    /// [`Error::Shape`] from the shape rule or for an output of the wrong shape,
    /// [`Error::Layout`] when a view is not in `self.layout`. Nothing is written on error.
    pub fn run(
        &self,
        a: &TensorView<'_>,
        b: &TensorView<'_>,
        out: &mut TensorViewMut<'_>,
    ) -> Result<(), Error> {
        let want = self.output_shape(&[*a.shape(), *b.shape()])?;
        check_views(self.name(), self.layout, &[a, b], out, &want)?;
        let y = out.data_mut();
        match self.layout {
            Layout::FrameMajor => {
                let (ya, yb) = y.split_at_mut(a.data().len());
                ya.copy_from_slice(a.data());
                yb.copy_from_slice(b.data());
            }
            Layout::ChannelFirst => {
                let w = frame_width(a.dims());
                let (ta, tb) = (a.dims()[1] * w, b.dims()[1] * w);
                let rows = y
                    .chunks_exact_mut(ta + tb)
                    .zip(a.data().chunks_exact(ta))
                    .zip(b.data().chunks_exact(tb));
                for ((row, ra), rb) in rows {
                    row[..ta].copy_from_slice(ra);
                    row[ta..].copy_from_slice(rb);
                }
            }
        }
        Ok(())
    }
}

/// The last `frames` frames of a sequence: `[C, T] -> [C, frames]` (channel-first) or
/// `[T, C] -> [frames, C]` (frame-major), `T >= frames`; the last rows of a channel-first
/// image: `[C, T, W] -> [C, frames, W]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LastFrames {
    /// Frames kept (>= 1).
    pub frames: usize,
    /// Layout of the input and the output.
    pub layout: Layout,
}

impl ShapeRule for LastFrames {
    fn name(&self) -> &'static str {
        "last_frames"
    }
    /// # Errors
    /// [`ShapeError::Geometry`] for `frames == 0`; [`ShapeError::Rank`] unless one rank-2
    /// input (or, channel-first, a rank-3 image); [`ShapeError::TooSmall`] when the input
    /// can have fewer than `frames` frames.
    fn output_shape<D: Dim>(&self, inputs: &[Shape<D>]) -> Result<Shape<D>, ShapeError<D>> {
        let op = self.name();
        if self.frames == 0 {
            return Err(ShapeError::Geometry { op, reason: "frames must be >= 1" });
        }
        let x = only_input(op, inputs, "last_frames takes one input")?;
        let (allowed, wording) = ranks(self.layout);
        expect_rank(op, 0, x, allowed, wording)?;
        let (_, t) = seq(self.layout, x);
        if !t.at_least(self.frames) {
            return Err(ShapeError::TooSmall {
                op,
                what: "input frames",
                value: t,
                min: self.frames,
            });
        }
        make(op, self.layout, x, D::constant(self.frames))
    }
    layout_facts!(self.layout);
}

impl LastFrames {
    /// Copies the last `self.frames` frames of `x` into `out`.
    ///
    /// # Errors
    /// As [`ConcatFrames::run`].
    pub fn run(&self, x: &TensorView<'_>, out: &mut TensorViewMut<'_>) -> Result<(), Error> {
        let want = self.output_shape(&[*x.shape()])?;
        check_views(self.name(), self.layout, &[x], out, &want)?;
        let n = self.frames;
        match self.layout {
            Layout::FrameMajor => {
                let len = out.data().len();
                out.data_mut().copy_from_slice(&x.data()[x.data().len() - len..]);
            }
            Layout::ChannelFirst => {
                let w = frame_width(x.dims());
                let (t, n) = (x.dims()[1] * w, n * w);
                for (row, rx) in out.data_mut().chunks_exact_mut(n).zip(x.data().chunks_exact(t)) {
                    row.copy_from_slice(&rx[t - n..]);
                }
            }
        }
        Ok(())
    }
}

/// Writes a sequence into a longer one at a frame offset, in place:
/// `state[.., at .. at + T] = x` for `x: [C, T]` and `state: [C, capacity]`
/// (channel-first; frame-major: rows `at .. at + T` of `[capacity, C]`). The KV-cache
/// append. The output is the state itself.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WriteFrames {
    /// Layout of the state and the input.
    pub layout: Layout,
}

impl ShapeRule for WriteFrames {
    fn name(&self) -> &'static str {
        "write_frames"
    }
    fn arity(&self) -> usize {
        2
    }
    /// `(state, x) -> state's shape`. Whether `x` fits at the offset is checked at run time.
    ///
    /// # Errors
    /// [`ShapeError::Rank`] unless two rank-2 inputs; [`ShapeError::Dim`] when their
    /// channel counts differ.
    fn output_shape<D: Dim>(&self, inputs: &[Shape<D>]) -> Result<Shape<D>, ShapeError<D>> {
        let op = self.name();
        let (state, _) = two_sequences(op, self.layout, inputs, "write_frames takes two inputs")?;
        Ok(state.clone())
    }
    fn in_place(&self) -> InPlace {
        InPlace::Always
    }
    layout_facts!(self.layout);
}

impl WriteFrames {
    /// Writes `x` into `state` starting at frame `at`.
    ///
    /// # Errors
    /// [`Error::OutOfRange`] (named `"at"`) when `at + frames(x)` exceeds the state's
    /// capacity, [`Error::Shape`] / [`Error::Layout`] as [`ConcatFrames::run`]. Nothing is
    /// written on error.
    pub fn run(
        &self,
        state: &mut TensorViewMut<'_>,
        x: &TensorView<'_>,
        at: usize,
    ) -> Result<(), Error> {
        let op = self.name();
        self.output_shape(&[*state.shape(), *x.shape()])?;
        expect_layout(op, state.layout(), self.layout, layout_name(self.layout))?;
        expect_layout(op, x.layout(), self.layout, layout_name(self.layout))?;
        let (c, cap) = seq(self.layout, state.shape());
        let (_, t) = seq(self.layout, x.shape());
        if t > cap || at > cap - t {
            return Err(Error::OutOfRange {
                name: "at",
                value: at,
                min: 0,
                max: cap.saturating_sub(t),
            });
        }
        let s = state.data_mut();
        match self.layout {
            Layout::FrameMajor => s[at * c..(at + t) * c].copy_from_slice(x.data()),
            Layout::ChannelFirst => {
                for (row, rx) in s.chunks_exact_mut(cap).zip(x.data().chunks_exact(t)) {
                    row[at..at + t].copy_from_slice(rx);
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn concat_last_write_channel_first() {
        let a = [1.0, 2.0, 3.0, 4.0]; // [2, 2]
        let b = [5.0, 6.0, 7.0, 8.0, 9.0, 10.0]; // [2, 3]
        let (va, vb) = (
            TensorView::new(&a, &[2, 2], Layout::ChannelFirst).unwrap(),
            TensorView::new(&b, &[2, 3], Layout::ChannelFirst).unwrap(),
        );
        let mut y = [0.0; 10];
        let mut vy = TensorViewMut::new(&mut y, &[2, 5], Layout::ChannelFirst).unwrap();
        let cat = ConcatFrames { layout: Layout::ChannelFirst };
        cat.run(&va, &vb, &mut vy).unwrap();
        assert_eq!(y, [1.0, 2.0, 5.0, 6.0, 7.0, 3.0, 4.0, 8.0, 9.0, 10.0]);

        let vy = TensorView::new(&y, &[2, 5], Layout::ChannelFirst).unwrap();
        let mut t = [0.0; 4];
        let mut vt = TensorViewMut::new(&mut t, &[2, 2], Layout::ChannelFirst).unwrap();
        LastFrames { frames: 2, layout: Layout::ChannelFirst }.run(&vy, &mut vt).unwrap();
        assert_eq!(t, [6.0, 7.0, 9.0, 10.0]);

        let mut s = [0.0; 8];
        let mut vs = TensorViewMut::new(&mut s, &[2, 4], Layout::ChannelFirst).unwrap();
        let w = WriteFrames { layout: Layout::ChannelFirst };
        w.run(&mut vs, &va, 1).unwrap();
        assert_eq!(s, [0.0, 1.0, 2.0, 0.0, 0.0, 3.0, 4.0, 0.0]);
        let mut vs = TensorViewMut::new(&mut s, &[2, 4], Layout::ChannelFirst).unwrap();
        assert!(matches!(w.run(&mut vs, &va, 3), Err(Error::OutOfRange { max: 2, .. })));
        assert_eq!(s, [0.0, 1.0, 2.0, 0.0, 0.0, 3.0, 4.0, 0.0]);
    }

    #[test]
    fn channel_first_images_concatenate_and_keep_rows() {
        // [2 channels, 1 row, 3 wide] ++ [2, 2, 3] -> [2, 3, 3]: per channel, a's row then b's.
        let a: [f32; 6] = core::array::from_fn(|i| i as f32);
        let b: [f32; 12] = core::array::from_fn(|i| 10.0 + i as f32);
        let va = TensorView::new(&a, &[2, 1, 3], Layout::ChannelFirst).unwrap();
        let vb = TensorView::new(&b, &[2, 2, 3], Layout::ChannelFirst).unwrap();
        let mut y = [0.0; 18];
        let mut vy = TensorViewMut::new(&mut y, &[2, 3, 3], Layout::ChannelFirst).unwrap();
        let cat = ConcatFrames { layout: Layout::ChannelFirst };
        cat.run(&va, &vb, &mut vy).unwrap();
        let want = [
            0.0, 1.0, 2.0, 10.0, 11.0, 12.0, 13.0, 14.0, 15.0, // channel 0
            3.0, 4.0, 5.0, 16.0, 17.0, 18.0, 19.0, 20.0, 21.0, // channel 1
        ];
        assert_eq!(y, want);

        let vy = TensorView::new(&y, &[2, 3, 3], Layout::ChannelFirst).unwrap();
        let mut t = [0.0; 12];
        let mut vt = TensorViewMut::new(&mut t, &[2, 2, 3], Layout::ChannelFirst).unwrap();
        LastFrames { frames: 2, layout: Layout::ChannelFirst }.run(&vy, &mut vt).unwrap();
        assert_eq!(t, b);

        // Widths must agree, ranks must agree, and frame-major images are not sequences.
        let c = [0.0; 8];
        let vc = TensorView::new(&c, &[2, 1, 4], Layout::ChannelFirst).unwrap();
        let mut y = [0.0; 16];
        let mut vy = TensorViewMut::new(&mut y, &[2, 2, 4], Layout::ChannelFirst).unwrap();
        assert!(matches!(
            cat.run(&va, &vc, &mut vy),
            Err(Error::Shape(ShapeError::Dim { arg: 1, what: "width", .. }))
        ));
        let s2 = Shape::new(&[2, 3]).unwrap();
        let s3 = Shape::new(&[2, 1, 3]).unwrap();
        assert!(matches!(cat.output_shape(&[s3, s2]), Err(ShapeError::Rank { arg: 1, .. })));
        let fm = ConcatFrames { layout: Layout::FrameMajor };
        assert!(matches!(fm.output_shape(&[s3, s3]), Err(ShapeError::Rank { arg: 0, .. })));
        let last = LastFrames { frames: 2, layout: Layout::ChannelFirst };
        assert!(matches!(last.output_shape(&[s3]), Err(ShapeError::TooSmall { .. })));
    }

    #[test]
    fn frame_major_and_errors() {
        let a = [1.0, 2.0, 3.0, 4.0]; // [2 frames, 2 channels]
        let va = TensorView::new(&a, &[2, 2], Layout::FrameMajor).unwrap();
        let mut s = [0.0; 6];
        let mut vs = TensorViewMut::new(&mut s, &[3, 2], Layout::FrameMajor).unwrap();
        WriteFrames { layout: Layout::FrameMajor }.run(&mut vs, &va, 1).unwrap();
        assert_eq!(s, [0.0, 0.0, 1.0, 2.0, 3.0, 4.0]);

        let b = [0.0; 3];
        let vb = TensorView::new(&b, &[3, 1], Layout::FrameMajor).unwrap();
        let cat = ConcatFrames { layout: Layout::FrameMajor };
        let mut y = [0.0; 10];
        let mut vy = TensorViewMut::new(&mut y, &[5, 2], Layout::FrameMajor).unwrap();
        assert!(matches!(
            cat.run(&va, &vb, &mut vy),
            Err(Error::Shape(ShapeError::Dim { arg: 1, .. }))
        ));
        let last = LastFrames { frames: 3, layout: Layout::FrameMajor };
        let mut t = [0.0; 6];
        let mut vt = TensorViewMut::new(&mut t, &[3, 2], Layout::FrameMajor).unwrap();
        assert!(matches!(last.run(&va, &mut vt), Err(Error::Shape(ShapeError::TooSmall { .. }))));
    }
}
