//! `stft_magnitude` in plans: a symbolic input length (frames = (T - n) / hop + 1, samples
//! left over), and Silero VAD's front end (`reflect_pad`, then the STFT), each bit for bit
//! the runtime operator called directly, with zero allocations in `run`; the STFT's
//! magnitudes next to the same STFT as a conv1d with the basis `w cos`, `-w sin` and
//! `complex_magnitude` (Silero VAD's former form).

mod common;

use neon_macros::neon_plan;
use neon_runtime::ops::complex::ComplexMagnitude;
use neon_runtime::ops::conv::{Conv1d, Conv1dGeometry};
use neon_runtime::ops::istft::periodic_hann;
use neon_runtime::ops::pad::ReflectPad;
use neon_runtime::ops::stft::StftMagnitude;
use neon_runtime::{Layout, Portable, TensorView, TensorViewMut};

neon_plan! {
    /// Frames of 64 samples every 24 over a signal of 64 to 1000 samples.
    pub plan Spectrogram {
        dim samples in 64..=1000;
        weight w: f32[64];
        input x: [1, samples];
        output y: [33, (samples - 64) / 24 + 1];

        y = stft_magnitude(x, w, hop = 24);
    }
}

neon_plan! {
    /// Silero VAD's front end: 576 samples, reflect-padded to 640, 4 frames of 256 every 128.
    pub plan VadFront {
        weight window: f32[256];
        input x: [1, 576];
        output y: [129, 4];

        let h = reflect_pad(x, right = 64);
        y = stft_magnitude(h, window, hop = 128);
    }
}

fn values(n: usize, seed: u32) -> Vec<f32> {
    let mut s = seed.wrapping_mul(2_654_435_761).wrapping_add(1);
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 17;
            s ^= s << 5;
            (s % 20_000) as f32 / 10_000.0 - 1.0
        })
        .collect()
}

fn direct(op: &StftMagnitude<Vec<f32>>, x: &[f32], samples: usize) -> Vec<f32> {
    let cf = Layout::ChannelFirst;
    let g = op.geometry();
    let frames = g.output_frames(samples).unwrap();
    let mut y = vec![0.0; g.bins() * frames];
    let mut scratch = vec![0.0; op.scratch_len()];
    let xv = TensorView::new(x, &[1, samples], cf).unwrap();
    let mut yv = TensorViewMut::new(&mut y, &[g.bins(), frames], cf).unwrap();
    op.run::<Portable>(&xv, &mut yv, &mut scratch).unwrap();
    y
}

#[test]
fn symbolic_length_is_the_operator() {
    let weights =
        SpectrogramWeights { w: StftMagnitude::new(Spectrogram::W, values(64, 1)).unwrap() };
    let mut ws = Box::new(SpectrogramWorkspace::new());
    for samples in [64, 65, 87, 88, 89, 511, 1000] {
        let x = values(samples, samples as u32);
        let frames = (samples - 64) / 24 + 1;
        let mut y = vec![f32::NAN; Spectrogram::y_len(samples)];
        assert_eq!(y.len(), 33 * frames);
        common::allocation_free(|| {
            Spectrogram::run::<Portable, _>(&weights, &x, &mut y, samples, &mut ws).unwrap()
        });
        assert_eq!(y, direct(&weights.w, &x, samples), "T = {samples}");
    }
    // Shorter than the window: a run-time error before any kernel.
    let x = values(63, 0);
    let mut y = vec![0.0; 33];
    assert!(Spectrogram::run::<Portable, _>(&weights, &x, &mut y, 63, &mut ws).is_err());
    // The scratch is in the workspace's memory map.
    assert!(Spectrogram::MEMORY_MAP.iter().any(|r| r.name.starts_with("stft_magnitude#scratch")));
}

#[test]
fn vad_front_end_is_the_operator_and_the_conv_basis() {
    let mut window = vec![0.0; 256];
    periodic_hann(&mut window);
    let weights =
        VadFrontWeights { window: StftMagnitude::from_slice(VadFront::WINDOW, &window).unwrap() };
    let mut ws = Box::new(VadFrontWorkspace::new());
    let x = values(576, 7);
    let mut y = vec![0.0; VadFront::y_len()];
    common::allocation_free(|| VadFront::run::<Portable, _>(&weights, &x, &mut y, &mut ws))
        .unwrap();

    let cf = Layout::ChannelFirst;
    let mut pad = vec![0.0; 640];
    let xv = TensorView::new(&x, &[1, 576], cf).unwrap();
    let mut pv = TensorViewMut::new(&mut pad, &[1, 640], cf).unwrap();
    ReflectPad::new(0, 64).run(&xv, &mut pv).unwrap();
    assert_eq!(y, direct(&weights.window, &pad, 640));

    // The conv1d form: basis rows w cos(2 pi j k / n), then -w sin, stride 128.
    let tau = 2.0 * std::f64::consts::PI;
    let mut basis = vec![0.0f32; 258 * 256];
    for k in 0..129 {
        for j in 0..256 {
            let a = tau * ((j * k) % 256) as f64 / 256.0;
            basis[k * 256 + j] = (window[j] as f64 * a.cos()) as f32;
            basis[(129 + k) * 256 + j] = (-(window[j] as f64) * a.sin()) as f32;
        }
    }
    let conv = Conv1d::new(Conv1dGeometry::new(1, 258, 256).stride(128), basis, None).unwrap();
    let mut spec = vec![0.0; 258 * 4];
    let mut scratch = vec![0.0; conv.scratch_len(640)];
    let padv = TensorView::new(&pad, &[1, 640], cf).unwrap();
    let mut sv = TensorViewMut::new(&mut spec, &[258, 4], cf).unwrap();
    conv.run::<Portable>(&padv, &mut sv, &mut scratch).unwrap();
    let mut mag = vec![0.0; 129 * 4];
    let mut mv = TensorViewMut::new(&mut mag, &[129, 4], cf).unwrap();
    ComplexMagnitude
        .run::<Portable>(&TensorView::new(&spec, &[258, 4], cf).unwrap(), &mut mv)
        .unwrap();
    // Both are within their f32 error of the exact spectrum: |Y| <= sum |y| <= 256 here,
    // and a 256-term f32 dot product errs by at most 256 u sum |y| = 4e-3 (the FFT's bound
    // is far smaller: 3.2e-6 ||Y||).
    let worst = y.iter().zip(&mag).map(|(a, b)| (a - b).abs()).fold(0.0f32, f32::max);
    assert!(worst < 4e-3, "FFT vs conv basis: {worst}");
}
