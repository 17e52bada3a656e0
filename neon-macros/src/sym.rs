//! Symbolic dimensions: the compile-time [`Dim`] used by the shape check.
//!
//! A [`SymDim`] is an integer expression over declared symbols (`frames in 1..=3000`) in a
//! canonical form: a polynomial with integer coefficients whose atoms are symbols and
//! floor divisions `floor(p / c)` of canonical polynomials by positive constants. Two
//! expressions are equal when their canonical forms are equal, so `frames + 2 - 1` equals
//! `1 + frames`. Constant subexpressions fold, and `floor((c * p + q) / c)` with integer
//! `c * p` is simplified to `p + floor(q / c)` (floor division, never truncation).
//!
//! Range questions ([`Dim::at_least`]) are answered for every value the symbols may take:
//! exactly, by evaluating every point, when the symbols' ranges have at most
//! [`EXACT_POINTS`] combinations, and otherwise by interval arithmetic (sound: it may
//! reject an expression that is in fact large enough, never accept one that is not).

use std::collections::BTreeMap;
use std::fmt;
use std::rc::Rc;

use neon_runtime::Dim;
use proc_macro2::TokenStream;
use quote::{format_ident, quote};

/// Largest number of symbol combinations evaluated exactly by range checks.
pub const EXACT_POINTS: u64 = 1 << 20;

/// Inclusive bounds of each declared symbol.
pub type Bounds = BTreeMap<String, (i64, i64)>;

#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Atom {
    Sym(String),
    FloorDiv(Box<Poly>, i64),
}

/// Monomial (sorted atoms, with repetition) -> coefficient; no zero coefficients.
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
struct Poly(BTreeMap<Vec<Atom>, i64>);

impl Poly {
    fn constant(c: i64) -> Self {
        let mut m = BTreeMap::new();
        if c != 0 {
            m.insert(Vec::new(), c);
        }
        Poly(m)
    }
    fn atom(a: Atom) -> Self {
        Poly(BTreeMap::from([(vec![a], 1)]))
    }
    fn as_constant(&self) -> Option<i64> {
        match self.0.len() {
            0 => Some(0),
            1 => self.0.get(&Vec::new()).copied(),
            _ => None,
        }
    }
    fn add(&self, rhs: &Poly) -> Poly {
        let mut m = self.0.clone();
        for (mono, c) in &rhs.0 {
            let e = m.entry(mono.clone()).or_insert(0);
            *e += c;
            if *e == 0 {
                m.remove(mono);
            }
        }
        Poly(m)
    }
    fn mul(&self, rhs: &Poly) -> Poly {
        let mut out = Poly::default();
        for (ma, ca) in &self.0 {
            for (mb, cb) in &rhs.0 {
                let mut mono: Vec<Atom> = ma.iter().chain(mb).cloned().collect();
                mono.sort();
                out = out.add(&Poly(BTreeMap::from([(mono, ca * cb)])));
            }
        }
        out
    }
    fn scale(&self, c: i64) -> Poly {
        self.mul(&Poly::constant(c))
    }
    /// floor(self / c), c >= 1, with the whole-multiple terms pulled out.
    fn div_floor(&self, c: i64) -> Poly {
        if c == 1 {
            return self.clone();
        }
        let mut whole = Poly::default();
        let mut rest = Poly::default();
        for (mono, &k) in &self.0 {
            let q = k.div_euclid(c);
            let r = k.rem_euclid(c);
            if q != 0 {
                whole = whole.add(&Poly(BTreeMap::from([(mono.clone(), q)])));
            }
            if r != 0 {
                rest = rest.add(&Poly(BTreeMap::from([(mono.clone(), r)])));
            }
        }
        // Now self = c * whole + rest with 0 <= coefficients of rest < c.
        match rest.as_constant() {
            Some(r) => whole.add(&Poly::constant(r.div_euclid(c))),
            None => {
                // Keep the constant remainder inside the atom so equal expressions stay
                // equal: floor((x + 2) / 4) is one atom over x + 2.
                whole.add(&Poly::atom(Atom::FloorDiv(Box::new(rest), c)))
            }
        }
    }
    fn eval(&self, env: &BTreeMap<&str, i64>) -> i64 {
        self.0
            .iter()
            .map(|(mono, &c)| mono.iter().fold(c, |acc, a| acc.saturating_mul(a.eval(env))))
            .fold(0i64, i64::saturating_add)
    }
    fn interval(&self, b: &Bounds) -> (i64, i64) {
        self.0.iter().fold((0, 0), |(lo, hi), (mono, &c)| {
            let (ml, mh) = mono.iter().fold((c, c), |acc, a| mul_interval(acc, a.interval(b)));
            (lo.saturating_add(ml), hi.saturating_add(mh))
        })
    }
    fn symbols<'a>(&'a self, out: &mut Vec<&'a str>) {
        for mono in self.0.keys() {
            for a in mono {
                match a {
                    Atom::Sym(s) => {
                        if !out.contains(&s.as_str()) {
                            out.push(s)
                        }
                    }
                    Atom::FloorDiv(p, _) => p.symbols(out),
                }
            }
        }
    }
}

fn mul_interval((a, b): (i64, i64), (c, d): (i64, i64)) -> (i64, i64) {
    let p = [a.saturating_mul(c), a.saturating_mul(d), b.saturating_mul(c), b.saturating_mul(d)];
    (*p.iter().min().unwrap_or(&0), *p.iter().max().unwrap_or(&0))
}

impl Atom {
    fn eval(&self, env: &BTreeMap<&str, i64>) -> i64 {
        match self {
            Atom::Sym(s) => env[s.as_str()],
            Atom::FloorDiv(p, c) => p.eval(env).div_euclid(*c),
        }
    }
    fn interval(&self, b: &Bounds) -> (i64, i64) {
        match self {
            Atom::Sym(s) => b.get(s).copied().unwrap_or((i64::MIN / 4, i64::MAX / 4)),
            Atom::FloorDiv(p, c) => {
                let (lo, hi) = p.interval(b);
                (lo.div_euclid(*c), hi.div_euclid(*c))
            }
        }
    }
}

/// A symbolic dimension: a canonical expression and the bounds of its symbols.
#[derive(Clone)]
pub struct SymDim {
    poly: Poly,
    bounds: Rc<Bounds>,
}

impl SymDim {
    /// The symbol `name`, whose bounds must be in `bounds`.
    pub fn symbol(name: &str, bounds: Rc<Bounds>) -> Self {
        SymDim { poly: Poly::atom(Atom::Sym(name.to_string())), bounds }
    }
    /// A constant with the given bounds table (for arithmetic with symbols).
    pub fn constant_in(c: i64, bounds: Rc<Bounds>) -> Self {
        SymDim { poly: Poly::constant(c), bounds }
    }
    fn with(&self, poly: Poly) -> Self {
        SymDim { poly, bounds: self.bounds.clone() }
    }
    fn pick_bounds(&self, rhs: &SymDim) -> Rc<Bounds> {
        if self.bounds.is_empty() {
            rhs.bounds.clone()
        } else {
            self.bounds.clone()
        }
    }
    /// `self - rhs` (may be negative; range checks decide whether that is an error).
    pub fn sub(&self, rhs: &SymDim) -> SymDim {
        SymDim { poly: self.poly.add(&rhs.poly.scale(-1)), bounds: self.pick_bounds(rhs) }
    }
    /// The symbols the expression uses.
    pub fn symbols(&self) -> Vec<String> {
        let mut v = Vec::new();
        self.poly.symbols(&mut v);
        v.into_iter().map(str::to_string).collect()
    }
    /// Smallest and largest value over every value of the symbols (exact when the ranges
    /// have at most [`EXACT_POINTS`] combinations, a sound interval otherwise).
    pub fn range(&self) -> (i64, i64) {
        let syms = self.symbols();
        let mut count: u64 = 1;
        for s in &syms {
            let Some(&(lo, hi)) = self.bounds.get(s) else {
                return self.poly.interval(&self.bounds);
            };
            count = count.saturating_mul((hi - lo + 1).max(1) as u64);
        }
        if count > EXACT_POINTS {
            return self.poly.interval(&self.bounds);
        }
        let mut env: BTreeMap<&str, i64> =
            syms.iter().map(|s| (s.as_str(), self.bounds[s].0)).collect();
        let (mut lo, mut hi) = (i64::MAX, i64::MIN);
        loop {
            let v = self.poly.eval(&env);
            lo = lo.min(v);
            hi = hi.max(v);
            // Odometer over the symbols' ranges.
            let mut i = 0;
            loop {
                if i == syms.len() {
                    return (lo, hi);
                }
                let s = syms[i].as_str();
                let (l, h) = self.bounds[s];
                let e = env.get_mut(s).unwrap();
                if *e < h {
                    *e += 1;
                    break;
                }
                *e = l;
                i += 1;
            }
        }
    }
}

impl SymDim {
    /// A Rust `usize` expression computing the value from `usize` variables named after
    /// the symbols: plain `usize` arithmetic when no partial result can be negative over
    /// the range, else `i64` with `div_euclid` (floor division) and a final cast. The
    /// generated code validates the symbols first, so the result is >= 1 and fits.
    pub fn to_tokens(&self) -> TokenStream {
        if let Some(c) = self.poly.as_constant() {
            let c = c as usize;
            return quote!(#c);
        }
        if self.unsigned_safe(&self.poly) {
            return poly_tokens(&self.poly, false);
        }
        let e = poly_tokens(&self.poly, true);
        quote!((#e) as usize)
    }

    /// Whether `p` and every floor-division numerator inside it are >= 0 over the whole
    /// range, so plain `usize` arithmetic (positive terms first) cannot underflow.
    fn unsigned_safe(&self, p: &Poly) -> bool {
        let me = SymDim { poly: p.clone(), bounds: self.bounds.clone() };
        me.range().0 >= 0
            && p.0.keys().flatten().all(|a| match a {
                Atom::Sym(_) => true,
                Atom::FloorDiv(q, _) => self.unsigned_safe(q),
            })
    }
}

/// A Rust expression for `p`: `usize` arithmetic with positive terms first, or `i64`
/// arithmetic with `div_euclid` (floor division) when `signed`.
fn poly_tokens(p: &Poly, signed: bool) -> TokenStream {
    let mut terms: Vec<(&Vec<Atom>, i64)> = p.0.iter().map(|(m, &c)| (m, c)).collect();
    // Positive terms first, symbol terms before the constant: `frames + 4`, `frames - 6`.
    terms.sort_by(|a, b| {
        (a.1 < 0).cmp(&(b.1 < 0)).then(b.0.len().cmp(&a.0.len())).then(a.0.cmp(b.0))
    });
    let mut out: Option<TokenStream> = None;
    for (mono, c) in terms {
        let atoms: Vec<TokenStream> = mono
            .iter()
            .map(|a| match a {
                Atom::Sym(s) => {
                    let id = format_ident!("{}", s);
                    if signed {
                        quote!((#id as i64))
                    } else {
                        quote!(#id)
                    }
                }
                Atom::FloorDiv(q, d) => {
                    let q = poly_tokens(q, signed);
                    if signed {
                        quote!((#q).div_euclid(#d))
                    } else {
                        let d = *d as usize;
                        quote!((#q) / #d)
                    }
                }
            })
            .collect();
        let mag = c.unsigned_abs();
        let mag_t = if signed {
            let m = mag as i64;
            quote!(#m)
        } else {
            let m = mag as usize;
            quote!(#m)
        };
        let term = match atoms.into_iter().reduce(|a, b| quote!(#a * #b)) {
            None => mag_t,
            Some(p) if mag == 1 => p,
            Some(p) => quote!(#mag_t * #p),
        };
        out = Some(match (out, c < 0) {
            (None, false) => term,
            (None, true) => quote!(-#term),
            (Some(acc), false) => quote!(#acc + #term),
            (Some(acc), true) => quote!(#acc - #term),
        });
    }
    out.unwrap_or_else(|| if signed { quote!(0i64) } else { quote!(0usize) })
}

impl PartialEq for SymDim {
    /// Equal canonical forms; failing that, for expressions with floor divisions (whose
    /// nestings the canonical form does not normalise), equal values at every point of a
    /// small enough domain.
    fn eq(&self, other: &Self) -> bool {
        if self.poly == other.poly {
            return true;
        }
        let has_div = |p: &Poly| p.0.keys().flatten().any(|a| matches!(a, Atom::FloorDiv(..)));
        if !(has_div(&self.poly) || has_div(&other.poly)) {
            return false;
        }
        let diff = self.sub(other);
        let syms = diff.symbols();
        let exact = syms.iter().all(|s| diff.bounds.contains_key(s))
            && syms
                .iter()
                .try_fold(1u64, |n, s| {
                    let (lo, hi) = diff.bounds[s];
                    n.checked_mul((hi - lo + 1).max(1) as u64).filter(|&n| n <= EXACT_POINTS)
                })
                .is_some();
        exact && diff.range() == (0, 0)
    }
}

impl fmt::Debug for SymDim {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SymDim({self})")
    }
}

fn fmt_poly(p: &Poly, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    if p.0.is_empty() {
        return write!(f, "0");
    }
    // Symbol terms first (descending by monomial so `frames` precedes its constant).
    let mut terms: Vec<(&Vec<Atom>, i64)> = p.0.iter().map(|(m, &c)| (m, c)).collect();
    terms.sort_by(|a, b| b.0.len().cmp(&a.0.len()).then(a.0.cmp(b.0)));
    for (i, (mono, c)) in terms.iter().enumerate() {
        let (neg, mag) = (*c < 0, c.unsigned_abs());
        match (i, neg) {
            (0, true) => write!(f, "-")?,
            (0, false) => {}
            (_, true) => write!(f, " - ")?,
            (_, false) => write!(f, " + ")?,
        }
        if mono.is_empty() {
            write!(f, "{mag}")?;
            continue;
        }
        if mag != 1 {
            write!(f, "{mag} * ")?;
        }
        for (j, a) in mono.iter().enumerate() {
            if j > 0 {
                write!(f, " * ")?;
            }
            match a {
                Atom::Sym(s) => write!(f, "{s}")?,
                Atom::FloorDiv(q, c) => {
                    let simple = q.0.len() == 1 && q.0.keys().all(|m| m.len() <= 1);
                    if simple {
                        fmt_poly(q, f)?;
                    } else {
                        write!(f, "(")?;
                        fmt_poly(q, f)?;
                        write!(f, ")")?;
                    }
                    write!(f, " / {c}")?;
                }
            }
        }
    }
    Ok(())
}

impl fmt::Display for SymDim {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt_poly(&self.poly, f)
    }
}

impl Dim for SymDim {
    fn constant(n: usize) -> Self {
        SymDim { poly: Poly::constant(n as i64), bounds: Rc::new(Bounds::new()) }
    }
    fn as_constant(&self) -> Option<usize> {
        self.poly.as_constant().and_then(|c| usize::try_from(c).ok())
    }
    fn add(&self, rhs: &Self) -> Self {
        SymDim { poly: self.poly.add(&rhs.poly), bounds: self.pick_bounds(rhs) }
    }
    fn mul(&self, rhs: &Self) -> Self {
        SymDim { poly: self.poly.mul(&rhs.poly), bounds: self.pick_bounds(rhs) }
    }
    fn checked_sub_const(&self, c: usize) -> Option<Self> {
        if self.at_least(c) {
            Some(self.with(self.poly.add(&Poly::constant(-(c as i64)))))
        } else {
            None
        }
    }
    fn div_floor_const(&self, c: usize) -> Self {
        self.with(self.poly.div_floor(c.max(1) as i64))
    }
    fn at_least(&self, n: usize) -> bool {
        self.range().0 >= n as i64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frames() -> SymDim {
        let b = Rc::new(Bounds::from([("frames".to_string(), (1, 3000))]));
        SymDim::symbol("frames", b)
    }

    #[test]
    fn canonical_equality() {
        let f = frames();
        let a = f.add_const(2).checked_sub_const(1).unwrap();
        let b = SymDim::constant(1).add(&f);
        assert_eq!(a, b);
        assert_eq!(a.to_string(), "frames + 1");
        assert_ne!(f.add_const(1), f.add_const(2));
        assert_eq!(f.mul_const(2).div_floor_const(2), f);
        assert_eq!(f.mul_const(4).add_const(6).div_floor_const(4).to_string(), "frames + 1");
    }

    #[test]
    fn floor_division_is_floor() {
        let f = frames();
        // floor((frames - 1) / 2) + 1: the conv output length for k = 1... with stride 2.
        let out = f.checked_sub_const(1).unwrap().div_floor_const(2).add_const(1);
        // Canonical form: constants are reduced modulo the divisor inside the atom.
        assert_eq!(out.to_string(), "(frames + 1) / 2");
        assert_eq!(out.range(), (1, 1500));
        // A negative numerator floors towards -infinity: floor((frames - 5) / 4) at frames=1 is -1.
        let neg = f.sub(&SymDim::constant(5)).div_floor_const(4);
        assert_eq!(neg.range().0, -1);
    }

    #[test]
    fn range_checks() {
        let f = frames();
        assert!(f.at_least(1));
        assert!(!f.at_least(2));
        assert!(f.checked_sub_const(1).is_some());
        assert!(f.checked_sub_const(2).is_none());
        // frames - 2 * floor(frames / 2) is 0 or 1: exact evaluation knows, intervals would not.
        let parity = f.sub(&f.div_floor_const(2).mul_const(2));
        assert_eq!(parity.range(), (0, 1));
    }

    #[test]
    fn two_symbols() {
        let b = Rc::new(Bounds::from([("a".to_string(), (1, 10)), ("b".to_string(), (2, 3))]));
        let a = SymDim::symbol("a", b.clone());
        let bb = SymDim::symbol("b", b);
        let p = a.mul(&bb).add(&a);
        assert_eq!(p.range(), (3, 40));
        assert_eq!(p, a.add(&bb.mul(&a)));
    }
}
