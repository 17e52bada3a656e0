//! The multi-query kernel of both x86 levels: a block of `QV` vectors of `L` query rows
//! of one head, one query per lane, the queries and the output transposed into
//! `[head_dim, QV * L]` tiles on the stack, against blocks of `KB` keys (see the
//! [module docs](super)).

use super::super::AttentionGeometry;
use super::kernel::{exp, tree, Ptrs, Simd, Tree, HD_MAX};
use core::array::from_fn;
use core::mem::MaybeUninit;

/// A `[head_dim, QV * L]` tile (`QV` vectors per value `d`); rows `0..head_dim` used.
#[repr(C, align(64))]
struct Tile<const L: usize, const QV: usize>([[[f32; L]; QV]; HD_MAX]);

/// Query rows `i0 .. i0 + nq` (`1 <= nq <= QV * L`) of head `h`, one per lane: query
/// `i0 + r` in lane `r % L` of vector `r / L`.
///
/// Each lane's result depends on its own query only (the blocks of keys, and every sum's
/// order, are the same for any `QV` and any other lanes), so a block of fewer queries may
/// run with a smaller `QV` and give the same bits.
///
/// # Safety
/// As [`super::driver::attention`], with `i0 + nq <= q_frames`, `h < heads`, `hd <=
/// HD_MAX` and `len < 2^30`.
#[inline(always)]
pub(super) unsafe fn rows<const L: usize, const QV: usize, const KB: usize, S: Simd<L>>(
    s: S,
    p: Ptrs,
    g: AttentionGeometry,
    (i0, nq): (usize, usize),
    h: usize,
) {
    let (c, hd, off) = (g.channels(), g.head_dim, h * g.head_dim);
    let mut qt = MaybeUninit::<Tile<L, QV>>::uninit();
    let mut ot = MaybeUninit::<Tile<L, QV>>::uninit();
    let (qt, ot) = (qt.as_mut_ptr().cast::<[f32; L]>(), ot.as_mut_ptr().cast::<[f32; L]>());
    // Lane r of vector v: query row i0 + min(v * L + r, nq - 1), its visible keys.
    let limit: [[i32; L]; QV] =
        from_fn(|v| from_fn(|r| g.visible(i0 + (v * L + r).min(nq - 1)) as i32));
    // SAFETY (whole body): query and output rows are `< i0 + nq <= q_frames`, key and
    // value rows `< kmax <= len` (full blocks end at `full <= kmin`, the rest is clamped
    // to `kmax - 1`), every row read at `off .. off + hd <= c`; the tiles are written at
    // rows `d < hd <= HD_MAX` (vectors `v < QV`) before they are read.
    unsafe {
        for v in 0..QV {
            for r in 0..L {
                let qr = p.q.add((i0 + (v * L + r).min(nq - 1)) * c + off);
                for d in 0..hd {
                    (*qt.add(d * QV + v))[r] = *qr.add(d) * g.scale;
                }
            }
        }
        for d in 0..hd * QV {
            *ot.add(d) = [0.0; L];
        }
        let (kmin, kmax) = (limit[0][0] as usize, limit[QV - 1][L - 1] as usize);
        // Filled in a loop, not `from_fn`: no closure handles the level's vectors (module docs).
        let mut lim = [s.limits(&limit[0]); QV];
        for v in 1..QV {
            lim[v] = s.limits(&limit[v]);
        }
        let mut m = [s.splat(f32::NEG_INFINITY); QV];
        let mut l = [s.zero(); QV];
        // Blocks every lane sees entirely: no masking.
        let full = kmin / KB * KB;
        let mut j = 0;
        while j < full {
            let kp: [*const f32; KB] = from_fn(|t| p.k.add((j + t) * c + off));
            let vp: [*const f32; KB] = from_fn(|t| p.v.add((j + t) * c + off));
            block::<L, QV, KB, S, false>(s, (qt, ot), (kp, vp), hd, (&mut m, &mut l), (lim, j));
            j += KB;
        }
        // The rest: masked, keys clamped to `kmax - 1`.
        while j < kmax {
            let kp: [*const f32; KB] = from_fn(|t| p.k.add((j + t).min(kmax - 1) * c + off));
            let vp: [*const f32; KB] = from_fn(|t| p.v.add((j + t).min(kmax - 1) * c + off));
            block::<L, QV, KB, S, true>(s, (qt, ot), (kp, vp), hd, (&mut m, &mut l), (lim, j));
            j += KB;
        }
        for v in 0..QV {
            let inv = s.div(s.splat(1.0), l[v]);
            for d in 0..hd {
                let o = s.to_array(s.mul(s.load(ot.add(d * QV + v).cast()), inv));
                for r in 0..L.min(nq.saturating_sub(v * L)) {
                    *p.out.add((i0 + v * L + r) * c + off + d) = o[r];
                }
            }
        }
    }
}

/// One block of `KB` keys for a block of queries: scores from the query tile, running
/// maxima and sums, accumulation into the output tile. With `MASK`, key `j + t` counts in
/// lane `r` of vector `v` only when `j + t < lim[v][r]`.
///
/// # Safety
/// `qt` and `ot` point at tiles with `hd` valid rows of `QV` vectors, every `kp[t]` and
/// `vp[t]` at `hd` readable values.
#[inline(always)]
unsafe fn block<const L: usize, const QV: usize, const KB: usize, S: Simd<L>, const MASK: bool>(
    s: S,
    (qt, ot): (*const [f32; L], *mut [f32; L]),
    (kp, vp): ([*const f32; KB], [*const f32; KB]),
    hd: usize,
    (m, l): (&mut [S::V; QV], &mut [S::V; QV]),
    (lim, j): ([S::Lim; QV], usize),
) {
    // SAFETY (whole body): every access is row `d < hd` of a tile or value `d < hd` of a
    // key or value row (contract).
    unsafe {
        // One accumulator per key and query vector; each key value broadcast once.
        let mut sc = [[s.zero(); KB]; QV];
        for d in 0..hd {
            let mut qv = [s.zero(); QV];
            for v in 0..QV {
                qv[v] = s.load(qt.add(d * QV + v).cast());
            }
            for t in 0..KB {
                let kb = s.bcast(kp[t].add(d));
                for v in 0..QV {
                    sc[v][t] = s.fma(qv[v], kb, sc[v][t]);
                }
            }
        }
        if MASK {
            let ninf = s.splat(f32::NEG_INFINITY);
            for v in 0..QV {
                for t in 0..KB {
                    sc[v][t] = s.select(s.below(lim[v], (j + t) as i32), sc[v][t], ninf);
                }
            }
        }
        // `max` returns its second operand on NaN: `m` never becomes NaN (a NaN score
        // still makes its probability NaN below).
        // Masks start empty (`0 > 0`) and are set per vector below.
        let mut grew = [s.gt(s.zero(), s.zero()); QV];
        let mut mnew = [s.zero(); QV];
        let mut any = false;
        for v in 0..QV {
            mnew[v] = s.max(tree(s, sc[v], Tree::Max), m[v]);
            grew[v] = s.gt(mnew[v], m[v]);
            any |= s.any(grew[v]);
        }
        // The factors `exp(m - mnew)` of the lanes whose maximum grew, exactly 1 in the
        // others (so rescaling every vector when any lane grew changes no other lane).
        let mut alpha = [s.splat(1.0); QV];
        if any {
            for v in 0..QV {
                alpha[v] = s.select(grew[v], exp(s, s.sub(m[v], mnew[v])), s.splat(1.0));
            }
        }
        let mut pr = [[s.zero(); KB]; QV];
        for v in 0..QV {
            m[v] = mnew[v];
            for t in 0..KB {
                pr[v][t] = exp(s, s.sub(sc[v][t], mnew[v]));
            }
            let ps = tree(s, pr[v], Tree::Sum);
            l[v] = if any { s.fma(l[v], alpha[v], ps) } else { s.add(l[v], ps) };
        }
        if any {
            accumulate::<L, QV, KB, S, true>(s, ot, vp, &pr, (hd, alpha));
        } else {
            accumulate::<L, QV, KB, S, false>(s, ot, vp, &pr, (hd, alpha));
        }
    }
}

/// `oT[d] = oT[d] (* alpha with RESCALE) + sum_t pr[t] v_t[d]` for `d < hd`, per query
/// vector: `(o + sum of the even keys) + (sum of the odd keys)` (half the dependency
/// chain; `KB` even).
///
/// # Safety
/// As [`block`].
#[inline(always)]
unsafe fn accumulate<
    const L: usize,
    const QV: usize,
    const KB: usize,
    S: Simd<L>,
    const RESCALE: bool,
>(
    s: S,
    ot: *mut [f32; L],
    vp: [*const f32; KB],
    pr: &[[S::V; KB]; QV],
    (hd, alpha): (usize, [S::V; QV]),
) {
    // SAFETY: rows `d < hd` of the tile and values `d < hd` of the value rows.
    unsafe {
        for d in 0..hd {
            let mut o = [s.zero(); QV];
            let mut o1 = [s.zero(); QV];
            for v in 0..QV {
                o[v] = s.load(ot.add(d * QV + v).cast());
                if RESCALE {
                    o[v] = s.mul(o[v], alpha[v]);
                }
            }
            // Each value broadcast once for every query vector.
            for t in (0..KB).step_by(2) {
                let (b0, b1) = (s.bcast(vp[t].add(d)), s.bcast(vp[t + 1].add(d)));
                for v in 0..QV {
                    o[v] = s.fma(pr[v][t], b0, o[v]);
                    o1[v] = s.fma(pr[v][t + 1], b1, o1[v]);
                }
            }
            for v in 0..QV {
                s.store(ot.add(d * QV + v).cast(), s.add(o[v], o1[v]));
            }
        }
    }
}
