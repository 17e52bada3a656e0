//! Placeholder until the tflite parser lands.

use super::HeadGraph;
use crate::error::{Error, WeightsSource};

/// Placeholder.
///
/// # Errors
/// Always.
pub fn parse(_bytes: &[u8], source: &WeightsSource) -> Result<HeadGraph, Error> {
    Err(super::model_error(source, "tflite models are not supported yet"))
}
