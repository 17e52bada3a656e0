//! The blocked rounding of the models' depthwise layers (tools/microwakeword/FACTS.md
//! section 4.1) on every backend, and the NEON and x86 fully connected and conv2d kernels on each
//! dot-product path; helpers and references from `int8.rs`.

use super::*;

/// The blocked rounding of the models' depthwise layers on ties: a 1x1 depthwise layer with
/// weight 1 and multiplier 1/4 over inputs -2, -6, -10, 2, 6 (every output a tie) on `C`
/// channels (the models' 30 and 60, and 9, 8, 7, 1, 16, 37): half up on channels below
/// `C - C mod 8`, half away from zero on the rest; then random layers of the models' shapes
/// (kernel heights 3..=23 over time, width 1, 30..=64 channels, stride 1) in every rounding.
pub(crate) fn depthwise_rounds_blocks_then_tail<B: Int8Kernels>() {
    let quarter = QuantizedMultiplier { multiplier: 1 << 30, shift: -1 };
    let column = |c: usize, height: usize, kh: usize| valid_window(c, [height, 1], [kh, 1]);
    for c in [30, 60, 9, 8, 7, 1, 16, 37] {
        let g = DepthwiseGeometry { window: column(c, 3, 1), depth_multiplier: 1 };
        let x: Vec<i8> = (0..3 * c).map(|i| [-2, -6, -10, 2, 6][i % 5]).collect();
        let filter = vec![1i8; c];
        let mut y = vec![0i8; x.len()];
        let q = LayerQuant {
            x_zp: 0,
            weights: Int8Weights { filter: &filter, bias: None, multipliers: &[quarter] },
            out: OutputStage::int8(0, Rounding::HalfUpBlocks),
        };
        B::layer_i8(&g, &x, q, &mut y).unwrap();
        for (i, (&x, &y)) in x.iter().zip(&y).enumerate() {
            let v = i32::from(x);
            // v / 4 is an exact half: half up adds 2 before flooring, away from zero moves
            // the magnitude up.
            let want = if i % c < c / 8 * 8 {
                (v + 2).div_euclid(4)
            } else {
                (v.abs() + 2) / 4 * v.signum()
            };
            assert_eq!(i32::from(y), want, "C = {c}, output {i} (input {v})");
        }
    }
    let mut r = SmallRng::seed_from_u64(14);
    for case in 0..60 {
        let channels = r.gen_range(30..=64);
        let kernel_h = r.gen_range(3..=23);
        let window = column(channels, kernel_h + r.gen_range(0..=3), kernel_h);
        let g = DepthwiseGeometry { window, depth_multiplier: 1 };
        let x = codes(&mut r, window.height * channels);
        let filter = codes(&mut r, kernel_h * channels);
        let bias: Vec<i32> = (0..channels).map(|_| r.gen_range(-40_000..40_000)).collect();
        let mults = random_multipliers(&mut r, channels, kernel_h);
        let (x_zp, out) = (r.gen_range(-128..=127), random_stage(&mut r));
        let c = (channels, channels, Some(1));
        let (q, want) = biased_layer(&window, c, (&x, x_zp), (&filter, &bias, &mults), out);
        let mut y = vec![0x55i8; want.len()];
        B::layer_i8(&g, &x, q, &mut y).unwrap();
        assert_eq!(y, want, "case {case}: {g:?} {out:?}");
    }
}

/// A layer of window `window` with `(Cin, Cout, depth multiplier)` channels (as
/// [`ref_conv`] takes them) and a bias: its operands on input `x` with zero point `x_zp`,
/// and its reference outputs.
fn biased_layer<'a>(
    window: &Window2d,
    channels: (usize, usize, Option<usize>),
    (x, x_zp): (&[i8], i32),
    (filter, bias, mults): (&'a [i8], &'a [i32], &'a [QuantizedMultiplier]),
    out: OutputStage,
) -> (LayerQuant<'a>, Vec<i8>) {
    let want = ref_conv(window, channels, x, x_zp, filter, Some(bias), mults, &out);
    let weights = Int8Weights { filter, bias: Some(bias), multipliers: mults };
    (LayerQuant { x_zp, weights, out }, want)
}

/// The NEON fully connected and conv2d kernels on each dot-product path (`Sdot` where the
/// CPU has FEAT_DotProd, `Widening` always): [`dot_path_matches_reference`].
#[cfg(all(target_arch = "aarch64", feature = "neon"))]
#[test]
fn neon_dot_paths_match_reference() {
    use neon_runtime::kernels::cpu;
    use neon_runtime::kernels::int8::DotPath;
    let mut paths = vec![DotPath::Widening];
    if cpu::aarch64_dotprod() {
        paths.push(DotPath::Sdot);
    } else {
        eprintln!("this CPU lacks dotprod: the sdot path is not tested");
    }
    assert_eq!(DotPath::detect() == DotPath::Sdot, cpu::aarch64_dotprod());
    paths.into_iter().for_each(dot_path_matches_reference);
}

/// The x86 fully connected and conv2d kernels on each dot-product path the CPU has
/// (AVX2 widening, AVX-VNNI, AVX-512 widening, AVX-512 VNNI; the others are skipped with a
/// note): [`dot_path_matches_reference`].
#[cfg(all(target_arch = "x86_64", not(miri)))]
#[test]
fn x86_dot_paths_match_reference() {
    use neon_runtime::kernels::cpu::X86Level;
    use neon_runtime::kernels::int8::DotPath;
    for path in DotPath::ALL {
        if path.supported() {
            dot_path_matches_reference(path);
        } else {
            eprintln!("skipped: this CPU lacks the int8 dot path {path:?}");
        }
    }
    for level in X86Level::ALL {
        let best = DotPath::detect(level);
        assert!(best.is_none_or(|p| p.supported() && p.level() <= level), "{level:?}: {best:?}");
    }
}

/// The fully connected and conv2d kernels on dot path `path` against the references:
/// input features 1..=300 (tails of 16, 32 and 64), output channels 1..=37 (tails of 8),
/// every rounding, ties.
#[cfg(any(all(target_arch = "aarch64", feature = "neon"), all(target_arch = "x86_64", not(miri))))]
fn dot_path_matches_reference(path: neon_runtime::kernels::int8::DotPath) {
    use neon_runtime::kernels::int8::layer_i8_on;
    {
        let mut r = SmallRng::seed_from_u64(15);
        for case in 0..200 {
            let c = FcCase::random(&mut r);
            let mut y = vec![0x55i8; c.want.len()];
            layer_i8_on(path, &c.g, &c.x, c.quant(), None, &mut y).unwrap();
            assert_eq!(y, c.want, "{path:?} case {case}: {:?} {:?}", c.g, c.out);
            with_row_sums(path, &c.g, &c.x, c.quant(), &c.want);

            let (cin, cout) = (r.gen_range(1..=37), r.gen_range(1..=37));
            let window = random_window(&mut r, cin);
            let g = ConvGeometry { window, out_channels: cout };
            let x = codes(&mut r, window.height * window.width * cin);
            let filter = codes(&mut r, cout * window.kernel_h * window.kernel_w * cin);
            let mults = random_multipliers(&mut r, cout, window.kernel_h * window.kernel_w * cin);
            let (x_zp, out) = (r.gen_range(-128..=127), random_stage(&mut r));
            let want = ref_conv(&window, (cin, cout, None), &x, x_zp, &filter, None, &mults, &out);
            let mut y = vec![0x55i8; want.len()];
            let w = Int8Weights { filter: &filter, bias: None, multipliers: &mults };
            layer_i8_on(path, &g, &x, LayerQuant { x_zp, weights: w, out }, None, &mut y).unwrap();
            assert_eq!(y, want, "{path:?} case {case}: {g:?} {out:?}");
            with_row_sums(path, &g, &x, LayerQuant { x_zp, weights: w, out }, &want);
        }
        // The models' conv2d shapes, whose taps are one contiguous run of the input (one
        // dot product per output channel): `[C, K, 1, Cin]` over a one-column image of K
        // (or more) rows with stride K - 2 or 1, and 1x1; inputs of all 256 codes, zero
        // points at both ends.
        let shapes = [(40, 5, 5, 3, 32), (40, 7, 5, 1, 30), (64, 1, 1, 1, 64), (60, 3, 1, 1, 60)];
        for (case, (cin, height, kh, stride, cout)) in shapes.into_iter().enumerate() {
            let window = Window2d::with_padding(
                cin,
                [height, 1],
                [kh, 1],
                [stride, 1],
                [1, 1],
                Padding::Valid,
            )
            .unwrap();
            let g = ConvGeometry { window, out_channels: cout };
            let x = codes(&mut r, height * cin);
            let filter = codes(&mut r, cout * kh * cin);
            let bias: Vec<i32> = (0..cout).map(|_| r.gen_range(-40_000..40_000)).collect();
            let mults = random_multipliers(&mut r, cout, kh * cin);
            for x_zp in [-128, 127, r.gen_range(-128..=127)] {
                let params = (&filter[..], &bias[..], &mults[..]);
                let c = (cin, cout, None);
                let (q, want) = biased_layer(&window, c, (&x, x_zp), params, random_stage(&mut r));
                let mut y = vec![0x55i8; want.len()];
                layer_i8_on(path, &g, &x, q, None, &mut y).unwrap();
                assert_eq!(y, want, "{path:?} model shape {case}: {g:?} {:?}", q.out);
                with_row_sums(path, &g, &x, q, &want);
            }
        }
        // Filter rows of 3 * 3 * 240 = 2160 bytes with padding: over NEON's 2048-byte
        // gather row, so its pixels that are not one contiguous run take the per-tap loop.
        let (cin, cout) = (240, 11);
        let window =
            Window2d::with_padding(cin, [4, 3], [3, 3], [1, 1], [1, 1], Padding::Same).unwrap();
        let g = ConvGeometry { window, out_channels: cout };
        let x = codes(&mut r, 4 * 3 * cin);
        let filter = codes(&mut r, cout * 9 * cin);
        let mults = random_multipliers(&mut r, cout, 9 * cin);
        let (x_zp, out) = (r.gen_range(-128..=127), random_stage(&mut r));
        let want = ref_conv(&window, (cin, cout, None), &x, x_zp, &filter, None, &mults, &out);
        let w = Int8Weights { filter: &filter, bias: None, multipliers: &mults };
        let q = LayerQuant { x_zp, weights: w, out };
        let mut y = vec![0x55i8; want.len()];
        layer_i8_on(path, &g, &x, q, None, &mut y).unwrap();
        assert_eq!(y, want, "{path:?} long filter rows: {g:?} {out:?}");
        with_row_sums(path, &g, &x, q, &want);
        // Ties through the vector stage: 1x1 layers of 16 + 3 outputs, weight 1, x / 4.
        let quarter = QuantizedMultiplier { multiplier: 1 << 30, shift: -1 };
        let x: Vec<i8> = vec![-6];
        let filter = vec![1i8; 19];
        for rounding in ROUNDINGS {
            let g = FcGeometry { rows: 1, in_features: 1, out_features: 19 };
            let out = OutputStage::int8(0, rounding);
            let w = Int8Weights { filter: &filter, bias: None, multipliers: &[quarter] };
            let mut y = vec![0i8; 19];
            layer_i8_on(path, &g, &x, LayerQuant { x_zp: 0, weights: w, out }, None, &mut y)
                .unwrap();
            let want: Vec<i8> =
                (0..19).map(|j| ref_stage(-6, quarter, &out, Some((j, 19)))).collect();
            assert_eq!(y, want, "{path:?} {rounding:?}");
        }
    }
}

/// Runs `g` on `path` with the filter's row sums (as a prepared layer does) and checks the
/// result is `want`.
#[cfg(any(all(target_arch = "aarch64", feature = "neon"), all(target_arch = "x86_64", not(miri))))]
fn with_row_sums<G>(
    path: neon_runtime::kernels::int8::DotPath,
    g: &G,
    x: &[i8],
    q: LayerQuant<'_>,
    want: &[i8],
) where
    G: neon_runtime::kernels::int8::DotLayer<neon_runtime::kernels::int8::DotPath>
        + core::fmt::Debug,
{
    use neon_runtime::kernels::int8::layer_i8_on;
    let sums = g.row_sums(q.weights.filter);
    assert!(sums.get().is_some(), "{g:?}: no row sums");
    let mut y = vec![0x55i8; want.len()];
    layer_i8_on(path, g, x, q, sums.get(), &mut y).unwrap();
    assert_eq!(y, want, "{path:?} with row sums: {g:?} {:?}", q.out);
}

/// `NeonWidening` (the NEON int8 kernels with conv2d and fully connected forced onto the
/// widening path, for measurements) against the same references as every backend.
#[cfg(all(target_arch = "aarch64", feature = "neon"))]
#[test]
fn neon_widening_matches_reference() {
    use neon_runtime::kernels::int8::NeonWidening;
    super::conv2d_matches_reference::<NeonWidening>();
    super::fully_connected_matches_reference::<NeonWidening>();
}

/// NEON's depthwise (depth multiplier 1) on kernels of more taps than its per-pixel tap list
/// holds (9 x 9 = 81 > 64: the shared loop) and on the block path's edges (8 and 12
/// channels, padding) against the portable kernel.
#[cfg(all(target_arch = "aarch64", feature = "neon"))]
#[test]
fn neon_depthwise_many_taps_matches_portable() {
    use neon_runtime::kernels::{Neon, Portable};
    let mut r = SmallRng::seed_from_u64(41);
    for (channels, kernel) in [(12, 9), (8, 9), (12, 3), (8, 8)] {
        let window = Window2d::with_padding(
            channels,
            [10, 9],
            [kernel, kernel],
            [1, 1],
            [1, 1],
            Padding::Same,
        )
        .unwrap();
        let g = DepthwiseGeometry { window, depth_multiplier: 1 };
        let x = codes(&mut r, 10 * 9 * channels);
        let filter = codes(&mut r, kernel * kernel * channels);
        let bias: Vec<i32> = (0..channels).map(|_| r.gen_range(-40_000..40_000)).collect();
        let mults = random_multipliers(&mut r, channels, kernel * kernel);
        let (x_zp, out) = (r.gen_range(-128..=127), random_stage(&mut r));
        for bias in [Some(&bias[..]), None] {
            let w = Int8Weights { filter: &filter, bias, multipliers: &mults };
            let q = LayerQuant { x_zp, weights: w, out };
            let n = window.out_height * window.out_width * channels;
            let (mut want, mut y) = (vec![0i8; n], vec![0x55i8; n]);
            Portable::layer_i8(&g, &x, q, &mut want).unwrap();
            Neon::layer_i8(&g, &x, q, &mut y).unwrap();
            assert_eq!(y, want, "{channels} channels, {kernel}x{kernel}: {out:?}");
        }
    }
}
