//! What the real-FFT tests share (`fft`, `irfft`, `fft_accuracy`): the asserted error bound,
//! the tested lengths, twiddle tables and the f64 oracle of a real input's half-spectrum.

use super::fft64::{fft64, C64};
use neon_runtime::kernels::fft::{fill_twiddles, twiddle_len, RealFft, MAX_LEN};
use neon_runtime::Backend;

/// Unit roundoff of f32.
pub const U: f64 = (f32::EPSILON / 2.0) as f64;

/// Norm-wise error bound (relative to `||X||_2`) asserted for a length-`n` transform:
/// `eta log2 n` with `eta = 7u`, Higham's per-stage constant `mu + gamma_4 (sqrt 2 + mu)
/// ~= 6.66u` for twiddles rounded to nearest (`mu = u`), rounded up; `log2 n` stages (the
/// complex stages plus the post-processing butterfly). See the module docs of
/// `kernels::fft`. The measured errors are 20-40x smaller (random data does not align the
/// rounding errors), so this also leaves room for the backends' different roundings (NEON
/// fuses multiply-adds). The inverse runs the same butterflies once, plus the
/// pre-processing (a butterfly of the same shape as the forward post-processing) and exact
/// swaps, so it is held to the same bound relative to the norm of its result.
pub fn bound(n: usize) -> f64 {
    7.0 * U * (n.trailing_zeros() as f64)
}

/// Powers of two from 16 to `max`.
pub fn lengths(max: usize) -> impl Iterator<Item = usize> {
    (4..=max.trailing_zeros()).map(|b| 1usize << b)
}

/// Largest length tested against the f64 FFT on this target: under qemu the f64 oracle is
/// the slow part.
pub fn max_tested() -> usize {
    if cfg!(target_arch = "aarch64") {
        16384
    } else {
        MAX_LEN
    }
}

/// The twiddle table of a length-`n` transform.
pub fn table(n: usize) -> Vec<f32> {
    let mut t = vec![0.0f32; twiddle_len(n)];
    fill_twiddles(n, &mut t);
    t
}

/// `body(plan)` with the plan of a length-`n` transform over its own twiddle table.
pub fn with_plan<R>(n: usize, body: impl FnOnce(&RealFft<'_>) -> R) -> R {
    let t = table(n);
    body(&RealFft::new(n, &t).unwrap())
}

/// `body(n, plan)` for every length `n` of `ns`, as [`with_plan`].
pub fn each_plan(ns: impl IntoIterator<Item = usize>, mut body: impl FnMut(usize, &RealFft<'_>)) {
    for n in ns {
        with_plan(n, |fft| body(n, fft));
    }
}

/// `B::rfft` of `x`: the split spectrum (`fft.spectrum_len()` values, real parts then
/// imaginary parts) in a new vector, NaN before the call.
pub fn rfft<B: Backend>(fft: &RealFft<'_>, x: &[f32]) -> Vec<f32> {
    let mut s = vec![f32::NAN; fft.spectrum_len()];
    B::rfft(fft, x, &mut s);
    s
}

/// `X[0..=n/2]` by the f64 radix-2 FFT of the real input.
pub fn oracle(x: &[f32]) -> Vec<C64> {
    let mut buf: Vec<C64> = x.iter().map(|&v| C64::new(v as f64, 0.0)).collect();
    fft64(&mut buf);
    buf.truncate(x.len() / 2 + 1);
    buf
}

/// `(||got - want||_2, max_k |got_k - want_k|, ||want||_2)` of a split spectrum (real
/// parts, then imaginary parts).
pub fn errors(got: &[f32], want: &[C64]) -> (f64, f64, f64) {
    let k = want.len();
    assert_eq!(got.len(), 2 * k);
    let (mut e2, mut emax, mut w2) = (0.0f64, 0.0f64, 0.0f64);
    for (i, w) in want.iter().enumerate() {
        let d = C64::new(got[i] as f64, got[k + i] as f64) - w;
        e2 += d.norm_sqr();
        emax = emax.max(d.norm());
        w2 += w.norm_sqr();
    }
    (e2.sqrt(), emax, w2.sqrt())
}
