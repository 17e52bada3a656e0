//! NEON depthwise conv2d with depth multiplier 1, blocks of 8 channels in registers: per
//! output pixel and block, the two 4-lane accumulators start at the bias and walk every
//! inside tap (`ssubl`: `x - x_zp` to i16, exact; `sxtl` of the weights; `smlal`,
//! `smlal2`), then the block goes through the output stage. The last `C mod 8` channels
//! are one more block over the 8 channels that end the pixel (it overlaps the block before;
//! only its channels past the whole blocks are written, through the portable stage, as the
//! blocks' one rounding requires). Each pixel's inside taps are listed
//! once (input and filter offsets) for its blocks to walk. Fewer than 8 channels, or
//! kernels of over [`MAX_TAPS`] taps, run the shared loop ([`portable::depthwise_dm1_with`]).

use super::super::portable::{self, finish, pixels};
use super::super::{DepthwiseGeometry, LayerQuant, ROUNDING_BLOCK};
use super::{NeonDepthwise, Stage8};
use core::arch::aarch64::*;

/// The most kernel taps a pixel's tap list holds (the models' kernels have up to 23).
const MAX_TAPS: usize = 64;

/// Depthwise conv2d with depth multiplier 1 (checked arguments; module docs).
pub(super) fn depthwise(g: &DepthwiseGeometry, x: &[i8], q: LayerQuant<'_>, y: &mut [i8]) {
    // SAFETY: NEON is baseline on aarch64; `x_zp` is in the int8 range (checked).
    let zp = unsafe { vdup_n_s8(q.x_zp as i8) };
    let c = g.window.channels;
    let (w, body) = (&q.weights, c - c % ROUNDING_BLOCK);
    let win = &g.window;
    let kernel = win.kernel_h * win.kernel_w;
    if c < 8 || kernel > MAX_TAPS {
        portable::depthwise_dm1_with(g, x, q, y, &NeonDepthwise { zp });
        return;
    }
    // The checked geometry's extents, on which the unchecked loads below rely.
    assert!(
        w.filter.len() >= kernel * c && x.len() >= win.height * win.width * c,
        "depthwise extents"
    );
    let mut taps = [(0usize, 0usize); MAX_TAPS];
    for (px, y) in pixels(win).zip(y.chunks_exact_mut(c)) {
        // The inside taps' byte offsets: (input pixel, filter tap).
        let mut n = 0;
        px.for_each_tap(win, |t, i| {
            taps[n] = (i * c, t * c);
            n += 1;
        });
        let taps = &taps[..n];
        for o in (0..c).step_by(8).map(|o| o.min(c - 8)) {
            // SAFETY: NEON is baseline; the bias loads read 8 values of the `c` biases
            // (bounds checked); every tap load reads 8 bytes at `offset + o` with
            // `o + 8 <= c`, inside an input pixel (`i < H * W`) or a filter tap
            // (`t < KH * KW`), the extents asserted above.
            let acc = unsafe {
                let mut acc = match w.bias {
                    Some(b) => {
                        let b = &b[o..o + 8];
                        [vld1q_s32(b.as_ptr()), vld1q_s32(b[4..].as_ptr())]
                    }
                    None => [vdupq_n_s32(0); 2],
                };
                let (xo, wo) = (x.as_ptr().add(o), w.filter.as_ptr().add(o));
                for &(xi, wi) in taps {
                    let xv = vsubl_s8(vld1_s8(xo.add(xi)), zp);
                    let wv = vmovl_s8(vld1_s8(wo.add(wi)));
                    acc[0] = vmlal_s16(acc[0], vget_low_s16(xv), vget_low_s16(wv));
                    acc[1] = vmlal_high_s16(acc[1], xv, wv);
                }
                acc
            };
            if o + 8 <= body {
                let v = Stage8::new(&q.out, w, o, c).apply(acc);
                // SAFETY: NEON is baseline; the store writes the 8 bytes of the slice.
                unsafe { vst1_s8(y[o..o + 8].as_mut_ptr(), v) };
            } else {
                let mut a = [0i32; 8];
                // SAFETY: NEON is baseline; the stores write the 8-value array.
                unsafe {
                    vst1q_s32(a.as_mut_ptr(), acc[0]);
                    vst1q_s32(a[4..].as_mut_ptr(), acc[1]);
                }
                for ch in body..c {
                    y[ch] = finish(&q.out, w, (ch, c), a[ch - o]);
                }
            }
        }
    }
}
