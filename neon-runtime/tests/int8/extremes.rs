//! Every backend's conv2d, depthwise and fully connected kernels against the portable ones
//! on extreme operands; helpers from `int8.rs`.

use super::*;
use neon_runtime::Portable;

/// Extreme operands on conv2d, depthwise and fully connected (tails of 8, 16, 32 and 64:
/// 37 input and 19 output channels, 300 input features): inputs and weights all -128, all
/// 127 or alternating, input zero points -128 and 127, biases near the i32 limits halved,
/// multipliers per tensor or per channel with shifts -31, -1, 0 and 30 (the left shift
/// wraps; the single rounding's result is truncated to i32 where TFLite asserts that it
/// fits) and multiplier 0, every rounding: the same bytes as the portable kernels.
pub(crate) fn extremes_match_portable<B: Int8Kernels>() {
    let top = i32::MAX;
    let per_channel: Vec<QuantizedMultiplier> = (0..19)
        .map(|j| {
            let (multiplier, shift) =
                [(top, -31), (1 << 30, 30), (0, 0), (top, 0), (1 << 30, -1)][j % 5];
            QuantizedMultiplier { multiplier, shift }
        })
        .collect();
    let per_tensor = [QuantizedMultiplier { multiplier: top, shift: -20 }];
    let patterns: [fn(usize) -> i8; 3] = [|_| -128, |_| 127, |i| [-128, 127][i % 2]];
    let bias: Vec<i32> = (0..37).map(|j| [i32::MIN / 2, 0, i32::MAX / 2][j % 3]).collect();
    let conv = ConvGeometry { window: valid_window(37, [4, 1], [3, 1]), out_channels: 19 };
    let dw = DepthwiseGeometry { window: valid_window(19, [4, 1], [3, 1]), depth_multiplier: 1 };
    let fc = FcGeometry { rows: 1, in_features: 300, out_features: 19 };
    for rounding in ROUNDINGS {
        for (xp, wp) in patterns.iter().flat_map(|x| patterns.iter().map(move |w| (x, w))) {
            for (x_zp, mults) in [-128, 127]
                .into_iter()
                .flat_map(|zp| [&per_channel[..], &per_tensor[..]].map(|m| (zp, m)))
            {
                let out = OutputStage::int8(-128 + 255 * i32::from(x_zp > 0), rounding);
                let q = |filter| LayerQuant {
                    x_zp,
                    weights: Int8Weights { filter, bias: Some(&bias[..19]), multipliers: mults },
                    out,
                };
                let what = format!("{rounding:?} x_zp {x_zp} {mults:?}");
                let [c, d, f] =
                    [[4 * 37, 19 * 3 * 37], [4 * 19, 3 * 19], [300, 19 * 300]].map(|[nx, nw]| {
                        [(0..nx).map(xp).collect::<Vec<_>>(), (0..nw).map(wp).collect()]
                    });
                same_as_portable::<B, _>(&conv, &c[0], q(&c[1]), &what);
                same_as_portable::<B, _>(&dw, &d[0], q(&d[1]), &what);
                same_as_portable::<B, _>(&fc, &f[0], q(&f[1]), &what);
            }
        }
    }
}

/// Asserts that layer `g` on backend `B` gives the portable kernel's bytes.
fn same_as_portable<B: Int8Kernels, G: Int8Geometry + core::fmt::Debug>(
    g: &G,
    x: &[i8],
    q: LayerQuant<'_>,
    what: &str,
) {
    let len = g.lengths().unwrap().1;
    let (mut want, mut y) = (vec![0x55i8; len], vec![0x55i8; len]);
    Portable::layer_i8(g, x, q, &mut want).unwrap();
    B::layer_i8(g, x, q, &mut y).unwrap();
    assert_eq!(y, want, "{g:?} {what}");
}
