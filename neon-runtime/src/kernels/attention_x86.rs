//! x86-64 fast paths of the portable backend's attention: AVX-512F (16 lanes) and AVX2 +
//! FMA (8 lanes) kernels. The level is the GEMM's ([`detected`]): the same run-time
//! (feature `std`) or build-time detection; [`Level::Baseline`] runs the plain-Rust kernel
//! of [`super`]. [`attention`] runs one level explicitly (tests and benchmarks compare
//! them).
//!
//! Both levels run the same algorithm (one body, instantiated per level by a macro over
//! a handful of primitives), the online softmax of [`super`] with `L` lanes (16 or 8):
//!
//! - **Several queries: one query per lane.** A block of `L` query rows of one head is
//!   transposed once into a `[head_dim, L]` tile on the stack (scaled by `scale`), so one
//!   vector load gives value `d` of the `L` queries. Per block of 8 keys, the scores of
//!   the `L` queries with key `t` are `sum_d qT[d] * k_t[d]`: one vector accumulator per
//!   key, one fused multiply-add per value with `k_t[d]` broadcast from the frame-major
//!   key row (AVX-512: an embedded broadcast operand). The block's maximum is a vertical
//!   `max` of the 8 score vectors, its probabilities 8 vector exponentials, and when the
//!   maximum of some lanes grows only those lanes are rescaled (the factor is exactly 1
//!   in the others). The output accumulates in a transposed `[head_dim, L]` tile,
//!   `oT[d] += p_t * v_t[d]` (the probabilities as vectors over the queries, `v_t[d]`
//!   broadcast; even and odd keys in two sums), each tile row loaded and stored once per
//!   block; at the end it is divided by the running sums and transposed into the output
//!   rows. Transposing the queries once per block of queries (rather than the keys once
//!   per block of keys and queries) makes every key and value access a broadcast straight
//!   from the frame-major rows, for any `head_dim` (no tail). Rows of the last block past
//!   `q_frames` repeat its last query and are not stored. Used for 5 rows (`MIN_ROWS`) or
//!   more and `head_dim <= 128` (the two tiles: 16 KiB at AVX-512).
//! - **One query (a decoder step; fewer than 5 rows; `head_dim > 128`): one key
//!   per lane**, in chunks of up to 256 keys, each in four loops that wait for nothing
//!   but the previous loop: (1) per block of `L` keys, `L` accumulators of `q * k_t` over
//!   `head_dim` in `L`-value chunks (the last one under a lane mask: Moonshine's 52 = 3 x
//!   16 + 4), reduced to one vector of `L` scores by a transposing add tree (AVX-512:
//!   `vunpck{l,h}ps`, `vunpck{l,h}pd`, two rounds of `vshuff64x2`; AVX2: `vhaddps`,
//!   `vperm2f128`) and stored in a buffer on the stack; (2) their maximum (the output row
//!   is rescaled when it grows); (3) the exponentials, in place; (4) the output row
//!   accumulated over the chunk's keys, up to 64 values (AVX2: 32) in registers at a
//!   time, each probability broadcast from the buffer, even and odd keys in two sums.
//!   Block by block (maximum, exponentials and accumulation per 16 keys, the output row
//!   loaded and stored per block) the chain from scores to output made it 20-25% slower.
//!
//! Keys past a row's visible count (causal, or past `len` in the last block) get the
//! score `-inf` (probability exactly 0) and read the last visible row, so rows past `len`
//! are never touched, as in the other kernels.
//!
//! The exponential is the runtime's ([`super::super::activation`]: the same reduction,
//! polynomial and constants, in fused multiply-adds as in the NEON form).
//!
//! # Accuracy
//!
//! Within the bound of [`super`]: each score is a sum of `head_dim` products of `q_d
//! scale` (rounded) and `k_d`, in some order (`gamma_(head_dim + 1)` covers the scaling);
//! the sums of `p_j v_j` and of `p_j` are f32 sums of the `n` terms in some order, with at
//! most one rescaling per block of keys.
//!
//! # Measured
//!
//! See the module documentation of [`super`].

// Accumulator arrays are indexed by constant loop counters on purpose: fully unrolled,
// every element stays in its own register.
#![allow(clippy::needless_range_loop)]

use super::{check, portable_attention, visible};
use crate::kernels::activation::consts::*;
use crate::kernels::activation::scalar;
use crate::kernels::gemm::x86::{detected, Level};
use core::arch::x86_64::*;
use core::array::from_fn;
use core::mem::MaybeUninit;

/// Largest `head_dim` of the multi-query kernel (its two tiles hold `HD_MAX` rows).
const HD_MAX: usize = 128;

/// Keys per block of the multi-query kernel (its score accumulators; a power of 2). 16 on
/// AVX-512 ran as fast in cache and 25% slower streaming the keys from the last-level
/// cache (16 rows in flight).
const KB: usize = 8;

/// Fewest query rows for which a (padded) block of the multi-query kernel is used; fewer
/// go through the single-query kernel. Measured at both levels on 8 heads x 52: a block
/// costs about as much as 5 single rows with the keys in cache (100 keys), 3.6 to 3.8
/// streaming them from the last-level cache (400 keys).
const MIN_ROWS: usize = 5;

/// Keys per chunk of the single-query kernel (its scores on the stack: 1 KiB); a multiple
/// of both levels' lanes.
const KC: usize = 256;

/// The geometry every block shares (after `check`).
#[derive(Clone, Copy)]
struct Geo {
    c: usize,
    hd: usize,
    len: usize,
    q_frames: usize,
    scale: f32,
    causal: bool,
}

/// The kernel's slices as pointers (lengths checked by `check`).
#[derive(Clone, Copy)]
struct Ptrs {
    q: *const f32,
    k: *const f32,
    v: *const f32,
    out: *mut f32,
}

/// [`AttentionKernels::attention`](super::AttentionKernels::attention) at `level`.
///
/// # Safety
/// The CPU must implement `level`'s extensions (check [`Level::supported`] or
/// `is_x86_feature_detected!`).
///
/// # Panics
/// As [`AttentionKernels::attention`](super::AttentionKernels::attention).
#[allow(clippy::too_many_arguments)]
pub unsafe fn attention(
    level: Level,
    q: &[f32],
    k: &[f32],
    v: &[f32],
    out: &mut [f32],
    q_frames: usize,
    len: usize,
    heads: usize,
    head_dim: usize,
    scale: f32,
    causal: bool,
) {
    let lens = (q.len(), k.len(), v.len(), out.len());
    let c = check(lens, q_frames, len, heads, head_dim, causal);
    // SAFETY: the geometry was checked above; the caller guarantees the extensions.
    unsafe { attention_at(level, q, (k, v), out, (q_frames, len, causal), (c, head_dim), scale) }
}

/// The portable kernel at the [`detected`] level (geometry checked by the caller).
pub(super) fn attention_detected(
    q: &[f32],
    kv: (&[f32], &[f32]),
    out: &mut [f32],
    rows: (usize, usize, bool),
    dims: (usize, usize),
    scale: f32,
) {
    // SAFETY: `detected()` only returns a level whose extensions the CPU (or the build's
    // target) has; the geometry was checked by the caller.
    unsafe { attention_at(detected(), q, kv, out, rows, dims, scale) }
}

/// The kernel of `level` over a checked geometry.
///
/// # Safety
/// `check` accepted the geometry and returned `c`; the CPU implements `level`.
unsafe fn attention_at(
    level: Level,
    q: &[f32],
    (k, v): (&[f32], &[f32]),
    out: &mut [f32],
    (q_frames, len, causal): (usize, usize, bool),
    (c, hd): (usize, usize),
    scale: f32,
) {
    let g = Geo { c, hd, len, q_frames, scale, causal };
    let p = Ptrs { q: q.as_ptr(), k: k.as_ptr(), v: v.as_ptr(), out: out.as_mut_ptr() };
    // SAFETY: forwarded contract: `check` established the slice lengths (`q`, `out`:
    // `q_frames * c`, `k`, `v`: at least `len * c`), `out` is a unique borrow, the CPU
    // implements `level`.
    unsafe {
        match level {
            Level::Baseline => {
                portable_attention(q, (k, v), out, (q_frames, len, causal), (c, hd), scale)
            }
            Level::Avx2 => avx2::attention(p, g),
            Level::Avx512 => avx512::attention(p, g),
        }
    }
}

/// The level-independent drivers, expanded in each level's module over its primitives
/// (`V`, `LANES`, `Lim`, `splat`, `load`, `fma`, `exp`, `hsum_rows`, ...).
macro_rules! kernels {
    ($feat:literal) => {
        /// A `[head_dim, LANES]` tile (one vector per value `d`); rows `0..head_dim` used.
        #[repr(C, align(64))]
        struct Tile([[f32; LANES]; HD_MAX]);

        /// `f` over the `KB` vectors as a balanced tree.
        #[inline]
        #[target_feature(enable = $feat)]
        fn tree(x: [V; KB], f: impl Fn(V, V) -> V) -> V {
            let mut x = x;
            let mut n = KB;
            while n > 1 {
                n /= 2;
                for i in 0..n {
                    x[i] = f(x[i], x[i + n]);
                }
            }
            x[0]
        }

        /// The scores, then probabilities, of a chunk of keys of the single-query kernel.
        #[repr(C, align(64))]
        struct Scores([f32; KC]);

        /// The whole kernel: per head, blocks of `LANES` queries, then single queries.
        ///
        /// # Safety
        /// `p` and `g` describe a geometry accepted by `check`; `out` is not aliased; the
        /// CPU implements this level.
        #[target_feature(enable = $feat)]
        pub(super) unsafe fn attention(p: Ptrs, g: Geo) {
            let heads = g.c / g.hd;
            // Key indices are compared as i32 in the multi-query kernel.
            let blocks = g.hd <= HD_MAX && g.len < 1 << 30;
            for h in 0..heads {
                let mut i = 0;
                while blocks && g.q_frames - i >= MIN_ROWS {
                    let nq = LANES.min(g.q_frames - i);
                    // SAFETY: `i + nq <= q_frames`, `h < heads`, `hd <= HD_MAX`, `len <
                    // 2^30`; the rest is the caller's contract.
                    unsafe { rows(p, g, i, nq, h) };
                    i += nq;
                }
                while i < g.q_frames {
                    // SAFETY: `i < q_frames`, `h < heads`; the caller's contract.
                    unsafe { row(p, g, i, h) };
                    i += 1;
                }
            }
        }

        /// Query rows `i0 .. i0 + nq` (`1 <= nq <= LANES`) of head `h`, one per lane.
        ///
        /// # Safety
        /// As [`attention`], with `i0 + nq <= q_frames`, `h < heads`, `hd <= HD_MAX` and
        /// `len < 2^30`.
        #[target_feature(enable = $feat)]
        unsafe fn rows(p: Ptrs, g: Geo, i0: usize, nq: usize, h: usize) {
            let (c, hd, off) = (g.c, g.hd, h * g.hd);
            let mut qt = MaybeUninit::<Tile>::uninit();
            let mut ot = MaybeUninit::<Tile>::uninit();
            let (qt, ot) =
                (qt.as_mut_ptr().cast::<[f32; LANES]>(), ot.as_mut_ptr().cast::<[f32; LANES]>());
            // Lane r: query row i0 + min(r, nq - 1), its visible keys.
            let limit: [i32; LANES] =
                from_fn(|r| visible(i0 + r.min(nq - 1), g.q_frames, g.len, g.causal) as i32);
            // SAFETY (whole body): query and output rows are `< i0 + nq <= q_frames`, key
            // and value rows `< kmax <= len` (full blocks end at `full <= kmin`, the rest
            // is clamped to `kmax - 1`), every row read at `off .. off + hd <= c`; the
            // tiles are written at rows `d < hd <= HD_MAX` before they are read.
            unsafe {
                for r in 0..LANES {
                    let qr = p.q.add((i0 + r.min(nq - 1)) * c + off);
                    for d in 0..hd {
                        (*qt.add(d))[r] = *qr.add(d) * g.scale;
                    }
                }
                for d in 0..hd {
                    *ot.add(d) = [0.0; LANES];
                }
                let (kmin, kmax) = (limit[0] as usize, limit[nq - 1] as usize);
                let lim = limits(&limit);
                let mut m = splat(f32::NEG_INFINITY);
                let mut l = zero();
                // Blocks every lane sees entirely: no masking.
                let full = kmin / KB * KB;
                let mut j = 0;
                while j < full {
                    let kp: [*const f32; KB] = from_fn(|t| p.k.add((j + t) * c + off));
                    let vp: [*const f32; KB] = from_fn(|t| p.v.add((j + t) * c + off));
                    block::<false>((qt, ot), (kp, vp), hd, (&mut m, &mut l), lim, j);
                    j += KB;
                }
                // The rest: masked, keys clamped to `kmax - 1`.
                while j < kmax {
                    let kp: [*const f32; KB] =
                        from_fn(|t| p.k.add((j + t).min(kmax - 1) * c + off));
                    let vp: [*const f32; KB] =
                        from_fn(|t| p.v.add((j + t).min(kmax - 1) * c + off));
                    block::<true>((qt, ot), (kp, vp), hd, (&mut m, &mut l), lim, j);
                    j += KB;
                }
                let inv = div(splat(1.0), l);
                for d in 0..hd {
                    let o = to_array(mul(load(ot.add(d).cast()), inv));
                    for r in 0..nq {
                        *p.out.add((i0 + r) * c + off + d) = o[r];
                    }
                }
            }
        }

        /// One block of [`KB`] keys for a block of queries: scores from the query tile,
        /// running maximum and sum, accumulation into the output tile. With `MASK`, key
        /// `j + t` counts in lane `r` only when `j + t < lim[r]`.
        ///
        /// # Safety
        /// `qt` and `ot` point at tiles with `hd` valid rows, every `kp[t]` and `vp[t]`
        /// at `hd` readable values.
        #[inline]
        #[target_feature(enable = $feat)]
        unsafe fn block<const MASK: bool>(
            (qt, ot): (*const [f32; LANES], *mut [f32; LANES]),
            (kp, vp): ([*const f32; KB], [*const f32; KB]),
            hd: usize,
            (m, l): (&mut V, &mut V),
            lim: Lim,
            j: usize,
        ) {
            // SAFETY (whole body): every access is row `d < hd` of a tile or value `d <
            // hd` of a key or value row (contract).
            unsafe {
                let mut s = [zero(); KB];
                for d in 0..hd {
                    let qv = load(qt.add(d).cast());
                    for t in 0..KB {
                        s[t] = fma(qv, bcast(kp[t].add(d)), s[t]);
                    }
                }
                if MASK {
                    for t in 0..KB {
                        s[t] = mask_keys(s[t], lim, (j + t) as i32);
                    }
                }
                let mb = tree(s, |a, b| max(a, b));
                // `max` returns its second operand on NaN: `m` never becomes NaN (a NaN
                // score still makes its probability NaN below).
                let mnew = max(mb, *m);
                let alpha = rescale(*m, mnew);
                *m = mnew;
                let pr: [V; KB] = from_fn(|t| exp(sub(s[t], mnew)));
                let ps = tree(pr, |a, b| add(a, b));
                match alpha {
                    None => {
                        *l = add(*l, ps);
                        accumulate::<false>(ot, vp, &pr, hd, zero());
                    }
                    Some(a) => {
                        *l = fma(*l, a, ps);
                        accumulate::<true>(ot, vp, &pr, hd, a);
                    }
                }
            }
        }

        /// `oT[d] = oT[d] (* alpha with RESCALE) + sum_t pr[t] v_t[d]` for `d < hd`.
        ///
        /// # Safety
        /// As [`block`].
        #[inline]
        #[target_feature(enable = $feat)]
        unsafe fn accumulate<const RESCALE: bool>(
            ot: *mut [f32; LANES],
            vp: [*const f32; KB],
            pr: &[V; KB],
            hd: usize,
            alpha: V,
        ) {
            // SAFETY: rows `d < hd` of the tile and values `d < hd` of the value rows.
            unsafe {
                for d in 0..hd {
                    let row = ot.add(d).cast::<f32>();
                    let mut o = load(row);
                    if RESCALE {
                        o = mul(o, alpha);
                    }
                    // Even and odd keys in two sums (half the dependency chain).
                    let mut o1 = zero();
                    for t in (0..KB).step_by(2) {
                        o = fma(pr[t], bcast(vp[t].add(d)), o);
                        o1 = fma(pr[t + 1], bcast(vp[t + 1].add(d)), o1);
                    }
                    store(row, add(o, o1));
                }
            }
        }

        /// Query row `i` of head `h` alone, in chunks of up to [`KC`] keys: the chunk's
        /// scores (blocks of `LANES` keys, one per lane) into a buffer on the stack, their
        /// maximum (the output row rescaled when it grows), their exponentials in place,
        /// then the output row accumulated over the chunk's keys. The values are taken in
        /// groups of up to 4 chunks of `LANES` (the row's last chunk partial, under a lane
        /// mask), each group a pass over the keys with one pointer stepping from row to
        /// row. Every step is a loop of independent blocks: nothing waits for the
        /// previous block's maximum or output.
        ///
        /// # Safety
        /// As [`attention`], with `i < q_frames` and `h < heads`.
        #[target_feature(enable = $feat)]
        unsafe fn row(p: Ptrs, g: Geo, i: usize, h: usize) {
            let (c, hd, off) = (g.c, g.hd, h * g.hd);
            let n = visible(i, g.q_frames, g.len, g.causal);
            let chunks = hd.div_ceil(LANES);
            // Values in the last chunk (1..=LANES).
            let last = hd - (chunks - 1) * LANES;
            let sc = splat(g.scale);
            let mut buf = MaybeUninit::<Scores>::uninit();
            let sp = buf.as_mut_ptr().cast::<f32>();
            // SAFETY (whole body): the query and output rows are row `i < q_frames`, key and
            // value rows `< n <= len` (the score pointers stop at the block's last visible
            // key, the value loop at the chunk's last key), each read at `off + ch *
            // LANES ..` for whole chunks or the `last` values of the last one, all inside
            // `off .. off + hd <= c`; the buffer is written at `0 .. nc.next_multiple_of
            // (LANES) <= KC` and read below `nc`.
            unsafe {
                let (qp, op) = (p.q.add(i * c + off), p.out.add(i * c + off));
                for d in 0..hd {
                    *op.add(d) = 0.0;
                }
                let mut m = f32::NEG_INFINITY;
                let mut l = zero();
                let mut j0 = 0;
                while j0 < n {
                    let nc = KC.min(n - j0);
                    let (kc, vc) = (p.k.add(j0 * c + off), p.v.add(j0 * c + off));
                    // Scores.
                    let mut j = 0;
                    while j < nc {
                        let nk = LANES.min(nc - j);
                        let kb = kc.add(j * c);
                        let mut acc = [zero(); LANES];
                        let mut ch = 0;
                        while ch < chunks {
                            let g4 = (chunks - ch).min(4);
                            let tail = if ch + g4 == chunks { last } else { LANES };
                            let (q, k) = (qp.add(ch * LANES), kb.add(ch * LANES));
                            match g4 {
                                4 => dots::<4>(&mut acc, q, k, (c, nk), tail, sc),
                                3 => dots::<3>(&mut acc, q, k, (c, nk), tail, sc),
                                2 => dots::<2>(&mut acc, q, k, (c, nk), tail, sc),
                                _ => dots::<1>(&mut acc, q, k, (c, nk), tail, sc),
                            }
                            ch += g4;
                        }
                        let s = hsum_rows(&acc);
                        store(sp.add(j), if nk < LANES { mask_first(s, nk) } else { s });
                        j += LANES;
                    }
                    // Maximum.
                    let mut mv = splat(f32::NEG_INFINITY);
                    for j in (0..nc).step_by(LANES) {
                        mv = max(load(sp.add(j)), mv);
                    }
                    let mb = hmax(mv);
                    if mb > m {
                        l = mul(l, splat(raise_max(op, hd, m, mb)));
                        m = mb;
                    }
                    // Probabilities.
                    let mm = splat(m);
                    for j in (0..nc).step_by(LANES) {
                        let pv = exp(sub(load(sp.add(j)), mm));
                        store(sp.add(j), pv);
                        l = add(l, pv);
                    }
                    // Output.
                    let mut ch = 0;
                    while ch < chunks {
                        let g4 = (chunks - ch).min(4);
                        let tail = if ch + g4 == chunks { last } else { LANES };
                        let (o, v) = (op.add(ch * LANES), vc.add(ch * LANES));
                        match g4 {
                            4 => weigh::<4>(o, v, (c, nc), tail, sp),
                            3 => weigh::<3>(o, v, (c, nc), tail, sp),
                            2 => weigh::<2>(o, v, (c, nc), tail, sp),
                            _ => weigh::<1>(o, v, (c, nc), tail, sp),
                        }
                        ch += g4;
                    }
                    j0 += nc;
                }
                scale_row(op, hd, 1.0 / hsum(l));
            }
        }

        /// `acc[t] += sum_ch (q_ch * scale) * k_t,ch` over `NCH` chunks of `LANES` values
        /// (the last one holding `tail` values, `1..=LANES`) for the `LANES` key rows from
        /// `k` on (stride `c`; rows `t >= nk` repeat row `nk - 1`).
        ///
        /// # Safety
        /// `q` readable for the chunks' values, and so is each of the `nk` rows from `k`.
        #[inline]
        #[target_feature(enable = $feat)]
        unsafe fn dots<const NCH: usize>(
            acc: &mut [V; LANES],
            q: *const f32,
            k: *const f32,
            (c, nk): (usize, usize),
            tail: usize,
            sc: V,
        ) {
            // SAFETY: chunk `ch < NCH - 1` is whole, the last one reads `tail` values; the
            // row pointer advances only while `t + 1 < nk`.
            unsafe {
                let qv: [V; NCH] = from_fn(|ch| {
                    let at = q.add(ch * LANES);
                    mul(if ch + 1 < NCH { load(at) } else { load_n(at, tail) }, sc)
                });
                let mut kt = k;
                for t in 0..LANES {
                    for ch in 0..NCH {
                        let at = kt.add(ch * LANES);
                        let kv = if ch + 1 < NCH { load(at) } else { load_n(at, tail) };
                        acc[t] = fma(qv[ch], kv, acc[t]);
                    }
                    kt = kt.add(if t + 1 < nk { c } else { 0 });
                }
            }
        }

        /// `o += sum_t pr[t] v_t` over `NCH` chunks of `LANES` values (the last one
        /// holding `tail` values) for the `nc` value rows from `v` on (stride `c`): even
        /// and odd keys in two partial sums.
        ///
        /// # Safety
        /// `o` writable for the chunks' values and not aliased, each of the `nc` rows from
        /// `v` readable for them, `pr` for `nc` values.
        #[inline]
        #[target_feature(enable = $feat)]
        unsafe fn weigh<const NCH: usize>(
            o: *mut f32,
            v: *const f32,
            (c, nc): (usize, usize),
            tail: usize,
            pr: *const f32,
        ) {
            // SAFETY: chunk `ch < NCH - 1` is whole, the last one holds `tail` values; rows
            // `t < nc`.
            unsafe {
                let ld = |at: *const f32, ch: usize| {
                    if ch + 1 < NCH {
                        load(at)
                    } else {
                        load_n(at, tail)
                    }
                };
                let mut a: [V; NCH] = from_fn(|ch| ld(o.add(ch * LANES), ch));
                let mut b = [zero(); NCH];
                let mut vt = v;
                let mut t = 0;
                while t + 2 <= nc {
                    let (p0, p1) = (bcast(pr.add(t)), bcast(pr.add(t + 1)));
                    for ch in 0..NCH {
                        a[ch] = fma(p0, ld(vt.add(ch * LANES), ch), a[ch]);
                        b[ch] = fma(p1, ld(vt.add(c + ch * LANES), ch), b[ch]);
                    }
                    // Wrapping: past the last pair it may point past the slice (unread).
                    vt = vt.wrapping_add(2 * c);
                    t += 2;
                }
                if t < nc {
                    let p0 = bcast(pr.add(t));
                    for ch in 0..NCH {
                        a[ch] = fma(p0, ld(vt.add(ch * LANES), ch), a[ch]);
                    }
                }
                for ch in 0..NCH {
                    let x = add(a[ch], b[ch]);
                    if ch + 1 < NCH {
                        store(o.add(ch * LANES), x);
                    } else {
                        store_n(o.add(ch * LANES), x, tail);
                    }
                }
            }
        }
    };
}

/// `o[..hd] *= a`.
///
/// # Safety
/// `o` points at `hd` writable f32 values not aliased by anything else in use.
#[inline]
unsafe fn scale_row(o: *mut f32, hd: usize, a: f32) {
    for d in 0..hd {
        // SAFETY: `d < hd` (contract).
        unsafe { *o.add(d) *= a };
    }
}

/// The running maximum of a single row grows from `m` to `mb`: rescales the output row
/// (nothing to rescale while `m = -inf`, before the first key) and returns the factor
/// `exp(m - mb)` for the running sum. Rare after the first blocks, hence out of line.
///
/// # Safety
/// As [`scale_row`].
#[cold]
#[inline(never)]
unsafe fn raise_max(o: *mut f32, hd: usize, m: f32, mb: f32) -> f32 {
    if m == f32::NEG_INFINITY {
        return 0.0;
    }
    let alpha = scalar::exp(m - mb);
    // SAFETY: forwarded from the caller.
    unsafe { scale_row(o, hd, alpha) };
    alpha
}

// ------------------------------------------------------------------------------------
// AVX-512F
// ------------------------------------------------------------------------------------

/// The AVX-512F kernels: 16 lanes.
mod avx512 {
    use super::*;

    type V = __m512;
    /// Visible-key counts of the lanes (`i32`).
    type Lim = __m512i;
    const LANES: usize = 16;

    kernels!("avx512f");

    #[inline]
    #[target_feature(enable = "avx512f")]
    fn splat(x: f32) -> V {
        _mm512_set1_ps(x)
    }
    #[inline]
    #[target_feature(enable = "avx512f")]
    fn zero() -> V {
        _mm512_setzero_ps()
    }
    #[inline]
    #[target_feature(enable = "avx512f")]
    fn add(a: V, b: V) -> V {
        _mm512_add_ps(a, b)
    }
    #[inline]
    #[target_feature(enable = "avx512f")]
    fn sub(a: V, b: V) -> V {
        _mm512_sub_ps(a, b)
    }
    #[inline]
    #[target_feature(enable = "avx512f")]
    fn mul(a: V, b: V) -> V {
        _mm512_mul_ps(a, b)
    }
    #[inline]
    #[target_feature(enable = "avx512f")]
    fn div(a: V, b: V) -> V {
        _mm512_div_ps(a, b)
    }
    /// `a * b + c`, fused.
    #[inline]
    #[target_feature(enable = "avx512f")]
    fn fma(a: V, b: V, c: V) -> V {
        _mm512_fmadd_ps(a, b, c)
    }
    /// `vmaxps`: `b` when either is NaN.
    #[inline]
    #[target_feature(enable = "avx512f")]
    fn max(a: V, b: V) -> V {
        _mm512_max_ps(a, b)
    }
    /// # Safety
    /// `p` readable for 16 values.
    #[inline]
    #[target_feature(enable = "avx512f")]
    unsafe fn load(p: *const f32) -> V {
        // SAFETY: contract.
        unsafe { _mm512_loadu_ps(p) }
    }
    /// The first `n` (`<= 16`) values at `p`, zeros after (masked: nothing else is read).
    ///
    /// # Safety
    /// `p` readable for `n` values.
    #[inline]
    #[target_feature(enable = "avx512f")]
    unsafe fn load_n(p: *const f32, n: usize) -> V {
        // SAFETY: contract; masked-off lanes are not accessed.
        unsafe { _mm512_maskz_loadu_ps(first(n), p) }
    }
    /// # Safety
    /// `p` writable for 16 values.
    #[inline]
    #[target_feature(enable = "avx512f")]
    unsafe fn store(p: *mut f32, x: V) {
        // SAFETY: contract.
        unsafe { _mm512_storeu_ps(p, x) }
    }
    /// The first `n` (`<= 16`) lanes of `x` to `p` (masked: nothing else is written).
    ///
    /// # Safety
    /// `p` writable for `n` values.
    #[inline]
    #[target_feature(enable = "avx512f")]
    unsafe fn store_n(p: *mut f32, x: V, n: usize) {
        // SAFETY: contract; masked-off lanes are not accessed.
        unsafe { _mm512_mask_storeu_ps(p, first(n), x) }
    }
    /// `*p` in every lane.
    ///
    /// # Safety
    /// `p` readable.
    #[inline]
    #[target_feature(enable = "avx512f")]
    unsafe fn bcast(p: *const f32) -> V {
        // SAFETY: contract.
        _mm512_set1_ps(unsafe { *p })
    }
    #[inline]
    #[target_feature(enable = "avx512f")]
    fn to_array(x: V) -> [f32; LANES] {
        let mut a = [0.0; LANES];
        // SAFETY: 16 values into a 16-value array.
        unsafe { _mm512_storeu_ps(a.as_mut_ptr(), x) };
        a
    }
    /// Mask of the first `n` (`<= 16`) lanes.
    #[inline]
    #[target_feature(enable = "avx512f")]
    fn first(n: usize) -> __mmask16 {
        ((1u32 << n) - 1) as __mmask16
    }

    /// # Safety
    /// None beyond the level (reads a 16-value array).
    #[inline]
    #[target_feature(enable = "avx512f")]
    unsafe fn limits(l: &[i32; LANES]) -> Lim {
        // SAFETY: 16 values.
        unsafe { _mm512_loadu_si512(l.as_ptr().cast()) }
    }
    /// Lane `r` of `s` where `j < lim[r]`, `-inf` elsewhere.
    #[inline]
    #[target_feature(enable = "avx512f")]
    fn mask_keys(s: V, lim: Lim, j: i32) -> V {
        let keep = _mm512_cmpgt_epi32_mask(lim, _mm512_set1_epi32(j));
        _mm512_mask_mov_ps(splat(f32::NEG_INFINITY), keep, s)
    }
    /// The first `n` lanes of `s`, `-inf` after them.
    #[inline]
    #[target_feature(enable = "avx512f")]
    fn mask_first(s: V, n: usize) -> V {
        _mm512_mask_mov_ps(splat(f32::NEG_INFINITY), first(n), s)
    }
    /// `None` when no lane's maximum grew from `m` to `mnew`, else the factors
    /// `exp(m - mnew)` of the lanes that grew and `1` for the others.
    #[inline]
    #[target_feature(enable = "avx512f")]
    fn rescale(m: V, mnew: V) -> Option<V> {
        let grew = _mm512_cmp_ps_mask::<_CMP_GT_OQ>(mnew, m);
        if grew == 0 {
            return None;
        }
        Some(_mm512_mask_mov_ps(splat(1.0), grew, exp(sub(m, mnew))))
    }
    /// The maximum lane (tree of `vmaxps`).
    #[inline]
    #[target_feature(enable = "avx512f")]
    fn hmax(x: V) -> f32 {
        _mm512_reduce_max_ps(x)
    }
    /// The sum of the lanes.
    #[inline]
    #[target_feature(enable = "avx512f")]
    fn hsum(x: V) -> f32 {
        _mm512_reduce_add_ps(x)
    }

    /// Lane `t` of the result: the sum of the lanes of `a[t]` (a transposing add tree).
    #[inline]
    #[target_feature(enable = "avx512f")]
    fn hsum_rows(a: &[V; LANES]) -> V {
        // Pairs: per 128-bit lane [a0 + a2, b0 + b2, a1 + a3, b1 + b3].
        let pair = |x: V, y: V| _mm512_add_ps(_mm512_unpacklo_ps(x, y), _mm512_unpackhi_ps(x, y));
        let p: [V; 8] = from_fn(|i| pair(a[2 * i], a[2 * i + 1]));
        // Quads: per 128-bit lane the partial sums of 4 rows, in row order.
        let quad = |x: V, y: V| {
            let (xd, yd) = (_mm512_castps_pd(x), _mm512_castps_pd(y));
            _mm512_add_ps(
                _mm512_castpd_ps(_mm512_unpacklo_pd(xd, yd)),
                _mm512_castpd_ps(_mm512_unpackhi_pd(xd, yd)),
            )
        };
        let q: [V; 4] = from_fn(|i| quad(p[2 * i], p[2 * i + 1]));
        // 128-bit lanes: [x.0 + x.1, x.2 + x.3, y.0 + y.1, y.2 + y.3].
        let lanes = |x: V, y: V| {
            _mm512_add_ps(
                _mm512_shuffle_f32x4::<0b10_00_10_00>(x, y),
                _mm512_shuffle_f32x4::<0b11_01_11_01>(x, y),
            )
        };
        let (w0, w1) = (lanes(q[0], q[1]), lanes(q[2], q[3]));
        lanes(w0, w1)
    }

    /// `exp(x)`: [`scalar::exp`]'s reduction, polynomial and special cases, fused.
    #[inline]
    #[target_feature(enable = "avx512f")]
    fn exp(x: V) -> V {
        let magic = splat(ROUND_MAGIC);
        let v = _mm512_fmadd_ps(x, splat(LOG2E), magic);
        let n = _mm512_sub_ps(v, magic);
        let r = _mm512_fnmadd_ps(n, splat(LN2_HI), x);
        let r = _mm512_fnmadd_ps(n, splat(LN2_LO), r);
        let mut p = splat(EXPM1_P[4]);
        p = _mm512_fmadd_ps(p, r, splat(EXPM1_P[3]));
        p = _mm512_fmadd_ps(p, r, splat(EXPM1_P[2]));
        p = _mm512_fmadd_ps(p, r, splat(EXPM1_P[1]));
        p = _mm512_fmadd_ps(p, r, splat(EXPM1_P[0]));
        let e = _mm512_fmadd_ps(_mm512_mul_ps(r, r), p, r);
        let q = _mm512_add_ps(e, splat(1.0));
        // q * 2^n by adding n to the exponent field (n << 23 == bits(v) << 23).
        let y = _mm512_castsi512_ps(_mm512_add_epi32(
            _mm512_castps_si512(q),
            _mm512_slli_epi32::<23>(_mm512_castps_si512(v)),
        ));
        let y = _mm512_mask_mov_ps(y, _mm512_cmp_ps_mask::<_CMP_LT_OQ>(x, splat(EXP_LO)), zero());
        // NaN and x > EXP_HI both fail `x <= EXP_HI`: x + inf is +inf or NaN.
        let big = _mm512_add_ps(x, splat(f32::INFINITY));
        _mm512_mask_mov_ps(big, _mm512_cmp_ps_mask::<_CMP_LE_OQ>(x, splat(EXP_HI)), y)
    }
}

// ------------------------------------------------------------------------------------
// AVX2 + FMA
// ------------------------------------------------------------------------------------

/// The AVX2 + FMA kernels: 8 lanes.
mod avx2 {
    use super::*;

    type V = __m256;
    /// Visible-key counts of the lanes (`i32`).
    type Lim = __m256i;
    const LANES: usize = 8;

    kernels!("avx2,fma");

    #[inline]
    #[target_feature(enable = "avx2,fma")]
    fn splat(x: f32) -> V {
        _mm256_set1_ps(x)
    }
    #[inline]
    #[target_feature(enable = "avx2,fma")]
    fn zero() -> V {
        _mm256_setzero_ps()
    }
    #[inline]
    #[target_feature(enable = "avx2,fma")]
    fn add(a: V, b: V) -> V {
        _mm256_add_ps(a, b)
    }
    #[inline]
    #[target_feature(enable = "avx2,fma")]
    fn sub(a: V, b: V) -> V {
        _mm256_sub_ps(a, b)
    }
    #[inline]
    #[target_feature(enable = "avx2,fma")]
    fn mul(a: V, b: V) -> V {
        _mm256_mul_ps(a, b)
    }
    #[inline]
    #[target_feature(enable = "avx2,fma")]
    fn div(a: V, b: V) -> V {
        _mm256_div_ps(a, b)
    }
    /// `a * b + c`, fused.
    #[inline]
    #[target_feature(enable = "avx2,fma")]
    fn fma(a: V, b: V, c: V) -> V {
        _mm256_fmadd_ps(a, b, c)
    }
    /// `vmaxps`: `b` when either is NaN.
    #[inline]
    #[target_feature(enable = "avx2,fma")]
    fn max(a: V, b: V) -> V {
        _mm256_max_ps(a, b)
    }
    /// # Safety
    /// `p` readable for 8 values.
    #[inline]
    #[target_feature(enable = "avx2,fma")]
    unsafe fn load(p: *const f32) -> V {
        // SAFETY: contract.
        unsafe { _mm256_loadu_ps(p) }
    }
    /// Mask of the first `n` (`<= 8`) lanes, for `vmaskmovps`.
    #[inline]
    #[target_feature(enable = "avx2,fma")]
    fn first(n: usize) -> __m256i {
        _mm256_cmpgt_epi32(_mm256_set1_epi32(n as i32), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7))
    }
    /// The first `n` (`<= 8`) values at `p`, zeros after (masked: nothing else is read).
    ///
    /// # Safety
    /// `p` readable for `n` values.
    #[inline]
    #[target_feature(enable = "avx2,fma")]
    unsafe fn load_n(p: *const f32, n: usize) -> V {
        // SAFETY: contract; masked-off lanes are not accessed.
        unsafe { _mm256_maskload_ps(p, first(n)) }
    }
    /// # Safety
    /// `p` writable for 8 values.
    #[inline]
    #[target_feature(enable = "avx2,fma")]
    unsafe fn store(p: *mut f32, x: V) {
        // SAFETY: contract.
        unsafe { _mm256_storeu_ps(p, x) }
    }
    /// The first `n` (`<= 8`) lanes of `x` to `p` (below 8 through a stack copy:
    /// `vmaskmovps` stores are slow on some cores).
    ///
    /// # Safety
    /// `p` writable for `n` values.
    #[inline]
    #[target_feature(enable = "avx2,fma")]
    unsafe fn store_n(p: *mut f32, x: V, n: usize) {
        if n == LANES {
            // SAFETY: contract: 8 values.
            return unsafe { _mm256_storeu_ps(p, x) };
        }
        let a = to_array(x);
        // SAFETY: contract: `n` values.
        unsafe { core::ptr::copy_nonoverlapping(a.as_ptr(), p, n) }
    }
    /// `*p` in every lane.
    ///
    /// # Safety
    /// `p` readable.
    #[inline]
    #[target_feature(enable = "avx2,fma")]
    unsafe fn bcast(p: *const f32) -> V {
        // SAFETY: contract.
        unsafe { _mm256_broadcast_ss(&*p) }
    }
    #[inline]
    #[target_feature(enable = "avx2,fma")]
    fn to_array(x: V) -> [f32; LANES] {
        let mut a = [0.0; LANES];
        // SAFETY: 8 values into an 8-value array.
        unsafe { _mm256_storeu_ps(a.as_mut_ptr(), x) };
        a
    }

    /// # Safety
    /// None beyond the level (reads an 8-value array).
    #[inline]
    #[target_feature(enable = "avx2,fma")]
    unsafe fn limits(l: &[i32; LANES]) -> Lim {
        // SAFETY: 8 values.
        unsafe { _mm256_loadu_si256(l.as_ptr().cast()) }
    }
    /// Lane `r` of `s` where `j < lim[r]`, `-inf` elsewhere.
    #[inline]
    #[target_feature(enable = "avx2,fma")]
    fn mask_keys(s: V, lim: Lim, j: i32) -> V {
        let keep = _mm256_cmpgt_epi32(lim, _mm256_set1_epi32(j));
        _mm256_blendv_ps(splat(f32::NEG_INFINITY), s, _mm256_castsi256_ps(keep))
    }
    /// The first `n` lanes of `s`, `-inf` after them.
    #[inline]
    #[target_feature(enable = "avx2,fma")]
    fn mask_first(s: V, n: usize) -> V {
        _mm256_blendv_ps(splat(f32::NEG_INFINITY), s, _mm256_castsi256_ps(first(n)))
    }
    /// `None` when no lane's maximum grew from `m` to `mnew`, else the factors
    /// `exp(m - mnew)` of the lanes that grew and `1` for the others.
    #[inline]
    #[target_feature(enable = "avx2,fma")]
    fn rescale(m: V, mnew: V) -> Option<V> {
        let grew = _mm256_cmp_ps::<_CMP_GT_OQ>(mnew, m);
        if _mm256_movemask_ps(grew) == 0 {
            return None;
        }
        Some(_mm256_blendv_ps(splat(1.0), exp(sub(m, mnew)), grew))
    }
    /// The maximum lane.
    #[inline]
    #[target_feature(enable = "avx2,fma")]
    fn hmax(x: V) -> f32 {
        let h = _mm_max_ps(_mm256_castps256_ps128(x), _mm256_extractf128_ps::<1>(x));
        let h = _mm_max_ps(h, _mm_movehl_ps(h, h));
        _mm_cvtss_f32(_mm_max_ss(h, _mm_shuffle_ps::<1>(h, h)))
    }
    /// The sum of the lanes.
    #[inline]
    #[target_feature(enable = "avx2,fma")]
    fn hsum(x: V) -> f32 {
        let h = _mm_add_ps(_mm256_castps256_ps128(x), _mm256_extractf128_ps::<1>(x));
        let h = _mm_add_ps(h, _mm_movehl_ps(h, h));
        _mm_cvtss_f32(_mm_add_ss(h, _mm_shuffle_ps::<1>(h, h)))
    }

    /// Lane `t` of the result: the sum of the lanes of `a[t]` (`vhaddps` tree).
    #[inline]
    #[target_feature(enable = "avx2,fma")]
    fn hsum_rows(a: &[V; LANES]) -> V {
        let h: [V; 4] = from_fn(|i| _mm256_hadd_ps(a[2 * i], a[2 * i + 1]));
        // Per 128-bit half: the partial sums of rows 0..4 (lo) and 4..8 (hi).
        let (lo, hi) = (_mm256_hadd_ps(h[0], h[1]), _mm256_hadd_ps(h[2], h[3]));
        _mm256_add_ps(
            _mm256_permute2f128_ps::<0x20>(lo, hi),
            _mm256_permute2f128_ps::<0x31>(lo, hi),
        )
    }

    /// `exp(x)`: [`scalar::exp`]'s reduction, polynomial and special cases, fused.
    #[inline]
    #[target_feature(enable = "avx2,fma")]
    fn exp(x: V) -> V {
        let magic = splat(ROUND_MAGIC);
        let v = _mm256_fmadd_ps(x, splat(LOG2E), magic);
        let n = _mm256_sub_ps(v, magic);
        let r = _mm256_fnmadd_ps(n, splat(LN2_HI), x);
        let r = _mm256_fnmadd_ps(n, splat(LN2_LO), r);
        let mut p = splat(EXPM1_P[4]);
        p = _mm256_fmadd_ps(p, r, splat(EXPM1_P[3]));
        p = _mm256_fmadd_ps(p, r, splat(EXPM1_P[2]));
        p = _mm256_fmadd_ps(p, r, splat(EXPM1_P[1]));
        p = _mm256_fmadd_ps(p, r, splat(EXPM1_P[0]));
        let e = _mm256_fmadd_ps(_mm256_mul_ps(r, r), p, r);
        let q = _mm256_add_ps(e, splat(1.0));
        // q * 2^n by adding n to the exponent field (n << 23 == bits(v) << 23).
        let y = _mm256_castsi256_ps(_mm256_add_epi32(
            _mm256_castps_si256(q),
            _mm256_slli_epi32::<23>(_mm256_castps_si256(v)),
        ));
        let y = _mm256_blendv_ps(y, zero(), _mm256_cmp_ps::<_CMP_LT_OQ>(x, splat(EXP_LO)));
        // NaN and x > EXP_HI both fail `x <= EXP_HI`: x + inf is +inf or NaN.
        let big = _mm256_add_ps(x, splat(f32::INFINITY));
        _mm256_blendv_ps(big, y, _mm256_cmp_ps::<_CMP_LE_OQ>(x, splat(EXP_HI)))
    }
}
