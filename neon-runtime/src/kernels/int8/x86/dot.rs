//! The int8 dot product `sum (x - x_zp) * w` (wrapping i32) of the x86 conv2d and fully
//! connected kernels, one function per [`DotPath`]. Every form is exact modulo 2^32, so all
//! give the portable sum.
//!
//! - Widening (AVX2 on `ymm`, AVX-512BW on `zmm`): `x` and `w` sign-extended to i16,
//!   `x - x_zp` (it fits i16), `vpmaddwd` (products of at most `255 * 128` in magnitude,
//!   pair sums exact in i32).
//! - VNNI (AVX-VNNI on `ymm`, AVX-512 VNNI on `zmm`): `vpdpbusd` multiplies *unsigned*
//!   bytes by signed ones, so `x` goes in as `x + 128` (`x xor 0x80`) and the offset is
//!   folded: `sum (x + 128) * w - (128 + x_zp) * sum w`, the second sum a `vpdpbusd` of
//!   ones by `w`.
//!
//! Tails: the AVX2 and AVX-VNNI forms copy the last `n mod 16` (`n mod 32`) values to a
//! zero-filled block (zero weights add nothing); the AVX-512 forms load them with a byte
//! mask (masked-off bytes are not read and count as zero).

use super::DotPath;
use core::arch::x86_64::*;

/// `sum (x[k] - x_zp) * w[k]` over equal-length `x` and `w` (the shorter length otherwise),
/// wrapping, on `path`.
///
/// # Safety
/// `path` is [`supported`](DotPath::supported).
#[inline]
pub(super) unsafe fn dot(path: DotPath, x: &[i8], w: &[i8], x_zp: i32) -> i32 {
    let n = x.len().min(w.len());
    let (x, w) = (&x[..n], &w[..n]);
    match path {
        // SAFETY (all four): the caller's CPU guarantee for `path`; `with_tail` passes
        // pointers readable for the count it passes, the AVX-512 forms read `n` bytes.
        DotPath::Avx2Widening => {
            with_tail::<16>(x, w, |x, w, n| unsafe { widening256(x, w, n, x_zp) })
        }
        DotPath::AvxVnni => {
            with_tail::<32>(x, w, |x, w, n| unsafe { vnni256::<true>(x, w, n, x_zp) })
        }
        DotPath::Avx512Widening => unsafe { widening512(x.as_ptr(), w.as_ptr(), n, x_zp) },
        DotPath::Avx512Vnni => unsafe { vnni512::<true>(x.as_ptr(), w.as_ptr(), n, x_zp) },
    }
}

/// [`dot`] given `w_sum = sum w` (wrapping): the VNNI paths use it for the folded offset
/// instead of forming it (one `vpdpbusd` per step instead of two); the widening ones do not
/// need it.
///
/// # Safety
/// `path` is [`supported`](DotPath::supported).
#[inline]
pub(super) unsafe fn dot_with_sum(path: DotPath, x: &[i8], w: &[i8], x_zp: i32, w_sum: i32) -> i32 {
    let n = x.len().min(w.len());
    let (x, w) = (&x[..n], &w[..n]);
    let offset = (128 + x_zp).wrapping_mul(w_sum);
    match path {
        // SAFETY (both): as in `dot`.
        DotPath::AvxVnni => {
            with_tail::<32>(x, w, |x, w, n| unsafe { vnni256::<false>(x, w, n, 0) })
                .wrapping_sub(offset)
        }
        DotPath::Avx512Vnni => {
            unsafe { vnni512::<false>(x.as_ptr(), w.as_ptr(), n, 0) }.wrapping_sub(offset)
        }
        // SAFETY: the caller's guarantee.
        DotPath::Avx2Widening | DotPath::Avx512Widening => unsafe { dot(path, x, w, x_zp) },
    }
}

/// `acc[j] = dot_with_sum(path, x, row j of rows, x_zp, sums[j])` for each `j` of `acc`,
/// the rows `x.len()` long and consecutive in `rows`: on AVX-512 VNNI four rows at a time
/// (one load of `x` for four `vpdpbusd`, the four sums reduced together), the others one
/// row at a time.
///
/// # Safety
/// `path` is [`supported`](DotPath::supported).
pub(super) unsafe fn dot_rows_with_sums(
    path: DotPath,
    x: &[i8],
    rows: &[i8],
    x_zp: i32,
    sums: &[i32],
    acc: &mut [i32],
) {
    let n = x.len();
    let count = acc.len().min(sums.len()).min(rows.len() / n.max(1));
    let (acc, sums) = (&mut acc[..count], &sums[..count]);
    let mut done = 0;
    if path == DotPath::Avx512Vnni && n > 0 {
        for (a, s) in acc.chunks_exact_mut(4).zip(sums.chunks_exact(4)) {
            // SAFETY: the caller's CPU guarantee; rows `done..done + 4` of `n` bytes lie in
            // `rows` (`count` rows do).
            let v = unsafe { vnni512_rows4(x.as_ptr(), rows.as_ptr().add(done * n), n) };
            for (j, (a, &s)) in a.iter_mut().zip(s).enumerate() {
                *a = v[j].wrapping_sub((128 + x_zp).wrapping_mul(s));
            }
            done += 4;
        }
    }
    for ((a, w), &s) in
        acc[done..].iter_mut().zip(rows[done * n..].chunks_exact(n)).zip(&sums[done..])
    {
        // SAFETY: the caller's guarantee.
        *a = unsafe { dot_with_sum(path, x, w, x_zp, s) };
    }
}

/// `body(x, w, count)` over the first `n - n mod B` values of equal-length `x` and `w`,
/// plus `body` over the rest copied to zero-filled blocks of `B`.
#[inline(always)]
fn with_tail<const B: usize>(
    x: &[i8],
    w: &[i8],
    body: impl Fn(*const i8, *const i8, usize) -> i32,
) -> i32 {
    let n = x.len().min(w.len());
    let whole = n - n % B;
    let mut sum = body(x.as_ptr(), w.as_ptr(), whole);
    if whole < n {
        let (mut xt, mut wt) = ([0i8; B], [0i8; B]);
        xt[..n - whole].copy_from_slice(&x[whole..n]);
        wt[..n - whole].copy_from_slice(&w[whole..n]);
        sum = sum.wrapping_add(body(xt.as_ptr(), wt.as_ptr(), B));
    }
    sum
}

/// The wrapping sum of the 8 lanes of `v`.
#[target_feature(enable = "avx2")]
#[inline]
fn hsum256(v: __m256i) -> i32 {
    let s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256::<1>(v));
    let s = _mm_add_epi32(s, _mm_shuffle_epi32::<0b01_00_11_10>(s));
    let s = _mm_add_epi32(s, _mm_shuffle_epi32::<0b10_11_00_01>(s));
    _mm_cvtsi128_si32(s)
}

/// Widening on `ymm`, 16 values per step (`n` a multiple of 16).
///
/// # Safety
/// AVX2; `x` and `w` readable for `n` bytes.
#[target_feature(enable = "avx2")]
unsafe fn widening256(x: *const i8, w: *const i8, n: usize, x_zp: i32) -> i32 {
    // `x_zp` is in the int8 range (checked), so it fits i16.
    let zp = _mm256_set1_epi16(x_zp as i16);
    let mut acc = _mm256_setzero_si256();
    for k in (0..n).step_by(16) {
        // SAFETY: 16 bytes at `k < n` of each (the caller's extents).
        let (xv, wv) =
            unsafe { (_mm_loadu_si128(x.add(k).cast()), _mm_loadu_si128(w.add(k).cast())) };
        let xv = _mm256_sub_epi16(_mm256_cvtepi8_epi16(xv), zp);
        acc = _mm256_add_epi32(acc, _mm256_madd_epi16(xv, _mm256_cvtepi8_epi16(wv)));
    }
    hsum256(acc)
}

/// AVX-VNNI on `ymm`, 32 values per step (`n` a multiple of 32): with `SUMS` the whole
/// dot product, without it only `sum (x + 128) * w` (`x_zp` unused: the caller subtracts
/// `(128 + x_zp) * sum w`).
///
/// # Safety
/// AVX2 and AVX-VNNI; `x` and `w` readable for `n` bytes.
#[target_feature(enable = "avx2,avxvnni")]
unsafe fn vnni256<const SUMS: bool>(x: *const i8, w: *const i8, n: usize, x_zp: i32) -> i32 {
    let (flip, ones) = (_mm256_set1_epi8(i8::MIN), _mm256_set1_epi8(1));
    let (mut xw, mut ws) = (_mm256_setzero_si256(), _mm256_setzero_si256());
    for k in (0..n).step_by(32) {
        // SAFETY: 32 bytes at `k < n` of each (the caller's extents).
        let (xv, wv) =
            unsafe { (_mm256_loadu_si256(x.add(k).cast()), _mm256_loadu_si256(w.add(k).cast())) };
        xw = _mm256_dpbusd_avx_epi32(xw, _mm256_xor_si256(xv, flip), wv);
        if SUMS {
            ws = _mm256_dpbusd_avx_epi32(ws, ones, wv);
        }
    }
    if !SUMS {
        return hsum256(xw);
    }
    hsum256(xw).wrapping_sub((128 + x_zp).wrapping_mul(hsum256(ws)))
}

/// The mask of the first `min(n, 64)` byte lanes.
#[inline]
fn first(n: usize) -> u64 {
    if n >= 64 {
        u64::MAX
    } else {
        (1u64 << n) - 1
    }
}

/// Widening on `zmm`, 32 values per step, the tail masked.
///
/// # Safety
/// AVX-512F, BW and VL; `x` and `w` readable for `n` bytes.
#[target_feature(enable = "avx512f,avx512bw,avx512vl")]
unsafe fn widening512(x: *const i8, w: *const i8, n: usize, x_zp: i32) -> i32 {
    let zp = _mm512_set1_epi16(x_zp as i16);
    let mut acc = _mm512_setzero_si512();
    for k in (0..n).step_by(32) {
        let m = first(n - k) as __mmask32;
        // SAFETY: the masked loads read only the bytes below `n` (the caller's extents).
        let (xv, wv) =
            unsafe { (_mm256_maskz_loadu_epi8(m, x.add(k)), _mm256_maskz_loadu_epi8(m, w.add(k))) };
        let xv = _mm512_sub_epi16(_mm512_cvtepi8_epi16(xv), zp);
        acc = _mm512_add_epi32(acc, _mm512_madd_epi16(xv, _mm512_cvtepi8_epi16(wv)));
    }
    _mm512_reduce_add_epi32(acc)
}

/// AVX-512 VNNI on `zmm`, 64 values per step, the tail masked; `SUMS` as in [`vnni256`].
///
/// # Safety
/// AVX-512F, BW, VL and VNNI; `x` and `w` readable for `n` bytes.
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vnni")]
unsafe fn vnni512<const SUMS: bool>(x: *const i8, w: *const i8, n: usize, x_zp: i32) -> i32 {
    let (flip, ones) = (_mm512_set1_epi8(i8::MIN), _mm512_set1_epi8(1));
    let (mut xw, mut ws) = (_mm512_setzero_si512(), _mm512_setzero_si512());
    for k in (0..n).step_by(64) {
        let m = first(n - k);
        // SAFETY: the masked loads read only the bytes below `n` (the caller's extents).
        let (xv, wv) =
            unsafe { (_mm512_maskz_loadu_epi8(m, x.add(k)), _mm512_maskz_loadu_epi8(m, w.add(k))) };
        xw = _mm512_dpbusd_epi32(xw, _mm512_xor_si512(xv, flip), wv);
        if SUMS {
            ws = _mm512_dpbusd_epi32(ws, ones, wv);
        }
    }
    if !SUMS {
        return _mm512_reduce_add_epi32(xw);
    }
    let (xw, ws) = (_mm512_reduce_add_epi32(xw), _mm512_reduce_add_epi32(ws));
    xw.wrapping_sub((128 + x_zp).wrapping_mul(ws))
}

/// `sum (x + 128) * w` (wrapping) of `x` with each of the 4 consecutive rows at `w` (`n`
/// bytes each) on AVX-512 VNNI, 64 values per step, the tail masked; the four sums reduced
/// together (`vpunpck{l,h}dq`, `vpunpck{l,h}qdq`, then the four 128-bit lanes).
///
/// # Safety
/// AVX-512F, BW, VL and VNNI; `x` readable for `n` bytes, `w` for `4 * n`.
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vnni")]
unsafe fn vnni512_rows4(x: *const i8, w: *const i8, n: usize) -> [i32; 4] {
    let flip = _mm512_set1_epi8(i8::MIN);
    let mut a = [_mm512_setzero_si512(); 4];
    for k in (0..n).step_by(64) {
        let m = first(n - k);
        // SAFETY: the masked loads read only bytes below `n` of `x` and of each row.
        let xv = _mm512_xor_si512(unsafe { _mm512_maskz_loadu_epi8(m, x.add(k)) }, flip);
        for (r, a) in a.iter_mut().enumerate() {
            // SAFETY: as above.
            let wv = unsafe { _mm512_maskz_loadu_epi8(m, w.add(r * n + k)) };
            *a = _mm512_dpbusd_epi32(*a, xv, wv);
        }
    }
    // Per 128-bit lane: [a0 0+2, a1 0+2, a0 1+3, a1 1+3], the same of a2 and a3, then
    // [a0, a1, a2, a3]; then the four lanes added.
    let pair = |p: __m512i, q: __m512i| {
        _mm512_add_epi32(_mm512_unpacklo_epi32(p, q), _mm512_unpackhi_epi32(p, q))
    };
    let (t0, t1) = (pair(a[0], a[1]), pair(a[2], a[3]));
    let u = _mm512_add_epi32(_mm512_unpacklo_epi64(t0, t1), _mm512_unpackhi_epi64(t0, t1));
    let h = _mm256_add_epi32(_mm512_castsi512_si256(u), _mm512_extracti64x4_epi64::<1>(u));
    let v = _mm_add_epi32(_mm256_castsi256_si128(h), _mm256_extracti128_si256::<1>(h));
    let mut out = [0i32; 4];
    // SAFETY: stores 16 bytes into the 4-value array.
    unsafe { _mm_storeu_si128(out.as_mut_ptr().cast(), v) };
    out
}
