//! The portable rotation of one head: plain loops over the pairs (`a c - b s`, `b c + a s`,
//! two products and a sum each, no fused multiply-add).

use super::{RotaryPairs, SinCos};

/// Rotates the pairs of `head[..2 * t.half]` (`2 * t.half <= head.len()`).
#[inline(always)]
pub(super) fn rotary_head(head: &mut [f32], t: &SinCos, pairs: RotaryPairs) {
    let half = t.half;
    let (sin, cos) = (&t.sin[..half], &t.cos[..half]);
    match pairs {
        RotaryPairs::Interleaved => {
            let pairs = head[..2 * half].chunks_exact_mut(2);
            for ((p, &s), &c) in pairs.zip(sin.iter()).zip(cos.iter()) {
                let (a, b) = (p[0], p[1]);
                p[0] = a * c - b * s;
                p[1] = b * c + a * s;
            }
        }
        RotaryPairs::HalfSplit => {
            let (lo, hi) = head[..2 * half].split_at_mut(half);
            for (((a, b), &s), &c) in lo.iter_mut().zip(hi).zip(sin.iter()).zip(cos.iter()) {
                let (x0, x1) = (*a, *b);
                *a = x0 * c - x1 * s;
                *b = x1 * c + x0 * s;
            }
        }
    }
}
