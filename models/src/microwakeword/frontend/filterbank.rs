//! Mel filterbank on the power spectrum: 40 triangular channels from 125 Hz to 7500 Hz
//! (pymicro-features 2.0.2's configuration), Q12 weights, square root of each channel's
//! energy (TFLite Micro `filterbank.cc` / `filterbank_util.cc`).
//!
//! Channel `c` sums the energy of its bins weighted by `w` and the bins of channel `c - 1`
//! weighted by `1 - w` (the "unweights"): each bin lies on the rising edge of one channel and
//! the falling edge of the previous one. The mel scale is `1127 ln(1 + f / 700)`; the 42
//! band edges are equally spaced on it (41 computed centres after the lower limit).

use super::fft::{Spectrum, FFT_BINS};
use super::tables::{floor_f32, log1p, nudge_f32};

/// Feature channels (`num_channels`).
pub const CHANNELS: usize = 40;
/// Lower band limit in Hz.
pub const LOWER_HZ: f32 = 125.0;
/// Upper band limit in Hz.
pub const UPPER_HZ: f32 = 7500.0;
/// Fraction bits of the weights (`kFilterbankBits`).
pub const FILTERBANK_BITS: u32 = 12;
/// The channels plus the one below the first (whose "unweights" start channel 0).
const BANDS: usize = CHANNELS + 1;
/// Channel ranges are padded to multiples of this many bins (`kFilterbankChannelBlockSize`).
const BLOCK: usize = 4;
/// Channel starts are aligned down to this many bins (`kFilterbankIndexAlignment` bytes of
/// `int16_t`).
const ALIGN: usize = 2;
/// Room for the weights of any layout: every bin once, plus a block of padding per band and
/// a block of zeros.
pub const WEIGHTS_CAP: usize = FFT_BINS + BLOCK * (BANDS + 1);

/// The filterbank's layout and Q12 weights, in `filterbank_util.cc`'s form.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Filterbank {
    /// First spectrum bin with energy (5: DC and the bins below 125 Hz are skipped).
    pub start_index: usize,
    /// One past the last spectrum bin with energy.
    pub end_index: usize,
    /// Per band: first bin read (aligned down to a multiple of 2).
    pub frequency_starts: [u16; BANDS],
    /// Per band: offset of its first weight in `weights` / `unweights`.
    pub weight_starts: [u16; BANDS],
    /// Per band: bins read (a multiple of 4; zero weights pad it).
    pub widths: [u16; BANDS],
    /// Rising-edge weights, Q12 (`weights_len` used, zeros after).
    pub weights: [i16; WEIGHTS_CAP],
    /// Falling-edge weights `1 - w`, Q12.
    pub unweights: [i16; WEIGHTS_CAP],
    /// Weights in use.
    pub weights_len: usize,
}

/// glibc 2.36's `log1pf` (Debian 12's, which pymicro-features' extension calls and the
/// goldens were made with) where it differs from `log1p` rounded to nearest on the bin
/// frequencies `x = bin * 31.25 / 700`: `(x, log1pf(x))` as `f32` bits, printed by a C
/// program on that libm. Some of them move filterbank weights and so the features: a libm
/// with a correctly rounded `log1pf` makes the package compute other features
/// (`tools/microwakeword/FACTS.md`, section 8).
const GLIBC_LOG1PF: [(u32, u32); 23] = [
    (0x3e892492, 0x3e730628),
    (0x3f149249, 0x3eea5136),
    (0x3f2b6db7, 0x3f033a64),
    (0x3fb12492, 0x3f5e6662),
    (0x3fd92492, 0x3f7def00),
    (0x400edb6e, 0x3f9629a0),
    (0x40200000, 0x3fa05a8a),
    (0x408c0000, 0x3fd743de),
    (0x408d6db7, 0x3fd852e6),
    (0x408edb6e, 0x3fd95fb6),
    (0x409a4925, 0x3fe17a54),
    (0x40a44925, 0x3fe82bc2),
    (0x40a5b6db, 0x3fe91962),
    (0x40b40000, 0x3ff20762),
    (0x40d36db7, 0x4001dc92),
    (0x411a4925, 0x40175a58),
    (0x411bb6db, 0x4017e338),
    (0x4120b6db, 0x4019b97a),
    (0x41289249, 0x401c8238),
    (0x412b6db7, 0x401d7de6),
    (0x412d9249, 0x401e3826),
    (0x412f0000, 0x401eb328),
    (0x41340000, 0x40205a8a),
];

/// C's `log1pf(x)`: `log1p` in `f64` rounded to `f32`, except on [`GLIBC_LOG1PF`]'s
/// arguments.
const fn log1pf(x: f32) -> f32 {
    let mut i = 0;
    while i < GLIBC_LOG1PF.len() {
        if GLIBC_LOG1PF[i].0 == x.to_bits() {
            return f32::from_bits(GLIBC_LOG1PF[i].1);
        }
        i += 1;
    }
    log1p(x as f64) as f32
}

/// `FreqToMel`: `1127.0f * log1pf(freq / 700.0f)` in `f32`, the `log1pf` result moved by
/// `ulps`.
const fn freq_to_mel(freq: f32, ulps: i32) -> f32 {
    1127.0 * nudge_f32(log1pf(freq / 700.0), ulps)
}

/// Builds the filterbank as `FilterbankPopulateState` does for 16 kHz, a 512-point FFT
/// and the constants above (every `float` step in `f32`, in the C code's order).
pub(super) const fn build_filterbank(ulps: i32) -> Filterbank {
    let mel_low = freq_to_mel(LOWER_HZ, ulps);
    let mel_high = freq_to_mel(UPPER_HZ, ulps);
    let spacing = (mel_high - mel_low) / BANDS as f32;
    let mut centres = [0f32; BANDS];
    let mut i = 0;
    while i < BANDS {
        centres[i] = mel_low + spacing * (i + 1) as f32;
        i += 1;
    }
    let hz_per_bin = 0.5 * 16000.0 / (FFT_BINS as f32 - 1.0);
    let start_index = (1.5 + LOWER_HZ / hz_per_bin) as usize;

    let mut fb = Filterbank {
        start_index,
        end_index: 0,
        frequency_starts: [0; BANDS],
        weight_starts: [0; BANDS],
        widths: [0; BANDS],
        weights: [0; WEIGHTS_CAP],
        unweights: [0; WEIGHTS_CAP],
        weights_len: 0,
    };
    let mut bin_starts = [0usize; BANDS];
    let mut bin_counts = [0usize; BANDS];
    let mut next_bin = start_index;
    let mut next_weight = 0usize;
    let mut has_zeros = false;
    let mut c = 0;
    while c < BANDS {
        let mut bin = next_bin;
        while freq_to_mel(bin as f32 * hz_per_bin, ulps) <= centres[c] {
            bin += 1;
        }
        let width = bin - next_bin;
        bin_starts[c] = next_bin;
        bin_counts[c] = width;
        if width == 0 {
            // An empty band reads one block of zero weights, placed first.
            fb.frequency_starts[c] = 0;
            fb.weight_starts[c] = 0;
            fb.widths[c] = BLOCK as u16;
            if !has_zeros {
                has_zeros = true;
                let mut j = 0;
                while j < c {
                    fb.weight_starts[j] += BLOCK as u16;
                    j += 1;
                }
                next_weight += BLOCK;
            }
        } else {
            let aligned = next_bin / ALIGN * ALIGN;
            let padded = (next_bin - aligned + width).div_ceil(BLOCK) * BLOCK;
            fb.frequency_starts[c] = aligned as u16;
            fb.weight_starts[c] = next_weight as u16;
            fb.widths[c] = padded as u16;
            next_weight += padded;
        }
        next_bin = bin;
        c += 1;
    }
    fb.weights_len = next_weight;

    let unit = (1 << FILTERBANK_BITS) as f32;
    let mut c = 0;
    while c < BANDS {
        let below = if c == 0 { mel_low } else { centres[c - 1] };
        let first = fb.weight_starts[c] as usize + bin_starts[c] - fb.frequency_starts[c] as usize;
        let mut j = 0;
        while j < bin_counts[c] {
            let bin = bin_starts[c] + j;
            let w =
                (centres[c] - freq_to_mel(bin as f32 * hz_per_bin, ulps)) / (centres[c] - below);
            fb.weights[first + j] = floor_f32(w * unit + 0.5) as i16;
            fb.unweights[first + j] = floor_f32((1.0 - w) * unit + 0.5) as i16;
            j += 1;
        }
        let end = bin_starts[c] + bin_counts[c];
        if end > fb.end_index {
            fb.end_index = end;
        }
        c += 1;
    }
    assert!(fb.end_index < FFT_BINS, "filterbank end above the spectrum");
    fb
}

/// `FilterbankConvertFftComplexToEnergy`: `|X[k]|^2` for the bins in `[start, end)`, in the
/// C code's `int32` arithmetic (wrapping: only `-32768 - 32768i` reaches it). Bins outside
/// the range only ever meet zero weights and are left as they are.
pub(super) fn energy(fb: &Filterbank, spectrum: &Spectrum, energy: &mut [i32; FFT_BINS]) {
    let range = fb.start_index..fb.end_index;
    let (re, im) = (&spectrum.re[range.clone()], &spectrum.im[range.clone()]);
    for ((e, &r), &i) in energy[range].iter_mut().zip(re).zip(im) {
        let (r, i) = (r as i32, i as i32);
        *e = (r * r).wrapping_add(i * i);
    }
}

/// `FilterbankAccumulateChannels` then `FilterbankSqrt`: per channel, the weighted energies
/// summed in `u64` (with the previous band's unweighted sum), their rounded integer square
/// root, shifted right by `scale_down_shift` (the FFT input shift, undoing its gain).
pub(super) fn accumulate_sqrt(
    fb: &Filterbank,
    energy: &[i32; FFT_BINS],
    scale_down_shift: u32,
    out: &mut [u32; CHANNELS],
) {
    let mut carried = 0i64;
    for band in 0..BANDS {
        let start = fb.frequency_starts[band] as usize;
        let weight_start = fb.weight_starts[band] as usize;
        let width = fb.widths[band] as usize;
        let mut weighted = carried;
        let mut unweighted = 0i64;
        let bins = &energy[start..start + width];
        let w = &fb.weights[weight_start..weight_start + width];
        let u = &fb.unweights[weight_start..weight_start + width];
        for ((&e, &w), &u) in bins.iter().zip(w).zip(u) {
            // C converts the `int16_t` weight and the `int32_t` energy to `uint64_t` and sums
            // modulo 2^64: the same bits as these `i64` products (below 2^47 in magnitude)
            // summed modulo 2^64.
            weighted = weighted.wrapping_add(w as i64 * e as i64);
            unweighted = unweighted.wrapping_add(u as i64 * e as i64);
        }
        if band > 0 {
            out[band - 1] = sqrt64(weighted as u64) >> scale_down_shift;
        }
        carried = unweighted;
    }
}

/// `Sqrt64`: the integer square root of `num` rounded to nearest (up when the remainder
/// exceeds the root), except that a root of `2^16 - 1` for `num < 2^32` (the C code's
/// `Sqrt32` path) or `2^32 - 1` is not rounded up: the C code's digit-by-digit `Sqrt32` and
/// `Sqrt64` computed with the exact [`u64::isqrt`] (the reference test in this module
/// compares them).
fn sqrt64(num: u64) -> u32 {
    let root = num.isqrt();
    let top = if num >> 32 == 0 { u16::MAX as u64 } else { u32::MAX as u64 };
    let up = num - root * root > root && root != top;
    (root + up as u64) as u32
}

#[cfg(test)]
mod tests {
    use super::sqrt64;

    /// Integer square root of `num < 2^width` (`width` 32 or 64), digit by digit, plus one
    /// when the remainder exceeds the root (unless the root is already `2^(width/2) - 1`):
    /// `Sqrt32` and `Sqrt64` of the C code, which differ only in their width.
    fn sqrt_rounded(mut num: u64, width: u32) -> u64 {
        if num == 0 {
            return 0;
        }
        let top = (num.leading_zeros() - (64 - width)) | 1;
        let mut bit = 1u64 << (width - 1 - top);
        let mut res = 0u64;
        for _ in 0..(width - 1 - top) / 2 + 1 {
            if num >= res + bit {
                num -= res + bit;
                res = (res >> 1) + bit;
            } else {
                res >>= 1;
            }
            bit >>= 2;
        }
        if num > res && res != (1u64 << (width / 2)) - 1 {
            res += 1;
        }
        res
    }

    /// The C code's `Sqrt64`: values below `2^32` take the 32-bit path.
    fn c_sqrt64(num: u64) -> u32 {
        let width = if num >> 32 == 0 { 32 } else { 64 };
        sqrt_rounded(num, width) as u32
    }

    #[test]
    fn sqrt_equals_the_c_code_s_digit_by_digit_one() {
        let mut values = alloc::vec![0, 1, 2, 3, u32::MAX as u64, 1 << 32, u64::MAX, u64::MAX - 1];
        // Around every rounding and saturation boundary: r^2, r^2 + r, at the top roots.
        let roots = (0..70_000u64).chain((16..32).map(|b| 1u64 << b)).chain([
            u16::MAX as u64,
            u32::MAX as u64,
            (1 << 32) - 2,
            3_037_000_499,
        ]);
        for r in roots {
            for v in [r * r, r * r + r] {
                values.extend([v.wrapping_sub(1), v, v.wrapping_add(1)]);
            }
        }
        let mut s = 0x2545_F491_4F6C_DD1Du64;
        for _ in 0..200_000 {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            values.push(s >> (s % 64));
        }
        for v in values {
            assert_eq!(sqrt64(v), c_sqrt64(v), "sqrt of {v}");
        }
    }
}
