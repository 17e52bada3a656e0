//! Transform lengths and twiddle tables, computed by `const fn`s (exact rational range
//! reduction, then Taylor polynomials in f64) so that tables can live in `static`s. Layout
//! and accuracy: see the family docs (`fft/mod.rs`).

/// Smallest supported transform length.
pub const MIN_LEN: usize = 16;
/// Largest supported transform length (`2^16`).
pub const MAX_LEN: usize = 1 << 16;

/// Whether `n` is a supported transform length (a power of two in
/// [`MIN_LEN`]`..=`[`MAX_LEN`]).
pub const fn is_valid_len(n: usize) -> bool {
    n.is_power_of_two() && n >= MIN_LEN && n <= MAX_LEN
}

/// Length of the twiddle table of a length-`n` transform: `3n/2 - 2` f32 values.
///
/// # Panics
/// When `n` is not a valid length (a compile error when evaluated in a constant).
pub const fn twiddle_len(n: usize) -> usize {
    assert!(is_valid_len(n), "rfft: length must be a power of two in 16..=65536");
    3 * (n / 2) - 2
}

/// `(sin, cos)` of the angle `2 pi num / den` (a rational number of turns), in f64, usable
/// in constants.
///
/// Range reduction is exact: `num mod den` picks the quadrant and the remainder is folded
/// into the first octant with integer arithmetic, so the polynomial argument is
/// `x = (pi/2) r / den` with `0 <= x <= pi/4`; `r / den` and the product with `pi/2` are the
/// only roundings (relative error of `x` below `1.5 * 2^-53`). `sin x` and `cos x` are
/// Taylor polynomials of degree 23 and 22 evaluated in Horner form with exact rational
/// factors `1 / ((2k)(2k+1))`; the truncation error is below `(pi/4)^24 / 24! < 2e-26`.
/// Total absolute error below `4e-16` (2 ulp of 1 in f64; the tests compare with `std`'s
/// `sin_cos` over every `num < den` for many `den`), far below the f32 half-ulp of a
/// twiddle (`>= 3e-8` for values near 1). Exact values: `sin = 0`, `cos = +-1` on the axes
/// (`4 num` a multiple of `den`).
///
/// # Panics
/// When `den == 0` or `den >= 2^52` (so that the integer arithmetic cannot overflow and
/// `r / den` is one rounding).
pub const fn sin_cos_turns(num: u64, den: u64) -> (f64, f64) {
    assert!(den > 0 && den < (1 << 52), "sin_cos_turns: den must be in 1..2^52");
    let t = num % den;
    // Quadrant q and remainder r4 / den of a quadrant: 4t = q den + r4.
    let q = (4 * t as u128 / den as u128) as u64;
    let r4 = (4 * t as u128 - q as u128 * den as u128) as u64;
    // Fold into the first octant: theta = (pi/2) r4 / den = pi/2 - (pi/2) (den - r4) / den.
    let swap = 2 * r4 > den;
    let r = if swap { den - r4 } else { r4 };
    let x = core::f64::consts::FRAC_PI_2 * (r as f64 / den as f64);
    let (s, c) = sin_cos_octant(x);
    let (st, ct) = if swap { (c, s) } else { (s, c) };
    match q {
        0 => (st, ct),
        1 => (ct, -st),
        2 => (-st, -ct),
        _ => (-ct, st),
    }
}

/// `(sin x, cos x)` for `0 <= x <= pi/4`: Taylor polynomials in Horner form,
/// `sin x = x (1 - x^2/(2*3) (1 - x^2/(4*5) (1 - ...)))` up to `x^23`, `cos x` likewise up
/// to `x^22`.
const fn sin_cos_octant(x: f64) -> (f64, f64) {
    let x2 = x * x;
    let mut s = 1.0;
    let mut c = 1.0;
    let mut k = 11u32;
    while k >= 1 {
        let kf = k as f64;
        // sin: factors 1/((2k)(2k+1)); cos: 1/((2k-1)(2k)).
        s = 1.0 - x2 / ((2.0 * kf) * (2.0 * kf + 1.0)) * s;
        c = 1.0 - x2 / ((2.0 * kf - 1.0) * (2.0 * kf)) * c;
        k -= 1;
    }
    (x * s, c)
}

/// Fills `table` with the twiddles of a length-`n` transform (layout: see the
/// [module docs](super)). A `const fn`: [`twiddles`] uses it to build tables at compile time.
///
/// # Panics
/// When `n` is not a valid length or `table.len() != twiddle_len(n)`.
pub const fn fill_twiddles(n: usize, table: &mut [f32]) {
    assert!(table.len() == twiddle_len(n), "rfft: twiddle table length is not twiddle_len(n)");
    let m = n / 2;
    let mut h = 1;
    while h < m {
        let off = 2 * h - 2;
        let mut j = 0;
        while j < h {
            let (s, c) = sin_cos_turns(j as u64, 2 * h as u64);
            table[off + j] = c as f32;
            table[off + h + j] = s as f32;
            j += 1;
        }
        h *= 2;
    }
    let off = 2 * m - 2;
    let q = m / 2;
    let mut k = 0;
    while k < q {
        let (s, c) = sin_cos_turns(k as u64, n as u64);
        table[off + k] = c as f32;
        table[off + q + k] = s as f32;
        k += 1;
    }
}

/// The twiddle table of a length-`n` transform as an array, for `static`s:
/// `static TW: [f32; twiddle_len(512)] = twiddles(512);`. Const evaluation of the largest
/// tables (`n >= 16384`) is slow; fill those at run time with [`fill_twiddles`].
///
/// # Panics
/// When `n` is not a valid length or `T != twiddle_len(n)` (at compile time in a constant).
pub const fn twiddles<const T: usize>(n: usize) -> [f32; T] {
    let mut t = [0.0f32; T];
    fill_twiddles(n, &mut t);
    t
}
