//! The portable softmax of one row: 8-lane partial maxima and sums, the runtime's scalar
//! exponential, the reciprocal of the sum applied by the activation kernels' map.

use crate::kernels::activation::{portable_map, scalar};

/// Width of the partial maxima / sums of the portable code.
const LANES: usize = 8;

/// Portable: max of a row (NaN entries are skipped here; they turn the row into NaN later,
/// through `exp(NaN - m)` and the sum).
fn row_max(x: &[f32]) -> f32 {
    let mut acc = [f32::NEG_INFINITY; LANES];
    let mut c = x.chunks_exact(LANES);
    for ch in &mut c {
        for i in 0..LANES {
            acc[i] = if ch[i] > acc[i] { ch[i] } else { acc[i] };
        }
    }
    let mut m = f32::NEG_INFINITY;
    for &v in acc.iter().chain(c.remainder()) {
        m = if v > m { v } else { m };
    }
    m
}

/// Portable: `y[j] = exp(x[j] - m)` (x and y may be the same row: see callers), returns the
/// sum.
fn exp_sum(y: &mut [f32], m: f32) -> f32 {
    let mut acc = [0.0f32; LANES];
    let mut c = y.chunks_exact_mut(LANES);
    for ch in &mut c {
        for i in 0..LANES {
            let e = scalar::exp(ch[i] - m);
            ch[i] = e;
            acc[i] += e;
        }
    }
    let mut tail = 0.0f32;
    for v in c.into_remainder() {
        let e = scalar::exp(*v - m);
        *v = e;
        tail += e;
    }
    // Pairwise combine of the partial sums.
    let s4 = [acc[0] + acc[4], acc[1] + acc[5], acc[2] + acc[6], acc[3] + acc[7]];
    ((s4[0] + s4[2]) + (s4[1] + s4[3])) + tail
}

/// The softmax of `y` in place.
pub(super) fn row(y: &mut [f32]) {
    let m = row_max(y);
    let s = exp_sum(y, m);
    let inv = 1.0 / s;
    portable_map(y, |v| v * inv);
}
