//! The portable attention: one query row at a time and blocks of 8 keys: 8-lane partial
//! sums for the dot products, the 8 exponentials, and the accumulation 4 output values at a
//! time over the 8 keys (each output value loaded and stored once per block). Plain Rust on
//! every target; LLVM vectorises the inner loops into 4-lane NEON code on aarch64, but on
//! x86-64 into 2-lane pieces and shuffles (several times the instructions of the same
//! operations written in SSE2; `BENCHMARKS.md`, "Host: attention on Moonshine's shapes
//! (x86-64)"), so the `X86` backend is the fast path there.

use super::AttentionGeometry;
use crate::kernels::activation::scalar;
use crate::kernels::StridedMut;
use core::ops::Range;

/// Keys per block of the portable kernel.
const KB: usize = 8;

/// Lanes of the portable kernel's fixed-width inner loops (one AVX vector, two SSE / NEON
/// vectors): wide enough for LLVM to vectorise and keep several accumulators in flight.
const LANES: usize = 8;

/// `q . k` (equal lengths): 8 partial sums over chunks of 8 values, then the tail.
#[inline(always)]
fn dot(q: &[f32], k: &[f32]) -> f32 {
    let (qc, qt) = q.as_chunks::<LANES>();
    let (kc, kt) = k.as_chunks::<LANES>();
    let a = lane_sums(qc, kc);
    let mut tail = 0.0f32;
    for (x, y) in qt.iter().zip(kt) {
        tail += x * y;
    }
    let s4 = [a[0] + a[4], a[1] + a[5], a[2] + a[6], a[3] + a[7]];
    ((s4[0] + s4[2]) + (s4[1] + s4[3])) + tail
}

/// `a[i] = sum_c q[c][i] k[c][i]`, the 8 partial sums of [`dot`].
#[inline(always)]
fn lane_sums(qc: &[[f32; LANES]], kc: &[[f32; LANES]]) -> [f32; LANES] {
    let mut a = [0.0f32; LANES];
    for (qv, kv) in qc.iter().zip(kc) {
        for i in 0..LANES {
            a[i] += qv[i] * kv[i];
        }
    }
    a
}

/// `y[i] += sum_t p[t] v[t][i]` over one chunk of 4 values.
#[inline(always)]
fn axpy_chunk(y: &mut [f32; 4], p: &[f32; KB], v: [&[f32; 4]; KB]) {
    let mut a = *y;
    for (vt, &pt) in v.iter().zip(p) {
        for i in 0..4 {
            a[i] += pt * vt[i];
        }
    }
    *y = a;
}

/// `y *= a`.
#[inline(always)]
fn scale_slice(y: &mut [f32], a: f32) {
    for y in y.iter_mut() {
        *y *= a;
    }
}

/// One query row of one head: `acc = softmax(scale q . k_j) v_j` over the rows `k[j]`,
/// `v[j]`, `j < n` (row `j` of head `h` at `j * c + off`).
#[inline(always)]
fn row(
    qh: &[f32],
    (k, v): (&[f32], &[f32]),
    (c, off): (usize, usize),
    n: usize,
    scale: f32,
    acc: &mut [f32],
) {
    let hd = qh.len();
    acc.fill(0.0);
    let (mut m, mut l) = (f32::NEG_INFINITY, 0.0f32);
    let mut j = 0;
    while j < n {
        let nk = KB.min(n - j);
        // Rows past the block's last key repeat it (their probability is 0).
        let krow: [&[f32]; KB] =
            core::array::from_fn(|t| &k[(j + t.min(nk - 1)) * c + off..][..hd]);
        let vrow: [&[f32]; KB] =
            core::array::from_fn(|t| &v[(j + t.min(nk - 1)) * c + off..][..hd]);
        let mut s = [f32::NEG_INFINITY; KB];
        for (t, st) in s[..nk].iter_mut().enumerate() {
            *st = dot(qh, krow[t]) * scale;
        }
        let mb = s.iter().fold(f32::NEG_INFINITY, |a, &b| if b > a { b } else { a });
        if mb > m {
            if m > f32::NEG_INFINITY {
                let alpha = scalar::exp(m - mb);
                scale_slice(acc, alpha);
                l *= alpha;
            }
            m = mb;
        }
        let mut p = [0.0f32; KB];
        for (pt, &st) in p.iter_mut().zip(&s) {
            *pt = scalar::exp(st - m);
        }
        let p4 = [p[0] + p[4], p[1] + p[5], p[2] + p[6], p[3] + p[7]];
        l += (p4[0] + p4[2]) + (p4[1] + p4[3]);
        // acc += sum_t p[t] v_t, 4 values of acc at a time (loaded and stored once per block).
        let (ac, at) = acc.as_chunks_mut::<4>();
        let nc = ac.len();
        let vc: [&[[f32; 4]]; KB] = vrow.map(|vt| &vt.as_chunks::<4>().0[..nc]);
        for (ci, a) in ac.iter_mut().enumerate() {
            axpy_chunk(a, &p, core::array::from_fn(|t| &vc[t][ci]));
        }
        for (dd, y) in at.iter_mut().enumerate() {
            for (vt, &pt) in vrow.iter().zip(&p) {
                *y += pt * vt[nc * 4 + dd];
            }
        }
        j += nk;
    }
    scale_slice(acc, 1.0 / l);
}

/// Every query row of the heads `heads`, into the block `out` of their values, over a
/// geometry the entry point accepted.
pub(super) fn attention(
    q: &[f32],
    (k, v): (&[f32], &[f32]),
    mut out: StridedMut<'_>,
    g: AttentionGeometry,
    heads: Range<usize>,
) {
    let (c, head_dim) = (g.channels(), g.head_dim);
    for (i, qrow) in q.chunks_exact(c).enumerate() {
        let n = g.visible(i);
        let qrow = &qrow[heads.start * head_dim..heads.end * head_dim];
        for (h, (qh, acc)) in heads
            .clone()
            .zip(qrow.chunks_exact(head_dim).zip(out.row(i).chunks_exact_mut(head_dim)))
        {
            row(qh, (k, v), (c, h * head_dim), n, g.scale, acc);
        }
    }
}
