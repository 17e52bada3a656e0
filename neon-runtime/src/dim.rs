//! Dimension arithmetic that shape rules are written against.
//!
//! Every operator's shape rule is generic over [`Dim`], so the same rule runs with
//! `usize` at run time (operator validation) and with a symbolic
//! expression inside the `neon_plan!` macro at compile time (one source of truth for
//! every shape rule). The arithmetic is the small set shape rules need: addition,
//! multiplication, subtraction of a constant that is proven not to underflow, and
//! floor division by a positive constant.

use core::fmt;

/// A dimension value: a concrete `usize` at run time or a symbolic expression in the macro.
///
/// Equality is semantic: two symbolic dims are equal when their canonical forms are
/// equal. Implementations for symbolic values answer the range questions
/// ([`Dim::at_least`]) for *every* value their symbols may take.
pub trait Dim: Clone + PartialEq + fmt::Debug + fmt::Display {
    /// A known constant.
    fn constant(n: usize) -> Self;
    /// `Some(n)` when the value is a known constant.
    fn as_constant(&self) -> Option<usize>;
    /// `self + rhs`.
    fn add(&self, rhs: &Self) -> Self;
    /// `self + c`.
    fn add_const(&self, c: usize) -> Self {
        self.add(&Self::constant(c))
    }
    /// `self * rhs`.
    fn mul(&self, rhs: &Self) -> Self;
    /// `self * c`.
    fn mul_const(&self, c: usize) -> Self {
        self.mul(&Self::constant(c))
    }
    /// `self - c` when `self >= c` holds for every value it may take, else `None`.
    fn checked_sub_const(&self, c: usize) -> Option<Self>;
    /// `floor(self / c)`; `c >= 1` (callers guarantee it: divisors are operator geometry).
    fn div_floor_const(&self, c: usize) -> Self;
    /// `true` when `self >= n` for every value it may take.
    fn at_least(&self, n: usize) -> bool;
}

impl Dim for usize {
    fn constant(n: usize) -> Self {
        n
    }
    fn as_constant(&self) -> Option<usize> {
        Some(*self)
    }
    fn add(&self, rhs: &Self) -> Self {
        self.saturating_add(*rhs)
    }
    fn mul(&self, rhs: &Self) -> Self {
        self.saturating_mul(*rhs)
    }
    fn checked_sub_const(&self, c: usize) -> Option<Self> {
        self.checked_sub(c)
    }
    fn div_floor_const(&self, c: usize) -> Self {
        // Divisors come from validated geometry (>= 1); guard anyway instead of panicking.
        self / c.max(1)
    }
    fn at_least(&self, n: usize) -> bool {
        *self >= n
    }
}
