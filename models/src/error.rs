//! Errors of the model layer: weights files, audio, and the runtime's shape errors.

use core::fmt;

/// An error from loading or running a model. Never a panic: malformed weights files, wrong
/// input lengths and bad options all end here, before any kernel runs.
#[derive(Debug)]
pub enum Error {
    /// The runtime rejected a shape, length or geometry (see [`neon_runtime::Error`]).
    Runtime(neon_runtime::Error),
    /// A weights file is malformed or does not match the architecture: the file, the tensor
    /// (or `""` for the file as a whole) and what is wrong.
    Weights {
        /// Where the weights came from (a path, or the name of embedded data).
        source: WeightsSource,
        /// The tensor at fault, `""` for the file as a whole.
        tensor: &'static str,
        /// What is wrong, in a few words.
        reason: WeightsReason,
    },
    /// An input has the wrong number of samples or values.
    Input {
        /// What the input is (`"samples"`, `"embedding"`).
        what: &'static str,
        /// What was expected, in words.
        expected: &'static str,
        /// The size given.
        got: usize,
    },
    /// A component was asked to run on a backend this machine or build cannot run.
    Backend(neon_runtime::kernels::backend::Unavailable),
    /// The voice-activity segment rule's settings were refused (see
    /// [`crate::vad::segments::SegmentConfig::validate`]).
    Segments(crate::vad::segments::SegmentError),
    /// A microWakeWord detector setting was refused (see
    /// [`crate::microwakeword::detector::DetectorError`]).
    Detector(crate::microwakeword::detector::DetectorError),
    /// A model name or option is not known.
    Unknown {
        /// What kind of thing (`"model"`, `"option"`).
        what: &'static str,
        /// The name given and what is known instead, owned when `alloc` is available.
        #[cfg(feature = "alloc")]
        name: alloc::string::String,
    },
    /// A session option was refused: its key and why (feature `std`; see
    /// [`crate::session`]).
    #[cfg(feature = "std")]
    SessionOption {
        /// The key as given (or the whole pair when it has no `=`).
        key: alloc::string::String,
        /// What is wrong and what is valid, in one line.
        message: alloc::string::String,
    },
    /// An I/O error while reading a file (feature `std`).
    #[cfg(feature = "std")]
    Io {
        /// The file.
        path: std::path::PathBuf,
        /// The underlying error.
        error: std::io::Error,
    },
}

impl Error {
    /// An [`Error::Weights`] for the file `source` as a whole: `message`, one line (shown as
    /// "`<file>`: `<message>`").
    #[cfg(feature = "alloc")]
    pub fn invalid_file(
        source: &WeightsSource,
        message: impl Into<alloc::string::String>,
    ) -> Error {
        Error::Weights {
            source: source.clone(),
            tensor: "",
            reason: WeightsReason::Invalid(message.into()),
        }
    }

    /// Checks that every value is finite; otherwise [`Error::Input`] with the index of the
    /// first NaN or infinite one, `what` naming that index (e.g. "index of the first NaN or
    /// infinite sample") and `expected` the rule. Its callers (the VAD detector, the
    /// transcriber, the TTS utterance) need `alloc`.
    #[cfg(feature = "alloc")]
    pub(crate) fn check_finite(
        values: &[f32],
        what: &'static str,
        expected: &'static str,
    ) -> Result<(), Error> {
        match values.iter().position(|v| !v.is_finite()) {
            None => Ok(()),
            Some(got) => Err(Error::Input { what, expected, got }),
        }
    }
}

/// Where a weights file came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WeightsSource {
    /// Data embedded in the program, named.
    Embedded(&'static str),
    /// A file on disk.
    #[cfg(feature = "std")]
    File(std::path::PathBuf),
}

impl fmt::Display for WeightsSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WeightsSource::Embedded(name) => write!(f, "embedded weights `{name}`"),
            #[cfg(feature = "std")]
            WeightsSource::File(p) => write!(f, "{}", p.display()),
        }
    }
}

/// What is wrong with a weights file or tensor.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WeightsReason {
    /// The file is not valid safetensors (header, offsets, sizes); the parser's message.
    #[cfg(feature = "alloc")]
    Format(alloc::string::String),
    /// A tensor the architecture needs is missing.
    Missing,
    /// A tensor has another dtype than the one named (`"F32"`, `"I8"`).
    Dtype(&'static str),
    /// A tensor has the wrong shape: the expected one.
    Shape {
        /// Expected shape.
        expected: [usize; 4],
        /// Its rank.
        rank: usize,
    },
    /// A value is not finite (NaN or infinity).
    NotFinite,
    /// The file's metadata names an architecture we cannot run.
    Architecture,
    /// A data file that is not safetensors (e.g. a tokenizer) is malformed: what is wrong.
    #[cfg(feature = "alloc")]
    Invalid(alloc::string::String),
}

impl fmt::Display for WeightsReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            #[cfg(feature = "alloc")]
            WeightsReason::Format(m) => write!(f, "not a valid safetensors file ({m})"),
            WeightsReason::Missing => f.write_str("tensor missing"),
            WeightsReason::Dtype(expected) => write!(f, "dtype is not {expected}"),
            WeightsReason::Shape { expected, rank } => {
                write!(f, "shape is not {:?}", &expected[..*rank])
            }
            WeightsReason::NotFinite => f.write_str("contains NaN or infinity"),
            WeightsReason::Architecture => f.write_str("unknown or unsupported architecture"),
            #[cfg(feature = "alloc")]
            WeightsReason::Invalid(m) => f.write_str(m),
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Runtime(e) => write!(f, "{e}"),
            Error::Weights { source, tensor, reason } if tensor.is_empty() => {
                write!(f, "{source}: {reason}")
            }
            Error::Weights { source, tensor, reason } => {
                write!(f, "{source}: tensor `{tensor}`: {reason}")
            }
            Error::Backend(u) => write!(f, "{u}"),
            Error::Segments(e) => write!(f, "{e}"),
            Error::Detector(e) => write!(f, "microWakeWord detector: {e}"),
            Error::Input { what, expected, got } => {
                write!(f, "{what}: expected {expected}, got {got}")
            }
            #[cfg(feature = "alloc")]
            Error::Unknown { what, name } => write!(f, "unknown {what}: {name}"),
            #[cfg(not(feature = "alloc"))]
            Error::Unknown { what } => write!(f, "unknown {what}"),
            #[cfg(feature = "std")]
            // The key as given, with control characters escaped: one line always.
            Error::SessionOption { key, message } => {
                write!(f, "session option `{}`: {message}", key.escape_debug())
            }
            #[cfg(feature = "std")]
            Error::Io { path, error } => write!(f, "{}: {error}", path.display()),
        }
    }
}

impl core::error::Error for Error {}

impl From<crate::vad::segments::SegmentError> for Error {
    fn from(e: crate::vad::segments::SegmentError) -> Self {
        Error::Segments(e)
    }
}

impl From<crate::microwakeword::detector::DetectorError> for Error {
    fn from(e: crate::microwakeword::detector::DetectorError) -> Self {
        Error::Detector(e)
    }
}

impl From<neon_runtime::Error> for Error {
    fn from(e: neon_runtime::Error) -> Self {
        Error::Runtime(e)
    }
}
