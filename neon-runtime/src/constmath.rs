//! f64 natural logarithm and exponential as `const fn`s, for tables computed at compile
//! time (rotary frequencies here; mel filterbanks in model crates). `core` has no `ln`/`exp` in `no_std`, and these run in
//! constant evaluation, so no `libm` either. Not for hot paths (scalar, with a division).
//!
//! Accuracy: both are within a few f64 ulps (relative error below `1e-15`, checked against
//! `std` in the tests), which is 8 orders of magnitude below the f32 precision of the
//! tables they feed.

/// High part of `ln 2`, `0x3fe62e42fee00000` = 0.6931471803691238 (32 significant bits:
/// `e * LN2_HI` is exact for `|e| < 2^21`).
const LN2_HI: f64 = f64::from_bits(0x3fe6_2e42_fee0_0000);
/// `ln 2 - LN2_HI` rounded to f64, `0x3dea39ef35793c76` = 1.9082149292705877e-10.
const LN2_LO: f64 = f64::from_bits(0x3dea_39ef_3579_3c76);

/// `ln x` for finite `x > 0` (normal range).
///
/// `x = 2^e m`, `m` in `[sqrt(1/2), sqrt 2)`; `s = (m - 1) / (m + 1)`, `|s| <= 0.1716`;
/// `ln m = 2 atanh(s) = 2 (s + s^3/3 + s^5/5 + ...)` to `s^23` (truncation below
/// `s^25 / 25 < 1e-20` relative); `ln x = e ln2_hi + (e ln2_lo + ln m)`.
///
/// # Panics
/// When `x` is not a positive normal finite number.
pub const fn ln(x: f64) -> f64 {
    assert!(x.is_normal() && x > 0.0, "ln: argument must be positive, finite and normal");
    let bits = x.to_bits();
    let mut e = ((bits >> 52) & 0x7ff) as i64 - 1023;
    let mut m = f64::from_bits((bits & ((1u64 << 52) - 1)) | (1023u64 << 52));
    if m > core::f64::consts::SQRT_2 {
        m *= 0.5;
        e += 1;
    }
    let s = (m - 1.0) / (m + 1.0);
    let s2 = s * s;
    let mut p = 0.0;
    let mut k = 11i32;
    while k >= 0 {
        p = p * s2 + 1.0 / (2 * k + 1) as f64;
        k -= 1;
    }
    let ef = e as f64;
    ef * LN2_HI + (ef * LN2_LO + 2.0 * s * p)
}

/// `exp x` for `|x| <= 700`.
///
/// `x = k ln2 + r`, `k = round(x / ln2)`, `|r| <= ln2/2` (Cody & Waite split of `ln 2`);
/// `exp r` by its Taylor polynomial to `r^20` (truncation below `0.35^21 / 21! < 1e-28`),
/// scaled by `2^k` through the exponent bits.
///
/// # Panics
/// When `|x| > 700` (the result would leave the normal range).
pub const fn exp(x: f64) -> f64 {
    assert!(x.abs() <= 700.0, "exp: |x| must be at most 700");
    let t = x * core::f64::consts::LOG2_E;
    let k = if t >= 0.0 { (t + 0.5) as i64 } else { (t - 0.5) as i64 };
    let kf = k as f64;
    let r = (x - kf * LN2_HI) - kf * LN2_LO;
    let mut p = 1.0;
    let mut n = 20i32;
    while n >= 1 {
        p = 1.0 + r * p / n as f64;
        n -= 1;
    }
    p * f64::from_bits(((k + 1023) as u64) << 52)
}

#[cfg(all(test, feature = "std"))]
mod tests {
    #[test]
    fn ln_and_exp_match_std() {
        let mut x = 1e-300f64;
        while x < 1e300 {
            let r2 = core::f64::consts::SQRT_2;
            for v in [x, x * 1.2345, x * 0.9999, x * r2 * 0.99999, x * r2 * 1.00001] {
                let (a, b) = (super::ln(v), std::primitive::f64::ln(v));
                assert!(
                    (a - b).abs() <= 1e-15 * b.abs().max(1e-300) + 4e-16,
                    "ln({v}): {a} vs {b}"
                );
            }
            x *= 1.7;
        }
        assert_eq!(super::ln(1.0), 0.0);
        let mut x = -700.0f64;
        while x <= 700.0 {
            let (a, b) = (super::exp(x), std::primitive::f64::exp(x));
            assert!((a - b).abs() <= 1e-15 * b, "exp({x}): {a} vs {b}");
            x += 0.0137;
        }
        assert_eq!(super::exp(0.0), 1.0);
    }
}
