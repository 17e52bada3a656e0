//! softmax operators (stub: filled in by the softmax family work).
