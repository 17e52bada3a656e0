//! Int8-activation kernels (`kernels::int8`) against references written here from the
//! formulas (TFLite's reference integer kernels, gemmlowp's fixed-point), in i64 / i128:
//! `QuantizeMultiplier` on hand values; the rescaling product in all three roundings on
//! random values over every shift from -31 to 30 and on hand-built ties; conv2d, depthwise
//! and fully connected over random geometry (channels 1..=37, odd and even kernels, strides
//! 1-2, dilation 1-2, both paddings, per-channel and per-tensor multipliers, RELU and no
//! activation); LUT, QUANTIZE and DEQUANTIZE; every error path. The kernel suites are
//! generic bodies run for each backend (`backend_tests!`). `int8/rounding.rs`: the blocked
//! depthwise rounding on ties and the models' shapes, the NEON and x86 dot-product paths;
//! `int8/extremes.rs`: extreme operands against the portable kernels.

use neon_runtime::kernels::int8::{
    rounding_divide_by_pot, srdhm, AffineQuant, ConvGeometry, DepthwiseGeometry, FcGeometry,
    Int8Geometry, Int8Kernels, Int8Weights, LayerQuant, OutputStage, Padding, QuantizedMultiplier,
    Requant, Rounding, Window2d,
};
use neon_runtime::ops::int8::{
    Conv2dI8, DepthwiseI8, DequantizeI8F32, FullyConnectedI8, Int8Params, LogisticI8,
    OwnedInt8Params, QuantizeF32I8, RequantizeI8, RequantizeI8U8, StaticInt8Params,
};
use neon_runtime::ops::ShapeRule;
use neon_runtime::tensor::{Layout, Shape};
use neon_runtime::{backend_tests, Error};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

#[path = "int8/extremes.rs"]
mod extremes;
#[path = "int8/rounding.rs"]
mod rounding;
use extremes::extremes_match_portable;
use rounding::depthwise_rounds_blocks_then_tail;

const ROUNDINGS: [Rounding; 4] =
    [Rounding::AwayFromZero, Rounding::HalfUp, Rounding::Single, Rounding::HalfUpBlocks];

/// `floor(n / 2^e)` for any sign of `n`.
fn floor_pow2(n: i128, e: u32) -> i128 {
    n.div_euclid(1i128 << e)
}

/// The rescaling product, from the formulas: the doubling high product
/// `floor((2ab + 2^31) / 2^32)` (saturated), then a division by `2^right` rounding half away
/// from zero or half up; or one rounding half up of `x * m * 2^shift / 2^31`.
fn ref_multiply(x: i32, m: QuantizedMultiplier, rounding: Rounding) -> i64 {
    let (left, right) = (m.shift.max(0) as u32, (-m.shift).max(0) as u32);
    if rounding == Rounding::Single {
        let total = 31 - m.shift;
        let n = i128::from(x) * i128::from(m.multiplier);
        return floor_pow2(n + (1i128 << (total - 1)), total as u32) as i64;
    }
    // The left shift of the C code: an i32 product, two's complement.
    let a = i128::from((i64::from(x) << left) as i32);
    let high =
        floor_pow2(2 * a * i128::from(m.multiplier) + (1i128 << 31), 32).min(i128::from(i32::MAX));
    if right == 0 {
        return high as i64;
    }
    let half = 1i128 << (right - 1);
    (match rounding {
        Rounding::AwayFromZero => high.signum() * floor_pow2(high.abs() + half, right),
        _ => floor_pow2(high + half, right),
    }) as i64
}

/// The rounding of output channel `c` of `n` (`None`: an elementwise operator), by the
/// rule of tools/microwakeword/FACTS.md section 4.1 for the blocked profile: half up on the
/// channels of whole blocks of 8, half away from zero on the last `n mod 8`.
fn ref_rounding(rounding: Rounding, channel: Option<(usize, usize)>) -> Rounding {
    match (rounding, channel) {
        (Rounding::HalfUpBlocks, Some((c, n))) if c >= n / 8 * 8 => Rounding::AwayFromZero,
        (Rounding::HalfUpBlocks, _) => Rounding::HalfUp,
        (r, _) => r,
    }
}

/// The output stage from the formula: `min(max(product + zp, lo), hi)`, for output channel
/// `channel = (c, n)` of a layer (`None` for an elementwise operator).
fn ref_stage(
    acc: i64,
    m: QuantizedMultiplier,
    out: &OutputStage,
    channel: Option<(usize, usize)>,
) -> i8 {
    let acc = acc as i32; // the accumulator of the C code (no test reaches a wrap)
    (ref_multiply(acc, m, ref_rounding(out.rounding, channel)) + i64::from(out.zero_point))
        .max(i64::from(out.act_min))
        .min(i64::from(out.act_max)) as i8
}

#[test]
fn quantize_multiplier_hand_values() {
    let q = |real: f64| QuantizedMultiplier::from_real(real).unwrap();
    let m = |multiplier: i32, shift: i32| QuantizedMultiplier { multiplier, shift };
    assert_eq!(q(0.5), m(1 << 30, 0));
    assert_eq!(q(1.0), m(1 << 30, 1));
    assert_eq!(q(0.25), m(1 << 30, -1));
    assert_eq!(q(0.75), m(3 << 29, 0));
    assert_eq!(q(0.0), m(0, 0));
    // Just below 1: frexp gives 0.999..., q * 2^31 rounds to 2^31, the fix-up halves it.
    assert_eq!(q(1.0 - f64::EPSILON / 2.0), m(1 << 30, 1));
    assert_eq!(q(0.5 - f64::EPSILON / 8.0), m(1 << 30, 0));
    // Half away from zero: q * 2^31 = 2^30 + 0.5 rounds up, + 0.25 down.
    assert_eq!(q(0.5 + 2f64.powi(-32)), m((1 << 30) + 1, 0));
    assert_eq!(q(0.5 + 2f64.powi(-33)), m(1 << 30, 0));
    assert_eq!(q(0.5 + 3.0 * 2f64.powi(-33)), m((1 << 30) + 1, 0));
    // A typical conv ratio, against round(frac * 2^31) computed here.
    let real = 0.003_921_568_627_450_98_f64 * 0.012_5 / 0.023_4;
    let (mut frac, mut shift) = (real, 0);
    while frac < 0.5 {
        frac *= 2.0;
        shift -= 1;
    }
    assert_eq!(q(real), m((frac * 2f64.powi(31)).round() as i32, shift));
    // Tiny values: a shift below -31 gives zero; 2^-32 is exactly shift -31.
    assert_eq!(q(2f64.powi(-32)), m(1 << 30, -31));
    assert_eq!(q(2f64.powi(-33)), m(0, 0));
    assert_eq!(q(f64::MIN_POSITIVE / 4.0), m(0, 0));
    // Large values up to shift 30.
    assert_eq!(q(2f64.powi(29)), m(1 << 30, 30));
    assert_eq!(q(100.0), m(100 << 24, 7));
    // From f32 scales, in f64: one product and one quotient, each rounded to f64.
    let (si, sw, so) = (0.003_921_568_6_f32, 0.012_5_f32, 0.023_4_f32);
    let real = f64::from(si) * f64::from(sw) / f64::from(so);
    assert_eq!(QuantizedMultiplier::from_scales(si, sw, so).unwrap(), q(real));
    assert_eq!(QuantizedMultiplier::from_scales(0.5, 0.25, 0.125).unwrap(), m(1 << 30, 1));
    assert!(QuantizedMultiplier::from_scales(0.5, 1.0, 0.0).is_err());
    for bad in [-0.5, f64::NAN, f64::INFINITY, 2f64.powi(30)] {
        assert!(matches!(QuantizedMultiplier::from_real(bad), Err(Error::Shape(_))), "{bad}");
    }
}

#[test]
fn srdhm_is_rounding_half_up() {
    let mut r = SmallRng::seed_from_u64(1);
    for _ in 0..100_000 {
        let (a, b): (i32, i32) = (r.gen(), r.gen());
        let want = floor_pow2(2 * i128::from(a) * i128::from(b) + (1i128 << 31), 32)
            .min(i128::from(i32::MAX));
        assert_eq!(i128::from(srdhm(a, b)), want, "{a} {b}");
    }
    assert_eq!(srdhm(i32::MIN, i32::MIN), i32::MAX);
    // Ties: ab = +-2^30 (x.5) go up.
    assert_eq!(srdhm(1 << 15, 1 << 15), 1);
    assert_eq!(srdhm(-(1 << 15), 1 << 15), 0);
    assert_eq!(srdhm(-3 << 15, 1 << 15), -1);
    assert_eq!(rounding_divide_by_pot(-5, 1), -3);
    assert_eq!(rounding_divide_by_pot(5, 1), 3);
    assert_eq!(rounding_divide_by_pot(i32::MIN, 31), -1);
    assert_eq!(rounding_divide_by_pot(i32::MAX, 31), 1);
}

#[test]
fn multiply_every_shift_and_rounding() {
    let mut r = SmallRng::seed_from_u64(2);
    for shift in -31..=30 {
        for _ in 0..4000 {
            let m = QuantizedMultiplier { multiplier: r.gen_range(1 << 30..=i32::MAX), shift };
            // Accumulators of every magnitude, small ones often (where ties are frequent).
            let bits = r.gen_range(0..=31);
            let x = (r.gen::<i32>() >> (31 - bits)).wrapping_sub(r.gen_range(0..2));
            // Left shifts that wrap, and single-rounding results beyond i32, are the C
            // code's wrapping; compare where neither happens.
            if shift > 0 && (i64::from(x) << shift) != i64::from(x.wrapping_shl(shift as u32)) {
                continue;
            }
            for rounding in ROUNDINGS {
                let want = ref_multiply(x, m, rounding);
                if want == i64::from(want as i32) {
                    assert_eq!(i64::from(m.apply(x, rounding)), want, "{x} {m:?} {rounding:?}");
                }
            }
        }
    }
}

#[test]
fn multiply_hand_ties() {
    let half = QuantizedMultiplier { multiplier: 1 << 30, shift: 0 }; // x * 0.5
    let quarter = QuantizedMultiplier { multiplier: 1 << 30, shift: -1 }; // x * 0.25
    let cases: &[(QuantizedMultiplier, i32, [i32; 3])] = &[
        // (m, x, [AwayFromZero, HalfUp, Single])
        (half, 3, [2, 2, 2]),
        (half, -3, [-1, -1, -1]), // the doubling high product rounds -1.5 up: no right shift
        (quarter, 2, [1, 1, 1]),  // 0.5: SRDHM exact (1), then 1 / 2 rounds
        (quarter, -2, [-1, 0, 0]), // -0.5: away from zero -1, half up 0
        (quarter, 6, [2, 2, 2]),
        (quarter, -6, [-2, -1, -1]),
        (quarter, -10, [-3, -2, -2]),
        // x * 0.75 / 2: -1 -> SRDHM -0.75 -> -1, then -0.5 rounds both ways; single -0.375.
        (QuantizedMultiplier { multiplier: 3 << 29, shift: -1 }, -1, [-1, 0, 0]),
        (QuantizedMultiplier { multiplier: 3 << 29, shift: -2 }, -4, [-1, -1, -1]),
        (QuantizedMultiplier { multiplier: 3 << 29, shift: -1 }, -4, [-2, -1, -1]),
        // A double rounding that differs from the single one: x * 0.75 / 2 with x = 1:
        // SRDHM gives round(0.75) = 1, then 1 / 2 = 0.5 rounds to 1; single: 0.375 -> 0.
        (QuantizedMultiplier { multiplier: 3 << 29, shift: -1 }, 1, [1, 1, 0]),
        (QuantizedMultiplier { multiplier: 3 << 29, shift: -1 }, 4, [2, 2, 2]),
    ];
    for &(m, x, want) in cases {
        for (rounding, want) in ROUNDINGS.into_iter().zip(want) {
            assert_eq!(m.apply(x, rounding), want, "{x} {m:?} {rounding:?}");
            assert_eq!(
                i64::from(want),
                ref_multiply(x, m, rounding),
                "reference {x} {m:?} {rounding:?}"
            );
        }
    }
    let stage = Requant { multiplier: 1 << 30, shift: -1, out_zp: 3, act_min: 3, act_max: 127 };
    assert_eq!(stage.apply(-2, Rounding::AwayFromZero), 3); // -1 + 3 = 2, RELU clamps to 3
    assert_eq!(stage.apply(1000, Rounding::HalfUp), 127);
}

/// Asserts that most outputs of a suite were inside the activation range, so that the
/// multipliers tested the rounding and not only the clamp.
fn assert_mostly_inside(inside: usize, total: usize) {
    assert!(inside * 2 > total, "only {inside} of {total} outputs inside the range");
}

/// Whether `y` lies strictly inside the stage's range.
fn inside(out: &OutputStage, y: &[i8]) -> usize {
    y.iter().filter(|&&v| (out.act_min + 1..out.act_max).contains(&i32::from(v))).count()
}

/// Random int8 values.
fn codes(r: &mut SmallRng, n: usize) -> Vec<i8> {
    (0..n).map(|_| r.gen()).collect()
}

/// A random output stage: zero point, RELU or none, a rounding.
fn random_stage(r: &mut SmallRng) -> OutputStage {
    let zero_point = r.gen_range(-128..=127);
    let act_min = if r.gen_bool(0.3) { zero_point.max(-128) } else { -128 };
    OutputStage { zero_point, act_min, act_max: 127, rounding: ROUNDINGS[r.gen_range(0..4)] }
}

/// Multipliers that keep outputs mostly inside int8 for accumulators of `taps` products,
/// sometimes per tensor, with random shifts down to -31 and up to 7 now and then.
fn random_multipliers(r: &mut SmallRng, channels: usize, taps: usize) -> Vec<QuantizedMultiplier> {
    let n = if r.gen_bool(0.2) { 1 } else { channels };
    let typical = -((taps as f64 * 128.0 * 128.0).log2().ceil() as i32) + 6;
    (0..n)
        .map(|_| {
            let shift =
                if r.gen_bool(0.1) { r.gen_range(-31..=7) } else { typical + r.gen_range(-2..=2) };
            QuantizedMultiplier {
                multiplier: r.gen_range(1 << 30..=i32::MAX),
                shift: shift.clamp(-31, 7),
            }
        })
        .collect()
}

/// A random window over `channels` planes of up to 9 x 9 that gives a non-empty output,
/// TFLite's padding rule resolved by [`Window2d::with_padding`] and checked against
/// [`ref_axis`].
fn random_window(r: &mut SmallRng, channels: usize) -> Window2d {
    loop {
        let kernel = [r.gen_range(1..=5), r.gen_range(1..=5)];
        let image = [r.gen_range(1..=9), r.gen_range(1..=9)];
        let stride = [r.gen_range(1..=2), r.gen_range(1..=2)];
        let dilation = [r.gen_range(1..=2), r.gen_range(1..=2)];
        let padding = if r.gen_bool(0.5) { Padding::Same } else { Padding::Valid };
        let Ok(g) = Window2d::with_padding(channels, image, kernel, stride, dilation, padding)
        else {
            continue;
        };
        let rows = ref_axis(g.height, g.kernel_h, g.stride_h, g.dilation_h, padding);
        let cols = ref_axis(g.width, g.kernel_w, g.stride_w, g.dilation_w, padding);
        assert_eq!(rows, (g.out_height, g.pad_top as i64), "{g:?} {padding:?}");
        assert_eq!(cols, (g.out_width, g.pad_left as i64), "{g:?} {padding:?}");
        return g;
    }
}

/// A valid window of stride and dilation 1 over `channels` planes: image `[H, W]`, kernel
/// `[KH, KW]`.
fn valid_window(channels: usize, image: [usize; 2], kernel: [usize; 2]) -> Window2d {
    Window2d::with_padding(channels, image, kernel, [1, 1], [1, 1], Padding::Valid).unwrap()
}

/// TFLite's output size and padding along one axis, from `padding.h`'s formulas.
fn ref_axis(size: usize, k: usize, stride: usize, dil: usize, p: Padding) -> (usize, i64) {
    let eff = ((k - 1) * dil + 1) as i64;
    let (size, stride) = (size as i64, stride as i64);
    let out = match p {
        Padding::Same => (size + stride - 1) / stride,
        Padding::Valid => (size + stride - eff) / stride,
    };
    let total = ((out - 1) * stride + eff - size).max(0);
    (out as usize, total / 2)
}

/// The input position of tap `k` of output `o`, if inside `0..size`.
fn tap(o: usize, k: usize, stride: usize, dil: usize, pad: i64, size: usize) -> Option<usize> {
    let i = (o * stride + k * dil) as i64 - pad;
    (0..size as i64).contains(&i).then_some(i as usize)
}

/// Reference conv2d (depthwise when `dm` is `Some`): NHWC loops with i64 sums.
#[allow(clippy::too_many_arguments)]
fn ref_conv(
    g: &Window2d,
    (cin, cout, dm): (usize, usize, Option<usize>),
    x: &[i8],
    x_zp: i32,
    filter: &[i8],
    bias: Option<&[i32]>,
    mults: &[QuantizedMultiplier],
    out: &OutputStage,
) -> Vec<i8> {
    let (oh, pt) = (g.out_height, g.pad_top as i64);
    let (ow, pl) = (g.out_width, g.pad_left as i64);
    let mut y = Vec::with_capacity(oh * ow * cout);
    for oy in 0..oh {
        for ox in 0..ow {
            for oc in 0..cout {
                let mut acc = bias.map_or(0, |b| i64::from(b[oc]));
                for ky in 0..g.kernel_h {
                    let Some(iy) = tap(oy, ky, g.stride_h, g.dilation_h, pt, g.height) else {
                        continue;
                    };
                    for kx in 0..g.kernel_w {
                        let Some(ix) = tap(ox, kx, g.stride_w, g.dilation_w, pl, g.width) else {
                            continue;
                        };
                        let px = (iy * g.width + ix) * cin;
                        let xv = |c: usize| i64::from(x[px + c]) - i64::from(x_zp);
                        match dm {
                            None => {
                                for ic in 0..cin {
                                    let wv = filter
                                        [((oc * g.kernel_h + ky) * g.kernel_w + kx) * cin + ic];
                                    acc += xv(ic) * i64::from(wv);
                                }
                            }
                            Some(dm) => {
                                let wv = filter[(ky * g.kernel_w + kx) * cout + oc];
                                acc += xv(oc / dm) * i64::from(wv);
                            }
                        }
                    }
                }
                let m = if mults.len() == 1 { mults[0] } else { mults[oc] };
                y.push(ref_stage(acc, m, out, Some((oc, cout))));
            }
        }
    }
    y
}

/// One random conv2d or depthwise layer of geometry `g` over `window` (`dm`: a depthwise
/// layer's depth multiplier) against [`ref_conv`] on backend `B`: random input, filter,
/// bias (or none), multipliers, zero point and stage. Returns the outputs inside the
/// activation range and all outputs.
fn window_case<B: Int8Kernels, G: Int8Geometry + core::fmt::Debug>(
    r: &mut SmallRng,
    case: usize,
    g: G,
    (window, dm): (Window2d, Option<usize>),
) -> (usize, usize) {
    let (x_len, y_len) = g.lengths().unwrap();
    let [cout, per_channel] = g.filter_shape().unwrap();
    let x = codes(r, x_len);
    let filter = codes(r, cout * per_channel);
    let bias: Vec<i32> = (0..cout).map(|_| r.gen_range(-40_000..40_000)).collect();
    let bias = r.gen_bool(0.8).then_some(&bias[..]);
    let mults = random_multipliers(r, cout, per_channel);
    let (x_zp, out) = (r.gen_range(-128..=127), random_stage(r));
    let sizes = (window.channels, cout, dm);
    let want = ref_conv(&window, sizes, &x, x_zp, &filter, bias, &mults, &out);
    let mut y = vec![0x55i8; y_len];
    let w = Int8Weights { filter: &filter, bias, multipliers: &mults };
    B::layer_i8(&g, &x, LayerQuant { x_zp, weights: w, out }, &mut y).unwrap();
    assert_eq!(y, want, "case {case}: {g:?} {out:?}");
    (inside(&out, &y), y.len())
}

fn conv2d_matches_reference<B: Int8Kernels>() {
    let mut r = SmallRng::seed_from_u64(10);
    let mut count = (0, 0);
    for case in 0..300 {
        let (cin, cout) = (r.gen_range(1..=37), r.gen_range(1..=37));
        let window = random_window(&mut r, cin);
        let g = ConvGeometry { window, out_channels: cout };
        let (inside, all) = window_case::<B, _>(&mut r, case, g, (window, None));
        count = (count.0 + inside, count.1 + all);
    }
    assert_mostly_inside(count.0, count.1);
}

fn depthwise_matches_reference<B: Int8Kernels>() {
    let mut r = SmallRng::seed_from_u64(11);
    let mut count = (0, 0);
    for case in 0..300 {
        let channels = if r.gen_bool(0.5) { r.gen_range(1..=37) } else { r.gen_range(60..=140) };
        let window = random_window(&mut r, channels);
        let dm = if r.gen_bool(0.7) { 1 } else { r.gen_range(2..=3) };
        let g = DepthwiseGeometry { window, depth_multiplier: dm };
        let (inside, all) = window_case::<B, _>(&mut r, case, g, (window, Some(dm)));
        count = (count.0 + inside, count.1 + all);
    }
    assert_mostly_inside(count.0, count.1);
}

/// A random fully connected layer (1-3 rows, 1-300 input features, 1-37 outputs) with its
/// reference output `want`.
struct FcCase {
    g: FcGeometry,
    x: Vec<i8>,
    filter: Vec<i8>,
    bias: Option<Vec<i32>>,
    mults: Vec<QuantizedMultiplier>,
    x_zp: i32,
    out: OutputStage,
    want: Vec<i8>,
}

impl FcCase {
    fn random(r: &mut SmallRng) -> Self {
        let g = FcGeometry {
            rows: r.gen_range(1..=3),
            in_features: r.gen_range(1..=300),
            out_features: r.gen_range(1..=37),
        };
        let x = codes(r, g.rows * g.in_features);
        let filter = codes(r, g.out_features * g.in_features);
        let bias: Vec<i32> = (0..g.out_features).map(|_| r.gen_range(-40_000..40_000)).collect();
        let bias = r.gen_bool(0.8).then_some(bias);
        let mults = random_multipliers(r, g.out_features, g.in_features);
        let (x_zp, out) = (r.gen_range(-128..=127), random_stage(r));
        let mut want = Vec::new();
        for row in x.chunks(g.in_features) {
            for (j, w) in filter.chunks(g.in_features).enumerate() {
                let dot: i64 = row
                    .iter()
                    .zip(w)
                    .map(|(&x, &w)| (i64::from(x) - i64::from(x_zp)) * i64::from(w))
                    .sum();
                let m = if mults.len() == 1 { mults[0] } else { mults[j] };
                let acc = dot + bias.as_ref().map_or(0, |b| i64::from(b[j]));
                want.push(ref_stage(acc, m, &out, Some((j, g.out_features))));
            }
        }
        FcCase { g, x, filter, bias, mults, x_zp, out, want }
    }

    /// The layer's operands.
    fn quant(&self) -> LayerQuant<'_> {
        let weights = Int8Weights {
            filter: &self.filter,
            bias: self.bias.as_deref(),
            multipliers: &self.mults,
        };
        LayerQuant { x_zp: self.x_zp, weights, out: self.out }
    }
}

fn fully_connected_matches_reference<B: Int8Kernels>() {
    let mut r = SmallRng::seed_from_u64(12);
    let mut count = (0, 0);
    for case in 0..300 {
        let c = FcCase::random(&mut r);
        let mut y = vec![0x55i8; c.want.len()];
        B::layer_i8(&c.g, &c.x, c.quant(), &mut y).unwrap();
        assert_eq!(y, c.want, "case {case}: {:?} {:?}", c.g, c.out);
        count = (count.0 + inside(&c.out, &y), count.1 + y.len());
    }
    assert_mostly_inside(count.0, count.1);
}

fn elementwise_match_reference<B: Int8Kernels>() {
    let mut r = SmallRng::seed_from_u64(13);
    let all: Vec<i8> = (-128..=127).collect();
    // LUT: entry q + 128 for input q.
    let lut: [i8; 256] = core::array::from_fn(|i| (255 - i) as u8 as i8);
    let mut y = vec![0i8; 256];
    B::lut_i8(&lut, &all, &mut y).unwrap();
    for (&x, &y) in all.iter().zip(&y) {
        assert_eq!(y, (127 - i32::from(x)) as u8 as i8);
    }
    // int8 -> uint8 with equal scales: x + 128, exactly.
    let m = QuantizedMultiplier::from_real(1.0).unwrap();
    let mut u = vec![0u8; 256];
    for rounding in ROUNDINGS {
        let out = OutputStage { zero_point: 128, act_min: 0, act_max: 255, rounding };
        B::requantize_i8(&all, 0, m, out, &mut u).unwrap();
        assert!(all.iter().zip(&u).all(|(&x, &u)| i32::from(u) == i32::from(x) + 128));
    }
    // int8 -> int8 with random scales, against the reference stage.
    for _ in 0..200 {
        let m = QuantizedMultiplier::from_real(r.gen_range(0.01..4.0)).unwrap();
        let (x_zp, out) = (r.gen_range(-128..=127), random_stage(&mut r));
        B::requantize_i8(&all, x_zp, m, out, &mut y).unwrap();
        for (&x, &y) in all.iter().zip(&y) {
            assert_eq!(y, ref_stage(i64::from(x) - i64::from(x_zp), m, &out, None));
        }
    }
    // f32 -> int8: round half away from zero of the f32 quotient, then zp, clamped.
    let q = AffineQuant { scale: 0.5, zero_point: -3 };
    let x = [0.25f32, -0.25, 0.75, -0.75, 1.0, 63.6, -70.0, 1e9, -1e9, f32::NAN, 0.2499];
    let want = [-2i8, -4, -1, -5, -1, 124, -128, 127, -128, -3, -3];
    let mut y = [0i8; 11];
    B::quantize_f32_i8(&x, q, &mut y).unwrap();
    assert_eq!(y, want);
    for _ in 0..2000 {
        let q =
            AffineQuant { scale: r.gen_range(1e-3f32..1.0), zero_point: r.gen_range(-128..=127) };
        let x: Vec<f32> = (0..17).map(|_| r.gen_range(-200.0f32..200.0)).collect();
        let mut y = vec![0i8; 17];
        B::quantize_f32_i8(&x, q, &mut y).unwrap();
        for (&x, &y) in x.iter().zip(&y) {
            let v = f64::from(x / q.scale).round() as i64 + i64::from(q.zero_point);
            assert_eq!(i64::from(y), v.clamp(-128, 127), "{x} {q:?}");
        }
    }
    // int8 -> f32 as the x86-64 library: f32(x·s) + f32(-zp·s), two roundings (FACTS.md 6:
    // hey_luna's q = -127, zp = -128, s = 0.036927443 gives 0.036927223, not s), except on
    // a tail of len mod 8.
    let q = AffineQuant { scale: 0.036_927_443, zero_point: -128 };
    let mut f = [0f32; 9];
    B::dequantize_i8_f32(&[-127; 9], q, &mut f).unwrap();
    assert_eq!(f.map(f32::to_bits), [[0x3d17_4100; 8].as_slice(), &[0x3d17_413b]].concat()[..]);
    // Blocks of 8 so; the last len mod 8 one rounding of (x - zp)·s (a tail of 5 here).
    let q = AffineQuant { scale: 0.037_123_4, zero_point: 5 };
    let mut f = vec![0f32; 253];
    B::dequantize_i8_f32(&all[..253], q, &mut f).unwrap();
    for (k, (&x, &f)) in all.iter().zip(&f).enumerate() {
        let two = f32::from(x) * q.scale + (-5.0 * f64::from(q.scale)) as f32;
        let one = ((f64::from(x) - 5.0) * f64::from(q.scale)) as f32;
        assert_eq!(f, if k < 248 { two } else { one }, "{k}");
    }
}

fn bad_input_is_an_error<B: Int8Kernels>() {
    let window = valid_window(2, [4, 4], [3, 3]);
    let g = ConvGeometry { window, out_channels: 3 };
    let (x, f, b) = (vec![0i8; 32], vec![0i8; 54], vec![0i32; 3]);
    let m = [QuantizedMultiplier { multiplier: 1 << 30, shift: -3 }];
    let out = OutputStage::int8(0, Rounding::AwayFromZero);
    let w = Int8Weights { filter: &f, bias: Some(&b), multipliers: &m };
    let mut y = vec![0i8; 12];
    B::layer_i8(&g, &x, LayerQuant { x_zp: 0, weights: w, out }, &mut y).unwrap();
    let length = |e: Result<(), Error>| assert!(matches!(e, Err(Error::Length { .. })), "{e:?}");
    let rule = |e: Result<(), Error>| assert!(matches!(e, Err(Error::Shape(_))), "{e:?}");
    length(B::layer_i8(&g, &x[1..], LayerQuant { x_zp: 0, weights: w, out }, &mut y));
    length(B::layer_i8(&g, &x, LayerQuant { x_zp: 0, weights: w, out }, &mut y[1..]));
    length(B::layer_i8(
        &g,
        &x,
        LayerQuant { x_zp: 0, weights: Int8Weights { filter: &f[1..], ..w }, out },
        &mut y,
    ));
    length(B::layer_i8(
        &g,
        &x,
        LayerQuant { x_zp: 0, weights: Int8Weights { bias: Some(&b[1..]), ..w }, out },
        &mut y,
    ));
    let two = [m[0]; 2];
    length(B::layer_i8(
        &g,
        &x,
        LayerQuant { x_zp: 0, weights: Int8Weights { multipliers: &two, ..w }, out },
        &mut y,
    ));
    let bad_m = [QuantizedMultiplier { multiplier: -1, shift: 0 }];
    rule(B::layer_i8(
        &g,
        &x,
        LayerQuant { x_zp: 0, weights: Int8Weights { multipliers: &bad_m, ..w }, out },
        &mut y,
    ));
    let bad_m = [QuantizedMultiplier { multiplier: 1, shift: 31 }];
    rule(B::layer_i8(
        &g,
        &x,
        LayerQuant { x_zp: 0, weights: Int8Weights { multipliers: &bad_m, ..w }, out },
        &mut y,
    ));
    rule(B::layer_i8(&g, &x, LayerQuant { x_zp: 128, weights: w, out }, &mut y));
    rule(B::layer_i8(
        &g,
        &x,
        LayerQuant { x_zp: 0, weights: w, out: OutputStage { act_min: 5, act_max: 4, ..out } },
        &mut y,
    ));
    rule(B::layer_i8(
        &g,
        &x,
        LayerQuant { x_zp: 0, weights: w, out: OutputStage { zero_point: 200, ..out } },
        &mut y,
    ));
    let big = Window2d::with_padding(2, [4, 4], [5, 3], [1, 1], [1, 1], Padding::Valid);
    assert!(matches!(big, Err(Error::Shape(_))), "{big:?}");
    let zero = ConvGeometry { window: Window2d { stride_w: 0, ..window }, ..g };
    rule(B::layer_i8(&zero, &x, LayerQuant { x_zp: 0, weights: w, out }, &mut y));
    let empty = ConvGeometry { window: Window2d { out_height: 0, ..window }, ..g };
    rule(B::layer_i8(&empty, &x, LayerQuant { x_zp: 0, weights: w, out }, &mut y));
    let far = ConvGeometry { window: Window2d { pad_left: usize::MAX, ..window }, ..g };
    rule(B::layer_i8(&far, &x, LayerQuant { x_zp: 0, weights: w, out }, &mut y));
    rule(B::layer_i8(
        &ConvGeometry { window: Window2d { channels: 0, ..window }, ..g },
        &x,
        LayerQuant { x_zp: 0, weights: w, out },
        &mut y,
    ));
    let dw = DepthwiseGeometry { window, depth_multiplier: 0 };
    rule(B::layer_i8(&dw, &x, LayerQuant { x_zp: 0, weights: w, out }, &mut y));
    let huge = DepthwiseGeometry {
        window: Window2d { channels: usize::MAX, ..window },
        depth_multiplier: 2,
    };
    rule(B::layer_i8(&huge, &x, LayerQuant { x_zp: 0, weights: w, out }, &mut y));
    let fc = FcGeometry { rows: 1, in_features: 32, out_features: 3 };
    length(B::layer_i8(&fc, &x, LayerQuant { x_zp: 0, weights: w, out }, &mut y));
    length(B::lut_i8(&[0; 256], &x, &mut y));
    let q = AffineQuant { scale: 0.0, zero_point: 0 };
    rule(B::quantize_f32_i8(&[1.0], q, &mut [0]));
    rule(B::dequantize_i8_f32(&[1], AffineQuant { scale: f32::NAN, ..q }, &mut [0.0]));
    let u8_stage =
        OutputStage { zero_point: 128, act_min: 0, act_max: 255, rounding: Rounding::HalfUp };
    rule(B::requantize_i8(&[1], 0, m[0], u8_stage, &mut [0i8]));
    B::requantize_i8(&[1], 0, m[0], u8_stage, &mut [0u8]).unwrap();
}

fn operators_match_kernels<B: Int8Kernels>() {
    let mut r = SmallRng::seed_from_u64(14);
    let window = Window2d::with_padding(6, [7, 5], [3, 1], [2, 1], [1, 1], Padding::Same).unwrap();
    let out = OutputStage { zero_point: -7, act_min: -7, act_max: 127, rounding: Rounding::HalfUp };
    let x = codes(&mut r, 7 * 5 * 6);
    let params = |r: &mut SmallRng, filter: usize, c: usize| -> OwnedInt8Params {
        Int8Params {
            filter: codes(r, filter),
            bias: Some((0..c).map(|_| r.gen_range(-3000..3000)).collect()),
            multipliers: random_multipliers(r, c, filter / c),
        }
    };
    // conv2d: [1, 7, 5, 6] -> [1, 4, 5, 9].
    let g = ConvGeometry { window, out_channels: 9 };
    let conv = Conv2dI8::new(g, params(&mut r, 9 * 3 * 6, 9), 3, out).unwrap();
    assert_eq!(g.output_shape(&[Shape::new(&[1, 7, 5, 6]).unwrap()]).unwrap().dims(), [1, 4, 5, 9]);
    assert_eq!(
        (g.name(), g.reads_layout(0), conv.lengths()),
        ("conv2d_i8", Some(Layout::FrameMajor), Ok((210, 180)))
    );
    assert!(matches!(
        g.output_shape(&[Shape::new(&[1, 7, 5, 5]).unwrap()]),
        Err(neon_runtime::ShapeError::Dim { axis: 3, .. })
    ));
    let (mut y, mut want) = (vec![0i8; 180], vec![1i8; 180]);
    conv.run::<B>(&x, &mut y).unwrap();
    B::layer_i8(&g, &x, LayerQuant { x_zp: 3, weights: conv.params().weights(), out }, &mut want)
        .unwrap();
    assert_eq!(y, want);
    // The layer checks only lengths per call: its errors are the kernel's, nothing written.
    let q = LayerQuant { x_zp: 3, weights: conv.params().weights(), out };
    for (x_len, y_len) in [(209, 180), (210, 179), (0, 0), (209, 181)] {
        let (mut got, mut kernel) = (vec![9i8; y_len], vec![9i8; y_len]);
        let e = conv.run::<B>(&x[..x_len], &mut got);
        assert!(matches!(e, Err(Error::Length { .. })), "{e:?}");
        assert_eq!(e, B::layer_i8(&g, &x[..x_len], q, &mut kernel));
        assert!(got.iter().chain(&kernel).all(|&v| v == 9));
    }
    let short = Int8Params { filter: vec![0i8; 5], ..params(&mut r, 9 * 3 * 6, 9) };
    assert!(matches!(Conv2dI8::new(g, short, 3, out), Err(Error::Length { .. })));
    // depthwise: [1, 7, 5, 6] -> [1, 4, 5, 12], static parameters.
    let g = DepthwiseGeometry { window, depth_multiplier: 2 };
    static FILTER: [i8; 36] = [5; 36];
    static BIAS: [i32; 12] = [-100; 12];
    static MULTIPLIERS: [QuantizedMultiplier; 1] =
        [QuantizedMultiplier { multiplier: 1 << 30, shift: -6 }];
    let p: StaticInt8Params =
        Int8Params { filter: &FILTER, bias: Some(&BIAS), multipliers: &MULTIPLIERS };
    let dw = DepthwiseI8::new(g, p, 3, out).unwrap();
    let (mut y, mut want) = (vec![0i8; 240], vec![1i8; 240]);
    dw.run::<B>(&x, &mut y).unwrap();
    B::layer_i8(&g, &x, LayerQuant { x_zp: 3, weights: dw.params().weights(), out }, &mut want)
        .unwrap();
    assert_eq!(y, want);
    assert_eq!(
        g.output_shape(&[Shape::new(&[1, 7, 5, 6]).unwrap()]).unwrap().dims(),
        [1, 4, 5, 12]
    );
    // fully connected: [2, 105] -> [2, 4].
    let g = FcGeometry { rows: 2, in_features: 105, out_features: 4 };
    let fc = FullyConnectedI8::new(
        g,
        params(&mut r, 4 * 105, 4),
        -128,
        OutputStage::int8(0, Rounding::AwayFromZero),
    )
    .unwrap();
    let (mut y, mut want) = (vec![0i8; 8], vec![1i8; 8]);
    fc.run::<B>(&x, &mut y).unwrap();
    B::layer_i8(
        &g,
        &x,
        LayerQuant { x_zp: -128, weights: fc.params().weights(), out: fc_stage() },
        &mut want,
    )
    .unwrap();
    assert_eq!(y, want);
    assert_eq!(g.output_shape(&[Shape::new(&[2, 105]).unwrap()]).unwrap().dims(), [2, 4]);
    assert!(g.output_shape(&[Shape::new(&[105]).unwrap()]).is_err());
    // Elementwise operators.
    let lut: [i8; 256] = core::array::from_fn(|i| (i / 2) as i8);
    let mut y = vec![0i8; x.len()];
    LogisticI8::new(lut).run::<B>(&x, &mut y).unwrap();
    assert!(x.iter().zip(&y).all(|(&x, &y)| i32::from(y) == (i32::from(x) + 128) / 2));
    assert_eq!(
        LogisticI8::RULE.output_shape(&[Shape::new(&[1, 3, 40]).unwrap()]).unwrap().dims(),
        [1, 3, 40]
    );
    let m = QuantizedMultiplier::from_real(1.0).unwrap();
    let u8_stage =
        OutputStage { zero_point: 128, act_min: 0, act_max: 255, rounding: Rounding::AwayFromZero };
    let mut u = vec![0u8; x.len()];
    RequantizeI8U8::new(0, m, u8_stage).unwrap().run::<B>(&x, &mut u).unwrap();
    assert!(x.iter().zip(&u).all(|(&x, &u)| i32::from(u) == i32::from(x) + 128));
    assert!(RequantizeI8::new(0, m, u8_stage).is_err());
    RequantizeI8::new(0, m, out).unwrap().run::<B>(&x, &mut y).unwrap();
    assert!(x.iter().zip(&y).all(|(&x, &y)| i32::from(y) == (i32::from(x) - 7).max(-7)));
    let q = AffineQuant { scale: 0.25, zero_point: 1 };
    let mut f = vec![0f32; x.len()];
    DequantizeI8F32::new(q).unwrap().run::<B>(&x, &mut f).unwrap();
    QuantizeF32I8::new(q).unwrap().run::<B>(&f, &mut y).unwrap();
    assert_eq!(y, x);
    assert!(QuantizeF32I8::new(AffineQuant { scale: -1.0, ..q }).is_err());
    assert!(DequantizeI8F32::new(AffineQuant { zero_point: 300, ..q }).is_err());
}

/// Hand-built ties through the layer kernels: a 1x1 conv and a fully connected layer with
/// weight 1 rescale every int8 input by 1/4 (ties at -2, -6, ...: away from zero against
/// half up) and by 3/8 (where the double rounding and the single one differ).
fn kernels_keep_each_rounding<B: Int8Kernels>() {
    let x: Vec<i8> = (-128..=127).collect();
    let quarter = QuantizedMultiplier { multiplier: 1 << 30, shift: -1 };
    let three_eighths = QuantizedMultiplier { multiplier: 3 << 29, shift: -1 };
    let window = valid_window(1, [16, 16], [1, 1]);
    let conv = ConvGeometry { window, out_channels: 1 };
    let fc = FcGeometry { rows: 256, in_features: 1, out_features: 1 };
    for m in [quarter, three_eighths] {
        for rounding in ROUNDINGS {
            let out = OutputStage::int8(0, rounding);
            let q = LayerQuant {
                x_zp: 0,
                weights: Int8Weights { filter: &[1], bias: None, multipliers: &[m] },
                out,
            };
            let want: Vec<i8> =
                x.iter().map(|&x| ref_stage(i64::from(x), m, &out, Some((0, 1)))).collect();
            let (mut a, mut b) = (vec![0i8; 256], vec![0i8; 256]);
            B::layer_i8(&conv, &x, q, &mut a).unwrap();
            B::layer_i8(&fc, &x, q, &mut b).unwrap();
            assert_eq!((&a, &b), (&want, &want), "{m:?} {rounding:?}");
            let at = |v: i8| a[(i32::from(v) + 128) as usize];
            match (m == quarter, rounding) {
                // One output channel: the blocked profile's tail, half away from zero.
                (true, Rounding::AwayFromZero | Rounding::HalfUpBlocks) => {
                    assert_eq!([at(-2), at(-6), at(2)], [-1, -2, 1])
                }
                (true, _) => assert_eq!([at(-2), at(-6), at(2)], [0, -1, 1]),
                (false, Rounding::Single) => assert_eq!(at(1), 0),
                (false, _) => assert_eq!(at(1), 1),
            }
        }
    }
}

/// The output stage of the fully connected case of `operators_match_kernels`.
fn fc_stage() -> OutputStage {
    OutputStage::int8(0, Rounding::AwayFromZero)
}

#[test]
fn operators_are_send_and_sync() {
    fn check<T: Send + Sync>() {}
    check::<Conv2dI8<OwnedInt8Params>>();
    check::<DepthwiseI8<StaticInt8Params>>();
    check::<FullyConnectedI8<OwnedInt8Params>>();
    check::<(LogisticI8, RequantizeI8, RequantizeI8U8, QuantizeF32I8, DequantizeI8F32)>();
}

backend_tests!(
    extremes_match_portable,
    kernels_keep_each_rounding,
    depthwise_rounds_blocks_then_tail,
    operators_match_kernels,
    conv2d_matches_reference,
    depthwise_matches_reference,
    fully_connected_matches_reference,
    elementwise_match_reference,
    bad_input_is_an_error,
    prepared_row_sums_match_portable,
);

/// [`RowSums`](neon_runtime::kernels::int8::RowSums): each row's wrapping sum for up to
/// `ROW_SUMS_CHANNELS` channels, none beyond (or for a short filter).
#[test]
fn row_sums_up_to_the_cap() {
    use neon_runtime::kernels::int8::{RowSums, ROW_SUMS_CHANNELS};
    let filter = cap_filter();
    let sums = RowSums::new(&filter, [ROW_SUMS_CHANNELS, 3]);
    assert_eq!(sums.get(), Some(&[-8i32; ROW_SUMS_CHANNELS][..]));
    assert_eq!(RowSums::new(&filter, [ROW_SUMS_CHANNELS + 1, 3]), RowSums::NONE);
    assert_eq!(RowSums::new(&filter[..5], [2, 3]), RowSums::NONE);
    assert_eq!(RowSums::NONE.get(), None);
}

/// Rows of `-128, 127, -7` for `ROW_SUMS_CHANNELS + 1` channels.
fn cap_filter() -> Vec<i8> {
    use neon_runtime::kernels::int8::ROW_SUMS_CHANNELS;
    (0..(ROW_SUMS_CHANNELS + 1) * 3).map(|i| [-128, 127, -7][i % 3]).collect()
}

/// A prepared fully connected layer with row sums (`ROW_SUMS_CHANNELS` outputs) and without
/// (one more) gives the portable kernel's outputs.
fn prepared_row_sums_match_portable<B: Int8Kernels>() {
    use neon_runtime::kernels::int8::ROW_SUMS_CHANNELS;
    let filter = cap_filter();
    let mut r = SmallRng::seed_from_u64(40);
    for out_features in [ROW_SUMS_CHANNELS, ROW_SUMS_CHANNELS + 1] {
        let g = FcGeometry { rows: 2, in_features: 3, out_features };
        let p = Int8Params {
            filter: filter[..out_features * 3].to_vec(),
            bias: Some((0..out_features as i32).collect::<Vec<_>>()),
            multipliers: random_multipliers(&mut r, out_features, 3),
        };
        let x = codes(&mut r, 6);
        let layer = FullyConnectedI8::new(g, p, -3, fc_stage()).unwrap();
        let mut want = vec![0i8; 2 * out_features];
        layer.run::<neon_runtime::kernels::Portable>(&x, &mut want).unwrap();
        let mut y = vec![0i8; 2 * out_features];
        layer.run::<B>(&x, &mut y).unwrap();
        assert_eq!(y, want, "{out_features} outputs");
    }
}
