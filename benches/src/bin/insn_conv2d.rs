//! Instruction-count workloads for conv2d and max pooling (openWakeWord's embedding CNN).
//!
//! Run under `benches/insn-count.sh` (qemu-aarch64 with the insn-count plugin, `--region`):
//! only the marked region (one operator call, or the whole layer chain) is counted; weight
//! packing happens before it, as at prepare time.
//!
//! Usage: `insn_conv2d WORKLOAD [portable]` with WORKLOAD one of
//! - `same-1x3`: conv 1x3 "same" 48 -> 48 on 32x16 (im2col, row-run copies), with the fused
//!   leaky ReLU / clamp output stage;
//! - `same-1x3-plain`: the same conv without the output stage;
//! - `same-1x3-separate`: the same conv, then `leaky_relu` and `clamp_min` as separate passes;
//! - `valid-3x1`: conv 3x1 "valid" 72 -> 72 on 30x8 (direct: the GEMM reads the input),
//!   fused output stage;
//! - `valid-3x1-im2col`: the same conv through `im2col_2d` + the GEMM (what the direct path
//!   saves);
//! - `pool-2x2`: max pool 2x2 / 2 on 24 x 72 x 32;
//! - `embedding`: openWakeWord's whole embedding (20 convs, 5 pools, fused output stages) on
//!   a 76 x 32 input, operators called one by one;
//! - `embedding-layers`: the same with one region per layer (ids 1..=25, in order).
//!
//! FLOPs are `2 * MACs` of the convs (pools and output stages count 0). On aarch64 the
//! backend is `Neon` (or `Portable` with the second argument `portable`).

use neon_benches::{data, region_start, region_stop};
use neon_runtime::kernels::conv2d::Window2d;
use neon_runtime::kernels::gemm::GemmA;
use neon_runtime::ops::activation::Activation;
use neon_runtime::ops::conv2d::{Conv2d, Conv2dGeometry};
use neon_runtime::ops::pool::MaxPool2d;
use neon_runtime::{Backend, Layout, Portable, TensorView, TensorViewMut};

#[cfg(target_arch = "aarch64")]
type Fast = neon_runtime::Neon;
#[cfg(not(target_arch = "aarch64"))]
type Fast = Portable;

const CF: Layout = Layout::ChannelFirst;

/// A prepared conv with deterministic weights and bias.
fn conv(g: Conv2dGeometry, seed: u32) -> Conv2d<Vec<f32>> {
    let w = data(g.weight_len().unwrap(), seed).iter().map(|v| v * 0.1).collect();
    Conv2d::new(g, w, Some(data(g.out_channels, seed + 1))).unwrap()
}

/// One conv on `[cin, h, w]`, optionally followed by separate activation passes.
fn one_conv<B: Backend>(g: Conv2dGeometry, (h, w): (usize, usize), separate: bool) -> f32 {
    let op = conv(g, 1);
    let x = data(g.in_channels * h * w, 3);
    let (oh, ow) = g.output_size(h, w).unwrap();
    let mut y = vec![0.0; g.out_channels * oh * ow];
    let mut scratch = vec![0.0; op.scratch_len(h, w)];
    let input = TensorView::new(&x, &[g.in_channels, h, w], CF).unwrap();
    let mut out = TensorViewMut::new(&mut y, &[g.out_channels, oh, ow], CF).unwrap();
    region_start(1);
    op.run::<B>(&input, &mut out, &mut scratch).unwrap();
    if separate {
        Activation::LeakyRelu { slope: 0.2 }.run_in_place::<B>(&mut out).unwrap();
        Activation::ClampMin { min: -0.4 }.run_in_place::<B>(&mut out).unwrap();
    }
    region_stop(1);
    y.iter().sum()
}

/// The 3x1 72 -> 72 conv on 30x8 through im2col (`im2col_2d` + `gemm_packed_a`), as
/// the operator would run it without its direct path.
fn valid_3x1_im2col<B: Backend>() -> f32 {
    let g = Conv2dGeometry::new(72, 72, (3, 1)).leaky_relu(0.2).clamp_min(-0.4);
    let (h, w, oh) = (30, 8, 28);
    let k = g.reduction();
    let wt = data(g.weight_len().unwrap(), 1);
    let mut packed = vec![0.0; neon_runtime::kernels::gemm::packed_a_len(72, k)];
    neon_runtime::kernels::gemm::pack_a(&wt, 72, k, &mut packed);
    let (x, bias) = (data(72 * h * w, 3), data(72, 2));
    let pixels = oh * w;
    let tile = g.tile_pixels(pixels);
    let mut col = vec![0.0; k * tile];
    let mut y = vec![0.0; 72 * pixels];
    let win = Window2d {
        channels: 72,
        height: h,
        width: w,
        kernel_h: 3,
        kernel_w: 1,
        stride_h: 1,
        stride_w: 1,
        dilation_h: 1,
        dilation_w: 1,
        pad_top: 0,
        pad_left: 0,
        out_height: oh,
        out_width: w,
    };
    region_start(1);
    for p0 in (0..pixels).step_by(tile) {
        let nt = tile.min(pixels - p0);
        let col = &mut col[..k * nt];
        B::im2col_2d(&x, win, p0, nt, col);
        let ga = GemmA::contiguous(72, nt, k, nt, pixels).with_epilogue(g.epilogue());
        B::gemm_packed_a(ga, &packed, col, Some(&bias), &mut y[p0..]);
    }
    region_stop(1);
    y.iter().sum()
}

fn pool<B: Backend>() -> f32 {
    let (c, h, w) = (24, 72, 32);
    let x = data(c * h * w, 1);
    let mut y = vec![0.0; c * 36 * 16];
    let input = TensorView::new(&x, &[c, h, w], CF).unwrap();
    let mut out = TensorViewMut::new(&mut y, &[c, 36, 16], CF).unwrap();
    region_start(1);
    MaxPool2d::new((2, 2)).run::<B>(&input, &mut out).unwrap();
    region_stop(1);
    y.iter().sum()
}

/// One layer of the embedding chain.
enum Layer {
    Conv(Conv2d<Vec<f32>>),
    Pool(MaxPool2d),
}

/// openWakeWord's embedding CNN (see the model facts): input `[1, 76, 32]` (time x mel),
/// output `[96, 1, 1]`. Every conv but the last carries the fused leaky ReLU (0.2) and
/// clamp (-0.4).
fn embedding_layers() -> Vec<Layer> {
    let act = |g: Conv2dGeometry| g.leaky_relu(0.2).clamp_min(-0.4);
    let mut layers = vec![
        Layer::Conv(conv(act(Conv2dGeometry::new(1, 24, (3, 3)).padding(0, 0, 1, 1)), 10)),
        Layer::Conv(conv(act(Conv2dGeometry::new(24, 24, (1, 3)).same()), 11)),
        Layer::Conv(conv(act(Conv2dGeometry::new(24, 24, (3, 1))), 12)),
        Layer::Pool(MaxPool2d::new((2, 2))),
    ];
    let mut cin = 24;
    for (stage, cout) in [48, 72, 96, 96].into_iter().enumerate() {
        for (i, (g, c)) in [
            (Conv2dGeometry::new(cin, cout, (1, 3)).same(), cout),
            (Conv2dGeometry::new(cout, cout, (3, 1)), cout),
            (Conv2dGeometry::new(cout, cout, (1, 3)).same(), cout),
            (Conv2dGeometry::new(cout, cout, (3, 1)), cout),
        ]
        .into_iter()
        .enumerate()
        {
            layers.push(Layer::Conv(conv(act(g), 20 + 4 * stage as u32 + i as u32)));
            cin = c;
        }
        let p = if stage % 2 == 0 { MaxPool2d::new((1, 2)) } else { MaxPool2d::new((2, 2)) };
        layers.push(Layer::Pool(p));
    }
    layers.push(Layer::Conv(conv(Conv2dGeometry::new(96, 96, (3, 1)), 40)));
    layers
}

/// The embedding; with `per_layer`, each layer is its own region (id = layer + 1), so
/// `count-insns.sh --region` lists the layers (`region_insns[id]`).
fn embedding<B: Backend>(per_layer: bool) -> f32 {
    let layers = embedding_layers();
    // Ping-pong buffers and one scratch, sized for the largest layer.
    let mut a = data(76 * 32, 5);
    a.resize(24 * 76 * 34, 0.0);
    let mut b = vec![0.0; 24 * 76 * 34];
    let mut scratch = vec![0.0; 32 * 1024];
    let mut shape = [1usize, 76, 32];
    if !per_layer {
        region_start(1);
    }
    for (id, layer) in layers.iter().enumerate() {
        if per_layer {
            region_start(id as u64 + 1);
        }
        let [c, h, w] = shape;
        let input = TensorView::new(&a[..c * h * w], &shape, CF).unwrap();
        let next = match layer {
            Layer::Conv(op) => {
                let g = op.geometry();
                let (oh, ow) = g.output_size(h, w).unwrap();
                let next = [g.out_channels, oh, ow];
                let mut out =
                    TensorViewMut::new(&mut b[..next.iter().product()], &next, CF).unwrap();
                op.run::<B>(&input, &mut out, &mut scratch).unwrap();
                next
            }
            Layer::Pool(p) => {
                let next =
                    [c, (h - p.kernel_h) / p.stride_h + 1, (w - p.kernel_w) / p.stride_w + 1];
                let mut out =
                    TensorViewMut::new(&mut b[..next.iter().product()], &next, CF).unwrap();
                p.run::<B>(&input, &mut out).unwrap();
                next
            }
        };
        if per_layer {
            region_stop(id as u64 + 1);
        }
        std::mem::swap(&mut a, &mut b);
        shape = next;
    }
    if !per_layer {
        region_stop(1);
    }
    assert_eq!(shape, [96, 1, 1]);
    a[..96].iter().sum()
}

fn run<B: Backend>(workload: &str) -> Option<f32> {
    let same = Conv2dGeometry::new(48, 48, (1, 3)).same();
    let valid = Conv2dGeometry::new(72, 72, (3, 1));
    let act = |g: Conv2dGeometry| g.leaky_relu(0.2).clamp_min(-0.4);
    Some(match workload {
        "same-1x3" => one_conv::<B>(act(same), (32, 16), false),
        "same-1x3-plain" => one_conv::<B>(same, (32, 16), false),
        "same-1x3-separate" => one_conv::<B>(same, (32, 16), true),
        "valid-3x1" => one_conv::<B>(act(valid), (30, 8), false),
        "valid-3x1-im2col" => valid_3x1_im2col::<B>(),
        "pool-2x2" => pool::<B>(),
        "embedding" => embedding::<B>(false),
        "embedding-layers" => embedding::<B>(true),
        _ => return None,
    })
}

fn main() {
    neon_benches::workload_main(
        "insn_conv2d same-1x3|same-1x3-plain|same-1x3-separate|valid-3x1|valid-3x1-im2col|\
         pool-2x2|embedding|embedding-layers [portable]",
        run::<Portable>,
        run::<Fast>,
    );
}
