//! The detector's probability: the mean of the last `sliding_window_size` dequantised model
//! outputs, as pymicro-wakeword 2.5.0 computes it (`statistics.mean` over a
//! `deque(maxlen=sliding_window_size)`, 0.0 until the deque is full).
//!
//! # Exactness
//! `statistics.mean` sums its floats exactly (as fractions) and rounds the exact mean once to
//! the nearest `f64` (`float(Fraction)`, ties to even). [`ProbabilityWindow`] gets the same
//! bits without fractions: every dequantised output `v(q)` (an `f32`, [`OutputDequantizer`])
//! is an integer multiple `u(q) · 2^e` of the smallest power of two `2^e` among the 256
//! possible values, so the window's sum is the integer `S = Σ u(q)` times `2^e`, kept exactly
//! in an `i64`. When `|S| < 2^53` (checked for the whole window when the window is made),
//! `S · 2^e` is an exact `f64` and one IEEE division by `n` rounds the exact mean `S · 2^e / n`
//! to nearest, ties to even: `statistics.mean`'s result. With the official output
//! quantisation (scale 1/256, zero point 0), `v(q) = q / 256`, `e = -8`, `u(q) = q`, and the
//! probability is `(Σ q / 256) / n`.

use super::detector::DetectorError;
use super::quantize::OutputDequantizer;

/// Largest `sliding_window_size`: 1024 model steps (about 31 s of audio at 30 ms a step), far
/// above the shipped models' 5 (8 for a community model). The ring is a fixed array of this
/// many bytes, so the window needs no allocator.
pub const MAX_WINDOW: usize = 1024;

/// `2^e` for `e` in -1022..=1023 (a normal `f64`), built from its bits (`core` has no `powi`).
fn pow2(e: i32) -> f64 {
    debug_assert!((-1022..=1023).contains(&e));
    f64::from_bits(((1023 + e) as u64) << 52)
}

/// `v` as `m · 2^e` with `m` odd (or `(0, 0)` for zero): the exponent of `v`'s lowest set bit.
fn lowest_bit_exponent(v: f32) -> i32 {
    let bits = v.to_bits();
    let field = ((bits >> 23) & 0xff) as i32;
    let fraction = bits & 0x7f_ffff;
    let (mantissa, exponent) =
        if field == 0 { (fraction, -149) } else { (fraction | 0x80_0000, field - 150) };
    if mantissa == 0 {
        0
    } else {
        exponent + mantissa.trailing_zeros() as i32
    }
}

/// The ring of the last `size` model outputs (`u8`) and their exact windowed mean.
#[derive(Clone, Debug)]
pub struct ProbabilityWindow {
    /// The outputs, `outputs[..size]` used as a ring.
    outputs: [u8; MAX_WINDOW],
    /// `sliding_window_size`, in 1..=[`MAX_WINDOW`].
    size: usize,
    /// The ring slot the next output goes to.
    next: usize,
    /// Outputs received since the last reset, up to `size`.
    filled: usize,
    /// `Σ units(q)` over the ring's filled slots.
    sum: i64,
    /// Every dequantised output is an integer multiple of `2^exponent`.
    exponent: i32,
    /// The output quantisation.
    dequantizer: OutputDequantizer,
}

impl ProbabilityWindow {
    /// An empty window of `size` outputs dequantised by `dequantizer`.
    ///
    /// # Errors
    /// - [`DetectorError::Window`]: `size` is not in 1..=[`MAX_WINDOW`];
    /// - [`DetectorError::OutputScale`]: a dequantised output is not finite, or the sum of
    ///   `size` of them might not be exact (the module docs' `|S| < 2^53`; never with an
    ///   output scale of 1/256).
    pub fn new(size: usize, dequantizer: OutputDequantizer) -> Result<Self, DetectorError> {
        if !(1..=MAX_WINDOW).contains(&size) {
            return Err(DetectorError::Window { size });
        }
        let mut exponent = i32::MAX;
        for q in 0..=u8::MAX {
            let v = dequantizer.dequantize(q);
            if !v.is_finite() {
                return Err(DetectorError::OutputScale);
            }
            if v != 0.0 {
                exponent = exponent.min(lowest_bit_exponent(v));
            }
        }
        if exponent == i32::MAX {
            exponent = 0; // every output dequantises to zero
        }
        let window = Self {
            outputs: [0; MAX_WINDOW],
            size,
            next: 0,
            filled: 0,
            sum: 0,
            exponent,
            dequantizer,
        };
        // f32 magnitudes are below 2^128 and exponent >= -149: the quotient below is finite
        // and at most 2^277, its comparison exact.
        let largest = (0..=u8::MAX)
            .map(|q| f64::from(dequantizer.dequantize(q)).abs() * pow2(-exponent))
            .fold(0.0, f64::max);
        if largest * size as f64 >= pow2(53) {
            return Err(DetectorError::OutputScale);
        }
        Ok(window)
    }

    /// `sliding_window_size`.
    pub fn size(&self) -> usize {
        self.size
    }

    /// `dequantize(q) / 2^exponent`: an exact integer below 2^53 / size (checked in `new`).
    fn units(&self, q: u8) -> i64 {
        (f64::from(self.dequantizer.dequantize(q)) * pow2(-self.exponent)) as i64
    }

    /// Adds the model output `q` (dropping the oldest when full) and returns the
    /// probability: 0.0 until `size` outputs have arrived since the last reset, then the mean
    /// of the last `size` dequantised outputs ([`Self::probability`]).
    pub fn push(&mut self, q: u8) -> f64 {
        if self.filled == self.size {
            self.sum -= self.units(self.outputs[self.next]);
        } else {
            self.filled += 1;
        }
        self.outputs[self.next] = q;
        self.sum += self.units(q);
        self.next = if self.next + 1 == self.size { 0 } else { self.next + 1 };
        self.probability()
    }

    /// The current probability: 0.0 until the window is full, then
    /// `statistics.mean` of the last `size` dequantised outputs, bit for bit (module docs).
    pub fn probability(&self) -> f64 {
        if self.filled < self.size {
            return 0.0;
        }
        // Exact: |sum| < 2^53 (`new`), times a power of two in the normal range.
        (self.sum as f64 * pow2(self.exponent)) / self.size as f64
    }

    /// Forgets every output (as the peer's `reset`, which clears its deque).
    pub fn reset(&mut self) {
        self.next = 0;
        self.filled = 0;
        self.sum = 0;
    }
}
