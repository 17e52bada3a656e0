//! The multi-query kernel of both x86 levels: a block of `L` query rows of one head, one
//! query per lane, the queries and the output transposed into `[head_dim, L]` tiles on the
//! stack (see the [module docs](super)).

use super::super::AttentionGeometry;
use super::kernel::{exp, tree, Ptrs, Simd, Tree, HD_MAX, KB};
use core::array::from_fn;
use core::mem::MaybeUninit;

/// A `[head_dim, L]` tile (one vector per value `d`); rows `0..head_dim` used.
#[repr(C, align(64))]
struct Tile<const L: usize>([[f32; L]; HD_MAX]);

/// Query rows `i0 .. i0 + nq` (`1 <= nq <= L`) of head `h`, one per lane.
///
/// # Safety
/// As [`super::kernel::attention`], with `i0 + nq <= q_frames`, `h < heads`, `hd <=
/// HD_MAX` and `len < 2^30`.
#[inline(always)]
pub(super) unsafe fn rows<const L: usize, S: Simd<L>>(
    s: S,
    p: Ptrs,
    g: AttentionGeometry,
    (i0, nq): (usize, usize),
    h: usize,
) {
    let (c, hd, off) = (g.channels(), g.head_dim, h * g.head_dim);
    let mut qt = MaybeUninit::<Tile<L>>::uninit();
    let mut ot = MaybeUninit::<Tile<L>>::uninit();
    let (qt, ot) = (qt.as_mut_ptr().cast::<[f32; L]>(), ot.as_mut_ptr().cast::<[f32; L]>());
    // Lane r: query row i0 + min(r, nq - 1), its visible keys.
    let limit: [i32; L] = from_fn(|r| g.visible(i0 + r.min(nq - 1)) as i32);
    // SAFETY (whole body): query and output rows are `< i0 + nq <= q_frames`, key and
    // value rows `< kmax <= len` (full blocks end at `full <= kmin`, the rest is clamped
    // to `kmax - 1`), every row read at `off .. off + hd <= c`; the tiles are written at
    // rows `d < hd <= HD_MAX` before they are read.
    unsafe {
        for r in 0..L {
            let qr = p.q.add((i0 + r.min(nq - 1)) * c + off);
            for d in 0..hd {
                (*qt.add(d))[r] = *qr.add(d) * g.scale;
            }
        }
        for d in 0..hd {
            *ot.add(d) = [0.0; L];
        }
        let (kmin, kmax) = (limit[0] as usize, limit[nq - 1] as usize);
        let lim = s.limits(&limit);
        let mut m = s.splat(f32::NEG_INFINITY);
        let mut l = s.zero();
        // Blocks every lane sees entirely: no masking.
        let full = kmin / KB * KB;
        let mut j = 0;
        while j < full {
            let kp: [*const f32; KB] = from_fn(|t| p.k.add((j + t) * c + off));
            let vp: [*const f32; KB] = from_fn(|t| p.v.add((j + t) * c + off));
            block::<L, S, false>(s, (qt, ot), (kp, vp), hd, (&mut m, &mut l), (lim, j));
            j += KB;
        }
        // The rest: masked, keys clamped to `kmax - 1`.
        while j < kmax {
            let kp: [*const f32; KB] = from_fn(|t| p.k.add((j + t).min(kmax - 1) * c + off));
            let vp: [*const f32; KB] = from_fn(|t| p.v.add((j + t).min(kmax - 1) * c + off));
            block::<L, S, true>(s, (qt, ot), (kp, vp), hd, (&mut m, &mut l), (lim, j));
            j += KB;
        }
        let inv = s.div(s.splat(1.0), l);
        for d in 0..hd {
            let o = s.to_array(s.mul(s.load(ot.add(d).cast()), inv));
            for r in 0..nq {
                *p.out.add((i0 + r) * c + off + d) = o[r];
            }
        }
    }
}

/// One block of [`KB`] keys for a block of queries: scores from the query tile, running
/// maximum and sum, accumulation into the output tile. With `MASK`, key `j + t` counts in
/// lane `r` only when `j + t < lim[r]`.
///
/// # Safety
/// `qt` and `ot` point at tiles with `hd` valid rows, every `kp[t]` and `vp[t]` at `hd`
/// readable values.
#[inline(always)]
unsafe fn block<const L: usize, S: Simd<L>, const MASK: bool>(
    s: S,
    (qt, ot): (*const [f32; L], *mut [f32; L]),
    (kp, vp): ([*const f32; KB], [*const f32; KB]),
    hd: usize,
    (m, l): (&mut S::V, &mut S::V),
    (lim, j): (S::Lim, usize),
) {
    // SAFETY (whole body): every access is row `d < hd` of a tile or value `d < hd` of a
    // key or value row (contract).
    unsafe {
        let mut sc = [s.zero(); KB];
        for d in 0..hd {
            let qv = s.load(qt.add(d).cast());
            for t in 0..KB {
                sc[t] = s.fma(qv, s.bcast(kp[t].add(d)), sc[t]);
            }
        }
        if MASK {
            let ninf = s.splat(f32::NEG_INFINITY);
            for t in 0..KB {
                sc[t] = s.select(s.below(lim, (j + t) as i32), sc[t], ninf);
            }
        }
        let mb = tree(s, sc, Tree::Max);
        // `max` returns its second operand on NaN: `m` never becomes NaN (a NaN score
        // still makes its probability NaN below).
        let mnew = s.max(mb, *m);
        let grew = s.gt(mnew, *m);
        // The factors `exp(m - mnew)` of the lanes whose maximum grew, 1 in the others.
        let alpha = if s.any(grew) {
            Some(s.select(grew, exp(s, s.sub(*m, mnew)), s.splat(1.0)))
        } else {
            None
        };
        *m = mnew;
        let mut pr = [s.zero(); KB];
        for t in 0..KB {
            pr[t] = exp(s, s.sub(sc[t], mnew));
        }
        let ps = tree(s, pr, Tree::Sum);
        match alpha {
            None => {
                *l = s.add(*l, ps);
                accumulate::<L, S, false>(s, ot, vp, &pr, (hd, s.zero()));
            }
            Some(a) => {
                *l = s.fma(*l, a, ps);
                accumulate::<L, S, true>(s, ot, vp, &pr, (hd, a));
            }
        }
    }
}

/// `oT[d] = oT[d] (* alpha with RESCALE) + sum_t pr[t] v_t[d]` for `d < hd`.
///
/// # Safety
/// As [`block`].
#[inline(always)]
unsafe fn accumulate<const L: usize, S: Simd<L>, const RESCALE: bool>(
    s: S,
    ot: *mut [f32; L],
    vp: [*const f32; KB],
    pr: &[S::V; KB],
    (hd, alpha): (usize, S::V),
) {
    // SAFETY: rows `d < hd` of the tile and values `d < hd` of the value rows.
    unsafe {
        for d in 0..hd {
            let row = ot.add(d).cast::<f32>();
            let mut o = s.load(row);
            if RESCALE {
                o = s.mul(o, alpha);
            }
            // Even and odd keys in two sums (half the dependency chain).
            let mut o1 = s.zero();
            for t in (0..KB).step_by(2) {
                o = s.fma(pr[t], s.bcast(vp[t].add(d)), o);
                o1 = s.fma(pr[t + 1], s.bcast(vp[t + 1].add(d)), o1);
            }
            s.store(row, s.add(o, o1));
        }
    }
}
