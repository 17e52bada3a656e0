//! The `_in` kernel entry points give the bits of the serial entry points on every context:
//! `Serial` and worker teams of 2, 3, 4 and 7 threads, for odd sizes and tails (row
//! counts that are not a multiple of a tile, panels past the last whole pair, column
//! counts that are not a multiple of a column tile), with the output split by rows, by
//! columns (strided blocks) and both, on every backend this build has
//! (`backend_tests!`). Values between the rows of `C` (`ldc > n`) must stay untouched.

mod common;

use common::recording::Recording;
use common::{rng, uniform, window2d};
use neon_runtime::kernels::attention::AttentionGeometry;
use neon_runtime::kernels::conv::Window1d;
use neon_runtime::kernels::conv2d::{im2col_gemm_in, PackedConv, RowConv};
use neon_runtime::kernels::gemm::{
    pack_a, pack_b, packed_a_len, packed_b_len, BRows, Epilogue, GemmA, GemmB,
};
use neon_runtime::kernels::quant::{
    pack_block_scales, pack_i8, packed_block_scales_len, packed_i8_len, QuantFormat, QuantGemm,
    QuantPath, QuantWeights, BLOCK_K,
};
use neon_runtime::kernels::{
    AttentionKernels, Conv2dKernels, ConvKernels, GemmKernels, Parallel, QuantKernels, Serial,
};
use neon_runtime::tensor::Layout;
use neon_runtime::Team;

/// Thread counts of the teams every product is checked on.
const THREADS: [usize; 4] = [2, 3, 4, 7];

/// `Serial`, then one team per entry of [`THREADS`], each recording its dispatches.
struct Contexts(Vec<Recording>);

impl Contexts {
    fn new() -> Self {
        let mut v: Vec<Box<dyn Parallel>> = vec![Box::new(Serial)];
        for n in THREADS {
            v.push(Box::new(Team::new(n).expect("team")));
        }
        Self(v.into_iter().map(Recording::new).collect())
    }

    fn iter(&self) -> impl Iterator<Item = &Recording> {
        self.0.iter()
    }

    /// Asserts that every team ran some call as at least as many tasks as it has members
    /// (up to 4: the shapes are sized for that).
    fn assert_split(&self, what: &str) {
        for r in &self.0[1..] {
            let want = r.workers().min(4);
            let got = r.max_tasks();
            assert!(got >= want, "{what}: {} workers ran at most {got} tasks", r.workers());
        }
    }
}

/// The contexts every product is checked on.
fn contexts() -> Contexts {
    Contexts::new()
}

/// Asserts bitwise equality, naming the context and the first differing index.
fn assert_bits(what: &str, workers: usize, got: &[f32], want: &[f32]) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert_eq!(g.to_bits(), w.to_bits(), "{what} ({workers} workers): index {i}: {g} vs {w}");
    }
}

fn gemm_packed_b_same_bits<B: GemmKernels>() {
    let ctx = contexts();
    let mut r = rng(11);
    // (m, n, k, lda pad, ldc pad): small ones stay one block, the others split.
    for (m, n, k, pa, pc) in [
        (1, 5, 3, 0, 0),
        (13, 37, 19, 2, 3),
        (67, 70, 33, 0, 1),
        (130, 17, 64, 5, 0),
        (203, 48, 96, 1, 7),
        // Few rows, many columns: column blocks, the last panel partial.
        (3, 1000, 41, 0, 5),
        (9, 333, 70, 1, 2),
        // Long reductions (blocked at AVX-512), with 1..=3 rows past a 12-row tile.
        (62, 75, 300, 1, 2),
        (50, 40, 520, 0, 0),
    ] {
        let g = GemmB { m, n, k, lda: k + pa, ldc: n + pc };
        let a = uniform(&mut r, (m - 1) * g.lda + k, -1.0, 1.0);
        let w = uniform(&mut r, n * k, -1.0, 1.0);
        let bias = uniform(&mut r, n, -1.0, 1.0);
        let mut pb = vec![0.0; packed_b_len(n, k)];
        pack_b(&w, n, k, &mut pb);
        let len = (m - 1) * g.ldc + n;
        let mut want = vec![f32::NAN; len];
        B::gemm_packed_b(g, &a, &pb, Some(&bias), &mut want);
        for p in ctx.iter() {
            let mut got = vec![f32::NAN; len];
            B::gemm_packed_b_in(p.as_ref(), g, &a, &pb, Some(&bias), &mut got).unwrap();
            assert_bits(&format!("gemm_packed_b {m}x{n}x{k}"), p.workers(), &got, &want);
        }
    }
    ctx.assert_split("gemm_packed_b_same_bits");
}

fn gemm_packed_a_same_bits<B: GemmKernels>() {
    let ctx = contexts();
    let mut r = rng(12);
    for (m, n, k, ep) in [
        (9, 40, 9, None),
        (24, 2368, 9, Some(Epilogue::leaky_relu(0.2))),
        (37, 77, 31, None),
        (96, 300, 72, Some(Epilogue::clamp_min(0.0))),
        (50, 513, 40, None),
        // One partial row panel: the columns alone split (tails of 1-47 columns).
        (5, 301, 13, Some(Epilogue { slope: 0.2, min: -0.4 })),
        (3, 1001, 27, None),
        (24, 97, 72, None),
    ] {
        let ldc = n + 3;
        let w = uniform(&mut r, m * k, -1.0, 1.0);
        let b = uniform(&mut r, k * n, -1.0, 1.0);
        let bias = uniform(&mut r, m, -1.0, 1.0);
        let mut pa = vec![0.0; packed_a_len(m, k)];
        pack_a(&w, m, k, &mut pa);
        let g = GemmA::contiguous(m, n, k, n, ldc).with_epilogue(ep);
        let len = (m - 1) * ldc + n;
        let mut want = vec![f32::NAN; len];
        B::gemm_packed_a(g, &pa, &b, Some(&bias), &mut want);
        for p in ctx.iter() {
            let mut got = vec![f32::NAN; len];
            B::gemm_packed_a_in(p.as_ref(), g, &pa, &b, Some(&bias), &mut got).unwrap();
            assert_bits(&format!("gemm_packed_a {m}x{n}x{k}"), p.workers(), &got, &want);
        }
    }
    // A segmented B (conv2d's direct form): 3 segments of 20 rows, 11 apart.
    let (m, n) = (20, 333);
    let rows = BRows { rows: 20, ldb: n + 40, segments: 3, segment_stride: 11 };
    let k = 60;
    let w = uniform(&mut r, m * k, -1.0, 1.0);
    let b = uniform(&mut r, rows.span(n).unwrap(), -1.0, 1.0);
    let mut pa = vec![0.0; packed_a_len(m, k)];
    pack_a(&w, m, k, &mut pa);
    let g = GemmA { m, n, rows, epilogue: None, ldc: n };
    let mut want = vec![0.0; m * n];
    B::gemm_packed_a(g, &pa, &b, None, &mut want);
    for p in ctx.iter() {
        let mut got = vec![f32::NAN; m * n];
        B::gemm_packed_a_in(p.as_ref(), g, &pa, &b, None, &mut got).unwrap();
        assert_bits("gemm_packed_a segmented", p.workers(), &got, &want);
    }
    ctx.assert_split("gemm_packed_a_same_bits");
}

fn gemv_same_bits<B: GemmKernels>() {
    let ctx = contexts();
    let mut r = rng(13);
    for (n, k) in [(17, 64), (33, 257), (100, 9), (515, 600), (1030, 257), (288, 1152)] {
        let x = uniform(&mut r, k, -1.0, 1.0);
        let w = uniform(&mut r, n * k, -1.0, 1.0);
        let bias = uniform(&mut r, n, -1.0, 1.0);
        let mut pb = vec![0.0; packed_b_len(n, k)];
        pack_b(&w, n, k, &mut pb);
        let mut want = vec![f32::NAN; n];
        B::gemv_packed_b(n, k, &x, &pb, Some(&bias), &mut want);
        for p in ctx.iter() {
            let mut got = vec![f32::NAN; n];
            B::gemv_packed_b_in(p.as_ref(), (n, k), &x, &pb, Some(&bias), &mut got).unwrap();
            assert_bits(&format!("gemv {n}x{k}"), p.workers(), &got, &want);
        }
    }
    ctx.assert_split("gemv_same_bits");
}

fn attention_same_bits<B: AttentionKernels>() {
    let ctx = contexts();
    let mut r = rng(14);
    // (q_frames, len, kv_frames, heads, head_dim, causal)
    for (tq, len, tk, heads, hd, causal) in [
        (1, 37, 40, 8, 36, false),
        (5, 5, 9, 2, 13, true),
        (17, 30, 30, 3, 8, false),
        (40, 40, 40, 4, 52, true),
        (101, 101, 101, 8, 36, false),
        (67, 90, 95, 2, 20, true),
        // Single queries (decoder steps) split over heads; a few queries over both.
        (1, 413, 420, 8, 52, false),
        (1, 1244, 1244, 8, 52, true),
        (1, 700, 700, 3, 17, false),
        (6, 700, 700, 5, 16, true),
    ] {
        let c = heads * hd;
        let q = uniform(&mut r, tq * c, -1.0, 1.0);
        let k = uniform(&mut r, tk * c, -1.0, 1.0);
        let v = uniform(&mut r, tk * c, -1.0, 1.0);
        let scale = 1.0 / (hd as f32).sqrt();
        let g = AttentionGeometry { q_frames: tq, len, heads, head_dim: hd, scale, causal };
        let mut want = vec![f32::NAN; tq * c];
        B::attention(&q, &k, &v, &mut want, g);
        for p in ctx.iter() {
            let mut got = vec![f32::NAN; tq * c];
            B::attention_in(p.as_ref(), (&q, &k, &v), &mut got, g).unwrap();
            let what = format!("attention {tq}x{len} heads {heads}x{hd} causal {causal}");
            assert_bits(&what, p.workers(), &got, &want);
        }
    }
    ctx.assert_split("attention_same_bits");
}

fn depthwise_same_bits<B: ConvKernels>() {
    let ctx = contexts();
    let mut r = rng(15);
    for (channels, frames, kernel, stride) in [(3, 10, 3, 1), (37, 2001, 7, 1), (64, 3000, 5, 2)] {
        let window =
            Window1d { channels, frames, kernel, stride, dilation: 1, pad_left: kernel / 2 };
        let out_frames = (frames + 2 * (kernel / 2) - kernel) / stride + 1;
        let x = uniform(&mut r, channels * frames, -1.0, 1.0);
        let w = uniform(&mut r, channels * kernel, -1.0, 1.0);
        let bias = uniform(&mut r, channels, -1.0, 1.0);
        let mut want = vec![f32::NAN; channels * out_frames];
        B::depthwise_conv1d(&x, window, &w, Some(&bias), out_frames, &mut want);
        for p in ctx.iter() {
            let mut got = vec![f32::NAN; channels * out_frames];
            let (xw, wb) = ((&x[..], window), (&w[..], Some(&bias[..])));
            B::depthwise_conv1d_in(p.as_ref(), xw, wb, out_frames, &mut got).unwrap();
            assert_bits(&format!("depthwise {channels}x{frames}"), p.workers(), &got, &want);
        }
    }
    ctx.assert_split("depthwise_same_bits");
}

fn conv_rows_same_bits<B: Conv2dKernels>() {
    let ctx = contexts();
    let mut r = rng(16);
    // openWakeWord's 1x3 convs and an odd channel count.
    for (channels, out_channels, height, width) in [(24, 48, 33, 16), (5, 37, 10, 13)] {
        let g = RowConv {
            channels,
            out_channels,
            height,
            width,
            kernel_h: 1,
            kernel_w: 3,
            pad_left: 1,
        };
        let k = channels * 3;
        let x = uniform(&mut r, channels * height * width, -1.0, 1.0);
        let w = uniform(&mut r, out_channels * k, -1.0, 1.0);
        let bias = uniform(&mut r, out_channels, -1.0, 1.0);
        let mut pa = vec![0.0; packed_a_len(out_channels, k)];
        pack_a(&w, out_channels, k, &mut pa);
        let ep = Some(Epilogue::leaky_relu(0.2));
        let len = out_channels * height * width;
        let mut want = vec![f32::NAN; len];
        let direct = B::conv_rows(&pa, g, &x, Some(&bias), ep, &mut want);
        for p in ctx.iter() {
            let mut got = vec![f32::NAN; len];
            let ran = B::conv_rows_in(p.as_ref(), (&pa, g), &x, (Some(&bias), ep), &mut got);
            assert_eq!(ran.unwrap(), direct, "conv_rows_in: same answer to supported");
            if direct {
                assert_bits(
                    &format!("conv_rows {channels}->{out_channels}"),
                    p.workers(),
                    &got,
                    &want,
                );
            }
        }
    }
}

/// A conv2d tile as im2col + GEMM ([`im2col_gemm_in`]): the same bits as im2col of the
/// whole tile then the serial GEMM, on every context, with strides, padding, column tails
/// and tiles that start inside an output row; `col` ends NaN-filled past `k * count`.
fn im2col_gemm_same_bits<B: Conv2dKernels + GemmKernels>() {
    let ctx = contexts();
    let mut r = rng(19);
    // (channels, height, width, kernel, stride, pad (top, left), out (h, w), m, first, count)
    for (c, h, w, (kh, kw), (sh, sw), (pt, pl), (oh, ow), m, first, count) in [
        (1, 76, 32, (3, 3), (1, 1), (0, 1), (74, 32), 24, 0, 2368),
        (24, 76, 32, (1, 3), (1, 1), (0, 1), (76, 32), 24, 5, 2000),
        (5, 20, 17, (3, 2), (2, 3), (1, 1), (10, 6), 9, 3, 50),
        (7, 9, 40, (2, 5), (1, 2), (0, 2), (8, 20), 37, 11, 149),
        (3, 4, 4, (1, 1), (1, 1), (0, 0), (4, 4), 3, 0, 16),
    ] {
        let window = window2d(c, (h, w), (kh, kw), (sh, sw), (pt, pl), (oh, ow));
        let k = c * kh * kw;
        let x = uniform(&mut r, c * h * w, -1.0, 1.0);
        let wts = uniform(&mut r, m * k, -1.0, 1.0);
        let bias = uniform(&mut r, m, -1.0, 1.0);
        let mut pa = vec![0.0; packed_a_len(m, k)];
        pack_a(&wts, m, k, &mut pa);
        let ep = Some(Epilogue { slope: 0.2, min: -0.4 });
        let ldc = count + 3;
        let len = (m - 1) * ldc + count;
        let mut col = vec![f32::NAN; k * count];
        B::im2col_2d(&x, window, first, count, &mut col);
        let g = GemmA::contiguous(m, count, k, count, ldc).with_epilogue(ep);
        let mut want = vec![f32::NAN; len];
        B::gemm_packed_a(g, &pa, &col, Some(&bias), &mut want);
        let pw = PackedConv { packed: &pa, m, bias: Some(&bias), epilogue: ep };
        for p in ctx.iter() {
            let mut got = vec![f32::NAN; len];
            let mut col = vec![f32::NAN; k * count + 5];
            let xw = (&x[..], window);
            im2col_gemm_in::<B>(p.as_ref(), xw, (first, count), pw, &mut col, (&mut got, ldc))
                .unwrap();
            let what = format!("im2col_gemm {c}x{h}x{w} k {kh}x{kw} -> {m}, {first}+{count}");
            assert_bits(&what, p.workers(), &got, &want);
            assert!(col[k * count..].iter().all(|v| v.is_nan()), "{what}: col past k * count");
        }
    }
    ctx.assert_split("im2col_gemm_same_bits");
}

/// Packed per-tensor and block-int8 weights of `q[n, k]` (random codes and scales).
fn quant_weights(
    r: &mut rand::rngs::SmallRng,
    n: usize,
    k: usize,
) -> (Vec<i8>, Vec<f32>, Vec<f32>) {
    use rand::Rng;
    let q: Vec<i8> = (0..n * k).map(|_| r.gen_range(-127..=127)).collect();
    let mut packed = vec![0; packed_i8_len(n, k)];
    pack_i8(&q, n, k, &mut packed);
    let scales = uniform(r, n * (k / BLOCK_K), 0.001, 0.02);
    let mut ps = vec![0.0; packed_block_scales_len(n, k)];
    if k.is_multiple_of(BLOCK_K) {
        pack_block_scales(&scales, n, k, &mut ps);
    }
    (packed, ps, uniform(r, n, -1.0, 1.0))
}

fn quant_same_bits<B: QuantKernels>() {
    let ctx = contexts();
    let mut r = rng(17);
    for (m, n, k) in [
        (1, 50, 64),
        (7, 33, 96),
        (170, 416, 416),
        (203, 70, 160),
        (1, 1030, 416),
        // Moonshine's 2 s encoder (82 frames), several k blocks (KC = 256) and a tail.
        (82, 416, 1664),
        (82, 1664, 416),
        // Columns alone, rows and columns, rows alone (per tensor: k not a multiple of 4).
        (5, 1000, 37),
        (300, 40, 96),
        (13, 100, 64),
    ] {
        let (packed, ps, bias) = quant_weights(&mut r, n, k);
        let x = uniform(&mut r, m * k, -1.0, 1.0);
        let mut formats = vec![QuantFormat::PerTensor { scale: 0.01, offset: -0.003 }];
        if k.is_multiple_of(BLOCK_K) {
            formats.push(QuantFormat::Block(&ps));
        }
        for format in formats {
            let w = QuantWeights { packed: &packed, format, bias: Some(&bias) };
            let what = format!("int8 {m}x{n}x{k} {format:?}").chars().take(60).collect::<String>();
            if m == 1 {
                let mut want = vec![f32::NAN; n];
                B::gemv_i8(n, k, &x, w, &mut want);
                let mut want_dot = vec![f32::NAN; n];
                B::gemv_i8_dot(n, k, &x, w, &mut want_dot);
                for p in ctx.iter() {
                    let mut got = vec![f32::NAN; n];
                    B::gemv_i8_in(p.as_ref(), QuantPath::Widening, (n, k), &x, w, &mut got)
                        .unwrap();
                    assert_bits(&what, p.workers(), &got, &want);
                    B::gemv_i8_in(p.as_ref(), QuantPath::Dot, (n, k), &x, w, &mut got).unwrap();
                    assert_bits(&format!("{what} dot"), p.workers(), &got, &want_dot);
                }
            } else {
                let g = QuantGemm { m, n, k, lda: k, ldc: n + 1 };
                let len = (m - 1) * g.ldc + n;
                let mut want = vec![f32::NAN; len];
                B::gemm_i8(g, &x, w, &mut want);
                let mut want_dot = vec![f32::NAN; len];
                B::gemm_i8_dot(g, &x, w, &mut want_dot);
                for p in ctx.iter() {
                    let mut got = vec![f32::NAN; len];
                    B::gemm_i8_in(p.as_ref(), QuantPath::Widening, g, &x, w, &mut got).unwrap();
                    assert_bits(&what, p.workers(), &got, &want);
                    B::gemm_i8_in(p.as_ref(), QuantPath::Dot, g, &x, w, &mut got).unwrap();
                    assert_bits(&format!("{what} dot"), p.workers(), &got, &want_dot);
                    B::gemm_i8_in(p.as_ref(), QuantPath::Mmla, g, &x, w, &mut got).unwrap();
                    assert_bits(&format!("{what} mmla"), p.workers(), &got, &want_dot);
                }
            }
        }
    }
    ctx.assert_split("quant_same_bits");
}

fn activation_same_bits<B: neon_runtime::kernels::ActivationKernels>() {
    use neon_runtime::kernels::activation::Activation;
    let ctx = contexts();
    let mut r = rng(18);
    for f in [Activation::GeluErf, Activation::Tanh, Activation::Silu, Activation::Exp] {
        for n in [1, 63, 65, 1000, 70_001, 687_000] {
            let x = uniform(&mut r, n, -6.0, 6.0);
            let mut want = vec![f32::NAN; n];
            B::activate_to(f, &x, &mut want);
            for p in ctx.iter() {
                let mut got = vec![f32::NAN; n];
                B::activate_to_in(p.as_ref(), f, &x, &mut got).unwrap();
                assert_bits(&format!("{f:?} to, {n}"), p.workers(), &got, &want);
                let mut inplace = x.clone();
                B::activate_in(p.as_ref(), f, &mut inplace).unwrap();
                assert_bits(&format!("{f:?} in place, {n}"), p.workers(), &inplace, &want);
            }
        }
    }
    ctx.assert_split("activation_same_bits");
}

/// LayerNorm and RMSNorm rows, and GroupNorm (1 group over everything, and 4 groups).
fn norm_same_bits<B: neon_runtime::kernels::NormKernels>() {
    use neon_runtime::kernels::norm::NormParams;
    let ctx = contexts();
    let mut r = rng(19);
    for (rows, n) in [(0, 5), (1, 5), (3, 17), (413, 416), (4001, 37)] {
        let x = uniform(&mut r, rows * n, -3.0, 5.0);
        let (gamma, beta) = (uniform(&mut r, n, 0.5, 1.5), uniform(&mut r, n, -1.0, 1.0));
        let p = NormParams { gamma: &gamma, beta: Some(&beta), eps: 1e-5 };
        let (mut ln, mut rms) = (vec![f32::NAN; rows * n], vec![f32::NAN; rows * n]);
        B::layer_norm_rows(rows, n, &x, p, &mut ln);
        B::rms_norm_rows(rows, n, &x, &gamma, 1e-5, &mut rms);
        for c in ctx.iter() {
            let mut got = vec![f32::NAN; rows * n];
            B::layer_norm_rows_in(c.as_ref(), (rows, n), &x, p, &mut got).unwrap();
            assert_bits(&format!("layer_norm {rows}x{n}"), c.workers(), &got, &ln);
            let mut got = vec![f32::NAN; rows * n];
            B::rms_norm_rows_in(c.as_ref(), (rows, n), &x, (&gamma, 1e-5), &mut got).unwrap();
            assert_bits(&format!("rms_norm {rows}x{n}"), c.workers(), &got, &rms);
        }
    }
    for (channels, frames, groups) in [(4, 3, 1), (416, 2490, 1), (64, 4096, 2), (7, 1000, 7)] {
        let x = uniform(&mut r, channels * frames, -3.0, 5.0);
        let (gamma, beta) =
            (uniform(&mut r, channels, 0.5, 1.5), uniform(&mut r, channels, -1.0, 1.0));
        let p = NormParams { gamma: &gamma, beta: Some(&beta), eps: 1e-5 };
        let mut want = vec![f32::NAN; channels * frames];
        B::group_norm(channels, frames, groups, &x, p, &mut want);
        for c in ctx.iter() {
            let mut got = vec![f32::NAN; channels * frames];
            B::group_norm_in(c.as_ref(), (channels, frames, groups), &x, p, &mut got).unwrap();
            assert_bits(
                &format!("group_norm {channels}x{frames}/{groups}"),
                c.workers(),
                &got,
                &want,
            );
        }
    }
    ctx.assert_split("norm_same_bits");
}

/// Add and multiply, out of place and in place, with lengths around the block size.
fn elementwise_same_bits<B: neon_runtime::kernels::ElementwiseKernels>() {
    let ctx = contexts();
    let mut r = rng(20);
    for n in [0, 1, 63, 65, 1000, 70_001, 300_001] {
        let (a, b) = (uniform(&mut r, n, -4.0, 4.0), uniform(&mut r, n, -4.0, 4.0));
        let (mut sum, mut prod) = (vec![f32::NAN; n], vec![f32::NAN; n]);
        B::add(&a, &b, &mut sum);
        B::mul(&a, &b, &mut prod);
        for c in ctx.iter() {
            let w = c.workers();
            let mut got = vec![f32::NAN; n];
            B::add_in(c.as_ref(), &a, &b, &mut got).unwrap();
            assert_bits(&format!("add {n}"), w, &got, &sum);
            let mut got = vec![f32::NAN; n];
            B::mul_in(c.as_ref(), &a, &b, &mut got).unwrap();
            assert_bits(&format!("mul {n}"), w, &got, &prod);
            let mut acc = a.clone();
            B::add_assign_in(c.as_ref(), &mut acc, &b).unwrap();
            assert_bits(&format!("add_assign {n}"), w, &acc, &sum);
            let mut acc = a.clone();
            B::mul_assign_in(c.as_ref(), &mut acc, &b).unwrap();
            assert_bits(&format!("mul_assign {n}"), w, &acc, &prod);
        }
    }
    ctx.assert_split("elementwise_same_bits");
}

/// Both im2col layouts for a tile of output frames (Moonshine's conv2 and odd windows with
/// padding, dilation and a first frame past 0).
fn im2col_same_bits<B: ConvKernels>() {
    let ctx = contexts();
    let mut r = rng(21);
    // The fourth: 512 output frames whose first ~196 read only left padding and last 12
    // only frames past the input, so the frame-major blocks start in padding too.
    let shapes = [
        (1, 9, 3, 1, 1, 1, 0, 7),
        (416, 2490, 7, 3, 1, 0, 0, 256),
        (37, 301, 5, 2, 2, 3, 11, 139),
        (128, 300, 5, 1, 1, 200, 0, 512),
        (3, 50, 3, 1, 1, 1, 0, 0),
    ];
    for (channels, frames, kernel, stride, dilation, pad_left, first, count) in shapes {
        let window = Window1d { channels, frames, kernel, stride, dilation, pad_left };
        let x = uniform(&mut r, channels * frames, -1.0, 1.0);
        let len = channels * kernel * count;
        let (mut cf, mut fm) = (vec![f32::NAN; len], vec![f32::NAN; len]);
        B::im2col_channel_first(&x, window, first, count, &mut cf);
        B::im2col_frame_major(&x, window, first, count, &mut fm);
        for c in ctx.iter() {
            let what = format!("im2col {channels}x{frames} k{kernel}");
            let mut got = vec![f32::NAN; len];
            B::im2col_in(c.as_ref(), Layout::ChannelFirst, (&x, window), first, count, &mut got)
                .unwrap();
            assert_bits(&format!("{what} channel-first"), c.workers(), &got, &cf);
            let mut got = vec![f32::NAN; len];
            B::im2col_in(c.as_ref(), Layout::FrameMajor, (&x, window), first, count, &mut got)
                .unwrap();
            assert_bits(&format!("{what} frame-major"), c.workers(), &got, &fm);
        }
    }
    ctx.assert_split("im2col_same_bits");
}

/// Rotary embeddings in both pairings, from position 0 and from a later position.
fn rotary_same_bits<B: neon_runtime::kernels::rotary::RotaryKernels>() {
    use neon_runtime::kernels::rotary::{inv_freq, RotaryFrames, RotaryPairs};
    let ctx = contexts();
    let mut r = rng(22);
    for (frames, heads, head_dim, dims, at) in [
        (0, 1, 4, 2, 0),
        (1, 1, 4, 2, 0),
        (413, 8, 52, 32, 0),
        (97, 3, 18, 18, 1000),
        (600, 8, 64, 64, 1000),
    ] {
        let table = inv_freq(10000.0, dims);
        let x = uniform(&mut r, frames * heads * head_dim, -2.0, 2.0);
        let f = RotaryFrames { frames, heads, head_dim, at };
        for pairs in [RotaryPairs::Interleaved, RotaryPairs::HalfSplit] {
            let mut want = x.clone();
            B::rotary(&mut want, f, &table[..dims / 2], pairs);
            for c in ctx.iter() {
                let mut got = x.clone();
                B::rotary_in(c.as_ref(), &mut got, f, &table[..dims / 2], pairs).unwrap();
                let what = format!("rotary {frames}x{heads}x{head_dim} {pairs:?}");
                assert_bits(&what, c.workers(), &got, &want);
            }
        }
    }
    ctx.assert_split("rotary_same_bits");
}

neon_runtime::backend_tests!(
    activation_same_bits,
    quant_same_bits,
    gemm_packed_b_same_bits,
    gemm_packed_a_same_bits,
    gemv_same_bits,
    attention_same_bits,
    depthwise_same_bits,
    conv_rows_same_bits,
    im2col_gemm_same_bits,
    norm_same_bits,
    elementwise_same_bits,
    im2col_same_bits,
    rotary_same_bits,
);

/// A context whose dispatch fails (as a team's does when a task panicked): the error
/// reaches the caller of the `_in` entry point.
#[test]
fn a_failing_context_is_an_error() {
    struct Failing;
    impl Parallel for Failing {
        fn workers(&self) -> usize {
            4
        }
        fn dispatch(
            &self,
            _tasks: usize,
            _f: &(dyn Fn(usize, usize) + Sync),
        ) -> Result<(), neon_runtime::Error> {
            Err(neon_runtime::Error::Team(neon_runtime::TeamError::Panicked))
        }
    }
    let (m, n, k) = (64, 64, 64);
    let a = vec![1.0; m * k];
    let mut pb = vec![0.0; packed_b_len(n, k)];
    pack_b(&vec![1.0; n * k], n, k, &mut pb);
    let mut c = vec![0.0; m * n];
    let r = neon_runtime::Portable::gemm_packed_b_in(
        &Failing,
        GemmB::contiguous(m, n, k),
        &a,
        &pb,
        None,
        &mut c,
    );
    assert!(matches!(r, Err(neon_runtime::Error::Team(neon_runtime::TeamError::Panicked))));
}
