//! A complex FFT in f64, the oracle of the FFT tests: recursive radix-2 decimation in time,
//! `X[k] = sum_j x[j] exp(-2 pi i j k / n)` (the forward sign and scale of numpy's `fft`),
//! with every twiddle computed from its exactly reduced angle `k / n` turns, so the result is
//! within a few f64 ulps times `log2 n` of the exact transform (Higham, *Accuracy and
//! Stability of Numerical Algorithms*, 2nd ed., section 24.1): about 1e-15 relative, eight
//! orders below the f32 errors it judges.

use std::ops::{Add, Mul, Sub};

/// A complex number in f64.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct C64 {
    pub re: f64,
    pub im: f64,
}

impl C64 {
    pub const fn new(re: f64, im: f64) -> Self {
        C64 { re, im }
    }

    pub fn norm_sqr(self) -> f64 {
        self.re * self.re + self.im * self.im
    }

    pub fn norm(self) -> f64 {
        self.norm_sqr().sqrt()
    }
}

impl Add for C64 {
    type Output = C64;
    fn add(self, o: C64) -> C64 {
        C64::new(self.re + o.re, self.im + o.im)
    }
}

impl Sub for C64 {
    type Output = C64;
    fn sub(self, o: C64) -> C64 {
        C64::new(self.re - o.re, self.im - o.im)
    }
}

impl Sub<&C64> for C64 {
    type Output = C64;
    fn sub(self, o: &C64) -> C64 {
        self - *o
    }
}

impl Mul for C64 {
    type Output = C64;
    fn mul(self, o: C64) -> C64 {
        C64::new(self.re * o.re - self.im * o.im, self.re * o.im + self.im * o.re)
    }
}

impl Mul<f64> for C64 {
    type Output = C64;
    fn mul(self, s: f64) -> C64 {
        C64::new(self.re * s, self.im * s)
    }
}

impl std::ops::AddAssign for C64 {
    fn add_assign(&mut self, o: C64) {
        *self = *self + o;
    }
}

/// `exp(-2 pi i k / n)`.
fn twiddle(k: usize, n: usize) -> C64 {
    let a = 2.0 * std::f64::consts::PI * (k % n) as f64 / n as f64;
    C64::new(a.cos(), -a.sin())
}

/// In-place forward FFT of `x`; `x.len()` must be a power of two.
pub fn fft64(x: &mut [C64]) {
    let n = x.len();
    assert!(n.is_power_of_two(), "fft64: length {n} is not a power of two");
    if n == 1 {
        return;
    }
    let mut even: Vec<C64> = x.iter().step_by(2).copied().collect();
    let mut odd: Vec<C64> = x.iter().skip(1).step_by(2).copied().collect();
    fft64(&mut even);
    fft64(&mut odd);
    for k in 0..n / 2 {
        let t = twiddle(k, n) * odd[k];
        x[k] = even[k] + t;
        x[k + n / 2] = even[k] - t;
    }
}
