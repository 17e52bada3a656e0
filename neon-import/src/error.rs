//! The crate's error: one line saying why a file is not a model this crate imports.

use alloc::string::String;
use core::fmt;

/// Why a file could not be imported: the bytes are not a model of the format, or the graph
/// is not one this crate recognises. One line naming the first fault (node or operator,
/// tensor, layer); it does not name the file, which the caller adds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Error {
    message: String,
}

impl Error {
    /// An error saying `message` (one line).
    pub fn new(message: impl Into<String>) -> Self {
        Error { message: message.into() }
    }

    /// The message.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The message, owned.
    pub fn into_message(self) -> String {
        self.message
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl core::error::Error for Error {}
