//! [`RunOptions`]: the choices a caller makes per run, apart from the operators.
//!
//! Operators are immutable after preparation, so several plans (and threads) can share one
//! weights set; what may differ from one call to the next is passed with the call. Operators
//! that read an option have a `run_with(.., options)` beside `run` (which uses
//! [`RunOptions::new`]), and so do the plans `neon_plan!` generates, which hand the options
//! to every such operator.

use super::quant::QuantPath;

/// Per-call options of operators and generated plans.
///
/// A small `Copy` value built from [`RunOptions::new`] (the defaults) with `with_*`
/// methods, so options can be added without breaking callers:
///
/// ```
/// use neon_runtime::ops::quant::QuantPath;
/// use neon_runtime::RunOptions;
///
/// const DOT: RunOptions = RunOptions::new().with_int8_path(QuantPath::Dot);
/// assert_eq!(DOT.int8_path(), QuantPath::Dot);
/// assert_eq!(RunOptions::default().int8_path(), QuantPath::Widening);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RunOptions {
    int8_path: QuantPath,
}

impl RunOptions {
    /// The defaults: [`QuantPath::Widening`].
    pub const fn new() -> Self {
        RunOptions { int8_path: QuantPath::Widening }
    }

    /// These options with `path` for the single-row int8 products of
    /// [`QuantLinear`](super::quant::QuantLinear) (its GEMM always widens).
    #[must_use]
    pub const fn with_int8_path(mut self, path: QuantPath) -> Self {
        self.int8_path = path;
        self
    }

    /// How [`QuantLinear`](super::quant::QuantLinear) computes a single row.
    pub const fn int8_path(&self) -> QuantPath {
        self.int8_path
    }
}

impl Default for RunOptions {
    fn default() -> Self {
        Self::new()
    }
}
