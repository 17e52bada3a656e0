//! f64 references of the pools, written from PyTorch's definitions (aten
//! `pooling_output_shape_pad_lr`, `avg_pool2d` / `max_pool2d` CPU kernels), shared by the
//! runtime's pool tests and the plan tests (`tests/tests/plan_*.rs` include it by
//! `#[path]`). Every tensor is channel-first; the maximum propagates NaN.
#![allow(dead_code)]

/// The maximum of PyTorch's pools: NaN wins.
pub fn nan_max(m: f64, v: f64) -> f64 {
    if v.is_nan() || v > m {
        v
    } else {
        m
    }
}

/// `MaxPool2d` without padding: `x` `[c, h, w]`, window `(kh, kw)` at stride `(sh, sw)` ->
/// `[c, (h - kh) / sh + 1, (w - kw) / sw + 1]`.
pub fn max_pool2d(
    x: &[f64],
    c: usize,
    (h, w): (usize, usize),
    (kh, kw): (usize, usize),
    (sh, sw): (usize, usize),
) -> Vec<f64> {
    let (oh, ow) = ((h - kh) / sh + 1, (w - kw) / sw + 1);
    let mut y = Vec::with_capacity(c * oh * ow);
    for ch in 0..c {
        for r in 0..oh {
            for q in 0..ow {
                let mut m = f64::NEG_INFINITY;
                for i in 0..kh {
                    for j in 0..kw {
                        m = nan_max(m, x[(ch * h + r * sh + i) * w + q * sw + j]);
                    }
                }
                y.push(m);
            }
        }
    }
    y
}

/// The options of a 1-D pool, as PyTorch names them.
#[derive(Clone, Copy, Debug)]
pub struct Pool1dRef {
    /// `true`: max pooling; `false`: average pooling.
    pub max: bool,
    pub kernel: usize,
    pub stride: usize,
    /// `(left, right)`.
    pub pad: (usize, usize),
    pub ceil_mode: bool,
    pub count_include_pad: bool,
}

impl Pool1dRef {
    /// PyTorch's output length, the last window dropped when it starts in the right
    /// padding (`pooling_output_shape_pad_lr`).
    pub fn out_frames(&self, t: usize) -> usize {
        let (k, s, (l, r)) = (self.kernel, self.stride, self.pad);
        let span = t + l + r - k;
        let mut out = if self.ceil_mode { span.div_ceil(s) + 1 } else { span / s + 1 };
        if self.ceil_mode && (out - 1) * s >= t + l {
            out -= 1;
        }
        out
    }

    /// `x` `[c, t]` -> `[c, out_frames(t)]`.
    pub fn run(&self, x: &[f64], c: usize, t: usize) -> Vec<f64> {
        let (k, s, (l, r)) = (self.kernel as i64, self.stride as i64, self.pad);
        let (ti, li, ri) = (t as i64, l as i64, r as i64);
        let out = self.out_frames(t);
        let mut y = Vec::with_capacity(c * out);
        for ch in 0..c {
            let row = &x[ch * t..(ch + 1) * t];
            for o in 0..out as i64 {
                let start = o * s - li;
                let end = (start + k).min(ti + ri);
                let pool_size = end - start;
                let (a, b) = (start.max(0) as usize, end.min(ti) as usize);
                let taps = &row[a..b];
                y.push(if self.max {
                    taps.iter().fold(f64::NEG_INFINITY, |m, &v| nan_max(m, v))
                } else {
                    let n = if self.count_include_pad { pool_size } else { (b - a) as i64 };
                    taps.iter().sum::<f64>() / n as f64
                });
            }
        }
        y
    }
}

/// The global pool `[c, t]` -> `[c]`: the mean (or the NaN-propagating maximum) of each row.
pub fn global_pool(x: &[f64], c: usize, t: usize, max: bool) -> Vec<f64> {
    let p = Pool1dRef {
        max,
        kernel: t,
        stride: t,
        pad: (0, 0),
        ceil_mode: false,
        count_include_pad: true,
    };
    p.run(x, c, t)
}

/// The transpose of a row-major `[rows, cols]` matrix (frame-major <-> channel-first).
pub fn transpose<T: Copy>(x: &[T], rows: usize, cols: usize) -> Vec<T> {
    (0..cols).flat_map(|j| (0..rows).map(move |i| x[i * cols + j])).collect()
}
