//! Errors returned by tensor constructors, shape rules and operators.

use core::fmt;

use crate::dim::Dim;
use crate::kernels::Unavailable;

/// A shape rule violation, generic over the dimension type so the `neon_plan!` macro can
/// report the same violation with symbolic sizes at compile time.
///
/// `arg` counts the operator's tensor arguments from 0 (inputs in call order).
#[derive(Clone, Debug, PartialEq)]
pub enum ShapeError<D> {
    /// Argument `arg` has the wrong rank.
    Rank {
        /// Operator name (`"conv1d"`, `"linear"`, ...).
        op: &'static str,
        /// Which tensor argument.
        arg: usize,
        /// Ranks the operator accepts, as text (`"2"`, `"2 or 3"`).
        expected: &'static str,
        /// The rank given.
        got: usize,
    },
    /// Axis `axis` of argument `arg` does not have the size the operator needs.
    Dim {
        /// Operator name.
        op: &'static str,
        /// Which tensor argument.
        arg: usize,
        /// Which axis of that argument (outermost = 0).
        axis: usize,
        /// What the axis means to the operator (`"input channels"`, `"frames"`).
        what: &'static str,
        /// The size the operator needs.
        expected: D,
        /// The size given.
        got: D,
    },
    /// A derived size would be below `min` (for symbolic dims: for some value in range).
    TooSmall {
        /// Operator name.
        op: &'static str,
        /// What the size means (`"output frames"`).
        what: &'static str,
        /// The size as far as it could be computed.
        value: D,
        /// The smallest admissible size.
        min: usize,
    },
    /// Axis `axis` of argument `arg` is not a multiple of `divisor` (e.g. channels that do
    /// not split into the operator's heads).
    Indivisible {
        /// Operator name.
        op: &'static str,
        /// Which tensor argument.
        arg: usize,
        /// Which axis of that argument (outermost = 0).
        axis: usize,
        /// What the axis means to the operator (`"channels"`).
        what: &'static str,
        /// The divisor.
        divisor: usize,
        /// What the divisor counts (`"heads"`).
        divisor_what: &'static str,
        /// The size given.
        got: D,
    },
    /// The operator's own geometry is invalid (zero stride, groups not dividing channels...).
    Geometry {
        /// Operator name.
        op: &'static str,
        /// Which rule is broken.
        reason: &'static str,
    },
}

impl<D: Dim> fmt::Display for ShapeError<D> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ShapeError::Rank { op, arg, expected, got } => {
                write!(f, "{op} expects a rank-{expected} tensor as argument {arg}, got rank {got}")
            }
            ShapeError::Dim { op, arg, axis, what, expected, got } => {
                write!(f, "{op} expects {expected} {what}, argument {arg} has {got} (axis {axis})")
            }
            ShapeError::TooSmall { op, what, value, min } => {
                write!(f, "{op}: {what} = {value} can be smaller than {min}")
            }
            ShapeError::Indivisible { op, arg, axis, what, divisor, divisor_what, got } => write!(
                f,
                "{op} expects {what} divisible by {divisor} {divisor_what}, argument {arg} has {got} (axis {axis})"
            ),
            ShapeError::Geometry { op, reason } => write!(f, "{op}: invalid geometry: {reason}"),
        }
    }
}

/// Why a worker team (`team::Team`, feature `std`) could not start or finish a dispatch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TeamError {
    /// A team needs at least one member.
    NoThreads,
    /// The operating system refused to start a worker thread.
    Spawn,
    /// A task panicked; the dispatch ran its other tasks and the team stays usable.
    Panicked,
    /// A task tried to dispatch on the team that runs it.
    Nested,
}

impl fmt::Display for TeamError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            TeamError::NoThreads => "a worker team needs at least one thread",
            TeamError::Spawn => "the operating system refused to start a worker thread",
            TeamError::Panicked => "a task of the worker team panicked",
            TeamError::Nested => "a task dispatched on the worker team that runs it",
        })
    }
}

/// Run-time error of the runtime: bad lengths, shapes or geometry. Never a panic.
#[derive(Clone, Debug, PartialEq)]
pub enum Error {
    /// A buffer does not have the length its shape needs.
    Length {
        /// What the buffer is (`"tensor data"`, `"weight"`, `"scratch"`).
        what: &'static str,
        /// Elements needed.
        expected: usize,
        /// Elements given.
        got: usize,
    },
    /// A shape has rank 0 or above [`crate::MAX_RANK`], or a zero-sized dimension.
    BadShape {
        /// Why.
        reason: &'static str,
    },
    /// The view's layout is not one the operator accepts.
    Layout {
        /// Operator name.
        op: &'static str,
        /// What it accepts.
        expected: &'static str,
    },
    /// A shape rule failed.
    Shape(ShapeError<usize>),
    /// A run-time dimension or scalar is outside its declared range.
    OutOfRange {
        /// The dimension's or scalar's name.
        name: &'static str,
        /// The value given.
        value: usize,
        /// Smallest admissible value.
        min: usize,
        /// Largest admissible value.
        max: usize,
    },
    /// A prepared operator does not have the geometry the plan was compiled for.
    Weight {
        /// The weight's name in the plan.
        name: &'static str,
    },
    /// A worker team could not run a dispatch.
    Team(TeamError),
    /// A dynamic execution plan (`exec::ExecutionPlan`, feature `alloc`) was built or used
    /// against its contract: a value of another plan, no output, a view of a value that is
    /// neither retained nor the output, or no successful run yet; or a streaming plan
    /// (`exec::stream::StreamPlan`) was: a handle or state of another plan, a second or
    /// missing input, element types other than the plan's.
    Plan {
        /// Which rule was broken.
        reason: &'static str,
    },
    /// The backend asked for cannot run in this build or on this CPU (see
    /// [`BackendKind::availability`](crate::BackendKind::availability)); returned before
    /// any kernel runs. Without feature `std` an `X86` level runs only where its target
    /// features are enabled at compile time.
    Backend(Unavailable),
}

impl From<Unavailable> for Error {
    fn from(e: Unavailable) -> Self {
        Error::Backend(e)
    }
}

impl From<ShapeError<usize>> for Error {
    fn from(e: ShapeError<usize>) -> Self {
        Error::Shape(e)
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Length { what, expected, got } => {
                write!(f, "{what} has {got} elements, expected {expected}")
            }
            Error::BadShape { reason } => write!(f, "bad shape: {reason}"),
            Error::Layout { op, expected } => write!(f, "{op} expects a {expected} tensor"),
            Error::Shape(e) => fmt::Display::fmt(e, f),
            Error::OutOfRange { name, value, min, max } => {
                write!(f, "{name} = {value} is outside {min}..={max}")
            }
            Error::Weight { name } => {
                write!(f, "weight `{name}` does not have the geometry the plan was compiled for")
            }
            Error::Team(e) => fmt::Display::fmt(e, f),
            Error::Plan { reason } => write!(f, "execution plan: {reason}"),
            Error::Backend(e) => fmt::Display::fmt(e, f),
        }
    }
}

// `core::error::Error` (stable since Rust 1.81): `?` into `Box<dyn Error>` works in every
// build, with or without feature `std`.
impl core::error::Error for Error {}
