//! The planner facts `neon_plan!` reads from the runtime (`ShapeRule::in_place`,
//! `reads_layout`, `writes_layout`, stated once beside each operator's shape rule): an
//! operator the runtime lets run in place reuses its input's workspace slot, one that never
//! does gets its own, and a conv1d whose geometry writes frame-major feeds a frame-major
//! linear directly (the run validates every view's layout against the operator's, so a
//! plan that ran is a plan that tagged its views with the runtime's layouts).

use neon_macros::neon_plan;
use neon_runtime::ops::activation::Activation;
use neon_runtime::ops::conv::Conv1d;
use neon_runtime::ops::layout::Transpose;
use neon_runtime::ops::linear::Linear;
use neon_runtime::ops::softmax::Softmax;
use neon_runtime::ops::{InPlace, ShapeRule};
use neon_runtime::workspace::MemoryRegion;
use neon_runtime::{Layout, Portable, TensorView, TensorViewMut};

neon_plan! {
    /// conv1d -> relu -> softmax (both in place) -> transpose (never in place) -> linear.
    pub plan Chain {
        dim frames in 1..=32;
        weight w: f32[8, 8, 1];
        weight wl: f32[4, 8];
        input x: [8, frames];
        output y: [frames, 4];

        let a = conv1d(x, w);
        let b = relu(a);
        let c = softmax(b);
        let d = transpose(c);
        y = linear(d, wl);
    }
}

neon_plan! {
    /// A frame-major conv1d output read by a linear layer without a transpose.
    pub plan FrameMajorConv {
        dim frames in 1..=32;
        weight w: f32[8, 4, 3];
        weight wl: f32[2, 8];
        input x: [4, frames];
        output y: [frames, 2];

        let h = conv1d(x, w, padding = 1, output = frame_major);
        y = linear(h, wl);
    }
}

fn region(map: &[MemoryRegion], name: &str) -> MemoryRegion {
    *map.iter().find(|r| r.name == name).unwrap_or_else(|| panic!("no value {name}"))
}

fn values(n: usize, seed: usize) -> Vec<f32> {
    (0..n).map(|i| ((i * 7919 + seed * 104_729) % 1000) as f32 / 1000.0 - 0.5).collect()
}

#[test]
fn in_place_follows_the_runtime_facts() {
    assert_eq!(Activation::Relu.in_place(), InPlace::Allowed);
    assert_eq!(Softmax.in_place(), InPlace::Allowed);
    assert_eq!(Transpose::new(Layout::FrameMajor).in_place(), InPlace::Never);
    assert_eq!(Chain::W.in_place(), InPlace::Never);

    let map = Chain::MEMORY_MAP;
    let (a, b, c, d) = (region(map, "a"), region(map, "b"), region(map, "c"), region(map, "d"));
    // relu and softmax write over their inputs (last uses), transpose does not.
    assert_eq!(b.offset, a.offset);
    assert_eq!(c.offset, b.offset);
    assert_ne!(d.offset, c.offset);
}

#[test]
fn layouts_follow_the_runtime_facts() {
    let (conv, lin) = (FrameMajorConv::W, FrameMajorConv::WL);
    assert_eq!(conv.reads_layout(0), Some(Layout::ChannelFirst));
    assert_eq!(conv.writes_layout(), Some(Layout::FrameMajor));
    assert_eq!(lin.reads_layout(0), Some(Layout::FrameMajor));
    assert_eq!(Activation::Relu.reads_layout(0), None, "elementwise: any layout");
    assert_eq!(Activation::Relu.writes_layout(), None, "the input's layout");

    let frames = 5;
    let weights = FrameMajorConvWeights {
        w: Conv1d::new(conv, values(8 * 4 * 3, 1), None).unwrap(),
        wl: Linear::new(lin, values(2 * 8, 2), None).unwrap(),
    };
    let x = values(4 * frames, 3);
    let mut y = vec![0.0; FrameMajorConv::y_len(frames)];
    let mut ws = Box::new(FrameMajorConvWorkspace::new());
    FrameMajorConv::run::<Portable, _>(&weights, &x, &mut y, frames, &mut ws).unwrap();

    // The same two operators called one by one, with the layouts the facts name.
    let mut h = vec![0.0; frames * 8];
    let mut scratch = vec![0.0; weights.w.scratch_len(frames)];
    let xv = TensorView::new(&x, &[4, frames], Layout::ChannelFirst).unwrap();
    let mut hv = TensorViewMut::new(&mut h, &[frames, 8], Layout::FrameMajor).unwrap();
    weights.w.run::<Portable>(&xv, &mut hv, &mut scratch).unwrap();
    let mut want = vec![0.0; frames * 2];
    let hv = TensorView::new(&h, &[frames, 8], Layout::FrameMajor).unwrap();
    let mut wv = TensorViewMut::new(&mut want, &[frames, 2], Layout::FrameMajor).unwrap();
    weights.wl.run::<Portable>(&hv, &mut wv).unwrap();
    assert_eq!(y, want);
}

/// A backend this build or CPU cannot run is `Error::Backend` before any kernel, never a
/// panic (`run_with` checks `B::KIND.availability()` first). Both x86 levels are run: on a
/// machine (and build) that has them they must succeed, elsewhere fail with the reason.
#[test]
fn unavailable_backend_is_an_error() {
    use neon_runtime::{Avx2, Avx512, BackendType, Error, X86};
    let frames = 3;
    let weights = ChainWeights {
        w: Conv1d::new(Chain::W, values(8 * 8, 1), None).unwrap(),
        wl: Linear::new(Chain::WL, values(4 * 8, 2), None).unwrap(),
    };
    let x = values(8 * frames, 3);
    let mut y = vec![0.0; Chain::y_len(frames)];
    let mut ws = Box::new(ChainWorkspace::new());
    let runs = [
        (X86::<Avx2>::KIND, Chain::run::<X86<Avx2>, _>(&weights, &x, &mut y, frames, &mut ws)),
        (X86::<Avx512>::KIND, Chain::run::<X86<Avx512>, _>(&weights, &x, &mut y, frames, &mut ws)),
    ];
    for (kind, result) in runs {
        assert_eq!(result, kind.availability().map_err(Error::Backend), "{}", kind.name());
    }
    Chain::run::<Portable, _>(&weights, &x, &mut y, frames, &mut ws).unwrap();
}
