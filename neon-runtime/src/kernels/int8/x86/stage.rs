//! The int8 output stage of 8 output channels in AVX2 registers ([`Stage8`]), bit for bit
//! [`Requant::apply`](crate::kernels::int8::Requant::apply) per lane.
//!
//! - The doubling high product: `x << left` (`vpsllvd`, wrapping as the scalar code), the
//!   exact 64-bit products of even and odd lanes (`vpmuludq`'s signed form `vpmuldq`), plus
//!   `2^30`, bits 31..62 (a logical 64-bit shift right by 31 keeps exactly them): this is
//!   `floor((2ab + 2^31) / 2^32)`, the value of gemmlowp's `SRDHM` (no saturation is needed:
//!   checked multipliers are `>= 0`, so `a = b = i32::MIN` cannot happen).
//! - The division by `2^right`: `q = h >> right` (`vpsravd`), `rem = h & (2^right - 1)`,
//!   `q + (rem > threshold)` with threshold `(2^right - 1) >> 1` for half up and one more on
//!   negative lanes for half away from zero (gemmlowp's `RoundingDivideByPOT`).
//! - [`Rounding::Single`]: the exact 64-bit `x * multiplier + 2^(total - 1)`, an arithmetic
//!   64-bit shift right by `total = 31 - shift` (`vpsrlvq` of the value xor its sign, xor
//!   the sign again: AVX2 has no variable arithmetic 64-bit shift), the low 32 bits.
//!
//! Then the output zero point (wrapping), the clamp, and saturating packs to i8.

use super::super::portable::finish;
use super::super::{Int8Weights, LayerQuant, OutputStage, Rounding, ROUNDING_BLOCK};
use core::arch::x86_64::*;

/// The output stage of 8 output channels as AVX2 vectors: per-lane multipliers and shifts
/// (with the constants of the divisions), zero point, activation range and the 8 channels'
/// one rounding.
#[derive(Clone, Copy)]
pub(super) struct Stage8 {
    multiplier: __m256i,
    /// `max(shift, 0)`.
    left: __m256i,
    /// `max(-shift, 0)`.
    right: __m256i,
    /// `2^right - 1`.
    mask: __m256i,
    /// `(2^right - 1) >> 1`.
    half: __m256i,
    /// `31 - shift` of lanes 0, 2, 4, 6 and of 1, 3, 5, 7 as i64.
    total: [__m256i; 2],
    /// `2^(30 - shift)` of the same lanes.
    nudge: [__m256i; 2],
    zero_point: __m256i,
    act_min: __m256i,
    act_max: __m256i,
    rounding: Rounding,
}

impl Stage8 {
    /// The stage of channels `c0..c0 + 8` of `channels` (`c0 + 8 <= channels - channels %
    /// 8`, so [`Rounding::at`] is the same on the 8).
    ///
    /// # Safety
    /// The CPU has AVX2.
    #[target_feature(enable = "avx2")]
    #[inline]
    pub(super) unsafe fn new(
        out: &OutputStage,
        w: &Int8Weights<'_>,
        c0: usize,
        channels: usize,
    ) -> Self {
        let ms = w.multipliers8(c0);
        // Checked multipliers: shifts in -31..=30, so every shift count below is in range.
        let shift = ms.map(|m| m.shift);
        let right = shift.map(|s| (-s).max(0));
        let mask = right.map(|r| ((1i64 << r) - 1) as i32);
        let lanes = |f: &dyn Fn(i32) -> i64, odd: usize| {
            let v: [i64; 4] = core::array::from_fn(|j| f(shift[2 * j + odd]));
            // SAFETY: reads the 4 values of `v`.
            unsafe { _mm256_loadu_si256(v.as_ptr().cast()) }
        };
        let total = |s: i32| i64::from(31 - s);
        let nudge = |s: i32| 1i64 << (30 - s);
        let load = |v: &[i32; 8]| {
            // SAFETY: reads the 8 values of `v`.
            unsafe { _mm256_loadu_si256(v.as_ptr().cast()) }
        };
        Stage8 {
            multiplier: load(&ms.map(|m| m.multiplier)),
            left: load(&shift.map(|s| s.max(0))),
            right: load(&right),
            mask: load(&mask),
            half: load(&mask.map(|m| m >> 1)),
            total: [lanes(&total, 0), lanes(&total, 1)],
            nudge: [lanes(&nudge, 0), lanes(&nudge, 1)],
            zero_point: _mm256_set1_epi32(out.zero_point),
            act_min: _mm256_set1_epi32(out.act_min),
            act_max: _mm256_set1_epi32(out.act_max),
            rounding: out.rounding.at(c0, channels),
        }
    }

    /// `acc * multiplier * 2^(shift - 31)` in the stage's rounding, 8 lanes.
    #[target_feature(enable = "avx2")]
    #[inline]
    fn rescale(&self, acc: __m256i) -> __m256i {
        let odd = |v: __m256i| _mm256_srli_epi64::<32>(v);
        // Even lanes' low halves with the odd lanes' (moved up by 32 bits).
        let join = |even: __m256i, odd: __m256i| {
            _mm256_blend_epi32::<0b1010_1010>(even, _mm256_slli_epi64::<32>(odd))
        };
        if self.rounding == Rounding::Single {
            let shift_right = |p: __m256i, h: usize| {
                let p = _mm256_add_epi64(p, self.nudge[h]);
                // The sign of each 64-bit lane in both of its halves.
                let sign = _mm256_shuffle_epi32::<0b11_11_01_01>(_mm256_srai_epi32::<31>(p));
                _mm256_xor_si256(_mm256_srlv_epi64(_mm256_xor_si256(p, sign), self.total[h]), sign)
            };
            let even = shift_right(_mm256_mul_epi32(acc, self.multiplier), 0);
            let odd = shift_right(_mm256_mul_epi32(odd(acc), odd(self.multiplier)), 1);
            return join(even, odd);
        }
        let x = _mm256_sllv_epi32(acc, self.left);
        let nudge = _mm256_set1_epi64x(1 << 30);
        let high = |p: __m256i| _mm256_srli_epi64::<31>(_mm256_add_epi64(p, nudge));
        let h = join(
            high(_mm256_mul_epi32(x, self.multiplier)),
            high(_mm256_mul_epi32(odd(x), odd(self.multiplier))),
        );
        let threshold = if self.rounding == Rounding::AwayFromZero {
            // One more on negative lanes (-(h >> 31) is 1 there).
            _mm256_sub_epi32(self.half, _mm256_srai_epi32::<31>(h))
        } else {
            self.half
        };
        let up = _mm256_cmpgt_epi32(_mm256_and_si256(h, self.mask), threshold);
        _mm256_sub_epi32(_mm256_srav_epi32(h, self.right), up)
    }

    /// Writes the 8 outputs of accumulators `acc` to `y[..8]`.
    ///
    /// # Safety
    /// The CPU has AVX2; `y` holds at least 8 values.
    #[target_feature(enable = "avx2")]
    #[inline]
    pub(super) unsafe fn store(&self, acc: __m256i, y: *mut i8) {
        let v = _mm256_add_epi32(self.rescale(acc), self.zero_point);
        let v = _mm256_min_epi32(_mm256_max_epi32(v, self.act_min), self.act_max);
        let v16 = _mm_packs_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256::<1>(v));
        // SAFETY: the caller's 8 writable bytes.
        unsafe { _mm_storel_epi64(y.cast(), _mm_packs_epi16(v16, v16)) };
    }
}

/// Writes `y[j] = stage(acc(j))` for the output channels `j` of a row of `y.len()`: whole
/// blocks of 8 through [`Stage8`], the rest through the portable stage.
///
/// # Safety
/// The CPU has AVX2.
#[target_feature(enable = "avx2")]
pub(super) unsafe fn finish_row(q: &LayerQuant<'_>, y: &mut [i8], acc: &dyn Fn(usize) -> i32) {
    let (out, w, n) = (&q.out, &q.weights, y.len());
    let body = n - n % ROUNDING_BLOCK;
    for (b, yb) in y[..body].chunks_exact_mut(8).enumerate() {
        let j0 = 8 * b;
        let a: [i32; 8] = core::array::from_fn(|j| acc(j0 + j));
        // SAFETY: AVX2 (the caller's); the load reads the 8-value array, the store writes
        // the 8-byte chunk.
        unsafe {
            let stage = Stage8::new(out, w, j0, n);
            stage.store(_mm256_loadu_si256(a.as_ptr().cast()), yb.as_mut_ptr());
        }
    }
    for (j, y) in y.iter_mut().enumerate().skip(body) {
        *y = finish(out, w, (j, n), acc(j));
    }
}
