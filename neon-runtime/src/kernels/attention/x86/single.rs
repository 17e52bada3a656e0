//! The single-query kernel of both x86 levels: one query row of one head, one key per
//! lane, in chunks of up to [`KC`] keys (see the [module docs](super)).

use super::super::AttentionGeometry;
use super::kernel::{exp, raise_max, scale_row, Ptrs, Simd, KC};
use core::mem::MaybeUninit;

/// `$body` for each group of up to 4 of the `$chunks` chunks of `$l` values of a row, in
/// order: `$ch` the group's first chunk, `$g` its chunk count (a constant), `$tail` the
/// values of its last chunk (`$last` for the row's last group, else `$l`). A macro, not a
/// closure: see the module docs of `kernels/x86_simd`.
macro_rules! chunk_groups {
    (($chunks:expr, $last:expr, $l:expr), |$ch:ident, $g:ident, $tail:ident| $body:expr) => {{
        let mut $ch = 0;
        while $ch < $chunks {
            let g4 = ($chunks - $ch).min(4);
            let $tail = if $ch + g4 == $chunks { $last } else { $l };
            match g4 {
                4 => {
                    const $g: usize = 4;
                    $body
                }
                3 => {
                    const $g: usize = 3;
                    $body
                }
                2 => {
                    const $g: usize = 2;
                    $body
                }
                _ => {
                    const $g: usize = 1;
                    $body
                }
            }
            $ch += g4;
        }
    }};
}

/// The scores, then probabilities, of a chunk of keys.
#[repr(C, align(64))]
struct Scores([f32; KC]);

/// Query row `i` of head `h` alone, in chunks of up to [`KC`] keys: the chunk's
/// scores (blocks of `L` keys, one per lane) into a buffer on the stack, their
/// maximum (the output row rescaled when it grows), their exponentials in place,
/// then the output row accumulated over the chunk's keys. The values are taken in
/// groups of up to 4 chunks of `L` (the row's last chunk partial, under a lane
/// mask), each group a pass over the keys with one pointer stepping from row to
/// row. Every step is a loop of independent blocks: nothing waits for the
/// previous block's maximum or output.
///
/// # Safety
/// As [`super::driver::attention`], with `i < q_frames` and `h < heads`.
#[inline(always)]
pub(super) unsafe fn row<const L: usize, S: Simd<L>>(
    s: S,
    p: Ptrs,
    g: AttentionGeometry,
    i: usize,
    h: usize,
) {
    let (c, hd, off) = (g.channels(), g.head_dim, h * g.head_dim);
    let n = g.visible(i);
    let chunks = hd.div_ceil(L);
    // Values in the last chunk (1..=L).
    let last = hd - (chunks - 1) * L;
    let sc = s.splat(g.scale);
    let mut buf = MaybeUninit::<Scores>::uninit();
    let sp = buf.as_mut_ptr().cast::<f32>();
    // SAFETY (whole body): the query and output rows are row `i < q_frames`, key and
    // value rows `< n <= len` (the score pointers stop at the block's last visible
    // key, the value loop at the chunk's last key), each read at `off + ch *
    // L ..` for whole chunks or the `last` values of the last one, all inside
    // `off .. off + hd <= c`; the buffer is written at `0 .. nc.next_multiple_of
    // (L) <= KC` and read below `nc`.
    unsafe {
        let (qp, op) = (p.q.add(i * c + off), p.out.add(i * c + off));
        for d in 0..hd {
            *op.add(d) = 0.0;
        }
        let mut m = f32::NEG_INFINITY;
        let mut l = s.zero();
        let mut j0 = 0;
        while j0 < n {
            let nc = KC.min(n - j0);
            let (kc, vc) = (p.k.add(j0 * c + off), p.v.add(j0 * c + off));
            // Scores.
            let mut j = 0;
            while j < nc {
                let nk = L.min(nc - j);
                let kb = kc.add(j * c);
                let mut acc = [s.zero(); L];
                chunk_groups!((chunks, last, L), |ch, G, tail| {
                    let (q, k) = (qp.add(ch * L), kb.add(ch * L));
                    dots::<L, S, G>(s, &mut acc, q, k, (c, nk), tail, sc)
                });
                let sv = s.hsum_rows(&acc);
                let sv =
                    if nk < L { s.select(s.first(nk), sv, s.splat(f32::NEG_INFINITY)) } else { sv };
                s.store(sp.add(j), sv);
                j += L;
            }
            // Maximum.
            let mut mv = s.splat(f32::NEG_INFINITY);
            for j in (0..nc).step_by(L) {
                mv = s.max(s.load(sp.add(j)), mv);
            }
            let mb = s.hmax(mv);
            if mb > m {
                l = s.mul(l, s.splat(raise_max(op, hd, m, mb)));
                m = mb;
            }
            // Probabilities.
            let mm = s.splat(m);
            for j in (0..nc).step_by(L) {
                let pv = exp(s, s.sub(s.load(sp.add(j)), mm));
                s.store(sp.add(j), pv);
                l = s.add(l, pv);
            }
            // Output.
            chunk_groups!((chunks, last, L), |ch, G, tail| {
                let (o, v) = (op.add(ch * L), vc.add(ch * L));
                weigh::<L, S, G>(s, o, v, (c, nc), tail, sp)
            });
            j0 += nc;
        }
        scale_row(op, hd, 1.0 / s.hsum(l));
    }
}

/// `acc[t] += sum_ch (q_ch * scale) * k_t,ch` over `NCH` chunks of `L` values
/// (the last one holding `tail` values, `1..=L`) for the `L` key rows from
/// `k` on (stride `c`; rows `t >= nk` repeat row `nk - 1`).
///
/// # Safety
/// `q` readable for the chunks' values, and so is each of the `nk` rows from `k`.
#[inline(always)]
unsafe fn dots<const L: usize, S: Simd<L>, const NCH: usize>(
    s: S,
    acc: &mut [S::V; L],
    q: *const f32,
    k: *const f32,
    (c, nk): (usize, usize),
    tail: usize,
    sc: S::V,
) {
    // SAFETY: chunk `ch < NCH - 1` is whole, the last one reads `tail` values; the
    // row pointer advances only while `t + 1 < nk`.
    unsafe {
        let mut qv = [s.zero(); NCH];
        for ch in 0..NCH {
            qv[ch] = s.mul(chunk::<L, S, NCH>(s, q.add(ch * L), ch, tail), sc);
        }
        let mut kt = k;
        for t in 0..L {
            for ch in 0..NCH {
                acc[t] = s.fma(qv[ch], chunk::<L, S, NCH>(s, kt.add(ch * L), ch, tail), acc[t]);
            }
            kt = kt.add(if t + 1 < nk { c } else { 0 });
        }
    }
}

/// `o += sum_t pr[t] v_t` over `NCH` chunks of `L` values (the last one
/// holding `tail` values) for the `nc` value rows from `v` on (stride `c`): even
/// and odd keys in two partial sums.
///
/// # Safety
/// `o` writable for the chunks' values and not aliased, each of the `nc` rows from
/// `v` readable for them, `pr` for `nc` values.
#[inline(always)]
unsafe fn weigh<const L: usize, S: Simd<L>, const NCH: usize>(
    s: S,
    o: *mut f32,
    v: *const f32,
    (c, nc): (usize, usize),
    tail: usize,
    pr: *const f32,
) {
    // SAFETY: chunk `ch < NCH - 1` is whole, the last one holds `tail` values; rows
    // `t < nc`.
    unsafe {
        let mut a = [s.zero(); NCH];
        for ch in 0..NCH {
            a[ch] = chunk::<L, S, NCH>(s, o.add(ch * L), ch, tail);
        }
        let mut b = [s.zero(); NCH];
        let mut vt = v;
        let mut t = 0;
        while t + 2 <= nc {
            let (p0, p1) = (s.bcast(pr.add(t)), s.bcast(pr.add(t + 1)));
            for ch in 0..NCH {
                a[ch] = s.fma(p0, chunk::<L, S, NCH>(s, vt.add(ch * L), ch, tail), a[ch]);
                b[ch] = s.fma(p1, chunk::<L, S, NCH>(s, vt.add(c + ch * L), ch, tail), b[ch]);
            }
            // Wrapping: past the last pair it may point past the slice (unread).
            vt = vt.wrapping_add(2 * c);
            t += 2;
        }
        if t < nc {
            let p0 = s.bcast(pr.add(t));
            for ch in 0..NCH {
                a[ch] = s.fma(p0, chunk::<L, S, NCH>(s, vt.add(ch * L), ch, tail), a[ch]);
            }
        }
        for ch in 0..NCH {
            let x = s.add(a[ch], b[ch]);
            if ch + 1 < NCH {
                s.store(o.add(ch * L), x);
            } else {
                s.store_n(o.add(ch * L), x, tail);
            }
        }
    }
}

/// The values at `at`, chunk `ch` of `NCH` chunks of `L` values: `L` of them, or for the
/// last chunk `tail` (`1..=L`, zeros after: masked, nothing else is read).
///
/// # Safety
/// The chunk's values are readable.
#[inline(always)]
unsafe fn chunk<const L: usize, S: Simd<L>, const NCH: usize>(
    s: S,
    at: *const f32,
    ch: usize,
    tail: usize,
) -> S::V {
    // SAFETY: contract.
    unsafe {
        if ch + 1 < NCH {
            s.load(at)
        } else {
            s.load_n(at, tail)
        }
    }
}
