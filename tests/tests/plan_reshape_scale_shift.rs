//! `reshape` and `scale_shift` in `neon_plan!`: a conv1d followed by a folded BatchNorm
//! (per-channel `scale_shift`, channel-first), a scalar `scale_shift`, a transpose and a
//! frame-major per-channel `scale_shift`, against an f64 reference on every backend
//! (channels and frames that are not multiples of the vector widths), in place and without
//! allocation; a `reshape` that takes its input's storage (equal `MEMORY_MAP` offsets) and
//! one that copies.

mod common;

use neon_macros::neon_plan;
use neon_runtime::ops::conv::Conv1d;
use neon_runtime::ops::elementwise::ChannelScaleShift;
use neon_runtime::ops::linear::Linear;
use neon_runtime::workspace::MemoryRegion;
use neon_runtime::Backend;

const C: usize = 13;
const CIN: usize = 5;

neon_plan! {
    /// `[5, frames]` -> conv1d (k = 3, padding 1) -> folded BatchNorm -> `x * 0.5 - 0.25`
    /// -> transpose -> per-channel scale and shift, frame-major -> `[frames, 13]`.
    pub plan Folded {
        dim frames in 1..=70;
        weight w: f32[13, 5, 3];
        weight g: f32[13];
        weight b: f32[13];
        weight g2: f32[13];
        weight b2: f32[13];
        input x: [5, frames];
        output y: [frames, 13];

        let h = conv1d(x, w, padding = 1);
        let h = scale_shift(h, g, b);
        let h = scale_shift(h, scale = 0.5, shift = -0.25);
        let h = transpose(h);
        y = scale_shift(h, g2, b2, layout = frame_major);
    }
}

neon_plan! {
    /// A 1x1 conv1d `[3, 2]` -> `[16, 2]`, reshaped in place to one frame-major row
    /// `[1, 32]` for a linear head; and a reshape of the caller's input (a copy).
    pub plan Head {
        weight w: f32[16, 3, 1];
        weight wl: f32[4, 32];
        input x: [3, 2];
        output y: [1, 4];
        output z: [2, 3];

        let h = conv1d(x, w);
        let r = reshape(h, to = [1, 32], layout = frame_major);
        y = linear(r, wl);
        z = reshape(x, to = [2, 3]);
    }
}

fn values(n: usize, seed: usize, scale: f32) -> Vec<f32> {
    (0..n).map(|i| (((i * 7919 + seed * 104_729) % 1009) as f32 / 504.5 - 1.0) * scale).collect()
}

/// Raw weights: (w, g, b, g2, b2).
fn raw() -> [Vec<f32>; 5] {
    [
        values(C * CIN * 3, 1, 0.5),
        values(C, 2, 1.5),
        values(C, 3, 0.5),
        values(C, 4, 1.5),
        values(C, 5, 0.5),
    ]
}

fn weights(r: &[Vec<f32>; 5]) -> FoldedWeights<Vec<f32>> {
    FoldedWeights {
        w: Conv1d::new(Folded::W, r[0].clone(), None).unwrap(),
        g: ChannelScaleShift::new(Folded::G, r[1].clone(), r[2].clone()).unwrap(),
        g2: ChannelScaleShift::from_slice(Folded::G2, &r[3], &r[4]).unwrap(),
    }
}

/// The plan's math in f64, from the definitions; the result `[frames, C]`.
fn reference64(r: &[Vec<f32>; 5], x: &[f32], frames: usize) -> Vec<f64> {
    let at = |c: usize, t: i64| {
        if (0..frames as i64).contains(&t) {
            x[c * frames + t as usize] as f64
        } else {
            0.0
        }
    };
    let mut y = vec![0.0; frames * C];
    for o in 0..C {
        for t in 0..frames {
            let mut s = 0.0;
            for c in 0..CIN {
                for k in 0..3 {
                    s += r[0][(o * CIN + c) * 3 + k] as f64 * at(c, t as i64 + k as i64 - 1);
                }
            }
            let s = s * r[1][o] as f64 + r[2][o] as f64;
            let s = s * 0.5 - 0.25;
            y[t * C + o] = s * r[3][o] as f64 + r[4][o] as f64;
        }
    }
    y
}

fn region(name: &str, map: &[MemoryRegion]) -> MemoryRegion {
    *map.iter().find(|r| r.name == name).unwrap_or_else(|| panic!("no value {name}"))
}

fn scale_shift_plan_matches_f64<B: Backend>() {
    let r = raw();
    let w = weights(&r);
    let mut ws = Box::new(FoldedWorkspace::new());
    for frames in [1, 2, 3, 7, 15, 16, 17, 33, 64, 70] {
        let x = values(Folded::x_len(frames), frames, 1.0);
        let mut y = vec![f32::NAN; Folded::y_len(frames)];
        common::allocation_free(|| Folded::run::<B, _>(&w, &x, &mut y, frames, &mut ws)).unwrap();
        // 15 products of magnitude <= 0.5 per output, then three multiply-adds by factors
        // <= 1.5: f32 rounding stays far below 1e-5 of the scale (about 1).
        for (i, (&g, &e)) in y.iter().zip(&reference64(&r, &x, frames)).enumerate() {
            let err = (g as f64 - e).abs();
            assert!(err <= 1e-5 * (1.0 + e.abs()), "{} frames {frames} [{i}]: {g} vs {e}", B::NAME);
        }
    }
}

#[test]
fn scale_shift_runs_in_place() {
    let map = Folded::MEMORY_MAP;
    // Both scale_shift steps after the conv write over its output.
    assert_eq!(region("h#2", map).offset, region("h", map).offset);
    assert_eq!(region("h#3", map).offset, region("h", map).offset);
    assert_ne!(region("h#4", map).offset, region("h#3", map).offset, "transpose copies");
    assert_eq!(Folded::G.channels, C);
}

fn head_weights() -> HeadWeights<Vec<f32>> {
    HeadWeights {
        w: Conv1d::new(Head::W, values(16 * 3, 6, 0.5), None).unwrap(),
        wl: Linear::new(Head::WL, values(4 * 32, 7, 0.5), None).unwrap(),
    }
}

fn reshape_plan_matches_f64<B: Backend>() {
    let w = head_weights();
    let (wc, wl) = (values(16 * 3, 6, 0.5), values(4 * 32, 7, 0.5));
    let x = values(6, 8, 1.0);
    let (mut y, mut z) = ([f32::NAN; 4], [f32::NAN; 6]);
    let mut ws = Box::new(HeadWorkspace::new());
    common::allocation_free(|| Head::run::<B, _>(&w, &x, &mut y, &mut z, &mut ws)).unwrap();
    // h = conv [16, 2] channel-first; r = the same 32 values as one row.
    let h: Vec<f64> = (0..32)
        .map(|i| (0..3).map(|c| wc[(i / 2) * 3 + c] as f64 * x[c * 2 + i % 2] as f64).sum())
        .collect();
    for (o, &got) in y.iter().enumerate() {
        let want: f64 = (0..32).map(|i| wl[o * 32 + i] as f64 * h[i]).sum();
        assert!((got as f64 - want).abs() <= 1e-5 * (1.0 + want.abs()), "{}: y[{o}]", B::NAME);
    }
    assert_eq!(z, *<&[f32; 6]>::try_from(&x[..]).unwrap(), "reshape copies the data");
}

neon_runtime::backend_tests!(scale_shift_plan_matches_f64, reshape_plan_matches_f64);

#[test]
fn reshape_takes_its_input_storage() {
    let map = Head::MEMORY_MAP;
    let (h, r) = (region("h", map), region("r", map));
    assert!(h.offset.is_some());
    assert_eq!(r.offset, h.offset, "reshape aliases the conv output");
    assert_eq!(region("z", map).offset, None, "the caller's output");
}
