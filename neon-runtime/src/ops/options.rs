//! [`RunOptions`]: the choices a caller makes per run, apart from the operators.
//!
//! Operators are immutable after preparation, so several plans (and threads) can share one
//! weights set; what may differ from one call to the next is passed with the call. Operators
//! that read an option have a `run_with(.., options)` beside `run` (which uses
//! [`RunOptions::new`]), and so do the plans `neon_plan!` generates, which hand the options
//! to every such operator.

use core::fmt;

use super::quant::QuantPath;
use crate::kernels::{Parallel, Serial};

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
/// assert_eq!(DOT.parallel().workers(), 1);
/// ```
///
/// The lifetime `'p` is the execution context's ([`with_parallel`](Self::with_parallel),
/// e.g. a borrowed `Team`, feature `std`); the defaults run serially and are
/// `RunOptions<'static>`.
#[derive(Clone, Copy)]
pub struct RunOptions<'p> {
    int8_path: QuantPath,
    int8_gemm_path: QuantPath,
    parallel: &'p dyn Parallel,
}

impl RunOptions<'static> {
    /// The defaults: [`QuantPath::Widening`] for single rows and for the GEMM, [`Serial`].
    ///
    /// Widening, not the `auto` of the sessions' `moonshine_asr.int8` (`sdot` where the core
    /// has the dot-product extension): the options are one value for every backend, so
    /// they cannot name the path per backend, and [`QuantPath::Dot`] adds the activations'
    /// quantisation error, a trade a model accepts only after measuring it (the Moonshine
    /// decoder, on its ASR corpus: `neon_models::session::auto_int8`). The default is
    /// therefore the exact products, the same results on every backend.
    pub const fn new() -> Self {
        RunOptions {
            int8_path: QuantPath::Widening,
            int8_gemm_path: QuantPath::Widening,
            parallel: &Serial,
        }
    }
}

impl<'p> RunOptions<'p> {
    /// These options with the kernels of the heavy operators (linear, conv, attention) run
    /// on `parallel`, e.g. a `Team` (feature `std`): the same bits for any context.
    #[must_use]
    pub const fn with_parallel<'q>(self, parallel: &'q dyn Parallel) -> RunOptions<'q> {
        RunOptions { int8_path: self.int8_path, int8_gemm_path: self.int8_gemm_path, parallel }
    }

    /// The execution context ([`Serial`] by default).
    pub fn parallel(&self) -> &'p dyn Parallel {
        self.parallel
    }

    /// These options with `path` for the single-row int8 products of
    /// [`QuantLinear`](super::quant::QuantLinear) (its GEMM follows
    /// [`with_int8_gemm_path`](Self::with_int8_gemm_path)).
    #[must_use]
    pub const fn with_int8_path(mut self, path: QuantPath) -> Self {
        self.int8_path = path;
        self
    }

    /// How [`QuantLinear`](super::quant::QuantLinear) computes a single row.
    pub const fn int8_path(&self) -> QuantPath {
        self.int8_path
    }

    /// These options with `path` for the int8 products of several rows (the GEMM) of
    /// [`QuantLinear`](super::quant::QuantLinear): a separate choice from the single rows',
    /// so a model can run, say, its encoder's GEMMs on [`QuantPath::Dot`] and its
    /// decoder's GEMVs widening.
    #[must_use]
    pub const fn with_int8_gemm_path(mut self, path: QuantPath) -> Self {
        self.int8_gemm_path = path;
        self
    }

    /// How [`QuantLinear`](super::quant::QuantLinear) computes several rows.
    pub const fn int8_gemm_path(&self) -> QuantPath {
        self.int8_gemm_path
    }
}

impl Default for RunOptions<'static> {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Debug for RunOptions<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RunOptions")
            .field("int8_path", &self.int8_path)
            .field("int8_gemm_path", &self.int8_gemm_path)
            .field("workers", &self.parallel.workers())
            .finish()
    }
}
